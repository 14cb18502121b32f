//! The replay log: JSON lines written to any `io::Write`, one per stage iteration and
//! one per pool event (docs/TRACES.md states every field), and after the last of them,
//! only when the run reached its end, one `{"complete":true,…}` line — an [`Observer`] of the
//! host's typed records. Lines are serialized with serde into one reused buffer, so a
//! warm log allocates nothing per line. It must not reorder or filter what it is
//! given, and it decides nothing: the bytes are a rendering of the records.

use std::io::{self, Write};

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use super::observe::{Admitted, HostEvent, Iteration, Observer, PoolEvent, PoolEventKind};
use super::report::Report;
use crate::event::Event;
use crate::types::{BlockKey, SessionId, Units};

/// Session ids as a JSON list of numbers.
struct Ids<'a>(&'a [SessionId]);

impl Serialize for Ids<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for id in self.0 {
            seq.serialize_element(&id.0)?;
        }
        seq.end()
    }
}

/// `[session, "new"|"resumed", hit units, tokens]` per admission.
struct AdmittedList<'a>(&'a [Admitted]);

impl Serialize for AdmittedList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for a in self.0 {
            let kind = if a.resumed { "resumed" } else { "new" };
            seq.serialize_element(&(a.session.0, kind, a.hit.0, a.tokens))?;
        }
        seq.end()
    }
}

/// `[session, tokens]` per continuing resident.
struct ContList<'a>(&'a [(SessionId, u64)]);

impl Serialize for ContList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (id, n) in self.0 {
            seq.serialize_element(&(id.0, n))?;
        }
        seq.end()
    }
}

/// Units as a JSON list of numbers.
struct UnitList<'a>(&'a [Units]);

impl Serialize for UnitList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for u in self.0 {
            seq.serialize_element(&u.0)?;
        }
        seq.end()
    }
}

/// One stage iteration, written when it ends.
#[derive(Serialize)]
struct IterLine<'a> {
    step: u64,
    stage: &'a str,
    t: f64,
    end: f64,
    admitted: AdmittedList<'a>,
    cont: ContList<'a>,
    decode: u64,
    preempted: Ids<'a>,
    finished: Ids<'a>,
    tokens: u64,
    residents: u64,
    waiting: u64,
    allocated: UnitList<'a>,
}

impl<'a> IterLine<'a> {
    fn of(it: &Iteration<'a>) -> IterLine<'a> {
        IterLine {
            step: it.step,
            stage: it.stage,
            t: it.start,
            end: it.end,
            admitted: AdmittedList(it.admitted),
            cont: ContList(it.cont),
            decode: it.decode,
            preempted: Ids(it.preempted),
            finished: Ids(it.finished),
            tokens: it.tokens,
            residents: it.residents,
            waiting: it.waiting,
            allocated: UnitList(it.allocated),
        }
    }
}

/// One pool event. The fields after `ev` depend on the event; the last four are
/// the pool's state right after it.
#[derive(Serialize, Default)]
struct EventLine<'a> {
    t: f64,
    pool: &'a str,
    ev: &'static str,
    session: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    hit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    units: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<u64>,
    /// Units a release or preemption put in the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry: Option<u64>,
    /// `[run, offset]` of a block.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    work: Option<f64>,
    /// Units a session needs to finish (a host rejection).
    #[serde(skip_serializing_if = "Option::is_none")]
    need: Option<u64>,
    /// `None` (null) when the cap is unbounded.
    cap: Option<u64>,
    allocated: u64,
    cached: u64,
    queued: u64,
}

impl<'a> EventLine<'a> {
    /// The line for a pool event.
    fn of(e: &PoolEvent<'a>) -> EventLine<'a> {
        let mut line = EventLine {
            t: e.t,
            pool: e.pool,
            cap: e.cap.map(|u| u.0),
            allocated: e.allocated.0,
            cached: e.cached.0,
            queued: e.queued as u64,
            ..EventLine::default()
        };
        let (ev, session) = match e.kind {
            PoolEventKind::Engine(event) => (event.name(), line.fill_engine(event)),
            PoolEventKind::Host(event) => line.fill_host(event),
        };
        line.ev = ev;
        line.session = session.0;
        line
    }

    /// Fills the fields of an engine event; gives its session.
    fn fill_engine(&mut self, event: &Event) -> SessionId {
        let line = self;
        let key = |k: &BlockKey| Some((k.run.0, k.offset));
        let u = |u: &Units| Some(u.0);
        // Events that carry the same fields fill them alike; only `ev` tells them apart.
        let session = match event {
            Event::Enqueue { session }
            | Event::Reject { session }
            | Event::GrowWait { session } => session,
            Event::Admit {
                session,
                hit,
                units,
            } => {
                line.hit = u(hit);
                line.units = u(units);
                session
            }
            Event::Grow { session, by } => {
                line.by = u(by);
                session
            }
            Event::Preempt { session, cached } | Event::Release { session, cached } => {
                line.kept = u(cached);
                session
            }
            Event::Evict {
                entry,
                session,
                key: k,
                units,
            }
            | Event::Store {
                entry,
                session,
                key: k,
                units,
            } => {
                line.entry = Some(entry.0);
                line.key = key(k);
                line.units = u(units);
                session
            }
            Event::Spill {
                entry,
                session,
                key: k,
                units,
                work,
            } => {
                line.entry = Some(entry.0);
                line.key = key(k);
                line.units = u(units);
                line.work = Some(*work);
                session
            }
            Event::TierLoad {
                session,
                units,
                work,
            } => {
                line.units = u(units);
                line.work = Some(*work);
                session
            }
        };
        *session
    }

    /// Fills the fields of a host event; gives its `ev` and session.
    fn fill_host(&mut self, event: HostEvent) -> (&'static str, SessionId) {
        let key = |k: BlockKey| Some((k.run.0, k.offset));
        match event {
            HostEvent::Reject { session, need } => {
                self.need = Some(need.0);
                ("reject", session)
            }
            HostEvent::SpillSkip { session, key: k } => {
                self.key = key(k);
                ("spill_skip", session)
            }
            HostEvent::StoreDuplicate { session, key: k } => {
                self.key = key(k);
                ("store_duplicate", session)
            }
            HostEvent::StoreNoRoom { session, key: k } => {
                self.key = key(k);
                ("store_no_room", session)
            }
            HostEvent::Loaded { session, units } => {
                self.units = Some(units.0);
                ("loaded", session)
            }
            HostEvent::Handoff { session, units } => {
                self.units = Some(units.0);
                ("handoff", session)
            }
            HostEvent::Transfer {
                session,
                units,
                work,
            } => {
                self.units = Some(units.0);
                self.work = Some(work);
                ("transfer", session)
            }
            HostEvent::Received { session, units } => {
                self.units = Some(units.0);
                ("received", session)
            }
        }
    }
}

/// The JSON-lines log: writes every record it observes to `out`, through one reused
/// buffer. Hand it a buffered writer.
pub struct JsonLog<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
    /// Lines written so far: iterations and pool events.
    iterations: u64,
    events: u64,
}

/// The last line of a complete log, and only of a complete one: the counts of the
/// lines before it and how the run ended (docs/TRACES.md, "The end of the log").
#[derive(Serialize)]
struct CompleteLine {
    complete: bool,
    lines: u64,
    iterations: u64,
    events: u64,
    sessions: u64,
    finished: u64,
    rejected: u64,
    unfinished: u64,
    sim_seconds: f64,
}

impl<'a> JsonLog<'a> {
    pub fn new(out: &'a mut dyn Write) -> JsonLog<'a> {
        JsonLog {
            out,
            buf: Vec::with_capacity(512),
            iterations: 0,
            events: 0,
        }
    }

    fn line<T: Serialize>(&mut self, line: &T) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, line).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)
    }

    /// Writes the final `{"complete":true,…}` line and flushes the writer. The host
    /// calls it once, when a run has reached its end and its report is made; a run
    /// that stops early (an error, an interruption) never writes it.
    pub fn complete(&mut self, report: &Report) -> io::Result<()> {
        self.line(&CompleteLine {
            complete: true,
            lines: self.iterations + self.events,
            iterations: self.iterations,
            events: self.events,
            sessions: report.sessions,
            finished: report.finished,
            rejected: report.rejected,
            unfinished: report.unfinished,
            sim_seconds: report.sim_seconds,
        })?;
        self.out.flush()
    }
}

impl Observer for JsonLog<'_> {
    fn wants_events(&self) -> bool {
        true
    }

    fn iteration(&mut self, iteration: &Iteration<'_>) -> io::Result<()> {
        self.iterations += 1;
        self.line(&IterLine::of(iteration))
    }

    fn event(&mut self, event: &PoolEvent<'_>) -> io::Result<()> {
        self.events += 1;
        self.line(&EventLine::of(event))
    }
}
