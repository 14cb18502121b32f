//! What drives one pool member with a stream: the [`Member`] interface (the engine
//! here, the naive model in benches/runtime.rs), the engine as a member, and the
//! [`Driver`] that fills a member to a phase's starting state and runs it a round at a
//! time. It measures only through the [`Meter`] it is given and never chooses a
//! backend; the round's metered parts must not allocate (tests/bench_alloc.rs).

use poolrt::{Admission, Chain, Enqueued, Grown, Header, Pool, Run, RunId, SessionId, Units};

use super::BenchError;
use super::measure::Meter;
use super::stream::{BenchEnv, EVICT_BLOCKS, HoldSpec, Stream};

/// Running totals of what a member did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub admissions: u64,
    pub evictions: u64,
    pub hit_units: u64,
}

/// One pool member as the driver drives it: the engine here, the naive model in
/// the criterion bench. Every method but [`Member::make_hold`] and
/// [`Member::counts`] may be on the measured path, so none may allocate except to
/// report an error.
pub trait Member {
    type Hold;
    fn make_hold(&self, spec: &HoldSpec) -> Result<Self::Hold, BenchError>;
    /// Queues a hold; a rejection (R5) is an error: the stream is sized to fit.
    fn enqueue(
        &mut self,
        now: f64,
        s: SessionId,
        hold: Self::Hold,
        env: &BenchEnv,
    ) -> Result<(), BenchError>;
    /// One admission attempt giving the selected hold its own units; `None` when
    /// nothing was admitted.
    fn admit(&mut self, now: f64, env: &BenchEnv) -> Result<Option<SessionId>, BenchError>;
    /// Grows a holder; anything but a completed grow is an error.
    fn grow(&mut self, now: f64, s: SessionId, by: u64, env: &BenchEnv) -> Result<(), BenchError>;
    /// Sets the holder's computed units and releases it (R14).
    fn finish(
        &mut self,
        now: f64,
        s: SessionId,
        computed: u64,
        env: &BenchEnv,
    ) -> Result<(), BenchError>;
    fn counts(&mut self) -> Counts;
}

/// How the engine names itself in [`BenchError`]s.
const ENGINE: &str = "the pool";

fn engine_err(error: poolrt::Error) -> BenchError {
    BenchError::Refused {
        member: ENGINE,
        error,
    }
}

/// The engine, `poolrt::Pool`.
#[derive(Debug)]
pub struct EngineMember(pub Pool);

impl Member for EngineMember {
    type Hold = Header;

    fn make_hold(&self, spec: &HoldSpec) -> Result<Header, BenchError> {
        let chain = Chain::new(
            spec.runs
                .iter()
                .map(|&(id, len)| Run {
                    id: RunId(id),
                    len: Units(len),
                })
                .collect(),
        )
        .map_err(BenchError::Chain)?;
        Ok(Header::new(Units(spec.units), chain))
    }

    fn enqueue(
        &mut self,
        now: f64,
        s: SessionId,
        hold: Header,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        match self.0.enqueue(now, s, hold, env).map_err(engine_err)? {
            Enqueued::Queued => Ok(()),
            Enqueued::Rejected => Err(BenchError::Rejected {
                member: ENGINE,
                session: s,
            }),
        }
    }

    fn admit(&mut self, now: f64, env: &BenchEnv) -> Result<Option<SessionId>, BenchError> {
        let r = self
            .0
            .admit_next(now, env, |_, _, h| Some(h.units))
            .map_err(engine_err)?;
        Ok(match r {
            Admission::Admitted { session, .. } => Some(session),
            _ => None,
        })
    }

    fn grow(&mut self, now: f64, s: SessionId, by: u64, env: &BenchEnv) -> Result<(), BenchError> {
        match self.0.grow(now, s, Units(by), env).map_err(engine_err)? {
            Grown::Grown => Ok(()),
            outcome => Err(BenchError::GrowIncomplete {
                member: ENGINE,
                session: s,
                outcome,
            }),
        }
    }

    fn finish(
        &mut self,
        now: f64,
        s: SessionId,
        computed: u64,
        env: &BenchEnv,
    ) -> Result<(), BenchError> {
        self.0
            .set_computed(s, Units(computed))
            .map_err(engine_err)?;
        self.0.release(now, s, env).map_err(engine_err)?;
        Ok(())
    }

    fn counts(&mut self) -> Counts {
        let c = self.0.counters();
        Counts {
            admissions: c.admissions,
            evictions: c.evictions,
            hit_units: c.hit_units,
        }
    }
}

/// Which of the two streams a driver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `queue` holds wait; each admission is the enqueue of a new hold and one
    /// admission attempt, so the queue stays at its length. Holders then grow by a
    /// block and are released with everything computed, feeding the cache.
    Admission,
    /// The cache holds `entries` entries of [`EVICT_BLOCKS`] blocks and the cap is
    /// exactly that: each admission of a fresh hold of that size evicts as many
    /// blocks, and its release makes a new entry.
    Eviction,
}

/// Totals of a driver's measured work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub counts: Counts,
    /// Metered time of the enqueues and admission attempts.
    pub admit_ns: u64,
    /// Metered time of the grows, set-computeds and releases.
    pub rest_ns: u64,
}

/// What one round did: the phase's operations and the metered time of its
/// admissions and of its grows and releases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub ops: u64,
    pub admit_ns: u64,
    pub rest_ns: u64,
}

/// Drives one member with one stream, a round at a time.
pub struct Driver<M: Member> {
    pub member: M,
    pub stream: Stream,
    phase: Phase,
    prepared: Vec<(SessionId, M::Hold)>,
    holders: Vec<SessionId>,
    totals: Totals,
}

impl<M: Member> Driver<M> {
    pub fn new(member: M, stream: Stream, phase: Phase) -> Driver<M> {
        let batch = stream.shape().batch;
        Driver {
            member,
            stream,
            phase,
            prepared: Vec::with_capacity(batch),
            holders: Vec::with_capacity(batch),
            totals: Totals::default(),
        }
    }

    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Brings the member to the phase's starting state, unmeasured: `n` waiting
    /// holds (admission phase) or `n` cache entries (eviction phase).
    pub fn fill(&mut self, n: usize) -> Result<(), BenchError> {
        for _ in 0..n {
            self.stream.tick();
            let now = self.stream.now();
            match self.phase {
                Phase::Admission => {
                    let spec = self.stream.hold();
                    let hold = self.member.make_hold(&spec)?;
                    self.member
                        .enqueue(now, spec.session, hold, self.stream.env())?;
                }
                Phase::Eviction => {
                    let spec = self.stream.fresh(EVICT_BLOCKS);
                    let hold = self.member.make_hold(&spec)?;
                    let env = self.stream.env();
                    self.member.enqueue(now, spec.session, hold, env)?;
                    if self.member.admit(now, env)? != Some(spec.session) {
                        return Err(BenchError::FillNotAdmitted);
                    }
                    self.member.finish(now, spec.session, spec.units, env)?;
                    self.stream.end(spec.session);
                }
            }
        }
        self.totals.counts = self.member.counts();
        Ok(())
    }

    /// The phase's operations so far: admissions, or evictions.
    pub fn ops(&self) -> u64 {
        match self.phase {
            Phase::Admission => self.totals.counts.admissions,
            Phase::Eviction => self.totals.counts.evictions,
        }
    }

    /// One round: prepare a batch of holds (unmeasured: making a header is the
    /// host's allocation), then, metered, enqueue each and attempt one admission;
    /// then, metered apart, grow and release every holder.
    pub fn round(&mut self, meter: &mut impl Meter) -> Result<Round, BenchError> {
        let start = self.ops();
        let batch = self.stream.shape().batch;
        self.prepared.clear();
        for _ in 0..batch {
            let spec = match self.phase {
                Phase::Admission => self.stream.hold(),
                Phase::Eviction => self.stream.fresh(EVICT_BLOCKS),
            };
            let hold = self.member.make_hold(&spec)?;
            self.prepared.push((spec.session, hold));
        }
        self.holders.clear();
        meter.begin();
        for (s, hold) in self.prepared.drain(..) {
            self.stream.tick();
            let now = self.stream.now();
            self.member.enqueue(now, s, hold, self.stream.env())?;
            match self.member.admit(now, self.stream.env())? {
                Some(a) => self.holders.push(a),
                None => return Err(BenchError::NothingAdmitted),
            }
        }
        let admit_ns = meter.end();
        self.totals.admit_ns += admit_ns;
        let grow = self.stream.shape().grow_blocks * self.stream.shape().block;
        meter.begin();
        let now = self.stream.now();
        for &s in &self.holders {
            let units = self.stream.units(s);
            if grow > 0 {
                self.member.grow(now, s, grow, self.stream.env())?;
            }
            self.member
                .finish(now, s, units + grow, self.stream.env())?;
        }
        let rest_ns = meter.end();
        self.totals.rest_ns += rest_ns;
        for k in 0..self.holders.len() {
            self.stream.end(self.holders[k]);
        }
        self.totals.counts = self.member.counts();
        let ops = self.ops() - start;
        if ops == 0 {
            return Err(BenchError::IdleRound);
        }
        Ok(Round {
            ops,
            admit_ns,
            rest_ns,
        })
    }

    /// Rounds until the phase's operations (admissions, or evictions) have grown by
    /// at least `ops`.
    pub fn run(&mut self, ops: u64, meter: &mut impl Meter) -> Result<(), BenchError> {
        let start = self.ops();
        while self.ops() - start < ops {
            self.round(meter)?;
        }
        Ok(())
    }
}
