//! Building the host, as named steps: the stage members (steps and links), the pool
//! members, the joins between them (which step admits which pool, which pool spills
//! into which tier over which link), the entry pools sessions are routed to, and the
//! sessions bound to their attributes ([`super::session`]). Everything a
//! configuration can get wrong is a [`HostError::Config`] here, before anything runs.

use std::collections::{BinaryHeap, VecDeque};

use crate::config::PoolRef;
use crate::pool::Pool;
use crate::trace::Workload;
use crate::types::Limit;

use super::super::config::{
    HostConfig, HostError, IterTime, LinkConfig, StageKind, StepConfig, member_name,
};
use super::super::report::Occupancy;
use super::super::report::Samples;
use super::links::LinkMember;
use super::session::{PoolQ, Shared, StageIdx, StageQ};
use super::step::StepMember;
use super::{Host, NONE, PoolInfo};

pub(super) fn config_err(m: impl Into<String>) -> HostError {
    HostError::Config(m.into())
}

impl Host {
    /// Builds the host: stages and pools by member (checking the joins), sessions
    /// bound to their attributes (D3). Nothing runs yet.
    pub fn new(config: HostConfig, workload: &Workload) -> Result<Host, HostError> {
        let mut steps = Vec::new();
        let mut links = Vec::new();
        let mut stage_flat = Vec::new();
        for d in &config.stages {
            if d.count == 0 {
                return Err(config_err(format!("stage {} has no members", d.name)));
            }
            let mut members = Vec::new();
            for i in 0..d.count {
                let name = member_name(&d.name, d.count, i);
                match &d.kind {
                    StageKind::Step(c) => {
                        check_time(&d.name, c)?;
                        members.push(StageIdx::Step(steps.len() as u32));
                        steps.push(StepMember::new(name, c));
                    }
                    StageKind::Link(LinkConfig { rate }) => {
                        if rate.is_nan() || *rate <= 0.0 {
                            return Err(config_err(format!(
                                "link {} has rate {rate}; a rate must be more than 0",
                                d.name
                            )));
                        }
                        members.push(StageIdx::Link(links.len() as u32));
                        links.push(LinkMember {
                            name,
                            rate: *rate,
                            busy_until: 0.0,
                            jobs: VecDeque::new(),
                            writes: 0,
                            loads: 0,
                            work: 0.0,
                            busy: 0.0,
                        });
                    }
                }
            }
            stage_flat.push(members);
        }

        let mut pools = Vec::new();
        let mut info = Vec::new();
        let mut pool_flat = Vec::new();
        let mut joins = Vec::new();
        for (d, decl) in config.pools.into_iter().enumerate() {
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
                let pool =
                    Pool::new(m.config).map_err(|e| config_err(format!("pool {name}: {e}")))?;
                flat.push(pools.len() as u32);
                joins.push((m.admit_via, spill));
                pools.push(pool);
                info.push(PoolInfo {
                    name,
                    cap_units,
                    cap_blocks,
                    block,
                    served_by: Vec::new(),
                    tier: None,
                    link: None,
                    is_tier: false,
                    sessions: 0,
                    host_rejected: 0,
                    new_admissions: 0,
                    resumed_admissions: 0,
                    hit_new: 0,
                    prompt_new: 0,
                    hit_resumed: 0,
                    tier_new: 0,
                    spills_skipped: 0,
                    allocated: Occupancy::default(),
                    used: Occupancy::default(),
                });
            }
            pool_flat.push(flat);
        }

        let shared = Shared {
            sess: Vec::new(),
            attrs: Vec::new(),
            n_attrs: config.attrs.len(),
            pool_q: vec![PoolQ::default(); pools.len()],
            stage_q: vec![
                StageQ {
                    budget_left: f64::INFINITY,
                    residents: 0.0,
                };
                steps.len()
            ],
            pool_flat,
            stage_flat,
            current: NONE,
        };

        for (p, (admit_via, spill)) in joins.into_iter().enumerate() {
            for r in admit_via {
                match shared.stage_index(r) {
                    Some(StageIdx::Step(m)) => {
                        if !info[p].served_by.contains(&m) {
                            info[p].served_by.push(m);
                            steps[m as usize].pools.push(p as u32);
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
                if tp as usize == p {
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
                if info[tp as usize].block != info[p].block {
                    return Err(config_err(format!(
                        "pool {} (block {}) spills into {} (block {}): the reference host needs \
                         a pool and its tier to have the same block",
                        info[p].name,
                        info[p].block,
                        info[tp as usize].name,
                        info[tp as usize].block
                    )));
                }
                info[p].tier = Some(tp);
                info[p].link = Some(l);
                info[tp as usize].is_tier = true;
            }
        }
        let entries: Vec<u32> = (0..info.len() as u32)
            .filter(|&p| !info[p as usize].served_by.is_empty())
            .collect();
        if let Some(p) = info.iter().find(|p| p.served_by.is_empty() && !p.is_tier) {
            return Err(config_err(format!(
                "pool {} is neither admitted via a step stage nor a tier another pool spills \
                 into; the reference host has no sessions to give it",
                p.name
            )));
        }
        if entries.is_empty() {
            return Err(config_err(
                "no pool is admitted via a step stage: sessions have nowhere to go",
            ));
        }

        let mut host = Host {
            source: workload.source.clone(),
            pools,
            info,
            steps,
            links,
            shared,
            runs: Vec::new(),
            entries,
            events: BinaryHeap::new(),
            seq: 0,
            next_arrival: 0,
            now: 0.0,
            done: 0,
            samples: Samples::default(),
            output_tokens: 0,
            computed_tokens: 0,
            victims: Vec::new(),
        };
        host.bind(&config.attrs, workload)?;
        // Latency samples have known bounds: reserving them keeps a warm replay free
        // of reallocation.
        let n = workload.sessions.len();
        let gaps: u64 = workload
            .sessions
            .iter()
            .map(|s| s.output.saturating_sub(1))
            .sum();
        host.samples.ttft.reserve(n);
        host.samples.e2e.reserve(n);
        host.samples.itl.reserve(usize::try_from(gaps).unwrap_or(0));
        for p in 0..host.pools.len() {
            host.refresh(p);
        }
        Ok(host)
    }
}

/// A step stage's compiled `time` must not read beyond its layout.
fn check_time(name: &str, c: &StepConfig) -> Result<(), HostError> {
    match &c.time {
        IterTime::Fixed(x) if !x.is_finite() || *x < 0.0 => Err(config_err(format!(
            "stage {name}: time {x} is not a finite number of seconds at least 0"
        ))),
        IterTime::Compiled { policy, layout } if policy.ctx_len() > layout.len() => {
            Err(config_err(format!(
                "stage {name}: its time reads {} ctx slots, the layout has {}",
                policy.ctx_len(),
                layout.len()
            )))
        }
        _ => Ok(()),
    }
}
