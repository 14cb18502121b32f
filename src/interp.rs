//! Reference interpreter (placeholder).
