//! The host as the pool engine sees it: session attributes, stage residency and the
//! values of queries on other pools and stages. The engine only reads through this
//! trait; it never stores attributes of live sessions (it snapshots them at release,
//! for S3) and never decides residency itself.

use crate::config::{Query, QueryKind, Target};
use crate::types::SessionId;

/// What a pool member asks its host. One host value serves every call of one
/// operation; it must not change while the call runs.
pub trait Env {
    /// The attribute values of a live session, indexed by attribute number (every
    /// index a layout names must be in range). `None` once the session has ended;
    /// the pool then uses the values it snapshotted at the session's last release in
    /// this pool (S3).
    ///
    /// Contract: `Some` for every session that waits or holds in the pool. The
    /// engine panics, naming the session, when a host breaks it: that is a bug in the
    /// host, not bad input.
    fn attrs(&self, session: SessionId) -> Option<&[f64]>;

    /// Whether the session is a resident of the step stage this pool is the memory
    /// of (R13 `preempt lifo` victims). Hosts without stages may answer `true` for
    /// every holder.
    fn is_resident(&self, session: SessionId) -> bool;

    /// The value of a query on another pool member or on a stage (E6). Queries on the
    /// pool itself are answered by the pool and never reach the host.
    fn query(&self, query: Query) -> f64;

    /// The id of a waiting session, as text: what `queue by (…, id)` compares after
    /// its keys (R21), a trace's own name for the session. `None` (the default, for
    /// hosts that name no session): its number, `session.0`, in decimal.
    fn name(&self, session: SessionId) -> Option<&str> {
        let _ = session;
        None
    }
}

/// Default answers for queries on things a simple host does not have: `inf` budget
/// left outside an iteration, and 0 for everything else.
pub fn default_query(query: Query) -> f64 {
    match (query.kind, query.target) {
        (QueryKind::BudgetLeft, Target::Stage(_)) => f64::INFINITY,
        _ => 0.0,
    }
}
