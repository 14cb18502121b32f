//! Release (R14) and what it caches: a holder's computed prefix (set by the host),
//! its removal from every holder structure, and its blocks — the full computed ones
//! that nobody else holds become one new entry, in chain order, the rest is freed —
//! with the S3 snapshot taken at the release. Preemption (`grow.rs`) releases the same
//! way. It never evicts and never touches the queue.

use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::types::{SessionId, Units};

use super::Pool;
use super::holders::{Holder, HolderSlot};

impl Pool {
    /// Sets how many leading units of a hold are computed (what R14 caches at
    /// release and R13 at preemption). Hits count as computed from admission.
    pub fn set_computed(&mut self, session: SessionId, computed: Units) -> Result<(), Error> {
        let slot = self
            .sessions
            .holder_slot(session)
            .ok_or(Error::NotHolding(session))?;
        let h = self.holders.get_mut(slot);
        if computed.0 > h.units {
            return Err(Error::ComputedBeyondUnits {
                session,
                computed,
                units: Units(h.units),
            });
        }
        h.computed = computed.0;
        Ok(())
    }

    /// R14: the holder ends its hold. Returns the units cached as a new entry.
    pub fn release<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        env: &E,
    ) -> Result<Units, Error> {
        self.check_time(now)?;
        let slot = self
            .sessions
            .released(session)
            .ok_or(Error::NotHolding(session))?;
        self.begin(now);
        let mut h = self.remove_holder(slot);
        let cached = self.release_blocks(&mut h, env);
        self.record(Event::Release { session, cached });
        Ok(cached)
    }

    /// Takes a holder out of the holders and the waiting grows (its session's
    /// place is the caller's).
    pub(super) fn remove_holder(&mut self, slot: HolderSlot) -> Holder {
        let h = self.holders.remove(slot);
        if h.pending_grow.is_some() {
            self.pending.retain(|&s| s != h.session);
        }
        h
    }

    /// R14 for a holder already removed: its full computed blocks that nobody else
    /// holds become one new entry, in chain order; the rest is freed. Returns the
    /// units cached; `h` keeps no blocks.
    pub(super) fn release_blocks<E: Env + ?Sized>(&mut self, h: &mut Holder, env: &E) -> Units {
        let full = Units(h.computed).blocks_down(self.block);
        let (session, now, snaps) = (h.session, self.now, &mut self.snaps);
        let ranges = h.header.chain.key_ranges_from(0, self.block);
        let opened = self
            .store
            .cache_released(&h.blocks, ranges, h.keyed, full, |store| {
                let snap = snaps.acquire(session);
                store.open_entry(session, now, snap)
            });
        self.store.free_anonymous(h.anonymous);
        if self.snaps.on() {
            self.snaps.record(h.session, env);
        }
        let cached = opened.map_or(0, |slot| self.store.entry(slot).blocks * self.block);
        h.blocks.clear();
        self.scratch.spare.push(std::mem::take(&mut h.blocks));
        Units(cached)
    }
}
