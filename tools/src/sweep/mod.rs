//! `poolc sweep` as a library (docs/SWEEP.md): a grid of specs, params, traces and
//! rate scales ([`grid`]) expanded into numbered points ([`plan`]), each replayed
//! through `tools::run` ([`point`], with the capacity search), written as rows
//! ([`results`]) and summarised ([`summary`]). The local backend, [`run_local`], runs
//! the points on threads; the Ray backend (python/poolc/sweep.py) runs each point in
//! a task through [`run_alone`], the same code. Determinism: a row depends only on
//! its point (each point compiled once per spec and params, replayed
//! deterministically); threads only change the order rows finish in, and every
//! output is sorted by point index. The one clock reading is a row's wall seconds.
//! Nothing here prints; errors are [`SweepError`] values, rendered by
//! [`SweepError::render`] (diagnostics through `diag::render`).

pub mod grid;
pub mod metrics;
pub mod plan;
pub mod point;
pub mod results;
pub mod summary;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use poolrt::trace::Workload;

use crate::run::{RunError, Source};
use grid::{TraceEntry, TraceSource};
use plan::Plan;
use poolc::codegen::CodegenError;
use poolc::diag::{self, Diagnostic};
use poolc::{Compiled, Options};
use poolrt::trace::TraceError;
use results::{Row, RowError};

/// Why a sweep (or one of its points) did not give its rows. Cloneable, so that a
/// spec compiled or a trace read once for many points hands each of them the same
/// typed error.
#[derive(Clone, Debug)]
pub enum SweepError {
    /// A file could not be read.
    Read {
        path: PathBuf,
        error: Arc<std::io::Error>,
    },
    /// Mistakes in the grid file, with spans into its text.
    Grid {
        file: String,
        text: String,
        diags: Vec<Diagnostic>,
    },
    /// A spec does not check (`with`: the param values it was checked with).
    Spec {
        file: String,
        text: String,
        diags: Vec<Diagnostic>,
        with: String,
    },
    /// A trace could not be read.
    Trace { trace: String, error: TraceError },
    /// A spec checked but did not compile.
    Compile { spec: String, error: CodegenError },
    /// The plan has no such spec-and-params combination (a caller's index).
    NoSuchCombination { combo: usize },
    /// A point did not give its row.
    Run {
        point: usize,
        label: String,
        error: PointError,
    },
    /// An output file could not be written.
    Output {
        path: PathBuf,
        error: Arc<std::io::Error>,
    },
    /// `--resume` found a line it cannot keep.
    Resume {
        path: PathBuf,
        line: usize,
        message: RowError,
    },
    /// The stop flag was set (SIGINT): the rows finished so far are kept.
    Interrupted,
}

/// Why one point did not give its row.
#[derive(Clone, Debug)]
pub enum PointError {
    /// The plan has no point of that index; it has `points`.
    NoSuchPoint { points: usize },
    /// The point names a spec or trace the plan does not hold.
    Dangling,
    /// The replay at rate scale `scale` failed.
    Replay { scale: f64, error: Arc<RunError> },
    /// The report could not be encoded as the row's metrics.
    Encode(Arc<serde_json::Error>),
}

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PointError::NoSuchPoint { points } => write!(f, "the grid has {points} points"),
            PointError::Dangling => write!(f, "the point names no spec or trace"),
            PointError::Replay { scale, error } => write!(f, "at rate scale {scale}: {error}"),
            PointError::Encode(e) => write!(f, "cannot encode the report: {e}"),
        }
    }
}

impl SweepError {
    /// The error as a user reads it: diagnostics rendered against their file (styled
    /// as `styling` says), anything else as one sentence.
    pub fn render(&self, styling: diag::Styling) -> String {
        match self {
            SweepError::Grid { file, text, diags } => {
                let n = diags.len();
                format!(
                    "{}poolc: {n} error{} in {file}",
                    diag::render(file, text, diags, styling),
                    if n == 1 { "" } else { "s" }
                )
            }
            SweepError::Spec {
                file,
                text,
                diags,
                with,
            } => {
                let n = diags.len();
                let with = if with.is_empty() {
                    String::new()
                } else {
                    format!(" (with {with})")
                };
                format!(
                    "{}poolc: {n} error{} in {file}{with}",
                    diag::render(file, text, diags, styling),
                    if n == 1 { "" } else { "s" }
                )
            }
            other => format!("poolc: {other}"),
        }
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Read { path, error } => {
                write!(f, "cannot read {}: {error}", path.display())
            }
            SweepError::Grid { file, diags, .. } => {
                write!(f, "{} error(s) in {file}", diags.len())?;
                if let Some(d) = diags.first() {
                    write!(f, ": {}", d.message)?;
                }
                Ok(())
            }
            SweepError::Spec {
                file, diags, with, ..
            } => {
                write!(f, "{} error(s) in {file}", diags.len())?;
                if !with.is_empty() {
                    write!(f, " (with {with})")?;
                }
                if let Some(d) = diags.first() {
                    write!(f, ": {}", d.message)?;
                }
                Ok(())
            }
            SweepError::Trace { trace, error } => write!(f, "trace `{trace}`: {error}"),
            SweepError::Compile { spec, error } => write!(f, "spec `{spec}`: {error}"),
            SweepError::NoSuchCombination { combo } => write!(f, "no combination {combo}"),
            SweepError::Run {
                point,
                label,
                error,
            } => write!(f, "point {point} ({label}): {error}"),
            SweepError::Output { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
            SweepError::Resume {
                path,
                line,
                message,
            } => write!(
                f,
                "cannot resume from {}:{line}: {message} (run without --resume to start over)",
                path.display()
            ),
            SweepError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for SweepError {}

/// A trace entry's sessions, read (or generated) and cut to its `sessions`.
pub fn load_trace(entry: &TraceEntry) -> Result<Workload, SweepError> {
    let error = |error: TraceError| SweepError::Trace {
        trace: entry.name.clone(),
        error,
    };
    match &entry.source {
        TraceSource::File {
            path,
            format,
            sessions,
        } => {
            let mut w = Source::Trace {
                path: path.clone(),
                format: *format,
            }
            .workload()
            .map_err(error)?;
            if let Some(n) = sessions {
                w.truncate(*n);
            }
            Ok(w)
        }
        TraceSource::Synthetic { n, seed } => Source::Synthetic { n: *n, seed: *seed }
            .workload()
            .map_err(error),
        TraceSource::Bundled => Source::Default.workload().map_err(error),
    }
}

/// Workloads read once and shared: by the local backend's threads, and by the
/// points a Ray worker process runs one after another. At most [`TraceCache::KEEP`]
/// are kept (the least recently used goes).
#[derive(Default)]
pub struct TraceCache {
    slots: Mutex<Vec<(TraceSource, TraceSlot)>>,
}

type TraceSlot = Arc<OnceLock<Result<Arc<Workload>, SweepError>>>;

impl TraceCache {
    pub const KEEP: usize = 8;

    /// The workload of `entry`, read on first use.
    pub fn get(&self, entry: &TraceEntry) -> Result<Arc<Workload>, SweepError> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let found = slots.iter().position(|(s, _)| *s == entry.source);
            let slot = match found {
                Some(i) => slots.remove(i).1,
                None => Arc::default(),
            };
            slots.push((entry.source.clone(), Arc::clone(&slot)));
            if slots.len() > Self::KEEP {
                slots.remove(0);
            }
            slot
        };
        slot.get_or_init(|| load_trace(entry).map(Arc::new)).clone()
    }
}

/// Compiles one spec-and-params combination of `plan` from its spec's source.
pub fn compile_combo(plan: &Plan, combo: usize, source: &str) -> Result<Compiled, SweepError> {
    let c = plan
        .combos
        .get(combo)
        .ok_or(SweepError::NoSuchCombination { combo })?;
    let spec = plan.grid.specs.get(c.spec);
    let options = Options { set: c.set.clone() };
    let file = spec.map_or_else(String::new, |s| s.path.display().to_string());
    let program = poolc::check(source, &options).map_err(|diags| SweepError::Spec {
        file: file.clone(),
        text: source.to_string(),
        diags,
        with: plan::set_words(&c.set),
    })?;
    poolc::codegen::compile_program(&program).map_err(|error| SweepError::Compile {
        spec: spec.map_or_else(String::new, |s| s.name.clone()),
        error,
    })
}

/// The error for a point index the plan does not have.
fn no_such_point(plan: &Plan, index: usize) -> SweepError {
    SweepError::Run {
        point: index,
        label: String::new(),
        error: PointError::NoSuchPoint {
            points: plan.points.len(),
        },
    }
}

/// Point `index` of `plan` with its combination, its spec and its trace entry: the
/// lookup both backends make before they compile and measure.
fn parts(
    plan: &Plan,
    index: usize,
) -> Result<(&plan::Point, &plan::Combo, &grid::SpecEntry, &TraceEntry), SweepError> {
    let point = plan
        .point(index)
        .ok_or_else(|| no_such_point(plan, index))?;
    let combo = plan.combos.get(point.combo);
    let spec = combo.and_then(|c| plan.grid.specs.get(c.spec));
    match (combo, spec, plan.grid.traces.get(point.trace)) {
        (Some(combo), Some(spec), Some(entry)) => Ok((point, combo, spec, entry)),
        _ => Err(SweepError::Run {
            point: index,
            label: plan.label(point),
            error: PointError::Dangling,
        }),
    }
}

/// Runs point `index` of `plan` on its own, as a Ray task does: reads and compiles
/// its spec, takes its workload from `traces`, and measures it.
pub fn run_alone(
    plan: &Plan,
    index: usize,
    traces: &TraceCache,
    stop: &AtomicBool,
) -> Result<Row, SweepError> {
    let (point, _, spec, entry) = parts(plan, index)?;
    let source = plan::read_spec(&spec.path)?;
    let compiled = compile_combo(plan, point.combo, &source)?;
    let workload = traces.get(entry)?;
    point::measure(plan, point, &compiled, &workload, stop)
}

/// How the local backend runs.
pub struct LocalOptions {
    /// Worker threads (at least one).
    pub jobs: usize,
}

/// Runs the `pending` points of `plan` on `jobs` threads and hands each finished
/// row to `done` on the calling thread (in the order they finish; callers sort by
/// point). `sources` are the specs' texts ([`Plan::check`]). Each spec-and-params
/// combination is compiled once, each trace read once. A set `stop` ends the
/// replays under way and gives [`SweepError::Interrupted`] once the threads have
/// stopped; the rows handed out before stay valid. The first error stops the
/// other threads (between points) and is returned.
pub fn run_local(
    plan: &Plan,
    sources: &[String],
    pending: &[usize],
    options: &LocalOptions,
    stop: &AtomicBool,
    done: &mut dyn FnMut(Row) -> Result<(), SweepError>,
) -> Result<(), SweepError> {
    let compiled: Vec<OnceLock<Result<Arc<Compiled>, SweepError>>> =
        (0..plan.combos.len()).map(|_| OnceLock::new()).collect();
    let traces = TraceCache::default();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let jobs = options.jobs.clamp(1, pending.len().max(1));
    let (tx, rx) = mpsc::channel::<Result<Row, SweepError>>();
    let work = |tx: mpsc::Sender<Result<Row, SweepError>>| {
        loop {
            if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                return;
            }
            let Some(&index) = pending.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let result = one(plan, sources, &compiled, &traces, index, stop);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            if tx.send(result).is_err() {
                return;
            }
        }
    };
    let work = &work;
    let mut first_error = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            scope.spawn(move || work(tx));
        }
        drop(tx);
        for result in rx {
            let handed = result.and_then(&mut *done);
            if let Err(e) = handed {
                failed.store(true, Ordering::Relaxed);
                // An interruption is reported only if nothing worse happened.
                if first_error.is_none() || matches!(first_error, Some(SweepError::Interrupted)) {
                    first_error = Some(e);
                }
            }
        }
    });
    match first_error {
        Some(e) => Err(e),
        None if stop.load(Ordering::Relaxed) => Err(SweepError::Interrupted),
        None => Ok(()),
    }
}

fn one(
    plan: &Plan,
    sources: &[String],
    compiled: &[OnceLock<Result<Arc<Compiled>, SweepError>>],
    traces: &TraceCache,
    index: usize,
    stop: &AtomicBool,
) -> Result<Row, SweepError> {
    let (point, c, _, entry) = parts(plan, index)?;
    // One cell per combination (run_local made them): a point's combo has one.
    let Some(cell) = compiled.get(point.combo) else {
        return Err(SweepError::NoSuchCombination { combo: point.combo });
    };
    let source = sources.get(c.spec).map_or("", String::as_str);
    let code = cell
        .get_or_init(|| compile_combo(plan, point.combo, source).map(Arc::new))
        .clone()?;
    let workload = traces.get(entry)?;
    point::measure(plan, point, &code, &workload, stop)
}
