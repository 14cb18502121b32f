//! Semantic analysis (placeholder).
