//! Observable events of a pool member, and the notices a host must act on. The event
//! log is off by default and costs one branch per event when off; it is what the
//! differential tests compare. Notices are the subset a host needs to drive its
//! sessions (who was admitted, grown or preempted) and are always kept.

use crate::config::{PoolRef, StageRef};
use crate::types::{BlockKey, EntryId, SessionId, Units};

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A hold entered the queue (not logged for a rejected hold).
    Enqueue { session: SessionId },
    /// R5: the hold can never fit; it never entered the queue.
    Reject { session: SessionId },
    /// A waiting hold was admitted, hitting `hit` units and allocating `units`.
    Admit {
        session: SessionId,
        hit: Units,
        units: Units,
    },
    /// A holder grew by `by` units (directly, or when a waiting grow was retried).
    Grow { session: SessionId, by: Units },
    /// `preempt none`: the grow did not fit; the holder waits.
    GrowWait { session: SessionId },
    /// `preempt lifo`: the holder was released with its computed prefix cached and
    /// re-entered the head of the queue.
    Preempt { session: SessionId, cached: Units },
    /// One block left the cache from the tail of `entry` (R10).
    Evict {
        entry: EntryId,
        session: SessionId,
        key: BlockKey,
        units: Units,
    },
    /// The holder ended its hold; `cached` units became a new entry (R14).
    Release { session: SessionId, cached: Units },
    /// R12: the block just evicted is written to the tier, putting `work` on the
    /// link (logged right after its `Evict`).
    Spill {
        entry: EntryId,
        session: SessionId,
        key: BlockKey,
        units: Units,
        work: f64,
    },
}

/// One logged event with the pool's state right after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub event: Event,
    pub allocated: Units,
    pub cached: Units,
    pub queued: usize,
}

/// What the host learns from an operation beyond its return value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Notice {
    /// The hold was admitted: it holds `units`, of which `hit` were found computed.
    Admitted {
        session: SessionId,
        hit: Units,
        units: Units,
    },
    /// A waiting grow (`preempt none`) completed.
    Grown { session: SessionId, by: Units },
    /// The holder was preempted and waits again at the head of the queue; a step
    /// host takes its job off the stage.
    Preempted { session: SessionId },
    /// R12: put `work` on `link`; when the write completes, the block (`key`, of
    /// `session`'s entry released at `last`) joins `tier`'s cache.
    Spill {
        session: SessionId,
        key: BlockKey,
        last: f64,
        units: Units,
        work: f64,
        tier: PoolRef,
        link: StageRef,
    },
}
