//! The report of a replay: what a reader of `poolc run` wants to know, as one
//! serde-serializable struct, and the small accumulators that build it (latency
//! samples, time-weighted occupancy). Percentiles are nearest-rank, read from bounded
//! sketches or exact lists (percentile.rs, docs/HOST.md). It
//! must hold nothing that varies between identical runs: no wall clock, no hash-map
//! order; members are listed in declaration order.

use std::io;

use serde::Serialize;

use super::observe::{Latency, Observer};
use super::percentile::Latencies;

/// The report's latency samples: the observer every run has, fed each session's
/// [`Latency`] moments as the host tells them, into bounded sketches or, with
/// `LatencySamples::Exact`, exact lists whose sizes have known bounds (one
/// TTFT and one E2E per session, one ITL per later token) reserved when the run
/// starts, so that a warm replay does not reallocate.
#[derive(Debug)]
pub(crate) struct Samples {
    pub ttft: Latencies,
    pub itl: Latencies,
    pub e2e: Latencies,
}

impl Samples {
    /// Exact lists reserving `sessions` TTFT and E2E values and `gaps` ITL values.
    pub(crate) fn exact(sessions: usize, gaps: usize) -> Samples {
        Samples {
            ttft: Latencies::exact(sessions),
            itl: Latencies::exact(gaps),
            e2e: Latencies::exact(sessions),
        }
    }

    /// Nothing kept (`LatencySamples::Unkept`).
    pub(crate) fn unkept() -> Samples {
        Samples {
            ttft: Latencies::Unkept,
            itl: Latencies::Unkept,
            e2e: Latencies::Unkept,
        }
    }

    /// Bounded sketches.
    pub(crate) fn sketch() -> Samples {
        Samples {
            ttft: Latencies::sketch(),
            itl: Latencies::sketch(),
            e2e: Latencies::sketch(),
        }
    }

    /// `n` inter-token latencies of `itl` seconds each, as `n` [`Latency::Token`]
    /// moments would record them.
    pub(crate) fn tokens(&mut self, itl: f64, n: u64) {
        self.itl.push_n(itl, n);
    }
}

impl Observer for Samples {
    fn latency(&mut self, latency: &Latency) -> io::Result<()> {
        match *latency {
            Latency::FirstToken { ttft, .. } => self.ttft.push(ttft),
            Latency::Token { itl, .. } => self.itl.push(itl),
            Latency::Finished { e2e, .. } => self.e2e.push(e2e),
        }
        Ok(())
    }
}

/// p50/p90/p99 of a sample, nearest-rank: the p-th percentile of `n` sorted values
/// is the value at 1-based rank `⌈p/100 · n⌉`. `None` for an empty sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Percentiles {
    /// Sorts `values` (total order) and reads the percentiles.
    pub fn of(values: &mut [f64]) -> Percentiles {
        sort_total(values);
        let n = values.len();
        let rank = |p: u64| -> Option<f64> {
            if n == 0 {
                return None;
            }
            // ⌈p·n/100⌉ in integers, at least 1.
            let r = ((p as usize * n).div_ceil(100)).max(1);
            values.get(r - 1).copied()
        };
        Percentiles {
            count: n as u64,
            mean: (n > 0).then(|| values.iter().sum::<f64>() / n as f64),
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
        }
    }
}

/// Sorts by `f64::total_cmp`, fast: as integers whose order is the total order
/// (the sign bit flipped, and the other bits too for negatives), unstably — values
/// equal in the total order have equal bits, so the result is the same as a stable
/// sort's. A replay has millions of inter-token latencies to sort.
fn sort_total(values: &mut [f64]) {
    let key = |x: f64| {
        let b = x.to_bits();
        if b >> 63 == 1 { !b } else { b | 1 << 63 }
    };
    let unkey = |k: u64| f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k });
    let mut keys: Vec<u64> = values.iter().map(|&x| key(x)).collect();
    keys.sort_unstable();
    for (v, k) in values.iter_mut().zip(keys) {
        *v = unkey(k);
    }
}

/// One pool member's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PoolReport {
    pub name: String,
    /// Units; `None` when unbounded.
    pub cap: Option<u64>,
    pub block: u64,
    /// Whether sessions are routed here (it is admitted via a step stage), and
    /// whether another pool spills into it.
    pub entry: bool,
    pub tier: bool,
    /// Sessions routed here, and those refused (R5, or never able to finish).
    pub sessions: u64,
    pub rejected: u64,
    pub admissions: u64,
    pub resumed_admissions: u64,
    pub preemptions: u64,
    pub evictions: u64,
    /// Evicted blocks written to a tier, and those not written because the tier
    /// already held that block.
    pub spills: u64,
    pub spills_skipped: u64,
    /// Blocks this pool accepted as a tier.
    pub stored: u64,
    /// Admissions here that loaded blocks from the tier, and the units loaded.
    pub tier_loads: u64,
    pub tier_load_units: u64,
    /// First admissions only: units hit here, prompt units, and their ratio.
    pub hit_units: u64,
    pub prompt_units: u64,
    pub hit_rate: Option<f64>,
    /// First admissions only: units loaded from the tier over prompt units.
    pub tier_hit_rate: Option<f64>,
    /// Units hit by resumed (preempted) sessions re-admitted.
    pub resumed_hit_units: u64,
    /// Allocated units: peak, and mean over simulated time.
    pub peak_allocated: u64,
    pub mean_allocated: f64,
    /// Allocated plus cached units.
    pub peak_used: u64,
    pub mean_used: f64,
    /// In a fleet (several entry members): the TTFT of the sessions routed to this
    /// member, from a bounded sketch (docs/HOST.md, "Percentiles"); `None` elsewhere.
    pub ttft: Option<Percentiles>,
    /// In a fleet: the busy fraction of the step members that admit this member
    /// (their busy seconds over theirs in all, of the simulated time); `None`
    /// elsewhere.
    pub busy_fraction: Option<f64>,
}

/// One step-stage member's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StageReport {
    pub name: String,
    pub iterations: u64,
    /// Seconds spent in iterations.
    pub busy_seconds: f64,
    pub tokens: u64,
    pub peak_residents: u64,
}

/// One link member's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkReport {
    pub name: String,
    /// Spill writes, tier loads and handoff transfers (R26) served.
    pub writes: u64,
    pub loads: u64,
    pub handoffs: u64,
    pub work: f64,
    pub busy_seconds: f64,
}

/// What the handoffs did (R25–R27): counts, the TTFT of the handed-off sessions in
/// five parts whose means add up to their mean TTFT, and how busy each side was.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HandoffReport {
    /// Sessions handed off, transfers completed into a decode member (not made void
    /// by a preemption there), and prompt units read over the links.
    pub handoffs: u64,
    pub transfers: u64,
    pub units: u64,
    /// Handed-off sessions with a first token, and their mean TTFT, seconds.
    pub count: u64,
    pub ttft_mean: Option<f64>,
    /// Its parts, means in seconds: arrival to first admission on the prefill side,
    /// to the prompt computed there, to the admission on the decode side, to the end
    /// of the transfer, to the first token.
    pub queue: Option<f64>,
    pub prefill: Option<f64>,
    pub decode_queue: Option<f64>,
    pub transfer: Option<f64>,
    pub first_decode: Option<f64>,
    /// Busy fraction of the step members admitting the prefill (entry) pools, of
    /// those admitting the decode (target) pools, and of the links handoffs use.
    pub prefill_busy: Option<f64>,
    pub decode_busy: Option<f64>,
    pub link_busy: Option<f64>,
}

/// The report of one replay. Same config and workload → the same report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub source: String,
    pub sessions: u64,
    pub finished: u64,
    pub rejected: u64,
    /// Neither finished nor rejected when nothing could happen any more (a
    /// deadlock of the spec, e.g. `preempt none` with every resident waiting to
    /// grow). Only a run with `RunOptions::allow_unfinished` reports one; any other
    /// fails with `HostError::Deadlock` instead, so this is 0 there.
    pub unfinished: u64,
    /// Time of the last event, seconds from the workload's start.
    pub sim_seconds: f64,
    /// Output tokens generated, and per simulated second.
    pub output_tokens: u64,
    pub tokens_per_second: f64,
    /// Tokens the step stages computed (prefill, recompute and decode).
    pub computed_tokens: u64,
    /// Seconds from arrival to the first output token.
    pub ttft: Percentiles,
    /// Seconds between consecutive output tokens of a session (all gaps pooled).
    pub itl: Percentiles,
    /// Seconds from arrival to the last output token.
    pub e2e: Percentiles,
    /// Entry pools, first admissions: units hit over prompt units.
    pub hit_rate: Option<f64>,
    /// Entry pools, first admissions: units loaded from tiers over prompt units.
    pub tier_hit_rate: Option<f64>,
    pub admissions: u64,
    pub preemptions: u64,
    pub evictions: u64,
    pub spills: u64,
    pub tier_loads: u64,
    pub pools: Vec<PoolReport>,
    pub stages: Vec<StageReport>,
    pub links: Vec<LinkReport>,
    /// `None` unless some pool hands off (R25).
    pub handoff: Option<HandoffReport>,
}

impl Report {
    /// The report as one line of JSON (what `--json` prints).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The report as aligned text for a terminal.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let ms = |x: Option<f64>| match x {
            None => "-".to_string(),
            Some(v) if v >= 10.0 => format!("{v:.1} s"),
            Some(v) => format!("{:.1} ms", v * 1e3),
        };
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.2}%", v * 100.0));
        let lat = |name: &str, p: &Percentiles| {
            format!(
                "{name:<6} p50 {:>11}   p90 {:>11}   p99 {:>11}\n",
                ms(p.p50),
                ms(p.p90),
                ms(p.p99)
            )
        };
        let _ = writeln!(s, "workload     {}", self.source);
        let _ = writeln!(
            s,
            "sessions     {} finished, {} rejected, {} unfinished (of {})",
            self.finished, self.rejected, self.unfinished, self.sessions
        );
        let _ = writeln!(s, "simulated    {:.3} s", self.sim_seconds);
        let _ = writeln!(
            s,
            "throughput   {:.1} output tokens/s ({} output, {} computed tokens)",
            self.tokens_per_second, self.output_tokens, self.computed_tokens
        );
        s.push_str(&lat("ttft", &self.ttft));
        s.push_str(&lat("itl", &self.itl));
        s.push_str(&lat("e2e", &self.e2e));
        let _ = writeln!(
            s,
            "prefix hits  {} of prompt units (tiers: {})",
            pct(self.hit_rate),
            pct(self.tier_hit_rate)
        );
        let _ = writeln!(
            s,
            "events       {} admissions, {} preemptions, {} evictions, {} spills, {} tier loads",
            self.admissions, self.preemptions, self.evictions, self.spills, self.tier_loads
        );
        for p in &self.pools {
            let _ = writeln!(
                s,
                "pool {:<10} hit {:>7}  peak {} / mean {:.0} allocated, peak {} / mean {:.0} \
                 with cache, cap {}",
                p.name,
                pct(if p.tier { p.tier_hit_rate } else { p.hit_rate }),
                p.peak_allocated,
                p.mean_allocated,
                p.peak_used,
                p.mean_used,
                p.cap.map_or("inf".to_string(), |c| c.to_string())
            );
        }
        for p in self.pools.iter().filter(|p| p.ttft.is_some()) {
            let t = p.ttft.unwrap_or_default();
            let _ = writeln!(
                s,
                "member {:<8} {} sessions, hit {}, tier {}, {} preemptions, busy {}, ttft p50 {} \
                 p99 {}",
                p.name,
                p.sessions,
                pct(p.hit_rate),
                pct(p.tier_hit_rate),
                p.preemptions,
                pct(p.busy_fraction),
                ms(t.p50),
                ms(t.p99)
            );
        }
        if let Some(h) = &self.handoff {
            let _ = writeln!(
                s,
                "handoff      {} sessions, {} transfers, {} units read; busy prefill {}, decode \
                 {}, links {}",
                h.handoffs,
                h.transfers,
                h.units,
                pct(h.prefill_busy),
                pct(h.decode_busy),
                pct(h.link_busy)
            );
            let _ = writeln!(
                s,
                "ttft split   mean {} = queue {} + prefill {} + decode queue {} + transfer {} + \
                 first decode {}",
                ms(h.ttft_mean),
                ms(h.queue),
                ms(h.prefill),
                ms(h.decode_queue),
                ms(h.transfer),
                ms(h.first_decode)
            );
        }
        for st in &self.stages {
            let _ = writeln!(
                s,
                "stage {:<9} {} iterations, busy {:.3} s, {} tokens, peak {} residents",
                st.name, st.iterations, st.busy_seconds, st.tokens, st.peak_residents
            );
        }
        for l in &self.links {
            let _ = writeln!(
                s,
                "link {:<10} {} writes, {} loads, {} handoffs, busy {:.3} s",
                l.name, l.writes, l.loads, l.handoffs, l.busy_seconds
            );
        }
        s
    }
}

/// Time-weighted occupancy of one value (a pool's allocated or used units).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Occupancy {
    value: u64,
    since: f64,
    area: f64,
    peak: u64,
}

impl Occupancy {
    /// Accounts for the value held from the last change until `now`.
    pub fn advance(&mut self, now: f64) {
        if now > self.since {
            self.area += self.value as f64 * (now - self.since);
            self.since = now;
        }
    }

    pub fn set(&mut self, value: u64) {
        self.value = value;
        self.peak = self.peak.max(value);
    }

    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// Mean over `[0, end]`.
    pub fn mean(&self, end: f64) -> f64 {
        if end > 0.0 {
            self.area / end
        } else {
            self.value as f64
        }
    }
}

/// `num / den` as a rate, `None` when `den` is 0.
pub(crate) fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=10).map(f64::from).rev().collect();
        let p = Percentiles::of(&mut v);
        assert_eq!((p.p50, p.p90, p.p99), (Some(5.0), Some(9.0), Some(10.0)));
        assert_eq!(p.mean, Some(5.5));
        let p = Percentiles::of(&mut [7.0]);
        assert_eq!((p.p50, p.p90, p.p99), (Some(7.0), Some(7.0), Some(7.0)));
        let p = Percentiles::of(&mut []);
        assert_eq!((p.count, p.p50), (0, None));
    }

    #[test]
    fn integer_sort_is_the_total_order() {
        let mut v = vec![
            3.5,
            -0.0,
            0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -2.0,
            1e-300,
            -1e-300,
            3.5,
            f64::MIN_POSITIVE,
        ];
        let mut want = v.clone();
        want.sort_by(f64::total_cmp);
        sort_total(&mut v);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&v), bits(&want));
    }
}
