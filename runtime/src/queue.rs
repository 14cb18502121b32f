//! The waiting holds of one pool member (R8): a slab of holds, their enqueue order,
//! the preempted stack ahead of them (the most recently preempted on top), and — for
//! `queue by` keys that read only fixed inputs — an ordered index: a binary heap on
//! (keys in E5 order, enqueue order) whose keys were computed once, at enqueue or when
//! the host said a hold's inputs changed. It stores and orders holds; it does not
//! evaluate keys (`pool.rs` does, through the compiled functions) and never decides
//! fits.

use std::cmp::Ordering;
use std::collections::VecDeque;

use crate::cache::NIL;
use crate::types::{Header, SessionId};

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

/// E5 order of one key: −0 == +0; NaN after every number and equal to NaN.
pub(crate) fn e5(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Keys computed once per hold, and a binary min-heap on them. Each heap entry owns
/// a copy of the keys it was filed under (rows of an arena, recycled), so a hold
/// whose keys change is simply filed again under a new version: the old entry keeps
/// its old keys — the heap stays ordered — and is dropped when it reaches the top
/// (lazy deletion). Nothing is searched for or moved.
#[derive(Debug)]
struct KeyIndex {
    nkeys: usize,
    /// Per waiting slot: the version of its current filing.
    version: Vec<u32>,
    /// Arena of filings: `keys[row * nkeys ..][.. nkeys]`, with the filing's slot,
    /// version and enqueue order.
    keys: Vec<f64>,
    row_slot: Vec<u32>,
    row_version: Vec<u32>,
    row_seq: Vec<u64>,
    free_rows: Vec<u32>,
    /// Arena rows, heap-ordered.
    heap: Vec<u32>,
}

impl KeyIndex {
    fn new(nkeys: usize) -> KeyIndex {
        KeyIndex {
            nkeys,
            version: Vec::new(),
            keys: Vec::new(),
            row_slot: Vec::new(),
            row_version: Vec::new(),
            row_seq: Vec::new(),
            free_rows: Vec::new(),
            heap: Vec::new(),
        }
    }

    /// E5 on the keys, then enqueue order (R8).
    fn less(&self, a: u32, b: u32) -> bool {
        let n = self.nkeys;
        let (ka, kb) = (
            &self.keys[a as usize * n..][..n],
            &self.keys[b as usize * n..][..n],
        );
        for (x, y) in ka.iter().zip(kb) {
            match e5(*x, *y) {
                Ordering::Less => return true,
                Ordering::Greater => return false,
                Ordering::Equal => {}
            }
        }
        self.row_seq[a as usize] < self.row_seq[b as usize]
    }

    /// Files `slot` under `keys` as its newest version.
    fn file(&mut self, slot: u32, seq: u64, keys: impl Iterator<Item = f64>) {
        let n = self.nkeys;
        let row = match self.free_rows.pop() {
            Some(r) => r,
            None => {
                self.keys.resize(self.keys.len() + n, 0.0);
                self.row_slot.push(0);
                self.row_version.push(0);
                self.row_seq.push(0);
                u32::try_from(self.row_slot.len() - 1).expect("fewer than 2^32 filings")
            }
        };
        for (dst, k) in self.keys[row as usize * n..][..n].iter_mut().zip(keys) {
            *dst = k;
        }
        let v = &mut self.version[slot as usize];
        *v = v.wrapping_add(1);
        self.row_slot[row as usize] = slot;
        self.row_version[row as usize] = *v;
        self.row_seq[row as usize] = seq;
        self.heap.push(row);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    /// Removes the heap's least filing and recycles its row.
    fn pop(&mut self) {
        if self.heap.is_empty() {
            return;
        }
        let top = self.heap.swap_remove(0);
        self.free_rows.push(top);
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.less(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < n && self.less(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                break;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// Drops stale filings from the top; the slot of the least live hold.
    fn top(&mut self) -> Option<u32> {
        while let Some(&row) = self.heap.first() {
            let slot = self.row_slot[row as usize];
            if self.version[slot as usize] == self.row_version[row as usize] {
                return Some(slot);
            }
            self.pop();
        }
        None
    }

    /// The slot leaves the queue: every filing of it is stale from now on.
    fn forget(&mut self, slot: u32) {
        let v = &mut self.version[slot as usize];
        *v = v.wrapping_add(1);
    }
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    slots: Vec<Option<Waiting>>,
    free: Vec<u32>,
    /// Enqueue order (oldest first) of holds that are not preempted; unused when
    /// the index orders them.
    fifo: VecDeque<u32>,
    /// Preempted holds; the last is the most recently preempted and goes first.
    preempted: Vec<u32>,
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

    fn store(&mut self, session: SessionId, header: Header, enqueued: f64) -> u32 {
        let w = Waiting {
            session,
            header,
            enqueued,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.len += 1;
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(w);
                s
            }
            None => {
                self.slots.push(Some(w));
                let s = u32::try_from(self.slots.len() - 1)
                    .ok()
                    .filter(|&s| s != NIL)
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
    pub fn push(&mut self, session: SessionId, header: Header, enqueued: f64) -> u32 {
        let slot = self.store(session, header, enqueued);
        if self.index.is_none() {
            self.fifo.push_back(slot);
        }
        slot
    }

    /// Pushes a preempted hold on top of the stack (R8: ahead of every key).
    pub fn push_preempted(&mut self, session: SessionId, header: Header, enqueued: f64) -> u32 {
        let slot = self.store(session, header, enqueued);
        self.preempted.push(slot);
        slot
    }

    /// (Re)files an indexed hold under new keys.
    pub fn set_keys(&mut self, slot: u32, keys: impl Iterator<Item = f64>) {
        let seq = self.get_slot(slot).seq;
        self.index
            .as_mut()
            .expect("set_keys on an indexed queue")
            .file(slot, seq, keys);
    }

    #[inline]
    pub fn get_slot(&self, slot: u32) -> &Waiting {
        self.slots[slot as usize]
            .as_ref()
            .expect("waiting slot in use")
    }

    pub fn get_slot_mut(&mut self, slot: u32) -> &mut Waiting {
        self.slots[slot as usize]
            .as_mut()
            .expect("waiting slot in use")
    }

    /// Whether the slot holds a preempted hold (not in the enqueue order or index).
    pub fn is_preempted(&self, slot: u32) -> bool {
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
    pub fn index_top(&mut self) -> Option<u32> {
        self.index.as_mut().and_then(KeyIndex::top)
    }

    fn slot_of(&mut self, pick: Pick) -> u32 {
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
        self.slots[slot as usize]
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
            .filter(|(s, _)| !self.preempted.contains(&(*s as u32)))
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
