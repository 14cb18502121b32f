//! The tools that use the compiler: `poolc bench` (compiled policies measured against
//! the interpreter and hand-written Rust), `poolc conform` (replays of vLLM oracle
//! recordings), `poolc eval` (one site's expressions on named inputs), `poolc run`
//! (a workload replayed through the reference host; also the Python package's run) and
//! `poolc sweep` (grids of specs, params, traces and rate scales; capacity search). They sit on
//! top of the pipeline and the runtime; **no pipeline module imports this one**
//! (tests/tidy.rs checks it). Like the rest of the library they never print.

pub mod bench;
pub mod chart;
pub mod compare;
pub mod conform;
pub mod eval;
pub mod run;
pub mod sweep;
