//! A deliberately naive reference model of one pool member, written from
//! LANGUAGE.md §3 and the procedures of docs/RUNTIME.md, not from the engine: plain
//! vectors, linear scans, every count recomputed from scratch, blocks never reused,
//! keys compared one by one with its own E5 order. Keys come as plain functions
//! ([`NaiveKeys`]): the engine's own tests give it hand-written keys through
//! `KeyList::key`, the compiler's tests give it `poolc::interp`. It must stay obviously
//! correct; it is allowed to be slow. It shares only the public value types (sessions,
//! units, keys, events, layouts) with the engine.
//! This file is long because the model must be read in one piece to be trusted: it is
//! a whole pool member written out plainly, and splitting it would hide the linear
//! story it tells.

#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::rc::Rc;

use poolrt::policy::KeyList;
use poolrt::{
    Admission, BlockKey, Charge, Enqueued, EntryId, Env, Error, Event, FairConfig, Grown, Hit,
    Input, Layout, Notice, PoolRef, Query, QueryKind, Record, RunId, SessionId, SpillPolicy,
    StageRef, Stored, Target, Units,
};

/// A key function `(key index, row, ctx) → value`.
pub type KeyEval = Rc<dyn Fn(usize, &[f64], &[f64]) -> f64>;

/// A key list as the model evaluates it: `count` keys, each by `eval`, on rows and
/// contexts laid out by `layout`.
#[derive(Clone)]
pub struct NaiveKeys {
    pub count: usize,
    pub eval: KeyEval,
    pub layout: Layout,
}

impl NaiveKeys {
    /// A compiled key list, called one key at a time.
    pub fn compiled(keys: KeyList, layout: Layout) -> NaiveKeys {
        NaiveKeys {
            count: keys.len(),
            eval: Rc::new(move |k, row, ctx| keys.key(k, row, ctx)),
            layout,
        }
    }
}

/// `spill T via L (work) when (pred)`: key 0 of `fns` is `pred`, key 1 `work`.
#[derive(Clone)]
pub struct NaiveSpill {
    pub fns: NaiveKeys,
    pub tier: PoolRef,
    pub link: StageRef,
}

impl NaiveSpill {
    pub fn compiled(sp: SpillPolicy) -> NaiveSpill {
        let fns = sp.fns;
        NaiveSpill {
            fns: NaiveKeys {
                count: 2,
                eval: Rc::new(move |k, row, ctx| {
                    if k == 0 {
                        fns.pred(row, ctx)
                    } else {
                        fns.work(row, ctx)
                    }
                }),
                layout: sp.layout,
            },
            tier: sp.tier,
            link: sp.link,
        }
    }

    fn pred(&self, row: &[f64], ctx: &[f64]) -> f64 {
        (self.fns.eval)(0, row, ctx)
    }

    fn work(&self, row: &[f64], ctx: &[f64]) -> f64 {
        (self.fns.eval)(1, row, ctx)
    }
}

/// What the model is configured with (a mirror of `PoolConfig`).
#[derive(Clone)]
pub struct NaiveConfig {
    pub me: PoolRef,
    /// `None`: `cap inf`.
    pub cap: Option<u64>,
    pub block: u64,
    pub queue: Option<NaiveKeys>,
    pub evict: Option<NaiveKeys>,
    /// `preempt lifo` (R13); `preempt_by` must then be `None`.
    pub lifo: bool,
    /// `preempt by` keys on a resident row (R18).
    pub preempt_by: Option<NaiveKeys>,
    /// `requeue keyed` (R19).
    pub requeue_keyed: bool,
    pub spill: Option<NaiveSpill>,
    /// `fair` (R30): service counters that queue keys read as `service`.
    pub fair: Option<FairConfig>,
}

/// A hold as enqueued: header values and content runs `(id, len)`.
#[derive(Clone, Debug, PartialEq)]
pub struct NHold {
    pub units: u64,
    pub reserve: u64,
    pub runs: Vec<(u64, u64)>,
    pub max_hit: Option<u64>,
}

#[derive(Clone, Debug)]
struct NBlock {
    /// Registered key, if any.
    key: Option<BlockKey>,
    /// Registration number (smaller = registered earlier).
    reg: u64,
    holders: u32,
    /// The id of the entry that caches it.
    entry: Option<u64>,
    /// False once freed or evicted; blocks are never reused.
    alive: bool,
    /// R31: admissions whose hit (or tier load, in a tier) took it.
    hits: u32,
}

#[derive(Clone, Debug)]
struct NEntry {
    id: u64,
    session: SessionId,
    last: f64,
    /// Chain order: the head first, the tail last.
    blocks: Vec<usize>,
}

#[derive(Clone, Debug)]
struct NHolder {
    session: SessionId,
    hold: NHold,
    units: u64,
    computed: u64,
    blocks: Vec<usize>,
    pending: Option<u64>,
    /// When it was admitted (R18 `admitted`).
    admitted: f64,
    /// Its first enqueue's number (R19's tie rule).
    order: u64,
}

#[derive(Clone, Debug)]
struct NWait {
    session: SessionId,
    hold: NHold,
    /// R30: its group as it entered the queue (the group it counts as waiting in).
    group: u64,
    enqueued: f64,
    /// Its first enqueue's number: the queue is kept sorted by it.
    order: u64,
}

pub struct Naive {
    cfg: NaiveConfig,
    blocks: Vec<NBlock>,
    /// In release order.
    entries: Vec<NEntry>,
    /// In admission order.
    holders: Vec<NHolder>,
    /// In enqueue order.
    queue: Vec<NWait>,
    /// Index 0 is the head: the most recently preempted.
    preempted: Vec<NWait>,
    /// Sessions whose grow waits, in failure order.
    pending: Vec<SessionId>,
    /// Every session's attributes at its latest release here.
    snapshots: BTreeMap<SessionId, Vec<f64>>,
    /// R30: the counters charged or lifted so far, by group; a group not here is +0.
    counters: BTreeMap<u64, f64>,
    next_reg: u64,
    next_entry: u64,
    next_order: u64,
    now: f64,
    pub notices: Vec<Notice>,
    pub log: Vec<Record>,
}

/// E5 order of one key, written out: NaN after every number and equal to NaN;
/// numbers by value (so −0 equals +0).
fn e5(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) if a < b => Ordering::Less,
        (false, false) if a > b => Ordering::Greater,
        (false, false) => Ordering::Equal,
    }
}

/// The index of the least row by the key list (lexicographic, E5), the first among
/// equals.
fn least(keys: &NaiveKeys, rows: &[Vec<f64>], ctx: &[f64]) -> usize {
    let values: Vec<Vec<f64>> = rows
        .iter()
        .map(|row| (0..keys.count).map(|k| (keys.eval)(k, row, ctx)).collect())
        .collect();
    let mut best = 0;
    for i in 1..values.len() {
        let mut order = Ordering::Equal;
        for (x, y) in values[i].iter().zip(&values[best]) {
            order = e5(*x, *y);
            if order != Ordering::Equal {
                break;
            }
        }
        if order == Ordering::Less {
            best = i;
        }
    }
    best
}

fn total_len(runs: &[(u64, u64)]) -> u64 {
    runs.iter().map(|r| r.1).sum()
}

/// R2: the key of block `k`, the identity of its last unit, if the block is full
/// and inside the chain.
fn key_of(runs: &[(u64, u64)], k: u64, block: u64) -> Option<BlockKey> {
    let last = (k + 1) * block - 1;
    let mut start = 0;
    for &(id, len) in runs {
        if last < start + len {
            return Some(BlockKey {
                run: RunId(id),
                offset: last - start,
            });
        }
        start += len;
    }
    None
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

impl Naive {
    pub fn new(cfg: NaiveConfig) -> Naive {
        Naive {
            cfg,
            blocks: Vec::new(),
            entries: Vec::new(),
            holders: Vec::new(),
            queue: Vec::new(),
            preempted: Vec::new(),
            pending: Vec::new(),
            snapshots: BTreeMap::new(),
            counters: BTreeMap::new(),
            next_reg: 0,
            next_entry: 0,
            next_order: 0,
            now: f64::NEG_INFINITY,
            notices: Vec::new(),
            log: Vec::new(),
        }
    }

    // ----- counts, recomputed every time ---------------------------------------------

    fn allocated_blocks(&self) -> u64 {
        self.blocks
            .iter()
            .filter(|b| b.alive && b.holders > 0)
            .count() as u64
    }

    fn cached_blocks(&self) -> u64 {
        self.entries.iter().map(|e| e.blocks.len() as u64).sum()
    }

    pub fn allocated(&self) -> Units {
        Units(self.allocated_blocks() * self.cfg.block)
    }

    pub fn cached(&self) -> Units {
        Units(self.cached_blocks() * self.cfg.block)
    }

    pub fn queued(&self) -> usize {
        self.queue.len() + self.preempted.len()
    }

    /// R6 in units: does `allocated + extra` (blocks) fit the cap?
    fn fits(&self, extra_blocks: u64) -> bool {
        match self.cfg.cap {
            None => true,
            Some(cap) => {
                (self.allocated_blocks() as u128 + extra_blocks as u128) * self.cfg.block as u128
                    <= cap as u128
            }
        }
    }

    /// Whether `new` more blocks fit beside everything allocated and cached.
    fn room_for(&self, new_blocks: u64) -> bool {
        match self.cfg.cap {
            None => true,
            Some(cap) => {
                (self.allocated_blocks() + self.cached_blocks() + new_blocks) as u128
                    * self.cfg.block as u128
                    <= cap as u128
            }
        }
    }

    /// R1, checked by the model itself.
    pub fn check_r1(&self) -> Result<(), String> {
        if let Some(cap) = self.cfg.cap {
            let used = (self.allocated_blocks() + self.cached_blocks()) * self.cfg.block;
            if used > cap {
                return Err(format!("naive: R1 broken, {used} > {cap}"));
            }
        }
        Ok(())
    }

    fn push_log(&mut self, event: Event) {
        let record = Record {
            event,
            allocated: self.allocated(),
            cached: self.cached(),
            queued: self.queued(),
        };
        self.log.push(record);
    }

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

    fn is_in_pool(&self, s: SessionId) -> bool {
        self.holders.iter().any(|h| h.session == s)
            || self.queue.iter().any(|w| w.session == s)
            || self.preempted.iter().any(|w| w.session == s)
    }

    // ----- hits ----------------------------------------------------------------------

    /// R4/R7: the blocks a hold would hit now.
    fn hit(&self, hold: &NHold) -> Vec<usize> {
        let b = self.cfg.block;
        let mut limit = hold.units.min(total_len(&hold.runs));
        if let Some(m) = hold.max_hit {
            limit = limit.min(m);
        }
        let mut out = Vec::new();
        for k in 0..limit / b {
            let key = key_of(&hold.runs, k, b).expect("within the chain");
            let copy = (0..self.blocks.len())
                .filter(|&i| self.blocks[i].alive && self.blocks[i].key == Some(key))
                .min_by_key(|&i| self.blocks[i].reg);
            match copy {
                Some(i) => out.push(i),
                None => break,
            }
        }
        out
    }

    fn register_all(&mut self, holder: usize) {
        let b = self.cfg.block;
        let h = &self.holders[holder];
        let upto = h.units.min(total_len(&h.hold.runs)) / b;
        let list: Vec<(usize, BlockKey)> = (0..upto)
            .map(|k| {
                (
                    h.blocks[k as usize],
                    key_of(&h.hold.runs, k, b).expect("within the chain"),
                )
            })
            .collect();
        for (block, key) in list {
            if self.blocks[block].key.is_none() {
                self.blocks[block].key = Some(key);
                self.blocks[block].reg = self.next_reg;
                self.next_reg += 1;
            }
        }
    }

    fn new_block(&mut self) -> usize {
        self.blocks.push(NBlock {
            key: None,
            reg: u64::MAX,
            holders: 1,
            entry: None,
            alive: true,
            hits: 0,
        });
        self.blocks.len() - 1
    }

    fn kill(&mut self, block: usize) {
        let b = &mut self.blocks[block];
        b.alive = false;
        b.key = None;
        b.holders = 0;
        b.entry = None;
    }

    // ----- eviction ------------------------------------------------------------------

    fn attrs_for_entry<E: Env>(&self, env: &E, e: &NEntry) -> Vec<f64> {
        match env.attrs(e.session) {
            Some(a) => a.to_vec(),
            None => self.snapshots.get(&e.session).cloned().unwrap_or_default(),
        }
    }

    fn waiting_on(&self, e: &NEntry) -> f64 {
        let all: Vec<&NWait> = self.preempted.iter().chain(self.queue.iter()).collect();
        all.iter()
            .filter(|w| self.hit(&w.hold).iter().any(|b| e.blocks.contains(b)))
            .count() as f64
    }

    fn evict_moment<E: Env>(&mut self, env: &E) {
        assert!(!self.entries.is_empty(), "naive: nothing to evict");
        let chosen = match &self.cfg.evict {
            None => {
                let mut best = 0;
                for i in 1..self.entries.len() {
                    let (a, b) = (&self.entries[i], &self.entries[best]);
                    if a.last < b.last || (a.last == b.last && a.id < b.id) {
                        best = i;
                    }
                }
                best
            }
            Some(keys) => {
                let rows: Vec<Vec<f64>> = self
                    .entries
                    .iter()
                    .map(|e| self.entry_row(env, e, &keys.layout))
                    .collect();
                least(keys, &rows, &self.entry_ctx(&keys.layout))
            }
        };
        // R12: the spill predicate and work see the entry before its tail leaves.
        let spill = self.cfg.spill.as_ref().and_then(|sp| {
            let e = &self.entries[chosen];
            let row = self.entry_row(env, e, &sp.fns.layout);
            let ctx = self.entry_ctx(&sp.fns.layout);
            let pred = sp.pred(&row, &ctx);
            if pred.is_nan() || pred != 0.0 {
                Some((sp.work(&row, &ctx), sp.tier, sp.link, e.last))
            } else {
                None
            }
        });
        let entry = &mut self.entries[chosen];
        let tail = entry.blocks.pop().expect("entries are never empty");
        let (id, session) = (entry.id, entry.session);
        if entry.blocks.is_empty() {
            self.entries.remove(chosen);
        }
        let key = self.blocks[tail].key.expect("cached blocks have keys");
        self.kill(tail);
        let units = Units(self.cfg.block);
        self.push_log(Event::Evict {
            entry: EntryId(id),
            session,
            key,
            units,
        });
        if let Some((work, tier, link, last)) = spill {
            self.push_log(Event::Spill {
                entry: EntryId(id),
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

    fn entry_row<E: Env>(&self, env: &E, e: &NEntry, layout: &Layout) -> Vec<f64> {
        let attrs = self.attrs_for_entry(env, e);
        layout
            .row
            .iter()
            .map(|input| match *input {
                Input::Attr(a) => attrs[a as usize],
                Input::Size => (e.blocks.len() as u64 * self.cfg.block) as f64,
                Input::Last => e.last,
                Input::Waiting => self.waiting_on(e),
                Input::Hits => f64::from(self.blocks[*e.blocks.last().expect("non-empty")].hits),
                _ => panic!("naive: bad entry row input"),
            })
            .collect()
    }

    fn entry_ctx(&self, layout: &Layout) -> Vec<f64> {
        layout
            .ctx
            .iter()
            .map(|input| match *input {
                Input::Now => self.now,
                Input::SpillUnits => self.cfg.block as f64,
                _ => panic!("naive: bad entry ctx input"),
            })
            .collect()
    }

    fn make_room<E: Env>(&mut self, new_blocks: u64, env: &E) {
        while !self.room_for(new_blocks) {
            self.evict_moment(env);
        }
    }

    // ----- the queue -----------------------------------------------------------------

    fn own_query(&self, kind: QueryKind) -> f64 {
        let b = self.cfg.block as f64;
        let cap = self.cfg.cap.map_or(f64::INFINITY, |c| c as f64);
        match kind {
            QueryKind::Free => {
                cap - self.allocated_blocks() as f64 * b - self.cached_blocks() as f64 * b
            }
            QueryKind::Used => self.allocated_blocks() as f64 * b,
            QueryKind::Cached => self.cached_blocks() as f64 * b,
            QueryKind::Cap => cap,
            QueryKind::Queued => self.queued() as f64,
            QueryKind::BudgetLeft => f64::INFINITY,
            QueryKind::Residents => 0.0,
        }
    }

    /// R8: `Some(true, 0)` = head of the preempted; `Some(false, i)` = queue index.
    fn select<E: Env>(&self, env: &E) -> Option<(bool, usize)> {
        if !self.preempted.is_empty() {
            return Some((true, 0));
        }
        if self.queue.is_empty() {
            return None;
        }
        let Some(keys) = &self.cfg.queue else {
            return Some((false, 0));
        };
        let layout = &keys.layout;
        let rows: Vec<Vec<f64>> = self
            .queue
            .iter()
            .map(|w| {
                layout
                    .row
                    .iter()
                    .map(|input| match *input {
                        Input::Attr(a) => {
                            env.attrs(w.session).expect("waiting sessions live")[a as usize]
                        }
                        Input::Units => w.hold.units as f64,
                        Input::Reserve => w.hold.reserve as f64,
                        Input::Computed => (self.hit(&w.hold).len() as u64 * self.cfg.block) as f64,
                        Input::Enqueued => w.enqueued,
                        Input::Service => self.counter(self.group_now(env, w.session)),
                        _ => panic!("naive: bad queue row input"),
                    })
                    .collect()
            })
            .collect();
        let ctx = self.key_ctx(&layout.ctx, env, "queue");
        Some((false, least(keys, &rows, &ctx)))
    }

    /// One admission attempt: the selected hold, its hit, the units `decide` gives
    /// it (`None` declines), the fit on `max(units, reserve)`, then the admission.
    fn attempt<E: Env>(
        &mut self,
        env: &E,
        tier: Option<&mut Naive>,
        decide: impl FnOnce(SessionId, Hit, &NHold) -> Option<Units>,
    ) -> Result<Admission, Error> {
        let Some((pre, i)) = self.select(env) else {
            return Ok(Admission::Empty);
        };
        let mut w = if pre {
            self.preempted[i].clone()
        } else {
            self.queue[i].clone()
        };
        let b = self.cfg.block;
        let hits = self.hit(&w.hold);
        let hit_units = Units(hits.len() as u64 * b);
        let tier_blocks = tier
            .as_deref()
            .map_or(0, |t| t.tier_run(&w.hold, hits.len() as u64));
        let found = Hit {
            local: hit_units,
            tier: Units(tier_blocks * b),
        };
        let Some(units) = decide(w.session, found, &w.hold) else {
            return Ok(Admission::Declined);
        };
        if units < hit_units {
            return Err(Error::UnitsBelowHit {
                session: w.session,
                units,
                hit: hit_units,
            });
        }
        w.hold.units = units.0;
        let shared = hits.iter().filter(|&&x| self.blocks[x].holders > 0).count() as u64;
        let need = ceil_div(w.hold.units.max(w.hold.reserve), b) - shared;
        if !self.fits(need) {
            return Ok(Admission::Blocked);
        }
        if pre {
            self.preempted.remove(i);
        } else {
            self.queue.remove(i);
        }
        for &x in &hits {
            self.blocks[x].hits += 1;
            if self.blocks[x].holders > 0 {
                self.blocks[x].holders += 1;
            } else {
                let id = self.blocks[x]
                    .entry
                    .expect("an unheld live block is cached");
                let at = self.entries.iter().position(|e| e.id == id).expect("entry");
                self.entries[at].blocks.retain(|&y| y != x);
                if self.entries[at].blocks.is_empty() {
                    self.entries.remove(at);
                }
                self.blocks[x].entry = None;
                self.blocks[x].holders = 1;
            }
        }
        let total = ceil_div(w.hold.units, b);
        let new = total - hits.len() as u64;
        self.make_room(new, env);
        let mut blocks = hits.clone();
        for _ in 0..new {
            blocks.push(self.new_block());
        }
        self.holders.push(NHolder {
            session: w.session,
            units: w.hold.units,
            computed: hits.len() as u64 * b,
            hold: w.hold,
            blocks,
            pending: None,
            admitted: self.now,
            order: w.order,
        });
        let at = self.holders.len() - 1;
        self.register_all(at);
        let (hit, units) = (Units(hits.len() as u64 * b), Units(self.holders[at].units));
        self.push_log(Event::Admit {
            session: w.session,
            hit,
            units,
        });
        self.notices.push(Notice::Admitted {
            session: w.session,
            hit,
            units,
        });
        // R12 tier hit: the tier's blocks within the allocation are loaded.
        let loaded = tier_blocks.min((units.0 / b).saturating_sub(hits.len() as u64));
        if loaded > 0
            && let Some(t) = tier
        {
            // R31: each loaded block counts a hit in the tier.
            let from = hits.len() as u64;
            let hold = &self.holders.last().expect("just admitted").hold;
            for k in from..from + loaded {
                let key = key_of(&hold.runs, k, b).expect("within the chain");
                let copy = (0..t.blocks.len())
                    .filter(|&i| t.blocks[i].alive && t.blocks[i].key == Some(key))
                    .min_by_key(|&i| t.blocks[i].reg)
                    .expect("a loaded block is in the tier");
                t.blocks[copy].hits += 1;
            }
        }
        if loaded > 0 {
            let sp = self
                .cfg
                .spill
                .clone()
                .expect("tier hits only when spilling");
            let loaded = Units(loaded * b);
            let attrs = env.attrs(w.session).expect("an admitted session lives");
            let row: Vec<f64> = sp
                .fns
                .layout
                .row
                .iter()
                .map(|input| match *input {
                    Input::Attr(a) => attrs[a as usize],
                    Input::Size => loaded.0 as f64,
                    Input::Last => self.now,
                    Input::Waiting | Input::Hits => 0.0,
                    _ => panic!("naive: bad entry row input"),
                })
                .collect();
            let ctx: Vec<f64> = sp
                .fns
                .layout
                .ctx
                .iter()
                .map(|input| match *input {
                    Input::Now => self.now,
                    Input::SpillUnits => loaded.0 as f64,
                    _ => panic!("naive: bad entry ctx input"),
                })
                .collect();
            let work = sp.work(&row, &ctx);
            self.push_log(Event::TierLoad {
                session: w.session,
                units: loaded,
                work,
            });
            self.notices.push(Notice::TierLoad {
                session: w.session,
                units: loaded,
                work,
                tier: sp.tier,
                link: sp.link,
            });
        }
        Ok(Admission::Admitted {
            session: w.session,
            hit,
            units,
        })
    }

    // ----- release and preemption ----------------------------------------------------

    fn release_holder<E: Env>(&mut self, at: usize, env: &E) -> Units {
        let h = self.holders.remove(at);
        self.pending.retain(|&s| s != h.session);
        let b = self.cfg.block;
        let mut cached = Vec::new();
        for (k, &x) in h.blocks.iter().enumerate() {
            self.blocks[x].holders -= 1;
            if self.blocks[x].holders > 0 {
                continue;
            }
            if (k as u64 + 1) * b <= h.computed && self.blocks[x].key.is_some() {
                cached.push(x);
            } else {
                self.kill(x);
            }
        }
        let units = Units(cached.len() as u64 * b);
        if !cached.is_empty() {
            let id = self.next_entry;
            self.next_entry += 1;
            for &x in &cached {
                self.blocks[x].entry = Some(id);
            }
            self.entries.push(NEntry {
                id,
                session: h.session,
                last: self.now,
                blocks: cached,
            });
        }
        let attrs = env
            .attrs(h.session)
            .expect("a releasing session lives")
            .to_vec();
        self.snapshots.insert(h.session, attrs);
        units
    }

    fn preempt<E: Env>(&mut self, session: SessionId, env: &E) {
        let at = self
            .holders
            .iter()
            .position(|h| h.session == session)
            .expect("victim holds");
        let h = self.holders[at].clone();
        let cached = self.release_holder(at, env);
        let group = self.group_now(env, session);
        let w = NWait {
            session,
            group,
            hold: NHold {
                units: h.units,
                reserve: h.hold.reserve.max(h.units),
                runs: h.hold.runs.clone(),
                max_hit: h.hold.max_hit,
            },
            enqueued: self.now,
            order: h.order,
        };
        if self.cfg.requeue_keyed {
            // R19: back among the waiting, in first-enqueue order.
            let at = self
                .queue
                .iter()
                .position(|q| q.order > h.order)
                .unwrap_or(self.queue.len());
            self.queue.insert(at, w);
        } else {
            self.preempted.insert(0, w);
        }
        self.push_log(Event::Preempt { session, cached });
        self.notices.push(Notice::Preempted { session });
    }

    fn apply_grow<E: Env>(&mut self, at: usize, by: u64, env: &E) {
        let b = self.cfg.block;
        let units = self.holders[at].units + by;
        let extra = ceil_div(units, b) - self.holders[at].blocks.len() as u64;
        self.make_room(extra, env);
        for _ in 0..extra {
            let x = self.new_block();
            self.holders[at].blocks.push(x);
        }
        self.holders[at].units = units;
        self.register_all(at);
    }

    // ----- service counters (R30) -----------------------------------------------------

    /// A session's group now: its `by` attribute, −0 as +0 and every NaN one group (0
    /// without `fair`, where nothing reads it).
    fn group_now<E: Env>(&self, env: &E, session: SessionId) -> u64 {
        let Some(f) = &self.cfg.fair else { return 0 };
        let v = env.attrs(session).expect("a queued session lives")[f.by as usize];
        if v.is_nan() {
            f64::NAN.to_bits()
        } else if v == 0.0 {
            0
        } else {
            v.to_bits()
        }
    }

    fn counter(&self, group: u64) -> f64 {
        self.counters.get(&group).copied().unwrap_or(0.0)
    }

    /// R30's lift, as an arrival of `group` enters: when nothing of its group waits,
    /// its counter rises to the least (non-NaN) counter of the groups that wait.
    fn lift(&mut self, group: u64) {
        if self.cfg.fair.is_none() {
            return;
        }
        let waiting: Vec<u64> = self
            .preempted
            .iter()
            .chain(&self.queue)
            .map(|w| w.group)
            .collect();
        if waiting.contains(&group) {
            return;
        }
        let mut least: Option<f64> = None;
        for &g in &waiting {
            let c = self.counter(g);
            if !c.is_nan() && least.is_none_or(|l| c < l) {
                least = Some(c);
            }
        }
        if let Some(l) = least
            && l > self.counter(group)
        {
            self.counters.insert(group, l);
        }
    }

    /// R30's charge of a take (or its give-back, R18).
    pub fn charge<E: Env>(
        &mut self,
        session: SessionId,
        prefill: u64,
        decode: u64,
        how: Charge,
        env: &E,
    ) {
        let Some(f) = self.cfg.fair else { return };
        let group = self.group_now(env, session);
        let attrs = env.attrs(session).expect("a charged session lives");
        let w = f.weight.map_or(1.0, |a| attrs[a as usize]);
        let amount = (f.prefill * prefill as f64 + f.decode * decode as f64) / w;
        let c = self.counter(group);
        self.counters.insert(
            group,
            match how {
                Charge::Take => c + amount,
                Charge::GiveBack => c - amount,
            },
        );
    }

    // ----- operations ----------------------------------------------------------------

    pub fn enqueue<E: Env>(
        &mut self,
        now: f64,
        session: SessionId,
        hold: NHold,
        env: &E,
    ) -> Result<Enqueued, Error> {
        self.check_time(now)?;
        if self.is_in_pool(session) {
            return Err(Error::AlreadyInPool(session));
        }
        self.now = now;
        self.notices.clear();
        if let Some(cap) = self.cfg.cap {
            let b = self.cfg.block as u128;
            let rounded = (hold.units.max(hold.reserve) as u128).div_ceil(b) * b;
            if rounded > cap as u128 {
                self.push_log(Event::Reject { session });
                return Ok(Enqueued::Rejected);
            }
        }
        let group = self.group_now(env, session);
        self.lift(group);
        self.queue.push(NWait {
            session,
            hold,
            group,
            enqueued: now,
            order: self.next_order,
        });
        self.next_order += 1;
        self.push_log(Event::Enqueue { session });
        Ok(Enqueued::Queued)
    }

    /// Waiting grows in failure order; false when one still does not fit.
    fn grow_waiting<E: Env>(&mut self, env: &E) -> bool {
        while let Some(&session) = self.pending.first() {
            let at = self
                .holders
                .iter()
                .position(|h| h.session == session)
                .expect("pending holder");
            let by = self.holders[at].pending.expect("pending grow");
            let extra = ceil_div(self.holders[at].units + by, self.cfg.block)
                - self.holders[at].blocks.len() as u64;
            if !self.fits(extra) {
                return false;
            }
            self.pending.remove(0);
            self.holders[at].pending = None;
            self.apply_grow(at, by, env);
            self.push_log(Event::Grow {
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

    pub fn retry_grows<E: Env>(&mut self, now: f64, env: &E) -> Result<bool, Error> {
        self.check_time(now)?;
        self.now = now;
        self.notices.clear();
        Ok(self.grow_waiting(env))
    }

    pub fn settle<E: Env>(&mut self, now: f64, env: &E) -> Result<(), Error> {
        self.check_time(now)?;
        self.now = now;
        self.notices.clear();
        if !self.grow_waiting(env) {
            return Ok(());
        }
        while let Admission::Admitted { .. } =
            self.attempt(env, None, |_, _, h| Some(Units(h.units)))?
        {}
        Ok(())
    }

    pub fn admit_next<E: Env>(
        &mut self,
        now: f64,
        env: &E,
        decide: impl FnOnce(SessionId, Units, &NHold) -> Option<Units>,
    ) -> Result<Admission, Error> {
        self.check_time(now)?;
        self.now = now;
        self.notices.clear();
        self.attempt(env, None, |s, hit, h| decide(s, hit.local, h))
    }

    /// `admit_next` whose hit walk goes on in `tier` (the pool this one spills into)
    /// after this pool's own hit (R12 tier hit, docs/HOST.md "Tier hits"). A tier of
    /// another block size, a pool this one does not spill into, or a pool that does
    /// not spill, finds nothing there.
    pub fn admit_next_tiered<E: Env>(
        &mut self,
        now: f64,
        env: &E,
        tier: Option<&mut Naive>,
        decide: impl FnOnce(SessionId, Hit, &NHold) -> Option<Units>,
    ) -> Result<Admission, Error> {
        self.check_time(now)?;
        self.now = now;
        self.notices.clear();
        let target = self.cfg.spill.as_ref().map(|sp| sp.tier);
        let tier = tier.filter(|t| t.cfg.block == self.cfg.block && target == Some(t.cfg.me));
        self.attempt(env, tier, decide)
    }

    /// As a tier: how many of `hold`'s blocks from block `from` on (within its hit
    /// limit) this pool holds a copy of, held or cached, without a gap.
    fn tier_run(&self, hold: &NHold, from: u64) -> u64 {
        let b = self.cfg.block;
        let mut limit = hold.units.min(total_len(&hold.runs));
        if let Some(m) = hold.max_hit {
            limit = limit.min(m);
        }
        (from..limit / b)
            .take_while(|&k| {
                let key = key_of(&hold.runs, k, b).expect("within the chain");
                self.blocks.iter().any(|x| x.alive && x.key == Some(key))
            })
            .count() as u64
    }

    pub fn set_waiting_header(
        &mut self,
        session: SessionId,
        units: Units,
        reserve: Units,
        max_hit: Option<Units>,
    ) -> Result<(), Error> {
        let cap = self.cfg.cap;
        let b = self.cfg.block as u128;
        let w = self
            .preempted
            .iter_mut()
            .chain(self.queue.iter_mut())
            .find(|w| w.session == session)
            .ok_or(Error::NotWaiting(session))?;
        if let Some(cap) = cap
            && (units.0.max(reserve.0) as u128).div_ceil(b) * b > cap as u128
        {
            return Err(Error::NeverFits(session));
        }
        w.hold.units = units.0;
        w.hold.reserve = reserve.0;
        w.hold.max_hit = max_hit.map(|m| m.0);
        Ok(())
    }

    pub fn set_computed(&mut self, session: SessionId, computed: Units) -> Result<(), Error> {
        let h = self
            .holders
            .iter_mut()
            .find(|h| h.session == session)
            .ok_or(Error::NotHolding(session))?;
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

    pub fn grow<E: Env>(
        &mut self,
        now: f64,
        session: SessionId,
        by: Units,
        env: &E,
    ) -> Result<Grown, Error> {
        self.check_time(now)?;
        let at = self
            .holders
            .iter()
            .position(|h| h.session == session)
            .ok_or(Error::NotHolding(session))?;
        if self.holders[at].pending.is_some() {
            return Err(Error::GrowPending(session));
        }
        self.holders[at]
            .units
            .checked_add(by.0)
            .ok_or(Error::Overflow(session))?;
        self.now = now;
        self.notices.clear();
        loop {
            let at = self
                .holders
                .iter()
                .position(|h| h.session == session)
                .expect("the grower still holds");
            let extra = ceil_div(self.holders[at].units + by.0, self.cfg.block)
                - self.holders[at].blocks.len() as u64;
            if self.fits(extra) {
                self.apply_grow(at, by.0, env);
                self.push_log(Event::Grow { session, by });
                return Ok(Grown::Grown);
            }
            let victim = if self.cfg.lifo {
                self.holders
                    .iter()
                    .rev()
                    .map(|h| h.session)
                    .find(|&s| env.is_resident(s))
            } else if let Some(keys) = &self.cfg.preempt_by {
                self.least_resident(keys, env)
            } else {
                None
            };
            match victim {
                None => {
                    self.holders[at].pending = Some(by.0);
                    self.pending.push(session);
                    self.push_log(Event::GrowWait { session });
                    return Ok(Grown::Waiting);
                }
                Some(v) => {
                    self.preempt(v, env);
                    if v == session {
                        return Ok(Grown::SelfPreempted);
                    }
                }
            }
        }
    }

    /// The ctx of a queue or resident key list: `now`, and queries (this pool's own
    /// state, the host's answer for others).
    fn key_ctx<E: Env>(&self, inputs: &[Input], env: &E, site: &str) -> Vec<f64> {
        inputs
            .iter()
            .map(|input| match *input {
                Input::Now => self.now,
                Input::Query(Query { kind, target }) if target == Target::Pool(self.cfg.me) => {
                    self.own_query(kind)
                }
                Input::Query(q) => env.query(q),
                _ => panic!("naive: bad {site} ctx input"),
            })
            .collect()
    }

    /// R18: the least resident holder by the keys, the earliest admitted among
    /// equals.
    fn least_resident<E: Env>(&self, keys: &NaiveKeys, env: &E) -> Option<SessionId> {
        let residents: Vec<&NHolder> = self
            .holders
            .iter()
            .filter(|h| env.is_resident(h.session))
            .collect();
        if residents.is_empty() {
            return None;
        }
        let rows: Vec<Vec<f64>> = residents
            .iter()
            .map(|h| {
                keys.layout
                    .row
                    .iter()
                    .map(|input| match *input {
                        Input::Attr(a) => {
                            env.attrs(h.session).expect("holding sessions live")[a as usize]
                        }
                        Input::Units => h.units as f64,
                        Input::Computed => h.computed as f64,
                        Input::Admitted => h.admitted,
                        _ => panic!("naive: bad resident row input"),
                    })
                    .collect()
            })
            .collect();
        let ctx = self.key_ctx(&keys.layout.ctx, env, "resident");
        Some(residents[least(keys, &rows, &ctx)].session)
    }

    pub fn release<E: Env>(
        &mut self,
        now: f64,
        session: SessionId,
        env: &E,
    ) -> Result<Units, Error> {
        self.check_time(now)?;
        let at = self
            .holders
            .iter()
            .position(|h| h.session == session)
            .ok_or(Error::NotHolding(session))?;
        self.now = now;
        self.notices.clear();
        let cached = self.release_holder(at, env);
        self.push_log(Event::Release { session, cached });
        Ok(cached)
    }

    // ----- views for the comparison --------------------------------------------------

    /// R12, the tier side (docs/HOST.md "Links and tiers"): a written block joins
    /// the newest entry with the same session and release time, at its head (an
    /// entry is spilled tail first), else a new entry placed in release order by
    /// that release time (ties by entry number, so after every entry released at
    /// the same time or earlier). A key already here, held or cached, is not stored
    /// twice; a cap below one block holds nothing. Room is made by this pool's own
    /// eviction first, which may take the entry the block would have joined.
    pub fn accept_spill<E: Env>(
        &mut self,
        now: f64,
        session: SessionId,
        key: BlockKey,
        last: f64,
        env: &E,
    ) -> Result<Stored, Error> {
        self.check_time(now)?;
        let duplicate = self.blocks.iter().any(|b| b.alive && b.key == Some(key));
        let no_room = self.cfg.cap.is_some_and(|c| c < self.cfg.block);
        let live = env.attrs(session).map(|a| a.to_vec());
        let has_entries = self.entries.iter().any(|e| e.session == session);
        if !duplicate && !no_room && self.reads_attrs() && live.is_none() && !has_entries {
            return Err(Error::NoAttrs(session));
        }
        self.now = now;
        self.notices.clear();
        if duplicate {
            return Ok(Stored::Duplicate);
        }
        if no_room {
            return Ok(Stored::NoRoom);
        }
        // S3 in a tier: each store the host still answers for takes the session's
        // current values.
        if let Some(a) = live {
            self.snapshots.insert(session, a);
        }
        self.make_room(1, env);
        let x = self.blocks.len();
        self.blocks.push(NBlock {
            key: Some(key),
            reg: self.next_reg,
            holders: 0,
            entry: None,
            alive: true,
            hits: 0,
        });
        self.next_reg += 1;
        let joined = (0..self.entries.len())
            .filter(|&i| self.entries[i].session == session && self.entries[i].last == last)
            .max_by_key(|&i| self.entries[i].id);
        let id = match joined {
            Some(i) => {
                self.entries[i].blocks.insert(0, x);
                self.entries[i].id
            }
            None => {
                let id = self.next_entry;
                self.next_entry += 1;
                let at = self
                    .entries
                    .iter()
                    .position(|e| e.last > last)
                    .unwrap_or(self.entries.len());
                self.entries.insert(
                    at,
                    NEntry {
                        id,
                        session,
                        last,
                        blocks: vec![x],
                    },
                );
                id
            }
        };
        self.blocks[x].entry = Some(id);
        self.push_log(Event::Store {
            entry: EntryId(id),
            session,
            key,
            units: Units(self.cfg.block),
        });
        Ok(Stored::Stored(EntryId(id)))
    }

    /// Whether an entry layout (eviction or spill) reads session attributes.
    fn reads_attrs(&self) -> bool {
        let evict = self.cfg.evict.as_ref().map(|k| &k.layout);
        let spill = self.cfg.spill.as_ref().map(|s| &s.fns.layout);
        evict
            .into_iter()
            .chain(spill)
            .any(|l| l.row.iter().any(|i| matches!(i, Input::Attr(_))))
    }

    /// Entries in release order: (id, session, last, keys head first).
    pub fn entries(&self) -> Vec<(u64, SessionId, f64, Vec<BlockKey>)> {
        self.entries
            .iter()
            .map(|e| {
                (
                    e.id,
                    e.session,
                    e.last,
                    e.blocks
                        .iter()
                        .map(|&x| self.blocks[x].key.expect("cached blocks have keys"))
                        .collect(),
                )
            })
            .collect()
    }

    /// Holders sorted by session: (session, units, computed, pending grow).
    pub fn holders(&self) -> Vec<(SessionId, u64, u64, Option<u64>)> {
        let mut v: Vec<_> = self
            .holders
            .iter()
            .map(|h| (h.session, h.units, h.computed, h.pending))
            .collect();
        v.sort_by_key(|h| h.0);
        v
    }

    /// Waiting sessions: preempted head first, then enqueue order.
    pub fn waiting(&self) -> Vec<SessionId> {
        self.preempted
            .iter()
            .chain(self.queue.iter())
            .map(|w| w.session)
            .collect()
    }

    pub fn holds(&self, session: SessionId) -> Option<(u64, u64)> {
        self.holders
            .iter()
            .find(|h| h.session == session)
            .map(|h| (h.units, h.computed))
    }
}
