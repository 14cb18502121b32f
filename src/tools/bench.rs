//! `poolc bench` as a library: a seeded synthetic stream of holds (enqueue → admit →
//! grow → release, with shared prefixes so that hits, the cache and eviction all
//! work), the drivers that feed it to one pool member, and the measurement that runs
//! the same stream through three implementations of the pool's policy functions —
//! the JIT-compiled ones, the reference interpreter behind `extern "C"` trampolines,
//! and hand-written Rust for the built-in policies — interleaved in one process, with
//! medians of repeated runs and the ratios between them. docs/PERFORMANCE.md explains
//! what each figure is of.
//!
//! It never prints (the CLI does) and it reads no clock outside [`Meter`], so a test
//! can swap the clock for an allocation counter and check the same hot path.
//!
//! Decisions:
//! - **Interpreter backend.** The engine takes `extern "C"` function pointers with no
//!   data argument, so the interpreted key lists are trampolines (one per key index
//!   and table, by const generics) that look their IR expressions up in a
//!   thread-local table installed by [`Backends::new`]; they call `interp::eval`,
//!   `interp::cmp` and the same per-row loop as `interp::select` (a key vector per
//!   row). Interpreted key lists therefore work only on the thread that built them.
//! - **Hand-written Rust** exists for `queue by (priority, serial)`, the seed's
//!   Ascend lanes and `evict by (priority, last)` (recognised from the IR, with their
//!   slot layouts); `queue fifo` and `evict lru` have no policy code, so there the
//!   three backends run the same engine path and their ratio shows measurement noise.
//!   Spill `when`/`work` stay compiled in the Rust backend.
//! - **Sessions are recycled.** A session id is a slot of the host's table, reused
//!   (oldest free first) once its hold is released, so memory stays bounded however
//!   long a run is; a released session reads as ended (`Env::attrs` gives `None`)
//!   until its slot is reused, which exercises the S3 snapshots of `evict by` keys.
//!   `serial` is an arrival counter, not the id.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::fmt::Write as _;
use std::time::Instant;

use poolrt::env::default_query;
use poolrt::policy::{CodeHandle, KeyFn, KeyList, PoolPolicy, Shape, SpillFns};
use poolrt::{
    Admission, Chain, Enqueued, Env, Grown, Header, Input, Limit, Pool, PoolConfig, Query,
    QueuePolicy, Run, RunId, SessionId, Units,
};
use serde_json::{Value, json};

use crate::codegen::Compiled;
use crate::interp;
use crate::ir::{self, Expr, PoolId, Program, Slot};

/// Holds admitted per round of the admission phase (fewer when the cap is small).
pub const BATCH: usize = 64;
/// Blocks of each hold, hence of each cache entry, in the eviction phase.
pub const EVICT_BLOCKS: u64 = 16;
/// Distinct shared prefixes of the admission phase.
pub const PREFIXES: u64 = 16;
/// The most blocks a hold of the admission phase asks for before its grow of one
/// block: 32 with it, so the engine's recycled block lists reach their final size
/// soon (a warm pool allocates nothing; a rare larger hold would grow one once).
pub const MAX_HOLD_BLOCKS: u64 = 31;
/// Seconds a hold waits on average in a first-come queue of the admission phase
/// (so that `waited >= 3` splits the seed's Ascend lanes).
pub const QUEUE_SPAN: f64 = 6.0;

/// Why a benchmark could not run: a pool that cannot carry the stream, a host
/// contract the stream broke, or backends that disagree (a bug).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchError(pub String);

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

fn err(message: impl Into<String>) -> BenchError {
    BenchError(message.into())
}

/// A fixed xorshift64 generator: the stream is the same on every run and machine.
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Any seed, 0 included, gives a non-zero state.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `lo..=hi` (`lo <= hi`).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

// ----- the host side: sessions and their attributes ------------------------------------

/// The benchmark's host as the pool sees it: attribute rows of live sessions (a
/// slot per session id), everyone resident, default query values.
#[derive(Clone, Debug, Default)]
pub struct BenchEnv {
    n_attrs: usize,
    values: Vec<f64>,
    live: Vec<bool>,
}

impl Env for BenchEnv {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        let i = usize::try_from(session.0).ok()?;
        if !*self.live.get(i)? {
            return None;
        }
        self.values.get(i * self.n_attrs..(i + 1) * self.n_attrs)
    }

    fn is_resident(&self, _: SessionId) -> bool {
        true
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }
}

/// How a session attribute gets its value in the stream.
#[derive(Clone, Copy, Debug)]
enum AttrGen {
    /// Arrival order.
    Serial,
    /// The time the hold is made.
    Arrival,
    /// The hold's units.
    Prompt,
    /// Uniform 1–256.
    Output,
    /// 1 for one hold in 20.
    Immediate,
    /// Uniform 0–3 (also any attribute without a default).
    Small,
    Fixed(f64),
}

fn attr_gens(program: &Program) -> Vec<AttrGen> {
    program
        .session
        .attrs
        .iter()
        .map(|a| match a.name.as_str() {
            "serial" => AttrGen::Serial,
            "arrival" => AttrGen::Arrival,
            "prompt" => AttrGen::Prompt,
            "output" => AttrGen::Output,
            "immediate" => AttrGen::Immediate,
            "priority" => AttrGen::Small,
            _ => a.default.map_or(AttrGen::Small, AttrGen::Fixed),
        })
        .collect()
}

/// The shape of a stream, derived from the pool's block and cap.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamShape {
    pub block: u64,
    /// Holds per round: admitted one after the other, then grown and released.
    pub batch: usize,
    /// Blocks of a hold before its grow: 1 to this many.
    pub max_blocks: u64,
    /// Blocks of each shared prefix (0: no sharing).
    pub prefix_blocks: u64,
    pub prefixes: u64,
    /// The fraction of holds that start with a shared prefix.
    pub share: f64,
    /// Blocks each holder grows by before it is released.
    pub grow_blocks: u64,
    /// Seconds between two admissions.
    pub dt: f64,
}

impl StreamShape {
    /// The admission phase's stream for a pool of `block` units and `cap_blocks`
    /// (`None`: `cap inf`), with `queue` holds waiting and holds of at most
    /// `max_hold` blocks (fewer when the cap needs): a round's holds, grown, fit the
    /// cap together, so an admission never blocks and a grow never waits.
    pub fn admission(
        block: u64,
        cap_blocks: Option<u64>,
        queue: usize,
        share: f64,
        max_hold: u64,
    ) -> Result<StreamShape, BenchError> {
        let max_hold = max_hold.clamp(1, MAX_HOLD_BLOCKS);
        let (batch, max_blocks) = match cap_blocks {
            None => (BATCH, max_hold),
            Some(cap) if cap < 2 => {
                return Err(err(format!(
                    "the pool's cap holds {cap} block(s); the benchmark needs at least 2"
                )));
            }
            Some(cap) => {
                let batch = BATCH.min((cap / 2) as usize).max(1);
                let max = (cap / batch as u64).saturating_sub(1).clamp(1, max_hold);
                (batch, max)
            }
        };
        Ok(StreamShape {
            block,
            batch,
            max_blocks,
            // A quarter of the largest hold, at least a block when a hold can have
            // a prefix and content of its own.
            prefix_blocks: if max_blocks >= 2 {
                (max_blocks / 4).max(1)
            } else {
                0
            },
            prefixes: PREFIXES,
            share,
            grow_blocks: 1,
            dt: QUEUE_SPAN / queue.max(1) as f64,
        })
    }

    /// The eviction phase's stream: fresh holds of [`EVICT_BLOCKS`] blocks, a round
    /// of at most a quarter of the `entries` the cache keeps.
    pub fn eviction(block: u64, entries: usize) -> StreamShape {
        StreamShape {
            block,
            batch: (entries / 4).clamp(1, BATCH),
            max_blocks: EVICT_BLOCKS,
            prefix_blocks: 0,
            prefixes: 0,
            share: 0.0,
            grow_blocks: 0,
            dt: 1e-3,
        }
    }
}

/// One hold of the stream: its session, units, content runs `(id, len)` (covering
/// its grow too) and the units it will grow by.
#[derive(Clone, Debug, PartialEq)]
pub struct HoldSpec {
    pub session: SessionId,
    pub units: u64,
    pub runs: Vec<(u64, u64)>,
    pub grow: u64,
}

/// The seeded stream of holds and the host table their sessions live in.
#[derive(Clone, Debug)]
pub struct Stream {
    shape: StreamShape,
    rng: Rng,
    gens: Vec<AttrGen>,
    env: BenchEnv,
    units: Vec<u64>,
    free: VecDeque<u32>,
    serial: u64,
    next_run: u64,
    now: f64,
}

/// Run ids of holds' own content start here, above every prefix id.
const OWN_RUNS: u64 = 1 << 32;

impl Stream {
    pub fn new(program: &Program, shape: StreamShape, seed: u64) -> Stream {
        let gens = attr_gens(program);
        Stream {
            env: BenchEnv {
                n_attrs: gens.len(),
                ..BenchEnv::default()
            },
            shape,
            rng: Rng::new(seed),
            gens,
            units: Vec::new(),
            free: VecDeque::new(),
            serial: 0,
            next_run: OWN_RUNS,
            now: 0.0,
        }
    }

    pub fn shape(&self) -> &StreamShape {
        &self.shape
    }

    pub fn env(&self) -> &BenchEnv {
        &self.env
    }

    pub fn now(&self) -> f64 {
        self.now
    }

    /// Moves time on by one admission's interval.
    pub fn tick(&mut self) {
        self.now += self.shape.dt;
    }

    /// The units a session's hold asked for (before its grow).
    pub fn units(&self, session: SessionId) -> u64 {
        self.units[session.0 as usize]
    }

    /// A live session for a hold of `units`, with its attributes drawn.
    fn session(&mut self, units: u64) -> SessionId {
        let slot = match self.free.pop_front() {
            Some(s) => s as usize,
            None => {
                self.env.live.push(false);
                self.units.push(0);
                self.env
                    .values
                    .resize(self.env.values.len() + self.gens.len(), 0.0);
                self.env.live.len() - 1
            }
        };
        let n = self.gens.len();
        for (k, g) in self.gens.iter().enumerate() {
            let v = match *g {
                AttrGen::Serial => self.serial as f64,
                AttrGen::Arrival => self.now,
                AttrGen::Prompt => units as f64,
                AttrGen::Output => self.rng.range(1, 256) as f64,
                AttrGen::Immediate => f64::from(u8::from(self.rng.range(0, 19) == 0)),
                AttrGen::Small => self.rng.range(0, 3) as f64,
                AttrGen::Fixed(x) => x,
            };
            self.env.values[slot * n + k] = v;
        }
        self.serial += 1;
        self.env.live[slot] = true;
        self.units[slot] = units;
        SessionId(slot as u64)
    }

    fn own_run(&mut self) -> u64 {
        self.next_run += 1;
        self.next_run
    }

    /// The next hold of the admission phase: 1 to `max_blocks` blocks (the last one
    /// partly used), a shared prefix for a `share` of them, own content after it.
    pub fn hold(&mut self) -> HoldSpec {
        let s = &self.shape;
        let (b, max, prefix) = (s.block, s.max_blocks, s.prefix_blocks);
        let shared = prefix > 0 && max > prefix && self.rng.unit() < s.share;
        let blocks = if shared {
            prefix + self.rng.range(1, max - prefix)
        } else {
            self.rng.range(1, max)
        };
        let units = (blocks - 1) * b + self.rng.range(1, b);
        let grow = s.grow_blocks * b;
        let mut runs = Vec::with_capacity(2);
        let mut own = units + grow;
        if shared {
            let p = self.rng.range(1, self.shape.prefixes);
            runs.push((p, prefix * b));
            own -= prefix * b;
        }
        runs.push((self.own_run(), own));
        let session = self.session(units);
        HoldSpec {
            session,
            units,
            runs,
            grow,
        }
    }

    /// A hold of `blocks` full blocks of content nobody else has (eviction phase).
    pub fn fresh(&mut self, blocks: u64) -> HoldSpec {
        let units = blocks * self.shape.block;
        let runs = vec![(self.own_run(), units)];
        let session = self.session(units);
        HoldSpec {
            session,
            units,
            runs,
            grow: 0,
        }
    }

    /// The session's hold was released: it ends, and its slot will be reused.
    pub fn end(&mut self, session: SessionId) {
        self.env.live[session.0 as usize] = false;
        self.free.push_back(session.0 as u32);
    }
}

// ----- what drives a pool --------------------------------------------------------------

/// Running totals of what a member did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub admissions: u64,
    pub evictions: u64,
    pub hit_units: u64,
}

/// One pool member as the driver drives it: the engine here, the naive model in
/// the criterion bench. Every method but [`Member::make_hold`] and
/// [`Member::counts`] may be on the measured path, so none may allocate except to
/// report an error.
pub trait Member {
    type Hold;
    fn make_hold(&self, spec: &HoldSpec) -> Result<Self::Hold, BenchError>;
    /// Queues a hold; a rejection (R5) is an error: the stream is sized to fit.
    fn enqueue(
        &mut self,
        now: f64,
        s: SessionId,
        hold: Self::Hold,
        env: &BenchEnv,
    ) -> Result<(), BenchError>;
    /// One admission attempt giving the selected hold its own units; `None` when
    /// nothing was admitted.
    fn admit(&mut self, now: f64, env: &BenchEnv) -> Result<Option<SessionId>, BenchError>;
    /// Grows a holder; anything but a completed grow is an error.
    fn grow(&mut self, now: f64, s: SessionId, by: u64, env: &BenchEnv) -> Result<(), BenchError>;
    /// Sets the holder's computed units and releases it (R14).
    fn finish(
        &mut self,
        now: f64,
        s: SessionId,
        computed: u64,
        env: &BenchEnv,
    ) -> Result<(), BenchError>;
    fn counts(&mut self) -> Counts;
}

fn engine_err(e: poolrt::Error) -> BenchError {
    err(format!("the pool refused the stream: {e}"))
}

/// The engine, `poolrt::Pool`.
#[derive(Debug)]
pub struct EngineMember(pub Pool);

impl Member for EngineMember {
    type Hold = Header;

    fn make_hold(&self, spec: &HoldSpec) -> Result<Header, BenchError> {
        let chain = Chain::new(
            spec.runs
                .iter()
                .map(|&(id, len)| Run {
                    id: RunId(id),
                    len: Units(len),
                })
                .collect(),
        )
        .map_err(|e| err(format!("a stream chain is malformed: {e}")))?;
        Ok(Header::new(Units(spec.units), chain))
    }

    fn enqueue(
        &mut self,
        now: f64,
        s: SessionId,
        hold: Header,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        match self.0.enqueue(now, s, hold, env).map_err(engine_err)? {
            Enqueued::Queued => Ok(()),
            Enqueued::Rejected => Err(err(format!("the pool rejected {s} (R5)"))),
        }
    }

    fn admit(&mut self, now: f64, env: &BenchEnv) -> Result<Option<SessionId>, BenchError> {
        let r = self
            .0
            .admit_next(now, env, |_, _, h| Some(h.units))
            .map_err(engine_err)?;
        Ok(match r {
            Admission::Admitted { session, .. } => Some(session),
            _ => None,
        })
    }

    fn grow(&mut self, now: f64, s: SessionId, by: u64, env: &BenchEnv) -> Result<(), BenchError> {
        match self.0.grow(now, s, Units(by), env).map_err(engine_err)? {
            Grown::Grown => Ok(()),
            other => Err(err(format!("a grow of {s} did not complete: {other:?}"))),
        }
    }

    fn finish(
        &mut self,
        now: f64,
        s: SessionId,
        computed: u64,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        self.0
            .set_computed(s, Units(computed))
            .map_err(engine_err)?;
        self.0.release(now, s, env).map_err(engine_err)?;
        Ok(())
    }

    fn counts(&mut self) -> Counts {
        let c = self.0.counters();
        Counts {
            admissions: c.admissions,
            evictions: c.evictions,
            hit_units: c.hit_units,
        }
    }
}

/// What the driver measures with: a clock, or (in the allocation test) a counter.
pub trait Meter {
    fn begin(&mut self);
    /// Nanoseconds (or whatever the meter counts) since `begin`.
    fn end(&mut self) -> u64;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wall(Option<Instant>);

impl Meter for Wall {
    fn begin(&mut self) {
        self.0 = Some(Instant::now());
    }

    fn end(&mut self) -> u64 {
        self.0.take().map_or(0, |t| {
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
    }
}

/// Which of the two streams a driver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `queue` holds wait; each admission is the enqueue of a new hold and one
    /// admission attempt, so the queue stays at its length. Holders then grow by a
    /// block and are released with everything computed, feeding the cache.
    Admission,
    /// The cache holds `entries` entries of [`EVICT_BLOCKS`] blocks and the cap is
    /// exactly that: each admission of a fresh hold of that size evicts as many
    /// blocks, and its release makes a new entry.
    Eviction,
}

/// Totals of a driver's measured work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub counts: Counts,
    /// Metered time of the enqueues and admission attempts.
    pub admit_ns: u64,
    /// Metered time of the grows, set-computeds and releases.
    pub rest_ns: u64,
}

/// What one round did: the phase's operations and the metered time of its
/// admissions and of its grows and releases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub ops: u64,
    pub admit_ns: u64,
    pub rest_ns: u64,
}

/// Drives one member with one stream, a round at a time.
pub struct Driver<M: Member> {
    pub member: M,
    pub stream: Stream,
    phase: Phase,
    prepared: Vec<(SessionId, M::Hold)>,
    holders: Vec<SessionId>,
    totals: Totals,
}

impl<M: Member> Driver<M> {
    pub fn new(member: M, stream: Stream, phase: Phase) -> Driver<M> {
        let batch = stream.shape.batch;
        Driver {
            member,
            stream,
            phase,
            prepared: Vec::with_capacity(batch),
            holders: Vec::with_capacity(batch),
            totals: Totals::default(),
        }
    }

    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Brings the member to the phase's starting state, unmeasured: `n` waiting
    /// holds (admission phase) or `n` cache entries (eviction phase).
    pub fn fill(&mut self, n: usize) -> Result<(), BenchError> {
        for _ in 0..n {
            self.stream.tick();
            let now = self.stream.now;
            match self.phase {
                Phase::Admission => {
                    let spec = self.stream.hold();
                    let hold = self.member.make_hold(&spec)?;
                    self.member
                        .enqueue(now, spec.session, hold, &self.stream.env)?;
                }
                Phase::Eviction => {
                    let spec = self.stream.fresh(EVICT_BLOCKS);
                    let hold = self.member.make_hold(&spec)?;
                    let env = &self.stream.env;
                    self.member.enqueue(now, spec.session, hold, env)?;
                    if self.member.admit(now, env)? != Some(spec.session) {
                        return Err(err("filling the cache: a fresh hold was not admitted"));
                    }
                    self.member.finish(now, spec.session, spec.units, env)?;
                    self.stream.end(spec.session);
                }
            }
        }
        self.totals.counts = self.member.counts();
        Ok(())
    }

    /// The phase's operations so far: admissions, or evictions.
    pub fn ops(&self) -> u64 {
        match self.phase {
            Phase::Admission => self.totals.counts.admissions,
            Phase::Eviction => self.totals.counts.evictions,
        }
    }

    /// One round: prepare a batch of holds (unmeasured: making a header is the
    /// host's allocation), then, metered, enqueue each and attempt one admission;
    /// then, metered apart, grow and release every holder.
    pub fn round(&mut self, meter: &mut impl Meter) -> Result<Round, BenchError> {
        let start = self.ops();
        let batch = self.stream.shape.batch;
        self.prepared.clear();
        for _ in 0..batch {
            let spec = match self.phase {
                Phase::Admission => self.stream.hold(),
                Phase::Eviction => self.stream.fresh(EVICT_BLOCKS),
            };
            let hold = self.member.make_hold(&spec)?;
            self.prepared.push((spec.session, hold));
        }
        self.holders.clear();
        meter.begin();
        for (s, hold) in self.prepared.drain(..) {
            self.stream.now += self.stream.shape.dt;
            let now = self.stream.now;
            self.member.enqueue(now, s, hold, &self.stream.env)?;
            match self.member.admit(now, &self.stream.env)? {
                Some(a) => self.holders.push(a),
                None => return Err(err("an admission attempt admitted nothing")),
            }
        }
        let admit_ns = meter.end();
        self.totals.admit_ns += admit_ns;
        let grow = self.stream.shape.grow_blocks * self.stream.shape.block;
        meter.begin();
        let now = self.stream.now;
        for &s in &self.holders {
            let units = self.stream.units[s.0 as usize];
            if grow > 0 {
                self.member.grow(now, s, grow, &self.stream.env)?;
            }
            self.member.finish(now, s, units + grow, &self.stream.env)?;
        }
        let rest_ns = meter.end();
        self.totals.rest_ns += rest_ns;
        for k in 0..self.holders.len() {
            self.stream.end(self.holders[k]);
        }
        self.totals.counts = self.member.counts();
        let ops = self.ops() - start;
        if ops == 0 {
            return Err(err(
                "a round did no work (nothing admitted or nothing evicted)",
            ));
        }
        Ok(Round {
            ops,
            admit_ns,
            rest_ns,
        })
    }

    /// Rounds until the phase's operations (admissions, or evictions) have grown by
    /// at least `ops`.
    pub fn run(&mut self, ops: u64, meter: &mut impl Meter) -> Result<(), BenchError> {
        let start = self.ops();
        while self.ops() - start < ops {
            self.round(meter)?;
        }
        Ok(())
    }
}

// ----- the three backends ---------------------------------------------------------------

/// An implementation of a pool's policy functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Backend {
    Compiled,
    Interp,
    Rust,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Compiled => "compiled",
            Backend::Interp => "interp",
            Backend::Rust => "rust",
        }
    }
}

/// A queue policy the benchmark knows by shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownQueue {
    Fifo,
    /// `queue by (priority, serial)`.
    PrioritySerial,
    /// The seed's Ascend lanes, reading `waited`.
    Ascend,
    /// Keys with no hand-written Rust counterpart.
    Other,
}

/// An evict policy the benchmark knows by shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownEvict {
    Lru,
    /// `evict by (priority, last)` with `last` in entry-row slot `last`.
    PriorityLast {
        last: usize,
    },
    Other,
}

/// Names of an input as the source spells it.
fn input_name(i: &ir::Input, p: &Program) -> String {
    match i {
        ir::Input::Attr(a) => p.session.attr(*a).name.clone(),
        ir::Input::Var(v) => v.name().to_string(),
        ir::Input::Enqueued => "enqueued".to_string(),
        ir::Input::Query(q) => format!("query:{:?}", q.kind),
    }
}

/// An expression in prefix form over source names, for recognising a policy
/// regardless of attribute numbering.
fn canon(e: &Expr, row: &[String], ctx: &[String]) -> String {
    let name = |names: &[String], i: u32| names.get(i as usize).cloned().unwrap_or_default();
    match e {
        Expr::Const(c) => format!("{c:?}"),
        Expr::Slot(Slot::Row(i)) => name(row, *i),
        Expr::Slot(Slot::Ctx(i)) => name(ctx, *i),
        Expr::Unary(op, x) => format!("({} {})", op.symbol(), canon(x, row, ctx)),
        Expr::Binary(op, a, b) => format!(
            "({} {} {})",
            op.symbol(),
            canon(a, row, ctx),
            canon(b, row, ctx)
        ),
        Expr::Cond(c, a, b) => format!(
            "(? {} {} {})",
            canon(c, row, ctx),
            canon(a, row, ctx),
            canon(b, row, ctx)
        ),
        Expr::Call(f, args) => {
            let args: Vec<String> = args.iter().map(|a| canon(a, row, ctx)).collect();
            format!("({} {})", f.name(), args.join(" "))
        }
    }
}

const ASCEND_LANE: &str = "(? immediate 0.0 (? (&& (> prompt 128.0) (>= (- now enqueued) 3.0)) \
                           1.0 (? (<= prompt 128.0) 2.0 3.0)))";

/// A site's keys in [`canon`] form, with the names of its row and ctx slots (the
/// layout the hand-written functions must match as well): `(keys, row, ctx)`.
fn canon_site(
    keys: &[ir::SiteExpr],
    layout: &ir::Layout,
    p: &Program,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let names = |inputs: &[ir::Input]| inputs.iter().map(|i| input_name(i, p)).collect();
    let (row, ctx): (Vec<String>, Vec<String>) = (names(&layout.row), names(&layout.ctx));
    let keys = keys.iter().map(|k| canon(&k.expr, &row, &ctx)).collect();
    (keys, row, ctx)
}

/// Recognises a pool's queue policy (and its slot layout, which the hand-written
/// functions assume).
pub fn known_queue(p: &Program, pool: PoolId) -> KnownQueue {
    let cp = p.pool(pool);
    let ir::QueuePolicy::By(keys) = &cp.queue else {
        return KnownQueue::Fifo;
    };
    let (keys, row, ctx) = canon_site(keys, &cp.queue_layout, p);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    if keys == ["priority", "serial"] && row == ["serial", "priority"] && ctx.is_empty() {
        KnownQueue::PrioritySerial
    } else if keys == [ASCEND_LANE, "serial"]
        && row == ["serial", "prompt", "immediate", "enqueued"]
        && ctx == ["now"]
    {
        KnownQueue::Ascend
    } else {
        KnownQueue::Other
    }
}

/// Recognises a pool's evict policy.
pub fn known_evict(p: &Program, pool: PoolId) -> KnownEvict {
    let cp = p.pool(pool);
    let ir::Evict::By(keys) = &cp.evict else {
        return KnownEvict::Lru;
    };
    let (keys, row, _) = canon_site(keys, &cp.entry_layout, p);
    let last = row.iter().position(|n| n == "last");
    match last {
        Some(l @ 1..=3) if keys == ["priority", "last"] && row[0] == "priority" => {
            KnownEvict::PriorityLast { last: l }
        }
        _ => KnownEvict::Other,
    }
}

fn describe_queue(k: KnownQueue, p: &Program, pool: PoolId) -> String {
    match k {
        KnownQueue::Fifo => "fifo".into(),
        KnownQueue::PrioritySerial => "by (priority, serial)".into(),
        KnownQueue::Ascend => "by the seed's Ascend lanes".into(),
        KnownQueue::Other => match &p.pool(pool).queue {
            ir::QueuePolicy::By(keys) => format!("by {} key(s)", keys.len()),
            ir::QueuePolicy::Fifo => "fifo".into(),
        },
    }
}

fn describe_evict(k: KnownEvict, p: &Program, pool: PoolId) -> String {
    match k {
        KnownEvict::Lru => "lru".into(),
        KnownEvict::PriorityLast { .. } => "by (priority, last)".into(),
        KnownEvict::Other => match &p.pool(pool).evict {
            ir::Evict::By(keys) => format!("by {} key(s)", keys.len()),
            ir::Evict::Lru => "lru".into(),
        },
    }
}

// The interpreter behind trampolines.

/// The most keys an interpreted key list may have (one trampoline per index).
const MAX_KEYS: usize = 8;

/// Table numbers: queue keys, evict keys, spill `[pred, work]`.
const QUEUE: usize = 0;
const EVICT: usize = 1;
const SPILL: usize = 2;

struct Table {
    exprs: Vec<Expr>,
    shape: Shape,
}

thread_local! {
    static TABLES: RefCell<[Option<Table>; 3]> = const { RefCell::new([None, None, None]) };
}

/// A slice of `len` slots at `p` (`&[]` when `len` is 0: the pointer may dangle).
///
/// # Safety
/// `p` must point to `len` readable `f64`s that outlive the returned slice's use.
unsafe fn slots<'a>(p: *const f64, len: usize) -> &'a [f64] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller vouches for `len` readable slots.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

fn with_table<R>(t: usize, f: impl FnOnce(&Table) -> R) -> R {
    TABLES.with(|tables| {
        let tables = tables.borrow();
        let table = tables[t]
            .as_ref()
            .expect("an interpreted policy runs on the thread that installed it");
        f(table)
    })
}

unsafe extern "C" fn interp_key<const T: usize, const I: usize>(
    row: *const f64,
    ctx: *const f64,
) -> f64 {
    with_table(T, |t| {
        // SAFETY: the engine passes rows and ctx of the key list's shape.
        let (row, ctx) = unsafe { (slots(row, t.shape.row), slots(ctx, t.shape.ctx)) };
        interp::eval(&t.exprs[I], row, ctx)
    })
}

unsafe extern "C" fn interp_cmp<const T: usize>(
    a: *const f64,
    b: *const f64,
    ctx: *const f64,
) -> i32 {
    with_table(T, |t| {
        // SAFETY: as in `interp_key`, for both rows.
        let (a, b, ctx) = unsafe {
            (
                slots(a, t.shape.row),
                slots(b, t.shape.row),
                slots(ctx, t.shape.ctx),
            )
        };
        interp::cmp(&t.exprs, a, b, ctx)
    })
}

/// `interp::select`'s loop (a key vector per row, ties to the lowest index) over
/// rows that need not be contiguous beyond the shape.
unsafe extern "C" fn interp_select<const T: usize>(
    rows: *const f64,
    n: u64,
    stride: u64,
    ctx: *const f64,
) -> i64 {
    with_table(T, |t| {
        // SAFETY: as in `interp_key`.
        let ctx = unsafe { slots(ctx, t.shape.ctx) };
        let mut best: Option<(usize, Vec<f64>)> = None;
        for i in 0..n as usize {
            // SAFETY: the caller guarantees every row i < n at rows + i * stride.
            let row = unsafe { slots(rows.add(i * stride as usize), t.shape.row) };
            let values: Vec<f64> = t.exprs.iter().map(|e| interp::eval(e, row, ctx)).collect();
            let replace = match &best {
                None => true,
                Some((_, b)) => interp::compare_keys(&values, b).is_lt(),
            };
            if replace {
                best = Some((i, values));
            }
        }
        best.map_or(-1, |(i, _)| i as i64)
    })
}

fn interp_keys<const T: usize>() -> [KeyFn; MAX_KEYS] {
    [
        interp_key::<T, 0>,
        interp_key::<T, 1>,
        interp_key::<T, 2>,
        interp_key::<T, 3>,
        interp_key::<T, 4>,
        interp_key::<T, 5>,
        interp_key::<T, 6>,
        interp_key::<T, 7>,
    ]
}

fn install<const T: usize>(
    exprs: Vec<Expr>,
    shape: Shape,
) -> Result<[KeyFn; MAX_KEYS], BenchError> {
    if exprs.len() > MAX_KEYS {
        return Err(err(format!(
            "the interpreter backend takes at most {MAX_KEYS} keys per list, this one has {}",
            exprs.len()
        )));
    }
    TABLES.with(|t| t.borrow_mut()[T] = Some(Table { exprs, shape }));
    Ok(interp_keys::<T>())
}

fn interp_list<const T: usize>(
    keys: &[ir::SiteExpr],
    compiled: &KeyList,
) -> Result<KeyList, BenchError> {
    let shape = compiled.shape();
    let fns = install::<T>(keys.iter().map(|k| k.expr.clone()).collect(), shape)?;
    // SAFETY: each trampoline reads the slots of `shape` (the compiled list's, which
    // covers every slot the expressions read) and evaluates the same expressions;
    // the functions are static.
    Ok(unsafe {
        KeyList::new(
            fns[..keys.len()].to_vec(),
            interp_cmp::<T>,
            interp_select::<T>,
            shape,
            CodeHandle::process(),
        )
    })
}

// Hand-written Rust, in E5 order: NaN greatest, −0 == +0.

/// E5 order as integers (the mapping the JIT uses: NaN greatest, −0 == +0), so that
/// the hand-written loops, here and in benches/select.rs, implement the same order
/// and not a cheaper one.
#[inline(always)]
pub fn order_bits(x: f64) -> i64 {
    if x.is_nan() {
        return i64::MAX;
    }
    let bits = if x == 0.0 { 0 } else { x.to_bits() as i64 };
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

#[inline(always)]
fn cmp_pairs(a: (i64, i64), b: (i64, i64)) -> i32 {
    a.cmp(&b) as i32
}

/// The least row by a two-key list given as a function of the row (ties to the
/// lowest index).
///
/// # Safety
/// Every row `rows + i * stride`, `i < n`, must hold the slots `keys` reads.
#[inline(always)]
unsafe fn select2(
    rows: *const f64,
    n: u64,
    stride: u64,
    keys: impl Fn(*const f64) -> (i64, i64),
) -> i64 {
    let mut best = -1i64;
    let mut held = (0i64, 0i64);
    let mut row = rows;
    for i in 0..n as i64 {
        let k = keys(row);
        if best < 0 || k < held {
            best = i;
            held = k;
        }
        // SAFETY: stays inside (or one row past) the caller's extent.
        row = unsafe { row.add(stride as usize) };
    }
    best
}

// `(priority, serial)` on the queue row [serial, priority].
unsafe extern "C" fn ps_priority(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: the shape promises two row slots.
    unsafe { *row.add(1) }
}

unsafe extern "C" fn ps_serial(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row }
}

#[inline(always)]
unsafe fn ps_keys(row: *const f64) -> (i64, i64) {
    // SAFETY: two row slots.
    unsafe { (order_bits(*row.add(1)), order_bits(*row)) }
}

unsafe extern "C" fn ps_cmp(a: *const f64, b: *const f64, _: *const f64) -> i32 {
    // SAFETY: as above, for both rows.
    unsafe { cmp_pairs(ps_keys(a), ps_keys(b)) }
}

unsafe extern "C" fn ps_select(rows: *const f64, n: u64, stride: u64, _: *const f64) -> i64 {
    // SAFETY: the caller guarantees the rows.
    unsafe { select2(rows, n, stride, |r| ps_keys(r)) }
}

// The seed's Ascend lanes on the queue row [serial, prompt, immediate, enqueued]
// with ctx [now]: `immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128
// ? 2 : 3`, then `serial`.
#[inline(always)]
fn lane(prompt: f64, immediate: f64, enqueued: f64, now: f64) -> f64 {
    if immediate != 0.0 {
        0.0
    } else if prompt > 128.0 && now - enqueued >= 3.0 {
        1.0
    } else if prompt <= 128.0 {
        2.0
    } else {
        3.0
    }
}

unsafe extern "C" fn ascend_lane(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape promises four row slots and one ctx slot.
    unsafe { lane(*row.add(1), *row.add(2), *row.add(3), *ctx) }
}

unsafe extern "C" fn ascend_serial(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row }
}

#[inline(always)]
unsafe fn ascend_keys(row: *const f64, now: f64) -> (i64, i64) {
    // SAFETY: four row slots.
    unsafe {
        (
            order_bits(lane(*row.add(1), *row.add(2), *row.add(3), now)),
            order_bits(*row),
        )
    }
}

unsafe extern "C" fn ascend_cmp(a: *const f64, b: *const f64, ctx: *const f64) -> i32 {
    // SAFETY: as above, for both rows; one ctx slot.
    unsafe {
        let now = *ctx;
        cmp_pairs(ascend_keys(a, now), ascend_keys(b, now))
    }
}

unsafe extern "C" fn ascend_select(rows: *const f64, n: u64, stride: u64, ctx: *const f64) -> i64 {
    // SAFETY: the caller guarantees the rows and the ctx slot.
    unsafe {
        let now = *ctx;
        select2(rows, n, stride, |r| ascend_keys(r, now))
    }
}

// `(priority, last)` on the entry row [priority, …, last at L].
unsafe extern "C" fn pl_priority(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: the shape promises L + 1 row slots.
    unsafe { *row }
}

unsafe extern "C" fn pl_last<const L: usize>(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row.add(L) }
}

#[inline(always)]
unsafe fn pl_keys<const L: usize>(row: *const f64) -> (i64, i64) {
    // SAFETY: L + 1 row slots.
    unsafe { (order_bits(*row), order_bits(*row.add(L))) }
}

unsafe extern "C" fn pl_cmp<const L: usize>(a: *const f64, b: *const f64, _: *const f64) -> i32 {
    // SAFETY: as above, for both rows.
    unsafe { cmp_pairs(pl_keys::<L>(a), pl_keys::<L>(b)) }
}

unsafe extern "C" fn pl_select<const L: usize>(
    rows: *const f64,
    n: u64,
    stride: u64,
    _: *const f64,
) -> i64 {
    // SAFETY: the caller guarantees the rows.
    unsafe { select2(rows, n, stride, |r| pl_keys::<L>(r)) }
}

fn rust_queue(k: KnownQueue) -> Option<KeyList> {
    // SAFETY (each): the functions read at most the declared shape (checked against
    // the layout by `known_queue`), implement the key list in E5 order, and are
    // static.
    match k {
        KnownQueue::PrioritySerial => Some(unsafe {
            KeyList::new(
                vec![ps_priority, ps_serial],
                ps_cmp,
                ps_select,
                Shape { row: 2, ctx: 0 },
                CodeHandle::process(),
            )
        }),
        KnownQueue::Ascend => Some(unsafe {
            KeyList::new(
                vec![ascend_lane, ascend_serial],
                ascend_cmp,
                ascend_select,
                Shape { row: 4, ctx: 1 },
                CodeHandle::process(),
            )
        }),
        KnownQueue::Fifo | KnownQueue::Other => None,
    }
}

fn rust_evict(k: KnownEvict) -> Option<KeyList> {
    fn list<const L: usize>() -> KeyList {
        // SAFETY: as in `rust_queue`; `known_evict` checked `last` is slot L.
        unsafe {
            KeyList::new(
                vec![pl_priority, pl_last::<L>],
                pl_cmp::<L>,
                pl_select::<L>,
                Shape { row: L + 1, ctx: 0 },
                CodeHandle::process(),
            )
        }
    }
    match k {
        KnownEvict::PriorityLast { last: 1 } => Some(list::<1>()),
        KnownEvict::PriorityLast { last: 2 } => Some(list::<2>()),
        KnownEvict::PriorityLast { last: 3 } => Some(list::<3>()),
        _ => None,
    }
}

/// A pool's policy structs for each backend.
pub struct Backends {
    pub known_queue: KnownQueue,
    pub known_evict: KnownEvict,
    pub compiled: PoolPolicy,
    pub interp: PoolPolicy,
    /// `None` when a key list has no hand-written counterpart.
    pub rust: Option<PoolPolicy>,
}

impl Backends {
    /// Builds the three (installing this thread's interpreter tables).
    pub fn new(compiled: &Compiled, pool: PoolId) -> Result<Backends, BenchError> {
        let p = compiled.program();
        let cp = p.pool(pool);
        let policy = compiled.pool(pool).clone();
        let missing = |what: &str| err(format!("pool {}: no compiled {what}", cp.name));
        let queue = match &cp.queue {
            ir::QueuePolicy::Fifo => None,
            ir::QueuePolicy::By(keys) => Some(interp_list::<QUEUE>(
                keys,
                policy.queue.as_ref().ok_or_else(|| missing("queue keys"))?,
            )?),
        };
        let evict = match &cp.evict {
            ir::Evict::Lru => None,
            ir::Evict::By(keys) => Some(interp_list::<EVICT>(
                keys,
                policy.evict.as_ref().ok_or_else(|| missing("evict keys"))?,
            )?),
        };
        let spill = match (&cp.spill, &policy.spill) {
            (Some(s), Some(fns)) => {
                let f =
                    install::<SPILL>(vec![s.pred.expr.clone(), s.work.expr.clone()], fns.shape())?;
                // SAFETY: as in `interp_list`: trampolines over the same expressions,
                // reading the compiled functions' shape.
                Some(unsafe { SpillFns::new(f[0], f[1], fns.shape(), CodeHandle::process()) })
            }
            _ => policy.spill.clone(),
        };
        let interp = PoolPolicy {
            queue,
            evict,
            spill,
        };
        let known_queue = known_queue(p, pool);
        let known_evict = known_evict(p, pool);
        let rust_q = match known_queue {
            KnownQueue::Fifo => Some(None),
            k => rust_queue(k).map(Some),
        };
        let rust_e = match known_evict {
            KnownEvict::Lru => Some(None),
            k => rust_evict(k).map(Some),
        };
        let rust = match (rust_q, rust_e) {
            (Some(queue), Some(evict)) => Some(PoolPolicy {
                queue,
                evict,
                spill: policy.spill.clone(),
            }),
            _ => None,
        };
        Ok(Backends {
            known_queue,
            known_evict,
            compiled: policy,
            interp,
            rust,
        })
    }

    /// The backends that exist for this pool, in report order.
    pub fn available(&self) -> Vec<(Backend, &PoolPolicy)> {
        let mut v = vec![
            (Backend::Compiled, &self.compiled),
            (Backend::Interp, &self.interp),
        ];
        if let Some(r) = &self.rust {
            v.push((Backend::Rust, r));
        }
        v
    }

    /// Whether the pool has any policy code (otherwise every backend is the same).
    pub fn has_code(&self) -> bool {
        self.compiled.queue.is_some() || self.compiled.evict.is_some()
    }
}

/// The runtime configuration of member 0 of `pool` with one backend's policies.
pub fn pool_config(
    compiled: &Compiled,
    pool: PoolId,
    policy: &PoolPolicy,
) -> Result<PoolConfig, BenchError> {
    crate::bridge::pool_config(compiled.program(), pool, 0, policy).map_err(|e| err(e.to_string()))
}

fn new_pool(config: PoolConfig) -> Result<EngineMember, BenchError> {
    Pool::new(config)
        .map(EngineMember)
        .map_err(|e| err(format!("the runtime refused the pool: {e}")))
}

// ----- measurement ------------------------------------------------------------------------

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Waiting holds in the admission phase; cache entries in the eviction phase;
    /// rows of the scan.
    pub queue: usize,
    /// Measured admissions (admission phase) and evictions (eviction phase) per run.
    pub ops: u64,
    /// Runs per backend, interleaved.
    pub repeats: usize,
    pub seed: u64,
    pub share: f64,
    /// The most blocks of an admission-phase hold before its grow (at most
    /// [`MAX_HOLD_BLOCKS`]; fewer when the cap needs).
    pub max_blocks: u64,
    /// Which phases to run (all by default).
    pub phases: Phases,
}

/// The phases a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    pub admission: bool,
    pub eviction: bool,
    pub scan: bool,
}

impl Default for Phases {
    fn default() -> Phases {
        Phases {
            admission: true,
            eviction: true,
            scan: true,
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            queue: 1000,
            ops: 20_000,
            repeats: 5,
            seed: 1,
            share: 0.5,
            max_blocks: MAX_HOLD_BLOCKS,
            phases: Phases::default(),
        }
    }
}

/// The median of a non-empty list (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// One backend's figures in one phase: medians over runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub backend: Backend,
    /// Nanoseconds per operation (admission, eviction or scan).
    pub ns_per_op: f64,
    pub per_run: Vec<f64>,
    /// Per admission (admission phase): evictions and hit units; nanoseconds of the
    /// grow and release that follow it.
    pub evictions_per_admission: f64,
    pub hit_units_per_admission: f64,
    pub rest_ns_per_admission: f64,
}

impl Figures {
    pub fn ops_per_second(&self) -> f64 {
        1e9 / self.ns_per_op
    }
}

/// Ratios of time per operation, each the median over runs of the ratio within a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ratios {
    /// Interpreter time over compiled time (how many times slower it is).
    pub interp_over_compiled: Option<f64>,
    /// Compiled time over hand-written Rust time (1 is parity).
    pub compiled_over_rust: Option<f64>,
}

fn ratios(figures: &[Figures]) -> Ratios {
    let get = |b| figures.iter().find(|f| f.backend == b);
    let ratio = |num: Option<&Figures>, den: Option<&Figures>| {
        let (n, d) = (num?, den?);
        let per: Vec<f64> = n
            .per_run
            .iter()
            .zip(&d.per_run)
            .map(|(a, b)| a / b)
            .collect();
        Some(median(&per))
    };
    Ratios {
        interp_over_compiled: ratio(get(Backend::Interp), get(Backend::Compiled)),
        compiled_over_rust: ratio(get(Backend::Compiled), get(Backend::Rust)),
    }
}

/// One phase's results.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseReport {
    pub figures: Vec<Figures>,
    pub ratios: Ratios,
    /// Operations measured per run.
    pub ops: u64,
}

/// JIT compile latency of the spec, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// Parse and check, the first time in this process.
    pub check_cold_us: f64,
    pub jit_cold_us: f64,
    /// Medians of the repeats that follow.
    pub check_warm_us: f64,
    pub jit_warm_us: f64,
}

/// Parses, checks and JIT-compiles `source`, timing the first compile of the process
/// (cold) and the median of `repeats` more (warm). The compiled result is the first.
pub fn compile_timed(
    source: &str,
    options: &crate::Options,
    repeats: usize,
) -> Result<(Compiled, CompileTimes), Vec<crate::diag::Diagnostic>> {
    let codegen = |e: crate::codegen::CodegenError| {
        vec![crate::diag::Diagnostic::new("codegen", e.to_string())]
    };
    let t = Instant::now();
    let program = crate::check(source, options)?;
    let check_cold = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    let compiled = crate::codegen::compile_program(&program).map_err(codegen)?;
    let jit_cold = t.elapsed().as_secs_f64() * 1e6;
    let (mut checks, mut jits) = (Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let p = crate::check(source, options)?;
        checks.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let again = crate::codegen::compile_program(&p).map_err(codegen)?;
        jits.push(t.elapsed().as_secs_f64() * 1e6);
        drop(again);
    }
    Ok((
        compiled,
        CompileTimes {
            check_cold_us: check_cold,
            jit_cold_us: jit_cold,
            check_warm_us: median(&checks),
            jit_warm_us: median(&jits),
        },
    ))
}

/// Everything `poolc bench` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub spec: String,
    pub pool: String,
    pub members: u32,
    pub queue_policy: String,
    pub evict_policy: String,
    pub has_code: bool,
    pub block: u64,
    pub cap: Option<u64>,
    pub options: Options,
    pub admission_shape: StreamShape,
    pub eviction_shape: StreamShape,
    pub compile: CompileTimes,
    pub admission: Option<PhaseReport>,
    pub eviction: Option<PhaseReport>,
    /// The compiled scan over `queue` rows, when the engine scans (keys that read
    /// `waited`, `now`, `computed` or a query).
    pub scan: Option<PhaseReport>,
}

/// The pool `poolc bench` drives by default: the first one a stage admits via, else
/// the first declared.
pub fn default_pool(p: &Program) -> Option<PoolId> {
    p.pools
        .iter()
        .position(|x| x.admit_via.is_some())
        .or(if p.pools.is_empty() { None } else { Some(0) })
        .map(|i| PoolId(i as u32))
}

/// Runs one phase for every backend, interleaved run by run.
fn measure_phase(
    compiled: &Compiled,
    pool: PoolId,
    backends: &Backends,
    phase: Phase,
    opts: &Options,
    shape: &StreamShape,
    cap: Limit,
) -> Result<PhaseReport, BenchError> {
    let mut drivers = Vec::new();
    for (b, policy) in backends.available() {
        let mut config = pool_config(compiled, pool, policy)?;
        config.cap = cap;
        let stream = Stream::new(compiled.program(), shape.clone(), opts.seed);
        let mut d = Driver::new(new_pool(config)?, stream, phase);
        d.fill(opts.queue)?;
        // Warm-up: until the cache has filled (every admission brings at least one
        // new block) and the engine's buffers have grown, unmeasured.
        let warm = match (phase, cap) {
            (Phase::Admission, Limit::Finite(c)) => (opts.ops / 4).max(2 * (c.0 / shape.block)),
            _ => opts.ops / 4,
        };
        d.run(warm.max(1), &mut Wall::default())?;
        drivers.push((b, d));
    }
    let mut per_run: Vec<Vec<f64>> = vec![Vec::new(); drivers.len()];
    let mut extra: Vec<(u64, u64, u64, u64)> = vec![(0, 0, 0, 0); drivers.len()];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); drivers.len()];
    for _ in 0..opts.repeats.max(1) {
        let starts: Vec<Totals> = drivers.iter().map(|(_, d)| d.totals()).collect();
        samples.iter_mut().for_each(Vec::clear);
        // The backends take turns a round at a time (the same round: one stream),
        // so a burst of load from other jobs falls on all of them alike; a round
        // that was descheduled stands out, and the median over rounds drops it.
        let mut done = 0;
        while done < opts.ops {
            for (k, (_, d)) in drivers.iter_mut().enumerate() {
                let r = d.round(&mut Wall::default())?;
                samples[k].push(r.admit_ns as f64 / r.ops as f64);
                if k == 0 {
                    done += r.ops;
                }
            }
        }
        for (k, (_, d)) in drivers.iter().enumerate() {
            let (before, after) = (starts[k], d.totals());
            let c = |f: fn(&Counts) -> u64| f(&after.counts) - f(&before.counts);
            per_run[k].push(median(&samples[k]));
            let e = &mut extra[k];
            e.0 += c(|c| c.admissions);
            e.1 += c(|c| c.evictions);
            e.2 += c(|c| c.hit_units);
            e.3 += after.rest_ns - before.rest_ns;
        }
    }
    // The backends implement one policy, so they must have made the same decisions.
    let first = drivers[0].1.totals().counts;
    for (b, d) in &drivers[1..] {
        if d.totals().counts != first {
            return Err(err(format!(
                "the {} backend decided differently from the compiled one ({:?} vs {first:?}): \
                 a bug in one of them",
                b.name(),
                d.totals().counts
            )));
        }
    }
    let figures: Vec<Figures> = drivers
        .iter()
        .zip(per_run)
        .zip(extra)
        .map(|(((b, _), runs), (adm, ev, hit, rest))| {
            let adm = adm.max(1) as f64;
            Figures {
                backend: *b,
                ns_per_op: median(&runs),
                per_run: runs,
                evictions_per_admission: ev as f64 / adm,
                hit_units_per_admission: hit as f64 / adm,
                rest_ns_per_admission: rest as f64 / adm,
            }
        })
        .collect();
    Ok(PhaseReport {
        ratios: ratios(&figures),
        figures,
        ops: opts.ops,
    })
}

/// The compiled (and interpreted, and hand-written) scan over `queue` rows of the
/// stream, filled as the engine fills them, when the engine scans this queue.
fn scan(
    compiled: &Compiled,
    pool: PoolId,
    backends: &Backends,
    opts: &Options,
    shape: &StreamShape,
) -> Result<Option<PhaseReport>, BenchError> {
    let config = pool_config(compiled, pool, &backends.compiled)?;
    let QueuePolicy::By { layout, .. } = &config.queue else {
        return Ok(None);
    };
    let fixed = layout.ctx.is_empty()
        && layout
            .row
            .iter()
            .all(|i| matches!(i, Input::Attr(_) | Input::Units | Input::Reserve));
    if fixed {
        return Ok(None);
    }
    let n = opts.queue;
    let stride = layout.row.len();
    let mut stream = Stream::new(compiled.program(), shape.clone(), opts.seed);
    let mut rows = Vec::with_capacity(n * stride);
    for _ in 0..n {
        stream.tick();
        let h = stream.hold();
        let attrs = stream.env().attrs(h.session).unwrap_or(&[]);
        for input in &layout.row {
            rows.push(match *input {
                Input::Attr(a) => attrs.get(a as usize).copied().unwrap_or(0.0),
                Input::Units | Input::Reserve => h.units as f64,
                Input::Enqueued => stream.now(),
                // No hold is admitted in this scan, so nothing is hit.
                _ => 0.0,
            });
        }
    }
    let ctx: Vec<f64> = layout
        .ctx
        .iter()
        .map(|i| match *i {
            Input::Now => stream.now(),
            Input::Query(q) => default_query(q),
            _ => 0.0,
        })
        .collect();
    let lists: Vec<(Backend, &KeyList)> = backends
        .available()
        .into_iter()
        .filter_map(|(b, p)| p.queue.as_ref().map(|q| (b, q)))
        .collect();
    let want = lists[0].1.select(&rows, n, stride, &ctx);
    for (b, l) in &lists[1..] {
        let got = l.select(&rows, n, stride, &ctx);
        if got != want {
            return Err(err(format!(
                "the {} scan picked {got:?}, the compiled one {want:?}: a bug in one of them",
                b.name()
            )));
        }
    }
    // About two million rows per measurement: milliseconds for the compiled scan.
    let iters = (2_000_000 / n.max(1)).max(1);
    let mut per_run: Vec<Vec<f64>> = vec![Vec::new(); lists.len()];
    let turns = 32;
    let per_turn = iters.div_ceil(turns);
    for _ in 0..opts.repeats.max(1) {
        // Turns of a 32nd of a run each, medians over turns, as in the phases.
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); lists.len()];
        for _ in 0..turns {
            for (k, (_, l)) in lists.iter().enumerate() {
                let t = Instant::now();
                for _ in 0..per_turn {
                    std::hint::black_box(l.select(std::hint::black_box(&rows), n, stride, &ctx));
                }
                samples[k].push(t.elapsed().as_nanos() as f64 / per_turn as f64);
            }
        }
        for (k, s) in samples.iter().enumerate() {
            per_run[k].push(median(s));
        }
    }
    let figures: Vec<Figures> = lists
        .iter()
        .zip(per_run)
        .map(|((b, _), runs)| Figures {
            backend: *b,
            ns_per_op: median(&runs),
            per_run: runs,
            evictions_per_admission: 0.0,
            hit_units_per_admission: 0.0,
            rest_ns_per_admission: 0.0,
        })
        .collect();
    Ok(Some(PhaseReport {
        ratios: ratios(&figures),
        figures,
        ops: (turns * per_turn) as u64,
    }))
}

/// Runs `poolc bench` on one pool of a compiled spec.
pub fn run(
    spec: &str,
    compiled: &Compiled,
    pool: PoolId,
    compile: CompileTimes,
    opts: &Options,
) -> Result<Report, BenchError> {
    if opts.queue == 0 || opts.ops == 0 {
        return Err(err("--queue and --ops must be at least 1"));
    }
    if !(0.0..=1.0).contains(&opts.share) {
        return Err(err("--share must be between 0 and 1"));
    }
    let p = compiled.program();
    let cp = p.pool(pool);
    let backends = Backends::new(compiled, pool)?;
    let block = cp.block_units();
    let cap = match cp.cap {
        ir::Limit::Finite(c) => Some(c),
        ir::Limit::Unbounded => None,
    };
    let admission_shape = StreamShape::admission(
        block,
        cap.map(|c| c / block),
        opts.queue,
        opts.share,
        opts.max_blocks,
    )?;
    let eviction_shape = StreamShape::eviction(block, opts.queue);
    let cap_limit = cap.map_or(Limit::Unbounded, |c| Limit::Finite(Units(c)));
    let admission = if opts.phases.admission {
        Some(measure_phase(
            compiled,
            pool,
            &backends,
            Phase::Admission,
            opts,
            &admission_shape,
            cap_limit,
        )?)
    } else {
        None
    };
    let eviction = if opts.phases.eviction {
        let entries_cap = (opts.queue as u64)
            .checked_mul(EVICT_BLOCKS * block)
            .ok_or_else(|| err("--queue is too large for the eviction phase's cap"))?;
        Some(measure_phase(
            compiled,
            pool,
            &backends,
            Phase::Eviction,
            opts,
            &eviction_shape,
            Limit::Finite(Units(entries_cap)),
        )?)
    } else {
        None
    };
    let scan = if opts.phases.scan {
        scan(compiled, pool, &backends, opts, &admission_shape)?
    } else {
        None
    };
    Ok(Report {
        spec: spec.to_string(),
        pool: cp.name.clone(),
        members: cp.count,
        queue_policy: describe_queue(backends.known_queue, p, pool),
        evict_policy: describe_evict(backends.known_evict, p, pool),
        has_code: backends.has_code(),
        block,
        cap,
        options: opts.clone(),
        admission_shape,
        eviction_shape,
        compile,
        admission,
        eviction,
        scan,
    })
}

// ----- rendering ------------------------------------------------------------------------

/// A rate with an SI prefix: `12.3 M`, `450 k`.
fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.1} ")
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |x| format!("{x:.2}"))
}

impl Report {
    /// The report for people.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let o = &self.options;
        let a = &self.admission_shape;
        let cap = self.cap.map_or("inf".to_string(), |c| c.to_string());
        let _ = writeln!(
            s,
            "spec {}, pool {} (member 0 of {}): queue {}, evict {}, block {}, cap {cap}",
            self.spec, self.pool, self.members, self.queue_policy, self.evict_policy, self.block
        );
        let _ = writeln!(
            s,
            "stream: seed {}; rounds of {} holds of 1-{} blocks (+{} on grow); {:.0}% start \
             with one of {} shared {}-block prefixes",
            o.seed,
            a.batch,
            a.max_blocks,
            a.grow_blocks,
            if a.prefix_blocks > 0 {
                o.share * 100.0
            } else {
                0.0
            },
            a.prefixes,
            a.prefix_blocks
        );
        let c = &self.compile;
        let _ = writeln!(
            s,
            "compile: check {:.0} us cold, {:.0} us warm; JIT {:.0} us cold, {:.0} us warm \
             (median of {})",
            c.check_cold_us, c.check_warm_us, c.jit_cold_us, c.jit_warm_us, o.repeats
        );
        if let Some(adm) = &self.admission {
            let _ = writeln!(
                s,
                "\nadmission: queue of {} waiting, {} admissions per run, median of {} runs",
                o.queue, adm.ops, o.repeats
            );
            let _ = writeln!(
                s,
                "  {:<9} {:>14} {:>14} {:>14} {:>12} {:>17}",
                "backend",
                "admissions/s",
                "ns/admission",
                "evict/admission",
                "hit units/adm",
                "ns grow+release"
            );
            for f in &adm.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14} {:>14.1} {:>14.2} {:>12.1} {:>17.1}",
                    f.backend.name(),
                    si(f.ops_per_second()),
                    f.ns_per_op,
                    f.evictions_per_admission,
                    f.hit_units_per_admission,
                    f.rest_ns_per_admission
                );
            }
        }
        if let Some(ev) = &self.eviction {
            let e = &self.eviction_shape;
            let _ = writeln!(
                s,
                "\neviction: {} entries of {} blocks, rounds of {} admissions of {} fresh blocks, \
             {} evictions per run, median of {} runs",
                o.queue, EVICT_BLOCKS, e.batch, EVICT_BLOCKS, ev.ops, o.repeats
            );
            let _ = writeln!(
                s,
                "  {:<9} {:>14} {:>14}",
                "backend", "evictions/s", "ns/eviction"
            );
            for f in &ev.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14} {:>14.1}",
                    f.backend.name(),
                    si(f.ops_per_second()),
                    f.ns_per_op
                );
            }
        }
        if let Some(scan) = &self.scan {
            let _ = writeln!(
                s,
                "\nscan: the queue's select over {} rows, {} scans per run, median of {} runs",
                o.queue, scan.ops, o.repeats
            );
            let _ = writeln!(s, "  {:<9} {:>14} {:>14}", "backend", "ns/scan", "ns/row");
            for f in &scan.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14.1} {:>14.2}",
                    f.backend.name(),
                    f.ns_per_op,
                    f.ns_per_op / o.queue as f64
                );
            }
        }
        let _ = writeln!(
            s,
            "\nratios of time per operation (median over runs of the ratio within a run; \
             backends interleaved in this process):"
        );
        let phases = [
            ("admission", &self.admission),
            ("eviction", &self.eviction),
            ("scan", &self.scan),
        ];
        for (name, ph) in phases
            .iter()
            .filter_map(|(n, p)| p.as_ref().map(|p| (n, p)))
        {
            let _ = writeln!(
                s,
                "  {:<9} interp/compiled {:>7}   compiled/rust {:>6}",
                name,
                ratio_text(ph.ratios.interp_over_compiled),
                ratio_text(ph.ratios.compiled_over_rust)
            );
        }
        if !self.has_code {
            let _ = writeln!(
                s,
                "note: `queue fifo` and `evict lru` have no policy code: every backend runs \
                 the same engine path, so these ratios show the measurement's noise"
            );
        } else if [&self.admission, &self.eviction, &self.scan]
            .iter()
            .filter_map(|p| p.as_ref())
            .all(|p| p.figures.iter().all(|f| f.backend != Backend::Rust))
        {
            let _ = writeln!(
                s,
                "note: no hand-written Rust exists for these keys (only fifo, (priority, \
                 serial), the seed's Ascend lanes and evict by (priority, last))"
            );
        }
        s
    }

    /// The report for machines.
    pub fn to_json(&self) -> Value {
        fn phase(p: &PhaseReport, op: &str) -> Value {
            let mut backends = serde_json::Map::new();
            for f in &p.figures {
                let mut b = serde_json::Map::new();
                b.insert(format!("{op}s_per_s"), f.ops_per_second().into());
                b.insert(format!("ns_per_{op}"), f.ns_per_op.into());
                b.insert("ns_per_run".into(), json!(f.per_run));
                if op == "admission" {
                    b.insert(
                        "evictions_per_admission".into(),
                        f.evictions_per_admission.into(),
                    );
                    b.insert(
                        "hit_units_per_admission".into(),
                        f.hit_units_per_admission.into(),
                    );
                    b.insert(
                        "grow_release_ns_per_admission".into(),
                        f.rest_ns_per_admission.into(),
                    );
                }
                backends.insert(f.backend.name().into(), Value::Object(b));
            }
            json!({
                "ops_per_run": p.ops,
                "backends": backends,
                "ratios": {
                    "interp_over_compiled": p.ratios.interp_over_compiled,
                    "compiled_over_rust": p.ratios.compiled_over_rust,
                },
            })
        }
        let o = &self.options;
        let per = |p: &Option<PhaseReport>, b| {
            p.as_ref()?
                .figures
                .iter()
                .find(|f| f.backend == b)
                .map(|f| f.ops_per_second())
        };
        json!({
            "spec": self.spec,
            "pool": self.pool,
            "member": 0,
            "queue_policy": self.queue_policy,
            "evict_policy": self.evict_policy,
            "policy_code": self.has_code,
            "block": self.block,
            "cap": self.cap,
            "queue": o.queue,
            "ops": o.ops,
            "repeats": o.repeats,
            "seed": o.seed,
            "share": o.share,
            "batch": self.admission_shape.batch,
            "max_blocks": self.admission_shape.max_blocks,
            "prefix_blocks": self.admission_shape.prefix_blocks,
            "admissions_per_s": per(&self.admission, Backend::Compiled),
            "evictions_per_s": per(&self.eviction, Backend::Compiled),
            "ns_per_admission": self
                .admission
                .as_ref()
                .and_then(|a| a.figures.first().map(|f| f.ns_per_op)),
            "compile_us": {
                "check_cold": self.compile.check_cold_us,
                "jit_cold": self.compile.jit_cold_us,
                "check_warm": self.compile.check_warm_us,
                "jit_warm": self.compile.jit_warm_us,
            },
            "admission": self.admission.as_ref().map(|p| phase(p, "admission")),
            "eviction": self.eviction.as_ref().map(|p| phase(p, "eviction")),
            "scan": self.scan.as_ref().map(|s| phase(s, "scan")),
        })
    }
}
