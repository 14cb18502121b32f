//! One pool member: the operations a host drives (enqueue, settle, grow, set
//! computed, release) and the rules that tie the block table, the cache and the queue
//! together — rejection (R5), fit (R6), sharing (R7), selection and head-of-line
//! blocking (R8), settle (R9), one block per Evict moment (R10), head-side hits (R11),
//! grow and preemption (R13), release (R14). docs/RUNTIME.md states each procedure
//! step by step; the naive model in tests/ implements the same text independently.
//!
//! It must not allocate per admission once warmed up (holders' block lists and the
//! row buffers are recycled), must not let hash-map order reach a result (hash maps
//! here are lookups only), and must not panic on input: only on broken invariants or
//! a host breaking the [`Env`] contract, with a message.

use std::collections::VecDeque;
use std::collections::hash_map::Entry as MapEntry;

use crate::cache::{Entry, NIL, Store};
use crate::config::{
    EvictPolicy, Input, Layout, PoolConfig, PoolRef, Preempt, Query, QueryKind, QueueIndex,
    QueuePolicy, Site, SpillPolicy, Target, check_layout, is_fixed,
};
use crate::env::Env;
use crate::error::Error;
use crate::event::{Counters, Event, Notice, Record};
use crate::hash::FxMap;
use crate::policy::KeyList;
use crate::queue::{Pick, Queue};
use crate::types::{BlockKey, EntryId, Header, Limit, SessionId, Units};

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

#[derive(Debug)]
struct Holder {
    session: SessionId,
    /// Reserve, chain and hit cap as enqueued; its `units` is the admission's.
    header: Header,
    /// Units held now (admission plus grows).
    units: u64,
    computed: u64,
    /// Physical blocks, chain order: the hold's blocks inside its chain's known
    /// content. The rest of its blocks are anonymous (counted only).
    blocks: Vec<u32>,
    anonymous: u64,
    /// Leading blocks already considered for registration (registered, or beyond
    /// the chain).
    keyed: u64,
    /// Neighbours in admission order (holder slots), for LIFO victims.
    earlier: u32,
    later: u32,
    pending_grow: Option<u64>,
}

impl Holder {
    fn held_blocks(&self) -> u64 {
        self.blocks.len() as u64 + self.anonymous
    }
}

/// Attribute snapshots of sessions with entries, for S3 (values at the session's
/// last release in this pool, or in a tier at its last store there, read once the
/// session has ended).
#[derive(Debug, Default)]
struct Snapshots {
    /// Attribute numbers the entry layout reads; empty: snapshots are off.
    attrs: Vec<u32>,
    values: Vec<f64>,
    refs: Vec<u32>,
    free: Vec<u32>,
    of: FxMap<SessionId, u32>,
}

impl Snapshots {
    fn new(layouts: &[&Layout]) -> Snapshots {
        let mut attrs: Vec<u32> = layouts
            .iter()
            .flat_map(|l| &l.row)
            .filter_map(|i| match i {
                Input::Attr(a) => Some(*a),
                _ => None,
            })
            .collect();
        attrs.sort_unstable();
        attrs.dedup();
        Snapshots {
            attrs,
            ..Snapshots::default()
        }
    }

    fn on(&self) -> bool {
        !self.attrs.is_empty()
    }

    /// Whether the session has entries here (and so a snapshot).
    fn has(&self, session: SessionId) -> bool {
        self.of.contains_key(&session)
    }

    /// The snapshot slot of a session that is gaining an entry (one more reference).
    fn acquire(&mut self, session: SessionId) -> u32 {
        if !self.on() {
            return NIL;
        }
        if let Some(&slot) = self.of.get(&session) {
            self.refs[slot as usize] += 1;
            return slot;
        }
        let n = self.attrs.len();
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.refs.push(0);
                self.values.resize(self.values.len() + n, f64::NAN);
                u32::try_from(self.refs.len() - 1).expect("fewer than 2^32 snapshots")
            }
        };
        self.refs[slot as usize] = 1;
        self.of.insert(session, slot);
        slot
    }

    /// One entry of the snapshot's session disappeared.
    fn release(&mut self, slot: u32, session: SessionId) {
        if slot == NIL {
            return;
        }
        let r = &mut self.refs[slot as usize];
        *r -= 1;
        if *r == 0 {
            self.of.remove(&session);
            self.free.push(slot);
        }
    }

    /// A release (or, in a tier, a store) of `session`: its snapshot, if it has
    /// entries, takes the current values.
    fn record<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        let Some(&slot) = self.of.get(&session) else {
            return;
        };
        let attrs = live_attrs(env, session);
        let n = self.attrs.len();
        for (i, &a) in self.attrs.iter().enumerate() {
            self.values[slot as usize * n + i] = attr(attrs, a, session);
        }
    }

    fn value(&self, slot: u32, a: u32) -> f64 {
        let i = self
            .attrs
            .binary_search(&a)
            .expect("snapshotted attributes cover the entry layout");
        self.values[slot as usize * self.attrs.len() + i]
    }
}

#[inline]
fn live_attrs<E: Env + ?Sized>(env: &E, session: SessionId) -> &[f64] {
    match env.attrs(session) {
        Some(a) => a,
        None => no_attrs(session),
    }
}

#[cold]
fn no_attrs(session: SessionId) -> ! {
    panic!("Env contract broken: no attributes for session {session}, which is in the pool")
}

// Inlined, with the panic out of line: a scanned queue reads attributes for every
// waiting hold at every admission attempt.
#[inline]
fn attr(attrs: &[f64], a: u32, session: SessionId) -> f64 {
    match attrs.get(a as usize) {
        Some(v) => *v,
        None => short_attrs(attrs.len(), a, session),
    }
}

#[cold]
fn short_attrs(len: usize, a: u32, session: SessionId) -> ! {
    panic!("Env contract broken: session {session} has {len} attributes, a layout reads #{a}")
}

/// Reused buffers, so that admissions and evictions allocate nothing once warm.
#[derive(Debug, Default)]
struct Scratch {
    rows: Vec<f64>,
    ctx: Vec<f64>,
    slots: Vec<u32>,
    counts: Vec<u32>,
    stamps: Vec<u64>,
    hits: Vec<u32>,
    spare: Vec<Vec<u32>>,
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

/// The hit walk of the last hold an admission attempt selected and did not admit
/// (blocked, or declined by the host): a step host retries the same head every
/// iteration, and its walk changes only when a key it looked at does (the store's
/// watch filter says when).
#[derive(Clone, Copy, Debug)]
struct HitMemo {
    /// The hold's enqueue order: unique to one stay in the queue.
    seq: u64,
    hit: u64,
    shared: u64,
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
    preempt: Preempt,
    queue_policy: QueuePolicy,
    spill: Option<SpillPolicy>,
    store: Store,
    holders: Vec<Option<Holder>>,
    free_holders: Vec<u32>,
    holder_of: FxMap<SessionId, u32>,
    /// Holders in admission order as a list through `earlier`/`later` (LIFO victims
    /// are taken from the latest end); linking allocates nothing.
    first_admitted: u32,
    last_admitted: u32,
    queue: Queue,
    /// Waiting session → its queue slot.
    waiting: FxMap<SessionId, u32>,
    /// Holders whose grow waits, in the order the grows failed.
    pending: VecDeque<SessionId>,
    now: f64,
    snaps: Snapshots,
    scratch: Scratch,
    memo: Option<HitMemo>,
    notices: Vec<Notice>,
    log: Option<Vec<Record>>,
    counters: Counters,
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
        let block = config.block.0;
        let queue = match &config.queue {
            QueuePolicy::By { keys, layout }
                if config.queue_index == QueueIndex::Auto && is_fixed(layout) =>
            {
                Queue::indexed(keys.len())
            }
            _ => Queue::default(),
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
            evict: config.evict,
            preempt: config.preempt,
            queue_policy: config.queue,
            spill: config.spill,
            store: Store::default(),
            holders: Vec::new(),
            free_holders: Vec::new(),
            holder_of: FxMap::default(),
            first_admitted: NIL,
            last_admitted: NIL,
            queue,
            waiting: FxMap::default(),
            pending: VecDeque::new(),
            now: f64::NEG_INFINITY,
            scratch: Scratch::default(),
            memo: None,
            notices: Vec::new(),
            log: None,
            counters: Counters::default(),
        })
    }

    // ----- inspection -------------------------------------------------------------

    pub fn cap(&self) -> Limit {
        self.cap
    }

    pub fn block(&self) -> Units {
        Units(self.block)
    }

    /// Allocated units (whole blocks; a shared block counts once, R7).
    pub fn allocated(&self) -> Units {
        Units(self.store.allocated() * self.block)
    }

    pub fn cached(&self) -> Units {
        Units(self.store.cached() * self.block)
    }

    /// Waiting holds, preempted ones included.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn holders(&self) -> usize {
        self.holder_of.len()
    }

    /// The latest time an operation was given (−inf before the first).
    pub fn now(&self) -> f64 {
        self.now
    }

    /// What the last operation told the host beyond its return value.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    pub fn hold(&self, session: SessionId) -> Option<HoldInfo> {
        let h = self.holder(*self.holder_of.get(&session)?);
        Some(HoldInfo {
            units: Units(h.units),
            computed: Units(h.computed),
            blocks: Units((h.blocks.len() as u64 + h.anonymous) * self.block),
            pending_grow: h.pending_grow.map(Units),
        })
    }

    pub fn is_waiting(&self, session: SessionId) -> bool {
        self.waiting.contains_key(&session)
    }

    /// Whether `queue by` keys are kept in the ordered index (they read only fixed
    /// inputs) rather than evaluated by the compiled scan at every attempt.
    pub fn queue_is_indexed(&self) -> bool {
        self.queue.is_indexed()
    }

    /// Sessions waiting, in selection-independent order: preempted (most recent
    /// first), then enqueue order.
    pub fn waiting_sessions(&self) -> Vec<SessionId> {
        self.queue.in_order().iter().map(|w| w.session).collect()
    }

    /// The cache's entries in release order.
    pub fn entries(&self) -> Vec<EntryInfo> {
        self.store
            .entry_slots()
            .map(|slot| {
                let e = self.store.entry(slot);
                EntryInfo {
                    id: e.id,
                    session: e.session,
                    last: e.last,
                    keys: self
                        .store
                        .entry_blocks(slot)
                        .into_iter()
                        .map(|b| self.store.key(b).expect("cached blocks are registered"))
                        .collect(),
                }
            })
            .collect()
    }

    /// The value of a query on this pool (E6).
    pub fn query(&self, kind: QueryKind) -> f64 {
        let b = self.block as f64;
        match kind {
            QueryKind::Free => {
                self.cap.as_f64() - (self.store.allocated() + self.store.cached()) as f64 * b
            }
            QueryKind::Used => self.store.allocated() as f64 * b,
            QueryKind::Cached => self.store.cached() as f64 * b,
            QueryKind::Cap => self.cap.as_f64(),
            QueryKind::Queued => self.queue.len() as f64,
            // Stage queries never target a pool; a host that asks gets the neutral
            // values of `default_query`.
            QueryKind::BudgetLeft => f64::INFINITY,
            QueryKind::Residents => 0.0,
        }
    }

    /// Checks R1 (allocated + cached ≤ cap) and every internal invariant; `Err`
    /// describes the first one broken. Tests call it after every operation.
    pub fn check(&self) -> Result<(), String> {
        if let Some(cap) = self.cap_blocks {
            let used = self.store.allocated() + self.store.cached();
            if used > cap {
                return Err(format!(
                    "R1 broken: allocated {} + cached {} > cap {:?}",
                    self.allocated(),
                    self.cached(),
                    self.cap
                ));
            }
        }
        let lists: Vec<&[u32]> = self
            .holders
            .iter()
            .flatten()
            .map(|h| h.blocks.as_slice())
            .collect();
        let anonymous = self.holders.iter().flatten().map(|h| h.anonymous).sum();
        self.store.check(&lists, anonymous)?;
        for h in self.holders.iter().flatten() {
            let total = Units(h.units).blocks_up(self.block);
            let physical = total.min(h.header.chain.full_blocks(self.block));
            if h.blocks.len() as u64 != physical || h.anonymous != total - physical {
                return Err(format!("{} holds the wrong number of blocks", h.session));
            }
            if h.computed > h.units {
                return Err(format!("{} computed beyond its units", h.session));
            }
        }
        let mut listed = 0;
        let mut at = self.first_admitted;
        while at != NIL {
            listed += 1;
            at = self.holder(at).later;
        }
        if self.holder_of.len() != listed {
            return Err("holder map and admission order disagree".into());
        }
        if self.waiting.len() != self.queue.len() {
            return Err("waiting set and queue disagree".into());
        }
        Ok(())
    }

    // ----- the event log ------------------------------------------------------------

    /// Turns the event log on (keeping what it has) or off (dropping it).
    pub fn set_logging(&mut self, on: bool) {
        match (on, self.log.is_some()) {
            (true, false) => self.log = Some(Vec::new()),
            (false, true) => self.log = None,
            _ => {}
        }
    }

    /// The records logged so far (empty when logging is off).
    pub fn log(&self) -> &[Record] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// Forgets the records logged so far, keeping the log on and its buffer (a host
    /// that writes records out after each operation allocates nothing for them).
    pub fn clear_log(&mut self) {
        if let Some(log) = &mut self.log {
            log.clear();
        }
    }

    /// Running totals of this member's events (kept with the log off too).
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Whether a block with this key is registered here, held or cached.
    pub fn has_key(&self, key: &BlockKey) -> bool {
        self.store.lookup(key).is_some()
    }

    /// Takes the records logged so far, leaving the log on and empty.
    pub fn take_log(&mut self) -> Vec<Record> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

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

    // ----- operations -----------------------------------------------------------------

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

    /// Puts a hold in the queue, or rejects it when it can never fit (R5). Does not
    /// admit: call [`Pool::settle`] after it (R9) unless a stage serves the pool.
    pub fn enqueue<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        header: Header,
        env: &E,
    ) -> Result<Enqueued, Error> {
        self.check_time(now)?;
        if self.holder_of.contains_key(&session) {
            return Err(Error::AlreadyInPool(session));
        }
        // One probe of the waiting set both checks it and keeps the place to insert.
        let MapEntry::Vacant(vacant) = self.waiting.entry(session) else {
            return Err(Error::AlreadyInPool(session));
        };
        if header.chain.full_blocks(self.block) >= u64::from(NIL) {
            return Err(Error::TooManyBlocks(session));
        }
        // `begin`, field by field: `vacant` still borrows the waiting set.
        self.now = now;
        self.notices.clear();
        if let Some(cap) = self.cap_blocks
            && header.fit_units().blocks_up(self.block) > cap
        {
            self.record(Event::Reject { session });
            return Ok(Enqueued::Rejected);
        }
        let slot = self.queue.push(session, header, now);
        vacant.insert(slot);
        if self.queue.is_indexed() {
            self.file_keys(slot, env);
        }
        self.record(Event::Enqueue { session });
        Ok(Enqueued::Queued)
    }

    /// R9 settle for a pool without `admit via`: retries waiting grows in the order
    /// they failed (stopping at the first that still does not fit, and then admitting
    /// nothing), then admits selected holds until the queue is empty or the selected
    /// hold does not fit (R8). Admissions and grows are in [`Pool::notices`].
    pub fn settle<E: Env + ?Sized>(&mut self, now: f64, env: &E) -> Result<(), Error> {
        self.check_time(now)?;
        self.begin(now);
        if !self.grow_waiting(env) {
            return Ok(());
        }
        while let Admission::Admitted { .. } = self.attempt(env, None, |_, _, h| Some(h.units))? {}
        Ok(())
    }

    /// R13 `preempt none` for a step stage's iteration: retries waiting grows in the
    /// order they failed, stopping at the first that still does not fit. Returns
    /// whether no grow waits any more. Completed grows are in [`Pool::notices`].
    pub fn retry_grows<E: Env + ?Sized>(&mut self, now: f64, env: &E) -> Result<bool, Error> {
        self.check_time(now)?;
        self.begin(now);
        Ok(self.grow_waiting(env))
    }

    /// One admission attempt for a step stage (R15 step 2): selects the next hold
    /// (R8), computes its hit, and asks `units_for(session, hit, header)` how many
    /// units to allocate (`hit + min(sequence − hit, chunk, budget left)`), or `None`
    /// to decline. The fit is judged on `max(units, reserve)` (R6). The stage calls it
    /// while it has budget and seats, and stops at anything but `Admitted`.
    pub fn admit_next<E, F>(&mut self, now: f64, env: &E, units_for: F) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Units, &Header) -> Option<Units>,
    {
        self.check_time(now)?;
        self.begin(now);
        self.attempt(env, None, |s, hit, h| units_for(s, hit.local, h))
    }

    /// [`Pool::admit_next`] with R12 tier hits: after its own hit, the walk goes on in
    /// `tier` (the pool this one spills into, with the same block size; copies there
    /// are read, not taken), and `units_for` sees both parts. The admitted hold
    /// allocates its tier-hit blocks here like any new block, but its computed is
    /// only its own hit: [`Notice::TierLoad`] asks the host to load the tier part
    /// over the spill link (`work` evaluated as the spill's, on a row of the
    /// admitted session with `size` and `units` = the units loaded, `last` = now,
    /// `waiting` = 0) and to set computed when the load completes. Without a tier,
    /// in a pool that does not spill, or given a pool that is not the one this pool
    /// spills into (by its `me`) or has another block size, it is `admit_next`.
    pub fn admit_next_tiered<E, F>(
        &mut self,
        now: f64,
        env: &E,
        tier: Option<&Pool>,
        units_for: F,
    ) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        self.check_time(now)?;
        self.begin(now);
        let target = self.spill.as_ref().map(|sp| sp.tier);
        let tier = tier.filter(|t| t.block == self.block && target == Some(t.me));
        self.attempt(env, tier, units_for)
    }

    /// R12, the tier side: a block written by a pool that spills into this one joins
    /// this pool's cache, as part of the newest entry with the same session and
    /// release time `last` (at its head: an entry's blocks are spilled tail first),
    /// or of a new entry placed in release order by `last`. Room is made first by
    /// this pool's own eviction, which may spill further. A key already here is not
    /// stored twice. If the entry keys read attributes, the session's snapshot here
    /// takes its current values (S3 in a tier, docs/RUNTIME.md); a session the host
    /// no longer answers for and of which this pool holds no entry is
    /// `Err(NoAttrs)`.
    pub fn accept_spill<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        key: BlockKey,
        last: f64,
        env: &E,
    ) -> Result<Stored, Error> {
        self.check_time(now)?;
        let duplicate = self.store.lookup(&key).is_some();
        let no_room = self.cap_blocks == Some(0);
        let answers = env.attrs(session).is_some();
        if !duplicate && !no_room && self.snaps.on() && !answers && !self.snaps.has(session) {
            return Err(Error::NoAttrs(session));
        }
        self.begin(now);
        if duplicate {
            return Ok(Stored::Duplicate);
        }
        if no_room {
            return Ok(Stored::NoRoom);
        }
        // S3 in a tier: the snapshot is pinned before the eviction below, which may
        // take the session's other entries here (and their snapshot with them), and
        // takes the current values at every store the host still answers for.
        let snap = self.snaps.acquire(session);
        // Evict before choosing the entry: the eviction may take the entry's last
        // block, and with it the entry.
        self.make_room(1, env);
        if answers {
            self.snaps.record(session, env);
        }
        let slot = match self.store.find_entry(session, last) {
            Some(slot) => {
                self.snaps.release(snap, session);
                slot
            }
            None => self.store.open_entry_sorted(session, last, snap),
        };
        let b = self.store.alloc();
        self.store.register(b, key);
        self.store.unref(b);
        self.store.push_head(slot, b);
        let entry = self.store.entry(slot).id;
        let units = Units(self.block);
        self.record(Event::Store {
            entry,
            session,
            key,
            units,
        });
        Ok(Stored::Stored(entry))
    }

    /// Tells an indexed queue that a waiting session's attributes changed, so that
    /// its fixed keys are computed again (scanned keys read attributes at every
    /// attempt and need no notice). A host must call it for every waiting session
    /// whose attributes it changes; for sessions not waiting it does nothing.
    pub fn attrs_changed<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        if let Some(&slot) = self.waiting.get(&session)
            && self.queue.is_indexed()
            && !self.queue.is_preempted(slot)
        {
            self.file_keys(slot, env);
        }
    }

    /// Revises a waiting hold's header values, for a step host whose preempted
    /// session's sequence grew (`reserve = sequence`, `max_hit = sequence − 1`,
    /// R15). Refused (nothing changes) when the hold does not wait or would never
    /// fit (R5).
    pub fn set_waiting_header<E: Env + ?Sized>(
        &mut self,
        session: SessionId,
        units: Units,
        reserve: Units,
        max_hit: Option<Units>,
        env: &E,
    ) -> Result<(), Error> {
        let slot = *self
            .waiting
            .get(&session)
            .ok_or(Error::NotWaiting(session))?;
        if let Some(cap) = self.cap_blocks
            && units.max(reserve).blocks_up(self.block) > cap
        {
            return Err(Error::NeverFits(session));
        }
        let h = &mut self.queue.get_slot_mut(slot).header;
        h.units = units;
        h.reserve = reserve;
        h.max_hit = max_hit;
        // Its walk's limit may have changed.
        self.memo = None;
        if self.queue.is_indexed() && !self.queue.is_preempted(slot) {
            self.file_keys(slot, env);
        }
        Ok(())
    }

    /// Sets how many leading units of a hold are computed (what R14 caches at
    /// release and R13 at preemption). Hits count as computed from admission.
    pub fn set_computed(&mut self, session: SessionId, computed: Units) -> Result<(), Error> {
        let slot = *self
            .holder_of
            .get(&session)
            .ok_or(Error::NotHolding(session))?;
        let h = self.holder_mut(slot);
        if computed.0 > h.units {
            return Err(Error::ComputedBeyondUnits {
                session,
                computed,
                units: Units(h.units),
            });
        }
        h.computed = computed.0;
        Ok(())
    }

    /// R13: the holder grows by `by` units, evicting cache to fit; if it cannot fit,
    /// `preempt none` waits and `preempt lifo` preempts residents, most recently
    /// admitted first, until it fits or the grower was its own victim.
    pub fn grow<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        by: Units,
        env: &E,
    ) -> Result<Grown, Error> {
        self.check_time(now)?;
        let slot = *self
            .holder_of
            .get(&session)
            .ok_or(Error::NotHolding(session))?;
        let h = self.holder(slot);
        if h.pending_grow.is_some() {
            return Err(Error::GrowPending(session));
        }
        let units = h.units.checked_add(by.0).ok_or(Error::Overflow(session))?;
        self.begin(now);
        loop {
            let held = self.holder(slot).held_blocks();
            let extra = Units(units).blocks_up(self.block) - held;
            if self.fits(extra) {
                self.apply_grow(slot, units, extra, env);
                self.record(Event::Grow { session, by });
                return Ok(Grown::Grown);
            }
            let victim = match self.preempt {
                Preempt::None => None,
                Preempt::Lifo => self.latest_resident(env),
            };
            let Some(victim) = victim else {
                self.holder_mut(slot).pending_grow = Some(by.0);
                self.pending.push_back(session);
                self.record(Event::GrowWait { session });
                return Ok(Grown::Waiting);
            };
            self.preempt_holder(victim, env);
            if victim == session {
                return Ok(Grown::SelfPreempted);
            }
        }
    }

    /// R14: the holder ends its hold. Returns the units cached as a new entry.
    pub fn release<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        env: &E,
    ) -> Result<Units, Error> {
        self.check_time(now)?;
        if !self.holder_of.contains_key(&session) {
            return Err(Error::NotHolding(session));
        }
        self.begin(now);
        let h = self.remove_holder(session);
        let cached = self.release_blocks(h, env);
        self.record(Event::Release { session, cached });
        Ok(cached)
    }

    // ----- internals --------------------------------------------------------------------

    fn holder(&self, slot: u32) -> &Holder {
        self.holders[slot as usize]
            .as_ref()
            .expect("holder slot in use")
    }

    fn holder_mut(&mut self, slot: u32) -> &mut Holder {
        self.holders[slot as usize]
            .as_mut()
            .expect("holder slot in use")
    }

    /// Retries waiting grows in failure order; false when one still does not fit.
    fn grow_waiting<E: Env + ?Sized>(&mut self, env: &E) -> bool {
        while let Some(&session) = self.pending.front() {
            let slot = self.holder_of[&session];
            let h = self.holder(slot);
            let by = h.pending_grow.expect("a pending holder has a pending grow");
            let units = h.units + by;
            let extra = Units(units).blocks_up(self.block) - h.held_blocks();
            if !self.fits(extra) {
                return false;
            }
            self.pending.pop_front();
            self.holder_mut(slot).pending_grow = None;
            self.apply_grow(slot, units, extra, env);
            self.record(Event::Grow {
                session,
                by: Units(by),
            });
            self.notices.push(Notice::Grown {
                session,
                by: Units(by),
            });
        }
        true
    }

    /// Whether `extra` more allocated blocks fit once the whole cache is evicted
    /// (cached entries never block a fit, R6).
    fn fits(&self, extra: u64) -> bool {
        self.cap_blocks
            .is_none_or(|cap| self.store.allocated() + extra <= cap)
    }

    /// One admission attempt (R6, R7, R8): select, ask for the units, judge the fit
    /// on the reserve, claim the hit, evict for the new blocks, allocate, register.
    fn attempt<E, F>(
        &mut self,
        env: &E,
        tier: Option<&Pool>,
        units_for: F,
    ) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        let Some(pick) = self.select(env) else {
            return Ok(Admission::Empty);
        };
        let block = self.block;
        let w = self.queue.get(pick);
        let session = w.session;
        let (hit, shared) = match self.memo {
            Some(m) if m.seq == w.seq && !self.store.watch_touched() => (m.hit, m.shared),
            _ => {
                let (hit, shared) = hit_counts_watched(&mut self.store, &w.header, block);
                self.memo = Some(HitMemo {
                    seq: w.seq,
                    hit,
                    shared,
                });
                (hit, shared)
            }
        };
        let tier_blocks = tier.map_or(0, |t| tier_run(&t.store, &w.header, hit, block));
        let found = Hit {
            local: Units(hit * block),
            tier: Units(tier_blocks * block),
        };
        let Some(units) = units_for(session, found, &w.header) else {
            return Ok(Admission::Declined);
        };
        if units.0 < hit * block {
            return Err(Error::UnitsBelowHit {
                session,
                units,
                hit: Units(hit * block),
            });
        }
        let need = units.max(w.header.reserve).blocks_up(block) - shared;
        if !self.fits(need) {
            return Ok(Admission::Blocked);
        }
        let mut w = self.queue.take(pick);
        self.waiting.remove(&session);
        self.memo = None;
        self.store.watch_stop();
        let mut blocks = self.scratch.spare.pop().unwrap_or_default();
        // The same walk as above (nothing changed since), before the header takes
        // the chosen units: the hit was judged under the header's own limit.
        collect_hits(&self.store, &w.header, block, &mut blocks);
        assert_eq!(
            blocks.len() as u64,
            hit,
            "the hit changed within one attempt"
        );
        w.header.units = units;
        // Hit blocks are claimed first, so the evictions below cannot take them.
        for &b in &blocks {
            if self.store.refs(b) > 0 {
                self.store.share(b);
            } else if let Some(gone) = self.store.claim(b) {
                self.snaps.release(gone.snap, gone.session);
            }
        }
        let total = w.header.units.blocks_up(block);
        let physical = total.min(w.header.chain.full_blocks(block));
        self.make_room(total - hit, env);
        for _ in hit..physical {
            blocks.push(self.store.alloc());
        }
        self.store.alloc_anonymous(total - physical);
        let mut h = Holder {
            session: w.session,
            units: w.header.units.0,
            computed: hit * block,
            header: w.header,
            blocks,
            anonymous: total - physical,
            keyed: hit,
            earlier: self.last_admitted,
            later: NIL,
            pending_grow: None,
        };
        register_new(&mut self.store, &mut h, block);
        let slot = match self.free_holders.pop() {
            Some(s) => {
                self.holders[s as usize] = Some(h);
                s
            }
            None => {
                self.holders.push(Some(h));
                u32::try_from(self.holders.len() - 1).expect("fewer than 2^32 holders")
            }
        };
        self.holder_of.insert(session, slot);
        if self.last_admitted == NIL {
            self.first_admitted = slot;
        } else {
            self.holder_mut(self.last_admitted).later = slot;
        }
        self.last_admitted = slot;
        // Tier-hit blocks within the allocation are loaded, not computed.
        let loaded = tier_blocks.min(units.blocks_down(block).saturating_sub(hit));
        let hit = Units(hit * block);
        self.record(Event::Admit {
            session,
            hit,
            units,
        });
        self.notices.push(Notice::Admitted {
            session,
            hit,
            units,
        });
        if loaded > 0
            && let Some(sp) = &self.spill
        {
            let units = Units(loaded * block);
            let work = load_work(sp, &mut self.scratch, session, units, self.now, env);
            let (tier, link) = (sp.tier, sp.link);
            self.record(Event::TierLoad {
                session,
                units,
                work,
            });
            self.notices.push(Notice::TierLoad {
                session,
                units,
                work,
                tier,
                link,
            });
        }
        Ok(Admission::Admitted {
            session,
            hit,
            units,
        })
    }

    /// Allocates `extra` blocks to a holder growing to `units` (the fit is known).
    fn apply_grow<E: Env + ?Sized>(&mut self, slot: u32, units: u64, extra: u64, env: &E) {
        self.make_room(extra, env);
        let block = self.block;
        let h = self.holders[slot as usize]
            .as_mut()
            .expect("holder slot in use");
        let total = Units(units).blocks_up(block);
        let physical = total.min(h.header.chain.full_blocks(block));
        let new_physical = physical - h.blocks.len() as u64;
        for _ in 0..new_physical {
            h.blocks.push(self.store.alloc());
        }
        self.store.alloc_anonymous(extra - new_physical);
        h.anonymous += extra - new_physical;
        h.units = units;
        register_new(&mut self.store, h, block);
    }

    /// Evicts one block per Evict moment until `new` more blocks fit beside the cache
    /// (R10). The fit was judged before, so the cache always suffices.
    fn make_room<E: Env + ?Sized>(&mut self, new: u64, env: &E) {
        let Some(cap) = self.cap_blocks else {
            return;
        };
        while self.store.allocated() + self.store.cached() + new > cap {
            self.evict_one(env);
        }
    }

    /// One Evict moment: choose the least entry and remove its tail block.
    fn evict_one<E: Env + ?Sized>(&mut self, env: &E) {
        let slot = match &self.evict {
            EvictPolicy::Lru => self.store.oldest_entry(),
            EvictPolicy::By { keys, layout } => select_entry(
                &self.store,
                &self.queue,
                &self.snaps,
                &mut self.scratch,
                keys,
                layout,
                self.block,
                self.now,
                env,
            ),
        }
        .expect("a fit was judged with room the cache cannot give");
        let (entry, session, last) = {
            let e = self.store.entry(slot);
            (e.id, e.session, e.last)
        };
        // R12: `pred` and `work` see the entry as it is at this moment, before its
        // tail leaves (`size` counts the block being written).
        let spill = self.spill.as_ref().and_then(|sp| {
            spill_work(
                &self.store,
                &self.queue,
                &self.snaps,
                &mut self.scratch,
                sp,
                slot,
                self.block,
                self.now,
                env,
            )
        });
        let (key, gone) = self.store.evict_tail(slot);
        if let Some(gone) = gone {
            self.snaps.release(gone.snap, gone.session);
        }
        let units = Units(self.block);
        self.record(Event::Evict {
            entry,
            session,
            key,
            units,
        });
        if let (Some(work), Some(sp)) = (spill, &self.spill) {
            let (tier, link) = (sp.tier, sp.link);
            self.record(Event::Spill {
                entry,
                session,
                key,
                units,
                work,
            });
            self.notices.push(Notice::Spill {
                session,
                key,
                last,
                units,
                work,
                tier,
                link,
            });
        }
    }

    /// The next hold to try (R8): the most recently preempted, else the first in
    /// enqueue order (fifo) or the least by the keys, ties to enqueue order — from
    /// the ordered index when the keys read only fixed inputs, else by the compiled
    /// scan over rows filled now.
    fn select<E: Env + ?Sized>(&mut self, env: &E) -> Option<Pick> {
        if self.queue.has_preempted() {
            return Some(Pick::Preempted);
        }
        if self.queue.is_indexed() {
            return self.queue.index_top().map(|_| Pick::Indexed);
        }
        if self.queue.fifo_len() == 0 {
            return None;
        }
        let (keys, layout) = match &self.queue_policy {
            QueuePolicy::Fifo => return Some(Pick::Queued(0)),
            QueuePolicy::By { keys, layout } => (keys, layout),
        };
        let stride = layout.row.len();
        let n = self.queue.fifo_len();
        let rows = &mut self.scratch.rows;
        rows.clear();
        rows.resize(n * stride, 0.0);
        // Row i by its range, as for entry rows: a key list may read no row slot
        // (only `now`, queries or constants), and every row is then empty.
        for (i, w) in self.queue.fifo_iter().enumerate() {
            let row = &mut rows[i * stride..(i + 1) * stride];
            fill_queue_row(row, &layout.row, w, &self.store, self.block, env);
        }
        self.scratch.ctx.clear();
        for input in &layout.ctx {
            let value = match *input {
                Input::Now => self.now,
                Input::Query(q) => self.query_value(q, env),
                other => unreachable!("validated queue ctx input {other:?}"),
            };
            self.scratch.ctx.push(value);
        }
        keys.select(&self.scratch.rows, n, stride, &self.scratch.ctx)
            .map(Pick::Queued)
    }

    /// Computes a waiting hold's fixed keys and files it in the ordered index.
    fn file_keys<E: Env + ?Sized>(&mut self, slot: u32, env: &E) {
        let QueuePolicy::By { keys, layout } = &self.queue_policy else {
            unreachable!("an indexed queue has keys");
        };
        let w = self.queue.get_slot(slot);
        let row = &mut self.scratch.rows;
        row.clear();
        row.resize(layout.row.len(), 0.0);
        fill_queue_row(row, &layout.row, w, &self.store, self.block, env);
        // Fixed keys read no ctx slot (the layout's ctx is empty).
        let row = &self.scratch.rows;
        self.queue
            .set_keys(slot, (0..keys.len()).map(|k| keys.key(k, row, &[])));
    }

    fn query_value<E: Env + ?Sized>(&self, q: Query, env: &E) -> f64 {
        if q.target == Target::Pool(self.me) {
            self.query(q.kind)
        } else {
            env.query(q)
        }
    }

    /// R13 `preempt lifo`: the most recently admitted holder that is a resident.
    fn latest_resident<E: Env + ?Sized>(&self, env: &E) -> Option<SessionId> {
        let mut at = self.last_admitted;
        while at != NIL {
            let h = self.holder(at);
            if env.is_resident(h.session) {
                return Some(h.session);
            }
            at = h.earlier;
        }
        None
    }

    /// Takes a holder out of every holder structure.
    fn remove_holder(&mut self, session: SessionId) -> Holder {
        let slot = self
            .holder_of
            .remove(&session)
            .expect("removing a holder that exists");
        let h = self.holders[slot as usize]
            .take()
            .expect("holder slot in use");
        self.free_holders.push(slot);
        if h.earlier == NIL {
            self.first_admitted = h.later;
        } else {
            self.holder_mut(h.earlier).later = h.later;
        }
        if h.later == NIL {
            self.last_admitted = h.earlier;
        } else {
            self.holder_mut(h.later).earlier = h.earlier;
        }
        if h.pending_grow.is_some() {
            self.pending.retain(|&s| s != session);
        }
        h
    }

    /// R14 for a holder already removed: its full computed blocks that nobody else
    /// holds become one new entry, in chain order; the rest is freed. Returns the
    /// units cached.
    fn release_blocks<E: Env + ?Sized>(&mut self, mut h: Holder, env: &E) -> Units {
        let full = h.computed / self.block;
        let mut slot = NIL;
        for (k, &b) in h.blocks.iter().enumerate() {
            if self.store.unref(b) > 0 {
                continue;
            }
            if (k as u64) < full && self.store.key(b).is_some() {
                if slot == NIL {
                    let snap = self.snaps.acquire(h.session);
                    slot = self.store.open_entry(h.session, self.now, snap);
                }
                self.store.push_tail(slot, b);
            } else {
                self.store.free(b);
            }
        }
        self.store.free_anonymous(h.anonymous);
        if self.snaps.on() {
            self.snaps.record(h.session, env);
        }
        let cached = if slot == NIL {
            0
        } else {
            self.store.entry(slot).blocks * self.block
        };
        h.blocks.clear();
        self.scratch.spare.push(std::mem::take(&mut h.blocks));
        Units(cached)
    }

    /// R13 preemption: release with the computed prefix cached, then wait at the
    /// head of the queue with the units it held (`waited` restarts now).
    fn preempt_holder<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        let mut h = self.remove_holder(session);
        let units = Units(h.units);
        // Releasing needs no chain, so the hold moves its chain back to the queue.
        let header = Header {
            units,
            reserve: h.header.reserve.max(units),
            chain: std::mem::take(&mut h.header.chain),
            max_hit: h.header.max_hit,
        };
        let cached = self.release_blocks(h, env);
        let slot = self.queue.push_preempted(session, header, self.now);
        self.waiting.insert(session, slot);
        self.record(Event::Preempt { session, cached });
        self.notices.push(Notice::Preempted { session });
    }
}

/// One queue row (S2): attributes read now, header values, the hit now, enqueue time.
#[inline(always)]
fn fill_queue_row<E: Env + ?Sized>(
    row: &mut [f64],
    inputs: &[Input],
    w: &crate::queue::Waiting,
    store: &Store,
    block: u64,
    env: &E,
) {
    // The host is asked once per row, not once per attribute.
    let mut attrs: Option<&[f64]> = None;
    for (slot, input) in row.iter_mut().zip(inputs) {
        *slot = match *input {
            Input::Attr(a) => attr(
                attrs.get_or_insert_with(|| live_attrs(env, w.session)),
                a,
                w.session,
            ),
            Input::Units => w.header.units.0 as f64,
            Input::Reserve => w.header.reserve.0 as f64,
            Input::Computed => (hit_counts(store, &w.header, block).0 * block) as f64,
            Input::Enqueued => w.enqueued,
            other => unreachable!("validated queue row input {other:?}"),
        };
    }
}

/// Registers a holder's full blocks of known content that are not yet registered:
/// blocks are hittable from allocation (R7), up to `min(units, chain)`.
fn register_new(store: &mut Store, h: &mut Holder, block: u64) {
    let upto = Units(h.units).min(h.header.chain.len()).blocks_down(block);
    while h.keyed < upto {
        let key = h
            .header
            .chain
            .block_key(h.keyed, block)
            .expect("block inside the chain has a key");
        store.register(h.blocks[h.keyed as usize], key);
        h.keyed += 1;
    }
}

/// The keys a hit walk looks at (R4, R7): the chain's full blocks, head first,
/// within the header's hit limit.
#[inline]
fn hit_keys(header: &Header, block: u64) -> impl Iterator<Item = BlockKey> + '_ {
    let limit = header.hit_limit_blocks(block);
    header.chain.block_keys(block).take(limit as usize)
}

/// The blocks a header would hit now (R4, R7): leading chain blocks whose key has a
/// present copy (held or cached), within the header's hit limit. Returns (hit, of
/// which held by holders).
fn hit_counts(store: &Store, header: &Header, block: u64) -> (u64, u64) {
    count_hits(header, block, |key| {
        store.lookup(key).map(|b| store.refs(b))
    })
}

/// [`hit_counts`], watching every key the walk looks at (the first missing one
/// included: registering it would lengthen the hit) so that a later attempt on the
/// same header can tell whether the walk would still give the same result.
fn hit_counts_watched(store: &mut Store, header: &Header, block: u64) -> (u64, u64) {
    store.watch_start();
    count_hits(header, block, |key| {
        store.watch_add(key);
        store.lookup(key).map(|b| store.refs(b))
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

/// R12 tier hit: how many blocks right after the first `from` blocks of the header's
/// chain the tier holds (any copy, held or cached), within the header's hit limit.
fn tier_run(tier: &Store, header: &Header, from: u64, block: u64) -> u64 {
    hit_keys(header, block)
        .skip(from as usize)
        .take_while(|key| tier.lookup(key).is_some())
        .count() as u64
}

/// The spill `work` of a tier load: the spill's expression on a row of the loading
/// session (its current attributes, `size` = the units loaded, `last` = now,
/// `waiting` = 0) with ctx `now` and `units` = the units loaded.
fn load_work<E: Env + ?Sized>(
    spill: &SpillPolicy,
    scratch: &mut Scratch,
    session: SessionId,
    units: Units,
    now: f64,
    env: &E,
) -> f64 {
    let layout = &spill.layout;
    scratch.rows.clear();
    for input in &layout.row {
        scratch.rows.push(match *input {
            Input::Attr(a) => attr(live_attrs(env, session), a, session),
            Input::Size => units.0 as f64,
            Input::Last => now,
            Input::Waiting => 0.0,
            other => unreachable!("validated entry row input {other:?}"),
        });
    }
    fill_entry_ctx(&mut scratch.ctx, &layout.ctx, units.0, now);
    spill.fns.work(&scratch.rows, &scratch.ctx)
}

/// As [`hit_counts`], pushing the hit blocks (earliest registered copies) to `out`.
fn collect_hits(store: &Store, header: &Header, block: u64, out: &mut Vec<u32>) {
    for key in hit_keys(header, block) {
        let Some(b) = store.lookup(&key) else { break };
        out.push(b);
    }
}

/// `evict by`: fills one row per entry in release order and lets the compiled scan
/// pick the least (ties to the lowest index, that is release order, E5/R10).
#[allow(clippy::too_many_arguments)]
fn select_entry<E: Env + ?Sized>(
    store: &Store,
    queue: &Queue,
    snaps: &Snapshots,
    scratch: &mut Scratch,
    keys: &KeyList,
    layout: &Layout,
    block: u64,
    now: f64,
    env: &E,
) -> Option<u32> {
    let n = store.entry_count();
    if n == 0 {
        return None;
    }
    scratch.slots.clear();
    scratch.slots.extend(store.entry_slots());
    fill_entry_rows(store, queue, snaps, scratch, layout, block, now, env);
    let i = keys.select(&scratch.rows, n, layout.row.len(), &scratch.ctx)?;
    Some(scratch.slots[i])
}

/// R12 at one Evict moment: `Some(work)` when the spill predicate is non-zero (NaN
/// counts as true, E2) for the entry whose tail is about to leave.
#[allow(clippy::too_many_arguments)]
fn spill_work<E: Env + ?Sized>(
    store: &Store,
    queue: &Queue,
    snaps: &Snapshots,
    scratch: &mut Scratch,
    spill: &SpillPolicy,
    slot: u32,
    block: u64,
    now: f64,
    env: &E,
) -> Option<f64> {
    scratch.slots.clear();
    scratch.slots.push(slot);
    fill_entry_rows(store, queue, snaps, scratch, &spill.layout, block, now, env);
    let pred = spill.fns.pred(&scratch.rows, &scratch.ctx);
    (pred != 0.0).then(|| spill.fns.work(&scratch.rows, &scratch.ctx))
}

/// The rows of the entries in `scratch.slots`, in that order, and the entry ctx of
/// an Evict moment, for a layout of the entry site.
#[allow(clippy::too_many_arguments)]
fn fill_entry_rows<E: Env + ?Sized>(
    store: &Store,
    queue: &Queue,
    snaps: &Snapshots,
    scratch: &mut Scratch,
    layout: &Layout,
    block: u64,
    now: f64,
    env: &E,
) {
    if layout.row.contains(&Input::Waiting) {
        waiting_counts(store, queue, block, scratch);
    }
    let stride = layout.row.len();
    scratch.rows.clear();
    scratch.rows.resize(scratch.slots.len() * stride, 0.0);
    for (i, &slot) in scratch.slots.iter().enumerate() {
        let row = &mut scratch.rows[i * stride..(i + 1) * stride];
        fill_entry_row(
            row,
            &layout.row,
            store,
            slot,
            snaps,
            &scratch.counts,
            block,
            env,
        );
    }
    // R12: a moment writes one block.
    fill_entry_ctx(&mut scratch.ctx, &layout.ctx, block, now);
}

/// One entry row (S2, S3): the session's attributes (current while it lives, else
/// its snapshot), `size`, `last`, `waiting` (from `counts`, filled when read).
#[allow(clippy::too_many_arguments)]
fn fill_entry_row<E: Env + ?Sized>(
    row: &mut [f64],
    inputs: &[Input],
    store: &Store,
    slot: u32,
    snaps: &Snapshots,
    counts: &[u32],
    block: u64,
    env: &E,
) {
    let e: &Entry = store.entry(slot);
    let live = env.attrs(e.session);
    for (value, input) in row.iter_mut().zip(inputs) {
        *value = match *input {
            Input::Attr(a) => match live {
                Some(attrs) => attr(attrs, a, e.session),
                None => snaps.value(e.snap, a),
            },
            Input::Size => (e.blocks * block) as f64,
            Input::Last => e.last,
            Input::Waiting => counts[slot as usize] as f64,
            other => unreachable!("validated entry row input {other:?}"),
        };
    }
}

/// The entry sites' ctx: `now`, and `units` = the units written (one block at an
/// Evict moment) or loaded (a tier load).
fn fill_entry_ctx(ctx: &mut Vec<f64>, inputs: &[Input], units: u64, now: f64) {
    ctx.clear();
    for input in inputs {
        ctx.push(match *input {
            Input::Now => now,
            Input::SpillUnits => units as f64,
            other => unreachable!("validated entry ctx input {other:?}"),
        });
    }
}

/// S2 `waiting`: per entry slot, the waiting holds whose hit walk (as if admitted
/// now) takes at least one of its blocks. Fills `scratch.counts`.
fn waiting_counts(store: &Store, queue: &Queue, block: u64, scratch: &mut Scratch) {
    let bound = store.entry_slot_bound();
    scratch.counts.clear();
    scratch.counts.resize(bound, 0);
    scratch.stamps.clear();
    scratch.stamps.resize(bound, u64::MAX);
    for (i, w) in queue.iter_any().enumerate() {
        scratch.hits.clear();
        collect_hits(store, &w.header, block, &mut scratch.hits);
        for &b in &scratch.hits {
            let slot = store.entry_of(b);
            if slot != NIL && scratch.stamps[slot as usize] != i as u64 {
                scratch.stamps[slot as usize] = i as u64;
                scratch.counts[slot as usize] += 1;
            }
        }
    }
}
