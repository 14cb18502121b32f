//! `poolrt`: the Pool runtime. It owns pool state, queues and the reference host, and
//! takes compiled policies as function pointers; it must never parse or compile a spec
//! and never depends on the compiler crate (the compiler converts its IR into the
//! plain types of [`config`]).
//!
//! Map: [`atomic_file`] (files written whole or not at all), [`types`] (units, sessions, content chains, block identities), [`config`]
//! (pool configuration and slot layouts), [`env`](mod@env) (what a pool asks its
//! host), [`pool`] (one pool member: the rules R1–R14 and S3), [`event`] (the event log and host
//! notices), [`policy`] (the compiled-function ABI), [`host`] (the reference host:
//! sessions, step and link stages R15–R17, the report, and the [`host::Observer`]
//! that the log and every other watcher of a run implement), [`trace`] (the workload
//! readers and the synthetic workload). docs/RUNTIME.md maps every rule to its code;
//! docs/HOST.md describes the host. Conformance tooling (the replay of recorded vLLM
//! scenarios) is not the engine's: it lives in the tools crate, `poolc_tools::oracle`.

pub mod atomic_file;
mod cache;
pub mod config;
pub mod env;
pub mod error;
pub mod event;
mod hash;
pub mod host;
pub mod policy;
pub mod pool;
mod queue;
pub mod trace;
pub mod types;

pub use config::{
    ConfigError, EvictPolicy, FairConfig, Input, Layout, PoolConfig, PoolRef, Preempt, Query,
    QueryKind, QueueIndex, QueuePolicy, QueueTie, Requeue, SpillPolicy, StageRef, Target,
};
pub use env::Env;
pub use error::Error;
pub use event::{Counters, Event, Notice, Record};
pub use pool::{Admission, Charge, Enqueued, EntryInfo, Grown, Hit, HoldInfo, Pool, Stored};
pub use types::{
    BlockId, BlockKey, Chain, ChainError, EntryId, Header, Limit, Run, RunId, SessionId, Units,
};
