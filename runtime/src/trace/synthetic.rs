//! A seeded synthetic workload with prefix sharing, so that caching matters: Poisson
//! arrivals; most prompts open with one of a few shared "system prompts" (popular
//! ones more often); some sessions continue an earlier conversation, their prompt
//! being that session's whole prompt plus a new tail; every prompt ends with a tail of
//! its own. The generator is SplitMix64 (below), so the same `(n, seed)` gives the same
//! workload on every run and platform, but for the one `ln` of each exponential gap
//! (the platform's libm). It must not read the clock or any outside entropy.

use std::collections::VecDeque;

use super::{Next, SessionSource, SessionSpec, TraceError, Workload};
use crate::types::{Run, RunId, Units};

/// SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of `java.util.
/// SplittableRandom` and xoshiro): a 64-bit counter advanced by the golden-ratio
/// increment, then mixed. Small, fast, every seed valid.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `lo..=hi` (Lemire's multiply-shift; the bias is below 2^-32 for the
    /// small ranges used here).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi - lo + 1;
        lo + ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as u64
    }
}

/// The generator's knobs. `Default` is what [`synthetic`] uses.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticParams {
    /// Mean arrivals per second (exponential gaps).
    pub rate: f64,
    /// Shared system prompts; prompt `k` is picked with probability ∝ `√(k+1) − √k`
    /// (index `⌊roots · u²⌋`), so the first few are popular.
    pub roots: u64,
    /// Length range of a system prompt, tokens.
    pub root_len: (u64, u64),
    /// Fraction of fresh sessions that open with a system prompt.
    pub root_share: f64,
    /// Probability that a session continues one of the `recent` latest sessions.
    pub followup: f64,
    pub recent: usize,
    /// Length range of each prompt's own tail, tokens.
    pub tail_len: (u64, u64),
    /// A continuation whose prompt would exceed this starts fresh instead.
    pub max_prompt: u64,
    /// Output length range, tokens.
    pub output_len: (u64, u64),
}

impl Default for SyntheticParams {
    fn default() -> SyntheticParams {
        SyntheticParams {
            rate: 2.0,
            roots: 8,
            root_len: (256, 2048),
            root_share: 0.8,
            followup: 0.4,
            recent: 32,
            tail_len: (16, 1024),
            max_prompt: 16_384,
            output_len: (1, 256),
        }
    }
}

/// `n` sessions from `seed` with the default knobs.
pub fn synthetic(n: usize, seed: u64) -> Workload {
    synthetic_with(n, seed, &SyntheticParams::default())
}

/// `n` sessions from `seed` with the given knobs: [`Generator`]'s sessions, collected.
pub fn synthetic_with(n: usize, seed: u64, p: &SyntheticParams) -> Workload {
    let mut g = Generator::new(n, seed, p.clone());
    let mut sessions = Vec::with_capacity(n);
    while let Ok(Some(s)) = g.next_session() {
        sessions.push(s.session.clone());
    }
    Workload {
        source: g.source,
        fields: Vec::new(),
        sessions,
    }
}

/// The synthetic workload made one session at a time: it keeps only the latest
/// `recent` sessions (the ones a follow-up may continue), so a replay of millions of
/// sessions holds a few dozen. Run ids: system prompt `k` is run `k + 1`; session
/// `i`'s tail is run `roots + 1 + i` (so runs stay prefix-chained).
pub struct Generator {
    source: String,
    params: SyntheticParams,
    rng: SplitMix64,
    roots: Vec<u64>,
    rate: f64,
    /// Arrival times are divided by it (`Workload::scale_rate`).
    scale: f64,
    t: f64,
    next: usize,
    n: usize,
    /// The latest sessions, oldest first; the last one is the session handed out.
    recent: VecDeque<SessionSpec>,
}

impl Generator {
    pub fn new(n: usize, seed: u64, params: SyntheticParams) -> Generator {
        let mut rng = SplitMix64::new(seed);
        let roots = (0..params.roots)
            .map(|_| rng.range(params.root_len.0, params.root_len.1))
            .collect();
        Generator {
            source: format!("synthetic({n}, seed {seed})"),
            rate: if params.rate > 0.0 { params.rate } else { 1.0 },
            recent: VecDeque::with_capacity(params.recent + 1),
            params,
            rng,
            roots,
            scale: 1.0,
            t: 0.0,
            next: 0,
            n,
        }
    }

    /// The same sessions with every arrival time divided by `factor`, as
    /// `Workload::scale_rate` does.
    pub fn rate_scale(mut self, factor: f64) -> Generator {
        self.scale = factor;
        self
    }
}

impl SessionSource for Generator {
    fn source(&self) -> &str {
        &self.source
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.n as u64)
    }

    fn next_session(&mut self) -> Result<Option<Next<'_>>, TraceError> {
        if self.next == self.n {
            return Ok(None);
        }
        let (p, rng, i) = (&self.params, &mut self.rng, self.next);
        // The oldest session a follow-up can no longer continue gives its buffer to
        // the new one.
        let mut runs = Vec::new();
        while self.recent.len() > p.recent {
            if let Some(old) = self.recent.pop_front() {
                runs = old.runs;
            }
        }
        runs.clear();
        if i > 0 {
            // Exponential gap; `1 − u` is in (0, 1], so the log is finite.
            self.t += -(1.0 - rng.unit()).ln() / self.rate;
        }
        let tail = rng.range(p.tail_len.0, p.tail_len.1);
        let recent = self.recent.len();
        if recent > 0 && rng.unit() < p.followup {
            let back = rng.range(0, recent as u64 - 1) as usize;
            if let Some(parent) = self.recent.iter().rev().nth(back)
                && parent.prompt + tail <= p.max_prompt
            {
                runs.extend_from_slice(&parent.runs);
            }
        }
        if runs.is_empty() && !self.roots.is_empty() && rng.unit() < p.root_share {
            let u = rng.unit();
            let k = ((self.roots.len() as f64 * u * u) as usize).min(self.roots.len() - 1);
            if let Some(&len) = self.roots.get(k) {
                runs.push(Run {
                    id: RunId(k as u64 + 1),
                    len: Units(len),
                });
            }
        }
        runs.push(Run {
            id: RunId(p.roots + 1 + i as u64),
            len: Units(tail),
        });
        let prompt = runs.iter().map(|r| r.len.0).sum();
        let output = rng.range(p.output_len.0, p.output_len.1);
        let arrival = if self.scale == 1.0 {
            self.t
        } else {
            self.t / self.scale
        };
        self.recent.push_back(SessionSpec {
            arrival,
            prompt,
            output,
            runs,
            extra: Vec::new(),
            name: None,
            line: 0,
        });
        self.next += 1;
        Ok(self.recent.back().map(|session| Next {
            session,
            fields: &[],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs for seed 0 of the reference implementation (Vigna's
        // splitmix64.c).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn same_seed_same_workload_and_prefixes_are_shared() {
        let a = synthetic(300, 7);
        assert_eq!(a, synthetic(300, 7));
        assert_ne!(a, synthetic(300, 8));
        let opened_by_root = a.sessions.iter().filter(|s| s.runs[0].id.0 <= 8).count();
        assert!(opened_by_root > 150, "{opened_by_root} of 300 share a root");
        for w in a.sessions.windows(2) {
            assert!(w[0].arrival <= w[1].arrival);
        }
    }
}
