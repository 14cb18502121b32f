//! The bridge from a checked spec to the runtime: turns the IR's pools and stages (with
//! their compiled policies, from the JIT or a shared object) into `poolrt`'s own
//! configuration types, resolving family joins to concrete members. It owns the
//! mapping between the two crates' vocabularies and nothing else: it never evaluates
//! an expression and never runs a pool.

use std::fmt;

use poolrt::host::{
    AttrSpec, Extreme, HandoffConfig, HandoffInput, HostConfig, IterTime, LinkConfig, PoolDecl,
    PoolMember, Probe, RouteConfig, RouteInput, Scored, StageDecl, StageKind, StepConfig, TakeVar,
    TimeVar,
};
use poolrt::policy::{PoolPolicy, StagePolicy};
use poolrt::{
    EvictPolicy, FairConfig, Limit, PoolConfig, PoolRef, Preempt, QueueIndex, QueuePolicy,
    QueueTie, Requeue, SpillPolicy, StageRef, Units,
};

use crate::ir::{self, JoinRule, Member, PoolId, Program, QueryTarget, StageId, Var};

/// A mismatch between the IR and the policies given for it: a broken build, not a
/// user's mistake, but reported as an error so a stale shared object cannot crash
/// the host.
#[derive(Clone, Debug, PartialEq)]
pub enum BridgeError {
    /// The IR has keys (or a spill) that the policy set lacks, or the reverse.
    Mismatch { pool: String, what: &'static str },
    /// The runtime refused the configuration.
    Config { pool: String, message: String },
    /// The IR breaks its contract (`ir::verify`).
    Verify(ir::VerifyError),
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::Mismatch { pool, what } => {
                write!(
                    f,
                    "pool `{pool}`: the compiled policies have no {what} for its IR"
                )
            }
            BridgeError::Config { pool, message } => write!(f, "pool `{pool}`: {message}"),
            BridgeError::Verify(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BridgeError {}

/// The member of `target` (a family of `target_count`) joined to `member` by `rule`.
pub fn join_member(rule: JoinRule, member: u32) -> u32 {
    match rule {
        JoinRule::MemberForMember => member,
        JoinRule::SharedTarget => 0,
        // Only `admit via` uses it: the one pool is member 0 of its family.
        JoinRule::SharedSource => member,
    }
}

fn resolve(m: Member, member: u32) -> u32 {
    match m {
        Member::Same => member,
        Member::Index(i) => i,
    }
}

/// The runtime configuration of member `member` of pool `id`, for a program that
/// keeps the IR's contract (checked: the runtime indexes by what the IR says).
pub fn pool_config(
    program: &Program,
    id: PoolId,
    member: u32,
    policy: &PoolPolicy,
) -> Result<PoolConfig, BridgeError> {
    ir::verify(program).map_err(BridgeError::Verify)?;
    member_config(program, id, member, policy)
}

/// [`pool_config`] of a verified program.
fn member_config(
    program: &Program,
    id: PoolId,
    member: u32,
    policy: &PoolPolicy,
) -> Result<PoolConfig, BridgeError> {
    let pool = program.pool(id);
    let mismatch = |what| BridgeError::Mismatch {
        pool: pool.name.clone(),
        what,
    };
    let queue = match (&pool.queue, &policy.queue) {
        (ir::QueuePolicy::Fifo, _) => QueuePolicy::Fifo,
        (ir::QueuePolicy::By(_), Some(keys)) => QueuePolicy::By {
            keys: keys.clone(),
            layout: layout(&pool.queue_layout, PoolSite::Queue, member),
        },
        (ir::QueuePolicy::By(_), None) => return Err(mismatch("queue keys")),
    };
    let evict = match (&pool.evict, &policy.evict) {
        (ir::Evict::Lru, _) => EvictPolicy::Lru,
        (ir::Evict::By(_), Some(keys)) => EvictPolicy::By {
            keys: keys.clone(),
            layout: layout(&pool.entry_layout, PoolSite::Entry, member),
        },
        (ir::Evict::By(_), None) => return Err(mismatch("evict keys")),
    };
    let preempt = match (&pool.preempt, &policy.preempt) {
        (ir::PreemptMode::None, _) => Preempt::None,
        (ir::PreemptMode::Lifo, _) => Preempt::Lifo,
        (ir::PreemptMode::By(_), Some(keys)) => Preempt::By {
            keys: keys.clone(),
            layout: layout(&pool.resident_layout, PoolSite::Resident, member),
        },
        (ir::PreemptMode::By(_), None) => return Err(mismatch("preempt keys")),
    };
    let spill = match (&pool.spill, &policy.spill) {
        (None, _) => None,
        (Some(s), Some(fns)) => Some(SpillPolicy {
            fns: fns.clone(),
            layout: layout(&pool.entry_layout, PoolSite::Entry, member),
            tier: PoolRef {
                pool: s.tier.target.0,
                member: join_member(s.tier.rule, member),
            },
            link: StageRef {
                stage: s.link.target.0,
                member: join_member(s.link.rule, member),
            },
        }),
        (Some(_), None) => return Err(mismatch("spill functions")),
    };
    Ok(PoolConfig {
        me: PoolRef { pool: id.0, member },
        cap: limit(pool.cap),
        block: Units(pool.block_units()),
        evict,
        preempt,
        requeue: match pool.requeue {
            ir::Requeue::Head => Requeue::Head,
            ir::Requeue::Keyed => Requeue::Keyed,
        },
        queue,
        queue_tie: match pool.queue_tie {
            ir::QueueTie::Enqueue => QueueTie::Enqueue,
            ir::QueueTie::Id => QueueTie::Id,
        },
        queue_index: QueueIndex::Auto,
        spill,
        fair: pool.fair.map(|f| FairConfig {
            by: f.by.0,
            prefill: f.prefill,
            decode: f.decode,
            weight: f.weight.map(|w| w.0),
        }),
    })
}

/// Which of a pool's sites a layout serves. It decides what `units` reads: at the
/// entry sites (evict keys, spill `work` and `when`) the units a spill writes, at the
/// others the hold's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PoolSite {
    Queue,
    Entry,
    Resident,
}

/// A site layout in runtime terms.
fn layout(l: &ir::Layout, site: PoolSite, member: u32) -> poolrt::Layout {
    let map = |inputs: &[ir::Input]| inputs.iter().map(|i| input(*i, site, member)).collect();
    poolrt::Layout {
        row: map(&l.row),
        ctx: map(&l.ctx),
    }
}

fn input(i: ir::Input, site: PoolSite, member: u32) -> poolrt::Input {
    use poolrt::Input as R;
    match i {
        ir::Input::Attr(a) => R::Attr(a.0),
        ir::Input::Enqueued => R::Enqueued,
        ir::Input::Var(v) => match v {
            Var::Units if site == PoolSite::Entry => R::SpillUnits,
            Var::Units => R::Units,
            Var::Reserve => R::Reserve,
            Var::Computed => R::Computed,
            Var::Size => R::Size,
            Var::Last => R::Last,
            Var::Waiting => R::Waiting,
            Var::Hits => R::Hits,
            Var::Now => R::Now,
            Var::Admitted => R::Admitted,
            Var::Service => R::Service,
            // sema stores `waited` and `age` as differences, and the stage variables
            // appear only in stage `time` layouts, never in a pool's.
            Var::Waited
            | Var::Age
            | Var::Tokens
            | Var::Prefill
            | Var::Decode
            | Var::Residents
            | Var::Context
            | Var::Member => {
                unreachable!("sema never puts `{}` in a pool layout", v.name())
            }
        },
        ir::Input::Scored(_) | ir::Input::Over(..) => {
            unreachable!("ir::verify keeps route inputs out of pool layouts")
        }
        ir::Input::Query(q) => R::Query(query(q, member)),
    }
}

fn query_kind(k: ir::QueryKind) -> poolrt::QueryKind {
    match k {
        ir::QueryKind::Free => poolrt::QueryKind::Free,
        ir::QueryKind::Used => poolrt::QueryKind::Used,
        ir::QueryKind::Cached => poolrt::QueryKind::Cached,
        ir::QueryKind::Cap => poolrt::QueryKind::Cap,
        ir::QueryKind::Queued => poolrt::QueryKind::Queued,
        ir::QueryKind::BudgetLeft => poolrt::QueryKind::BudgetLeft,
        ir::QueryKind::Residents => poolrt::QueryKind::Residents,
    }
}

/// A route slot in runtime terms (R22): per-member values become probes of the
/// member being scored; a query on one fixed member stays a query.
fn route_input(i: ir::Input) -> RouteInput {
    let probe = |p: ir::Probe| match p {
        ir::Probe::Scored(s) => Probe::Scored(scored(s)),
        ir::Probe::Query(q) => match q.target {
            QueryTarget::Pool(p, _) => Probe::Pool(query_kind(q.kind), p.0),
            QueryTarget::Stage(s, _) => Probe::Stage(query_kind(q.kind), s.0),
        },
    };
    match i {
        ir::Input::Attr(a) => RouteInput::Attr(a.0),
        ir::Input::Var(Var::Member) => RouteInput::Member,
        ir::Input::Query(q) => match q.target {
            QueryTarget::Pool(_, Member::Same) | QueryTarget::Stage(_, Member::Same) => {
                RouteInput::Probe(probe(ir::Probe::Query(q)))
            }
            _ => RouteInput::Query(query(q, 0)),
        },
        ir::Input::Scored(s) => RouteInput::Probe(Probe::Scored(scored(s))),
        ir::Input::Over(e, p) => RouteInput::Over(
            match e {
                ir::Extreme::Min => Extreme::Min,
                ir::Extreme::Max => Extreme::Max,
            },
            probe(p),
        ),
        ir::Input::Var(Var::Now) => RouteInput::Now,
        ir::Input::Var(_) | ir::Input::Enqueued => {
            unreachable!("sema allows route keys no other input ({i:?})")
        }
    }
}

fn scored(s: ir::Scored) -> Scored {
    match s {
        ir::Scored::Hit => Scored::Hit,
        ir::Scored::TierHit => Scored::TierHit,
        ir::Scored::Routed => Scored::Routed,
    }
}

/// The route of the routed family `pool` (R22–R24) with its compiled keys.
fn route_config(
    program: &Program,
    pool: usize,
    policy: &PoolPolicy,
) -> Result<Option<RouteConfig>, BridgeError> {
    let p = program.pool(PoolId(pool as u32));
    let Some(route) = &p.route else {
        return Ok(None);
    };
    let keys = policy.route.clone().ok_or_else(|| BridgeError::Mismatch {
        pool: p.name.clone(),
        what: "route keys",
    })?;
    Ok(Some(RouteConfig {
        pool: pool as u32,
        keys,
        row: route.layout.row.iter().map(|i| route_input(*i)).collect(),
        ctx: route.layout.ctx.iter().map(|i| route_input(*i)).collect(),
        every: route.every,
        remember: route.remember,
    }))
}

/// Member `member`'s handoff (R25) with its compiled work; its link resolved by K1.
fn handoff_config(
    program: &Program,
    pool: usize,
    member: u32,
    policy: &PoolPolicy,
) -> Result<Option<HandoffConfig>, BridgeError> {
    let p = program.pool(PoolId(pool as u32));
    let Some(h) = &p.handoff else {
        return Ok(None);
    };
    let work = policy
        .handoff
        .clone()
        .ok_or_else(|| BridgeError::Mismatch {
            pool: p.name.clone(),
            what: "handoff work",
        })?;
    let input = |i: &ir::Input| match *i {
        ir::Input::Attr(a) => HandoffInput::Attr(a.0),
        ir::Input::Var(Var::Units) => HandoffInput::Units,
        other => unreachable!("ir::verify keeps {other:?} out of a handoff's layout"),
    };
    Ok(Some(HandoffConfig {
        target: h.target.0,
        link: StageRef {
            stage: h.link.target.0,
            member: join_member(h.link.rule, member),
        },
        work,
        row: h.layout.row.iter().map(input).collect(),
        ctx: h.layout.ctx.iter().map(input).collect(),
    }))
}

fn query(q: ir::Query, member: u32) -> poolrt::Query {
    poolrt::Query {
        kind: query_kind(q.kind),
        target: match q.target {
            QueryTarget::Pool(p, m) => poolrt::Target::Pool(PoolRef {
                pool: p.0,
                member: resolve(m, member),
            }),
            QueryTarget::Stage(s, m) => poolrt::Target::Stage(StageRef {
                stage: s.0,
                member: resolve(m, member),
            }),
        },
    }
}

/// The reference host's whole configuration: every stage and every pool member, with
/// the policies of each declaration (from the JIT, or loaded from a shared object).
/// `pools[i]` and `stages[i]` are the policies of the i-th pool and stage of `program`.
pub fn host_config(
    program: &Program,
    pools: &[PoolPolicy],
    stages: &[StagePolicy],
) -> Result<HostConfig, BridgeError> {
    ir::verify(program).map_err(BridgeError::Verify)?;
    let attrs = program
        .session
        .attrs
        .iter()
        .map(|a| AttrSpec::new(&a.name, a.default))
        .collect();
    let mut stage_decls = Vec::new();
    for (i, s) in program.stages.iter().enumerate() {
        let kind = match &s.kind {
            ir::StageKind::Link(link) => StageKind::Link(LinkConfig { rate: link.rate }),
            ir::StageKind::Step(step) => {
                let policy = stages.get(i).ok_or_else(|| BridgeError::Mismatch {
                    pool: s.name.clone(),
                    what: "stage time function",
                })?;
                StageKind::Step(StepConfig {
                    budget: limit(step.budget),
                    seats: limit(step.seats),
                    chunk: limit(step.chunk),
                    exclusive_prefill: step.exclusive_prefill,
                    time: iter_time(step, policy),
                })
            }
        };
        stage_decls.push(StageDecl {
            name: s.name.clone(),
            count: s.count,
            kind,
        });
    }
    let mut pool_decls = Vec::new();
    let mut routes = Vec::new();
    for (i, p) in program.pools.iter().enumerate() {
        let id = PoolId(i as u32);
        let policy = pools.get(i).ok_or_else(|| BridgeError::Mismatch {
            pool: p.name.clone(),
            what: "policy set",
        })?;
        let mut members = Vec::new();
        for member in 0..p.count {
            let admit_via = match p.admit_via {
                None => Vec::new(),
                Some(j) => admitting_members(program, j.target, j.rule, member),
            };
            members.push(PoolMember {
                config: member_config(program, id, member, policy)?,
                admit_via,
                handoff: handoff_config(program, i, member, policy)?,
            });
        }
        pool_decls.push(PoolDecl {
            name: p.name.clone(),
            members,
        });
        if let Some(r) = route_config(program, i, policy)? {
            routes.push(r);
        }
    }
    Ok(HostConfig {
        attrs,
        stages: stage_decls,
        pools: pool_decls,
        routes,
    })
}

/// The stage members that admit pool member `member` (K1): its own, the one shared
/// stage, or, for a pool of one served by a family, every member of the family.
fn admitting_members(
    program: &Program,
    stage: StageId,
    rule: JoinRule,
    member: u32,
) -> Vec<StageRef> {
    match rule {
        JoinRule::SharedSource => (0..program.stage(stage).count)
            .map(|m| StageRef {
                stage: stage.0,
                member: m,
            })
            .collect(),
        rule => vec![StageRef {
            stage: stage.0,
            member: join_member(rule, member),
        }],
    }
}

/// A constant `time` needs no call per iteration.
fn iter_time(step: &ir::StepStage, policy: &StagePolicy) -> IterTime {
    if let ir::Expr::Const(c) = step.time.expr {
        return IterTime::Fixed(c);
    }
    let layout = step
        .time_layout
        .ctx
        .iter()
        .map(|i| match i {
            ir::Input::Var(Var::Tokens) => TimeVar::Tokens,
            ir::Input::Var(Var::Prefill) => TimeVar::Prefill,
            ir::Input::Var(Var::Decode) => TimeVar::Decode,
            ir::Input::Var(Var::Residents) => TimeVar::Residents,
            ir::Input::Var(Var::Context) => TimeVar::Context,
            other => unreachable!("sema never puts {other:?} in a stage time ctx"),
        })
        .collect();
    let row = step
        .time_layout
        .row
        .iter()
        .map(|i| match i {
            ir::Input::Var(Var::Tokens) => TakeVar::Tokens,
            ir::Input::Var(Var::Prefill) => TakeVar::Prefill,
            ir::Input::Var(Var::Decode) => TakeVar::Decode,
            ir::Input::Var(Var::Computed) => TakeVar::Computed,
            ir::Input::Var(Var::Context) => TakeVar::Context,
            ir::Input::Attr(a) => TakeVar::Attr(a.0),
            other => unreachable!("sema never puts {other:?} in a stage time row"),
        })
        .collect();
    IterTime::Compiled {
        policy: policy.clone(),
        layout,
        row,
    }
}

fn limit(l: ir::Limit) -> Limit {
    match l {
        ir::Limit::Finite(n) => Limit::Finite(Units(n)),
        ir::Limit::Unbounded => Limit::Unbounded,
    }
}
