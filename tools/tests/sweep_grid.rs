//! `poolc sweep`'s grid files (docs/SWEEP.md, "Grid file"): good grids expand into
//! the points, in the order and with the values the docs give; every kind of
//! mistake is a diagnostic whose primary span is at the line and column of the
//! mistake (computed here from the text, independently of the renderer), with the
//! message the docs promise; the metric catalogue names real report fields.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::Path;

use poolc_tools::sweep::SweepError;
use poolc_tools::sweep::metrics;
use poolc_tools::sweep::plan::{Plan, SearchChoice};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn plan(text: &str, choice: SearchChoice) -> Result<Plan, SweepError> {
    Plan::parse("grid.toml", text, &root().join("examples/sweeps"), choice)
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// Checks that `text` fails with exactly the diagnostics `want`: each a
/// `line:column` of its primary span and a fragment of its message, in order.
fn check(text: &str, want: &[(&str, &str)]) {
    let diags = match plan(text, SearchChoice::Grid).and_then(|p| p.check().map(|_| p)) {
        Ok(_) => panic!("the grid was accepted:\n{text}"),
        Err(SweepError::Grid { diags, .. }) => diags,
        Err(e) => panic!("not a grid error: {e}"),
    };
    let got: Vec<(String, String)> = diags
        .iter()
        .map(|d| {
            let at = d.primary_span().map_or("-".to_string(), |s| {
                let (l, c) = line_column(text, s.start as usize);
                format!("{l}:{c}")
            });
            (at, d.message.clone())
        })
        .collect();
    assert_eq!(got.len(), want.len(), "diagnostics: {got:#?}");
    for ((at, message), (want_at, want_msg)) in got.iter().zip(want) {
        assert_eq!(at, want_at, "{message}");
        assert!(message.contains(want_msg), "`{message}` lacks `{want_msg}`");
    }
}

const SPECS: &str = r#"specs = ["../policies/fifo.pool", { path = "../policies/sjf_aging.pool", params = { aging = { from = 0, to = 2000, steps = 5 } } }]"#;

#[test]
fn points_are_numbered_spec_then_params_then_trace_then_rate_scale() {
    let text = format!(
        "{SPECS}\nrate_scale = [1, 2.5]\n[params]\nnum_gpu_blocks = [14000, 28000]\n\
         [[traces]]\nsynthetic = 10\n[[traces]]\nsynthetic = 10\nseed = 7\n"
    );
    let p = plan(&text, SearchChoice::Grid).unwrap();
    p.check().unwrap();
    // fifo: 2 blocks; sjf_aging: 2 blocks × 5 aging; each × 2 traces × 2 scales.
    assert_eq!(p.points.len(), (2 + 2 * 5) * 2 * 2);
    assert_eq!(p.params, ["num_gpu_blocks", "aging"]);
    let labels: Vec<String> = p.points.iter().map(|x| p.label(x)).collect();
    assert_eq!(
        labels[..5],
        [
            "spec=fifo num_gpu_blocks=14000 trace=synthetic-10-s1 rate_scale=1",
            "spec=fifo num_gpu_blocks=14000 trace=synthetic-10-s1 rate_scale=2.5",
            "spec=fifo num_gpu_blocks=14000 trace=synthetic-10-s7 rate_scale=1",
            "spec=fifo num_gpu_blocks=14000 trace=synthetic-10-s7 rate_scale=2.5",
            "spec=fifo num_gpu_blocks=28000 trace=synthetic-10-s1 rate_scale=1",
        ]
    );
    let aging: Vec<String> = labels
        .iter()
        .filter(|l| l.contains("num_gpu_blocks=14000") && l.ends_with("s1 rate_scale=1"))
        .cloned()
        .collect();
    assert_eq!(aging.len(), 6);
    assert!(aging[1].contains("aging=0 "), "{aging:?}");
    assert!(aging[2].contains("aging=500 "), "{aging:?}");
    assert!(aging[5].contains("aging=2000 "), "{aging:?}");
    for (i, x) in p.points.iter().enumerate() {
        assert_eq!(x.index, i);
    }
}

#[test]
fn a_search_replaces_the_rate_scale_axis_and_the_defaults_apply() {
    let text = format!("{SPECS}\nslo = [\"ttft_p99 <= 2\"]\n[search]\ntolerance = 0.5\n");
    let p = plan(&text, SearchChoice::Grid).unwrap();
    let s = p.search.clone().unwrap();
    assert_eq!((s.from, s.to, s.tolerance), (0.25, 8.0, 0.5));
    assert_eq!(s.steps(), 15, "0.25 + 15 * 0.5 = 7.75 <= 8 < 8.25");
    assert!(p.points.iter().all(|x| x.rate_scale.is_none()));
    assert_eq!(p.points.len(), 6, "1 + 5 combinations on the bundled trace");
    let off = plan(&text, SearchChoice::Off).unwrap();
    assert!(off.search.is_none());
    assert!(off.points.iter().all(|x| x.rate_scale == Some(1.0)));
    // `to` itself is on the lattice when the steps divide the range.
    let exact = plan(
        &format!(
            "{SPECS}\nslo = [\"ttft_p99 <= 2\"]\n[search]\nfrom = 0.1\nto = 0.7\ntolerance = 0.1\n"
        ),
        SearchChoice::Grid,
    )
    .unwrap();
    assert_eq!(exact.search.unwrap().steps(), 6);
}

#[test]
fn metrics_default_and_slo_metrics_are_collected_too() {
    let p = plan(
        &format!("{SPECS}\nmetrics = [\"finished\"]\nslo = [\"e2e_p90<30\", \"rejected >= 0\"]\n"),
        SearchChoice::Grid,
    )
    .unwrap();
    let names: Vec<&str> = p.grid.metrics.iter().map(|m| m.name).collect();
    assert_eq!(names, ["finished", "e2e_p90", "rejected"]);
    let p = plan(SPECS, SearchChoice::Grid).unwrap();
    let names: Vec<&str> = p.grid.metrics.iter().map(|m| m.name).collect();
    assert_eq!(names, metrics::DEFAULT_METRICS);
}

#[test]
fn every_metric_of_the_catalogue_is_a_number_of_a_real_report() {
    // The handoff metrics (R27) are read from a spec that hands off, the others
    // from a plain one.
    let replay = |path: &str| {
        let spec = poolc::compile(
            &std::fs::read_to_string(root().join(path)).unwrap(),
            &poolc::Options::default(),
        )
        .unwrap();
        let w = poolrt::trace::synthetic(50, 1);
        poolc_tools::run::replay(&spec, &w, poolc_tools::run::Watch::default()).unwrap()
    };
    let plain = replay("examples/policies/fifo.pool");
    let split = replay("examples/disagg/split.pool");
    for m in metrics::CATALOGUE {
        let handoff = m.name.starts_with("handoff_") || m.name.ends_with("_busy");
        let report = if handoff { &split } else { &plain };
        let t = &metrics::values(report, &[m]).unwrap()[0];
        let json = serde_json::to_value(report).unwrap();
        assert!(metrics::number(t).is_some(), "{} is {t}", m.name);
        // Independently: the flat name is the field, or field_percentile, or a field
        // of the report's `handoff`.
        let want = if handoff {
            json["handoff"][m.name.trim_start_matches("handoff_")].clone()
        } else {
            json.get(m.name).cloned().unwrap_or_else(|| {
                let (field, p) = m.name.rsplit_once('_').unwrap();
                json[field][p].clone()
            })
        };
        assert_eq!(want.to_string(), *t, "{}", m.name);
    }
}

#[test]
fn a_toml_syntax_error_points_at_its_line_and_column() {
    check(
        "specs = [\"a.pool\"]\nmetrics = [\"finished\"\n",
        &[("2:22", "unclosed array")],
    );
    check("specs = [\"a.pool\"]\nrate_scale = = 2\n", &[("2:14", "")]);
}

#[test]
fn unknown_keys_are_named_with_a_suggestion() {
    check(
        &format!("{SPECS}\nmetric = [\"finished\"]\n[serach]\n"),
        &[
            ("2:1", "unknown key `metric` in the grid"),
            ("3:2", "unknown key `serach`"),
        ],
    );
    check(
        "specs = [{ path = \"../policies/fifo.pool\", nmae = \"x\" }]\n",
        &[("1:44", "unknown key `nmae` in a spec")],
    );
}

#[test]
fn values_of_the_wrong_type_or_range_point_at_the_value() {
    check(
        &format!(
            "{SPECS}\nrate_scale = [1, 0]\n[params]\nnum_gpu_blocks = \"many\"\n\
             [[traces]]\nsynthetic = 0\n[[traces]]\nfile = \"x.jsonl\"\nseed = 3\n"
        ),
        &[
            ("2:18", "a rate scale must be finite and > 0"),
            ("4:18", "`num_gpu_blocks` must be a number"),
            ("6:13", "`synthetic` must be from 1 to"),
            ("9:1", "`seed` is for synthetic traces"),
        ],
    );
    check(
        &format!("{SPECS}\n[params]\nnum_gpu_blocks = [1000, 2000, 1000]\n"),
        &[("3:31", "`num_gpu_blocks` repeats the value 1000")],
    );
    check(
        &format!("{SPECS}\n[params]\nnum_gpu_blocks = {{ from = 1000, to = 2000 }}\n"),
        &[("3:18", "needs `from`, `to` and `steps`")],
    );
}

#[test]
fn unknown_metrics_and_bad_slos_are_diagnosed() {
    check(
        &format!(
            "{SPECS}\nmetrics = [\"ttft_p95\", \"finished\"]\nslo = [\"ttft_p99 = 2\", \"e2e_p90 <= soon\", \"tft_p99 <= 1\"]\n"
        ),
        &[
            ("2:12", "unknown metric `ttft_p95`"),
            ("3:8", "`ttft_p99 = 2` is not an SLO"),
            (
                "3:24",
                "`e2e_p90 <= soon` is not an SLO: its bound is not a number",
            ),
            ("3:43", "the SLO names an unknown metric `tft_p99`"),
        ],
    );
}

#[test]
fn duplicate_names_point_at_the_second_one() {
    check(
        "specs = [\"../policies/fifo.pool\", \"../policies/fifo.pool\"]\n",
        &[("1:35", "two specs are named `fifo`")],
    );
}

#[test]
fn a_swept_param_the_spec_lacks_points_at_the_param() {
    check(
        "specs = [\"../policies/fifo.pool\", \"../policies/sjf_aging.pool\"]\n\
         [params]\naging = [0, 500]\n",
        &[("3:1", "spec `fifo` (")],
    );
}

#[test]
fn a_search_needs_an_slo_and_no_rate_scale_axis() {
    check(
        &format!("{SPECS}\nrate_scale = [1, 2]\n[search]\nfrom = 1\n"),
        &[
            ("2:1", "finds the rate scale itself"),
            ("3:1", "the grid has none"),
        ],
    );
    check(
        &format!("{SPECS}\nslo = [\"ttft_p99 <= 2\"]\n[search]\nfrom = 2\nto = 1\n"),
        &[("3:1", "`to` (1) must be finite and above `from` (2)")],
    );
    check(
        &format!("{SPECS}\npareto = [\"max_rate_scale\", \"finished\"]\n"),
        &[(
            "2:10",
            "`max_rate_scale` is a result of the capacity search",
        )],
    );
}

#[test]
fn a_spec_that_does_not_check_with_a_param_value_is_reported_with_the_values() {
    let p = plan(
        "specs = [\"../policies/fifo.pool\"]\n[params]\nnum_gpu_blocks = [1000, 1e300]\n",
        SearchChoice::Grid,
    )
    .unwrap();
    match p.check() {
        Err(SweepError::Spec { with, file, .. }) => {
            assert_eq!(with, "num_gpu_blocks=1e300");
            assert!(file.ends_with("fifo.pool"), "{file}");
        }
        other => panic!("expected a spec error, got {other:?}"),
    }
}

#[test]
fn the_bundled_aging_grid_checks() {
    let p = Plan::load(
        &root().join("examples/sweeps/aging.toml"),
        SearchChoice::Grid,
    )
    .unwrap();
    p.check().unwrap();
    assert!(p.search.is_some());
    assert_eq!(p.grid.specs.len(), 3);
}

#[test]
fn the_bundled_fleet_grid_sizes_the_fleet_from_a_param() {
    // `replicas` sizes `kv[replicas]` and `engine[replicas]` (R22's families), and
    // every combination with the swept prefix weight checks.
    let p = Plan::load(
        &root().join("examples/sweeps/fleet.toml"),
        SearchChoice::Grid,
    )
    .unwrap();
    p.check().unwrap();
    assert!(p.search.is_some());
    assert_eq!(p.grid.specs.len(), 3);
    assert_eq!(
        p.points.len(),
        10,
        "(1 + 1 + 3 prefix weights) × 2 fleet sizes"
    );
}

#[test]
fn the_bundled_disagg_grid_sweeps_the_split_and_the_link() {
    // `prefills` sizes pkv, pgpu and nic, and `decodes = gpus - prefills` follows it
    // (R25's families): 3 splits × 5 link rates × 2 traces, every one checking.
    let p = Plan::load(
        &root().join("examples/sweeps/disagg.toml"),
        SearchChoice::Grid,
    )
    .unwrap();
    p.check().unwrap();
    assert_eq!(p.points.len(), 30, "3 splits × 5 link rates × 2 traces");
}

#[test]
fn handoff_metrics_read_the_reports_handoff_split() {
    // The catalogue's R27 metrics are the report's `handoff` fields, and `null` for a
    // report without one.
    let names = [
        "handoff_queue",
        "handoff_prefill",
        "handoff_decode_queue",
        "handoff_transfer",
        "handoff_first_decode",
        "prefill_busy",
        "decode_busy",
        "link_busy",
    ];
    let ms: Vec<_> = names.iter().map(|n| metrics::find(n).unwrap()).collect();
    let mut report = poolrt::host::Report::default();
    assert!(
        metrics::values(&report, &ms)
            .unwrap()
            .iter()
            .all(|v| v == "null")
    );
    report.handoff = Some(poolrt::host::HandoffReport {
        queue: Some(0.5),
        prefill: Some(1.5),
        decode_queue: Some(0.25),
        transfer: Some(0.125),
        first_decode: Some(2.0),
        prefill_busy: Some(0.75),
        decode_busy: Some(0.5),
        link_busy: Some(0.0625),
        ..Default::default()
    });
    assert_eq!(
        metrics::values(&report, &ms).unwrap(),
        [
            "0.5", "1.5", "0.25", "0.125", "2.0", "0.75", "0.5", "0.0625"
        ]
    );
}
