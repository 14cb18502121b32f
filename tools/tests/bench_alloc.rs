//! The poolc-side hot path allocates nothing per admission once warm: a counting
//! global allocator (counting only on the thread that asks) is switched on by the
//! benchmark driver's [`Meter`] around exactly the parts `poolc bench` times — the
//! enqueues and admission attempts, then the grows, set-computeds and releases — of
//! pools built through `poolc::bridge` from JIT-compiled specs (fifo and lru; the
//! seed's Ascend lanes, scanned; `(priority, serial)` indexed with `evict by
//! (priority, last)`), and with the hand-written Rust policies. Making the holds'
//! headers is the host's allocation and happens outside the metered parts. The
//! interpreter backend is left out: the reference interpreter builds a key vector
//! per row by design.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc_tools::bench::{
    Backend, Backends, Driver, EngineMember, Meter, Phase, Stream, StreamShape, Wall, pool_config,
};
use poolrt::{Limit, Pool, Units};

#[path = "../../runtime/tests/counting_alloc/mod.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// A meter that counts allocations instead of time.
#[derive(Default)]
struct Allocations {
    total: u64,
}

impl Meter for Allocations {
    fn begin(&mut self) {
        counting_alloc::start();
    }

    fn end(&mut self) -> u64 {
        counting_alloc::stop();
        self.total += counting_alloc::counted();
        0
    }
}

const PRIORITY: &str = "
    session { prompt; priority = 0; }
    pool kv { cap 65536; block 16; queue by (priority, serial); evict by (priority, last); }
";

fn spec(path: &str) -> String {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path);
    std::fs::read_to_string(&path).expect("the example exists")
}

/// Warms a driver of `source`'s first admitted pool up, then counts the allocations of
/// `rounds` metered rounds, for each backend but the interpreter.
fn allocations(source: &str, phase: Phase, n: usize) -> Vec<(Backend, u64, u64)> {
    let compiled = poolc::compile(source, &poolc::Options::default()).expect("spec compiles");
    let program = compiled.program();
    let pool = poolc_tools::bench::default_pool(program).expect("a pool");
    let backends = Backends::new(&compiled, pool).expect("backends");
    let block = program.pool(pool).block_units();
    let mut out = Vec::new();
    for (backend, policy) in backends.available() {
        if backend == Backend::Interp {
            continue;
        }
        let mut config = pool_config(&compiled, pool, policy).expect("config");
        let (shape, warm) = match phase {
            Phase::Admission => {
                let cap = match config.cap {
                    Limit::Finite(u) => u.0 / block,
                    Limit::Unbounded => 4096,
                };
                (
                    StreamShape::admission(
                        block,
                        Some(cap),
                        n,
                        0.5,
                        poolc_tools::bench::MAX_HOLD_BLOCKS,
                    )
                    .expect("shape"),
                    3 * cap,
                )
            }
            Phase::Eviction => {
                config.cap =
                    Limit::Finite(Units(n as u64 * poolc_tools::bench::EVICT_BLOCKS * block));
                (StreamShape::eviction(block, n), 20_000)
            }
        };
        let pool = Pool::new(config).expect("pool");
        let mut d = Driver::new(EngineMember(pool), Stream::new(program, shape, 7), phase);
        d.fill(n).expect("fill");
        d.run(warm, &mut Wall::default()).expect("warm-up");
        let before = d.totals().counts;
        let mut meter = Allocations::default();
        for _ in 0..40 {
            d.round(&mut meter).expect("round");
        }
        let ops = match phase {
            Phase::Admission => d.totals().counts.admissions - before.admissions,
            Phase::Eviction => d.totals().counts.evictions - before.evictions,
        };
        out.push((backend, meter.total, ops));
    }
    out
}

fn assert_none(what: &str, results: &[(Backend, u64, u64)]) {
    assert!(!results.is_empty(), "{what}: nothing measured");
    for &(backend, allocs, ops) in results {
        assert!(ops > 0, "{what} {}: no operations", backend.name());
        assert_eq!(
            allocs,
            0,
            "{what} {}: {allocs} allocations in {ops} warm operations",
            backend.name()
        );
    }
}

#[test]
fn warm_admissions_and_evictions_allocate_nothing() {
    // One test, one after the other, so that nothing else counts on this thread.
    let vllm = spec("examples/vllm.pool");
    let ascend = spec("examples/ascend.pool");
    for (name, source) in [
        ("vllm (fifo, lru)", vllm.as_str()),
        ("ascend (scanned lanes)", ascend.as_str()),
        ("(priority, serial) / (priority, last)", PRIORITY),
    ] {
        assert_none(
            &format!("{name} admissions"),
            &allocations(source, Phase::Admission, 200),
        );
        assert_none(
            &format!("{name} evictions"),
            &allocations(source, Phase::Eviction, 100),
        );
    }
}
