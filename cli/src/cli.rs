//! Command-line interface: the clap definitions of every subcommand and the code that
//! prints their results. Exit codes are decided here and only here: 0 success, 1 a
//! spec or input error (diagnostics on stderr) or a failed write, 2 a usage error
//! (from clap), 130 an interrupted `poolc run` or `poolc sweep`. Every result goes to stdout through
//! [`print_out`], so a write error (a full disk, a closed pipe) is a clean error and
//! never a panic.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod chart;
mod compare;
mod conform;
mod fit;
mod model;
mod run;
mod sweep;

use poolc::diag::{self, Diagnostic};
use poolc::{Options, codegen, ir};
use poolc_tools::eval;

#[derive(Parser)]
#[command(
    name = "poolc",
    version,
    about = "Compiler and runtime for Pool, the KV-cache pool policy language"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a workload through the reference host with a spec's compiled policies
    /// and print the report. With no arguments: examples/vllm.pool on the bundled
    /// Mooncake conversation trace.
    Run(run::RunArgs),
    /// Replay one workload through several specs and print their reports side by
    /// side, the best of each row marked (`--json`: a list of reports).
    Compare(compare::CompareArgs),
    /// Run every point of a grid of specs, params, traces and rate scales on all
    /// cores (or find each point's largest rate scale that meets the SLOs), write
    /// results.csv and results.jsonl and print a summary (docs/SWEEP.md).
    Sweep(sweep::SweepArgs),
    /// Measure a pool's admissions/s and evictions/s on a seeded synthetic stream:
    /// its compiled policy, the interpreter and hand-written Rust, with their ratios.
    /// With no arguments: examples/vllm.pool.
    Bench(bench::BenchArgs),
    /// Replay scenarios recorded from vLLM 0.33's scheduler (config.json,
    /// workload.jsonl, steps.jsonl) through the reference host with a spec and compare
    /// every step field by field (docs/CONFORMANCE.md).
    Conform(conform::ConformArgs),
    /// Fit the unknowns of a stage `time` expression to measured engine iterations
    /// (a `poolc-steps/1` log, docs/STEPS.md) by non-negative least squares; print
    /// the values, MAPE and R² per regime and the stage block (docs/LATENCY.md).
    Fit(fit::FitArgs),
    /// Print a deployment spec for a Hugging Face config.json served by vLLM on a GPU:
    /// the KV capacity as vLLM's memory profile derives it, and the iteration time as
    /// BLIS's trained-physics model (or a roofline) in Pool (docs/LATENCY.md).
    Model(model::ModelArgs),
    /// Check specs and report every error found.
    Check {
        /// Spec files to check.
        #[arg(required = true)]
        specs: Vec<PathBuf>,
        #[command(flatten)]
        set: SetArgs,
    },
    /// Print the checked IR of a spec: values, stages, pools, key expressions over
    /// slots, read-sets, slot layouts and family joins.
    Ir {
        spec: PathBuf,
        #[command(flatten)]
        set: SetArgs,
    },
    /// Print the Cranelift IR of every compiled function (keys, cmp, select, spill
    /// pred/work, stage time), each after a `; <symbol>` line.
    Clif {
        spec: PathBuf,
        /// Only the functions of this pool (or stage).
        #[arg(long)]
        pool: Option<String>,
        /// Print the IR after Cranelift's optimisation passes.
        #[arg(long)]
        opt: bool,
        #[command(flatten)]
        set: SetArgs,
    },
    /// Evaluate the expressions of one site on given inputs and print one value per
    /// line (Rust `{:?}` form: `NaN`, `inf`, `-inf`, `-0.0` parse back exactly).
    Eval {
        spec: PathBuf,
        /// The pool whose site to evaluate (a stage for `--site time`).
        #[arg(long, alias = "stage")]
        pool: String,
        #[arg(long, value_enum)]
        site: SiteArg,
        /// Compute with the reference interpreter instead of the JIT.
        #[arg(long)]
        interp: bool,
        /// Inputs by source name: attributes, context variables, queries as written
        /// (`prompt=300 waited=4 'free(kv)=1024'`; route keys: one member's row, e.g.
        /// `member=1 'hit(kv)=64' 'min_of(queued(kv))=0'`). Attributes not given take
        /// their session default.
        #[arg(value_name = "NAME=VALUE")]
        inputs: Vec<String>,
        #[command(flatten)]
        set: SetArgs,
    },
    /// Compile a spec to a shared object (or an object file) that a host in any
    /// language can load, with a C header; the library carries a manifest of
    /// pools, stages, slot layouts and read-sets (docs/ABI.md).
    Build {
        /// The spec to compile.
        spec: PathBuf,
        /// The file to write (e.g. libpolicy.so).
        #[arg(short, long)]
        output: PathBuf,
        /// Target triple: x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu
        /// (default: this machine).
        #[arg(long, value_name = "TRIPLE")]
        target: Option<String>,
        /// A linked shared object, or a relocatable object file to link yourself
        /// (with -lm).
        #[arg(long, value_enum, default_value = "so")]
        emit: EmitArg,
        /// The C compiler driver that links the shared object, with any leading
        /// arguments (default: cc, or aarch64-linux-gnu-gcc for aarch64 elsewhere).
        #[arg(long, value_name = "CMD")]
        linker: Option<String>,
        /// Where to write the C header (default: the output with extension .h).
        #[arg(long, value_name = "FILE")]
        header: Option<PathBuf>,
        /// The start of every exported symbol: `<prefix>_pool_<P>_queue_select`, …
        #[arg(long, default_value = "poolc", value_parser = parse_prefix)]
        prefix: poolc::aot::object::Prefix,
        #[command(flatten)]
        set: SetArgs,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SiteArg {
    Queue,
    Evict,
    Preempt,
    Pred,
    Work,
    Time,
    Route,
    Handoff,
}

impl SiteArg {
    fn site(self) -> eval::Site {
        match self {
            SiteArg::Queue => eval::Site::Queue,
            SiteArg::Evict => eval::Site::Evict,
            SiteArg::Preempt => eval::Site::Preempt,
            SiteArg::Pred => eval::Site::Pred,
            SiteArg::Work => eval::Site::Work,
            SiteArg::Time => eval::Site::Time,
            SiteArg::Route => eval::Site::Route,
            SiteArg::Handoff => eval::Site::Handoff,
        }
    }
}

#[derive(clap::Args)]
struct SetArgs {
    /// Override a `param` (D2), e.g. `--set max_num_seqs=512`. May be repeated.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = poolc::assign::parse_assignment)]
    set: Vec<(String, f64)>,
}

impl SetArgs {
    fn options(&self) -> Options {
        Options {
            set: self.set.clone(),
        }
    }
}

/// Replaces Rust's panic message (and its backtrace hint) with a short report: a
/// panic is a bug in poolc, never the user's fault.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        // Ignoring a failed write: a panic hook that panicked would abort.
        let _ = writeln!(
            std::io::stderr(),
            "poolc: internal error: {msg}{at}\n\
             poolc: this is a bug in poolc; please report it with the input that caused it"
        );
    }));
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Conform(args) => conform::run(args),
        Command::Fit(args) => fit::run(args),
        Command::Model(args) => model::run(args),
        Command::Check { specs, set } => check(&specs, &set.options()),
        Command::Ir { spec, set } => match load(&spec, &set.options()) {
            Ok(program) => print_out(&ir::dump(&program)),
            Err(code) => code,
        },
        Command::Clif {
            spec,
            pool,
            opt,
            set,
        } => match load(&spec, &set.options()) {
            Ok(program) => {
                let form = if opt {
                    codegen::ClifForm::Optimized
                } else {
                    codegen::ClifForm::Built
                };
                match codegen::clif(&program, pool.as_deref(), form) {
                    Ok(text) => print_out(&text),
                    Err(e) => fail(&e.to_string()),
                }
            }
            Err(code) => code,
        },
        Command::Eval {
            spec,
            pool,
            site,
            interp,
            inputs,
            set,
        } => run_eval(&spec, &pool, site.site(), interp, &inputs, &set.options()),
        Command::Build {
            spec,
            output,
            target,
            emit,
            linker,
            header,
            prefix,
            set,
        } => run_build(
            &spec,
            &output,
            BuildArgs {
                target,
                emit,
                linker,
                header,
                prefix,
            },
            &set.options(),
        ),
    }
}

/// The exit code of a command stopped by SIGINT (128 + 2, as a shell reports it).
const INTERRUPTED: u8 = 130;

/// The flag a long command (`run`, `sweep`) reads between its steps: the first
/// SIGINT sets it, a second one exits at once with [`INTERRUPTED`] (its flag is
/// already set then).
fn sigint_flag() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, String> {
    use std::sync::Arc;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        i32::from(INTERRUPTED),
        Arc::clone(&stop),
    )
    .and_then(|_| signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop)))
    .map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    Ok(stop)
}

fn fail(message: &str) -> ExitCode {
    // Nothing is left to tell when stderr itself cannot be written; the exit code
    // still says it failed.
    let _ = writeln!(std::io::stderr(), "poolc: {message}");
    ExitCode::from(1)
}

/// How diagnostics written to stderr are styled: coloured only on a terminal.
fn stderr_styling() -> diag::Styling {
    if std::io::stderr().is_terminal() {
        diag::Styling::Ansi
    } else {
        diag::Styling::Plain
    }
}

/// Writes a command's result to stdout: success, or exit 1 with the write error.
fn print_out(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("cannot write the output: {e}")),
    }
}

fn run_eval(
    path: &Path,
    pool: &str,
    site: eval::Site,
    interp: bool,
    inputs: &[String],
    options: &Options,
) -> ExitCode {
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
    };
    let compiled = match poolc::compile(&source, options) {
        Ok(c) => c,
        Err(e) => {
            report_compile(path, &source, &e);
            return ExitCode::from(1);
        }
    };
    let inputs = match inputs
        .iter()
        .map(|a| eval::parse_input(a))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(i) => i,
        Err(e) => return fail(&e.to_string()),
    };
    let backend = if interp {
        eval::Backend::Interp
    } else {
        eval::Backend::Jit
    };
    match eval::eval_site(&compiled, pool, site, &inputs, backend) {
        Ok(values) => print_out(&eval::render(&values)),
        Err(e) => fail(&e.to_string()),
    }
}

fn check(specs: &[PathBuf], options: &Options) -> ExitCode {
    let mut failed = false;
    let mut text = String::new();
    for path in specs {
        match load_with_warnings(path, options) {
            Ok(p) => {
                let members: u32 = p.pools.iter().map(|x| x.count).sum();
                text += &format!(
                    "{}: ok ({} pool{}, {} member{}, {} stage{})\n",
                    path.display(),
                    p.pools.len(),
                    plural(p.pools.len()),
                    members,
                    plural(members as usize),
                    p.stages.len(),
                    plural(p.stages.len())
                );
            }
            Err(_) => failed = true,
        }
    }
    let printed = print_out(&text);
    if failed { ExitCode::from(1) } else { printed }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Reads and checks one spec, printing its diagnostics; the error is the exit code.
fn load(path: &Path, options: &Options) -> Result<ir::Program, ExitCode> {
    let source = read(path)?;
    poolc::check(&source, options).map_err(|diags| {
        report(path, &source, &diags);
        ExitCode::from(1)
    })
}

/// [`load`], printing the warnings of a spec that checks as well (`poolc check`).
fn load_with_warnings(path: &Path, options: &Options) -> Result<ir::Program, ExitCode> {
    let source = read(path)?;
    match poolc::check_with_warnings(&source, options) {
        Ok((program, warnings)) => {
            if !warnings.is_empty() {
                let name = path.display().to_string();
                eprint!(
                    "{}",
                    diag::render(&name, &source, &warnings, stderr_styling())
                );
                let n = warnings.len();
                eprintln!("poolc: {n} warning{} in {}", plural(n), path.display());
            }
            Ok(program)
        }
        Err(diags) => {
            report(path, &source, &diags);
            Err(ExitCode::from(1))
        }
    }
}

fn read(path: &Path) -> Result<String, ExitCode> {
    std::fs::read_to_string(path).map_err(|e| fail(&format!("cannot read {}: {e}", path.display())))
}

/// Prints why a spec did not compile: its diagnostics against the source, or the
/// code generation failure.
fn report_compile(path: &Path, source: &str, error: &poolc::CompileError) {
    match error {
        poolc::CompileError::Spec(diags) => report(path, source, diags),
        poolc::CompileError::Codegen(e) => {
            let _ = fail(&format!("{}: code generation failed: {e}", path.display()));
        }
    }
}

fn report(path: &Path, source: &str, diags: &[Diagnostic]) {
    let n = diags.len();
    // A failed write to stderr is ignored, as in `fail`.
    let _ = writeln!(
        std::io::stderr(),
        "{}poolc: {n} error{} in {}",
        diag::render(&path.display().to_string(), source, diags, stderr_styling()),
        plural(n),
        path.display()
    );
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum EmitArg {
    /// A shared object (.so), linked with the system linker.
    So,
    /// A relocatable object file (.o).
    Obj,
}

fn parse_prefix(s: &str) -> Result<poolc::aot::object::Prefix, String> {
    poolc::aot::object::Prefix::parse(s)
}

/// The options of `poolc build` besides the spec, output and `--set`.
struct BuildArgs {
    target: Option<String>,
    emit: EmitArg,
    linker: Option<String>,
    header: Option<PathBuf>,
    prefix: poolc::aot::object::Prefix,
}

fn run_build(spec: &Path, output: &Path, args: BuildArgs, options: &Options) -> ExitCode {
    use poolc::aot::object::Target;
    use poolc::aot::{BuildOptions, Emit};
    let target = match &args.target {
        Some(t) => Target::parse(t),
        None => Target::host(),
    };
    let target = match target {
        Ok(t) => t,
        Err(e) => return fail(&e.to_string()),
    };
    let program = match load(spec, options) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let build_options = BuildOptions {
        target,
        emit: match args.emit {
            EmitArg::So => Emit::SharedObject,
            EmitArg::Obj => Emit::Object,
        },
        prefix: args.prefix,
        linker: args.linker,
        header: args.header,
        source_name: spec.display().to_string(),
    };
    match poolc::aot::build(&program, output, &build_options) {
        Ok(built) => print_out(&format!(
            "wrote {} ({}) and {}\n",
            built.output.display(),
            build_options.target,
            built.header.display()
        )),
        Err(e) => fail(&e.to_string()),
    }
}
