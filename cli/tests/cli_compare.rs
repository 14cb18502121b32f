//! `poolc compare`: one workload through several specs. Its `--json` list is exactly
//! the reports `poolc run --json` gives spec by spec (but for wall time); its table
//! has a column per spec and marks the best of a row only where the values differ.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use cli_support::poolc;
use poolc_tools::compare;
use poolrt::host::Report;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let o = poolc(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

const SPECS: [&str; 2] = [
    "examples/policies/fifo.pool",
    "examples/policies/sjf_aging.pool",
];

#[test]
fn compare_json_is_the_run_reports_spec_by_spec() {
    let mut args = vec!["compare"];
    args.extend(SPECS);
    args.extend(["--synthetic", "300", "--seed", "4", "--json"]);
    let Value::Array(list) = json(&args) else {
        panic!("a list")
    };
    assert_eq!(list.len(), 2);
    for (spec, mut got) in SPECS.iter().zip(list) {
        let mut want = json(&["run", spec, "--synthetic", "300", "--seed", "4", "--json"]);
        for r in [&mut got, &mut want] {
            r.as_object_mut().unwrap().remove("wall_seconds");
        }
        assert_eq!(got, want, "{spec}");
    }
}

#[test]
fn compare_table_has_a_column_per_spec() {
    let mut args = vec!["compare"];
    args.extend(SPECS);
    args.extend(["--synthetic", "300"]);
    let o = poolc(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let header = out.lines().nth(1).unwrap();
    assert!(
        header.contains("fifo") && header.contains("sjf_aging"),
        "{out}"
    );
    assert!(
        out.contains("ttft p99") && out.contains("preemptions"),
        "{out}"
    );
}

fn report(finished: u64, p50: Option<f64>, hit: Option<f64>) -> Report {
    let mut r = Report {
        finished,
        hit_rate: hit,
        ..Report::default()
    };
    r.ttft.p50 = p50;
    r
}

#[test]
fn the_best_of_a_row_is_marked_only_where_values_differ() {
    let t = compare::table(&[
        ("a".into(), report(10, Some(2.0), None)),
        ("b".into(), report(12, Some(0.5), Some(0.25))),
        ("c".into(), report(12, Some(0.5), Some(0.1))),
    ]);
    let row = |name: &str| t.lines().find(|l| l.starts_with(name)).unwrap().to_string();
    // Most finished is best, a tie marks both; least latency is best.
    assert_eq!(row("finished").matches('*').count(), 2, "{t}");
    assert!(row("ttft p50").contains("500.0 ms *"), "{t}");
    assert!(!row("ttft p50").contains("2000.0 ms *"), "{t}");
    // A missing figure is `-`; the best known one is marked.
    assert!(
        row("prefix hits").contains('-') && row("prefix hits").contains("25.00 % *"),
        "{t}"
    );
    // All equal (0 rejected everywhere): nothing is marked.
    assert!(!row("rejected").contains('*'), "{t}");
}
