//! `poolc run` as a newcomer and a script use it: the no-argument default on the
//! bundled trace, `--json` with the fields the issue names, determinism of the report
//! (all but the wall clock), the `--log` lines, `--set`, and clear errors with the
//! file and line for bad input.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::path::PathBuf;

use cli_support::poolc;
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let o = poolc(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("--json prints one JSON object")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("poolc-cli-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn run_with_no_arguments_replays_the_bundled_trace() {
    let o = poolc(&["run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // The report opens with what it models: the spec's leading comment line.
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("vLLM 0.33 serving Llama-3.1-8B on one H100-80GB, with its default policies")
    );
    assert_eq!(lines.next(), Some("spec: examples/vllm.pool"));
    assert!(text.contains("mooncake_conversation_trace.jsonl"), "{text}");
    assert!(text.contains("ttft") && text.contains("wall:"), "{text}");
}

/// The defaults are carried inside the binary: run from a folder outside any
/// checkout, with no arguments, it replays the same 12,031 sessions through the same
/// spec (no file is looked up, so a binary copied anywhere behaves the same).
#[test]
fn run_with_no_arguments_needs_no_checkout() {
    let dir = scratch("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(["run", "--json"])
        .current_dir(&dir)
        .output()
        .expect("the poolc binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["spec"], "examples/vllm.pool");
    let ended = ["finished", "rejected", "unfinished"].map(|f| r[f].as_u64().unwrap());
    assert_eq!(ended.iter().sum::<u64>(), 12_031);
}

#[test]
fn run_json_has_the_documented_fields_and_sane_values() {
    let r = json(&["run", "--json"]);
    for field in [
        "finished",
        "rejected",
        "preemptions",
        "evictions",
        "hit_rate",
        "sim_seconds",
    ] {
        assert!(r.get(field).is_some(), "missing {field}");
    }
    assert_eq!(
        r["title"],
        "vLLM 0.33 serving Llama-3.1-8B on one H100-80GB, with its default policies"
    );
    for field in ["ttft", "itl", "e2e"] {
        for p in ["p50", "p90", "p99"] {
            assert!(r[field][p].is_number(), "{field}.{p}");
        }
        assert!(r[field]["p50"].as_f64() <= r[field]["p99"].as_f64());
    }
    // The bundled trace has 12,031 sessions (its README); every one ends somehow.
    let total = r["finished"].as_u64().unwrap() + r["rejected"].as_u64().unwrap();
    assert_eq!(total + r["unfinished"].as_u64().unwrap(), 12_031);
    // An infinite cache would hit 37.36% of prompt tokens (the trace's README); a
    // finite one cannot do better.
    let hit = r["hit_rate"].as_f64().unwrap();
    assert!(hit > 0.0 && hit <= 0.3736, "hit rate {hit}");
}

#[test]
fn same_inputs_give_the_same_report_but_for_wall_time() {
    let args = [
        "run",
        "examples/ascend.pool",
        "--synthetic",
        "400",
        "--seed",
        "7",
        "--json",
    ];
    let mut a = json(&args);
    let mut b = json(&args);
    for r in [&mut a, &mut b] {
        let wall = r.as_object_mut().unwrap().remove("wall_seconds");
        assert!(wall.is_some_and(|w| w.is_number()));
    }
    assert_eq!(a, b);
    let c = json(&[
        "run",
        "examples/ascend.pool",
        "--synthetic",
        "400",
        "--seed",
        "8",
        "--json",
    ]);
    assert_ne!(a["e2e"], c["e2e"], "another seed is another workload");
}

#[test]
fn set_overrides_a_param_of_the_spec() {
    let r = json(&[
        "run",
        "--synthetic",
        "50",
        "--set",
        "num_gpu_blocks=100",
        "--json",
    ]);
    assert_eq!(
        r["pools"][0]["cap"].as_u64(),
        Some(1600),
        "100 blocks of 16"
    );
}

#[test]
fn log_writes_one_json_object_per_iteration_and_pool_event() {
    let path = scratch("log.jsonl");
    let o = poolc(&["run", "--synthetic", "30", "--log", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&path).expect("log written");
    let (mut steps, mut events) = (0, 0);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("every log line is JSON");
        if v.get("step").is_some() {
            steps += 1;
            assert_eq!(v["stage"], "engine");
        } else if v.get("complete").is_some() {
            assert!(line == text.lines().last().unwrap(), "complete comes last");
        } else {
            assert!(v["ev"].is_string() && v["pool"] == "kv", "{line}");
            events += 1;
        }
    }
    assert!(
        steps > 0 && events >= 60,
        "30 sessions enqueue and admit at least once each"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn bad_trace_names_the_file_and_line() {
    let path = scratch("bad.jsonl");
    std::fs::write(
        &path,
        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n{\"timestamp\": oops}\n",
    )
    .unwrap();
    let o = poolc(&["run", "--trace", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.jsonl:2:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_bad_line_deep_in_a_trace_stops_the_replay_there_with_its_line_and_no_complete_log() {
    // The trace is read line by line as the replay reaches it: 300 good sessions run
    // first, then line 301 (out of arrival order) fails the run.
    let (trace, log) = (scratch("late.jsonl"), scratch("late.log.jsonl"));
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&format!(
            "{{\"arrival\": {}, \"prompt\": 100, \"output\": 4}}\n",
            f64::from(i) * 0.01
        ));
    }
    text.push_str("{\"arrival\": 1.0, \"prompt\": 100, \"output\": 4}\n");
    std::fs::write(&trace, text).unwrap();
    let o = poolc(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("late.jsonl:301:") && err.contains("earlier than the previous"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        o.stdout.is_empty(),
        "no report: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let written = std::fs::read_to_string(&log).unwrap();
    // Every session before the bad line arrived (and was logged) first.
    let arrived: std::collections::BTreeSet<u64> = written
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["ev"] == "enqueue")
        .filter_map(|v| v["session"].as_u64())
        .collect();
    assert_eq!(
        arrived,
        (0..300).collect(),
        "the replay ran up to the bad line"
    );
    assert!(
        !written.contains("\"complete\""),
        "a run stopped by its trace has no complete line"
    );
    let _ = (std::fs::remove_file(trace), std::fs::remove_file(log));
}

#[test]
fn missing_attribute_is_named_with_the_first_session_lacking_it() {
    let spec = scratch("needs_tenant.pool");
    std::fs::write(
        &spec,
        "session { prompt; output; tenant; }\nstage engine { step; }\npool kv { cap 65536; block 16; queue by (tenant, serial); admit via engine; }\n",
    )
    .unwrap();
    let o = poolc(&["run", spec.to_str().unwrap(), "--synthetic", "5"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`tenant`") && err.contains("session 0"),
        "{err}"
    );
    let _ = std::fs::remove_file(spec);
}

#[test]
fn the_log_is_byte_identical_run_after_run() {
    let (a, b) = (scratch("a.jsonl"), scratch("b.jsonl"));
    for path in [&a, &b] {
        let o = poolc(&[
            "run",
            "examples/tiered.pool",
            "--synthetic",
            "200",
            "--log",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(x.len() > 1000, "the log has content");
    assert!(x == y, "two runs wrote different logs");
    let _ = (std::fs::remove_file(a), std::fs::remove_file(b));
}

#[test]
fn run_with_a_built_library_reports_what_the_jit_reports() {
    let lib = scratch("libtiered.so");
    let o = poolc(&["build", "examples/tiered.pool", "-o", lib.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let args = [
        "run",
        "examples/tiered.pool",
        "--synthetic",
        "300",
        "--json",
    ];
    let mut jit = json(&args);
    let mut with_lib = args.to_vec();
    with_lib.extend(["--policy", lib.to_str().unwrap()]);
    let mut so = json(&with_lib);
    for r in [&mut jit, &mut so] {
        r.as_object_mut().unwrap().remove("wall_seconds");
    }
    assert_eq!(jit, so);
    // A library built from another spec is refused before it runs anything.
    let o = poolc(&[
        "run",
        "examples/vllm.pool",
        "--synthetic",
        "5",
        "--policy",
        lib.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another spec"));
    let _ = std::fs::remove_file(&lib);
    let _ = std::fs::remove_file(lib.with_extension("h"));
}

/// `poolc check` shows a warning (R12: a spill predicate reading `size`) and still
/// exits 0; the shipped tiered example has none.
#[test]
fn check_warns_of_a_spill_predicate_that_reads_size() {
    let spec = scratch("warn.pool");
    std::fs::write(
        &spec,
        "stage l { link; } pool t { } pool kv { spill t via l (units) when (size >= 64); }",
    )
    .unwrap();
    let o = poolc(&["check", spec.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[R12]") && err.contains("1 warning in"),
        "{err}"
    );
    let o = poolc(&["check", "examples/tiered.pool"]);
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_file(spec);
}

/// `poolc check` warns of a queue that can hold a session back forever (R28), names
/// the key, and exits 0; the shipped SJF-with-aging example has no warning.
#[test]
fn r28_poolc_check_warns_of_a_queue_that_can_starve_and_exits_0() {
    let spec = scratch("starve.pool");
    std::fs::write(
        &spec,
        "session { priority = 0; } stage e { step; } pool kv { queue by (priority, serial); admit via e; }",
    )
    .unwrap();
    let o = poolc(&["check", spec.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[R28]")
            && err.contains("the waiting queue of pool `kv` can hold a session back forever")
            && err.contains("1 warning in"),
        "{err}"
    );
    let o = poolc(&["check", "examples/policies/sjf_aging.pool"]);
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_file(spec);
}

/// `--rate-scale F` divides every arrival time by F (poolc compare takes it too):
/// with one second per iteration, a session arriving at 10 s finishes at 11 s, at
/// 5 s with F = 2 and at 20 s with F = 0.5.
#[test]
fn rate_scale_divides_arrival_times() {
    let trace = scratch("rate.jsonl");
    std::fs::write(
        &trace,
        "{\"arrival\": 0, \"prompt\": 4, \"output\": 1}\n{\"arrival\": 10, \"prompt\": 4, \"output\": 1}\n",
    )
    .unwrap();
    let spec = scratch("rate.pool");
    std::fs::write(
        &spec,
        "session { prompt; output; } stage e { step; time (1); } pool kv { admit via e; }",
    )
    .unwrap();
    for (scale, end) in [("1", 11.0), ("2", 6.0), ("0.5", 21.0)] {
        let r = json(&[
            "run",
            spec.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--rate-scale",
            scale,
            "--json",
        ]);
        assert_eq!(r["sim_seconds"].as_f64(), Some(end), "rate scale {scale}");
    }
    let o = poolc(&["run", "--rate-scale", "0", "--synthetic", "5"]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    let _ = (std::fs::remove_file(trace), std::fs::remove_file(spec));
}

#[test]
fn exact_and_the_default_sketch_agree_within_the_stated_bound() {
    // docs/HOST.md, "Percentiles": the sketch's percentile is within 2^-11 of the
    // exact nearest-rank value plus 1 ns; counts are equal and the
    // means agree but for summation order. Everything else in the report is the same.
    let mut sketch = json(&["run", "--json"]);
    let mut exact = json(&["run", "--json", "--exact"]);
    for field in ["ttft", "itl", "e2e"] {
        let (s, e) = (&sketch[field], &exact[field]);
        assert_eq!(s["count"], e["count"], "{field}");
        assert!(
            e["count"].as_u64().unwrap() > 10_000,
            "{field}: a real sample"
        );
        for p in ["p50", "p90", "p99"] {
            let (a, b) = (e[p].as_f64().unwrap(), s[p].as_f64().unwrap());
            assert!(
                (a - b).abs() <= a * 2f64.powi(-11) + 1e-9,
                "{field}.{p}: exact {a}, sketch {b}"
            );
        }
        let (a, b) = (e["mean"].as_f64().unwrap(), s["mean"].as_f64().unwrap());
        assert!((a - b).abs() <= a * 1e-9, "{field}.mean: {a} vs {b}");
        for v in [&mut sketch, &mut exact] {
            v[field] = Value::Null;
        }
    }
    for v in [&mut sketch, &mut exact] {
        v["wall_seconds"] = Value::Null;
    }
    assert_eq!(sketch, exact);
}
