//! Target (e): one pool member of the engine driven through its public API by a
//! sequence of calls read from bytes, sensible calls mixed with misuse — unknown or
//! repeated sessions, times that go backwards or are NaN or infinite, `computed`
//! beyond the hold, grows and releases of sessions that hold nothing, headers whose
//! chain disagrees with their units, admissions whose host asks for more or fewer
//! units than fit, attributes that end — on pools of several caps, block sizes and
//! preemption modes. No call may panic (every misuse is an `Error`), and R1 and the
//! engine's own invariant check (`Pool::check`) hold after every call, erring or
//! not. It knows nothing of the engine's internals.

use std::collections::{BTreeMap, BTreeSet};

use poolrt::env::default_query;
use poolrt::pool::Pool;
use poolrt::{
    Chain, Env, Header, Limit, PoolConfig, Preempt, Query, Requeue, Run, RunId, SessionId, Units,
};

use crate::Bytes;

/// Calls of one sequence at most (an input's bytes usually end sooner).
const CALLS: usize = 200;

/// A host with a table of attributes and ended sessions.
#[derive(Default)]
struct Host {
    attrs: BTreeMap<SessionId, Vec<f64>>,
    ended: BTreeSet<SessionId>,
}

impl Env for Host {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        if self.ended.contains(&session) {
            return None;
        }
        Some(self.attrs.get(&session).map_or(&[][..], |v| v.as_slice()))
    }

    fn is_resident(&self, _: SessionId) -> bool {
        true
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }
}

/// A time: mostly forward, sometimes the same, backwards, NaN or infinite.
fn time(b: &mut Bytes, now: &mut f64) -> f64 {
    match b.below(20) {
        0 => *now - 1.0,
        1 => f64::NAN,
        2 => f64::INFINITY,
        3..=8 => *now,
        _ => {
            *now += b.below(3) as f64;
            *now
        }
    }
}

/// A header: units, and a chain of runs that may or may not add up to them (a
/// chain itself is valid by construction: `Chain` refuses empty runs before the
/// engine sees them).
fn header(b: &mut Bytes) -> Header {
    let units = b.below(40) as u64;
    let runs: Vec<(u64, u64)> = match b.below(4) {
        0 => vec![],
        1 => vec![(b.below(5) as u64, units.max(1))],
        2 => vec![
            (b.below(5) as u64, units / 2 + 1),
            (5 + b.below(5) as u64, units / 2 + 1),
        ],
        _ => vec![(b.below(5) as u64, 1 + b.below(50) as u64)],
    };
    let runs = runs
        .into_iter()
        .map(|(id, len)| Run {
            id: RunId(id),
            len: Units(len),
        })
        .collect();
    let chain = Chain::new(runs).unwrap_or_else(|e| panic!("runs of length ≥ 1: {e:?}"));
    Header::new(Units(units), chain)
}

/// Calls that returned `Ok` and calls that returned an `Error`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub oks: u64,
    pub errors: u64,
}

/// Runs one sequence; panics when a call panics or an invariant breaks.
pub fn run(data: &[u8]) -> Tally {
    let mut b = Bytes::new(data);
    let cap = match b.below(4) {
        0 => Limit::Unbounded,
        _ => Limit::Finite(Units(b.below(64) as u64)),
    };
    let config = PoolConfig {
        cap,
        block: Units(1 + b.below(8) as u64),
        preempt: if b.bool() {
            Preempt::Lifo
        } else {
            Preempt::None
        },
        requeue: if b.bool() {
            Requeue::Keyed
        } else {
            Requeue::Head
        },
        ..PoolConfig::default()
    };
    let mut tally = Tally::default();
    let Ok(mut pool) = Pool::new(config) else {
        return tally; // a configuration the engine refuses is refused before any call
    };
    pool.set_logging(b.bool());
    let mut host = Host::default();
    let mut now = 0.0;
    for _ in 0..CALLS {
        if b.is_empty() {
            break;
        }
        let sid = SessionId(b.below(8) as u64);
        if !host.attrs.contains_key(&sid) && b.below(8) != 0 {
            host.attrs.insert(sid, vec![0.0, sid.0 as f64]);
        }
        let t = time(&mut b, &mut now);
        let op = b.below(9);
        let result = match op {
            0 | 1 => {
                let h = header(&mut b);
                pool.enqueue(t, sid, h, &host).map(drop)
            }
            2 => pool.settle(t, &host),
            3 => {
                let (how, ask) = (b.below(4), b.below(50) as u64);
                pool.admit_next(t, &host, |_, hit, h| match how {
                    0 => None,
                    1 => Some(Units(ask)),
                    _ => Some(Units(hit.0.max(h.units.0))),
                })
                .map(drop)
            }
            4 => pool.set_computed(sid, Units(b.below(50) as u64)),
            5 => pool
                .grow(t, sid, Units(b.below(20) as u64), &host)
                .map(drop),
            6 => pool.release(t, sid, &host).map(drop),
            7 => pool.retry_grows(t, &host).map(drop),
            _ => {
                host.ended.insert(sid);
                Ok(())
            }
        };
        match result {
            Ok(()) => tally.oks += 1,
            Err(_) => tally.errors += 1,
        }
        // `Pool::check` includes R1: allocated + cached <= cap.
        if let Err(e) = pool.check() {
            panic!("call {op} on {sid:?} at t={t}: {e}");
        }
    }
    tally
}
