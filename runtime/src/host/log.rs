//! The replay log: JSON lines written to any `io::Write`, one per stage iteration and
//! one per pool event (docs/TRACES.md states every field). Lines are serialized with
//! serde into one reused buffer, so a warm log allocates nothing per line but the
//! strings it is handed. When the host has no log, none of this runs (pools log
//! nothing and no line is built). It must not reorder or filter what it is given.

use std::io::{self, Write};

use serde::Serialize;

use crate::event::{Event, Record};
use crate::types::{BlockKey, Units};

/// One stage iteration, written when it ends.
#[derive(Serialize)]
pub(crate) struct IterLine<'a> {
    pub step: u64,
    pub stage: &'a str,
    /// Start and end of the iteration, seconds.
    pub t: f64,
    pub end: f64,
    /// `[session, "new"|"resumed", hit units, tokens]` in admission order.
    pub admitted: &'a [(u64, &'static str, u64, u64)],
    /// `[session, tokens]`: residents still catching up that took tokens.
    pub cont: &'a [(u64, u64)],
    /// Residents that took one decode token.
    pub decode: u64,
    pub preempted: &'a [u64],
    pub finished: &'a [u64],
    pub tokens: u64,
    /// After the iteration: its residents, and the waiting holds of its pools.
    pub residents: u64,
    pub waiting: u64,
    /// After the iteration: allocated units of each pool it serves (K4 order).
    pub allocated: &'a [u64],
}

/// One pool event. The fields after `ev` depend on the event; the last four are
/// the pool's state right after it.
#[derive(Serialize, Default)]
pub(crate) struct EventLine<'a> {
    pub t: f64,
    pub pool: &'a str,
    pub ev: &'static str,
    pub session: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<u64>,
    /// Units a release or preemption put in the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<u64>,
    /// `[run, offset]` of a block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<f64>,
    /// Units a session needs to finish (a host rejection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub need: Option<u64>,
    /// `None` (null) when the cap is unbounded.
    pub cap: Option<u64>,
    pub allocated: u64,
    pub cached: u64,
    pub queued: u64,
}

impl<'a> EventLine<'a> {
    /// The line for an engine record.
    pub fn from_record(t: f64, pool: &'a str, cap: Option<u64>, r: &Record) -> EventLine<'a> {
        let key = |k: &BlockKey| Some((k.run.0, k.offset));
        let u = |u: &Units| Some(u.0);
        let mut line = EventLine {
            t,
            pool,
            cap,
            allocated: r.allocated.0,
            cached: r.cached.0,
            queued: r.queued as u64,
            ..EventLine::default()
        };
        // Events that carry the same fields fill them alike; only `ev` tells them apart.
        let session = match &r.event {
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
        line.session = session.0;
        line.ev = name(&r.event);
        line
    }
}

/// An event's `ev` in the log.
fn name(event: &Event) -> &'static str {
    match event {
        Event::Enqueue { .. } => "enqueue",
        Event::Reject { .. } => "reject",
        Event::Admit { .. } => "admit",
        Event::Grow { .. } => "grow",
        Event::GrowWait { .. } => "grow_wait",
        Event::Preempt { .. } => "preempt",
        Event::Evict { .. } => "evict",
        Event::Release { .. } => "release",
        Event::Spill { .. } => "spill",
        Event::TierLoad { .. } => "tier_load",
        Event::Store { .. } => "store",
    }
}

/// Where log lines go, with the reused buffer.
pub(crate) struct LogSink<'a> {
    out: &'a mut dyn Write,
    buf: Vec<u8>,
}

impl<'a> LogSink<'a> {
    pub fn new(out: &'a mut dyn Write) -> LogSink<'a> {
        LogSink {
            out,
            buf: Vec::with_capacity(512),
        }
    }

    pub fn line<T: Serialize>(&mut self, line: &T) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, line).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
