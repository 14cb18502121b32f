//! `poolc`: the Pool compiler as a library. The pipeline is `syntax` (text → AST) →
//! `sema` (AST → checked IR) → `interp` / `codegen` (IR → values / machine code).
//! This crate never prints and never exits; `main.rs` does both.

pub mod diag;
pub mod interp;
pub mod ir;
pub mod sema;
pub mod syntax;
