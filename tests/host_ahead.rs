//! Runs known in advance (docs/HOST.md, "Runs known in advance"; issue #16 item 2):
//! a replay nobody watches advances runs of decode-only iterations in one call, and
//! reports exactly what the same replay one iteration at a time does. The one-at-a-
//! time replay is forced independently of the code under test: an observer that
//! ignores everything makes the host tell every iteration, which no run ahead may skip.
//! Every spec the project ships, at three arrival rates and with pools small enough to
//! evict, spill and preempt, both percentile modes (the sketch's mean is summed in
//! the order latencies arrive, so it also pins their order); and replicas whose
//! iterations end at the same instants, where the event order between members
//! decides.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolrt::host::{Host, LatencySamples, Observer, Report, RunOptions};
use poolrt::trace::{self, Workload};

fn spec(path: &str, edits: &[(&str, &str)]) -> poolc::Compiled {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(root.join(path)).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{path} has `{from}`");
        text = text.replace(from, to);
    }
    poolc::compile(&text, &poolc::Options::default()).unwrap_or_else(|e| panic!("{path}: {e:?}"))
}

/// Watches nothing, but is there: the host then builds and tells every iteration.
struct Blind;

impl Observer for Blind {}

/// The report run ahead where it can (with how many iterations went ahead), and the
/// report one iteration at a time.
fn both(c: &poolc::Compiled, w: &Workload, latencies: LatencySamples) -> (Report, u64, Report) {
    let config =
        || poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
    let mut ahead = 0;
    let fast = Host::new(config(), w)
        .unwrap()
        .run(RunOptions {
            latencies,
            iterations_ahead: Some(&mut ahead),
            ..RunOptions::default()
        })
        .unwrap();
    let mut blind = Blind;
    let mut none = 7;
    let slow = Host::new(config(), w)
        .unwrap()
        .run(RunOptions {
            latencies,
            observer: Some(&mut blind),
            iterations_ahead: Some(&mut none),
            ..RunOptions::default()
        })
        .unwrap();
    assert_eq!(none, 0, "an observed replay runs nothing ahead");
    (fast, ahead, slow)
}

/// Replays `c` on synthetic sessions at each rate scale, in both percentile modes;
/// returns the iterations run ahead in all.
fn same_at_rates(name: &str, c: &poolc::Compiled, sessions: usize) -> u64 {
    let mut ahead = 0;
    for (seed, scale) in [(3, 0.25), (5, 1.0), (9, 4.0)] {
        let mut w = trace::synthetic(sessions, seed);
        w.scale_rate(scale);
        for latencies in [LatencySamples::Sketch, LatencySamples::Exact] {
            let (fast, n, slow) = both(c, &w, latencies);
            assert_eq!(
                fast.to_json(),
                slow.to_json(),
                "{name}, rate ×{scale}, {latencies:?}: run ahead vs one at a time"
            );
            assert_eq!(fast.finished + fast.rejected, sessions as u64, "{name}");
            ahead += n;
        }
    }
    ahead
}

#[test]
fn every_shipped_spec_reports_the_same_run_ahead_and_one_iteration_at_a_time() {
    let mut specs = Vec::new();
    for dir in ["examples", "examples/policies", "benches/specs"] {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut names: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".pool"))
            .collect();
        names.sort();
        specs.extend(names.into_iter().map(|n| format!("{dir}/{n}")));
    }
    let (mut replayed, mut engaged) = (0, 0);
    for path in &specs {
        let c = spec(path, &[]);
        // Some bench specs are for `poolc bench` alone (no step stage admits them).
        let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
        if Host::new(config, &trace::synthetic(1, 1)).is_err() {
            continue;
        }
        replayed += 1;
        engaged += usize::from(same_at_rates(path, &c, 600) > 0);
    }
    assert!(replayed >= 12, "{replayed} of {specs:?}");
    // Not vacuous: most specs have runs known in advance at these rates.
    assert!(engaged * 4 >= replayed * 3, "{engaged} of {replayed}");
}

#[test]
fn runs_ahead_between_evictions_spills_and_preemptions_change_nothing() {
    let cases = [
        (
            "vllm, 300 blocks",
            spec("examples/vllm.pool", &[("param num_gpu_blocks = 28000;", "param num_gpu_blocks = 300;")]),
        ),
        (
            "tiered, 400 GPU blocks, 2,000 host blocks",
            spec(
                "examples/tiered.pool",
                &[
                    ("param gpu_blocks = 28000;", "param gpu_blocks = 400;"),
                    ("param host_blocks = 524288;", "param host_blocks = 2000;"),
                ],
            ),
        ),
        (
            "vllm_priority, 300 blocks (preempt by)",
            spec("examples/vllm_priority.pool", &[("param blocks = 4096;", "param blocks = 300;")]),
        ),
        (
            "replicas, 200 blocks each",
            spec("examples/replicas.pool", &[("param blocks = 4096;", "param blocks = 200;")]),
        ),
    ];
    for (name, c) in &cases {
        let ahead = same_at_rates(name, c, 1500);
        assert!(ahead > 0, "{name}: nothing ran ahead");
    }
    // The small pools did make the rules act between the runs.
    let mut w = trace::synthetic(1500, 5);
    w.scale_rate(4.0);
    let (r, _, _) = both(&cases[0].1, &w, LatencySamples::Sketch);
    assert!(r.evictions > 0 && r.preemptions > 0, "{}", r.to_text());
    let (r, _, _) = both(&cases[1].1, &w, LatencySamples::Sketch);
    assert!(r.spills > 0 && r.tier_loads > 0, "{}", r.to_text());
}

#[test]
fn replicas_whose_iterations_end_together_keep_the_order_between_members() {
    // A fixed time of 1/4 s, exact in binary: the four replicas' iterations end at
    // the same instants, and at a tie the members' Ends go in push order. A run
    // ahead that went through a tie would reorder latency samples between members.
    let c = spec(
        "examples/replicas.pool",
        &[("time (0.005 + 0.00002 * tokens);", "time (0.25);")],
    );
    let mut w = trace::synthetic(800, 13);
    // Arrivals on the same quarter-second grid: each is at an iteration's end.
    for (i, s) in w.sessions.iter_mut().enumerate() {
        s.arrival = (i / 3) as f64 * 0.25;
    }
    for latencies in [LatencySamples::Sketch, LatencySamples::Exact] {
        let (fast, ahead, slow) = both(&c, &w, latencies);
        assert_eq!(fast.to_json(), slow.to_json(), "{latencies:?}");
        assert!(ahead > 0);
    }
}
