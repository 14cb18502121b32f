//! Shared helpers of the host tests: vLLM-like configurations built by hand (as the
//! compiler glue would build them), a compiled-`time` stand-in, workloads written
//! inline, a run that returns the report with the log as text and parsed lines, and
//! the reader of the vLLM oracle's scenario files (shared/oracle/vllm/FORMAT.md).
//! Nothing here reaches into the host's internals.

#![allow(dead_code)]

use std::path::Path;

use poolrt::host::{
    AttrSpec, HostConfig, IterTime, LinkConfig, PoolDecl, PoolMember, Report, RunOptions,
    StageDecl, StageKind, StepConfig,
};
use poolrt::trace::{SessionSpec, Workload};
use poolrt::{Limit, PoolConfig, PoolRef, Preempt, Run, RunId, StageRef, Units};

pub fn fin(n: u64) -> Limit {
    Limit::Finite(Units(n))
}

/// The attributes of examples/vllm.pool: the built-ins, then `prompt`, `output`.
pub fn attrs() -> Vec<AttrSpec> {
    vec![
        AttrSpec::new("serial", None),
        AttrSpec::new("arrival", None),
        AttrSpec::new("prompt", None),
        AttrSpec::new("output", None),
    ]
}

/// A step stage of one member.
pub fn step(name: &str, count: u32, c: StepConfig) -> StageDecl {
    StageDecl {
        name: name.to_string(),
        count,
        kind: StageKind::Step(c),
    }
}

pub fn link(name: &str, rate: f64) -> StageDecl {
    StageDecl {
        name: name.to_string(),
        count: 1,
        kind: StageKind::Link(LinkConfig { rate }),
    }
}

/// A step config: budget, seats, chunk (`None` = inf), one second per iteration.
pub fn engine(budget: u64, seats: u64, chunk: Option<u64>) -> StepConfig {
    StepConfig {
        budget: fin(budget),
        seats: fin(seats),
        chunk: chunk.map_or(Limit::Unbounded, fin),
        exclusive_prefill: false,
        time: IterTime::Fixed(1.0),
    }
}

/// Pool declaration `decl` with `count` members of `cap` units in blocks of
/// `block`, `preempt lifo`, fifo, lru, member i admitted via `via(i)`.
pub fn kv(
    decl: u32,
    name: &str,
    count: u32,
    cap: u64,
    block: u64,
    via: impl Fn(u32) -> Vec<StageRef>,
) -> PoolDecl {
    PoolDecl {
        name: name.to_string(),
        members: (0..count)
            .map(|i| PoolMember {
                config: PoolConfig {
                    me: PoolRef {
                        pool: decl,
                        member: i,
                    },
                    cap: fin(cap),
                    block: Units(block),
                    preempt: Preempt::Lifo,
                    ..PoolConfig::default()
                },
                admit_via: via(i),
            })
            .collect(),
    }
}

pub fn sref(stage: u32, member: u32) -> StageRef {
    StageRef { stage, member }
}

/// examples/vllm.pool with the given sizes: one engine (stage 0), one pool `kv`
/// (pool 0) of `blocks` blocks of `block` units.
pub fn vllm(blocks: u64, block: u64, step: StepConfig) -> HostConfig {
    HostConfig {
        attrs: attrs(),
        stages: vec![self::step("engine", 1, step)],
        pools: vec![kv(0, "kv", 1, blocks * block, block, |_| vec![sref(0, 0)])],
    }
}

/// A session: arrival, prompt, output, runs.
pub fn sess(arrival: f64, prompt: u64, output: u64, runs: &[(u64, u64)]) -> SessionSpec {
    SessionSpec {
        arrival,
        prompt,
        output,
        runs: runs
            .iter()
            .map(|&(id, len)| Run {
                id: RunId(id),
                len: Units(len),
            })
            .collect(),
        extra: Vec::new(),
        name: None,
        line: 0,
    }
}

pub fn workload(sessions: Vec<SessionSpec>) -> Workload {
    Workload {
        source: "inline".to_string(),
        fields: Vec::new(),
        sessions,
    }
}

/// Runs with the log on; returns the report, the log text and its lines as JSON.
pub fn run(config: HostConfig, w: &Workload) -> (Report, String, Vec<serde_json::Value>) {
    let host = poolrt::host::Host::new(config, w).unwrap_or_else(|e| panic!("{e}"));
    let mut log = Vec::new();
    let report = host
        .run(RunOptions {
            log: Some(&mut log),
            progress: None,
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(log).expect("the log is UTF-8");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("every log line is JSON"))
        .collect();
    (report, text, lines)
}

/// The iteration lines of a log (those with a `step`).
pub fn iterations(lines: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    lines.iter().filter(|l| l.get("step").is_some()).collect()
}

/// A scenario of the vLLM oracle: its config values, the workload (arrival time =
/// `arrival_step`, one iteration per second) and the ids by serial.
pub struct Scenario {
    pub block: u64,
    pub usable: u64,
    pub seats: u64,
    pub budget: u64,
    pub chunk: Option<u64>,
    pub workload: Workload,
    pub ids: Vec<String>,
    pub steps: Vec<serde_json::Value>,
}

pub fn scenario(dir: &Path) -> Scenario {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("scenario file");
    let config: serde_json::Value = serde_json::from_str(&read("config.json")).expect("json");
    let num = |k: &str| config[k].as_u64().unwrap_or_else(|| panic!("config {k}"));
    let mut sessions = Vec::new();
    let mut ids = Vec::new();
    for line in read("workload.jsonl").lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("workload line");
        let runs: Vec<(u64, u64)> = v["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| (r[0].as_u64().expect("id"), r[1].as_u64().expect("len")))
            .collect();
        sessions.push(sess(
            v["arrival_step"].as_f64().expect("arrival_step"),
            v["prompt"].as_u64().expect("prompt"),
            v["output"].as_u64().expect("output"),
            &runs,
        ));
        ids.push(v["id"].as_str().expect("id").to_string());
    }
    let steps = read("steps.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("step line"))
        .filter(|v: &serde_json::Value| v.get("summary").is_none())
        .collect();
    let chunk = num("long_prefill_token_threshold");
    Scenario {
        block: num("block_size"),
        usable: num("usable_blocks"),
        seats: num("max_num_seqs"),
        budget: num("max_num_batched_tokens"),
        chunk: (chunk > 0).then_some(chunk),
        workload: workload(sessions),
        ids,
        steps,
    }
}

/// Replays a scenario and compares every non-idle step, field by field, with the
/// recorded one. Returns (steps compared, steps equal, the first difference).
pub fn conform(dir: &Path) -> (usize, usize, Option<String>) {
    let sc = scenario(dir);
    let config = vllm(sc.usable, sc.block, engine(sc.budget, sc.seats, sc.chunk));
    let (_, _, lines) = run(config, &sc.workload);
    let mut ours = std::collections::BTreeMap::new();
    for l in iterations(&lines) {
        let t = l["t"].as_f64().expect("t");
        ours.insert(t as u64, l.clone());
    }
    let id = |v: &serde_json::Value| sc.ids[v.as_u64().expect("serial") as usize].clone();
    let (mut compared, mut equal, mut first) = (0, 0, None);
    for want in &sc.steps {
        let step = want["step"].as_u64().expect("step");
        compared += 1;
        // An idle step (nothing unfinished): the host runs no iteration then.
        if want["n_sched_tokens"].as_u64() == Some(0) && want["preempted"] == serde_json::json!([])
        {
            if ours.remove(&step).is_none() {
                equal += 1;
            } else if first.is_none() {
                first = Some(format!("step {step}: idle in vLLM, an iteration here"));
            }
            continue;
        }
        let got = match ours.remove(&step) {
            Some(l) => {
                let admitted: Vec<serde_json::Value> = l["admitted"]
                    .as_array()
                    .expect("admitted")
                    .iter()
                    .map(|a| serde_json::json!([id(&a[0]), a[1], a[2], a[3]]))
                    .collect();
                let cont: Vec<serde_json::Value> = l["cont"]
                    .as_array()
                    .expect("cont")
                    .iter()
                    .map(|c| serde_json::json!([id(&c[0]), c[1]]))
                    .collect();
                let ids = |k: &str| -> Vec<String> {
                    l[k].as_array().expect("list").iter().map(id).collect()
                };
                serde_json::json!({
                    "step": step,
                    "admitted": admitted,
                    "cont": cont,
                    "preempted": ids("preempted"),
                    "finished": ids("finished"),
                    "n_sched_tokens": l["tokens"],
                    "n_decode": l["decode"],
                    "running": l["residents"],
                    "waiting": l["waiting"],
                    "free_blocks": sc.usable - l["allocated"][0].as_u64().expect("alloc") / sc.block,
                })
            }
            None => serde_json::json!({"step": step, "missing": true}),
        };
        let mut expected = want.clone();
        if let Some(o) = expected.as_object_mut() {
            o.remove("arrivals");
        }
        if got == expected {
            equal += 1;
        } else if first.is_none() {
            first = Some(format!("step {step}:\n  want {expected}\n  got  {got}"));
        }
    }
    if let Some((step, _)) = ours.iter().next()
        && first.is_none()
    {
        first = Some(format!(
            "{} iterations vLLM never ran, from step {step}",
            ours.len()
        ));
    }
    (compared, equal, first)
}
