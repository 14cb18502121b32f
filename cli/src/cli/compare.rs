//! `poolc compare`: replays one workload through several specs and prints their
//! reports side by side (a column per spec, the best of each row marked), or with
//! `--json` a list of the reports `poolc run --json` prints. The work is
//! `poolc_tools::run`'s and `poolc_tools::compare`'s; this file parses arguments,
//! prints and picks the exit code.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use poolc_tools::chart::Curves;
use poolc_tools::compare;
use poolc_tools::run::{Watch, replay, report_json, title};
use poolrt::host::Observer;

use super::chart::ChartArgs;
use super::run::{WorkloadArgs, stem};
use super::{SetArgs, fail, print_out, report_compile};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The specs to compare, each replayed on the same workload.
    #[arg(required = true, value_name = "SPEC")]
    specs: Vec<PathBuf>,
    /// The workload (as `poolc run`; default: the bundled Mooncake trace).
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Print a JSON list of the reports, in the order of the specs.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    chart: ChartArgs,
    /// `--set` applies to every spec that declares the param (and is an error for one
    /// that does not, as in `poolc run`).
    #[command(flatten)]
    set: SetArgs,
}

pub fn run(args: CompareArgs) -> ExitCode {
    let workload = match args.workload.load() {
        Ok(w) => w,
        Err(e) => return fail(&e.to_string()),
    };
    let mut reports = Vec::new();
    let mut json = Vec::new();
    let mut curves = Vec::new();
    for path in &args.specs {
        let text = match std::fs::read_to_string(path) {
            Ok(s) => s,
            Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
        };
        let compiled = match poolc::compile(&text, &args.set.options()) {
            Ok(c) => c,
            Err(e) => {
                report_compile(path, &text, &e);
                return ExitCode::from(1);
            }
        };
        let wall = Instant::now();
        let mut series = args.chart.series();
        let watch = Watch {
            observer: series.as_mut().map(|s| s as &mut dyn Observer),
            exact_percentiles: args.workload.exact,
            ..Watch::default()
        };
        let r = match replay(&compiled, &workload, watch) {
            Ok(r) => r,
            Err(e) => return fail(&format!("{}: {e}", path.display())),
        };
        if let Some(series) = series {
            curves.push(Curves::of(stem(path), series, r.sim_seconds));
        }
        let name = path.display().to_string();
        if args.json {
            let title = title(&text);
            match report_json(&r, &name, title.as_deref(), wall.elapsed().as_secs_f64()) {
                Ok(v) => json.push(v),
                Err(e) => return fail(&format!("cannot encode the report: {e}")),
            }
        }
        reports.push((stem(path), r));
    }
    let table = format!(
        "workload: {}\n{}(* best of the row)\n",
        workload.source,
        compare::table(&reports)
    );
    let names: Vec<String> = reports.iter().map(|(n, _)| n.clone()).collect();
    let heading = format!("poolc compare: {}", names.join(", "));
    let subtitle = format!("workload: {}", workload.source);
    if let Err(e) = args.chart.write(&heading, &subtitle, &curves, &table) {
        return fail(&e);
    }
    if args.json {
        print_out(&format!("{}\n", serde_json::Value::Array(json)))
    } else {
        print_out(&table)
    }
}
