//! Shared helpers of the host tests: vLLM-like configurations built by hand (as the
//! compiler glue would build them), a compiled-`time` stand-in, workloads written
//! inline, and a run that returns the report with the log as text and parsed lines.
//! (The vLLM oracle's scenario files are read by `poolrt::oracle`, not here.) Nothing
//! here reaches into the host's internals.

#![allow(dead_code)]

use poolrt::host::{
    AttrSpec, HostConfig, IterTime, LatencySamples, LinkConfig, PoolDecl, PoolMember, Report,
    RunOptions, StageDecl, StageKind, StepConfig,
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
                handoff: None,
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
        routes: Vec::new(),
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
            // The rules' tests compare percentiles with values worked out by hand.
            latencies: LatencySamples::Exact,
            ..RunOptions::default()
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
