//! One scenario per rule of LANGUAGE.md §3 (R1–R14, with S2/S3 and E5 where they
//! meet the engine), each named after the rule and with its expected values worked
//! out by hand in comments. Every operation goes through `World`, which checks R1 and
//! the engine's invariants after it. No timing, no ignored tests.
//! This file is long because it is one table of rules: each scenario is short and
//! stands alone, and splitting them by rule would scatter the shared `World` driver.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod common;

use common::*;
use poolrt::{
    Admission, BlockKey, Enqueued, EntryId, Event, EvictPolicy, Grown, Limit, Notice, Pool,
    PoolConfig, Preempt, QueueIndex, QueuePolicy, QueueTie, Requeue, RunId, SessionId, Units,
};

/// A pool, its host and the clock; every operation checks R1 and the invariants.
struct World {
    pool: Pool,
    env: TestEnv,
    now: f64,
}

impl World {
    fn new(cap: u64, block: u64) -> World {
        World::with(PoolConfig {
            block: Units(block),
            ..capped(cap)
        })
    }

    fn with(config: PoolConfig) -> World {
        let mut pool = Pool::new(config).expect("valid test config");
        pool.set_logging(true);
        World {
            pool,
            env: TestEnv::default(),
            now: 0.0,
        }
    }

    fn at(&mut self, now: f64) -> &mut World {
        self.now = now;
        self
    }

    fn checked(&self) {
        self.pool.check().unwrap_or_else(|e| panic!("{e}"));
    }

    /// Enqueue, then settle (R9).
    fn enqueue(&mut self, session: u64, header: poolrt::Header) -> Enqueued {
        let r = self.enqueue_only(session, header);
        self.settle();
        r
    }

    fn enqueue_only(&mut self, session: u64, header: poolrt::Header) -> Enqueued {
        if !self.env.attrs.contains_key(&s(session)) {
            self.env.set(session, &[0.0, session as f64]);
        }
        let r = self
            .pool
            .enqueue(self.now, s(session), header, &self.env)
            .unwrap();
        self.checked();
        r
    }

    fn settle(&mut self) {
        self.pool.settle(self.now, &self.env).unwrap();
        self.checked();
    }

    fn compute(&mut self, session: u64, units: u64) {
        self.pool.set_computed(s(session), Units(units)).unwrap();
        self.checked();
    }

    /// Release, then settle.
    fn release(&mut self, session: u64) -> Units {
        let r = self.pool.release(self.now, s(session), &self.env).unwrap();
        self.checked();
        self.settle();
        r
    }

    /// A hold that is admitted at once, computes all its units and releases (R14):
    /// its full blocks within the chain become one entry, released now.
    fn cache(&mut self, session: u64, header: poolrt::Header) -> Units {
        let units = header.units.0;
        self.enqueue(session, header);
        self.compute(session, units);
        self.release(session)
    }

    fn grow(&mut self, session: u64, by: u64) -> Grown {
        let r = self
            .pool
            .grow(self.now, s(session), Units(by), &self.env)
            .unwrap();
        self.checked();
        r
    }

    fn events(&mut self) -> Vec<Event> {
        self.pool.take_log().into_iter().map(|r| r.event).collect()
    }

    /// Admissions in the log since the last call, as (session, hit units).
    fn admits(&mut self) -> Vec<(u64, u64)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Admit { session, hit, .. } => Some((session.0, hit.0)),
                _ => None,
            })
            .collect()
    }

    fn evicted_keys(&mut self) -> Vec<(u64, BlockKey)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Evict { entry, key, .. } => Some((entry.0, key)),
                _ => None,
            })
            .collect()
    }

    fn units(&self) -> (u64, u64) {
        (self.pool.allocated().0, self.pool.cached().0)
    }

    fn entry_keys(&self) -> Vec<(u64, Vec<BlockKey>)> {
        self.pool
            .entries()
            .into_iter()
            .map(|e| (e.id.0, e.keys))
            .collect()
    }
}

/// A pool of `cap` units, otherwise the default (block 1, lru, fifo, no preemption).
fn capped(cap: u64) -> PoolConfig {
    PoolConfig {
        cap: Limit::Finite(Units(cap)),
        ..PoolConfig::default()
    }
}

fn key(run: u64, offset: u64) -> BlockKey {
    BlockKey {
        run: RunId(run),
        offset,
    }
}

fn keys(run: u64, offsets: &[u64]) -> Vec<BlockKey> {
    offsets.iter().map(|&o| key(run, o)).collect()
}

// ----- R1 -------------------------------------------------------------------------

#[test]
fn r1_allocated_plus_cached_never_exceeds_cap() {
    // cap 10, block 3: cap_blocks = floor(10/3) = 3, so at most 9 units are used.
    let mut w = World::new(10, 3);
    w.enqueue(1, hdr(7, &[(1, 9)])); // 3 blocks = 9 units
    assert_eq!(w.units(), (9, 0));
    w.compute(1, 7);
    // Full computed blocks: floor(7/3) = 2 → 6 units cached, the third block freed.
    assert_eq!(w.release(1), Units(6));
    assert_eq!(w.units(), (0, 6));
    // 2 blocks needed; 0 + 6 + 6 > 9 → one eviction (3 units), then 6 + 3 = 9.
    w.enqueue(2, hdr(4, &[(2, 4)]));
    assert_eq!(w.units(), (6, 3));
    for r in w.pool.log() {
        assert!(r.allocated.0 + r.cached.0 <= 10, "R1 broken at {r:?}");
    }
}

// ----- R2 -------------------------------------------------------------------------

#[test]
fn r2_block_identity_is_its_last_unit() {
    // Block 4. A = runs 1 (6 units) then 2 (10 units); B = run 1 then run 3. Their
    // units 0..6 are the same content, but block 1 (units 4..8) ends at unit 7, in
    // run 2 for A and run 3 for B: different identities. Only block 0 is shared.
    let mut w = World::new(64, 4);
    w.cache(1, hdr(16, &[(1, 6), (2, 10)]));
    assert_eq!(
        w.entry_keys(),
        vec![(0, vec![key(1, 3), key(2, 1), key(2, 5), key(2, 9)])]
    );
    w.events();
    w.enqueue(2, hdr(16, &[(1, 6), (3, 10)]));
    assert_eq!(w.admits(), vec![(2, 4)]);
}

#[test]
fn r2_units_beyond_the_chain_are_never_cached() {
    // Block 4, chain of 6 units, 12 units held and computed: only block 0 is full
    // and known (block 1 ends at unit 7 > 6), so 4 units are cached.
    let mut w = World::new(64, 4);
    w.enqueue(1, hdr(12, &[(1, 6)]));
    w.compute(1, 12);
    assert_eq!(w.release(1), Units(4));
    assert_eq!(w.entry_keys(), vec![(0, vec![key(1, 3)])]);
}

#[test]
fn r2_a_run_met_at_two_alignments_keeps_both_identities() {
    // Block 4. A = run 9 (16 units) from unit 0: its blocks end at offsets 3, 7, 11
    // and 15 of run 9. B = run 8 (2 units), then run 9 from unit 2: its blocks end at
    // offsets 1, 5, 9 and 13, out of step with A's (the trace readers refuse a run at
    // two places; R2 does not forbid an embedder). Both are cached whole, each later
    // hold of the same chain hits its own four blocks, and eviction finds them all.
    let a = || hdr(16, &[(9, 16)]);
    let b = || hdr(18, &[(8, 2), (9, 16)]);
    let mut w = World::new(64, 4);
    w.cache(1, a());
    w.cache(2, b());
    assert_eq!(
        w.entry_keys(),
        vec![(0, keys(9, &[3, 7, 11, 15])), (1, keys(9, &[1, 5, 9, 13]))]
    );
    w.events();
    w.enqueue(3, b());
    w.enqueue(4, a());
    assert_eq!(w.admits(), vec![(3, 16), (4, 16)]);
    // A hold of the whole pool evicts both entries, tail first, oldest first (lru).
    let mut w = World::new(64, 4);
    w.cache(1, a());
    w.cache(2, b());
    w.events();
    w.enqueue(5, hdr(64, &[(7, 64)]));
    let evicted: Vec<_> = [(0, [15, 11, 7, 3]), (1, [13, 9, 5, 1])]
        .iter()
        .flat_map(|&(entry, offsets)| offsets.map(|o| (entry, key(9, o))))
        .collect();
    assert_eq!(w.evicted_keys(), evicted);
}

// ----- R3 -------------------------------------------------------------------------

#[test]
fn r3_a_release_makes_one_entry_in_chain_order() {
    // Block 2, 8 computed units: one entry with 4 blocks, head first.
    let mut w = World::new(64, 2);
    w.cache(1, hdr(8, &[(5, 8)]));
    assert_eq!(w.entry_keys(), vec![(0, keys(5, &[1, 3, 5, 7]))]);
}

// ----- R4 -------------------------------------------------------------------------

#[test]
fn r4_computed_is_the_hit_in_full_blocks() {
    // Block 4. A caches 8 units of run 1 (len 10). B's chain is run 1 (10 units):
    // blocks 0 and 1 are cached (hit 8), block 2 (units 8..12) is beyond the chain.
    let mut w = World::new(64, 4);
    w.cache(1, hdr(10, &[(1, 10)]));
    w.events();
    w.enqueue(2, hdr(10, &[(1, 10)]));
    assert_eq!(w.admits(), vec![(2, 8)]);
    assert_eq!(w.pool.hold(s(2)).unwrap().computed, Units(8));
}

#[test]
fn r4_max_hit_caps_the_hit_last_token_rule() {
    // Block 4, 8 units cached; a hold of the same 8 units with max_hit 7 (sequence
    // − 1) hits floor(7/4) = 1 block and recomputes the last one.
    let mut w = World::new(64, 4);
    w.cache(1, hdr(8, &[(1, 8)]));
    w.events();
    w.enqueue(2, hdr(8, &[(1, 8)]).with_max_hit(Units(7)));
    assert_eq!(w.admits(), vec![(2, 4)]);
}

// ----- R5 -------------------------------------------------------------------------

#[test]
fn r5_rejects_hold_that_can_never_fit() {
    // cap 70, block 16: 4 blocks (64 units) is the most any hold can get.
    let mut w = World::new(70, 16);
    // units 10 but reserve 70 → ceil(70/16) = 5 blocks > 4: rejected.
    assert_eq!(
        w.enqueue(1, hdr(10, &[(1, 10)]).with_reserve(Units(70))),
        Enqueued::Rejected
    );
    // units 65 → 5 blocks > 4: rejected although 65 < 70.
    assert_eq!(w.enqueue(2, hdr(65, &[(2, 65)])), Enqueued::Rejected);
    // 64 → 4 blocks: fits.
    assert_eq!(w.enqueue(3, hdr(64, &[(3, 64)])), Enqueued::Queued);
    assert_eq!(
        w.events(),
        vec![
            Event::Reject { session: s(1) },
            Event::Reject { session: s(2) },
            Event::Enqueue { session: s(3) },
            Event::Admit {
                session: s(3),
                hit: Units(0),
                units: Units(64)
            },
        ]
    );
    assert_eq!(w.pool.queued(), 0);
}

#[test]
fn r5_rejected_hold_does_not_block_the_queue() {
    // cap 8, block 1: A holds 8; B waits; C can never fit and is rejected without
    // touching the queue; when A releases, B is admitted.
    let mut w = World::new(8, 1);
    w.enqueue(1, hdr(8, &[(1, 8)]));
    w.enqueue(2, hdr(3, &[(2, 3)]));
    assert_eq!(w.enqueue(3, hdr(9, &[(3, 9)])), Enqueued::Rejected);
    assert_eq!(w.pool.queued(), 1);
    w.events();
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 0)]);
}

// ----- R6 -------------------------------------------------------------------------

#[test]
fn r6_fit_judged_on_reserve() {
    // cap 8, block 1. A holds 5. B asks units 2, reserve 4: need 4, 5 + 4 = 9 > 8,
    // so B waits although its 2 units would fit. When A releases, B is admitted and
    // allocates only its 2 units.
    let mut w = World::new(8, 1);
    w.enqueue(1, hdr(5, &[(1, 5)]));
    w.enqueue(2, hdr(2, &[(2, 4)]).with_reserve(Units(4)));
    assert_eq!(w.pool.queued(), 1);
    assert_eq!(w.units(), (5, 0));
    w.events();
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 0)]);
    assert_eq!(w.units(), (2, 0));
}

#[test]
fn r6_cached_entries_never_block_a_fit() {
    // cap 8, block 1: A caches 8 units. B needs 3 unrelated units: 0 + 8 + 3 > 8,
    // so 3 blocks are evicted (tail first), leaving 5 cached.
    let mut w = World::new(8, 1);
    w.cache(1, hdr(8, &[(1, 8)]));
    w.events();
    w.enqueue(2, hdr(3, &[(2, 3)]));
    assert_eq!(w.units(), (3, 5));
    assert_eq!(
        w.evicted_keys(),
        vec![(0, key(1, 7)), (0, key(1, 6)), (0, key(1, 5))]
    );
}

#[test]
fn r6_hit_blocks_are_claimed_before_eviction() {
    // cap 6, block 1. A caches run 1 (4 units) as e0 at t=0; C caches run 7
    // (2 units) as e1 at t=1. B = run 1 then run 5 (2 units), 6 units: it hits e0's
    // 4 blocks (claimed: e0 disappears), then needs 2 new blocks: 4 + 2 + 2 > 6 →
    // 2 evictions. lru would take e0 first, but e0 is claimed, so e1 goes, tail first.
    let mut w = World::new(6, 1);
    w.cache(1, hdr(4, &[(1, 4)]));
    w.at(1.0);
    w.cache(3, hdr(2, &[(7, 2)]));
    w.events();
    w.enqueue(2, hdr(6, &[(1, 4), (5, 2)]));
    let ev = w.events();
    assert_eq!(
        ev[1..],
        [
            Event::Evict {
                entry: EntryId(1),
                session: s(3),
                key: key(7, 1),
                units: Units(1)
            },
            Event::Evict {
                entry: EntryId(1),
                session: s(3),
                key: key(7, 0),
                units: Units(1)
            },
            Event::Admit {
                session: s(2),
                hit: Units(4),
                units: Units(6)
            },
        ]
    );
    assert_eq!(w.units(), (6, 0));
}

// ----- R7 -------------------------------------------------------------------------

#[test]
fn r7_shared_block_counted_once() {
    // Block 4, cap 32. A holds run 1 (8 units, 2 blocks). B = run 1 then run 2
    // (4 units): hits A's 2 held blocks (shared, not counted again) and allocates
    // 1 block: allocated 8 + 4 = 12, not 20.
    let mut w = World::new(32, 4);
    w.enqueue(1, hdr(8, &[(1, 8)]));
    w.compute(1, 8);
    w.enqueue(2, hdr(12, &[(1, 8), (2, 4)]));
    assert_eq!(w.units(), (12, 0));
    // A releases: both its blocks are still held by B, nothing is cached.
    assert_eq!(w.release(1), Units(0));
    assert_eq!(w.units(), (12, 0));
    // B releases with 12 computed: its 3 blocks become one entry.
    w.compute(2, 12);
    assert_eq!(w.release(2), Units(12));
    assert_eq!(w.units(), (0, 12));
}

#[test]
fn r7_blocks_are_hittable_from_allocation() {
    // A and B with the same 8-unit prompt, admitted in the same settle: B hits A's
    // blocks although A has computed nothing yet (vLLM registers at allocation).
    let mut w = World::new(32, 4);
    w.enqueue_only(1, hdr(8, &[(1, 8)]));
    w.enqueue_only(2, hdr(8, &[(1, 8)]));
    w.settle();
    assert_eq!(w.admits(), vec![(1, 0), (2, 8)]);
    assert_eq!(w.units(), (8, 0));
}

#[test]
fn r7_hit_takes_earliest_registered_copy() {
    // Block 4. A holds run 1 (8 units): copies a0 (1+3) and a1 (1+7). B, same chain
    // with max_hit 4, hits a0 and allocates its own copy b1 of 1+7 (registered
    // second). A releases: a0 is still held by B; a1 becomes e0 = [1+7]. B releases:
    // e1 = [1+3 (a0), 1+7 (b1)]. D hits 1+3 from e1's head, then 1+7 from the
    // earliest registered copy, a1 in e0 — so e0 disappears and e1 keeps b1.
    let mut w = World::new(64, 4);
    w.enqueue(1, hdr(8, &[(1, 8)]));
    w.enqueue(2, hdr(8, &[(1, 8)]).with_max_hit(Units(4)));
    assert_eq!(w.units(), (12, 0));
    w.compute(1, 8);
    w.compute(2, 8);
    w.release(1);
    w.release(2);
    assert_eq!(
        w.entry_keys(),
        vec![(0, vec![key(1, 7)]), (1, vec![key(1, 3), key(1, 7)])]
    );
    w.events();
    w.enqueue(4, hdr(8, &[(1, 8)]));
    assert_eq!(w.admits(), vec![(4, 8)]);
    assert_eq!(w.entry_keys(), vec![(1, vec![key(1, 7)])]);
}

// ----- R8 -------------------------------------------------------------------------

#[test]
fn r8_head_of_line_blocks() {
    // cap 4, block 1, fifo. A holds 3. B needs 2 and waits; C needs 1 and would fit,
    // but only the selected hold (B) is tried.
    let mut w = World::new(4, 1);
    w.enqueue(1, hdr(3, &[(1, 3)]));
    w.enqueue(2, hdr(2, &[(2, 2)]));
    w.enqueue(3, hdr(1, &[(3, 1)]));
    assert_eq!(w.pool.queued(), 2);
    assert_eq!(w.units(), (3, 0));
    w.events();
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 0), (3, 0)]);
}

#[test]
fn r8_keyed_queue_takes_least_key_ties_by_enqueue_order() {
    // queue by (priority, serial) with serial = attribute 1. A fills the pool; B, C,
    // D, E wait with priorities 2, 1, 1, 0 and serials 9, 8, 7, 6. The keys say E
    // (0), then D (1, 7) before C (1, 8), then B (2, 9).
    let mut w = World::with(PoolConfig {
        queue: queue_by_priority(),
        ..capped(1)
    });
    w.enqueue(1, hdr(1, &[(1, 1)]));
    for (id, prio, serial) in [(2, 2.0, 9.0), (3, 1.0, 8.0), (4, 1.0, 7.0), (5, 0.0, 6.0)] {
        w.env.set(id, &[prio, serial]);
        w.enqueue(id, hdr(1, &[(id, 1)]));
    }
    w.events();
    for id in [1, 5, 4, 3] {
        w.release(id);
    }
    assert_eq!(w.admits(), vec![(5, 0), (4, 0), (3, 0), (2, 0)]);
}

#[test]
fn r21_equal_keys_go_to_the_least_id_as_text() {
    // queue by (priority, serial, id): everyone has priority 1 and serial 0, so the
    // ids decide, as text: "10" < "2" < "3" < "9" (sessions the host does not name
    // are their numbers in decimal), whatever the enqueue order (9, 2, 10, 3).
    let mut w = World::with(PoolConfig {
        queue: queue_by_priority(),
        queue_tie: QueueTie::Id,
        ..capped(1)
    });
    w.enqueue(1, hdr(1, &[(1, 1)]));
    for id in [9, 2, 10, 3] {
        w.env.set(id, &[1.0, 0.0]);
        w.enqueue(id, hdr(1, &[(id, 1)]));
    }
    w.events();
    for id in [1, 10, 2, 3] {
        w.release(id);
    }
    assert_eq!(w.admits(), vec![(10, 0), (2, 0), (3, 0), (9, 0)]);
}

#[test]
fn r21_ids_only_break_ties_and_named_sessions_compare_by_name() {
    // Keys first: session 5 (priority 0) goes before every priority-1 session. Among
    // those, the host's names: "r-a" (7) < "r-b" (4) < "r-c" (6); and one without a
    // name, 8, is "8", before every "r-…" (b'8' < b'r').
    let mut w = World::with(PoolConfig {
        queue: queue_by_priority(),
        queue_tie: QueueTie::Id,
        ..capped(1)
    });
    w.enqueue(1, hdr(1, &[(1, 1)]));
    for (id, name) in [(4, "r-b"), (6, "r-c"), (7, "r-a")] {
        w.env.names.insert(SessionId(id), name.to_string());
    }
    for (id, prio) in [(6, 1.0), (4, 1.0), (5, 0.0), (7, 1.0), (8, 1.0)] {
        w.env.set(id, &[prio, 0.0]);
        w.enqueue(id, hdr(1, &[(id, 1)]));
    }
    w.events();
    for id in [1, 5, 8, 7, 4] {
        w.release(id);
    }
    assert_eq!(w.admits(), vec![(5, 0), (8, 0), (7, 0), (4, 0), (6, 0)]);
}

#[test]
fn r8_equal_keys_fall_back_to_enqueue_order() {
    // Same priority and serial for everyone: enqueue order decides.
    let mut w = World::with(PoolConfig {
        queue: queue_by_priority(),
        ..capped(1)
    });
    for id in 1..=4 {
        w.env.set(id, &[3.0, 0.0]);
        w.enqueue(id, hdr(1, &[(id, 1)]));
    }
    w.events();
    for id in 1..=3 {
        w.release(id);
    }
    assert_eq!(w.admits(), vec![(2, 0), (3, 0), (4, 0)]);
}

#[test]
fn r8_e5_nan_key_sorts_after_every_number() {
    // queue by (priority == 1 ? NaN : priority): priorities 1 (NaN), 5, 2 → 2, 5,
    // then the NaN.
    let mut w = World::with(PoolConfig {
        queue: queue_nan_last(),
        ..capped(1)
    });
    w.enqueue(9, hdr(1, &[(9, 1)]));
    for (id, prio) in [(1, 1.0), (2, 5.0), (3, 2.0)] {
        w.env.set(id, &[prio, 0.0]);
        w.enqueue(id, hdr(1, &[(id, 1)]));
    }
    w.events();
    for id in [9, 3, 2] {
        w.release(id);
    }
    assert_eq!(w.admits(), vec![(3, 0), (2, 0), (1, 0)]);
}

#[test]
fn r8_keys_are_evaluated_afresh_at_each_attempt() {
    // queue by (priority, serial): B (priority 1) and C (priority 2) wait. Before
    // the next attempt C's priority drops to 0, so C goes first. The keys read only
    // attributes, so the pool keeps them in its ordered index and the host says when
    // an attribute changed; with the scan nobody needs to say so.
    for index in [QueueIndex::Auto, QueueIndex::Scan] {
        let mut w = World::with(PoolConfig {
            queue: queue_by_priority(),
            queue_index: index,
            ..capped(1)
        });
        assert_eq!(w.pool.queue_is_indexed(), index == QueueIndex::Auto);
        w.enqueue(1, hdr(1, &[(1, 1)]));
        w.env.set(2, &[1.0, 2.0]);
        w.enqueue(2, hdr(1, &[(2, 1)]));
        w.env.set(3, &[2.0, 3.0]);
        w.enqueue(3, hdr(1, &[(3, 1)]));
        w.env.set(3, &[0.0, 3.0]);
        if index == QueueIndex::Auto {
            w.pool.attrs_changed(s(3), &w.env);
        }
        w.events();
        w.release(1);
        assert_eq!(w.admits(), vec![(3, 0)]);
    }
}

#[test]
fn r8_keys_reading_the_moment_are_never_indexed() {
    // `waited`, `computed` and queries change while a hold waits: always scanned.
    for queue in [
        queue_aged(),
        queue_longest_prefix(),
        queue_fits_first(Default::default()),
    ] {
        let w = World::with(PoolConfig {
            queue,
            ..PoolConfig::default()
        });
        assert!(!w.pool.queue_is_indexed());
    }
}

#[test]
fn r8_waited_and_now_age_a_hold_without_a_timer() {
    // queue by (waited >= 3 ? 0 : 1, priority). B (priority 0) and C (priority 5)
    // are enqueued at t=0. At t=2 nobody has aged: B (1, 0) before C (1, 5). D
    // (priority 0) is enqueued at t=2; at t=4 C has waited 4 ≥ 3 (key 0) and D only
    // 2 (key 1): C goes before D.
    let mut w = World::with(PoolConfig {
        queue: queue_aged(),
        ..capped(1)
    });
    w.enqueue(1, hdr(1, &[(1, 1)]));
    w.env.set(2, &[0.0, 0.0]);
    w.enqueue(2, hdr(1, &[(2, 1)]));
    w.env.set(3, &[5.0, 0.0]);
    w.enqueue(3, hdr(1, &[(3, 1)]));
    w.at(2.0);
    w.events();
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 0)]);
    w.env.set(4, &[0.0, 0.0]);
    w.enqueue(4, hdr(1, &[(4, 1)]));
    w.at(4.0);
    w.release(2);
    assert_eq!(w.admits(), vec![(3, 0)]);
}

#[test]
fn r8_computed_is_read_at_the_attempt() {
    // queue by (-computed, enqueued) (SGLang's longest prefix match). cap 12, block
    // 1. A holds run 1 (4 units, computed), H holds 8 unrelated units: full. B (2
    // unrelated units) then C (run 1 then 2 units of its own) wait. A releases: run 1
    // is cached (8 + 4 = 12, still full). H releases: B's key is -0, C's is -4 (it
    // would hit 4), so C goes first although B was enqueued first.
    let mut w = World::with(PoolConfig {
        queue: queue_longest_prefix(),
        ..capped(12)
    });
    w.enqueue(1, hdr(4, &[(1, 4)]));
    w.compute(1, 4);
    w.enqueue(9, hdr(8, &[(9, 8)]));
    w.enqueue(2, hdr(2, &[(2, 2)]));
    w.enqueue(3, hdr(6, &[(1, 4), (3, 2)]));
    w.release(1); // caches run 1 (4 units); 8 + 4 = 12: B (2) and C (6) wait
    w.events();
    w.release(9);
    // C hits 4 → key -4 < B's -0: C first, then B.
    assert_eq!(w.admits(), vec![(3, 4), (2, 0)]);
}

#[test]
fn r8_query_on_the_pool_itself_is_answered_by_the_pool() {
    // queue by (units > free(me) ? 1 : 0, serial), cap 10, block 1. A (serial 1,
    // 7 units), B (serial 2, 5 units) and C (serial 3, 2 units) are enqueued before
    // one settle. The query is re-read at every attempt.
    let me = poolrt::PoolRef { pool: 0, member: 0 };
    let mut w = World::with(PoolConfig {
        queue: queue_fits_first(me),
        ..capped(10)
    });
    w.enqueue_only(1, hdr(7, &[(1, 7)]));
    w.enqueue_only(2, hdr(5, &[(2, 5)]));
    w.enqueue_only(3, hdr(2, &[(3, 2)]));
    w.settle();
    // First attempt: free = 10, every key 0 → serial: A (1) admitted. Second: free 3,
    // B key 1, C key 0 → C. Third: free 1, B blocked.
    assert_eq!(w.admits(), vec![(1, 0), (3, 0)]);
    assert_eq!(w.pool.queued(), 1);
}

#[test]
fn r8_preempted_reenter_at_head_most_recent_first() {
    // cap 6, block 1, preempt lifo, every holder a resident. A, B, C hold 2 each
    // (admitted in that order); D (1 unit) waits. A grows by 3: no room, victim C
    // (most recent) → then 4 + 3 > 6, victim B → 2 + 3 ≤ 6, A grows. Preempted stack:
    // B on top (most recent), then C; both ahead of D. Each had computed 2, so each
    // cached an entry: C's (older) and B's. A's grow needs 3 new blocks with 4
    // cached: evicts C's 2 blocks (lru, tail first), then B's tail.
    let mut w = World::with(PoolConfig {
        preempt: Preempt::Lifo,
        ..capped(6)
    });
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
        w.compute(id, 2);
    }
    w.enqueue(4, hdr(1, &[(4, 1)]));
    w.events();
    assert_eq!(w.grow(1, 3), Grown::Grown);
    assert_eq!(
        w.pool.notices(),
        &[
            Notice::Preempted { session: s(3) },
            Notice::Preempted { session: s(2) }
        ]
    );
    assert_eq!(
        w.evicted_keys(),
        vec![(0, key(3, 1)), (0, key(3, 0)), (1, key(2, 1))]
    );
    assert_eq!(w.units(), (5, 1));
    // A releases (computed 2: its first 2 blocks cached, 3 freed). Settle: B first
    // (hits its remaining head block), then C (its entry is gone), then D.
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 1), (3, 0), (4, 0)]);
}

// ----- R9 -------------------------------------------------------------------------

#[test]
fn r9_settle_admits_until_the_selected_hold_does_not_fit() {
    // cap 5, block 1: three holds of 2 enqueued without settling; one settle admits
    // two (4 units) and stops at the third.
    let mut w = World::new(5, 1);
    for id in 1..=3 {
        w.enqueue_only(id, hdr(2, &[(id, 2)]));
    }
    assert_eq!(w.pool.queued(), 3);
    w.settle();
    assert_eq!(w.admits(), vec![(1, 0), (2, 0)]);
    assert_eq!(w.pool.queued(), 1);
}

#[test]
fn r9_notices_report_the_admissions_of_one_settle() {
    let mut w = World::new(5, 1);
    w.enqueue_only(1, hdr(2, &[(1, 2)]));
    w.enqueue_only(2, hdr(2, &[(2, 2)]));
    w.pool.settle(0.0, &w.env).unwrap();
    assert_eq!(
        w.pool.notices(),
        &[
            Notice::Admitted {
                session: s(1),
                hit: Units(0),
                units: Units(2)
            },
            Notice::Admitted {
                session: s(2),
                hit: Units(0),
                units: Units(2)
            }
        ]
    );
}

// ----- R10 ------------------------------------------------------------------------

#[test]
fn r10_evicts_tail_block_first() {
    // Block 4, cap 16 (4 blocks): A caches run 1 (16 units) as [1+3, 1+7, 1+11,
    // 1+15]. B needs 8 unrelated units: two Evict moments, each taking e0's tail.
    let mut w = World::new(16, 4);
    w.cache(1, hdr(16, &[(1, 16)]));
    w.events();
    w.enqueue(2, hdr(8, &[(2, 8)]));
    assert_eq!(w.evicted_keys(), vec![(0, key(1, 15)), (0, key(1, 11))]);
    assert_eq!(w.entry_keys(), vec![(0, keys(1, &[3, 7]))]);
}

#[test]
fn r10_lru_empties_the_oldest_entry_first() {
    // cap 4, block 1: e0 = run 1 (2 units, t=0), e1 = run 2 (2 units, t=1). B needs 3:
    // e0's tail, e0's head (e0 disappears), then e1's tail.
    let mut w = World::new(4, 1);
    w.cache(1, hdr(2, &[(1, 2)]));
    w.at(1.0);
    w.cache(2, hdr(2, &[(2, 2)]));
    w.events();
    w.enqueue(3, hdr(3, &[(3, 3)]));
    assert_eq!(
        w.evicted_keys(),
        vec![(0, key(1, 1)), (0, key(1, 0)), (1, key(2, 1))]
    );
}

#[test]
fn r10_keyed_eviction_takes_least_key_then_release_order() {
    // evict by (priority, last). e0 from A (priority 5), e1 from B (priority 1),
    // e2 from C (priority 1, released later). Evicting 3 blocks of 1 unit:
    // e1 (1, t1) tail, e1 head, then e2 (1, t2) tail — e0 survives.
    let mut w = World::with(PoolConfig {
        evict: evict_by_priority(),
        ..capped(6)
    });
    for (id, prio, t) in [(1, 5.0, 0.0), (2, 1.0, 1.0), (3, 1.0, 2.0)] {
        w.at(t);
        w.env.set(id, &[prio, id as f64]);
        w.cache(id, hdr(2, &[(id, 2)]));
    }
    w.events();
    w.enqueue(4, hdr(3, &[(4, 3)]));
    assert_eq!(
        w.evicted_keys(),
        vec![(1, key(2, 1)), (1, key(2, 0)), (2, key(3, 1))]
    );
}

#[test]
fn r10_keys_that_read_size_are_evaluated_again_at_every_moment_of_one_eviction() {
    // evict by (-size): the largest entry first, release order among equals. e0 and e1 hold 3 blocks each; making room for 2 takes
    // e0's tail (a tie, e0 is older), then e1's (now the larger). An engine that
    // kept its first choice for the whole call would take e0's tail twice; it may
    // only do that for keys reading neither `size` nor `waiting` (pool/evict.rs).
    let mut w = World::with(PoolConfig {
        evict: evict_largest(),
        ..capped(6)
    });
    for id in 1..=2 {
        w.cache(id, hdr(3, &[(id, 3)]));
    }
    w.events();
    w.enqueue(3, hdr(2, &[(3, 2)]));
    assert_eq!(w.evicted_keys(), vec![(0, key(1, 2)), (1, key(2, 2))]);
}

#[test]
fn r10_all_equal_keys_fall_back_to_release_order() {
    // evict by (NaN): every key equal (E5), so the oldest entry goes first.
    let mut w = World::with(PoolConfig {
        evict: evict_all_nan(),
        ..capped(4)
    });
    for id in 1..=2 {
        w.cache(id, hdr(2, &[(id, 2)]));
    }
    w.events();
    w.enqueue(3, hdr(1, &[(3, 1)]));
    assert_eq!(w.evicted_keys(), vec![(0, key(1, 1))]);
}

#[test]
fn r10_age_and_now_reach_the_evict_keys() {
    // evict by (age) = most recently released first: e0 at t=0, e1 at t=5; at t=6
    // e1 (age 1) has the least key, 1 < 6.
    let mut w = World::with(PoolConfig {
        evict: evict_mru(),
        ..capped(4)
    });
    w.cache(1, hdr(2, &[(1, 2)]));
    w.at(5.0);
    w.cache(2, hdr(2, &[(2, 2)]));
    w.at(6.0);
    w.events();
    w.enqueue(3, hdr(1, &[(3, 1)]));
    assert_eq!(w.evicted_keys(), vec![(1, key(2, 1))]);
}

#[test]
fn r10_s2_waiting_counts_holds_that_would_hit_the_entry() {
    // evict by (waiting, -size), cap 10, block 1. H holds 2; e0 = run 1 (4 units)
    // and e1 = run 2 (4 units) fill the rest. D (2 unrelated units) then B (run 1
    // then 5 units of its own) are enqueued before one settle. D is admitted while B
    // waits, and needs 2 evictions: e0 has waiting 1 (B would hit it), e1 waiting 0,
    // so e1 goes, tail first — where lru would have taken e0. B then needs 9 with 4
    // allocated (4 + 9 > 10) and stays blocked.
    let mut w = World::with(PoolConfig {
        evict: evict_by_waiting(),
        ..capped(10)
    });
    w.enqueue(9, hdr(2, &[(9, 2)]));
    for id in 1..=2 {
        w.cache(id, hdr(4, &[(id, 4)]));
    }
    w.events();
    w.enqueue_only(4, hdr(2, &[(4, 2)]));
    w.enqueue_only(3, hdr(9, &[(1, 4), (3, 5)]));
    w.settle();
    assert_eq!(w.evicted_keys(), vec![(1, key(2, 3)), (1, key(2, 2))]);
}

#[test]
fn r10_s3_ended_sessions_are_keyed_by_their_last_release() {
    // evict by (priority, last). A releases with priority 1 and ends; its host now
    // says nothing about it (a changed value after the end must not count). B
    // releases with priority 3 but lives, and drops to priority 0 afterwards: its
    // current value counts. So B's entry (0) goes before A's (1).
    let mut w = World::with(PoolConfig {
        evict: evict_by_priority(),
        ..capped(4)
    });
    w.env.set(1, &[1.0, 1.0]);
    w.cache(1, hdr(2, &[(1, 2)]));
    w.env.end(1);
    w.env.set(1, &[9.0, 1.0]);
    w.env.set(2, &[3.0, 2.0]);
    w.cache(2, hdr(2, &[(2, 2)]));
    w.env.set(2, &[0.0, 2.0]);
    w.events();
    w.enqueue(3, hdr(3, &[(3, 3)]));
    assert_eq!(
        w.evicted_keys(),
        vec![(1, key(2, 1)), (1, key(2, 0)), (0, key(1, 1))]
    );
}

// ----- R11 ------------------------------------------------------------------------

#[test]
fn r11_hits_take_head_side() {
    // Block 1. A caches run 1 (6 units) as e0 at t=0. B holds 3 units of run 1: it
    // hits 1+0..1+2 from e0's head; e0 keeps 1+3..1+5 with its id and time.
    let mut w = World::new(64, 1);
    w.cache(1, hdr(6, &[(1, 6)]));
    w.at(3.0);
    w.enqueue(2, hdr(3, &[(1, 6)]));
    assert_eq!(w.units(), (3, 3));
    let e = w.pool.entries();
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].id, e[0].last), (EntryId(0), 0.0));
    assert_eq!(e[0].keys, keys(1, &[3, 4, 5]));
}

#[test]
fn r11_what_remains_keeps_its_release_order() {
    // cap 8, block 1. e0 = run 1 (4 units, t=0), e1 = run 2 (2 units, t=1). B hits 2
    // units of e0's head (B = run 1, units 2). e0 keeps [1+2, 1+3] and stays the
    // oldest: C (4 unrelated units) evicts e0's two blocks, then e1's tail.
    let mut w = World::new(8, 1);
    w.cache(1, hdr(4, &[(1, 4)]));
    w.at(1.0);
    w.cache(2, hdr(2, &[(2, 2)]));
    w.enqueue(3, hdr(2, &[(1, 4)]));
    assert_eq!(w.units(), (2, 4));
    w.events();
    w.enqueue(4, hdr(5, &[(4, 5)]));
    assert_eq!(
        w.evicted_keys(),
        vec![(0, key(1, 3)), (0, key(1, 2)), (1, key(2, 1))]
    );
}

// ----- R12 ------------------------------------------------------------------------

#[test]
fn r12_spill_writes_evicted_blocks_when_pred_holds() {
    // Block 4, cap 20 (5 blocks), `spill … (units * 3 + last) when (size >= 8)`. A
    // caches run 1 (16 units) at t=2. B needs 4 new blocks: 0 + 4 + 4 > 5 → three
    // Evict moments, the entry's size being 16, 12, 8: all three blocks are written
    // (work = 4 * 3 + 2 = 14 each). C then needs 1 block: the entry has 4 units left,
    // 4 < 8, so that eviction writes nothing.
    let mut w = World::with(PoolConfig {
        block: Units(4),
        spill: Some(spill_policy(false)),
        ..capped(20)
    });
    w.at(2.0);
    w.cache(1, hdr(16, &[(1, 16)]));
    w.events();
    w.enqueue(2, hdr(16, &[(2, 16)]));
    let spilled: Vec<_> = w
        .pool
        .notices()
        .iter()
        .filter_map(|n| match n {
            Notice::Spill {
                session,
                key,
                last,
                units,
                work,
                ..
            } => Some((session.0, *key, *last, units.0, *work)),
            _ => None,
        })
        .collect();
    assert_eq!(
        spilled,
        vec![
            (1, key(1, 15), 2.0, 4, 14.0),
            (1, key(1, 11), 2.0, 4, 14.0),
            (1, key(1, 7), 2.0, 4, 14.0),
        ]
    );
    let ev = w.events();
    // Each Spill follows its Evict.
    assert!(matches!(ev[1], Event::Evict { key: k, .. } if k == key(1, 15)));
    assert!(matches!(ev[2], Event::Spill { key: k, work, .. } if k == key(1, 15) && work == 14.0));
    w.enqueue(3, hdr(4, &[(3, 4)]));
    let ev = w.events();
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::Evict { .. }))
            .count(),
        1
    );
    assert!(!ev.iter().any(|e| matches!(e, Event::Spill { .. })));
}

#[test]
fn r12_a_nan_predicate_is_true() {
    // E2: NaN is non-zero, so `when (NaN)` spills every evicted block.
    let mut w = World::with(PoolConfig {
        spill: Some(spill_policy(true)),
        ..capped(2)
    });
    w.cache(1, hdr(2, &[(1, 2)]));
    w.events();
    w.enqueue(2, hdr(1, &[(2, 1)]));
    let ev = w.events();
    assert!(matches!(ev[1], Event::Evict { .. }));
    assert!(matches!(ev[2], Event::Spill { work, .. } if work == 3.0));
}

#[test]
fn r12_an_unlogged_pool_spills_an_entrys_moments_together_as_one_at_a_time() {
    // `when (nan)` with work `units * 3 + last` reads an attribute and `last`,
    // nothing an Evict moment changes, so an unlogged pool decides once for all of
    // an entry's moments (issue #35 item 1). s1 caches 3 blocks released at 0 (keys
    // 1+0, 1+1, 1+2); s2's 3 blocks need all of them: tail first, each spilled
    // with work 1 * 3 + 0 = 3. With the log on, a moment at a time, the same.
    let run = |logged: bool| {
        let mut w = World::with(PoolConfig {
            spill: Some(spill_policy(true)),
            ..capped(3)
        });
        w.cache(1, hdr(3, &[(1, 3)]));
        w.pool.set_logging(logged);
        w.enqueue(2, hdr(3, &[(2, 3)]));
        (w.pool.notices().to_vec(), w.pool.counters().spills)
    };
    let (together, spills) = run(false);
    let spilled: Vec<(BlockKey, f64)> = together
        .iter()
        .filter_map(|n| match *n {
            Notice::Spill { key, work, .. } => Some((key, work)),
            _ => None,
        })
        .collect();
    assert_eq!(
        spilled,
        [(key(1, 2), 3.0), (key(1, 1), 3.0), (key(1, 0), 3.0)]
    );
    assert_eq!(spills, 3);
    assert_eq!(run(true), (together, 3));
}

#[test]
fn r12_s3_a_tier_keys_an_ended_session_by_its_values_at_its_last_store() {
    // A tier of 3 one-unit blocks, evict by (priority, last). s1's block A (the tail
    // of an entry released at 1) is stored with s1 at priority 5, s2's block B (1.5)
    // at priority 3. s1 drops to 0 and C, the block before A, is stored: it joins A's
    // entry at its head, and the tier's snapshot of s1 is now 0. Both end (the host
    // answers no more; s1's later 7 must not count). s3's blocks need room: the least
    // key is s1's (0, 1), tail first (A, then C), then s2's B (3). Had the snapshot
    // been taken only when the entry was opened, B (3) would go before s1's (5).
    let mut w = World::with(PoolConfig {
        evict: evict_by_priority(),
        ..capped(3)
    });
    w.env.set(1, &[5.0, 1.0]);
    w.env.set(2, &[3.0, 2.0]);
    let store = |w: &mut World, t: f64, s: u64, k: BlockKey, last: f64| {
        let r = w.pool.accept_spill(t, SessionId(s), k, last, &w.env);
        w.pool.check().unwrap();
        r
    };
    let (a, b, c) = (key(1, 1), key(2, 0), key(1, 0));
    store(&mut w, 3.0, 1, a, 1.0).unwrap();
    store(&mut w, 3.0, 2, b, 1.5).unwrap();
    w.env.set(1, &[0.0, 1.0]);
    store(&mut w, 4.0, 1, c, 1.0).unwrap();
    assert_eq!(w.pool.entries()[0].keys, [c, a]);
    w.env.end(1);
    w.env.end(2);
    w.env.set(1, &[7.0, 1.0]);
    w.env.set(3, &[9.0, 3.0]);
    w.events();
    for (i, k) in [key(4, 0), key(5, 0), key(6, 0)].into_iter().enumerate() {
        store(&mut w, 5.0 + i as f64, 3, k, 5.0 + i as f64).unwrap();
    }
    let evicted: Vec<BlockKey> = w
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Evict { key, .. } => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, [a, c, b]);
}

#[test]
fn r12_s3_a_tier_refuses_a_block_of_a_session_it_cannot_key() {
    // The same tier. s4 has ended and the tier holds nothing of it: with keys that
    // read `priority` it could not order the entry, so the store is refused and
    // changes nothing (no event, time not advanced). A duplicate key needs no
    // ordering and is still `Duplicate`; an lru tier needs no attributes at all.
    let mut w = World::with(PoolConfig {
        evict: evict_by_priority(),
        ..capped(3)
    });
    w.env.set(1, &[1.0, 1.0]);
    w.pool
        .accept_spill(2.0, SessionId(1), key(1, 0), 1.0, &w.env)
        .unwrap();
    w.env.end(1);
    w.env.end(4);
    w.events();
    assert_eq!(
        w.pool
            .accept_spill(3.0, SessionId(4), key(4, 0), 2.5, &w.env),
        Err(poolrt::Error::NoAttrs(SessionId(4)))
    );
    assert_eq!(
        (w.events(), w.pool.cached(), w.pool.now()),
        (vec![], Units(1), 2.0)
    );
    assert_eq!(
        w.pool
            .accept_spill(3.0, SessionId(4), key(1, 0), 2.5, &w.env),
        Ok(poolrt::Stored::Duplicate)
    );
    // s1 ended too, but the tier holds its entry, and with it a snapshot.
    assert!(matches!(
        w.pool
            .accept_spill(3.0, SessionId(1), key(1, 1), 1.0, &w.env),
        Ok(poolrt::Stored::Stored(_))
    ));
    let mut lru = World::new(3, 1);
    lru.env.end(4);
    assert!(matches!(
        lru.pool
            .accept_spill(3.0, SessionId(4), key(4, 0), 2.5, &lru.env),
        Ok(poolrt::Stored::Stored(_))
    ));
}

#[test]
fn r12_tier_hits_come_only_from_the_pool_spilled_into() {
    // kv spills to pool 1. Two pools hold session 1's first block (key (1, 0), block
    // 2): pool 1 (the tier) and pool 2 (another pool). s1's hold of 4 units hits
    // nothing in kv; asked with pool 2 it finds no tier hit, with pool 1 it finds 2.
    let mut w = World::with(PoolConfig {
        block: Units(2),
        spill: Some(spill_policy(true)),
        ..capped(8)
    });
    let holder = |pool: u32| {
        let mut p = Pool::new(PoolConfig {
            me: poolrt::PoolRef { pool, member: 0 },
            block: Units(2),
            ..PoolConfig::default()
        })
        .unwrap();
        p.accept_spill(0.0, s(9), key(1, 1), 0.0, &w.env).unwrap();
        p
    };
    let (mut tier, mut other) = (holder(1), holder(2));
    w.enqueue_only(1, hdr(4, &[(1, 4)]));
    let found = |w: &mut World, t: &mut Pool| {
        let mut seen = None;
        let r = w.pool.admit_next_tiered(1.0, &w.env, Some(t), |_, hit, _| {
            seen = Some(hit);
            None
        });
        assert_eq!(r, Ok(Admission::Declined));
        seen.expect("asked")
    };
    assert_eq!(found(&mut w, &mut other).tier, Units(0));
    assert_eq!(found(&mut w, &mut tier).tier, Units(2));
}

#[test]
fn r12_a_tier_hit_is_walked_again_after_the_tier_changed_under_another_pools_walk() {
    // kv (pool 0) and kv2 (pool 2) both spill into the tier (pool 1), which holds
    // (1, 0). s1 waits in kv for run 1, 2 units: declined, it found a tier hit of 1
    // block, and kv remembers that walk. s2 waits in kv2 for run 5: its walk now
    // watches the tier's key (5, 0), missing there. The tier then stores (1, 1): s1's
    // next attempt finds a tier hit of 2, though the tier's watch, serving s2's walk
    // since, was not watching that key.
    let mut w = World::with(PoolConfig {
        spill: Some(spill_policy(true)),
        ..capped(8)
    });
    let mut kv2 = Pool::new(PoolConfig {
        me: poolrt::PoolRef { pool: 2, member: 0 },
        spill: Some(spill_policy(true)),
        ..capped(8)
    })
    .unwrap();
    let mut tier = Pool::new(PoolConfig {
        me: poolrt::PoolRef { pool: 1, member: 0 },
        ..PoolConfig::default()
    })
    .unwrap();
    tier.accept_spill(0.0, s(9), key(1, 0), 0.0, &w.env)
        .unwrap();
    w.enqueue_only(1, hdr(2, &[(1, 2)]));
    w.env.set(2, &[0.0, 2.0]);
    kv2.enqueue(0.0, s(2), hdr(2, &[(5, 2)]), &w.env).unwrap();
    let tier_hit = |pool: &mut Pool, tier: &mut Pool, now: f64, env: &TestEnv| {
        let mut seen = None;
        let r = pool.admit_next_tiered(now, env, Some(tier), |_, hit, _| {
            seen = Some(hit);
            None
        });
        assert_eq!(r, Ok(Admission::Declined));
        seen.expect("asked").tier
    };
    assert_eq!(tier_hit(&mut w.pool, &mut tier, 0.0, &w.env), Units(1));
    assert_eq!(tier_hit(&mut kv2, &mut tier, 0.0, &w.env), Units(0));
    tier.accept_spill(1.0, s(8), key(1, 1), 1.0, &w.env)
        .unwrap();
    assert_eq!(tier_hit(&mut w.pool, &mut tier, 1.0, &w.env), Units(2));
}

// ----- R13 ------------------------------------------------------------------------

#[test]
fn r13_none_grow_waits_and_is_retried_in_failure_order_before_the_queue() {
    // cap 6, block 1, preempt none. A, B, C hold 2 each. A then B grow by 1: both
    // wait. D (1 unit) is enqueued: the settle retries A's grow first, it still does
    // not fit, so nothing else happens (D waits too). C releases: A grows, B grows,
    // then D finds the pool full (6) and waits.
    let mut w = World::new(6, 1);
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
    }
    assert_eq!(w.grow(1, 1), Grown::Waiting);
    assert_eq!(w.grow(2, 1), Grown::Waiting);
    w.enqueue(4, hdr(1, &[(4, 1)]));
    assert_eq!(w.pool.queued(), 1);
    w.events();
    w.release(3);
    assert_eq!(
        w.events(),
        vec![
            Event::Release {
                session: s(3),
                cached: Units(0)
            },
            Event::Grow {
                session: s(1),
                by: Units(1)
            },
            Event::Grow {
                session: s(2),
                by: Units(1)
            },
        ]
    );
    assert_eq!(w.units(), (6, 0));
    assert_eq!(w.pool.queued(), 1);
    assert_eq!(w.pool.hold(s(1)).unwrap().units, Units(3));
}

#[test]
fn r13_grow_evicts_cache_and_never_hits() {
    // cap 4, block 1. e0 = run 1 (2 units). A holds 2 units of run 2 (4 long) and
    // grows by 1: 2 + 2 + 1 > 4 → one eviction (e0's tail); a grow never hits.
    let mut w = World::new(4, 1);
    w.cache(1, hdr(2, &[(1, 2)]));
    w.enqueue(2, hdr(2, &[(2, 4)]));
    w.events();
    assert_eq!(w.grow(2, 1), Grown::Grown);
    assert_eq!(w.evicted_keys(), vec![(0, key(1, 1))]);
    assert_eq!(w.units(), (3, 1));
}

#[test]
fn r13_lifo_grower_can_be_its_own_victim() {
    // cap 4, block 1, preempt lifo. A then B hold 2 each. B (the most recent) grows
    // by 3: victim is B itself. Its 2 computed units are cached; it waits at the head.
    // A is untouched.
    let mut w = World::with(PoolConfig {
        preempt: Preempt::Lifo,
        ..capped(4)
    });
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.enqueue(2, hdr(2, &[(2, 4)]));
    w.compute(2, 2);
    w.events();
    assert_eq!(w.grow(2, 3), Grown::SelfPreempted);
    assert_eq!(
        w.events(),
        vec![Event::Preempt {
            session: s(2),
            cached: Units(2)
        }]
    );
    assert_eq!(w.units(), (2, 2));
    assert!(w.pool.is_waiting(s(2)));
    assert!(w.pool.hold(s(1)).is_some());
    // B re-enters with the 2 units it held and hits them when A leaves.
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 2)]);
}

#[test]
fn r13_lifo_skips_holders_that_are_not_residents() {
    // cap 6, block 1. A, B, C hold 2 each; C is not a resident of the stage. A grows
    // by 1: victim B (most recently admitted resident), not C.
    let mut w = World::with(PoolConfig {
        preempt: Preempt::Lifo,
        ..capped(6)
    });
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
    }
    w.env.non_residents.insert(s(3));
    assert_eq!(w.grow(1, 1), Grown::Grown);
    assert_eq!(w.pool.notices(), &[Notice::Preempted { session: s(2) }]);
    assert!(w.pool.hold(s(3)).is_some());
}

#[test]
fn r13_lifo_without_residents_waits() {
    let mut w = World::with(PoolConfig {
        preempt: Preempt::Lifo,
        ..capped(2)
    });
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.env.non_residents.insert(s(1));
    assert_eq!(w.grow(1, 1), Grown::Waiting);
    assert_eq!(w.events().last(), Some(&Event::GrowWait { session: s(1) }));
}

// ----- R14 ------------------------------------------------------------------------

#[test]
fn r14_release_caches_full_computed_blocks() {
    // Block 4, chain of 20 units, 18 held (5 blocks), 14 computed: blocks 0..2 are
    // full and computed (12 units) → one entry; block 3 (12..16, computed only to 14)
    // and block 4 (16..18) are freed.
    let mut w = World::new(64, 4);
    w.enqueue(1, hdr(18, &[(1, 20)]));
    w.compute(1, 14);
    assert_eq!(w.release(1), Units(12));
    assert_eq!(w.units(), (0, 12));
    assert_eq!(w.entry_keys(), vec![(0, keys(1, &[3, 7, 11]))]);
}

#[test]
fn r14_uncomputed_units_are_freed() {
    let mut w = World::new(64, 4);
    w.enqueue(1, hdr(16, &[(1, 16)]));
    assert_eq!(w.release(1), Units(0));
    assert_eq!(w.units(), (0, 0));
    assert!(w.pool.entries().is_empty());
    // Freed blocks are unregistered: a later hold hits nothing.
    w.events();
    w.enqueue(2, hdr(16, &[(1, 16)]));
    assert_eq!(w.admits(), vec![(2, 0)]);
}

#[test]
fn r14_shared_blocks_stay_until_their_last_holder_releases() {
    // Block 2. A holds run 1 (4 units); B shares A's 2 blocks and adds run 2 (2).
    // B releases first (computed 6): its own block is cached (entry [2+1]); the two
    // shared blocks stay allocated for A. A releases: they become A's entry.
    let mut w = World::new(64, 2);
    w.enqueue(1, hdr(4, &[(1, 4)]));
    w.enqueue(2, hdr(6, &[(1, 4), (2, 2)]));
    w.compute(1, 4);
    w.compute(2, 6);
    assert_eq!(w.release(2), Units(2));
    assert_eq!(w.units(), (4, 2));
    assert_eq!(w.release(1), Units(4));
    assert_eq!(
        w.entry_keys(),
        vec![(0, vec![key(2, 1)]), (1, vec![key(1, 1), key(1, 3)])]
    );
}

// ----- the step stage's entry points (R15 step 2, R13 at an iteration) --------------

#[test]
fn stage_admission_allocates_the_units_the_stage_gives() {
    // Block 4, cap 64. Run 1 (16 units) is cached. A waiting prefill: sequence 20 =
    // run 1 then run 2 (4), header units = reserve = 20, max_hit 19 (last-token
    // rule: floor(19/4) = 4 blocks, all cached → hit 16). The stage gives it
    // hit + min(20 − 16, chunk 2) = 18 units: 5 blocks allocated (20 units), the fit
    // judged on max(18, 20) = 20.
    let mut w = World::new(64, 4);
    w.cache(1, hdr(16, &[(1, 16)]));
    w.enqueue_only(2, hdr(20, &[(1, 16), (2, 4)]).with_max_hit(Units(19)));
    w.events();
    let mut asked = None;
    let r = w
        .pool
        .admit_next(0.0, &w.env, |session, hit, h| {
            asked = Some((session, hit, h.units));
            Some(Units(hit.0 + (h.units.0 - hit.0).min(2)))
        })
        .unwrap();
    w.checked();
    assert_eq!(asked, Some((s(2), Units(16), Units(20))));
    assert_eq!(
        r,
        Admission::Admitted {
            session: s(2),
            hit: Units(16),
            units: Units(18)
        }
    );
    assert_eq!(w.units(), (20, 0));
    assert_eq!(w.pool.hold(s(2)).unwrap().computed, Units(16));
}

#[test]
fn stage_admission_declines_blocks_and_reports_empty_without_changing_anything() {
    let mut w = World::new(8, 1);
    w.enqueue(1, hdr(6, &[(1, 6)]));
    let env = w.env.clone();
    assert_eq!(
        w.pool.admit_next(0.0, &env, |_, _, h| Some(h.units)),
        Ok(Admission::Empty)
    );
    w.enqueue_only(2, hdr(1, &[(2, 1)]).with_reserve(Units(4)));
    // Declined: the stage had no budget for it.
    assert_eq!(
        w.pool.admit_next(0.0, &env, |_, _, _| None),
        Ok(Admission::Declined)
    );
    // Blocked: 6 + max(1, 4) > 8, judged on the reserve (R6).
    assert_eq!(
        w.pool.admit_next(0.0, &env, |_, _, h| Some(h.units)),
        Ok(Admission::Blocked)
    );
    assert_eq!((w.units(), w.pool.queued()), ((6, 0), 1));
    w.checked();
}

#[test]
fn stage_admission_refuses_fewer_units_than_the_hit() {
    let mut w = World::new(16, 4);
    w.cache(1, hdr(8, &[(1, 8)]));
    w.enqueue_only(2, hdr(8, &[(1, 8)]));
    let env = w.env.clone();
    assert_eq!(
        w.pool.admit_next(0.0, &env, |_, _, _| Some(Units(4))),
        Err(poolrt::Error::UnitsBelowHit {
            session: s(2),
            units: Units(4),
            hit: Units(8)
        })
    );
    assert_eq!((w.units(), w.pool.queued()), ((0, 8), 1));
    w.checked();
}

#[test]
fn a_step_host_revises_a_preempted_header() {
    // cap 8, block 1, lifo. A holds 4 (computed 4), B holds 4; B grows and preempts
    // itself. Its sequence is now 6: the host revises units 6, reserve 6, max_hit 5.
    // A releases; B re-enters hitting its own 4 cached units and allocates 6.
    let mut w = World::with(PoolConfig {
        preempt: Preempt::Lifo,
        ..capped(8)
    });
    w.enqueue(1, hdr(4, &[(1, 4)]));
    w.enqueue(2, hdr(4, &[(2, 8)]));
    w.compute(2, 4);
    assert_eq!(w.grow(2, 2), Grown::SelfPreempted);
    let env = w.env.clone();
    assert_eq!(
        w.pool
            .set_waiting_header(s(2), Units(6), Units(9), None, &env),
        Err(poolrt::Error::NeverFits(s(2)))
    );
    assert_eq!(
        w.pool
            .set_waiting_header(s(1), Units(6), Units(6), None, &env),
        Err(poolrt::Error::NotWaiting(s(1)))
    );
    w.pool
        .set_waiting_header(s(2), Units(6), Units(6), Some(Units(5)), &env)
        .unwrap();
    w.events();
    w.release(1);
    assert_eq!(w.admits(), vec![(2, 4)]);
    assert_eq!(w.pool.hold(s(2)).unwrap().units, Units(6));
}

#[test]
fn retry_grows_completes_waiting_grows_without_admitting() {
    // cap 4, block 1, preempt none. A and C hold 2 each; A's grow by 1 waits. B (1
    // unit) is enqueued. C releases without a settle (a stage-bound pool never
    // settles); the stage's iteration retries the grows: A grows to 3, and B is not
    // admitted (only the stage's waiting step admits).
    let mut w = World::new(4, 1);
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.enqueue(3, hdr(2, &[(3, 2)]));
    assert_eq!(w.grow(1, 1), Grown::Waiting);
    w.enqueue_only(2, hdr(1, &[(2, 1)]));
    let env = w.env.clone();
    w.pool.release(0.0, s(3), &env).unwrap();
    w.events();
    assert_eq!(w.pool.retry_grows(0.0, &env), Ok(true));
    w.checked();
    assert_eq!(
        w.pool.notices(),
        &[Notice::Grown {
            session: s(1),
            by: Units(1)
        }]
    );
    assert_eq!((w.units(), w.pool.queued()), ((3, 0), 1));
}

// ----- R18, R19 -------------------------------------------------------------------

/// A world whose sessions' attribute 0 (priority) is given.
fn with_priorities(config: PoolConfig, priorities: &[(u64, f64)]) -> World {
    let mut w = World::with(config);
    for &(id, p) in priorities {
        w.env.set(id, &[p, id as f64]);
    }
    w
}

#[test]
fn r18_preempt_by_takes_the_least_resident_by_its_keys() {
    // cap 6, block 1, `preempt by (-priority, -admitted)` (vLLM's victim). A (prio 0),
    // B (prio 2), C (prio 1) hold 2 each; A grows by 1: the least by -priority is B
    // (-2), not C, the most recent (lifo's choice).
    let mut w = with_priorities(
        PoolConfig {
            preempt: preempt_by_priority(),
            ..capped(6)
        },
        &[(1, 0.0), (2, 2.0), (3, 1.0)],
    );
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
    }
    w.compute(2, 2);
    w.events();
    assert_eq!(w.grow(1, 1), Grown::Grown);
    assert_eq!(
        w.events(),
        vec![
            Event::Preempt {
                session: s(2),
                cached: Units(2)
            },
            // The cap is full of holds and B's cache: B's tail block makes the room.
            Event::Evict {
                entry: EntryId(0),
                session: s(2),
                key: key(2, 1),
                units: Units(1)
            },
            Event::Grow {
                session: s(1),
                by: Units(1)
            }
        ]
    );
    assert!(w.pool.is_waiting(s(2)));
    assert!(w.pool.hold(s(3)).is_some());
}

#[test]
fn r18_ties_go_to_the_earliest_admitted_and_the_grower_is_a_candidate() {
    // `preempt by (-units, computed)`: A, B, C hold 2 each with nothing computed, so
    // every key ties; C grows by 1 and the victim is A, the earliest admitted — not
    // C, the grower, nor B.
    let mut w = World::with(PoolConfig {
        preempt: preempt_largest(),
        ..capped(6)
    });
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
    }
    assert_eq!(w.grow(3, 1), Grown::Grown);
    assert_eq!(w.pool.notices(), &[Notice::Preempted { session: s(1) }]);
    // Now C holds 3, the largest: when B grows past the cap, C is the victim.
    assert_eq!(w.grow(2, 2), Grown::Grown);
    assert_eq!(w.pool.notices(), &[Notice::Preempted { session: s(3) }]);
}

#[test]
fn r18_the_grower_can_be_its_own_victim() {
    // A (prio 0) and B (prio 5) hold 2 each in a cap of 4; B grows and is the least
    // by -priority itself: it preempts itself, A is untouched.
    let mut w = with_priorities(
        PoolConfig {
            preempt: preempt_by_priority(),
            ..capped(4)
        },
        &[(1, 0.0), (2, 5.0)],
    );
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.enqueue(2, hdr(2, &[(2, 2)]));
    assert_eq!(w.grow(2, 1), Grown::SelfPreempted);
    assert!(w.pool.is_waiting(s(2)));
    assert!(w.pool.hold(s(1)).is_some());
}

#[test]
fn r18_skips_holders_that_are_not_residents_and_waits_without_any() {
    // B (prio 9) would be the victim but is not a resident: C (prio 1) is taken.
    let mut w = with_priorities(
        PoolConfig {
            preempt: preempt_by_priority(),
            ..capped(6)
        },
        &[(1, 0.0), (2, 9.0), (3, 1.0)],
    );
    for id in 1..=3 {
        w.enqueue(id, hdr(2, &[(id, 2)]));
    }
    w.env.non_residents.insert(s(2));
    assert_eq!(w.grow(1, 1), Grown::Grown);
    assert_eq!(w.pool.notices(), &[Notice::Preempted { session: s(3) }]);
    // With no resident at all, the grower waits (as `preempt none`).
    w.env.non_residents.extend([s(1), s(2)]);
    assert_eq!(w.grow(1, 3), Grown::Waiting);
}

#[test]
fn r19_requeue_keyed_waits_by_the_queue_keys_not_at_the_head() {
    // cap 4, `queue by (priority, serial)`, `preempt lifo`. B (prio 1) holds 3; W
    // (prio 0) waits for 2. B grows past the cap and preempts itself. At the head
    // (R8) B would be tried first and admitted (3 fits once B's blocks are back);
    // with `requeue keyed` W (prio 0) is first.
    for (requeue, first) in [(Requeue::Head, 2), (Requeue::Keyed, 4)] {
        let mut w = with_priorities(
            PoolConfig {
                preempt: Preempt::Lifo,
                requeue,
                queue: queue_by_priority(),
                ..capped(4)
            },
            &[(2, 1.0), (4, 0.0)],
        );
        w.enqueue(2, hdr(3, &[(2, 3)]));
        w.enqueue(4, hdr(2, &[(4, 2)]));
        assert!(w.pool.is_waiting(s(4)));
        w.events();
        assert_eq!(w.grow(2, 2), Grown::SelfPreempted);
        w.settle();
        assert_eq!(w.admits().first().map(|a| a.0), Some(first), "{requeue:?}");
    }
}

#[test]
fn r19_requeue_keyed_with_fifo_returns_to_the_first_enqueue_place() {
    // cap 4, fifo, `preempt by (-priority, -admitted)`. X (prio 2, enqueued first)
    // and B (prio 1) hold 2 each. B grows: X is the victim and waits. B grows again
    // past the cap: B preempts itself. At the head, B (the most recent) goes first;
    // keyed, X (enqueued before B) does, and B (3 units) no longer fits beside it.
    for (requeue, admits) in [(Requeue::Head, vec![2]), (Requeue::Keyed, vec![1])] {
        let mut w = with_priorities(
            PoolConfig {
                preempt: preempt_by_priority(),
                requeue,
                ..capped(4)
            },
            &[(1, 2.0), (2, 1.0)],
        );
        w.enqueue(1, hdr(2, &[(1, 2)]));
        w.enqueue(2, hdr(2, &[(2, 2)]));
        assert_eq!(w.grow(2, 1), Grown::Grown);
        assert!(w.pool.is_waiting(s(1)));
        assert_eq!(w.grow(2, 2), Grown::SelfPreempted);
        w.events();
        w.settle();
        assert_eq!(
            w.admits().iter().map(|a| a.0).collect::<Vec<_>>(),
            admits,
            "{requeue:?}"
        );
    }
}

// ----- errors, the log, configuration ----------------------------------------------

#[test]
fn operations_refuse_bad_input_without_changing_anything() {
    let mut w = World::new(8, 1);
    w.enqueue(1, hdr(2, &[(1, 2)]));
    let before = w.units();
    let env = w.env.clone();
    assert!(matches!(
        w.pool.enqueue(0.0, s(1), hdr(1, &[(1, 1)]), &env),
        Err(poolrt::Error::AlreadyInPool(_))
    ));
    assert!(matches!(
        w.pool.release(0.0, s(7), &env),
        Err(poolrt::Error::NotHolding(_))
    ));
    assert!(matches!(
        w.pool.set_computed(s(1), Units(3)),
        Err(poolrt::Error::ComputedBeyondUnits { .. })
    ));
    assert!(matches!(
        w.pool.grow(0.0, s(1), Units(u64::MAX), &env),
        Err(poolrt::Error::Overflow(_))
    ));
    w.at(5.0).settle();
    assert!(matches!(
        w.pool.settle(4.0, &env),
        Err(poolrt::Error::Time { .. })
    ));
    assert!(matches!(
        w.pool.settle(f64::NAN, &env),
        Err(poolrt::Error::Time { .. })
    ));
    assert_eq!(w.units(), before);
    w.checked();
}

#[test]
fn a_session_waits_or_holds_and_each_operation_refuses_the_other_place() {
    // One map keeps both places (pool/sessions.rs): a waiting session is neither
    // released nor enqueued again, a holding one neither enqueued nor revised as
    // waiting, and the refusals leave it where it was.
    let mut w = World::new(2, 1);
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.enqueue(2, hdr(2, &[(2, 2)]));
    w.settle();
    assert!(!w.pool.is_waiting(s(1)) && w.pool.hold(s(1)).is_some());
    assert!(w.pool.is_waiting(s(2)) && w.pool.hold(s(2)).is_none());
    let env = w.env.clone();
    assert!(matches!(
        w.pool.release(0.0, s(2), &env),
        Err(poolrt::Error::NotHolding(_))
    ));
    assert!(matches!(
        w.pool.enqueue(0.0, s(2), hdr(1, &[(3, 1)]), &env),
        Err(poolrt::Error::AlreadyInPool(_))
    ));
    assert!(matches!(
        w.pool
            .set_waiting_header(s(1), Units(1), Units(1), None, &env),
        Err(poolrt::Error::NotWaiting(_))
    ));
    assert!(w.pool.is_waiting(s(2)) && w.pool.hold(s(1)).is_some());
    assert_eq!((w.pool.holders(), w.pool.waiting_sessions().len()), (1, 1));
    w.checked();
    // Released, the holder's place goes and the waiting one is admitted.
    w.pool.release(0.0, s(1), &env).unwrap();
    w.settle();
    assert!(w.pool.hold(s(1)).is_none() && !w.pool.is_waiting(s(1)));
    assert!(w.pool.hold(s(2)).is_some());
    assert_eq!((w.pool.holders(), w.pool.waiting_sessions().len()), (1, 0));
    w.checked();
}

#[test]
fn the_log_is_off_by_default() {
    let mut p = Pool::new(PoolConfig::default()).unwrap();
    p.enqueue(0.0, SessionId(1), hdr(1, &[(1, 1)]), &TestEnv::default())
        .unwrap();
    p.settle(0.0, &TestEnv::default()).unwrap();
    assert!(p.log().is_empty());
    assert_eq!(p.allocated(), Units(1));
}

#[test]
fn an_unbounded_pool_never_rejects_or_evicts() {
    let mut w = World::with(PoolConfig::default());
    w.enqueue(1, hdr(1 << 40, &[(1, 3)]));
    w.compute(1, 3);
    w.release(1);
    assert_eq!(w.units(), (0, 3));
    w.enqueue(2, hdr(1 << 50, &[(2, 1)]));
    assert!(w.evicted_keys().is_empty());
}

#[test]
fn layouts_are_validated() {
    let bad = PoolConfig {
        evict: EvictPolicy::By {
            keys: e_priority_last(),
            layout: poolrt::Layout {
                row: vec![poolrt::Input::Computed, poolrt::Input::Last],
                ctx: vec![],
            },
        },
        ..PoolConfig::default()
    };
    assert!(matches!(
        Pool::new(bad),
        Err(poolrt::ConfigError::Input { .. })
    ));
    let short = PoolConfig {
        queue: QueuePolicy::By {
            keys: q_priority_serial(),
            layout: poolrt::Layout {
                row: vec![poolrt::Input::Attr(0)],
                ctx: vec![],
            },
        },
        ..PoolConfig::default()
    };
    assert!(matches!(
        Pool::new(short),
        Err(poolrt::ConfigError::Shape { .. })
    ));
    let zero = PoolConfig {
        block: Units(0),
        ..PoolConfig::default()
    };
    assert!(matches!(
        Pool::new(zero),
        Err(poolrt::ConfigError::ZeroBlock)
    ));
}

// ----- R31 ------------------------------------------------------------------------

#[test]
fn r31_a_partial_hit_counts_only_the_blocks_it_takes() {
    // evict by (hits, last), blocks of 1, cap 6.
    // t0: s1 caches run 1 (3 blocks): entry 0 = [1.0 1.1 1.2], counts 0 0 0.
    // t1: s3 asks for 2 units of run 1: its hit takes 1.0 and 1.1 (counts 1 1) from
    //     the head of entry 0 (R11), which keeps 1.2 at 0; s3 releases: entry 1 =
    //     [1.0 1.1], tail count 1.
    // t2: s2 caches run 2 (3 blocks): entry 2 = [2.0 2.1 2.2], counts 0.
    // t3: s4 needs 4 fresh blocks with 6 cached: 4 Evict moments. Keys: entry 0
    //     (0, t0), entry 1 (1, t1), entry 2 (0, t2): 1.2 goes, then entry 2 tail
    //     first. LRU would take entry 1 second, the one that was hit.
    let mut w = World::with(PoolConfig {
        evict: evict_lfu(),
        ..capped(6)
    });
    w.cache(1, hdr(3, &[(1, 3)]));
    w.at(1.0);
    w.cache(3, hdr(2, &[(1, 3)]));
    w.at(2.0);
    w.cache(2, hdr(3, &[(2, 3)]));
    w.at(3.0);
    w.events();
    w.enqueue(4, hdr(4, &[(4, 4)]));
    assert_eq!(
        w.evicted_keys(),
        vec![
            (0, key(1, 2)),
            (2, key(2, 2)),
            (2, key(2, 1)),
            (2, key(2, 0))
        ]
    );
}

#[test]
fn r31_a_shared_hit_counts_and_the_count_survives_the_release() {
    // evict by (hits, last), blocks of 1, cap 4.
    // t0: s1 is admitted for run 1 (2 blocks) and computes them; s2 asks for the same
    //     2 units: its hit shares both (R7), counts 1 1. s1 releases (s2 still holds
    //     them: no entry), then s2: entry 0 = [1.0 1.1], counts 1 1, at t0.
    // t1: s3 caches run 3 (2 blocks): entry 1, counts 0 0, at t1.
    // t2: s4 needs 2 fresh blocks: entry 1 (0, t1) goes before entry 0 (1, t0), tail
    //     first, where LRU would take the older entry 0.
    let mut w = World::with(PoolConfig {
        evict: evict_lfu(),
        ..capped(4)
    });
    w.enqueue(1, hdr(2, &[(1, 2)]));
    w.compute(1, 2);
    w.enqueue(2, hdr(2, &[(1, 2)]));
    assert_eq!(w.admits(), vec![(1, 0), (2, 2)]);
    w.release(1);
    w.compute(2, 2);
    w.release(2);
    w.at(1.0);
    w.cache(3, hdr(2, &[(3, 2)]));
    w.at(2.0);
    w.events();
    w.enqueue(4, hdr(2, &[(4, 2)]));
    assert_eq!(w.evicted_keys(), vec![(1, key(3, 1)), (1, key(3, 0))]);
}

#[test]
fn r31_an_evicted_block_is_counted_again_from_zero() {
    // evict by (-hits, last): the most hit first. Blocks of 1, cap 2.
    // t0: s1 caches 1.0 (block b0, count 0), entry 0. t1: s2 hits it (count 1) and
    //     releases: entry 1 = [1.0], count 1.  t2: s3 caches 3.0: entry 2, count 0.
    // t3: s4 needs a block: entry 1 (-1) goes; its physical block is freed and s4
    //     gets it again for 4.0: entry 3, count 0 (not 1: the count ended with the
    //     content).  t4: s5 needs a block: entries 2 and 3 tie at 0, the older
    //     (entry 2) goes.
    let mut w = World::with(PoolConfig {
        evict: evict_most_hit(),
        ..capped(2)
    });
    w.cache(1, hdr(1, &[(1, 1)]));
    w.at(1.0);
    w.cache(2, hdr(1, &[(1, 1)]));
    w.at(2.0);
    w.cache(3, hdr(1, &[(3, 1)]));
    w.at(3.0);
    w.events();
    w.cache(4, hdr(1, &[(4, 1)]));
    assert_eq!(w.evicted_keys(), vec![(1, key(1, 0))]);
    w.at(4.0);
    w.cache(5, hdr(1, &[(5, 1)]));
    assert_eq!(w.evicted_keys(), vec![(2, key(3, 0))]);
}

#[test]
fn r31_a_tier_load_counts_in_the_tier() {
    // The tier (pool 1, cap 2 blocks of 1, evict by (-hits, last)) holds 5.0
    // (session 9, released at 0) and 1.0 (session 8, released at 0.5), counts 0.
    // s1 asks kv for 1 unit of run 1: nothing here, 1.0 in the tier; it is loaded
    // (TierLoad of 1 unit) and counts one hit there. A third block written into
    // the tier takes the most hit: 1.0 (without the count, the tie would take the
    // older 5.0).
    let mut w = World::with(PoolConfig {
        spill: Some(spill_policy(true)),
        ..capped(4)
    });
    let mut tier = Pool::new(PoolConfig {
        me: poolrt::PoolRef { pool: 1, member: 0 },
        evict: evict_most_hit(),
        ..capped(2)
    })
    .unwrap();
    tier.set_logging(true);
    tier.accept_spill(0.0, s(9), key(5, 0), 0.0, &w.env)
        .unwrap();
    tier.accept_spill(0.5, s(8), key(1, 0), 0.5, &w.env)
        .unwrap();
    w.enqueue_only(1, hdr(1, &[(1, 1)]));
    let r = w
        .pool
        .admit_next_tiered(1.0, &w.env, Some(&mut tier), |_, hit, _| {
            Some(Units(hit.local.0 + hit.tier.0))
        })
        .unwrap();
    assert!(matches!(r, Admission::Admitted { .. }), "{r:?}");
    assert!(
        w.pool.notices().iter().any(|n| matches!(
            n,
            Notice::TierLoad {
                units: Units(1),
                ..
            }
        )),
        "the tier hit is loaded"
    );
    tier.take_log();
    tier.accept_spill(2.0, s(7), key(7, 0), 1.5, &w.env)
        .unwrap();
    let evicted: Vec<BlockKey> = tier
        .take_log()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::Evict { key, .. } => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![key(1, 0)]);
}
