//! The block table of one pool member: physical blocks with their holders' reference
//! counts, the identity index (earliest registered copy of each key, R7), and the
//! cache of entries (R3) with tail-first removal (R10) and removal of any block by a
//! hit (R11). It counts allocated and cached blocks. It does not choose which entry to
//! evict, decide fits or know about holds and queues: `pool.rs` does.

use std::collections::hash_map::Entry as MapEntry;

use crate::hash::FxMap;
use crate::types::{BlockKey, EntryId, SessionId};

/// "No block / no entry" in the intrusive links below.
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Block {
    /// Set while the block is registered (hittable).
    key: Option<BlockKey>,
    /// Holders holding it; 0 when cached or free.
    refs: u32,
    /// The entry slot while cached, else NIL.
    entry: u32,
    /// Neighbours inside the entry, in chain order (prev is towards the head).
    prev: u32,
    next: u32,
    /// The next later-registered copy with the same key (registration order).
    next_dup: u32,
}

impl Block {
    fn free() -> Block {
        Block {
            key: None,
            refs: 0,
            entry: NIL,
            prev: NIL,
            next: NIL,
            next_dup: NIL,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub id: EntryId,
    pub session: SessionId,
    /// Release time (`last`).
    pub last: f64,
    pub head: u32,
    pub tail: u32,
    /// Blocks in the entry.
    pub blocks: u64,
    /// Snapshot slot of the session's attributes (pool.rs manages it), or NIL.
    pub snap: u32,
    /// Neighbours in release order (entry slots).
    older: u32,
    newer: u32,
}

/// Blocks, identities and entries of one pool member.
#[derive(Debug)]
pub(crate) struct Store {
    blocks: Vec<Block>,
    free_blocks: Vec<u32>,
    /// Key → the earliest registered copy still present (held or cached). Later
    /// copies hang off it through `next_dup`. Used for lookups only.
    index: FxMap<BlockKey, u32>,
    entries: Vec<Option<Entry>>,
    free_entries: Vec<u32>,
    /// Live entries in release order (lru order and the tie rule), as a list
    /// through `older`/`newer`: appending and unlinking allocate nothing.
    oldest: u32,
    newest: u32,
    live_entries: usize,
    next_entry: u64,
    allocated: u64,
    cached: u64,
    watch: Watch,
}

/// Words of the [`Watch`] filter: 4,096 bits.
const WATCH_WORDS: usize = 64;

/// A filter over the keys one remembered hit walk depends on (pool.rs keeps the walk
/// of a hold that did not fit, so that the next attempt on the same hold need not
/// walk again). Every change that could alter a walk's result — a key registered or
/// unregistered, a cached block claimed, a held block's last holder gone — marks the
/// filter touched when its key may be watched. False positives only cost a walk.
#[derive(Debug)]
struct Watch {
    on: bool,
    touched: bool,
    bits: [u64; WATCH_WORDS],
    /// The words set since the last start (up to 16; beyond that, `crowded`), so
    /// that starting again clears those rather than the whole filter: most walks
    /// are short, and every admission attempt starts one.
    set: [u8; 16],
    nset: u8,
    crowded: bool,
}

impl Watch {
    fn bit(key: &BlockKey) -> usize {
        let h = (key.run.0 ^ key.offset.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - 12)) as usize
    }

    #[inline]
    fn touch(&mut self, key: &BlockKey) {
        if self.on {
            let i = Watch::bit(key);
            if self.bits[i / 64] & (1 << (i % 64)) != 0 {
                self.touched = true;
            }
        }
    }
}

impl Default for Store {
    fn default() -> Store {
        Store {
            blocks: Vec::new(),
            free_blocks: Vec::new(),
            index: FxMap::default(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            oldest: NIL,
            newest: NIL,
            live_entries: 0,
            next_entry: 0,
            allocated: 0,
            cached: 0,
            watch: Watch {
                on: false,
                touched: false,
                bits: [0; WATCH_WORDS],
                set: [0; 16],
                nset: 0,
                crowded: false,
            },
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
    pub fn entry_slots(&self) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.oldest;
        std::iter::from_fn(move || {
            if at == NIL {
                return None;
            }
            let slot = at;
            at = self.entry(slot).newer;
            Some(slot)
        })
    }

    /// The live entry with the least release order (lru): entries are kept sorted by
    /// (release time, id), so this is the oldest release.
    pub fn oldest_entry(&self) -> Option<u32> {
        (self.oldest != NIL).then_some(self.oldest)
    }

    /// Slots are reused, so a vector indexed by slot must be this long.
    pub fn entry_slot_bound(&self) -> usize {
        self.entries.len()
    }

    pub fn entry(&self, slot: u32) -> &Entry {
        self.entries[slot as usize]
            .as_ref()
            .expect("entry slot in use")
    }

    fn entry_mut(&mut self, slot: u32) -> &mut Entry {
        self.entries[slot as usize]
            .as_mut()
            .expect("entry slot in use")
    }

    pub fn refs(&self, b: u32) -> u32 {
        self.blocks[b as usize].refs
    }

    pub fn key(&self, b: u32) -> Option<BlockKey> {
        self.blocks[b as usize].key
    }

    /// The entry slot of a cached block, NIL when held.
    pub fn entry_of(&self, b: u32) -> u32 {
        self.blocks[b as usize].entry
    }

    /// The earliest registered copy still present with this key.
    pub fn lookup(&self, key: &BlockKey) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// Starts watching a new set of keys (empty, untouched).
    pub fn watch_start(&mut self) {
        let w = &mut self.watch;
        if w.crowded {
            w.bits = [0; WATCH_WORDS];
        } else {
            for &word in &w.set[..w.nset as usize] {
                w.bits[word as usize] = 0;
            }
        }
        w.nset = 0;
        w.crowded = false;
        w.on = true;
        w.touched = false;
    }

    /// Adds a key to the watched set.
    pub fn watch_add(&mut self, key: &BlockKey) {
        let i = Watch::bit(key);
        let w = &mut self.watch;
        let word = i / 64;
        if w.bits[word] == 0 {
            if (w.nset as usize) < w.set.len() {
                w.set[w.nset as usize] = word as u8;
                w.nset += 1;
            } else {
                w.crowded = true;
            }
        }
        w.bits[word] |= 1 << (i % 64);
    }

    /// Stops watching (changes cost nothing again).
    pub fn watch_stop(&mut self) {
        self.watch.on = false;
    }

    /// Whether a change may have touched a watched key since `watch_start`.
    pub fn watch_touched(&self) -> bool {
        !self.watch.on || self.watch.touched
    }

    /// A fresh block held once, unregistered.
    pub fn alloc(&mut self) -> u32 {
        let b = match self.free_blocks.pop() {
            Some(b) => b,
            None => {
                let b = u32::try_from(self.blocks.len())
                    .ok()
                    .filter(|&b| b != NIL)
                    .expect("more than 2^32 - 1 physical blocks in one pool");
                self.blocks.push(Block::free());
                b
            }
        };
        self.blocks[b as usize].refs = 1;
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
    pub fn register(&mut self, b: u32, key: BlockKey) {
        debug_assert!(
            self.blocks[b as usize].key.is_none(),
            "block registered twice"
        );
        self.watch.touch(&key);
        self.blocks[b as usize].key = Some(key);
        self.blocks[b as usize].next_dup = NIL;
        // One hash probe (the entry) rather than a lookup and then an insert: every
        // allocated block of known content is registered, so this is hot.
        match self.index.entry(key) {
            MapEntry::Vacant(v) => {
                v.insert(b);
            }
            MapEntry::Occupied(o) => {
                let mut at = *o.get();
                while self.blocks[at as usize].next_dup != NIL {
                    at = self.blocks[at as usize].next_dup;
                }
                self.blocks[at as usize].next_dup = b;
            }
        }
    }

    fn unregister(&mut self, b: u32) {
        let Some(key) = self.blocks[b as usize].key.take() else {
            return;
        };
        self.watch.touch(&key);
        let next = std::mem::replace(&mut self.blocks[b as usize].next_dup, NIL);
        // One hash probe, as in `register`: every eviction comes through here.
        let MapEntry::Occupied(mut o) = self.index.entry(key) else {
            panic!("registered key {key} is not indexed");
        };
        let first = *o.get();
        if first == b {
            if next == NIL {
                o.remove();
            } else {
                *o.get_mut() = next;
            }
            return;
        }
        let mut at = first;
        while self.blocks[at as usize].next_dup != b {
            at = self.blocks[at as usize].next_dup;
            assert!(at != NIL, "registered block missing from its key's copies");
        }
        self.blocks[at as usize].next_dup = next;
    }

    /// One more holder of a held block (R7 sharing).
    pub fn share(&mut self, b: u32) {
        let block = &mut self.blocks[b as usize];
        debug_assert!(block.refs > 0, "sharing a block nobody holds");
        block.refs += 1;
    }

    /// A cached block taken by a hit (R11): it leaves its entry and is held once.
    /// Returns the entry when it disappeared with it.
    pub fn claim(&mut self, b: u32) -> Option<Entry> {
        let slot = self.blocks[b as usize].entry;
        assert!(slot != NIL, "claiming a block that is not cached");
        if let Some(key) = self.blocks[b as usize].key {
            self.watch.touch(&key);
        }
        let gone = self.unlink(slot, b);
        self.blocks[b as usize].refs = 1;
        self.cached -= 1;
        self.allocated += 1;
        gone
    }

    /// Drops one holder; returns the holders left.
    pub fn unref(&mut self, b: u32) -> u32 {
        let block = &mut self.blocks[b as usize];
        block.refs = block
            .refs
            .checked_sub(1)
            .expect("releasing a block nobody holds");
        let refs = block.refs;
        // No longer held: a walk that counted it as shared would count differently.
        if refs == 0
            && let Some(key) = block.key
        {
            self.watch.touch(&key);
        }
        refs
    }

    /// A block nobody holds any more is freed: unregistered and reusable.
    pub fn free(&mut self, b: u32) {
        debug_assert_eq!(self.blocks[b as usize].refs, 0);
        self.unregister(b);
        self.blocks[b as usize] = Block::free();
        self.free_blocks.push(b);
        self.allocated -= 1;
    }

    /// Opens a new, empty entry at the end of the release order. It must receive at
    /// least one block before anything else reads the store.
    pub fn open_entry(&mut self, session: SessionId, last: f64, snap: u32) -> u32 {
        let id = EntryId(self.next_entry);
        self.next_entry += 1;
        let entry = Entry {
            id,
            session,
            last,
            head: NIL,
            tail: NIL,
            blocks: 0,
            snap,
            older: self.newest,
            newer: NIL,
        };
        let slot = match self.free_entries.pop() {
            Some(s) => {
                self.entries[s as usize] = Some(entry);
                s
            }
            None => {
                self.entries.push(Some(entry));
                u32::try_from(self.entries.len() - 1).expect("more than 2^32 entries")
            }
        };
        if self.newest == NIL {
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
    pub fn open_entry_sorted(&mut self, session: SessionId, last: f64, snap: u32) -> u32 {
        let mut after = self.newest;
        while after != NIL && self.entry(after).last.total_cmp(&last).is_gt() {
            after = self.entry(after).older;
        }
        let slot = self.open_entry(session, last, snap);
        if after == self.entry(slot).older {
            return slot;
        }
        // Unlink from the newest end, then link in after `after` (NIL: first).
        let older = self.entry(slot).older;
        self.entry_mut(older).newer = NIL;
        self.newest = older;
        let newer = if after == NIL {
            self.oldest
        } else {
            self.entry(after).newer
        };
        {
            let e = self.entry_mut(slot);
            e.older = after;
            e.newer = newer;
        }
        if after == NIL {
            self.oldest = slot;
        } else {
            self.entry_mut(after).newer = slot;
        }
        self.entry_mut(newer).older = slot;
        slot
    }

    /// The newest entry of `session` released at exactly `last`, if any (a tier
    /// gathers a spilled entry's blocks back into one entry).
    pub fn find_entry(&self, session: SessionId, last: f64) -> Option<u32> {
        let mut at = self.newest;
        while at != NIL {
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
    pub fn push_head(&mut self, slot: u32, b: u32) {
        debug_assert_eq!(self.blocks[b as usize].refs, 0);
        debug_assert!(self.blocks[b as usize].key.is_some());
        let head = self.entry(slot).head;
        {
            let block = &mut self.blocks[b as usize];
            block.entry = slot;
            block.prev = NIL;
            block.next = head;
        }
        if head == NIL {
            self.entry_mut(slot).tail = b;
        } else {
            self.blocks[head as usize].prev = b;
        }
        let e = self.entry_mut(slot);
        e.head = b;
        e.blocks += 1;
        self.allocated -= 1;
        self.cached += 1;
    }

    /// Moves a registered block nobody holds to the tail of an entry.
    pub fn push_tail(&mut self, slot: u32, b: u32) {
        debug_assert_eq!(self.blocks[b as usize].refs, 0);
        debug_assert!(self.blocks[b as usize].key.is_some());
        let tail = self.entry(slot).tail;
        {
            let block = &mut self.blocks[b as usize];
            block.entry = slot;
            block.prev = tail;
            block.next = NIL;
        }
        if tail == NIL {
            self.entry_mut(slot).head = b;
        } else {
            self.blocks[tail as usize].next = b;
        }
        let e = self.entry_mut(slot);
        e.tail = b;
        e.blocks += 1;
        self.allocated -= 1;
        self.cached += 1;
    }

    /// Evicts the tail block of an entry (R10): it is unregistered and freed.
    /// Returns its key and the entry when it disappeared.
    pub fn evict_tail(&mut self, slot: u32) -> (BlockKey, Option<Entry>) {
        let b = self.entry(slot).tail;
        assert!(b != NIL, "evicting from an empty entry");
        let key = self.blocks[b as usize]
            .key
            .expect("cached blocks are registered");
        let gone = self.unlink(slot, b);
        self.unregister(b);
        self.blocks[b as usize] = Block::free();
        self.free_blocks.push(b);
        self.cached -= 1;
        (key, gone)
    }

    /// Takes `b` out of entry `slot`; drops and returns the entry when it was the
    /// last block.
    fn unlink(&mut self, slot: u32, b: u32) -> Option<Entry> {
        let (prev, next) = {
            let block = &mut self.blocks[b as usize];
            let links = (block.prev, block.next);
            block.entry = NIL;
            block.prev = NIL;
            block.next = NIL;
            links
        };
        if prev == NIL {
            self.entry_mut(slot).head = next;
        } else {
            self.blocks[prev as usize].next = next;
        }
        if next == NIL {
            self.entry_mut(slot).tail = prev;
        } else {
            self.blocks[next as usize].prev = prev;
        }
        let e = self.entry_mut(slot);
        e.blocks -= 1;
        if e.blocks > 0 {
            return None;
        }
        let (older, newer) = (e.older, e.newer);
        if older == NIL {
            self.oldest = newer;
        } else {
            self.entry_mut(older).newer = newer;
        }
        if newer == NIL {
            self.newest = older;
        } else {
            self.entry_mut(newer).older = older;
        }
        self.live_entries -= 1;
        self.free_entries.push(slot);
        self.entries[slot as usize].take()
    }

    /// The blocks of an entry, head first (for invariant checks and tests).
    pub fn entry_blocks(&self, slot: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.entry(slot).head;
        while at != NIL {
            out.push(at);
            at = self.blocks[at as usize].next;
        }
        out
    }

    /// Checks the store's own invariants; `held` is every holder's block list and
    /// `anonymous` the anonymous blocks they hold in all.
    pub fn check(&self, held: &[&[u32]], anonymous: u64) -> Result<(), String> {
        let mut refs = vec![0u32; self.blocks.len()];
        for list in held {
            for &b in *list {
                refs[b as usize] += 1;
            }
        }
        let mut allocated = anonymous;
        let mut cached = 0;
        for (i, block) in self.blocks.iter().enumerate() {
            if block.refs != refs[i] {
                return Err(format!(
                    "block {i}: refs {} but {} holders list it",
                    block.refs, refs[i]
                ));
            }
            if block.refs > 0 {
                allocated += 1;
                if block.entry != NIL {
                    return Err(format!("block {i} is both held and cached"));
                }
            } else if block.entry != NIL {
                cached += 1;
                if block.key.is_none() {
                    return Err(format!("cached block {i} has no key"));
                }
            } else if block.key.is_some() {
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
            if blocks
                .iter()
                .any(|&b| self.blocks[b as usize].entry != slot)
            {
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
        let mut indexed = 0usize;
        for (key, &first) in &self.index {
            let mut at = first;
            while at != NIL {
                if self.blocks[at as usize].key != Some(*key) {
                    return Err(format!("key {key} lists block {at} of another key"));
                }
                indexed += 1;
                at = self.blocks[at as usize].next_dup;
            }
        }
        let registered = self.blocks.iter().filter(|b| b.key.is_some()).count();
        if indexed != registered {
            return Err(format!(
                "{registered} blocks are registered but the index lists {indexed}"
            ));
        }
        Ok(())
    }
}
