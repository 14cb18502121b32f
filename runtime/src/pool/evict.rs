//! Making room (R10): Evict moments, one block each, until new blocks fit beside the
//! cache — choose the entry (`lru`: the oldest; `by`: the compiled scan over entry
//! rows, once per entry when its keys cannot change within the call), decide the
//! spill (R12), remove the entry's tail block, log and notify; or, where no moment
//! is logged, the choice lasts and a spill would decide alike at each, take one
//! entry's moments together. It
//! never decides a fit (callers judged it before, so the cache always suffices) and
//! never takes a held block.

use crate::cache::EntrySlot;
use crate::config::{EvictPolicy, Input, Layout, SpillPolicy};
use crate::env::Env;
use crate::event::{Event, Notice};
use crate::types::{BlockKey, SessionId, Units};

use super::Pool;
use super::entry_rows::EntryRows;

/// Whether `evict`'s choice lasts across the Evict moments of one call: `lru` (the
/// oldest entry stays the oldest) and `by` keys that read none of `size`, `waiting`
/// and `hits` (each moment changes the chosen entry's tail, and with it `hits`).
pub(super) fn keeps_its_choice(evict: &EvictPolicy) -> bool {
    match evict {
        EvictPolicy::By { layout, .. } => reads_nothing_a_moment_changes(layout),
        EvictPolicy::Lru => true,
    }
}

/// Whether R12's spill decides the same at every Evict moment of one entry within
/// one call: its `when` and work read none of `size`, `waiting` and `hits` (its
/// context, the block a moment writes and `now`, is the same at each). No spill
/// decides nothing.
pub(super) fn spills_alike(spill: Option<&SpillPolicy>) -> bool {
    spill.is_none_or(|sp| reads_nothing_a_moment_changes(&sp.layout))
}

/// An entry row that reads none of `size`, `waiting` and `hits` is the same at
/// every Evict moment of one call: attributes, `last` and `now` stay.
fn reads_nothing_a_moment_changes(layout: &Layout) -> bool {
    !layout
        .row
        .iter()
        .any(|i| matches!(i, Input::Size | Input::Waiting | Input::Hits))
}

impl Pool {
    /// Evicts one block per Evict moment until `new` more blocks fit beside the cache
    /// (R10). The fit was judged before, so the cache always suffices.
    pub(super) fn make_room<E: Env + ?Sized>(&mut self, new: u64, env: &E) {
        let Some(cap) = self.cap_blocks else {
            return;
        };
        // R10 chooses the least entry at every Evict moment. Between the moments of
        // one call only the chosen entry changes (its tail leaves) and nothing else
        // the keys could read does (`now`, attributes, `last` stay; no entry is
        // added), so under `lru`, or keys that read none of `size`, `waiting` and
        // `hits`, the least entry stays the least, first in release order among
        // equals, until it is gone: choosing once per entry gives the same sequence
        // at a scan per entry instead of per block (docs/PERFORMANCE.md, issue #16).
        let stable = self.evict_stable;
        let mut chosen = None;
        // Where no moment is observed on its own — no log records the counts after
        // each, and a spill, if any, decides alike at each — the moments of one
        // chosen entry are taken together: its tail shortened by a count, or, where
        // they spill, one decision for all (issue #35 item 1).
        let together = stable && self.log.is_none() && self.spills_alike;
        while self.store.allocated() + self.store.cached() + new > cap {
            chosen = if together {
                let over = self.store.allocated() + self.store.cached() + new - cap;
                self.evict_together(env, chosen, over)
            } else {
                self.evict_one(env, chosen).filter(|_| stable)
            };
        }
    }

    /// One Evict moment's choice: the least entry (or `chosen`, the least of the
    /// previous moment of this call), and R12's spill work for it when the pool
    /// spills and the predicate holds (`pred` and `work` see the entry as it is at
    /// this moment, before its tail leaves: `size` counts the block being written).
    fn choose<E: Env + ?Sized>(
        &mut self,
        env: &E,
        chosen: Option<EntrySlot>,
    ) -> (EntrySlot, Option<f64>) {
        let rows = EntryRows {
            store: &self.store,
            queue: &self.queue,
            snaps: &self.snaps,
            block: self.block,
            now: self.now,
            env,
        };
        let slot = match (&self.evict, chosen) {
            (_, Some(slot)) => Some(slot),
            (EvictPolicy::Lru, None) => self.store.oldest_entry(),
            (EvictPolicy::By { keys, layout }, None) => {
                rows.select(&mut self.scratch, keys, layout)
            }
        }
        .expect("a fit was judged with room the cache cannot give");
        let spill = self
            .spill
            .as_ref()
            .and_then(|sp| rows.spill_work(&mut self.scratch, sp, slot));
        (slot, spill)
    }

    /// Up to `over` Evict moments on the least entry, all at once (no log, a spill
    /// decided alike at each: see `make_room`). Returns the entry when it still
    /// has blocks.
    fn evict_together<E: Env + ?Sized>(
        &mut self,
        env: &E,
        chosen: Option<EntrySlot>,
        over: u64,
    ) -> Option<EntrySlot> {
        let (slot, spill) = self.choose(env, chosen);
        let n = over.min(self.store.entry(slot).blocks);
        self.counters.evictions += n;
        if let Some(work) = spill {
            return self.spill_together(slot, n, work);
        }
        match self.store.evict_tail_n(slot, n) {
            Some(gone) => {
                self.snaps.release(gone.snap, gone.session);
                None
            }
            None => Some(slot),
        }
    }

    /// `n` Evict moments on entry `slot` that each spill its tail block with the
    /// same `work` (R12, decided once: see `make_room`), a notice per block in the
    /// order the moments would give. Returns the entry when it still has blocks.
    fn spill_together(&mut self, slot: EntrySlot, n: u64, work: f64) -> Option<EntrySlot> {
        let (session, last) = {
            let e = self.store.entry(slot);
            (e.session, e.last)
        };
        self.counters.spills += n;
        for _ in 0..n {
            let (key, gone) = self.store.evict_tail(slot);
            let notice = self.spill_notice(session, key, last, work);
            self.notices.push(notice);
            if let Some(gone) = gone {
                self.snaps.release(gone.snap, gone.session);
                return None;
            }
        }
        Some(slot)
    }

    /// One Evict moment: choose the least entry (or take `chosen`, the least of the
    /// previous moment of this call) and remove its tail block. Returns the entry
    /// when it still has blocks.
    fn evict_one<E: Env + ?Sized>(
        &mut self,
        env: &E,
        chosen: Option<EntrySlot>,
    ) -> Option<EntrySlot> {
        let (slot, spill) = self.choose(env, chosen);
        let (entry, session, last) = {
            let e = self.store.entry(slot);
            (e.id, e.session, e.last)
        };
        let (key, gone) = self.store.evict_tail(slot);
        let left = gone.is_none().then_some(slot);
        if let Some(gone) = gone {
            self.snaps.release(gone.snap, gone.session);
        }
        let units = Units(self.block);
        self.record(Event::Evict {
            entry,
            session,
            key,
            units,
        });
        if let Some(work) = spill {
            self.record(Event::Spill {
                entry,
                session,
                key,
                units,
                work,
            });
            let notice = self.spill_notice(session, key, last, work);
            self.notices.push(notice);
        }
        left
    }

    /// R12's notice that one block of `session`'s entry released at `last`, `key`,
    /// is spilled with `work` (the pool spills).
    fn spill_notice(&self, session: SessionId, key: BlockKey, last: f64, work: f64) -> Notice {
        let sp = self.spill.as_ref().expect("only a pool that spills");
        Notice::Spill {
            session,
            key,
            last,
            units: Units(self.block),
            work,
            tier: sp.tier,
            link: sp.link,
        }
    }
}
