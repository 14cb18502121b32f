//! What the host tells while it runs, as typed records: each stage iteration when it
//! ends ([`Iteration`]), each pool event right after it ([`PoolEvent`]: the engine's
//! own [`Event`]s and the host's [`HostEvent`]s), and each session's latency moments
//! ([`Latency`]). Whatever watches a run — the JSON-lines log, the report's latency
//! samples, `poolc conform`'s step comparison — is an [`Observer`] of these. This file
//! only defines the records and the trait; it decides nothing and writes nothing.

use std::io;

use crate::event::Event;
use crate::types::{BlockKey, SessionId, Units};

/// Watches a run. Every method has a default that ignores the record, so an
/// observer implements only what it uses. An error stops the run and is returned
/// by [`super::Host::run`] as [`super::HostError::Io`].
pub trait Observer {
    /// Whether this observer reads pool events. When no observer of a run does, the
    /// pools keep no event log at all (it costs time on every operation).
    fn wants_events(&self) -> bool {
        false
    }

    /// A stage iteration has ended.
    fn iteration(&mut self, _iteration: &Iteration<'_>) -> io::Result<()> {
        Ok(())
    }

    /// An event of one pool member, with the member's state right after it.
    fn event(&mut self, _event: &PoolEvent<'_>) -> io::Result<()> {
        Ok(())
    }

    /// A session produced a token or finished.
    fn latency(&mut self, _latency: &Latency) -> io::Result<()> {
        Ok(())
    }
}

/// A session admitted in an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted {
    pub session: SessionId,
    /// Admitted again after a preemption (vLLM's "resumed"), not for the first time.
    pub resumed: bool,
    /// Units found computed (prefix-cache hits).
    pub hit: Units,
    /// Units found in the pool's tier and being loaded (R12), beside `hit`.
    pub tier_hit: Units,
    /// The session's prompt units.
    pub prompt: Units,
    /// Tokens it takes in this iteration (0 while a tier load is under way).
    pub tokens: u64,
}

/// One stage iteration, told when it ends. Lists are in the order things happened.
#[derive(Clone, Copy, Debug)]
pub struct Iteration<'a> {
    /// The member's iteration number, from 0.
    pub step: u64,
    /// The stage member's name (`engine`, `engine[1]`).
    pub stage: &'a str,
    /// Start and end, seconds of simulated time.
    pub start: f64,
    pub end: f64,
    /// In admission order.
    pub admitted: &'a [Admitted],
    /// Residents still catching up that took tokens: `(session, tokens)`.
    pub cont: &'a [(SessionId, u64)],
    /// Residents that took one decode token.
    pub decode: u64,
    pub preempted: &'a [SessionId],
    pub finished: &'a [SessionId],
    /// Tokens computed in the iteration.
    pub tokens: u64,
    /// After the iteration: its residents, and the waiting holds of its pools.
    pub residents: u64,
    pub waiting: u64,
    /// After the iteration: allocated units of each pool it serves (K4 order).
    pub allocated: &'a [Units],
    /// After the iteration: cached (evictable, R10) units of each pool it serves, in
    /// the same order.
    pub cached: &'a [Units],
}

/// What the host itself tells about a pool, beside the engine's events.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostEvent {
    /// The session can never finish in this pool: `need` units of KV exceed its cap
    /// (vLLM's max_model_len refusal); it never entered the queue.
    Reject { session: SessionId, need: Units },
    /// R12: an evicted block was not written, since the tier already holds its key.
    SpillSkip { session: SessionId, key: BlockKey },
    /// R12, the tier side: a written block the tier already held.
    StoreDuplicate { session: SessionId, key: BlockKey },
    /// R12, the tier side: a written block the tier had no room for.
    StoreNoRoom { session: SessionId, key: BlockKey },
    /// A tier load completed: `units` more of the session are computed.
    Loaded { session: SessionId, units: Units },
    /// R25, the prefill side: the session's prompt (`units`) is computed here; it
    /// continues in the handoff's target and its hold stays until the transfer ends.
    Handoff { session: SessionId, units: Units },
    /// R26, the decode side: admitted, it reads `units` of its prompt over the link
    /// with `work`.
    Transfer {
        session: SessionId,
        units: Units,
        work: f64,
    },
    /// R26, the decode side: the transfer of `units` completed; its prompt but the
    /// last unit is computed.
    Received { session: SessionId, units: Units },
}

/// Which kind of pool event.
#[derive(Clone, Copy, Debug)]
pub enum PoolEventKind<'a> {
    /// An event the engine logged.
    Engine(&'a Event),
    /// An event the host made.
    Host(HostEvent),
}

/// One pool member's event with the member's state right after it.
#[derive(Clone, Copy, Debug)]
pub struct PoolEvent<'a> {
    /// Simulated time, seconds.
    pub t: f64,
    /// The pool member's name (`kv`, `kv[2]`).
    pub pool: &'a str,
    /// Its cap in units (`None`: unbounded).
    pub cap: Option<Units>,
    pub kind: PoolEventKind<'a>,
    pub allocated: Units,
    pub cached: Units,
    pub queued: usize,
}

/// A session's latency moment, seconds of simulated time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    /// Its first token: `ttft` after its arrival.
    FirstToken { session: SessionId, ttft: f64 },
    /// A later token: `itl` after its previous one.
    Token { session: SessionId, itl: f64 },
    /// Its last token: `e2e` after its arrival.
    Finished { session: SessionId, e2e: f64 },
}
