//! Service counters (R30), worked out by hand: one engine of one seat whose
//! iterations last 1 s, so the admission order is the whole story and every counter
//! can be followed in the comments. Most requests have output 1 (one prefill take:
//! the whole prompt at price 1, finished in its iteration); the last test adds decode
//! takes and a weight.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use build_support::TempDir;
use poolrt::host::LatencySamples;
use poolrt::trace;

/// `QUEUE` is the pool's queue option, `FAIR` its `fair` option.
const SPEC: &str = "
session { tenant = 0; share = 1; }
stage e { step; seats 1; time (1); }
pool kv { cap 100000; block 1; QUEUE FAIR admit via e; }
";

const VTC: &str = "queue by (service, serial);";

/// One request: arrival, prompt, output, tenant, share.
type Request = (f64, u64, u64, u32, u32);

/// The sessions in the order the iterations admit them; requests of output 1 and
/// share 1 under `fair tenant (1, 2)`.
fn admission_order(queue: &str, sessions: &[(f64, u64, u32)]) -> Vec<u64> {
    let requests: Vec<Request> = sessions
        .iter()
        .map(|&(t, prompt, tenant)| (t, prompt, 1, tenant, 1))
        .collect();
    admissions(queue, "fair tenant (1, 2);", &requests)
}

fn admissions(queue: &str, fair: &str, requests: &[Request]) -> Vec<u64> {
    let dir = TempDir::new("fair");
    let path = dir.path.join("w.jsonl");
    let text: String = requests
        .iter()
        .map(|(t, prompt, output, tenant, share)| {
            format!(
                "{{\"arrival\": {t}, \"prompt\": {prompt}, \"output\": {output}, \
                 \"tenant\": {tenant}, \"share\": {share}}}\n"
            )
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let workload = trace::read_path(&path, None).unwrap();
    let spec = SPEC.replace("QUEUE", queue).replace("FAIR", fair);
    let (_, log) = build_support::replay_logged(&spec, &workload, LatencySamples::Exact);
    String::from_utf8(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|v| v.get("admitted").and_then(|a| a.as_array()).cloned())
        .flatten()
        .map(|a| a[0].as_u64().unwrap())
        .collect()
}

#[test]
fn r30_an_arriving_tenant_is_lifted_to_the_least_waiting_counter() {
    // Tenant 0 sends sessions 0–3 at t=0, tenant 1 sessions 4–5 at t=0.5; prompts 4.
    // t=0: only tenant 0 waits; session 0 is admitted and charges c0 = 4.
    // t=0.5: session 4 arrives, nothing of tenant 1 waits: c1 is lifted from 0 to the
    //   least waiting counter, c0 = 4. Session 5 arrives with 4 waiting: no lift.
    // t=1: 1 (4) and 4 (4) tie; serial decides: 1, c0 = 8.  t=2: 4 (4), c1 = 8.
    // t=3: 2 (8) and 5 (8) tie: 2, c0 = 12.  t=4: 5, c1 = 12.  t=5: 3.
    let w = [
        (0.0, 4, 0),
        (0.0, 4, 0),
        (0.0, 4, 0),
        (0.0, 4, 0),
        (0.5, 4, 1),
        (0.5, 4, 1),
    ];
    let vtc = admission_order(VTC, &w);
    assert_eq!(vtc, [0, 1, 4, 2, 5, 3]);
    // Without the lift tenant 1 would start at 0 and go first at t=1 (0, 4, 1, 5,
    // 2, 3); first come first served is 0–5 in order.
    assert_eq!(admission_order("queue fifo;", &w), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn r30_two_backlogged_tenants_stay_within_vtcs_bound() {
    // Tenant 0 asks for prompts of 8, tenant 1 for prompts of 2, all waiting from
    // t=0 (tenant 0's first at 0, then the rest at 0.25 so that no arrival races the
    // first iteration). Every take is a whole prompt at price 1, so a tenant's
    // service is the sum of its admitted prompts. VTC's bound (Sheng et al., OSDI
    // '24, Theorem 4.4) for two backlogged clients: |W0 − W1| ≤ 2U with U = the
    // largest single charge, here 8.
    // t=0: 0 (c0 = 8). The rest arrive at 0.25: tenant 1 (sessions 5–12) is lifted
    //   to c0 = 8 (tenant 0 still waits: 1–4). t=1: 1 (8) and 5 (8) tie: 1, c0 = 16.
    //   t=2..5: 5, 6, 7, 8 (c1 = 10, 12, 14, 16). t=6: 2 (16) and 9 (16): 2, c0 = 24.
    //   t=7..10: 9, 10, 11, 12 (c1 = 24). Then tenant 1 has nothing left: 3, 4.
    let mut w = vec![(0.0, 8, 0)];
    w.extend([(0.25, 8, 0); 4]);
    w.extend([(0.25, 2, 1); 8]);
    let order = admission_order(VTC, &w);
    assert_eq!(order, [0, 1, 5, 6, 7, 8, 2, 9, 10, 11, 12, 3, 4]);
    let prompt = |s: u64| w[s as usize].1 as i64;
    let tenant = |s: u64| w[s as usize].2;
    let (mut served, mut worst) = ([0i64; 2], 0);
    for &s in &order {
        served[tenant(s) as usize] += prompt(s);
        // Both are backlogged until tenant 1's last admission.
        if s <= 12
            && order
                .iter()
                .skip_while(|&&x| x != s)
                .any(|&x| tenant(x) == 1)
        {
            worst = worst.max((served[0] - served[1]).abs());
        }
    }
    assert!(worst <= 2 * 8, "service differs by {worst}");
    // First come first served serves tenant 0's 40 tokens before tenant 1's first.
    let fifo = admission_order("queue fifo;", &w);
    assert_eq!(fifo, (0..13).collect::<Vec<u64>>());
}

#[test]
fn r30_decode_tokens_are_charged_at_their_price_and_divided_by_the_weight() {
    // `fair tenant (1, 2) weight share`. Session 0 (tenant 0, share 2, prompt 4,
    // output 3) is alone at t=0 and holds the one seat until t=3.
    // t=0: its prompt, c0 = 4 · 1 / 2 = 2. t=0.25: session 1 (tenant 1, prompt P)
    //   arrives with nothing waiting: c1 stays 0. t=0.5: session 2 (tenant 0) arrives,
    //   tenant 1 waits: c0 = max(2, c1 = 0) = 2. t=0.6: session 3 (tenant 1) arrives
    //   while session 1 waits: no lift.
    // t=1, t=2: session 0 decodes one token each: c0 = 2 + 2 · 1 / 2 = 3, then 4.
    // t=3: session 1 (c1 = 0) goes first: c1 = P. t=4: session 2 (c0 = 4) against
    //   session 3 (c1 = P).
    let requests = |p: u64| {
        vec![
            (0.0, 4, 3, 0, 2),
            (0.25, p, 1, 1, 1),
            (0.5, 4, 1, 0, 2),
            (0.6, 4, 1, 1, 1),
        ]
    };
    let weighted = "fair tenant (1, 2) weight share;";
    // P = 3: c0 = 4 > 3, so session 3 goes before session 2. Decodes at price 0
    // would leave c0 = 2 < 3 (and first come first served is 0, 1, 2, 3).
    assert_eq!(admissions(VTC, weighted, &requests(3)), [0, 1, 3, 2]);
    assert_eq!(
        admissions(VTC, "fair tenant (1, 0) weight share;", &requests(3)),
        [0, 1, 2, 3]
    );
    // P = 5: c0 = 4 < 5, so session 2 goes first. Without the weight c0 would be
    // 4 + 2 + 2 = 8 > 5, and session 3 would.
    assert_eq!(admissions(VTC, weighted, &requests(5)), [0, 1, 2, 3]);
    assert_eq!(
        admissions(VTC, "fair tenant (1, 2);", &requests(5)),
        [0, 1, 3, 2]
    );
}
