//! Building the host, as named steps: the stage members (steps and links), the pool
//! members, the joins between them (which step admits which pool, which pool spills
//! into which tier over which link), the entry pools sessions are routed to, and the
//! sessions bound to their attributes ([`super::session`]). Everything a
//! configuration can get wrong is a [`HostError::Config`] here, before anything runs.

use std::collections::BinaryHeap;

use crate::config::PoolRef;
use crate::pool::Pool;
use crate::trace::{SessionSource, Sessions, Workload};
use crate::types::{Limit, SessionId};

use super::super::LatencySamples;
use super::super::config::{
    HandoffConfig, HostConfig, HostError, IterTime, LinkConfig, PoolDecl, StageDecl, StageKind,
    StepConfig, member_name,
};
use super::super::percentile::Latencies;
use super::super::report::Samples;
use super::handoff::{HandoffInfo, Target, Totals};
use super::links::LinkMember;
use super::progress::Guard;
use super::route::Router;
use super::session::{PoolQ, Shared, StageIdx, StageQ, attr_sources, bind};
use super::step::StepMember;
use super::table::{Table, Window};
use super::{Host, LinkIx, PoolInfo, PoolIx, StepIx};

pub(super) fn config_err(m: impl Into<String>) -> HostError {
    HostError::Config(m.into())
}

/// The stage members, flattened: step members and link members in declaration
/// order, and per declaration the index of each of its members.
struct Stages {
    steps: Table<StepIx, StepMember>,
    links: Table<LinkIx, LinkMember>,
    flat: Vec<Vec<StageIdx>>,
}

/// A pool member's joins as configured, before they are resolved.
struct Joins {
    admit_via: Vec<crate::config::StageRef>,
    spill: Option<(PoolRef, crate::config::StageRef)>,
    handoff: Option<HandoffConfig>,
}

/// The pool members, flattened, with what the host keeps of each and their joins.
struct Pools {
    pools: Table<PoolIx, Pool>,
    info: Table<PoolIx, PoolInfo>,
    flat: Vec<Vec<PoolIx>>,
    joins: Vec<Joins>,
}

impl<'w> Host<'w> {
    /// Builds the host for a whole workload: stages and pools by member, their joins
    /// resolved and checked, the entry pools, and every session checked and bound to
    /// its attributes (D3), so that a bad session is refused before anything runs.
    pub fn new(config: HostConfig, workload: &'w Workload) -> Result<Host<'w>, HostError> {
        let sources = attr_sources(&config.attrs, &workload.fields);
        let mut scratch = Vec::with_capacity(config.attrs.len());
        let mut previous = 0.0;
        for (i, s) in workload.sessions.iter().enumerate() {
            scratch.clear();
            let source = workload.source.as_str();
            bind(
                &config.attrs,
                &sources,
                source,
                i as u64,
                s,
                previous,
                &mut scratch,
            )?;
            previous = s.arrival;
        }
        let gaps: u64 = workload
            .sessions
            .iter()
            .map(|s| s.output.saturating_sub(1))
            .sum();
        let mut host = Host::streaming(config, Box::new(Sessions::new(workload)))?;
        host.exact_reserve = (workload.sessions.len(), usize::try_from(gaps).unwrap_or(0));
        Ok(host)
    }

    /// Builds the host for sessions read one at a time from `src` as the replay
    /// reaches their arrival (docs/HOST.md, "Memory"): only the sessions alive at
    /// each moment are kept. A bad session is found when it is read, and fails the
    /// run then. Nothing runs yet.
    pub fn streaming(
        config: HostConfig,
        src: Box<dyn SessionSource + 'w>,
    ) -> Result<Host<'w>, HostError> {
        let Stages {
            mut steps,
            links,
            flat: stage_flat,
        } = build_stages(&config.stages)?;
        let Pools {
            pools,
            mut info,
            flat: pool_flat,
            joins,
        } = build_pools(config.pools)?;
        let mut shared = Shared {
            sess: Window::new(),
            attrs: Vec::new(),
            attrs_first: 0,
            n_attrs: config.attrs.len(),
            keep_attrs: false,
            keep_names: false,
            pool_q: Table::filled(pools.len(), PoolQ::default()),
            stage_q: Table::filled(
                steps.len(),
                StageQ {
                    budget_left: f64::INFINITY,
                    residents: 0.0,
                },
            ),
            pool_flat,
            stage_flat,
            current: None,
        };
        let mut targets = resolve_joins(joins, &shared, &mut info, &mut steps)?;
        let entries = entry_pools(&info)?;
        if entries.len() > 1 {
            for &p in &entries {
                info[p].ttft = Latencies::sketch();
            }
        }
        let mut router = None;
        for c in config.routes {
            let members = shared
                .pool_flat
                .get(c.pool as usize)
                .cloned()
                .unwrap_or_default();
            if members.len() < 2 {
                return Err(config_err(
                    "a route must be over a family of two members or more (R22)",
                ));
            }
            if let Some(t) = targets.iter_mut().find(|t| t.decl == c.pool) {
                if t.router.is_some() {
                    return Err(config_err("a family has two routes"));
                }
                t.router = Some(Router::new(c, members)?);
            } else if members == entries && router.is_none() {
                router = Some(Router::new(c, members)?);
            } else {
                return Err(config_err(
                    "a route must be over the only entry family or a handoff target (R22, R25)",
                ));
            }
        }
        shared.keep_attrs = pools
            .keys()
            .any(|p| info[p].is_tier && pools[p].snapshots_attrs());
        shared.keep_names = pools.keys().any(|p| pools[p].ties_by_id());
        let charges = pools.keys().any(|p| pools[p].is_fair());
        let mut host = Host {
            src_name: src.source().to_string(),
            // No field is known before the first session is read (`pull`).
            attr_sources: attr_sources(&config.attrs, &[]),
            attr_fields: 0,
            attr_specs: config.attrs,
            src,
            previous_arrival: 0.0,
            next_runs: Vec::new(),
            live_from: SessionId(0),
            finished: 0,
            rejected: 0,
            exact_reserve: (0, 0),
            pools,
            info,
            steps,
            links,
            shared,
            entries,
            router,
            targets,
            handoffs: Totals::default(),
            events: BinaryHeap::new(),
            seq: 0,
            next_arrival: SessionId(0),
            now: 0.0,
            done: 0,
            // Replaced when the run starts, as RunOptions::latencies says;
            // empty lists cost nothing meanwhile.
            samples: Samples::exact(0, 0),
            output_tokens: 0,
            computed_tokens: 0,
            victims: Vec::new(),
            // Set with its bound when the run starts (it may come from RunOptions).
            guard: Guard::new(0),
            run_ahead: false,
            ahead: 0,
            deferred: Table::new(),
            charges,
        };
        host.deferred = Table::filled(host.steps.len(), super::ahead::Deferred::default());
        for p in host.pools.keys() {
            host.refresh(p);
        }
        Ok(host)
    }
}

impl Host<'_> {
    /// The report's latency accumulators: bounded sketches, or exact lists reserved
    /// to their bounds when the whole workload is known (one TTFT and E2E per
    /// session, one ITL per later token) so that a warm replay does not reallocate.
    pub(super) fn samples(&self, keep: LatencySamples) -> Samples {
        match keep {
            LatencySamples::Unkept => Samples::unkept(),
            LatencySamples::Sketch => Samples::sketch(),
            LatencySamples::Exact => {
                let (sessions, gaps) = self.exact_reserve;
                Samples::exact(sessions, gaps)
            }
        }
    }
}

/// Every stage declaration's members, each checked: a step's `time` against its
/// layout, a link's rate.
fn build_stages(decls: &[StageDecl]) -> Result<Stages, HostError> {
    let mut stages = Stages {
        steps: Table::new(),
        links: Table::new(),
        flat: Vec::new(),
    };
    for d in decls {
        if d.count == 0 {
            return Err(config_err(format!("stage {} has no members", d.name)));
        }
        let mut members = Vec::new();
        for i in 0..d.count {
            let name = member_name(&d.name, d.count, i);
            match &d.kind {
                StageKind::Step(c) => {
                    check_time(&d.name, c)?;
                    let m = stages.steps.push(StepMember::new(name, c));
                    members.push(StageIdx::Step(m));
                }
                StageKind::Link(LinkConfig { rate }) => {
                    if rate.is_nan() || *rate <= 0.0 {
                        return Err(config_err(format!(
                            "link {} has rate {rate}; a rate must be more than 0",
                            d.name
                        )));
                    }
                    let l = stages.links.push(LinkMember::new(name, *rate));
                    members.push(StageIdx::Link(l));
                }
            }
        }
        stages.flat.push(members);
    }
    Ok(stages)
}

/// Every pool declaration's members as engine pools, each knowing its own place.
fn build_pools(decls: Vec<PoolDecl>) -> Result<Pools, HostError> {
    let mut out = Pools {
        pools: Table::new(),
        info: Table::new(),
        flat: Vec::new(),
        joins: Vec::new(),
    };
    for (d, decl) in decls.into_iter().enumerate() {
        if decl.members.is_empty() {
            return Err(config_err(format!("pool {} has no members", decl.name)));
        }
        let count = decl.members.len() as u32;
        let mut flat = Vec::new();
        for (i, m) in decl.members.into_iter().enumerate() {
            let name = member_name(&decl.name, count, i as u32);
            let me = PoolRef {
                pool: d as u32,
                member: i as u32,
            };
            if m.config.me != me {
                return Err(config_err(format!(
                    "pool {name}: its config says it is {:?}, but it is declaration {d}, \
                     member {i}",
                    m.config.me
                )));
            }
            let spill = m.config.spill.as_ref().map(|s| (s.tier, s.link));
            let block = m.config.block.0;
            let (cap_units, cap_blocks) = match m.config.cap {
                Limit::Finite(u) => (Some(u.0), Some(u.0 / block.max(1))),
                Limit::Unbounded => (None, None),
            };
            let pool = Pool::new(m.config).map_err(|e| config_err(format!("pool {name}: {e}")))?;
            flat.push(out.pools.push(pool));
            out.joins.push(Joins {
                admit_via: m.admit_via,
                spill,
                handoff: m.handoff,
            });
            out.info
                .push(PoolInfo::new(name, cap_units, cap_blocks, block));
        }
        out.flat.push(flat);
    }
    Ok(out)
}

/// Resolves each pool's joins: the step members that admit it (K4 order kept), the
/// tier it spills into over which link, with the same block, and its handoff (R25),
/// whose target families it gives.
fn resolve_joins(
    joins: Vec<Joins>,
    shared: &Shared,
    info: &mut Table<PoolIx, PoolInfo>,
    steps: &mut Table<StepIx, StepMember>,
) -> Result<Vec<Target>, HostError> {
    let mut handoffs = Vec::new();
    for (
        p,
        Joins {
            admit_via,
            spill,
            handoff,
        },
    ) in info.keys().zip(joins)
    {
        if let Some(h) = handoff {
            handoffs.push((p, h));
        }
        for r in admit_via {
            match shared.stage_index(r) {
                Some(StageIdx::Step(m)) => {
                    if !info[p].served_by.contains(&m) {
                        info[p].served_by.push(m);
                        steps[m].pools.push(p);
                    }
                }
                _ => {
                    return Err(config_err(format!(
                        "pool {} is admitted via {r:?}, which is not a step-stage member",
                        info[p].name
                    )));
                }
            }
        }
        if let Some((tier, link)) = spill {
            let tp = shared.pool_index(tier).ok_or_else(|| {
                config_err(format!(
                    "pool {} spills into {tier:?}, which is not a pool member",
                    info[p].name
                ))
            })?;
            if tp == p {
                return Err(config_err(format!(
                    "pool {} spills into itself",
                    info[p].name
                )));
            }
            let Some(StageIdx::Link(l)) = shared.stage_index(link) else {
                return Err(config_err(format!(
                    "pool {} spills via {link:?}, which is not a link-stage member",
                    info[p].name
                )));
            };
            if info[tp].block != info[p].block {
                return Err(config_err(format!(
                    "pool {} (block {}) spills into {} (block {}): the reference host needs \
                     a pool and its tier to have the same block",
                    info[p].name, info[p].block, info[tp].name, info[tp].block
                )));
            }
            info[p].tier = Some(tp);
            info[p].link = Some(l);
            info[tp].is_tier = true;
        }
    }
    resolve_handoffs(handoffs, shared, info)
}

/// R25: each handoff's target family (admitted via a step stage, neither handing off
/// nor spilling, one cap), its link member and its work's layout.
fn resolve_handoffs(
    handoffs: Vec<(PoolIx, HandoffConfig)>,
    shared: &Shared,
    info: &mut Table<PoolIx, PoolInfo>,
) -> Result<Vec<Target>, HostError> {
    let mut targets: Vec<Target> = Vec::new();
    for (p, h) in &handoffs {
        let name = &info[*p].name;
        let members = shared
            .pool_flat
            .get(h.target as usize)
            .cloned()
            .unwrap_or_default();
        let Some(&first) = members.first() else {
            return Err(config_err(format!(
                "pool {name} hands off to declaration {}, which is not a pool",
                h.target
            )));
        };
        if info[*p].served_by.is_empty() || members.contains(p) {
            return Err(config_err(format!(
                "pool {name} hands off but is not admitted via a step stage, or into itself"
            )));
        }
        for &d in &members {
            let di = &info[d];
            let shared_stage = di.served_by.iter().any(|m| info[*p].served_by.contains(m));
            if di.served_by.is_empty()
                || shared_stage
                || di.tier.is_some()
                || di.cap_blocks != info[first].cap_blocks
            {
                return Err(config_err(format!(
                    "pool {name} hands off to {}, which must be admitted via another step \
                     stage, not spill, and share one cap (R25)",
                    di.name
                )));
            }
        }
        let shape = h.work.shape();
        if shape.row > h.row.len() || shape.ctx > h.ctx.len() {
            return Err(config_err(format!(
                "pool {name}: its handoff work reads {} row and {} ctx slots, the layout has \
                 {} and {}",
                shape.row,
                shape.ctx,
                h.row.len(),
                h.ctx.len()
            )));
        }
        let Some(StageIdx::Link(link)) = shared.stage_index(h.link) else {
            return Err(config_err(format!(
                "pool {name} hands off via {:?}, which is not a link-stage member",
                h.link
            )));
        };
        let t = match targets.iter().position(|t| t.decl == h.target) {
            Some(t) => t,
            None => {
                targets.push(Target {
                    decl: h.target,
                    members: members.clone(),
                    router: None,
                });
                targets.len() - 1
            }
        };
        for &d in &members {
            info[d].is_target = true;
        }
        info[*p].handoff = Some(HandoffInfo {
            target: t,
            link,
            work: h.work.clone(),
            row: h.row.clone(),
            ctx: h.ctx.clone(),
        });
    }
    for (p, _) in &handoffs {
        if info[*p].is_target {
            return Err(config_err(format!(
                "pool {} hands off and is a handoff target: a session hands off once (R25)",
                info[*p].name
            )));
        }
    }
    Ok(targets)
}

/// The pools sessions are routed to: those a step stage admits that are no
/// handoff's target (R25). Every other pool must be a tier or a target, or it would
/// never see a session.
fn entry_pools(info: &Table<PoolIx, PoolInfo>) -> Result<Vec<PoolIx>, HostError> {
    if let Some(p) = info.iter().find(|p| p.served_by.is_empty() && !p.is_tier) {
        return Err(config_err(format!(
            "pool {} is neither admitted via a step stage nor a tier another pool spills \
             into; the reference host has no sessions to give it",
            p.name
        )));
    }
    let entries: Vec<PoolIx> = info
        .keys()
        .filter(|&p| !info[p].served_by.is_empty() && !info[p].is_target)
        .collect();
    if entries.is_empty() {
        return Err(config_err(
            "no pool is admitted via a step stage: sessions have nowhere to go",
        ));
    }
    Ok(entries)
}

/// A step stage's compiled `time` must not read beyond its layout.
fn check_time(name: &str, c: &StepConfig) -> Result<(), HostError> {
    match &c.time {
        IterTime::Fixed(x) if !x.is_finite() || *x < 0.0 => Err(config_err(format!(
            "stage {name}: time {x} is not a finite number of seconds at least 0"
        ))),
        IterTime::Compiled {
            policy,
            layout,
            row,
        } if policy.shape().ctx > layout.len() || policy.shape().row > row.len() => {
            Err(config_err(format!(
                "stage {name}: its time reads {} ctx and {} row slots, the layouts have {} \
                 and {}",
                policy.shape().ctx,
                policy.shape().row,
                layout.len(),
                row.len()
            )))
        }
        _ => Ok(()),
    }
}
