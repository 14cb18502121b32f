//! Disaggregation (R25–R27, docs/HOST.md "Handoffs"): a session whose prompt a
//! family with `handoff` has computed leaves that member's step stage, keeps its
//! hold there, and joins the queue of a member of the target family (by the target's
//! route, else member `serial mod n`); when that member admits it, the units of the
//! prompt it does not hit are read over the prefill member's link, first come first
//! served behind the link's other jobs, with the handoff's compiled work; when the
//! transfer ends the prefill hold is released (R14) and the session's prompt but its
//! last unit is computed. This file also keeps each handed-off session's TTFT split
//! for the report. It drives pools only through their operations.

use crate::env::Env;
use crate::policy::WorkFn;
use crate::pool::Enqueued;
use crate::types::{Header, SessionId, Units};

use super::super::config::{HandoffInput, HostError};
use super::super::observe::HostEvent;
use super::links::JobKind;
use super::route::Router;
use super::session::{Sess, State};
use super::{Host, Io, LinkIx, PoolIx, StepIx};

/// A member's `handoff` in the host's terms.
pub(super) struct HandoffInfo {
    /// Its target family: an index into `Host::targets`.
    pub(super) target: usize,
    pub(super) link: LinkIx,
    pub(super) work: WorkFn,
    pub(super) row: Vec<HandoffInput>,
    pub(super) ctx: Vec<HandoffInput>,
}

/// A family some entry family hands off into.
pub(super) struct Target {
    /// Its declaration index.
    pub(super) decl: u32,
    pub(super) members: Vec<PoolIx>,
    /// Its `route by` (R22), if it has one.
    pub(super) router: Option<Router>,
}

/// What the report says of the handoffs: counts, and the TTFT of the handed-off
/// sessions split into five parts that add up to it (R27).
#[derive(Debug, Default)]
pub(super) struct Totals {
    pub(super) handoffs: u64,
    pub(super) transfers: u64,
    pub(super) units: u64,
    /// Handed-off sessions that produced their first token, and the sums of their
    /// TTFT's parts, in seconds.
    pub(super) first_tokens: u64,
    pub(super) parts: [f64; 5],
    row: Vec<f64>,
    ctx: Vec<f64>,
}

impl Totals {
    /// Session `x`'s first token at `t`: its TTFT in five parts (R27): prefill queue
    /// (arrival to first admission), prefill (to the handoff), decode queue (to its
    /// admission on the decode side), transfer (to the end of the transfer; 0 when a
    /// preemption there made it void) and first decode (to the first token).
    pub(super) fn first_token(&mut self, x: &Sess, t: f64) {
        let kv = if x.t_kv.is_nan() { x.t_dadmit } else { x.t_kv };
        let marks = [x.arrival, x.t_admit, x.t_handoff, x.t_dadmit, kv, t];
        for (i, part) in self.parts.iter_mut().enumerate() {
            *part += marks[i + 1] - marks[i];
        }
        self.first_tokens += 1;
    }
}

impl Host<'_> {
    /// R25: session `s`, resident of step member `m`, has its whole prompt computed
    /// in a pool that hands off. It leaves `m` without a token, keeps its hold (the
    /// decode side reads it), and joins the queue of a target member.
    pub(super) fn hand_off(
        &mut self,
        m: StepIx,
        s: SessionId,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let st = &mut self.steps[m];
        if let Some(pos) = st.residents.iter().position(|&r| r == s) {
            st.residents.remove(pos);
        }
        let p = self.shared.sess[s].pool;
        let prompt = self.shared.sess[s].prompt;
        let Some(t) = self.info[p].handoff.as_ref().map(|h| h.target) else {
            return Ok(());
        };
        self.host_event(
            io,
            p,
            HostEvent::Handoff {
                session: s,
                units: Units(prompt),
            },
        )?;
        let chain = self.pools[p]
            .held_chain(s)
            .cloned()
            .ok_or(crate::Error::NotHolding(s))
            .map_err(self.engine(p))?;
        let header = Header {
            units: Units(prompt),
            reserve: Units(prompt),
            chain,
            max_hit: Some(Units(prompt - 1)),
        };
        let d = self.target_member(t, s, &header);
        self.handoffs.handoffs += 1;
        let x = &mut self.shared.sess[s];
        x.state = State::Waiting;
        x.pool = d;
        x.from = Some(p);
        x.remote = true;
        x.computed = 0;
        x.caught_up = false;
        // Its admission on the decode side is that pool's first (its hit rate).
        x.admitted_once = false;
        x.t_handoff = self.now;
        self.info[d].sessions += 1;
        let r = self.pools[d]
            .enqueue(self.now, s, header, &self.shared)
            .map_err(self.engine(d))?;
        self.after_op(d, io)?;
        match r {
            Enqueued::Queued => self.wake_pool(d),
            // The arrival check makes this unreachable for a target family whose
            // members share a cap (every family's do); refused all the same, the
            // prefill hold is given back.
            Enqueued::Rejected => {
                self.release_prefill(s, io)?;
                self.shared.sess[s].state = State::Rejected;
                self.rejected += 1;
                self.done_one(io);
            }
        }
        Ok(())
    }

    /// The member of target family `t` a handed-off session joins: its route's
    /// choice (R22), else member `serial mod n`.
    fn target_member(&mut self, t: usize, s: SessionId, header: &Header) -> PoolIx {
        match self.targets[t].router.take() {
            Some(mut r) => {
                let d = self.score(&mut r, s, header);
                self.targets[t].router = Some(r);
                d
            }
            None => {
                let members = &self.targets[t].members;
                members[(s.0 % members.len() as u64) as usize]
            }
        }
    }

    /// R26: handed-off session `s` was admitted in decode member `d` hitting `hit`
    /// units there; the rest of its prompt is read over the prefill member's link.
    pub(super) fn start_transfer(
        &mut self,
        d: PoolIx,
        s: SessionId,
        hit: u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let x = &mut self.shared.sess[s];
        let Some(from) = x.from else {
            return Ok(());
        };
        let units = x.prompt - hit;
        x.remote = false;
        x.loading = true;
        x.load_gen = x.load_gen.wrapping_add(1);
        x.t_dadmit = self.now;
        let gen_ = x.load_gen;
        let Some(h) = self.info[from].handoff.as_ref() else {
            return Ok(());
        };
        let attrs = self.shared.attrs(s);
        let value = |i: &HandoffInput| match *i {
            HandoffInput::Units => units as f64,
            HandoffInput::Attr(a) => attrs
                .and_then(|v| v.get(a as usize))
                .copied()
                .unwrap_or(f64::NAN),
        };
        let totals = &mut self.handoffs;
        totals.row.clear();
        totals.row.extend(h.row.iter().map(value));
        totals.ctx.clear();
        totals.ctx.extend(h.ctx.iter().map(value));
        let work = h.work.work(&totals.row, &totals.ctx);
        let link = h.link;
        totals.units += units;
        self.host_event(
            io,
            d,
            HostEvent::Transfer {
                session: s,
                units: Units(units),
                work,
            },
        )?;
        self.submit(
            from,
            link,
            work,
            JobKind::Handoff {
                session: s,
                gen_,
                units,
            },
        )
    }

    /// R26: the transfer of session `s` (generation `gen_`) completed. The prefill
    /// hold is released; unless a preemption on the decode side made it void, the
    /// session has its prompt but the last unit computed there.
    pub(super) fn transfer_done(
        &mut self,
        s: SessionId,
        gen_: u32,
        units: u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        self.release_prefill(s, io)?;
        let event = HostEvent::Received {
            session: s,
            units: Units(units),
        };
        // vLLM's decode side recomputes the last prompt token to sample the first
        // output token (its KV connector loads the rest).
        if self.load_done(s, gen_, |x| x.prompt - 1, event, io)? {
            self.shared.sess[s].t_kv = self.now;
            self.handoffs.transfers += 1;
        }
        Ok(())
    }

    /// Releases session `s`'s hold on the prefill side, if it still has one (R14:
    /// its computed blocks are cached there).
    fn release_prefill(&mut self, s: SessionId, io: &mut Io<'_>) -> Result<(), HostError> {
        let Some(from) = self.shared.sess.get_mut(s).and_then(|x| x.from.take()) else {
            return Ok(());
        };
        self.pools[from]
            .release(self.now, s, &self.shared)
            .map_err(self.engine(from))?;
        self.after_op(from, io)?;
        self.wake_pool(from);
        Ok(())
    }
}
