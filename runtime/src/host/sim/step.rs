//! The step stages (R15, R16): one member's iteration from its start (waiting grows
//! retried, residents' takes with their grows and preemptions, admissions within the
//! budget and seats, whose attempts are admission.rs's, the iteration's time from
//! the compiled `time`) to its end (computed units advance, tokens sampled, finished
//! sessions released), and the iteration told to the observers. It drives pools
//! only through their operations.

use crate::env::Env;
use crate::event::Notice;
use crate::pool::{Charge, Grown};
use crate::types::{Limit, SessionId, Units};

use super::super::config::{HostError, IterTime, StepConfig, TakeVar, TimeVar};
use super::super::observe::{Admitted, Iteration, Latency};
use super::ahead::{Deferred, DeferredIteration};
use super::session::{Shared, StageQ, State};
use super::{Class, Host, Io, PoolIx, StepIx, What};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TakeKind {
    Decode,
    Cont,
    Admit,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Take {
    pub(super) s: SessionId,
    pub(super) n: u64,
    pub(super) kind: TakeKind,
}

/// One member of a step stage.
pub(super) struct StepMember {
    pub(super) name: String,
    pub(super) budget: u64,
    pub(super) seats: usize,
    pub(super) chunk: u64,
    pub(super) exclusive: bool,
    pub(super) time: IterTime,
    /// Pool members it serves, in declaration order, member by member (K4).
    pub(super) pools: Vec<PoolIx>,
    /// Admission order (vLLM's running list).
    pub(super) residents: Vec<SessionId>,
    /// A tick for it is in the event queue.
    pub(super) scheduled: bool,
    /// An iteration has started and not yet ended.
    pub(super) in_flight: bool,
    pub(super) start: f64,
    pub(super) iterations: u64,
    pub(super) busy: f64,
    pub(super) tokens: u64,
    pub(super) peak_residents: u64,
    // The current iteration (reused buffers).
    pub(super) took: Vec<Take>,
    pub(super) admitted: Vec<Admitted>,
    pub(super) cont: Vec<(SessionId, u64)>,
    pub(super) preempted: Vec<SessionId>,
    pub(super) finished: Vec<SessionId>,
    /// Sessions whose prompt the iteration completed in a pool that hands off (R25).
    pub(super) handed: Vec<SessionId>,
    /// Of `admitted`, the handed-off sessions whose transfer it started (R26).
    pub(super) remote_admits: usize,
    pub(super) allocated: Vec<Units>,
    pub(super) cached: Vec<Units>,
    pub(super) ctx: Vec<f64>,
    /// The iteration's take table for `sum` (R29), a row per take.
    pub(super) rows: Vec<f64>,
    /// The deferred iteration `rows` were made for, if they were: the next one's
    /// rows are these with each computed and context slot one unit on.
    kept: Option<DeferredIteration>,
}

impl StepMember {
    pub(super) fn new(name: String, c: &StepConfig) -> StepMember {
        let limit = |l: Limit| match l {
            Limit::Finite(u) => u.0,
            Limit::Unbounded => u64::MAX,
        };
        StepMember {
            name,
            budget: limit(c.budget),
            seats: usize::try_from(limit(c.seats)).unwrap_or(usize::MAX),
            chunk: limit(c.chunk),
            exclusive: c.exclusive_prefill,
            time: c.time.clone(),
            pools: Vec::new(),
            residents: Vec::new(),
            scheduled: false,
            in_flight: false,
            start: 0.0,
            iterations: 0,
            busy: 0.0,
            tokens: 0,
            peak_residents: 0,
            took: Vec::new(),
            admitted: Vec::new(),
            cont: Vec::new(),
            preempted: Vec::new(),
            finished: Vec::new(),
            handed: Vec::new(),
            remote_admits: 0,
            allocated: Vec::new(),
            cached: Vec::new(),
            ctx: Vec::new(),
            rows: Vec::new(),
            kept: None,
        }
    }
}

/// Whose takes an iteration's `sum` adds over (R29).
#[derive(Clone, Copy, Debug)]
pub(super) enum Takers<'a> {
    /// The iteration's `took` list, as the ordinary start fills it.
    Took,
    /// Every resident decoding one token, in admission order: an iteration known in
    /// advance (ahead.rs), whose `took` is not filled yet.
    ResidentsDecoding,
    /// The same with decodes deferred: a resident's computed units are its
    /// session's plus the decodes it has yet to catch up ([`Deferred::lagging`]).
    Deferred(&'a Deferred),
}

/// Appends the row of `take`, whose session has computed `computed` units before
/// it, to the take table, slot by slot as `row` lays it out.
fn take_row(rows: &mut Vec<f64>, row: &[TakeVar], take: &Take, computed: u64, shared: &Shared) {
    let attrs = shared.attrs(take.s);
    let decoding = take.kind == TakeKind::Decode;
    rows.extend(row.iter().map(|v| {
        match *v {
            TakeVar::Tokens => take.n as f64,
            TakeVar::Prefill if decoding => 0.0,
            TakeVar::Prefill => take.n as f64,
            TakeVar::Decode if decoding => take.n as f64,
            TakeVar::Decode => 0.0,
            TakeVar::Computed => computed as f64,
            TakeVar::Context => (computed + take.n) as f64,
            TakeVar::Attr(a) => attrs
                .and_then(|x| x.get(a as usize))
                .copied()
                .unwrap_or(f64::NAN),
        }
    }));
}

/// Moves every decode row of a take table one iteration on: its computed units
/// and its context one more (exact while they stay below 2^53).
fn one_decode_on(rows: &mut [f64], row: &[TakeVar]) {
    for r in rows.chunks_exact_mut(row.len()) {
        for (x, v) in r.iter_mut().zip(row) {
            if matches!(v, TakeVar::Computed | TakeVar::Context) {
                *x += 1.0;
            }
        }
    }
}

/// What an iteration's takes add up to: the inputs of its `time` (TimeVar).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub(super) tokens: u64,
    pub(super) prefill: u64,
    pub(super) decode: u64,
    /// Residents that take tokens.
    pub(super) residents: u64,
    /// Units of context the takes attend over: each take's computed units plus its own.
    pub(super) context: u64,
}

impl StepMember {
    /// The iteration's time from its counts and takes (the compiled `time`, or a
    /// fixed one). `shared` is read before the iteration computes anything.
    pub(super) fn iteration_time(
        &mut self,
        n: &Counts,
        takes: Takers,
        shared: &Shared,
    ) -> Result<f64, HostError> {
        let dt = match &self.time {
            IterTime::Fixed(x) => *x,
            IterTime::Compiled {
                policy,
                layout,
                row,
            } => {
                self.ctx.clear();
                for v in layout {
                    self.ctx.push(match v {
                        TimeVar::Tokens => n.tokens as f64,
                        TimeVar::Prefill => n.prefill as f64,
                        TimeVar::Decode => n.decode as f64,
                        TimeVar::Residents => n.residents as f64,
                        TimeVar::Context => n.context as f64,
                    });
                }
                let decode = |s| Take {
                    s,
                    n: 1,
                    kind: TakeKind::Decode,
                };
                let kept = self.kept.take();
                let count = match takes {
                    Takers::Took => {
                        self.rows.clear();
                        for take in &self.took {
                            let computed = shared.sess[take.s].computed;
                            take_row(&mut self.rows, row, take, computed, shared);
                        }
                        self.took.len()
                    }
                    // No row to fill (a `time` without `sum`): nothing to read
                    // per resident.
                    Takers::ResidentsDecoding | Takers::Deferred(_) if row.is_empty() => {
                        self.residents.len()
                    }
                    Takers::ResidentsDecoding => {
                        self.rows.clear();
                        for &s in &self.residents {
                            let computed = shared.sess[s].computed;
                            take_row(&mut self.rows, row, &decode(s), computed, shared);
                        }
                        self.residents.len()
                    }
                    // The same rows, in the same order, without catching up: a
                    // deferred resident's row is what it would be had it been
                    // visited every iteration. From one deferred iteration to the
                    // next only its computed units and context change, by one.
                    Takers::Deferred(d) => {
                        let now = d.iteration();
                        match kept {
                            Some(k) if now.follows(k) && d.counts_exact_in_f64() => {
                                one_decode_on(&mut self.rows, row);
                            }
                            _ => {
                                self.rows.clear();
                                for (s, lag) in d.lagging() {
                                    let computed = shared.sess[s].computed + lag;
                                    take_row(&mut self.rows, row, &decode(s), computed, shared);
                                }
                            }
                        }
                        self.kept = Some(now);
                        let count = self.rows.len() / row.len();
                        debug_assert_eq!(count, self.residents.len(), "a rank per resident");
                        count
                    }
                };
                policy.time(&self.ctx, &self.rows, count)
            }
        };
        if !dt.is_finite() || dt < 0.0 {
            return Err(HostError::Time {
                stage: self.name.clone(),
                step: self.iterations,
                value: dt,
            });
        }
        Ok(dt)
    }

    /// Empties the lists of the iteration about to start (what the last one took,
    /// admitted, preempted and finished).
    pub(super) fn clear_iteration(&mut self) {
        self.took.clear();
        self.admitted.clear();
        self.preempted.clear();
        self.finished.clear();
        self.handed.clear();
        self.remote_admits = 0;
    }

    /// An iteration of `tokens` starting at `t` and lasting `dt`, in the stage's totals.
    pub(super) fn count_iteration(&mut self, t: f64, dt: f64, tokens: u64) {
        self.iterations += 1;
        self.start = t;
        self.busy += dt;
        self.tokens += tokens;
        self.peak_residents = self.peak_residents.max(self.residents.len() as u64);
    }
}

impl Host<'_> {
    pub(super) fn waiting_of(&self, m: StepIx) -> usize {
        self.steps[m]
            .pools
            .iter()
            .map(|&p| self.pools[p].queued())
            .sum()
    }

    /// The most a take may be in `m`'s iteration starting now (its residents and
    /// waiting holds as they are at the start): vLLM turns its long-prefill
    /// threshold off for a lone request.
    pub(super) fn admission_chunk(&self, m: StepIx) -> u64 {
        if self.steps[m].residents.len() + self.waiting_of(m) > 1 {
            self.steps[m].chunk
        } else {
            u64::MAX
        }
    }

    /// R15 steps 1 and 2 (or R16), then the iteration's time.
    pub(super) fn start_iteration(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        let residents = self.steps[m].residents.len();
        let waiting = self.waiting_of(m);
        if residents == 0 && waiting == 0 {
            return Ok(());
        }
        let t = self.now;
        self.steps[m].clear_iteration();
        self.shared.current = Some(m);
        let (budget, seats, exclusive) = {
            let st = &self.steps[m];
            (st.budget, st.seats, st.exclusive)
        };
        let chunk = self.admission_chunk(m);
        let mut left = budget;
        // R13 `preempt none`: waiting grows are retried at every iteration.
        for k in 0..self.steps[m].pools.len() {
            let p = self.steps[m].pools[k];
            self.pools[p]
                .retry_grows(t, &self.shared)
                .map_err(self.engine(p))?;
            self.after_op(p, io)?;
        }
        if exclusive {
            // R16 (docs/HOST.md): a resident mid-prefill is this iteration's prefill
            // (no admission); otherwise one waiting prefill that fits is admitted with
            // the full budget and displaces the residents' decodes.
            let mid = self.steps[m].residents.iter().any(|s| {
                let x = &self.shared.sess[*s];
                !x.caught_up && !x.loading
            });
            let mut alone = false;
            if !mid && waiting > 0 && residents < seats {
                'pools: for k in 0..self.steps[m].pools.len() {
                    let p = self.steps[m].pools[k];
                    while self.steps[m].residents.len() < seats {
                        let transfers = self.steps[m].remote_admits;
                        match self.admit_one(m, p, budget, chunk, io)? {
                            // R26: a handed-off session reading its prompt takes no
                            // tokens, so it is not the iteration's one prefill.
                            Some(_) if self.steps[m].remote_admits > transfers => continue,
                            Some(n) => {
                                alone = n > 0;
                                break 'pools;
                            }
                            None => break,
                        }
                    }
                }
            }
            if !alone {
                self.residents_pass(m, &mut left, chunk, io)?;
            }
        } else {
            self.residents_pass(m, &mut left, chunk, io)?;
            if self.steps[m].preempted.is_empty() {
                self.admit_waiting(m, left, chunk, io)?;
            }
        }
        self.close_start(m, t)
    }

    /// The end of an iteration's start at `t`, its takes and admissions made: the
    /// stage's queryable state, then the iteration's time and its End, or the member
    /// idles when nothing could happen.
    pub(super) fn close_start(&mut self, m: StepIx, t: f64) -> Result<(), HostError> {
        self.shared.current = None;
        self.shared.stage_q[m] = StageQ {
            budget_left: f64::INFINITY,
            residents: self.steps[m].residents.len() as f64,
        };
        let st = &mut self.steps[m];
        if st.took.is_empty() && st.preempted.is_empty() && st.admitted.len() == st.remote_admits {
            // Nothing could happen: the member idles until an arrival, a release in
            // one of its pools or a completed load wakes it. Admitting handed-off
            // sessions alone runs no iteration either (R26): they take no tokens
            // until their transfer ends, as vLLM's step with nothing scheduled runs
            // no forward pass.
            return Ok(());
        }
        let mut n = Counts {
            residents: st.took.len() as u64,
            ..Counts::default()
        };
        for take in &st.took {
            n.tokens += take.n;
            n.context += self.shared.sess[take.s].computed + take.n;
            if take.kind == TakeKind::Decode {
                n.decode += take.n;
            } else {
                n.prefill += take.n;
            }
        }
        let dt = st.iteration_time(&n, Takers::Took, &self.shared)?;
        st.count_iteration(t, dt, n.tokens);
        st.in_flight = true;
        self.computed_tokens += n.tokens;
        self.push(t + dt, Class::End, What::End(m));
        Ok(())
    }

    /// R15 step 1: residents in admission order take
    /// `min(sequence − computed, chunk, budget left)`, growing their holds (R13).
    pub(super) fn residents_pass(
        &mut self,
        m: StepIx,
        left: &mut u64,
        chunk: u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let t = self.now;
        let mut i = 0;
        while i < self.steps[m].residents.len() && *left > 0 {
            let s = self.steps[m].residents[i];
            let x = &self.shared.sess[s];
            if x.loading {
                i += 1;
                continue;
            }
            let p = x.pool;
            let hold = self.pools[p]
                .hold(s)
                .ok_or(crate::Error::NotHolding(s))
                .map_err(self.engine(p))?;
            if hold.pending_grow.is_some() {
                i += 1;
                continue;
            }
            let take = (x.seq() - x.computed).min(chunk).min(*left);
            if take == 0 {
                i += 1;
                continue;
            }
            let kind = if x.caught_up {
                TakeKind::Decode
            } else {
                TakeKind::Cont
            };
            let need = x.computed + take;
            if need > hold.units.0 {
                let r = self.pools[p]
                    .grow(t, s, Units(need - hold.units.0), &self.shared)
                    .map_err(self.engine(p))?;
                self.victims.clear();
                for n in self.pools[p].notices() {
                    if let Notice::Preempted { session } = *n {
                        self.victims.push(session);
                    }
                }
                self.after_op(p, io)?;
                for k in 0..self.victims.len() {
                    let v = self.victims[k];
                    self.preempt(m, v, &mut i, left, io)?;
                }
                match r {
                    Grown::Grown => {}
                    Grown::Waiting => {
                        i += 1;
                        continue;
                    }
                    // The grower left the residents at index `i`.
                    Grown::SelfPreempted => continue,
                }
            }
            self.took(m, Take { s, n: take, kind });
            *left -= take;
            i += 1;
        }
        Ok(())
    }

    /// A `preempt lifo` victim leaves the stage: it keeps its outputs, forgets its
    /// computed units (its cached blocks give them back as hits), and waits with a
    /// header for its whole sequence (R15).
    pub(super) fn preempt(
        &mut self,
        m: StepIx,
        v: SessionId,
        i: &mut usize,
        left: &mut u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let st = &mut self.steps[m];
        if let Some(pos) = st.residents.iter().position(|&r| r == v) {
            st.residents.remove(pos);
            // Victims come after the grower in admission order; should one come
            // before, its take this iteration is undone.
            if pos < *i {
                *i -= 1;
                if let Some(k) = st.took.iter().position(|t| t.s == v) {
                    let given = st.took.remove(k);
                    *left += given.n;
                    if self.charges {
                        self.charge(given, Charge::GiveBack);
                    }
                }
            }
        }
        self.steps[m].preempted.push(v);
        self.guard.preempted(v);
        let x = &mut self.shared.sess[v];
        x.state = State::Waiting;
        x.computed = 0;
        x.caught_up = false;
        x.loading = false;
        let (p, seq) = (x.pool, x.seq());
        self.pools[p]
            .set_waiting_header(
                v,
                Units(seq),
                Units(seq),
                Some(Units(seq - 1)),
                &self.shared,
            )
            .map_err(self.engine(p))?;
        self.after_op(p, io)
    }

    /// Session `take.s` takes tokens in `m`'s iteration: the take joins the
    /// iteration's list and charges its group where the pool is `fair` (R30).
    pub(super) fn took(&mut self, m: StepIx, take: Take) {
        self.steps[m].took.push(take);
        if self.charges {
            self.charge(take, Charge::Take);
        }
    }

    /// R30: a take's tokens charged to (or given back from) its session's group (a
    /// pool without `fair` ignores it).
    fn charge(&mut self, take: Take, how: Charge) {
        let p = self.shared.sess[take.s].pool;
        let (prefill, decode) = match take.kind {
            TakeKind::Decode => (0, take.n),
            TakeKind::Cont | TakeKind::Admit => (take.n, 0),
        };
        self.pools[p].charge(take.s, prefill, decode, how, &self.shared);
    }

    /// R15 steps 3 and 4 at the iteration's end: computed units advance, sequences
    /// that are complete sample one token, finished sessions release in the order
    /// they took tokens.
    pub(super) fn end_iteration(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        self.steps[m].in_flight = false;
        let mut progress = false;
        for k in 0..self.steps[m].took.len() {
            let Take { s, n, .. } = self.steps[m].took[k];
            progress |= self.computed(m, s, n, io)?;
        }
        self.finish_iteration(m, progress, io)
    }

    /// The rest of R15 step 4 once every take's units are computed: finished
    /// sessions release in the order they took tokens, handed-off ones start their
    /// transfers, and the iteration is told and counted for the progress guard.
    pub(super) fn finish_iteration(
        &mut self,
        m: StepIx,
        progress: bool,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let t = self.now;
        for k in 0..self.steps[m].finished.len() {
            let s = self.steps[m].finished[k];
            let p = self.shared.sess[s].pool;
            self.pools[p]
                .release(t, s, &self.shared)
                .map_err(self.engine(p))?;
            self.after_op(p, io)?;
            let x = &mut self.shared.sess[s];
            x.state = State::Done;
            let e2e = t - x.arrival;
            self.finished += 1;
            self.latency(Latency::Finished { session: s, e2e }, io)?;
            let st = &mut self.steps[m];
            if let Some(pos) = st.residents.iter().position(|&r| r == s) {
                st.residents.remove(pos);
            }
            self.done_one(io);
            // Room freed in a pool other members may be waiting on.
            self.wake_pool(p);
        }
        for k in 0..self.steps[m].handed.len() {
            let s = self.steps[m].handed[k];
            self.hand_off(m, s, io)?;
        }
        self.shared.stage_q[m].residents = self.steps[m].residents.len() as f64;
        if io.iterations() {
            self.tell_iteration(m, io)?;
        }
        self.guard
            .iteration(progress, t)
            .map_err(|s| s.error(&self.steps[m].residents))
    }

    /// R15 steps 3 and 4 for one take of member `m`, at the iteration's end: `n`
    /// more units of session `s` are computed; a complete sequence samples a token
    /// (a latency moment), and a finished session is listed to be released. Returns
    /// whether it was progress (progress.rs).
    pub(super) fn computed(
        &mut self,
        m: StepIx,
        s: SessionId,
        n: u64,
        io: &mut Io<'_>,
    ) -> Result<bool, HostError> {
        let t = self.now;
        let x = &mut self.shared.sess[s];
        let mut progress = false;
        x.computed += n;
        if x.computed > x.high {
            x.high = x.computed;
            progress = true;
        }
        let (p, computed) = (x.pool, x.computed);
        if computed == x.seq() && x.generated == 0 && self.info[p].handoff.is_some() {
            // R25: the prompt is computed on the prefill side; no token here.
            self.steps[m].handed.push(s);
        } else if computed == x.seq() {
            progress = true;
            x.generated += 1;
            x.caught_up = true;
            let moment = if x.first_token.is_nan() {
                x.first_token = t;
                // A fleet's report gives each entry member its own TTFT (R22).
                self.info[x.entry].ttft.push(t - x.arrival);
                if !x.t_handoff.is_nan() {
                    self.handoffs.first_token(x, t);
                }
                Latency::FirstToken {
                    session: s,
                    ttft: t - x.arrival,
                }
            } else {
                Latency::Token {
                    session: s,
                    itl: t - x.last_token,
                }
            };
            x.last_token = t;
            let finished = x.generated == x.output;
            self.output_tokens += 1;
            if finished {
                self.steps[m].finished.push(s);
            }
            self.latency(moment, io)?;
        }
        self.pools[p]
            .set_computed(s, Units(computed))
            .map_err(self.engine(p))?;
        Ok(progress)
    }

    /// Tells the observers the iteration of member `m` that just ended.
    pub(super) fn tell_iteration(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        let waiting = self.waiting_of(m) as u64;
        let st = &mut self.steps[m];
        st.cont.clear();
        let mut decode = 0;
        let mut tokens = 0;
        for take in &st.took {
            tokens += take.n;
            match take.kind {
                TakeKind::Decode => decode += 1,
                TakeKind::Cont => st.cont.push((take.s, take.n)),
                TakeKind::Admit => {}
            }
        }
        st.allocated.clear();
        st.cached.clear();
        for &p in &st.pools {
            st.allocated.push(self.pools[p].allocated());
            st.cached.push(self.pools[p].cached());
        }
        io.iteration(&Iteration {
            step: st.iterations - 1,
            stage: &st.name,
            start: st.start,
            end: self.now,
            admitted: &st.admitted,
            cont: &st.cont,
            decode,
            preempted: &st.preempted,
            finished: &st.finished,
            tokens,
            residents: st.residents.len() as u64,
            waiting,
            allocated: &st.allocated,
            cached: &st.cached,
        })?;
        Ok(())
    }
}
