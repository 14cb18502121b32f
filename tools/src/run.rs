//! `poolc run` as a library, shared by the CLI and the Python package so that both
//! give the same report for the same inputs: where the workload comes from (a trace
//! file, a seeded synthetic workload, sessions a caller built), the replay of a
//! compiled spec through the reference host, and the report as the JSON object
//! `poolc run --json` prints. It never prints, and it
//! reads no clock (the caller measures wall time and hands it in).

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use poolrt::host::{Host, HostError, LatencySamples, Observer, Report, RunOptions};
use poolrt::trace::{self, Format, SessionSource, SyntheticParams, TraceError, Workload};

use poolc::Compiled;

use crate::bundled;
use poolc::bridge::BridgeError;

/// Where a replay's sessions come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A trace file; the format is detected unless given (docs/TRACES.md).
    Trace {
        path: PathBuf,
        format: Option<Format>,
    },
    /// `n` seeded synthetic sessions.
    Synthetic { n: usize, seed: u64 },
    /// The bundled Mooncake conversation trace ([`bundled::TRACE`]).
    Default,
}

impl Source {
    /// Reads (or generates) the workload.
    pub fn workload(&self) -> Result<Workload, TraceError> {
        match self {
            Source::Trace { path, format } => trace::read_path(path, *format),
            Source::Synthetic { n, seed } => {
                trace::session_limit(*n).map_err(|m| TraceError::new("--synthetic", 0, m))?;
                Ok(trace::synthetic(*n, *seed))
            }
            Source::Default => default_trace()?.workload(),
        }
    }

    /// The sessions at `rate_scale` times the arrival rate, one at a time as the
    /// replay reaches them, so memory stays flat in their number (docs/HOST.md
    /// "Memory"): synthetic sessions are generated, a trace file is read line by line
    /// (a bad line fails the replay when it is reached, naming its line).
    pub fn sessions(&self, rate_scale: f64) -> Result<Box<dyn SessionSource + Send>, TraceError> {
        match self {
            Source::Synthetic { n, seed } => {
                trace::session_limit(*n).map_err(|m| TraceError::new("--synthetic", 0, m))?;
                let g = trace::Generator::new(*n, *seed, SyntheticParams::default());
                Ok(Box::new(g.rate_scale(rate_scale)))
            }
            Source::Trace { path, format } => Ok(Box::new(
                trace::open_path(path, *format)?.rate_scale(rate_scale),
            )),
            Source::Default => Ok(Box::new(default_trace()?.rate_scale(rate_scale))),
        }
    }
}

/// The bundled trace, read from the text carried in the library.
fn default_trace() -> Result<trace::Reader<&'static [u8]>, TraceError> {
    trace::open_text(bundled::TRACE.text, bundled::TRACE.name, Format::Mooncake)
}

/// Why a replay did not produce a report.
#[derive(Debug)]
pub enum RunError {
    /// The compiled spec could not become a host configuration.
    Bridge(BridgeError),
    /// The host refused the configuration or failed during the replay.
    Host(HostError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Bridge(e) => write!(f, "{e}"),
            RunError::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Bridge(e) => Some(e),
            RunError::Host(e) => Some(e),
        }
    }
}

/// What a replay writes and tells besides its report, as [`RunOptions`] describes it,
/// and how its report reads latency percentiles (`exact_percentiles`: `--exact`).
#[derive(Default)]
pub struct Watch<'a> {
    pub log: Option<&'a mut dyn Write>,
    pub observer: Option<&'a mut dyn Observer>,
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    pub exact_percentiles: bool,
}

/// Replays `workload` through the reference host with the compiled spec's policies.
pub fn replay(
    compiled: &Compiled,
    workload: &Workload,
    watch: Watch<'_>,
) -> Result<Report, RunError> {
    replay_with_stop(compiled, workload, watch, None)
}

/// [`replay`], stopping with `HostError::Interrupted` once `stop` holds `true`
/// (`poolc run` sets it from SIGINT); the log then has no final `complete` line.
pub fn replay_until<'a>(
    compiled: &Compiled,
    workload: &Workload,
    watch: Watch<'a>,
    stop: &'a AtomicBool,
) -> Result<Report, RunError> {
    replay_with_stop(compiled, workload, watch, Some(stop))
}

/// [`replay`] over sessions read one at a time (`Host::streaming`), as Python's
/// `poolc.run` replays a trace file or a synthetic workload.
pub fn replay_sessions<'a>(
    compiled: &Compiled,
    sessions: Box<dyn SessionSource + 'a>,
    watch: Watch<'a>,
) -> Result<Report, RunError> {
    replay_streamed(compiled, sessions, watch, None)
}

/// [`replay_until`] over sessions read one at a time (`Host::streaming`): what
/// `poolc run` replays, so that a long trace or synthetic workload is never held
/// whole.
pub fn replay_sessions_until<'a>(
    compiled: &Compiled,
    sessions: Box<dyn SessionSource + 'a>,
    watch: Watch<'a>,
    stop: &'a AtomicBool,
) -> Result<Report, RunError> {
    replay_streamed(compiled, sessions, watch, Some(stop))
}

fn replay_streamed<'a>(
    compiled: &Compiled,
    sessions: Box<dyn SessionSource + 'a>,
    watch: Watch<'a>,
    stop: Option<&'a AtomicBool>,
) -> Result<Report, RunError> {
    let host = Host::streaming(host_config(compiled)?, sessions).map_err(RunError::Host)?;
    run_host(host, watch, stop)
}

fn host_config(compiled: &Compiled) -> Result<poolrt::host::HostConfig, RunError> {
    poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
        .map_err(RunError::Bridge)
}

fn replay_with_stop<'a>(
    compiled: &Compiled,
    workload: &Workload,
    watch: Watch<'a>,
    stop: Option<&'a AtomicBool>,
) -> Result<Report, RunError> {
    let host = Host::new(host_config(compiled)?, workload).map_err(RunError::Host)?;
    run_host(host, watch, stop)
}

fn run_host<'a>(
    host: Host<'_>,
    watch: Watch<'a>,
    stop: Option<&'a AtomicBool>,
) -> Result<Report, RunError> {
    host.run(RunOptions {
        log: watch.log,
        observer: watch.observer,
        progress: watch.progress,
        stop,
        progress_bound: None,
        allow_unfinished: false,
        one_at_a_time: false,
        iterations_ahead: None,
        decodes_deferred: None,
        latencies: if watch.exact_percentiles {
            LatencySamples::Exact
        } else {
            LatencySamples::Sketch
        },
    })
    .map_err(RunError::Host)
}

/// What a spec says it models: its first line, when that is a `//` comment (the
/// report's title).
pub fn title(source: &str) -> Option<String> {
    let first = source.lines().next()?.trim();
    let text = first.strip_prefix("//")?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The report as the JSON object `poolc run --json` prints: the report's fields, then
/// `spec` (how the spec was named), `title` (its [`title`], or null) and
/// `wall_seconds`.
pub fn report_json(
    report: &Report,
    spec: &str,
    title: Option<&str>,
    wall_seconds: f64,
) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(report)?;
    if let Some(obj) = value.as_object_mut() {
        obj.insert("spec".into(), spec.into());
        obj.insert("title".into(), title.into());
        obj.insert("wall_seconds".into(), wall_seconds.into());
    }
    Ok(value)
}
