//! `poolc fit` as a user runs it (docs/LATENCY.md): a time expression that is not
//! linear in its unknowns refused with a rendered diagnostic (one insta snapshot per
//! form, in cli/tests/snapshots/), bad step logs refused naming file and line with
//! exit 1, the text and `--json` reports of an exactly linear log, `--write`, CSV
//! against JSON lines, and byte-identical output run after run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../../tests/build_support/mod.rs"]
mod build_support;
mod cli_support;

use std::path::Path;
use std::process::Output;

use build_support::TempDir;
use cli_support::poolc;

const TIME: &str = "b0 + b1*prefill + b2*decode";

/// Eight iterations whose seconds are exactly 0.004 + 2e-5·prefill + 5e-6·decode, as
/// JSON lines with a header and as CSV: `(prefill chunks, decode count)` per step,
/// each chunk 100 tokens (its request's prompt), each decode 1 token.
fn exact_log() -> (String, String) {
    let shapes = [
        (0, 10),
        (0, 40),
        (2, 0),
        (1, 150),
        (3, 5),
        (0, 1),
        (1, 200),
        (4, 100),
    ];
    let mut jsonl = String::from(
        "{\"format\": \"poolc-steps/1\", \"vllm_version\": \"0.33.0\", \"max_num_batched_tokens\": 8192, \"max_num_seqs\": 256}\n",
    );
    let mut csv = String::from("step,seconds,tokens,computed,prompt,decode\n");
    for (k, (chunks, decodes)) in shapes.into_iter().enumerate() {
        let seconds = 0.004 + 2e-5 * (100 * chunks) as f64 + 5e-6 * decodes as f64;
        let mut reqs = Vec::new();
        for _ in 0..chunks {
            reqs.push([100, 0, 100, 0]);
        }
        for d in 0..decodes {
            reqs.push([1, 50 + d, 50, 1]);
        }
        let list: Vec<String> = reqs
            .iter()
            .map(|r| format!("[{}, {}, {}, {}]", r[0], r[1], r[2], r[3]))
            .collect();
        jsonl += &format!(
            "{{\"step\": {k}, \"seconds\": {seconds:?}, \"reqs\": [{}]}}\n",
            list.join(", ")
        );
        for r in &reqs {
            csv += &format!("{k},{seconds:?},{},{},{},{}\n", r[0], r[1], r[2], r[3]);
        }
    }
    (jsonl, csv)
}

/// Writes the exact log as `steps.jsonl` and `steps.csv` in a fresh folder.
fn logs() -> TempDir {
    let dir = TempDir::new("fit");
    let (jsonl, csv) = exact_log();
    std::fs::write(dir.join("steps.jsonl"), jsonl).unwrap();
    std::fs::write(dir.join("steps.csv"), csv).unwrap();
    dir
}

fn path(dir: &TempDir, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fit(args: &[&str]) -> Output {
    let mut all = vec!["fit"];
    all.extend_from_slice(args);
    poolc(&all)
}

/// `poolc fit STEPS --time EXPR` must exit 1 with nothing on stdout, and its
/// stderr (the rendered diagnostics) must equal the snapshot `name`.
fn refused(name: &str, time: &str) {
    let dir = logs();
    let output = fit(&[&path(&dir, "steps.jsonl"), "--time", time]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    insta::assert_snapshot!(name, stderr);
}

#[test]
fn a_product_of_two_terms_with_unknowns_is_refused() {
    refused("product", "b0 + b1 * b2 * prefill");
}

#[test]
fn an_unknown_in_a_divisor_is_refused() {
    refused("divisor", "b0 + prefill / b1");
}

#[test]
fn an_unknown_in_a_conditional_is_refused() {
    refused("conditional", "b0 + (prefill > 0 ? b1 : b2) * tokens");
}

#[test]
fn an_unknown_in_a_comparison_is_refused() {
    refused("comparison", "b0 + (b1 < decode) * decode");
}

#[test]
fn an_unknown_in_a_function_is_refused() {
    refused("function", "max(b0, b1 * decode) + min(b2, 1)");
}

#[test]
fn an_unknown_under_not_or_remainder_is_refused() {
    refused("not_and_remainder", "!b0 + b1 % 2 + -b2 * decode");
}

#[test]
fn a_time_without_unknowns_has_nothing_to_fit() {
    refused("nothing_to_fit", "0.004 + 0.001 * context");
}

#[test]
fn a_name_the_time_site_may_not_read_is_the_site_error() {
    refused("site_read", "b0 + b1 * now");
}

#[test]
fn a_time_that_does_not_parse_is_a_parse_error() {
    refused("parse", "b0 + b1 prefill");
}

#[test]
fn bad_step_logs_exit_1_naming_the_file_and_the_line() {
    let dir = TempDir::new("fit-bad");
    let cases = [
        (
            "tokens.jsonl",
            "{\"step\": 0, \"seconds\": 0.1, \"reqs\": [[1, 0, 1, 0]]}\n{\"step\": 1, \"seconds\": 0.1, \"reqs\": [[0, 0, 1, 0]]}\n",
            ":2: `reqs[0]`'s tokens must be a whole number from 1 to 2^53, not 0",
        ),
        (
            "typo.jsonl",
            "{\"format\": \"poolc-steps/1\"}\n{\"step\": 0, \"secnds\": 0.1, \"reqs\": [[1, 0, 1, 0]]}\n",
            ":2: unknown field `secnds`",
        ),
        (
            "split.csv",
            "step,seconds,tokens,computed,prompt,decode\n0,0.1,1,0,1,0\n1,0.1,1,0,1,0\n0,0.1,1,1,1,1\n",
            ":4: step 0 appears again (first at line 2)",
        ),
        (
            "negative.csv",
            "step,seconds,tokens,computed,prompt,decode\n0,-0.1,1,0,1,0\n",
            ":2: `seconds` must be a finite number of seconds above 0, not -0.1",
        ),
    ];
    for (name, content, expected) in cases {
        std::fs::write(dir.join(name), content).unwrap();
        let file = path(&dir, name);
        let output = fit(&[&file, "--time", TIME]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!("poolc: {file}{expected}")),
            "{name}: {stderr}"
        );
        assert!(output.stdout.is_empty());
    }
    let missing = path(&dir, "missing.jsonl");
    let output = fit(&[&missing, "--time", TIME]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).starts_with(&format!("poolc: {missing}: cannot read")));
}

#[test]
fn fit_prints_the_values_the_accuracy_per_regime_and_the_stage_block() {
    let dir = logs();
    let steps = path(&dir, "steps.jsonl");
    let output = fit(&[&steps, "--time", TIME]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("poolc fit: 8 iterations of {steps}"));
    assert_eq!(
        lines[1..5],
        [
            "vllm_version: 0.33.0",
            "max_num_batched_tokens: 8192",
            "max_num_seqs: 256",
            "time (b0 + b1*prefill + b2*decode)",
        ]
    );
    // The data are exact, so each value is the one the log was made from, to within
    // rounding; the printed digits are the shortest that read back the same f64.
    let value = |name: &str| -> f64 {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    for (name, expected) in [("b0", 0.004), ("b1", 2e-5), ("b2", 5e-6)] {
        assert!(((value(name) - expected) / expected).abs() < 1e-9, "{out}");
    }
    // Steps 0, 1 and 5 decode only; 2, 4 and 7 are mostly prefill (200 of 200,
    // 300 of 305, 400 of 500); 3 and 6 mixed (100 of 250, 100 of 300).
    let regime = |name: &str| -> Vec<&str> {
        let line = lines.iter().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().collect()
    };
    assert_eq!(regime("all")[..2], ["all", "8"]);
    assert_eq!(regime("decode-only")[..2], ["decode-only", "3"]);
    assert_eq!(regime("prefill-heavy")[..2], ["prefill-heavy", "3"]);
    assert_eq!(regime("mixed")[..2], ["mixed", "2"]);
    assert_eq!(regime("all")[2..4], ["0.00", "%"]);
    assert_eq!(regime("all")[4], "1.0000");
    let block = &out[out.find("\nstage engine {\n").unwrap() + 1..];
    assert!(
        block.starts_with("stage engine {\n  step;\n  budget 8192;\n  seats 256;\n  time ("),
        "{out}"
    );
    assert!(block.contains(" * prefill + "), "{out}");
    assert!(block.ends_with(" * decode);\n}\n"), "{out}");
}

#[test]
fn fit_json_has_the_documented_keys_in_order() {
    let dir = logs();
    let output = fit(&[
        &path(&dir, "steps.jsonl"),
        "--time",
        TIME,
        "--json",
        "--stage",
        "gpu",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let out = text(&output.stdout);
    let keys = [
        "format",
        "steps",
        "header",
        "time",
        "iterations",
        "empty_steps",
        "unknowns",
        "regimes",
        "notes",
        "fitted_time",
        "stage",
    ];
    let mut at = 0;
    for key in keys {
        let found = out[at..]
            .find(&format!("\n  \"{key}\": "))
            .unwrap_or_else(|| panic!("{key} in {out}"));
        at += found + 1;
    }
    assert_eq!(json["format"], "poolc-fit/1");
    assert_eq!(json["iterations"], 8);
    assert_eq!(json["header"]["max_num_seqs"], 256);
    let unknowns: Vec<&str> = json["unknowns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(unknowns, ["b0", "b1", "b2"]);
    let regimes: Vec<(&str, u64)> = json["regimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["regime"].as_str().unwrap(),
                r["iterations"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        regimes,
        [
            ("all", 8),
            ("decode-only", 3),
            ("prefill-heavy", 3),
            ("mixed", 2)
        ]
    );
    assert!(json["stage"].as_str().unwrap().starts_with("stage gpu {\n"));
    assert_eq!(json["notes"], serde_json::json!([]));
}

#[test]
fn write_puts_the_stage_block_in_a_file_that_checks() {
    let dir = logs();
    let block = path(&dir, "engine.pool");
    let output = fit(&[
        &path(&dir, "steps.jsonl"),
        "--time",
        TIME,
        "--write",
        &block,
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(&block).unwrap();
    assert!(text(&output.stdout).ends_with(&written));
    let check = poolc(&["check", &block]);
    assert!(check.status.success(), "{}", text(&check.stderr));
}

#[test]
fn csv_and_jsonl_of_the_same_iterations_print_the_same_fit() {
    let dir = logs();
    let from_jsonl = fit(&[&path(&dir, "steps.jsonl"), "--time", TIME, "--json"]);
    let from_csv = fit(&[&path(&dir, "steps.csv"), "--time", TIME, "--json"]);
    let json = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    let (a, b) = (json(&from_jsonl), json(&from_csv));
    for key in ["unknowns", "regimes", "fitted_time", "notes"] {
        assert_eq!(a[key], b[key], "{key}");
    }
}

#[test]
fn the_same_log_gives_byte_identical_output() {
    let dir = logs();
    let steps = path(&dir, "steps.jsonl");
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec![steps.as_str(), "--time", TIME];
        args.extend_from_slice(extra);
        let first = fit(&args);
        let second = fit(&args);
        assert!(first.status.success());
        assert_eq!(first.stdout, second.stdout);
    }
    assert!(Path::new(&steps).exists());
}
