//! Replays the recorded vLLM scenarios (tests/data/vllm-oracle, recorded from vLLM
//! 0.33.0's own v1 scheduler; the format is docs/CONFORMANCE.md's)
//! through the reference host configured by hand as examples/vllm.pool, with
//! `poolc_tools::oracle` (one iteration per time unit, so step = time), and checks that
//! every step matches field by field: arrivals, admitted (id, kind, hit, tokens),
//! cont, preempted, finished, scheduled tokens, decodes, running, waiting and free
//! blocks, idle steps included, and the summary line.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../../runtime/tests/host_support/mod.rs"]
mod host_support;

use std::path::{Path, PathBuf};

use host_support::*;
use poolc_tools::oracle::{self, Outcome, Scenario};

fn dir(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("tests/data/vllm-oracle")
        .join(name)
}

fn read(name: &str) -> Scenario {
    oracle::read_scenario(&dir(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Replays a scenario with examples/vllm.pool's policies; the sizes given here are
/// replaced by the scenario's (`oracle::fit`).
fn replay(sc: &Scenario) -> oracle::Replay {
    oracle::replay(vllm(1, 16, engine(1, 1, None)), sc).unwrap_or_else(|e| panic!("{e}"))
}

fn outcome(name: &str) -> Outcome {
    let sc = read(name);
    oracle::compare(&sc, &replay(&sc))
}

fn all_steps_match(name: &str, steps: usize) {
    let o = outcome(name);
    assert!(o.matches(), "{}", o.render());
    assert_eq!(
        (o.recorded, o.replayed, o.divergent),
        (steps, steps, 0),
        "{name}"
    );
}

#[test]
fn a_fcfs_budget_seats_all_steps_match() {
    all_steps_match("a_fcfs_budget_seats", 1360);
}

#[test]
fn b_fcfs_prefix_all_steps_match() {
    all_steps_match("b_fcfs_prefix", 582);
}

#[test]
fn c_fcfs_preempt_all_steps_match() {
    all_steps_match("c_fcfs_preempt", 4083);
}

#[test]
fn d_fcfs_chunked_all_steps_match() {
    all_steps_match("d_fcfs_chunked", 3281);
}

#[test]
fn e_fcfs_mixed_all_steps_match() {
    all_steps_match("e_fcfs_mixed", 3894);
}

#[test]
fn f_mooncake_conversation_all_steps_match() {
    all_steps_match("f_mooncake_conversation", 6038);
}

/// The comparison is not vacuous: a replay with one seat more than vLLM had
/// diverges from the recording, first in the running count.
#[test]
fn a_wrong_seat_count_diverges() {
    let recorded = read("a_fcfs_budget_seats");
    let mut wider = recorded.clone();
    wider.settings.seats += 1;
    let o = oracle::compare(&recorded, &replay(&wider));
    assert!(!o.matches(), "one seat more still matches");
    let first = o.first.as_ref().expect("a divergent step");
    assert!(first.fields.contains(&"running"), "{}", o.render());
    let running_max = replay(&wider).steps.iter().map(|s| s.running).max();
    assert_eq!(running_max, Some(recorded.settings.seats + 1));
}

#[test]
fn every_recorded_line_reads_as_its_json_value_does() {
    // The typed reading of steps.jsonl (`Step::parse`) against the reading through a
    // JSON value, on every line of every recording.
    let root = dir("a_fcfs_budget_seats").join("..");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("steps.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in &names {
        let sc = read(name);
        assert!(sc.recorded.len() > 200, "{name}");
        for (text, step) in &sc.recorded {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                &oracle::Step::from_value(&v).unwrap(),
                step,
                "{name}: {text}"
            );
        }
    }
}
