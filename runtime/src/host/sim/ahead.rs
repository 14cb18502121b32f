//! Runs of iterations whose outcome is known in advance (docs/HOST.md, "Runs known
//! in advance"; issue #16 item 2): when nobody reads pool events, a
//! step member whose next iterations can only be decodes — every resident decoding
//! with room for its token, no grow waiting, and any waiting head kept out by the
//! admission attempt made after the decodes — runs them back to back in one call,
//! outside the event queue, for as long as no other event or arrival comes first.
//! Each iteration's start is the residents' grows (the same pool operations, at the
//! same time, in the same order, as [`Host::residents_pass`] would make) without the
//! retries, hold lookups and per-operation refreshes around them, then, where holds
//! wait, the first attempt on each pool peeked up to its fit; an iteration in which
//! one would admit is finished as the ordinary one and ends the run. Its end is
//! [`Host::end_iteration`] itself.
//! It decides nothing a rule decides: an iteration that is not provably of that
//! shape is left to the ordinary path, which also reports every error.
//!
//! Inside a run, when nothing can read a resident's state between its changes (no
//! observer or log, no service counters; a `time` with `sum` reads each resident's
//! row, which is known without catching up and kept from one deferred iteration to
//! the next, one unit of context on), the decodes of
//! the residents that only decode are deferred ([`Deferred`], issue #35 item 2): an
//! iteration visits only the residents whose grow allocates or fills a block, or
//! whose token is their last, and the others catch up, all deferred iterations at
//! once, when they next do one of those or when the deferral ends. Where the
//! member's pools are its own, a deferral outlasts the run (its End goes through
//! the event queue): fleets, and pools whose spills may queue a link's event mid-start. Every
//! operation that can change a pool, a report or what a rule reads is still made
//! at its own time and in its own order; what is deferred is what no one reads in
//! between (a hold's units inside its blocks, a session's counters).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::pool::{Grown, Outlook};
use crate::types::{SessionId, Units};

use super::super::config::HostError;
use super::session::{Sess, StageQ};
use super::step::{Counts, Take, TakeKind, Takers};
use super::{Class, Host, Io, StepIx, What};

/// One member's residents whose decodes are deferred (see the module
/// documentation). Its buffers are kept from deferral to deferral.
#[derive(Clone, Debug, Default)]
pub(super) struct Deferred {
    active: bool,
    /// Deferrals begun on this member so far: names this one (the step's kept
    /// `sum` rows are this deferral's only while it is the same).
    serial: u64,
    /// How many ranks' sessions finished in this deferral (their rows leave the
    /// `sum` table).
    gone: u64,
    /// Iterations run since the deferral began: the current one's number.
    j: u64,
    /// The end of the previous iteration, every resident's last token.
    t_prev: f64,
    /// By rank (admission order when the deferral began): the session.
    sess: Vec<SessionId>,
    /// By rank: the iteration whose start its state is exact at (the pool's hold
    /// and the host's session), or [`GONE`] once it finished.
    exact: Vec<u64>,
    /// (iteration, rank) of each resident's next iteration that is not quiet.
    due: BinaryHeap<Reverse<(u64, u32)>>,
    /// The current iteration's due ranks, in rank order.
    now: Vec<u32>,
    /// Units of context of the current iteration (`decode_counts`' sum).
    context: u64,
    /// Residents of the iteration under way (its End is in the event queue when
    /// `end_pending`).
    taking: u64,
    end_pending: bool,
    /// Decodes deferred (`RunOptions::decodes_deferred`).
    pub(super) decodes: u64,
}

impl Deferred {
    /// Each resident still deferred, in rank order (which is admission order: no
    /// one is admitted while deferring, and one who finishes leaves the residents
    /// in place), with the decodes it has yet to catch up.
    pub(super) fn lagging(&self) -> impl Iterator<Item = (SessionId, u64)> + '_ {
        self.sess
            .iter()
            .zip(&self.exact)
            .filter(|&(_, &exact)| exact != GONE)
            .map(|(&s, &exact)| (s, self.j - exact))
    }

    /// Whether every resident's computed units and context this iteration are
    /// integers an `f64` holds exactly (their sum, `context`, is below 2^53), so
    /// that a row's slot one unit on is its old value plus 1.
    pub(super) fn counts_exact_in_f64(&self) -> bool {
        self.context < 1 << f64::MANTISSA_DIGITS
    }

    /// Which of this member's deferred iterations is under way: rows filled for one
    /// hold for the next, each resident's computed and context one unit on, while
    /// the deferral and its residents are the same.
    pub(super) fn iteration(&self) -> DeferredIteration {
        DeferredIteration {
            serial: self.serial,
            j: self.j,
            gone: self.gone,
        }
    }
}

/// A deferred iteration's name (see [`Deferred::iteration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DeferredIteration {
    serial: u64,
    j: u64,
    gone: u64,
}

impl DeferredIteration {
    /// Whether `self` is the iteration after `before`, with the same residents.
    pub(super) fn follows(self, before: DeferredIteration) -> bool {
        self.serial == before.serial && self.gone == before.gone && self.j == before.j + 1
    }
}

/// How an iteration's start in a run went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Started {
    /// Its residents' decodes alone, counted: the run goes on.
    Decodes,
    /// A waiting hold was admitted: the start was finished as the ordinary one, its
    /// End is in the event queue, and the run ends.
    Admits,
}

/// What R15 step 2 is asked with after a run iteration's decodes: the budget left
/// (one token a resident taken) and the chunk.
#[derive(Clone, Copy, Debug)]
struct Room {
    left: u64,
    chunk: u64,
}

/// A rank whose session finished.
const GONE: u64 = u64::MAX;

/// Iterations from `x`'s exact state to the next one in which it is not quiet: its
/// grow allocates a block (computed a multiple of `block`) or fills one (which
/// registers it, R7), or its token is its last.
fn due_in(x: &Sess, block: u64) -> u64 {
    // The grow at computed ≡ block − 1 fills a block, the next allocates one.
    let r = x.computed % block;
    let grow = if r == 0 { 0 } else { block - 1 - r };
    grow.min(x.output.saturating_sub(x.generated + 1))
}

impl Host<'_> {
    /// At a Start of member `m` at `now`: runs the iterations from here that are
    /// known in advance, leaving the event queue as the ordinary path would (the
    /// member's next Start, the End of an iteration another event must precede, or
    /// the End of an iteration in which a waiting hold was admitted, its start
    /// finished as the ordinary one). Returns false when not even this one is known:
    /// the caller runs it.
    pub(super) fn run_ahead(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<bool, HostError> {
        // The cheap checks first: at most Starts of a memory-bound replay something
        // waits, and the residents' holds need not be looked at.
        let active = self.deferred[m].active;
        if !self.run_ahead || !self.nothing_pending(m) || !(active || self.residents_decode(m)) {
            self.catch_up(m)?;
            return Ok(false);
        }
        let defer = self.may_defer(m, io);
        // Every resident sampled a token at the End just before this Start (it is
        // exact, and its last token is now): its decodes can be deferred from here.
        if !active && defer && self.sampled_now(m) {
            self.defer_begin(m);
        }
        let mut first = true;
        loop {
            let deferring = self.deferred[m].active;
            // After an End the ordinary path pushes the next Start: anything at this
            // instant (an arrival, a member woken by a release, a tie) goes before it.
            let known = (first || self.next_event() > self.now)
                && if deferring {
                    self.deferred_known(m)
                } else {
                    self.decodes_known(m)
                };
            let (counts, takers) = if deferring {
                (self.deferred_counts(m), Takers::Deferred(&self.deferred[m]))
            } else {
                (self.decode_counts(m), Takers::ResidentsDecoding)
            };
            // A time the compiled `time` refuses is the ordinary iteration's error.
            let dt = known
                .then(|| {
                    self.steps[m]
                        .iteration_time(&counts, takers, &self.shared)
                        .ok()
                })
                .flatten();
            let Some(dt) = dt else {
                self.catch_up(m)?;
                if first {
                    return Ok(false);
                }
                self.push(self.now, Class::Start, What::Start(m));
                return Ok(true);
            };
            first = false;
            if deferring {
                let end = self.now + dt;
                let persist = self.may_persist(m);
                // Without a deferral that may persist, no pool of `m` has a tier
                // (`may_defer`), so nothing the start does can push an event and
                // whether the End comes first is known before it. With one, a
                // spill may queue a link's event: that is asked again after it.
                if persist || end < self.next_event() {
                    if self.deferred_start(m, dt, io)? == Started::Admits {
                        return Ok(true);
                    }
                    if end >= self.next_event() {
                        // The deferral outlasts the run: the End is the queue's,
                        // and the events before it read nothing of m's residents.
                        self.steps[m].in_flight = true;
                        self.deferred[m].end_pending = true;
                        self.push(end, Class::End, What::End(m));
                        return Ok(true);
                    }
                    self.advance(end);
                    self.deferred_end(m, io)?;
                    self.sample();
                    continue;
                }
                self.catch_up(m)?;
            }
            if self.start_decodes(m, dt, io)? == Started::Admits {
                return Ok(true);
            }
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
            if defer && !self.steps[m].residents.is_empty() {
                self.defer_begin(m);
            }
        }
    }

    /// The End of `m`'s iteration from the event queue: deferred or ordinary.
    pub(super) fn end_of(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        if self.deferred[m].end_pending {
            self.deferred[m].end_pending = false;
            self.deferred_end(m, io)
        } else {
            self.end_iteration(m, io)
        }
    }

    /// Whether `m`'s deferral may outlast a run, its End and the next Start going
    /// through the event queue: nothing another member, a link or an arrival does
    /// can read its residents. Its pools are its own (no other member grows, admits
    /// or releases in them) and take part in no handoff. A link then carries spills
    /// to a tier, which touch only the tier, or loads, which are admissions' (the
    /// deferral caught up before any admission, and a resident still loading stops
    /// one from beginning); an arrival routed to one of its pools is only enqueued,
    /// which reads no hold, and the next Start asks after its decodes whether it is
    /// admitted, catching up first if so.
    fn may_persist(&self, m: StepIx) -> bool {
        self.steps[m].pools.iter().all(|&p| {
            let info = &self.info[p];
            info.served_by.len() == 1 && info.handoff.is_none() && !info.is_target && !info.is_tier
        })
    }

    /// Whether every resident of `m` sampled its last token now.
    fn sampled_now(&self, m: StepIx) -> bool {
        self.steps[m]
            .residents
            .iter()
            .all(|&s| self.shared.sess[s].last_token == self.now)
    }

    /// Ends every member's deferral (the run's end: the report reads the sessions).
    pub(super) fn catch_up_all(&mut self) -> Result<(), HostError> {
        for m in self.steps.keys() {
            self.catch_up(m)?;
        }
        Ok(())
    }

    /// Whether `m`'s decodes may be deferred: nothing reads a resident between its
    /// changes. Observers and logs are told every take; service counters (R30) add
    /// each take in turn. (A `time` with `sum`, R29, reads every take's row, but a
    /// deferred resident's row is known without catching up: [`Deferred::lagging`].)
    /// A spill (R12) may queue a link's event in the middle of an iteration's start, so
    /// a pool with a tier needs a deferral that may outlast the run.
    fn may_defer(&self, m: StepIx, io: &Io<'_>) -> bool {
        !io.iterations()
            && !self.charges
            && (self.steps[m]
                .pools
                .iter()
                .all(|&p| self.info[p].tier.is_none())
                || self.may_persist(m))
    }

    /// Begins deferring `m`'s decodes after an iteration in which every resident
    /// decoded: each state is exact, each last token is now.
    fn defer_begin(&mut self, m: StepIx) {
        let d = &mut self.deferred[m];
        d.sess.clear();
        d.exact.clear();
        d.due.clear();
        d.j = 0;
        d.serial += 1;
        d.gone = 0;
        d.t_prev = self.now;
        d.context = 0;
        d.end_pending = false;
        for (k, &s) in self.steps[m].residents.iter().enumerate() {
            let x = &self.shared.sess[s];
            let rank = u32::try_from(k).expect("fewer than 2^32 residents");
            d.sess.push(s);
            d.exact.push(0);
            d.context += x.computed + 1;
            d.due
                .push(Reverse((due_in(x, self.info[x.pool].block), rank)));
        }
        d.active = true;
    }

    /// `decodes_known` while deferring: takes the current iteration's due ranks,
    /// and counts the blocks their grows allocate in each pool.
    fn deferred_known(&mut self, m: StepIx) -> bool {
        let d = &mut self.deferred[m];
        d.now.clear();
        while let Some(&Reverse((j, k))) = d.due.peek() {
            debug_assert!(j >= d.j, "a due iteration passed");
            if j != d.j {
                break;
            }
            d.due.pop();
            d.now.push(k);
        }
        if !self.nothing_pending(m) {
            return false;
        }
        let d = &self.deferred[m];
        self.steps[m].pools.iter().all(|&p| {
            let block = self.info[p].block;
            let full = d
                .now
                .iter()
                .map(|&k| (k as usize, &self.shared.sess[d.sess[k as usize]]))
                .filter(|(k, x)| {
                    x.pool == p && (x.computed + d.j - d.exact[*k]).is_multiple_of(block)
                })
                .count();
            self.pools[p].can_allocate(full as u64)
        })
    }

    /// `decode_counts` while deferring.
    fn deferred_counts(&self, m: StepIx) -> Counts {
        let r = self.steps[m].residents.len() as u64;
        Counts {
            tokens: r,
            prefill: 0,
            decode: r,
            residents: r,
            context: self.deferred[m].context,
        }
    }

    /// Brings rank `k` to the current iteration's start: its deferred decodes, each
    /// a grow inside its blocks and a token, applied at once.
    fn sync(&mut self, m: StepIx, k: usize) -> Result<(), HostError> {
        let d = &mut self.deferred[m];
        let lag = d.j - d.exact[k];
        if lag == 0 {
            return Ok(());
        }
        d.exact[k] = d.j;
        let s = d.sess[k];
        let x = &mut self.shared.sess[s];
        x.computed += lag;
        x.high = x.high.max(x.computed);
        x.generated += lag;
        x.last_token = d.t_prev;
        let (p, computed) = (x.pool, x.computed);
        let g = self.pools[p]
            .grow(self.now, s, Units(lag), &self.shared)
            .map_err(self.engine(p))?;
        debug_assert!(g == Grown::Grown, "a quiet grow stays inside its blocks");
        self.pools[p]
            .set_computed(s, Units(computed))
            .map_err(self.engine(p))
    }

    /// Ends `m`'s deferral, if any: every resident caught up.
    fn catch_up(&mut self, m: StepIx) -> Result<(), HostError> {
        if !self.deferred[m].active {
            return Ok(());
        }
        debug_assert!(!self.deferred[m].end_pending, "catching up mid-iteration");
        self.deferred[m].active = false;
        for k in 0..self.deferred[m].sess.len() {
            if self.deferred[m].exact[k] != GONE {
                self.sync(m, k)?;
            }
        }
        Ok(())
    }

    /// The start of an iteration of `m` lasting `dt` with decodes deferred:
    /// `start_decodes` for the due residents, in admission order; the quiet ones
    /// only count. Where a waiting hold would then be admitted, the deferral ends
    /// and the start is finished as the ordinary one ([`Started::Admits`]).
    fn deferred_start(
        &mut self,
        m: StepIx,
        dt: f64,
        io: &mut Io<'_>,
    ) -> Result<Started, HostError> {
        let t = self.now;
        let r = self.steps[m].residents.len() as u64;
        self.deferred[m].taking = r;
        self.steps[m].clear_iteration();
        self.shared.current = Some(m);
        for i in 0..self.deferred[m].now.len() {
            let k = self.deferred[m].now[i] as usize;
            self.sync(m, k)?;
            let s = self.deferred[m].sess[k];
            self.decode(m, s, t, io)?;
        }
        if let Some(room) = self.waiting_admits(m)? {
            self.undefer_started(m, t, io)?;
            return self.admit_and_close(m, t, room, io);
        }
        self.decodes_started(m, t, dt, r);
        self.ahead += 1;
        // As the event loop does after a Start.
        self.sample();
        Ok(Started::Decodes)
    }

    /// Ends `m`'s deferral in the middle of an iteration's start at `t`, its due
    /// residents' decodes made: each quiet resident catches up and decodes this
    /// iteration's token (a grow inside its blocks: nothing a rule reads), and the
    /// takes are every resident's, in admission order, as [`Host::residents_pass`]
    /// makes them.
    fn undefer_started(&mut self, m: StepIx, t: f64, io: &mut Io<'_>) -> Result<(), HostError> {
        self.deferred[m].active = false;
        let mut due = 0;
        for k in 0..self.deferred[m].sess.len() {
            let d = &self.deferred[m];
            if d.exact[k] == GONE {
                continue;
            }
            if d.now.get(due).is_some_and(|&j| j as usize == k) {
                due += 1;
                continue;
            }
            self.sync(m, k)?;
            let s = self.deferred[m].sess[k];
            self.decode(m, s, t, io)?;
        }
        // `decode` appended the quiet residents' takes after the due ones'.
        let st = &mut self.steps[m];
        st.took.clear();
        st.took.extend(st.residents.iter().map(|&s| Take {
            s,
            n: 1,
            kind: TakeKind::Decode,
        }));
        Ok(())
    }

    /// Whether R15 step 2 would admit a waiting hold after this iteration's decodes
    /// (every resident took one token): the first attempt [`Host::admit_waiting`]
    /// would make on each pool, peeked without admitting ([`Host::peek_one`]).
    /// Returns the budget left and the chunk the attempts were asked with when one
    /// would admit. Where none would, the iteration is its decodes alone, as when
    /// nothing waits; the attempts' only effect, a remembered walk (and the watch
    /// it keeps in a tier's block table), is the same as theirs.
    fn waiting_admits(&mut self, m: StepIx) -> Result<Option<Room>, HostError> {
        let st = &self.steps[m];
        let r = st.residents.len();
        // `nothing_pending`: the budget covers every resident's token.
        let left = st.budget - r as u64;
        if left == 0 || r >= st.seats || st.pools.iter().all(|&p| self.pools[p].queued() == 0) {
            return Ok(None);
        }
        let room = Room {
            left,
            chunk: self.admission_chunk(m),
        };
        for k in 0..self.steps[m].pools.len() {
            let p = self.steps[m].pools[k];
            if self.pools[p].queued() > 0
                && self.peek_one(m, p, room.left, room.chunk)? == Outlook::Admits
            {
                return Ok(Some(room));
            }
        }
        Ok(None)
    }

    /// The rest of an iteration's start at `t` whose residents each took a token and
    /// in which a waiting hold is admitted: R15 step 2 with the `room` it was peeked
    /// with, and the iteration's End, as [`Host::start_iteration`] makes them. The
    /// run ends there.
    fn admit_and_close(
        &mut self,
        m: StepIx,
        t: f64,
        room: Room,
        io: &mut Io<'_>,
    ) -> Result<Started, HostError> {
        self.admit_waiting(m, room.left, room.chunk, io)?;
        self.close_start(m, t)?;
        let st = &mut self.steps[m];
        st.scheduled = st.in_flight;
        // As the event loop does after a Start.
        self.sample();
        Ok(Started::Admits)
    }

    /// The End of a deferred iteration of `m`, now: `end_iteration` for the due
    /// residents, and for the quiet ones only what they add up to (their tokens and
    /// their inter-token latencies, all equal to this iteration's).
    fn deferred_end(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        let end = self.now;
        let r = self.deferred[m].taking;
        self.steps[m].in_flight = false;
        let mut progress = false;
        let due = self.steps[m].took.len() as u64;
        // Every resident computes one more unit of context for the next iteration;
        // a finished one's comes off again below.
        self.deferred[m].context += r;
        for i in 0..self.deferred[m].now.len() {
            let k = self.deferred[m].now[i] as usize;
            let s = self.deferred[m].sess[k];
            progress |= self.computed(m, s, 1, io)?;
            let x = &self.shared.sess[s];
            let d = &mut self.deferred[m];
            if x.generated == x.output {
                d.exact[k] = GONE;
                d.gone += 1;
                d.context -= x.computed + 1;
            } else {
                d.exact[k] = d.j + 1;
                let next = d.j + 1 + due_in(x, self.info[x.pool].block);
                d.due.push(Reverse((next, k as u32)));
            }
        }
        let quiet = r - due;
        if quiet > 0 {
            self.samples.tokens(end - self.deferred[m].t_prev, quiet);
            self.output_tokens += quiet;
            self.deferred[m].decodes += quiet;
            progress = true;
        }
        let d = &mut self.deferred[m];
        d.j += 1;
        d.t_prev = end;
        self.finish_iteration(m, progress, io)
    }

    /// The earliest of the queued events and the next arrival.
    pub(super) fn next_event(&self) -> f64 {
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
    /// allow it) and no pool it serves has a grow to retry. Holds may wait where
    /// `m` takes its residents' tokens before admitting (not R16's exclusive
    /// prefill): whether one is admitted is asked after the iteration's decodes
    /// ([`Host::waiting_admits`]), and the run ends at the first that is.
    fn nothing_pending(&self, m: StepIx) -> bool {
        let st = &self.steps[m];
        let r = st.residents.len() as u64;
        r > 0
            && st.budget >= r
            && st.chunk > 0
            && st.pools.iter().all(|&p| {
                let pool = &self.pools[p];
                pool.grows_waiting() == 0 && (pool.queued() == 0 || !st.exclusive)
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
    /// (it may evict, and spill what it evicts); then, where a waiting hold would be
    /// admitted, the start is finished as the ordinary one ([`Started::Admits`]).
    fn start_decodes(&mut self, m: StepIx, dt: f64, io: &mut Io<'_>) -> Result<Started, HostError> {
        let t = self.now;
        self.steps[m].clear_iteration();
        self.shared.current = Some(m);
        for k in 0..self.steps[m].residents.len() {
            let s = self.steps[m].residents[k];
            self.decode(m, s, t, io)?;
        }
        if let Some(room) = self.waiting_admits(m)? {
            return self.admit_and_close(m, t, room, io);
        }
        let r = self.steps[m].residents.len() as u64;
        self.decodes_started(m, t, dt, r);
        Ok(Started::Decodes)
    }

    /// Resident `s` of `m` grows by its one token at `t` and takes it; a grow that
    /// allocates a block is followed by the bookkeeping of any pool operation (it
    /// may evict, and spill what it evicts). A grow inside held blocks changes
    /// nothing a query, an observer or a link sees, and tells no notice.
    fn decode(
        &mut self,
        m: StepIx,
        s: SessionId,
        t: f64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let x = &self.shared.sess[s];
        let p = x.pool;
        let allocates = x.computed.is_multiple_of(self.info[p].block);
        let g = self.pools[p]
            .grow(t, s, Units(1), &self.shared)
            .map_err(self.engine(p))?;
        debug_assert!(g == Grown::Grown, "a known decode's grow fits");
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
        Ok(())
    }

    /// The end of a decode iteration's start, its `r` residents' grows made: the
    /// stage's queryable state and totals.
    fn decodes_started(&mut self, m: StepIx, t: f64, dt: f64, r: u64) {
        self.shared.current = None;
        self.shared.stage_q[m] = StageQ {
            budget_left: f64::INFINITY,
            residents: r as f64,
        };
        self.steps[m].count_iteration(t, dt, r);
        self.computed_tokens += r;
    }
}
