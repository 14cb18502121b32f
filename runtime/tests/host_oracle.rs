//! Replays the vLLM oracle's recorded scenarios (../shared/data/vllm-oracle, recorded
//! from vLLM 0.33.0's own v1 scheduler; formats in ../shared/oracle/vllm/FORMAT.md)
//! through the reference host configured as examples/vllm.pool (one iteration per
//! second, so step = time) and compares every step field by field: admitted (id,
//! kind, hit, tokens), cont, preempted, finished, scheduled tokens, decodes, running,
//! waiting and free blocks, and that the host runs no iteration in vLLM's idle steps.

mod host_support;

use std::path::{Path, PathBuf};

use host_support::*;

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/vllm-oracle")
        .join(name);
    assert!(
        d.join("steps.jsonl").is_file(),
        "{} is missing: the oracle scenarios come with the workplace's shared folder",
        d.display()
    );
    d
}

fn all_steps_match(name: &str, steps: usize) {
    let (compared, equal, first) = conform(&dir(name));
    assert_eq!(
        (compared, equal),
        (steps, steps),
        "{name}: {equal} of {compared} steps match; first difference: {}",
        first.unwrap_or_default()
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

/// The comparison is not vacuous: one seat more than vLLM had diverges.
#[test]
fn a_wrong_seat_count_diverges() {
    let sc = scenario(&dir("a_fcfs_budget_seats"));
    let config = vllm(
        sc.usable,
        sc.block,
        engine(sc.budget, sc.seats + 1, sc.chunk),
    );
    let (_, _, lines) = run(config, &sc.workload);
    let running_max = iterations(&lines)
        .iter()
        .filter_map(|l| l["residents"].as_u64())
        .max();
    assert_eq!(running_max, Some(sc.seats + 1));
}
