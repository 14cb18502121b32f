//! What a host or a test may read of a pool member without changing it: its state in
//! units, holders, waiting holds and entries, its own queries (E6), the running
//! counters and the event log (and turning it on and off), and the invariant check
//! (R1 and every internal invariant). Nothing here changes a rule's outcome: the log
//! only records what the operations did.

use crate::cache::HeldBlocks;
use crate::config::QueryKind;
use crate::event::{Counters, Notice, Record};
use crate::types::{BlockKey, Chain, Header, Limit, SessionId, Units};

use super::{EntryInfo, HoldInfo, Pool};

impl Pool {
    pub fn cap(&self) -> Limit {
        self.cap
    }

    pub fn block(&self) -> Units {
        Units(self.block)
    }

    /// Allocated units (whole blocks; a shared block counts once, R7).
    pub fn allocated(&self) -> Units {
        Units(self.store.allocated() * self.block)
    }

    pub fn cached(&self) -> Units {
        Units(self.store.cached() * self.block)
    }

    /// Waiting holds, preempted ones included.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn holders(&self) -> usize {
        self.sessions.holding()
    }

    /// Holders whose grow waits (`preempt none`), which `retry_grows` retries.
    pub fn grows_waiting(&self) -> usize {
        self.pending.len()
    }

    /// Whether `blocks` more blocks can be allocated now without preempting anyone
    /// (cached blocks are evicted for them, R6): grows needing that many fit (R13).
    pub fn can_allocate(&self, blocks: u64) -> bool {
        self.fits(blocks)
    }

    /// The units a hold with `header` would hit if admitted now (R4, R7, R11): the
    /// leading blocks of its chain with a present copy, held or cached, within its
    /// hit limit. A read of the block table only: it walks the chain's keys in the
    /// identity index and never touches the cache's order (route keys' `hit`, R22).
    pub fn would_hit(&self, header: &Header) -> Units {
        Units(super::hits::hit_counts(&self.store, header, self.block).0 * self.block)
    }

    /// The units right after the first `from` units of `header`'s chain that this
    /// pool, as a tier, holds (R12's tier hit; route keys' `tier_hit`, R22). `from`
    /// is a whole number of blocks of the same size (a spilling pool's hit).
    pub fn would_hit_after(&self, header: &Header, from: Units) -> Units {
        let from = from.blocks_down(self.block);
        Units(super::tier::tier_run(&self.store, header, from, self.block) * self.block)
    }

    /// The latest time an operation was given (−inf before the first).
    pub fn now(&self) -> f64 {
        self.now
    }

    /// What the last operation told the host beyond its return value.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    pub fn hold(&self, session: SessionId) -> Option<HoldInfo> {
        let h = self.holders.get(self.sessions.holder_slot(session)?);
        Some(HoldInfo {
            units: Units(h.units),
            computed: Units(h.computed),
            blocks: Units(h.held_blocks() * self.block),
            pending_grow: h.pending_grow.map(Units),
        })
    }

    /// The content chain `session` holds with (its header's, as enqueued): a host
    /// that continues the session in another pool enqueues it there (R25).
    pub fn held_chain(&self, session: SessionId) -> Option<&Chain> {
        let h = self.holders.get(self.sessions.holder_slot(session)?);
        Some(&h.header.chain)
    }

    pub fn is_waiting(&self, session: SessionId) -> bool {
        self.sessions.waiting_slot(session).is_some()
    }

    /// Whether its entry keys read session attributes (so it snapshots them, S3). A
    /// tier that does needs its host to answer `Env::attrs` for an ended session
    /// whose blocks may still be spilled into it (`accept_spill`).
    pub fn snapshots_attrs(&self) -> bool {
        self.snaps.on()
    }

    /// Whether `queue by` keys are kept in the ordered index (they read only fixed
    /// inputs) rather than evaluated by the compiled scan at every attempt.
    pub fn queue_is_indexed(&self) -> bool {
        self.queue.is_indexed()
    }

    /// Sessions waiting, in selection-independent order: preempted (most recent
    /// first), then enqueue order.
    pub fn waiting_sessions(&self) -> Vec<SessionId> {
        self.queue.in_order().iter().map(|w| w.session).collect()
    }

    /// The cache's entries in release order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        self.store
            .entry_slots()
            .map(|slot| {
                let e = self.store.entry(slot);
                EntryInfo {
                    id: e.id,
                    session: e.session,
                    last: e.last,
                    keys: self.store.entry_keys(slot),
                }
            })
            .collect()
    }

    /// Whether a block with this key is registered here, held or cached.
    pub fn has_key(&self, key: &BlockKey) -> bool {
        self.store.lookup(key).is_some()
    }

    /// The value of a query on this pool (E6).
    pub fn query(&self, kind: QueryKind) -> f64 {
        let b = self.block as f64;
        match kind {
            QueryKind::Free => {
                self.cap.as_f64() - (self.store.allocated() + self.store.cached()) as f64 * b
            }
            QueryKind::Used => self.store.allocated() as f64 * b,
            QueryKind::Cached => self.store.cached() as f64 * b,
            QueryKind::Cap => self.cap.as_f64(),
            QueryKind::Queued => self.queue.len() as f64,
            // Stage queries never target a pool; a host that asks gets the neutral
            // values of `default_query`.
            QueryKind::BudgetLeft => f64::INFINITY,
            QueryKind::Residents => 0.0,
        }
    }

    /// Checks R1 (allocated + cached ≤ cap) and every internal invariant; `Err`
    /// describes the first one broken. Tests call it after every operation.
    pub fn check(&self) -> Result<(), String> {
        if let Some(cap) = self.cap_blocks {
            let used = self.store.allocated() + self.store.cached();
            if used > cap {
                return Err(format!(
                    "R1 broken: allocated {} + cached {} > cap {:?}",
                    self.allocated(),
                    self.cached(),
                    self.cap
                ));
            }
        }
        let lists: Vec<HeldBlocks<'_>> = self
            .holders
            .iter()
            .map(|h| HeldBlocks {
                blocks: h.blocks.as_slice(),
                keys: h.registered_keys(self.block).collect(),
            })
            .collect();
        let anonymous = self.holders.iter().map(|h| h.anonymous).sum();
        self.store.check(&lists, anonymous)?;
        for h in self.holders.iter() {
            let total = Units(h.units).blocks_up(self.block);
            let physical = total.min(h.header.chain.full_blocks(self.block));
            if h.blocks.len() as u64 != physical || h.anonymous != total - physical {
                return Err(format!("{} holds the wrong number of blocks", h.session));
            }
            if h.computed > h.units {
                return Err(format!("{} computed beyond its units", h.session));
            }
        }
        if self.holders.len() != self.holders.listed()
            || self.sessions.holding() != self.holders.len()
        {
            return Err("holder map and admission order disagree".into());
        }
        if self.sessions.waiting() != self.queue.len() {
            return Err("waiting set and queue disagree".into());
        }
        Ok(())
    }

    /// Turns the event log on (keeping what it has) or off (dropping it).
    pub fn set_logging(&mut self, on: bool) {
        match (on, self.log.is_some()) {
            (true, false) => self.log = Some(Vec::new()),
            (false, true) => self.log = None,
            _ => {}
        }
    }

    /// The records logged so far (empty when logging is off).
    pub fn log(&self) -> &[Record] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// Forgets the records logged so far, keeping the log on and its buffer (a host
    /// that writes records out after each operation allocates nothing for them).
    pub fn clear_log(&mut self) {
        if let Some(log) = &mut self.log {
            log.clear();
        }
    }

    /// Takes the records logged so far, leaving the log on and empty.
    pub fn take_log(&mut self) -> Vec<Record> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Running totals of this member's events (kept with the log off too).
    pub fn counters(&self) -> Counters {
        self.counters
    }
}
