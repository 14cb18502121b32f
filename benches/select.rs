//! Criterion benchmarks of compiled `select` (placeholder until codegen lands).
fn main() {}
