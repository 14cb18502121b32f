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
    /// R12 tier hit: the hold just admitted (logged right after its `Admit`) loads
    /// `units` from the tier, putting `work` on the link (as `Notice::TierLoad`).
    TierLoad {
        session: SessionId,
        units: Units,
        work: f64,
    },
    /// R12, the tier side: a spilled block (`units`, one block) was written here and
    /// joined `entry` of the cache (after the evictions that made room for it). Not
    /// logged for a duplicate key or a pool with no room.
    Store {
        entry: EntryId,
        session: SessionId,
        key: BlockKey,
        units: Units,
    },
}

impl Event {
    /// The event's name: the log's `ev` (docs/TRACES.md), and the Python package's.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Enqueue { .. } => "enqueue",
            Event::Reject { .. } => "reject",
            Event::Admit { .. } => "admit",
            Event::Grow { .. } => "grow",
            Event::GrowWait { .. } => "grow_wait",
            Event::Preempt { .. } => "preempt",
            Event::Evict { .. } => "evict",
            Event::Release { .. } => "release",
            Event::Spill { .. } => "spill",
            Event::TierLoad { .. } => "tier_load",
            Event::Store { .. } => "store",
        }
    }
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
    /// R12 tier hit: the admitted hold found `units` beyond its own hit in `tier`
    /// (blocks allocated here but not computed). Put `work` on `link`; when the load
    /// completes, set the hold's computed to its hit plus `units`.
    TierLoad {
        session: SessionId,
        units: Units,
        work: f64,
        tier: PoolRef,
        link: StageRef,
    },
}

/// Running totals of a pool member's events, kept whether or not the log is on (a
/// host's report reads them). Units are summed as given in the events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub enqueued: u64,
    pub rejected: u64,
    pub admissions: u64,
    /// Units hit, summed over admissions.
    pub hit_units: u64,
    pub grows: u64,
    pub grow_waits: u64,
    pub preemptions: u64,
    pub releases: u64,
    /// Blocks evicted (one per Evict moment, R10).
    pub evictions: u64,
    /// Evicted blocks written to a tier (R12).
    pub spills: u64,
    /// Blocks a pool accepted as a tier ([`crate::Pool::accept_spill`]).
    pub stored: u64,
    /// Admissions with a tier hit, and the units they load.
    pub tier_loads: u64,
    pub tier_load_units: u64,
}

impl Counters {
    pub(crate) fn count(&mut self, event: &Event) {
        match event {
            Event::Enqueue { .. } => self.enqueued += 1,
            Event::Reject { .. } => self.rejected += 1,
            Event::Admit { hit, .. } => {
                self.admissions += 1;
                self.hit_units += hit.0;
            }
            Event::Grow { .. } => self.grows += 1,
            Event::GrowWait { .. } => self.grow_waits += 1,
            Event::Preempt { .. } => self.preemptions += 1,
            Event::Evict { .. } => self.evictions += 1,
            Event::Release { .. } => self.releases += 1,
            Event::Spill { .. } => self.spills += 1,
            Event::TierLoad { units, .. } => {
                self.tier_loads += 1;
                self.tier_load_units += units.0;
            }
            Event::Store { .. } => self.stored += 1,
        }
    }
}
