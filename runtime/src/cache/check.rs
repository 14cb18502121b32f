//! The block table's invariants, checked from scratch against its holders' lists
//! (the tests run this after every operation): reference counts, the allocated and
//! cached counts, entries and their segments (each cached block in the segment that
//! holds its key, once), and every present copy of every key listed once — as its
//! key's first copy in the index or a later one in `dups`, under its holders' key
//! when held — with the marks that spare the usual case those lookups. Read-only.

// Slots index the store's own slabs (see cache.rs).
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};

use crate::types::{BlockId, BlockKey};

use super::Store;
use super::block::{CopyRef, SegId};

/// One holder's blocks, in chain order, and the keys of the leading ones it
/// registered (its chain's); the rest are unregistered.
pub(crate) struct HeldBlocks<'a> {
    pub blocks: &'a [BlockId],
    pub keys: Vec<BlockKey>,
}

impl Store {
    /// Checks the store's own invariants; `held` is every holder's blocks and
    /// `anonymous` the anonymous blocks they hold in all.
    pub fn check(&self, held: &[HeldBlocks<'_>], anonymous: u64) -> Result<(), String> {
        let mut refs = vec![0u32; self.blocks.len()];
        for list in held {
            for &b in list.blocks {
                refs[b.0 as usize] += 1;
            }
        }
        let key_of = self.check_copies()?;
        // A held block is registered exactly where its holder says, under the key
        // its holder's chain gives it.
        for list in held {
            for (k, &b) in list.blocks.iter().enumerate() {
                match (list.keys.get(k), key_of.get(&b.0)) {
                    (Some(want), Some(key)) if want == key => {}
                    (None, None) => {}
                    _ => return Err(format!("held block {} is registered wrongly", b.0)),
                }
            }
        }
        // Entries in release order, each with its segments.
        let mut cached = 0u64;
        let mut live_segs = BTreeSet::new();
        let mut previous: Option<(f64, u64)> = None;
        let mut listed = 0;
        for slot in self.entry_slots() {
            let e = self.entry(slot);
            // Release order is (release time, id); for a pool that is no tier the two
            // agree, since release times never decrease.
            if previous.is_some_and(|(pl, pi)| pl.total_cmp(&e.last).then(pi.cmp(&e.id.0)).is_ge())
            {
                return Err(format!("entry {} listed out of release order", e.id));
            }
            previous = Some((e.last, e.id.0));
            listed += 1;
            let mut blocks = 0u64;
            let mut prev = SegId::NIL;
            for s in self.entry_segs(slot) {
                let seg = self.seg(s);
                if seg.entry != slot || seg.prev != prev || seg.count == 0 {
                    return Err(format!("entry {} links a foreign or empty segment", e.id));
                }
                if self.free_segs.contains(&s) || !live_segs.insert(s.0) {
                    return Err(format!("entry {} links a free or shared segment", e.id));
                }
                if s.place().is_ok_and(|own| own != slot) {
                    return Err(format!("entry {} links a free or shared segment", e.id));
                }
                prev = s;
                blocks += u64::from(seg.count);
            }
            if self.entry(slot).tail != prev {
                return Err(format!("entry {}'s tail is not its last segment", e.id));
            }
            if blocks != e.blocks || blocks == 0 {
                return Err(format!("entry {} has a wrong or zero block count", e.id));
            }
            cached += blocks;
        }
        if listed != self.live_entries || self.entries.iter().flatten().count() != self.live_entries
        {
            return Err("the release-order list misses live entries".into());
        }
        let in_slab = live_segs
            .iter()
            .filter(|&&s| SegId(s).place().is_err())
            .count();
        if in_slab + self.free_segs.len() != self.segs.len() {
            return Err("a segment slot is neither in an entry nor free".into());
        }
        // Blocks: held ones by their holders, cached ones in a live segment at a
        // position of their key, each position once.
        let mut allocated = anonymous;
        let mut placed: BTreeSet<(u32, u32)> = BTreeSet::new();
        let mut dup_keys: BTreeMap<u32, u32> = BTreeMap::new();
        for (i, &used) in self.blocks.iter().enumerate() {
            if used.refs() != refs[i] {
                return Err(format!(
                    "block {i}: refs {} but {} holders list it",
                    used.refs(),
                    refs[i]
                ));
            }
            if !used.hit() && self.hits[i] != 0 {
                return Err(format!("block {i} counts hits but none took it"));
            }
            let key = key_of.get(&(i as u32));
            if let Some(s) = used.cached() {
                let Some(&key) = key else {
                    return Err(format!("cached block {i} has no key"));
                };
                let seg = self.seg(s);
                let inside = live_segs.contains(&s.0)
                    && key.run == seg.run
                    && key.offset >= seg.first
                    && (key.offset - seg.first).is_multiple_of(self.block)
                    && (key.offset - seg.first) / self.block < u64::from(seg.count);
                if !inside || !placed.insert((s.0, seg.position(&key, self.block))) {
                    return Err(format!("cached block {i} is not in its segment once"));
                }
                if used.dup() {
                    *dup_keys.entry(s.0).or_default() += 1;
                }
            } else if used.refs() > 0 {
                allocated += 1;
            } else if key.is_some() || used.hit() || used.dup() {
                return Err(format!("free block {i} keeps a key or a mark"));
            }
        }
        if placed.len() as u64 != cached {
            return Err(format!(
                "entries count {cached} cached blocks but {} blocks are cached",
                placed.len()
            ));
        }
        if allocated != self.allocated || cached != self.cached {
            return Err(format!(
                "counted {allocated} allocated and {cached} cached blocks, the store says {} and {}",
                self.allocated, self.cached
            ));
        }
        for &s in &live_segs {
            let want = dup_keys.get(&s).copied().unwrap_or(0);
            if self.seg(SegId(s)).dup_keys != want {
                return Err(format!("segment {s} counts its marked blocks wrongly"));
            }
        }
        Ok(())
    }

    /// Every registered block listed exactly once, first in the index or later in
    /// `dups`, and marked exactly when its key has another copy. Returns each
    /// registered block's key, by block (the blocks keep none: the loop above
    /// checks them against their holders and segments).
    fn check_copies(&self) -> Result<BTreeMap<u32, BlockKey>, String> {
        self.index.check()?;
        let mut key_of: BTreeMap<u32, BlockKey> = BTreeMap::new();
        let mut firsts: BTreeMap<BlockKey, CopyRef> = BTreeMap::new();
        for (key, first) in self.index.iter() {
            if key_of.insert(first.0, key).is_some() || first.0 as usize >= self.blocks.len() {
                return Err(format!(
                    "key {key}'s first copy is not a present copy of it"
                ));
            }
            firsts.insert(key, first);
        }
        for (key, later) in self.dups.iter() {
            if !firsts.contains_key(&key) || later.is_empty() {
                return Err(format!("key {key} lists later copies but no first"));
            }
            for c in later {
                if key_of.insert(c.0, key).is_some() || c.0 as usize >= self.blocks.len() {
                    return Err(format!("key {key} lists a later copy twice or absent"));
                }
            }
        }
        for (&b, key) in &key_of {
            if self.blocks[b as usize].dup() != self.dups.contains(key) {
                return Err(format!("a copy of {key} is marked wrongly"));
            }
        }
        Ok(key_of)
    }
}
