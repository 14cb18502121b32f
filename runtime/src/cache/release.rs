//! The release side of the block table (R14): a holder's blocks each lose a
//! holder, and those nobody else holds are cached at the tail of one new entry, a
//! range of one run at a time, or freed. It takes keys from the caller (the block
//! table keeps none); it does not choose what is cached (`pool/release.rs` says
//! how many leading blocks are full and computed) and never evicts.

// Slots index the store's own slabs (see cache.rs).
#![allow(clippy::indexing_slicing)]

use crate::types::{BlockId, BlockKey, KeyRange};

use super::block::SegId;
use super::{EntrySlot, Store, recycle};

/// A release's entry while it appends to it ([`Store::cache_released`]): the
/// entry, its tail segment, the key that would go on from that segment, the blocks
/// the segment gained that its count does not show yet (written once it is done:
/// a count kept aside, not a segment's field written back per block), and the
/// blocks added in all.
struct Appending {
    slot: Option<EntrySlot>,
    tail: SegId,
    next: Option<BlockKey>,
    grown: u32,
    added: u64,
}

impl Default for Appending {
    fn default() -> Appending {
        Appending {
            slot: None,
            tail: SegId::NIL,
            next: None,
            grown: 0,
            added: 0,
        }
    }
}

impl Store {
    /// Drops one holder of block `b` (registered under `key`, if any); returns the
    /// holders left.
    fn unref(&mut self, b: BlockId, key: Option<BlockKey>) -> u32 {
        let used = &mut self.blocks[b.0 as usize];
        let refs = used
            .refs()
            .checked_sub(1)
            .expect("releasing a block nobody holds");
        *used = used.with_refs(refs);
        // No longer held: a walk that counted it as shared would count differently.
        if refs == 0
            && let Some(key) = key
        {
            self.watch.touch(&key);
        }
        refs
    }

    /// A block nobody holds any more (registered under `key`, if any) is freed:
    /// unregistered and reusable.
    fn free(&mut self, b: BlockId, key: Option<BlockKey>) {
        debug_assert_eq!(self.used(b).refs(), 0);
        if let Some(key) = key {
            self.unregister(b, key);
        }
        recycle(&mut self.blocks, &mut self.hits, &mut self.free_blocks, b);
        self.allocated -= 1;
    }

    /// R14 for a released holder's blocks, chain order: each loses this holder;
    /// those nobody else holds are cached at the tail of one entry when among the
    /// first `full` and registered, else freed. The first `keyed` are registered,
    /// under the keys `ranges` gives (the holder's chain's, a range of one run at a
    /// time); the rest are not. `open` opens the entry, at the first block cached
    /// (a release that caches nothing opens none); returns it. One pass by ranges,
    /// the tail segment's growth counted aside and written once: a holder's blocks
    /// are mostly consecutive blocks of a few runs (issue #35 item 1). Caching
    /// changes the block's record and its segment, not the index.
    pub fn cache_released(
        &mut self,
        blocks: &[BlockId],
        ranges: impl Iterator<Item = KeyRange>,
        keyed: u64,
        full: u64,
        mut open: impl FnMut(&mut Store) -> EntrySlot,
    ) -> Option<EntrySlot> {
        let block = self.block;
        let registered = usize::try_from(keyed).map_or(blocks.len(), |k| k.min(blocks.len()));
        let (keyed_blocks, rest) = blocks.split_at(registered);
        let mut to = Appending::default();
        let mut at = 0;
        for r in ranges {
            let Some(left) = registered.checked_sub(at).filter(|&l| l > 0) else {
                break;
            };
            let n = usize::try_from(r.count).map_or(left, |c| c.min(left));
            for (j, &b) in (0u64..).zip(&keyed_blocks[at..at + n]) {
                let key = r.key_at(j, block);
                if self.unref(b, Some(key)) > 0 {
                    continue;
                }
                if ((at as u64) + j) < full {
                    self.cache_one(&mut to, b, key, &mut open);
                } else {
                    self.free(b, Some(key));
                }
            }
            at += n;
        }
        assert_eq!(at, registered, "a key for every registered block released");
        for &b in rest {
            if self.unref(b, None) == 0 {
                self.free(b, None);
            }
        }
        let slot = to.slot?;
        if to.grown > 0 {
            self.seg_mut(to.tail).count += to.grown;
        }
        self.entry_mut(slot).blocks += to.added;
        self.allocated -= to.added;
        self.cached += to.added;
        Some(slot)
    }

    /// Block `b`, `key`, nobody holds any more, cached at the tail of the entry
    /// `to` appends to (opened by `open` for the first).
    #[inline(always)]
    fn cache_one(
        &mut self,
        to: &mut Appending,
        b: BlockId,
        key: BlockKey,
        open: &mut impl FnMut(&mut Store) -> EntrySlot,
    ) {
        let slot = match to.slot {
            Some(slot) => slot,
            None => *to.slot.insert(open(self)),
        };
        if to.next == Some(key) {
            to.grown += 1;
        } else {
            if to.grown > 0 {
                self.seg_mut(to.tail).count += to.grown;
                to.grown = 0;
            }
            to.tail = self.new_seg_at_tail(slot, key);
        }
        to.next = key.offset.checked_add(self.block).map(|offset| BlockKey {
            run: key.run,
            offset,
        });
        let used = self.used_mut(b);
        *used = used.with_seg(to.tail);
        if used.dup() {
            self.seg_mut(to.tail).dup_keys += 1;
        }
        to.added += 1;
    }
}
