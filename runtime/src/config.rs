//! Pool configuration in runtime terms: cap, block, eviction, preemption and queue
//! policies, and the slot layouts that tell the engine which input fills each row and
//! ctx slot of a compiled key list. The compiler converts its IR into these types; this
//! module must not know the IR, and it validates everything a host could get wrong
//! (a layout input at the wrong site, a key list reading more slots than laid out).

use std::fmt;

use crate::policy::{KeyList, Shape, SpillFns};
use crate::types::{Limit, Units};

/// A member of a pool family, as the spec numbers them (declaration index, member).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PoolRef {
    pub pool: u32,
    pub member: u32,
}

/// A member of a stage family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StageRef {
    pub stage: u32,
    pub member: u32,
}

/// Queries on live state (E6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueryKind {
    /// `cap − allocated − cached` (inf when the cap is).
    Free,
    /// Allocated units.
    Used,
    Cached,
    Cap,
    /// Waiting holds.
    Queued,
    /// A step stage's budget left in the iteration being admitted for (inf outside).
    BudgetLeft,
    /// A step stage's residents.
    Residents,
}

/// What a query reads: one concrete member (the compiler resolves the join rule K1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Pool(PoolRef),
    Stage(StageRef),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Query {
    pub kind: QueryKind,
    pub target: Target,
}

/// What one slot of a row or ctx holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Input {
    /// Session attribute by index (the index into [`crate::Env::attrs`]).
    Attr(u32),
    /// Queue row: the header's `units`; resident row: the units the hold has
    /// allocated.
    Units,
    /// Queue row: the header's `reserve`.
    Reserve,
    /// Queue row: what the hold would hit if admitted now (S2); resident row: the
    /// hold's computed units (as the host last set them).
    Computed,
    /// Resident row: when the hold was last admitted (R18).
    Admitted,
    /// Queue row: the time the hold entered the queue (`waited` = now − enqueued).
    Enqueued,
    /// Entry row: the entry's cached units at this Evict moment.
    Size,
    /// Entry row: the time of the release that created the entry.
    Last,
    /// Entry row: waiting holds whose chain reaches into the entry.
    Waiting,
    /// Entry row: the hits the entry's tail block has served (R31).
    Hits,
    /// Ctx: the simulation time.
    Now,
    /// Entry ctx: `units` of a spill `work`/`when` (the units the eviction writes).
    SpillUnits,
    /// Queue and resident ctx: a query.
    Query(Query),
    /// Queue row: the service counter of the hold's group (R30).
    Service,
}

/// Which input fills each slot of a site's row and ctx (the compiler's `Layout`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub row: Vec<Input>,
    pub ctx: Vec<Input>,
}

/// `queue fifo` or `queue by (…)` with the queue site's layout.
#[derive(Clone, Debug, Default)]
pub enum QueuePolicy {
    #[default]
    Fifo,
    By {
        keys: KeyList,
        layout: Layout,
    },
}

/// `evict lru` or `evict by (…)` with the entry site's layout.
#[derive(Clone, Debug, Default)]
pub enum EvictPolicy {
    #[default]
    Lru,
    By {
        keys: KeyList,
        layout: Layout,
    },
}

/// `spill TIER via LINK (work) when (pred)` (R12): the compiled `pred` and `work` on
/// the entry site's layout, and where a written block goes. The engine evaluates
/// them at each Evict moment and tells the host (`Notice::Spill`); the host puts the
/// work on the link and hands the block to the tier when the write completes.
#[derive(Clone, Debug)]
pub struct SpillPolicy {
    pub fns: SpillFns,
    pub layout: Layout,
    pub tier: PoolRef,
    pub link: StageRef,
}

/// What orders waiting holds whose `queue by` keys are all equal (E5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueTie {
    /// Enqueue order (R8).
    #[default]
    Enqueue,
    /// The sessions' ids ([`crate::env::Env::name`]) compared as text, byte by byte,
    /// then enqueue order (R21). Always the compiled scan: the ordered index keeps
    /// numbers only.
    Id,
}

/// How a `queue by` key list is evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QueueIndex {
    /// Keys that read only fixed inputs (attributes, `units`, `reserve`; no ctx) are
    /// computed once per hold and kept in an ordered index, O(log n) per admission;
    /// other keys are evaluated at every attempt by the compiled scan.
    #[default]
    Auto,
    /// Always the compiled scan (the reference the index is tested against).
    Scan,
}

/// What a failed grow does (R13, R18).
#[derive(Clone, Debug, Default)]
pub enum Preempt {
    /// The grower waits and its grow is retried at every settle, in failure order.
    #[default]
    None,
    /// Preempt the most recently admitted resident of the pool's step stage.
    Lifo,
    /// Preempt the least resident by the keys (E5), ties to admission order (R18),
    /// on the resident site's layout.
    By { keys: KeyList, layout: Layout },
}

/// Where a preempted hold waits again (R8, R19).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Requeue {
    /// On top of the preempted stack, ahead of every key (R8).
    #[default]
    Head,
    /// In the queue by its keys like any waiting hold, ties by its first enqueue
    /// (R19).
    Keyed,
}

/// One pool member's configuration. `Default` is a pool with an unbounded cap, block
/// 1, `evict lru`, `preempt none`, `queue fifo`.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Which member this is: queries naming it are answered from its own state.
    pub me: PoolRef,
    pub cap: Limit,
    /// Units per block, at least 1.
    pub block: Units,
    pub evict: EvictPolicy,
    pub preempt: Preempt,
    pub requeue: Requeue,
    pub queue: QueuePolicy,
    /// Ties of `queue by` keys (R21); ignored by `queue fifo`.
    pub queue_tie: QueueTie,
    pub queue_index: QueueIndex,
    pub spill: Option<SpillPolicy>,
    /// `fair` (R30): service counters the queue keys read as [`Input::Service`].
    pub fair: Option<FairConfig>,
}

/// `fair ATTR (prefill, decode) [weight ATTR]` (R30): attributes by index into
/// [`crate::Env::attrs`], prices per token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FairConfig {
    pub by: u32,
    pub prefill: f64,
    pub decode: f64,
    pub weight: Option<u32>,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            me: PoolRef::default(),
            cap: Limit::Unbounded,
            block: Units(1),
            evict: EvictPolicy::Lru,
            preempt: Preempt::None,
            requeue: Requeue::Head,
            queue: QueuePolicy::Fifo,
            queue_tie: QueueTie::Enqueue,
            queue_index: QueueIndex::Auto,
            spill: None,
            fair: None,
        }
    }
}

/// The sites whose rows the engine fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Queue,
    Entry,
    /// `preempt by` keys: a row per candidate victim (R18).
    Resident,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Site::Queue => "queue",
            Site::Entry => "entry",
            Site::Resident => "resident",
        })
    }
}

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    ZeroBlock,
    /// An input that the site cannot supply in that part (row or ctx).
    Input {
        site: Site,
        ctx: bool,
        input: Input,
    },
    /// The key list reads more slots than the layout provides.
    Shape {
        site: Site,
        row: usize,
        ctx: usize,
        layout_row: usize,
        layout_ctx: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroBlock => f.write_str("block must be at least 1 unit"),
            ConfigError::Input { site, ctx, input } => write!(
                f,
                "the {site} site cannot supply {input:?} in its {}",
                if *ctx { "ctx" } else { "row" }
            ),
            ConfigError::Shape {
                site,
                row,
                ctx,
                layout_row,
                layout_ctx,
            } => write!(
                f,
                "the {site} keys read {row} row and {ctx} ctx slots, the layout has \
                 {layout_row} and {layout_ctx}"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Whether `input` may sit in the row (`ctx` false) or ctx of `site` (S1 and the
/// compiler's row/ctx split: per-record values in the row, per-moment values in ctx).
fn allowed(site: Site, ctx: bool, input: Input) -> bool {
    use Input::*;
    match (site, ctx) {
        (Site::Queue, false) => {
            matches!(
                input,
                Attr(_) | Units | Reserve | Computed | Enqueued | Service
            )
        }
        (Site::Queue, true) => matches!(input, Now | Query(_)),
        (Site::Entry, false) => matches!(input, Attr(_) | Size | Last | Waiting | Hits),
        (Site::Entry, true) => matches!(input, Now | SpillUnits),
        (Site::Resident, false) => matches!(input, Attr(_) | Units | Computed | Admitted),
        (Site::Resident, true) => matches!(input, Now | Query(_)),
    }
}

/// Whether a queue layout reads only inputs that cannot change while a hold waits,
/// short of the host saying so ([`crate::Pool::attrs_changed`],
/// [`crate::Pool::set_waiting_header`]).
pub(crate) fn is_fixed(layout: &Layout) -> bool {
    layout.ctx.is_empty()
        && layout
            .row
            .iter()
            .all(|i| matches!(i, Input::Attr(_) | Input::Units | Input::Reserve))
}

pub(crate) fn check_layout(site: Site, shape: Shape, layout: &Layout) -> Result<(), ConfigError> {
    for (ctx, inputs) in [(false, &layout.row), (true, &layout.ctx)] {
        if let Some(&input) = inputs.iter().find(|&&i| !allowed(site, ctx, i)) {
            return Err(ConfigError::Input { site, ctx, input });
        }
    }
    if shape.row > layout.row.len() || shape.ctx > layout.ctx.len() {
        return Err(ConfigError::Shape {
            site,
            row: shape.row,
            ctx: shape.ctx,
            layout_row: layout.row.len(),
            layout_ctx: layout.ctx.len(),
        });
    }
    Ok(())
}
