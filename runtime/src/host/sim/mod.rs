//! The host's simulation: the [`Host`] and its event loop, which orders iteration
//! ends, arrivals, link completions and iteration starts in simulated time, and the
//! bookkeeping every part shares (the clock, occupancy samples, waking step members,
//! telling observers what each pool operation did). The parts live beside it, one
//! job each: [`build`] builds the host and resolves its joins, [`session`] owns the
//! sessions and what pools read of them, [`step`] the step stages (R15, R16),
//! [`ahead`] iterations known in advance, advanced in one call,
//! [`links`] the link stages with spill writes and tier loads (R17, R12),
//! [`handoff`] sessions moving from a prefill family to a decode family (R25–R27),
//! [`summary`] the report and [`progress`] the no-progress guard. docs/HOST.md
//! states the procedures and the decisions taken; the code follows it step by step. Pools are driven only through the
//! engine's public operations. Once warm, an iteration allocates nothing per
//! admission: its lists are reused buffers (a session's content chain is built once,
//! when it arrives).

// Indexing here is by typed entity references into the host's own [`Table`]s (and by
// loop counters over its own reused buffers): an index out of range is a broken
// invariant, and `Table` panics for it with a message in one place (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The
// workspace denies `indexing_slicing` in library code, and the modules that allow it
// say why (docs/ARCHITECTURE.md, "Lints"); the host's hot loop is written this way on
// purpose, as Cranelift's code indexes its `PrimaryMap`s.
#![allow(clippy::indexing_slicing)]

mod admission;
mod ahead;
mod build;
mod handoff;
mod links;
mod progress;
mod route;
mod session;
mod step;
mod summary;
mod table;

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::Ordering as AtomicOrdering;

use crate::config::QueryKind;
use crate::event::Notice;
use crate::pool::Pool;
use crate::trace::SessionSource;
use crate::types::{Run, SessionId, Units};

use super::RunOptions;
use super::config::{AttrSpec, HostError};
use super::log::JsonLog;
use super::observe::{HostEvent, Iteration, Latency, Observer, PoolEvent, PoolEventKind};
use super::percentile::Latencies;
use super::report::Samples;
use super::report::{Occupancy, Report};
use links::LinkMember;
use progress::Guard;
use session::{AttrSource, PoolQ, Shared};
use step::StepMember;
use table::{Ix, Table};

/// A pool member as the host sees it.
struct PoolInfo {
    name: String,
    cap_units: Option<u64>,
    cap_blocks: Option<u64>,
    block: u64,
    served_by: Vec<StepIx>,
    tier: Option<PoolIx>,
    link: Option<LinkIx>,
    is_tier: bool,
    sessions: u64,
    host_rejected: u64,
    new_admissions: u64,
    resumed_admissions: u64,
    hit_new: u64,
    prompt_new: u64,
    hit_resumed: u64,
    tier_new: u64,
    spills_skipped: u64,
    allocated: Occupancy,
    used: Occupancy,
    /// A fleet's entry member: the TTFT of the sessions routed here (a sketch);
    /// `Unkept` elsewhere.
    ttft: Latencies,
    /// `handoff` (R25): where its sessions continue once their prompt is computed.
    handoff: Option<handoff::HandoffInfo>,
    /// Some entry family hands off into this member's family (R25).
    is_target: bool,
}

impl PoolInfo {
    fn new(name: String, cap_units: Option<u64>, cap_blocks: Option<u64>, block: u64) -> PoolInfo {
        PoolInfo {
            name,
            cap_units,
            cap_blocks,
            block,
            served_by: Vec::new(),
            tier: None,
            link: None,
            is_tier: false,
            sessions: 0,
            host_rejected: 0,
            new_admissions: 0,
            resumed_admissions: 0,
            hit_new: 0,
            prompt_new: 0,
            hit_resumed: 0,
            tier_new: 0,
            spills_skipped: 0,
            allocated: Occupancy::default(),
            used: Occupancy::default(),
            ttft: Latencies::Unkept,
            handoff: None,
            is_target: false,
        }
    }
}

/// A pool member: its index in `Host::pools` and `Host::info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PoolIx(u32);

/// A step-stage member: its index in `Host::steps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StepIx(u32);

/// A link-stage member: its index in `Host::links`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LinkIx(u32);

macro_rules! entity {
    ($($t:ident),*) => {$(
        impl Ix for $t {
            fn from_ix(i: usize) -> $t {
                $t(u32::try_from(i).expect("fewer than 2^32 members of one kind"))
            }

            fn ix(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}

entity!(PoolIx, StepIx, LinkIx);

/// Event classes at one time, in order: iteration ends (so what is told at an
/// iteration's end shows the queues before the next arrivals, as vLLM's steps do),
/// then arrivals (not in the queue; R15: "sessions arriving at time t are queued
/// before an iteration that starts at t"), then link completions (a load done at t
/// lets its session compute in an iteration starting at t), then iteration starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    End,
    Link,
    Start,
}

#[derive(Clone, Copy, Debug)]
enum What {
    End(StepIx),
    Link(LinkIx),
    Start(StepIx),
}

/// An event in the queue, ordered by (time, class, push order): the least first.
#[derive(Clone, Copy, Debug)]
struct Ev {
    t: f64,
    class: Class,
    seq: u64,
    what: What,
}

impl PartialEq for Ev {
    fn eq(&self, other: &Ev) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ev {}

impl PartialOrd for Ev {
    fn partial_cmp(&self, other: &Ev) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ev {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event.
    fn cmp(&self, other: &Ev) -> Ordering {
        other
            .t
            .total_cmp(&self.t)
            .then(other.class.cmp(&self.class))
            .then(other.seq.cmp(&self.seq))
    }
}

/// Who watches a run besides the report: the JSON-lines log and the caller's
/// observer, each optional; and the progress callback.
struct Io<'a> {
    log: Option<JsonLog<'a>>,
    observer: Option<&'a mut dyn Observer>,
    /// Whether any of them reads pool events (the pools log only then).
    events: bool,
    progress: Option<&'a mut dyn FnMut(u64, u64)>,
}

impl Io<'_> {
    /// Whether anyone reads iterations (so the host builds them only then).
    fn iterations(&self) -> bool {
        self.log.is_some() || self.observer.is_some()
    }

    fn iteration(&mut self, it: &Iteration<'_>) -> io::Result<()> {
        if let Some(log) = self.log.as_mut() {
            log.iteration(it)?;
        }
        if let Some(o) = self.observer.as_mut() {
            o.iteration(it)?;
        }
        Ok(())
    }

    fn event(&mut self, ev: &PoolEvent<'_>) -> io::Result<()> {
        if let Some(log) = self.log.as_mut() {
            log.event(ev)?;
        }
        if let Some(o) = self.observer.as_mut().filter(|o| o.wants_events()) {
            o.event(ev)?;
        }
        Ok(())
    }

    fn latency(&mut self, l: &Latency) -> io::Result<()> {
        if let Some(o) = self.observer.as_mut() {
            o.latency(l)?;
        }
        Ok(())
    }
}

/// The reference host, built for one workload. See the module documentation.
pub struct Host<'w> {
    /// Where the sessions come from: read one at a time, at the previous one's
    /// arrival, so that only the window of live sessions is kept.
    src: Box<dyn SessionSource + 'w>,
    src_name: String,
    attr_specs: Vec<AttrSpec>,
    attr_sources: Vec<AttrSource>,
    /// How many of the source's field names `attr_sources` was resolved against.
    attr_fields: usize,
    previous_arrival: f64,
    /// The prompt runs of the session at `next_arrival` (read, not yet arrived).
    next_runs: Vec<Run>,
    /// Every session older than this has ended (`trim`).
    live_from: SessionId,
    finished: u64,
    rejected: u64,
    /// What exact percentile lists reserve: (sessions, inter-token gaps), when known.
    exact_reserve: (usize, usize),
    pools: Table<PoolIx, Pool>,
    info: Table<PoolIx, PoolInfo>,
    steps: Table<StepIx, StepMember>,
    links: Table<LinkIx, LinkMember>,
    shared: Shared,
    /// Pool members sessions are routed to, round-robin by serial unless routed.
    entries: Vec<PoolIx>,
    /// `route by` (R22): chooses the entry member at arrival instead.
    router: Option<route::Router>,
    /// The families entry families hand off into (R25), with their routes.
    targets: Vec<handoff::Target>,
    /// The handoffs' figures for the report (R25–R27).
    handoffs: handoff::Totals,
    events: BinaryHeap<Ev>,
    seq: u64,
    next_arrival: SessionId,
    now: f64,
    done: u64,
    /// The report's latency samples: an observer the host always has.
    samples: Samples,
    output_tokens: u64,
    computed_tokens: u64,
    victims: Vec<SessionId>,
    /// The no-progress guard (progress.rs).
    guard: Guard,
    /// Whether runs known in advance may be taken (ahead.rs), and how many
    /// iterations were.
    run_ahead: bool,
    ahead: u64,
    /// Each step member's decodes deferred in runs known in advance (ahead.rs).
    deferred: Table<StepIx, ahead::Deferred>,
    /// Whether some pool keeps service counters (R30): takes are charged only then,
    /// so a spec without `fair` pays nothing per take.
    charges: bool,
}

impl Host<'_> {
    /// Replays the whole workload and reports. Consumes the host: a replay is done
    /// once.
    pub fn run(mut self, options: RunOptions<'_>) -> Result<Report, HostError> {
        let log = options.log.map(JsonLog::new);
        let events = log.is_some() || options.observer.as_ref().is_some_and(|o| o.wants_events());
        let mut io = Io {
            log,
            observer: options.observer,
            events,
            progress: options.progress,
        };
        if io.events {
            for p in self.pools.iter_mut() {
                p.set_logging(true);
            }
        }
        self.guard = Guard::new(options.progress_bound.unwrap_or(self.progress_bound()));
        // Pool events are drained after each operation the ordinary path makes, so a
        // reader of them (the log) sees no run; iterations and latencies are told by
        // `end_iteration` as ever.
        self.run_ahead = !options.one_at_a_time && !io.events;
        self.samples = self.samples(options.latencies);
        self.pull()?;
        loop {
            if options
                .stop
                .is_some_and(|s| s.load(AtomicOrdering::Relaxed))
            {
                return Err(HostError::Interrupted);
            }
            let ta = self.shared.sess.get(self.next_arrival).map(|s| s.arrival);
            let te = self.events.peek().copied();
            match (ta, te) {
                (None, None) => break,
                (Some(a), e)
                    if e.is_none_or(|e| a < e.t || (a == e.t && e.class != Class::End)) =>
                {
                    self.advance(a);
                    self.trim();
                    while self
                        .shared
                        .sess
                        .get(self.next_arrival)
                        .is_some_and(|s| s.arrival <= a)
                    {
                        self.arrive(self.next_arrival, &mut io)?;
                        self.next_arrival = SessionId(self.next_arrival.0 + 1);
                        self.pull()?;
                    }
                }
                _ => {
                    let Some(ev) = self.events.pop() else { break };
                    self.advance(ev.t);
                    match ev.what {
                        What::End(m) => {
                            self.end_of(m, &mut io)?;
                            // The next iteration starts at this time, after arrivals
                            // and whatever else is due now. With nothing else due it
                            // would be the next event popped: it is taken here, as
                            // the loop would take it, without the queue.
                            if self.next_event() > self.now {
                                self.seq += 1;
                                self.sample();
                                self.start(m, &mut io)?;
                            } else {
                                self.push(self.now, Class::Start, What::Start(m));
                            }
                        }
                        What::Link(l) => self.link_done(l, &mut io)?,
                        What::Start(m) => self.start(m, &mut io)?,
                    }
                }
            }
            self.sample();
        }
        self.catch_up_all()?;
        if !options.allow_unfinished {
            self.deadlocked()?;
        }
        if let Some(n) = options.iterations_ahead {
            *n = self.ahead;
        }
        if let Some(n) = options.decodes_deferred {
            *n = self.deferred.iter().map(|d| d.decodes).sum();
        }
        let report = self.report();
        if let Some(log) = &mut io.log {
            log.complete(&report)?;
        }
        Ok(report)
    }

    /// A Start of member `m`: iterations known in advance go in one call (ahead.rs),
    /// else the ordinary iteration.
    fn start(&mut self, m: StepIx, io: &mut Io<'_>) -> Result<(), HostError> {
        if !self.run_ahead(m, io)? {
            self.start_iteration(m, io)?;
            let st = &mut self.steps[m];
            st.scheduled = st.in_flight;
        }
        Ok(())
    }

    // ----- time and bookkeeping -------------------------------------------------------

    fn advance(&mut self, t: f64) {
        self.now = t;
        for p in self.info.iter_mut() {
            p.allocated.advance(t);
            p.used.advance(t);
        }
    }

    fn sample(&mut self) {
        for (p, pool) in self.info.iter_mut().zip(&self.pools) {
            let a = pool.allocated().0;
            p.allocated.set(a);
            p.used.set(a + pool.cached().0);
        }
    }

    fn push(&mut self, t: f64, class: Class, what: What) {
        self.seq += 1;
        self.push_at(t, class, self.seq, what);
    }

    /// Pushes an event whose place in the push order, `seq`, was taken earlier (a
    /// link's next job: links.rs).
    fn push_at(&mut self, t: f64, class: Class, seq: u64, what: What) {
        self.events.push(Ev {
            t,
            class,
            seq,
            what,
        });
    }

    /// Schedules an iteration of an idle step member now.
    fn wake(&mut self, m: StepIx) {
        if !self.steps[m].scheduled {
            self.steps[m].scheduled = true;
            self.push(self.now, Class::Start, What::Start(m));
        }
    }

    fn wake_pool(&mut self, p: PoolIx) {
        for k in 0..self.info[p].served_by.len() {
            let m = self.info[p].served_by[k];
            self.wake(m);
        }
    }

    fn done_one(&mut self, io: &mut Io<'_>) {
        self.done += 1;
        self.guard.progress(self.now);
        if let Some(f) = io.progress.as_mut() {
            // Asked only for a progress bar: a trace file counts its rows for it.
            let total = self.src.len_hint().unwrap_or(self.shared.sess.end());
            f(self.done, total);
        }
    }

    /// A latency moment: into the report's samples, and to the observer.
    fn latency(&mut self, l: Latency, io: &mut Io<'_>) -> Result<(), HostError> {
        self.samples.latency(&l)?;
        io.latency(&l)?;
        Ok(())
    }

    fn refresh(&mut self, p: PoolIx) {
        let pool = &self.pools[p];
        self.shared.pool_q[p] = PoolQ {
            free: pool.query(QueryKind::Free),
            used: pool.query(QueryKind::Used),
            cached: pool.query(QueryKind::Cached),
            cap: pool.query(QueryKind::Cap),
            queued: pool.query(QueryKind::Queued),
        };
    }

    fn engine(&self, p: PoolIx) -> impl Fn(crate::Error) -> HostError + '_ {
        move |error| HostError::Engine {
            pool: self.info[p].name.clone(),
            error,
        }
    }

    /// After every operation on pool `p`: its events go to the observers, its spills
    /// go on their link, its queryable state is refreshed.
    fn after_op(&mut self, p: PoolIx, io: &mut Io<'_>) -> Result<(), HostError> {
        if io.events {
            let info = &self.info[p];
            for r in self.pools[p].log() {
                io.event(&PoolEvent {
                    t: self.now,
                    pool: &info.name,
                    cap: info.cap_units.map(Units),
                    kind: PoolEventKind::Engine(&r.event),
                    allocated: r.allocated,
                    cached: r.cached,
                    queued: r.queued,
                })?;
            }
            self.pools[p].clear_log();
        }
        // By index: a spill operates on the host while the notices stay the pool's.
        let mut k = 0;
        while let Some(&notice) = self.pools[p].notices().get(k) {
            if let Notice::Spill {
                session,
                key,
                last,
                work,
                ..
            } = notice
            {
                self.spill(p, session, key, last, work, io)?;
            }
            k += 1;
        }
        self.refresh(p);
        Ok(())
    }

    /// A host event about pool `p`, told with the pool's state as it is now.
    fn host_event(&self, io: &mut Io<'_>, p: PoolIx, event: HostEvent) -> Result<(), HostError> {
        if io.events {
            let info = &self.info[p];
            let pool = &self.pools[p];
            io.event(&PoolEvent {
                t: self.now,
                pool: &info.name,
                cap: info.cap_units.map(Units),
                kind: PoolEventKind::Host(event),
                allocated: pool.allocated(),
                cached: pool.cached(),
                queued: pool.queued(),
            })?;
        }
        Ok(())
    }
}
