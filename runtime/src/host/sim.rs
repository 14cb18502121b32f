//! The host's simulation: sessions, step-stage iterations (R15, R16), link service
//! (R17) with spill writes and tier loads (R12), and the event loop that orders them
//! in simulated time. docs/HOST.md states the procedures and the decisions taken; this
//! file follows it step by step. Pools are driven only through the engine's public
//! operations. Once warm, an iteration allocates nothing per admission: its lists are
//! reused buffers (a session's content chain is built once, when it arrives).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{PoolRef, Query, QueryKind, StageRef, Target};
use crate::env::{Env, default_query};
use crate::event::Notice;
use crate::pool::{Admission, Enqueued, Grown, Hit, Pool, Stored};
use crate::trace::{HOST_RUN_IDS, Workload};
use crate::types::{BlockKey, Chain, Header, Limit, Run, RunId, SessionId, Units};

use super::RunOptions;
use super::config::{
    HostConfig, HostError, IterTime, LinkConfig, StageKind, StepConfig, TimeVar, member_name,
};
use super::log::{EventLine, IterLine, LogSink};
use super::report::{LinkReport, Occupancy, Percentiles, PoolReport, Report, StageReport, ratio};

const NONE: u32 = u32::MAX;

/// Event classes at one time, in order: iteration ends (so a line logged at an
/// iteration's end shows the queues before the next arrivals, as vLLM's steps do),
/// then arrivals (not in the queue; R15: "sessions arriving at time t are queued
/// before an iteration that starts at t"), then link completions (a load done at t
/// lets its session compute in an iteration starting at t), then iteration starts.
const END: u8 = 0;
const LINK: u8 = 1;
const START: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Waiting,
    /// Resident of this step member.
    Resident(u32),
    Done,
    Rejected,
}

#[derive(Clone, Debug)]
struct Sess {
    arrival: f64,
    prompt: u64,
    output: u64,
    /// Its prompt runs in the host's run arena.
    runs: (usize, usize),
    pool: u32,
    state: State,
    generated: u64,
    /// Units of its sequence whose KV exists (mirrors the pool's computed).
    computed: u64,
    /// Its last execution sampled a token: its next take is a decode.
    caught_up: bool,
    admitted_once: bool,
    /// A tier load is under way (generation `load_gen`): it takes no tokens.
    loading: bool,
    load_gen: u32,
    first_token: f64,
    last_token: f64,
}

impl Sess {
    fn seq(&self) -> u64 {
        self.prompt + self.generated
    }
}

/// A pool member's queryable state, refreshed after every operation on it.
#[derive(Clone, Copy, Debug, Default)]
struct PoolQ {
    free: f64,
    used: f64,
    cached: f64,
    cap: f64,
    queued: f64,
}

#[derive(Clone, Copy, Debug)]
struct StageQ {
    budget_left: f64,
    residents: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StageIdx {
    Step(u32),
    Link(u32),
}

/// What the pools read through [`Env`]: attributes, residency and queries. Kept apart
/// from the pools so that one can be borrowed mutably while this is read.
struct Shared {
    sess: Vec<Sess>,
    /// Attribute values, `n_attrs` per session. They never change in this host, so
    /// they are answered for ended sessions too (S3 then reads the same values).
    attrs: Vec<f64>,
    n_attrs: usize,
    pool_q: Vec<PoolQ>,
    stage_q: Vec<StageQ>,
    pool_flat: Vec<Vec<u32>>,
    stage_flat: Vec<Vec<StageIdx>>,
    /// The step member whose iteration is being scheduled: `preempt lifo` victims are
    /// its residents (NONE outside an iteration).
    current: u32,
}

impl Shared {
    fn pool_index(&self, r: PoolRef) -> Option<u32> {
        self.pool_flat
            .get(r.pool as usize)?
            .get(r.member as usize)
            .copied()
    }

    fn stage_index(&self, r: StageRef) -> Option<StageIdx> {
        self.stage_flat
            .get(r.stage as usize)?
            .get(r.member as usize)
            .copied()
    }
}

impl Env for Shared {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        let i = usize::try_from(session.0).ok()?;
        self.attrs.get(i * self.n_attrs..(i + 1) * self.n_attrs)
    }

    fn is_resident(&self, session: SessionId) -> bool {
        self.current != NONE
            && self
                .sess
                .get(session.0 as usize)
                .is_some_and(|s| s.state == State::Resident(self.current))
    }

    fn query(&self, query: Query) -> f64 {
        match query.target {
            Target::Pool(r) => match self.pool_index(r) {
                Some(p) => {
                    let q = self.pool_q[p as usize];
                    match query.kind {
                        QueryKind::Free => q.free,
                        QueryKind::Used => q.used,
                        QueryKind::Cached => q.cached,
                        QueryKind::Cap => q.cap,
                        QueryKind::Queued => q.queued,
                        _ => default_query(query),
                    }
                }
                None => default_query(query),
            },
            Target::Stage(r) => match self.stage_index(r) {
                Some(StageIdx::Step(m)) => {
                    let q = self.stage_q[m as usize];
                    match query.kind {
                        QueryKind::BudgetLeft => q.budget_left,
                        QueryKind::Residents => q.residents,
                        _ => default_query(query),
                    }
                }
                _ => default_query(query),
            },
        }
    }
}

/// A pool member as the host sees it.
struct PoolInfo {
    name: String,
    cap_units: Option<u64>,
    cap_blocks: Option<u64>,
    block: u64,
    served_by: Vec<u32>,
    tier: Option<u32>,
    link: Option<u32>,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TakeKind {
    Decode,
    Cont,
    Admit,
}

#[derive(Clone, Copy, Debug)]
struct Take {
    s: SessionId,
    n: u64,
    kind: TakeKind,
}

/// One member of a step stage.
struct StepMember {
    name: String,
    budget: u64,
    seats: usize,
    chunk: u64,
    exclusive: bool,
    time: IterTime,
    /// Pool members it serves, in declaration order, member by member (K4).
    pools: Vec<u32>,
    /// Admission order (vLLM's running list).
    residents: Vec<SessionId>,
    /// A tick for it is in the event queue.
    scheduled: bool,
    /// An iteration has started and not yet ended.
    in_flight: bool,
    start: f64,
    iterations: u64,
    busy: f64,
    tokens: u64,
    peak_residents: u64,
    // The current iteration (reused buffers).
    took: Vec<Take>,
    admitted: Vec<(u64, &'static str, u64, u64)>,
    cont: Vec<(u64, u64)>,
    preempted: Vec<u64>,
    finished: Vec<u64>,
    allocated: Vec<u64>,
    ctx: Vec<f64>,
}

impl StepMember {
    fn new(name: String, c: &StepConfig) -> StepMember {
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
            allocated: Vec::new(),
            ctx: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum JobKind {
    Spill {
        tier: u32,
        session: SessionId,
        key: BlockKey,
        last: f64,
    },
    Load {
        session: SessionId,
        gen_: u32,
        units: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Job {
    kind: JobKind,
}

/// One member of a link stage: a FIFO server (R17).
struct LinkMember {
    name: String,
    rate: f64,
    busy_until: f64,
    jobs: VecDeque<Job>,
    writes: u64,
    loads: u64,
    work: f64,
    busy: f64,
}

#[derive(Clone, Copy, Debug)]
enum What {
    End(u32),
    Link(u32),
    Start(u32),
}

/// An event in the queue, ordered by (time, class, push order): the least first.
#[derive(Clone, Copy, Debug)]
struct Ev {
    t: f64,
    class: u8,
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

/// Where a run writes its log and reports progress.
struct Io<'a> {
    log: Option<LogSink<'a>>,
    progress: Option<&'a mut dyn FnMut(u64, u64)>,
}

/// The reference host, built for one workload. See the module documentation.
pub struct Host {
    source: String,
    pools: Vec<Pool>,
    info: Vec<PoolInfo>,
    steps: Vec<StepMember>,
    links: Vec<LinkMember>,
    shared: Shared,
    runs: Vec<Run>,
    /// Pool members sessions are routed to, round-robin by serial.
    entries: Vec<u32>,
    events: BinaryHeap<Ev>,
    seq: u64,
    next_arrival: usize,
    now: f64,
    done: u64,
    ttft: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
    output_tokens: u64,
    computed_tokens: u64,
    victims: Vec<SessionId>,
}

fn config_err(m: impl Into<String>) -> HostError {
    HostError::Config(m.into())
}

/// Source of one attribute's value.
enum AttrSource {
    Serial,
    Arrival,
    Prompt,
    Output,
    Field(Option<usize>, Option<f64>),
}

impl Host {
    /// Builds the host: stages and pools by member (checking the joins), sessions
    /// bound to their attributes (D3). Nothing runs yet.
    pub fn new(config: HostConfig, workload: &Workload) -> Result<Host, HostError> {
        let mut steps = Vec::new();
        let mut links = Vec::new();
        let mut stage_flat = Vec::new();
        for d in &config.stages {
            if d.count == 0 {
                return Err(config_err(format!("stage {} has no members", d.name)));
            }
            let mut members = Vec::new();
            for i in 0..d.count {
                let name = member_name(&d.name, d.count, i);
                match &d.kind {
                    StageKind::Step(c) => {
                        check_time(&d.name, c)?;
                        members.push(StageIdx::Step(steps.len() as u32));
                        steps.push(StepMember::new(name, c));
                    }
                    StageKind::Link(LinkConfig { rate }) => {
                        if rate.is_nan() || *rate <= 0.0 {
                            return Err(config_err(format!(
                                "link {} has rate {rate}; a rate must be more than 0",
                                d.name
                            )));
                        }
                        members.push(StageIdx::Link(links.len() as u32));
                        links.push(LinkMember {
                            name,
                            rate: *rate,
                            busy_until: 0.0,
                            jobs: VecDeque::new(),
                            writes: 0,
                            loads: 0,
                            work: 0.0,
                            busy: 0.0,
                        });
                    }
                }
            }
            stage_flat.push(members);
        }

        let mut pools = Vec::new();
        let mut info = Vec::new();
        let mut pool_flat = Vec::new();
        let mut joins = Vec::new();
        for (d, decl) in config.pools.into_iter().enumerate() {
            if decl.members.is_empty() {
                return Err(config_err(format!("pool {} has no members", decl.name)));
            }
            let count = decl.members.len() as u32;
            let mut flat = Vec::new();
            for (i, m) in decl.members.into_iter().enumerate() {
                let name = member_name(&decl.name, count, i as u32);
                let me = PoolRef {
                    pool: d as u32,
                    member: i as u32,
                };
                if m.config.me != me {
                    return Err(config_err(format!(
                        "pool {name}: its config says it is {:?}, but it is declaration {d}, \
                         member {i}",
                        m.config.me
                    )));
                }
                let spill = m.config.spill.as_ref().map(|s| (s.tier, s.link));
                let block = m.config.block.0;
                let (cap_units, cap_blocks) = match m.config.cap {
                    Limit::Finite(u) => (Some(u.0), Some(u.0 / block.max(1))),
                    Limit::Unbounded => (None, None),
                };
                let pool =
                    Pool::new(m.config).map_err(|e| config_err(format!("pool {name}: {e}")))?;
                flat.push(pools.len() as u32);
                joins.push((m.admit_via, spill));
                pools.push(pool);
                info.push(PoolInfo {
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
                });
            }
            pool_flat.push(flat);
        }

        let shared = Shared {
            sess: Vec::new(),
            attrs: Vec::new(),
            n_attrs: config.attrs.len(),
            pool_q: vec![PoolQ::default(); pools.len()],
            stage_q: vec![
                StageQ {
                    budget_left: f64::INFINITY,
                    residents: 0.0,
                };
                steps.len()
            ],
            pool_flat,
            stage_flat,
            current: NONE,
        };

        for (p, (admit_via, spill)) in joins.into_iter().enumerate() {
            for r in admit_via {
                match shared.stage_index(r) {
                    Some(StageIdx::Step(m)) => {
                        if !info[p].served_by.contains(&m) {
                            info[p].served_by.push(m);
                            steps[m as usize].pools.push(p as u32);
                        }
                    }
                    _ => {
                        return Err(config_err(format!(
                            "pool {} is admitted via {r:?}, which is not a step-stage member",
                            info[p].name
                        )));
                    }
                }
            }
            if let Some((tier, link)) = spill {
                let tp = shared.pool_index(tier).ok_or_else(|| {
                    config_err(format!(
                        "pool {} spills into {tier:?}, which is not a pool member",
                        info[p].name
                    ))
                })?;
                if tp as usize == p {
                    return Err(config_err(format!(
                        "pool {} spills into itself",
                        info[p].name
                    )));
                }
                let Some(StageIdx::Link(l)) = shared.stage_index(link) else {
                    return Err(config_err(format!(
                        "pool {} spills via {link:?}, which is not a link-stage member",
                        info[p].name
                    )));
                };
                if info[tp as usize].block != info[p].block {
                    return Err(config_err(format!(
                        "pool {} (block {}) spills into {} (block {}): the reference host needs \
                         a pool and its tier to have the same block",
                        info[p].name,
                        info[p].block,
                        info[tp as usize].name,
                        info[tp as usize].block
                    )));
                }
                info[p].tier = Some(tp);
                info[p].link = Some(l);
                info[tp as usize].is_tier = true;
            }
        }
        let entries: Vec<u32> = (0..info.len() as u32)
            .filter(|&p| !info[p as usize].served_by.is_empty())
            .collect();
        if let Some(p) = info.iter().find(|p| p.served_by.is_empty() && !p.is_tier) {
            return Err(config_err(format!(
                "pool {} is neither admitted via a step stage nor a tier another pool spills \
                 into; the reference host has no sessions to give it",
                p.name
            )));
        }
        if entries.is_empty() {
            return Err(config_err(
                "no pool is admitted via a step stage: sessions have nowhere to go",
            ));
        }

        let mut host = Host {
            source: workload.source.clone(),
            pools,
            info,
            steps,
            links,
            shared,
            runs: Vec::new(),
            entries,
            events: BinaryHeap::new(),
            seq: 0,
            next_arrival: 0,
            now: 0.0,
            done: 0,
            ttft: Vec::new(),
            itl: Vec::new(),
            e2e: Vec::new(),
            output_tokens: 0,
            computed_tokens: 0,
            victims: Vec::new(),
        };
        host.bind(&config.attrs, workload)?;
        // Latency samples have known bounds: reserving them keeps a warm replay free
        // of reallocation.
        let n = workload.sessions.len();
        let gaps: u64 = workload
            .sessions
            .iter()
            .map(|s| s.output.saturating_sub(1))
            .sum();
        host.ttft.reserve(n);
        host.e2e.reserve(n);
        host.itl.reserve(usize::try_from(gaps).unwrap_or(0));
        for p in 0..host.pools.len() {
            host.refresh(p);
        }
        Ok(host)
    }

    /// Sessions and their attribute values (D3).
    fn bind(&mut self, attrs: &[super::AttrSpec], w: &Workload) -> Result<(), HostError> {
        let sources: Vec<AttrSource> = attrs
            .iter()
            .map(|a| match a.name.as_str() {
                "serial" => AttrSource::Serial,
                "arrival" => AttrSource::Arrival,
                "prompt" => AttrSource::Prompt,
                "output" => AttrSource::Output,
                other => AttrSource::Field(w.fields.iter().position(|f| f == other), a.default),
            })
            .collect();
        self.shared.sess.reserve(w.sessions.len());
        self.shared.attrs.reserve(w.sessions.len() * attrs.len());
        let mut previous = 0.0;
        for (i, s) in w.sessions.iter().enumerate() {
            // The readers check these; a workload built by hand may not have been.
            let runs: u64 = s.runs.iter().map(|r| r.len.0).sum();
            if s.prompt == 0
                || s.output == 0
                || (!s.runs.is_empty() && runs != s.prompt)
                || !(s.arrival >= previous && s.arrival.is_finite())
            {
                return Err(config_err(format!(
                    "session {i} of {}: prompt {} (runs {runs}), output {}, arrival {}: a                      session needs a prompt and an output of at least 1, runs adding up to                      the prompt, and a finite arrival not before the previous one",
                    w.source, s.prompt, s.output, s.arrival
                )));
            }
            previous = s.arrival;
            for (a, src) in attrs.iter().zip(&sources) {
                let v = match *src {
                    AttrSource::Serial => i as f64,
                    AttrSource::Arrival => s.arrival,
                    AttrSource::Prompt => s.prompt as f64,
                    AttrSource::Output => s.output as f64,
                    AttrSource::Field(f, default) => {
                        let given = f.and_then(|f| {
                            let f = f as u32;
                            s.extra
                                .binary_search_by_key(&f, |&(k, _)| k)
                                .ok()
                                .map(|j| s.extra[j].1)
                        });
                        match given.or(default) {
                            Some(v) => v,
                            None => {
                                return Err(HostError::MissingAttr {
                                    attr: a.name.clone(),
                                    session: i as u64,
                                    line: s.line,
                                    source: w.source.clone(),
                                });
                            }
                        }
                    }
                };
                self.shared.attrs.push(v);
            }
            let start = self.runs.len();
            self.runs.extend_from_slice(&s.runs);
            self.shared.sess.push(Sess {
                arrival: s.arrival,
                prompt: s.prompt,
                output: s.output,
                runs: (start, s.runs.len()),
                pool: NONE,
                state: State::Pending,
                generated: 0,
                computed: 0,
                caught_up: false,
                admitted_once: false,
                loading: false,
                load_gen: 0,
                first_token: f64::NAN,
                last_token: f64::NAN,
            });
        }
        Ok(())
    }

    /// Sessions in the workload.
    pub fn sessions(&self) -> usize {
        self.shared.sess.len()
    }

    /// Replays the whole workload and reports. Consumes the host: a replay is done
    /// once.
    pub fn run(mut self, options: RunOptions<'_>) -> Result<Report, HostError> {
        let mut io = Io {
            log: options.log.map(LogSink::new),
            progress: options.progress,
        };
        if io.log.is_some() {
            for p in &mut self.pools {
                p.set_logging(true);
            }
        }
        loop {
            let ta = self.shared.sess.get(self.next_arrival).map(|s| s.arrival);
            let te = self.events.peek().copied();
            match (ta, te) {
                (None, None) => break,
                (Some(a), e) if e.is_none_or(|e| a < e.t || (a == e.t && e.class != END)) => {
                    self.advance(a);
                    while self
                        .shared
                        .sess
                        .get(self.next_arrival)
                        .is_some_and(|s| s.arrival <= a)
                    {
                        self.arrive(self.next_arrival, &mut io)?;
                        self.next_arrival += 1;
                    }
                }
                _ => {
                    let Some(ev) = self.events.pop() else { break };
                    self.advance(ev.t);
                    match ev.what {
                        What::End(m) => {
                            self.end_iteration(m, &mut io)?;
                            // The next iteration starts at this time, after arrivals.
                            self.push(self.now, START, What::Start(m));
                        }
                        What::Link(l) => self.link_done(l, &mut io)?,
                        What::Start(m) => {
                            self.start_iteration(m, &mut io)?;
                            let st = &mut self.steps[m as usize];
                            st.scheduled = st.in_flight;
                        }
                    }
                }
            }
            self.sample();
        }
        if let Some(log) = &mut io.log {
            log.flush()?;
        }
        Ok(self.report())
    }

    // ----- time and bookkeeping -------------------------------------------------------

    fn advance(&mut self, t: f64) {
        self.now = t;
        for p in &mut self.info {
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

    fn push(&mut self, t: f64, class: u8, what: What) {
        self.seq += 1;
        self.events.push(Ev {
            t,
            class,
            seq: self.seq,
            what,
        });
    }

    /// Schedules an iteration of an idle step member now.
    fn wake(&mut self, m: u32) {
        if !self.steps[m as usize].scheduled {
            self.steps[m as usize].scheduled = true;
            self.push(self.now, START, What::Start(m));
        }
    }

    fn wake_pool(&mut self, p: u32) {
        for k in 0..self.info[p as usize].served_by.len() {
            let m = self.info[p as usize].served_by[k];
            self.wake(m);
        }
    }

    fn done_one(&mut self, io: &mut Io<'_>) {
        self.done += 1;
        let total = self.shared.sess.len() as u64;
        if let Some(f) = io.progress.as_mut() {
            f(self.done, total);
        }
    }

    fn refresh(&mut self, p: usize) {
        let pool = &self.pools[p];
        self.shared.pool_q[p] = PoolQ {
            free: pool.query(QueryKind::Free),
            used: pool.query(QueryKind::Used),
            cached: pool.query(QueryKind::Cached),
            cap: pool.query(QueryKind::Cap),
            queued: pool.query(QueryKind::Queued),
        };
    }

    fn engine(&self, p: u32) -> impl Fn(crate::Error) -> HostError + '_ {
        move |error| HostError::Engine {
            pool: self.info[p as usize].name.clone(),
            error,
        }
    }

    /// After every operation on pool `p`: its log records go out, its spills go on
    /// their link, its queryable state is refreshed.
    fn after_op(&mut self, p: u32, io: &mut Io<'_>) -> Result<(), HostError> {
        let pi = p as usize;
        if let Some(log) = io.log.as_mut() {
            let info = &self.info[pi];
            for r in self.pools[pi].log() {
                log.line(&EventLine::from_record(
                    self.now,
                    &info.name,
                    info.cap_units,
                    r,
                ))?;
            }
            self.pools[pi].clear_log();
        }
        for k in 0..self.pools[pi].notices().len() {
            if let Notice::Spill {
                session,
                key,
                last,
                work,
                ..
            } = self.pools[pi].notices()[k]
            {
                self.spill(p, session, key, last, work, io)?;
            }
        }
        self.refresh(pi);
        Ok(())
    }

    /// A host-made log line about pool `p` (its state as it is now).
    fn host_line(
        &self,
        io: &mut Io<'_>,
        p: u32,
        ev: &'static str,
        session: SessionId,
        fill: impl FnOnce(&mut EventLine<'_>),
    ) -> Result<(), HostError> {
        if let Some(log) = io.log.as_mut() {
            let info = &self.info[p as usize];
            let pool = &self.pools[p as usize];
            let mut line = EventLine {
                t: self.now,
                pool: &info.name,
                ev,
                session: session.0,
                cap: info.cap_units,
                allocated: pool.allocated().0,
                cached: pool.cached().0,
                queued: pool.queued() as u64,
                ..EventLine::default()
            };
            fill(&mut line);
            log.line(&line)?;
        }
        Ok(())
    }

    // ----- arrivals -------------------------------------------------------------------

    /// Session `i` arrives: routed round-robin by serial to an entry pool member,
    /// refused if it could never finish there, else queued (R5 may still refuse it).
    fn arrive(&mut self, i: usize, io: &mut Io<'_>) -> Result<(), HostError> {
        let p = self.entries[i % self.entries.len()];
        let s = SessionId(i as u64);
        let info = &mut self.info[p as usize];
        info.sessions += 1;
        let (prompt, output) = {
            let x = &mut self.shared.sess[i];
            x.pool = p;
            x.state = State::Waiting;
            (x.prompt, x.output)
        };
        // A session needs prompt + output − 1 units of KV to produce its last token
        // (vLLM refuses such a request by max_model_len). R5 refuses prompts above the
        // cap itself; this refuses one whose prompt fits but whose outputs never will,
        // which would otherwise be preempted and recomputed forever.
        let need = prompt + output - 1;
        if let Some(cap) = info.cap_blocks
            && Units(prompt).blocks_up(info.block) <= cap
            && Units(need).blocks_up(info.block) > cap
        {
            info.host_rejected += 1;
            self.shared.sess[i].state = State::Rejected;
            self.host_line(io, p, "reject", s, |l| l.need = Some(need))?;
            self.done_one(io);
            return Ok(());
        }
        let chain = self.chain(i)?;
        let header = Header {
            units: Units(prompt),
            reserve: Units(prompt),
            chain,
            max_hit: Some(Units(prompt - 1)),
        };
        let r = self.pools[p as usize]
            .enqueue(self.now, s, header, &self.shared)
            .map_err(self.engine(p))?;
        self.after_op(p, io)?;
        match r {
            Enqueued::Rejected => {
                self.shared.sess[i].state = State::Rejected;
                self.done_one(io);
            }
            Enqueued::Queued => self.wake_pool(p),
        }
        Ok(())
    }

    /// Session `i`'s content: its prompt runs (or one run of its own), then a run of
    /// its own for its outputs, so that only it can hit its output blocks.
    fn chain(&self, i: usize) -> Result<Chain, HostError> {
        let x = &self.shared.sess[i];
        let (start, len) = x.runs;
        let mut runs = Vec::with_capacity(len + 1);
        if len == 0 {
            runs.push(Run {
                id: RunId(HOST_RUN_IDS | (2 * i as u64)),
                len: Units(x.prompt),
            });
        } else {
            runs.extend_from_slice(&self.runs[start..start + len]);
        }
        runs.push(Run {
            id: RunId(HOST_RUN_IDS | (2 * i as u64 + 1)),
            len: Units(x.output),
        });
        Chain::new(runs).map_err(|e| config_err(format!("session {i}: {e}")))
    }

    // ----- step stages (R15, R16) -----------------------------------------------------

    fn waiting_of(&self, m: usize) -> usize {
        self.steps[m]
            .pools
            .iter()
            .map(|&p| self.pools[p as usize].queued())
            .sum()
    }

    /// R15 steps 1 and 2 (or R16), then the iteration's time.
    fn start_iteration(&mut self, m: u32, io: &mut Io<'_>) -> Result<(), HostError> {
        let mi = m as usize;
        let residents = self.steps[mi].residents.len();
        let waiting = self.waiting_of(mi);
        if residents == 0 && waiting == 0 {
            return Ok(());
        }
        let t = self.now;
        {
            let st = &mut self.steps[mi];
            st.took.clear();
            st.admitted.clear();
            st.preempted.clear();
            st.finished.clear();
        }
        self.shared.current = m;
        let (budget, seats, exclusive) = {
            let st = &self.steps[mi];
            (st.budget, st.seats, st.exclusive)
        };
        // vLLM turns its long-prefill threshold off for a lone request.
        let chunk = if residents + waiting > 1 {
            self.steps[mi].chunk
        } else {
            u64::MAX
        };
        let mut left = budget;
        // R13 `preempt none`: waiting grows are retried at every iteration.
        for k in 0..self.steps[mi].pools.len() {
            let p = self.steps[mi].pools[k];
            self.pools[p as usize]
                .retry_grows(t, &self.shared)
                .map_err(self.engine(p))?;
            self.after_op(p, io)?;
        }
        if exclusive {
            // R16 (docs/HOST.md): a resident mid-prefill is this iteration's prefill
            // (no admission); otherwise one waiting prefill that fits is admitted with
            // the full budget and displaces the residents' decodes.
            let mid = self.steps[mi].residents.iter().any(|s| {
                let x = &self.shared.sess[s.0 as usize];
                !x.caught_up && !x.loading
            });
            let mut alone = false;
            if !mid && waiting > 0 && residents < seats {
                for k in 0..self.steps[mi].pools.len() {
                    let p = self.steps[mi].pools[k];
                    if let Some(n) = self.admit_one(m, p, budget, chunk, io)? {
                        alone = n > 0;
                        break;
                    }
                }
            }
            if !alone {
                self.residents_pass(m, &mut left, chunk, io)?;
            }
        } else {
            self.residents_pass(m, &mut left, chunk, io)?;
            if self.steps[mi].preempted.is_empty() {
                for k in 0..self.steps[mi].pools.len() {
                    let p = self.steps[mi].pools[k];
                    while left > 0
                        && self.steps[mi].residents.len() < seats
                        && self.pools[p as usize].queued() > 0
                    {
                        match self.admit_one(m, p, left, chunk, io)? {
                            Some(n) => left -= n,
                            None => break,
                        }
                    }
                }
            }
        }
        self.shared.current = NONE;
        self.shared.stage_q[mi] = StageQ {
            budget_left: f64::INFINITY,
            residents: self.steps[mi].residents.len() as f64,
        };
        let st = &mut self.steps[mi];
        if st.took.is_empty() && st.preempted.is_empty() && st.admitted.is_empty() {
            // Nothing could happen: the member idles until an arrival, a release in
            // one of its pools or a completed load wakes it.
            return Ok(());
        }
        let (mut tokens, mut prefill, mut decode) = (0u64, 0u64, 0u64);
        for take in &st.took {
            tokens += take.n;
            if take.kind == TakeKind::Decode {
                decode += take.n;
            } else {
                prefill += take.n;
            }
        }
        let dt = match &st.time {
            IterTime::Fixed(x) => *x,
            IterTime::Compiled { policy, layout } => {
                st.ctx.clear();
                for v in layout {
                    st.ctx.push(match v {
                        TimeVar::Tokens => tokens as f64,
                        TimeVar::Prefill => prefill as f64,
                        TimeVar::Decode => decode as f64,
                        TimeVar::Residents => st.took.len() as f64,
                    });
                }
                policy.time(&st.ctx)
            }
        };
        if !dt.is_finite() || dt < 0.0 {
            return Err(HostError::Time {
                stage: st.name.clone(),
                step: st.iterations,
                value: dt,
            });
        }
        st.iterations += 1;
        st.start = t;
        st.busy += dt;
        st.tokens += tokens;
        st.in_flight = true;
        st.peak_residents = st.peak_residents.max(st.residents.len() as u64);
        self.computed_tokens += tokens;
        self.push(t + dt, END, What::End(m));
        Ok(())
    }

    /// R15 step 1: residents in admission order take
    /// `min(sequence − computed, chunk, budget left)`, growing their holds (R13).
    fn residents_pass(
        &mut self,
        m: u32,
        left: &mut u64,
        chunk: u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let mi = m as usize;
        let t = self.now;
        let mut i = 0;
        while i < self.steps[mi].residents.len() && *left > 0 {
            let s = self.steps[mi].residents[i];
            let x = &self.shared.sess[s.0 as usize];
            if x.loading {
                i += 1;
                continue;
            }
            let p = x.pool;
            let hold = self.pools[p as usize]
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
                let r = self.pools[p as usize]
                    .grow(t, s, Units(need - hold.units.0), &self.shared)
                    .map_err(self.engine(p))?;
                self.victims.clear();
                for n in self.pools[p as usize].notices() {
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
            self.steps[mi].took.push(Take { s, n: take, kind });
            *left -= take;
            i += 1;
        }
        Ok(())
    }

    /// A `preempt lifo` victim leaves the stage: it keeps its outputs, forgets its
    /// computed units (its cached blocks give them back as hits), and waits with a
    /// header for its whole sequence (R15).
    fn preempt(
        &mut self,
        m: u32,
        v: SessionId,
        i: &mut usize,
        left: &mut u64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let mi = m as usize;
        let st = &mut self.steps[mi];
        if let Some(pos) = st.residents.iter().position(|&r| r == v) {
            st.residents.remove(pos);
            // Victims come after the grower in admission order; should one come
            // before, its take this iteration is undone.
            if pos < *i {
                *i -= 1;
                if let Some(k) = st.took.iter().position(|t| t.s == v) {
                    *left += st.took[k].n;
                    st.took.remove(k);
                }
            }
        }
        st.preempted.push(v.0);
        let x = &mut self.shared.sess[v.0 as usize];
        x.state = State::Waiting;
        x.computed = 0;
        x.caught_up = false;
        x.loading = false;
        let (p, seq) = (x.pool, x.seq());
        self.pools[p as usize]
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

    /// One admission attempt of R15 step 2 on pool `p`: the header gives
    /// `hit + min(sequence − hit, chunk, budget)` units; a hold with a tier hit
    /// takes no tokens until its load completes (R12). Returns the tokens the
    /// admitted session takes, `None` when nothing was admitted.
    fn admit_one(
        &mut self,
        m: u32,
        p: u32,
        budget: u64,
        chunk: u64,
        io: &mut Io<'_>,
    ) -> Result<Option<u64>, HostError> {
        let mi = m as usize;
        let pi = p as usize;
        let t = self.now;
        self.shared.stage_q[mi] = StageQ {
            budget_left: if budget == u64::MAX {
                f64::INFINITY
            } else {
                budget as f64
            },
            residents: self.steps[mi].residents.len() as f64,
        };
        let shared = &self.shared;
        let units_for = |s: SessionId, hit: Hit, _: &Header| -> Option<Units> {
            let seq = shared.sess.get(s.0 as usize)?.seq();
            let base = hit.local.0 + hit.tier.0;
            if hit.tier.0 > 0 {
                Some(Units(base))
            } else {
                Some(Units(
                    base + seq.saturating_sub(base).min(chunk).min(budget),
                ))
            }
        };
        let r = match self.info[pi].tier {
            Some(tp) => {
                let (pool, tier) = pair(&mut self.pools, pi, tp as usize);
                pool.admit_next_tiered(t, shared, Some(tier), units_for)
            }
            None => self.pools[pi].admit_next_tiered(t, shared, None, units_for),
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
        let load = self.pools[pi].notices().iter().find_map(|n| match *n {
            Notice::TierLoad { units, work, .. } => Some((units.0, work)),
            _ => None,
        });
        self.after_op(p, io)?;
        let x = &mut self.shared.sess[session.0 as usize];
        let resumed = x.admitted_once;
        x.admitted_once = true;
        x.state = State::Resident(m);
        x.computed = hit.0;
        let prompt = x.prompt;
        let tokens = if load.is_some() { 0 } else { units.0 - hit.0 };
        let info = &mut self.info[pi];
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
            let x = &mut self.shared.sess[session.0 as usize];
            x.loading = true;
            x.load_gen = x.load_gen.wrapping_add(1);
            let gen_ = x.load_gen;
            // The pool logged the load as its `tier_load` event (written by after_op).
            let l = self.info[pi].link.expect("a pool with a tier hit spills");
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
        let st = &mut self.steps[mi];
        st.residents.push(session);
        if tokens > 0 {
            st.took.push(Take {
                s: session,
                n: tokens,
                kind: TakeKind::Admit,
            });
        }
        st.admitted.push((
            session.0,
            if resumed { "resumed" } else { "new" },
            hit.0,
            tokens,
        ));
        Ok(Some(tokens))
    }

    /// R15 steps 3 and 4 at the iteration's end: computed units advance, sequences
    /// that are complete sample one token, finished sessions release in the order
    /// they took tokens.
    fn end_iteration(&mut self, m: u32, io: &mut Io<'_>) -> Result<(), HostError> {
        let mi = m as usize;
        let t = self.now;
        self.steps[mi].in_flight = false;
        for k in 0..self.steps[mi].took.len() {
            let Take { s, n, .. } = self.steps[mi].took[k];
            let x = &mut self.shared.sess[s.0 as usize];
            x.computed += n;
            let (p, computed) = (x.pool, x.computed);
            if computed == x.seq() {
                x.generated += 1;
                x.caught_up = true;
                if x.first_token.is_nan() {
                    x.first_token = t;
                    self.ttft.push(t - x.arrival);
                } else {
                    self.itl.push(t - x.last_token);
                }
                x.last_token = t;
                self.output_tokens += 1;
                if x.generated == x.output {
                    self.steps[mi].finished.push(s.0);
                }
            }
            self.pools[p as usize]
                .set_computed(s, Units(computed))
                .map_err(self.engine(p))?;
        }
        for k in 0..self.steps[mi].finished.len() {
            let s = SessionId(self.steps[mi].finished[k]);
            let p = self.shared.sess[s.0 as usize].pool;
            self.pools[p as usize]
                .release(t, s, &self.shared)
                .map_err(self.engine(p))?;
            self.after_op(p, io)?;
            let x = &mut self.shared.sess[s.0 as usize];
            x.state = State::Done;
            self.e2e.push(t - x.arrival);
            let st = &mut self.steps[mi];
            if let Some(pos) = st.residents.iter().position(|&r| r == s) {
                st.residents.remove(pos);
            }
            self.done_one(io);
            // Room freed in a pool other members may be waiting on.
            self.wake_pool(p);
        }
        self.shared.stage_q[mi].residents = self.steps[mi].residents.len() as f64;
        if io.log.is_some() {
            self.log_iteration(m, io)?;
        }
        Ok(())
    }

    fn log_iteration(&mut self, m: u32, io: &mut Io<'_>) -> Result<(), HostError> {
        let mi = m as usize;
        let waiting = self.waiting_of(mi) as u64;
        let st = &mut self.steps[mi];
        st.cont.clear();
        let mut decode = 0;
        let mut tokens = 0;
        for take in &st.took {
            tokens += take.n;
            match take.kind {
                TakeKind::Decode => decode += 1,
                TakeKind::Cont => st.cont.push((take.s.0, take.n)),
                TakeKind::Admit => {}
            }
        }
        st.allocated.clear();
        for &p in &st.pools {
            st.allocated.push(self.pools[p as usize].allocated().0);
        }
        let line = IterLine {
            step: st.iterations - 1,
            stage: &st.name,
            t: st.start,
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
        };
        if let Some(log) = io.log.as_mut() {
            log.line(&line)?;
        }
        Ok(())
    }

    // ----- links and tiers (R17, R12) ---------------------------------------------------

    /// An evicted block to write to pool `p`'s tier, unless the tier holds it already.
    fn spill(
        &mut self,
        p: u32,
        session: SessionId,
        key: BlockKey,
        last: f64,
        work: f64,
        io: &mut Io<'_>,
    ) -> Result<(), HostError> {
        let pi = p as usize;
        let (Some(tier), Some(link)) = (self.info[pi].tier, self.info[pi].link) else {
            return Ok(());
        };
        if self.pools[tier as usize].has_key(&key) {
            self.info[pi].spills_skipped += 1;
            return self.host_line(io, p, "spill_skip", session, |l| {
                l.key = Some((key.run.0, key.offset));
            });
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
    fn submit(&mut self, p: u32, l: u32, work: f64, kind: JobKind) -> Result<(), HostError> {
        if !work.is_finite() || work < 0.0 {
            return Err(HostError::Work {
                pool: self.info[p as usize].name.clone(),
                value: work,
            });
        }
        let now = self.now;
        let link = &mut self.links[l as usize];
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
        }
        link.jobs.push_back(Job { kind });
        self.push(done, LINK, What::Link(l));
        Ok(())
    }

    /// The job at the head of link `l` completes now.
    fn link_done(&mut self, l: u32, io: &mut Io<'_>) -> Result<(), HostError> {
        let Some(job) = self.links[l as usize].jobs.pop_front() else {
            return Ok(());
        };
        match job.kind {
            JobKind::Spill {
                tier,
                session,
                key,
                last,
            } => {
                let r = self.pools[tier as usize]
                    .accept_spill(self.now, session, key, last, &self.shared)
                    .map_err(self.engine(tier))?;
                self.after_op(tier, io)?;
                // A stored block is the tier's own `store` event (written by after_op);
                // the host only tells the writes that changed nothing.
                let ev = match r {
                    Stored::Stored(_) => None,
                    Stored::Duplicate => Some("store_duplicate"),
                    Stored::NoRoom => Some("store_no_room"),
                };
                if let Some(ev) = ev {
                    self.host_line(io, tier, ev, session, |line| {
                        line.key = Some((key.run.0, key.offset));
                    })?;
                }
            }
            JobKind::Load {
                session,
                gen_,
                units,
            } => {
                let x = &mut self.shared.sess[session.0 as usize];
                if !(x.loading && x.load_gen == gen_) {
                    // Its session was preempted while loading: the load is void.
                    return Ok(());
                }
                x.loading = false;
                x.computed += units;
                let (p, computed, state) = (x.pool, x.computed, x.state);
                self.pools[p as usize]
                    .set_computed(session, Units(computed))
                    .map_err(self.engine(p))?;
                self.host_line(io, p, "loaded", session, |line| line.units = Some(units))?;
                if let State::Resident(m) = state {
                    self.wake(m);
                }
            }
        }
        Ok(())
    }

    // ----- the report -------------------------------------------------------------------

    fn report(mut self) -> Report {
        let end = self.now;
        let mut pools = Vec::with_capacity(self.info.len());
        let (mut hit, mut prompt, mut tier_units) = (0u64, 0u64, 0u64);
        let mut r = Report {
            source: self.source.clone(),
            sessions: self.shared.sess.len() as u64,
            ..Report::default()
        };
        for (p, info) in self.info.iter().enumerate() {
            let c = self.pools[p].counters();
            // A tier's hit rate: units first admissions loaded from it, over the
            // prompt units of first admissions into the pools that spill into it.
            let (from, over) = self
                .info
                .iter()
                .filter(|q| q.tier == Some(p as u32))
                .fold((0, 0), |(a, b), q| (a + q.tier_new, b + q.prompt_new));
            let entry = !info.served_by.is_empty();
            if entry {
                hit += info.hit_new;
                prompt += info.prompt_new;
                tier_units += info.tier_new;
            }
            r.admissions += c.admissions;
            r.preemptions += c.preemptions;
            r.evictions += c.evictions;
            r.spills += c.spills;
            r.tier_loads += c.tier_loads;
            pools.push(PoolReport {
                name: info.name.clone(),
                cap: info.cap_units,
                block: info.block,
                entry,
                tier: info.is_tier,
                sessions: info.sessions,
                rejected: c.rejected + info.host_rejected,
                admissions: c.admissions,
                resumed_admissions: info.resumed_admissions,
                preemptions: c.preemptions,
                evictions: c.evictions,
                spills: c.spills,
                spills_skipped: info.spills_skipped,
                stored: c.stored,
                tier_loads: c.tier_loads,
                tier_load_units: c.tier_load_units,
                hit_units: info.hit_new,
                prompt_units: info.prompt_new,
                hit_rate: ratio(info.hit_new, info.prompt_new),
                tier_hit_rate: if info.is_tier {
                    ratio(from, over)
                } else {
                    ratio(info.tier_new, info.prompt_new)
                },
                resumed_hit_units: info.hit_resumed,
                peak_allocated: info.allocated.peak(),
                mean_allocated: info.allocated.mean(end),
                peak_used: info.used.peak(),
                mean_used: info.used.mean(end),
            });
        }
        for x in &self.shared.sess {
            match x.state {
                State::Done => r.finished += 1,
                State::Rejected => r.rejected += 1,
                _ => r.unfinished += 1,
            }
        }
        r.sim_seconds = end;
        r.output_tokens = self.output_tokens;
        r.computed_tokens = self.computed_tokens;
        r.tokens_per_second = if end > 0.0 {
            self.output_tokens as f64 / end
        } else {
            0.0
        };
        r.ttft = Percentiles::of(&mut self.ttft);
        r.itl = Percentiles::of(&mut self.itl);
        r.e2e = Percentiles::of(&mut self.e2e);
        r.hit_rate = ratio(hit, prompt);
        r.tier_hit_rate = ratio(tier_units, prompt);
        r.pools = pools;
        r.stages = self
            .steps
            .iter()
            .map(|s| StageReport {
                name: s.name.clone(),
                iterations: s.iterations,
                busy_seconds: s.busy,
                tokens: s.tokens,
                peak_residents: s.peak_residents,
            })
            .collect();
        r.links = self
            .links
            .iter()
            .map(|l| LinkReport {
                name: l.name.clone(),
                writes: l.writes,
                loads: l.loads,
                work: l.work,
                busy_seconds: l.busy,
            })
            .collect();
        r
    }
}

/// A step stage's compiled `time` must not read beyond its layout.
fn check_time(name: &str, c: &StepConfig) -> Result<(), HostError> {
    match &c.time {
        IterTime::Fixed(x) if !x.is_finite() || *x < 0.0 => Err(config_err(format!(
            "stage {name}: time {x} is not a finite number of seconds at least 0"
        ))),
        IterTime::Compiled { policy, layout } if policy.ctx_len() > layout.len() => {
            Err(config_err(format!(
                "stage {name}: its time reads {} ctx slots, the layout has {}",
                policy.ctx_len(),
                layout.len()
            )))
        }
        _ => Ok(()),
    }
}

/// Pool `a` mutably and pool `b` (≠ `a`) shared.
fn pair(v: &mut [Pool], a: usize, b: usize) -> (&mut Pool, &Pool) {
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &x[b])
    }
}
