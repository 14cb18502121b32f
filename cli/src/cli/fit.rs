//! `poolc fit`: fits a stage `time` expression's unknowns to a step log
//! (docs/LATENCY.md, docs/STEPS.md) and prints the values, the accuracy per regime
//! and the stage block (`--json`: one object), writing the block to `--write FILE`
//! too. The work is `poolc_tools::fit`'s; this file parses arguments, renders the
//! expression's diagnostics against it, prints and picks the exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use poolc::atomic_file::AtomicFile;
use poolc_tools::fit::{self, FitError, StageName, TimeModel};

use super::{fail, print_out, report};

#[derive(clap::Args)]
pub struct FitArgs {
    /// The step log: `poolc-steps/1` JSON lines, or CSV when its name ends in `.csv`
    /// (docs/STEPS.md).
    #[arg(value_name = "STEPS")]
    steps: PathBuf,
    /// The stage `time` to fit, linear in its unknowns: every name other than
    /// `tokens`, `prefill`, `decode`, `residents` and `context`, e.g.
    /// 'b0 + b1*prefill + b2*decode + b3*context'.
    #[arg(long, value_name = "EXPR")]
    time: String,
    /// The name of the stage block printed.
    #[arg(long, value_name = "NAME", default_value = "engine")]
    stage: String,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    json: bool,
    /// Also write the stage block to FILE (whole or not at all).
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
}

/// How the expression's diagnostics name it: it comes from this flag, not a file.
const TIME_SOURCE: &str = "--time";

pub fn run(args: FitArgs) -> ExitCode {
    let stage = match StageName::new(&args.stage) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let model = match TimeModel::parse(&args.time) {
        Ok(m) => m,
        Err(diags) => {
            report(Path::new(TIME_SOURCE), &args.time, &diags);
            return ExitCode::from(1);
        }
    };
    let log = match fit::steps::read_path(&args.steps) {
        Ok(l) => l,
        Err(e) => return fail(&e.to_string()),
    };
    let fitted = match fit::fit(&log, &model, &stage) {
        Ok(f) => f,
        Err(FitError::Time(diags)) => {
            report(Path::new(TIME_SOURCE), &args.time, &diags);
            return ExitCode::from(1);
        }
        Err(e) => return fail(&e.to_string()),
    };
    if let Some(path) = &args.write
        && let Err(e) = write_whole(path, &fitted.stage)
    {
        return fail(&format!("cannot write {}: {e}", path.display()));
    }
    if args.json {
        match fit::report::json(&fitted) {
            Ok(text) => print_out(&text),
            Err(e) => fail(&format!("cannot encode the fit: {e}")),
        }
    } else {
        print_out(&fit::report::text(&fitted))
    }
}

fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(text.as_bytes())?;
    file.commit()
}
