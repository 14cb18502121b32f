//! The differential driver: random operation sequences applied to an engine pool and
//! to the naive model side by side — enqueue with content drawn from a shared prefix
//! tree (so holds hit, share and evict each other's blocks), settle, release, set
//! computed, grow, set an attribute, end a session, advance time, admit for a step
//! stage (with tier hits when a tier is modelled), revise a waiting header, complete
//! spill writes. After every operation both must return the same result, log the same
//! events with the same `allocated`/`cached`/`queued`, report the same notices,
//! holders, waiting order and cache entries, and keep R1; a tier pool and its model are
//! compared the same way. Without a tier every other operation runs with the engine's
//! log off (its unlogged paths, such as Evict moments taken together): then its state
//! and eviction count are compared. It knows nothing of how the two were configured: the
//! engine's tests build them with hand-written keys, the compiler's with compiled and
//! interpreted ones.

use std::collections::VecDeque;

use crate::common::{TestEnv, chain};
use crate::naive::{NHold, Naive};
use poolrt::{BlockKey, Charge, Event, Header, Notice, Pool, SessionId, Units};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The two sides of one run: the engine pool and its model, the tier pool and its
/// model if the pool spills into one, and how content is sized.
pub struct Parts {
    pub pool: Pool,
    pub naive: Naive,
    pub tier: Option<(Pool, Naive)>,
    pub block: u64,
    /// Base run lengths are multiplied by this, so that larger blocks still see hits.
    pub scale: u64,
    /// Every spill write completes right after the operation that started it; else
    /// only at `WriteDone`, so later spills and evictions happen in between.
    pub immediate: bool,
    /// With a tier, `Settle` is a step stage's iteration instead: retry the waiting
    /// grows, then `admit_next_tiered` until it admits nothing.
    pub stage: bool,
    /// A new session's attributes, from its serial.
    pub attrs: fn(u64) -> Vec<f64>,
    /// The attribute `SetPriority` changes.
    pub priority: usize,
}

/// The shared content: run id → (length in base units, parent run). A chain is a
/// path from a root, so a run id always has the same position, length and
/// predecessor (prefix chaining, R2).
const RUNS: [(u64, u64, Option<u64>); 6] = [
    (1, 5, None),
    (2, 7, None),
    (3, 4, Some(1)),
    (4, 6, Some(1)),
    (5, 3, Some(2)),
    (6, 5, Some(3)),
];
const PATHS: [&[u64]; 7] = [&[], &[1], &[1, 3], &[1, 3, 6], &[1, 4], &[2], &[2, 5]];

#[derive(Clone, Debug)]
pub enum Op {
    /// A new session (or an idle earlier one, reusing its content) enqueues a hold.
    Enqueue {
        reuse: Option<u8>,
        path: u8,
        tail: u8,
        units_adj: i8,
        reserve_extra: u8,
        last_token: bool,
    },
    Settle,
    /// Release a holder; with `finish`, first mark all its units computed (the
    /// common end of a session, which caches its blocks).
    Release {
        pick: u8,
        finish: bool,
    },
    Compute(u8, u8),
    Grow(u8, u8),
    SetPriority(u8, u8),
    /// A step stage's admission: units = hit + min(header units − hit, extra), or
    /// declined.
    /// With `tiered` (and a tier), the hit walk goes on in the tier (R12 tier hit)
    /// and the stage counts the tier's part as hit too.
    AdmitNext {
        extra: u8,
        decline: bool,
        tiered: bool,
    },
    RetryGrows,
    /// A step host revises a waiting hold's header (its sequence grew).
    Revise {
        pick: u8,
        adj: u8,
        last_token: bool,
    },
    End(u8),
    Advance(u8),
    /// The link completes the oldest pending spill writes (1 to 3 of them).
    WriteDone(u8),
    /// A holder takes `prefill` and `decode` tokens (or gives them back, R18): R30's
    /// charge, which only a pool with `fair` keeps.
    Charge {
        pick: u8,
        prefill: u8,
        decode: u8,
        give_back: bool,
    },
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            proptest::option::weighted(0.3, any::<u8>()),
            0..PATHS.len() as u8,
            0u8..4,
            -3i8..=3,
            prop_oneof![4 => Just(0u8), 1 => 1u8..4],
            proptest::bool::weighted(0.25),
        )
            .prop_map(|(reuse, path, tail, units_adj, reserve_extra, last_token)| {
                Op::Enqueue {
                    reuse,
                    path,
                    tail,
                    units_adj,
                    reserve_extra,
                    last_token,
                }
            }),
        3 => Just(Op::Settle),
        4 => (any::<u8>(), any::<bool>()).prop_map(|(pick, finish)| Op::Release { pick, finish }),
        3 => (any::<u8>(), 0u8..=4).prop_map(|(h, f)| Op::Compute(h, f)),
        4 => (any::<u8>(), 0u8..4).prop_map(|(h, n)| Op::Grow(h, n)),
        1 => (any::<u8>(), 0u8..4).prop_map(|(h, p)| Op::SetPriority(h, p)),
        1 => any::<u8>().prop_map(Op::End),
        2 => (0u8..5).prop_map(Op::Advance),
        2 => (0u8..8, proptest::bool::weighted(0.1), proptest::bool::weighted(0.7))
            .prop_map(|(extra, decline, tiered)| Op::AdmitNext { extra, decline, tiered }),
        1 => Just(Op::RetryGrows),
        1 => (any::<u8>(), 0u8..4, any::<bool>())
            .prop_map(|(pick, adj, last_token)| Op::Revise { pick, adj, last_token }),
        2 => (0u8..3).prop_map(Op::WriteDone),
        1 => (any::<u8>(), 0u8..20, 0u8..3, proptest::bool::weighted(0.2)).prop_map(
            |(pick, prefill, decode, give_back)| Op::Charge {
                pick,
                prefill,
                decode,
                give_back,
            }
        ),
    ]
}

/// What the driver remembers about a session: its content, to enqueue it again.
#[derive(Clone, Debug)]
struct Known {
    id: SessionId,
    runs: Vec<(u64, u64)>,
}

pub struct Driver {
    block: u64,
    scale: u64,
    immediate: bool,
    stage: bool,
    attrs: fn(u64) -> Vec<f64>,
    priority: usize,
    pub pool: Pool,
    pub naive: Naive,
    env: TestEnv,
    now: f64,
    known: Vec<Known>,
    next: u64,
    pub seen: Seen,
    /// Every record the engine logged.
    pub full_log: Vec<poolrt::Record>,
    /// The tier pool and its model, when the setup has one.
    tier: Option<(Pool, Naive)>,
    /// Spill writes on the link, oldest first: (session, key, release time).
    writes: VecDeque<(SessionId, BlockKey, f64)>,
    /// The writes the current operation started, gathered from each engine call's
    /// notices when it makes several (`several`), else read once at the end.
    started: Vec<(SessionId, BlockKey, f64)>,
    several: bool,
    /// The waiting order before the current operation.
    waiting_before: Vec<SessionId>,
    /// Without a tier, every other operation runs with the engine's log off, where
    /// it may take Evict moments together (issue #35): then only its state and its
    /// counters are compared, `evictions` against the model's Evict events so far.
    alternate: bool,
    unlogged: bool,
    evictions: u64,
}

/// How often each kind of event was seen: the generator's coverage.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub kinds: std::collections::BTreeMap<&'static str, u64>,
}

impl Seen {
    fn count(&mut self, e: &Event) {
        let kind = match e {
            Event::Enqueue { .. } => "enqueue",
            Event::Reject { .. } => "reject",
            Event::Admit { hit, .. } if hit.0 > 0 => "admit with a hit",
            Event::Admit { .. } => "admit",
            Event::Grow { .. } => "grow",
            Event::GrowWait { .. } => "grow-wait",
            Event::Preempt { cached, .. } if cached.0 > 0 => "preempt caching",
            Event::Preempt { .. } => "preempt",
            Event::Evict { .. } => "evict",
            Event::Release { cached, .. } if cached.0 > 0 => "release caching",
            Event::Release { .. } => "release",
            Event::Spill { .. } => "spill",
            Event::TierLoad { .. } => "tier-load",
            Event::Store { .. } => "store",
        };
        *self.kinds.entry(kind).or_insert(0) += 1;
    }

    pub fn add(&mut self, other: &Seen) {
        for (k, n) in &other.kinds {
            *self.kinds.entry(k).or_insert(0) += n;
        }
    }
}

pub fn eq<T: PartialEq + std::fmt::Debug>(
    what: &str,
    fast: T,
    slow: T,
) -> Result<(), TestCaseError> {
    if fast != slow {
        return Err(TestCaseError::fail(format!(
            "{what} differ:\n engine {fast:?}\n  naive {slow:?}"
        )));
    }
    Ok(())
}

impl Driver {
    pub fn new(parts: Parts) -> Driver {
        // Every fifth session is not a resident of the (imagined) step stage.
        let env = TestEnv {
            non_residents: (0..1000).filter(|i| i % 5 == 4).map(SessionId).collect(),
            ..TestEnv::default()
        };
        Driver {
            block: parts.block,
            scale: parts.scale,
            immediate: parts.immediate,
            stage: parts.stage,
            attrs: parts.attrs,
            priority: parts.priority,
            pool: parts.pool,
            naive: parts.naive,
            env,
            now: 0.0,
            known: Vec::new(),
            next: 0,
            seen: Seen::default(),
            full_log: Vec::new(),
            alternate: parts.tier.is_none(),
            tier: parts.tier,
            writes: VecDeque::new(),
            started: Vec::new(),
            several: false,
            waiting_before: Vec::new(),
            unlogged: false,
            evictions: 0,
        }
    }

    /// Holders as the naive model lists them (sorted by session).
    fn holder(&self, pick: u8) -> Option<SessionId> {
        let h = self.naive.holders();
        (!h.is_empty()).then(|| h[pick as usize % h.len()].0)
    }

    fn chain_for(&self, session: u64, path: u8, tail: u8) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = PATHS[path as usize]
            .iter()
            .map(|&id| {
                let (_, len, _) = RUNS.iter().find(|r| r.0 == id).expect("known run");
                (id, len * self.scale)
            })
            .collect();
        if tail > 0 {
            runs.push((1000 + session, tail as u64 * 3 * self.scale));
        }
        runs
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.waiting_before = self.naive.waiting();
        if self.alternate {
            self.unlogged = !self.unlogged;
            self.pool.set_logging(!self.unlogged);
        }
        match *op {
            Op::Enqueue {
                reuse,
                path,
                tail,
                units_adj,
                reserve_extra,
                last_token,
            } => {
                let idle: Vec<Known> = self
                    .known
                    .iter()
                    .filter(|k| {
                        !self.env.ended.contains(&k.id)
                            && self.naive.holds(k.id).is_none()
                            && !self.naive.waiting().contains(&k.id)
                    })
                    .cloned()
                    .collect();
                let (id, runs) = match reuse {
                    Some(i) if !idle.is_empty() => {
                        let k = &idle[i as usize % idle.len()];
                        (k.id, k.runs.clone())
                    }
                    _ => {
                        let id = self.next;
                        self.next += 1;
                        let runs = self.chain_for(id, path, tail);
                        self.known.push(Known {
                            id: SessionId(id),
                            runs: runs.clone(),
                        });
                        self.env.set(id, &(self.attrs)(id));
                        (SessionId(id), runs)
                    }
                };
                let len: u64 = runs.iter().map(|r| r.1).sum();
                let units = (len as i64 + units_adj as i64 * self.scale as i64).max(0) as u64;
                let reserve = units + reserve_extra as u64 * self.block;
                let max_hit = last_token.then(|| units.saturating_sub(1));
                let mut header =
                    Header::new(Units(units), chain(&runs)).with_reserve(Units(reserve));
                if let Some(m) = max_hit {
                    header = header.with_max_hit(Units(m));
                }
                let hold = NHold {
                    units,
                    reserve,
                    runs,
                    max_hit,
                };
                let fast = self.pool.enqueue(self.now, id, header, &self.env);
                let slow = self.naive.enqueue(self.now, id, hold, &self.env);
                eq("enqueue result", &fast, &slow)?;
                if fast.is_ok() {
                    eq("notices", self.pool.notices(), &self.naive.notices[..])?;
                }
            }
            Op::Settle if self.stage && self.tier.is_some() => self.stage_iteration()?,
            Op::Settle => {
                let fast = self.pool.settle(self.now, &self.env);
                let slow = self.naive.settle(self.now, &self.env);
                eq("settle result", &fast, &slow)?;
                eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            }
            Op::Release { pick, finish } => {
                let Some(s) = self.holder(pick) else {
                    return Ok(());
                };
                if finish {
                    let units = Units(self.naive.holds(s).expect("holder").0);
                    let fast = self.pool.set_computed(s, units);
                    let slow = self.naive.set_computed(s, units);
                    eq("set_computed result", &fast, &slow)?;
                }
                let fast = self.pool.release(self.now, s, &self.env);
                let slow = self.naive.release(self.now, s, &self.env);
                eq("release result", &fast, &slow)?;
                eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            }
            Op::Compute(pick, quarter) => {
                let Some(s) = self.holder(pick) else {
                    return Ok(());
                };
                let units = self.naive.holds(s).expect("holder").0;
                // quarter 4 also tries one unit too many, which must be refused.
                let computed = Units(units * quarter as u64 / 4 + (quarter == 4) as u64);
                let fast = self.pool.set_computed(s, computed);
                let slow = self.naive.set_computed(s, computed);
                eq("set_computed result", &fast, &slow)?;
                if fast.is_err() {
                    let fast = self.pool.set_computed(s, Units(units));
                    let slow = self.naive.set_computed(s, Units(units));
                    eq("set_computed result", &fast, &slow)?;
                }
            }
            Op::Grow(pick, n) => {
                let Some(s) = self.holder(pick) else {
                    return Ok(());
                };
                let by = Units(n as u64 * self.scale);
                let fast = self.pool.grow(self.now, s, by, &self.env);
                let slow = self.naive.grow(self.now, s, by, &self.env);
                eq("grow result", &fast, &slow)?;
                if fast.is_ok() {
                    eq("notices", self.pool.notices(), &self.naive.notices[..])?;
                }
            }
            Op::Charge {
                pick,
                prefill,
                decode,
                give_back,
            } => {
                let Some(s) = self.holder(pick) else {
                    return Ok(());
                };
                let how = if give_back {
                    Charge::GiveBack
                } else {
                    Charge::Take
                };
                let (p, d) = (prefill as u64 * self.scale, decode as u64);
                self.pool.charge(s, p, d, how, &self.env);
                self.naive.charge(s, p, d, how, &self.env);
            }
            Op::SetPriority(pick, p) => {
                if self.known.is_empty() {
                    return Ok(());
                }
                let k = self.known[pick as usize % self.known.len()].id;
                if let Some(a) = self.env.attrs.get_mut(&k) {
                    a[self.priority] = p as f64;
                }
                // The host's side of the index contract.
                self.pool.attrs_changed(k, &self.env);
                // R9: setting an attribute is a settle point.
                let fast = self.pool.settle(self.now, &self.env);
                let slow = self.naive.settle(self.now, &self.env);
                eq("settle result", &fast, &slow)?;
                eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            }
            Op::End(pick) => {
                let idle: Vec<SessionId> = self
                    .known
                    .iter()
                    .map(|k| k.id)
                    .filter(|&id| {
                        !self.env.ended.contains(&id)
                            && self.naive.holds(id).is_none()
                            && !self.naive.waiting().contains(&id)
                    })
                    .collect();
                if !idle.is_empty() {
                    let id = idle[pick as usize % idle.len()];
                    self.env.ended.insert(id);
                }
            }
            Op::AdmitNext {
                extra,
                decline,
                tiered,
            } => {
                let odd = extra % 2 == 1;
                let extra = extra as u64 * self.scale;
                // Mostly what a stage gives (the hit, then at most the header's
                // units), sometimes more than the header asked for; an odd `extra`
                // budgets from the pool's own hit, so a tier hit may be loaded only
                // in part.
                let choose = |hit: Units, tier: Units, header_units: u64| {
                    (!decline).then(|| {
                        if extra > 5 * self.scale {
                            Units(hit.0 + extra)
                        } else {
                            let base = if odd { hit.0 } else { hit.0 + tier.0 };
                            Units(base + (header_units - base).min(extra))
                        }
                    })
                };
                if tiered && let Some((tp, tn)) = &mut self.tier {
                    let mut found = Units(0);
                    let fast =
                        self.pool
                            .admit_next_tiered(self.now, &self.env, Some(tp), |_, hit, h| {
                                found = hit.tier;
                                choose(hit.local, hit.tier, h.units.0)
                            });
                    let slow =
                        self.naive
                            .admit_next_tiered(self.now, &self.env, Some(tn), |_, hit, h| {
                                choose(hit.local, hit.tier, h.units)
                            });
                    eq("admit_next_tiered result", &fast, &slow)?;
                    let partial = self
                        .pool
                        .notices()
                        .iter()
                        .any(|n| matches!(n, Notice::TierLoad { units, .. } if *units < found));
                    if partial {
                        *self.seen.kinds.entry("tier-load partial").or_insert(0) += 1;
                    }
                } else {
                    let fast = self.pool.admit_next(self.now, &self.env, |_, hit, h| {
                        choose(hit, Units(0), h.units.0)
                    });
                    let slow = self.naive.admit_next(self.now, &self.env, |_, hit, h| {
                        choose(hit, Units(0), h.units)
                    });
                    eq("admit_next result", &fast, &slow)?;
                }
                eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            }
            Op::RetryGrows => {
                let fast = self.pool.retry_grows(self.now, &self.env);
                let slow = self.naive.retry_grows(self.now, &self.env);
                eq("retry_grows result", &fast, &slow)?;
                eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            }
            Op::Revise {
                pick,
                adj,
                last_token,
            } => {
                let waiting = self.naive.waiting();
                if waiting.is_empty() {
                    return Ok(());
                }
                let s = waiting[pick as usize % waiting.len()];
                let len: u64 = self
                    .known
                    .iter()
                    .find(|k| k.id == s)
                    .map_or(0, |k| k.runs.iter().map(|r| r.1).sum());
                let units = Units(len + adj as u64 * self.scale);
                let reserve = Units(units.0 + self.block * (adj as u64 % 2));
                let max_hit = last_token.then(|| Units(units.0.saturating_sub(1)));
                let fast = self
                    .pool
                    .set_waiting_header(s, units, reserve, max_hit, &self.env);
                let slow = self.naive.set_waiting_header(s, units, reserve, max_hit);
                eq("set_waiting_header result", &fast, &slow)?;
            }
            Op::Advance(step) => {
                self.now += [0.0, 0.5, 1.0, 2.0, 3.5][step as usize];
            }
            Op::WriteDone(n) => {
                self.complete_writes(n as usize + 1)?;
            }
        }
        self.compare()?;
        if self.tier.is_some() && self.immediate {
            self.complete_writes(self.writes.len())?;
        }
        Ok(())
    }

    /// Counts admissions of a hold other than the first waiting one (by the waiting
    /// order before the operation, followed through its events): a sign that queue
    /// keys (or preemption) told holds apart, which a fifo queue alone never shows.
    fn count_out_of_order(&mut self, log: &[poolrt::Record]) {
        let mut order = std::mem::take(&mut self.waiting_before);
        for r in log {
            match r.event {
                Event::Enqueue { session } => order.push(session),
                Event::Preempt { session, .. } => order.insert(0, session),
                Event::Admit { session, .. } => {
                    if order.first() != Some(&session) {
                        *self.seen.kinds.entry("admit out of order").or_insert(0) += 1;
                    }
                    order.retain(|&s| s != session);
                }
                _ => {}
            }
        }
    }

    /// The spill writes the last engine call started (its notices).
    fn harvest_spills(&mut self) {
        harvest(&self.pool, &mut self.started);
    }

    /// A step stage's admissions with an unlimited budget: waiting grows first, then
    /// every hold it can admit, each with its whole header (tier hits loaded).
    fn stage_iteration(&mut self) -> Result<(), TestCaseError> {
        self.several = true;
        let fast = self.pool.retry_grows(self.now, &self.env);
        let slow = self.naive.retry_grows(self.now, &self.env);
        eq("retry_grows result", &fast, &slow)?;
        eq("notices", self.pool.notices(), &self.naive.notices[..])?;
        self.harvest_spills();
        if fast != Ok(true) {
            return Ok(());
        }
        let (tp, tn) = self.tier.as_mut().expect("a stage iteration with a tier");
        loop {
            let fast =
                self.pool
                    .admit_next_tiered(self.now, &self.env, Some(&mut *tp), |_, _, h| {
                        Some(h.units)
                    });
            let slow =
                self.naive
                    .admit_next_tiered(self.now, &self.env, Some(&mut *tn), |_, _, h| {
                        Some(Units(h.units))
                    });
            eq("admit_next_tiered result", &fast, &slow)?;
            eq("notices", self.pool.notices(), &self.naive.notices[..])?;
            harvest(&self.pool, &mut self.started);
            if !matches!(fast, Ok(poolrt::Admission::Admitted { .. })) {
                return Ok(());
            }
        }
    }

    /// The link completes the `n` oldest writes (a link serves first come, first
    /// served): each block is handed to the tier and its model at the current time.
    fn complete_writes(&mut self, n: usize) -> Result<(), TestCaseError> {
        for _ in 0..n.min(self.writes.len()) {
            let (session, key, last) = self.writes.pop_front().expect("a pending write");
            let (tp, tn) = self.tier.as_mut().expect("writes only with a tier");
            // The host's side of `accept_spill`'s contract: it answers `Env::attrs`
            // for an ended session while the write lands (and at no other time, so
            // that both pools read their snapshots), except for every fourth
            // session, which breaks the contract to reach `Error::NoAttrs`.
            if session.0 % 4 != 3 {
                self.env.still_answers.insert(session);
            }
            let fast = tp.accept_spill(self.now, session, key, last, &self.env);
            let slow = tn.accept_spill(self.now, session, key, last, &self.env);
            self.env.still_answers.clear();
            eq("accept_spill result", &fast, &slow)?;
            // The writes that store nothing have no event; count them for coverage.
            let outcome = match fast {
                Ok(poolrt::Stored::Duplicate) => Some("store duplicate"),
                Ok(poolrt::Stored::NoRoom) => Some("store no room"),
                Err(poolrt::Error::NoAttrs(_)) => Some("store refused"),
                _ => None,
            };
            if let Some(kind) = outcome {
                *self.seen.kinds.entry(kind).or_insert(0) += 1;
            }
            eq("tier notices", tp.notices(), &tn.notices[..])?;
            self.compare_tier()?;
        }
        Ok(())
    }

    /// The tier against its model: R1 on both, the same log and state.
    fn compare_tier(&mut self) -> Result<(), TestCaseError> {
        let Some((tp, tn)) = self.tier.as_mut() else {
            return Ok(());
        };
        tp.check().map_err(TestCaseError::fail)?;
        tn.check_r1().map_err(TestCaseError::fail)?;
        let fast_log = tp.take_log();
        for r in &fast_log {
            // Kept apart from the source pool's evictions, to see the tier evict.
            if matches!(r.event, Event::Evict { .. }) {
                *self.seen.kinds.entry("tier evict").or_insert(0) += 1;
            } else {
                self.seen.count(&r.event);
            }
        }
        let slow_log = std::mem::take(&mut tn.log);
        eq("tier event logs", &fast_log, &slow_log)?;
        eq("tier allocated", tp.allocated(), tn.allocated())?;
        eq("tier cached", tp.cached(), tn.cached())?;
        eq("tier queued", tp.queued(), tn.queued())?;
        let entries: Vec<_> = tp
            .entries()
            .into_iter()
            .map(|e| (e.id.0, e.session, e.last, e.keys))
            .collect();
        eq("tier entries", entries, tn.entries())?;
        Ok(())
    }

    fn compare(&mut self) -> Result<(), TestCaseError> {
        self.pool.check().map_err(TestCaseError::fail)?;
        self.naive.check_r1().map_err(TestCaseError::fail)?;
        let fast_log = self.pool.take_log();
        let slow_log = std::mem::take(&mut self.naive.log);
        self.evictions += slow_log
            .iter()
            .filter(|r| matches!(r.event, Event::Evict { .. }))
            .count() as u64;
        eq(
            "evictions counted",
            self.pool.counters().evictions,
            self.evictions,
        )?;
        if self.unlogged {
            for r in &slow_log {
                self.seen.count(&r.event);
            }
            return self.compare_state();
        }
        for r in &fast_log {
            self.seen.count(&r.event);
        }
        eq("event logs", &fast_log, &slow_log)?;
        self.count_out_of_order(&fast_log);
        // The writes this operation started: one Spill notice per Spill event. Every
        // engine call that logs clears the notices first (and the calls that do not
        // log add none), so an operation that logged something left its own
        // notices; one that logged nothing may have left an earlier one's.
        let spilled = fast_log
            .iter()
            .filter(|r| matches!(r.event, Event::Spill { .. }))
            .count();
        if self.tier.is_some() && (!fast_log.is_empty() || self.several) {
            if !self.several {
                self.harvest_spills();
            }
            let started = std::mem::take(&mut self.started);
            eq("spill notices per spill event", started.len(), spilled)?;
            self.writes.extend(started);
        }
        self.started.clear();
        self.several = false;
        self.full_log.extend(fast_log);
        self.compare_state()
    }

    /// What both sides hold after an operation, logged or not.
    fn compare_state(&mut self) -> Result<(), TestCaseError> {
        eq("allocated", self.pool.allocated(), self.naive.allocated())?;
        eq("cached", self.pool.cached(), self.naive.cached())?;
        eq("queued", self.pool.queued(), self.naive.queued())?;
        eq(
            "waiting order",
            self.pool.waiting_sessions(),
            self.naive.waiting(),
        )?;
        let entries: Vec<_> = self
            .pool
            .entries()
            .into_iter()
            .map(|e| (e.id.0, e.session, e.last, e.keys))
            .collect();
        eq("entries", entries, self.naive.entries())?;
        let holders: Vec<_> = self
            .naive
            .holders()
            .into_iter()
            .map(|(s, _, _, _)| {
                let h = self.pool.hold(s);
                (
                    s,
                    h.map(|h| h.units.0),
                    h.map(|h| h.computed.0),
                    h.and_then(|h| h.pending_grow.map(|u| u.0)),
                )
            })
            .collect();
        let naive_holders: Vec<_> = self
            .naive
            .holders()
            .into_iter()
            .map(|(s, u, c, p)| (s, Some(u), Some(c), p))
            .collect();
        eq("holders", holders, naive_holders)?;
        eq(
            "holder count",
            self.pool.holders(),
            self.naive.holders().len(),
        )?;
        self.compare_tier()
    }
}

/// Runs one sequence through both sides; the first difference fails it.
pub fn run(parts: Parts, ops: &[Op]) -> Result<Driver, TestCaseError> {
    let mut d = Driver::new(parts);
    for (i, op) in ops.iter().enumerate() {
        d.apply(op)
            .map_err(|e| TestCaseError::fail(format!("after op {i} {op:?}: {e}")))?;
    }
    Ok(d)
}

/// Appends the spill writes `pool`'s last call started (its notices) to `out`.
fn harvest(pool: &Pool, out: &mut Vec<(SessionId, BlockKey, f64)>) {
    out.extend(pool.notices().iter().filter_map(|n| match *n {
        Notice::Spill {
            session, key, last, ..
        } => Some((session, key, last)),
        _ => None,
    }));
}
