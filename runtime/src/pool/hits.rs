//! Hit walks (R4, R7): which leading blocks of a header's chain have a present copy,
//! counted, watched (so that a blocked head need not be walked again) or collected;
//! the memory of the last walk; and registration of a holder's newly full blocks
//! (blocks are hittable from allocation). Walks only read the block table; they do
//! not claim, allocate or evict (`admit.rs` does).

use crate::cache::{CopyRef, Near, Store, WatchTicket};
use crate::types::{BlockKey, Header, Units};

use super::holders::Holder;

/// The hit walk of the last hold an admission attempt selected and did not admit
/// (blocked, or declined by the host): a step host retries the same head every
/// iteration, and its walk changes only when a key it looked at does (the store's
/// watch filter says when).
#[derive(Clone, Copy, Debug)]
pub(super) struct HitMemo {
    /// The hold's enqueue order: unique to one stay in the queue.
    pub seq: u64,
    pub hit: u64,
    pub shared: u64,
    /// This pool's watch over the walk's keys.
    pub ticket: WatchTicket,
    /// The tier-hit walk after `hit` (R12), once made: the tier's own watch says
    /// when it changes, as this pool's says for `hit`.
    pub tier: Option<TierMemo>,
}

/// The tier-hit run a [`HitMemo`] remembers: the blocks the tier held right after
/// the local hit, and the tier's watch over the keys looked at.
#[derive(Clone, Copy, Debug)]
pub(super) struct TierMemo {
    pub blocks: u64,
    pub ticket: WatchTicket,
}

/// Registers a holder's full blocks of known content that are not yet registered:
/// blocks are hittable from allocation (R7), up to `min(units, chain)`.
pub(super) fn register_new(store: &mut Store, h: &mut Holder, block: u64) {
    let upto = Units(h.units).min(h.header.chain.len()).blocks_down(block);
    if h.keyed >= upto {
        return;
    }
    let ranges = h.header.chain.key_ranges_from(h.keyed, block);
    let new = h
        .blocks
        .get(h.keyed as usize..upto as usize)
        .expect("a holder has a physical block for each full block of known content");
    store.register_all(new, ranges);
    h.keyed = upto;
}

/// The keys a hit walk looks at (R4, R7): the chain's full blocks, head first,
/// within the header's hit limit.
#[inline]
pub(super) fn hit_keys(header: &Header, block: u64) -> impl Iterator<Item = BlockKey> + '_ {
    let limit = header.hit_limit_blocks(block);
    header.chain.block_keys(block).take(limit as usize)
}

/// The blocks a header would hit now (R4, R7): leading chain blocks whose key has a
/// present copy (held or cached), within the header's hit limit. Returns (hit, of
/// which held by holders).
pub(super) fn hit_counts(store: &Store, header: &Header, block: u64) -> (u64, u64) {
    let mut near = Near::default();
    count_hits(header, block, |key| {
        store.lookup_near(key, &mut near).map(|b| store.refs(b))
    })
}

/// [`hit_counts`], adding every key the walk looks at to the watch the caller
/// started (the first missing one included: registering it would lengthen the
/// hit) so that a later attempt on the same header can tell whether the walk
/// would still give the same result, and
/// leaving the hit blocks in `copies` for the admission that takes them (while
/// no watched key changes, neither do they: a block keeps its id while held or
/// cached).
pub(super) fn hit_counts_watched(
    store: &mut Store,
    header: &Header,
    block: u64,
    copies: &mut Vec<CopyRef>,
) -> (u64, u64) {
    copies.clear();
    let mut near = Near::default();
    count_hits(header, block, |key| {
        store.watch_add(key);
        let c = store.lookup_near(key, &mut near)?;
        copies.push(c);
        Some(store.refs(c))
    })
}

/// The walk of [`hit_counts`]: `refs_of` gives the holders of a key's present copy,
/// `None` when there is none (the walk stops there).
#[inline(always)]
fn count_hits(
    header: &Header,
    block: u64,
    mut refs_of: impl FnMut(&BlockKey) -> Option<u32>,
) -> (u64, u64) {
    let mut hit = 0;
    let mut shared = 0;
    for key in hit_keys(header, block) {
        let Some(refs) = refs_of(&key) else { break };
        hit += 1;
        if refs > 0 {
            shared += 1;
        }
    }
    (hit, shared)
}

/// As [`hit_counts`], pushing the hit blocks (earliest registered copies) to `out`.
pub(super) fn collect_hits(store: &Store, header: &Header, block: u64, out: &mut Vec<CopyRef>) {
    let mut near = Near::default();
    for key in hit_keys(header, block) {
        let Some(b) = store.lookup_near(&key, &mut near) else {
            break;
        };
        out.push(b);
    }
}
