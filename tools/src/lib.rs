//! `poolc_tools`: the tools built on the compiler and the runtime, as library code:
//! `run` (a workload replayed through the reference host; also the Python package's
//! run), `compare` (several specs on one workload), `sweep` (grids of specs, params,
//! traces and rate scales; capacity search), `chart` (the `--html`/`--svg` pages),
//! `conform` (replays of recorded vLLM scenarios, read and compared by `oracle`),
//! `bench` (compiled policies measured against the interpreter and hand-written Rust),
//! `eval` (one site's expressions on named inputs), `fit` (a stage `time` fitted to
//! measured iterations) and `model` (a deployment spec from a model's config.json and a
//! GPU). Every failure is a typed error; nothing here parses a command
//! line, prints or exits — the `poolc` binary (cli/) does that — and the compiler and
//! runtime never depend on this crate (the build's dependency graph says so).

pub mod bench;
pub mod bundled;
pub mod chart;
pub mod compare;
pub mod conform;
pub mod eval;
pub mod fit;
pub mod model;
pub mod oracle;
pub mod run;
pub mod sweep;
