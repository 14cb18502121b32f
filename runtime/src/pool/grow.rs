//! Grows and preemption (R13, R18, R19): a holder grows, evicting cache to fit; a
//! grow that does not fit waits (`preempt none`, retried in failure order at settle
//! and by a step stage) or preempts residents — most recently admitted first
//! (`preempt lifo`), or the least by the `preempt by` keys on rows filled at that
//! moment — and a preempted holder is released and waits on top of the queue, or by
//! its keys under `requeue keyed`. Grows never hit. It never admits (`admit.rs` does)
//! and never chooses which entry to evict.

use crate::config::{Input, Preempt, Requeue};
use crate::env::Env;
use crate::error::Error;
use crate::event::{Event, Notice};
use crate::types::{Header, SessionId, Units};

use super::attrs::{attr, live_attrs};
use super::fair::Entering;
use super::hits::register_new;
use super::holders::HolderSlot;
use super::{Grown, Pool};

impl Pool {
    /// R13 `preempt none` for a step stage's iteration: retries waiting grows in the
    /// order they failed, stopping at the first that still does not fit. Returns
    /// whether no grow waits any more. Completed grows are in [`Pool::notices`].
    pub fn retry_grows<E: Env + ?Sized>(&mut self, now: f64, env: &E) -> Result<bool, Error> {
        self.check_time(now)?;
        self.begin(now);
        Ok(self.grow_waiting(env))
    }

    /// R13: the holder grows by `by` units, evicting cache to fit; if it cannot fit,
    /// `preempt none` waits and `preempt lifo` preempts residents, most recently
    /// admitted first, until it fits or the grower was its own victim.
    pub fn grow<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        by: Units,
        env: &E,
    ) -> Result<Grown, Error> {
        self.check_time(now)?;
        let slot = self
            .sessions
            .holder_slot(session)
            .ok_or(Error::NotHolding(session))?;
        let h = self.holders.get(slot);
        if h.pending_grow.is_some() {
            return Err(Error::GrowPending(session));
        }
        let units = h.units.checked_add(by.0).ok_or(Error::Overflow(session))?;
        self.begin(now);
        loop {
            let held = self.holders.get(slot).held_blocks();
            let extra = Units(units).blocks_up(self.block) - held;
            if self.fits(extra) {
                self.apply_grow(slot, units, extra, env);
                self.record(Event::Grow { session, by });
                return Ok(Grown::Grown);
            }
            let victim = match &self.preempt {
                Preempt::None => None,
                Preempt::Lifo => self.latest_resident(env),
                Preempt::By { .. } => self.least_resident(env),
            };
            let Some(victim) = victim else {
                self.holders.get_mut(slot).pending_grow = Some(by.0);
                self.pending.push_back(session);
                self.record(Event::GrowWait { session });
                return Ok(Grown::Waiting);
            };
            self.preempt_holder(victim, env);
            if victim == session {
                return Ok(Grown::SelfPreempted);
            }
        }
    }

    /// Retries waiting grows in failure order; false when one still does not fit.
    pub(super) fn grow_waiting<E: Env + ?Sized>(&mut self, env: &E) -> bool {
        while let Some(&session) = self.pending.front() {
            let slot = self
                .sessions
                .holder_slot(session)
                .expect("a pending grow's session holds");
            let h = self.holders.get(slot);
            let by = h.pending_grow.expect("a pending holder has a pending grow");
            let units = h.units + by;
            let extra = Units(units).blocks_up(self.block) - h.held_blocks();
            if !self.fits(extra) {
                return false;
            }
            self.pending.pop_front();
            self.holders.get_mut(slot).pending_grow = None;
            self.apply_grow(slot, units, extra, env);
            self.record(Event::Grow {
                session,
                by: Units(by),
            });
            self.notices.push(Notice::Grown {
                session,
                by: Units(by),
            });
        }
        true
    }

    /// Allocates `extra` blocks to a holder growing to `units` (the fit is known).
    fn apply_grow<E: Env + ?Sized>(&mut self, slot: HolderSlot, units: u64, extra: u64, env: &E) {
        self.make_room(extra, env);
        let block = self.block;
        let h = self.holders.get_mut(slot);
        let total = Units(units).blocks_up(block);
        let physical = total.min(h.header.chain.full_blocks(block));
        let new_physical = physical - h.blocks.len() as u64;
        for _ in 0..new_physical {
            h.blocks.push(self.store.alloc());
        }
        self.store.alloc_anonymous(extra - new_physical);
        h.anonymous += extra - new_physical;
        h.units = units;
        register_new(&mut self.store, h, block);
    }

    /// R13 `preempt lifo`: the most recently admitted holder that is a resident.
    fn latest_resident<E: Env + ?Sized>(&self, env: &E) -> Option<SessionId> {
        self.holders
            .latest_first()
            .map(|h| h.session)
            .find(|&s| env.is_resident(s))
    }

    /// R18 `preempt by`: the least resident by the keys (E5), evaluated now on a row
    /// per resident holder, ties to the earliest admitted.
    fn least_resident<E: Env + ?Sized>(&mut self, env: &E) -> Option<SessionId> {
        let Preempt::By { keys, layout } = &self.preempt else {
            unreachable!("least_resident is R18's");
        };
        let stride = layout.row.len();
        let rows = &mut self.scratch.rows;
        rows.clear();
        let candidates = &mut self.scratch.victims;
        candidates.clear();
        for h in self.holders.earliest_first() {
            if !env.is_resident(h.session) {
                continue;
            }
            candidates.push(h.session);
            let attrs = live_attrs(env, h.session);
            for input in &layout.row {
                rows.push(match *input {
                    Input::Attr(a) => attr(attrs, a, h.session),
                    Input::Units => h.units as f64,
                    Input::Computed => h.computed as f64,
                    Input::Admitted => h.admitted,
                    other => unreachable!("validated resident row input {other:?}"),
                });
            }
        }
        let n = candidates.len();
        self.scratch.ctx.clear();
        for input in &layout.ctx {
            let value = match *input {
                Input::Now => self.now,
                Input::Query(q) => self.query_value(q, env),
                other => unreachable!("validated resident ctx input {other:?}"),
            };
            self.scratch.ctx.push(value);
        }
        keys.select(&self.scratch.rows, n, stride, &self.scratch.ctx)
            .map(|i| self.scratch.victims[i])
    }

    /// R13 preemption: release with the computed prefix cached, then wait at the
    /// head of the queue with the units it held (`waited` restarts now); under
    /// `requeue keyed` (R19) it waits by its keys at its first enqueue's place.
    fn preempt_holder<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        let held = self
            .sessions
            .holder_slot(session)
            .expect("a preempted session holds");
        let mut h = self.remove_holder(held);
        let units = Units(h.units);
        // Released first (its blocks' keys are its chain's), then the hold moves its
        // chain back to the queue.
        let cached = self.release_blocks(&mut h, env);
        let header = Header {
            units,
            reserve: h.header.reserve.max(units),
            chain: std::mem::take(&mut h.header.chain),
            max_hit: h.header.max_hit,
        };
        let seq = h.seq;
        let slot = match self.requeue {
            Requeue::Head => self.queue.push_preempted(session, header, self.now),
            Requeue::Keyed => {
                let slot = self.queue.push_requeued(session, header, self.now, seq);
                if self.queue.is_indexed() {
                    self.file_keys(slot, env);
                }
                slot
            }
        };
        self.sessions.requeued(session, slot);
        if let Some(f) = &mut self.fair {
            f.enter(session, Entering::Requeued, env);
        }
        self.record(Event::Preempt { session, cached });
        self.notices.push(Notice::Preempted { session });
    }
}
