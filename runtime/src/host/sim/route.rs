//! Routing (R22–R24, docs/HOST.md "Routing"): which member of the routed entry
//! family an arriving session joins. The compiled route keys score every member on a
//! row of its own (its queries, what the session would hit there, what the router's
//! own index says it sent there, its index) with the session's values in the ctx;
//! the compiled scan picks the least row, ties to the lowest member. The load
//! queries may be read from a snapshot refreshed at most every `every` seconds
//! (R23); the router's prefix index is its own LRU of the prompt blocks it sent to
//! each member (R24). Nothing here changes a pool: hits are walks of the identity
//! index only. A spec without `route by` never builds a router.

use std::collections::{BTreeMap, HashMap};

use crate::config::{Query, QueryKind, Target};
use crate::env::Env;
use crate::types::{BlockKey, Header, SessionId, Units};

use super::super::config::{Extreme, HostError, Probe, RouteConfig, RouteInput, Scored};
use super::build::config_err;
use super::session::{PoolQ, StageIdx, StageQ};
use super::{Host, PoolIx};
use crate::policy::KeyList;

/// The router's own record of the prompt blocks it sent to one member (R24): an LRU
/// of block keys bounded by `remember`. Only the order stamps are iterated (a
/// `BTreeMap`), so no hash order reaches a result.
#[derive(Debug, Default)]
struct PrefixIndex {
    stamp_of: HashMap<BlockKey, u64>,
    by_stamp: BTreeMap<u64, BlockKey>,
}

impl PrefixIndex {
    fn touch(&mut self, key: BlockKey, stamp: u64, remember: u64) {
        if let Some(old) = self.stamp_of.insert(key, stamp) {
            self.by_stamp.remove(&old);
        }
        self.by_stamp.insert(stamp, key);
        while self.by_stamp.len() as u64 > remember {
            let Some((_, oldest)) = self.by_stamp.pop_first() else {
                break;
            };
            self.stamp_of.remove(&oldest);
        }
    }

    fn contains(&self, key: &BlockKey) -> bool {
        self.stamp_of.contains_key(key)
    }
}

/// A route in the host's terms, with its reused buffers.
pub(super) struct Router {
    keys: KeyList,
    row: Vec<RouteInput>,
    ctx: Vec<RouteInput>,
    /// The routed family's members in order: member `m` is `members[m]`.
    members: Vec<PoolIx>,
    every: Option<f64>,
    /// When the snapshot below was taken (−inf: never).
    stale_at: f64,
    stale_pools: Vec<PoolQ>,
    stale_steps: Vec<StageQ>,
    remember: u64,
    /// One per member, only when some key reads `routed`.
    index: Vec<PrefixIndex>,
    stamp: u64,
    rows: Vec<f64>,
    ctx_values: Vec<f64>,
}

impl Router {
    pub(super) fn new(c: RouteConfig, members: Vec<PoolIx>) -> Result<Router, HostError> {
        let shape = c.keys.shape();
        if shape.row > c.row.len() || shape.ctx > c.ctx.len() {
            return Err(config_err(format!(
                "the route keys read {} row and {} ctx slots, the layout has {} and {}",
                shape.row,
                shape.ctx,
                c.row.len(),
                c.ctx.len()
            )));
        }
        let reads_routed = c.row.iter().chain(&c.ctx).any(|i| {
            matches!(
                i,
                RouteInput::Probe(Probe::Scored(Scored::Routed))
                    | RouteInput::Over(_, Probe::Scored(Scored::Routed))
            )
        });
        let n = members.len();
        Ok(Router {
            rows: vec![0.0; n * c.row.len().max(1)],
            ctx_values: vec![0.0; c.ctx.len()],
            keys: c.keys,
            row: c.row,
            ctx: c.ctx,
            every: c.every,
            stale_at: f64::NEG_INFINITY,
            stale_pools: Vec::new(),
            stale_steps: Vec::new(),
            remember: c.remember,
            index: if reads_routed {
                (0..n).map(|_| PrefixIndex::default()).collect()
            } else {
                Vec::new()
            },
            stamp: 0,
            members,
        })
    }
}

impl Host<'_> {
    /// R22: the member of the routed family session `s` (with `header`) joins. The
    /// caller enqueues it there; the router's index records what it sent (R24).
    pub(super) fn route(&mut self, s: SessionId, header: &Header) -> PoolIx {
        let Some(mut r) = self.router.take() else {
            return self.shared.sess[s].pool;
        };
        let p = self.score(&mut r, s, header);
        self.router = Some(r);
        p
    }

    /// Scores every member of `r`'s family for session `s` and gives the least (R22);
    /// records the prompt's blocks in `r`'s own index when a key reads it (R24).
    pub(super) fn score(&mut self, r: &mut Router, s: SessionId, header: &Header) -> PoolIx {
        // R23: the load queries a scraping router sees, refreshed at most every T.
        if let Some(every) = r.every
            && self.now - r.stale_at >= every
        {
            r.stale_at = self.now;
            r.stale_pools.clear();
            r.stale_pools.extend(self.shared.pool_q.iter().copied());
            r.stale_steps.clear();
            r.stale_steps.extend(self.shared.stage_q.iter().copied());
        }
        let n = r.members.len();
        let width = r.row.len();
        for m in 0..n {
            for k in 0..width {
                let v = match r.row[k] {
                    RouteInput::Member => m as f64,
                    RouteInput::Probe(p) => self.probe(r, p, m, header),
                    // Row inputs are only the two above (the bridge's split).
                    _ => f64::NAN,
                };
                r.rows[m * width + k] = v;
            }
        }
        for k in 0..r.ctx.len() {
            let v = match r.ctx[k] {
                RouteInput::Attr(a) => self
                    .shared
                    .attrs(s)
                    .and_then(|v| v.get(a as usize))
                    .copied()
                    .unwrap_or(f64::NAN),
                RouteInput::Now => self.now,
                RouteInput::Query(q) => self.fixed_query(r, q),
                RouteInput::Over(e, p) => {
                    let mut acc = match e {
                        Extreme::Min => f64::INFINITY,
                        Extreme::Max => f64::NEG_INFINITY,
                    };
                    for m in 0..n {
                        let v = self.probe(r, p, m, header);
                        acc = match e {
                            Extreme::Min => acc.min(v),
                            Extreme::Max => acc.max(v),
                        };
                    }
                    acc
                }
                RouteInput::Member | RouteInput::Probe(_) => f64::NAN,
            };
            r.ctx_values[k] = v;
        }
        let m = r.keys.select(&r.rows, n, width, &r.ctx_values).unwrap_or(0);
        if !r.index.is_empty() {
            let block = self.info[r.members[m]].block;
            let prompt = Units(self.shared.sess[s].prompt).blocks_down(block);
            for key in header.chain.block_keys(block).take(prompt as usize) {
                r.stamp += 1;
                r.index[m].touch(key, r.stamp, r.remember);
            }
        }
        r.members[m]
    }

    /// A query on one fixed member (`kv[2]`, a family of one): live, or from the
    /// snapshot (R23) but for `cap`.
    fn fixed_query(&self, r: &Router, q: Query) -> f64 {
        if r.every.is_none() || q.kind == QueryKind::Cap {
            return self.shared.query(q);
        }
        match q.target {
            Target::Pool(p) => match self.shared.pool_index(p) {
                Some(ix) => pool_value(r.stale_pools[ix.0 as usize], q.kind),
                None => self.shared.query(q),
            },
            Target::Stage(st) => match self.shared.stage_index(st) {
                Some(StageIdx::Step(ix)) => stage_value(r.stale_steps[ix.0 as usize], q.kind),
                _ => self.shared.query(q),
            },
        }
    }

    /// A per-member value of member `m` (R22): live, or from the snapshot (R23).
    fn probe(&self, r: &Router, p: Probe, m: usize, header: &Header) -> f64 {
        let stale = r.every.is_some();
        match p {
            Probe::Pool(kind, decl) => {
                let Some(&ix) = self.shared.pool_flat[decl as usize].get(m) else {
                    return f64::NAN;
                };
                let q = if stale && kind != QueryKind::Cap {
                    r.stale_pools[ix.0 as usize]
                } else {
                    self.shared.pool_q[ix]
                };
                pool_value(q, kind)
            }
            Probe::Stage(kind, decl) => match self.shared.stage_flat[decl as usize].get(m) {
                Some(&StageIdx::Step(ix)) => {
                    let q = if stale {
                        r.stale_steps[ix.0 as usize]
                    } else {
                        self.shared.stage_q[ix]
                    };
                    stage_value(q, kind)
                }
                _ => f64::NAN,
            },
            Probe::Scored(Scored::Hit) => self.pools[r.members[m]].would_hit(header).0 as f64,
            Probe::Scored(Scored::TierHit) => {
                let p = r.members[m];
                match self.info[p].tier {
                    None => 0.0,
                    Some(t) => {
                        let hit = self.pools[p].would_hit(header);
                        self.pools[t].would_hit_after(header, hit).0 as f64
                    }
                }
            }
            Probe::Scored(Scored::Routed) => {
                let Some(index) = r.index.get(m) else {
                    return 0.0;
                };
                let block = self.info[r.members[m]].block;
                let limit = header.hit_limit_blocks(block);
                let blocks = header
                    .chain
                    .block_keys(block)
                    .take(limit as usize)
                    .take_while(|k| index.contains(k))
                    .count() as u64;
                (blocks * block) as f64
            }
        }
    }
}

fn pool_value(q: PoolQ, kind: QueryKind) -> f64 {
    match kind {
        QueryKind::Free => q.free,
        QueryKind::Used => q.used,
        QueryKind::Cached => q.cached,
        QueryKind::Cap => q.cap,
        QueryKind::Queued => q.queued,
        QueryKind::BudgetLeft | QueryKind::Residents => f64::NAN,
    }
}

fn stage_value(q: StageQ, kind: QueryKind) -> f64 {
    match kind {
        QueryKind::BudgetLeft => q.budget_left,
        QueryKind::Residents => q.residents,
        _ => f64::NAN,
    }
}
