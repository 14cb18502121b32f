//! The report of a finished run: per pool its counters, hit and tier-hit rates and
//! occupancy; per stage and link their totals; the sessions' latency percentiles from
//! the report's [`super::Samples`]. It reads the host's state once, at the end, and
//! changes nothing a replay decides.

use super::super::percentile::Latencies;
use super::super::report::{HandoffReport, LinkReport, PoolReport, Report, StageReport, ratio};
use super::{Host, StepIx};

impl Host<'_> {
    // ----- the report -------------------------------------------------------------------

    pub(super) fn report(mut self) -> Report {
        let end = self.now;
        let mut pools = Vec::with_capacity(self.info.len());
        let (mut hit, mut prompt, mut tier_units) = (0u64, 0u64, 0u64);
        let mut r = Report {
            source: self.src_name.clone(),
            sessions: self.shared.sess.end(),
            ..Report::default()
        };
        let ttfts: Vec<_> = self
            .info
            .iter_mut()
            .map(|i| match i.ttft {
                Latencies::Unkept => None,
                ref mut l => Some(l.percentiles()),
            })
            .collect();
        for ((p, info), ttft) in self.info.keys().zip(self.info.iter()).zip(ttfts) {
            let c = self.pools[p].counters();
            // A tier's hit rate: units first admissions loaded from it, over the
            // prompt units of first admissions into the pools that spill into it.
            let (from, over) = self
                .info
                .iter()
                .filter(|q| q.tier == Some(p))
                .fold((0, 0), |(a, b), q| (a + q.tier_new, b + q.prompt_new));
            let entry = !info.served_by.is_empty() && !info.is_target;
            if entry {
                hit += info.hit_new;
                prompt += info.prompt_new;
                tier_units += info.tier_new;
            }
            r.admissions += c.admissions;
            r.preemptions += c.preemptions;
            r.evictions += c.evictions;
            r.spills += c.spills;
            r.tier_loads += c.tier_loads;
            pools.push(PoolReport {
                name: info.name.clone(),
                cap: info.cap_units,
                block: info.block,
                entry,
                tier: info.is_tier,
                sessions: info.sessions,
                rejected: c.rejected + info.host_rejected,
                admissions: c.admissions,
                resumed_admissions: info.resumed_admissions,
                preemptions: c.preemptions,
                evictions: c.evictions,
                spills: c.spills,
                spills_skipped: info.spills_skipped,
                stored: c.stored,
                tier_loads: c.tier_loads,
                tier_load_units: c.tier_load_units,
                hit_units: info.hit_new,
                prompt_units: info.prompt_new,
                hit_rate: ratio(info.hit_new, info.prompt_new),
                tier_hit_rate: if info.is_tier {
                    ratio(from, over)
                } else {
                    ratio(info.tier_new, info.prompt_new)
                },
                resumed_hit_units: info.hit_resumed,
                peak_allocated: info.allocated.peak(),
                mean_allocated: info.allocated.mean(end),
                peak_used: info.used.peak(),
                mean_used: info.used.mean(end),
                busy_fraction: match (&ttft, info.served_by.is_empty(), end > 0.0) {
                    (Some(_), false, true) => {
                        let busy: f64 = info.served_by.iter().map(|&m| self.steps[m].busy).sum();
                        Some(busy / (info.served_by.len() as f64 * end))
                    }
                    _ => None,
                },
                ttft,
            });
        }
        r.finished = self.finished;
        r.rejected = self.rejected;
        r.unfinished = self.shared.sess.end() - self.finished - self.rejected;
        r.sim_seconds = end;
        r.output_tokens = self.output_tokens;
        r.computed_tokens = self.computed_tokens;
        r.tokens_per_second = if end > 0.0 {
            self.output_tokens as f64 / end
        } else {
            0.0
        };
        r.ttft = self.samples.ttft.percentiles();
        r.itl = self.samples.itl.percentiles();
        r.e2e = self.samples.e2e.percentiles();
        r.hit_rate = ratio(hit, prompt);
        r.tier_hit_rate = ratio(tier_units, prompt);
        r.pools = pools;
        r.stages = self
            .steps
            .iter()
            .map(|s| StageReport {
                name: s.name.clone(),
                iterations: s.iterations,
                busy_seconds: s.busy,
                tokens: s.tokens,
                peak_residents: s.peak_residents,
            })
            .collect();
        r.links = self
            .links
            .iter()
            .map(|l| LinkReport {
                name: l.name.clone(),
                writes: l.writes,
                loads: l.loads,
                handoffs: l.handoffs,
                work: l.work,
                busy_seconds: l.busy,
            })
            .collect();
        r.handoff = self.handoff_report(end);
        r
    }

    /// The handoffs' figures (R25–R27); `None` when no pool hands off.
    fn handoff_report(&self, end: f64) -> Option<HandoffReport> {
        if self.targets.is_empty() {
            return None;
        }
        let h = &self.handoffs;
        let n = h.first_tokens;
        let mean = |x: f64| (n > 0).then(|| x / n as f64);
        // Busy seconds over member-seconds of the step members admitting pools `side`
        // picks, or of the links handoffs use.
        let busy = |members: Vec<f64>| {
            (end > 0.0 && !members.is_empty())
                .then(|| members.iter().sum::<f64>() / (members.len() as f64 * end))
        };
        // Each step member once, whatever number of pool members it serves.
        let mut prefill = Vec::new();
        let mut decode = Vec::new();
        for info in self.info.iter() {
            let side = if info.is_target {
                &mut decode
            } else if info.handoff.is_some() {
                &mut prefill
            } else {
                continue;
            };
            side.extend(info.served_by.iter().map(|m| m.0));
        }
        let busy_of = |mut members: Vec<u32>| {
            members.sort_unstable();
            members.dedup();
            busy(
                members
                    .into_iter()
                    .map(|m| self.steps[StepIx(m)].busy)
                    .collect(),
            )
        };
        let mut links: Vec<_> = self
            .info
            .iter()
            .filter_map(|i| i.handoff.as_ref().map(|h| h.link))
            .collect();
        links.sort_by_key(|l| l.0);
        links.dedup();
        Some(HandoffReport {
            handoffs: h.handoffs,
            transfers: h.transfers,
            units: h.units,
            count: n,
            ttft_mean: mean(h.parts.iter().sum()),
            queue: mean(h.parts[0]),
            prefill: mean(h.parts[1]),
            decode_queue: mean(h.parts[2]),
            transfer: mean(h.parts[3]),
            first_decode: mean(h.parts[4]),
            prefill_busy: busy_of(prefill),
            decode_busy: busy_of(decode),
            link_busy: busy(links.iter().map(|&l| self.links[l].busy).collect()),
        })
    }
}
