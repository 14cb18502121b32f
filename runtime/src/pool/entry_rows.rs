//! What the entry site's compiled functions read (S2, S3): one row per cache entry —
//! the session's attributes (current while the host answers for it, else its
//! snapshot), `size`, `last`, `waiting`, `hits` — and the entry ctx (`now`, the units written
//! or loaded). It fills rows and runs the `evict by` scan and the spill's `pred` and
//! `work` on them; it changes no pool state beyond the scratch buffers it is given
//! (`evict.rs` acts on what it chose).

use crate::cache::{EntrySlot, Store};
use crate::config::{Input, Layout, SpillPolicy};
use crate::env::Env;
use crate::policy::KeyList;
use crate::queue::Queue;

use super::Scratch;
use super::attrs::{Snapshots, attr};
use super::hits::collect_hits;

/// The pool as the entry site sees it at one Evict moment: what entry rows read,
/// borrowed apart from the scratch buffers the rows are built in.
pub(super) struct EntryRows<'a, E: ?Sized> {
    pub store: &'a Store,
    /// The waiting holds, for S2 `waiting`.
    pub queue: &'a Queue,
    /// S3: the attributes of sessions the host no longer answers for.
    pub snaps: &'a Snapshots,
    pub block: u64,
    pub now: f64,
    pub env: &'a E,
}

impl<E: Env + ?Sized> EntryRows<'_, E> {
    /// `evict by`: fills one row per entry in release order and lets the compiled
    /// scan pick the least (ties to the lowest index, that is release order, E5/R10).
    pub fn select(
        &self,
        scratch: &mut Scratch,
        keys: &KeyList,
        layout: &Layout,
    ) -> Option<EntrySlot> {
        let n = self.store.entry_count();
        if n == 0 {
            return None;
        }
        scratch.slots.clear();
        scratch.slots.extend(self.store.entry_slots());
        self.fill(scratch, layout);
        let i = keys.select(&scratch.rows, n, layout.row.len(), &scratch.ctx)?;
        Some(scratch.slots[i])
    }

    /// R12 at one Evict moment: `Some(work)` when the spill predicate is non-zero
    /// (NaN counts as true, E2) for the entry whose tail is about to leave.
    pub fn spill_work(
        &self,
        scratch: &mut Scratch,
        spill: &SpillPolicy,
        slot: EntrySlot,
    ) -> Option<f64> {
        scratch.slots.clear();
        scratch.slots.push(slot);
        self.fill(scratch, &spill.layout);
        let pred = spill.fns.pred(&scratch.rows, &scratch.ctx);
        (pred != 0.0).then(|| spill.fns.work(&scratch.rows, &scratch.ctx))
    }

    /// The rows of the entries in `scratch.slots`, in that order, and the entry ctx
    /// of an Evict moment, for a layout of the entry site.
    fn fill(&self, scratch: &mut Scratch, layout: &Layout) {
        if layout.row.contains(&Input::Waiting) {
            self.count_waiting(scratch);
        }
        let stride = layout.row.len();
        scratch.rows.clear();
        scratch.rows.resize(scratch.slots.len() * stride, 0.0);
        for (i, &slot) in scratch.slots.iter().enumerate() {
            let row = &mut scratch.rows[i * stride..(i + 1) * stride];
            self.fill_row(row, &layout.row, slot, &scratch.counts);
        }
        // R12: a moment writes one block.
        fill_entry_ctx(&mut scratch.ctx, &layout.ctx, self.block, self.now);
    }

    /// One entry row (S2, S3): the session's attributes (current while it lives, else
    /// its snapshot), `size`, `last`, `waiting` (from `counts`, filled when read),
    /// `hits` (R31, of the tail block).
    fn fill_row(&self, row: &mut [f64], inputs: &[Input], slot: EntrySlot, counts: &[u32]) {
        let e = self.store.entry(slot);
        let live = self.env.attrs(e.session);
        for (value, input) in row.iter_mut().zip(inputs) {
            *value = match *input {
                Input::Attr(a) => match live {
                    Some(attrs) => attr(attrs, a, e.session),
                    None => self.snaps.value(e.snap, a),
                },
                Input::Size => (e.blocks * self.block) as f64,
                Input::Last => e.last,
                Input::Waiting => counts[slot.index()] as f64,
                Input::Hits => f64::from(self.store.tail_hits(slot)),
                other => unreachable!("validated entry row input {other:?}"),
            };
        }
    }

    /// S2 `waiting`: per entry slot, the waiting holds whose hit walk (as if admitted
    /// now) takes at least one of its blocks. Fills `scratch.counts`.
    fn count_waiting(&self, scratch: &mut Scratch) {
        let store = self.store;
        let bound = store.entry_slot_bound();
        scratch.counts.clear();
        scratch.counts.resize(bound, 0);
        scratch.stamps.clear();
        scratch.stamps.resize(bound, u64::MAX);
        for (i, w) in self.queue.iter_any().enumerate() {
            scratch.hits.clear();
            collect_hits(store, &w.header, self.block, &mut scratch.hits);
            for &c in &scratch.hits {
                if let Some(slot) = store.entry_of(c)
                    && scratch.stamps[slot.index()] != i as u64
                {
                    scratch.stamps[slot.index()] = i as u64;
                    scratch.counts[slot.index()] += 1;
                }
            }
        }
    }
}

/// The entry sites' ctx: `now`, and `units` = the units written (one block at an
/// Evict moment) or loaded (a tier load).
pub(super) fn fill_entry_ctx(ctx: &mut Vec<f64>, inputs: &[Input], units: u64, now: f64) {
    ctx.clear();
    for input in inputs {
        ctx.push(match *input {
            Input::Now => now,
            Input::SpillUnits => units as f64,
            other => unreachable!("validated entry ctx input {other:?}"),
        });
    }
}
