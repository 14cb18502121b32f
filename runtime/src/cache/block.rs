//! The records of the block table: a block's record (one word: its holders or its
//! segment, whether a hit took it and whether its key has other copies; no key, a
//! held block's being its holder's chain's and a cached one's its segment's), a
//! cached *segment* (consecutive blocks of one run in one entry: an entry's order is
//! its segments', with no links per block, issue #35 item 1), and the reference to
//! one copy of a key that the identity index files ([`CopyRef`]). `cache.rs` owns
//! every record and all that changes them; this file only says how they are laid
//! out and read.

use crate::types::{BlockId, BlockKey, RunId, per_block};

use super::EntrySlot;

/// One present copy of a key (R7), as the identity index files it: the block's id,
/// held or cached (a cached block keeps its id and record; only its place in an
/// entry is its segment's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct CopyRef(pub(super) u32);

impl CopyRef {
    pub(super) fn of(b: BlockId) -> CopyRef {
        CopyRef(b.0)
    }

    pub(super) fn block(self) -> BlockId {
        BlockId(self.0)
    }
}

/// A cached segment's slot (stable while it lives; reused after).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct SegId(pub(super) u32);

impl SegId {
    /// "No segment" in the intrusive links.
    pub(super) const NIL: SegId = SegId(u32::MAX);
    /// Set in the id of an entry's own first segment, kept inside the entry (most
    /// entries have one segment, and then an eviction or a release touches no
    /// segment slab: issue #35 item 3's 1-block admissions); the rest is the slot.
    const INLINE: u32 = 1 << 27;

    /// The segment kept inside entry `slot`.
    pub(super) fn inline(slot: EntrySlot) -> SegId {
        debug_assert!(slot.0 < SegId::INLINE);
        SegId(SegId::INLINE | slot.0)
    }

    /// The entry whose own segment this is, or the slab slot.
    pub(super) fn place(self) -> Result<EntrySlot, usize> {
        if self.0 & SegId::INLINE != 0 {
            Ok(EntrySlot(self.0 & !SegId::INLINE))
        } else {
            Err(self.0 as usize)
        }
    }

    /// Slab ids stay below this.
    pub(super) const SLAB_LIMIT: u32 = SegId::INLINE;
}

/// A block's record, one word: its holders, or its segment while cached, and
/// flags. It keeps no key: the table is the replay's largest structure per replica,
/// touched at random, and a key would make each record six times the size
/// (docs/PERFORMANCE.md, "Block records of one word"). A held block's key is its
/// holder's chain's at its position, a cached one's its segment's at its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Use(u32);

impl Use {
    const HIT: u32 = 1 << 30;
    const DUP: u32 = 1 << 29;
    const CACHED: u32 = 1 << 28;
    /// The holders, or the segment while cached.
    pub(super) const LOW: u32 = Use::CACHED - 1;
    /// Nobody holds it, never hit.
    pub(super) const FREE: Use = Use(0);

    /// Held by `refs` holders, the flags kept.
    pub(super) fn with_refs(self, refs: u32) -> Use {
        assert!(refs <= Use::LOW, "2^28 holders of one block");
        Use((self.0 & !(Use::LOW | Use::CACHED)) | refs)
    }

    /// Holders holding it; 0 while cached.
    pub(super) fn refs(self) -> u32 {
        if self.cached().is_some() {
            0
        } else {
            self.0 & Use::LOW
        }
    }

    /// Cached in segment `s`, the flags kept.
    pub(super) fn with_seg(self, s: SegId) -> Use {
        debug_assert!(s.0 <= Use::LOW);
        Use((self.0 & !Use::LOW) | Use::CACHED | s.0)
    }

    /// Its segment while cached.
    pub(super) fn cached(self) -> Option<SegId> {
        (self.0 & Use::CACHED != 0).then_some(SegId(self.0 & Use::LOW))
    }

    /// Taken by a hit: its count (R31) is in `Store::hits`.
    pub(super) fn hit(self) -> bool {
        self.0 & Use::HIT != 0
    }

    pub(super) fn with_hit(self) -> Use {
        Use(self.0 | Use::HIT)
    }

    /// Its key has another copy present (it is in `Store::dups`, as the first copy
    /// or a later one); without it the block is the key's only copy.
    pub(super) fn dup(self) -> bool {
        self.0 & Use::DUP != 0
    }

    pub(super) fn with_dup(self, dup: Dup) -> Use {
        match dup {
            Dup::Yes => Use(self.0 | Use::DUP),
            Dup::No => Use(self.0 & !Use::DUP),
        }
    }
}

/// Whether a copy's key has other copies present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dup {
    Yes,
    No,
}

/// Consecutive cached blocks of one run in one entry, in chain order: keys `first`,
/// `first + block`, … (`count` of them). An entry is a list of segments, head to
/// tail; R10 takes from the tail segment's end, a hit (R11) anywhere (splitting the
/// segment when in its middle).
#[derive(Clone, Debug)]
pub(super) struct Segment {
    pub(super) run: RunId,
    /// Offset of its first key.
    pub(super) first: u64,
    pub(super) count: u32,
    pub(super) entry: EntrySlot,
    /// Neighbours in the entry (prev is towards the head).
    pub(super) prev: SegId,
    pub(super) next: SegId,
    /// Its blocks whose key has other copies present (in `Store::dups`): with
    /// none, each of its keys is the key's only copy and leaves the index directly.
    pub(super) dup_keys: u32,
}

impl Segment {
    /// The key at position `i` (0: the head's end).
    pub(super) fn key_at(&self, i: u32, block: u64) -> BlockKey {
        BlockKey {
            run: self.run,
            offset: self.first + u64::from(i) * block,
        }
    }

    /// The position of `key`, which the segment holds.
    pub(super) fn position(&self, key: &BlockKey, block: u64) -> u32 {
        debug_assert!(key.run == self.run && key.offset >= self.first);
        let i = per_block(key.offset - self.first, block);
        debug_assert!(i < u64::from(self.count) && (key.offset - self.first).is_multiple_of(block));
        i as u32
    }

    /// Whether `key` would extend it at its head end.
    pub(super) fn follows(&self, key: &BlockKey, block: u64) -> bool {
        key.run == self.run && key.offset.checked_add(block) == Some(self.first)
    }
}
