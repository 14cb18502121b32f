//! Where each session a pool member knows is: waiting (its queue slot) or holding
//! (its holder slot), in one map, so that an enqueue's two checks (not holding, not
//! waiting) take one probe and an admission turns the waiting session into a holder
//! in place instead of removing it from one map and inserting it into another
//! (issue #35 item 3: the second map cost the 1-block admission path about 120
//! instructions an admission, docs/PERFORMANCE.md). It keeps the places; the queue
//! and the holders keep what is at them.

use std::collections::hash_map::Entry as MapEntry;

use crate::hash::FxMap;
use crate::queue::WaitSlot;
use crate::types::SessionId;

use super::holders::HolderSlot;

/// Where a known session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Waiting(WaitSlot),
    Holding(HolderSlot),
}

#[derive(Debug, Default)]
pub(super) struct Sessions {
    of: FxMap<SessionId, Place>,
    /// How many of them wait (the rest hold).
    waiting: usize,
}

impl Sessions {
    #[inline]
    fn place(&self, session: SessionId) -> Option<Place> {
        self.of.get(&session).copied()
    }

    #[inline]
    pub fn waiting_slot(&self, session: SessionId) -> Option<WaitSlot> {
        match self.place(session)? {
            Place::Waiting(slot) => Some(slot),
            Place::Holding(_) => None,
        }
    }

    #[inline]
    pub fn holder_slot(&self, session: SessionId) -> Option<HolderSlot> {
        match self.place(session)? {
            Place::Holding(slot) => Some(slot),
            Place::Waiting(_) => None,
        }
    }

    /// Sessions waiting.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Sessions holding.
    pub fn holding(&self) -> usize {
        self.of.len() - self.waiting
    }

    /// A session new to the pool, in one probe: its vacancy, which
    /// [`Vacancy::wait`] fills, or `None` when the session waits or holds already.
    #[inline]
    pub fn enter(&mut self, session: SessionId) -> Option<Vacancy<'_>> {
        match self.of.entry(session) {
            MapEntry::Occupied(_) => None,
            MapEntry::Vacant(v) => Some(Vacancy {
                v,
                waiting: &mut self.waiting,
            }),
        }
    }

    /// A waiting session now holds at `slot`.
    #[inline]
    pub fn admitted(&mut self, session: SessionId, slot: HolderSlot) {
        let place = self
            .of
            .get_mut(&session)
            .expect("an admitted session waited");
        debug_assert!(matches!(place, Place::Waiting(_)), "admitted twice");
        *place = Place::Holding(slot);
        self.waiting -= 1;
    }

    /// A holding session waits again at `slot` (preemption, R13).
    pub fn requeued(&mut self, session: SessionId, slot: WaitSlot) {
        let place = self.of.get_mut(&session).expect("a preempted session held");
        debug_assert!(matches!(place, Place::Holding(_)), "requeued while waiting");
        *place = Place::Waiting(slot);
        self.waiting += 1;
    }

    /// A holding session leaves the pool: its holder slot.
    #[inline]
    pub fn released(&mut self, session: SessionId) -> Option<HolderSlot> {
        match self.of.entry(session) {
            MapEntry::Occupied(o) => match *o.get() {
                Place::Holding(slot) => {
                    o.remove();
                    Some(slot)
                }
                Place::Waiting(_) => None,
            },
            MapEntry::Vacant(_) => None,
        }
    }
}

/// A session's place, free: [`Sessions::enter`] found it unknown.
pub(super) struct Vacancy<'a> {
    v: std::collections::hash_map::VacantEntry<'a, SessionId, Place>,
    waiting: &'a mut usize,
}

impl Vacancy<'_> {
    /// The session waits at `slot`.
    #[inline]
    pub fn wait(self, slot: WaitSlot) {
        self.v.insert(Place::Waiting(slot));
        *self.waiting += 1;
    }
}
