//! `poolc._native`: the Python package's native module. It exposes the same library
//! code the `poolc` binary runs — `poolc::check` and the JIT, `ir::dump`, `tools::eval`,
//! `aot::build`, `tools::run`, `tools::sweep` (`sweep.rs`), the trace readers and
//! compiled key lists (`keys.rs`) —
//! to the thin Python layer in
//! python/poolc/, which owns the public names and signatures (docs/PYTHON.md). It
//! re-implements nothing: every result is the Rust library's, converted to Python
//! values at the boundary. It never panics across the boundary on bad input (every
//! error becomes one of the exceptions of `poolc.errors`), and it releases the GIL
//! while a replay runs.

mod keys;
mod pool;
mod sweep;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use poolc::aot::object::{Prefix, Target};
use poolc::aot::{self, BuildOptions, Emit};
use poolc::diag::{self, Diagnostic};
use poolc::{Compiled, Options};
use poolc_tools::eval::{self, Backend, Site};
use poolc_tools::run::{self, RunError, Source, Watch};
use poolrt::host::{HostError, Latency, Observer};
use poolrt::trace::{Format, SessionSource, Workload};
use pyo3::call::PyCallArgs;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Raises `poolc.errors.<class>(args…)`: the exception classes are Python's, so that
/// they carry the attributes the API documents.
pub(crate) fn error<'py, A: PyCallArgs<'py>>(py: Python<'py>, class: &str, args: A) -> PyErr {
    let made = py
        .import("poolc.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A diagnostic as the dict `CompileError.diagnostics` lists.
fn diagnostic_dict<'py>(
    py: Python<'py>,
    d: &Diagnostic,
    file: &str,
    source: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("code", d.code)?;
    dict.set_item("message", &d.message)?;
    dict.set_item("file", file)?;
    match d.primary_span() {
        Some(span) => {
            let (line, column) = line_column(source, span.start as usize);
            dict.set_item("line", line)?;
            dict.set_item("column", column)?;
            dict.set_item("span", (span.start, span.end))?;
        }
        None => {
            dict.set_item("line", py.None())?;
            dict.set_item("column", py.None())?;
            dict.set_item("span", py.None())?;
        }
    }
    Ok(dict)
}

/// 1-based line and column (in characters) of byte `offset`, as the rendered
/// diagnostics count them.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// The latency samples of a replay, in the order the host told them: the observer
/// behind `poolc.run(..., samples=True)`.
#[derive(Default)]
struct Latencies {
    ttft: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
}

impl Observer for Latencies {
    fn latency(&mut self, latency: &Latency) -> std::io::Result<()> {
        match *latency {
            Latency::FirstToken { ttft, .. } => self.ttft.push(ttft),
            Latency::Token { itl, .. } => self.itl.push(itl),
            Latency::Finished { e2e, .. } => self.e2e.push(e2e),
        }
        Ok(())
    }
}

/// A checked and compiled spec.
#[pyclass(module = "poolc._native", frozen)]
struct Spec {
    compiled: Compiled,
    /// How the spec was named (its path, or `<source>`): the report's `spec`.
    name: String,
    /// Its leading comment line, the report's `title`.
    title: Option<String>,
}

#[pymethods]
impl Spec {
    /// The pool declarations' names, in declaration order.
    #[getter]
    fn pools(&self) -> Vec<String> {
        let p = self.compiled.program();
        p.pools.iter().map(|x| x.name.clone()).collect()
    }

    /// The stage declarations' names, in declaration order.
    #[getter]
    fn stages(&self) -> Vec<String> {
        let p = self.compiled.program();
        p.stages.iter().map(|x| x.name.clone()).collect()
    }

    /// The session attributes' names, in slot order (`serial`, `arrival` first).
    #[getter]
    fn attrs(&self) -> Vec<String> {
        let p = self.compiled.program();
        p.session.attrs.iter().map(|a| a.name.clone()).collect()
    }

    /// How the spec was named.
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    /// The checked IR, as `poolc ir` prints it.
    fn ir(&self) -> String {
        poolc::ir::dump(self.compiled.program())
    }

    /// One site's values on named inputs, as `poolc eval` computes them.
    #[pyo3(signature = (pool, site, inputs, interp=false))]
    fn eval(
        &self,
        py: Python<'_>,
        pool: &str,
        site: &str,
        inputs: Vec<(String, f64)>,
        interp: bool,
    ) -> PyResult<Vec<f64>> {
        let backend = if interp {
            Backend::Interp
        } else {
            Backend::Jit
        };
        let site = Site::from_name(site).map_err(|e| error(py, "EvalError", (e.to_string(),)))?;
        eval::eval_site(&self.compiled, pool, site, &inputs, backend)
            .map_err(|e| error(py, "EvalError", (e.to_string(),)))
    }

    /// A live engine pool for member `member` of pool declaration `pool`, with the
    /// spec's compiled policies; `attrs` gives sessions' attribute values.
    #[pyo3(signature = (pool, member=0, attrs=None))]
    fn pool(
        &self,
        py: Python<'_>,
        pool: &str,
        member: u32,
        attrs: Option<Py<PyAny>>,
    ) -> PyResult<pool::Pool> {
        let program = self.compiled.program();
        let id = program.find_pool(pool).ok_or_else(|| {
            error(
                py,
                "PoolError",
                (format!("the spec has no pool named `{pool}`"),),
            )
        })?;
        if member >= program.pool(id).count {
            return Err(error(
                py,
                "PoolError",
                (format!(
                    "pool `{pool}` has {} members; there is no member {member}",
                    program.pool(id).count
                ),),
            ));
        }
        pool::Pool::new(py, program, &self.compiled, id, member, attrs)
    }

    /// The compiled key list of `site` (`queue`, `evict`, `preempt`) of `pool`, for
    /// a Python host that fills its own rows.
    fn keys(&self, py: Python<'_>, pool: &str, site: &str) -> PyResult<keys::Keys> {
        keys::Keys::new(py, &self.compiled, pool, site)
    }

    /// The IR facts a Python host checks a spec against: per pool its name, family
    /// size, `cap` (None: inf), `block`, whether it spills and routes, the pool it hands
    /// off to (None: none), its `admit via` stage, its `fair` (None, or `by`, the
    /// prices and `weight`: R30),
    /// and its queue, evict, preempt and requeue modes; per stage its name, family
    /// size, kind, `budget`, `seats` and `chunk` (None: inf, or a link).
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        use poolc::ir::{Evict, Limit, PreemptMode, QueuePolicy, QueueTie, Requeue, StageKind};
        let p = self.compiled.program();
        let limit = |l: Limit| match l {
            Limit::Finite(n) => Some(n),
            Limit::Unbounded => None,
        };
        let pools = PyList::empty(py);
        for pool in &p.pools {
            let d = PyDict::new(py);
            d.set_item("name", &pool.name)?;
            d.set_item("count", pool.count)?;
            d.set_item("cap", limit(pool.cap))?;
            d.set_item("block", pool.block_units())?;
            d.set_item("spill", pool.spill.is_some())?;
            // R22: whether sessions are routed between the family's members.
            d.set_item("route", pool.route.is_some())?;
            // R25: the family its sessions continue in once their prompt is computed.
            d.set_item(
                "handoff",
                pool.handoff.as_ref().map(|h| p.pool(h.target).name.clone()),
            )?;
            d.set_item(
                "admit_via",
                pool.admit_via.map(|j| p.stage(j.target).name.clone()),
            )?;
            // R30: whose service the pool counts and at what prices (None: no `fair`).
            let fair = match pool.fair {
                None => None,
                Some(f) => {
                    let fd = PyDict::new(py);
                    fd.set_item("by", &p.session.attr(f.by).name)?;
                    fd.set_item("prefill", f.prefill)?;
                    fd.set_item("decode", f.decode)?;
                    fd.set_item("weight", f.weight.map(|w| p.session.attr(w).name.clone()))?;
                    Some(fd)
                }
            };
            d.set_item("fair", fair)?;
            d.set_item(
                "queue",
                match pool.queue {
                    QueuePolicy::Fifo => "fifo",
                    QueuePolicy::By(_) => "by",
                },
            )?;
            // R21: what orders waiting requests whose `queue by` keys tie.
            d.set_item(
                "queue_tie",
                match pool.queue_tie {
                    QueueTie::Enqueue => "enqueue",
                    QueueTie::Id => "id",
                },
            )?;
            d.set_item(
                "evict",
                match pool.evict {
                    Evict::Lru => "lru",
                    Evict::By(_) => "by",
                },
            )?;
            d.set_item(
                "preempt",
                match pool.preempt {
                    PreemptMode::None => "none",
                    PreemptMode::Lifo => "lifo",
                    PreemptMode::By(_) => "by",
                },
            )?;
            d.set_item(
                "requeue",
                match pool.requeue {
                    Requeue::Head => "head",
                    Requeue::Keyed => "keyed",
                },
            )?;
            pools.append(d)?;
        }
        let stages = PyList::empty(py);
        for stage in &p.stages {
            let d = PyDict::new(py);
            d.set_item("name", &stage.name)?;
            d.set_item("count", stage.count)?;
            d.set_item("kind", stage.kind.name())?;
            let step = match &stage.kind {
                StageKind::Step(step) => Some(step),
                StageKind::Link(_) => None,
            };
            d.set_item("budget", step.and_then(|s| limit(s.budget)))?;
            d.set_item("seats", step.and_then(|s| limit(s.seats)))?;
            d.set_item("chunk", step.and_then(|s| limit(s.chunk)))?;
            stages.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("pools", pools)?;
        out.set_item("stages", stages)?;
        out.set_item(
            "defaults",
            p.session
                .attrs
                .iter()
                .map(|a| (a.name.clone(), a.default))
                .collect::<Vec<_>>(),
        )?;
        Ok(out)
    }

    /// Builds a shared object as `poolc build` does; gives (library, header) paths.
    #[pyo3(signature = (path, target=None, header=None))]
    fn build(
        &self,
        py: Python<'_>,
        path: PathBuf,
        target: Option<&str>,
        header: Option<PathBuf>,
    ) -> PyResult<(PathBuf, PathBuf)> {
        let target = match target {
            Some(t) => Target::parse(t),
            None => Target::host(),
        }
        .map_err(|e| error(py, "BuildError", (e.to_string(),)))?;
        let options = BuildOptions {
            target,
            emit: Emit::SharedObject,
            prefix: Prefix::default(),
            linker: None,
            header,
            source_name: self.name.clone(),
        };
        let built = aot::build(self.compiled.program(), &path, &options)
            .map_err(|e| error(py, "BuildError", (e.to_string(),)))?;
        Ok((built.output, built.header))
    }
}

/// Checks and compiles `source` (named `name` in diagnostics) with `--set` values.
#[pyfunction]
#[pyo3(signature = (source, name, set))]
fn compile_source(
    py: Python<'_>,
    source: &str,
    name: &str,
    set: Vec<(String, f64)>,
) -> PyResult<Spec> {
    let options = Options { set };
    let program = match poolc::check(source, &options) {
        Ok(p) => p,
        Err(diags) => {
            let text = diag::render(name, source, &diags, diag::Styling::Plain);
            let list = PyList::empty(py);
            for d in &diags {
                list.append(diagnostic_dict(py, d, name, source)?)?;
            }
            return Err(error(py, "CompileError", (text, list)));
        }
    };
    let compiled = poolc::codegen::compile_program(&program)
        .map_err(|e| error(py, "CompileError", (e.to_string(), PyList::empty(py))))?;
    Ok(Spec {
        compiled,
        name: name.to_string(),
        title: run::title(source),
    })
}

fn format_of(py: Python<'_>, format: Option<&str>) -> PyResult<Option<Format>> {
    match format {
        None => Ok(None),
        Some("mooncake") => Ok(Some(Format::Mooncake)),
        Some("azure") => Ok(Some(Format::Azure)),
        Some("jsonl") => Ok(Some(Format::Jsonl)),
        Some(other) => Err(error(
            py,
            "TraceError",
            (format!(
                "format `{other}` is not one of mooncake, azure, jsonl"
            ),),
        )),
    }
}

fn source_of(
    py: Python<'_>,
    trace: Option<PathBuf>,
    format: Option<&str>,
    synthetic: Option<usize>,
    seed: u64,
) -> PyResult<Source> {
    let format = format_of(py, format)?;
    Ok(match (trace, synthetic) {
        (Some(_), Some(_)) => {
            return Err(error(
                py,
                "RunError",
                ("give a trace or a synthetic workload, not both".to_string(),),
            ));
        }
        (_, Some(n)) => Source::Synthetic { n, seed },
        (Some(path), None) => Source::Trace { path, format },
        (None, None) => Source::Default,
    })
}

/// Replays a workload through `spec` and gives the report as the JSON text `poolc run
/// --json` prints (the Python layer parses it, so both give the same values).
#[pyfunction]
#[pyo3(signature = (spec, trace, format, synthetic, seed, log, progress, workload, samples, exact))]
#[allow(clippy::too_many_arguments)] // the Python signature, keyword for keyword
fn run_json(
    py: Python<'_>,
    spec: &Spec,
    trace: Option<PathBuf>,
    format: Option<&str>,
    synthetic: Option<usize>,
    seed: u64,
    log: Option<PathBuf>,
    progress: bool,
    workload: Option<Bound<'_, PyList>>,
    samples: bool,
    exact: bool,
) -> PyResult<String> {
    let wall = Instant::now();
    // Rows the caller built are held whole (the caller holds them anyway); a trace
    // file or a synthetic workload is read one session at a time as the replay
    // reaches it, as `poolc run` reads it (docs/HOST.md, "Memory").
    let input = match workload {
        Some(rows) => {
            if trace.is_some() || synthetic.is_some() {
                return Err(error(
                    py,
                    "RunError",
                    ("give workload rows, a trace or a synthetic workload, not two".to_string(),),
                ));
            }
            Input::Rows(workload_of(py, &rows)?)
        }
        None => Input::Streamed(
            source_of(py, trace, format, synthetic, seed)?
                .sessions(1.0)
                .map_err(|e| error(py, "TraceError", (e.to_string(),)))?,
        ),
    };
    let mut log_file = match &log {
        None => None,
        Some(path) => Some(BufWriter::new(File::create(path).map_err(|e| {
            error(
                py,
                "RunError",
                (format!("cannot write {}: {e}", path.display()),),
            )
        })?)),
    };
    let compiled = &spec.compiled;
    // The replay is all Rust: other Python threads run meanwhile.
    let result = py.allow_threads(|| {
        // The last share printed, in per cent.
        let mut shown: Option<u64> = None;
        let mut bar = |done: u64, total: u64| {
            // At most 101 updates, on stderr, never in the report. A trace file's
            // total is its row count, a hint (docs/HOST.md, "Memory"): the share is
            // capped at 100, and the line ends when the run does.
            let share = (done * 100).checked_div(total).unwrap_or(100).min(100);
            if shown.is_none_or(|s| share > s) {
                shown = Some(share);
                eprint!("\rpoolc: {done}/{total} sessions");
            }
        };
        let mut kept = Latencies::default();
        let watch = Watch {
            log: log_file.as_mut().map(|w| w as &mut dyn Write),
            observer: if samples { Some(&mut kept) } else { None },
            progress: if progress { Some(&mut bar) } else { None },
            exact_percentiles: exact,
        };
        let result = match input {
            Input::Rows(w) => run::replay(compiled, &w, watch),
            Input::Streamed(sessions) => run::replay_sessions(compiled, sessions, watch),
        };
        if shown.is_some() {
            eprintln!();
        }
        let report = result.map_err(|e| match e {
            // A bad line deep in the file, found when the replay reached it.
            RunError::Host(HostError::Trace(t)) => ("TraceError", t.to_string()),
            other => ("RunError", other.to_string()),
        })?;
        if let Some(w) = log_file.as_mut() {
            w.flush()
                .map_err(|e| ("RunError", format!("cannot write the log: {e}")))?;
        }
        let elapsed = wall.elapsed().as_secs_f64();
        let mut value = run::report_json(&report, &spec.name, spec.title.as_deref(), elapsed)
            .map_err(|e| ("RunError", format!("cannot encode the report: {e}")))?;
        if samples && let Some(obj) = value.as_object_mut() {
            obj.insert(
                "samples".into(),
                serde_json::json!({"ttft": kept.ttft, "itl": kept.itl, "e2e": kept.e2e}),
            );
        }
        Ok::<String, (&str, String)>(value.to_string())
    });
    result.map_err(|(class, e)| error(py, class, (e,)))
}

/// What `run_json` replays: rows held whole, or sessions read one at a time.
enum Input {
    Rows(Workload),
    Streamed(Box<dyn SessionSource + Send>),
}

/// The sessions of a trace file, as a list of dicts.
/// `poolc fit STEPS --time EXPR --stage NAME --json`, as one JSON text: the same
/// library calls as cli/src/cli/fit.rs. The expression's diagnostics are a
/// `CompileError` rendered against `--time`, as the command renders them; a log that
/// cannot be read or fitted is a `FitError`.
#[pyfunction]
#[pyo3(signature = (steps, time, stage))]
fn fit_json(py: Python<'_>, steps: PathBuf, time: &str, stage: &str) -> PyResult<String> {
    use poolc_tools::fit::{self, FitError, StageName, TimeModel};
    let diagnostics = |diags: &[Diagnostic]| -> PyErr {
        let text = diag::render("--time", time, diags, diag::Styling::Plain);
        let list = PyList::empty(py);
        for d in diags {
            if let Err(e) = diagnostic_dict(py, d, "--time", time).and_then(|x| list.append(x)) {
                return e;
            }
        }
        error(py, "CompileError", (text, list))
    };
    let stage = StageName::new(stage).map_err(|e| error(py, "FitError", (e.to_string(),)))?;
    let model = TimeModel::parse(time).map_err(|d| diagnostics(&d))?;
    let log = py
        .allow_threads(|| fit::steps::read_path(&steps))
        .map_err(|e| error(py, "FitError", (e.to_string(),)))?;
    let fitted = match py.allow_threads(|| fit::fit(&log, &model, &stage)) {
        Ok(f) => f,
        Err(FitError::Time(d)) => return Err(diagnostics(&d)),
        Err(e) => return Err(error(py, "FitError", (e.to_string(),))),
    };
    fit::report::json(&fitted)
        .map_err(|e| error(py, "FitError", (format!("cannot encode the fit: {e}"),)))
}

/// The text `poolc model CONFIG --gpu …` prints: the same library calls as
/// cli/src/cli/model.rs, with `dtype` and `time` by the names the command takes. What
/// the command refuses with exit 1 is a `ModelError` with its message.
#[pyfunction]
#[pyo3(signature = (config, gpu, tp, dtype, time, gpu_memory_utilization, block_size, max_num_seqs, max_num_batched_tokens))]
#[allow(clippy::too_many_arguments)] // the command's options, one argument each
fn model_text(
    py: Python<'_>,
    config: PathBuf,
    gpu: &str,
    tp: u64,
    dtype: &str,
    time: &str,
    gpu_memory_utilization: f64,
    block_size: u64,
    max_num_seqs: u64,
    max_num_batched_tokens: u64,
) -> PyResult<String> {
    use poolc_tools::model::{self, Deployment, Dtype, Engine, TimeKind};
    let refuse = |message: String| error(py, "ModelError", (message,));
    let names = |all: &[&str]| all.join(", ");
    let dtype = Dtype::from_name(dtype).ok_or_else(|| {
        let known: Vec<&str> = Dtype::ALL.iter().map(|d| d.name()).collect();
        refuse(format!(
            "unknown dtype `{dtype}`; the dtypes are {}",
            names(&known)
        ))
    })?;
    let time = TimeKind::from_name(time).ok_or_else(|| {
        let known: Vec<&str> = TimeKind::ALL.iter().map(|t| t.name()).collect();
        refuse(format!(
            "unknown time model `{time}`; the models are {}",
            names(&known)
        ))
    })?;
    let gpu = model::find_gpu(gpu).map_err(|e| refuse(e.to_string()))?;
    let shape = model::config::read_path(&config).map_err(|e| refuse(e.to_string()))?;
    let deployment = Deployment {
        gpu,
        tp,
        dtype,
        engine: Engine {
            gpu_memory_utilization,
            block_size,
            max_num_seqs,
            max_num_batched_tokens,
        },
        time,
    };
    let name = config.display().to_string();
    model::spec::generate(&name, &shape, &deployment)
        .map(|s| s.text)
        .map_err(|e| refuse(e.to_string()))
}

#[pyfunction]
#[pyo3(signature = (path, format))]
fn read_trace<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let format = format_of(py, format)?;
    let workload = py
        .allow_threads(|| poolrt::trace::read_path(&path, format))
        .map_err(|e| error(py, "TraceError", (e.to_string(),)))?;
    sessions(py, &workload)
}

/// The workload of rows shaped as `read_trace` gives them: `arrival`, `prompt`,
/// `output`, optional `runs` and `id`, and any other numeric key as an extra field
/// (a session attribute of that name). The host checks what a row must satisfy.
fn workload_of(py: Python<'_>, rows: &Bound<'_, PyList>) -> PyResult<Workload> {
    let bad =
        |i: usize, what: String| error(py, "TraceError", (format!("workload row {i}: {what}"),));
    // The limits every trace reader applies (docs/RELIABILITY.md, "Limits").
    poolrt::trace::session_limit(rows.len())
        .map_err(|what| error(py, "TraceError", (format!("workload rows: {what}"),)))?;
    let mut fields: Vec<String> = Vec::new();
    let mut sessions = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let row = row
            .downcast::<PyDict>()
            .map_err(|_| bad(i, "is not a dict".to_string()))?;
        let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            row.get_item(key)?
                .ok_or_else(|| bad(i, format!("has no `{key}`")))
        };
        let number = |key: &str| -> PyResult<f64> {
            get(key)?
                .extract::<f64>()
                .map_err(|_| bad(i, format!("`{key}` is not a number")))
        };
        let whole = |key: &str| -> PyResult<u64> {
            get(key)?
                .extract::<u64>()
                .map_err(|_| bad(i, format!("`{key}` is not a whole number >= 0")))
        };
        let runs: Vec<(u64, u64)> = match row.get_item("runs")? {
            None => Vec::new(),
            Some(r) if r.is_none() => Vec::new(),
            Some(r) => r
                .extract()
                .map_err(|_| bad(i, "`runs` is not a list of (run_id, length)".to_string()))?,
        };
        let name: Option<String> = match row.get_item("id")? {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => Some(v.str()?.to_string()),
        };
        let mut extra = Vec::new();
        for (k, v) in row.iter() {
            let key: String = k.extract()?;
            if matches!(
                key.as_str(),
                "arrival" | "prompt" | "output" | "runs" | "id"
            ) {
                continue;
            }
            let value: f64 = v
                .extract()
                .map_err(|_| bad(i, format!("`{key}` is not a number")))?;
            let f = match fields.iter().position(|x| *x == key) {
                Some(f) => f,
                None => {
                    fields.push(key);
                    fields.len() - 1
                }
            };
            extra.push((f as u32, value));
        }
        extra.sort_by_key(|&(f, _)| f);
        let (prompt, output) = (whole("prompt")?, whole("output")?);
        poolrt::trace::units_limit(prompt, output).map_err(|what| bad(i, what))?;
        sessions.push(poolrt::trace::SessionSpec {
            arrival: number("arrival")?,
            prompt,
            output,
            runs: runs
                .into_iter()
                .map(|(id, len)| poolrt::Run {
                    id: poolrt::RunId(id),
                    len: poolrt::Units(len),
                })
                .collect(),
            extra,
            name,
            line: i as u64 + 1,
        });
    }
    Ok(Workload {
        source: "<workload rows>".to_string(),
        fields,
        sessions,
    })
}

fn sessions<'py>(py: Python<'py>, w: &Workload) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for s in &w.sessions {
        let d = PyDict::new(py);
        d.set_item("arrival", s.arrival)?;
        d.set_item("prompt", s.prompt)?;
        d.set_item("output", s.output)?;
        let runs: Vec<(u64, u64)> = s.runs.iter().map(|r| (r.id.0, r.len.0)).collect();
        d.set_item("runs", runs)?;
        d.set_item("id", s.name.as_deref())?;
        for &(f, v) in &s.extra {
            if let Some(name) = w.fields.get(f as usize) {
                d.set_item(name, v)?;
            }
        }
        list.append(d)?;
    }
    Ok(list)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Spec>()?;
    m.add_class::<pool::Pool>()?;
    m.add_class::<keys::Keys>()?;
    m.add_function(wrap_pyfunction!(compile_source, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(fit_json, m)?)?;
    m.add_function(wrap_pyfunction!(model_text, m)?)?;
    m.add_class::<sweep::SweepPlan>()?;
    m.add_function(wrap_pyfunction!(sweep::sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep_point, m)?)?;
    Ok(())
}
