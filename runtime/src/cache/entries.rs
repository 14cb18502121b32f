//! The cache's entries and their segments, as lists: entries in release order
//! (R3, R10's lru order and tie rule) and each entry's segments head to tail, with
//! slots reused so that linking and unlinking allocate nothing once warm. It keeps
//! the lists; what a block's key or copy becomes is `cache.rs`'s.

// Slots index the store's own slabs (see cache.rs).
#![allow(clippy::indexing_slicing)]

use crate::types::{BlockKey, RunId, SessionId, SnapSlot};

use super::block::{SegId, Segment};
use super::{Entry, EntryId, EntrySlot, Gone, Store};

impl Store {
    pub fn entry_count(&self) -> usize {
        self.live_entries
    }

    /// Live entry slots in release order.
    pub fn entry_slots(&self) -> impl Iterator<Item = EntrySlot> + '_ {
        let mut at = self.oldest;
        std::iter::from_fn(move || {
            if at == EntrySlot::NIL {
                return None;
            }
            let slot = at;
            at = self.entry(slot).newer;
            Some(slot)
        })
    }

    /// The live entry with the least release order (lru): entries are kept sorted by
    /// (release time, id), so this is the oldest release.
    pub fn oldest_entry(&self) -> Option<EntrySlot> {
        (self.oldest != EntrySlot::NIL).then_some(self.oldest)
    }

    /// Slots are reused, so a vector indexed by slot must be this long.
    pub fn entry_slot_bound(&self) -> usize {
        self.entries.len()
    }

    pub fn entry(&self, slot: EntrySlot) -> &Entry {
        self.entries[slot.index()]
            .as_ref()
            .expect("entry slot in use")
    }

    pub(super) fn entry_mut(&mut self, slot: EntrySlot) -> &mut Entry {
        self.entries[slot.index()]
            .as_mut()
            .expect("entry slot in use")
    }

    /// The keys of an entry's blocks, head first.
    pub fn entry_keys(&self, slot: EntrySlot) -> Vec<BlockKey> {
        let mut out = Vec::new();
        let mut at = self.entry(slot).head;
        while at != SegId::NIL {
            let seg = self.seg(at);
            out.extend((0..seg.count).map(|i| seg.key_at(i, self.block)));
            at = seg.next;
        }
        out
    }

    /// An entry's segments, head first (for invariant checks).
    pub(super) fn entry_segs(&self, slot: EntrySlot) -> Vec<SegId> {
        let mut out = Vec::new();
        let mut at = self.entry(slot).head;
        while at != SegId::NIL {
            out.push(at);
            at = self.seg(at).next;
        }
        out
    }

    /// Opens a new, empty entry at the end of the release order. It must receive at
    /// least one block before anything else reads the store.
    pub fn open_entry(
        &mut self,
        session: SessionId,
        last: f64,
        snap: Option<SnapSlot>,
    ) -> EntrySlot {
        let id = EntryId(self.next_entry);
        self.next_entry += 1;
        let entry = Entry {
            id,
            session,
            last,
            head: SegId::NIL,
            tail: SegId::NIL,
            own: Store::empty_seg(EntrySlot::NIL, RunId(0), 0, 0),
            blocks: 0,
            snap,
            older: self.newest,
            newer: EntrySlot::NIL,
        };
        let slot = match self.free_entries.pop() {
            Some(s) => {
                self.entries[s.index()] = Some(entry);
                s
            }
            None => {
                self.entries.push(Some(entry));
                let slot = u32::try_from(self.entries.len() - 1)
                    .ok()
                    .filter(|&s| s < SegId::SLAB_LIMIT)
                    .expect("more than 2^27 entries in one pool");
                EntrySlot(slot)
            }
        };
        if self.newest == EntrySlot::NIL {
            self.oldest = slot;
        } else {
            self.entry_mut(self.newest).newer = slot;
        }
        self.newest = slot;
        self.live_entries += 1;
        slot
    }

    /// Opens a new, empty entry placed in release order by its `last` (after every
    /// entry whose release time is at most `last`): a tier's entries carry the release
    /// times of the pool that spilled them, which may be older than its newest entry
    /// (R12). Lru order stays (release time, then entry id). It must receive a block
    /// before anything else reads the store.
    pub fn open_entry_sorted(
        &mut self,
        session: SessionId,
        last: f64,
        snap: Option<SnapSlot>,
    ) -> EntrySlot {
        let mut after = self.newest;
        while after != EntrySlot::NIL && self.entry(after).last.total_cmp(&last).is_gt() {
            after = self.entry(after).older;
        }
        let slot = self.open_entry(session, last, snap);
        if after == self.entry(slot).older {
            return slot;
        }
        // Unlink from the newest end, then link in after `after` (NIL: first).
        let older = self.entry(slot).older;
        self.entry_mut(older).newer = EntrySlot::NIL;
        self.newest = older;
        let newer = if after == EntrySlot::NIL {
            self.oldest
        } else {
            self.entry(after).newer
        };
        {
            let e = self.entry_mut(slot);
            e.older = after;
            e.newer = newer;
        }
        if after == EntrySlot::NIL {
            self.oldest = slot;
        } else {
            self.entry_mut(after).newer = slot;
        }
        self.entry_mut(newer).older = slot;
        slot
    }

    /// The newest entry of `session` released at exactly `last`, if any (a tier
    /// gathers a spilled entry's blocks back into one entry).
    pub fn find_entry(&self, session: SessionId, last: f64) -> Option<EntrySlot> {
        let mut at = self.newest;
        while at != EntrySlot::NIL {
            let e = self.entry(at);
            match e.last.total_cmp(&last) {
                std::cmp::Ordering::Less => return None,
                std::cmp::Ordering::Equal if e.session == session => return Some(at),
                _ => at = e.older,
            }
        }
        None
    }

    /// `n` blocks left entry `slot`: drops it when none is left, and says so.
    pub(super) fn took(&mut self, slot: EntrySlot, n: u64) -> Option<Gone> {
        let e = self.entry_mut(slot);
        e.blocks -= n;
        if e.blocks > 0 {
            return None;
        }
        debug_assert!(
            e.head == SegId::NIL,
            "an entry with no blocks keeps segments"
        );
        let (older, newer) = (e.older, e.newer);
        if older == EntrySlot::NIL {
            self.oldest = newer;
        } else {
            self.entry_mut(older).newer = newer;
        }
        if newer == EntrySlot::NIL {
            self.newest = older;
        } else {
            self.entry_mut(newer).older = older;
        }
        self.live_entries -= 1;
        self.free_entries.push(slot);
        let e = self.entries[slot.index()]
            .take()
            .expect("entry slot in use");
        Some(Gone {
            session: e.session,
            snap: e.snap,
        })
    }

    /// A segment slot holding `seg` (unlinked): its entry's own while that is
    /// unused, else one of the slab's.
    fn alloc_seg(&mut self, seg: Segment) -> SegId {
        let slot = seg.entry;
        if self.entry(slot).own.count == 0 {
            self.entry_mut(slot).own = seg;
            return SegId::inline(slot);
        }
        match self.free_segs.pop() {
            Some(s) => {
                *self.seg_mut(s) = seg;
                s
            }
            None => {
                let s = u32::try_from(self.segs.len())
                    .ok()
                    .filter(|&s| s < SegId::SLAB_LIMIT)
                    .expect("more than 2^27 cached segments in one pool");
                self.segs.push(seg);
                SegId(s)
            }
        }
    }

    fn empty_seg(slot: EntrySlot, run: RunId, first: u64, count: u32) -> Segment {
        Segment {
            run,
            first,
            count,
            entry: slot,
            prev: SegId::NIL,
            next: SegId::NIL,
            dup_keys: 0,
        }
    }

    /// A new one-block segment at the entry's tail, holding `key`.
    pub(super) fn new_seg_at_tail(&mut self, slot: EntrySlot, key: BlockKey) -> SegId {
        let tail = self.entry(slot).tail;
        if tail == SegId::NIL {
            // An empty entry's first segment is its own (most entries have one).
            let s = SegId::inline(slot);
            let e = self.entry_mut(slot);
            debug_assert_eq!(e.own.count, 0, "an empty entry's own segment is unused");
            e.own = Store::empty_seg(slot, key.run, key.offset, 1);
            e.head = s;
            e.tail = s;
            return s;
        }
        let s = self.alloc_seg(Store::empty_seg(slot, key.run, key.offset, 1));
        self.seg_mut(s).prev = tail;
        self.seg_mut(tail).next = s;
        self.entry_mut(slot).tail = s;
        s
    }

    /// A new one-block segment at the entry's head, holding `key`.
    pub(super) fn new_seg_at_head(&mut self, slot: EntrySlot, key: BlockKey) -> SegId {
        let s = self.alloc_seg(Store::empty_seg(slot, key.run, key.offset, 1));
        let head = self.entry(slot).head;
        self.seg_mut(s).next = head;
        if head == SegId::NIL {
            self.entry_mut(slot).tail = s;
        } else {
            self.seg_mut(head).prev = s;
        }
        self.entry_mut(slot).head = s;
        s
    }

    /// A new segment right after `s`, naming `s`'s keys from position `from` on
    /// (the caller moves their copies and shortens `s`).
    pub(super) fn new_seg_after(&mut self, s: SegId, from: u32) -> SegId {
        let (slot, run, first, count, next) = {
            let seg = self.seg(s);
            (
                seg.entry,
                seg.run,
                seg.first + u64::from(from) * self.block,
                seg.count - from,
                seg.next,
            )
        };
        let after = self.alloc_seg(Store::empty_seg(slot, run, first, count));
        {
            let seg = self.seg_mut(after);
            seg.prev = s;
            seg.next = next;
        }
        self.seg_mut(s).next = after;
        if next == SegId::NIL {
            self.entry_mut(slot).tail = after;
        } else {
            self.seg_mut(next).prev = after;
        }
        after
    }

    /// Takes an emptied segment out of its entry and frees its slot.
    pub(super) fn unlink_seg(&mut self, s: SegId) {
        let (slot, prev, next) = {
            let seg = self.seg(s);
            debug_assert!(seg.count == 0 && seg.dup_keys == 0);
            (seg.entry, seg.prev, seg.next)
        };
        if prev == SegId::NIL {
            self.entry_mut(slot).head = next;
        } else {
            self.seg_mut(prev).next = next;
        }
        if next == SegId::NIL {
            self.entry_mut(slot).tail = prev;
        } else {
            self.seg_mut(next).prev = prev;
        }
        if s.place().is_err() {
            self.free_segs.push(s);
        }
    }
}
