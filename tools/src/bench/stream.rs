//! The seeded synthetic stream of `poolc bench`: holds (enqueue → admit → grow →
//! release) with shared prefixes so that hits, the cache and eviction all work, and
//! the host table their sessions live in ([`BenchEnv`]). It draws numbers from a
//! fixed generator and nothing else, so a stream is the same on every run and
//! machine; it never touches a pool (the driver does) and reads no clock.
//!
//! Sessions are recycled: a session id is a slot of the host's table, reused (oldest
//! free first) once its hold is released, so memory stays bounded however long a run
//! is; a released session reads as ended (`Env::attrs` gives `None`) until its slot is
//! reused, which exercises the S3 snapshots of `evict by` keys. `serial` is an arrival
//! counter, not the id.

use std::collections::VecDeque;

use poolrt::env::default_query;
use poolrt::{Env, Query, SessionId};

use super::BenchError;
use poolc::ir::Program;

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

/// The benchmark's host as the pool sees it: attribute rows of live sessions (a
/// slot per session id), everyone resident, default query values.
#[derive(Clone, Debug, Default)]
pub struct BenchEnv {
    /// Attributes per session: the row length in `values`.
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
                return Err(BenchError::CapTooSmall { blocks: cap });
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
