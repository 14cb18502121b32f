//! `poolc bench` as a library: the same seeded synthetic stream of holds run through
//! three implementations of one pool's policy functions — the JIT-compiled ones, the
//! reference interpreter behind `extern "C"` trampolines, and hand-written Rust for
//! the built-in policies — interleaved in one process, with medians of repeated runs
//! and the ratios between them. docs/PERFORMANCE.md explains what each figure is of.
//!
//! This file holds the entry point ([`run`]), its options, its report and its error;
//! the parts are `stream` (the seeded stream and the host table), `driver` (feeding
//! one pool member), `measure` (the meter, medians, the measured procedures),
//! `backends` with `interp` and `handwritten` (the three policy implementations) and
//! `render` (text and JSON). It never prints (the CLI does), names no CLI flag (the
//! CLI words [`OptionsError`] in its own terms) and reads no clock outside
//! `measure`, so a test can swap the clock for an allocation counter and check the
//! same hot path.

// Indexing here is by the benchmark's own session numbers, backend positions and
// sample lists, each made by the stream or driver it indexes: an index out of range
// is a broken invariant of the harness, not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants).
#![allow(clippy::indexing_slicing)]

use std::fmt;

use poolrt::{ChainError, ConfigError, Grown, Limit, SessionId, Units};

use poolc::bridge::BridgeError;
use poolc::codegen::Compiled;
use poolc::ir::{self, PoolId, Program};

mod backends;
mod driver;
mod handwritten;
mod interp;
mod measure;
mod render;
mod stream;

pub use backends::{
    Backend, Backends, KnownEvict, KnownQueue, known_evict, known_queue, pool_config,
};
pub use driver::{Counts, Driver, EngineMember, Member, Phase, Round, Totals};
pub use handwritten::order_bits;
pub use measure::{CompileTimes, Figures, Meter, PhaseReport, Ratios, Wall, compile_timed, median};
pub use stream::{
    BATCH, BenchEnv, EVICT_BLOCKS, HoldSpec, MAX_HOLD_BLOCKS, PREFIXES, QUEUE_SPAN, Stream,
    StreamShape,
};

use backends::{describe_evict, describe_queue};
use measure::{measure_phase, scan};

/// Options of a run that the benchmark cannot honour. The CLI's value parsers keep
/// most of them from arising; it words each in terms of its own flags.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionsError {
    /// No holds would wait (and no cache entries or scan rows would exist).
    EmptyQueue,
    /// Nothing would be measured.
    NoOps,
    /// The shared-prefix fraction is outside 0 to 1.
    Share(f64),
    /// `queue` entries of [`EVICT_BLOCKS`] blocks of `block` units overflow a cap.
    EvictionCapOverflow { queue: usize, block: u64 },
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::EmptyQueue => f.write_str("the queue must hold at least 1 hold"),
            OptionsError::NoOps => f.write_str("at least 1 operation must be measured"),
            OptionsError::Share(x) => write!(f, "the shared fraction {x} is not between 0 and 1"),
            OptionsError::EvictionCapOverflow { queue, block } => write!(
                f,
                "{queue} cache entries of {EVICT_BLOCKS} blocks of {block} units overflow \
                 the eviction phase's cap"
            ),
        }
    }
}

/// Why a benchmark could not run: options it cannot honour, a pool that cannot carry
/// the stream, a host contract the stream broke, or backends that disagree (a bug).
/// Each variant carries the error it wraps.
#[derive(Clone, Debug, PartialEq)]
pub enum BenchError {
    Options(OptionsError),
    /// The pool's cap holds `blocks` blocks; the stream needs at least 2.
    CapTooSmall {
        blocks: u64,
    },
    /// The IR and the compiled policies do not match (the bridge refused them).
    Bridge(BridgeError),
    /// The IR has keys of `what` but the compiled policy has no code for them.
    MissingCode {
        pool: String,
        what: &'static str,
    },
    /// The runtime refused the pool's configuration.
    Config(ConfigError),
    /// A hold's content runs do not make a chain.
    Chain(ChainError),
    /// `member` (the engine, or the naive model) refused an operation of the stream.
    Refused {
        member: &'static str,
        error: poolrt::Error,
    },
    /// `member` rejected a hold (R5): the stream is sized so that none is.
    Rejected {
        member: &'static str,
        session: SessionId,
    },
    /// A grow ended otherwise than grown: the stream is sized so that none does.
    GrowIncomplete {
        member: &'static str,
        session: SessionId,
        outcome: Grown,
    },
    /// Filling the eviction phase's cache, a fresh hold was not admitted at once.
    FillNotAdmitted,
    /// An admission attempt of a round admitted nothing.
    NothingAdmitted,
    /// A round admitted nothing or evicted nothing.
    IdleRound,
    /// The interpreter backend has a trampoline for at most `max` keys per list.
    TooManyKeys {
        keys: usize,
        max: usize,
    },
    /// A backend made other decisions than the compiled one on the same stream.
    Diverged {
        backend: Backend,
        got: Counts,
        want: Counts,
    },
    /// A backend's scan picked another row than the compiled one.
    ScanDiverged {
        backend: Backend,
        got: Option<usize>,
        want: Option<usize>,
    },
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Options(e) => e.fmt(f),
            BenchError::CapTooSmall { blocks } => write!(
                f,
                "the pool's cap holds {blocks} block(s); the benchmark needs at least 2"
            ),
            BenchError::Bridge(e) => e.fmt(f),
            BenchError::MissingCode { pool, what } => {
                write!(f, "pool {pool}: no compiled {what}")
            }
            BenchError::Config(e) => write!(f, "the runtime refused the pool: {e}"),
            BenchError::Chain(e) => write!(f, "a stream chain is malformed: {e}"),
            BenchError::Refused { member, error } => {
                write!(f, "{member} refused the stream: {error}")
            }
            BenchError::Rejected { member, session } => {
                write!(f, "{member} rejected {session} (R5)")
            }
            BenchError::GrowIncomplete {
                member,
                session,
                outcome,
            } => write!(
                f,
                "a grow of {session} in {member} did not complete: {outcome:?}"
            ),
            BenchError::FillNotAdmitted => {
                f.write_str("filling the cache: a fresh hold was not admitted")
            }
            BenchError::NothingAdmitted => f.write_str("an admission attempt admitted nothing"),
            BenchError::IdleRound => {
                f.write_str("a round did no work (nothing admitted or nothing evicted)")
            }
            BenchError::TooManyKeys { keys, max } => write!(
                f,
                "the interpreter backend takes at most {max} keys per list, this one has {keys}"
            ),
            BenchError::Diverged { backend, got, want } => write!(
                f,
                "the {} backend decided differently from the compiled one ({got:?} vs \
                 {want:?}): a bug in one of them",
                backend.name()
            ),
            BenchError::ScanDiverged { backend, got, want } => write!(
                f,
                "the {} scan picked {got:?}, the compiled one {want:?}: a bug in one of them",
                backend.name()
            ),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Options(e) => Some(e),
            BenchError::Bridge(e) => Some(e),
            BenchError::Config(e) => Some(e),
            BenchError::Chain(e) => Some(e),
            BenchError::Refused { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl std::error::Error for OptionsError {}

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

/// Runs `poolc bench` on one pool of a compiled spec.
pub fn run(
    spec: &str,
    compiled: &Compiled,
    pool: PoolId,
    compile: CompileTimes,
    opts: &Options,
) -> Result<Report, BenchError> {
    if opts.queue == 0 || opts.ops == 0 {
        return Err(BenchError::Options(if opts.queue == 0 {
            OptionsError::EmptyQueue
        } else {
            OptionsError::NoOps
        }));
    }
    if !(0.0..=1.0).contains(&opts.share) {
        return Err(BenchError::Options(OptionsError::Share(opts.share)));
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
            .ok_or(BenchError::Options(OptionsError::EvictionCapOverflow {
                queue: opts.queue,
                block,
            }))?;
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
