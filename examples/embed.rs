//! A complete, small Rust host embedding poolc: it compiles a spec with the JIT,
//! builds the runtime pool for one member through `poolc::bridge`, and drives it with
//! its own loop of enqueues, settles and releases, printing the pool's event log.
//! Copy it as the start of your own simulator. Run: `cargo run -p poolc --example embed`.
//!
//! It owns nothing but this demonstration; docs/EMBEDDING.md explains each step.

use poolc::bridge::pool_config;
use poolrt::{
    Chain, Env, Header, Pool, Query, Record, Run, RunId, SessionId, Units, env::default_query,
};

/// The policy: a pool of four 16-unit blocks, admitting the lowest priority first
/// (then arrival order) and evicting the least recently released prefix first.
const SPEC: &str = "
    session { prompt; priority = 0; }
    pool kv { cap 64; block 16; queue by (priority, serial); evict lru; }
";

/// The host's sessions: attribute values in the spec's slot order (`serial`,
/// `arrival`, then the declared `prompt`, `priority`) and their content.
struct Sessions {
    attrs: Vec<[f64; 4]>,
}

impl Env for Sessions {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        self.attrs.get(session.0 as usize).map(|a| &a[..])
    }

    // No step stage here: every holder counts as resident.
    fn is_resident(&self, _: SessionId) -> bool {
        true
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }
}

/// What the run ended with, for the test that checks this example.
pub struct Outcome {
    pub log: Vec<Record>,
    pub allocated: Units,
    pub cached: Units,
}

fn chain(runs: &[(u64, u64)]) -> Chain {
    Chain::new(
        runs.iter()
            .map(|&(id, len)| Run {
                id: RunId(id),
                len: Units(len),
            })
            .collect(),
    )
    .expect("the example's chains are well formed")
}

pub fn run() -> Outcome {
    let compiled = poolc::compile(SPEC, &poolc::Options::default()).expect("the spec checks");
    let program = compiled.program();
    let kv = program.find_pool("kv").expect("the spec declares kv");
    let config = pool_config(program, kv, 0, compiled.pool(kv)).expect("policies match the IR");
    let mut pool = Pool::new(config).expect("the runtime accepts the pool");
    pool.set_logging(true);

    // s0 and s1 share their first 32 units of content (run 1); s2 shares nothing.
    let sessions = Sessions {
        attrs: vec![
            [0.0, 0.0, 32.0, 1.0],
            [1.0, 1.0, 48.0, 0.0],
            [2.0, 1.0, 48.0, 0.0],
        ],
    };
    let s = |i| SessionId(i);
    let step = |pool: &mut Pool, now: f64| pool.settle(now, &sessions).expect("time moves forward");

    pool.enqueue(
        0.0,
        s(0),
        Header::new(Units(32), chain(&[(1, 32)])),
        &sessions,
    )
    .expect("enqueue");
    step(&mut pool, 0.0);
    pool.enqueue(
        1.0,
        s(1),
        Header::new(Units(48), chain(&[(1, 32), (2, 16)])),
        &sessions,
    )
    .expect("enqueue");
    pool.enqueue(
        1.0,
        s(2),
        Header::new(Units(48), chain(&[(3, 48)])),
        &sessions,
    )
    .expect("enqueue");
    step(&mut pool, 1.0);
    pool.set_computed(s(0), Units(32)).expect("s0 holds");
    pool.release(2.0, s(0), &sessions).expect("release");
    step(&mut pool, 2.0);
    pool.set_computed(s(1), Units(48)).expect("s1 holds");
    pool.release(3.0, s(1), &sessions).expect("release");
    step(&mut pool, 3.0);

    Outcome {
        allocated: pool.allocated(),
        cached: pool.cached(),
        log: pool.take_log(),
    }
}

#[allow(dead_code)]
fn main() {
    let outcome = run();
    for r in &outcome.log {
        println!(
            "{:?}  allocated {} cached {} queued {}",
            r.event, r.allocated.0, r.cached.0, r.queued
        );
    }
    println!(
        "end: allocated {} cached {}",
        outcome.allocated.0, outcome.cached.0
    );
}
