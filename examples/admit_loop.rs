//! The Rust half of the Python-vs-Rust measurement (examples/python/bench_api.py): one pool
//! member of a fifo/lru spec driven through the engine's API with a fixed stream —
//! enqueue, settle, set_computed, release per session, sharing half of each prompt
//! with one of a hundred prefixes — and the wall time of the loop. The Python half
//! drives the same stream through `poolc.Pool`. Run: `cargo run --release -p poolc --example
//! admit_loop -- N`; it prints `admissions N seconds S`.

use std::time::Instant;

use poolc::bridge::pool_config;
use poolrt::{Chain, Env, Header, Pool, Query, Run, RunId, SessionId, Units, env::default_query};

/// The spec both halves run (examples/python/bench_api.py has the same text).
const SPEC: &str = "session { prompt = 64; }\npool kv { cap 65536; block 16; }";

/// No attribute is read by fifo or lru; no stage, so every holder is resident.
struct NoHost;

impl Env for NoHost {
    fn attrs(&self, _: SessionId) -> Option<&[f64]> {
        None
    }

    fn is_resident(&self, _: SessionId) -> bool {
        true
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let compiled = poolc::compile(SPEC, &poolc::Options::default()).expect("the spec checks");
    let program = compiled.program();
    let kv = program.find_pool("kv").expect("kv");
    let config = pool_config(program, kv, 0, compiled.pool(kv)).expect("policies match");
    let mut pool = Pool::new(config).expect("the pool builds");
    let env = NoHost;
    let start = Instant::now();
    let mut admitted = 0u64;
    for i in 0..n {
        let t = i as f64 * 0.001;
        let runs = vec![
            Run {
                id: RunId(i % 100),
                len: Units(32),
            },
            Run {
                id: RunId(1_000_000 + i),
                len: Units(32),
            },
        ];
        let chain = Chain::new(runs).expect("a chain");
        pool.enqueue(t, SessionId(i), Header::new(Units(64), chain), &env)
            .expect("enqueue");
        pool.settle(t, &env).expect("settle");
        admitted += pool
            .notices()
            .iter()
            .filter(|n| matches!(n, poolrt::Notice::Admitted { .. }))
            .count() as u64;
        pool.set_computed(SessionId(i), Units(64)).expect("holds");
        pool.release(t, SessionId(i), &env).expect("release");
    }
    let seconds = start.elapsed().as_secs_f64();
    println!("admissions {admitted} seconds {seconds}");
}
