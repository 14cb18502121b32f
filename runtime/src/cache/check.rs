//! The block table's invariants, checked from scratch against its holders' lists
//! (the tests run this after every operation): reference counts, the allocated and
//! cached counts, entries and their segments, and every present copy of every key
//! listed once — as its key's first copy in the index or a later one in `dups` —
//! with the marks that spare the usual case those lookups. Read-only.

// Slots index the store's own slabs (see cache.rs).
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};

use crate::types::{BlockId, BlockKey};

use super::Store;
use super::block::{CopyRef, SegId};

impl Store {
    /// The key of a present copy, `None` when the reference names nothing present.
    fn copy_key(&self, c: CopyRef, live_segs: &BTreeSet<u32>) -> Option<Vec<BlockKey>> {
        match (c.as_held(), c.as_cached()) {
            (Some(b), _) => self
                .blocks
                .get(b.0 as usize)
                .and_then(|r| r.key())
                .map(|k| vec![k]),
            (None, Some(s)) => live_segs.contains(&s.0).then(|| {
                let seg = self.seg(s);
                (0..seg.count).map(|i| seg.key_at(i, self.block)).collect()
            }),
            (None, None) => None,
        }
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
            } else if block.key().is_some() || block.used.hit() || block.used.dup() {
                return Err(format!("free block {i} keeps a key or a mark"));
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
            let segs = self.entry_segs(slot);
            let mut blocks = 0u64;
            let mut prev = SegId::NIL;
            for &s in &segs {
                let seg = self.seg(s);
                if seg.entry != slot || seg.prev != prev || seg.count == 0 {
                    return Err(format!("entry {} links a foreign or empty segment", e.id));
                }
                if self.free_segs.contains(&s) || !live_segs.insert(s.0) {
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
        if allocated != self.allocated || cached != self.cached {
            return Err(format!(
                "counted {allocated} allocated and {cached} cached blocks, the store says {} and {}",
                self.allocated, self.cached
            ));
        }
        if live_segs.len() + self.free_segs.len() != self.segs.len() {
            return Err("a segment slot is neither in an entry nor free".into());
        }
        self.check_copies(&live_segs)
    }

    /// Every present copy listed exactly once, first in the index or later in
    /// `dups`, with its marks and hit counts where they belong.
    fn check_copies(&self, live_segs: &BTreeSet<u32>) -> Result<(), String> {
        self.index.check()?;
        // (key, copy) of every present copy.
        let mut present: BTreeSet<(BlockKey, u32)> = BTreeSet::new();
        for (i, block) in self.blocks.iter().enumerate() {
            if let Some(key) = block.key() {
                present.insert((key, CopyRef::held(BlockId(i as u32)).0));
            }
        }
        for &s in live_segs {
            let c = CopyRef::cached(SegId(s));
            for key in self.copy_key(c, live_segs).unwrap_or_default() {
                present.insert((key, c.0));
            }
        }
        let mut seen: BTreeSet<(BlockKey, u32)> = BTreeSet::new();
        let mut firsts: BTreeMap<BlockKey, CopyRef> = BTreeMap::new();
        for (key, first) in self.index.iter() {
            if !present.contains(&(key, first.0)) || !seen.insert((key, first.0)) {
                return Err(format!(
                    "key {key}'s first copy is not a present copy of it"
                ));
            }
            firsts.insert(key, first);
        }
        let mut dup_keys: BTreeMap<u32, u32> = BTreeMap::new();
        for (key, later) in self.dups.iter() {
            let key = &key;
            let Some(&first) = firsts.get(key) else {
                return Err(format!("key {key} lists later copies but no first"));
            };
            if later.is_empty() {
                return Err(format!("key {key} lists no later copy"));
            }
            for &c in std::iter::once(&first).chain(&later) {
                if let Some(s) = c.as_cached() {
                    *dup_keys.entry(s.0).or_default() += 1;
                }
            }
            for &c in &later {
                if !present.contains(&(*key, c.0)) || !seen.insert((*key, c.0)) {
                    return Err(format!("key {key} lists a later copy twice or absent"));
                }
            }
        }
        if seen.len() != present.len() {
            return Err(format!(
                "{} copies are present but the index and dups list {}",
                present.len(),
                seen.len()
            ));
        }
        for block in &self.blocks {
            if let Some(key) = block.key()
                && block.used.dup() != self.dups.contains(&key)
            {
                return Err(format!("a held copy of {key} is marked wrongly"));
            }
        }
        let mut hit_keys: BTreeMap<u32, u32> = BTreeMap::new();
        for (&(s, key), &n) in &self.cached_hits {
            if n == 0 || !present.contains(&(key, CopyRef::cached(s).0)) {
                return Err(format!("a hit count of {key} names no cached copy"));
            }
            *hit_keys.entry(s.0).or_default() += 1;
        }
        for &s in live_segs {
            let seg = self.seg(SegId(s));
            let dups = dup_keys.get(&s).copied().unwrap_or(0);
            let hits = hit_keys.get(&s).copied().unwrap_or(0);
            if seg.dup_keys != dups || seg.hit_keys != hits {
                return Err(format!(
                    "segment {s} counts {} marked and {} hit keys, not {dups} and {hits}",
                    seg.dup_keys, seg.hit_keys
                ));
            }
        }
        Ok(())
    }
}
