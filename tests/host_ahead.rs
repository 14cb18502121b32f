//! Runs known in advance (docs/HOST.md, "Runs known in advance"; issue #16 item 2):
//! a replay whose pool events nobody reads runs decode iterations known in advance
//! in one call, and reports — and tells its observer, iteration by iteration and
//! latency by latency — exactly what the same replay one iteration at a time does.
//! The one-at-a-time replay is asked for (`RunOptions::one_at_a_time`) and also
//! forced independently of the option: an observer that wants pool events makes the
//! pools log every operation, which no run ahead may skip. Every spec the project ships, at three arrival rates and with pools
//! small enough to evict, spill and preempt, both percentile modes (the sketch's mean
//! is summed in the order latencies arrive, so it also pins their order); and
//! replicas whose iterations end at the same instants, where the event order between
//! members decides.
//!
//! The replay with no observer also defers the decodes of residents that only
//! decode (issue #35 item 2): those tests pin it the same way, and that it engages,
//! also in overloaded replays whose waiting head stays out between admissions.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::io;

use poolrt::host::{
    Host, Iteration, Latency, LatencySamples, Observer, PoolEvent, Report, RunOptions,
};
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

/// Writes down every iteration and latency it is told, in order; wanting pool events
/// (which it ignores) or not.
struct Recorder {
    events: bool,
    told: Vec<String>,
}

impl Observer for Recorder {
    fn wants_events(&self) -> bool {
        self.events
    }

    fn iteration(&mut self, it: &Iteration<'_>) -> io::Result<()> {
        self.told.push(format!("{it:?}"));
        Ok(())
    }

    fn event(&mut self, _: &PoolEvent<'_>) -> io::Result<()> {
        Ok(())
    }

    fn latency(&mut self, l: &Latency) -> io::Result<()> {
        self.told.push(format!("{l:?}"));
        Ok(())
    }
}

/// How a replay was computed: iterations run ahead, and decodes deferred in them.
#[derive(Clone, Copy, Debug, Default)]
struct Ahead {
    iterations: u64,
    deferred: u64,
}

/// Replays `w` four ways: with no observer (which may run ahead and defer decodes)
/// and with one that reads iterations and latencies (which may run ahead, and is
/// told every decode); with that observer and `one_at_a_time`; and with one that
/// also wants pool events, which forces one iteration at a time whatever the option
/// says. Asserts that all four report the same and that the observers reading
/// iterations are told the same; returns the report and how the replay without an
/// observer was computed.
fn both(c: &poolc::Compiled, w: &Workload, latencies: LatencySamples) -> (Report, Ahead) {
    let config = || poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
    let run = |observer: Option<&mut Recorder>, one_at_a_time: bool| {
        let mut ahead = Ahead::default();
        let report = Host::new(config(), w)
            .unwrap()
            .run(RunOptions {
                latencies,
                observer: observer.map(|o| o as &mut dyn Observer),
                one_at_a_time,
                iterations_ahead: Some(&mut ahead.iterations),
                decodes_deferred: Some(&mut ahead.deferred),
                ..RunOptions::default()
            })
            .unwrap();
        (report, ahead)
    };
    let recorder = |events| Recorder {
        events,
        told: Vec::new(),
    };
    let (alone, ahead) = run(None, false);
    let mut reader = recorder(false);
    let (read, read_ahead) = run(Some(&mut reader), false);
    let mut stepper = recorder(false);
    let (stepped, none) = run(Some(&mut stepper), true);
    assert_eq!(none.iterations, 0, "one_at_a_time runs nothing ahead");
    let mut logger = recorder(true);
    let (logged, none) = run(Some(&mut logger), false);
    assert_eq!(
        none.iterations, 0,
        "a reader of pool events sees no run ahead"
    );
    assert_eq!(
        read_ahead.iterations, ahead.iterations,
        "an observer of iterations changes no run"
    );
    assert_eq!(
        read_ahead.deferred, 0,
        "an observer of iterations is told every decode"
    );
    for (way, r) in [("observed", &read), ("one_at_a_time", &stepped)] {
        assert_eq!(r.to_json(), logged.to_json(), "{way} vs logged");
    }
    assert_eq!(alone.to_json(), logged.to_json(), "alone vs logged");
    assert_eq!(reader.told.len(), stepper.told.len());
    if let Some(k) = (0..reader.told.len()).find(|&k| reader.told[k] != stepper.told[k]) {
        panic!(
            "told #{k}: run ahead {} vs one at a time {}",
            reader.told[k], stepper.told[k]
        );
    }
    assert_eq!(stepper.told, logger.told, "one_at_a_time vs logged");
    (alone, ahead)
}

/// Replays `c` on synthetic sessions at each rate scale, in both percentile modes;
/// returns how they were computed, in all.
fn same_at_rates(name: &str, c: &poolc::Compiled, sessions: usize) -> Ahead {
    let mut ahead = Ahead::default();
    for (seed, scale) in [(3, 0.25), (5, 1.0), (9, 4.0)] {
        let mut w = trace::synthetic(sessions, seed);
        w.scale_rate(scale);
        for latencies in [LatencySamples::Sketch, LatencySamples::Exact] {
            eprintln!("{name}, rate ×{scale}, {latencies:?}");
            let (r, n) = both(c, &w, latencies);
            assert_eq!(r.finished + r.rejected, sessions as u64, "{name}");
            ahead.iterations += n.iterations;
            ahead.deferred += n.deferred;
        }
    }
    ahead
}

#[test]
fn every_shipped_spec_reports_the_same_run_ahead_and_one_iteration_at_a_time() {
    let mut specs = Vec::new();
    for dir in [
        "examples",
        "examples/policies",
        "examples/deployments",
        "benches/specs",
    ] {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut names: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".pool"))
            .collect();
        names.sort();
        specs.extend(names.into_iter().map(|n| format!("{dir}/{n}")));
    }
    let (mut replayed, mut engaged, mut deferred) = (0, 0, 0);
    for path in &specs {
        let c = spec(path, &[]);
        // Some bench specs are for `poolc bench` alone (no step stage admits them).
        let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
        if Host::new(config, &trace::synthetic(1, 1)).is_err() {
            continue;
        }
        replayed += 1;
        let ahead = same_at_rates(path, &c, 600);
        engaged += usize::from(ahead.iterations > 0);
        deferred += usize::from(ahead.deferred > 0);
    }
    assert!(replayed >= 12, "{replayed} of {specs:?}");
    // Not vacuous: most specs have runs known in advance at these rates, and most
    // of those defer decodes (not those with `fair`).
    assert!(engaged * 4 >= replayed * 3, "{engaged} of {replayed}");
    assert!(deferred * 2 >= replayed, "{deferred} of {replayed}");
}

#[test]
fn runs_ahead_between_evictions_spills_and_preemptions_change_nothing() {
    let cases = [
        (
            "vllm, 300 blocks",
            spec(
                "examples/vllm.pool",
                &[(
                    "param num_gpu_blocks = 28000;",
                    "param num_gpu_blocks = 300;",
                )],
            ),
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
            spec(
                "examples/vllm_priority.pool",
                &[("param blocks = 4096;", "param blocks = 300;")],
            ),
        ),
        (
            "replicas, 200 blocks each",
            spec(
                "examples/replicas.pool",
                &[("param blocks = 4096;", "param blocks = 200;")],
            ),
        ),
        (
            "fleet, 4 replicas of 300 blocks",
            spec(
                "examples/fleet/least_queued.pool",
                &[(
                    "param num_gpu_blocks = 28000;",
                    "param num_gpu_blocks = 300;",
                )],
            ),
        ),
    ];
    for (name, c) in &cases {
        let ahead = same_at_rates(name, c, 1500);
        assert!(ahead.iterations > 0, "{name}: nothing ran ahead");
        // Every case defers decodes: vllm.pool's `time` sums over the takes (R29),
        // whose rows the deferred residents give without catching up; with spills
        // to a tier (tiered, replicas) and in the fleet, deferrals outlast runs
        // (each replica's iterations interleave with the others', a spill's link
        // event may come before an End).
        assert!(ahead.deferred > 0, "{name}: {ahead:?}");
    }
    // The small pools did make the rules act between the runs.
    let mut w = trace::synthetic(1500, 5);
    w.scale_rate(4.0);
    let (r, _) = both(&cases[0].1, &w, LatencySamples::Sketch);
    assert!(r.evictions > 0 && r.preemptions > 0, "{}", r.to_text());
    let (r, _) = both(&cases[1].1, &w, LatencySamples::Sketch);
    assert!(r.spills > 0 && r.tier_loads > 0, "{}", r.to_text());
}

#[test]
fn deferred_decodes_keep_the_context_an_iteration_time_reads() {
    // `context` without `sum` is what deferred decodes count for `time` without
    // visiting the residents (one unit more each iteration, a finished one's off):
    // a miscount changes every later iteration's time, so the report.
    let c = spec(
        "examples/vllm_priority.pool",
        &[(
            "time (0.005 + 0.00002 * tokens);",
            "time (0.005 + 0.00002 * tokens + 0.0000003 * context);",
        )],
    );
    let ahead = same_at_rates("vllm_priority reading context", &c, 1500);
    assert!(ahead.deferred > 0, "{ahead:?}");
}

#[test]
fn r29_deferred_decodes_keep_the_rows_a_sum_in_time_reads() {
    // A `sum` row of a deferred resident moves one unit of computed and context an
    // iteration, kept from one deferred iteration to the next and made again when a
    // resident finishes or a deferral begins: a row one iteration stale, or one
    // still there after its session finished, changes that iteration's time.
    let sum = "time (0.005 + 0.00002 * tokens + 0.0000003 * sum(decode * context) \
               + 0.0000001 * sum(prefill * computed));";
    let c = spec(
        "examples/vllm_priority.pool",
        &[("time (0.005 + 0.00002 * tokens);", sum)],
    );
    let ahead = same_at_rates("vllm_priority summing context", &c, 1500);
    assert!(ahead.deferred > 0, "{ahead:?}");
    // Its decode member serves a pool that receives handoffs, so its deferrals end
    // with their runs: deferral after deferral, each with its own rows.
    let c = spec(
        "examples/disagg/split.pool",
        &[(
            "time (0.0057527 + 0.00001725 * prefill + 0.000006 * decode);",
            sum,
        )],
    );
    let ahead = same_at_rates("disagg/split summing context", &c, 1500);
    assert!(ahead.deferred > 0, "{ahead:?}");
}

/// Replays `c` (whose `time` is a fixed 1/4 s, exact in binary) with arrivals on the
/// same quarter-second grid: every member's iterations end at the same instants and
/// each arrival at an iteration's end. At a tie the members' Ends go in push order;
/// a run ahead or a deferral that went through a tie would reorder latency samples
/// between members.
fn members_ending_together_keep_their_order(c: &poolc::Compiled) {
    let mut w = trace::synthetic(800, 13);
    for (i, s) in w.sessions.iter_mut().enumerate() {
        s.arrival = (i / 3) as f64 * 0.25;
    }
    for latencies in [LatencySamples::Sketch, LatencySamples::Exact] {
        let (_, ahead) = both(c, &w, latencies);
        assert!(ahead.iterations > 0 && ahead.deferred > 0, "{ahead:?}");
    }
}

#[test]
fn a_fleet_whose_iterations_end_together_keeps_the_order_between_members() {
    // A fleet without a tier, its decodes deferred across the other replicas' events.
    members_ending_together_keep_their_order(&spec(
        "examples/fleet/least_queued.pool",
        &[
            (
                "time (0.0057527 + 0.00001725 * prefill + 0.000006 * decode);",
                "time (0.25);",
            ),
            (
                "param num_gpu_blocks = 28000;",
                "param num_gpu_blocks = 400;",
            ),
        ],
    ));
}

#[test]
fn replicas_whose_iterations_end_together_keep_the_order_between_members() {
    // Replicas spilling to one shared tier over one link.
    members_ending_together_keep_their_order(&spec(
        "examples/replicas.pool",
        &[("time (0.005 + 0.00002 * tokens);", "time (0.25);")],
    ));
}

/// Counts the iterations of a one-at-a-time replay and those that start with
/// nothing waiting (the one before ended with no waiting hold).
#[derive(Default)]
struct Waits {
    iterations: u64,
    after_empty: u64,
    waiting_before: Option<u64>,
}

impl Observer for Waits {
    fn iteration(&mut self, it: &Iteration<'_>) -> io::Result<()> {
        self.iterations += 1;
        self.after_empty += u64::from(self.waiting_before.is_none_or(|w| w == 0));
        self.waiting_before = Some(it.waiting);
        Ok(())
    }
}

#[test]
fn a_waiting_head_that_stays_out_does_not_end_a_run() {
    // An overloaded replay: holds wait most of the time, and an iteration whose
    // decodes leave the head out admits nobody. Such iterations run ahead (and
    // defer their quiet decodes); an iteration in which the head fits after the
    // decodes ends the run with the ordinary admission. Before, an iteration could
    // run ahead only when nothing waited at its start, so at most `after_empty`.
    for (name, c) in [
        (
            "vllm, 600 blocks",
            spec(
                "examples/vllm.pool",
                &[(
                    "param num_gpu_blocks = 28000;",
                    "param num_gpu_blocks = 600;",
                )],
            ),
        ),
        (
            "vllm_blackbox, 400 blocks",
            spec(
                "examples/vllm_blackbox.pool",
                &[(
                    "param num_gpu_blocks = 28000;",
                    "param num_gpu_blocks = 400;",
                )],
            ),
        ),
        // One engine serving two pools (K4: tried in declaration order), sessions
        // alternating between them: an iteration in which the first pool's head
        // stays out and the second's is admitted attempts both, as the ordinary one.
        (
            "two pools of 400 blocks behind one engine",
            spec(
                "examples/vllm_blackbox.pool",
                &[
                    (
                        "param num_gpu_blocks = 28000;",
                        "param num_gpu_blocks = 400;",
                    ),
                    (
                        "pool kv {",
                        "pool kv0 {\n  cap num_gpu_blocks * block_size; block block_size;\n  \
                         evict lru; preempt lifo; queue fifo; admit via engine;\n}\n\npool kv {",
                    ),
                ],
            ),
        ),
    ] {
        let mut w = trace::synthetic(1500, 7);
        w.scale_rate(4.0);
        let mut waits = Waits::default();
        let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
        Host::new(config, &w)
            .unwrap()
            .run(RunOptions {
                observer: Some(&mut waits),
                one_at_a_time: true,
                ..RunOptions::default()
            })
            .unwrap();
        for latencies in [LatencySamples::Sketch, LatencySamples::Exact] {
            let (_, ahead) = both(&c, &w, latencies);
            eprintln!(
                "{name}: {} iterations, {} after none waited; {ahead:?}",
                waits.iterations, waits.after_empty
            );
            assert!(ahead.iterations > waits.after_empty, "{name}");
            assert!(ahead.deferred > 0, "{name}");
        }
    }
}
