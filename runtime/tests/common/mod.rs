//! Shared test helpers: a plain [`Env`] host, chain and header builders, and
//! hand-written key lists (as `extern "C"` functions with a fused comparator and scan
//! in E5 order) standing in for compiled code. Nothing here knows the engine's
//! internals.

#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use poolrt::env::default_query;
use poolrt::policy::KeyFn;
use poolrt::{Chain, Env, Header, Query, Run, RunId, SessionId, Units};

/// A host with a table of attributes, ended sessions and non-residents.
#[derive(Clone, Debug, Default)]
pub struct TestEnv {
    pub attrs: BTreeMap<SessionId, Vec<f64>>,
    pub ended: BTreeSet<SessionId>,
    /// Ended sessions the host still answers `attrs` for.
    pub still_answers: BTreeSet<SessionId>,
    pub non_residents: BTreeSet<SessionId>,
    /// Sessions' ids as the host names them (R21); others are their numbers.
    pub names: BTreeMap<SessionId, String>,
}

impl TestEnv {
    pub fn set(&mut self, s: u64, attrs: &[f64]) {
        self.attrs.insert(SessionId(s), attrs.to_vec());
    }

    pub fn end(&mut self, s: u64) {
        self.ended.insert(SessionId(s));
    }
}

impl Env for TestEnv {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        if self.ended.contains(&session) && !self.still_answers.contains(&session) {
            return None;
        }
        Some(self.attrs.get(&session).map_or(&[][..], |v| v.as_slice()))
    }

    fn is_resident(&self, session: SessionId) -> bool {
        !self.non_residents.contains(&session)
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }

    fn name(&self, session: SessionId) -> Option<&str> {
        self.names.get(&session).map(String::as_str)
    }
}

pub fn chain(runs: &[(u64, u64)]) -> Chain {
    Chain::new(
        runs.iter()
            .map(|&(id, len)| Run {
                id: RunId(id),
                len: Units(len),
            })
            .collect(),
    )
    .expect("test chains are valid")
}

pub fn hdr(units: u64, runs: &[(u64, u64)]) -> Header {
    Header::new(Units(units), chain(runs))
}

pub fn s(n: u64) -> SessionId {
    SessionId(n)
}

/// E5 order of one key: −0 == +0, NaN greatest and equal to NaN.
pub fn e5(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
    }
}

/// # Safety
/// `a`, `b` and `ctx` must be valid for every function in `keys`.
pub unsafe fn cmp_by(keys: &[KeyFn], a: *const f64, b: *const f64, ctx: *const f64) -> i32 {
    for k in keys {
        // SAFETY: the caller vouches for the pointers.
        let (x, y) = unsafe { (k(a, ctx), k(b, ctx)) };
        match e5(x, y) {
            Ordering::Less => return -1,
            Ordering::Greater => return 1,
            Ordering::Equal => {}
        }
    }
    0
}

/// # Safety
/// Every row `rows + i * stride` for `i < n` and `ctx` must be valid for `keys`.
pub unsafe fn select_by(
    keys: &[KeyFn],
    rows: *const f64,
    n: u64,
    stride: u64,
    ctx: *const f64,
) -> i64 {
    let mut best: i64 = -1;
    for i in 0..n {
        if best < 0 {
            best = 0;
            continue;
        }
        // SAFETY: rows i and best are inside the caller's extent.
        let (row, least) = unsafe {
            (
                rows.add((i * stride) as usize),
                rows.add(best as usize * stride as usize),
            )
        };
        // SAFETY: as above.
        if unsafe { cmp_by(keys, row, least, ctx) } < 0 {
            best = i as i64;
        }
    }
    best
}

/// Defines `pub fn $name() -> KeyList` over the given key functions.
#[macro_export]
macro_rules! key_list {
    ($name:ident, row = $row:expr, ctx = $ctx:expr, [$($key:path),+ $(,)?]) => {
        pub fn $name() -> poolrt::policy::KeyList {
            const KEYS: &[poolrt::policy::KeyFn] = &[$($key),+];
            unsafe extern "C" fn cmp(a: *const f64, b: *const f64, ctx: *const f64) -> i32 {
                // SAFETY: the engine passes rows and ctx of the declared shape.
                unsafe { $crate::common::cmp_by(KEYS, a, b, ctx) }
            }
            unsafe extern "C" fn select(
                rows: *const f64,
                n: u64,
                stride: u64,
                ctx: *const f64,
            ) -> i64 {
                // SAFETY: as above, for every row.
                unsafe { $crate::common::select_by(KEYS, rows, n, stride, ctx) }
            }
            let shape = poolrt::policy::Shape { row: $row, ctx: $ctx };
            // SAFETY: the key functions read at most the declared shape and are
            // plain functions of this process.
            unsafe {
                poolrt::policy::KeyList::new(
                    KEYS.to_vec(),
                    cmp,
                    select,
                    shape,
                    poolrt::policy::CodeHandle::process(),
                )
            }
        }
    };
}

/// Key functions reading one slot.
macro_rules! slot_key {
    ($name:ident, row, $i:expr) => {
        pub unsafe extern "C" fn $name(row: *const f64, _ctx: *const f64) -> f64 {
            // SAFETY: the shape covers row slot $i.
            unsafe { *row.add($i) }
        }
    };
    ($name:ident, neg_row, $i:expr) => {
        pub unsafe extern "C" fn $name(row: *const f64, _ctx: *const f64) -> f64 {
            // SAFETY: the shape covers row slot $i.
            -unsafe { *row.add($i) }
        }
    };
}

slot_key!(row0, row, 0);
slot_key!(row1, row, 1);
slot_key!(row2, row, 2);
slot_key!(neg_row0, neg_row, 0);
slot_key!(neg_row1, neg_row, 1);

/// `now − row[0]` (age, or waited, from a time slot).
pub unsafe extern "C" fn since_row0(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 0 and ctx slot 0.
    unsafe { *ctx - *row }
}

/// `now − row[1] >= 3 ? 0 : 1`: aged holds first (Ascend-style lane).
pub unsafe extern "C" fn aged_row1(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 1 and ctx slot 0.
    let waited = unsafe { *ctx - *row.add(1) };
    if waited >= 3.0 { 0.0 } else { 1.0 }
}

/// `now − row[1]`.
pub unsafe extern "C" fn since_row1(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 1 and ctx slot 0.
    unsafe { *ctx - *row.add(1) }
}

/// `row[0] > ctx[1] ? 1 : 0`: holds whose units exceed what is free go last.
pub unsafe extern "C" fn too_big_row0_ctx1(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 0 and ctx slot 1.
    let (units, free) = unsafe { (*row, *ctx.add(1)) };
    if units > free { 1.0 } else { 0.0 }
}

/// A constant NaN key: every row ties (E5: NaN equals NaN).
pub unsafe extern "C" fn nan_key(_row: *const f64, _ctx: *const f64) -> f64 {
    f64::NAN
}

/// `row[0]` as-is, but NaN when it is 1: checks that NaN sorts last.
pub unsafe extern "C" fn row0_nan_at_1(row: *const f64, _ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 0.
    let v = unsafe { *row };
    if v == 1.0 { f64::NAN } else { v }
}

// Queue key lists (layouts in `layouts.rs` of each test via the helpers below).
key_list!(q_priority_serial, row = 2, ctx = 0, [row0, row1]);
key_list!(q_longest_prefix, row = 2, ctx = 0, [neg_row0, row1]);
key_list!(q_aged, row = 2, ctx = 1, [aged_row1, row0]);
key_list!(q_fits_first, row = 2, ctx = 2, [too_big_row0_ctx1, row1]);
key_list!(q_nan_last, row = 1, ctx = 0, [row0_nan_at_1]);
key_list!(q_shortest, row = 2, ctx = 0, [row0, row1]);
// Evict key lists.
key_list!(e_priority_last, row = 2, ctx = 0, [row0, row1]);
key_list!(e_waiting_size, row = 2, ctx = 0, [row0, neg_row1]);
key_list!(e_most_waited, row = 2, ctx = 0, [neg_row0, row1]);
key_list!(e_mru, row = 1, ctx = 1, [since_row0]);
key_list!(e_most_hit, row = 2, ctx = 0, [neg_row0, row1]);
key_list!(e_all_nan, row = 0, ctx = 0, [nan_key]);
key_list!(e_largest, row = 1, ctx = 0, [neg_row0]);
// Preempt key lists (R18).
key_list!(p_priority_admitted, row = 2, ctx = 0, [neg_row0, neg_row1]);
key_list!(p_largest, row = 2, ctx = 0, [neg_row0, row1]);
key_list!(
    p_fits_youngest,
    row = 2,
    ctx = 2,
    [too_big_row0_ctx1, since_row1]
);

use poolrt::{EvictPolicy, Input, Layout, PoolRef, Preempt, QueryKind, QueuePolicy, Target};

/// Attribute 0 is `priority`, attribute 1 is `serial` in every test host.
pub fn queue_by_priority() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_priority_serial(),
        layout: Layout {
            row: vec![Input::Attr(0), Input::Attr(1)],
            ctx: vec![],
        },
    }
}

/// VTC (R30): `queue by (service, serial)`, the least-served group first.
pub fn queue_by_service() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_priority_serial(),
        layout: Layout {
            row: vec![Input::Service, Input::Attr(1)],
            ctx: vec![],
        },
    }
}

/// SGLang's longest prefix match: `queue by (-computed, enqueued)`.
pub fn queue_longest_prefix() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_longest_prefix(),
        layout: Layout {
            row: vec![Input::Computed, Input::Enqueued],
            ctx: vec![],
        },
    }
}

/// `queue by (waited >= 3 ? 0 : 1, priority)`.
pub fn queue_aged() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_aged(),
        layout: Layout {
            row: vec![Input::Attr(0), Input::Enqueued],
            ctx: vec![Input::Now],
        },
    }
}

/// `queue by (units > free(me) ? 1 : 0, serial)`.
pub fn queue_fits_first(me: PoolRef) -> QueuePolicy {
    QueuePolicy::By {
        keys: q_fits_first(),
        layout: Layout {
            row: vec![Input::Units, Input::Attr(1)],
            ctx: vec![
                Input::Now,
                Input::Query(poolrt::Query {
                    kind: QueryKind::Free,
                    target: Target::Pool(me),
                }),
            ],
        },
    }
}

/// `queue by (units, priority)`: shortest job first; fixed keys.
pub fn queue_shortest() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_shortest(),
        layout: Layout {
            row: vec![Input::Units, Input::Attr(0)],
            ctx: vec![],
        },
    }
}

/// `queue by (priority == 1 ? NaN : priority)`.
pub fn queue_nan_last() -> QueuePolicy {
    QueuePolicy::By {
        keys: q_nan_last(),
        layout: Layout {
            row: vec![Input::Attr(0)],
            ctx: vec![],
        },
    }
}

/// vLLM's priority victim: `preempt by (-priority, -admitted)`.
pub fn preempt_by_priority() -> Preempt {
    Preempt::By {
        keys: p_priority_admitted(),
        layout: Layout {
            row: vec![Input::Attr(0), Input::Admitted],
            ctx: vec![],
        },
    }
}

/// `preempt by (-units, computed)`: the largest hold, the least computed among equals.
pub fn preempt_largest() -> Preempt {
    Preempt::By {
        keys: p_largest(),
        layout: Layout {
            row: vec![Input::Units, Input::Computed],
            ctx: vec![],
        },
    }
}

/// `preempt by (units > free(me) ? 1 : 0, now - admitted)`: a query and the time.
pub fn preempt_fits_youngest(me: PoolRef) -> Preempt {
    Preempt::By {
        keys: p_fits_youngest(),
        layout: Layout {
            row: vec![Input::Units, Input::Admitted],
            ctx: vec![
                Input::Now,
                Input::Query(poolrt::Query {
                    kind: QueryKind::Free,
                    target: Target::Pool(me),
                }),
            ],
        },
    }
}

/// `evict by (priority, last)`.
pub fn evict_by_priority() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_priority_last(),
        layout: Layout {
            row: vec![Input::Attr(0), Input::Last],
            ctx: vec![],
        },
    }
}

/// `evict by (waiting, -size)`.
pub fn evict_by_waiting() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_waiting_size(),
        layout: Layout {
            row: vec![Input::Waiting, Input::Size],
            ctx: vec![],
        },
    }
}

/// `evict by (-waiting, last)`: the entry most waiting holds would hit goes first
/// (a perverse policy, but one that makes `waiting` decide every eviction).
pub fn evict_most_waited() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_most_waited(),
        layout: Layout {
            row: vec![Input::Waiting, Input::Last],
            ctx: vec![],
        },
    }
}

/// `evict by (hits, last)`: LFU (R31), the tail block hit least often first, then
/// the oldest release.
pub fn evict_lfu() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_priority_last(),
        layout: Layout {
            row: vec![Input::Hits, Input::Last],
            ctx: vec![],
        },
    }
}

/// `evict by (-hits, last)`: the tail block hit most often first (perverse, but it
/// makes `hits` decide most evictions, where LFU's counts tie at 0).
pub fn evict_most_hit() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_most_hit(),
        layout: Layout {
            row: vec![Input::Hits, Input::Last],
            ctx: vec![],
        },
    }
}

/// `evict by (age)`: most recently released first.
pub fn evict_mru() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_mru(),
        layout: Layout {
            row: vec![Input::Last],
            ctx: vec![Input::Now, Input::SpillUnits],
        },
    }
}

/// `evict by (-size)`: the largest entry first, so a choice lasts one block.
pub fn evict_largest() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_largest(),
        layout: Layout {
            row: vec![Input::Size],
            ctx: vec![],
        },
    }
}

/// `evict by (NaN)`: every entry ties, so release order decides.
pub fn evict_all_nan() -> EvictPolicy {
    EvictPolicy::By {
        keys: e_all_nan(),
        layout: Layout::default(),
    }
}

/// `when (size >= 8)`: row slot 0 is `size`.
pub unsafe extern "C" fn size_at_least_8(row: *const f64, _ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 0.
    if unsafe { *row } >= 8.0 { 1.0 } else { 0.0 }
}

/// `(units * 3 + last)`: ctx slot 1 is `units`, row slot 1 is `last`.
pub unsafe extern "C" fn units_3_plus_last(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape covers row slot 1 and ctx slot 1.
    unsafe { *ctx.add(1) * 3.0 + *row.add(1) }
}

/// `spill host via pcie (units * 3 + last) when (size >= 8)`, or with a NaN
/// predicate (`when (nan)`, always true by E2) when `always`. The `always` one's
/// row reads an attribute where the other reads `size`: nothing an Evict moment
/// changes, so that an unlogged pool takes its moments together, one spill
/// decision for an entry's (evict.rs), which the naive model decides at each.
pub fn spill_policy(always: bool) -> poolrt::SpillPolicy {
    let pred: poolrt::policy::KeyFn = if always { nan_key } else { size_at_least_8 };
    // SAFETY: both functions read at most 2 row and 2 ctx slots and are plain
    // functions of this process.
    let fns = unsafe {
        poolrt::policy::SpillFns::new(
            pred,
            units_3_plus_last,
            poolrt::policy::Shape { row: 2, ctx: 2 },
            poolrt::policy::CodeHandle::process(),
        )
    };
    poolrt::SpillPolicy {
        fns,
        layout: Layout {
            row: vec![
                if always { Input::Attr(0) } else { Input::Size },
                Input::Last,
            ],
            ctx: vec![Input::Now, Input::SpillUnits],
        },
        tier: PoolRef { pool: 1, member: 0 },
        link: poolrt::StageRef {
            stage: 0,
            member: 0,
        },
    }
}
