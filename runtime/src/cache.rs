//! The block table of one pool member: physical blocks with their holders' reference
//! counts, the identity index (earliest registered copy of each key, R7), and the
//! cache of entries (R3) with tail-first removal (R10) and removal of any block by a
//! hit (R11). It counts allocated and cached blocks. It does not choose which entry to
//! evict, decide fits or know about holds and queues: `pool/` does.

// Indexing here is by the engine's own slab slots, block ids and loop counters over
// its own scratch buffers, each made by the structure it indexes: an index out of
// range is a broken invariant (the tests check the engine's invariants after every
// operation), not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The workspace denies
// `indexing_slicing` elsewhere; the engine's hot loops index on purpose.
#![allow(clippy::indexing_slicing)]

mod block;
mod index;
mod watch;

pub(crate) use index::Near;

use block::{Block, NO_BLOCK, UNREGISTERED, Use};
use watch::Watch;

use crate::types::{BlockId, BlockKey, EntryId, SessionId, SnapSlot};

/// How many physical blocks one chain's known content may need: block ids are
/// `u32`, and the largest means "no block".
pub(crate) const MAX_CHAIN_BLOCKS: u64 = u32::MAX as u64;

/// An entry's slot in the store (stable while it lives; reused after it is gone).
/// Not its identity: that is its [`EntryId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EntrySlot(u32);

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
    pub head: BlockId,
    pub tail: BlockId,
    /// Blocks in the entry.
    pub blocks: u64,
    /// Snapshot of the session's attributes (`pool/` manages it), if snapshots are on.
    pub snap: Option<SnapSlot>,
    /// Neighbours in release order.
    older: EntrySlot,
    newer: EntrySlot,
}

/// Blocks, identities and entries of one pool member.
#[derive(Debug)]
pub(crate) struct Store {
    blocks: Vec<Block>,
    /// By block: admissions whose hit took it since it was allocated here (R31),
    /// read and cleared only for a block whose [`Use`] says a hit took it.
    /// Beside the records, not in them: read only by `hits` keys, written by hits.
    hits: Vec<u32>,
    free_blocks: Vec<BlockId>,
    /// Key → the earliest registered copy still present (held or cached), grouped
    /// by run. Later copies hang off it through `next_dup`.
    index: index::Index,
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
    pub fn new(block: u64) -> Store {
        Store {
            blocks: Vec::new(),
            hits: Vec::new(),
            free_blocks: Vec::new(),
            index: index::Index::new(block),
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

    fn entry_mut(&mut self, slot: EntrySlot) -> &mut Entry {
        self.entries[slot.index()]
            .as_mut()
            .expect("entry slot in use")
    }

    fn block(&self, b: BlockId) -> &Block {
        &self.blocks[b.0 as usize]
    }

    fn block_mut(&mut self, b: BlockId) -> &mut Block {
        &mut self.blocks[b.0 as usize]
    }

    pub fn refs(&self, b: BlockId) -> u32 {
        self.block(b).used.refs()
    }

    pub fn key(&self, b: BlockId) -> Option<BlockKey> {
        self.block(b).key()
    }

    /// The entry slot of a cached block, `None` when held.
    pub fn entry_of(&self, b: BlockId) -> Option<EntrySlot> {
        let slot = self.block(b).used.entry();
        (slot != EntrySlot::NIL).then_some(slot)
    }

    /// The earliest registered copy still present with this key.
    pub fn lookup(&self, key: &BlockKey) -> Option<BlockId> {
        self.index.get(key)
    }

    /// [`Store::lookup`] for one of a walk's keys, in chain order: `near` carries
    /// the walk's place in the index from key to key.
    pub fn lookup_near(&self, key: &BlockKey, near: &mut Near) -> Option<BlockId> {
        self.index.get_near(key, near)
    }

    /// Starts watching a new set of keys (empty, untouched).
    pub fn watch_start(&mut self) {
        self.watch.start();
    }

    /// Adds a key to the watched set.
    pub fn watch_add(&mut self, key: &BlockKey) {
        self.watch.add(key);
    }

    /// Stops watching (changes cost nothing again).
    pub fn watch_stop(&mut self) {
        self.watch.stop();
    }

    /// Whether a change may have touched a watched key since `watch_start`.
    pub fn watch_touched(&self) -> bool {
        self.watch.touched()
    }

    /// A fresh block held once, unregistered.
    pub fn alloc(&mut self) -> BlockId {
        let b = match self.free_blocks.pop() {
            Some(b) => b,
            None => {
                let b = u32::try_from(self.blocks.len())
                    .ok()
                    .map(BlockId)
                    .filter(|&b| b.0 < UNREGISTERED.0)
                    .expect("more than 2^32 - 2 physical blocks in one pool");
                self.blocks.push(Block::free());
                self.hits.push(0);
                b
            }
        };
        self.block_mut(b).used = Use::FREE.with_refs(1);
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

    /// Makes a held block hittable under `key`, as the latest copy of that key.
    #[inline]
    pub fn register(&mut self, b: BlockId, key: BlockKey) {
        debug_assert!(self.block(b).key().is_none(), "block registered twice");
        self.watch.touch(&key);
        self.block_mut(b).key = key;
        self.block_mut(b).next_dup = NO_BLOCK;
        if let Some(mut at) = self.index.insert_or_first(key, b) {
            while self.blocks[at.0 as usize].next_dup != NO_BLOCK {
                at = self.blocks[at.0 as usize].next_dup;
            }
            self.blocks[at.0 as usize].next_dup = b;
        }
    }

    #[inline(always)]
    fn unregister(&mut self, b: BlockId) {
        let Some(key) = self.block(b).key() else {
            return;
        };
        self.watch.touch(&key);
        let next = std::mem::replace(&mut self.block_mut(b).next_dup, UNREGISTERED);
        let Some(mut at) = self
            .index
            .release(key, b, (next != NO_BLOCK).then_some(next))
        else {
            return;
        };
        while self.block(at).next_dup != b {
            at = self.block(at).next_dup;
            assert!(
                at != NO_BLOCK,
                "registered block missing from its key's copies"
            );
        }
        self.block_mut(at).next_dup = next;
    }

    /// One more holder of a held block (R7 sharing).
    pub fn share(&mut self, b: BlockId) {
        let block = self.block_mut(b);
        debug_assert!(block.used.refs() > 0, "sharing a block nobody holds");
        block.used = block.used.with_refs(block.used.refs() + 1);
    }

    /// One more admission whose hit took `b` (R31): counted whether it was shared
    /// or claimed, kept while the block is held or cached, lost when it is freed.
    pub fn count_hit(&mut self, b: BlockId) {
        let hits = &mut self.hits[b.0 as usize];
        *hits = hits.saturating_add(1);
        let block = self.block_mut(b);
        block.used = block.used.with_hit();
    }

    /// R31 `hits`: the count of the entry's tail block, the block an Evict moment
    /// on it removes.
    pub fn tail_hits(&self, slot: EntrySlot) -> u32 {
        let tail = self.entry(slot).tail;
        if self.block(tail).used.hit() {
            self.hits[tail.0 as usize]
        } else {
            0
        }
    }

    /// A cached block taken by a hit (R11): it leaves its entry and is held once.
    /// Returns the entry when it disappeared with it.
    pub fn claim(&mut self, b: BlockId) -> Option<Entry> {
        let slot = self.block(b).used.entry();
        assert!(
            slot != EntrySlot::NIL,
            "claiming a block that is not cached"
        );
        if let Some(key) = self.block(b).key() {
            self.watch.touch(&key);
        }
        let gone = self.unlink(slot, b);
        let block = self.block_mut(b);
        block.used = block.used.with_refs(1);
        self.cached -= 1;
        self.allocated += 1;
        gone
    }

    /// Drops one holder; returns the holders left.
    pub fn unref(&mut self, b: BlockId) -> u32 {
        let block = &mut self.blocks[b.0 as usize];
        let refs = block
            .used
            .refs()
            .checked_sub(1)
            .expect("releasing a block nobody holds");
        block.used = block.used.with_refs(refs);
        // No longer held: a walk that counted it as shared would count differently.
        if refs == 0
            && let Some(key) = block.key()
        {
            self.watch.touch(&key);
        }
        refs
    }

    /// A block nobody holds any more is freed: unregistered and reusable.
    pub fn free(&mut self, b: BlockId) {
        debug_assert_eq!(self.block(b).used.refs(), 0);
        self.recycle(b);
        self.allocated -= 1;
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
            head: NO_BLOCK,
            tail: NO_BLOCK,
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
                    .filter(|&s| s <= Use::LOW)
                    .expect("more than 2^30 entries in one pool");
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

    /// Moves a registered block nobody holds to the head of an entry (a tier receives
    /// an entry's blocks tail first, R10, so each arrives ahead of the previous).
    pub fn push_head(&mut self, slot: EntrySlot, b: BlockId) {
        debug_assert_eq!(self.block(b).used.uncached(), self.block(b).used);
        debug_assert!(self.block(b).key().is_some());
        let head = self.entry(slot).head;
        {
            let block = self.block_mut(b);
            block.used = block.used.with_entry(slot);
            block.prev = NO_BLOCK;
            block.next = head;
        }
        if head == NO_BLOCK {
            self.entry_mut(slot).tail = b;
        } else {
            self.block_mut(head).prev = b;
        }
        let e = self.entry_mut(slot);
        e.head = b;
        e.blocks += 1;
        self.allocated -= 1;
        self.cached += 1;
    }

    /// Moves a registered block nobody holds to the tail of an entry.
    pub fn push_tail(&mut self, slot: EntrySlot, b: BlockId) {
        debug_assert_eq!(self.block(b).used.uncached(), self.block(b).used);
        debug_assert!(self.block(b).key().is_some());
        let tail = self.entry(slot).tail;
        {
            let block = self.block_mut(b);
            block.used = block.used.with_entry(slot);
            block.prev = tail;
            block.next = NO_BLOCK;
        }
        if tail == NO_BLOCK {
            self.entry_mut(slot).head = b;
        } else {
            self.block_mut(tail).next = b;
        }
        let e = self.entry_mut(slot);
        e.tail = b;
        e.blocks += 1;
        self.allocated -= 1;
        self.cached += 1;
    }

    /// Evicts the tail block of an entry (R10): it is unregistered and freed.
    /// Returns its key and the entry when it disappeared.
    pub fn evict_tail(&mut self, slot: EntrySlot) -> (BlockKey, Option<Entry>) {
        let b = self.entry(slot).tail;
        assert!(b != NO_BLOCK, "evicting from an empty entry");
        let key = self.block(b).key().expect("cached blocks are registered");
        let gone = self.unlink(slot, b);
        self.recycle(b);
        self.cached -= 1;
        (key, gone)
    }

    /// Makes a block nobody holds or caches reusable: its key unregistered, its
    /// record and hit count cleared, its id on the free list. Every way a block is
    /// freed (`free`, `evict_tail`, `evict_tail_n`) ends here.
    #[inline(always)]
    fn recycle(&mut self, b: BlockId) {
        self.unregister(b);
        if self.block(b).used.hit() {
            self.hits[b.0 as usize] = 0;
        }
        *self.block_mut(b) = Block::free();
        self.free_blocks.push(b);
    }

    /// Takes `b` out of entry `slot`; drops and returns the entry when it was the
    /// last block.
    fn unlink(&mut self, slot: EntrySlot, b: BlockId) -> Option<Entry> {
        let (prev, next) = {
            let block = self.block_mut(b);
            let links = (block.prev, block.next);
            block.used = block.used.uncached();
            block.prev = NO_BLOCK;
            block.next = NO_BLOCK;
            links
        };
        if prev == NO_BLOCK {
            self.entry_mut(slot).head = next;
        } else {
            self.block_mut(prev).next = next;
        }
        if next == NO_BLOCK {
            self.entry_mut(slot).tail = prev;
        } else {
            self.block_mut(next).prev = prev;
        }
        let e = self.entry_mut(slot);
        e.blocks -= 1;
        if e.blocks > 0 {
            return None;
        }
        self.drop_entry(slot)
    }

    /// Evicts the `n` tail blocks of an entry at once (R10's order: each is the tail
    /// when it leaves), as `n` calls of [`Store::evict_tail`] would, for a caller that
    /// needs none of their keys. Returns the entry when it disappeared.
    pub fn evict_tail_n(&mut self, slot: EntrySlot, n: u64) -> Option<Entry> {
        let e = self.entry(slot);
        assert!(n <= e.blocks, "evicting more blocks than an entry has");
        let mut at = e.tail;
        for _ in 0..n {
            let prev = self.block(at).prev;
            self.recycle(at);
            at = prev;
        }
        self.cached -= n;
        if at != NO_BLOCK {
            self.block_mut(at).next = NO_BLOCK;
        }
        let e = self.entry_mut(slot);
        e.tail = at;
        e.blocks -= n;
        if e.blocks > 0 {
            return None;
        }
        e.head = NO_BLOCK;
        self.drop_entry(slot)
    }

    /// Takes an entry with no blocks left out of the release order and the store.
    fn drop_entry(&mut self, slot: EntrySlot) -> Option<Entry> {
        let e = self.entry(slot);
        debug_assert_eq!(e.blocks, 0, "dropping an entry with blocks");
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
        self.entries[slot.index()].take()
    }

    /// The blocks of an entry, head first (for invariant checks and tests).
    pub fn entry_blocks(&self, slot: EntrySlot) -> Vec<BlockId> {
        let mut out = Vec::new();
        let mut at = self.entry(slot).head;
        while at != NO_BLOCK {
            out.push(at);
            at = self.block(at).next;
        }
        out
    }

    /// Checks the store's own invariants; `held` is every holder's block list and
    /// `anonymous` the anonymous blocks they hold in all.
    pub fn check(&self, held: &[&[BlockId]], anonymous: u64) -> Result<(), String> {
        let mut refs = vec![0u32; self.blocks.len()];
        for list in held {
            for &b in *list {
                refs[b.0 as usize] += 1;
            }
        }
        let mut allocated = anonymous;
        let mut cached = 0;
        for (i, block) in self.blocks.iter().enumerate() {
            if block.used.refs() != refs[i] {
                return Err(format!(
                    "block {i}: refs {} but {} holders list it",
                    block.used.refs(),
                    refs[i]
                ));
            }
            if !block.used.hit() && self.hits[i] != 0 {
                return Err(format!("block {i} counts hits but none took it"));
            }
            if block.used.refs() > 0 {
                allocated += 1;
            } else if block.used.entry() != EntrySlot::NIL {
                cached += 1;
                if block.key().is_none() {
                    return Err(format!("cached block {i} has no key"));
                }
            } else if block.key().is_some() {
                return Err(format!("free block {i} is still registered"));
            }
        }
        if allocated != self.allocated || cached != self.cached {
            return Err(format!(
                "counted {allocated} allocated and {cached} cached blocks, the store says {} and {}",
                self.allocated, self.cached
            ));
        }
        let mut in_entries = 0;
        // Release order is (release time, id); for a pool that is no tier the two
        // agree, since release times never decrease.
        let mut previous: Option<(f64, u64)> = None;
        let mut listed = 0;
        for slot in self.entry_slots() {
            let e = self.entry(slot);
            if previous.is_some_and(|(pl, pi)| pl.total_cmp(&e.last).then(pi.cmp(&e.id.0)).is_ge())
            {
                return Err(format!("entry {} listed out of release order", e.id));
            }
            previous = Some((e.last, e.id.0));
            listed += 1;
            let blocks = self.entry_blocks(slot);
            if blocks.len() as u64 != e.blocks || blocks.is_empty() {
                return Err(format!("entry {} has a wrong or zero block count", e.id));
            }
            if blocks.iter().any(|&b| self.block(b).used.entry() != slot) {
                return Err(format!("entry {} links a block of another entry", e.id));
            }
            in_entries += blocks.len() as u64;
        }
        if listed != self.live_entries || self.entries.iter().flatten().count() != self.live_entries
        {
            return Err("the release-order list misses live entries".into());
        }
        if in_entries != cached {
            return Err(format!(
                "{cached} cached blocks but entries link {in_entries}"
            ));
        }
        self.index.check()?;
        let mut indexed = 0usize;
        for (key, first) in self.index.iter() {
            let mut at = first;
            while at != NO_BLOCK {
                if self.block(at).key() != Some(key) {
                    return Err(format!("key {key} lists block {} of another key", at.0));
                }
                indexed += 1;
                at = self.block(at).next_dup;
            }
        }
        let registered = self.blocks.iter().filter(|b| b.key().is_some()).count();
        if indexed != registered {
            return Err(format!(
                "{registered} blocks are registered but the index lists {indexed}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_block_record_is_32_bytes() {
        // The block table is the replay's largest structure per replica, and its
        // records are touched at random: a record split over two cache lines costs
        // two misses. The size is what UNREGISTERED (the key without an Option tag)
        // and `Use` (holders or entry in one word) buy (docs/PERFORMANCE.md, #35).
        assert_eq!(std::mem::size_of::<super::Block>(), 32);
    }
}
