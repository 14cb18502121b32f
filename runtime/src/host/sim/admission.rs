//! R15 step 2 for a step member: admission attempts on the pools it serves, in
//! order, within the budget and seats left after the residents' takes — the units a
//! header is given, the admitted session's bookkeeping (its take, a tier load over
//! the link, a handoff's transfer) — and the same attempt peeked up to its fit for a
//! run known in advance (ahead.rs). Which hold is selected and whether it fits is
//! the pool's (runtime/src/pool/admit.rs); the iteration around it is step.rs's.

use crate::event::Notice;
use crate::pool::{Admission, Hit, Outlook};
use crate::types::{Header, SessionId, Units};

use super::super::config::HostError;
use super::super::observe::Admitted;
use super::links::JobKind;
use super::session::{Shared, StageQ, State};
use super::step::{Take, TakeKind};
use super::{Host, Io, PoolIx, StepIx};

/// The stage's queryable state during an admission attempt: the budget left and
/// the residents so far.
fn admission_stage_q(budget: u64, residents: usize) -> StageQ {
    StageQ {
        budget_left: if budget == u64::MAX {
            f64::INFINITY
        } else {
            budget as f64
        },
        residents: residents as f64,
    }
}

/// R15 step 2's units for an admission attempt with `budget` left: `hit +
/// min(sequence − hit, chunk, budget)`; a hold with a tier hit allocates its hit and
/// loads (R12), a handed-off session its prompt (R26).
fn admission_units(
    shared: &Shared,
    chunk: u64,
    budget: u64,
) -> impl Fn(SessionId, Hit, &Header) -> Option<Units> + '_ {
    move |s: SessionId, hit: Hit, _: &Header| -> Option<Units> {
        let x = shared.sess.get(s)?;
        let seq = x.seq();
        let base = hit.local.0 + hit.tier.0;
        // R26: a handed-off session allocates its prompt and reads what it
        // does not hit over the link, taking no tokens meanwhile.
        if x.remote {
            return Some(Units(seq));
        }
        if hit.tier.0 > 0 {
            Some(Units(base))
        } else {
            Some(Units(
                base + seq.saturating_sub(base).min(chunk).min(budget),
            ))
        }
    }
}

impl Host<'_> {
    /// R15 step 2 after the residents' takes: each pool `m` serves, in order, admits
    /// selected holds while budget and seats are left, until one is not admitted.
    pub(super) fn admit_waiting(
        &mut self,
        m: StepIx,
        mut left: u64,
        chunk: u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let seats = self.steps[m].seats;
        for k in 0..self.steps[m].pools.len() {
            let p = self.steps[m].pools[k];
            while left > 0 && self.steps[m].residents.len() < seats && self.pools[p].queued() > 0 {
                match self.admit_one(m, p, left, chunk, io)? {
                    Some(n) => left -= n,
                    None => break,
                }
            }
        }
        Ok(())
    }

    /// What [`Host::admit_one`] would do now on pool `p`, without admitting: the
    /// same stage state, units and attempt up to its fit (a run known in advance asks
    /// it before deciding that an iteration admits nobody).
    pub(super) fn peek_one(
        &mut self,
        m: StepIx,
        p: PoolIx,
        budget: u64,
        chunk: u64,
    ) -> Result<Outlook, HostError> {
        let t = self.now;
        self.shared.stage_q[m] = admission_stage_q(budget, self.steps[m].residents.len());
        let shared = &self.shared;
        let units_for = admission_units(shared, chunk, budget);
        match self.info[p].tier {
            Some(tp) => {
                let (pool, tier) = self.pools.pair(p, tp);
                pool.peek_next_tiered(t, shared, Some(tier), units_for)
            }
            None => self.pools[p].peek_next_tiered(t, shared, None, units_for),
        }
        .map_err(self.engine(p))
    }

    /// One admission attempt of R15 step 2 on pool `p`: the header gives
    /// `hit + min(sequence − hit, chunk, budget)` units; a hold with a tier hit
    /// takes no tokens until its load completes (R12). Returns the tokens the
    /// admitted session takes, `None` when nothing was admitted.
    pub(super) fn admit_one(
        &mut self,
        m: StepIx,
        p: PoolIx,
        budget: u64,
        chunk: u64,
        io: &mut Io<'_>,
    ) -> Result<Option<u64>, HostError> {
        let t = self.now;
        self.shared.stage_q[m] = admission_stage_q(budget, self.steps[m].residents.len());
        let shared = &self.shared;
        let units_for = admission_units(shared, chunk, budget);
        let r = match self.info[p].tier {
            Some(tp) => {
                let (pool, tier) = self.pools.pair(p, tp);
                pool.admit_next_tiered(t, shared, Some(tier), units_for)
            }
            None => self.pools[p].admit_next_tiered(t, shared, None, units_for),
        }
        .map_err(self.engine(p))?;
        let Admission::Admitted {
            session,
            hit,
            units,
        } = r
        else {
            self.after_op(p, io)?;
            return Ok(None);
        };
        let load = self.pools[p].notices().iter().find_map(|n| match *n {
            Notice::TierLoad { units, work, .. } => Some((units.0, work)),
            _ => None,
        });
        self.after_op(p, io)?;
        let x = &mut self.shared.sess[session];
        let resumed = x.admitted_once;
        x.admitted_once = true;
        x.state = State::Resident(m);
        x.computed = hit.0;
        if x.t_admit.is_nan() {
            x.t_admit = t;
        }
        let remote = x.remote;
        let prompt = x.prompt;
        let tokens = if load.is_some() || remote {
            0
        } else {
            units.0 - hit.0
        };
        let info = &mut self.info[p];
        if resumed {
            info.resumed_admissions += 1;
            info.hit_resumed += hit.0;
        } else {
            info.new_admissions += 1;
            info.hit_new += hit.0;
            info.prompt_new += prompt;
            info.tier_new += load.map_or(0, |(u, _)| u);
        }
        if let Some((units, work)) = load {
            let x = &mut self.shared.sess[session];
            x.loading = true;
            x.load_gen = x.load_gen.wrapping_add(1);
            let gen_ = x.load_gen;
            // The pool logged the load as its `tier_load` event (written by after_op).
            let l = self.info[p].link.expect("a pool with a tier hit spills");
            self.submit(
                p,
                l,
                work,
                JobKind::Load {
                    session,
                    gen_,
                    units,
                },
            )?;
        }
        if remote {
            self.start_transfer(p, session, hit.0, io)?;
        }
        let st = &mut self.steps[m];
        st.remote_admits += usize::from(remote);
        st.residents.push(session);
        if tokens > 0 {
            self.took(
                m,
                Take {
                    s: session,
                    n: tokens,
                    kind: TakeKind::Admit,
                },
            );
        }
        let st = &mut self.steps[m];
        st.admitted.push(Admitted {
            session,
            resumed,
            hit,
            tier_hit: Units(load.map_or(0, |(u, _)| u)),
            prompt: Units(prompt),
            tokens,
        });
        Ok(Some(tokens))
    }
}
