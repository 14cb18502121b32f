//! Errors an operation on a pool member can return: input that breaks an operation's
//! precondition (a session already in the pool, time running backwards, an overflow).
//! An operation that returns an error has changed nothing.

use std::fmt;

use crate::types::{SessionId, Units};

#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// `now` is NaN, infinite, or earlier than a time the pool has already seen.
    Time { now: f64, last: f64 },
    /// The session already waits or holds in this pool.
    AlreadyInPool(SessionId),
    /// The session holds nothing in this pool.
    NotHolding(SessionId),
    /// The session does not wait in this pool.
    NotWaiting(SessionId),
    /// A revised header could never fit (R5); the hold keeps its old header.
    NeverFits(SessionId),
    /// A stage asked to allocate fewer units than the hold hits.
    UnitsBelowHit {
        session: SessionId,
        units: Units,
        hit: Units,
    },
    /// The holder's previous grow is still waiting (`preempt none`).
    GrowPending(SessionId),
    /// `computed` may not exceed the units held.
    ComputedBeyondUnits {
        session: SessionId,
        computed: Units,
        units: Units,
    },
    /// A unit count would exceed `u64::MAX`.
    Overflow(SessionId),
    /// The chain has 2^32 − 1 or more full blocks: more than one pool member can
    /// give identities to.
    TooManyBlocks(SessionId),
    /// A tier whose entry keys read attributes was given a block of a session the
    /// host no longer answers `Env::attrs` for, and it has no snapshot of that
    /// session (it holds none of its entries): it could not order the entry (S3).
    NoAttrs(SessionId),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Time { now, last } => write!(
                f,
                "time {now} is not a finite time at or after the pool's last time {last}"
            ),
            Error::AlreadyInPool(s) => write!(f, "session {s} already waits or holds in this pool"),
            Error::NotHolding(s) => write!(f, "session {s} holds nothing in this pool"),
            Error::NotWaiting(s) => write!(f, "session {s} does not wait in this pool"),
            Error::NeverFits(s) => write!(
                f,
                "session {s}: the revised header exceeds the cap and could never fit"
            ),
            Error::UnitsBelowHit {
                session,
                units,
                hit,
            } => write!(
                f,
                "session {session}: {units} units asked but {hit} are hit"
            ),
            Error::GrowPending(s) => write!(f, "session {s} already has a grow waiting"),
            Error::ComputedBeyondUnits {
                session,
                computed,
                units,
            } => write!(
                f,
                "session {session}: computed {computed} exceeds the {units} units it holds"
            ),
            Error::Overflow(s) => write!(f, "session {s}: unit count overflows"),
            Error::TooManyBlocks(s) => write!(
                f,
                "session {s}: its chain has more full blocks than a pool can identify"
            ),
            Error::NoAttrs(s) => write!(
                f,
                "session {s} has ended and this tier holds no snapshot of its attributes; \
                 the host must answer `Env::attrs` for it until its spilled blocks are stored"
            ),
        }
    }
}

impl std::error::Error for Error {}
