//! One physical block's record in the block table: its key while registered, its
//! holders or its entry (`Use`), its neighbours in its entry and its next duplicate
//! copy (R7). `cache.rs` owns every record and all that changes them; this file only
//! says how a record is laid out and read.

use crate::types::{BlockId, BlockKey, RunId};

use super::EntrySlot;

/// "No block" in the intrusive links below.
pub(super) const NO_BLOCK: BlockId = BlockId(u32::MAX);

/// A block's `next_dup` while it is not registered (block ids stay below it): the
/// key then needs no `Option`, whose tag would make a block 40 bytes instead of 32,
/// and a fleet's block tables are tens of megabytes (docs/PERFORMANCE.md, issue #35).
pub(super) const UNREGISTERED: BlockId = BlockId(u32::MAX - 1);

/// A block's holders, or its entry while it is cached, in one word (a block nobody
/// holds is cached or free, never both held and cached), and whether a hit ever took
/// it since it was allocated (its count is then in `Store::hits`, which a block no
/// hit took is spared reading or clearing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Use(u32);

impl Use {
    const CACHED: u32 = 1 << 31;
    const HIT: u32 = 1 << 30;
    /// The holders, or the entry slot while cached.
    pub(super) const LOW: u32 = Use::HIT - 1;
    /// Neither held nor cached, never hit.
    pub(super) const FREE: Use = Use(0);

    /// Held by `refs` holders.
    pub(super) fn with_refs(self, refs: u32) -> Use {
        assert!(refs <= Use::LOW, "2^30 holders of one block");
        Use((self.0 & Use::HIT) | refs)
    }

    /// Cached in entry `slot`.
    pub(super) fn with_entry(self, slot: EntrySlot) -> Use {
        debug_assert!(slot.0 <= Use::LOW, "entry slots stay below 2^30");
        Use((self.0 & Use::HIT) | Use::CACHED | slot.0)
    }

    /// Out of its entry, held by nobody yet.
    pub(super) fn uncached(self) -> Use {
        Use(self.0 & Use::HIT)
    }

    /// Taken by a hit.
    pub(super) fn with_hit(self) -> Use {
        Use(self.0 | Use::HIT)
    }

    pub(super) fn hit(self) -> bool {
        self.0 & Use::HIT != 0
    }

    /// Holders holding it; 0 when cached or free.
    pub(super) fn refs(self) -> u32 {
        if self.0 & Use::CACHED == 0 {
            self.0 & Use::LOW
        } else {
            0
        }
    }

    /// The entry slot while cached, else NIL.
    pub(super) fn entry(self) -> EntrySlot {
        if self.0 & Use::CACHED == 0 {
            EntrySlot::NIL
        } else {
            EntrySlot(self.0 & Use::LOW)
        }
    }
}

/// 32 bytes (40 with the hit count in it, when three records in five straddled two
/// cache lines; now at most every other one): the replay's per-block work is a
/// record touched once or so at each step of its life, each a likely cache miss
/// (docs/PERFORMANCE.md, issue #35). Its hit count (R31) is
/// kept beside it, in `Store::hits`. Not `align(32)`, which would place every
/// record inside one line: a vector of an alignment above the allocator's is grown
/// by allocating anew and copying, not by remapping its pages, and that copy raised
/// the tiered replay's peak memory by a fifth (298 to 365 MB).
#[derive(Clone, Debug)]
pub(super) struct Block {
    /// Its key while it is registered (hittable): see [`Block::key`].
    pub(super) key: BlockKey,
    /// Holders, or the entry while cached.
    pub(super) used: Use,
    /// Neighbours inside the entry, in chain order (prev is towards the head).
    pub(super) prev: BlockId,
    pub(super) next: BlockId,
    /// While registered, the next later-registered copy with the same key
    /// (registration order; NO_BLOCK: none); [`UNREGISTERED`] while not.
    pub(super) next_dup: BlockId,
}

impl Block {
    pub(super) fn free() -> Block {
        Block {
            key: BlockKey {
                run: RunId(0),
                offset: 0,
            },
            used: Use::FREE,
            prev: NO_BLOCK,
            next: NO_BLOCK,
            next_dup: UNREGISTERED,
        }
    }

    /// Its key while registered.
    pub(super) fn key(&self) -> Option<BlockKey> {
        (self.next_dup != UNREGISTERED).then_some(self.key)
    }
}
