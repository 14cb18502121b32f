//! Handoffs (R25–R27), worked out by hand: a prefill pool whose iterations last 1 s
//! hands each computed prompt to a decode pool whose iterations last 0.5 s, over a
//! link of 100 units of work per second with work = `units` (so a transfer of `u`
//! units lasts `u / 100` s). Each expected time is derived in the comments from the
//! rules alone and written as the same sum of floats the host computes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use build_support::TempDir;
use poolrt::host::{LatencySamples, Report};
use poolrt::trace;

/// `DCAP` and `DPREEMPT` set the decode pool's cap and preemption.
const SPEC: &str = "
stage p { step; time (1); }
stage d { step; time (0.5); }
stage nic { link; rate 100; }
pool pkv { cap 1000; block 4; admit via p; handoff dkv via nic (units); }
pool dkv { cap DCAP; block 4; DPREEMPT admit via d; }
";

struct Run {
    report: Report,
    log: Vec<serde_json::Value>,
}

fn run(spec: &str, trace_jsonl: &str) -> Run {
    let dir = TempDir::new("disagg");
    let path = dir.path.join("w.jsonl");
    std::fs::write(&path, trace_jsonl).unwrap();
    let workload = trace::read_path(&path, None).unwrap();
    let (report, log) = build_support::replay_logged(spec, &workload, LatencySamples::Exact);
    let log = String::from_utf8(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Run { report, log }
}

fn spec(dcap: u32, preempt: &str) -> String {
    SPEC.replace("DCAP", &dcap.to_string())
        .replace("DPREEMPT", preempt)
}

fn session(prompt: u64, output: u64) -> String {
    format!("{{\"arrival\": 0, \"prompt\": {prompt}, \"output\": {output}}}\n")
}

/// The times of the log's pool events named `ev` of session `s` in pool `pool`, to
/// 1e-12 s: serde_json's default parser may miss a float's last bit, so exact
/// equalities are asserted on the report, whose figures are the host's own.
fn times(r: &Run, ev: &str, s: u64, pool: &str) -> Vec<String> {
    r.log
        .iter()
        .filter(|v| v["ev"] == ev && v["session"] == s && v["pool"] == pool)
        .map(|v| format!("{:.12}", v["t"].as_f64().unwrap()))
        .collect()
}

fn at(t: &[f64]) -> Vec<String> {
    t.iter().map(|t| format!("{t:.12}")).collect()
}

#[test]
fn r27_one_session_ttft_is_prefill_plus_transfer_plus_first_decode() {
    // t=0: the prefill iteration computes the 8-unit prompt; it ends at 1 s and the
    // session is handed off (no token on the prefill side). t=1: the decode member
    // admits it (no hit), allocates 8 units and reads all 8 over the link: 0.08 s;
    // an iteration that only admitted it is not run (R26). t=1.08: the transfer
    // ends, the prefill hold is released, the session has 7 units computed; the
    // decode iteration computes the 8th and samples the first token at 1.58.
    let r = run(&spec(1000, ""), &session(8, 3));
    let transfer_end = 1.0 + 8.0 / 100.0;
    let first = transfer_end + 0.5;
    assert_eq!(r.report.ttft.p50, Some(first));
    let h = r.report.handoff.clone().unwrap();
    assert_eq!((h.handoffs, h.transfers, h.units, h.count), (1, 1, 8, 1));
    assert_eq!(h.queue, Some(0.0));
    assert_eq!(h.prefill, Some(1.0));
    assert_eq!(h.decode_queue, Some(0.0));
    assert_eq!(h.transfer, Some(transfer_end - 1.0));
    assert_eq!(h.first_decode, Some(first - transfer_end));
    // Three tokens, 0.5 s apart; the prefill side releases at the transfer's end.
    assert_eq!(r.report.e2e.p50, Some(first + 0.5 + 0.5));
    assert_eq!(times(&r, "handoff", 0, "pkv"), at(&[1.0]));
    assert_eq!(times(&r, "transfer", 0, "dkv"), at(&[1.0]));
    assert_eq!(times(&r, "received", 0, "dkv"), at(&[transfer_end]));
    assert_eq!(times(&r, "release", 0, "pkv"), at(&[transfer_end]));
    // Its prompt's two blocks stay cached on the prefill side (R14).
    let pkv = &r.report.pools[0];
    assert_eq!((pkv.name.as_str(), pkv.peak_allocated), ("pkv", 8));
    assert_eq!(r.report.links[0].handoffs, 1);
    // Computed tokens: 8 on the prefill side, then 1 + 2 decodes.
    assert_eq!(r.report.computed_tokens, 8 + 3);
}

#[test]
fn r26_two_transfers_share_the_link_first_come_first_served() {
    // Both prompts are computed in the prefill iteration [0, 1] and handed off at 1
    // in serial order. The decode member admits s0 then s1 at 1: s0's 8 units are
    // read over [1, 1.08], s1's queue behind them over [1.08, 1.16]. s0 computes its
    // last prompt unit in [1.08, 1.58]; s1's transfer ends while that iteration is
    // in flight, so s1 computes its last unit in the next one, [1.58, 2.08].
    let r = run(&spec(1000, ""), &[session(8, 2), session(8, 2)].concat());
    let s0_kv = 1.0 + 8.0 / 100.0;
    let s1_kv = s0_kv + 8.0 / 100.0;
    assert_eq!(times(&r, "received", 0, "dkv"), at(&[s0_kv]));
    assert_eq!(times(&r, "received", 1, "dkv"), at(&[s1_kv]));
    let s0_first = s0_kv + 0.5;
    let s1_first = s0_first + 0.5;
    let mut ttfts = [s0_first, s1_first];
    ttfts.sort_by(f64::total_cmp);
    assert_eq!(r.report.ttft.p50, Some(ttfts[0]));
    assert_eq!(r.report.ttft.p99, Some(ttfts[1]));
    let h = r.report.handoff.clone().unwrap();
    // The parts of each TTFT: transfer 0.08 and 0.16 (waiting behind s0 counts as
    // transfer), first decode 0.5 and 2.08 − 1.16.
    assert_eq!(h.transfer, Some(((s0_kv - 1.0) + (s1_kv - 1.0)) / 2.0));
    assert_eq!(
        h.first_decode,
        Some(((s0_first - s0_kv) + (s1_first - s1_kv)) / 2.0)
    );
    assert_eq!(r.report.links[0].busy_seconds, 0.08 + 0.08);
}

#[test]
fn r27_a_decode_side_preemption_recomputes_there_and_reads_nothing_more() {
    // The decode pool has 3 blocks of 4 and `preempt lifo`. s0 and s1 (prompt 4,
    // output 6) are handed off at 1 and admitted at once (1 block each); s0's 4
    // units are read over [1, 1.04], s1's over [1.04, 1.08]. Decode iterations run
    // back to back from 1.04: in [1.54, 2.04] s0 grows into the third block; in
    // [2.04, 2.54] s1 must grow to a fourth block, which does not fit, and as the
    // most recently admitted resident it is the victim (R13). It waits (its reserve
    // of 2 blocks does not fit beside s0's) until s0 finishes at the end of the
    // sixth iteration (4.04), is admitted again with no hit (its cached block was
    // evicted when s0 grew at 3.54), recomputes its 5 units and samples its second
    // token at 4.54, its sixth at 6.54: eleven iterations after 1.04. The
    // recomputation reads nothing over the link.
    let r = run(
        &spec(12, "preempt lifo;"),
        &[session(4, 6), session(4, 6)].concat(),
    );
    assert_eq!(
        times(&r, "preempt", 1, "dkv"),
        at(&[1.0 + 4.0 / 100.0 + 0.5 + 0.5])
    );
    let h = r.report.handoff.clone().unwrap();
    assert_eq!((h.handoffs, h.transfers, h.units), (2, 2, 8));
    assert_eq!(times(&r, "transfer", 1, "dkv").len(), 1);
    assert_eq!(r.report.pools[1].preemptions, 1);
    let mut end = 1.0 + 4.0 / 100.0;
    for _ in 0..11 {
        end += 0.5;
    }
    assert_eq!(r.report.e2e.p99, Some(end));
    assert_eq!(r.report.finished, 2);
}

#[test]
fn r25_the_arrival_check_reads_the_decode_side_cap() {
    // The prefill pool never decodes: a session whose prompt fits it but whose whole
    // sequence (prompt + output − 1 = 12 units, 3 blocks) cannot fit the decode
    // pool's 2 blocks is refused at arrival, before any prefill work.
    let r = run(&spec(8, ""), &session(4, 9));
    assert_eq!((r.report.rejected, r.report.computed_tokens), (1, 0));
    assert_eq!(r.report.handoff.clone().unwrap().handoffs, 0);
}

#[test]
fn r25_every_disaggregated_example_replays_the_same_report_and_log_twice() {
    // Determinism across both routes, the handoffs and the links: the same
    // workload gives the same report and log bytes, and a handoff happened.
    let mut workload = trace::synthetic(600, 5);
    workload.scale_rate(4.0);
    let runs = build_support::replayed_twice("examples/disagg", &workload);
    assert_eq!(runs.len(), 2);
    for (spec, [a, b]) in runs {
        assert_eq!(a.0.to_json(), b.0.to_json(), "{}", spec.display());
        assert!(a.1 == b.1, "{}: the logs differ", spec.display());
        let h = a.0.handoff.unwrap();
        assert_eq!((h.handoffs, a.0.finished), (600, 600), "{}", spec.display());
    }
}

#[test]
fn r26_an_exclusive_prefill_decode_stage_starts_every_transfer_at_once() {
    // R16 admits one prefill an iteration, but a handed-off session reading its
    // prompt takes no tokens (R26): at 1 both sessions are admitted and their reads
    // queue on the link back to back, as without `serve exclusive prefill`.
    let exclusive = SPEC.replace(
        "stage d { step;",
        "stage d { step; serve exclusive prefill;",
    );
    let spec = exclusive.replace("DCAP", "1000").replace("DPREEMPT", "");
    let r = run(&spec, &[session(8, 2), session(8, 2)].concat());
    let s0_kv = 1.0 + 8.0 / 100.0;
    assert_eq!(times(&r, "transfer", 1, "dkv"), at(&[1.0]));
    assert_eq!(times(&r, "received", 1, "dkv"), at(&[s0_kv + 8.0 / 100.0]));
    assert_eq!(r.report.handoff.clone().unwrap().transfers, 2);
}
