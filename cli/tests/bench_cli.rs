//! `poolc bench` as a user and a script see it, with tiny counts (nothing here is
//! timed): the text report has every figure and positive ratios, `--json` parses
//! with the documented fields, the built-in policies get a hand-written Rust
//! backend, and bad arguments are clear errors.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::process::Output;

use cli_support::poolc;
use serde_json::Value;

const TINY: [&str; 6] = ["--ops", "200", "--repeats", "2", "--queue", "12"];

fn bench(extra: &[&str]) -> Output {
    let mut args = vec!["bench"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&TINY);
    poolc(&args)
}

fn json(extra: &[&str]) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let o = bench(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("--json prints one JSON object")
}

fn positive(v: &Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!(x > 0.0 && x.is_finite(), "{what} = {x}");
    x
}

/// The numbers after `label` on the text line that starts with `row`.
fn ratios_on(text: &str, row: &str) -> Vec<f64> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(row) && l.contains("interp/compiled"))
        .unwrap_or_else(|| panic!("no ratio line for {row} in\n{text}"));
    line.split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok())
        .collect()
}

#[test]
fn default_bench_prints_every_figure_and_positive_ratios() {
    let o = bench(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("examples/vllm.pool"), "{text}");
    for field in [
        "admissions/s",
        "ns/admission",
        "evictions/s",
        "ns/eviction",
        "compile:",
    ] {
        assert!(text.contains(field), "missing {field} in\n{text}");
    }
    for backend in ["compiled", "interp", "rust"] {
        assert!(
            text.lines()
                .filter(|l| l.trim_start().starts_with(backend))
                .count()
                >= 2,
            "{backend} rows in\n{text}"
        );
    }
    for phase in ["admission", "eviction"] {
        let r = ratios_on(&text, phase);
        assert_eq!(r.len(), 2, "{phase} ratios in\n{text}");
        assert!(r.iter().all(|x| *x > 0.0), "{phase} ratios {r:?}");
    }
}

#[test]
fn json_has_the_documented_fields_for_the_ascend_lanes() {
    let r = json(&["examples/ascend.pool"]);
    assert_eq!(r["pool"], "kv");
    assert_eq!(r["queue"], 12);
    assert!(r["policy_code"].as_bool().expect("policy_code"));
    positive(&r["admissions_per_s"], "admissions_per_s");
    positive(&r["evictions_per_s"], "evictions_per_s");
    positive(&r["ns_per_admission"], "ns_per_admission");
    for phase in ["check_cold", "jit_cold", "check_warm", "jit_warm"] {
        positive(&r["compile_us"][phase], phase);
    }
    for backend in ["compiled", "interp", "rust"] {
        let a = &r["admission"]["backends"][backend];
        positive(&a["admissions_per_s"], "admissions_per_s");
        positive(&a["ns_per_admission"], "ns_per_admission");
        assert_eq!(a["ns_per_run"].as_array().map(Vec::len), Some(2), "{a}");
        let e = &r["eviction"]["backends"][backend];
        positive(&e["evictions_per_s"], "evictions_per_s");
        positive(&e["ns_per_eviction"], "ns_per_eviction");
    }
    // The lanes read `waited`, so the engine scans: the scan is measured too.
    for phase in ["admission", "eviction", "scan"] {
        for ratio in ["interp_over_compiled", "compiled_over_rust"] {
            positive(&r[phase]["ratios"][ratio], &format!("{phase} {ratio}"));
        }
    }
    positive(&r["scan"]["backends"]["compiled"]["ns_per_scan"], "scan");
}

#[test]
fn keyed_queue_and_eviction_get_hand_written_rust() {
    let dir = std::env::temp_dir().join(format!("poolc-bench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("priority.pool");
    std::fs::write(
        &path,
        "session { prompt; priority = 0; }
         pool kv { cap 8192; block 16; queue by (priority, serial); evict by (priority, last); }",
    )
    .expect("write spec");
    let r = json(&[path.to_str().expect("utf-8 path")]);
    assert_eq!(r["queue_policy"], "by (priority, serial)");
    assert_eq!(r["evict_policy"], "by (priority, last)");
    positive(
        &r["admission"]["ratios"]["compiled_over_rust"],
        "admission compiled/rust",
    );
    positive(
        &r["eviction"]["ratios"]["compiled_over_rust"],
        "eviction compiled/rust",
    );
    // Fixed keys are indexed, not scanned: there is no scan to measure.
    assert!(r["scan"].is_null(), "{}", r["scan"]);
}

#[test]
fn unknown_keys_have_no_rust_backend_but_still_report() {
    let r = json(&["examples/replicas.pool", "--pool", "kv"]);
    assert!(r["admission"]["backends"]["rust"].is_null());
    assert!(r["admission"]["ratios"]["compiled_over_rust"].is_null());
    positive(
        &r["admission"]["ratios"]["interp_over_compiled"],
        "interp/compiled",
    );
}

#[test]
fn phase_runs_only_the_phases_asked_for() {
    let r = json(&["--phase", "admission", "--blocks", "2"]);
    assert_eq!(r["max_blocks"], 2);
    positive(&r["admissions_per_s"], "admissions_per_s");
    assert!(r["eviction"].is_null() && r["evictions_per_s"].is_null());
    assert!(r["scan"].is_null());
}

#[test]
fn bad_arguments_are_clear_errors() {
    let o = bench(&["--pool", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no pool named `nope`") && err.contains("kv"),
        "{err}"
    );

    let o = poolc(&["bench", "--share", "2"]);
    assert_eq!(o.status.code(), Some(2), "usage error");

    let o = poolc(&["bench", "no/such.pool"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}
