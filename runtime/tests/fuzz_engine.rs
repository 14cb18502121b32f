//! Structured fuzzing of the pool engine through its public API (docs/RELIABILITY.md,
//! "Fuzzing", target e): seeded random operation sequences that mix sensible calls
//! with misuse — unknown or repeated sessions, times that go backwards or are NaN,
//! computed beyond the hold, grows and releases of sessions that do not hold,
//! headers whose chain disagrees with their units, admissions whose host asks for
//! more or fewer units than fit — on pools of several caps and block sizes. No call
//! may panic, every misuse must be an `Error`, and R1 and the engine's own invariant
//! check (`Pool::check`) must hold after every call, erring or not.
//! `POOLC_FUZZ_CASES` raises the number of sequences for a long run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{TestEnv, hdr, s};
use poolrt::pool::Pool;
use poolrt::{Limit, PoolConfig, Units};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn cases(default: u64) -> u64 {
    std::env::var("POOLC_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A time: mostly forward, sometimes the same, backwards, NaN or infinite.
fn time(rng: &mut Rng, now: &mut f64) -> f64 {
    match rng.below(20) {
        0 => *now - 1.0,
        1 => f64::NAN,
        2 => f64::INFINITY,
        3..=8 => *now,
        _ => {
            *now += rng.below(3) as f64;
            *now
        }
    }
}

/// A header: units, and a chain of runs that may or may not add up to them (a chain
/// itself is valid by construction: `Chain` refuses empty runs before the engine).
fn header(rng: &mut Rng) -> poolrt::Header {
    let units = rng.below(40);
    let runs: Vec<(u64, u64)> = match rng.below(4) {
        0 => vec![],
        1 => vec![(rng.below(5), units.max(1))],
        2 => vec![
            (rng.below(5), units / 2 + 1),
            (5 + rng.below(5), units / 2 + 1),
        ],
        _ => vec![(rng.below(5), 1 + rng.below(50))],
    };
    hdr(units, &runs)
}

#[test]
fn fuzz_engine_misuse_is_always_an_error_and_r1_always_holds() {
    let mut rng = Rng(0x1913);
    let (n, mut errors, mut oks) = (cases(3000), 0u64, 0u64);
    for case in 0..n {
        let cap = match rng.below(4) {
            0 => Limit::Unbounded,
            _ => Limit::Finite(Units(rng.below(64))),
        };
        let config = PoolConfig {
            cap,
            block: Units(1 + rng.below(8)),
            ..PoolConfig::default()
        };
        let Ok(mut pool) = Pool::new(config) else {
            continue; // an invalid configuration is refused: that is its own test
        };
        pool.set_logging(rng.below(2) == 0);
        let mut env = TestEnv::default();
        let mut now = 0.0;
        let mut trail = Vec::new();
        for step in 0..80 {
            let sid = rng.below(8);
            if !env.attrs.contains_key(&s(sid)) && rng.below(8) != 0 {
                env.set(sid, &[0.0, sid as f64]);
            }
            let t = time(&mut rng, &mut now);
            let op = rng.below(9);
            trail.push((op, sid, t));
            let result = catch_unwind(AssertUnwindSafe(|| match op {
                0 | 1 => pool.enqueue(t, s(sid), header(&mut rng), &env).map(drop),
                2 => pool.settle(t, &env),
                3 => {
                    let ask = rng.below(50);
                    pool.admit_next(t, &env, |_, hit, h| match rng.below(4) {
                        0 => None,
                        1 => Some(Units(ask)),
                        _ => Some(Units(hit.0.max(h.units.0))),
                    })
                    .map(drop)
                }
                4 => pool.set_computed(s(sid), Units(rng.below(50))).map(drop),
                5 => pool.grow(t, s(sid), Units(rng.below(20)), &env).map(drop),
                6 => pool.release(t, s(sid), &env).map(drop),
                7 => pool.retry_grows(t, &env).map(drop),
                _ => {
                    env.end(sid);
                    Ok(())
                }
            }));
            match result {
                Err(_) => panic!("case {case} step {step} panicked; ops so far {trail:?}"),
                Ok(Ok(())) => oks += 1,
                Ok(Err(_)) => errors += 1,
            }
            // `Pool::check` includes R1: allocated + cached <= cap.
            if let Err(e) = pool.check() {
                panic!("case {case} step {step}: {e}; ops so far {trail:?}");
            }
        }
    }
    // Not vacuous: both the happy path and misuse are exercised.
    assert!(oks > n * 10 && errors > n * 10, "{oks} ok, {errors} errors");
}
