//! The host's no-progress guard (docs/HOST.md, "Progress"), through a spec compiled by
//! the JIT: the run below recomputes for exactly two iterations without progress
//! (a victim of `preempt by (-computed)` re-admitted with one unit of its own cache,
//! recomputing up to its old high-water mark), so a bound of 1 stops it with the
//! resident named, a bound of 2 lets it finish, and its own bound (the cap plus the
//! seats) never comes near. The error path is what this pins: no spec found here
//! livelocks this host (docs/RELIABILITY.md says why and what was searched). A
//! deadlock — `preempt none` with every resident waiting to grow — is the stall a
//! spec can build, and it fails the run naming the sessions it holds.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolrt::host::{Host, HostError, Report, RunOptions};
use poolrt::trace::Workload;
use poolrt::trace::synthetic::SplitMix64;

/// Two 20-token prompts in a pool of 24 units; each takes 2 tokens an iteration, so
/// at t=6 the pool is full, s0 (the most computed, 12) preempts itself, s1 finishes
/// at t=13, and s0 is re-admitted with 1 unit of its own cache: it recomputes to 5
/// and 9 (steps 13 and 14, below its high-water mark of 12), then 13 (progress).
const SPEC: &str = "
session { prompt; output; }
stage engine { step; budget 4; seats 8; chunk 2; time (1); }
pool kv { cap 24; block 1; evict lru; queue by (serial); preempt by (-computed);
          requeue keyed; admit via engine; }
";

const TRACE: &str = r#"{"arrival": 0, "prompt": 20, "output": 4}
{"arrival": 0, "prompt": 20, "output": 4}
"#;

fn replay(bound: Option<u64>) -> Result<Report, HostError> {
    replay_of(
        SPEC,
        TRACE,
        RunOptions {
            progress_bound: bound,
            ..RunOptions::default()
        },
    )
}

fn replay_of(spec: &str, trace: &str, options: RunOptions<'_>) -> Result<Report, HostError> {
    let compiled = poolc::compile(spec, &poolc::Options::default()).unwrap();
    let config =
        poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
            .unwrap();
    let workload: Workload = poolrt::trace::jsonl::read(trace.as_bytes(), "w.jsonl").unwrap();
    Host::new(config, &workload).unwrap().run(options)
}

/// Two prompts of 6 in a pool of 10 units that never preempts (R13 `preempt none`),
/// 2 tokens each an iteration: at t=0 and t=1 both take 2 (8 units allocated); at
/// t=2 s0 takes its last 2 (10) and samples its first token, s1's grow to 6 waits;
/// at t=3 s0's decode needs an 11th unit and waits too. Nothing can free room:
/// a deadlock, with the last progress (s0's token) at the end of t=2's iteration.
const DEADLOCK: &str = "
session { prompt; output; }
stage engine { step; budget 100; seats 8; chunk 2; time (1); }
pool kv { cap 10; block 1; evict lru; preempt none; admit via engine; }
";

const DEADLOCK_TRACE: &str = r#"{"arrival": 0, "prompt": 6, "output": 3}
{"arrival": 0, "prompt": 6, "output": 3}
{"arrival": 9, "prompt": 4, "output": 1}
"#;

#[test]
fn progress_a_deadlock_under_preempt_none_fails_naming_the_residents_waiting_to_grow() {
    let e = replay_of(DEADLOCK, DEADLOCK_TRACE, RunOptions::default()).unwrap_err();
    let HostError::Deadlock {
        since,
        ref sessions,
        others,
        unfinished,
    } = e
    else {
        panic!("{e}")
    };
    // s2 arrives at t=9 into the full pool and waits behind the deadlock: unfinished,
    // named after the residents.
    assert_eq!(
        (since, sessions.as_slice(), others, unfinished),
        (3.0, &[0, 1, 2][..], false, 3)
    );
    assert_eq!(
        e.to_string(),
        "no progress: deadlock since t=3 s: every resident waits for a grow that cannot \
         fit and nothing can free room (R13 `preempt none` never preempts; docs/HOST.md, \
         \"Progress\"), so 3 sessions can never finish; sessions involved: 0, 1, 2"
    );
    // The same replay compared with a recording (conform) reports them instead.
    let r = replay_of(
        DEADLOCK,
        DEADLOCK_TRACE,
        RunOptions {
            allow_unfinished: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!((r.finished, r.unfinished, r.output_tokens), (0, 3, 1));
    // With room for both sequences (cap 18 = 2 × (6 + 3)) nobody waits for long.
    let r = replay_of(
        &DEADLOCK.replace("cap 10", "cap 18"),
        DEADLOCK_TRACE,
        RunOptions::default(),
    )
    .unwrap();
    assert_eq!((r.finished, r.unfinished), (3, 0));
}

#[test]
fn progress_a_stall_past_the_bound_stops_the_run_naming_its_sessions() {
    let Err(e) = replay(Some(1)) else {
        panic!("a bound of 1 must stop the two-iteration recompute")
    };
    let HostError::NoProgress {
        iterations,
        limit,
        since,
        ref sessions,
        others,
        preemptions,
    } = e
    else {
        panic!("{e}")
    };
    assert_eq!((iterations, limit, since), (2, 1, 13.0));
    assert_eq!(
        (sessions.as_slice(), others, preemptions),
        (&[0][..], false, 0)
    );
    assert_eq!(
        e.to_string(),
        "no progress: 2 stage iterations since t=13 s produced no token, finished or \
         rejected no session and computed nothing new (the bound is 1; docs/HOST.md, \
         \"Progress\"), with 0 preemptions meanwhile; sessions involved: 0"
    );
}

#[test]
fn progress_a_stall_at_the_bound_is_not_stopped() {
    let r = replay(Some(2)).unwrap();
    assert_eq!((r.finished, r.preemptions), (2, 1));
}

#[test]
fn progress_the_hosts_own_bound_lets_the_run_finish() {
    let r = replay(None).unwrap();
    assert_eq!((r.finished, r.preemptions), (2, 1));
}

#[test]
fn progress_the_hosts_own_bound_never_stops_small_preempting_specs() {
    // Tight pools, chunked prefill and every kind of `preempt by` victim, with
    // `requeue keyed`: the runs most likely to waste work. None may stop for want of
    // progress under the host's own bound (the search of docs/RELIABILITY.md ran
    // 3,000 such cases through the CLI; this keeps 150 in the suite).
    let keys = [
        "computed",
        "-computed",
        "admitted",
        "-admitted",
        "units",
        "-units",
        "serial",
        "-serial",
        "now % 2 < 1 ? serial : -serial",
        "units - computed",
    ];
    let queues = [
        "serial",
        "-serial",
        "computed",
        "-computed",
        "prompt",
        "-prompt",
    ];
    let mut rng = SplitMix64::new(19);
    let pick =
        |rng: &mut SplitMix64, xs: &[&'static str]| xs[rng.range(0, xs.len() as u64 - 1) as usize];
    let mut preempting = 0;
    for case in 0..150 {
        let chunk = rng.range(1, 8);
        let budget = chunk * rng.range(1, 4);
        let block = rng.range(1, 4);
        let prompts: Vec<u64> = (0..rng.range(2, 6)).map(|_| rng.range(4, 40)).collect();
        let largest = *prompts.iter().max().unwrap();
        let cap = rng.range(largest + 4, prompts.iter().sum::<u64>() + 8);
        let spec = format!(
            "session {{ prompt; output; }}
             stage engine {{ step; budget {budget}; seats {}; chunk {chunk}; time (1); }}
             pool kv {{ cap {cap}; block {block}; evict lru; queue by ({});
                        preempt by ({}, {}); requeue keyed; admit via engine; }}",
            rng.range(2, 8),
            pick(&mut rng, &queues),
            pick(&mut rng, &keys),
            pick(&mut rng, &keys),
        );
        let mut trace = String::new();
        let mut t = 0;
        for p in &prompts {
            t += rng.range(0, 2);
            trace += &format!(
                "{{\"arrival\": {t}, \"prompt\": {p}, \"output\": {}}}\n",
                rng.range(1, 6)
            );
        }
        let compiled = poolc::compile(&spec, &poolc::Options::default()).unwrap();
        let config =
            poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
                .unwrap();
        let workload = poolrt::trace::jsonl::read(trace.as_bytes(), "w.jsonl").unwrap();
        let host = Host::new(config, &workload).unwrap();
        match host.run(RunOptions::default()) {
            Ok(r) => preempting += u32::from(r.preemptions > 0),
            Err(e) => panic!("case {case}: {e}\n{spec}\n{trace}"),
        }
    }
    assert!(preempting >= 30, "only {preempting} of 150 cases preempt");
}
