//! The reference host: replays a workload through pools and stages in simulated time
//! and reports what happened (docs/HOST.md). It owns sessions (routing, attributes,
//! sequences, outputs), step stages (R15, R16), link stages (R17) with spill writes
//! and tier loads (R12), the event loop, the report and the log; the pool engine owns
//! everything inside a pool member. It must not read the wall clock or let hash-map
//! order reach a result (same inputs → same report and log bytes), and must not panic
//! on input: a bad value from a compiled `time` or `work` is an error.
//!
//! Use: build a [`HostConfig`] (from the compiler's IR, or by hand), read a
//! [`crate::trace::Workload`], then `Host::new(config, &workload)?.run(options)?`.

mod config;
mod log;
mod observe;
mod percentile;
mod report;
mod series;
mod sim;

pub use config::{
    AttrSpec, Extreme, HandoffConfig, HandoffInput, HostConfig, HostError, IterTime, LinkConfig,
    PoolDecl, PoolMember, Probe, RouteConfig, RouteInput, Scored, StageDecl, StageKind, StepConfig,
    TakeVar, TimeVar,
};
pub use log::JsonLog;
pub use observe::{Admitted, HostEvent, Iteration, Latency, Observer, PoolEvent, PoolEventKind};
pub use report::{HandoffReport, LinkReport, Percentiles, PoolReport, Report, StageReport};
pub use series::{Series, SeriesPoint};
pub use sim::Host;

use std::io::Write;
use std::sync::atomic::AtomicBool;

/// What a run writes and tells besides its report.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// The JSON-lines log (docs/TRACES.md); `None`: no log, at no cost. Hand it a
    /// buffered writer.
    pub log: Option<&'a mut dyn Write>,
    /// Told every iteration, latency moment and (if it wants them) pool event, in
    /// the order they happen; `None`: nobody else watches.
    pub observer: Option<&'a mut dyn Observer>,
    /// Called with (sessions done, sessions in all) whenever a session finishes or
    /// is rejected, so a CLI can draw a progress bar. "In all" is the source's
    /// `len_hint` (for a trace file, its row count: an estimate), else the sessions
    /// read so far.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// Read between events: once it holds `true`, the run stops with
    /// [`HostError::Interrupted`] (a CLI sets it from SIGINT); `None`: never stops.
    pub stop: Option<&'a AtomicBool>,
    /// The no-progress guard's bound in step iterations (docs/HOST.md, "Progress");
    /// `None`: the host's own, which no run without wasted work can reach.
    pub progress_bound: Option<u64>,
    /// Report a deadlock (sessions left unfinished when nothing can happen any more)
    /// in [`Report::unfinished`] instead of failing with [`HostError::Deadlock`]:
    /// for a replay compared step by step with a recording, where the divergence is
    /// the finding (`poolc conform`).
    pub allow_unfinished: bool,
    /// How the report keeps latencies for its percentiles.
    pub latencies: LatencySamples,
    /// Every iteration through the event queue, none run ahead (docs/HOST.md, "Runs
    /// known in advance"): the same report and observations, only slower. For tests
    /// and benchmarks that compare the two.
    pub one_at_a_time: bool,
    /// Set at the end to how many step iterations went as runs known in advance
    /// (docs/HOST.md, "Runs known in advance"; not an iteration a run began but
    /// finished as the ordinary one, having admitted): how the replay was computed, never
    /// what it reports or tells (a reader of pool events, the log among them, makes
    /// it 0). For tests and benchmarks.
    pub iterations_ahead: Option<&'a mut u64>,
    /// Set at the end to how many resident decodes inside those runs were deferred
    /// (made without visiting the resident, docs/HOST.md "Runs known in advance"):
    /// like `iterations_ahead`, how the replay was computed, never what it reports.
    /// For tests and benchmarks.
    pub decodes_deferred: Option<&'a mut u64>,
}

/// How a run keeps latencies for its report's percentiles (docs/HOST.md,
/// "Percentiles").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LatencySamples {
    /// In bounded sketches: percentiles within 2^-11 of the exact ones plus 1 ns.
    #[default]
    Sketch,
    /// Every latency, for exact nearest-rank percentiles (8 bytes a sample: a long
    /// replay's ITLs alone take gigabytes).
    Exact,
    /// None: the report's `ttft`, `itl` and `e2e` are empty (count 0). For a run
    /// whose reader wants only what its observer sees (`poolc conform`), which then
    /// spends nothing on samples it would throw away; the observer is still told
    /// every latency moment.
    Unkept,
}
