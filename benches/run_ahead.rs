//! Runs known in advance against one iteration at a time (issue #16 item 2;
//! docs/HOST.md, "Runs known in advance"), one binary, one run: each replay of the
//! bundled Mooncake trace is made both ways, alternating, as `poolc run` makes it
//! (sessions streamed, sketch percentiles, no observer) — as it does, running ahead
//! where it can, and with `RunOptions::one_at_a_time`. Prints the median wall time of each
//! way, the ratio, and the share of iterations that ran ahead, and stops if the two
//! reports differ. docs/PERFORMANCE.md records the figures. Run with
//! `cargo bench --bench run_ahead [-- RUNS]` (default 5 runs a way).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a benchmark fails by panicking

use std::time::Instant;

use poolc_tools::bundled;
use poolrt::host::{Host, LatencySamples, Report, RunOptions};
use poolrt::trace;

/// What is replayed: a name, the spec, its `--set`s and the rate scale.
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, f64)],
    f64,
);

/// The replays of issue #16's table, and the bundled one at a tenth of its arrival
/// rate, where most iterations are decodes.
const CASES: [Case; 4] = [
    (
        "vllm.pool, 28,000 blocks (the default)",
        "examples/vllm.pool",
        &[],
        1.0,
    ),
    (
        "vllm.pool, 4,096 blocks",
        "examples/vllm.pool",
        &[("num_gpu_blocks", 4096.0)],
        1.0,
    ),
    (
        "vllm.pool, --rate-scale 0.1",
        "examples/vllm.pool",
        &[],
        0.1,
    ),
    (
        "benches/specs/tiered_h100.pool",
        "benches/specs/tiered_h100.pool",
        &[],
        1.0,
    ),
];

fn replay(c: &poolc::Compiled, scale: f64, one_at_a_time: bool) -> (Report, u64, f64) {
    let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
    let sessions = trace::open_text(
        bundled::TRACE.text,
        bundled::TRACE.name,
        trace::Format::Mooncake,
    )
    .unwrap()
    .rate_scale(scale);
    let mut ahead = 0;
    let start = Instant::now();
    let report = Host::streaming(config, Box::new(sessions))
        .unwrap()
        .run(RunOptions {
            one_at_a_time,
            latencies: LatencySamples::Sketch,
            iterations_ahead: Some(&mut ahead),
            ..RunOptions::default()
        })
        .unwrap();
    (report, ahead, start.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments is the run count.
    let runs = std::env::args()
        .filter_map(|a| a.parse::<usize>().ok())
        .next()
        .unwrap_or(5);
    println!("{runs} runs a way, alternating; wall time medians");
    for (name, path, set, scale) in CASES {
        let text = std::fs::read_to_string(
            concat!(env!("CARGO_MANIFEST_DIR"), "/..").to_owned() + "/" + path,
        )
        .unwrap();
        let options = poolc::Options {
            set: set.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        let c = poolc::compile(&text, &options).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let (mut ahead_s, mut one_s) = (Vec::new(), Vec::new());
        let mut share = (0, 0);
        for _ in 0..runs {
            let (fast, n, t) = replay(&c, scale, false);
            ahead_s.push(t);
            let (slow, none, t) = replay(&c, scale, true);
            one_s.push(t);
            assert_eq!(none, 0);
            assert_eq!(fast.to_json(), slow.to_json(), "{name}: the reports differ");
            share = (n, fast.stages.iter().map(|s| s.iterations).sum::<u64>());
        }
        let (a, o) = (median(ahead_s), median(one_s));
        println!(
            "{name:<40} one at a time {o:.3} s   run ahead {a:.3} s   ratio {:.2}   \
             iterations ahead {} of {} ({:.1} %)",
            o / a,
            share.0,
            share.1,
            100.0 * share.0 as f64 / share.1.max(1) as f64
        );
    }
}
