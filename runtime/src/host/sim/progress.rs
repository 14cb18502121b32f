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
use super::session::State;

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

impl Host<'_> {
    /// Called when the replay has run out of events: any session neither finished
    /// nor rejected then can never be (nothing is left to wake a member), which only
    /// a deadlock under `preempt none` produces. Reporting it as an error rather than
    /// as `unfinished` sessions keeps a deadlocked spec from looking good: its few
    /// finished sessions would give it fine latencies.
    pub(super) fn deadlocked(&self) -> Result<(), HostError> {
        let unfinished = self.shared.sess.end() - self.finished - self.rejected;
        if unfinished == 0 {
            return Ok(());
        }
        let residents = self
            .steps
            .iter()
            .flat_map(|st| st.residents.iter().copied());
        // Every session older than the window has ended.
        let rest = self.shared.sess.iter().filter_map(|(s, x)| {
            (!matches!(x.state, State::Done | State::Rejected | State::Resident(_))).then_some(s)
        });
        let mut sessions = Vec::with_capacity(NAMED);
        for s in residents.chain(rest) {
            if sessions.len() == NAMED {
                break;
            }
            sessions.push(s.0);
        }
        Err(HostError::Deadlock {
            since: self.guard.since,
            others: unfinished > sessions.len() as u64,
            sessions,
            unfinished,
        })
    }

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

#[cfg(test)]
mod tests {
    //! The guard alone, on fabricated runs: a livelock that never makes progress
    //! (the case no spec here could produce; docs/RELIABILITY.md says why) is
    //! stopped one iteration past the bound, and its error names the sessions.

    use super::*;

    /// Two sessions preempting each other forever: the guard stops the run at
    /// iteration `bound + 1` and names both, victims first, then the residents.
    #[test]
    fn progress_a_livelock_of_two_sessions_stops_one_past_the_bound_naming_both() {
        let mut guard = Guard::new(5);
        guard.progress(2.0);
        let mut stopped = None;
        for i in 0..100u64 {
            guard.preempted(SessionId(i % 2));
            if let Err(s) = guard.iteration(false, 2.0 + i as f64) {
                stopped = Some((i, s));
                break;
            }
        }
        let (i, stalled) = stopped.expect("the guard stops a run that never progresses");
        assert_eq!(i, 5, "stopped at the sixth iteration without progress");
        let HostError::NoProgress {
            iterations,
            limit,
            since,
            sessions,
            others,
            preemptions,
        } = stalled.error(&[SessionId(7), SessionId(1)])
        else {
            panic!("not a NoProgress error")
        };
        assert_eq!((iterations, limit, since), (6, 5, 2.0));
        assert_eq!((sessions, others, preemptions), (vec![0, 1, 7], false, 6));
    }

    /// Progress resets the count and forgets the victims: a run that progresses
    /// once every `bound` iterations is never stopped.
    #[test]
    fn progress_resets_the_count_and_the_victims() {
        let mut guard = Guard::new(3);
        for i in 0..1000u64 {
            guard.preempted(SessionId(i));
            let progress = i % 4 == 3;
            assert!(
                guard.iteration(progress, i as f64).is_ok(),
                "stopped at {i}"
            );
        }
        assert!(guard.victims.is_empty() && guard.preemptions == 0);
    }

    /// Past eight distinct sessions the error names the first eight and says there
    /// are others.
    #[test]
    fn progress_names_at_most_eight_sessions_and_counts_the_rest() {
        let mut guard = Guard::new(0);
        for s in 0..12 {
            guard.preempted(SessionId(s));
        }
        let Err(stalled) = guard.iteration(false, 1.0) else {
            panic!("a bound of 0 stops the first iteration without progress")
        };
        let HostError::NoProgress {
            sessions, others, ..
        } = stalled.error(&[SessionId(99)])
        else {
            panic!("not a NoProgress error")
        };
        assert_eq!((sessions, others), ((0..8).collect::<Vec<u64>>(), true));
    }
}
