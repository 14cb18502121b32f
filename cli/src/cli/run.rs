//! `poolc run`: replays a workload through the reference host with a spec's compiled
//! policies and prints the report (text, or one JSON object with `--json`). It owns
//! the defaults a newcomer gets with no arguments, the progress bar and the wall-clock
//! figure, which is the only thing in the output that varies between identical runs,
//! and SIGINT: the first one stops the replay at its next event (exit 130; the log
//! keeps what was written and never gets its final `complete` line), a second one
//! exits at once with 130.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use poolc_tools::bundled;
use poolc_tools::chart::Curves;
use poolc_tools::run::{RunError, Source, Watch, replay_sessions_until, report_json, title};
use poolrt::host::{HostError, Observer};
use poolrt::trace::{Format, SessionSource, TraceError, Workload};

use super::chart::ChartArgs;
use super::{INTERRUPTED, SetArgs, fail, print_out, report, sigint_flag};

#[derive(clap::Args)]
pub struct RunArgs {
    /// The spec to run (default: examples/vllm.pool).
    spec: Option<PathBuf>,
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Write the JSON-lines log (every stage iteration and pool event) to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Run the policies of a shared object built by `poolc build` from this spec
    /// instead of the JIT (its manifest is checked against the spec first). This
    /// executes the library's code in this process (its initialisers run when it is
    /// opened): name only libraries you trust.
    #[arg(long, value_name = "LIB")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    chart: ChartArgs,
    #[command(flatten)]
    set: SetArgs,
}

/// Where the sessions come from: shared by `poolc run` and `poolc compare`.
#[derive(clap::Args)]
pub(super) struct WorkloadArgs {
    /// The workload: Mooncake JSONL, Azure CSV or our JSONL (docs/TRACES.md); the
    /// format is detected unless `--format` says (default: the bundled Mooncake
    /// conversation trace).
    #[arg(long)]
    trace: Option<PathBuf>,
    #[arg(long, value_enum, requires = "trace")]
    format: Option<FormatArg>,
    /// Replay N seeded synthetic sessions instead of a trace.
    #[arg(long, value_name = "N", conflicts_with = "trace")]
    synthetic: Option<usize>,
    /// Seed of `--synthetic`.
    #[arg(long, default_value_t = 1, requires = "synthetic")]
    seed: u64,
    /// Multiply the arrival rate by F: every arrival time is divided by F (2 replays
    /// the workload twice as fast).
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_rate_scale)]
    rate_scale: f64,
    /// Report exact nearest-rank latency percentiles, keeping every latency (8 bytes
    /// each: gigabytes for millions of sessions), instead of the default bounded
    /// sketch's, which are within 2^-11 (0.05 %) of them plus 1 ns (docs/HOST.md, "Percentiles")
    #[arg(long)]
    pub(super) exact: bool,
}

fn parse_rate_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f.is_finite() => Ok(f),
        _ => Err(format!("expected a finite number > 0, found `{s}`")),
    }
}

impl WorkloadArgs {
    /// The workload, read or generated, at the asked arrival rate.
    pub(super) fn load(&self) -> Result<Workload, TraceError> {
        let mut w = self.source().workload()?;
        if self.rate_scale != 1.0 {
            w.scale_rate(self.rate_scale);
        }
        Ok(w)
    }

    /// The sessions, read or generated one at a time where possible
    /// ([`Source::sessions`]), at the asked arrival rate.
    pub(super) fn sessions(&self) -> Result<Box<dyn SessionSource + Send>, TraceError> {
        self.source().sessions(self.rate_scale)
    }

    fn source(&self) -> Source {
        match (&self.trace, self.synthetic) {
            (_, Some(n)) => Source::Synthetic { n, seed: self.seed },
            (Some(path), None) => Source::Trace {
                path: path.clone(),
                format: self.format.map(FormatArg::format),
            },
            (None, None) => Source::Default,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FormatArg {
    Mooncake,
    Azure,
    Jsonl,
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Mooncake => Format::Mooncake,
            FormatArg::Azure => Format::Azure,
            FormatArg::Jsonl => Format::Jsonl,
        }
    }
}

pub fn run(args: RunArgs) -> ExitCode {
    let wall = Instant::now();
    let stop = match sigint_flag() {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let (spec_path, source) = match bundled::spec_or_default(args.spec.as_deref()) {
        // The name diagnostics, charts and the report show: the bundled spec's is its
        // repository path.
        Ok(spec) => (PathBuf::from(spec.name), spec.text),
        Err(e) => return fail(&e.to_string()),
    };
    let title = title(&source);
    let program = match poolc::check(&source, &args.set.options()) {
        Ok(p) => p,
        Err(diags) => {
            report(&spec_path, &source, &diags);
            return ExitCode::from(1);
        }
    };
    let compiled = match &args.policy {
        None => poolc::codegen::compile_program(&program).map_err(|e| e.to_string()),
        // SAFETY: the user names a library built by `poolc build`; `load` checks its
        // manifest (format, every pool, layout and expression) against this spec before
        // handing out any function, so the functions are the ones the spec compiles to.
        Some(lib) => {
            unsafe { poolc::aot::load::load(lib, &program) }.map_err(|e| format!("--policy: {e}"))
        }
    };
    let compiled = match compiled {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let sessions = match args.workload.sessions() {
        Ok(w) => w,
        Err(e) => return fail(&e.to_string()),
    };
    let source = sessions.source().to_string();

    let mut log_file = match &args.log {
        None => None,
        Some(path) => match File::create(path) {
            Ok(f) => Some(BufWriter::new(f)),
            Err(e) => return fail(&format!("cannot write {}: {e}", path.display())),
        },
    };
    let mut series = args.chart.series();
    let bar = Progress::new();
    let mut progress = |done: u64, total: u64| bar.update(done, total);
    let result = replay_sessions_until(
        &compiled,
        sessions,
        Watch {
            log: log_file.as_mut().map(|w| w as &mut dyn Write),
            observer: series.as_mut().map(|s| s as &mut dyn Observer),
            // Only a terminal shows the bar, and only there is the total needed.
            progress: bar
                .terminal
                .then_some(&mut progress as &mut dyn FnMut(u64, u64)),
            exact_percentiles: args.workload.exact,
        },
        &stop,
    );
    bar.finish();
    let report = match result {
        Ok(r) => r,
        Err(RunError::Host(HostError::Interrupted)) => {
            let _ = writeln!(std::io::stderr(), "poolc: interrupted");
            return ExitCode::from(INTERRUPTED);
        }
        Err(e) => return fail(&e.to_string()),
    };
    if let Some(mut w) = log_file
        && let Err(e) = w.flush()
    {
        return fail(&format!("cannot write the log: {e}"));
    }
    if let Some(series) = series {
        let name = spec_path.display().to_string();
        let heading = title.clone().unwrap_or_else(|| name.clone());
        let subtitle = format!("spec: {name} · workload: {source}");
        let curves = [Curves::of(stem(&spec_path), series, report.sim_seconds)];
        if let Err(e) = args
            .chart
            .write(&heading, &subtitle, &curves, &report.to_text())
        {
            return fail(&e);
        }
    }
    let wall_seconds = wall.elapsed().as_secs_f64();
    if args.json {
        let name = spec_path.display().to_string();
        match report_json(&report, &name, title.as_deref(), wall_seconds) {
            Ok(v) => print_out(&format!("{v}\n")),
            Err(e) => fail(&format!("cannot encode the report: {e}")),
        }
    } else {
        let rate = report.sessions as f64 / wall_seconds.max(1e-9);
        let title = title.map_or(String::new(), |t| format!("{t}\n"));
        print_out(&format!(
            "{title}spec: {}\n{}wall: {wall_seconds:.3} s ({rate:.0} sessions per second of wall time)\n",
            spec_path.display(),
            report.to_text()
        ))
    }
}

/// A spec's name in a legend or a column: its file name without `.pool`.
pub(super) fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// A progress bar on stderr that appears only on a terminal and only once a replay
/// has taken more than a second; it never touches stdout or the report.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    terminal: bool,
}

impl Progress {
    fn new() -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} sessions ({per_sec}, {eta} left)",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            start: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn update(&self, done: u64, total: u64) {
        if self.terminal && self.bar.is_hidden() && self.start.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        self.bar.set_length(total);
        self.bar.set_position(done);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
