//! Shared helpers of the `poolc build` tests: unique temporary directories that
//! clean up after themselves, the example specs (which tests/codegen_examples.rs
//! reads too), a checked program built by hand whose functions are random
//! expression trees (the differential corpus of tests/codegen.rs, placed at every
//! site: queue and evict keys, spill `when` and `work`, stage `time`), input values
//! with IEEE corners and ties, a build of a program with the library API, and a
//! replay of a spec through the reference host with its log (the hand-worked host
//! tests read it). Nothing here asserts a rule itself.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use poolc::aot::object::{Prefix, Target};
use poolc::aot::{BuildOptions, Emit};
use poolc::ir::{
    Attr, AttrId, BinaryOp, Evict, Expr, Fair, Input, Join, JoinRule, Layout, Limit, LinkStage,
    Member, Pool, PoolId, PreemptMode, Program, Query, QueryKind, QueryTarget, QueuePolicy,
    QueueTie, Read, ReadSet, Requeue, Session, SiteExpr, Slot, Spill, Stage, StageId, StageKind,
    StepStage, Var,
};
use proptest::prelude::*;

#[path = "../expr_tree/mod.rs"]
pub mod expr_tree;
use expr_tree::SPECIAL;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A directory under the system's temporary directory, unique to this process and
/// call, removed (with everything in it) on drop.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("poolc-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temporary directory");
        TempDir { path }
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Replays `workload` through spec `text` (compiled with the JIT) on the reference
/// host, with the JSON-lines log on: the report and the log's bytes. Sessions left
/// unfinished are reported, not an error.
pub fn replay_logged(
    text: &str,
    workload: &poolrt::trace::Workload,
    latencies: poolrt::host::LatencySamples,
) -> Logged {
    let c = poolc::compile(text, &poolc::Options::default())
        .unwrap_or_else(|d| panic!("{text}: {d:?}"));
    let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages())
        .expect("a compiled spec bridges");
    let mut log = Vec::new();
    let report = poolrt::host::Host::new(config, workload)
        .expect("the host builds")
        .run(poolrt::host::RunOptions {
            log: Some(&mut log),
            latencies,
            allow_unfinished: true,
            ..poolrt::host::RunOptions::default()
        })
        .expect("the replay runs");
    (report, log)
}

/// A replay's report and its log's bytes ([`replay_logged`]).
pub type Logged = (poolrt::host::Report, Vec<u8>);

/// Every spec of `dir` (from the repository root, sorted) replayed twice over
/// `workload` with [`replay_logged`] (sketch percentiles): the determinism tests
/// compare the two.
pub fn replayed_twice(
    dir: &str,
    workload: &poolrt::trace::Workload,
) -> Vec<(PathBuf, [Logged; 2])> {
    let sketch = poolrt::host::LatencySamples::Sketch;
    specs_in(dir)
        .into_iter()
        .map(|spec| {
            let text = std::fs::read_to_string(&spec).expect("example readable");
            let runs = [(); 2].map(|()| replay_logged(&text, workload, sketch));
            (spec, runs)
        })
        .collect()
}

/// The `.pool` files of `dir` (from the repository root), sorted.
pub fn specs_in(dir: &str) -> Vec<PathBuf> {
    let mut specs: Vec<_> = std::fs::read_dir(repo().join(dir))
        .expect("the folder exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pool"))
        .collect();
    specs.sort();
    specs
}

/// The folders whose `.pool` files are the shipped examples: examples/ itself, the
/// fleets (examples/fleet/) carrying the route keys (R22) into every equality, the
/// disaggregated fleets (examples/disagg/) the handoff work (R26), and the
/// deployments `poolc model` wrote (examples/deployments/) their `sum`s (R29).
pub const EXAMPLE_DIRS: [&str; 4] = [
    "examples",
    "examples/fleet",
    "examples/disagg",
    "examples/deployments",
];

/// The path of every example spec of [`EXAMPLE_DIRS`], sorted.
pub fn example_paths() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = EXAMPLE_DIRS
        .into_iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).expect("examples/ exists"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pool"))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no examples/*.pool found");
    out
}

/// An example's snapshot name: its file stem, prefixed by its folder outside
/// examples/ itself (`fleet_<name>`, `disagg_<name>`, `deployments_<name>`).
pub fn snapshot_name(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("spec");
    match path.parent().and_then(|d| d.file_name()?.to_str()) {
        Some(dir @ ("fleet" | "disagg" | "deployments")) => format!("{dir}_{stem}"),
        _ => stem.to_string(),
    }
}

/// Every example spec with its text, sorted by path.
pub fn examples() -> Vec<(PathBuf, String)> {
    example_paths()
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("example readable");
            (p, text)
        })
        .collect()
}

/// The specs of examples/policies/ with their texts, sorted: one deployment with a
/// policy each (docs/POLICIES.md), so they join the equalities that compare compiled
/// code (interpreter == JIT == shared object) but not the snapshots, the aarch64 run
/// or the C host, where their shared deployment would add nothing.
pub fn policy_examples() -> Vec<(PathBuf, String)> {
    specs_in("examples/policies")
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("example readable");
            (p, text)
        })
        .collect()
}

/// The checked program of an example.
pub fn example_program(path: &Path, text: &str) -> Program {
    poolc::check(text, &poolc::Options::default())
        .unwrap_or_else(|d| panic!("{} does not check: {d:#?}", path.display()))
}

/// Options for a build of `emit` for `target` with the default prefix.
pub fn options(target: &Target, emit: Emit) -> BuildOptions {
    BuildOptions {
        target: target.clone(),
        emit,
        prefix: Prefix::default(),
        linker: None,
        header: None,
        source_name: "test".to_string(),
    }
}

pub fn host() -> Target {
    Target::host().expect("the tests run on a supported target")
}

pub fn aarch64() -> Target {
    Target::parse("aarch64-unknown-linux-gnu").expect("a supported triple")
}

/// Builds `program` into `dir/name` (a shared object for this machine).
pub fn build_so(program: &Program, dir: &TempDir, name: &str) -> PathBuf {
    let out = dir.join(name);
    poolc::aot::build(program, &out, &options(&host(), Emit::SharedObject))
        .unwrap_or_else(|e| panic!("build of {name} failed: {e}"));
    out
}

// ---- the expression corpus ----

/// Input values: corners, any bits, small integers (ties are frequent).
pub fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => proptest::sample::select(SPECIAL.to_vec()),
        1 => any::<f64>(),
        2 => (-4i32..4).prop_map(f64::from),
    ]
}

/// Row and ctx slots of every corpus site.
pub const ROW_SLOTS: u32 = 4;
pub const CTX_SLOTS: u32 = 3;

/// Well-formed trees of depth ≤ 6 over every operator and builtin, the ternary and
/// (with `rows`) both slot kinds, as tests/codegen.rs generates them.
pub fn expr(rows: bool) -> impl Strategy<Value = Expr> {
    let row_slots = if rows { ROW_SLOTS } else { 0 };
    let leaf = prop_oneof![
        proptest::sample::select(SPECIAL.to_vec()).prop_map(Expr::Const),
        (-1000i32..1000).prop_map(|v| Expr::Const(f64::from(v))),
        (0..CTX_SLOTS).prop_map(|i| Expr::Slot(Slot::Ctx(i))),
        (0..row_slots.max(1)).prop_map(move |i| if rows {
            Expr::Slot(Slot::Row(i))
        } else {
            Expr::Slot(Slot::Ctx(i % CTX_SLOTS))
        }),
    ];
    expr_tree::tree(leaf)
}

/// A runner whose draws depend only on `seed`, so a failure reproduces.
pub fn seeded(seed: u8) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[0] = seed;
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// One value drawn from `strategy`.
pub fn draw<S: Strategy>(runner: &mut TestRunner, strategy: &S) -> S::Value {
    strategy
        .new_tree(runner)
        .expect("the strategy draws")
        .current()
}

/// A random row and ctx of `shape`'s lengths, from [`value`].
pub fn draw_row_ctx(runner: &mut TestRunner, shape: poolrt::policy::Shape) -> (Vec<f64>, Vec<f64>) {
    let row = draw(runner, &proptest::collection::vec(value(), shape.row));
    let ctx = draw(runner, &proptest::collection::vec(value(), shape.ctx));
    (row, ctx)
}

/// A site expression on `layout` with the read-set of what it reads, as sema
/// gives it (`ir::verify` checks that the two agree).
fn site(expr: Expr, layout: &Layout) -> SiteExpr {
    fn walk(e: &Expr, layout: &Layout, out: &mut BTreeSet<Read>) {
        match e {
            Expr::Slot(slot) => {
                let input = match slot {
                    Slot::Row(i) => layout.row[*i as usize],
                    Slot::Ctx(i) => layout.ctx[*i as usize],
                };
                out.insert(match input {
                    Input::Attr(a) => Read::Attr(a),
                    Input::Var(v) => Read::Var(v),
                    Input::Query(q) => Read::Query(q),
                    Input::Enqueued | Input::Scored(_) | Input::Over(..) => {
                        panic!("the corpus layout has no `{input:?}`")
                    }
                });
            }
            _ => e.children().into_iter().for_each(|x| walk(x, layout, out)),
        }
    }
    let mut reads = BTreeSet::new();
    walk(&expr, layout, &mut reads);
    SiteExpr {
        expr,
        reads: ReadSet(reads),
    }
}

/// A checked-looking program whose every function is a random expression:
/// `pools` pools `c0`, `c1`, … each with `keys` queue keys, `keys` evict keys and a
/// spill `when`/`work` (to the last pool, via the link stage `l`), and a step stage
/// `s` whose `time` is random too, a ctx term plus a `sum` of a row term. Every
/// site has 4 row slots (attributes `a0`–`a3`)
/// and 3 ctx slots (`now`, `units`, `free(c0)`). Read-sets are what each
/// expression reads, and every pool and stage is a family of one joined member for
/// member, so the program passes `ir::verify` like one from sema.
pub fn corpus_program(seed: u8, pools: usize, keys: usize) -> Program {
    let mut runner = seeded(seed);
    let row_expr = expr(true);
    let mut attrs = vec![
        Attr {
            name: "serial".into(),
            default: None,
            builtin: true,
        },
        Attr {
            name: "arrival".into(),
            default: None,
            builtin: true,
        },
    ];
    for i in 0..ROW_SLOTS {
        attrs.push(Attr {
            name: format!("a{i}"),
            default: Some(0.0),
            builtin: false,
        });
    }
    let layout = Layout {
        row: (0..ROW_SLOTS).map(|i| Input::Attr(AttrId(2 + i))).collect(),
        ctx: vec![
            Input::Var(Var::Now),
            Input::Var(Var::Units),
            Input::Query(Query {
                kind: QueryKind::Free,
                target: QueryTarget::Pool(PoolId(0), Member::Index(0)),
            }),
        ],
    };
    // The time reads its ctx and sums over take rows of the four attributes (R29).
    let time_layout = layout.clone();
    let time = Expr::Binary(
        BinaryOp::Add,
        Box::new(draw(&mut runner, &expr(false))),
        Box::new(Expr::Sum(Box::new(draw(&mut runner, &row_expr)))),
    );
    let step = StepStage {
        budget: Limit::Finite(8192),
        seats: Limit::Finite(256),
        chunk: Limit::Unbounded,
        exclusive_prefill: false,
        time: site(time, &time_layout),
        time_layout,
    };
    let stage = |name: &str, kind: StageKind| Stage {
        name: name.into(),
        count: 1,
        kind,
    };
    let stages = vec![
        stage("s", StageKind::Step(step)),
        stage("l", StageKind::Link(LinkStage::default())),
    ];
    let mut out = Vec::with_capacity(pools);
    for p in 0..pools {
        let list = |runner: &mut TestRunner| -> Vec<SiteExpr> {
            (0..keys)
                .map(|_| site(draw(runner, &row_expr), &layout))
                .collect()
        };
        let queue = list(&mut runner);
        let evict = list(&mut runner);
        let preempt = list(&mut runner);
        let spill = (p + 1 < pools).then(|| Spill {
            tier: Join {
                target: PoolId(pools as u32 - 1),
                rule: JoinRule::MemberForMember,
            },
            link: Join {
                target: StageId(1),
                rule: JoinRule::MemberForMember,
            },
            work: site(draw(&mut runner, &row_expr), &layout),
            pred: site(draw(&mut runner, &row_expr), &layout),
        });
        out.push(Pool {
            name: format!("c{p}"),
            count: 1,
            cap: Limit::Finite(1 << 20),
            block: Some(16),
            evict: Evict::By(evict),
            preempt: PreemptMode::By(preempt),
            requeue: Requeue::Keyed,
            queue: QueuePolicy::By(queue),
            // Both R21 ties, so that the manifest's `queue_tie` is checked too.
            queue_tie: if p % 2 == 0 {
                QueueTie::Id
            } else {
                QueueTie::Enqueue
            },
            spill,
            admit_via: Some(Join {
                target: StageId(0),
                rule: JoinRule::MemberForMember,
            }),
            queue_layout: layout.clone(),
            entry_layout: layout.clone(),
            resident_layout: layout.clone(),
            // The corpus's families have one member; the fleets route (examples()).
            route: None,
            handoff: None,
            // Both with and without R30's counters, so the manifest's `fair` is too.
            fair: (p % 2 == 1).then_some(Fair {
                by: AttrId(0),
                prefill: 1.0,
                decode: 0.5,
                weight: Some(AttrId(1)),
            }),
        });
    }
    Program {
        values: vec![],
        session: Session { attrs },
        stages,
        pools: out,
    }
}
