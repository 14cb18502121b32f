//! The block table of one pool member: blocks with their holders' reference counts,
//! cached content as entries of *segments* (consecutive blocks of one run, in chain
//! order, with no links per block: issue #35 item 1), the identity index (earliest
//! registered copy of each key, R7, with later copies in `dups`), and the cache's
//! entries (R3) with tail-first removal (R10, a count off the tail segment) and
//! removal of any block by a hit (R11). It counts allocated and cached blocks. It
//! does not choose which entry to evict, decide fits or know about holds and queues:
//! `pool/` does.
//!
//! A block keeps its id and record from allocation until it is freed or evicted, so
//! that caching a block and claiming it back change its record and its segment, not
//! the index.

// Indexing here is by the engine's own slab slots, block ids and loop counters over
// its own scratch buffers, each made by the structure it indexes: an index out of
// range is a broken invariant (the tests check the engine's invariants after every
// operation), not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The workspace denies
// `indexing_slicing` elsewhere; the engine's hot loops index on purpose.
#![allow(clippy::indexing_slicing)]

mod block;
mod check;
mod dups;
mod entries;
mod index;
mod release;
mod watch;

pub(crate) use block::CopyRef;
pub(crate) use check::HeldBlocks;
pub(crate) use index::Near;
pub(crate) use watch::WatchTicket;

use block::{Dup, SegId, Segment, Use};
use watch::Watch;

use crate::types::{BlockId, BlockKey, EntryId, KeyRange, SessionId, SnapSlot};

/// How many physical blocks one chain's known content may need: block ids are
/// `u32`, and the largest means "no block".
pub(crate) const MAX_CHAIN_BLOCKS: u64 = u32::MAX as u64;

/// An entry's slot in the store (stable while it lives; reused after it is gone).
/// Not its identity: that is its [`EntryId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct EntrySlot(pub(super) u32);

impl EntrySlot {
    /// "No entry" in the intrusive links below.
    const NIL: EntrySlot = EntrySlot(u32::MAX);

    /// For vectors indexed by entry slot (see [`Store::entry_slot_bound`]).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub id: EntryId,
    pub session: SessionId,
    /// Release time (`last`).
    pub last: f64,
    /// Its segments, head to tail.
    head: SegId,
    tail: SegId,
    /// Its own segment slot ([`SegId::inline`]), used while `count > 0`.
    own: Segment,
    /// Blocks in the entry.
    pub blocks: u64,
    /// Snapshot of the session's attributes (`pool/` manages it), if snapshots are on.
    pub snap: Option<SnapSlot>,
    /// Neighbours in release order.
    older: EntrySlot,
    newer: EntrySlot,
}

/// What is left of an entry that went with its last block: what the pool's
/// snapshots need to let it go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gone {
    pub session: SessionId,
    pub snap: Option<SnapSlot>,
}

/// Whether a pool's keys read R31's hit counts: a pool whose `evict by` and spill
/// rows read no `hits` keeps none (counting them would only cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HitCounts {
    Kept,
    Unread,
}

/// Blocks, identities and entries of one pool member.
#[derive(Debug)]
pub(crate) struct Store {
    block: u64,
    hit_counts: HitCounts,
    /// By block: its record, held or cached (and free records to reuse).
    blocks: Vec<Use>,
    /// By block: admissions whose hit took it since it was allocated (R31), read
    /// and cleared only for a block whose [`Use`] says a hit took it.
    hits: Vec<u32>,
    free_blocks: Vec<BlockId>,
    segs: Vec<Segment>,
    free_segs: Vec<SegId>,
    /// Key → the earliest registered copy still present (held or cached), grouped
    /// by run.
    index: index::Index,
    /// Key → its later copies in registration order, for the keys with more than
    /// one copy present (R7: rare; each such copy is flagged, so that the others
    /// never look here).
    dups: dups::Dups,
    /// Scratch for [`Store::register_all`]: keys of a range with a present copy,
    /// that copy and the new one.
    later: Vec<(BlockKey, CopyRef, CopyRef)>,
    entries: Vec<Option<Entry>>,
    free_entries: Vec<EntrySlot>,
    /// Live entries in release order (lru order and the tie rule), as a list
    /// through `older`/`newer`: appending and unlinking allocate nothing.
    oldest: EntrySlot,
    newest: EntrySlot,
    live_entries: usize,
    next_entry: u64,
    allocated: u64,
    cached: u64,
    watch: Watch,
}

impl Store {
    /// An empty store for a pool of `block` units a block.
    pub fn new(block: u64, hit_counts: HitCounts) -> Store {
        Store {
            block: block.max(1),
            hit_counts,
            blocks: Vec::new(),
            hits: Vec::new(),
            free_blocks: Vec::new(),
            segs: Vec::new(),
            free_segs: Vec::new(),
            index: index::Index::new(block),
            dups: dups::Dups::default(),
            later: Vec::new(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            oldest: EntrySlot::NIL,
            newest: EntrySlot::NIL,
            live_entries: 0,
            next_entry: 0,
            allocated: 0,
            cached: 0,
            watch: Watch::new(),
        }
    }
}

impl Store {
    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    pub fn cached(&self) -> u64 {
        self.cached
    }

    #[inline]
    fn used(&self, b: BlockId) -> Use {
        self.blocks[b.0 as usize]
    }

    #[inline]
    fn used_mut(&mut self, b: BlockId) -> &mut Use {
        &mut self.blocks[b.0 as usize]
    }

    #[inline]
    fn seg(&self, s: SegId) -> &Segment {
        match s.place() {
            Ok(slot) => &self.entry(slot).own,
            Err(i) => &self.segs[i],
        }
    }

    #[inline]
    fn seg_mut(&mut self, s: SegId) -> &mut Segment {
        match s.place() {
            Ok(slot) => &mut self.entry_mut(slot).own,
            Err(i) => &mut self.segs[i],
        }
    }

    /// Holders of a copy: a cached copy has none.
    pub fn refs(&self, c: CopyRef) -> u32 {
        self.used(c.block()).refs()
    }

    /// The entry of a cached copy, `None` when held.
    pub fn entry_of(&self, c: CopyRef) -> Option<EntrySlot> {
        self.used(c.block()).cached().map(|s| self.seg(s).entry)
    }

    /// The earliest registered copy still present with this key.
    pub fn lookup(&self, key: &BlockKey) -> Option<CopyRef> {
        self.index.get(key)
    }

    /// [`Store::lookup`] for one of a walk's keys, in chain order: `near` carries
    /// the walk's place in the index from key to key.
    pub fn lookup_near(&self, key: &BlockKey, near: &mut Near) -> Option<CopyRef> {
        self.index.get_near(key, near)
    }

    /// Starts watching a new set of keys (empty, untouched); the ticket names this
    /// start for [`Store::watch_touched`].
    #[inline]
    pub fn watch_start(&mut self) -> WatchTicket {
        self.watch.start()
    }

    /// Adds a key to the watched set.
    pub fn watch_add(&mut self, key: &BlockKey) {
        self.watch.add(key);
    }

    /// Stops watching (changes cost nothing again), if the watch still serves the
    /// walk of `ticket`: another walker's later start is left alone.
    pub fn watch_stop(&mut self, ticket: WatchTicket) {
        self.watch.stop(ticket);
    }

    /// Whether a change may have touched a key watched since the `watch_start`
    /// that gave `ticket` (another start since counts as a change).
    pub fn watch_touched(&self, ticket: WatchTicket) -> bool {
        self.watch.touched(ticket)
    }

    /// A fresh block held once, unregistered.
    pub fn alloc(&mut self) -> BlockId {
        let b = match self.free_blocks.pop() {
            Some(b) => b,
            None => {
                let b = u32::try_from(self.blocks.len())
                    .ok()
                    .filter(|&b| b < u32::MAX)
                    .map(BlockId)
                    .expect("more than 2^32 - 1 blocks in one pool");
                self.blocks.push(Use::FREE);
                self.hits.push(0);
                b
            }
        };
        *self.used_mut(b) = Use::FREE.with_refs(1);
        self.allocated += 1;
        b
    }

    /// Blocks beyond a chain's known content need no identity: they are only counted
    /// (they can never be registered, shared or cached).
    pub fn alloc_anonymous(&mut self, n: u64) {
        self.allocated += n;
    }

    pub fn free_anonymous(&mut self, n: u64) {
        self.allocated -= n;
    }

    /// Registers held blocks under their keys, in chain order (R7: blocks are
    /// hittable from allocation): a holder's new blocks, mostly consecutive keys
    /// of one run, each such range filed in the index as one
    /// ([`index::Index::insert_run`], issue #35 item 1). Their records do not
    /// change: a held block's key is its holder's.
    pub fn register_all(&mut self, blocks: &[BlockId], ranges: impl Iterator<Item = KeyRange>) {
        let block = self.block;
        let mut rest = blocks;
        for r in ranges {
            if rest.is_empty() {
                break;
            }
            let n = usize::try_from(r.count).map_or(rest.len(), |n| n.min(rest.len()));
            let (range, after) = rest.split_at(n);
            if self.watch.on() {
                for j in 0..n as u64 {
                    self.watch.touch(&r.key_at(j, block));
                }
            }
            // A key with a present copy (R7: rare) gets this one after it, once
            // the range is filed.
            let mut later = std::mem::take(&mut self.later);
            self.index.insert_run(r.first, range, |key, f, c| {
                later.push((key, f, c));
            });
            for (key, f, c) in later.drain(..) {
                self.add_later_copy(key, f, c.block());
            }
            self.later = later;
            rest = after;
        }
        assert!(rest.is_empty(), "a key for every block registered");
    }

    /// Files block `later` after the key's present copies (the first being `first`).
    #[inline(never)]
    fn add_later_copy(&mut self, key: BlockKey, first: CopyRef, later: BlockId) {
        if self.dups.push(key, CopyRef::of(later)) {
            self.flag(first.block(), Dup::Yes);
        }
        self.flag(later, Dup::Yes);
    }

    /// Sets or clears the mark that a block's key has other copies present (a
    /// cached block's segment counts its marked blocks).
    fn flag(&mut self, b: BlockId, dup: Dup) {
        let used = self.used_mut(b);
        let was = used.dup();
        *used = used.with_dup(dup);
        if let Some(s) = used.cached() {
            match (was, dup) {
                (false, Dup::Yes) => self.seg_mut(s).dup_keys += 1,
                (true, Dup::No) => self.seg_mut(s).dup_keys -= 1,
                _ => {}
            }
        }
    }

    /// A copy of `key` leaves: the next copy, if any, takes its place as the first.
    #[inline(always)]
    fn remove_copy(&mut self, key: BlockKey, b: BlockId) {
        if self.used(b).dup() {
            self.remove_dup(key, CopyRef::of(b));
        } else {
            let first = self.index.release(key, CopyRef::of(b), None);
            debug_assert!(first.is_none(), "a key's only copy is its first");
        }
    }

    #[inline(never)]
    fn remove_dup(&mut self, key: BlockKey, c: CopyRef) {
        self.flag(c.block(), Dup::No);
        let first = self.index.get(&key).expect("a present key is indexed");
        let alone = if first == c {
            let (next, left) = self.dups.pop_front(&key);
            self.index.release(key, c, Some(next));
            left.then_some(next)
        } else {
            self.dups.remove(&key, c).then_some(first)
        };
        if let Some(only) = alone {
            self.flag(only.block(), Dup::No);
        }
    }

    /// Unregisters a held or cached block (any of its key's copies), `key`.
    #[inline(always)]
    fn unregister(&mut self, b: BlockId, key: BlockKey) {
        self.watch.touch(&key);
        self.remove_copy(key, b);
    }

    /// One more holder of a held block (R7 sharing).
    fn share(&mut self, b: BlockId) {
        let used = self.used_mut(b);
        debug_assert!(used.refs() > 0, "sharing a block nobody holds");
        *used = used.with_refs(used.refs() + 1);
    }

    /// Takes a hit walk's blocks, in chain order (R7, R11): a held copy is shared,
    /// a cached one claimed (it leaves its entry and is held once). Either way one
    /// hit is counted on it (R31). Pushes each block to `out`, and hands `gone`
    /// each entry that disappeared with its last claimed block, in the order they
    /// did. Cached copies that start a segment and go on along it are claimed
    /// together: a chain's keys are consecutive blocks of its runs, so such copies
    /// are the segment's first blocks, and their segment and entry shrink by a
    /// count (issue #35 item 1). `keys` are the walk's, one for each copy.
    pub fn take_hits(
        &mut self,
        copies: &[CopyRef],
        keys: impl Iterator<Item = BlockKey>,
        out: &mut Vec<BlockId>,
        mut gone: impl FnMut(Gone),
    ) {
        let mut keys = keys.peekable();
        let mut i = 0;
        while let Some(&c) = copies.get(i) {
            let b = c.block();
            let key = keys.next().expect("a key for every copy");
            let Some(s) = self.used(b).cached() else {
                self.share(b);
                self.count_hit(c);
                out.push(b);
                i += 1;
                continue;
            };
            let seg = self.seg(s);
            let at = seg.position(&key, self.block);
            let mut n = 1;
            if at == 0 {
                // Each next copy the segment's next block (a chain could name a key
                // twice: the second is then held, not cached in `s`).
                while n < seg.count
                    && copies.get(i + n as usize).is_some_and(|c| {
                        self.used(c.block()).cached() == Some(s)
                            && keys.next_if_eq(&seg.key_at(n, self.block)).is_some()
                    })
                {
                    n += 1;
                }
            }
            let claimed = copies.get(i..i + n as usize).expect("counted above");
            if let Some(g) = self.claim_run(s, at, claimed) {
                gone(g);
            }
            for &c in claimed {
                self.count_hit(c);
                out.push(c.block());
            }
            i += n as usize;
        }
    }

    /// One more admission whose hit took a copy (R31): counted whether it was shared
    /// or claimed, kept while the block is held or cached, lost when it is freed.
    pub fn count_hit(&mut self, c: CopyRef) {
        if self.hit_counts == HitCounts::Unread {
            return;
        }
        let b = c.block();
        let hits = &mut self.hits[b.0 as usize];
        *hits = hits.saturating_add(1);
        let used = self.used_mut(b);
        *used = used.with_hit();
    }

    /// The block of segment `s` with key `key` (it holds one).
    fn block_in(&self, key: &BlockKey, s: SegId) -> BlockId {
        let first = self
            .index
            .get(key)
            .expect("a cached key is indexed")
            .block();
        if self.used(first).cached() == Some(s) {
            return first;
        }
        self.dups
            .copies(key)
            .map(CopyRef::block)
            .find(|&b| self.used(b).cached() == Some(s))
            .expect("a segment's key has a copy in it")
    }

    /// R31 `hits`: the count of the entry's tail block, the block an Evict moment
    /// on it removes.
    pub fn tail_hits(&self, slot: EntrySlot) -> u32 {
        let t = self.entry(slot).tail;
        let seg = self.seg(t);
        let b = self.block_in(&seg.key_at(seg.count - 1, self.block), t);
        if self.used(b).hit() {
            self.hits[b.0 as usize]
        } else {
            0
        }
    }

    /// Cached blocks taken by a hit (R11), the blocks of segment `s` from position
    /// `at` on (one block, or the segment's first ones): they leave their segment
    /// and entry and are held once. Returns the entry when it disappeared with
    /// them.
    fn claim_run(&mut self, s: SegId, at: u32, claimed: &[CopyRef]) -> Option<Gone> {
        let n = u32::try_from(claimed.len()).expect("within a segment");
        for (j, &c) in (at..).zip(claimed) {
            let b = c.block();
            let key = self.seg(s).key_at(j, self.block);
            self.watch.touch(&key);
            if self.used(b).dup() {
                self.seg_mut(s).dup_keys -= 1;
            }
            let used = self.used_mut(b);
            *used = used.with_refs(1);
        }
        let slot = self.seg(s).entry;
        if at == 0 {
            self.cut_head(s, n);
        } else {
            debug_assert_eq!(n, 1, "a run is claimed from its segment's head");
            self.cut(s, at);
        }
        self.cached -= u64::from(n);
        self.allocated += u64::from(n);
        self.took(slot, u64::from(n))
    }

    /// A block written into this pool (R12's tier side) joins the head of an entry
    /// as the latest copy of `key`.
    pub fn store_at_head(&mut self, slot: EntrySlot, key: BlockKey) {
        self.watch.touch(&key);
        let head = self.entry(slot).head;
        let s = if head != SegId::NIL && self.seg(head).follows(&key, self.block) {
            let seg = self.seg_mut(head);
            seg.first = key.offset;
            seg.count += 1;
            head
        } else {
            self.new_seg_at_head(slot, key)
        };
        let b = self.alloc();
        self.allocated -= 1;
        *self.used_mut(b) = Use::FREE.with_seg(s);
        if let Some(first) = self.index.insert_or_first(key, CopyRef::of(b)) {
            self.add_later_copy(key, first, b);
        }
        self.entry_mut(slot).blocks += 1;
        self.cached += 1;
    }

    /// Evicts the tail block of an entry (R10): it is unregistered and freed.
    /// Returns its key and the entry when it disappeared.
    pub fn evict_tail(&mut self, slot: EntrySlot) -> (BlockKey, Option<Gone>) {
        let t = self.entry(slot).tail;
        assert!(t != SegId::NIL, "evicting from an empty entry");
        let key = {
            let seg = self.seg(t);
            seg.key_at(seg.count - 1, self.block)
        };
        self.evict_key(t, key);
        let seg = self.seg_mut(t);
        seg.count -= 1;
        if seg.count == 0 {
            self.unlink_seg(t);
        }
        self.cached -= 1;
        (key, self.took(slot, 1))
    }

    /// The block of segment `s` with key `key` leaves the index and is freed (its
    /// segment's count is the caller's).
    fn evict_key(&mut self, s: SegId, key: BlockKey) {
        let b = if self.seg(s).dup_keys == 0 {
            // The usual case: the key's only copy is this block.
            self.watch.touch(&key);
            self.index.remove_only(key).block()
        } else {
            let b = self.block_in(&key, s);
            // Its mark, if any, leaves its segment's count as the copy goes.
            self.unregister(b, key);
            b
        };
        recycle(&mut self.blocks, &mut self.hits, &mut self.free_blocks, b);
    }

    /// Evicts the `n` tail blocks of an entry at once (R10's order: each is the tail
    /// when it leaves), as `n` calls of [`Store::evict_tail`] would, for a caller that
    /// needs none of their keys. Returns the entry when it disappeared.
    pub fn evict_tail_n(&mut self, slot: EntrySlot, n: u64) -> Option<Gone> {
        assert!(
            n <= self.entry(slot).blocks,
            "evicting more blocks than an entry has"
        );
        if let Some(gone) = self.evict_whole(slot, n) {
            return Some(gone);
        }
        let mut left = n;
        while left > 0 {
            let t = self.entry(slot).tail;
            let (count, plain) = {
                let seg = self.seg(t);
                (seg.count, seg.dup_keys == 0)
            };
            let take = u32::try_from(left.min(u64::from(count))).expect("within a segment");
            if plain && !self.watch.on() {
                self.evict_plain(t, take);
            } else {
                for at in (count - take..count).rev() {
                    let key = self.seg(t).key_at(at, self.block);
                    self.evict_key(t, key);
                }
            }
            self.seg_mut(t).count -= take;
            if take == count {
                self.unlink_seg(t);
            }
            left -= u64::from(take);
        }
        self.cached -= n;
        self.took(slot, n)
    }

    /// [`Store::evict_tail_n`]'s usual case, at less cost: the whole entry goes, it
    /// is one segment, each of its keys is its only copy and no walk is watching
    /// (a 1-block entry's end, issue #35 item 3). Its keys leave the index
    /// together; the entry goes without unlinking its segment first. `None`, with
    /// nothing changed, when that is not the case.
    #[inline]
    fn evict_whole(&mut self, slot: EntrySlot, n: u64) -> Option<Gone> {
        let e = self.entry(slot);
        let t = e.tail;
        if n != e.blocks || e.head != t || self.watch.on() {
            return None;
        }
        let seg = self.seg(t);
        if seg.dup_keys != 0 {
            return None;
        }
        self.evict_plain(t, seg.count);
        self.seg_mut(t).count = 0;
        if t.place().is_err() {
            self.free_segs.push(t);
        }
        let e = self.entry_mut(slot);
        e.head = SegId::NIL;
        e.tail = SegId::NIL;
        self.cached -= n;
        let gone = self.took(slot, n);
        debug_assert!(gone.is_some(), "an entry without blocks goes");
        gone
    }

    /// The `take` tail keys of segment `t` leave the index together and their
    /// blocks are freed, where each key is its block's only copy and no walk is
    /// watching (R10's usual case; the segment's count is the caller's).
    #[inline(always)]
    fn evict_plain(&mut self, t: SegId, take: u32) {
        let seg = self.seg(t);
        debug_assert!(seg.dup_keys == 0 && !self.watch.on() && take <= seg.count);
        let last = seg.key_at(seg.count - 1, self.block);
        let (blocks, hits, free) = (&mut self.blocks, &mut self.hits, &mut self.free_blocks);
        if take == 1 {
            // One key (every Evict moment of a 1-block entry, the usual one of
            // 1-block holds): the one-key removal in line, without the call and
            // the loop over a group's slots.
            let c = self.index.remove_only(last);
            recycle(blocks, hits, free, c.block());
        } else {
            self.index
                .remove_only_copies(last.run, last.offset, take, |c| {
                    recycle(blocks, hits, free, c.block());
                });
        }
    }

    /// Takes the first `n` blocks out of segment `s` (claimed by a hit); a segment
    /// left empty goes.
    fn cut_head(&mut self, s: SegId, n: u32) {
        let block = self.block;
        let seg = self.seg_mut(s);
        seg.first += u64::from(n) * block;
        seg.count -= n;
        if seg.count == 0 {
            self.unlink_seg(s);
        }
    }

    /// Takes position `at`, not the head (that is [`Store::cut_head`]'s), out of
    /// segment `s` (a claimed block): the segment shrinks at its tail end, or splits
    /// in two, the blocks after `at` moving to a new segment. It keeps its head, so
    /// it never empties.
    fn cut(&mut self, s: SegId, at: u32) {
        debug_assert!(at > 0, "a segment's head is cut by cut_head");
        let block = self.block;
        let count = self.seg(s).count;
        if at + 1 == count {
            self.seg_mut(s).count -= 1;
        } else {
            let after = self.new_seg_after(s, at + 1);
            self.seg_mut(s).count = at;
            for i in 0..self.seg(after).count {
                let key = self.seg(after).key_at(i, block);
                let b = self.block_in(&key, s);
                let used = self.used(b).with_seg(after);
                *self.used_mut(b) = used;
                if used.dup() {
                    self.seg_mut(s).dup_keys -= 1;
                    self.seg_mut(after).dup_keys += 1;
                }
            }
        }
    }
}

/// Makes a block nobody holds or caches reusable: its record and hit count
/// cleared, its id on the free list. Every way a block ends (`free`, eviction)
/// ends here; a free function so that a loop over the index may call it beside the
/// index's borrow.
#[inline(always)]
fn recycle(blocks: &mut [Use], hits: &mut [u32], free: &mut Vec<BlockId>, b: BlockId) {
    let used = &mut blocks[b.0 as usize];
    if used.hit() {
        hits[b.0 as usize] = 0;
    }
    *used = Use::FREE;
    free.push(b);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_block_record_is_4_bytes_and_a_segment_40() {
        // The block table is the replay's largest structure per replica, touched at
        // random: a record has no links, an entry's order being its segments', and
        // no key, a block's key being its holder's or its segment's
        // (docs/PERFORMANCE.md, #35 item 1).
        assert_eq!(std::mem::size_of::<super::Use>(), 4);
        assert_eq!(std::mem::size_of::<super::Segment>(), 40);
    }
}
