//! `poolc sweep GRID [--jobs N] [--out DIR] [--resume] [--search rate|none]`: runs
//! every point of a grid on the local backend's threads, writes results.jsonl (one
//! line per finished point, as it finishes) and results.csv, and prints the summary
//! (docs/SWEEP.md). The work is `poolc_tools::sweep`'s; this file parses arguments,
//! owns the progress bar and SIGINT (as `poolc run`: the first stops the replays
//! under way, keeps the finished rows, writes results.csv from them and exits 130;
//! a second exits at once with 130), prints and picks the exit code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use poolc_tools::sweep::plan::{Plan, SearchChoice};
use poolc_tools::sweep::results::Output;
use poolc_tools::sweep::{self, LocalOptions, SweepError, summary};

use super::{print_out, stderr_styling};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The grid file (TOML; docs/SWEEP.md).
    grid: PathBuf,
    /// Worker threads (default: every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// The folder for results.csv and results.jsonl (default: sweep-<grid name> in
    /// the current directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep the rows results.jsonl in the output folder already has (from an
    /// interrupted sweep of the same grid) and run only the other points.
    #[arg(long)]
    resume: bool,
    /// `rate`: find per point the largest rate scale that meets every SLO; `none`:
    /// no search even if the grid declares one (default: as the grid says).
    #[arg(long, value_name = "WHAT", value_parser = ["rate", "none"])]
    search: Option<String>,
}

fn fail(e: &SweepError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "{}", e.render(stderr_styling()));
    ExitCode::from(1)
}

/// The default output folder: `sweep-<grid stem>`.
fn default_out(grid: &Path) -> PathBuf {
    let stem = grid
        .file_stem()
        .map_or_else(|| "grid".into(), |s| s.to_string_lossy().into_owned());
    PathBuf::from(format!("sweep-{stem}"))
}

pub fn run(args: SweepArgs) -> ExitCode {
    let stop = match super::sigint_flag() {
        Ok(s) => s,
        Err(e) => return super::fail(&e),
    };
    let choice = match args.search.as_deref() {
        None => SearchChoice::Grid,
        Some(s) => SearchChoice::from_name(s).unwrap_or_default(),
    };
    let plan = match Plan::load(&args.grid, choice) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let sources = match plan.check() {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.grid));
    let fingerprint = plan.fingerprint(&sources);
    let mut output = match Output::open(&out, &plan, &fingerprint, args.resume) {
        Ok(o) => o,
        Err(e) => return fail(&e),
    };
    let pending = output.pending(&plan);
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        usize::from,
    );
    let bar = progress(plan.points.len(), output.resumed());
    let mut ran = 0;
    let result = sweep::run_local(
        &plan,
        &sources,
        &pending,
        &LocalOptions { jobs },
        &stop,
        &mut |row| {
            if let Some(p) = plan.point(row.point) {
                bar.set_message(plan.label(p));
            }
            output.append(&plan, row)?;
            ran += 1;
            bar.inc(1);
            Ok(())
        },
    );
    bar.finish_and_clear();
    let csv = output.write_csv(&plan);
    match result {
        Ok(()) => {}
        Err(SweepError::Interrupted) => {
            let kept = output.rows().count();
            let _ = writeln!(
                std::io::stderr(),
                "poolc: interrupted; {kept} of {} points are in {} (run again with --resume to finish)",
                plan.points.len(),
                out.display()
            );
            return ExitCode::from(super::INTERRUPTED);
        }
        Err(e) => return fail(&e),
    }
    let csv = match csv {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let rows: Vec<_> = output.rows().collect();
    let counts = summary::Counts {
        run: ran,
        resumed: output.resumed(),
    };
    print_out(&format!(
        "{}\nrows: {} and {}\n",
        summary::render(&plan, &rows, &counts),
        csv.display(),
        out.join(sweep::results::JSONL).display()
    ))
}

/// A bar of points on stderr, drawn only on a terminal; it never touches stdout.
fn progress(total: usize, done: usize) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total as u64), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} points ({eta} left) {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_position(done as u64);
    bar
}
