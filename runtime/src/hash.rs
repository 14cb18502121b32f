//! A small, fixed, fast hasher for the engine's lookup tables (sessions, block keys).
//! Fixed so that a run's memory behaviour is the same every time (std's `RandomState`
//! reseeds per process, which moves table growth around); fast because every hit walk
//! hashes one key per block. Lookups only: no result ever depends on table order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The multiply-rotate hash of rustc's `FxHasher`, over 64-bit words.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            for (w, b) in word.iter_mut().zip(chunk) {
                *w = *b;
            }
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The block-key index's hasher: a run's consecutive blocks land in consecutive slots
/// of the table, with distinct tags. A block key hashes as its run id mixed (a
/// multiply, its high half folded down), plus `k + (k << 57)` where `k` is the block's number inside the
/// run (its offset over the pool's block size): the low bits pick hashbrown's slot,
/// the top seven its tag. Registering, hitting or evicting the blocks of one run (a
/// Mooncake hash id is 32 blocks of 16 tokens) then walks neighbouring cache lines
/// instead of missing once per block, which was half of a large replay's time
/// (docs/PERFORMANCE.md, issue #16). Lookups only, like every table here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunLocal {
    per_block: PerBlock,
}

/// Offset → block number: a shift for the usual power-of-two block sizes (a
/// division per hashed key would cost more than the probe it spares), else a
/// division.
#[derive(Clone, Copy, Debug)]
enum PerBlock {
    Shift(u32),
    Div(u64),
}

impl PerBlock {
    #[inline]
    fn of(self, offset: u64) -> u64 {
        match self {
            PerBlock::Shift(s) => offset >> s,
            PerBlock::Div(d) => offset / d,
        }
    }
}

impl RunLocal {
    /// For a pool of `block` units a block (at least 1).
    pub(crate) fn new(block: u64) -> RunLocal {
        let block = block.max(1);
        RunLocal {
            per_block: if block.is_power_of_two() {
                PerBlock::Shift(block.trailing_zeros())
            } else {
                PerBlock::Div(block)
            },
        }
    }
}

impl std::hash::BuildHasher for RunLocal {
    type Hasher = RunLocalHasher;

    #[inline]
    fn build_hasher(&self) -> RunLocalHasher {
        RunLocalHasher {
            per_block: self.per_block,
            hash: 0,
            words: 0,
        }
    }
}

/// See [`RunLocal`]. The first word written is the run, the second the offset (the
/// field order of `BlockKey`'s derived `Hash`); any other input is mixed as
/// [`FxHasher`] mixes it, so the hasher stays correct (only less local) for other keys.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunLocalHasher {
    per_block: PerBlock,
    hash: u64,
    words: u8,
}

impl Hasher for RunLocalHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut fx = FxHasher { hash: self.hash };
        fx.write(bytes);
        self.hash = fx.hash;
        self.words = 2;
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        match self.words {
            0 => {
                // The product's low bits depend only on the run id's low bits; fold
                // the high half down so ids alike there (multiples of 2^16, say)
                // still start in different slots.
                let m = n.wrapping_mul(SEED);
                self.hash = m ^ (m >> 32);
            }
            1 => {
                let k = self.per_block.of(n);
                self.hash = self.hash.wrapping_add(k).wrapping_add(k << 57);
            }
            _ => {
                let mut fx = FxHasher { hash: self.hash };
                fx.add(n);
                self.hash = fx.hash;
            }
        }
        self.words = self.words.saturating_add(1);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub(crate) type RunLocalMap<K, V> = HashMap<K, V, RunLocal>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;
    use crate::types::{BlockKey, RunId};

    #[test]
    fn run_local_puts_a_runs_blocks_in_consecutive_slots_with_distinct_tags() {
        let b = RunLocal::new(16);
        let h = |run, offset| {
            b.hash_one(BlockKey {
                run: RunId(run),
                offset,
            })
        };
        let first = h(7, 15);
        for k in 1..32u64 {
            let x = h(7, 15 + 16 * k);
            // Slot: the low bits step by one block.
            assert_eq!(x.wrapping_sub(first) & 0xffff, k, "block {k}");
            // Tag: hashbrown's top seven bits differ between neighbours.
            assert_ne!(x >> 57, h(7, 15 + 16 * (k - 1)) >> 57, "block {k}");
        }
        // A block size that is not a power of two numbers blocks the same way.
        let b3 = RunLocal::new(3);
        let h3 = |offset| {
            b3.hash_one(BlockKey {
                run: RunId(7),
                offset,
            })
        };
        assert_eq!(h3(2 + 3 * 5).wrapping_sub(h3(2)) & 0xffff, 5);
        // Another run starts somewhere else, also one whose id differs only in its
        // high bits.
        assert_ne!(h(8, 15) & 0xffff, first & 0xffff);
        assert_ne!(h(7 + (1 << 40), 15) & 0xffff, first & 0xffff);
    }
}
