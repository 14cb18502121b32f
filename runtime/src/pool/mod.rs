//! One pool member: the operations a host drives (enqueue, settle, grow, set
//! computed, release) and the rules that tie the block table, the cache and the queue
//! together — rejection (R5), fit (R6), sharing (R7), selection and head-of-line
//! blocking (R8), settle (R9), one block per Evict moment (R10), head-side hits (R11),
//! spill and tier hits (R12), grow and preemption (R13), release (R14), attribute
//! snapshots (S3). docs/RUNTIME.md states each procedure step by step; the naive
//! model in runtime/tests/naive/ implements the same text independently.
//!
//! This file owns the [`Pool`] struct, its construction, the steps every operation
//! shares (the time check, the log record, the fit) and the operations' results. The
//! operations live by responsibility: `admit` (enqueue, settle, admission attempts),
//! `select` (which waiting hold goes next, R8), `hits` (hit walks and registration,
//! R4/R7), `evict` (making room, R10), `entry_rows` (what entry keys and the spill
//! read, S2), `grow` (grows and preemption, R13), `release` (releases and new entries,
//! R14), `tier` (the tier side of a spill and tier loads, R12), `attrs` (attributes,
//! live and snapshotted, S3), `holders` (holders in admission order), `inspect`
//! (queries, counters, the log, invariant checks).
//!
//! It must not allocate per admission once warmed up (holders' block lists and the
//! row buffers are recycled), must not let hash-map order reach a result (hash maps
//! here are lookups only), and must not panic on input: only on broken invariants or
//! a host breaking the [`Env`] contract, with a message.

// Indexing here is by the engine's own slab slots, block ids and loop counters over
// its own scratch buffers, each made by the structure it indexes: an index out of
// range is a broken invariant (the tests check the engine's invariants after every
// operation), not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The workspace denies
// `indexing_slicing` elsewhere; the engine's hot loops index on purpose.
#![allow(clippy::indexing_slicing)]

mod admit;
mod attrs;
mod entry_rows;
mod evict;
mod fair;
mod grow;
mod hits;
mod holders;
mod inspect;
mod release;
mod select;
mod sessions;
mod tier;

use std::collections::VecDeque;

use crate::cache::{CopyRef, EntrySlot, HitCounts, Store};
use crate::config::{
    EvictPolicy, PoolConfig, PoolRef, Preempt, QueueIndex, QueuePolicy, QueueTie, Requeue, Site,
    SpillPolicy, check_layout, is_fixed,
};
use crate::error::Error;
use crate::event::{Counters, Event, Notice, Record};
use crate::queue::Queue;
use crate::types::{BlockId, BlockKey, EntryId, Limit, SessionId, Units};

#[cfg(doc)]
use crate::env::Env;

use attrs::Snapshots;
pub use fair::Charge;
use fair::Fair;
use hits::HitMemo;
use holders::Holders;
use sessions::Sessions;

pub use crate::config::ConfigError;

/// What [`Pool::enqueue`] did with a hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    Queued,
    /// R5: `max(units, reserve)` rounded up to blocks exceeds the cap; the session
    /// ends with a `rejected` outcome (the host's business) and nothing changed.
    Rejected,
}

/// What [`Pool::grow`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grown {
    Grown,
    /// The grow did not fit and waits; it is retried at every settle, in the order
    /// grows failed (`preempt none`, or `preempt lifo` with no resident to preempt).
    Waiting,
    /// `preempt lifo` preempted the grower itself; it waits at the head of the queue.
    /// Other victims, if any, are in [`Pool::notices`].
    SelfPreempted,
}

/// A holder as the host may inspect it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldInfo {
    pub units: Units,
    pub computed: Units,
    /// Units of blocks held (a multiple of the block size).
    pub blocks: Units,
    /// A grow waiting to be retried, if any.
    pub pending_grow: Option<Units>,
}

/// A cache entry as tests and hosts may inspect it.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryInfo {
    pub id: EntryId,
    pub session: SessionId,
    pub last: f64,
    /// Keys of its blocks, head first (chain order).
    pub keys: Vec<BlockKey>,
}

/// What one admission attempt did ([`Pool::admit_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Nobody waits.
    Empty,
    /// The selected hold does not fit (R6); nothing else is tried (R8).
    Blocked,
    /// The host declined to give the selected hold any units (no state changed).
    Declined,
    Admitted {
        session: SessionId,
        hit: Units,
        units: Units,
    },
}

/// What an admission attempt would do now ([`Pool::peek_next_tiered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outlook {
    /// It would admit the selected hold.
    Admits,
    /// It would admit nobody (it would return `Empty`, `Blocked` or `Declined`).
    AdmitsNobody,
}

/// What [`Pool::accept_spill`] did with a written block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The block joined this entry of the cache.
    Stored(EntryId),
    /// A block with the same key is already here (held or cached); nothing changed.
    Duplicate,
    /// The pool cannot hold a single block (its cap is below one block).
    NoRoom,
}

/// The hit an admission attempt found ([`Pool::admit_next_tiered`]): units in this
/// pool (held by others or cached), and the units right after them that the tier
/// this pool spills into holds (R12 tier hit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hit {
    pub local: Units,
    pub tier: Units,
}

/// Reused buffers, so that admissions and evictions allocate nothing once warm.
#[derive(Debug, Default)]
struct Scratch {
    /// Rows of a scan (queue or entry site), row-major.
    rows: Vec<f64>,
    ctx: Vec<f64>,
    /// The entries whose rows `rows` holds, in row order.
    slots: Vec<EntrySlot>,
    /// S2 `waiting` per entry slot, and the last waiting hold counted for each.
    counts: Vec<u32>,
    stamps: Vec<u64>,
    /// One waiting hold's hit blocks.
    hits: Vec<CopyRef>,
    /// The hit blocks of the remembered walk (`Pool::memo`), for the admission
    /// that takes them: valid while the memo is (nothing but that walk writes it).
    memo_hits: Vec<CopyRef>,
    /// The candidate victims whose rows `rows` holds (R18), in row order.
    victims: Vec<SessionId>,
    /// Released holders' block lists, for the next admissions.
    spare: Vec<Vec<BlockId>>,
}

/// One pool member. See the module documentation and docs/RUNTIME.md.
#[derive(Debug)]
pub struct Pool {
    me: PoolRef,
    cap: Limit,
    /// `floor(cap / block)`: allocated + cached ≤ cap in whole blocks (R1).
    cap_blocks: Option<u64>,
    block: u64,
    evict: EvictPolicy,
    /// `lru`, or `evict by` keys that read none of `size`, `waiting` and `hits`: one
    /// call's Evict moments may keep their first choice while it lasts (evict.rs).
    evict_stable: bool,
    /// R12's spill, if any, decides alike at each Evict moment of one entry
    /// within a call (evict.rs).
    spills_alike: bool,
    preempt: Preempt,
    requeue: Requeue,
    queue_policy: QueuePolicy,
    queue_tie: QueueTie,
    spill: Option<SpillPolicy>,
    store: Store,
    holders: Holders,
    queue: Queue,
    /// Waiting and holding sessions → their queue or holder slots.
    sessions: Sessions,
    /// Holders whose grow waits, in the order the grows failed.
    pending: VecDeque<SessionId>,
    now: f64,
    snaps: Snapshots,
    scratch: Scratch,
    memo: Option<HitMemo>,
    notices: Vec<Notice>,
    log: Option<Vec<Record>>,
    counters: Counters,
    /// `fair` (R30): service counters per group.
    fair: Option<Fair>,
}

impl Pool {
    pub fn new(config: PoolConfig) -> Result<Pool, ConfigError> {
        if config.block.0 == 0 {
            return Err(ConfigError::ZeroBlock);
        }
        if let QueuePolicy::By { keys, layout } = &config.queue {
            check_layout(Site::Queue, keys.shape(), layout)?;
        }
        let mut entry_layouts = Vec::new();
        if let EvictPolicy::By { keys, layout } = &config.evict {
            check_layout(Site::Entry, keys.shape(), layout)?;
            entry_layouts.push(layout);
        }
        if let Some(spill) = &config.spill {
            check_layout(Site::Entry, spill.fns.shape(), &spill.layout)?;
            entry_layouts.push(&spill.layout);
        }
        if let Preempt::By { keys, layout } = &config.preempt {
            check_layout(Site::Resident, keys.shape(), layout)?;
        }
        let block = config.block.0;
        let queue = match &config.queue {
            QueuePolicy::By { keys, layout }
                if config.queue_index == QueueIndex::Auto
                    && config.queue_tie == QueueTie::Enqueue
                    && is_fixed(layout) =>
            {
                Queue::indexed(keys.len())
            }
            _ => Queue::default(),
        };
        let hit_counts = if entry_layouts.iter().any(|l| {
            l.row
                .iter()
                .any(|i| matches!(i, crate::config::Input::Hits))
        }) {
            HitCounts::Kept
        } else {
            HitCounts::Unread
        };
        Ok(Pool {
            me: config.me,
            cap: config.cap,
            cap_blocks: match config.cap {
                Limit::Finite(u) => Some(u.blocks_down(block)),
                Limit::Unbounded => None,
            },
            block,
            snaps: Snapshots::new(&entry_layouts),
            evict_stable: evict::keeps_its_choice(&config.evict),
            spills_alike: evict::spills_alike(config.spill.as_ref()),
            evict: config.evict,
            preempt: config.preempt,
            requeue: config.requeue,
            queue_policy: config.queue,
            queue_tie: config.queue_tie,
            spill: config.spill,
            store: Store::new(block, hit_counts),
            holders: Holders::default(),
            queue,
            sessions: Sessions::default(),
            pending: VecDeque::new(),
            now: f64::NEG_INFINITY,
            scratch: Scratch::default(),
            memo: None,
            notices: Vec::new(),
            log: None,
            counters: Counters::default(),
            fair: config.fair.map(Fair::new),
        })
    }

    /// Checks that `now` is a finite time not before the pool's last time.
    fn check_time(&self, now: f64) -> Result<(), Error> {
        if now.is_finite() && now >= self.now {
            Ok(())
        } else {
            Err(Error::Time {
                now,
                last: self.now,
            })
        }
    }

    /// An operation past its checks (a refused one changes nothing): the pool's time
    /// moves to `now`, and the notices are this operation's alone.
    #[inline]
    fn begin(&mut self, now: f64) {
        self.now = now;
        self.notices.clear();
    }

    /// Counts an event, and logs it with the state right after it when the log is on.
    #[inline]
    fn record(&mut self, event: Event) {
        self.counters.count(&event);
        if let Some(log) = &mut self.log {
            log.push(Record {
                event,
                allocated: Units(self.store.allocated() * self.block),
                cached: Units(self.store.cached() * self.block),
                queued: self.queue.len(),
            });
        }
    }

    /// Whether `extra` more allocated blocks fit once the whole cache is evicted
    /// (cached entries never block a fit, R6).
    fn fits(&self, extra: u64) -> bool {
        self.cap_blocks
            .is_none_or(|cap| self.store.allocated() + extra <= cap)
    }
}
