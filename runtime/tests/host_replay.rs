//! Whole replays: determinism (the same config and workload give the same report and
//! the same log bytes, run after run), the first 500 sessions of the bundled Mooncake
//! conversation trace through examples/vllm.pool's sizes with sanity bounds derived
//! independently from the trace, and the progress callback.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod host_support;

use std::collections::BTreeSet;
use std::path::Path;

use host_support::*;
use poolrt::host::{Host, HostConfig, IterTime, LatencySamples, RunOptions, StepConfig, TimeVar};
use poolrt::policy::{CodeHandle, Shape, StagePolicy};
use poolrt::trace::{self, Workload};

unsafe extern "C" fn vllm_time(_rows: *const f64, _n: u64, _stride: u64, ctx: *const f64) -> f64 {
    // SAFETY: the policy below declares one ctx slot, `tokens`.
    unsafe { 0.005 + 0.00002 * *ctx }
}

/// examples/vllm.pool as the compiler would give it: 4096 blocks of 16, budget
/// 8192, 256 seats, `time (0.005 + 0.00002 * tokens)`.
fn vllm_example() -> HostConfig {
    // SAFETY: the function reads one ctx slot and is static.
    let shape = Shape { row: 0, ctx: 1 };
    let policy = unsafe { StagePolicy::new(vllm_time, shape, CodeHandle::process()) };
    vllm(
        4096,
        16,
        StepConfig {
            time: IterTime::Compiled {
                policy,
                layout: vec![TimeVar::Tokens],
                row: vec![],
            },
            ..engine(8192, 256, None)
        },
    )
}

#[test]
fn the_same_inputs_give_the_same_report_and_log_bytes() {
    let w = trace::synthetic(400, 7);
    // A small pool, so that preemption and eviction happen.
    let small = || {
        let mut c = vllm_example();
        c.pools[0].members[0].config.cap = fin(600 * 16);
        c
    };
    let (r1, log1, _) = run(small(), &w);
    let (r2, log2, _) = run(small(), &w);
    assert_eq!(r1.to_json(), r2.to_json());
    assert_eq!(log1, log2);
    assert!(r1.preemptions > 0 && r1.evictions > 0, "{}", r1.to_text());
    assert_eq!((r1.finished, r1.unfinished), (400, 0));
    // Without the log, the same report (`run` reads exact percentiles).
    let host = Host::new(small(), &w).unwrap();
    let exact = RunOptions {
        latencies: LatencySamples::Exact,
        ..RunOptions::default()
    };
    assert_eq!(host.run(exact).unwrap(), r1);
}

#[test]
fn progress_reports_every_session_done() {
    let w = trace::synthetic(50, 1);
    let mut seen = Vec::new();
    let mut progress = |done: u64, total: u64| seen.push((done, total));
    let host = Host::new(vllm_example(), &w).unwrap();
    let r = host
        .run(RunOptions {
            progress: Some(&mut progress),
            ..RunOptions::default()
        })
        .unwrap();
    assert_eq!(r.finished, 50);
    assert_eq!(seen.len(), 50);
    assert_eq!(seen.last(), Some(&(50, 50)));
    assert!(seen.windows(2).all(|p| p[1].0 == p[0].0 + 1));
}

fn mooncake_500() -> (Workload, Vec<Vec<u64>>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/traces/mooncake_conversation_trace.jsonl");
    let mut w = trace::read_path(&path, None).unwrap();
    w.truncate(500);
    // The hash ids straight from the file, for an independent bound.
    let text = std::fs::read_to_string(&path).unwrap();
    let ids = text
        .lines()
        .take(500)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["hash_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        })
        .collect();
    (w, ids)
}

#[test]
fn mooncake_conversation_first_500_sessions_replay_sanely() {
    let (w, ids) = mooncake_500();
    let (r, _, lines) = run(vllm_example(), &w);
    assert_eq!(r.sessions, 500);
    assert_eq!(r.finished + r.rejected, 500);
    assert_eq!(r.unfinished, 0);
    // Prompts above the 65,536-unit cap (or whose outputs would not fit) are refused.
    let too_big = w
        .sessions
        .iter()
        .filter(|s| s.prompt + s.output - 1 > 65_536)
        .count() as u64;
    assert_eq!(r.rejected, too_big);
    // The infinite-cache bound: a session can hit at most the leading blocks of its
    // prompt that some earlier session had (by 512-token Mooncake block), so over
    // the sessions admitted, the hit rate is at most that bound's.
    let mut seen = BTreeSet::new();
    let mut ideal = vec![0u64; 500];
    for (i, h) in ids.iter().enumerate() {
        let lead = h.iter().take_while(|x| seen.contains(*x)).count() as u64;
        ideal[i] = (lead * 512).min(w.sessions[i].prompt);
        seen.extend(h.iter().copied());
    }
    let admitted: Vec<usize> = iterations(&lines)
        .iter()
        .flat_map(|l| l["admitted"].as_array().unwrap().clone())
        .filter(|a| a[1] == "new")
        .map(|a| a[0].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(admitted.len() as u64, r.finished);
    let bound_hit: u64 = admitted.iter().map(|&i| ideal[i]).sum();
    let prompt: u64 = admitted.iter().map(|&i| w.sessions[i].prompt).sum();
    let hit_rate = r.hit_rate.unwrap();
    assert!(hit_rate <= bound_hit as f64 / prompt as f64, "{hit_rate}");
    assert!(hit_rate <= 0.3664, "{hit_rate}");
    // Block 0 (512 tokens) opens nearly every prompt (the traces' README) and is
    // almost always held by a resident: nearly every session hits at least it.
    let floor = 0.9 * (512 * (admitted.len() as u64 - 1)) as f64 / prompt as f64;
    assert!(hit_rate >= floor, "{hit_rate} < {floor}");
    assert_eq!(r.pools[0].prompt_units, prompt);
    // Every finished session produced all its output tokens.
    let finished: u64 = iterations(&lines)
        .iter()
        .flat_map(|l| l["finished"].as_array().unwrap().clone())
        .map(|s| w.sessions[s.as_u64().unwrap() as usize].output)
        .sum();
    assert_eq!(r.output_tokens, finished);
    let (t, i, e) = (&r.ttft, &r.itl, &r.e2e);
    for p in [t, i, e] {
        assert!(p.p50 <= p.p90 && p.p90 <= p.p99, "{p:?}");
    }
    assert!(t.p50.unwrap() >= 0.005 && e.p50 >= t.p50);
    let last_arrival = w.sessions.last().unwrap().arrival;
    assert!(r.sim_seconds >= last_arrival);
    assert!(r.pools[0].peak_allocated <= 65_536);
    assert!(r.pools[0].mean_allocated <= r.pools[0].peak_allocated as f64);
    assert!(r.tokens_per_second > 0.0);
}

#[test]
fn mooncake_a_larger_cache_reaches_more_of_the_infinite_cache_bound() {
    // With 65,536 units the later turns of a conversation (21 to 75 s later) find
    // their history evicted; with 2^21 units much of it is still cached. Every
    // prompt fits, so the bound is over all 500 sessions.
    let (w, ids) = mooncake_500();
    let small = run(vllm_example(), &w).0.hit_rate.unwrap();
    let mut big = vllm_example();
    big.pools[0].members[0].config.cap = fin(1 << 21);
    let r = run(big, &w).0;
    let mut seen = BTreeSet::new();
    let mut bound = 0;
    for (i, h) in ids.iter().enumerate() {
        let lead = h.iter().take_while(|x| seen.contains(*x)).count() as u64;
        bound += (lead * 512).min(w.sessions[i].prompt);
        seen.extend(h.iter().copied());
    }
    let bound = bound as f64 / w.prompt_tokens() as f64;
    let hit = r.hit_rate.unwrap();
    assert_eq!(r.finished, 500);
    assert!(small < hit && hit <= bound, "{small} < {hit} <= {bound}");
}

/// A session built by hand that could never run is refused before anything runs,
/// in one readable sentence (a regression: the message once carried runs of spaces
/// where its source lines were continued).
#[test]
fn a_session_that_cannot_run_is_refused_in_one_sentence() {
    let w = workload(vec![sess(0.0, 0, 4, &[])]);
    let e = match Host::new(vllm_example(), &w) {
        Ok(_) => panic!("a session with no prompt was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("arrival 0: a session needs a prompt and an output of at least 1, runs adding up to the prompt, and a finite arrival not before the previous one"),
        "{e}"
    );
    assert!(!e.contains("  "), "a run of spaces in: {e}");
}

/// Counts the latency moments an observer is told.
#[derive(Default)]
struct CountLatencies(u64);

impl poolrt::host::Observer for CountLatencies {
    fn latency(&mut self, _: &poolrt::host::Latency) -> std::io::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

#[test]
fn unkept_latencies_leave_the_reports_latencies_empty_and_change_nothing_else() {
    let (w, _) = mooncake_500();
    let run = |latencies: LatencySamples| {
        let mut seen = CountLatencies::default();
        let r = Host::new(vllm_example(), &w)
            .unwrap()
            .run(RunOptions {
                observer: Some(&mut seen),
                latencies,
                ..RunOptions::default()
            })
            .unwrap();
        (r, seen.0)
    };
    let (kept, told_kept) = run(LatencySamples::Sketch);
    let (mut none, told_none) = run(LatencySamples::Unkept);
    // Exact keeps what the sketch counts, and its percentiles are within the
    // sketch's bound of them (docs/HOST.md, "Percentiles"); nothing else differs.
    let (mut exact, _) = run(LatencySamples::Exact);
    for (e, k) in [
        (&exact.ttft, &kept.ttft),
        (&exact.itl, &kept.itl),
        (&exact.e2e, &kept.e2e),
    ] {
        assert_eq!(e.count, k.count);
        for (x, y) in [(e.p50, k.p50), (e.p90, k.p90), (e.p99, k.p99)] {
            let (x, y) = (x.unwrap(), y.unwrap());
            assert!((x - y).abs() <= x * 2f64.powi(-11) + 1e-9, "{x} vs {y}");
        }
    }
    exact.ttft = kept.ttft;
    exact.itl = kept.itl;
    exact.e2e = kept.e2e;
    assert_eq!(exact.to_json(), kept.to_json());
    for p in [&none.ttft, &none.itl, &none.e2e] {
        assert_eq!((p.count, p.mean, p.p50, p.p99), (0, None, None, None));
    }
    // The observer is told every moment either way: a first token and a finish per
    // session, and every later token.
    assert_eq!(told_none, told_kept);
    assert_eq!(told_kept, kept.ttft.count + kept.itl.count + kept.e2e.count);
    assert!(kept.finished > 400 && kept.e2e.count == kept.finished);
    none.ttft = kept.ttft;
    none.itl = kept.itl;
    none.e2e = kept.e2e;
    assert_eq!(none.to_json(), kept.to_json());
}
