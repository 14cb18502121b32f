//! The reference host's stage rules, one small scenario each, worked out by hand in
//! the comments: R15 (budget, seats, chunking and the lone-request exemption, the
//! last-token rule and same-iteration sharing, LIFO preemption stopping admission and
//! the victim's re-admission with hits on its own blocks, finishing order), R16
//! (exclusive prefill), R13 `preempt none` waiting, rejections not blocking others,
//! the compiled `time` ctx layout, and bad `time` values. Every iteration lasts one
//! second unless said otherwise, so an iteration starting at t is "step t".

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod common;
mod host_support;

use host_support::*;
use poolrt::Preempt;
use poolrt::host::{AttrSpec, Host, HostError, IterTime, StepConfig, TakeVar, TimeVar};
use poolrt::policy::{CodeHandle, Shape, StagePolicy};
use serde_json::Value;

/// An iteration line in a compact, readable form.
fn show(l: &Value) -> String {
    format!(
        "t={} adm={} cont={} dec={} pre={} fin={} tok={} res={} wait={}",
        l["t"],
        l["admitted"],
        l["cont"],
        l["decode"],
        l["preempted"],
        l["finished"],
        l["tokens"],
        l["residents"],
        l["waiting"]
    )
    .replace('"', "")
}

fn steps(lines: &[Value]) -> Vec<String> {
    iterations(lines).into_iter().map(show).collect()
}

fn big(budget: u64, seats: u64, chunk: Option<u64>) -> poolrt::host::HostConfig {
    vllm(1000, 4, engine(budget, seats, chunk))
}

#[test]
fn r15_budget_runs_out_and_the_last_admission_is_chunked() {
    // Budget 10. t0: s0 takes its 6, s1 the 4 left (a chunk of its 7). t1: s0 decodes
    // 1, s1 takes its last 3; both complete: s0 its 2nd (last) token, s1 its only one;
    // they finish in the order they took tokens.
    let w = workload(vec![sess(0.0, 6, 2, &[]), sess(0.0, 7, 1, &[])]);
    let (r, _, lines) = run(big(10, 8, None), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=0.0 adm=[[0,new,0,6],[1,new,0,4]] cont=[] dec=0 pre=[] fin=[] tok=10 res=2 wait=0",
            "t=1.0 adm=[] cont=[[1,3]] dec=1 pre=[] fin=[0,1] tok=4 res=0 wait=0",
        ]
    );
    assert_eq!(
        (r.finished, r.ttft.p50, r.ttft.p99),
        (2, Some(1.0), Some(2.0))
    );
    assert_eq!((r.itl.count, r.itl.p50), (1, Some(1.0)));
    assert_eq!((r.e2e.p50, r.sim_seconds), (Some(2.0), 2.0));
}

#[test]
fn r15_seats_limit_residents_not_tokens() {
    // One seat: s1 waits while s0 decodes, although budget is left.
    let w = workload(vec![sess(0.0, 4, 2, &[]), sess(0.0, 4, 1, &[])]);
    let (_, _, lines) = run(big(100, 1, None), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=0.0 adm=[[0,new,0,4]] cont=[] dec=0 pre=[] fin=[] tok=4 res=1 wait=1",
            "t=1.0 adm=[] cont=[] dec=1 pre=[] fin=[0] tok=1 res=0 wait=1",
            "t=2.0 adm=[[1,new,0,4]] cont=[] dec=0 pre=[] fin=[1] tok=4 res=0 wait=0",
        ]
    );
}

#[test]
fn r15_chunk_caps_takes_unless_a_request_is_alone() {
    // chunk 3. t0: s0 is alone (nothing else resident or waiting): all 8 at once.
    // t10: two waiting: 3 each. t11: s1 3 more, s2 its last 2 (finishes). t12: s1 is
    // alone again, so it takes its remaining 4 although the chunk is 3.
    let w = workload(vec![
        sess(0.0, 8, 1, &[]),
        sess(10.0, 10, 1, &[]),
        sess(10.0, 5, 1, &[]),
    ]);
    let (_, _, lines) = run(big(100, 8, Some(3)), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=0.0 adm=[[0,new,0,8]] cont=[] dec=0 pre=[] fin=[0] tok=8 res=0 wait=0",
            "t=10.0 adm=[[1,new,0,3],[2,new,0,3]] cont=[] dec=0 pre=[] fin=[] tok=6 res=2 wait=0",
            "t=11.0 adm=[] cont=[[1,3],[2,2]] dec=0 pre=[] fin=[2] tok=5 res=1 wait=0",
            "t=12.0 adm=[] cont=[[1,4]] dec=0 pre=[] fin=[1] tok=4 res=0 wait=0",
        ]
    );
}

#[test]
fn r15_without_chunk_a_prefill_takes_what_budget_leaves() {
    // No chunk: the same arrivals at t10 take 10 and 5 in one iteration.
    let w = workload(vec![sess(10.0, 10, 1, &[]), sess(10.0, 5, 1, &[])]);
    let (_, _, lines) = run(big(100, 8, None), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=10.0 adm=[[0,new,0,10],[1,new,0,5]] cont=[] dec=0 pre=[] fin=[0,1] tok=15 res=0 wait=0"
        ]
    );
}

#[test]
fn r15_last_token_rule_and_same_iteration_sharing() {
    // Blocks of 4. s0 (run 1, 8 units) finishes at t1 and caches both blocks.
    // t5: s1 has the same 8-unit prompt: its hit is capped at 8 − 1 = 7, so 1 block
    // (4 units) and it recomputes 4. s2 (run 1 then run 2) hits both blocks of run 1
    // (block 0 shared with s1, block 1 the cached copy): 8, and computes its 4.
    // t20: s3 and s4 share a prompt nobody computed yet: s4 hits s3's block 0,
    // registered when s3 was allocated in the same iteration (last-token rule again).
    let w = workload(vec![
        sess(0.0, 8, 1, &[(1, 8)]),
        sess(5.0, 8, 1, &[(1, 8)]),
        sess(5.0, 12, 1, &[(1, 8), (2, 4)]),
        sess(20.0, 8, 1, &[(3, 8)]),
        sess(20.0, 8, 1, &[(3, 8)]),
    ]);
    let (r, _, lines) = run(big(100, 8, None), &w);
    let s = steps(&lines);
    assert_eq!(
        s[1],
        "t=5.0 adm=[[1,new,4,4],[2,new,8,4]] cont=[] dec=0 pre=[] fin=[1,2] tok=8 res=0 wait=0"
    );
    assert_eq!(
        s[2],
        "t=20.0 adm=[[3,new,0,8],[4,new,4,4]] cont=[] dec=0 pre=[] fin=[3,4] tok=12 res=0 wait=0"
    );
    // Hit rate: (0 + 4 + 8 + 0 + 4) / (8 + 8 + 12 + 8 + 8).
    assert_eq!(r.hit_rate, Some(16.0 / 44.0));
    assert_eq!(r.pools[0].hit_units, 16);
}

#[test]
fn r15_preemption_stops_admission_and_the_victim_resumes_with_its_own_blocks() {
    // Cap 7 blocks of 4. s0 (2 blocks) finishes at t1 and leaves an entry e0.
    // t2: s1, s2, s3 (8 units each) are admitted; s3's allocation evicts one block of
    // e0. t3: all decode: s1 grows into a 3rd block (evicting e0's last block); s2
    // cannot grow, so the latest resident, s3, is preempted: its 2 computed blocks
    // are cached, one of them is evicted for s2's growth. Nobody is admitted at t3.
    // t4: s2 finished at the end of t3 (2 outputs); s3 resumes: its sequence is 9,
    // its own block 0 is still cached: hit 4, it recomputes 5.
    let w = workload(vec![
        sess(0.0, 8, 1, &[]),
        sess(2.0, 8, 6, &[]),
        sess(2.0, 8, 2, &[]),
        sess(2.0, 8, 2, &[]),
    ]);
    let (r, _, lines) = run(vllm(7, 4, engine(100, 8, None)), &w);
    let s = steps(&lines);
    assert_eq!(
        s[1],
        "t=2.0 adm=[[1,new,0,8],[2,new,0,8],[3,new,0,8]] cont=[] dec=0 pre=[] fin=[] tok=24 res=3 wait=0"
    );
    assert_eq!(
        s[2],
        "t=3.0 adm=[] cont=[] dec=2 pre=[3] fin=[2] tok=2 res=1 wait=1"
    );
    assert_eq!(
        s[3],
        "t=4.0 adm=[[3,resumed,4,5]] cont=[] dec=1 pre=[] fin=[3] tok=6 res=1 wait=0"
    );
    assert_eq!((r.preemptions, r.finished, r.unfinished), (1, 4, 0));
    assert_eq!(r.pools[0].resumed_hit_units, 4);
    // The preempt event is logged by the pool with the units it kept in the cache.
    assert!(
        lines
            .iter()
            .any(|l| l["ev"] == "preempt" && l["session"] == 3 && l["kept"] == 8)
    );
}

#[test]
fn r15_a_grower_can_be_its_own_victim() {
    // Cap 5 blocks: s0 and s1 hold 2 each; at t1 s0 grows into the 5th block, s1
    // cannot and is the latest resident itself: it is preempted, nobody is admitted,
    // and it resumes when s0 is done (hitting its own cached blocks: 8 of 9).
    let w = workload(vec![sess(0.0, 8, 2, &[]), sess(0.0, 8, 2, &[])]);
    let (r, _, lines) = run(vllm(5, 4, engine(100, 8, None)), &w);
    let s = steps(&lines);
    assert_eq!(
        s[1],
        "t=1.0 adm=[] cont=[] dec=1 pre=[1] fin=[0] tok=1 res=0 wait=1"
    );
    assert_eq!(
        s[2],
        "t=2.0 adm=[[1,resumed,8,1]] cont=[] dec=0 pre=[] fin=[1] tok=1 res=0 wait=0"
    );
    assert_eq!(r.finished, 2);
}

#[test]
fn r18_a_victim_that_already_took_tokens_gives_them_back() {
    // Cap 5 blocks of 4, `preempt by (-units, computed)`. t0: s0 and s1 take their
    // 8-token prompts (2 blocks each). t1: s0 decodes first and grows into a 3rd
    // block (units 9); s1's grow does not fit, and the least by -units is s0, which
    // already took its decode: it is preempted and its token is not executed (tok 1,
    // one decode: s1's), where lifo would have taken s1. s0 keeps its 2 computed
    // blocks cached. t2: s1 decodes and finishes (3 outputs); s0 does not fit beside
    // it (3 blocks). t3: s0 resumes, hitting its own 8 units.
    let w = workload(vec![sess(0.0, 8, 3, &[]), sess(0.0, 8, 3, &[])]);
    let mut c = vllm(5, 4, engine(100, 8, None));
    c.pools[0].members[0].config.preempt = common::preempt_largest();
    let (r, _, lines) = run(c, &w);
    assert_eq!(
        steps(&lines)[..4],
        [
            "t=0.0 adm=[[0,new,0,8],[1,new,0,8]] cont=[] dec=0 pre=[] fin=[] tok=16 res=2 wait=0",
            "t=1.0 adm=[] cont=[] dec=1 pre=[0] fin=[] tok=1 res=1 wait=1",
            "t=2.0 adm=[] cont=[] dec=1 pre=[] fin=[1] tok=1 res=0 wait=1",
            "t=3.0 adm=[[0,resumed,8,1]] cont=[] dec=0 pre=[] fin=[] tok=1 res=1 wait=0",
        ]
    );
    assert_eq!((r.preemptions, r.finished), (1, 2));
}

#[test]
fn r13_preempt_none_waits_and_resumes_when_room_frees() {
    // `preempt none`, cap 5 blocks: at t1 s1's grow waits (no victim taken); s0
    // finishes, and at t2 the retried grow fits and s1 decodes.
    let mut c = vllm(5, 4, engine(100, 8, None));
    c.pools[0].members[0].config.preempt = Preempt::None;
    let w = workload(vec![sess(0.0, 8, 2, &[]), sess(0.0, 8, 2, &[])]);
    let (r, _, lines) = run(c, &w);
    let s = steps(&lines);
    assert_eq!(
        s[1],
        "t=1.0 adm=[] cont=[] dec=1 pre=[] fin=[0] tok=1 res=1 wait=0"
    );
    assert_eq!(
        s[2],
        "t=2.0 adm=[] cont=[] dec=1 pre=[] fin=[1] tok=1 res=0 wait=0"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["ev"] == "grow_wait" && l["session"] == 1)
    );
    assert_eq!((r.preemptions, r.finished), (0, 2));
}

#[test]
fn r16_an_exclusive_prefill_displaces_decodes_with_the_full_budget() {
    // Budget 10. t0: s0 alone. t1: s0 would decode, but s1 (6) fits: it runs alone
    // and s0's decode is cancelled. t2, t3: s0 decodes its 2nd and 3rd tokens.
    let mut step = engine(10, 8, None);
    step.exclusive_prefill = true;
    let w = workload(vec![sess(0.0, 4, 3, &[]), sess(1.0, 6, 1, &[])]);
    let (_, _, lines) = run(vllm(100, 4, step), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=0.0 adm=[[0,new,0,4]] cont=[] dec=0 pre=[] fin=[] tok=4 res=1 wait=0",
            "t=1.0 adm=[[1,new,0,6]] cont=[] dec=0 pre=[] fin=[1] tok=6 res=1 wait=0",
            "t=2.0 adm=[] cont=[] dec=1 pre=[] fin=[] tok=1 res=1 wait=0",
            "t=3.0 adm=[] cont=[] dec=1 pre=[] fin=[0] tok=1 res=0 wait=0",
        ]
    );
    // Without `serve exclusive prefill` both run at t1.
    let (_, _, lines) = run(vllm(100, 4, engine(10, 8, None)), &w);
    assert_eq!(
        steps(&lines)[1],
        "t=1.0 adm=[[1,new,0,6]] cont=[] dec=1 pre=[] fin=[1] tok=7 res=1 wait=0"
    );
}

#[test]
fn r16_a_resident_mid_prefill_is_the_iterations_prefill() {
    // Budget 4: s0 (6) takes 4 at t0. At t1 it is mid-prefill, so it is this
    // iteration's prefill and s1 is not admitted (without exclusive prefill s1 would
    // take the 2 tokens left). s1 is admitted at t2.
    let mut step = engine(4, 8, None);
    step.exclusive_prefill = true;
    let w = workload(vec![sess(0.0, 6, 1, &[]), sess(1.0, 2, 1, &[])]);
    let (_, _, lines) = run(vllm(100, 4, step), &w);
    assert_eq!(
        steps(&lines),
        [
            "t=0.0 adm=[[0,new,0,4]] cont=[] dec=0 pre=[] fin=[] tok=4 res=1 wait=0",
            "t=1.0 adm=[] cont=[[0,2]] dec=0 pre=[] fin=[0] tok=2 res=0 wait=1",
            "t=2.0 adm=[[1,new,0,2]] cont=[] dec=0 pre=[] fin=[1] tok=2 res=0 wait=0",
        ]
    );
}

#[test]
fn r5_and_sessions_that_can_never_finish_are_rejected_without_blocking_others() {
    // Cap 4 blocks of 4 = 16 units. s0's prompt (20) exceeds it (R5, the pool
    // rejects); s1's prompt fits but it needs 10 + 10 − 1 = 19 units to produce its
    // last token (the host rejects); s2 is served.
    let w = workload(vec![
        sess(0.0, 20, 1, &[]),
        sess(0.0, 10, 10, &[]),
        sess(0.0, 4, 1, &[]),
    ]);
    let (r, _, lines) = run(vllm(4, 4, engine(100, 8, None)), &w);
    assert_eq!((r.finished, r.rejected, r.unfinished), (1, 2, 0));
    assert_eq!(
        steps(&lines),
        ["t=0.0 adm=[[2,new,0,4]] cont=[] dec=0 pre=[] fin=[2] tok=4 res=0 wait=0"]
    );
    let rejects: Vec<(u64, Option<u64>)> = lines
        .iter()
        .filter(|l| l["ev"] == "reject")
        .map(|l| (l["session"].as_u64().unwrap(), l["need"].as_u64()))
        .collect();
    assert_eq!(rejects, [(0, None), (1, Some(19))]);
}

unsafe extern "C" fn residents_plus_millitokens(
    _rows: *const f64,
    _n: u64,
    _stride: u64,
    ctx: *const f64,
) -> f64 {
    // SAFETY: the policy below declares 2 ctx slots.
    unsafe { *ctx + 0.001 * *ctx.add(1) }
}

#[test]
fn r15_time_reads_its_ctx_in_the_layout_order() {
    // time = slot0 + 0.001 · slot1 with layout [residents, tokens]: an iteration of
    // one resident taking 500 tokens lasts 1.5 s.
    // SAFETY: the function reads two ctx slots and is static.
    let shape = Shape { row: 0, ctx: 2 };
    let policy =
        unsafe { StagePolicy::new(residents_plus_millitokens, shape, CodeHandle::process()) };
    let step = StepConfig {
        time: IterTime::Compiled {
            policy,
            layout: vec![TimeVar::Residents, TimeVar::Tokens],
            row: vec![],
        },
        ..engine(1000, 8, None)
    };
    let w = workload(vec![sess(0.0, 500, 2, &[])]);
    let (r, _, lines) = run(vllm(1000, 4, step), &w);
    let ends: Vec<f64> = iterations(&lines)
        .iter()
        .map(|l| l["end"].as_f64().unwrap())
        .collect();
    let second = 1.0 + 0.001 * 1.0;
    assert_eq!(ends, [1.5, 1.5 + second]);
    assert_eq!(r.sim_seconds, 1.5 + second);
    assert_eq!(r.ttft.p50, Some(1.5));
}

unsafe extern "C" fn context_seconds(
    _rows: *const f64,
    _n: u64,
    _stride: u64,
    ctx: *const f64,
) -> f64 {
    // SAFETY: the policy below declares 1 ctx slot.
    unsafe { *ctx }
}

#[test]
fn r20_context_is_the_kv_the_iteration_attends() {
    // time = context (one second per attended token). Budget 6, chunk none. t=0: s0
    // (prompt 4) and s1 (prompt 8) arrive; s0 takes 4, s1 the 2 left of the budget:
    // context = (0 + 4) + (0 + 2) = 6 → the iteration ends at 6. Next: s0 decodes
    // (computed 4, takes 1 → 5), s1 takes 5 more of its 8 (computed 2 → 7): 12 → ends
    // at 18. Then s0 decodes (5 + 1) and s1 takes its last 1 (7 + 1): 14 → 32.
    // SAFETY: the function reads one ctx slot and is static.
    let shape = Shape { row: 0, ctx: 1 };
    let policy = unsafe { StagePolicy::new(context_seconds, shape, CodeHandle::process()) };
    let step = StepConfig {
        time: IterTime::Compiled {
            policy,
            layout: vec![TimeVar::Context],
            row: vec![],
        },
        ..engine(6, 8, None)
    };
    let w = workload(vec![sess(0.0, 4, 3, &[]), sess(0.0, 8, 1, &[])]);
    let (_, _, lines) = run(vllm(1000, 4, step), &w);
    let ends: Vec<f64> = iterations(&lines)
        .iter()
        .map(|l| l["end"].as_f64().unwrap())
        .collect();
    assert_eq!(ends[..3], [6.0, 18.0, 32.0]);
}

unsafe extern "C" fn per_take_seconds(
    rows: *const f64,
    n: u64,
    stride: u64,
    _ctx: *const f64,
) -> f64 {
    // Σ over the take rows [decode, prefill, computed] of prefill · (computed + 1) +
    // 100 · decode.
    let mut total = 0.0;
    for i in 0..n as usize {
        // SAFETY: the host passes n rows of `stride` (3) slots.
        let row = unsafe { std::slice::from_raw_parts(rows.add(i * stride as usize), 3) };
        total += row[1] * (row[2] + 1.0) + 100.0 * row[0];
    }
    total
}

#[test]
fn r29_time_sums_over_the_take_rows_in_the_row_layout_order() {
    // Budget 6, chunk none; s0 (prompt 4, output 3) and s1 (prompt 8, output 1) at 0.
    // 1: s0 takes 4 (computed 0), s1 2 (computed 0): 4·1 + 2·1 = 6 → ends at 6.
    // 2: s0 decodes: 100; s1 takes 5 (computed 2): 5·3 = 15 → 115 → ends at 121.
    // 3: s0 decodes: 100; s1 takes its last 1 (computed 7): 1·8 = 8 → 108 → 229.
    // SAFETY: the function reads n rows of 3 slots and no ctx, and is static.
    let shape = Shape { row: 3, ctx: 0 };
    let policy = unsafe { StagePolicy::new(per_take_seconds, shape, CodeHandle::process()) };
    let step = StepConfig {
        time: IterTime::Compiled {
            policy,
            layout: vec![],
            row: vec![TakeVar::Decode, TakeVar::Prefill, TakeVar::Computed],
        },
        ..engine(6, 8, None)
    };
    let w = workload(vec![sess(0.0, 4, 3, &[]), sess(0.0, 8, 1, &[])]);
    let (_, _, lines) = run(vllm(1000, 4, step), &w);
    let ends: Vec<f64> = iterations(&lines)
        .iter()
        .map(|l| l["end"].as_f64().unwrap())
        .collect();
    assert_eq!(ends[..3], [6.0, 121.0, 229.0]);
}

#[test]
fn a_time_that_is_not_a_finite_duration_is_an_error() {
    let step = StepConfig {
        time: IterTime::Fixed(-1.0),
        ..engine(10, 8, None)
    };
    let err = Host::new(vllm(10, 4, step), &workload(vec![])).err();
    assert!(matches!(err, Some(HostError::Config(m)) if m.contains("time -1")));
}

#[test]
fn d3_a_missing_attribute_names_itself_and_the_first_session_lacking_it() {
    let mut c = vllm(100, 4, engine(10, 8, None));
    c.attrs.push(AttrSpec::new("priority", None));
    let w = poolrt::trace::jsonl::read(
        "{\"arrival\":0,\"prompt\":4,\"output\":1,\"priority\":2}\n\
         {\"arrival\":1,\"prompt\":4,\"output\":1}\n"
            .as_bytes(),
        "w.jsonl",
    )
    .unwrap();
    let err = Host::new(c.clone(), &w).err().map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "session attribute `priority` has no default, and session 1 (w.jsonl:2) does not give it"
        )
    );
    // With a default, every session has it.
    c.attrs[4].default = Some(0.0);
    assert!(Host::new(c, &w).is_ok());
}

#[test]
fn k4_a_stage_serving_two_pools_tries_them_in_declaration_order() {
    // pool a and pool b, both admitted via engine; sessions alternate a, b, a (by
    // serial). Budget 10 with chunk off: at t0 the stage admits from a first (s0 6,
    // then s2 takes the 4 left), and only then tries b: no budget left. At t1 s2
    // takes its last 3 and b's s1 is admitted.
    let mut c = vllm(100, 4, engine(10, 8, None));
    c.pools.push(kv(1, "b", 1, 400, 4, |_| vec![sref(0, 0)]));
    let w = workload(vec![
        sess(0.0, 6, 1, &[]),
        sess(0.0, 3, 1, &[]),
        sess(0.0, 7, 1, &[]),
    ]);
    let (_, _, lines) = run(c, &w);
    let s = steps(&lines);
    assert_eq!(
        s[0],
        "t=0.0 adm=[[0,new,0,6],[2,new,0,4]] cont=[] dec=0 pre=[] fin=[0] tok=10 res=1 wait=1"
    );
    assert_eq!(
        s[1],
        "t=1.0 adm=[[1,new,0,3]] cont=[[2,3]] dec=0 pre=[] fin=[2,1] tok=6 res=0 wait=0"
    );
}

#[test]
fn k1_families_route_sessions_round_robin_by_serial() {
    // kv[2] joined member for member with engine[2]: even serials go to kv[0] and
    // engine[0], odd ones to kv[1] and engine[1].
    let c = poolrt::host::HostConfig {
        attrs: attrs(),
        stages: vec![step("engine", 2, engine(100, 8, None))],
        pools: vec![kv(0, "kv", 2, 400, 4, |i| vec![sref(0, i)])],
        routes: Vec::new(),
    };
    let w = workload((0..4).map(|_| sess(0.0, 4, 1, &[])).collect());
    let (r, _, lines) = run(c, &w);
    let who: Vec<(String, Value)> = iterations(&lines)
        .iter()
        .map(|l| {
            (
                l["stage"].as_str().unwrap().to_string(),
                l["admitted"].clone(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            (
                "engine[0]".to_string(),
                serde_json::json!([[0, "new", 0, 4], [2, "new", 0, 4]])
            ),
            (
                "engine[1]".to_string(),
                serde_json::json!([[1, "new", 0, 4], [3, "new", 0, 4]])
            ),
        ]
    );
    assert_eq!(r.pools[0].name, "kv[0]");
    assert_eq!((r.pools[0].sessions, r.pools[1].sessions), (2, 2));
}

#[test]
fn k1_one_pool_served_by_a_stage_family_is_admitted_by_whichever_member_has_a_seat() {
    // pool kv admitted via engine[2] (one seat each): s0 goes to engine[0], s1 to
    // engine[1]; s2 waits for the first seat to free.
    let c = poolrt::host::HostConfig {
        attrs: attrs(),
        stages: vec![step("engine", 2, engine(100, 1, None))],
        pools: vec![kv(0, "kv", 1, 400, 4, |_| vec![sref(0, 0), sref(0, 1)])],
        routes: Vec::new(),
    };
    let w = workload((0..3).map(|_| sess(0.0, 4, 2, &[])).collect());
    let (r, _, lines) = run(c, &w);
    let adm: Vec<(String, f64, Value)> = iterations(&lines)
        .iter()
        .filter(|l| l["admitted"] != serde_json::json!([]))
        .map(|l| {
            (
                l["stage"].as_str().unwrap().to_string(),
                l["t"].as_f64().unwrap(),
                l["admitted"][0][0].clone(),
            )
        })
        .collect();
    assert_eq!(
        adm,
        [
            ("engine[0]".to_string(), 0.0, serde_json::json!(0)),
            ("engine[1]".to_string(), 0.0, serde_json::json!(1)),
            ("engine[0]".to_string(), 2.0, serde_json::json!(2)),
        ]
    );
    assert_eq!(r.finished, 3);
}

#[test]
fn an_unbounded_stage_and_pool_serve_everything_in_one_iteration() {
    let c = poolrt::host::HostConfig {
        attrs: attrs(),
        stages: vec![step("engine", 1, StepConfig::default())],
        pools: vec![poolrt::host::PoolDecl {
            name: "kv".into(),
            members: vec![poolrt::host::PoolMember {
                config: poolrt::PoolConfig::default(),
                admit_via: vec![sref(0, 0)],
                handoff: None,
            }],
        }],
        routes: Vec::new(),
    };
    let w = workload((0..5).map(|i| sess(0.0, 10 + i, 1, &[])).collect());
    let (r, _, _) = run(c, &w);
    assert_eq!((r.finished, r.sim_seconds, r.pools[0].cap), (5, 0.0, None));
    assert_eq!(r.stages[0].iterations, 1);
}

#[test]
fn a_hand_built_session_the_readers_would_refuse_is_an_error_not_a_panic() {
    let w = workload(vec![sess(0.0, 4, 0, &[])]);
    let err = Host::new(vllm(10, 4, engine(10, 8, None)), &w).err();
    assert!(
        matches!(err, Some(HostError::Config(m)) if m.starts_with("session 0 of inline: prompt 4 (runs 0), output 0"))
    );
    let w = workload(vec![sess(0.0, 4, 1, &[(1, 3)])]);
    assert!(Host::new(vllm(10, 4, engine(10, 8, None)), &w).is_err());
}
