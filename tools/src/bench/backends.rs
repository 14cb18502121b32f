//! The three interchangeable implementations of a pool's policy functions — the
//! compiled code, the interpreter behind trampolines (interp.rs) and hand-written Rust
//! (handwritten.rs) — and the recognition of the built-in key lists from the IR that
//! decides whether the Rust one exists. `queue fifo` and `evict lru` have no policy
//! code, so there the three run the same engine path; spill `when`/`work` stay
//! compiled in the Rust backend. It builds policy structs and pool configurations
//! and never runs a pool.

use poolrt::policy::PoolPolicy;
use poolrt::{Pool, PoolConfig};

use super::BenchError;
use super::driver::EngineMember;
use super::handwritten::{rust_evict, rust_queue};
use poolc::codegen::Compiled;
use poolc::ir::{self, Expr, PoolId, Program, Slot};

/// An implementation of a pool's policy functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Backend {
    Compiled,
    Interp,
    Rust,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Compiled => "compiled",
            Backend::Interp => "interp",
            Backend::Rust => "rust",
        }
    }
}

/// A queue policy the benchmark knows by shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownQueue {
    Fifo,
    /// `queue by (priority, serial)`.
    PrioritySerial,
    /// The seed's Ascend lanes, reading `waited`.
    Ascend,
    /// Keys with no hand-written Rust counterpart.
    Other,
}

/// An evict policy the benchmark knows by shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownEvict {
    Lru,
    /// `evict by (priority, last)` with `last` in entry-row slot `last`.
    PriorityLast {
        last: usize,
    },
    Other,
}

/// An expression in the IR's prefix form with slots written as their source names,
/// for recognising a policy regardless of attribute numbering.
fn canon(e: &Expr, row: &[String], ctx: &[String]) -> String {
    ir::prefix(e, &|s, slot| {
        let (names, i) = match slot {
            Slot::Row(i) => (row, i),
            Slot::Ctx(i) => (ctx, i),
        };
        s.push_str(names.get(i as usize).map_or("", String::as_str));
    })
}

/// The seed's Ascend lane key (examples/ascend.pool) in [`canon`] form.
const ASCEND_LANE: &str = "(if immediate 0.0 (if (and (gt prompt 128.0) (ge (sub now enqueued) 3.0)) \
                           1.0 (if (le prompt 128.0) 2.0 3.0)))";

/// A site's keys in [`canon`] form, with the names of its row and ctx slots (the
/// layout the hand-written functions must match as well): `(keys, row, ctx)`.
fn canon_site(
    keys: &[ir::SiteExpr],
    layout: &ir::Layout,
    p: &Program,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let names = |inputs: &[ir::Input]| inputs.iter().map(|i| ir::input_name(p, *i)).collect();
    let (row, ctx): (Vec<String>, Vec<String>) = (names(&layout.row), names(&layout.ctx));
    let keys = keys.iter().map(|k| canon(&k.expr, &row, &ctx)).collect();
    (keys, row, ctx)
}

/// Recognises a pool's queue policy (and its slot layout, which the hand-written
/// functions assume).
pub fn known_queue(p: &Program, pool: PoolId) -> KnownQueue {
    let cp = p.pool(pool);
    let ir::QueuePolicy::By(keys) = &cp.queue else {
        return KnownQueue::Fifo;
    };
    let (keys, row, ctx) = canon_site(keys, &cp.queue_layout, p);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    if keys == ["priority", "serial"] && row == ["serial", "priority"] && ctx.is_empty() {
        KnownQueue::PrioritySerial
    } else if keys == [ASCEND_LANE, "serial"]
        && row == ["serial", "prompt", "immediate", "enqueued"]
        && ctx == ["now"]
    {
        KnownQueue::Ascend
    } else {
        KnownQueue::Other
    }
}

/// Recognises a pool's evict policy.
pub fn known_evict(p: &Program, pool: PoolId) -> KnownEvict {
    let cp = p.pool(pool);
    let ir::Evict::By(keys) = &cp.evict else {
        return KnownEvict::Lru;
    };
    let (keys, row, _) = canon_site(keys, &cp.entry_layout, p);
    let last = row.iter().position(|n| n == "last");
    match last {
        Some(l @ 1..=3) if keys == ["priority", "last"] && row[0] == "priority" => {
            KnownEvict::PriorityLast { last: l }
        }
        _ => KnownEvict::Other,
    }
}

pub(super) fn describe_queue(k: KnownQueue, p: &Program, pool: PoolId) -> String {
    match k {
        KnownQueue::Fifo => "fifo".into(),
        KnownQueue::PrioritySerial => "by (priority, serial)".into(),
        KnownQueue::Ascend => "by the seed's Ascend lanes".into(),
        KnownQueue::Other => match &p.pool(pool).queue {
            ir::QueuePolicy::By(keys) => format!("by {} key(s)", keys.len()),
            ir::QueuePolicy::Fifo => "fifo".into(),
        },
    }
}

pub(super) fn describe_evict(k: KnownEvict, p: &Program, pool: PoolId) -> String {
    match k {
        KnownEvict::Lru => "lru".into(),
        KnownEvict::PriorityLast { .. } => "by (priority, last)".into(),
        KnownEvict::Other => match &p.pool(pool).evict {
            ir::Evict::By(keys) => format!("by {} key(s)", keys.len()),
            ir::Evict::Lru => "lru".into(),
        },
    }
}

/// A pool's policy structs for each backend.
pub struct Backends {
    pub known_queue: KnownQueue,
    pub known_evict: KnownEvict,
    pub compiled: PoolPolicy,
    pub interp: PoolPolicy,
    /// `None` when a key list has no hand-written counterpart.
    pub rust: Option<PoolPolicy>,
}

impl Backends {
    /// Builds the three (installing this thread's interpreter tables).
    pub fn new(compiled: &Compiled, pool: PoolId) -> Result<Backends, BenchError> {
        let p = compiled.program();
        let cp = p.pool(pool);
        let policy = compiled.pool(pool).clone();
        let interp = super::interp::policy(cp, &policy)?;
        let known_queue = known_queue(p, pool);
        let known_evict = known_evict(p, pool);
        let rust_q = match known_queue {
            KnownQueue::Fifo => Some(None),
            k => rust_queue(k).map(Some),
        };
        let rust_e = match known_evict {
            KnownEvict::Lru => Some(None),
            k => rust_evict(k).map(Some),
        };
        let rust = match (rust_q, rust_e) {
            (Some(queue), Some(evict)) => Some(PoolPolicy {
                queue,
                evict,
                // The bench never grows a hold, so preempt keys never run.
                preempt: policy.preempt.clone(),
                spill: policy.spill.clone(),
                // The bench admits into one pool: nothing is routed.
                route: policy.route.clone(),
                handoff: policy.handoff.clone(),
            }),
            _ => None,
        };
        Ok(Backends {
            known_queue,
            known_evict,
            compiled: policy,
            interp,
            rust,
        })
    }

    /// The backends that exist for this pool, in report order.
    pub fn available(&self) -> Vec<(Backend, &PoolPolicy)> {
        let mut v = vec![
            (Backend::Compiled, &self.compiled),
            (Backend::Interp, &self.interp),
        ];
        if let Some(r) = &self.rust {
            v.push((Backend::Rust, r));
        }
        v
    }

    /// Whether the pool has any policy code (otherwise every backend is the same).
    pub fn has_code(&self) -> bool {
        self.compiled.queue.is_some() || self.compiled.evict.is_some()
    }
}

/// The runtime configuration of member 0 of `pool` with one backend's policies.
pub fn pool_config(
    compiled: &Compiled,
    pool: PoolId,
    policy: &PoolPolicy,
) -> Result<PoolConfig, BenchError> {
    poolc::bridge::pool_config(compiled.program(), pool, 0, policy).map_err(BenchError::Bridge)
}

pub(super) fn new_pool(config: PoolConfig) -> Result<EngineMember, BenchError> {
    Pool::new(config)
        .map(EngineMember)
        .map_err(BenchError::Config)
}
