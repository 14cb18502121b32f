//! The IR: a checked spec with every name resolved, every constant folded and every
//! expression rewritten over row and context slots. It is the contract between the
//! front end, the interpreter, code generation and the runtime. It holds no spans and
//! no strings that need resolving; it never refers back to the AST. This file is long
//! because it is one job: the IR's types, each with the few methods that read it,
//! which every other layer names; the verifier, printers and writer live beside it.

use std::collections::BTreeSet;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x`: 1 when x is 0 (or −0), else 0; NaN is true, so `!NaN` is 0 (E2).
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    /// C `fmod`: the sign of the dividend (E3).
    Rem,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }

    /// Binding strength per E1: larger binds tighter. All binary operators are
    /// left-associative.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 3,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 6,
        }
    }
}

impl UnaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Not => "!",
        }
    }
}

/// Built-in functions (E4). `Min` and `Max` take two or more arguments, the others one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    /// IEEE 754-2019 `minimum`: NaN if any argument is NaN; −0 < +0.
    Min,
    /// IEEE 754-2019 `maximum`: NaN if any argument is NaN; −0 < +0.
    Max,
    Abs,
    Floor,
    Ceil,
    Sqrt,
}

impl Builtin {
    pub const ALL: [Builtin; 6] = [
        Builtin::Min,
        Builtin::Max,
        Builtin::Abs,
        Builtin::Floor,
        Builtin::Ceil,
        Builtin::Sqrt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Abs => "abs",
            Builtin::Floor => "floor",
            Builtin::Ceil => "ceil",
            Builtin::Sqrt => "sqrt",
        }
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether the function takes two or more arguments (else exactly one).
    pub fn is_variadic(self) -> bool {
        matches!(self, Builtin::Min | Builtin::Max)
    }

    /// Whether E4 lets it take `args` arguments.
    pub fn arity_ok(self, args: usize) -> bool {
        if self.is_variadic() {
            args >= 2
        } else {
            args == 1
        }
    }
}

/// Where an expression leaf reads its value: a slot of the row (one per record: a
/// waiting hold or a cache entry) or of the context (one per evaluation moment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    Row(u32),
    Ctx(u32),
}

/// An expression over slots. Constants, parameters and constant sub-expressions are
/// already folded; derived names are already expanded (`waited` is `now − enqueued`,
/// `age` is `now − last`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(f64),
    Slot(Slot),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`, lazy.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Builtin, Vec<Expr>),
    /// `sum(e)` in a stage's `time` (R29): `e` over each row of the iteration's take
    /// table (one row per session that takes tokens), added in row order from +0.
    /// Row slots are read only inside it, and it does not nest.
    Sum(Box<Expr>),
}

impl Expr {
    /// The direct sub-expressions, in evaluation order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Const(_) | Expr::Slot(_) => Vec::new(),
            Expr::Unary(_, x) | Expr::Sum(x) => vec![x],
            Expr::Binary(_, a, b) => vec![a, b],
            Expr::Cond(c, a, b) => vec![c, a, b],
            Expr::Call(_, args) => args.iter().collect(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StageId(pub u32);

/// Context variables by their source names (S2, D4 `time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    Size,
    Age,
    Last,
    Waiting,
    Waited,
    Now,
    Units,
    Reserve,
    Computed,
    Tokens,
    Prefill,
    Decode,
    Residents,
    /// The time a resident's hold was last admitted (R18).
    Admitted,
    /// Stage `time`: the KV tokens the iteration attends (R20).
    Context,
    /// Route keys: the index of the member being scored (R22).
    Member,
    /// Queue keys of a pool with `fair` (R30): the service counter of the hold's
    /// group.
    Service,
    /// Evict keys and spill expressions: the hits the entry's tail block has served
    /// (R31).
    Hits,
}

impl Var {
    pub const ALL: [Var; 18] = [
        Var::Size,
        Var::Age,
        Var::Last,
        Var::Waiting,
        Var::Waited,
        Var::Now,
        Var::Units,
        Var::Reserve,
        Var::Computed,
        Var::Tokens,
        Var::Prefill,
        Var::Decode,
        Var::Residents,
        Var::Admitted,
        Var::Context,
        Var::Member,
        Var::Service,
        Var::Hits,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Var::Size => "size",
            Var::Age => "age",
            Var::Last => "last",
            Var::Waiting => "waiting",
            Var::Waited => "waited",
            Var::Now => "now",
            Var::Units => "units",
            Var::Reserve => "reserve",
            Var::Computed => "computed",
            Var::Tokens => "tokens",
            Var::Prefill => "prefill",
            Var::Decode => "decode",
            Var::Residents => "residents",
            Var::Admitted => "admitted",
            Var::Context => "context",
            Var::Member => "member",
            Var::Service => "service",
            Var::Hits => "hits",
        }
    }

    pub fn from_name(name: &str) -> Option<Var> {
        Var::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Queries on live state (E6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryKind {
    Free,
    Used,
    Cached,
    Cap,
    Queued,
    BudgetLeft,
    Residents,
}

impl QueryKind {
    pub const ALL: [QueryKind; 7] = [
        QueryKind::Free,
        QueryKind::Used,
        QueryKind::Cached,
        QueryKind::Cap,
        QueryKind::Queued,
        QueryKind::BudgetLeft,
        QueryKind::Residents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QueryKind::Free => "free",
            QueryKind::Used => "used",
            QueryKind::Cached => "cached",
            QueryKind::Cap => "cap",
            QueryKind::Queued => "queued",
            QueryKind::BudgetLeft => "budget_left",
            QueryKind::Residents => "residents",
        }
    }

    pub fn from_name(name: &str) -> Option<QueryKind> {
        QueryKind::ALL.into_iter().find(|q| q.name() == name)
    }

    /// Whether the query's argument is a stage (else a pool).
    pub fn on_stage(self) -> bool {
        matches!(self, QueryKind::BudgetLeft | QueryKind::Residents)
    }
}

/// Which member of a family a reference names, seen from the member evaluating it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Member {
    /// Member i of the target for member i of the source (equal counts, K1).
    Same,
    /// Always this member: an explicit `P[i]`, or member 0 of a family of one.
    Index(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryTarget {
    Pool(PoolId, Member),
    Stage(StageId, Member),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Query {
    pub kind: QueryKind,
    pub target: QueryTarget,
}

/// What route keys read of the routed family's member being scored (R22, R24),
/// written `hit(P)`, `tier_hit(P)` and `routed(P)` with `P` the routed family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scored {
    /// The units of the session's prompt the member's cache would hit now (R11).
    Hit,
    /// The units right after `Hit` that the member's spill tier holds (R12).
    TierHit,
    /// The units of the prompt the router's own index says it sent to the member (R24).
    Routed,
}

impl Scored {
    pub const ALL: [Scored; 3] = [Scored::Hit, Scored::TierHit, Scored::Routed];

    pub fn name(self) -> &'static str {
        match self {
            Scored::Hit => "hit",
            Scored::TierHit => "tier_hit",
            Scored::Routed => "routed",
        }
    }

    pub fn from_name(name: &str) -> Option<Scored> {
        Scored::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// A per-member value that `min_of` and `max_of` range over (R22).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Probe {
    /// A query on the routed family or a family joined to it member for member.
    Query(Query),
    Scored(Scored),
}

/// `min_of(…)` or `max_of(…)`: the least or greatest of a value over the routed
/// family's members (R22).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Extreme {
    Min,
    Max,
}

impl Extreme {
    pub const ALL: [Extreme; 2] = [Extreme::Min, Extreme::Max];

    pub fn name(self) -> &'static str {
        match self {
            Extreme::Min => "min_of",
            Extreme::Max => "max_of",
        }
    }

    pub fn from_name(name: &str) -> Option<Extreme> {
        Extreme::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One name an expression reads, as the source named it (a read-set element).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Read {
    Attr(AttrId),
    Var(Var),
    Query(Query),
    Scored(Scored),
    Over(Extreme, Probe),
}

/// What one slot holds. Derived reads map onto these: `waited` reads `Enqueued` and
/// `Now`; `age` reads `Last` and `Now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Input {
    Attr(AttrId),
    /// A context variable that is stored as itself (never `Age` or `Waited`).
    Var(Var),
    /// The time the hold entered the queue (for `waited`).
    Enqueued,
    Query(Query),
    /// Route row: a value of the member being scored (R22).
    Scored(Scored),
    /// Route ctx: the least or greatest of a per-member value over the members (R22).
    Over(Extreme, Probe),
}

/// The set of names an expression reads. The runtime decides from it what it may
/// precompute: a queue key whose reads are all fixed is computed once at enqueue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadSet(pub BTreeSet<Read>);

impl ReadSet {
    /// True when the value cannot change while the record waits: it reads only
    /// session attributes and the hold's `units` and `reserve`.
    pub fn is_fixed(&self) -> bool {
        self.0.iter().all(|r| match r {
            Read::Attr(_) => true,
            Read::Var(v) => matches!(v, Var::Units | Var::Reserve),
            Read::Query(_) | Read::Scored(_) | Read::Over(..) => false,
        })
    }

    pub fn contains(&self, read: Read) -> bool {
        self.0.contains(&read)
    }
}

/// The slot layout of one site: which input each row slot and ctx slot holds. Each
/// input appears at most once; slots are dense from 0, in `Input` order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub row: Vec<Input>,
    pub ctx: Vec<Input>,
}

impl Layout {
    pub fn row_slot(&self, input: Input) -> Option<u32> {
        self.row.iter().position(|i| *i == input).map(|p| p as u32)
    }

    pub fn ctx_slot(&self, input: Input) -> Option<u32> {
        self.ctx.iter().position(|i| *i == input).map(|p| p as u32)
    }
}

/// Where a site's expressions read a row: a pool's sites evaluate one row per record
/// (a waiting hold, a cache entry, a candidate victim, a member); a stage's `time`
/// reads its context, and rows (one per session taking tokens) only inside `sum`
/// (R29).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rows {
    PerRecord,
    InSum,
}

/// A compiled expression at a site, with what it reads.
#[derive(Clone, Debug, PartialEq)]
pub struct SiteExpr {
    pub expr: Expr,
    pub reads: ReadSet,
}

/// A limit that is a whole number or unbounded (`inf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Limit {
    Finite(u64),
    Unbounded,
}

impl Limit {
    pub fn as_f64(self) -> f64 {
        match self {
            Limit::Finite(n) => n as f64,
            Limit::Unbounded => f64::INFINITY,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Finite(n) => write!(f, "{n}"),
            Limit::Unbounded => f.write_str("inf"),
        }
    }
}

/// How one family reaches another (K1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JoinRule {
    /// Equal counts: member i with member i.
    MemberForMember,
    /// The target is a family of one: every source member uses member 0.
    SharedTarget,
    /// The source is a family of one and the target has several members: each target
    /// member is joined to the one source member (only `admit via`: several stage
    /// members serve one pool).
    SharedSource,
}

/// The clause a join serves, which decides the rules it may take (K1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinClause {
    /// `admit via`: the only join that may share its source.
    AdmitVia,
    /// `spill … to … via`: the tier and the link; also a `handoff`'s link (R25).
    Spill,
}

impl JoinRule {
    /// The rule K1 gives a join of `clause` from a family of `from` members to one
    /// of `to` members, or `None` when the sizes do not join. Sema derives joins with
    /// it and the verifier checks them against it.
    pub fn for_counts(from: u32, to: u32, clause: JoinClause) -> Option<JoinRule> {
        if from == to {
            Some(JoinRule::MemberForMember)
        } else if to == 1 {
            Some(JoinRule::SharedTarget)
        } else if from == 1 && clause == JoinClause::AdmitVia {
            Some(JoinRule::SharedSource)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Join<T> {
    pub target: T,
    pub rule: JoinRule,
}

/// What a grow that does not fit does (R13, R18).
#[derive(Clone, Debug, PartialEq)]
pub enum PreemptMode {
    /// The grower waits.
    None,
    /// The most recently admitted resident is the victim.
    Lifo,
    /// The least resident by the keys (E5), ties to admission order (R18); the keys
    /// are on the pool's `resident_layout`.
    By(Vec<SiteExpr>),
}

/// Where a preempted hold re-enters the queue (R8, R19).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Requeue {
    /// At the head, ahead of every key, the most recently preempted first (R8).
    #[default]
    Head,
    /// By its queue keys like any waiting hold, ties by its first enqueue (R19).
    Keyed,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Evict {
    /// Release time, then release order.
    Lru,
    /// Keys ascending (E5), then release order.
    By(Vec<SiteExpr>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum QueuePolicy {
    /// Enqueue order.
    Fifo,
    /// Keys ascending (E5), then [`Pool::queue_tie`].
    By(Vec<SiteExpr>),
}

/// What orders waiting holds whose `queue by` keys are all equal (E5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueTie {
    /// Enqueue order (R8).
    #[default]
    Enqueue,
    /// The sessions' ids compared as text, byte by byte, then enqueue order: a key
    /// list ending in `id` (R21), as vLLM's `Request.__lt__` ends in `request_id`.
    Id,
}

/// A pool's `spill … to TIER via LINK when …` clause (R17): where an evicted entry
/// goes, over which link stage, and the expressions that decide and price it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spill {
    pub tier: Join<PoolId>,
    pub link: Join<StageId>,
    /// Work the write (or a tier load) puts on the link; evaluated on the entry layout.
    pub work: SiteExpr,
    /// Spill when non-zero; evaluated on the entry layout.
    pub pred: SiteExpr,
}

/// `route by (keys) [every T] [remember N];` (R22–R24): how an arriving session
/// picks the member of this entry family whose queue it joins.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// Evaluated on `layout`: a row per member, the session's values in ctx.
    pub keys: Vec<SiteExpr>,
    pub layout: Layout,
    /// Seconds of simulated time between refreshes of the load queries (R23); `None`:
    /// always live.
    pub every: Option<f64>,
    /// Blocks per member the router's own prefix index keeps (R24).
    pub remember: u64,
}

/// `handoff POOL via LINK (work);` (R25–R27): when a session's prompt is computed in
/// this entry family, it continues in `target`, its prompt's KV read over `link`.
#[derive(Clone, Debug, PartialEq)]
pub struct Handoff {
    /// A pool family admitted via a step stage, not this one, that neither hands off
    /// nor spills (R25).
    pub target: PoolId,
    /// The link, joined with this family by K1 (as a spill's link).
    pub link: Join<StageId>,
    /// The work one transfer puts on the link; evaluated on `layout` (the session's
    /// attributes in the row, `units` in the ctx).
    pub work: SiteExpr,
    pub layout: Layout,
}

/// `fair ATTR (prefill, decode) [weight ATTR];` (R30): a service counter per value of
/// the session attribute `by`, charged at each take, lifted at each arrival; the
/// pool's queue keys read it as `service`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fair {
    pub by: AttrId,
    /// The price of a prefill token (a catching-up session's), compile-time, ≥ 0.
    pub prefill: f64,
    /// The price of a decode token (a generating session's), compile-time, ≥ 0.
    pub decode: f64,
    /// The attribute dividing each charge (`weight`); `None` divides by 1.
    pub weight: Option<AttrId>,
}

/// llm-d's approximate prefix scorer keeps 31,250 blocks per server by default
/// (`lruCapacityPerServer`, docs of llm-d-inference-scheduler): the default of
/// `remember`.
pub const DEFAULT_REMEMBER: u64 = 31_250;

/// A checked `pool` declaration: a family of `count` members sharing its options,
/// each option resolved (defaults filled in), each expression compiled on its site's
/// slot layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub name: String,
    /// Members in the family (1 for a plain declaration).
    pub count: u32,
    pub cap: Limit,
    /// Units per block; `None` when the spec sets none (the runtime uses 1).
    pub block: Option<u64>,
    pub evict: Evict,
    pub preempt: PreemptMode,
    pub requeue: Requeue,
    pub queue: QueuePolicy,
    /// Ties of `queue by` keys (R21); always `Enqueue` for `queue fifo`.
    pub queue_tie: QueueTie,
    pub spill: Option<Spill>,
    pub admit_via: Option<Join<StageId>>,
    /// Slots of the queue site: a row per waiting hold.
    pub queue_layout: Layout,
    /// Slots of the entry sites (evict keys, spill `work` and `when`): a row per entry.
    pub entry_layout: Layout,
    /// Slots of the resident site (`preempt by` keys, R18): a row per candidate
    /// victim. Empty unless the pool preempts by keys.
    pub resident_layout: Layout,
    /// `route by` (R22): on the entry family of a spec that routes, or on a handoff
    /// target (R25).
    pub route: Option<Route>,
    /// `handoff POOL via LINK (work);` (R25): only on an entry family.
    pub handoff: Option<Handoff>,
    /// `fair …;` (R30): only on a pool admitted via a step stage.
    pub fair: Option<Fair>,
}

impl Pool {
    pub fn block_units(&self) -> u64 {
        self.block.unwrap_or(1)
    }
}

/// A checked `stage` declaration: a family of `count` members sharing its options,
/// which are a step's or a link's (D4).
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: String,
    /// Members in the family (1 for a plain declaration).
    pub count: u32,
    pub kind: StageKind,
}

impl Stage {
    /// The `time` site every stage exports as a function (docs/ABI.md): a step's own;
    /// a link, which does not iterate, exports [`StepStage::default`]'s constant 0 on
    /// an empty layout.
    pub fn time(&self) -> (&SiteExpr, &Layout) {
        match &self.kind {
            StageKind::Step(step) => (&step.time, &step.time_layout),
            StageKind::Link(_) => (&NO_TIME, &NO_TIME_LAYOUT),
        }
    }
}

/// The `time` of a stage that sets none: no seconds per iteration, reading nothing.
static NO_TIME: SiteExpr = SiteExpr {
    expr: Expr::Const(0.0),
    reads: ReadSet(BTreeSet::new()),
};

/// The slot layout of [`NO_TIME`]: no slot.
static NO_TIME_LAYOUT: Layout = Layout {
    row: Vec::new(),
    ctx: Vec::new(),
};

/// What a stage does, with the options of that kind (D4): a step stage's cannot be
/// set on a link, nor a link's on a step.
#[derive(Clone, Debug, PartialEq)]
pub enum StageKind {
    Step(StepStage),
    Link(LinkStage),
}

impl StageKind {
    /// The keyword that declares the kind (`step`, `link`).
    pub fn name(&self) -> &'static str {
        match self {
            StageKind::Step(_) => "step",
            StageKind::Link(_) => "link",
        }
    }
}

/// A step stage's options (D4, R15, R16): an engine that runs iterations over a batch
/// of resident sessions.
#[derive(Clone, Debug, PartialEq)]
pub struct StepStage {
    /// Tokens per iteration.
    pub budget: Limit,
    /// Residents at most.
    pub seats: Limit,
    /// The largest prefill piece a resident takes in one iteration.
    pub chunk: Limit,
    /// `serve exclusive prefill` (R16).
    pub exclusive_prefill: bool,
    /// Seconds per iteration, on `time_layout`: its ctx holds the iteration's totals,
    /// its row one session's take, read only inside `sum` (R29).
    pub time: SiteExpr,
    pub time_layout: Layout,
}

impl Default for StepStage {
    /// A step stage that sets no option: nothing bounded, iterations take no time.
    fn default() -> StepStage {
        StepStage {
            budget: Limit::Unbounded,
            seats: Limit::Unbounded,
            chunk: Limit::Unbounded,
            exclusive_prefill: false,
            time: NO_TIME.clone(),
            time_layout: NO_TIME_LAYOUT.clone(),
        }
    }
}

/// A link stage's options (D4, R17): a transfer channel that serves spill and tier
/// load work first come first served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkStage {
    /// Work per second; `inf` is instantaneous.
    pub rate: f64,
}

impl Default for LinkStage {
    /// A link stage that sets no `rate`: instantaneous.
    fn default() -> LinkStage {
        LinkStage {
            rate: f64::INFINITY,
        }
    }
}

/// One session attribute (D3): a built-in or one the `session` block declares.
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: String,
    /// `None`: every session of a workload must supply it (D3).
    pub default: Option<f64>,
    /// `serial` and `arrival` exist without declaration.
    pub builtin: bool,
}

/// The checked `session` block: its attributes after the built-ins; `AttrId(i)`
/// indexes `attrs`. `serial` is 0 and `arrival` is 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub attrs: Vec<Attr>,
}

impl Session {
    pub const SERIAL: AttrId = AttrId(0);
    pub const ARRIVAL: AttrId = AttrId(1);

    pub fn attr(&self, id: AttrId) -> &Attr {
        self.attrs
            .get(id.0 as usize)
            .expect("an AttrId is made by the session it indexes (ir::verify)")
    }

    pub fn find(&self, name: &str) -> Option<AttrId> {
        self.attrs
            .iter()
            .position(|a| a.name == name)
            .map(|i| AttrId(i as u32))
    }
}

/// A `const` or `param` with its final value (after `--set`).
#[derive(Clone, Debug, PartialEq)]
pub struct NamedValue {
    pub name: String,
    pub value: f64,
    pub is_param: bool,
}

/// A whole checked spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub values: Vec<NamedValue>,
    pub session: Session,
    pub stages: Vec<Stage>,
    pub pools: Vec<Pool>,
}

impl Program {
    pub fn pool(&self, id: PoolId) -> &Pool {
        self.pools
            .get(id.0 as usize)
            .expect("a PoolId is made by the program it indexes (ir::verify)")
    }

    pub fn stage(&self, id: StageId) -> &Stage {
        self.stages
            .get(id.0 as usize)
            .expect("a StageId is made by the program it indexes (ir::verify)")
    }

    pub fn find_pool(&self, name: &str) -> Option<PoolId> {
        self.pools
            .iter()
            .position(|p| p.name == name)
            .map(|i| PoolId(i as u32))
    }

    pub fn find_stage(&self, name: &str) -> Option<StageId> {
        self.stages
            .iter()
            .position(|s| s.name == name)
            .map(|i| StageId(i as u32))
    }
}

mod print;
pub mod verify;
mod write;
pub use print::{SlotWriter, input_name, prefix, prefix_slots, read_name};
pub use verify::{VerifyError, verify};
pub use write::dump;
