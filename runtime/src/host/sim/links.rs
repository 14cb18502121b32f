//! The link stages (R17) and what travels on them (R12, R26): evicted blocks written to
//! a pool's tier unless it holds them already, tier loads of admitted sessions, the
//! prompts handed-off sessions read (handoff.rs says what their end does), each a
//! job served first come, first served at the link's rate; and what a completed job
//! does (the tier accepts the block; the session's computed units advance).

use std::collections::VecDeque;

use crate::pool::Stored;
use crate::types::{BlockKey, SessionId, Units};

use super::super::config::HostError;
use super::super::observe::HostEvent;
use super::session::{Sess, State};
use super::{Class, Host, Io, LinkIx, PoolIx, What};

#[derive(Clone, Copy, Debug)]
pub(super) enum JobKind {
    Spill {
        tier: PoolIx,
        session: SessionId,
        key: BlockKey,
        last: f64,
    },
    Load {
        session: SessionId,
        gen_: u32,
        units: u64,
    },
    /// A handed-off session's prompt read by its decode member (R26).
    Handoff {
        session: SessionId,
        gen_: u32,
        units: u64,
    },
}

/// A job on a link: what it carries, when it completes, and its place in the event
/// order (taken when it was put on the link).
#[derive(Clone, Copy, Debug)]
pub(super) struct Job {
    kind: JobKind,
    done: f64,
    seq: u64,
}

/// One member of a link stage: a FIFO server (R17). Its jobs complete in the order
/// they came, so only the first is in the event queue: the next goes in when it
/// completes, with the time and place in the event order it was given on arrival,
/// so that the events pop in the order they would with every job queued (a link
/// backlogged with spills would otherwise fill the event queue with thousands of
/// them, and every pop would cost their heap's depth).
pub(super) struct LinkMember {
    pub(super) name: String,
    pub(super) rate: f64,
    pub(super) busy_until: f64,
    pub(super) jobs: VecDeque<Job>,
    pub(super) writes: u64,
    pub(super) loads: u64,
    pub(super) handoffs: u64,
    pub(super) work: f64,
    pub(super) busy: f64,
}

impl LinkMember {
    pub(super) fn new(name: String, rate: f64) -> LinkMember {
        LinkMember {
            name,
            rate,
            busy_until: 0.0,
            jobs: VecDeque::new(),
            writes: 0,
            loads: 0,
            handoffs: 0,
            work: 0.0,
            busy: 0.0,
        }
    }
}

impl Host<'_> {
    // ----- links and tiers (R17, R12) ---------------------------------------------------

    /// An evicted block to write to pool `p`'s tier, unless the tier holds it already.
    pub(super) fn spill(
        &mut self,
        p: PoolIx,
        session: SessionId,
        key: BlockKey,
        last: f64,
        work: f64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let (Some(tier), Some(link)) = (self.info[p].tier, self.info[p].link) else {
            return Ok(());
        };
        if self.pools[tier].has_key(&key) {
            self.info[p].spills_skipped += 1;
            return self.host_event(io, p, HostEvent::SpillSkip { session, key });
        }
        self.submit(
            p,
            link,
            work,
            JobKind::Spill {
                tier,
                session,
                key,
                last,
            },
        )
    }

    /// Puts `work` on link `l` (R17: first come, first served at its rate).
    pub(super) fn submit(
        &mut self,
        p: PoolIx,
        l: LinkIx,
        work: f64,
        kind: JobKind,
    ) -> Result<(), HostError> {
        if !work.is_finite() || work < 0.0 {
            return Err(HostError::Work {
                pool: self.info[p].name.clone(),
                value: work,
            });
        }
        let now = self.now;
        let link = &mut self.links[l];
        let duration = if link.rate.is_infinite() {
            0.0
        } else {
            work / link.rate
        };
        let done = link.busy_until.max(now) + duration;
        link.busy_until = done;
        link.busy += duration;
        link.work += work;
        match kind {
            JobKind::Spill { .. } => link.writes += 1,
            JobKind::Load { .. } => link.loads += 1,
            JobKind::Handoff { .. } => link.handoffs += 1,
        }
        self.seq += 1;
        let job = Job {
            kind,
            done,
            seq: self.seq,
        };
        link.jobs.push_back(job);
        if link.jobs.len() == 1 {
            self.push_at(job.done, Class::Link, job.seq, What::Link(l));
        }
        Ok(())
    }

    /// The job at the head of link `l` completes now.
    pub(super) fn link_done(&mut self, l: LinkIx, io: &mut Io<'_>) -> Result<(), HostError> {
        let Some(job) = self.links[l].jobs.pop_front() else {
            return Ok(());
        };
        // The next job's completion joins the event queue before anything reads it.
        if let Some(&next) = self.links[l].jobs.front() {
            self.push_at(next.done, Class::Link, next.seq, What::Link(l));
        }
        match job.kind {
            JobKind::Spill {
                tier,
                session,
                key,
                last,
            } => {
                let r = self.pools[tier]
                    .accept_spill(self.now, session, key, last, &self.shared)
                    .map_err(self.engine(tier))?;
                self.after_op(tier, io)?;
                // A stored block is the tier's own `store` event (written by after_op);
                // the host only tells the writes that changed nothing.
                let event = match r {
                    Stored::Stored(_) => None,
                    Stored::Duplicate => Some(HostEvent::StoreDuplicate { session, key }),
                    Stored::NoRoom => Some(HostEvent::StoreNoRoom { session, key }),
                };
                if let Some(event) = event {
                    self.host_event(io, tier, event)?;
                }
            }
            JobKind::Load {
                session,
                gen_,
                units,
            } => {
                let event = HostEvent::Loaded {
                    session,
                    units: Units(units),
                };
                self.load_done(session, gen_, |x| x.computed + units, event, io)?;
            }
            JobKind::Handoff {
                session,
                gen_,
                units,
            } => self.transfer_done(session, gen_, units, io)?,
        }
        Ok(())
    }

    /// A load of session `s` (generation `gen_`) ended: a tier load (R12) or a
    /// handoff's transfer (R26). Unless a preemption made it void (the session may
    /// have finished since, and left the window), its computed units become
    /// `computed(x)`, its pool is told, `event` is logged and its member woken.
    /// Whether it applied.
    pub(super) fn load_done(
        &mut self,
        s: SessionId,
        gen_: u32,
        computed: impl FnOnce(&Sess) -> u64,
        event: HostEvent,
        io: &mut Io<'_>,
    ) -> Result<bool, HostError> {
        let Some(x) = self
            .shared
            .sess
            .get_mut(s)
            .filter(|x| x.loading && x.load_gen == gen_)
        else {
            return Ok(false);
        };
        x.loading = false;
        x.computed = computed(x);
        if x.computed > x.high {
            x.high = x.computed;
            self.guard.progress(self.now);
        }
        let (p, computed, state) = (x.pool, x.computed, x.state);
        self.pools[p]
            .set_computed(s, Units(computed))
            .map_err(self.engine(p))?;
        self.host_event(io, p, event)?;
        if let State::Resident(m) = state {
            self.wake(m);
        }
        Ok(true)
    }
}
