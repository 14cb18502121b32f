//! The waiting holds of one pool member (R8): a slab of holds, their enqueue order
//! (a preempted hold under `requeue keyed` goes back to its first place in it, R19),
//! the preempted stack ahead of them (the most recently preempted on top), and — for
//! `queue by` keys that read only fixed inputs — an ordered index: an 8-ary heap on
//! (keys in E5 order, enqueue order) whose keys were computed once, at enqueue or when
//! the host said a hold's inputs changed. It stores and orders holds; it does not
//! evaluate keys (`pool/` does, through the compiled functions) and never decides
//! fits.

// Indexing here is by the engine's own slab slots, block ids and loop counters over
// its own scratch buffers, each made by the structure it indexes: an index out of
// range is a broken invariant (the tests check the engine's invariants after every
// operation), not bad input, so it panics (STYLE.md 7). The workspace denies
// `indexing_slicing` elsewhere; the engine's hot loops index on purpose.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;

use crate::types::{Header, SessionId};

/// A waiting hold's slot in the queue's slab (stable while it waits; reused after
/// it leaves).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitSlot(u32);

impl WaitSlot {
    fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Waiting {
    pub session: SessionId,
    pub header: Header,
    /// When the hold entered the queue (its latest entry: `waited` resets, S2).
    pub enqueued: f64,
    /// Enqueue order, the tie rule of R8.
    pub seq: u64,
}

/// Which waiting hold a selection picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The top of the preempted stack.
    Preempted,
    /// Index into the enqueue-order list (fifo and scanned keys).
    Queued(usize),
    /// The least hold of the ordered index.
    Indexed,
}

/// A key as a `u64` whose unsigned order is E5's: NaN greatest and equal to every
/// NaN, −0 equal to +0, numbers by value (the sign bit flipped for positives, every
/// bit for negatives).
fn e5_bits(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    let b = if x == 0.0 { 0 } else { x.to_bits() };
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// Children per node of the index's heap: a wide heap is shallow, and a node's
/// children are adjacent records (a few cache lines that the prefetcher streams),
/// where a binary heap of 100,000 holds takes a cache miss on most of its 17 levels.
const ARITY: usize = 8;

/// Keys computed once per hold, and a min-heap on them. Each heap record
/// holds a copy of the keys it was filed under (as [`e5_bits`]), the hold's enqueue
/// order, its slot and the filing's version, inline: a comparison reads two records
/// of the heap itself and compares words, so a sift touches one contiguous array.
/// A hold whose keys change is simply filed again under a new version: the old
/// record keeps its old keys — the heap stays ordered — and is dropped when it
/// reaches the top (lazy deletion). Nothing is searched for or moved.
#[derive(Debug)]
struct KeyIndex {
    nkeys: usize,
    /// Per waiting slot: the version of its current filing.
    version: Vec<u32>,
    /// Records of `nkeys + 2` words: the keys, the enqueue order (the tie rule, R8),
    /// then `slot << 32 | version`; heap-ordered on the first `nkeys + 1` words.
    heap: Vec<u64>,
}

impl KeyIndex {
    fn new(nkeys: usize) -> KeyIndex {
        KeyIndex {
            nkeys,
            version: Vec::new(),
            heap: Vec::new(),
        }
    }

    fn stride(&self) -> usize {
        self.nkeys + 2
    }

    fn records(&self) -> usize {
        self.heap.len() / self.stride()
    }

    /// E5 on the keys, then enqueue order (R8).
    fn less(&self, a: usize, b: usize) -> bool {
        let (s, n) = (self.stride(), self.nkeys + 1);
        self.heap[a * s..a * s + n] < self.heap[b * s..b * s + n]
    }

    fn swap(&mut self, a: usize, b: usize) {
        let s = self.stride();
        for k in 0..s {
            self.heap.swap(a * s + k, b * s + k);
        }
    }

    /// Files `slot` under `keys` as its newest version.
    fn file(&mut self, slot: WaitSlot, seq: u64, keys: impl Iterator<Item = f64>) {
        let v = &mut self.version[slot.index()];
        *v = v.wrapping_add(1);
        let tag = u64::from(slot.0) << 32 | u64::from(*v);
        let start = self.heap.len();
        self.heap.extend(keys.take(self.nkeys).map(e5_bits));
        // A key list shorter than promised would shift the record; pad it (the
        // engine always gives `nkeys` keys).
        self.heap.resize(start + self.nkeys, e5_bits(f64::NAN));
        self.heap.push(seq);
        self.heap.push(tag);
        let mut i = self.records() - 1;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !self.less(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    /// Removes the heap's least record.
    fn pop(&mut self) {
        let n = self.records();
        if n == 0 {
            return;
        }
        self.swap(0, n - 1);
        let s = self.stride();
        self.heap.truncate((n - 1) * s);
        let n = n - 1;
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            let mut least = i;
            for c in first..(first + ARITY).min(n) {
                if self.less(c, least) {
                    least = c;
                }
            }
            if least == i {
                break;
            }
            self.swap(i, least);
            i = least;
        }
    }

    /// Drops stale records from the top; the slot of the least live hold.
    fn top(&mut self) -> Option<WaitSlot> {
        while self.records() > 0 {
            let tag = self.heap[self.nkeys + 1];
            let (slot, version) = (WaitSlot((tag >> 32) as u32), tag as u32);
            if self.version[slot.index()] == version {
                return Some(slot);
            }
            self.pop();
        }
        None
    }

    /// The slot leaves the queue: every filing of it is stale from now on.
    fn forget(&mut self, slot: WaitSlot) {
        let v = &mut self.version[slot.index()];
        *v = v.wrapping_add(1);
    }
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    slots: Vec<Option<Waiting>>,
    free: Vec<WaitSlot>,
    /// Enqueue order (oldest first) of holds that are not preempted; unused when
    /// the index orders them.
    fifo: VecDeque<WaitSlot>,
    /// Preempted holds; the last is the most recently preempted and goes first.
    preempted: Vec<WaitSlot>,
    index: Option<KeyIndex>,
    next_seq: u64,
    len: usize,
}

impl Queue {
    /// A queue whose non-preempted holds are ordered by `nkeys` precomputed keys.
    pub fn indexed(nkeys: usize) -> Queue {
        Queue {
            index: Some(KeyIndex::new(nkeys)),
            ..Queue::default()
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    pub fn has_preempted(&self) -> bool {
        !self.preempted.is_empty()
    }

    fn store(&mut self, session: SessionId, header: Header, enqueued: f64) -> WaitSlot {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.store_at(session, header, enqueued, seq)
    }

    /// Stores a hold under a given place in the enqueue order.
    fn store_at(
        &mut self,
        session: SessionId,
        header: Header,
        enqueued: f64,
        seq: u64,
    ) -> WaitSlot {
        let w = Waiting {
            session,
            header,
            enqueued,
            seq,
        };
        self.len += 1;
        match self.free.pop() {
            Some(s) => {
                self.slots[s.index()] = Some(w);
                s
            }
            None => {
                self.slots.push(Some(w));
                let s = u32::try_from(self.slots.len() - 1)
                    .ok()
                    .filter(|&s| s != u32::MAX)
                    .map(WaitSlot)
                    .expect("fewer than 2^32 - 1 waiting holds");
                if let Some(ix) = &mut self.index {
                    ix.version.push(0);
                }
                s
            }
        }
    }

    /// Appends a hold in enqueue order. For an indexed queue the caller must then
    /// give its keys with [`Queue::set_keys`].
    pub fn push(&mut self, session: SessionId, header: Header, enqueued: f64) -> WaitSlot {
        let slot = self.store(session, header, enqueued);
        if self.index.is_none() {
            self.fifo.push_back(slot);
        }
        slot
    }

    /// Pushes a preempted hold on top of the stack (R8: ahead of every key).
    pub fn push_preempted(
        &mut self,
        session: SessionId,
        header: Header,
        enqueued: f64,
    ) -> WaitSlot {
        let slot = self.store(session, header, enqueued);
        self.preempted.push(slot);
        slot
    }

    /// Puts a preempted hold back among the others under its first enqueue's place
    /// `seq` (R19: ordered by its keys like any waiting hold, ties by that place).
    /// For an indexed queue the caller must then give its keys with
    /// [`Queue::set_keys`].
    pub fn push_requeued(
        &mut self,
        session: SessionId,
        header: Header,
        enqueued: f64,
        seq: u64,
    ) -> WaitSlot {
        let slot = self.store_at(session, header, enqueued, seq);
        if self.index.is_none() {
            // Enqueue order is seq order; preemption is rare, so an O(n) insert.
            let at = self.fifo.partition_point(|&s| self.get_slot(s).seq < seq);
            self.fifo.insert(at, slot);
        }
        slot
    }

    /// (Re)files an indexed hold under new keys.
    pub fn set_keys(&mut self, slot: WaitSlot, keys: impl Iterator<Item = f64>) {
        let seq = self.get_slot(slot).seq;
        self.index
            .as_mut()
            .expect("set_keys on an indexed queue")
            .file(slot, seq, keys);
    }

    #[inline]
    pub fn get_slot(&self, slot: WaitSlot) -> &Waiting {
        self.slots[slot.index()]
            .as_ref()
            .expect("waiting slot in use")
    }

    pub fn get_slot_mut(&mut self, slot: WaitSlot) -> &mut Waiting {
        self.slots[slot.index()]
            .as_mut()
            .expect("waiting slot in use")
    }

    /// Whether the slot holds a preempted hold (not in the enqueue order or index).
    pub fn is_preempted(&self, slot: WaitSlot) -> bool {
        self.preempted.contains(&slot)
    }

    /// The holds in enqueue order (fifo and scanned keys).
    pub fn fifo_len(&self) -> usize {
        self.fifo.len()
    }

    pub fn fifo_iter(&self) -> impl Iterator<Item = &Waiting> {
        self.fifo.iter().map(|&s| self.get_slot(s))
    }

    /// The least hold of the index (dropping stale entries on the way).
    pub fn index_top(&mut self) -> Option<WaitSlot> {
        self.index.as_mut().and_then(KeyIndex::top)
    }

    fn slot_of(&mut self, pick: Pick) -> WaitSlot {
        match pick {
            Pick::Preempted => *self.preempted.last().expect("picked an empty stack"),
            Pick::Queued(i) => self.fifo[i],
            Pick::Indexed => self.index_top().expect("picked an empty index"),
        }
    }

    pub fn get(&mut self, pick: Pick) -> &Waiting {
        let slot = self.slot_of(pick);
        self.get_slot(slot)
    }

    pub fn take(&mut self, pick: Pick) -> Waiting {
        let slot = match pick {
            Pick::Preempted => self.preempted.pop().expect("picked an empty stack"),
            Pick::Queued(i) => self.fifo.remove(i).expect("picked index in range"),
            Pick::Indexed => {
                let ix = self.index.as_mut().expect("picked from an index");
                let slot = ix.top().expect("picked an empty index");
                ix.pop();
                ix.forget(slot);
                slot
            }
        };
        self.len -= 1;
        self.free.push(slot);
        self.slots[slot.index()]
            .take()
            .expect("waiting slot in use")
    }

    /// Every waiting hold, in no particular order (for counts).
    pub fn iter_any(&self) -> impl Iterator<Item = &Waiting> {
        self.slots.iter().flatten()
    }

    /// Every waiting hold: preempted (most recent first), then enqueue order.
    pub fn in_order(&self) -> Vec<&Waiting> {
        let mut rest: Vec<&Waiting> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(s, _)| !self.preempted.contains(&WaitSlot(*s as u32)))
            .filter_map(|(_, w)| w.as_ref())
            .collect();
        rest.sort_by_key(|w| w.seq);
        self.preempted
            .iter()
            .rev()
            .map(|&s| self.get_slot(s))
            .chain(rest)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::e5_bits;

    /// E5 order of one key, written out: −0 == +0; NaN after every number and equal
    /// to NaN.
    fn e5(a: f64, b: f64) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
        }
    }

    #[test]
    fn e5_bits_order_is_e5() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.0,
            -1.0,
            -0.5,
            -f64::MIN_POSITIVE,
            -5e-324,
            -0.0,
            0.0,
            5e-324,
            f64::MIN_POSITIVE,
            0.5,
            1.0,
            3.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff8_0000_0000_0001),
        ];
        for &a in &xs {
            for &b in &xs {
                assert_eq!(e5_bits(a).cmp(&e5_bits(b)), e5(a, b), "{a:?} vs {b:?}");
            }
        }
    }
}
