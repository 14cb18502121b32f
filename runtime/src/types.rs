//! Plain value types of the pool engine: units, sessions, content chains and block
//! identities (R2, a chain's keys one by one or as ranges of one run), capacity
//! limits and entry ids. They carry meaning and validate
//! themselves; they know nothing of pools, queues or compiled code.

use std::fmt;

/// A count of units (tokens, slots, bytes: whatever the spec's pool counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Units(pub u64);

impl Units {
    pub const ZERO: Units = Units(0);

    pub fn get(self) -> u64 {
        self.0
    }

    /// Whole blocks needed to hold these units (rounded up). `block` is never 0 in a
    /// pool (validated by [`crate::PoolConfig`]).
    #[inline]
    pub fn blocks_up(self, block: u64) -> u64 {
        // Rounded down, plus one for a remainder (`down * block` ≤ `self.0`, so the
        // product cannot overflow).
        let down = per_block(self.0, block);
        down + u64::from(down * block != self.0)
    }

    /// Full blocks within these units (rounded down).
    #[inline]
    pub fn blocks_down(self, block: u64) -> u64 {
        per_block(self.0, block)
    }
}

/// `x / block` (rounded down), by a shift for the usual power-of-two block sizes: a
/// 64-bit division waits 10–20 cycles for its result where a shift waits one, and
/// admissions, grows, releases and hits each divide by the block size
/// (docs/PERFORMANCE.md, "Store-forwarding stalls").
#[inline]
pub(crate) fn per_block(x: u64, block: u64) -> u64 {
    if block.is_power_of_two() {
        x >> block.trailing_zeros()
    } else {
        x / block
    }
}

impl fmt::Display for Units {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A session, as the host numbers it. A session has at most one hold per pool at a
/// time (waiting or admitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// A run id (R2): names the content from the start of a chain through the end of
/// that run, like Mooncake's `hash_ids`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub u64);

/// One run of a content chain: `len` units of content named by `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    pub id: RunId,
    pub len: Units,
}

/// The identity of a full block (R2): the identity of its last unit, that is the run
/// covering it and the unit's offset inside that run. Two blocks with the same key
/// hold the same content from the start of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockKey {
    pub run: RunId,
    pub offset: u64,
}

impl fmt::Display for BlockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.run.0, self.offset)
    }
}

/// Why a chain was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainError {
    /// A run of length 0 names no content and would make identities ambiguous.
    EmptyRun { index: usize },
    /// The runs add up to more than `u64::MAX` units.
    TooLong,
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::EmptyRun { index } => write!(f, "run {index} of the chain has length 0"),
            ChainError::TooLong => {
                f.write_str("the chain's runs add up to more than 2^64 - 1 units")
            }
        }
    }
}

impl std::error::Error for ChainError {}

/// A content chain (R2): the runs of a session's data, in order. Units beyond the
/// chain's length have no known content: their blocks are never registered, hit or
/// cached. A session with no content information should get one run with an id unique
/// to it (the host's choice of id), so that it can hit its own blocks after a
/// preemption.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    runs: Vec<Run>,
    /// `ends[i]` = units from the chain's start through the end of run `i`; lets a
    /// block's key be found by binary search when a hold grows one block at a time.
    ends: Vec<u64>,
}

impl Chain {
    pub fn new(runs: Vec<Run>) -> Result<Chain, ChainError> {
        let mut ends = Vec::with_capacity(runs.len());
        let mut end = 0u64;
        for (index, run) in runs.iter().enumerate() {
            if run.len.0 == 0 {
                return Err(ChainError::EmptyRun { index });
            }
            end = end.checked_add(run.len.0).ok_or(ChainError::TooLong)?;
            ends.push(end);
        }
        Ok(Chain { runs, ends })
    }

    /// A chain of one run.
    pub fn single(id: RunId, len: Units) -> Result<Chain, ChainError> {
        Chain::new(vec![Run { id, len }])
    }

    /// A chain with no known content.
    pub fn empty() -> Chain {
        Chain::default()
    }

    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    pub fn len(&self) -> Units {
        Units(self.ends.last().copied().unwrap_or(0))
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Full blocks of `block` units whose content the chain knows.
    pub fn full_blocks(&self, block: u64) -> u64 {
        self.len().blocks_down(block)
    }

    /// The keys of the chain's full blocks, in chain order.
    pub fn block_keys(&self, block: u64) -> BlockKeys<'_> {
        self.block_keys_from(0, block)
    }

    /// The keys of the chain's full blocks from block `k` (0-based) on, one by one
    /// ([`Chain::key_ranges_from`]'s ranges, spelled out).
    pub fn block_keys_from(&self, k: u64, block: u64) -> BlockKeys<'_> {
        BlockKeys {
            ranges: self.key_ranges_from(k, block),
            next: KeyRange {
                first: BlockKey {
                    run: RunId(0),
                    offset: 0,
                },
                count: 0,
            },
        }
    }

    /// The keys of the chain's full blocks from block `k` (0-based) on, as ranges
    /// of consecutive keys of one run: one search for the run covering block `k`,
    /// then one range per run (a holder registers and releases its blocks this
    /// way, a range at a time: issue #35 item 1).
    pub fn key_ranges_from(&self, k: u64, block: u64) -> KeyRanges<'_> {
        let next_end = k.checked_add(1).and_then(|n| n.checked_mul(block));
        // The run covering the block's last unit is the first whose end is beyond it.
        let run = next_end.map_or(0, |end| {
            let pos = end.saturating_sub(1);
            self.ends.partition_point(|&e| e <= pos)
        });
        let run_start = run
            .checked_sub(1)
            .and_then(|j| self.ends.get(j))
            .copied()
            .unwrap_or(0);
        KeyRanges {
            chain: self,
            run,
            run_start,
            next_end,
            block,
        }
    }
}

/// `count` consecutive keys of one run: `first`, `first + block`, …
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub first: BlockKey,
    pub count: u64,
}

impl KeyRange {
    /// Its key at position `i` (below `count`), for blocks of `block` units.
    #[inline]
    pub fn key_at(&self, i: u64, block: u64) -> BlockKey {
        BlockKey {
            run: self.first.run,
            offset: self.first.offset + i * block,
        }
    }
}

/// Iterator over a chain's full-block keys as ranges; see [`Chain::key_ranges_from`].
pub struct KeyRanges<'a> {
    chain: &'a Chain,
    run: usize,
    run_start: u64,
    /// Exclusive end of the next block, `None` once past `u64::MAX`.
    next_end: Option<u64>,
    block: u64,
}

impl Iterator for KeyRanges<'_> {
    type Item = KeyRange;

    fn next(&mut self) -> Option<KeyRange> {
        let end = self.next_end?;
        if end > self.chain.len().0 || end == 0 {
            return None;
        }
        // A block's key is its last unit's (R2): skip runs that end before it.
        let pos = end - 1;
        while let Some(&run_end) = self.chain.ends.get(self.run)
            && run_end <= pos
        {
            self.run_start = run_end;
            self.run += 1;
        }
        let run_end = *self.chain.ends.get(self.run)?;
        // Every block whose last unit falls in this run: ends `end`, `end + block`,
        // … up to the run's end.
        let count = per_block(run_end - end, self.block) + 1;
        self.next_end = count
            .checked_mul(self.block)
            .and_then(|n| n.checked_add(end));
        Some(KeyRange {
            first: BlockKey {
                run: self.chain.runs.get(self.run)?.id,
                offset: pos - self.run_start,
            },
            count,
        })
    }
}

/// Iterator over a chain's full-block keys; see [`Chain::block_keys`].
pub struct BlockKeys<'a> {
    ranges: KeyRanges<'a>,
    /// What is left of the range being spelled out.
    next: KeyRange,
}

impl Iterator for BlockKeys<'_> {
    type Item = BlockKey;

    #[inline]
    fn next(&mut self) -> Option<BlockKey> {
        if self.next.count == 0 {
            self.next = self.ranges.next()?;
        }
        let key = self.next.first;
        self.next.count -= 1;
        self.next.first.offset = key.offset.wrapping_add(self.ranges.block);
        Some(key)
    }
}

/// A limit that is a whole number of units or unbounded (`inf`), like `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Limit {
    Finite(Units),
    Unbounded,
}

impl Limit {
    pub fn as_f64(self) -> f64 {
        match self {
            Limit::Finite(u) => u.0 as f64,
            Limit::Unbounded => f64::INFINITY,
        }
    }
}

/// A cache entry's identity: its release order (R3, R10), 0 for the first entry a
/// pool member creates. Releases that cache nothing create no entry and take no
/// number, so ids are dense.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub u64);

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "e{}", self.0)
    }
}

/// A physical block of a pool member (an index into its block table). Two physical
/// blocks may carry the same [`BlockKey`] (R7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockId(pub u32);

/// A slot of a pool member's attribute snapshots (S3): the block table keeps it on
/// each entry of the session, the pool owns what it holds. Internal to the crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SnapSlot(pub(crate) u32);

/// A hold's header (R4): what it allocates on admission, the length it must be able
/// to reach, and its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Units allocated on admission (rounded up to blocks).
    pub units: Units,
    /// The length the hold must be able to reach; the fit is judged on
    /// `max(units, reserve)` (R6). [`Header::new`] sets it to `units`.
    pub reserve: Units,
    pub chain: Chain,
    /// At most this many units are hit (rounded down to blocks): a step host's
    /// last-token rule caps a hit at `sequence - 1`. `None`: only `units` caps it.
    pub max_hit: Option<Units>,
}

impl Header {
    pub fn new(units: Units, chain: Chain) -> Header {
        Header {
            units,
            reserve: units,
            chain,
            max_hit: None,
        }
    }

    pub fn with_reserve(mut self, reserve: Units) -> Header {
        self.reserve = reserve;
        self
    }

    pub fn with_max_hit(mut self, max_hit: Units) -> Header {
        self.max_hit = Some(max_hit);
        self
    }

    /// The units the fit is judged on (R5, R6).
    pub fn fit_units(&self) -> Units {
        self.units.max(self.reserve)
    }

    /// The most blocks a hit may cover: within `units`, `max_hit` and the chain.
    pub fn hit_limit_blocks(&self, block: u64) -> u64 {
        let mut limit = self.units.min(self.chain.len());
        if let Some(m) = self.max_hit {
            limit = limit.min(m);
        }
        limit.blocks_down(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    fn chain(runs: &[(u64, u64)]) -> Chain {
        Chain::new(
            runs.iter()
                .map(|&(id, len)| Run {
                    id: RunId(id),
                    len: Units(len),
                })
                .collect(),
        )
        .unwrap()
    }

    proptest::proptest! {
        /// R1 counts in whole blocks: the shift taken for a power-of-two block size
        /// and the division taken for any other give the same counts, up to `u64::MAX`.
        #[test]
        fn r1_blocks_of_units_are_the_division_for_every_block_size(
            units in proptest::prop_oneof![
                0u64..100_000,
                proptest::num::u64::ANY,
                proptest::strategy::Just(u64::MAX),
            ],
            block in proptest::prop_oneof![
                1u64..70,
                (0u32..64).prop_map(|s| 1u64 << s),
                proptest::num::u64::ANY.prop_map(|b| b.max(1)),
            ],
        ) {
            proptest::prop_assert_eq!(Units(units).blocks_down(block), units / block);
            proptest::prop_assert_eq!(Units(units).blocks_up(block), units.div_ceil(block));
        }

        /// R2: a full block's key is its last unit's run and offset in that run.
        /// The keys from block `k` on, spelled out of the chain's ranges, are that
        /// definition block by block (found here by a walk over the runs), and each
        /// range is consecutive keys of one run.
        #[test]
        fn r2_key_ranges_spell_each_full_blocks_last_unit(
            lens in proptest::collection::vec(1u64..40, 1..8),
            block in 1u64..20,
            k in 0u64..12,
        ) {
            let runs: Vec<(u64, u64)> = lens.iter().enumerate().map(|(i, &l)| (i as u64 + 1, l)).collect();
            let c = chain(&runs);
            let total: u64 = lens.iter().sum();
            let want: Vec<BlockKey> = (k..total / block)
                .map(|j| {
                    let pos = (j + 1) * block - 1;
                    let mut start = 0;
                    for &(id, len) in &runs {
                        if pos < start + len {
                            return BlockKey { run: RunId(id), offset: pos - start };
                        }
                        start += len;
                    }
                    unreachable!("a full block's last unit is in the chain")
                })
                .collect();
            let got: Vec<BlockKey> = c.block_keys_from(k, block).collect();
            proptest::prop_assert_eq!(&got, &want);
            let mut spelled = Vec::new();
            for r in c.key_ranges_from(k, block) {
                proptest::prop_assert!(r.count > 0);
                for i in 0..r.count {
                    spelled.push(BlockKey { run: r.first.run, offset: r.first.offset + i * block });
                }
            }
            proptest::prop_assert_eq!(&spelled, &want);
        }
    }

    #[test]
    fn block_key_is_identity_of_last_unit() {
        // Runs: 7 of length 5 (units 0..5), 9 of length 6 (units 5..11).
        // Blocks of 4: block 0 ends at unit 3 (run 7 offset 3); block 1 ends at unit 7
        // (run 9, offset 2); block 2 would end at unit 11 > 11 units: not full.
        let c = chain(&[(7, 5), (9, 6)]);
        let keys: Vec<_> = c.block_keys(4).collect();
        assert_eq!(
            keys,
            vec![
                BlockKey {
                    run: RunId(7),
                    offset: 3
                },
                BlockKey {
                    run: RunId(9),
                    offset: 2
                }
            ]
        );
        for (k, key) in keys.iter().enumerate() {
            assert_eq!(c.block_keys_from(k as u64, 4).next(), Some(*key));
        }
        assert_eq!(c.block_keys_from(2, 4).next(), None);
        assert_eq!(c.full_blocks(4), 2);
    }

    #[test]
    fn run_boundary_block_takes_the_earlier_run() {
        // A block ending exactly at a run's last unit belongs to that run.
        let c = chain(&[(1, 4), (2, 4)]);
        assert_eq!(
            c.block_keys_from(0, 4).next(),
            Some(BlockKey {
                run: RunId(1),
                offset: 3
            })
        );
        assert_eq!(c.block_keys(1).count(), 8);
    }

    #[test]
    fn rejects_empty_runs_and_overflow() {
        assert_eq!(
            Chain::new(vec![Run {
                id: RunId(1),
                len: Units(0)
            }]),
            Err(ChainError::EmptyRun { index: 0 })
        );
        let big = Run {
            id: RunId(1),
            len: Units(u64::MAX),
        };
        assert_eq!(Chain::new(vec![big, big]), Err(ChainError::TooLong));
        // A maximal chain still walks without overflow.
        let c = Chain::new(vec![big]).unwrap();
        assert_eq!(
            c.block_keys_from(0, u64::MAX).next().map(|k| k.offset),
            Some(u64::MAX - 1)
        );
        assert_eq!(c.block_keys(u64::MAX).count(), 1);
        assert_eq!(c.block_keys_from(1, u64::MAX).next(), None);
        assert_eq!(c.block_keys_from(u64::MAX, 2).next(), None);
    }

    #[test]
    fn block_keys_from_k_is_the_walk_from_the_start_less_k() {
        // Runs of assorted lengths, some shorter than a block, some ending on a block
        // boundary, for several block sizes.
        let c = chain(&[(1, 3), (2, 5), (3, 1), (4, 16), (5, 7), (6, 9)]);
        for block in 1..=9 {
            let all: Vec<_> = c.block_keys(block).collect();
            for k in 0..=all.len() + 1 {
                let from: Vec<_> = c.block_keys_from(k as u64, block).collect();
                assert_eq!(from, all[k.min(all.len())..], "block {block}, from {k}");
            }
        }
    }
}
