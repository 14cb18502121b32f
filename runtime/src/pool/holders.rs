//! The holders of one pool member: each hold's units, computed prefix and blocks
//! ([`Holder`], with the keys of its registered blocks: the block table keeps
//! none), a slab of them, and the admission order as a list through the
//! slots (R13 `lifo` takes its victims from the latest end, R18
//! scans it from the earliest; linking and unlinking allocate nothing). It stores
//! holders and keeps the order; it does not touch the block table, decide fits or
//! choose victims (`grow.rs` does), and it does not map sessions to slots
//! (`sessions.rs` does).

use crate::types::{BlockId, BlockKey, Header, SessionId};

/// A holder's slot in the slab (stable while it holds; reused after it leaves).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HolderSlot(u32);

impl HolderSlot {
    /// "No holder" at either end of the admission-order list.
    const NIL: HolderSlot = HolderSlot(u32::MAX);

    fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Debug)]
pub(super) struct Holder {
    pub session: SessionId,
    /// Reserve, chain and hit cap as enqueued; its `units` is the admission's.
    pub header: Header,
    /// Units held now (admission plus grows).
    pub units: u64,
    pub computed: u64,
    /// Physical blocks, chain order: the hold's blocks inside its chain's known
    /// content. The rest of its blocks are anonymous (counted only).
    pub blocks: Vec<BlockId>,
    pub anonymous: u64,
    /// Leading blocks already considered for registration (registered, or beyond
    /// the chain).
    pub keyed: u64,
    pub pending_grow: Option<u64>,
    /// When it was admitted (R18 `admitted`).
    pub admitted: f64,
    /// Its first enqueue's place in the enqueue order, kept across preemptions
    /// (R19's tie rule).
    pub seq: u64,
    /// Its place in the admission order ([`Holders`] keeps it; a new holder starts
    /// with `Default::default()`).
    pub order: Links,
}

/// A holder's neighbours in admission order, for LIFO victims.
#[derive(Clone, Copy, Debug)]
pub(super) struct Links {
    earlier: HolderSlot,
    later: HolderSlot,
}

impl Default for Links {
    fn default() -> Links {
        Links {
            earlier: HolderSlot::NIL,
            later: HolderSlot::NIL,
        }
    }
}

impl Holder {
    /// Blocks held, physical and anonymous.
    pub fn held_blocks(&self) -> u64 {
        self.blocks.len() as u64 + self.anonymous
    }

    /// The keys of its registered blocks, the first `keyed` (R7): its chain's. The
    /// block table keeps no key per block (docs/PERFORMANCE.md, "Block records of
    /// one word").
    pub fn registered_keys(&self, block: u64) -> impl Iterator<Item = BlockKey> + '_ {
        self.header
            .chain
            .block_keys(block)
            .take(self.keyed as usize)
    }
}

#[derive(Debug)]
pub(super) struct Holders {
    slots: Vec<Option<Holder>>,
    free: Vec<HolderSlot>,
    /// Slots in use.
    len: usize,
    /// Ends of the admission order (NIL when nobody holds).
    first: HolderSlot,
    last: HolderSlot,
}

impl Default for Holders {
    fn default() -> Holders {
        Holders {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            first: HolderSlot::NIL,
            last: HolderSlot::NIL,
        }
    }
}

impl Holders {
    /// Holders here.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, slot: HolderSlot) -> &Holder {
        self.slots[slot.index()]
            .as_ref()
            .expect("holder slot in use")
    }

    pub fn get_mut(&mut self, slot: HolderSlot) -> &mut Holder {
        self.slots[slot.index()]
            .as_mut()
            .expect("holder slot in use")
    }

    /// Every holder, in slot order (for invariant checks).
    pub fn iter(&self) -> impl Iterator<Item = &Holder> {
        self.slots.iter().flatten()
    }

    /// Holders in admission order, the earliest first (R18's tie order).
    pub fn earliest_first(&self) -> impl Iterator<Item = &Holder> {
        let mut at = self.first;
        std::iter::from_fn(move || {
            if at == HolderSlot::NIL {
                return None;
            }
            let h = self.get(at);
            at = h.order.later;
            Some(h)
        })
    }

    /// Holders from the most recently admitted back.
    pub fn latest_first(&self) -> impl Iterator<Item = &Holder> {
        let mut at = self.last;
        std::iter::from_fn(move || {
            if at == HolderSlot::NIL {
                return None;
            }
            let h = self.get(at);
            at = h.order.earlier;
            Some(h)
        })
    }

    /// How many holders the admission-order list links (for invariant checks).
    pub fn listed(&self) -> usize {
        let mut listed = 0;
        let mut at = self.first;
        while at != HolderSlot::NIL {
            listed += 1;
            at = self.get(at).order.later;
        }
        listed
    }

    /// A new holder, last in admission order.
    #[inline]
    pub fn admit(&mut self, mut h: Holder) -> HolderSlot {
        h.order = Links {
            earlier: self.last,
            later: HolderSlot::NIL,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s.index()] = Some(h);
                s
            }
            None => {
                self.slots.push(Some(h));
                HolderSlot(u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 holders"))
            }
        };
        self.len += 1;
        if self.last == HolderSlot::NIL {
            self.first = slot;
        } else {
            self.get_mut(self.last).order.later = slot;
        }
        self.last = slot;
        slot
    }

    /// Takes a holder out of the slab and the admission order.
    pub fn remove(&mut self, slot: HolderSlot) -> Holder {
        self.len -= 1;
        // The links are read in the slot: read from the moved-out copy, they
        // waited for the copy's stores to reach the cache (a store-forwarding
        // stall in every release, docs/PERFORMANCE.md).
        let Links { earlier, later } = self.get(slot).order;
        let h = self.slots[slot.index()].take().expect("holder slot in use");
        self.free.push(slot);
        if earlier == HolderSlot::NIL {
            self.first = later;
        } else {
            self.get_mut(earlier).order.later = later;
        }
        if later == HolderSlot::NIL {
            self.last = earlier;
        } else {
            self.get_mut(later).order.earlier = earlier;
        }
        h
    }
}
