//! R30's service counters (`fair ATTR (prefill, decode) [weight ATTR]`): one counter
//! per group — a value of the session attribute `by` — charged when the group's
//! sessions take tokens (the host says when: [`Pool::charge`]), lifted when a session
//! arrives and nothing of its group waits, and read by the queue keys as `service`.
//! It keeps counters and the number of waiting holds per group; it never selects,
//! admits or judges a fit. Groups live in a `BTreeMap`, so the least counter of the
//! waiting groups is found in a fixed order (no hash order reaches a result).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::FairConfig;
use crate::env::Env;
use crate::hash::FxMap;
use crate::types::SessionId;

use super::Pool;
use super::attrs::{attr, live_attrs};

/// Whether a charge adds a take's tokens or gives back those of a victim's take
/// (R18: tokens it took in the iteration and will not compute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    Take,
    GiveBack,
}

/// The counters of one pool member.
#[derive(Debug)]
pub(super) struct Fair {
    config: FairConfig,
    counters: BTreeMap<u64, f64>,
    /// Waiting holds per group, for the groups that have any.
    waiting: BTreeMap<u64, u32>,
    /// The groups with waiting holds, in key order (the lift's candidates).
    active: BTreeSet<u64>,
    /// Each waiting session's group as of its enqueue, so that it leaves the count it
    /// joined even if its attribute changed meanwhile.
    group_of: FxMap<SessionId, u64>,
}

/// A group's key: the attribute value's bits, with −0 as +0 and every NaN one NaN
/// (E5's equal numbers are one group).
fn group(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else if v == 0.0 {
        0.0f64.to_bits()
    } else {
        v.to_bits()
    }
}

impl Fair {
    pub(super) fn new(config: FairConfig) -> Fair {
        Fair {
            config,
            counters: BTreeMap::new(),
            waiting: BTreeMap::new(),
            active: BTreeSet::new(),
            group_of: FxMap::default(),
        }
    }

    fn group_of_session<E: Env + ?Sized>(&self, session: SessionId, env: &E) -> u64 {
        group(attr(live_attrs(env, session), self.config.by, session))
    }

    /// The counter `service` reads for a waiting session (+0 before any charge).
    pub(super) fn service<E: Env + ?Sized>(&self, session: SessionId, env: &E) -> f64 {
        let g = self.group_of_session(session, env);
        self.counters.get(&g).copied().unwrap_or(0.0)
    }

    /// A hold enters the queue. An arrival whose group has nothing waiting lifts its
    /// counter to the least counter of the waiting groups when that is larger (NaN
    /// counters are passed over, and a NaN never lifts); a victim going back does not.
    pub(super) fn enter<E: Env + ?Sized>(&mut self, session: SessionId, how: Entering, env: &E) {
        let g = self.group_of_session(session, env);
        if how == Entering::Arrival && !self.active.contains(&g) {
            // A group never charged is at +0 (R30), as `service` reads it.
            let least = self
                .active
                .iter()
                .map(|a| self.counters.get(a).copied().unwrap_or(0.0))
                .filter(|c| !c.is_nan())
                .reduce(f64::min);
            let c = self.counters.entry(g).or_insert(0.0);
            if let Some(l) = least
                && l > *c
            {
                *c = l;
            }
        }
        *self.waiting.entry(g).or_insert(0) += 1;
        self.active.insert(g);
        self.group_of.insert(session, g);
    }

    /// A hold leaves the queue (admitted).
    pub(super) fn leave(&mut self, session: SessionId) {
        let Some(g) = self.group_of.remove(&session) else {
            return;
        };
        if let Some(n) = self.waiting.get_mut(&g) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&g);
                self.active.remove(&g);
            }
        }
    }

    fn charge<E: Env + ?Sized>(
        &mut self,
        session: SessionId,
        prefill: u64,
        decode: u64,
        how: Charge,
        env: &E,
    ) {
        let attrs = live_attrs(env, session);
        let g = group(attr(attrs, self.config.by, session));
        let w = self.config.weight.map_or(1.0, |a| attr(attrs, a, session));
        let amount =
            (self.config.prefill * prefill as f64 + self.config.decode * decode as f64) / w;
        let c = self.counters.entry(g).or_insert(0.0);
        match how {
            Charge::Take => *c += amount,
            Charge::GiveBack => *c -= amount,
        }
    }
}

/// How a hold enters the queue, for the lift (R30).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Entering {
    Arrival,
    Requeued,
}

impl Pool {
    /// R30: session `session` of this pool takes `prefill` catching-up and `decode`
    /// generating tokens in an iteration (or gives back what it took, R18): its
    /// group's counter grows (or shrinks) by `(prefill price × prefill + decode price
    /// × decode) / weight`. Does nothing for a pool without `fair`.
    pub fn charge<E: Env + ?Sized>(
        &mut self,
        session: SessionId,
        prefill: u64,
        decode: u64,
        how: Charge,
        env: &E,
    ) {
        if let Some(f) = &mut self.fair {
            f.charge(session, prefill, decode, how, env);
        }
    }

    /// Whether the pool keeps service counters (R30): a host with none of them
    /// need not call [`Pool::charge`] at every take.
    pub fn is_fair(&self) -> bool {
        self.fair.is_some()
    }
}
