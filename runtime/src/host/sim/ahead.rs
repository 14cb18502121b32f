//! Runs of iterations whose outcome is known in advance (docs/HOST.md, "Runs known
//! in advance"; issue #16 item 2): when nobody reads pool events, a
//! step member whose next iterations can only be decodes — every resident decoding
//! with room for its token, nothing waiting to be admitted or to grow — runs them
//! back to back in one call, outside the event queue, for as long as no other event
//! or arrival comes first. Each iteration's start is the residents' grows (the same
//! pool operations, at the same time, in the same order, as [`Host::residents_pass`]
//! would make) without the admission attempts, retries, hold lookups and
//! per-operation refreshes around them; its end is [`Host::end_iteration`] itself.
//! It decides nothing a rule decides: an iteration that is not provably of that
//! shape is left to the ordinary path, which also reports every error.

use crate::pool::Grown;
use crate::types::Units;

use super::super::config::HostError;
use super::session::StageQ;
use super::step::{Counts, Take, TakeKind, Takers};
use super::{Class, Host, Io, StepIx, What};

impl Host<'_> {
    /// At a Start of member `m` at `now`: runs the iterations from here that are
    /// known in advance, leaving the event queue as the ordinary path would (the
    /// member's next Start, or the End of an iteration another event must precede).
    /// Returns false when not even this one is known: the caller runs it.
    pub(super) fn run_ahead(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<bool, HostError> {
        // The cheap checks first: at most Starts of a memory-bound replay something
        // waits, and the residents' holds need not be looked at.
        if !self.run_ahead || !self.nothing_pending(m) || !self.residents_decode(m) {
            return Ok(false);
        }
        let mut first = true;
        loop {
            // After an End the ordinary path pushes the next Start: anything at this
            // instant (an arrival, a member woken by a release, a tie) goes before it.
            let known = (first || self.next_event() > self.now) && self.decodes_known(m);
            let counts = self.decode_counts(m);
            // A time the compiled `time` refuses is the ordinary iteration's error.
            let dt = known
                .then(|| {
                    self.steps[m]
                        .iteration_time(&counts, Takers::ResidentsDecoding, &self.shared)
                        .ok()
                })
                .flatten();
            let Some(dt) = dt else {
                if first {
                    return Ok(false);
                }
                self.push(self.now, Class::Start, What::Start(m));
                return Ok(true);
            };
            first = false;
            self.start_decodes(m, dt, io)?;
            self.ahead += 1;
            // As the event loop does after a Start.
            self.sample();
            let end = self.now + dt;
            // At an instant shared with another event the queue's order decides:
            // such an End is left to it.
            if end >= self.next_event() {
                self.steps[m].in_flight = true;
                self.push(end, Class::End, What::End(m));
                return Ok(true);
            }
            // The End is handled here, not pushed: the events the run does push keep
            // their push order, which is all ties between them read.
            self.advance(end);
            self.end_iteration(m, io)?;
            self.sample();
        }
    }

    /// The earliest of the queued events and the next arrival.
    fn next_event(&self) -> f64 {
        let e = self.events.peek().map_or(f64::INFINITY, |e| e.t);
        let a = self
            .shared
            .sess
            .get(self.next_arrival)
            .map_or(f64::INFINITY, |s| s.arrival);
        e.min(a)
    }

    /// Whether every resident of `m` decodes with nothing else pending: not loading
    /// from a tier, its last execution sampled a token (sequence = computed + 1), its
    /// hold has no waiting grow and holds exactly its computed units in the blocks
    /// those need. The run's iterations keep this true (each grows a hold by the one
    /// unit it computes; a finished session leaves), so it is checked once a run.
    fn residents_decode(&self, m: StepIx) -> bool {
        let st = &self.steps[m];
        !st.residents.is_empty()
            && st.residents.iter().all(|&s| {
                let x = &self.shared.sess[s];
                let block = self.info[x.pool].block;
                !x.loading
                    && x.caught_up
                    && x.seq() == x.computed + 1
                    && self.pools[x.pool].hold(s).is_some_and(|h| {
                        h.pending_grow.is_none()
                            && h.units.0 == x.computed
                            && h.blocks.0 == Units(x.computed).blocks_up(block) * block
                    })
            })
    }

    /// Whether `m`'s next iteration, its residents decoding, can only be their
    /// decodes: nothing is pending ([`Host::nothing_pending`]) and the blocks the
    /// grows need can be allocated in each pool without preempting (R13: they fit).
    fn decodes_known(&self, m: StepIx) -> bool {
        let st = &self.steps[m];
        self.nothing_pending(m)
            && st.pools.iter().all(|&p| {
                // A hold whose units fill its blocks allocates one for its next unit.
                let block = self.info[p].block;
                let full = st
                    .residents
                    .iter()
                    .map(|&s| &self.shared.sess[s])
                    .filter(|x| x.pool == p && x.computed.is_multiple_of(block))
                    .count();
                self.pools[p].can_allocate(full as u64)
            })
    }

    /// Whether `m` has residents that can each take one token (budget and chunk
    /// allow it) and no pool it serves has a hold to admit or a grow to retry.
    fn nothing_pending(&self, m: StepIx) -> bool {
        let st = &self.steps[m];
        let r = st.residents.len() as u64;
        r > 0
            && st.budget >= r
            && st.chunk > 0
            && st.pools.iter().all(|&p| {
                let pool = &self.pools[p];
                pool.queued() == 0 && pool.grows_waiting() == 0
            })
    }

    /// The counts of an iteration in which every resident of `m` decodes.
    fn decode_counts(&self, m: StepIx) -> Counts {
        let st = &self.steps[m];
        let r = st.residents.len() as u64;
        let context = st
            .residents
            .iter()
            .map(|&s| self.shared.sess[s].computed + 1)
            .sum();
        Counts {
            tokens: r,
            prefill: 0,
            decode: r,
            residents: r,
            context,
        }
    }

    /// The start of a decode iteration of `m` lasting `dt` (R15 steps 1 and 2 when
    /// both are known): residents in admission order grow by their one token, each
    /// grow that allocates a block followed by the bookkeeping of any pool operation
    /// (it may evict, and spill what it evicts); nobody is admitted.
    fn start_decodes(&mut self, m: StepIx, dt: f64, io: &mut Io<'_>) -> Result<(), HostError> {
        let t = self.now;
        self.steps[m].clear_iteration();
        self.shared.current = Some(m);
        for k in 0..self.steps[m].residents.len() {
            let s = self.steps[m].residents[k];
            let x = &self.shared.sess[s];
            let p = x.pool;
            let allocates = x.computed.is_multiple_of(self.info[p].block);
            let g = self.pools[p]
                .grow(t, s, Units(1), &self.shared)
                .map_err(self.engine(p))?;
            debug_assert!(g == Grown::Grown, "a known decode's grow fits");
            // A grow inside held blocks changes nothing a query, an observer or a
            // link sees, and tells no notice.
            if allocates {
                self.after_op(p, io)?;
            }
            self.took(
                m,
                Take {
                    s,
                    n: 1,
                    kind: TakeKind::Decode,
                },
            );
        }
        self.shared.current = None;
        let st = &mut self.steps[m];
        let r = st.residents.len() as u64;
        self.shared.stage_q[m] = StageQ {
            budget_left: f64::INFINITY,
            residents: r as f64,
        };
        st.count_iteration(t, dt, r);
        self.computed_tokens += r;
        Ok(())
    }
}
