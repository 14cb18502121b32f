//! Link stages and spill tiers: R17 (first come, first served at `rate`) and R12 (a
//! written block joins the tier's cache in an entry carrying its session and release
//! time; a tier hit is loaded back over the link and delays that session's prefill
//! until the load completes), in one small replay worked out by hand, and the tier's
//! entry order at the engine level.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod host_support;

use host_support::*;
use poolrt::config::{Input, Layout, SpillPolicy};
use poolrt::host::{HostConfig, PoolDecl, PoolMember, Report};
use poolrt::policy::{CodeHandle, Shape, SpillFns};
use poolrt::{
    BlockKey, EntryId, Env, Event, Limit, Pool, PoolConfig, PoolRef, Query, RunId, SessionId,
    StageRef, Stored, Units,
};
use serde_json::{Value, json};

unsafe extern "C" fn always(_row: *const f64, _ctx: *const f64) -> f64 {
    1.0
}

unsafe extern "C" fn spill_units(_row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the layout below has one ctx slot, `units`.
    unsafe { *ctx }
}

/// `spill host via pcie (units) when (1)`.
fn spill_to(tier: PoolRef, link: StageRef) -> SpillPolicy {
    SpillPolicy {
        // SAFETY: both functions read at most the one ctx slot, and are static.
        fns: unsafe {
            SpillFns::new(
                always,
                spill_units,
                Shape { row: 0, ctx: 1 },
                CodeHandle::process(),
            )
        },
        layout: Layout {
            row: vec![],
            ctx: vec![Input::SpillUnits],
        },
        tier,
        link,
    }
}

/// Stage 0 `engine`, stage 1 `pcie` (rate 2 per second); pool 0 `host` (the tier,
/// 100 blocks of 4), pool 1 `kv` (3 blocks of 4, spilling into host via pcie).
fn tiered() -> HostConfig {
    let host = PoolDecl {
        name: "host".into(),
        members: vec![PoolMember {
            config: PoolConfig {
                me: PoolRef { pool: 0, member: 0 },
                cap: fin(400),
                block: Units(4),
                ..PoolConfig::default()
            },
            admit_via: vec![],
            handoff: None,
        }],
    };
    let mut kv = kv(1, "kv", 1, 12, 4, |_| vec![sref(0, 0)]);
    kv.members[0].config.spill = Some(spill_to(PoolRef { pool: 0, member: 0 }, sref(1, 0)));
    HostConfig {
        attrs: attrs(),
        stages: vec![step("engine", 1, engine(100, 8, None)), link("pcie", 2.0)],
        pools: vec![host, kv],
        routes: Vec::new(),
    }
}

/// The replay both R12/R17 log tests work out by hand: s0 (run 1, 8 units) at 0, s1
/// (run 2, 12 units) at 1, s2 (s0's prompt again) at 6, one output token each.
fn replay() -> (Report, Vec<Value>) {
    let w = workload(vec![
        sess(0.0, 8, 1, &[(1, 8)]),
        sess(1.0, 12, 1, &[(2, 12)]),
        sess(6.0, 8, 1, &[(1, 8)]),
    ]);
    let (r, _, lines) = run(tiered(), &w);
    (r, lines)
}

fn events<'a>(lines: &'a [Value], ev: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["ev"] == ev).collect()
}

#[test]
fn r12_r17_spills_take_link_time_and_a_tier_hit_waits_for_its_load() {
    // t0: s0 (run 1, 8 units) computes and finishes at 1, caching 2 blocks.
    // t1: s1 (12 units) needs all 3 blocks: both cached blocks are evicted tail first
    //     and spilled, 4 work each at rate 2: the link writes (1,7) from 1 to 3, then
    //     (1,3) from 3 to 5. They join host in one entry (session 0, released at 1).
    // t6: s2 has s0's prompt: nothing in kv, but host holds block 0 (the last-token
    //     rule stops the walk there): a tier hit of 4. Its allocation evicts s1's
    //     tail (2,11), spilled from 6 to 8; the load queues behind it, 8 to 10. s2 is
    //     admitted with no tokens and waits.
    // t10: the load is done: s2 computes its last 4 (evicting and spilling (2,7), done
    //     at 12) and gets its token at 11: a TTFT of 5 instead of 1.
    let (r, lines) = replay();
    let stores: Vec<Value> = events(&lines, "store")
        .iter()
        .map(|l| json!([l["t"], l["pool"], l["session"], l["key"], l["entry"]]))
        .collect();
    assert_eq!(
        stores,
        [
            json!([3.0, "host", 0, [1, 7], 0]),
            json!([5.0, "host", 0, [1, 3], 0]),
            json!([8.0, "host", 1, [2, 11], 1]),
            json!([12.0, "host", 1, [2, 7], 1]),
        ]
    );
    let spills: Vec<Value> = events(&lines, "spill")
        .iter()
        .map(|l| json!([l["t"], l["key"], l["work"]]))
        .collect();
    assert_eq!(
        spills,
        [
            json!([1.0, [1, 7], 4.0]),
            json!([1.0, [1, 3], 4.0]),
            json!([6.0, [2, 11], 4.0]),
            json!([10.0, [2, 7], 4.0]),
        ]
    );
    let hit = events(&lines, "tier_load");
    assert_eq!(
        (hit.len(), &hit[0]["t"], &hit[0]["units"], &hit[0]["work"]),
        (1, &json!(6.0), &json!(4), &json!(4.0))
    );
    assert_eq!(events(&lines, "loaded")[0]["t"], json!(10.0));
    let its: Vec<Value> = iterations(&lines)
        .iter()
        .map(|l| json!([l["t"], l["admitted"], l["cont"], l["finished"]]))
        .collect();
    assert_eq!(
        its,
        [
            json!([0.0, [[0, "new", 0, 8]], [], [0]]),
            json!([1.0, [[1, "new", 0, 12]], [], [1]]),
            json!([6.0, [[2, "new", 0, 0]], [], []]),
            json!([10.0, [], [[2, 4]], [2]]),
        ]
    );
    assert_eq!(
        (r.finished, r.ttft.p99, r.sim_seconds),
        (3, Some(5.0), 12.0)
    );
    let (host, kv) = (&r.pools[0], &r.pools[1]);
    assert_eq!(
        (host.tier, host.stored, host.tier_hit_rate),
        (true, 4, Some(4.0 / 28.0))
    );
    assert_eq!((kv.spills, kv.tier_loads, kv.tier_load_units), (4, 1, 4));
    assert_eq!(
        (r.spills, r.tier_loads, r.tier_hit_rate),
        (4, 1, Some(4.0 / 28.0))
    );
    let l = &r.links[0];
    assert_eq!(
        (l.name.as_str(), l.writes, l.loads, l.busy_seconds),
        ("pcie", 4, 1, 10.0)
    );
}

#[test]
fn r12_a_tier_hit_logs_tier_load_and_a_completed_write_logs_store_in_the_tier() {
    // The replay above. kv (3 blocks of 4) and host (100 blocks of 4), state after
    // each event as `allocated, cached, queued`:
    // t6: s2 is admitted in kv with no hit there (units 4: only its tier hit is
    //     allocated before the load; s1's tail (2,11) is evicted for it), so kv
    //     holds 4 allocated and s1's other 2 blocks cached, 8; nothing waits. The
    //     tier hit is one block, 4 units, loaded with `units` = 4 at rate 2: work 4.
    // The four writes join host one block (4 units) each, never allocated, nothing
    // queued there: cached 4, 8, 12, 16; s0's blocks in entry 0, s1's in entry 1.
    let (r, lines) = replay();
    let state = |l: &Value| json!([l["allocated"], l["cached"], l["queued"]]);
    let loads: Vec<Value> = events(&lines, "tier_load")
        .iter()
        .map(|l| {
            json!([
                l["t"],
                l["pool"],
                l["session"],
                l["units"],
                l["work"],
                state(l)
            ])
        })
        .collect();
    assert_eq!(loads, [json!([6.0, "kv", 2, 4, 4.0, [4, 8, 0]])]);
    // Logged right after its Admit, like a Spill after its Evict.
    let at = lines.iter().position(|l| l["ev"] == "tier_load").unwrap();
    assert_eq!(
        (&lines[at - 1]["ev"], &lines[at - 1]["session"]),
        (&json!("admit"), &json!(2))
    );
    let stores: Vec<Value> = events(&lines, "store")
        .iter()
        .map(|l| {
            json!([
                l["t"],
                l["pool"],
                l["session"],
                l["entry"],
                l["key"],
                l["units"],
                state(l)
            ])
        })
        .collect();
    assert_eq!(
        stores,
        [
            json!([3.0, "host", 0, 0, [1, 7], 4, [0, 4, 0]]),
            json!([5.0, "host", 0, 0, [1, 3], 4, [0, 8, 0]]),
            json!([8.0, "host", 1, 1, [2, 11], 4, [0, 12, 0]]),
            json!([12.0, "host", 1, 1, [2, 7], 4, [0, 16, 0]]),
        ]
    );
    // One line per store: the host adds none of its own for a stored block.
    assert_eq!(r.pools[0].stored, 4);
    assert_eq!((r.pools[1].tier_loads, r.pools[1].tier_load_units), (1, 4));
}

#[test]
fn r12_a_block_the_tier_already_holds_is_not_written_again() {
    // s0 and s1 share run 1; after both are evicted once, s2 brings run 1 back and
    // its eviction finds block (1,3) already in the tier: no link work.
    let w = workload(vec![
        sess(0.0, 8, 1, &[(1, 8)]),
        sess(1.0, 12, 1, &[(2, 12)]),
        sess(6.0, 4, 1, &[(1, 4)]),
        sess(7.0, 12, 1, &[(3, 12)]),
    ]);
    let (r, _, lines) = run(tiered(), &w);
    assert_eq!(r.finished, 4);
    assert!(r.pools[1].spills_skipped >= 1, "{:?}", r.pools[1]);
    assert!(
        events(&lines, "spill_skip")
            .iter()
            .any(|l| l["key"] == json!([1, 3]))
    );
    assert_eq!(
        r.links[0].writes + r.pools[1].spills_skipped,
        r.pools[1].spills
    );
}

struct NoEnv;

impl Env for NoEnv {
    fn attrs(&self, _: SessionId) -> Option<&[f64]> {
        Some(&[])
    }
    fn is_resident(&self, _: SessionId) -> bool {
        false
    }
    fn query(&self, q: Query) -> f64 {
        poolrt::env::default_query(q)
    }
}

fn key(run: u64, offset: u64) -> BlockKey {
    BlockKey {
        run: RunId(run),
        offset,
    }
}

/// A tier of 2 blocks of 4 units, logging.
fn small_tier() -> Pool {
    let mut tier = Pool::new(PoolConfig {
        cap: Limit::Finite(Units(8)),
        block: Units(4),
        ..PoolConfig::default()
    })
    .unwrap();
    tier.set_logging(true);
    tier
}

#[test]
fn r12_tier_entries_keep_release_time_order_and_gather_by_session() {
    // A tier of 2 blocks. s5's block (released at 10) arrives first, then s3's
    // (released at 5): s3's entry is older, so it is placed first and evicted first
    // when s7's block needs room, although it arrived later.
    let mut tier = small_tier();
    let env = NoEnv;
    let put = |t: &mut Pool, now: f64, s: u64, k: BlockKey, last: f64| {
        let r = t.accept_spill(now, SessionId(s), k, last, &env).unwrap();
        t.check().unwrap();
        r
    };
    assert!(matches!(
        put(&mut tier, 11.0, 5, key(9, 3), 10.0),
        Stored::Stored(_)
    ));
    assert!(matches!(
        put(&mut tier, 12.0, 3, key(8, 3), 5.0),
        Stored::Stored(_)
    ));
    let order: Vec<u64> = tier.entries().iter().map(|e| e.session.0).collect();
    assert_eq!(order, [3, 5]);
    assert_eq!(put(&mut tier, 12.0, 3, key(8, 3), 5.0), Stored::Duplicate);
    assert!(matches!(
        put(&mut tier, 13.0, 7, key(7, 3), 7.0),
        Stored::Stored(_)
    ));
    let order: Vec<(u64, f64)> = tier
        .entries()
        .iter()
        .map(|e| (e.session.0, e.last))
        .collect();
    assert_eq!(order, [(7, 7.0), (5, 10.0)]);
    assert!(tier.has_key(&key(9, 3)) && !tier.has_key(&key(8, 3)));
    // Blocks of one entry arrive tail first and gather at its head.
    let mut tier = Pool::new(PoolConfig::default()).unwrap();
    put(&mut tier, 1.0, 2, key(4, 1), 0.5);
    put(&mut tier, 1.0, 2, key(4, 0), 0.5);
    let e = tier.entries();
    assert_eq!(
        (e.len(), e[0].keys.clone()),
        (1, vec![key(4, 0), key(4, 1)])
    );
    assert_eq!(tier.counters().stored, 2);
}

#[test]
fn r12_accept_spill_logs_store_after_the_evictions_that_made_room() {
    // A tier of 2 blocks of 4. Two stores fill it (cached 4, then 8); a duplicate logs
    // nothing; a third block first evicts the oldest entry's block (s1's, cached 4)
    // and then is stored (cached 8) in a new entry, id 2.
    let mut tier = small_tier();
    let env = NoEnv;
    tier.accept_spill(1.0, SessionId(1), key(1, 0), 0.5, &env)
        .unwrap();
    tier.accept_spill(2.0, SessionId(2), key(2, 0), 1.5, &env)
        .unwrap();
    assert_eq!(
        tier.accept_spill(2.0, SessionId(2), key(2, 0), 1.5, &env)
            .unwrap(),
        Stored::Duplicate
    );
    tier.accept_spill(3.0, SessionId(3), key(3, 0), 2.5, &env)
        .unwrap();
    let log: Vec<(Event, u64, u64, usize)> = tier
        .log()
        .iter()
        .map(|r| (r.event.clone(), r.allocated.0, r.cached.0, r.queued))
        .collect();
    let store = |entry: u64, s: u64, k: BlockKey| Event::Store {
        entry: EntryId(entry),
        session: SessionId(s),
        key: k,
        units: Units(4),
    };
    assert_eq!(
        log,
        [
            (store(0, 1, key(1, 0)), 0, 4, 0),
            (store(1, 2, key(2, 0)), 0, 8, 0),
            (
                Event::Evict {
                    entry: EntryId(0),
                    session: SessionId(1),
                    key: key(1, 0),
                    units: Units(4),
                },
                0,
                4,
                0
            ),
            (store(2, 3, key(3, 0)), 0, 8, 0),
        ]
    );
    assert_eq!(tier.counters().stored, 3);
}

#[test]
fn r17_completions_at_one_instant_on_two_links_go_in_the_order_the_jobs_came() {
    // kv[2] (3 blocks of 4 each) over engine[2]: even serials to kv[0], odd to kv[1].
    // kv[0] spills into hostA over pcieA (rate 2), kv[1] into hostB over pcieB
    // (rate 4/3: 4 units take 3 s, exactly).
    // t0: s0 (run 1, 8 units) in kv[0] and s1 (run 3, 8 units) in kv[1] each cache
    //     2 blocks at 1.
    // t1: s2 (12 units) evicts s0's blocks tail first: pcieA writes (1,7) 1→3 and
    //     (1,3) 3→5, both put on the link at 1.
    // t2: s3 (12 units) evicts s1's blocks: pcieB writes (3,7) 2→5 and (3,3) 5→8.
    // At 5 both links complete a job: (1,3) came first (at 1, queued behind (1,7)),
    // so it is stored first, though pcieA reached it only at 3, after (3,7) came.
    let tier = |decl: u32, name: &str| PoolDecl {
        name: name.into(),
        members: vec![PoolMember {
            config: PoolConfig {
                me: PoolRef {
                    pool: decl,
                    member: 0,
                },
                cap: fin(400),
                block: Units(4),
                ..PoolConfig::default()
            },
            admit_via: vec![],
            handoff: None,
        }],
    };
    let (host_a, host_b) = (tier(0, "hostA"), tier(1, "hostB"));
    let mut kv = kv(2, "kv", 2, 12, 4, |i| vec![sref(0, i)]);
    kv.members[0].config.spill = Some(spill_to(PoolRef { pool: 0, member: 0 }, sref(1, 0)));
    kv.members[1].config.spill = Some(spill_to(PoolRef { pool: 1, member: 0 }, sref(2, 0)));
    let config = HostConfig {
        attrs: attrs(),
        stages: vec![
            step("engine", 2, engine(100, 8, None)),
            link("pcieA", 2.0),
            link("pcieB", 4.0 / 3.0),
        ],
        pools: vec![host_a, host_b, kv],
        routes: Vec::new(),
    };
    let w = workload(vec![
        sess(0.0, 8, 1, &[(1, 8)]),
        sess(0.0, 8, 1, &[(3, 8)]),
        sess(1.0, 12, 1, &[(2, 12)]),
        sess(2.0, 12, 1, &[(4, 12)]),
    ]);
    let (_, _, lines) = run(config, &w);
    let stores: Vec<Value> = events(&lines, "store")
        .iter()
        .map(|l| json!([l["t"], l["pool"], l["key"]]))
        .collect();
    assert_eq!(
        stores,
        [
            json!([3.0, "hostA", [1, 7]]),
            json!([5.0, "hostA", [1, 3]]),
            json!([5.0, "hostB", [3, 7]]),
            json!([8.0, "hostB", [3, 3]]),
        ]
    );
}
