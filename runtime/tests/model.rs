//! The engine against the naive reference model (tests/naive), driven by the
//! differential driver (tests/naive/driver.rs) over hand-written keys: fifo and keyed
//! queues, lru and keyed eviction, `preempt none`, `lifo` and `by` keys (R18) with
//! or without `requeue keyed` (R19), blocks of 1, 4 and 16
//! units, with or without a spill (source side), and for a spilling pool with or
//! without a tier: a second pool (and a second model) that receives each spilled
//! block by `accept_spill` and that later admissions hit (R12 tier hits), compared the
//! same way. The compiler's tests drive the same model with random specs whose keys
//! the interpreter evaluates (tests/engine_interp_model.rs at the workspace root).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod common;
#[path = "naive/driver.rs"]
mod driver;
mod naive;

use common::*;
use driver::{Driver, Parts, Seen, eq, op};
use naive::{Naive, NaiveConfig, NaiveKeys, NaiveSpill};
use poolrt::{
    EvictPolicy, FairConfig, Limit, Pool, PoolConfig, PoolRef, Preempt, QueueIndex, QueuePolicy,
    QueueTie, Requeue, Units,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

#[derive(Clone, Copy, Debug)]
enum QueueKind {
    Fifo,
    Priority,
    LongestPrefix,
    Aged,
    FitsFirst,
    Shortest,
    /// `queue by (service, serial)` with `fair priority (1, 2)` (R30: VTC).
    Vtc,
    /// The same with `weight serial` (WFQ; serial 0 divides by zero, as IEEE does).
    Wfq,
}

#[derive(Clone, Copy, Debug)]
enum EvictKind {
    Lru,
    Priority,
    Waiting,
    MostWaited,
    Lfu,
    MostHit,
    Mru,
    AllNan,
}

#[derive(Clone, Copy, Debug)]
enum PreemptKind {
    None,
    Lifo,
    Priority,
    Largest,
    FitsYoungest,
}

#[derive(Clone, Debug)]
struct Setup {
    block: u64,
    /// Base lengths are multiplied by this, so that larger blocks still see hits.
    scale: u64,
    cap: Option<u64>,
    queue: QueueKind,
    evict: EvictKind,
    preempt: PreemptKind,
    /// `requeue keyed` (R19).
    requeue: bool,
    /// Force the compiled scan even for fixed keys (else the index takes them).
    scan: bool,
    /// `None`: no spill; `Some(always)`: spill with `size >= 8` or an always-true
    /// (NaN) predicate.
    spill: Option<bool>,
    /// The pool the spills go to, if one is modelled (only a spilling pool's).
    tier: Option<TierSetup>,
}

#[derive(Clone, Debug)]
struct TierSetup {
    /// Units; below one block it can store nothing (`NoRoom`).
    cap: Option<u64>,
    /// Lru, Mru, AllNan (leaving the order to the tier's release order, where
    /// entries are placed by their blocks' release time), Priority (an attribute, so
    /// the tier's snapshots, S3), Waiting (always 0 in a tier, which has no queue) or
    /// Lfu and MostHit (R31: counted in a tier by the tier loads).
    evict: EvictKind,
    /// Every write completes right after the operation that spilled it; else only
    /// at `WriteDone`, so later spills and evictions happen in between.
    immediate: bool,
    /// The source pool is admitted by a step stage with tier hits (`Settle` is a
    /// stage iteration).
    stage: bool,
}

/// (cap as (blocks, remainder), eviction, immediate, stage), the cap scaled by the
/// block size as the source pool's is.
fn tier_setup() -> impl Strategy<Value = (Option<(u64, u64)>, EvictKind, bool, bool)> {
    (
        proptest::option::weighted(0.9, (0u64..10, 0u64..16)),
        prop_oneof![
            Just(EvictKind::Lru),
            Just(EvictKind::Mru),
            Just(EvictKind::AllNan),
            Just(EvictKind::Priority),
            Just(EvictKind::Waiting),
            Just(EvictKind::Lfu),
            Just(EvictKind::MostHit),
        ],
        any::<bool>(),
        proptest::bool::weighted(0.7),
    )
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just((1u64, 1u64)), Just((4, 2)), Just((16, 6))],
        proptest::option::weighted(0.9, (4u64..28, 0u64..16)),
        prop_oneof![
            Just(QueueKind::Fifo),
            Just(QueueKind::Priority),
            Just(QueueKind::LongestPrefix),
            Just(QueueKind::Aged),
            Just(QueueKind::FitsFirst),
            Just(QueueKind::Shortest),
            Just(QueueKind::Vtc),
            Just(QueueKind::Wfq),
        ],
        prop_oneof![
            Just(EvictKind::Lru),
            Just(EvictKind::Priority),
            Just(EvictKind::Waiting),
            Just(EvictKind::MostWaited),
            Just(EvictKind::Lfu),
            Just(EvictKind::MostHit),
            Just(EvictKind::Mru),
            Just(EvictKind::AllNan),
        ],
        (
            prop_oneof![
                2 => Just(PreemptKind::None),
                2 => Just(PreemptKind::Lifo),
                1 => Just(PreemptKind::Priority),
                1 => Just(PreemptKind::Largest),
                1 => Just(PreemptKind::FitsYoungest),
            ],
            any::<bool>(),
        ),
        any::<bool>(),
        proptest::option::of(any::<bool>()),
        proptest::option::weighted(0.7, tier_setup()),
    )
        .prop_map(
            |((block, scale), cap, queue, evict, (preempt, requeue), scan, spill, tier)| Setup {
                block,
                scale,
                cap: cap.map(|(blocks, rem)| blocks * block + rem % block),
                queue,
                evict,
                preempt,
                requeue,
                scan,
                tier: tier
                    .filter(|_| spill.is_some())
                    .map(|(cap, evict, immediate, stage)| TierSetup {
                        cap: cap.map(|(blocks, rem)| blocks * block + rem % block),
                        evict,
                        immediate,
                        stage,
                    }),
                spill,
            },
        )
}

const ME: PoolRef = PoolRef { pool: 0, member: 0 };
/// Where common::spill_policy spills.
const TIER: PoolRef = PoolRef { pool: 1, member: 0 };

fn queue_policy(k: QueueKind) -> QueuePolicy {
    match k {
        QueueKind::Fifo => QueuePolicy::Fifo,
        QueueKind::Priority => queue_by_priority(),
        QueueKind::LongestPrefix => queue_longest_prefix(),
        QueueKind::Aged => queue_aged(),
        QueueKind::FitsFirst => queue_fits_first(ME),
        QueueKind::Shortest => queue_shortest(),
        QueueKind::Vtc | QueueKind::Wfq => queue_by_service(),
    }
}

fn evict_policy(k: EvictKind) -> EvictPolicy {
    match k {
        EvictKind::Lru => EvictPolicy::Lru,
        EvictKind::Priority => evict_by_priority(),
        EvictKind::Waiting => evict_by_waiting(),
        EvictKind::MostWaited => evict_most_waited(),
        EvictKind::Lfu => evict_lfu(),
        EvictKind::MostHit => evict_most_hit(),
        EvictKind::Mru => evict_mru(),
        EvictKind::AllNan => evict_all_nan(),
    }
}

/// R30: the counters `Vtc` and `Wfq` read, grouped by `priority` (which `SetPriority`
/// changes, also while a hold waits).
fn fair_config(k: QueueKind) -> Option<FairConfig> {
    let fair = |weight| FairConfig {
        by: 0,
        prefill: 1.0,
        decode: 2.0,
        weight,
    };
    match k {
        QueueKind::Vtc => Some(fair(None)),
        QueueKind::Wfq => Some(fair(Some(1))),
        _ => None,
    }
}

fn preempt_policy(k: PreemptKind) -> Preempt {
    match k {
        PreemptKind::None => Preempt::None,
        PreemptKind::Lifo => Preempt::Lifo,
        PreemptKind::Priority => preempt_by_priority(),
        PreemptKind::Largest => preempt_largest(),
        PreemptKind::FitsYoungest => preempt_fits_youngest(ME),
    }
}

fn naive_evict(evict: &EvictPolicy) -> Option<NaiveKeys> {
    match evict {
        EvictPolicy::Lru => None,
        EvictPolicy::By { keys, layout } => Some(NaiveKeys::compiled(keys.clone(), layout.clone())),
    }
}

fn build(setup: &Setup) -> (Pool, Naive) {
    let queue = queue_policy(setup.queue);
    let evict = evict_policy(setup.evict);
    let naive_queue = match &queue {
        QueuePolicy::Fifo => None,
        QueuePolicy::By { keys, layout } => Some(NaiveKeys::compiled(keys.clone(), layout.clone())),
    };
    let naive_evict = naive_evict(&evict);
    let mut pool = Pool::new(PoolConfig {
        me: ME,
        cap: setup
            .cap
            .map_or(Limit::Unbounded, |c| Limit::Finite(Units(c))),
        block: Units(setup.block),
        evict,
        preempt: preempt_policy(setup.preempt),
        requeue: if setup.requeue {
            Requeue::Keyed
        } else {
            Requeue::Head
        },
        queue,
        queue_tie: QueueTie::Enqueue,
        queue_index: if setup.scan {
            QueueIndex::Scan
        } else {
            QueueIndex::Auto
        },
        spill: setup.spill.map(spill_policy),
        fair: fair_config(setup.queue),
    })
    .expect("valid config");
    pool.set_logging(true);
    let naive = Naive::new(NaiveConfig {
        me: ME,
        cap: setup.cap,
        block: setup.block,
        queue: naive_queue,
        evict: naive_evict,
        lifo: matches!(setup.preempt, PreemptKind::Lifo),
        preempt_by: match preempt_policy(setup.preempt) {
            Preempt::By { keys, layout } => Some(NaiveKeys::compiled(keys, layout)),
            Preempt::None | Preempt::Lifo => None,
        },
        requeue_keyed: setup.requeue,
        spill: setup.spill.map(|a| NaiveSpill::compiled(spill_policy(a))),
        fair: fair_config(setup.queue),
    });
    (pool, naive)
}

fn build_tier(block: u64, t: &TierSetup) -> (Pool, Naive) {
    let evict = evict_policy(t.evict);
    let naive_evict = naive_evict(&evict);
    let mut pool = Pool::new(PoolConfig {
        me: TIER,
        cap: t.cap.map_or(Limit::Unbounded, |c| Limit::Finite(Units(c))),
        block: Units(block),
        evict,
        ..PoolConfig::default()
    })
    .expect("valid tier config");
    pool.set_logging(true);
    let naive = Naive::new(NaiveConfig {
        me: TIER,
        cap: t.cap,
        block,
        queue: None,
        evict: naive_evict,
        lifo: false,
        preempt_by: None,
        requeue_keyed: false,
        spill: None,
        fair: None,
    });
    (pool, naive)
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000)
}

/// Runs one sequence through both; the first difference fails it.
fn run(setup: Setup, ops: &[driver::Op]) -> Result<Driver, TestCaseError> {
    let (pool, naive) = build(&setup);
    let tier = setup.tier.as_ref().map(|t| build_tier(setup.block, t));
    let parts = Parts {
        pool,
        naive,
        tier,
        block: setup.block,
        scale: setup.scale,
        immediate: setup.tier.as_ref().is_some_and(|t| t.immediate),
        stage: setup.tier.as_ref().is_some_and(|t| t.stage),
        // Slot 0 `priority` (from the serial), slot 1 `serial`, as common's keys read.
        attrs: |id| vec![(id % 3) as f64, id as f64],
        priority: 0,
    };
    driver::run(parts, ops)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 20_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn engine_matches_the_naive_model(
        setup in setup(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        run(setup, &ops)?;
    }
}

/// Queue keys that read only fixed inputs: `queue by (priority, serial)` and
/// `queue by (units, priority)`.
fn fixed_key_setup() -> impl Strategy<Value = Setup> {
    (
        setup(),
        prop_oneof![Just(QueueKind::Priority), Just(QueueKind::Shortest)],
    )
        .prop_map(|(mut s, q)| {
            s.queue = q;
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases() / 5,
        ..ProptestConfig::default()
    })]

    /// The ordered index and the compiled scan give the same observable order: the
    /// same sequence through both structures logs the same events.
    #[test]
    fn index_and_scan_give_the_same_order(
        setup in fixed_key_setup(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let indexed = run(Setup { scan: false, ..setup.clone() }, &ops)?;
        let scanned = run(Setup { scan: true, ..setup }, &ops)?;
        prop_assert!(indexed.pool.queue_is_indexed());
        prop_assert!(!scanned.pool.queue_is_indexed());
        eq("logs of the index and the scan", &indexed.full_log, &scanned.full_log)?;
    }
}

/// The generator keeps reaching every event (a fixed seed, so this cannot flake):
/// a differential test is only as good as the paths it drives.
#[test]
fn the_generator_reaches_every_event() {
    const SEQUENCES: usize = 1000;
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (setup(), proptest::collection::vec(op(), 1..200));
    let mut seen = Seen::default();
    // Preemptions by `preempt by` keys (R18), and preemptions re-queued by keys (R19).
    let (mut by_keys, mut requeued) = (0, 0);
    for _ in 0..SEQUENCES {
        let (setup, ops) = strategy
            .new_tree(&mut runner)
            .expect("strategies generate")
            .current();
        let keyed = !matches!(setup.preempt, PreemptKind::None | PreemptKind::Lifo);
        let requeue = setup.requeue;
        let d = run(setup, &ops).expect("engine and model agree");
        let preempts = d.seen.kinds.get("preempt").copied().unwrap_or(0);
        by_keys += if keyed { preempts } else { 0 };
        requeued += if requeue { preempts } else { 0 };
        seen.add(&d.seen);
    }
    assert!(
        by_keys >= 20 && requeued >= 20,
        "only {by_keys} preemptions by keys and {requeued} re-queued by keys"
    );
    for kind in [
        "enqueue",
        "reject",
        "admit",
        "admit with a hit",
        "grow",
        "grow-wait",
        "preempt",
        "preempt caching",
        "evict",
        "release",
        "release caching",
        "spill",
        "store",
        "tier evict",
        "tier-load",
    ] {
        let n = seen.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            n >= 20,
            "only {n} `{kind}` events in {SEQUENCES} sequences: {seen:?}"
        );
    }
    // Rarer paths, each of which must be reached: a write that stores nothing (a key
    // written twice before the tier evicts it, a tier cap below one block, or an
    // ended session the host no longer answers for and the tier holds nothing of),
    // and a stage that loads only part of a tier hit.
    for kind in [
        "store duplicate",
        "store no room",
        "store refused",
        "tier-load partial",
    ] {
        let n = seen.kinds.get(kind).copied().unwrap_or(0);
        assert!(n >= 1, "no `{kind}` in {SEQUENCES} sequences: {seen:?}");
    }
}
