//! Time series of a run for charts, in bounded memory: an [`Observer`] that folds every
//! stage iteration into buckets of simulated time — the waiting queue, the residents,
//! KV allocated and cached (time-weighted means over each bucket), and the prefix
//! hit rate of the first admissions in it — and keeps each finished session's TTFT
//! and E2E for their distributions. It holds at most [`MAX_BUCKETS`] buckets whatever
//! the run's length: when time runs past the last one, neighbours merge pairwise and
//! the width doubles, so a bucket is never narrower than the run needs nor the
//! series longer than a chart can show. It only watches; it draws nothing (the
//! compiler's `tools::chart` does) and changes nothing in the run.
//!
//! Totals are over the whole fleet: each stage member's latest figures (for the
//! pools it serves) are kept and summed, so a spec of replicas charts all of them.

use std::io;

use super::observe::{Iteration, Latency, Observer};

/// The most buckets a series holds; the least after a merge is half of it.
pub(crate) const MAX_BUCKETS: usize = 512;

/// The width of a bucket before any merge, seconds of simulated time.
const FIRST_WIDTH: f64 = 0.25;

/// One bucket: integrals over the time it covers, and the admissions in it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    /// Seconds of the bucket the integrals cover (less than its width only at the
    /// run's end).
    covered: f64,
    waiting: f64,
    residents: f64,
    allocated: f64,
    cached: f64,
    /// First admissions: units hit in the pool, in its tier, and prompt units.
    hit: u64,
    tier_hit: u64,
    prompt: u64,
}

impl Bucket {
    fn merge(self, o: Bucket) -> Bucket {
        Bucket {
            covered: self.covered + o.covered,
            waiting: self.waiting + o.waiting,
            residents: self.residents + o.residents,
            allocated: self.allocated + o.allocated,
            cached: self.cached + o.cached,
            hit: self.hit + o.hit,
            tier_hit: self.tier_hit + o.tier_hit,
            prompt: self.prompt + o.prompt,
        }
    }
}

/// The fleet's state between two iteration ends.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    waiting: u64,
    residents: u64,
    allocated: u64,
    cached: u64,
}

/// A stage member's latest figures.
#[derive(Debug)]
struct Member {
    name: String,
    state: State,
}

/// The observer. Feed it a run (as [`super::RunOptions::observer`]), then read
/// [`Series::points`] with the run's simulated end.
#[derive(Debug)]
pub struct Series {
    width: f64,
    buckets: Vec<Bucket>,
    /// The fleet's totals since `since`.
    now: State,
    since: f64,
    members: Vec<Member>,
    ttft: Vec<f64>,
    e2e: Vec<f64>,
}

impl Default for Series {
    fn default() -> Self {
        Series::new()
    }
}

/// One bucket as a chart reads it: its middle in simulated seconds and its means.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeriesPoint {
    pub t: f64,
    pub waiting: f64,
    pub residents: f64,
    pub allocated: f64,
    pub cached: f64,
    /// Hit units over prompt units of the bucket's first admissions (`None`: none
    /// was admitted in it); `with_tier` adds the units found in a tier.
    pub hit_rate: Option<f64>,
    pub with_tier: Option<f64>,
}

impl Series {
    pub fn new() -> Series {
        Series {
            width: FIRST_WIDTH,
            buckets: Vec::with_capacity(MAX_BUCKETS),
            now: State::default(),
            since: 0.0,
            members: Vec::new(),
            ttft: Vec::new(),
            e2e: Vec::new(),
        }
    }

    /// The index of the bucket holding time `t`, merging neighbours (and doubling
    /// the width) until it lies within [`MAX_BUCKETS`], and making it exist.
    fn index(&mut self, t: f64) -> usize {
        let mut i = (t / self.width) as usize;
        while i >= MAX_BUCKETS {
            self.buckets = self
                .buckets
                .chunks(2)
                .map(|pair| pair.iter().fold(Bucket::default(), |a, &b| a.merge(b)))
                .collect();
            self.width *= 2.0;
            i = (t / self.width) as usize;
        }
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, Bucket::default());
        }
        i
    }

    fn bucket_mut(&mut self, i: usize) -> &mut Bucket {
        self.buckets.get_mut(i).expect("index() made the bucket")
    }

    /// Integrates the fleet's current state from `since` to `t`, bucket by bucket.
    /// Times never go backwards.
    fn advance(&mut self, t: f64) {
        if t <= self.since {
            return;
        }
        // Reaching `t` first, so that the width is final for the whole stretch.
        let last = self.index(t);
        let s = self.now;
        let mut from = self.since;
        for i in ((from / self.width) as usize)..=last {
            let to = (((i + 1) as f64) * self.width).min(t);
            let d = (to - from).max(0.0);
            let b = self.bucket_mut(i);
            b.covered += d;
            b.waiting += s.waiting as f64 * d;
            b.residents += s.residents as f64 * d;
            b.allocated += s.allocated as f64 * d;
            b.cached += s.cached as f64 * d;
            from = from.max(to);
        }
        self.since = t;
    }

    /// The buckets up to `end` (the run's simulated seconds), oldest first; a bucket
    /// that nothing covered is left out.
    pub fn points(&mut self, end: f64) -> Vec<SeriesPoint> {
        self.advance(end);
        let width = self.width;
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, b)| b.covered > 0.0)
            .map(|(i, b)| {
                let mean = |v: f64| v / b.covered;
                let rate = |h: u64| (b.prompt > 0).then(|| h as f64 / b.prompt as f64);
                SeriesPoint {
                    t: (i as f64 + 0.5) * width,
                    waiting: mean(b.waiting),
                    residents: mean(b.residents),
                    allocated: mean(b.allocated),
                    cached: mean(b.cached),
                    hit_rate: rate(b.hit),
                    with_tier: rate(b.hit + b.tier_hit),
                }
            })
            .collect()
    }

    /// Each session's time to first token, seconds, in the order they came.
    pub fn ttft(&self) -> &[f64] {
        &self.ttft
    }

    /// Each finished session's end-to-end latency, seconds.
    pub fn e2e(&self) -> &[f64] {
        &self.e2e
    }
}

impl Observer for Series {
    fn iteration(&mut self, it: &Iteration<'_>) -> io::Result<()> {
        self.advance(it.end);
        let state = State {
            waiting: it.waiting,
            residents: it.residents,
            allocated: it.allocated.iter().map(|u| u.0).sum(),
            cached: it.cached.iter().map(|u| u.0).sum(),
        };
        let old = match self.members.iter_mut().find(|m| m.name == it.stage) {
            Some(m) => std::mem::replace(&mut m.state, state),
            None => {
                self.members.push(Member {
                    name: it.stage.to_string(),
                    state,
                });
                State::default()
            }
        };
        let n = &mut self.now;
        n.waiting = n.waiting - old.waiting + state.waiting;
        n.residents = n.residents - old.residents + state.residents;
        n.allocated = n.allocated - old.allocated + state.allocated;
        n.cached = n.cached - old.cached + state.cached;
        let (mut hit, mut tier_hit, mut prompt) = (0, 0, 0);
        for a in it.admitted.iter().filter(|a| !a.resumed) {
            hit += a.hit.0;
            tier_hit += a.tier_hit.0;
            prompt += a.prompt.0;
        }
        if prompt > 0 {
            let i = self.index(it.end);
            let b = self.bucket_mut(i);
            b.hit += hit;
            b.tier_hit += tier_hit;
            b.prompt += prompt;
        }
        Ok(())
    }

    fn latency(&mut self, latency: &Latency) -> io::Result<()> {
        match *latency {
            Latency::FirstToken { ttft, .. } => self.ttft.push(ttft),
            Latency::Finished { e2e, .. } => self.e2e.push(e2e),
            Latency::Token { .. } => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::host::observe::Admitted;
    use crate::types::{SessionId, Units};

    fn iteration<'a>(
        stage: &'a str,
        end: f64,
        waiting: u64,
        alloc: &'a [Units],
        admitted: &'a [Admitted],
    ) -> Iteration<'a> {
        Iteration {
            step: 0,
            stage,
            start: end,
            end,
            admitted,
            cont: &[],
            decode: 0,
            preempted: &[],
            finished: &[],
            tokens: 0,
            residents: 1,
            waiting,
            allocated: alloc,
            cached: alloc,
        }
    }

    /// The means are time-weighted: a state held 3 s of a 4 s stretch weighs 3/4,
    /// whatever the number of iterations that reported it.
    #[test]
    fn bucket_means_weigh_state_by_time_held() {
        let mut s = Series::new();
        s.width = 4.0;
        let a = [Units(100)];
        // 0..1: nothing (state 0); at 1 the queue holds 8; reported again at 2 and 3.
        s.iteration(&iteration("e", 1.0, 8, &a, &[])).unwrap();
        s.iteration(&iteration("e", 2.0, 8, &a, &[])).unwrap();
        s.iteration(&iteration("e", 3.0, 8, &a, &[])).unwrap();
        let p = s.points(4.0);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].t, 2.0);
        assert_eq!(p[0].waiting, 8.0 * 3.0 / 4.0);
        assert_eq!(p[0].allocated, 100.0 * 3.0 / 4.0);
        assert_eq!(p[0].hit_rate, None);
    }

    /// Stage members are summed by their latest figures: engine[1] reporting twice
    /// does not count twice.
    #[test]
    fn fleet_totals_sum_each_members_latest_figures() {
        let mut s = Series::new();
        s.width = 1.0;
        s.iteration(&iteration("e[0]", 0.0, 2, &[Units(10)], &[]))
            .unwrap();
        s.iteration(&iteration("e[1]", 0.0, 3, &[Units(20)], &[]))
            .unwrap();
        s.iteration(&iteration("e[1]", 0.0, 1, &[Units(5)], &[]))
            .unwrap();
        let p = s.points(1.0);
        assert_eq!(p[0].waiting, 3.0);
        assert_eq!(p[0].allocated, 15.0);
        assert_eq!(p[0].residents, 2.0);
    }

    /// The hit rate counts first admissions only, by units, per bucket.
    #[test]
    fn hit_rate_is_units_hit_over_prompt_units_of_first_admissions() {
        let adm = |hit, tier, prompt, resumed| Admitted {
            session: SessionId(0),
            resumed,
            hit: Units(hit),
            tier_hit: Units(tier),
            prompt: Units(prompt),
            tokens: 0,
        };
        let mut s = Series::new();
        s.width = 1.0;
        let a = [
            adm(16, 0, 64, false),
            adm(32, 16, 64, false),
            adm(999, 0, 999, true),
        ];
        s.iteration(&iteration("e", 0.5, 0, &[Units(0)], &a))
            .unwrap();
        let p = s.points(1.0);
        assert_eq!(p[0].hit_rate, Some(48.0 / 128.0));
        assert_eq!(p[0].with_tier, Some(64.0 / 128.0));
    }

    /// However long the run, the series stays within MAX_BUCKETS, and merging keeps
    /// the integrals: the time-weighted mean over the whole run is unchanged.
    #[test]
    fn series_is_bounded_and_merging_keeps_integrals() {
        let mut s = Series::new();
        let a = [Units(7)];
        let mut t = 0.0;
        for k in 0..100_000u64 {
            t += 0.37;
            s.iteration(&iteration("e", t, k % 5, &a, &[])).unwrap();
        }
        let end = t + 1.0;
        let p = s.points(end);
        assert!(s.buckets.len() <= MAX_BUCKETS);
        assert!(p.len() > MAX_BUCKETS / 4);
        let covered: f64 = s.buckets.iter().map(|b| b.covered).sum();
        assert!((covered - end).abs() < 1e-6 * end);
        // Exact integral: queue k%5 held from iteration k's end to the next one.
        let mut want = 0.0;
        for k in 0..100_000u64 {
            let held = if k == 99_999 { 1.0 } else { 0.37 };
            want += (k % 5) as f64 * held;
        }
        let got: f64 = s.buckets.iter().map(|b| b.waiting).sum();
        assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
    }
}
