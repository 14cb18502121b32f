//! Criterion benchmarks of the pool engine against the naive reference model
//! (runtime/tests/naive, included by path): admissions per second (`queue fifo`,
//! `queue by (priority, serial)`, the seed's Ascend lanes) at queues of 10, 1,000 and
//! 100,000 waiting holds, and evictions per second (`evict lru`, `evict by
//! (priority, last)`) with 10, 1,000 and 100,000 cache entries. Both sides run the
//! same seeded stream of `poolc_tools::bench` with the same JIT-compiled key functions; one
//! criterion iteration is one admission (or one eviction), so criterion's
//! elements/s are admissions/s (or evictions/s). docs/PERFORMANCE.md records the
//! ratios. Run with
//! `cargo bench --bench runtime -- --warm-up-time 1 --measurement-time 3`.
//!
//! The naive model is slow by design (it rescans every block ever allocated several
//! times per operation), so its largest cases take minutes to set up; the eviction
//! case at 100,000 entries is left out for it (docs/PERFORMANCE.md says why).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a benchmark fails by panicking

#[path = "../runtime/tests/naive/mod.rs"]
mod naive;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use naive::{NHold, Naive, NaiveConfig, NaiveKeys, NaiveSpill};
use poolc_tools::bench::{
    BenchEnv, BenchError, Counts, Driver, EngineMember, HoldSpec, Member, Phase, Stream,
    StreamShape, Wall,
};
use poolrt::{
    Admission, Enqueued, Event, EvictPolicy, Grown, Limit, Pool, PoolConfig, Preempt, QueuePolicy,
    SessionId, Units,
};

const SIZES: [usize; 3] = [10, 1_000, 100_000];
const SEED: u64 = 1;
/// A smaller cap than the examples' keeps the naive model's warm-up (twice the cap
/// in admissions) affordable at a queue of 100,000.
const CAP: u64 = 16_384;
const BLOCK: u64 = 16;

fn spec(queue: &str, evict: &str) -> String {
    format!(
        "session {{ prompt; output = 1; immediate = 0; priority = 0; }}
         pool kv {{ cap {CAP}; block {BLOCK}; queue {queue}; evict {evict}; }}"
    )
}

/// The seed's Ascend lanes, exactly as examples/ascend.pool writes them.
const ASCEND: &str =
    "by (immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3, serial)";

// ----- the naive model as a benchmark member --------------------------------------------

struct NaiveMember {
    naive: Naive,
    counts: Counts,
}

/// How the naive model names itself in [`BenchError`]s.
const NAIVE: &str = "the naive model";

fn naive_err(error: poolrt::Error) -> BenchError {
    BenchError::Refused {
        member: NAIVE,
        error,
    }
}

impl NaiveMember {
    fn new(c: PoolConfig) -> NaiveMember {
        let keyed = |q: QueuePolicy| match q {
            QueuePolicy::By { keys, layout } => Some(NaiveKeys::compiled(keys, layout)),
            QueuePolicy::Fifo => None,
        };
        let evict = match c.evict {
            EvictPolicy::By { keys, layout } => Some(NaiveKeys::compiled(keys, layout)),
            EvictPolicy::Lru => None,
        };
        NaiveMember {
            naive: Naive::new(NaiveConfig {
                me: c.me,
                cap: match c.cap {
                    Limit::Finite(u) => Some(u.0),
                    Limit::Unbounded => None,
                },
                block: c.block.0,
                queue: keyed(c.queue),
                evict,
                lifo: matches!(c.preempt, Preempt::Lifo),
                preempt_by: match c.preempt {
                    Preempt::By { keys, layout } => Some(NaiveKeys::compiled(keys, layout)),
                    Preempt::None | Preempt::Lifo => None,
                },
                requeue_keyed: c.requeue == poolrt::Requeue::Keyed,
                spill: c.spill.map(NaiveSpill::compiled),
                fair: c.fair,
            }),
            counts: Counts::default(),
        }
    }
}

impl Member for NaiveMember {
    type Hold = NHold;

    fn make_hold(&self, spec: &HoldSpec) -> Result<NHold, BenchError> {
        Ok(NHold {
            units: spec.units,
            reserve: spec.units,
            runs: spec.runs.clone(),
            max_hit: None,
        })
    }

    fn enqueue(
        &mut self,
        now: f64,
        s: SessionId,
        hold: NHold,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        match self.naive.enqueue(now, s, hold, env).map_err(naive_err)? {
            Enqueued::Queued => Ok(()),
            Enqueued::Rejected => Err(BenchError::Rejected {
                member: NAIVE,
                session: s,
            }),
        }
    }

    fn admit(&mut self, now: f64, env: &BenchEnv) -> Result<Option<SessionId>, BenchError> {
        let r = self
            .naive
            .admit_next(now, env, |_, _, h| Some(Units(h.units)))
            .map_err(naive_err)?;
        Ok(match r {
            Admission::Admitted { session, .. } => Some(session),
            _ => None,
        })
    }

    fn grow(&mut self, now: f64, s: SessionId, by: u64, env: &BenchEnv) -> Result<(), BenchError> {
        match self.naive.grow(now, s, Units(by), env).map_err(naive_err)? {
            Grown::Grown => Ok(()),
            outcome => Err(BenchError::GrowIncomplete {
                member: NAIVE,
                session: s,
                outcome,
            }),
        }
    }

    fn finish(
        &mut self,
        now: f64,
        s: SessionId,
        computed: u64,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        self.naive
            .set_computed(s, Units(computed))
            .map_err(naive_err)?;
        self.naive.release(now, s, env).map_err(naive_err)?;
        Ok(())
    }

    // The model logs every event; counting (and dropping) them happens between the
    // metered parts of a round.
    fn counts(&mut self) -> Counts {
        for r in self.naive.log.drain(..) {
            match r.event {
                Event::Admit { hit, .. } => {
                    self.counts.admissions += 1;
                    self.counts.hit_units += hit.0;
                }
                Event::Evict { .. } => self.counts.evictions += 1,
                _ => {}
            }
        }
        self.counts
    }
}

// ----- setup and measurement ------------------------------------------------------------

/// A driver for `source`'s pool `kv` in `phase` with `n` waiting holds or entries,
/// warmed up (the cache full, buffers grown).
fn driver<M: Member>(
    source: &str,
    phase: Phase,
    n: usize,
    make: impl FnOnce(PoolConfig) -> M,
) -> Driver<M> {
    let compiled = poolc::compile(source, &poolc::Options::default()).expect("bench spec compiles");
    let program = compiled.program();
    let pool = program.find_pool("kv").expect("the bench spec has kv");
    let mut config = poolc_tools::bench::pool_config(&compiled, pool, compiled.pool(pool))
        .expect("policies match the IR");
    let (shape, warm) = match phase {
        Phase::Admission => (
            StreamShape::admission(
                BLOCK,
                Some(CAP / BLOCK),
                n,
                0.5,
                poolc_tools::bench::MAX_HOLD_BLOCKS,
            )
            .expect("cap fits"),
            2 * CAP / BLOCK,
        ),
        Phase::Eviction => {
            config.cap = Limit::Finite(Units(n as u64 * poolc_tools::bench::EVICT_BLOCKS * BLOCK));
            (StreamShape::eviction(BLOCK, n), 4096)
        }
    };
    let mut d = Driver::new(make(config), Stream::new(program, shape, SEED), phase);
    d.fill(n).expect("the stream fills the pool");
    d.run(warm, &mut Wall::default()).expect("warm-up");
    d
}

/// Criterion's time for `iters` operations: rounds until at least that many, their
/// metered time scaled to exactly `iters`.
fn measure<M: Member>(d: &mut Driver<M>, iters: u64) -> Duration {
    let (mut ops, mut ns) = (0u64, 0u64);
    while ops < iters {
        let r = d.round(&mut Wall::default()).expect("a round runs");
        ops += r.ops;
        ns += r.admit_ns;
    }
    Duration::from_nanos((ns as u128 * iters as u128 / ops as u128) as u64)
}

fn engine(c: PoolConfig) -> EngineMember {
    EngineMember(Pool::new(c).expect("the runtime accepts the pool"))
}

/// Whether the naive model can be set up and measured in reasonable time.
fn naive_feasible(phase: Phase, n: usize) -> bool {
    phase == Phase::Admission || n <= 1_000
}

fn bench_case(c: &mut Criterion, group: &str, source: &str, phase: Phase) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for n in SIZES {
        if n >= 100_000 {
            g.sample_size(10);
        }
        let mut e = driver(source, phase, n, engine);
        g.bench_function(BenchmarkId::new("engine", n), |b| {
            b.iter_custom(|iters| measure(&mut e, iters))
        });
        drop(e);
        if naive_feasible(phase, n) {
            g.sample_size(10);
            let mut m = driver(source, phase, n, NaiveMember::new);
            g.bench_function(BenchmarkId::new("naive", n), |b| {
                b.iter_custom(|iters| measure(&mut m, iters))
            });
        }
        g.sample_size(100);
    }
    g.finish();
}

fn admissions(c: &mut Criterion) {
    bench_case(c, "admit/fifo", &spec("fifo", "lru"), Phase::Admission);
    bench_case(
        c,
        "admit/priority_serial",
        &spec("by (priority, serial)", "lru"),
        Phase::Admission,
    );
    bench_case(c, "admit/ascend", &spec(ASCEND, "lru"), Phase::Admission);
}

fn evictions(c: &mut Criterion) {
    bench_case(c, "evict/lru", &spec("fifo", "lru"), Phase::Eviction);
    bench_case(
        c,
        "evict/priority_last",
        &spec("fifo", "by (priority, last)"),
        Phase::Eviction,
    );
}

criterion_group!(benches, admissions, evictions);
criterion_main!(benches);
