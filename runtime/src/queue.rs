//! The waiting holds of one pool member (R8): a slab of holds, their enqueue order
//! (a preempted hold under `requeue keyed` goes back to its first place in it, R19),
//! the preempted stack ahead of them (the most recently preempted on top), and — for
//! `queue by` keys that read only fixed inputs — an ordered index on (keys in E5
//! order, enqueue order): a few lanes of records in order, each a queue, and an
//! 8-ary heap for the filings no lane takes, whose keys were computed once, at
//! enqueue or when the host said a hold's inputs changed. It stores and orders
//! holds; it does not evaluate keys (`pool/` does, through the compiled functions)
//! and never decides fits.

// Indexing here is by the engine's own slab slots, block ids and loop counters over
// its own scratch buffers, each made by the structure it indexes: an index out of
// range is a broken invariant (the tests check the engine's invariants after every
// operation), not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The workspace denies
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

/// Most lanes the index keeps; a filing that fits none goes to the heap. Keys with
/// few distinct leading values, filed in enqueue order (`(priority, serial)`: a lane
/// per priority level), need as many lanes as there are levels.
const LANES: usize = 8;

/// Whether record `a`'s keys and enqueue order come before `b`'s: E5 on the keys,
/// then enqueue order (R8), the first `n` words of each.
fn record_less(a: &[u64], b: &[u64], n: usize) -> bool {
    a[..n] < b[..n]
}

/// A run of records in order (none before its predecessor), taken from the head and
/// filed at the tail: a queue of its own, read front to back.
#[derive(Debug, Default)]
struct Lane {
    /// Records of the index's stride; those before `head` have left.
    words: Vec<u64>,
    head: usize,
}

impl Lane {
    fn head(&self, stride: usize) -> Option<&[u64]> {
        self.words.get(self.head..self.head + stride)
    }

    fn tail(&self, stride: usize) -> Option<&[u64]> {
        (self.head < self.words.len()).then(|| &self.words[self.words.len() - stride..])
    }

    fn pop(&mut self, stride: usize) {
        self.head += stride;
        if self.head == self.words.len() {
            self.words.clear();
            self.head = 0;
        } else if 2 * self.head >= self.words.len() {
            // Moving the live half down costs a word per word taken, and the lane's
            // buffer never grows past twice its records.
            self.words.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Where the least live record of the index is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Least {
    /// At the top of the heap.
    Heap,
    /// At the head of this lane.
    Lane(usize),
}

/// Keys computed once per hold, ordered for taking the least. Each record holds a
/// copy of the keys it was filed under (as [`e5_bits`]), the hold's enqueue order,
/// its slot and the filing's version, inline: a comparison reads two records and
/// compares words, so ordering touches contiguous arrays and never a hold's slot.
///
/// A filing is appended to a lane — the one with the greatest tail not above it
/// (patience sorting: each lane stays in order, and a stream needs as many lanes as
/// its longest strictly decreasing subsequence) — or, when it fits no lane and
/// [`LANES`] are in use, pushed on a min-heap. The least hold is the least of the lanes' heads and
/// the heap's top, so where a record is kept never changes the order (R8). Lanes
/// make `(priority, serial)` a few queues: O(1) and in address order, where the
/// heap takes a cache miss per level at 100,000 holds. A hold whose keys change is
/// filed again under a new version; its old record keeps its old keys — lanes and
/// heap stay ordered — and is dropped when it reaches a head or the top (lazy
/// deletion): nothing is searched for.
#[derive(Debug)]
struct KeyIndex {
    nkeys: usize,
    /// Per waiting slot: the version of its current filing, odd while the slot has
    /// a live record and even once its hold has left.
    version: Vec<u32>,
    /// How many stale records the lanes and the heap hold. While none, no record
    /// is checked against `version`: an admission's selection then reads the lanes'
    /// heads and the heap's top only, not a version per head (a cache miss each at
    /// 100,000 holds).
    stale: usize,
    /// Records of `nkeys + 2` words: the keys, the enqueue order (the tie rule, R8),
    /// then `slot << 32 | version`; heap-ordered on the first `nkeys + 1` words.
    heap: Vec<u64>,
    /// At most [`LANES`], each in order on the same words.
    lanes: Vec<Lane>,
    /// The record being filed.
    record: Vec<u64>,
    /// The least live record, once found and until the records change: an
    /// admission asks for it three times (select, read, take).
    least: Option<Least>,
}

impl KeyIndex {
    fn new(nkeys: usize) -> KeyIndex {
        KeyIndex {
            nkeys,
            version: Vec::new(),
            stale: 0,
            heap: Vec::new(),
            lanes: Vec::with_capacity(LANES),
            record: Vec::with_capacity(nkeys + 2),
            least: None,
        }
    }

    fn stride(&self) -> usize {
        self.nkeys + 2
    }

    fn records(&self) -> usize {
        self.heap.len() / self.stride()
    }

    /// E5 on the keys, then enqueue order (R8), of two heap records.
    fn less(&self, a: usize, b: usize) -> bool {
        let (s, n) = (self.stride(), self.nkeys + 1);
        record_less(&self.heap[a * s..], &self.heap[b * s..], n)
    }

    fn swap(&mut self, a: usize, b: usize) {
        let s = self.stride();
        for k in 0..s {
            self.heap.swap(a * s + k, b * s + k);
        }
    }

    fn is_live(&self, record: &[u64]) -> bool {
        if self.stale == 0 {
            return true;
        }
        let tag = record[self.nkeys + 1];
        self.version[(tag >> 32) as usize] == tag as u32
    }

    /// Files `slot` under `keys` as its newest version.
    fn file(&mut self, slot: WaitSlot, seq: u64, keys: impl Iterator<Item = f64>) {
        let v = &mut self.version[slot.index()];
        if *v & 1 == 1 {
            // Its earlier record is stale from now on.
            self.stale += 1;
            *v = v.wrapping_add(2);
        } else {
            *v = v.wrapping_add(1);
        }
        let tag = u64::from(slot.0) << 32 | u64::from(*v);
        let (s, n) = (self.stride(), self.nkeys + 1);
        let r = &mut self.record;
        r.clear();
        r.extend(keys.take(self.nkeys).map(e5_bits));
        // A key list shorter than promised would shift the record; pad it (the
        // engine always gives `nkeys` keys).
        r.resize(self.nkeys, e5_bits(f64::NAN));
        r.push(seq);
        r.push(tag);
        let (mut fit, mut empty) = (None::<(usize, &[u64])>, None);
        for (l, lane) in self.lanes.iter().enumerate() {
            match lane.tail(s) {
                None => empty = empty.or(Some(l)),
                Some(t)
                    if !record_less(r, t, n) && fit.is_none_or(|(_, f)| record_less(f, t, n)) =>
                {
                    fit = Some((l, t));
                }
                Some(_) => {}
            }
        }
        match fit.map(|(l, _)| l).or(empty) {
            Some(l) => self.lanes[l].words.extend_from_slice(r),
            None if self.lanes.len() < LANES => self.lanes.push(Lane {
                words: r.clone(),
                head: 0,
            }),
            None => {
                self.heap.extend_from_slice(r);
                self.sift_up(self.records() - 1);
            }
        }
        self.least = None;
    }

    fn sift_up(&mut self, mut i: usize) {
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

    fn record_at(&self, at: Least) -> &[u64] {
        let s = self.stride();
        match at {
            Least::Heap => &self.heap[..s],
            Least::Lane(l) => self.lanes[l].head(s).expect("a lane's live head"),
        }
    }

    /// Where the least live record is, dropping stale records from the lanes'
    /// heads and the heap's top on the way.
    fn find_least(&mut self) -> Option<Least> {
        if self.least.is_some() {
            return self.least;
        }
        let (s, n) = (self.stride(), self.nkeys + 1);
        let mut best = None;
        for l in 0..self.lanes.len() {
            while let Some(h) = self.lanes[l].head(s) {
                if self.is_live(h) {
                    if best.is_none_or(|b| record_less(h, self.record_at(b), n)) {
                        best = Some(Least::Lane(l));
                    }
                    break;
                }
                self.lanes[l].pop(s);
                self.stale -= 1;
            }
        }
        while self.records() > 0 {
            if self.is_live(&self.heap[..s]) {
                if best.is_none_or(|b| record_less(&self.heap[..s], self.record_at(b), n)) {
                    best = Some(Least::Heap);
                }
                break;
            }
            self.pop();
            self.stale -= 1;
        }
        self.least = best;
        best
    }

    fn slot_at(&self, at: Least) -> WaitSlot {
        WaitSlot((self.record_at(at)[self.nkeys + 1] >> 32) as u32)
    }

    /// The slot of the least live hold.
    fn top(&mut self) -> Option<WaitSlot> {
        self.find_least().map(|at| self.slot_at(at))
    }

    /// Removes the least live hold (its one live record); its slot.
    fn take(&mut self) -> Option<WaitSlot> {
        let at = self.find_least()?;
        let slot = self.slot_at(at);
        match at {
            Least::Heap => self.pop(),
            Least::Lane(l) => {
                let s = self.stride();
                self.lanes[l].pop(s);
            }
        }
        let v = &mut self.version[slot.index()];
        *v = v.wrapping_add(1);
        self.least = None;
        Some(slot)
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
        self.len += 1;
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
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
        };
        // Written in its slot, not assigned: an assignment drops the old value
        // first, so the new one was built on the stack a word at a time and copied
        // out in wider loads that straddled those words, a store-forwarding stall
        // in every enqueue (docs/PERFORMANCE.md, "Store-forwarding stalls").
        let old = self.slots[s.index()].replace(Waiting {
            session,
            header,
            enqueued,
            seq,
        });
        debug_assert!(old.is_none(), "a free queue slot was in use");
        s
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
            // The head, the usual pick (fifo's every pick), without `remove`'s shifting.
            Pick::Queued(0) => self.fifo.pop_front().expect("picked index in range"),
            Pick::Queued(i) => self.fifo.remove(i).expect("picked index in range"),
            Pick::Indexed => self
                .index
                .as_mut()
                .and_then(KeyIndex::take)
                .expect("picked an empty index"),
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

    use super::{LANES, Pick, Queue, WaitSlot, e5_bits};
    use crate::trace::synthetic::SplitMix64;
    use crate::types::{Chain, Header, SessionId, Units};

    /// Enqueues session `s` in an indexed queue of one key and files it under `key`.
    fn enqueue(q: &mut Queue, s: u64, key: f64) -> WaitSlot {
        let slot = q.push(SessionId(s), Header::new(Units(1), Chain::default()), 0.0);
        q.set_keys(slot, [key].into_iter());
        slot
    }

    /// Takes `n` holds by R8 selection; their sessions in the order taken.
    fn take_n(q: &mut Queue, n: usize) -> Vec<u64> {
        (0..n).map(|_| q.take(Pick::Indexed).session.0).collect()
    }

    /// How many records the index's heap holds (the rest are in its lanes).
    fn heap_records(q: &Queue) -> usize {
        q.index.as_ref().expect("an indexed queue").records()
    }

    /// Session 0 under `first`, then session 1 under 60 (the same lane), then
    /// sessions 2 to `LANES` under 59, 58, …: each below every lane's tail, so each
    /// opens a lane, until all are in use.
    fn fill_lanes(q: &mut Queue, first: f64) {
        enqueue(q, 0, first);
        enqueue(q, 1, 60.0);
        for s in 2..=LANES as u64 {
            enqueue(q, s, 61.0 - s as f64);
        }
        assert_eq!(heap_records(q), 0);
    }

    /// Sessions 1 to `LANES` in key order: 61 − s for s ≥ 2, then 60.
    fn lane_tails_in_order() -> Vec<u64> {
        (2..=LANES as u64).rev().chain([1]).collect()
    }

    #[test]
    fn r8_equal_keys_tie_by_enqueue_order_between_a_lane_and_the_heap() {
        let mut q = Queue::indexed(1);
        fill_lanes(&mut q, 50.0);
        // Below every tail: to the heap, level with session 0 at a lane's head.
        enqueue(&mut q, 100, 50.0);
        assert_eq!(heap_records(&q), 1);
        let mut want = vec![0, 100];
        want.extend(lane_tails_in_order());
        assert_eq!(take_n(&mut q, want.len()), want);
        assert_eq!(q.index_top(), None);
    }

    #[test]
    fn r8_lane_head_below_the_heap_top_is_selected_first() {
        let mut q = Queue::indexed(1);
        fill_lanes(&mut q, 10.0);
        enqueue(&mut q, 100, 50.0);
        enqueue(&mut q, 101, 40.0);
        assert_eq!(heap_records(&q), 2);
        let mut want = vec![0, 101, 100];
        want.extend(lane_tails_in_order());
        assert_eq!(take_n(&mut q, want.len()), want);
    }

    #[test]
    fn r8_filings_beyond_the_lanes_overflow_into_the_heap_in_order() {
        // Keys falling then rising, with repeats: more strictly falling runs than
        // lanes, so the heap takes the rest; taken by key, then enqueue order,
        // wherever each is kept.
        let mut q = Queue::indexed(1);
        let n = 10 * LANES as u64;
        let key = |s: u64| (((n - s) * 7) % 23) as f64;
        for s in 0..n {
            enqueue(&mut q, s, key(s));
        }
        assert!(heap_records(&q) > 0);
        let mut want: Vec<u64> = (0..n).collect();
        want.sort_by(|&a, &b| key(a).total_cmp(&key(b)).then(a.cmp(&b)));
        assert_eq!(take_n(&mut q, n as usize), want);
    }

    #[test]
    fn r8_refiled_hold_is_ordered_by_its_new_keys_and_taken_once() {
        let mut q = Queue::indexed(1);
        let a = enqueue(&mut q, 0, 1.0);
        enqueue(&mut q, 1, 2.0);
        // Its old record stays in its lane, stale: it must neither be selected nor
        // bring the hold out twice.
        q.set_keys(a, [3.0].into_iter());
        assert_eq!(take_n(&mut q, 2), [1, 0]);
        assert_eq!(q.index_top(), None);
    }

    #[test]
    fn r8_taken_hold_frees_its_slot_for_a_new_hold() {
        let mut q = Queue::indexed(1);
        let a = enqueue(&mut q, 0, 1.0);
        enqueue(&mut q, 1, 2.0);
        assert_eq!(take_n(&mut q, 1), [0]);
        // The slot is reused by a later, lesser hold: ordered by its own filing.
        let c = enqueue(&mut q, 2, 0.0);
        assert_eq!(c, a);
        assert_eq!(take_n(&mut q, 2), [2, 1]);
        assert_eq!(q.index_top(), None);
    }

    #[test]
    fn r8_index_matches_a_sorted_list_under_files_refiles_and_takes() {
        // The index against the rule written out: the least (key, enqueue order)
        // of the waiting holds, after random enqueues, refiles and takes; 21 key
        // values, so both the lanes and the heap are in play.
        let mut used_heap = false;
        for seed in 0..20 {
            let mut rng = SplitMix64::new(seed);
            let mut q = Queue::indexed(1);
            // (session, key, enqueue order, slot) of each waiting hold.
            let mut model: Vec<(u64, f64, u64, WaitSlot)> = Vec::new();
            let mut next = 0u64;
            for _ in 0..3000 {
                match rng.range(0, 9) {
                    0..=4 => {
                        let key = rng.range(0, 20) as f64;
                        let slot = enqueue(&mut q, next, key);
                        model.push((next, key, next, slot));
                        next += 1;
                    }
                    5 if !model.is_empty() => {
                        let i = rng.range(0, model.len() as u64 - 1) as usize;
                        let key = rng.range(0, 20) as f64;
                        q.set_keys(model[i].3, [key].into_iter());
                        model[i].1 = key;
                    }
                    _ if !model.is_empty() => {
                        let least = (0..model.len())
                            .min_by(|&a, &b| {
                                let (x, y) = (&model[a], &model[b]);
                                x.1.total_cmp(&y.1).then(x.2.cmp(&y.2))
                            })
                            .expect("not empty");
                        let want = model.swap_remove(least).0;
                        assert_eq!(take_n(&mut q, 1), [want], "seed {seed}");
                    }
                    _ => assert_eq!(q.index_top(), None),
                }
                used_heap |= heap_records(&q) > 0;
            }
            model.sort_by(|x, y| x.1.total_cmp(&y.1).then(x.2.cmp(&y.2)));
            let rest: Vec<u64> = model.iter().map(|m| m.0).collect();
            assert_eq!(take_n(&mut q, rest.len()), rest, "seed {seed}");
            // Emptied, the index has dropped every stale record it counted.
            assert_eq!(q.index_top(), None);
            let ix = q.index.as_ref().expect("an indexed queue");
            assert_eq!((ix.stale, ix.records()), (0, 0), "seed {seed}");
            assert!(ix.lanes.iter().all(|l| l.head(ix.stride()).is_none()));
        }
        assert!(used_heap);
    }

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
