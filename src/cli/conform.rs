//! `poolc conform`: replays scenarios recorded from vLLM 0.33's real scheduler through
//! the reference host with a spec (default examples/vllm.pool) and says, per
//! scenario, whether every step matches, or shows the first divergent step with the
//! three before it. Exit 0 only when every scenario matches; a scenario that cannot
//! be replayed (an unsupported setting, a bad file) is reported and counts as a
//! failure, and the others still run. The work is `poolc::tools::conform`'s; this file only
//! parses arguments, prints and picks the exit code. docs/CONFORMANCE.md.

use std::path::PathBuf;
use std::process::ExitCode;

use poolc::tools::run::bundled;

use super::{SetArgs, fail, report};

/// The spec of `poolc conform` without `--spec`.
const DEFAULT_SPEC: &str = "examples/vllm.pool";

#[derive(clap::Args)]
pub struct ConformArgs {
    /// Scenario folders, each with config.json, workload.jsonl and steps.jsonl (the
    /// vLLM oracle's format).
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The spec whose one step stage and the pool it admits play vLLM's engine and KV
    /// cache (default: examples/vllm.pool). Its budget, seats, chunk, cap, block and
    /// time are replaced by the scenario's.
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Write each replay's steps to DIR/<scenario>/steps.jsonl (steps.jsonl schema).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    set: SetArgs,
}

pub fn run(args: ConformArgs) -> ExitCode {
    let spec_path = args.spec.clone().unwrap_or_else(|| bundled(DEFAULT_SPEC));
    let source = match std::fs::read_to_string(&spec_path) {
        Ok(s) => s,
        Err(e) => return fail(&format!("cannot read {}: {e}", spec_path.display())),
    };
    let compiled = match poolc::compile(&source, &args.set.options()) {
        Ok(c) => c,
        Err(diags) => {
            report(&spec_path, &source, &diags);
            return ExitCode::from(1);
        }
    };
    let mut all_match = true;
    for dir in &args.dirs {
        match poolc::tools::conform::check(&compiled, dir, args.out.as_deref()) {
            Ok(outcome) => {
                print!("{}", outcome.render());
                all_match &= outcome.matches();
            }
            Err(e) => {
                eprintln!("poolc: {}: {e}", dir.display());
                all_match = false;
            }
        }
    }
    if all_match {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
