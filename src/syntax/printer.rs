//! Pretty-printer for the AST (placeholder).
