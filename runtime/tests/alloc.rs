//! The hot path allocates nothing once warmed up: a counting global allocator (only
//! counting on the thread that asks) watches enqueue, settle (admissions with hits and
//! evictions), grow, set computed and release, over fifo and keyed queues and lru and
//! keyed eviction. Headers are built before counting: making them is the host's
//! allocation, not the engine's.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod common;
mod counting_alloc;

use common::*;
use counting_alloc::count;
use poolrt::{Event, EvictPolicy, Header, Limit, Pool, PoolConfig, Preempt, QueuePolicy, Units};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// Session `i`'s hold: a shared prefix (run 1, or runs 1 then 2) and its own tail.
fn header(i: u64) -> Header {
    let tail = (100 + i, 6);
    if i.is_multiple_of(2) {
        hdr(26, &[(1, 8), tail, (7000 + i, 12)])
    } else {
        hdr(26, &[(1, 8), (2, 4), tail, (8000 + i, 8)])
    }
}

/// Runs `rounds` cycles of enqueue, settle, compute, grow, release, settle with a
/// few holds alive at once, and returns the allocations made inside engine calls.
fn cycles(pool: &mut Pool, env: &mut TestEnv, from: u64, rounds: u64) -> u64 {
    let mut allocs = 0;
    let mut t = from as f64;
    for i in from..from + rounds {
        env.set(i, &[(i % 3) as f64, i as f64]);
        let h = header(i);
        t += 1.0;
        let (_, n) = count(|| {
            pool.enqueue(t, s(i), h, env).expect("enqueue");
            pool.settle(t, env).expect("settle");
            if pool.hold(s(i)).is_some() {
                pool.set_computed(s(i), Units(20)).expect("compute");
                pool.grow(t, s(i), Units(4), env).expect("grow");
            }
            // Keep two sessions in flight: release the one from two rounds ago.
            if i >= 2 {
                let old = s(i - 2);
                if pool.hold(old).is_some() {
                    pool.release(t, old, env).expect("release");
                }
            }
            pool.settle(t, env).expect("settle");
        });
        allocs += n;
        pool.check().expect("invariants");
    }
    allocs
}

fn steady_state(config: PoolConfig) {
    // First make sure these cycles drive the interesting paths at all.
    let mut logged = Pool::new(config.clone()).expect("valid config");
    logged.set_logging(true);
    cycles(&mut logged, &mut TestEnv::default(), 0, 100);
    let log = logged.take_log();
    let hits = log
        .iter()
        .filter(|r| matches!(r.event, Event::Admit { hit, .. } if hit.0 > 0))
        .count();
    let evictions = log
        .iter()
        .filter(|r| matches!(r.event, Event::Evict { .. }))
        .count();
    assert!(
        hits > 20 && evictions > 20,
        "{hits} hits, {evictions} evictions with {config:?}"
    );

    let mut pool = Pool::new(config).expect("valid config");
    let mut env = TestEnv::default();
    cycles(&mut pool, &mut env, 0, 400);
    let allocs = cycles(&mut pool, &mut env, 400, 400);
    assert_eq!(
        allocs, 0,
        "the engine allocated {allocs} times after warm-up"
    );
}

#[test]
fn admissions_allocate_nothing_once_warm() {
    let cap = Limit::Finite(Units(96));
    // Runs in one test, one after the other, so that nothing else counts.
    steady_state(PoolConfig {
        cap,
        block: Units(4),
        ..PoolConfig::default()
    });
    steady_state(PoolConfig {
        cap,
        block: Units(4),
        queue: queue_by_priority(),
        evict: evict_by_priority(),
        spill: Some(spill_policy(false)),
        ..PoolConfig::default()
    });
    steady_state(PoolConfig {
        cap,
        block: Units(1),
        queue: queue_longest_prefix(),
        evict: evict_by_waiting(),
        preempt: Preempt::Lifo,
        ..PoolConfig::default()
    });
    steady_state(PoolConfig {
        cap: Limit::Finite(Units(100)),
        block: Units(2),
        queue: QueuePolicy::Fifo,
        evict: EvictPolicy::Lru,
        ..PoolConfig::default()
    });
}
