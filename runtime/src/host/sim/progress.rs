//! The no-progress guard (docs/HOST.md, "Progress"; docs/RELIABILITY.md): counts the
//! step iterations since the run last made progress — an output token, a session
//! finished or rejected, or a unit of some session's sequence computed for the first
//! time (beyond its high-water mark; recomputing what a preemption discarded is not
//! progress) — and stops the run once that count passes a bound no run without
//! wasted work can reach. It remembers the sessions preempted since the last
//! progress, to name them. It decides nothing else and changes nothing a run does
//! before it stops.

use crate::types::SessionId;

use super::super::config::HostError;
use super::Host;

/// How many preempted sessions the error names (it counts the rest).
const NAMED: usize = 8;

pub(super) struct Guard {
    /// Step iterations ended since the last progress.
    stalled: u64,
    /// The bound: `stalled` above it stops the run.
    limit: u64,
    /// Simulated time of the last progress.
    since: f64,
    /// Sessions preempted since the last progress: the first [`NAMED`], distinct.
    victims: Vec<SessionId>,
    /// More distinct sessions were preempted than `victims` holds.
    others: bool,
    /// Preemptions since the last progress.
    preemptions: u64,
}

/// Why the guard stopped a run.
pub(super) struct Stalled {
    pub(super) iterations: u64,
    pub(super) limit: u64,
    pub(super) since: f64,
    pub(super) victims: Vec<SessionId>,
    pub(super) others: bool,
    pub(super) preemptions: u64,
}

impl Guard {
    /// A guard that stops a run after more than `limit` iterations without progress.
    pub(super) fn new(limit: u64) -> Guard {
        Guard {
            stalled: 0,
            limit,
            since: 0.0,
            victims: Vec::with_capacity(NAMED),
            others: false,
            preemptions: 0,
        }
    }

    /// The run made progress at `t`.
    pub(super) fn progress(&mut self, t: f64) {
        self.stalled = 0;
        self.since = t;
        self.victims.clear();
        self.others = false;
        self.preemptions = 0;
    }

    pub(super) fn preempted(&mut self, s: SessionId) {
        self.preemptions += 1;
        if !self.victims.contains(&s) {
            if self.victims.len() < NAMED {
                self.victims.push(s);
            } else {
                self.others = true;
            }
        }
    }

    /// A step iteration ended at `t`, having made progress or not.
    pub(super) fn iteration(&mut self, progress: bool, t: f64) -> Result<(), Stalled> {
        if progress {
            self.progress(t);
            return Ok(());
        }
        self.stalled += 1;
        if self.stalled <= self.limit {
            return Ok(());
        }
        Err(Stalled {
            iterations: self.stalled,
            limit: self.limit,
            since: self.since,
            victims: self.victims.clone(),
            others: self.others,
            preemptions: self.preemptions,
        })
    }
}

impl Stalled {
    /// The error, naming the sessions preempted since the last progress and then
    /// the residents of the member whose iteration passed the bound, at most
    /// [`NAMED`] in all.
    pub(super) fn error(self, residents: &[SessionId]) -> HostError {
        let mut sessions = self.victims;
        let mut others = self.others;
        for &r in residents {
            if !sessions.contains(&r) {
                if sessions.len() < NAMED {
                    sessions.push(r);
                } else {
                    others = true;
                }
            }
        }
        HostError::NoProgress {
            iterations: self.iterations,
            limit: self.limit,
            since: self.since,
            sessions: sessions.iter().map(|s| s.0).collect(),
            others,
            preemptions: self.preemptions,
        }
    }
}

impl Host {
    /// The bound of docs/HOST.md, "Progress": the seats of every step member plus
    /// the cap, in units, of every bounded pool it serves, summed over the members.
    /// Without a preemption a run cannot go that many iterations without progress;
    /// an unbounded pool never preempts, so it adds nothing.
    pub(super) fn progress_bound(&self) -> u64 {
        let mut bound = 0u64;
        for st in self.steps.iter() {
            bound = bound.saturating_add(st.seats as u64);
            for &p in &st.pools {
                bound = bound.saturating_add(self.info[p].cap_units.unwrap_or(0));
            }
        }
        bound
    }
}
