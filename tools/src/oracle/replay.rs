//! Replaying a scenario: the host configuration fitted to its settings (the engine's
//! budget, seats and chunk, the pool's cap and block, one time unit per iteration;
//! the configuration keeps its own queue, eviction and preemption policies and any
//! tiers), the workload as the host reads it (arrival time = `arrival_step`), and the
//! host's iterations, told to an [`Observer`] as typed records, turned into the
//! steps.jsonl schema. No log is written or parsed.

use std::io;

use poolrt::host::{
    Host, HostConfig, IterTime, Iteration, LatencySamples, Observer, PoolDecl, RunOptions,
    StageDecl, StageKind,
};
use poolrt::trace::{SessionSpec, Workload};
use poolrt::types::{Limit, Run, RunId, SessionId, Units};

use super::compare::Summary;
use super::{OracleError, Scenario, Settings, Step};

/// Where in the host configuration the vLLM engine lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    /// Index of the step stage in `HostConfig::stages` (one member).
    pub stage: usize,
    /// Index of the pool it admits in `HostConfig::pools` (one member).
    pub pool: usize,
}

/// Finds the spec's engine: exactly one step stage, of one member, admitting exactly
/// one pool, of one member. Other pools (tiers) and link stages may exist; whatever
/// they change shows up as a divergence, not as an error.
pub fn engine(config: &HostConfig) -> Result<Engine, OracleError> {
    let steps: Vec<(usize, &StageDecl)> = config
        .stages
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.kind, StageKind::Step(_)))
        .collect();
    let [(stage, decl)] = steps[..] else {
        return Err(OracleError::Shape(format!(
            "the spec has {} step stages; conform maps vLLM's one engine onto exactly one",
            steps.len()
        )));
    };
    if decl.count != 1 {
        return Err(OracleError::Shape(format!(
            "stage `{}` is a family of {}; conform maps vLLM's one engine onto one member",
            decl.name, decl.count
        )));
    }
    let admitted: Vec<(usize, &PoolDecl)> = config
        .pools
        .iter()
        .enumerate()
        .filter(|(_, p)| p.members.iter().any(|m| !m.admit_via.is_empty()))
        .collect();
    let [(pool, p)] = admitted[..] else {
        return Err(OracleError::Shape(format!(
            "{} pools are admitted via stage `{}`; conform maps vLLM's KV cache onto \
             exactly one",
            admitted.len(),
            decl.name
        )));
    };
    if p.members.len() != 1 {
        return Err(OracleError::Shape(format!(
            "pool `{}` is a family of {}; conform maps vLLM's KV cache onto one member",
            p.name,
            p.members.len()
        )));
    }
    Ok(Engine { stage, pool })
}

/// Fits a host configuration to a scenario: the engine's `budget`, `seats`, `chunk`
/// and the pool's `cap` and `block` are replaced by the scenario's, and `time` by one
/// time unit per iteration. The configuration keeps everything else: its queue,
/// eviction and preemption policies and any tiers.
pub fn fit(config: &mut HostConfig, settings: &Settings) -> Result<Engine, OracleError> {
    let engine = engine(config)?;
    if let Some(StageKind::Step(step)) = config.stages.get_mut(engine.stage).map(|s| &mut s.kind) {
        let fin = |n| Limit::Finite(Units(n));
        step.budget = fin(settings.budget);
        step.seats = fin(settings.seats);
        step.chunk = settings.chunk.map_or(Limit::Unbounded, fin);
        step.time = IterTime::Fixed(Clock::of(settings).seconds());
    }
    if let Some(member) = config
        .pools
        .get_mut(engine.pool)
        .and_then(|p| p.members.first_mut())
    {
        member.config.cap = Limit::Finite(Units(settings.cap()));
        member.config.block = Units(settings.block);
    }
    Ok(engine)
}

/// How host time stands for vLLM steps.
#[derive(Clone, Debug, PartialEq)]
enum Clock {
    /// One time unit per step; a time with no iteration is an idle step.
    Steps,
    /// A poolc plugin's clock (`clock_step`): `step` seconds per `schedule()` call, and
    /// an idle step (vLLM does not call `schedule()`) takes no time. `busy` lists the
    /// recorded steps that called it, in order: host iteration k is step `busy[k]`.
    Calls { step: f64, busy: Vec<u64> },
}

impl Clock {
    fn of(settings: &Settings) -> Clock {
        match settings.plugin.as_ref().and_then(|p| p.clock_step) {
            None => Clock::Steps,
            Some(step) => Clock::Calls {
                step,
                busy: Vec::new(),
            },
        }
    }

    /// The clock of a scenario, with its busy steps.
    fn of_scenario(scenario: &Scenario) -> Clock {
        match Clock::of(&scenario.settings) {
            Clock::Steps => Clock::Steps,
            Clock::Calls { step, .. } => Clock::Calls {
                step,
                busy: scenario
                    .recorded
                    .iter()
                    .filter(|(_, s)| !s.is_idle())
                    .map(|(_, s)| s.step)
                    .collect(),
            },
        }
    }

    /// Seconds per iteration.
    fn seconds(&self) -> f64 {
        match self {
            Clock::Steps => 1.0,
            Clock::Calls { step, .. } => *step,
        }
    }

    /// The host time of an arrival at step `a`: the calls before it, in seconds.
    fn arrival(&self, a: u64) -> f64 {
        match self {
            Clock::Steps => a as f64,
            Clock::Calls { step, busy } => busy.partition_point(|&b| b < a) as f64 * step,
        }
    }

    /// The step of an iteration starting at host time `t`, if `t` is one.
    fn step_at(&self, t: f64) -> Option<u64> {
        let k = t / self.seconds();
        if !(k >= 0.0 && k.fract() == 0.0) {
            return None;
        }
        let k = k as u64;
        Some(match self {
            Clock::Steps => k,
            Clock::Calls { busy, .. } => match busy.get(k as usize) {
                Some(&s) => s,
                // Past the recording: one step per iteration after its last busy step.
                None => busy.last().map_or(0, |&l| l + 1) + (k - busy.len() as u64),
            },
        })
    }
}

/// The workload as the host reads it: arrival time = `arrival_step` (or, under a
/// plugin's clock, the `schedule()` calls before it times `clock_step`), and one
/// extra fields, `priority` and, where the recording gives them, `tenant` and
/// `share` (R30): a spec that declares the attribute reads it.
pub fn workload(scenario: &Scenario) -> Workload {
    let clock = Clock::of_scenario(scenario);
    let sessions = scenario
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| SessionSpec {
            arrival: clock.arrival(r.arrival_step),
            prompt: r.prompt,
            output: r.output,
            runs: r
                .runs
                .iter()
                .map(|&(id, len)| Run {
                    id: RunId(id),
                    len: Units(len),
                })
                .collect(),
            extra: std::iter::once((0, r.priority as f64))
                .chain(r.tenant.map(|t| (1, t as f64)))
                .chain(r.share.map(|w| (2, w as f64)))
                .collect(),
            name: Some(r.id.clone()),
            line: i as u64 + 1,
        })
        .collect();
    Workload {
        source: scenario.dir.join("workload.jsonl").display().to_string(),
        fields: vec![
            "priority".to_string(),
            "tenant".to_string(),
            "share".to_string(),
        ],
        sessions,
    }
}

/// What a replay decided, in the steps.jsonl schema.
#[derive(Clone, Debug)]
pub struct Replay {
    pub steps: Vec<Step>,
    /// The summary line (same keys as the oracle's, `replayed_by` for
    /// `vllm_version`).
    pub summary: Summary,
    /// Sessions the host left unfinished or rejected (0 when it matches vLLM).
    pub unfinished: u64,
    pub rejected: u64,
}

/// One iteration of the engine's stage as the replay keeps it: owned copies of the
/// host's [`Iteration`] fields that a step shows.
#[derive(Clone, Debug, Default)]
struct Kept {
    start: f64,
    admitted: Vec<(SessionId, bool, u64, u64)>,
    cont: Vec<(SessionId, u64)>,
    preempted: Vec<SessionId>,
    finished: Vec<SessionId>,
    tokens: u64,
    decode: u64,
    residents: u64,
    waiting: u64,
    /// Allocated units of the engine's one pool.
    allocated: u64,
}

/// The observer of a replay: keeps the iterations of one stage member.
struct Keeper {
    stage: String,
    kept: Vec<Kept>,
}

impl Observer for Keeper {
    fn iteration(&mut self, it: &Iteration<'_>) -> io::Result<()> {
        if it.stage == self.stage {
            self.kept.push(Kept {
                start: it.start,
                admitted: it
                    .admitted
                    .iter()
                    .map(|a| (a.session, a.resumed, a.hit.0, a.tokens))
                    .collect(),
                cont: it.cont.to_vec(),
                preempted: it.preempted.to_vec(),
                finished: it.finished.to_vec(),
                tokens: it.tokens,
                decode: it.decode,
                residents: it.residents,
                waiting: it.waiting,
                allocated: it.allocated.first().map_or(0, |u| u.0),
            });
        }
        Ok(())
    }
}

/// Replays a scenario through the host built from `config` (fitted to the
/// scenario first) and renders its iterations as vLLM steps.
pub fn replay(mut config: HostConfig, scenario: &Scenario) -> Result<Replay, OracleError> {
    let engine = fit(&mut config, &scenario.settings)?;
    let stage = config
        .stages
        .get(engine.stage)
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let w = workload(scenario);
    let host = Host::new(config, &w).map_err(OracleError::Host)?;
    let mut keeper = Keeper {
        stage,
        // A replay that conforms has one iteration per recorded busy step: room for
        // them up front spares the copies of a growing list.
        kept: Vec::with_capacity(scenario.recorded.len()),
    };
    let report = host
        .run(RunOptions {
            observer: Some(&mut keeper),
            // A diverging spec may deadlock; the step diff shows where.
            allow_unfinished: true,
            // Nothing here reads the report's percentiles.
            latencies: LatencySamples::Unkept,
            ..RunOptions::default()
        })
        .map_err(OracleError::Host)?;
    let steps = to_steps(scenario, &Clock::of_scenario(scenario), &keeper.kept)?;
    let summary = Summary::of(scenario, &steps);
    Ok(Replay {
        steps,
        summary,
        unfinished: report.unfinished,
        rejected: report.rejected,
    })
}

/// Iteration lines become steps at their start time (one step per time unit, or the
/// plugin's clock), and a step with no iteration is an idle step that carries the
/// queues over.
fn to_steps(scenario: &Scenario, clock: &Clock, kept: &[Kept]) -> Result<Vec<Step>, OracleError> {
    let s = &scenario.settings;
    let id = |v: SessionId| -> Result<String, OracleError> {
        usize::try_from(v.0)
            .ok()
            .and_then(|n| scenario.requests.get(n))
            .map(|r| r.id.clone())
            .ok_or_else(|| OracleError::Mapping(format!("session {} is not in the workload", v.0)))
    };
    let ids = |v: &[SessionId]| -> Result<Vec<String>, OracleError> {
        v.iter().map(|&x| id(x)).collect()
    };
    let mut by_step: Vec<(u64, &Kept)> = Vec::with_capacity(kept.len());
    for k in kept {
        let t = k.start;
        // Every start is a whole number of iterations (one time unit each, or the
        // plugin's clock step, a power of two so that sums are exact); anything else
        // means the mapping broke.
        let Some(step) = clock.step_at(t) else {
            return Err(OracleError::Mapping(format!(
                "an iteration starts at t = {t}"
            )));
        };
        if by_step.last().is_some_and(|&(prev, _)| prev >= step) {
            return Err(OracleError::Mapping(format!(
                "two iterations at or before step {step}"
            )));
        }
        by_step.push((step, k));
    }
    let n_steps = by_step.last().map_or(0, |&(s, _)| s + 1);
    let mut steps = Vec::with_capacity(usize::try_from(n_steps).unwrap_or(0));
    let mut next_arrival = 0;
    let mut iters = by_step.into_iter().peekable();
    let (mut running, mut waiting, mut free) = (0, 0, s.usable_blocks);
    for step in 0..n_steps {
        let mut arrivals = Vec::new();
        while let Some(r) = scenario.requests.get(next_arrival)
            && r.arrival_step <= step
        {
            arrivals.push(r.id.clone());
            next_arrival += 1;
        }
        let Some((_, k)) = iters.next_if(|&(s, _)| s == step) else {
            waiting += arrivals.len() as u64;
            steps.push(Step {
                step,
                arrivals,
                running,
                waiting,
                free_blocks: free,
                ..Step::default()
            });
            continue;
        };
        let admitted = k
            .admitted
            .iter()
            .map(|&(who, resumed, hit, n)| {
                let kind = if resumed { "resumed" } else { "new" };
                Ok((id(who)?, kind.to_string(), hit, n))
            })
            .collect::<Result<_, OracleError>>()?;
        let cont = k
            .cont
            .iter()
            .map(|&(who, n)| Ok((id(who)?, n)))
            .collect::<Result<_, OracleError>>()?;
        running = k.residents;
        waiting = k.waiting;
        // vLLM's free queue counts cached (evictable) blocks as free; the pool's
        // allocated units are the blocks held by sessions.
        free = s
            .usable_blocks
            .saturating_sub(k.allocated.div_ceil(s.block));
        steps.push(Step {
            step,
            arrivals,
            admitted,
            cont,
            preempted: ids(&k.preempted)?,
            finished: ids(&k.finished)?,
            n_sched_tokens: k.tokens,
            n_decode: k.decode,
            running,
            waiting,
            free_blocks: free,
        });
    }
    Ok(steps)
}
