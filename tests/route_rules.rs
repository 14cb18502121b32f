//! Routing (R22–R24), worked out by hand on fleets of two and three members: each
//! test compiles a small spec, replays a handful of sessions through the reference
//! host and reads, from the log's enqueue events, which member each session joined.
//! The expected members are derived in the comments from the rules alone.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use build_support::TempDir;
use poolrt::host::LatencySamples;
use poolrt::trace;

/// Two members of 1,000 units in blocks of 4, one seat each, a slow engine (10 s per
/// iteration), so nothing finishes during the arrivals below. `ROUTE` is the route.
const FLEET: &str = "
stage engine[N] { step; seats 1; time (10); }
pool kv[N] { cap 1000; block 4; admit via engine; ROUTE }
";

fn spec(n: u32, route: &str) -> String {
    FLEET.replace("N", &n.to_string()).replace("ROUTE", route)
}

/// The member (`kv[i]` → i) each session was first enqueued in, by serial.
fn members(spec: &str, trace_jsonl: &str) -> Vec<u32> {
    let dir = TempDir::new("route");
    let path = dir.path.join("w.jsonl");
    std::fs::write(&path, trace_jsonl).unwrap();
    let workload = trace::read_path(&path, None).unwrap();
    let (_, log) = build_support::replay_logged(spec, &workload, LatencySamples::Sketch);
    let mut out: Vec<Option<u32>> = vec![None; workload.sessions.len()];
    for line in String::from_utf8(log).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["ev"] == "enqueue" {
            let s = v["session"].as_u64().unwrap() as usize;
            let pool = v["pool"].as_str().unwrap();
            let m = pool["kv[".len()..pool.len() - 1].parse().unwrap();
            out[s].get_or_insert(m);
        }
    }
    out.into_iter()
        .map(|m| m.expect("every session was enqueued"))
        .collect()
}

fn session(arrival: f64, prompt: u64, runs: &str) -> String {
    format!("{{\"arrival\": {arrival}, \"prompt\": {prompt}, \"output\": 4, \"runs\": {runs}}}\n")
}

#[test]
fn r22_round_robin_keys_route_as_no_route_does() {
    // serial % 3 == member: sessions 0, 1, 2, 3, 4 go to 0, 1, 2, 0, 1 — exactly what
    // the host does without `route` (docs/HOST.md, "Routing").
    let w: String = (0..5).map(|_| session(0.0, 8, "[]")).collect();
    let routed = members(&spec(3, "route by (serial % 3 == member ? 0 : 1);"), &w);
    assert_eq!(routed, [0, 1, 2, 0, 1]);
    let plain = members(&spec(3, ""), &w);
    assert_eq!(plain, routed);
}

#[test]
fn r22_the_least_member_wins_and_ties_go_to_the_lowest_index() {
    // Key `queued(kv)` live: at t=0, s0 finds both queues empty (tie → 0); s1 finds
    // kv[0] with 1 waiting → 1; s2 finds 1 and 1 → 0. The iteration at t=0 then
    // admits one session per member (one seat each); at t=1, kv[0] has 1 waiting
    // (s2) and kv[1] none → s3 goes to 1.
    let w = [
        session(0.0, 8, "[]"),
        session(0.0, 8, "[]"),
        session(0.0, 8, "[]"),
        session(1.0, 8, "[]"),
    ]
    .concat();
    assert_eq!(
        members(&spec(2, "route by (queued(kv));"), &w),
        [0, 1, 0, 1]
    );
    // `-member` reverses the tie: the highest member first.
    assert_eq!(
        members(&spec(2, "route by (queued(kv), -member);"), &w),
        [1, 0, 1, 0]
    );
}

#[test]
fn r22_hit_scores_the_prefix_each_member_holds() {
    // Blocks of 4; keys (−hit(kv), queued(kv)). At t=0, s0 (run 7) and s1 (run 9)
    // hit nothing: s0 → kv[0] (tie), s1 → kv[1] (the shorter queue). Both are
    // admitted at t=0 and their prompt blocks are hittable from allocation (R7).
    // At t=1: s2 (prompt 8, run 9) would hit s1's first block in kv[1], capped at
    // prompt − 1 = 7 units: 1 block, 4 units → kv[1]. s3 (the same) → kv[1] again,
    // although kv[1]'s queue (s2) is now longer than kv[0]'s (empty): −4 < 0.
    // s4 (run 5) hits nothing → the shorter queue, kv[0].
    let w = [
        session(0.0, 12, "[[7, 12]]"),
        session(0.0, 8, "[[9, 8]]"),
        session(1.0, 8, "[[9, 8]]"),
        session(1.0, 8, "[[9, 8]]"),
        session(1.0, 8, "[[5, 8]]"),
    ]
    .concat();
    let spec = spec(2, "route by (-hit(kv), queued(kv));");
    assert_eq!(members(&spec, &w), [0, 1, 1, 1, 0]);
}

#[test]
fn r22_tier_hit_scores_what_the_spill_tier_holds_after_the_hit() {
    // Blocks of 4, kv[i] of 4 blocks spilling every evicted block to one host tier
    // over an instantaneous link; one seat, 1 s iterations; outputs of 1 token.
    // s0 (prompt 12, run 7) and s1 go to kv[0] (`serial < 2 ? member`). s0 is
    // admitted at t=0 and finishes at t=1, caching its 3 blocks b1 b2 b3. s1 (run 9,
    // 3 blocks) is admitted at t=1: 1 block free, so b3 then b2 are evicted (tail
    // first, R10) and written to the host (R12); b1 stays cached in kv[0]. s2
    // (prompt 12, run 7) at t=2, hit limit 11 units = 2 blocks: kv[0] hits b1 (4
    // units) and its tier holds b2 right after it: tier_hit 4. kv[1] hits nothing,
    // and the tier's run from the head stops at b1, which it lacks: tier_hit 0. So
    // the key (tier_hit(kv) == 4 ? 0 : 1, −member) sends s2 to kv[0] (0 against 1),
    // where −member alone would pick kv[1].
    let spec = "
        stage engine[2] { step; seats 1; time (1); }
        stage pcie { link; }
        pool host { cap 1000; block 4; }
        pool kv[2] { cap 16; block 4; admit via engine; spill host via pcie (units) when (1);
                     route by (serial < 2 ? member : (tier_hit(kv) == 4 ? 0 : 1), -member); }
    ";
    let w = "{\"arrival\": 0, \"prompt\": 12, \"output\": 1, \"runs\": [[7, 12]]}
{\"arrival\": 1, \"prompt\": 12, \"output\": 1, \"runs\": [[9, 12]]}
{\"arrival\": 2, \"prompt\": 12, \"output\": 1, \"runs\": [[7, 12]]}
";
    assert_eq!(members(spec, w), [0, 0, 0]);
    // The same with `tier_hit(kv) == 8`: no member has it, and −member picks kv[1].
    assert_eq!(members(&spec.replace("== 4", "== 8"), w), [0, 0, 1]);
}

#[test]
fn r22_min_max_normalise_over_the_members() {
    // llm-d's queue scorer (max − q) / (max − min), 1 when all are equal, negated.
    // t=0: s0 sees 0,0,0 → every score 1 → tie → 0. s1 sees 1,0,0 → scores 0,1,1 →
    // 1. s2 sees 1,1,0 → 0,0,1 → 2. s3 sees 1,1,1 → all 1 → 0.
    let key = "route by (-(max_of(queued(kv)) == min_of(queued(kv)) ? 1 : \
               (max_of(queued(kv)) - queued(kv)) / (max_of(queued(kv)) - min_of(queued(kv)))));";
    let w: String = (0..4).map(|_| session(0.0, 8, "[]")).collect();
    assert_eq!(members(&spec(3, key), &w), [0, 1, 2, 0]);
}

#[test]
fn r23_load_queries_are_read_from_a_snapshot_at_most_every_t() {
    // `every 1`: the snapshot is taken at s0's arrival (t=0, all queues empty) and
    // kept until the first arrival at t ≥ 1. s0, s1 (t=0) and s2 (t=0.5) all see
    // 0,0 → kv[0]. s3 (t=1) takes a new one: kv[0] has 2 waiting (s1, s2; s0 was
    // admitted at t=0), kv[1] 0 → kv[1]. s4 (t=1.2) still sees that snapshot → kv[1]
    // (live it would see the same here: s3 was admitted at t=1).
    let w = [
        session(0.0, 8, "[]"),
        session(0.0, 8, "[]"),
        session(0.5, 8, "[]"),
        session(1.0, 8, "[]"),
        session(1.2, 8, "[]"),
    ]
    .concat();
    assert_eq!(
        members(&spec(2, "route by (queued(kv)) every 1;"), &w),
        [0, 0, 0, 1, 1]
    );
    // Live, the same arrivals alternate as the queues change: s0 → 0, s1 → 1 (1 vs 0);
    // both admitted at t=0; s2 → 0; s3 at t=1 sees 1,0 → 1; s4 sees 1,1 → 0.
    assert_eq!(
        members(&spec(2, "route by (queued(kv));"), &w),
        [0, 1, 0, 1, 0]
    );
    // A query on one fixed member is a load query too: `queued(kv[0])` is stale
    // under `every` (s1 sees kv[0] empty → member 0) and live without (s1 sees s0
    // waiting there → −member → member 1).
    let two = [session(0.0, 8, "[]"), session(0.0, 8, "[]")].concat();
    let fixed = "route by (queued(kv[0]) >= 1 ? -member : member)";
    assert_eq!(
        members(&spec(2, &format!("{fixed} every 1;")), &two),
        [0, 0]
    );
    assert_eq!(members(&spec(2, &format!("{fixed};")), &two), [0, 1]);
    // `every 0` refreshes at every arrival: live.
    assert_eq!(
        members(&spec(2, "route by (queued(kv)) every 0;"), &w),
        [0, 1, 0, 1, 0]
    );
}

#[test]
fn r24_routed_reads_what_the_router_sent_and_forgets_the_least_recent() {
    // Keys (−routed(kv), round robin): s0 (prompt 12, run 7: blocks b1 b2 b3) ties on
    // routed → round robin → kv[0]; the router records b1, b2, b3 for kv[0]. s1
    // (serial 1, the same prompt) would go to kv[1] by round robin, but routed(kv[0])
    // = 2 blocks (capped at prompt − 1 = 11 units: b1, b2) = 8 units → kv[0].
    let w = [session(0.0, 12, "[[7, 12]]"), session(0.0, 12, "[[7, 12]]")].concat();
    let key =
        |remember: &str| format!("route by (-routed(kv), serial % 2 == member ? 0 : 1){remember};");
    assert_eq!(members(&spec(2, &key("")), &w), [0, 0]);
    assert_eq!(members(&spec(2, &key(" remember 3")), &w), [0, 0]);
    // Remembering 2 blocks, kv[0]'s record drops b1, the least recent: s1's walk
    // stops at its first block → routed 0 everywhere → round robin → kv[1].
    assert_eq!(members(&spec(2, &key(" remember 2")), &w), [0, 1]);
}

#[test]
fn r22_the_round_robin_fleet_replays_byte_for_byte_as_the_fleet_without_route() {
    // examples/fleet/round_robin.pool against itself with its `route` line removed:
    // the same report and the same log bytes (R22: no route is `serial mod n`).
    let path = build_support::repo().join("examples/fleet/round_robin.pool");
    let routed = std::fs::read_to_string(&path).unwrap();
    let line = "  route by (serial % replicas == member ? 0 : 1);\n";
    assert!(routed.contains(line));
    let plain = routed.replace(line, "");
    let mut workload = trace::synthetic(1500, 3);
    workload.scale_rate(4.0);
    let run = |spec: &str| {
        let (report, log) = build_support::replay_logged(spec, &workload, LatencySamples::Sketch);
        (report.to_text(), log)
    };
    let (a, b) = (run(&routed), run(&plain));
    assert!(a.0.contains("member kv[3]"), "{}", a.0);
    assert_eq!(a.0, b.0);
    assert!(a.1.len() > 100_000 && a.1 == b.1, "the logs differ");
}

#[test]
fn r22_every_fleet_example_replays_the_same_report_and_log_twice() {
    // Determinism: the router's own index is a hash map, but only its LRU order (a
    // BTreeMap) is ever iterated; nothing else of a replay depends on hash order.
    let mut workload = trace::synthetic(800, 11);
    workload.scale_rate(4.0);
    let runs = build_support::replayed_twice("examples/fleet", &workload);
    assert_eq!(runs.len(), 7);
    for (spec, [a, b]) in runs {
        assert_eq!(a.0.to_text(), b.0.to_text(), "{}", spec.display());
        assert!(a.1 == b.1, "{}: the logs differ", spec.display());
    }
}
