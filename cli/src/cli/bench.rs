//! `poolc bench`: drives one pool member of a spec with the seeded synthetic stream
//! of `poolc_tools::bench` and prints admissions/s, evictions/s and ns per admission for
//! the spec's compiled policy, the same stream through the interpreter and through
//! hand-written Rust, and the ratios between them (text, or one JSON object with
//! `--json`). It owns the defaults and the argument checks; the measuring is the
//! library's. Timings vary from run to run; the ratios are what to read.

use std::path::PathBuf;
use std::process::ExitCode;

use poolc::ir::PoolId;
use poolc_tools::bench::{self, BenchError, Options, OptionsError, Phases};
use poolc_tools::bundled;

use super::{SetArgs, fail, print_out, report_compile};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The spec whose policy to measure (default: examples/vllm.pool).
    spec: Option<PathBuf>,
    /// The pool to drive (member 0); default: the first pool a stage admits via.
    #[arg(long)]
    pool: Option<String>,
    /// Holds kept waiting while admitting; also the cache entries of the eviction
    /// phase and the rows of the scan.
    #[arg(long, default_value_t = 1000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    queue: u64,
    /// Admissions (and evictions) measured per run and backend.
    #[arg(long, default_value_t = 20_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// Runs per backend (interleaved); figures are medians over them.
    #[arg(long, default_value_t = 5, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeats: u64,
    /// Seed of the synthetic stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The fraction of holds that start with a shared prefix (0 to 1).
    #[arg(long, default_value_t = 0.5, value_parser = parse_share)]
    share: f64,
    /// The most blocks a hold asks for before it grows by one (1 to 31; fewer when
    /// the pool's cap needs): per-block work dominates an admission of many blocks.
    #[arg(long, default_value_t = bench::MAX_HOLD_BLOCKS, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=bench::MAX_HOLD_BLOCKS))]
    blocks: u64,
    /// Run only these phases (repeat, or separate with commas; default: all).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PHASE")]
    phase: Vec<PhaseArg>,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    set: SetArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PhaseArg {
    /// Enqueue and admit with the queue held at its length.
    Admission,
    /// Admit fresh holds into a full cache.
    Eviction,
    /// The queue's select alone, when the engine scans it.
    Scan,
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a fraction between 0 and 1")),
    }
}

pub fn run(args: BenchArgs) -> ExitCode {
    let (spec_path, source) = match bundled::spec_or_default(args.spec.as_deref()) {
        // The name diagnostics, charts and the report show: the bundled spec's is its
        // repository path.
        Ok(spec) => (PathBuf::from(spec.name), spec.text),
        Err(e) => return fail(&e.to_string()),
    };
    let repeats = args.repeats as usize;
    // The first compile of the process is the cold one: nothing else compiles first.
    let (compiled, compile) = match bench::compile_timed(&source, &args.set.options(), repeats) {
        Ok(c) => c,
        Err(e) => {
            report_compile(&spec_path, &source, &e);
            return ExitCode::from(1);
        }
    };
    let program = compiled.program();
    let pool = match &args.pool {
        Some(name) => match program.find_pool(name) {
            Some(id) => id,
            None => {
                let names: Vec<&str> = program.pools.iter().map(|p| p.name.as_str()).collect();
                return fail(&format!(
                    "{} has no pool named `{name}` (its pools: {})",
                    spec_path.display(),
                    names.join(", ")
                ));
            }
        },
        None => match bench::default_pool(program) {
            Some(id) => id,
            None => return fail(&format!("{} declares no pool", spec_path.display())),
        },
    };
    let options = Options {
        queue: args.queue as usize,
        ops: args.ops,
        repeats,
        seed: args.seed,
        share: args.share,
        max_blocks: args.blocks,
        phases: if args.phase.is_empty() {
            Phases::default()
        } else {
            Phases {
                admission: args.phase.contains(&PhaseArg::Admission),
                eviction: args.phase.contains(&PhaseArg::Eviction),
                scan: args.phase.contains(&PhaseArg::Scan),
            }
        },
    };
    let result = bench::run(
        &spec_path.display().to_string(),
        &compiled,
        PoolId(pool.0),
        compile,
        &options,
    );
    match result {
        Ok(r) if args.json => print_out(&format!("{}\n", r.to_json())),
        Ok(r) => print_out(&r.to_text()),
        Err(BenchError::Options(e)) => fail(&format!("bench: {}", flag_wording(e))),
        Err(e) => fail(&format!("bench: {e}")),
    }
}

/// An options error in terms of this command's flags (the library does not know them).
fn flag_wording(e: OptionsError) -> String {
    match e {
        OptionsError::EmptyQueue => "--queue must be at least 1".into(),
        OptionsError::NoOps => "--ops must be at least 1".into(),
        OptionsError::Share(_) => "--share must be between 0 and 1".into(),
        OptionsError::EvictionCapOverflow { .. } => {
            "--queue is too large for the eviction phase's cap".into()
        }
    }
}
