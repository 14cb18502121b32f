//! What a host is built from, in runtime terms: session attributes, stage and pool
//! declarations with their members (K1 already resolved by whoever converts the
//! compiler's IR), and the errors building or running a host can give. It validates
//! what a converter could get wrong (a member's `me`, a join to the wrong kind of
//! stage, a tier with another block size) and must not know the IR itself.

use std::fmt;
use std::io;

use crate::config::{PoolConfig, Query, QueryKind, StageRef};
use crate::error::Error;
use crate::policy::{KeyList, StagePolicy, WorkFn};
use crate::trace::TraceError;
use crate::types::Limit;

/// One session attribute, in slot order: `Attr(i)` in every layout reads attribute
/// `i` of this list. The names `serial` and `arrival` are the built-ins (D3); `prompt`
/// and `output` are filled from the workload's lengths; any other name from the
/// workload's extra field of that name, else `default`, else the session is refused
/// (D3: the error names the attribute and the first session lacking it).
#[derive(Clone, Debug, PartialEq)]
pub struct AttrSpec {
    pub name: String,
    pub default: Option<f64>,
}

impl AttrSpec {
    pub fn new(name: &str, default: Option<f64>) -> AttrSpec {
        AttrSpec {
            name: name.to_string(),
            default,
        }
    }
}

/// Which value one slot of a stage's `time` ctx holds (the stage's time layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeVar {
    /// Tokens taken in the iteration.
    Tokens,
    /// Tokens taken by sessions still catching up (prefill or recompute).
    Prefill,
    /// Tokens taken by sessions generating (one each).
    Decode,
    /// Residents that took tokens.
    Residents,
    /// The KV tokens the iteration attends (R20): over the sessions that took tokens,
    /// their computed tokens before it plus the tokens they took.
    Context,
}

/// Which value one slot of a stage's take row holds: a value of one session taking
/// tokens in the iteration, which `sum` adds over (R29).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TakeVar {
    /// The tokens it takes.
    Tokens,
    /// Its tokens when it is catching up (prefill or recompute), else 0.
    Prefill,
    /// Its tokens when it is generating (one), else 0.
    Decode,
    /// Its computed tokens before the iteration.
    Computed,
    /// Its computed tokens before the iteration plus the tokens it takes.
    Context,
    /// A session attribute by index.
    Attr(u32),
}

/// How long an iteration of a step stage takes.
#[derive(Clone, Debug)]
pub enum IterTime {
    /// The same seconds every iteration (`time (c)`, or 0 when the spec sets none).
    Fixed(f64),
    /// The compiled `time (expr)`; `layout[i]` says what ctx slot `i` holds, `row[i]`
    /// what slot `i` of each take row holds.
    Compiled {
        policy: StagePolicy,
        layout: Vec<TimeVar>,
        row: Vec<TakeVar>,
    },
}

/// A step stage's options (D4, R15, R16). `budget`, `seats` and `chunk` count
/// tokens, residents and tokens.
#[derive(Clone, Debug)]
pub struct StepConfig {
    pub budget: Limit,
    pub seats: Limit,
    pub chunk: Limit,
    pub exclusive_prefill: bool,
    pub time: IterTime,
}

impl Default for StepConfig {
    fn default() -> StepConfig {
        StepConfig {
            budget: Limit::Unbounded,
            seats: Limit::Unbounded,
            chunk: Limit::Unbounded,
            exclusive_prefill: false,
            time: IterTime::Fixed(0.0),
        }
    }
}

/// A link stage's options (D4, R17): work per second, `inf` for instantaneous.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    pub rate: f64,
}

#[derive(Clone, Debug)]
pub enum StageKind {
    Step(StepConfig),
    Link(LinkConfig),
}

/// A stage declaration; every member shares its options.
#[derive(Clone, Debug)]
pub struct StageDecl {
    pub name: String,
    /// Members of the family, at least 1.
    pub count: u32,
    pub kind: StageKind,
}

/// One member of a pool family.
#[derive(Clone, Debug)]
pub struct PoolMember {
    /// Its engine configuration; `me` must be (declaration index, member index), and
    /// a spill's tier and link concrete members (K1 resolved).
    pub config: PoolConfig,
    /// The step-stage members that serve its queue (`admit via`, K1 resolved: one
    /// member, or every member of a stage family serving one pool). Empty: none.
    pub admit_via: Vec<StageRef>,
    /// `handoff` (R25): where its sessions continue once their prompt is computed.
    pub handoff: Option<HandoffConfig>,
}

/// What one slot of a handoff's work reads (R26).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoffInput {
    /// A session attribute by index.
    Attr(u32),
    /// The units the transfer reads.
    Units,
}

/// `handoff POOL via LINK (work)` of one member of an entry family (R25–R27).
#[derive(Clone, Debug)]
pub struct HandoffConfig {
    /// The target family's declaration index: a family a step stage admits.
    pub target: u32,
    /// This member's link (K1 resolved).
    pub link: StageRef,
    pub work: WorkFn,
    pub row: Vec<HandoffInput>,
    pub ctx: Vec<HandoffInput>,
}

/// A pool declaration: its members in order.
#[derive(Clone, Debug)]
pub struct PoolDecl {
    pub name: String,
    pub members: Vec<PoolMember>,
}

/// What route keys read of the member being scored (R22, R24).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scored {
    /// The units of the session's prompt the member's cache would hit now (R11).
    Hit,
    /// The units right after `Hit` that the member's spill tier holds (R12).
    TierHit,
    /// The units of the prompt the router's own index holds for the member (R24).
    Routed,
}

/// A per-member value of the member being scored: a query on member `m` of a family
/// joined member for member with the routed one (K1), or a scored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Probe {
    /// A query on member `m` of this pool declaration (by index).
    Pool(QueryKind, u32),
    /// A query on member `m` of this stage declaration.
    Stage(QueryKind, u32),
    Scored(Scored),
}

/// `min_of` or `max_of` over the members (R22).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Extreme {
    Min,
    Max,
}

/// What one slot of the route site holds: rows are members, the ctx the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteInput {
    /// Ctx: a session attribute by index.
    Attr(u32),
    /// Ctx: the simulation time.
    Now,
    /// Row: the index of the member being scored.
    Member,
    /// Ctx: a query on one fixed member.
    Query(Query),
    /// Row: a value of the member being scored.
    Probe(Probe),
    /// Ctx: the least or greatest of a value over the members.
    Over(Extreme, Probe),
}

/// `route by (keys) [every T] [remember N]` on the entry family `pool`, or on a
/// handoff target (R22–R25).
#[derive(Clone, Debug)]
pub struct RouteConfig {
    /// The routed family's declaration index: the only entry family, or a handoff
    /// target.
    pub pool: u32,
    pub keys: KeyList,
    pub row: Vec<RouteInput>,
    pub ctx: Vec<RouteInput>,
    /// Seconds between refreshes of the load queries (R23); `None`: live.
    pub every: Option<f64>,
    /// Blocks per member the router's prefix index keeps (R24).
    pub remember: u64,
}

/// Everything a host is built from. Declarations are in spec order: K4's
/// "declaration order" is the order of `pools`.
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub attrs: Vec<AttrSpec>,
    pub stages: Vec<StageDecl>,
    pub pools: Vec<PoolDecl>,
    /// `route by` (R22), at most one per family: the entry family's and handoff
    /// targets' (R25). A family without one takes member `serial mod n`
    /// (docs/HOST.md).
    pub routes: Vec<RouteConfig>,
}

/// Why a host could not be built or a run could not go on.
#[derive(Debug)]
pub enum HostError {
    /// The configuration is inconsistent (a converter bug or an unsupported spec).
    Config(String),
    /// A session source read one at a time (`Host::streaming`) failed: its file and
    /// line.
    Trace(TraceError),
    /// D3: a declared attribute without a default that a session does not supply.
    MissingAttr {
        attr: String,
        session: u64,
        line: u64,
        source: String,
    },
    /// A stage's `time` gave a value that is not a finite number of seconds ≥ 0.
    Time {
        stage: String,
        step: u64,
        value: f64,
    },
    /// A spill, tier load or handoff put work on a link that is not a finite number ≥ 0.
    Work { pool: String, value: f64 },
    /// The engine refused an operation: a host bug, reported rather than panicking.
    Engine { pool: String, error: Error },
    /// Writing the log failed.
    Io(io::Error),
    /// [`super::RunOptions::stop`] was set: the run stopped before its end.
    Interrupted,
    /// The no-progress guard (docs/HOST.md, "Progress"): `iterations` step
    /// iterations since simulated time `since` produced no token, finished or
    /// rejected no session and computed nothing new, past the bound `limit`.
    /// `sessions` names the first sessions preempted meanwhile (of `preemptions`),
    /// then the residents of the member whose iteration passed the bound.
    NoProgress {
        iterations: u64,
        limit: u64,
        since: f64,
        sessions: Vec<u64>,
        /// More sessions were preempted than `sessions` names.
        others: bool,
        preemptions: u64,
    },
    /// A deadlock (docs/HOST.md, "Progress"): the replay ran out of events with
    /// `unfinished` sessions neither finished nor rejected. Nothing can wake the
    /// step members any more: every resident waits for a grow that does not fit and
    /// no release can come (R13 `preempt none`). `sessions` names the residents
    /// (then other unfinished sessions), at most eight; `since` is the time of the
    /// last progress.
    Deadlock {
        since: f64,
        sessions: Vec<u64>,
        /// More sessions are unfinished than `sessions` names.
        others: bool,
        unfinished: u64,
    },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Config(m) => write!(f, "{m}"),
            HostError::Trace(e) => write!(f, "{e}"),
            HostError::MissingAttr {
                attr,
                session,
                line,
                source,
            } => {
                write!(
                    f,
                    "session attribute `{attr}` has no default, and session {session}"
                )?;
                if *line > 0 {
                    write!(f, " ({source}:{line})")?;
                } else {
                    write!(f, " of {source}")?;
                }
                write!(f, " does not give it")
            }
            HostError::Time { stage, step, value } => write!(
                f,
                "stage {stage}: iteration {step} would take {value} seconds; `time` must give \
                 a finite number of seconds at least 0"
            ),
            HostError::Work { pool, value } => write!(
                f,
                "pool {pool}: a spill, tier load or handoff put {value} work on its link; \
                 `work` must be a finite number at least 0"
            ),
            HostError::Engine { pool, error } => {
                write!(f, "pool {pool}: the engine refused an operation: {error}")
            }
            HostError::Io(e) => write!(f, "cannot write the log: {e}"),
            HostError::Interrupted => write!(f, "interrupted"),
            HostError::NoProgress {
                iterations,
                limit,
                since,
                sessions,
                others,
                preemptions,
            } => {
                write!(
                    f,
                    "no progress: {iterations} stage iterations since t={since} s produced no \
                     token, finished or rejected no session and computed nothing new (the \
                     bound is {limit}; docs/HOST.md, \"Progress\"), with {preemptions} \
                     preemptions meanwhile"
                )?;
                if !sessions.is_empty() {
                    let names: Vec<String> = sessions.iter().map(u64::to_string).collect();
                    write!(f, "; sessions involved: {}", names.join(", "))?;
                    if *others {
                        write!(f, " and others")?;
                    }
                }
                Ok(())
            }
            HostError::Deadlock {
                since,
                sessions,
                others,
                unfinished,
            } => {
                write!(
                    f,
                    "no progress: deadlock since t={since} s: every resident waits for a grow \
                     that cannot fit and nothing can free room (R13 `preempt none` never \
                     preempts; docs/HOST.md, \"Progress\"), so {unfinished} session{} can \
                     never finish",
                    if *unfinished == 1 { "" } else { "s" }
                )?;
                let names: Vec<String> = sessions.iter().map(u64::to_string).collect();
                write!(f, "; sessions involved: {}", names.join(", "))?;
                if *others {
                    write!(f, " and others")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for HostError {}

impl From<io::Error> for HostError {
    fn from(e: io::Error) -> HostError {
        HostError::Io(e)
    }
}

/// A member's display name: `name` for a family of one, else `name[i]`.
pub(crate) fn member_name(name: &str, count: u32, i: u32) -> String {
    if count == 1 {
        name.to_string()
    } else {
        format!("{name}[{i}]")
    }
}
