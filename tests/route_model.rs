//! The host's routing (R22, R23) against a reference router of this file's own, on
//! random small fleets: random route keys over the load queries, `member`, the
//! session's attributes and `min_of`/`max_of`, with or without `every`. The
//! reference reads nothing of the host's router: it follows every member's
//! `allocated`, `cached` and `queued` through the JSON-lines log (each pool event
//! carries them after the event), evaluates the keys with the reference interpreter
//! on rows it builds itself, keeps its own snapshots for `every`, and takes the least
//! member by `interp::select` (E5, ties to the lowest index). Every session's first
//! enqueue must be in the member the reference chose. `hit`, `tier_hit` and `routed`
//! are pinned by hand in tests/route_rules.rs instead: the log does not carry block
//! contents.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use build_support::{draw, seeded};
use poolc::interp;
use poolc::ir::{Extreme, Input, Probe, QueryKind, QueryTarget, Session, Var};
use poolrt::host::{Host, RunOptions};
use poolrt::trace;
use proptest::prelude::*;

/// Keys the fleets draw from; `N` is the member count.
const KEYS: &[&str] = &[
    "queued(kv)",
    "used(kv)",
    "-free(kv)",
    "cached(kv) / 16",
    "-member",
    "member",
    "serial % N == member ? 0 : 1",
    "max_of(queued(kv)) - queued(kv)",
    "queued(kv) - min_of(queued(kv))",
    "used(kv) - min_of(used(kv)) + max_of(cached(kv)) * 0",
    "(prompt * (member + 1)) % 7",
    "now > 2 ? member : -member",
    "max_of(free(kv)) == free(kv) ? 0 : 1",
];

#[derive(Clone, Copy, Default)]
struct State {
    allocated: f64,
    cached: f64,
    queued: f64,
}

const CAP: f64 = 65536.0;

fn value(kind: QueryKind, s: State) -> f64 {
    match kind {
        QueryKind::Free => CAP - s.allocated - s.cached,
        QueryKind::Used => s.allocated,
        QueryKind::Cached => s.cached,
        QueryKind::Cap => CAP,
        QueryKind::Queued => s.queued,
        other => panic!("the drawn keys read no {other:?}"),
    }
}

fn check(seed: u8) {
    let mut runner = seeded(seed);
    let n: u32 = draw(&mut runner, &(2u32..=4));
    let picks: Vec<usize> = draw(
        &mut runner,
        &proptest::collection::vec(0..KEYS.len(), 1..=3),
    );
    let every: Option<f64> = draw(
        &mut runner,
        &prop_oneof![
            Just(None),
            (0u32..4).prop_map(|k| Some(f64::from(k) * 0.25))
        ],
    );
    let keys: Vec<String> = picks
        .iter()
        .map(|&k| KEYS[k].replace('N', &n.to_string()))
        .collect();
    let spec = format!(
        "session {{ prompt; output; }}
         stage engine[{n}] {{ step; seats 2; budget 2048; time (0.01 + 0.00005 * tokens); }}
         pool kv[{n}] {{ cap {CAP}; block 16; preempt lifo; admit via engine;
                        route by ({}){}; }}",
        keys.join(", "),
        every.map_or(String::new(), |t| format!(" every {t}"))
    );
    let compiled = poolc::compile(&spec, &poolc::Options::default())
        .unwrap_or_else(|d| panic!("{spec}: {d:?}"));
    let program = compiled.program();
    let route = program.pools[0].route.clone().unwrap();
    let mut workload = trace::synthetic(120, u64::from(seed));
    workload.scale_rate(8.0);
    let config = poolc::bridge::host_config(program, compiled.pools(), compiled.stages()).unwrap();
    let mut log = Vec::new();
    Host::new(config, &workload)
        .unwrap()
        .run(RunOptions {
            log: Some(&mut log),
            ..RunOptions::default()
        })
        .unwrap();

    let mut state = vec![State::default(); n as usize];
    let mut snapshot: Option<(f64, Vec<State>)> = None;
    let mut seen = vec![false; workload.sessions.len()];
    let mut routed = 0;
    for line in String::from_utf8(log).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(pool) = v["pool"].as_str() else {
            continue;
        };
        let m: usize = pool["kv[".len()..pool.len() - 1].parse().unwrap();
        if v["ev"] == "enqueue" && !seen[v["session"].as_u64().unwrap() as usize] {
            let s = v["session"].as_u64().unwrap() as usize;
            seen[s] = true;
            let sess = &workload.sessions[s];
            // R23: the load queries as of the last snapshot, renewed at an arrival at
            // least `every` after it.
            let load = match every {
                None => state.clone(),
                Some(t) => {
                    if snapshot
                        .as_ref()
                        .is_none_or(|(at, _)| sess.arrival - at >= t)
                    {
                        snapshot = Some((sess.arrival, state.clone()));
                    }
                    snapshot.as_ref().unwrap().1.clone()
                }
            };
            let probe = |p: Probe, k: usize| match p {
                Probe::Query(q) => value(
                    q.kind,
                    if q.kind == QueryKind::Cap {
                        state[k]
                    } else {
                        load[k]
                    },
                ),
                Probe::Scored(_) => panic!("the drawn keys score nothing"),
            };
            let row_of = |k: usize| -> Vec<f64> {
                route
                    .layout
                    .row
                    .iter()
                    .map(|i| match *i {
                        Input::Var(Var::Member) => k as f64,
                        Input::Query(q) if matches!(q.target, QueryTarget::Pool(..)) => {
                            probe(Probe::Query(q), k)
                        }
                        other => panic!("unexpected row input {other:?}"),
                    })
                    .collect()
            };
            let rows: Vec<f64> = (0..n as usize).flat_map(row_of).collect();
            let ctx: Vec<f64> = route
                .layout
                .ctx
                .iter()
                .map(|i| match *i {
                    Input::Attr(a) if a == Session::SERIAL => s as f64,
                    Input::Attr(a) if a == Session::ARRIVAL => sess.arrival,
                    Input::Attr(a) if program.session.attr(a).name == "prompt" => {
                        sess.prompt as f64
                    }
                    Input::Var(Var::Now) => sess.arrival,
                    Input::Over(e, p) => {
                        let values = (0..n as usize).map(|k| probe(p, k));
                        match e {
                            Extreme::Min => values.fold(f64::INFINITY, f64::min),
                            Extreme::Max => values.fold(f64::NEG_INFINITY, f64::max),
                        }
                    }
                    other => panic!("unexpected ctx input {other:?}"),
                })
                .collect();
            let exprs: Vec<_> = route.keys.iter().map(|k| k.expr.clone()).collect();
            let width = route.layout.row.len();
            let want = interp::select(&exprs, &rows, n as usize, width, &ctx).unwrap();
            assert_eq!(
                m, want,
                "seed {seed}, session {s} at {}: the host routed to kv[{m}], the reference to \
                 kv[{want}]\nspec: {spec}\nrows {rows:?} ctx {ctx:?}",
                sess.arrival
            );
            routed += 1;
        }
        state[m] = State {
            allocated: v["allocated"].as_f64().unwrap(),
            cached: v["cached"].as_f64().unwrap(),
            queued: v["queued"].as_f64().unwrap(),
        };
    }
    assert!(routed > 0, "seed {seed}: no session was routed");
}

#[test]
fn r22_r23_the_host_routes_as_a_reference_router_over_the_log() {
    for seed in 0..40 {
        check(seed);
    }
}
