//! The engine against the naive reference model with keys the compiler makes: random
//! specs (queue, eviction, preempt (R18) and spill keys drawn as random expressions
//! over the names their site may read, random caps, block sizes, preemption with or
//! without `requeue keyed` (R19), and an optional tier
//! with its own random eviction) are compiled; the engine pool runs the JIT's key
//! functions (through `bridge::pool_config`, as `poolc run` does), the naive model
//! evaluates the same IR expressions with `poolc::interp`. The differential driver of
//! runtime/tests/naive (included by path, as the engine's own test uses it) applies
//! the same random operation sequence to both and compares every result, event,
//! notice and state after each operation.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../runtime/tests/common/mod.rs"]
mod common;
#[path = "../runtime/tests/naive/driver.rs"]
mod driver;
#[path = "../runtime/tests/naive/mod.rs"]
mod naive;

use std::rc::Rc;

use naive::{NaiveConfig, NaiveKeys, NaiveSpill};
use poolc::bridge::pool_config;
use poolc::ir::{self, Expr};
use poolrt::{EvictPolicy, Limit, Pool, PoolConfig, Preempt, QueuePolicy, Requeue};
use proptest::prelude::*;

/// Names a queue key may read (S1), besides literals: the session's attributes, the
/// hold's header values, `waited`, `now`, `service` (R30: the pool keeps counters
/// by `tenant`, weighted by `priority`, which may be 0) and queries of its own pool
/// (a query of another pool or stage is the host's answer, the same function on both
/// sides).
const QUEUE_NAMES: [&str; 15] = [
    "service",
    "priority",
    "tenant",
    "serial",
    "arrival",
    "units",
    "reserve",
    "computed",
    "waited",
    "now",
    "free(kv)",
    "queued(kv)",
    "cached(kv)",
    "used(kv)",
    "cap(kv)",
];
/// Names a preempt key may read (R18).
const PREEMPT_NAMES: [&str; 12] = [
    "priority",
    "tenant",
    "serial",
    "arrival",
    "units",
    "computed",
    "admitted",
    "now",
    "free(kv)",
    "queued(kv)",
    "used(kv)",
    "cap(kv)",
];
/// Names an evict key may read.
const ENTRY_NAMES: [&str; 9] = [
    "priority", "tenant", "serial", "arrival", "size", "age", "last", "waiting", "hits",
];
/// Names a spill predicate may read: an evict key's and `units` (the units written).
const SPILL_NAMES: [&str; 10] = [
    "priority", "tenant", "serial", "arrival", "size", "age", "last", "waiting", "hits", "units",
];
const BINARY: [&str; 13] = [
    "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
];
const LITERALS: [&str; 7] = ["0", "1", "2", "3", "0.5", "16", "-1"];

/// A random expression over `names` (every operator, the ternary and the builtins,
/// depth ≤ 3), fully parenthesised so that the text is the tree.
fn expr(names: &'static [&'static str]) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        3 => proptest::sample::select(names),
        1 => proptest::sample::select(&LITERALS[..]),
    ]
    .prop_map(String::from);
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            3 => (proptest::sample::select(&BINARY[..]), inner.clone(), inner.clone())
                .prop_map(|(op, a, b)| format!("({a} {op} {b})")),
            1 => (proptest::sample::select(&["- ", "! "][..]), inner.clone())
                .prop_map(|(op, a)| format!("({op}{a})")),
            1 => (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            1 => (proptest::sample::select(&["min", "max"][..]), inner.clone(), inner.clone())
                .prop_map(|(f, a, b)| format!("{f}({a}, {b})")),
            1 => (proptest::sample::select(&["abs", "floor", "ceil", "sqrt"][..]), inner)
                .prop_map(|(f, a)| format!("{f}({a})")),
        ]
    })
    .boxed()
}

/// A spill `work`: finite and non-negative on every row the pool builds (sums and
/// products of non-negative names and literals), because the events carry it and a
/// NaN would never compare equal to itself.
fn work() -> BoxedStrategy<String> {
    let leaf = proptest::sample::select(
        &[
            "units", "size", "age", "waiting", "hits", "priority", "serial", "1", "2", "0.5",
        ][..],
    )
    .prop_map(String::from);
    leaf.prop_recursive(2, 6, 2, |inner| {
        (
            proptest::sample::select(&["+", "*"][..]),
            inner.clone(),
            inner,
        )
            .prop_map(|(op, a, b)| format!("({a} {op} {b})"))
    })
    .boxed()
}

fn key_list(names: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(0.8, proptest::collection::vec(expr(names), 1..=3))
        .prop_map(|keys| keys.map(|k| format!("by ({})", k.join(", "))))
}

#[derive(Clone, Debug)]
struct Setup {
    block: u64,
    scale: u64,
    /// Units; `None` is `cap inf`.
    cap: Option<u64>,
    /// `by (…)`, or `None` for `fifo`.
    queue: Option<String>,
    /// `by (…)`, or `None` for `lru`.
    evict: Option<String>,
    /// `none`, `lifo` or `by (…)`.
    preempt: String,
    requeue: bool,
    /// (work, pred).
    spill: Option<(String, String)>,
    tier: Option<Tier>,
}

#[derive(Clone, Debug)]
struct Tier {
    cap: Option<u64>,
    evict: Option<String>,
    immediate: bool,
    stage: bool,
}

fn setup() -> impl Strategy<Value = Setup> {
    let scaled = |block: u64| {
        proptest::option::weighted(0.9, (0u64..28, 0u64..16))
            .prop_map(move |c| c.map(|(blocks, rem)| (blocks * block + rem % block).max(1)))
    };
    prop_oneof![Just((1u64, 1u64)), Just((4, 2)), Just((16, 6))].prop_flat_map(
        move |(block, scale)| {
            (
                scaled(block),
                key_list(&QUEUE_NAMES),
                key_list(&ENTRY_NAMES),
                (
                    prop_oneof![
                        Just("none".to_string()),
                        Just("lifo".to_string()),
                        key_list(&PREEMPT_NAMES).prop_map(|k| k.unwrap_or("lifo".into())),
                    ],
                    any::<bool>(),
                ),
                proptest::option::weighted(0.6, (work(), expr(&SPILL_NAMES))),
                proptest::option::weighted(
                    0.7,
                    (
                        scaled(block),
                        key_list(&ENTRY_NAMES),
                        any::<bool>(),
                        any::<bool>(),
                    ),
                ),
            )
                .prop_map(
                    move |(cap, queue, evict, (preempt, requeue), spill, tier)| Setup {
                        block,
                        scale,
                        cap,
                        queue,
                        evict,
                        preempt,
                        requeue,
                        tier: tier.filter(|_| spill.is_some()).map(
                            |(cap, evict, immediate, stage)| Tier {
                                cap,
                                evict,
                                immediate,
                                stage,
                            },
                        ),
                        spill,
                    },
                )
        },
    )
}

fn cap(c: Option<u64>) -> String {
    c.map_or("inf".to_string(), |c| c.to_string())
}

/// The spec text of a setup: pool 0 `kv` (the pool under test), pool 1 `host` (its
/// tier, declared whether or not the setup models one).
fn spec(s: &Setup) -> String {
    let spill = s.spill.as_ref().map_or(String::new(), |(work, pred)| {
        format!("spill host via pcie ({work}) when ({pred});")
    });
    let tier = s.tier.as_ref();
    format!(
        "session {{ priority = 0; tenant = 0; }}
         stage engine {{ step; budget 1000; seats 64; time (1); }}
         stage pcie {{ link; rate inf; }}
         pool kv {{ cap {}; block {}; queue {}; evict {}; preempt {};{} admit via engine; {spill}
                    fair tenant (1, 2) weight priority; }}
         pool host {{ cap {}; block {}; evict {}; }}",
        cap(s.cap),
        s.block,
        s.queue.as_deref().unwrap_or("fifo"),
        s.evict.as_deref().unwrap_or("lru"),
        s.preempt,
        if s.requeue { " requeue keyed;" } else { "" },
        cap(tier.and_then(|t| t.cap)),
        s.block,
        tier.and_then(|t| t.evict.as_deref()).unwrap_or("lru"),
    )
}

/// A key list evaluated by the interpreter.
fn interpreted(keys: &[ir::SiteExpr], layout: &poolrt::Layout) -> NaiveKeys {
    let exprs: Vec<Expr> = keys.iter().map(|k| k.expr.clone()).collect();
    NaiveKeys {
        count: exprs.len(),
        eval: Rc::new(move |k, row, ctx| poolc::interp::eval(&exprs[k], row, ctx)),
        layout: layout.clone(),
    }
}

/// The engine pool (JIT keys) and the naive model (interpreted keys) of pool `id`.
fn build(compiled: &poolc::Compiled, id: ir::PoolId) -> (Pool, naive::Naive) {
    let program = compiled.program();
    let ir = program.pool(id);
    let config: PoolConfig =
        pool_config(program, id, 0, compiled.pool(id)).expect("the bridge accepts the spec");
    let queue = match (&ir.queue, &config.queue) {
        (ir::QueuePolicy::By(keys), QueuePolicy::By { layout, .. }) => {
            Some(interpreted(keys, layout))
        }
        _ => None,
    };
    let evict = match (&ir.evict, &config.evict) {
        (ir::Evict::By(keys), EvictPolicy::By { layout, .. }) => Some(interpreted(keys, layout)),
        _ => None,
    };
    let preempt_by = match (&ir.preempt, &config.preempt) {
        (ir::PreemptMode::By(keys), Preempt::By { layout, .. }) => Some(interpreted(keys, layout)),
        _ => None,
    };
    let spill = match (&ir.spill, &config.spill) {
        (Some(s), Some(sp)) => Some(NaiveSpill {
            fns: interpreted(&[s.pred.clone(), s.work.clone()], &sp.layout),
            tier: sp.tier,
            link: sp.link,
        }),
        _ => None,
    };
    let naive = naive::Naive::new(NaiveConfig {
        me: config.me,
        cap: match config.cap {
            Limit::Finite(u) => Some(u.0),
            Limit::Unbounded => None,
        },
        block: config.block.0,
        queue,
        evict,
        lifo: matches!(config.preempt, Preempt::Lifo),
        preempt_by,
        requeue_keyed: config.requeue == Requeue::Keyed,
        spill,
        fair: config.fair,
    });
    let mut pool = Pool::new(config).expect("the runtime accepts the spec");
    pool.set_logging(true);
    (pool, naive)
}

fn run(setup: &Setup, ops: &[driver::Op]) -> Result<driver::Driver, TestCaseError> {
    let source = spec(setup);
    let compiled = poolc::compile(&source, &poolc::Options::default()).map_err(|d| {
        TestCaseError::fail(format!(
            "the generated spec does not compile: {d:?}\n{source}"
        ))
    })?;
    let kv = compiled.program().find_pool("kv").expect("kv");
    let host = compiled.program().find_pool("host").expect("host");
    let (pool, naive) = build(&compiled, kv);
    let tier = setup.tier.as_ref().map(|_| build(&compiled, host));
    let parts = driver::Parts {
        pool,
        naive,
        tier,
        block: setup.block,
        scale: setup.scale,
        immediate: setup.tier.as_ref().is_some_and(|t| t.immediate),
        stage: setup.tier.as_ref().is_some_and(|t| t.stage),
        // The spec's attribute slots: serial, arrival (built in), priority, tenant.
        attrs: |id| vec![id as f64, id as f64 * 0.5, (id % 3) as f64, (id % 2) as f64],
        priority: 2,
    };
    driver::run(parts, ops).map_err(|e| TestCaseError::fail(format!("{e}\nspec:\n{source}")))
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 5_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn jit_engine_matches_the_interpreted_naive_model(
        setup in setup(),
        ops in proptest::collection::vec(driver::op(), 1..200),
    ) {
        run(&setup, &ops)?;
    }
}

/// The generated specs reach what the test is for (a fixed seed, so this cannot
/// flake): keyed queues both indexed (fixed keys) and scanned, keyed eviction, spills
/// with tier stores, tier evictions and tier loads.
#[test]
fn the_generated_specs_reach_every_structure() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (setup(), proptest::collection::vec(driver::op(), 1..200));
    let mut seen = driver::Seen::default();
    let (mut indexed, mut scanned, mut keyed_evictions) = (0, 0, 0);
    const SPECS: usize = 400;
    for _ in 0..SPECS {
        let (setup, ops) = strategy
            .new_tree(&mut runner)
            .expect("strategies generate")
            .current();
        let d = run(&setup, &ops).expect("engine and model agree");
        if setup.queue.is_some() {
            if d.pool.queue_is_indexed() {
                indexed += 1;
            } else {
                scanned += 1;
            }
        }
        if setup.evict.is_some() {
            keyed_evictions += d.seen.kinds.get("evict").copied().unwrap_or(0);
        }
        seen.add(&d.seen);
    }
    assert!(
        keyed_evictions >= 100,
        "{keyed_evictions} evictions by random keys in {SPECS} specs"
    );
    assert!(
        indexed >= 10 && scanned >= 10,
        "{indexed} indexed and {scanned} scanned keyed queues in {SPECS} specs"
    );
    for kind in [
        "admit with a hit",
        "admit out of order",
        "preempt",
        "evict",
        "spill",
        "store",
        "tier evict",
        "tier-load",
    ] {
        let n = seen.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            n >= 10,
            "only {n} `{kind}` events in {SPECS} specs: {seen:?}"
        );
    }
}

/// R8 with keys that read no row slot (`queue by (now, 1)` reads only the ctx): every
/// hold has the same keys, so holds are admitted in enqueue order. The scan once
/// failed here on rows of length 0.
#[test]
fn r8_keys_that_read_no_row_slot_admit_in_enqueue_order() {
    let source = "session { priority = 0; }
                  pool kv { cap 4; block 1; queue by (now, 1); }";
    let compiled = poolc::compile(source, &poolc::Options::default()).expect("compiles");
    let kv = compiled.program().find_pool("kv").expect("kv");
    let config = pool_config(compiled.program(), kv, 0, compiled.pool(kv)).expect("bridge");
    let mut pool = Pool::new(config).expect("runtime accepts it");
    assert!(!pool.queue_is_indexed(), "`now` is read per attempt");
    let env = common::TestEnv::default();
    for s in [3, 1, 2] {
        let header = poolrt::Header::new(poolrt::Units(2), common::chain(&[(s, 2)]));
        pool.enqueue(0.0, poolrt::SessionId(s), header, &env)
            .expect("enqueue");
    }
    pool.settle(1.0, &env).expect("settle");
    // Two of 2 units fit in 4: the first two enqueued.
    let admitted: Vec<poolrt::SessionId> = pool
        .notices()
        .iter()
        .filter_map(|n| match n {
            poolrt::Notice::Admitted { session, .. } => Some(*session),
            _ => None,
        })
        .collect();
    assert_eq!(admitted, [poolrt::SessionId(3), poolrt::SessionId(1)]);
    assert_eq!(pool.waiting_sessions(), [poolrt::SessionId(2)]);
}
