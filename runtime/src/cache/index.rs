//! The identity index of one block table: for each registered key, the earliest
//! registered copy still present (R7; later copies are `dups.rs`'s). Keys
//! are grouped by run: a group holds the slots of consecutive blocks of one run
//! spanning 512 units (a Mooncake hash id: 32 blocks of 16), at most 32 blocks,
//! found through one small table and mostly not even that (consecutive registrations
//! and evictions are of one run), so that registering, hitting or evicting the blocks
//! of one run touches one group instead of probing a table of every block
//! (docs/PERFORMANCE.md, issue #16). A group costs its slots however few are in use,
//! so the first key of a group waits in the table itself, as a *lone* key, until a
//! second key of the group comes: a run of one block (a 1-block admission, issue #35)
//! costs one table entry, not 32 slots. Runs of a few blocks (or a tier holding
//! scattered blocks of long runs) still pay up to a group per key. It knows nothing of
//! blocks' holders, entries or duplicates; lookups only, so no result depends on its
//! layout.

// Slots are indexed by a group's number times the group width plus a block number's
// remainder, and groups by slots this index made (panics are for broken invariants: docs/ARCHITECTURE.md "Errors", as in cache.rs).
#![allow(clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::collections::hash_map::Entry as MapEntry;

use super::block::CopyRef;
use crate::hash::FxMap;
use crate::types::{BlockId, BlockKey, KeyRange, RunId};

/// "No block" in a group's slots.
const EMPTY: CopyRef = CopyRef(u32::MAX);

/// For `release_slow`: whichever copy is the key's first.
const ANY: CopyRef = EMPTY;

/// Units a group spans, in blocks rounded to a power of two within 1..=32.
const GROUP_UNITS: u64 = 512;
const MAX_GROUP_SHIFT: u32 = 5;

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

    /// The offset of group number `n`'s first slot, for groups of `1 << shift`
    /// blocks.
    #[inline]
    fn group_base(self, n: u64, shift: u32) -> u64 {
        match self {
            PerBlock::Shift(s) => n << (shift + s),
            PerBlock::Div(d) => (n << shift) * d,
        }
    }
}

/// A run and the number of one of its groups (block number over the group width),
/// as the groups' table key.
type GroupKey = (RunId, u64);

#[derive(Debug)]
struct Group {
    key: GroupKey,
    /// Offset within its block of every key held in the group's slots. Keys of the
    /// group out of step with it (a run met at two alignments, which R2 does not
    /// forbid an embedder) are kept in [`Index::stray`].
    phase: u64,
    /// Slots in use.
    dense: u32,
    /// Keys of this group held in [`Index::stray`].
    stray: u32,
}

/// What the table holds for a group key, read out of its [`Word`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// A group of slots (an index into [`Index::groups`]).
    Group(u32),
    /// The group's one key (its offset) and first copy, with no slots yet.
    Lone { offset: u64, first: CopyRef },
}

/// A [`Held`] in one word, as the table stores it: a table entry is then 24
/// bytes, not 32. The table is probed cold at each eviction and each hit walk's
/// first key, and a pool of 1-block entries keeps a lone key per block (issue #35
/// item 3). A lone key is kept as its offset's low 31 bits, which tell it from
/// every other offset of its group while a group spans at most 2^31 units
/// ([`Lones`]): a lookup compares them with no arithmetic on the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word(u64);

impl Word {
    const LONE: u64 = 1 << 63;
    /// The bits of a lone key's offset kept.
    const LOW: u64 = (1 << 31) - 1;

    fn group(group: u32) -> Word {
        Word(u64::from(group))
    }

    fn lone(offset: u64, first: CopyRef) -> Word {
        Word(Word::LONE | (offset & Word::LOW) << 32 | u64::from(first.0))
    }

    /// The first copy, when this is the lone key `offset` (`None`: a group, or
    /// another key of the group).
    #[inline]
    fn lone_copy(self, offset: u64) -> Option<CopyRef> {
        (self.0 >> 32 == (Word::LONE >> 32 | (offset & Word::LOW)))
            .then_some(CopyRef(self.0 as u32))
    }

    /// Its meaning for a group whose first slot is at offset `base`.
    #[inline]
    fn held(self, base: u64) -> Held {
        if self.0 & Word::LONE == 0 {
            Held::Group(self.0 as u32)
        } else {
            let low = (self.0 >> 32) & Word::LOW;
            Held::Lone {
                offset: base + (low.wrapping_sub(base) & Word::LOW),
                first: CopyRef(self.0 as u32),
            }
        }
    }

    /// A lone key's word with another first copy.
    fn with_first(self, first: CopyRef) -> Word {
        debug_assert!(self.0 & Word::LONE != 0);
        Word((self.0 & !u64::from(u32::MAX)) | u64::from(first.0))
    }
}

/// Whether an index keeps a group's first key as a lone key: only where a group
/// spans at most 2^31 units (blocks below 2^31 units: a group spans at most 512
/// units or one block), so that a [`Word`] tells its keys apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lones {
    Kept,
    Never,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Index {
    per_block: PerBlock,
    lones: Lones,
    /// log2 of the blocks a group holds.
    shift: u32,
    groups_of: FxMap<GroupKey, Word>,
    groups: Vec<Group>,
    /// Group `g`'s slots are `slots[g << shift ..][.. 1 << shift]`.
    slots: Vec<CopyRef>,
    /// Groups no run uses (all their slots empty).
    free: Vec<u32>,
    stray: FxMap<BlockKey, CopyRef>,
    len: usize,
    /// The last group a registration or removal used: the next is mostly of the
    /// same run, and then skips the table. `None` once that group is freed.
    last: Option<(GroupKey, u32)>,
}

/// The group a walk over one run's keys looked at last (a hit walk looks up a
/// chain's blocks in order, so through one group after another). Valid only while
/// the index is unchanged: a group freed and reused by another run would be named
/// wrongly, so a walk makes its own and drops it (the store is borrowed shared
/// throughout).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Near(Option<(GroupKey, u32)>);

/// Where a key's first copy is kept, or would be.
enum Place {
    /// In the group's slot `at` (an index into [`Index::slots`]).
    Dense {
        group: u32,
        at: usize,
    },
    Stray {
        group: u32,
    },
    /// The group key holds one lone key, this one or another of its group.
    Lone {
        word: Word,
    },
}

impl Index {
    /// An empty index for a pool of `block` units a block (at least 1).
    pub fn new(block: u64) -> Index {
        let block = block.max(1);
        let width = (GROUP_UNITS / block).max(1);
        let shift = width.ilog2().min(MAX_GROUP_SHIFT);
        let span = u128::from(block) << shift;
        Index {
            lones: if span <= 1 << 31 {
                Lones::Kept
            } else {
                Lones::Never
            },
            per_block: if block.is_power_of_two() {
                PerBlock::Shift(block.trailing_zeros())
            } else {
                PerBlock::Div(block)
            },
            shift,
            groups_of: FxMap::default(),
            groups: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            stray: FxMap::default(),
            len: 0,
            last: None,
        }
    }

    /// Keys indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// A key's group key, slot within the group, and phase.
    #[inline]
    fn split(&self, key: &BlockKey) -> (GroupKey, usize, u64) {
        let (k, phase) = self.per_block.split(key.offset);
        let i = (k & ((1 << self.shift) - 1)) as usize;
        ((key.run, k >> self.shift), i, phase)
    }

    /// The offset of a group key's first slot.
    #[inline]
    fn base(&self, gk: GroupKey) -> u64 {
        self.per_block.group_base(gk.1, self.shift)
    }

    /// What the table holds for a group key.
    fn held(&self, gk: GroupKey) -> Option<Held> {
        self.groups_of.get(&gk).map(|w| w.held(self.base(gk)))
    }

    /// Where `key` is kept if present (`None`: its group key holds nothing), trying
    /// `near` first and leaving there the group found.
    #[inline]
    fn place_near(&self, key: &BlockKey, near: &mut Near) -> Option<Place> {
        let (gk, i, phase) = self.split(key);
        let group = match near.0 {
            Some((last, group)) if last == gk => group,
            _ => {
                let word = *self.groups_of.get(&gk)?;
                if word.0 & Word::LONE != 0 {
                    return Some(Place::Lone { word });
                }
                let group = word.0 as u32;
                near.0 = Some((gk, group));
                group
            }
        };
        Some(self.in_group(group, i, phase))
    }

    /// Where a key of `group` (slot `i`, at `phase`) is kept, or would be.
    #[inline]
    fn in_group(&self, group: u32, i: usize, phase: u64) -> Place {
        let at = ((group as usize) << self.shift) + i;
        if phase == self.groups[group as usize].phase && self.slots[at] != EMPTY {
            Place::Dense { group, at }
        } else {
            Place::Stray { group }
        }
    }

    /// The first copy of `key`, if any.
    #[inline]
    pub fn get(&self, key: &BlockKey) -> Option<CopyRef> {
        self.get_near(key, &mut Near(self.last))
    }

    /// [`Index::get`] for one of a walk's keys: `near` carries the walk's group from
    /// key to key (start it at `Near::default()`).
    #[inline]
    pub fn get_near(&self, key: &BlockKey, near: &mut Near) -> Option<CopyRef> {
        match self.place_near(key, near)? {
            Place::Dense { at, .. } => Some(self.slots[at]),
            Place::Lone { word } => word.lone_copy(key.offset),
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
    #[inline]
    pub fn insert_or_first(&mut self, key: BlockKey, b: CopyRef) -> Option<CopyRef> {
        // The usual case, inline in the caller's loop over a run's blocks: the key
        // is new, in the group the last registration or removal used, in step
        // with it, and no stray could be its copy. [`Index::insert_slow`] is the
        // same for every case.
        let (gk, i, phase) = self.split(&key);
        if let Some((last, group)) = self.last
            && last == gk
        {
            let at = ((group as usize) << self.shift) + i;
            let g = &mut self.groups[group as usize];
            if phase == g.phase && g.stray == 0 && self.slots[at] == EMPTY {
                g.dense += 1;
                self.slots[at] = b;
                self.len += 1;
                return None;
            }
        }
        self.insert_slow(key, b)
    }

    /// Registers keys `first`, `first + block`, … of `first`'s run as one range, to
    /// `blocks` in order (issue #35 item 1): each group is found once and its slots
    /// filled as one slice, or, where [`Index::fill`] cannot, key by key as
    /// [`Index::insert_or_first`]. `later` gets each key that had a first copy,
    /// with it and the new copy (for the caller's later copies), in key order.
    pub fn insert_run(
        &mut self,
        first: BlockKey,
        blocks: &[BlockId],
        mut later: impl FnMut(BlockKey, CopyRef, CopyRef),
    ) {
        let block = self.per_block.block();
        let mut key = first;
        let mut rest = blocks;
        while !rest.is_empty() {
            let (gk, i, phase) = self.split(&key);
            let m = rest.len().min((1 << self.shift) - i);
            let (piece, after) = rest.split_at(m);
            // One key takes the one-key insert: one probe, where `fill` adds one.
            if piece.len() == 1 || !self.fill(gk, i, phase, piece) {
                let range = KeyRange {
                    first: key,
                    count: m as u64,
                };
                for (j, &b) in (0u64..).zip(piece) {
                    let key = range.key_at(j, block);
                    let c = CopyRef::of(b);
                    if let Some(f) = self.insert_or_first(key, c) {
                        later(key, f, c);
                    }
                }
            }
            rest = after;
            key.offset = key.offset.wrapping_add(m as u64 * block);
        }
    }

    /// Files `piece`, two keys or more, in group `gk`'s slots from `i` on when they
    /// are all free, the group in step with `phase` and without strays (opened if
    /// absent). Returns whether it did; `false` changes nothing.
    #[inline]
    fn fill(&mut self, gk: GroupKey, i: usize, phase: u64, piece: &[BlockId]) -> bool {
        let group = match self.last {
            Some((last, group)) if last == gk => group,
            _ => match self.groups_of.get(&gk) {
                None => self.open_group(gk, phase),
                Some(w) if w.0 & Word::LONE != 0 => return false,
                Some(w) => w.0 as u32,
            },
        };
        let g = &self.groups[group as usize];
        let at = ((group as usize) << self.shift) + i;
        let slots = &mut self.slots[at..at + piece.len()];
        if g.phase != phase || g.stray != 0 || slots.iter().any(|&c| c != EMPTY) {
            // A group opened above has neither: it is never left empty here.
            return false;
        }
        for (slot, &b) in slots.iter_mut().zip(piece) {
            *slot = CopyRef::of(b);
        }
        self.groups[group as usize].dense += piece.len() as u32;
        self.len += piece.len();
        self.last = Some((gk, group));
        true
    }

    #[inline(never)]
    fn insert_slow(&mut self, key: BlockKey, b: CopyRef) -> Option<CopyRef> {
        let (gk, i, phase) = self.split(&key);
        // One probe of the table, whatever it holds (a run of one block registers
        // with nothing more).
        let base = self.base(gk);
        let group = match self.last {
            Some((last, group)) if last == gk => group,
            _ => match self.groups_of.entry(gk) {
                MapEntry::Vacant(v) if self.lones == Lones::Kept => {
                    v.insert(Word::lone(key.offset, b));
                    self.len += 1;
                    return None;
                }
                MapEntry::Vacant(_) => self.open_group(gk, phase),
                MapEntry::Occupied(o) => match o.get().held(base) {
                    Held::Group(group) => group,
                    Held::Lone { offset, first } if offset == key.offset => return Some(first),
                    Held::Lone { offset, first } => {
                        // A second key of the group: both move into slots, numbered
                        // by the lone key's alignment.
                        let lone = BlockKey {
                            run: key.run,
                            offset,
                        };
                        let (_, at, lone_phase) = self.split(&lone);
                        let group = self.open_group(gk, lone_phase);
                        self.put(group, lone, at, lone_phase, first);
                        group
                    }
                },
            },
        };
        match self.in_group(group, i, phase) {
            Place::Dense { at, .. } => return Some(self.slots[at]),
            Place::Stray { .. } => {
                if self.groups[group as usize].stray > 0
                    && let Some(&first) = self.stray.get(&key)
                {
                    return Some(first);
                }
            }
            Place::Lone { .. } => unreachable!("a group's key is dense or stray"),
        }
        self.last = Some((gk, group));
        self.len += 1;
        self.put(group, key, i, phase, b);
        None
    }

    /// Files `key` (slot `i` of its group, at `phase`) in `group`: in its slot when
    /// in step with the group, else in the stray table.
    #[inline]
    fn put(&mut self, group: u32, key: BlockKey, i: usize, phase: u64, b: CopyRef) {
        let g = &mut self.groups[group as usize];
        if g.dense == 0 {
            // Nothing is numbered by the old alignment: take this key's. Stray keys
            // stay where they are (a lookup tries the slot, then the table).
            g.phase = phase;
        }
        if phase == g.phase {
            g.dense += 1;
            self.slots[((group as usize) << self.shift) + i] = b;
        } else {
            g.stray += 1;
            self.stray.insert(key, b);
        }
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
                    dense: 0,
                    stray: 0,
                });
                self.slots
                    .resize(self.slots.len() + (1 << self.shift), EMPTY);
                u32::try_from(self.groups.len() - 1).expect("more than 2^32 groups in one pool")
            }
        };
        self.groups_of.insert(key, Word::group(group));
        group
    }

    /// A copy `b` of a present `key` leaves: when it is the first copy, `next` (the
    /// next copy, if any) takes its place, or the key goes, and this returns `None`;
    /// otherwise it returns the first copy and changes nothing (the caller unlinks
    /// `b` from the copies after it).
    #[inline(always)]
    pub fn release(&mut self, key: BlockKey, b: CopyRef, next: Option<CopyRef>) -> Option<CopyRef> {
        // The usual case, inline in the caller's loop over an entry's tail: `b` is
        // the first copy, in step with the group the last registration or removal
        // used, and the group keeps other keys. [`Index::release_slow`] is the same
        // for every case.
        let (gk, i, phase) = self.split(&key);
        if let Some((last, group)) = self.last
            && last == gk
        {
            let at = ((group as usize) << self.shift) + i;
            let g = &mut self.groups[group as usize];
            if phase == g.phase && self.slots[at] == b && (next.is_some() || g.dense > 1) {
                match next {
                    Some(n) => self.slots[at] = n,
                    None => {
                        g.dense -= 1;
                        self.slots[at] = EMPTY;
                        self.len -= 1;
                    }
                }
                return None;
            }
        }
        self.release_any_slow(key, b, next).err()
    }

    /// Removes the `n` keys of `run` at `offset`, `offset - block`, … (an entry's
    /// tail leaving, R10), each present with no other copy, handing each removed
    /// copy to `removed`: a group's slots are cleared in one pass while it keeps
    /// other keys, the rest as [`Index::release`] would.
    pub fn remove_only_copies(
        &mut self,
        run: RunId,
        offset: u64,
        n: u32,
        mut removed: impl FnMut(CopyRef),
    ) {
        let block = self.per_block.block();
        let mut offset = offset;
        let mut left = n;
        while left > 0 {
            let key = BlockKey { run, offset };
            let (gk, i, phase) = self.split(&key);
            let mut done = 0u32;
            if let Some((last, group)) = self.last
                && last == gk
                && phase == self.groups[group as usize].phase
            {
                let base = (group as usize) << self.shift;
                let g = &mut self.groups[group as usize];
                let most = (left as usize).min(i + 1);
                while (done as usize) < most {
                    let at = base + i - done as usize;
                    let c = self.slots[at];
                    // An empty slot: the key is stray (its group was rephased).
                    if c == EMPTY || g.dense <= 1 {
                        break;
                    }
                    self.slots[at] = EMPTY;
                    g.dense -= 1;
                    removed(c);
                    done += 1;
                }
                self.len -= done as usize;
            }
            if done == 0 {
                // One probe finds and removes it (its copy is not known here).
                let c = self.first_copy_slow(key);
                removed(c);
                done = 1;
            }
            left -= done;
            if left > 0 {
                offset -= u64::from(done) * block;
            }
        }
    }

    /// Removes a present key that has no other copy, and returns its copy: inline
    /// in the usual case (the group the last operation used keeps other keys),
    /// else one probe.
    #[inline(always)]
    pub fn remove_only(&mut self, key: BlockKey) -> CopyRef {
        // The one-key case of `remove_only_copies`, written out: an Evict moment
        // that spills calls it once per block, and going through the loop cost
        // tiered_h100 2 % more instructions (20.66 G against 21.15 G).
        let (gk, i, phase) = self.split(&key);
        if let Some((last, group)) = self.last
            && last == gk
        {
            let at = ((group as usize) << self.shift) + i;
            let g = &mut self.groups[group as usize];
            let c = self.slots[at];
            if phase == g.phase && c != EMPTY && g.dense > 1 {
                g.dense -= 1;
                self.slots[at] = EMPTY;
                self.len -= 1;
                return c;
            }
        }
        self.first_copy_slow(key)
    }

    /// Removes a key's first copy, whichever it is (the key has no later copy),
    /// and returns it.
    #[inline(never)]
    fn first_copy_slow(&mut self, key: BlockKey) -> CopyRef {
        // `release_slow` with its copy and successor known here, so that the checks
        // on them fold away (an eviction of a 1-block entry comes here every time).
        let removed = self.release_slow(key, ANY, None);
        removed.expect("whichever copy is first is taken")
    }

    /// [`Index::release`]'s slow path, out of line.
    #[inline(never)]
    fn release_any_slow(
        &mut self,
        key: BlockKey,
        b: CopyRef,
        next: Option<CopyRef>,
    ) -> Result<CopyRef, CopyRef> {
        self.release_slow(key, b, next)
    }

    #[inline(always)]
    fn release_slow(
        &mut self,
        key: BlockKey,
        b: CopyRef,
        next: Option<CopyRef>,
    ) -> Result<CopyRef, CopyRef> {
        let (gk, i, phase) = self.split(&key);
        let base = self.base(gk);
        let group = match self.last {
            Some((last, group)) if last == gk => group,
            _ => {
                let MapEntry::Occupied(mut o) = self.groups_of.entry(gk) else {
                    panic!("registered key {key} has no group");
                };
                match o.get().held(base) {
                    Held::Group(group) => group,
                    Held::Lone { offset, first } => {
                        assert!(offset == key.offset, "registered key {key} is not indexed");
                        if first != b && b != ANY {
                            return Err(first);
                        }
                        match next {
                            Some(n) => *o.get_mut() = o.get().with_first(n),
                            None => {
                                o.remove();
                                self.len -= 1;
                            }
                        }
                        return Ok(first);
                    }
                }
            }
        };
        let (group, was) = match self.in_group(group, i, phase) {
            Place::Dense { group, at } => {
                let was = self.slots[at];
                if was != b && b != ANY {
                    return Err(was);
                }
                self.slots[at] = next.unwrap_or(EMPTY);
                if next.is_some() {
                    return Ok(was);
                }
                self.groups[group as usize].dense -= 1;
                (group, was)
            }
            Place::Stray { group } => {
                let MapEntry::Occupied(mut o) = self.stray.entry(key) else {
                    panic!("registered key {key} is not indexed");
                };
                let was = *o.get();
                if was != b && b != ANY {
                    return Err(was);
                }
                if let Some(n) = next {
                    *o.get_mut() = n;
                    return Ok(was);
                }
                o.remove();
                self.groups[group as usize].stray -= 1;
                (group, was)
            }
            Place::Lone { .. } => unreachable!("a group's key is dense or stray"),
        };
        self.len -= 1;
        let g = &self.groups[group as usize];
        if g.dense == 0 && g.stray == 0 {
            // Its slots are all empty again, ready for the next group.
            let gk = g.key;
            self.groups_of.remove(&gk);
            self.free.push(group);
            self.last = None;
        } else {
            self.last = Some((g.key, group));
        }
        Ok(was)
    }

    /// Every key with its first copy (for invariant checks: the order is the
    /// index's own).
    pub fn iter(&self) -> impl Iterator<Item = (BlockKey, CopyRef)> + '_ {
        let block = self.per_block.block();
        let width = 1usize << self.shift;
        let held = self.groups_of.iter().flat_map(move |(&gk, &word)| {
            let (lone, group) = match word.held(self.base(gk)) {
                Held::Lone { offset, first } => {
                    let key = BlockKey { run: gk.0, offset };
                    (Some((key, first)), None)
                }
                Held::Group(group) => (None, Some(group)),
            };
            let dense = group.into_iter().flat_map(move |group| {
                let g = &self.groups[group as usize];
                let base = (group as usize) << self.shift;
                self.slots[base..base + width]
                    .iter()
                    .enumerate()
                    .filter(|&(_, &b)| b != EMPTY)
                    .map(move |(i, &b)| {
                        let k = (g.key.1 << self.shift) + i as u64;
                        let key = BlockKey {
                            run: g.key.0,
                            offset: k * block + g.phase,
                        };
                        (key, b)
                    })
            });
            lone.into_iter().chain(dense)
        });
        held.chain(self.stray.iter().map(|(&key, &b)| (key, b)))
    }

    /// Checks the index's own bookkeeping: each group's counts, no key in two
    /// places, free groups empty and unlisted, and the remembered group current.
    pub fn check(&self) -> Result<(), String> {
        let width = 1usize << self.shift;
        let in_use = |group: u32| &self.slots[(group as usize) << self.shift..][..width];
        let mut strays: BTreeMap<u32, usize> = BTreeMap::new();
        for key in self.stray.keys() {
            let (gk, i, phase) = self.split(key);
            let Some(Held::Group(group)) = self.held(gk) else {
                return Err(format!("stray key {key} has no group"));
            };
            if phase == self.groups[group as usize].phase && in_use(group)[i] != EMPTY {
                return Err(format!("key {key} is both in a slot and stray"));
            }
            *strays.entry(group).or_default() += 1;
        }
        let mut listed = 0usize;
        for (&gk, &word) in &self.groups_of {
            let group = match word.held(self.base(gk)) {
                Held::Group(group) => group,
                Held::Lone { offset, first } => {
                    let key = BlockKey { run: gk.0, offset };
                    if self.split(&key).0 != gk || first == EMPTY {
                        return Err(format!("lone key {key} is filed under another group"));
                    }
                    listed += 1;
                    continue;
                }
            };
            let g = &self.groups[group as usize];
            let dense = in_use(group).iter().filter(|&&b| b != EMPTY).count();
            let stray = strays.get(&group).copied().unwrap_or(0);
            if g.key != gk || dense != g.dense as usize || stray != g.stray as usize {
                return Err(format!("run {}'s group miscounts its keys", gk.0.0));
            }
            if dense + stray == 0 {
                return Err(format!("run {} keeps an empty group", gk.0.0));
            }
            listed += dense + stray;
        }
        if listed != self.len {
            return Err("the index's key count disagrees with its groups".into());
        }
        for &f in &self.free {
            let g = &self.groups[f as usize];
            if self.held(g.key) == Some(Held::Group(f))
                || g.dense + g.stray > 0
                || in_use(f).iter().any(|&b| b != EMPTY)
            {
                return Err(format!("free group {f} is in use"));
            }
        }
        if let Some((gk, group)) = self.last
            && self.held(gk) != Some(Held::Group(group))
        {
            return Err(format!("the remembered group of run {} is stale", gk.0.0));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
