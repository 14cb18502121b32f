//! The identity index of one block table: for each registered key, the earliest
//! registered copy still present (R7; later copies hang off it in `cache.rs`). Keys
//! are grouped by run: a group holds the slots of 32 consecutive blocks of one run,
//! found through one small table (and mostly not even that: consecutive lookups are
//! of one run), so that registering, hitting or evicting the blocks of one run touches
//! one group instead of probing a table of every block (docs/PERFORMANCE.md, issue
//! #16). It knows nothing of blocks' holders, entries or duplicates; lookups only, so
//! no result depends on its layout.

// Slots are indexed by a block number's remainder over the group size, and groups by
// slots this index made (STYLE.md 7, as in cache.rs).
#![allow(clippy::indexing_slicing)]

use std::cell::Cell;
use std::collections::hash_map::Entry as MapEntry;

use crate::hash::FxMap;
use crate::types::{BlockId, BlockKey, RunId};

/// "No block" in a group's slots.
const EMPTY: BlockId = BlockId(u32::MAX);

/// Blocks per group: a Mooncake hash id is 32 blocks of 16 tokens.
const GROUP: u64 = 32;

/// Offset → (block number, offset within the block): a shift and mask for the usual
/// power-of-two block sizes (a division per key would cost more than the probe it
/// spares), else a division.
#[derive(Clone, Copy, Debug)]
enum PerBlock {
    Shift(u32),
    Div(u64),
}

impl PerBlock {
    #[inline]
    fn split(self, offset: u64) -> (u64, u64) {
        match self {
            PerBlock::Shift(s) => (offset >> s, offset & ((1u64 << s) - 1)),
            PerBlock::Div(d) => (offset / d, offset % d),
        }
    }

    fn block(self) -> u64 {
        match self {
            PerBlock::Shift(s) => 1 << s,
            PerBlock::Div(d) => d,
        }
    }
}

/// A run's blocks `GROUP * page ..` `GROUP * (page + 1)` (numbered by offset over
/// the block size), as a group's table key.
type GroupKey = (RunId, u64);

#[derive(Debug)]
struct Group {
    key: GroupKey,
    /// Offset within its block of every key held in `slots`. Keys of the group out of
    /// step with it (a run met at two alignments, which R2 does not forbid an
    /// embedder) are kept in [`Index::stray`].
    phase: u64,
    slots: [BlockId; GROUP as usize],
    /// Slots in use.
    dense: u32,
    /// Keys of this group held in [`Index::stray`].
    stray: u32,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Index {
    per_block: PerBlock,
    groups_of: FxMap<GroupKey, u32>,
    groups: Vec<Group>,
    /// Groups no run uses.
    free: Vec<u32>,
    stray: FxMap<BlockKey, BlockId>,
    len: usize,
    /// The key and slot of the last group looked up: consecutive keys are mostly of
    /// one group (a holder's new blocks, an entry's tail, a hit walk), so most lookups
    /// skip the table. [`NO_GROUP`] when unset; cleared when its group is freed.
    last: Cell<(GroupKey, u32)>,
}

const NO_GROUP: u32 = u32::MAX;

/// Where a key's first copy is kept, or would be.
enum Place {
    Dense { group: u32, i: usize },
    Stray { group: u32 },
}

impl Index {
    /// An empty index for a pool of `block` units a block (at least 1).
    pub fn new(block: u64) -> Index {
        let block = block.max(1);
        Index {
            per_block: if block.is_power_of_two() {
                PerBlock::Shift(block.trailing_zeros())
            } else {
                PerBlock::Div(block)
            },
            groups_of: FxMap::default(),
            groups: Vec::new(),
            free: Vec::new(),
            stray: FxMap::default(),
            len: 0,
            last: Cell::new(((RunId(0), 0), NO_GROUP)),
        }
    }

    /// Keys indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// A key's group key, slot and phase.
    #[inline]
    fn split(&self, key: &BlockKey) -> (GroupKey, usize, u64) {
        let (k, phase) = self.per_block.split(key.offset);
        ((key.run, k / GROUP), (k % GROUP) as usize, phase)
    }

    /// The group of `key`, if it has one.
    #[inline]
    fn group_of(&self, key: GroupKey) -> Option<u32> {
        let (last_key, last_group) = self.last.get();
        if last_key == key && last_group != NO_GROUP {
            return Some(last_group);
        }
        let &group = self.groups_of.get(&key)?;
        self.last.set((key, group));
        Some(group)
    }

    /// Where `key` is kept if present (`None`: its group does not exist).
    #[inline]
    fn place(&self, key: &BlockKey) -> Option<Place> {
        let (gk, i, phase) = self.split(key);
        let group = self.group_of(gk)?;
        let g = &self.groups[group as usize];
        if phase == g.phase && g.slots[i] != EMPTY {
            Some(Place::Dense { group, i })
        } else {
            Some(Place::Stray { group })
        }
    }

    /// The first copy of `key`, if any.
    #[inline]
    pub fn get(&self, key: &BlockKey) -> Option<BlockId> {
        match self.place(key)? {
            Place::Dense { group, i } => Some(self.groups[group as usize].slots[i]),
            Place::Stray { group } => {
                if self.groups[group as usize].stray == 0 {
                    None
                } else {
                    self.stray.get(key).copied()
                }
            }
        }
    }

    /// Makes `b` the first copy of `key` unless the key has one: then returns it
    /// (the caller appends `b` to its copies).
    pub fn insert_or_first(&mut self, key: BlockKey, b: BlockId) -> Option<BlockId> {
        let (gk, i, phase) = self.split(&key);
        let group = match self.place(&key) {
            Some(Place::Dense { group, i }) => {
                return Some(self.groups[group as usize].slots[i]);
            }
            Some(Place::Stray { group }) => {
                if self.groups[group as usize].stray > 0
                    && let Some(&first) = self.stray.get(&key)
                {
                    return Some(first);
                }
                group
            }
            None => self.open_group(gk, phase),
        };
        self.len += 1;
        let g = &mut self.groups[group as usize];
        if g.dense == 0 {
            // Nothing is numbered by the old alignment: take this key's. Stray keys
            // stay where they are (a lookup tries the slot, then the table).
            g.phase = phase;
        }
        if phase == g.phase {
            g.slots[i] = b;
            g.dense += 1;
        } else {
            g.stray += 1;
            self.stray.insert(key, b);
        }
        None
    }

    /// A new group, in step with `phase`.
    fn open_group(&mut self, key: GroupKey, phase: u64) -> u32 {
        let group = match self.free.pop() {
            Some(group) => {
                let g = &mut self.groups[group as usize];
                g.key = key;
                g.phase = phase;
                group
            }
            None => {
                self.groups.push(Group {
                    key,
                    phase,
                    slots: [EMPTY; GROUP as usize],
                    dense: 0,
                    stray: 0,
                });
                u32::try_from(self.groups.len() - 1).expect("more than 2^32 groups in one pool")
            }
        };
        self.groups_of.insert(key, group);
        self.last.set((key, group));
        group
    }

    /// Replaces the first copy of a present `key` by `next`, or removes the key when
    /// `next` is `None`.
    pub fn set_first(&mut self, key: BlockKey, next: Option<BlockId>) {
        let place = self.place(&key).expect("registered key has a group");
        let group = match place {
            Place::Dense { group, i } => {
                let g = &mut self.groups[group as usize];
                match next {
                    Some(b) => {
                        g.slots[i] = b;
                        return;
                    }
                    None => {
                        g.slots[i] = EMPTY;
                        g.dense -= 1;
                    }
                }
                group
            }
            Place::Stray { group } => {
                let MapEntry::Occupied(mut o) = self.stray.entry(key) else {
                    panic!("registered key {key} is not indexed");
                };
                match next {
                    Some(b) => {
                        *o.get_mut() = b;
                        return;
                    }
                    None => {
                        o.remove();
                        self.groups[group as usize].stray -= 1;
                    }
                }
                group
            }
        };
        self.len -= 1;
        let g = &self.groups[group as usize];
        if g.dense == 0 && g.stray == 0 {
            // Its slots are all empty again, ready for the next group.
            let gk = g.key;
            self.groups_of.remove(&gk);
            self.free.push(group);
            if self.last.get().1 == group {
                self.last.set(((RunId(0), 0), NO_GROUP));
            }
        }
    }

    /// Every key with its first copy (for invariant checks: the order is the
    /// index's own).
    pub fn iter(&self) -> impl Iterator<Item = (BlockKey, BlockId)> + '_ {
        let block = self.per_block.block();
        let dense = self.groups_of.values().flat_map(move |&group| {
            let g = &self.groups[group as usize];
            g.slots
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b != EMPTY)
                .map(move |(i, &b)| {
                    let k = g.key.1 * GROUP + i as u64;
                    let key = BlockKey {
                        run: g.key.0,
                        offset: k * block + g.phase,
                    };
                    (key, b)
                })
        });
        dense.chain(self.stray.iter().map(|(&key, &b)| (key, b)))
    }

    /// Checks the index's own bookkeeping.
    pub fn check(&self) -> Result<(), String> {
        let mut listed = 0usize;
        for (&gk, &group) in &self.groups_of {
            let g = &self.groups[group as usize];
            let dense = g.slots.iter().filter(|&&b| b != EMPTY).count();
            let stray = self.stray.keys().filter(|k| self.split(k).0 == gk).count();
            if g.key != gk || dense != g.dense as usize || stray != g.stray as usize {
                return Err(format!("run {}'s group miscounts its keys", gk.0.0));
            }
            if dense + stray == 0 {
                return Err(format!("run {} keeps an empty group", gk.0.0));
            }
            listed += dense + stray;
        }
        if listed != self.len
            || self
                .stray
                .keys()
                .any(|k| !self.groups_of.contains_key(&self.split(k).0))
            || self
                .free
                .iter()
                .any(|&f| self.groups[f as usize].slots.iter().any(|&b| b != EMPTY))
        {
            return Err("the index's key count disagrees with its groups".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn key(run: u64, offset: u64) -> BlockKey {
        BlockKey {
            run: RunId(run),
            offset,
        }
    }

    /// The index against a plain ordered map, on random inserts and removals of keys
    /// from a few runs at mixed alignments and far offsets (dense, stray, groups
    /// emptied and reused), for power-of-two and other block sizes.
    fn agrees_with_a_map(block: u64, ops: Vec<(bool, u64, u64, u32)>) -> Result<(), TestCaseError> {
        let mut index = Index::new(block);
        let mut model: BTreeMap<BlockKey, BlockId> = BTreeMap::new();
        for (insert, run, offset, b) in ops {
            let k = key(run, offset);
            let b = BlockId(b);
            if insert {
                let got = index.insert_or_first(k, b);
                let want = model.get(&k).copied();
                prop_assert_eq!(got, want);
                model.entry(k).or_insert(b);
            } else if let Some(&first) = model.get(&k) {
                // Half the removals hand the key to a later copy instead.
                let next = (first.0 % 2 == 0).then_some(BlockId(first.0 + 1));
                index.set_first(k, next);
                match next {
                    Some(n) => {
                        model.insert(k, n);
                    }
                    None => {
                        model.remove(&k);
                    }
                }
            }
            prop_assert_eq!(index.get(&k), model.get(&k).copied());
            prop_assert_eq!(index.len(), model.len());
            index.check().map_err(TestCaseError::fail)?;
        }
        let mut listed: Vec<_> = index.iter().collect();
        listed.sort();
        let want: Vec<_> = model.into_iter().collect();
        prop_assert_eq!(listed, want);
        Ok(())
    }

    fn op() -> impl Strategy<Value = (bool, u64, u64, u32)> {
        (
            any::<bool>(),
            0u64..4,
            prop_oneof![0u64..200, 0u64..20_000, Just(u64::MAX), Just(u64::MAX - 1)],
            0u32..1000,
        )
    }

    proptest! {
        #[test]
        fn index_r7_first_copy_agrees_with_a_map_block_16(ops in prop::collection::vec(op(), 1..300)) {
            agrees_with_a_map(16, ops)?;
        }

        #[test]
        fn index_r7_first_copy_agrees_with_a_map_block_3(ops in prop::collection::vec(op(), 1..300)) {
            agrees_with_a_map(3, ops)?;
        }
    }

    #[test]
    fn index_keeps_one_group_for_a_runs_32_aligned_blocks_and_strays_out_of_step() {
        let mut index = Index::new(16);
        for k in 0..32u64 {
            assert_eq!(
                index.insert_or_first(key(7, 15 + 16 * k), BlockId(k as u32)),
                None
            );
        }
        // A key out of step with the run's alignment, and one in another group.
        assert_eq!(index.insert_or_first(key(7, 3), BlockId(100)), None);
        assert_eq!(
            index.insert_or_first(key(7, 15 + 16 * 100_000), BlockId(101)),
            None
        );
        assert_eq!(index.groups_of.len(), 2);
        let g = &index.groups[index.groups_of[&(RunId(7), 0)] as usize];
        assert_eq!((g.dense, g.stray), (32, 1));
        assert_eq!(index.get(&key(7, 3)), Some(BlockId(100)));
        assert_eq!(index.get(&key(7, 15 + 16 * 100_000)), Some(BlockId(101)));
        assert_eq!(index.get(&key(7, 15 + 16 * 32)), None);
        index.check().unwrap();
        // Emptied groups are freed and their slots reused.
        for k in 0..32u64 {
            index.set_first(key(7, 15 + 16 * k), None);
        }
        index.set_first(key(7, 3), None);
        assert_eq!(index.groups_of.len(), 1);
        assert_eq!(index.insert_or_first(key(8, 0), BlockId(5)), None);
        assert_eq!(index.groups.len(), 2);
        index.check().unwrap();
    }
}
