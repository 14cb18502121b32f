//! The host's iteration loop allocates nothing per admission once warm: a counting
//! global allocator (counting only on the thread that asks) watches a replay between
//! its 200th and its last-but-200 finished session, switched on and off from the
//! progress callback. Every session arrives at time 0, so the content chains (built
//! once per session, at arrival) are made before counting starts, and the latency
//! samples are reserved; what is left is the engine's amortised vector growth, which
//! doubles a bounded number of times however many admissions there are.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolrt::host::{
    AttrSpec, Host, HostConfig, IterTime, PoolDecl, PoolMember, RunOptions, StageDecl, StageKind,
    StepConfig,
};
use poolrt::{Limit, PoolConfig, PoolRef, Preempt, StageRef, Units};

mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn config() -> HostConfig {
    HostConfig {
        attrs: vec![AttrSpec::new("serial", None), AttrSpec::new("prompt", None)],
        stages: vec![StageDecl {
            name: "engine".into(),
            count: 1,
            kind: StageKind::Step(StepConfig {
                budget: Limit::Finite(Units(2048)),
                seats: Limit::Finite(Units(32)),
                chunk: Limit::Finite(Units(512)),
                exclusive_prefill: false,
                time: IterTime::Fixed(0.01),
            }),
        }],
        pools: vec![PoolDecl {
            name: "kv".into(),
            members: vec![PoolMember {
                config: PoolConfig {
                    me: PoolRef::default(),
                    cap: Limit::Finite(Units(1024 * 16)),
                    block: Units(16),
                    preempt: Preempt::Lifo,
                    ..PoolConfig::default()
                },
                admit_via: vec![StageRef::default()],
                handoff: None,
            }],
        }],
        routes: Vec::new(),
    }
}

/// Allocations while sessions `from..to` finished, and admissions in the replay.
fn window(n: usize, from: u64, to: u64) -> (u64, u64) {
    let mut w = poolrt::trace::synthetic(n, 5);
    for s in &mut w.sessions {
        s.arrival = 0.0;
    }
    let host = Host::new(config(), &w).unwrap();
    let mut progress = |done: u64, _total: u64| {
        if done == from {
            counting_alloc::start();
        }
        if done == to {
            counting_alloc::stop();
        }
    };
    let r = host
        .run(RunOptions {
            progress: Some(&mut progress),
            ..RunOptions::default()
        })
        .unwrap();
    counting_alloc::stop();
    assert_eq!(r.finished, n as u64);
    (counting_alloc::counted(), r.admissions)
}

#[test]
fn a_warm_replay_allocates_nothing_per_admission() {
    let (small, adm_small) = window(600, 200, 400);
    let (large, adm_large) = window(2400, 200, 2200);
    // Ten times the sessions in the window, yet only a few more allocations: the
    // host's loop allocates nothing, and what is left is amortised growth (the
    // engine's recycled block lists reaching the size of the longest hold, and its
    // free-slot lists), which doubles a bounded number of times.
    assert!(adm_large > 3 * adm_small);
    assert!(
        small * 20 < adm_small && large * 50 < adm_large,
        "{small} allocations for {adm_small} admissions, {large} for {adm_large}"
    );
}
