//! The interpreter as a policy backend: `extern "C"` trampolines (one per key index
//! and table, by const generics) that look their IR expressions up in a thread-local
//! table and evaluate them with `interp::eval`, `interp::cmp` and the same per-row
//! loop as `interp::select` (a key vector per row). The engine takes function
//! pointers with no data argument, which is why the tables are thread-local:
//! interpreted key lists work only on the thread that installed them. It decides
//! nothing about which backends a pool has (backends.rs does).

use std::cell::RefCell;

use poolrt::policy::{CodeHandle, KeyFn, KeyList, PoolPolicy, Shape, SpillFns};

use super::BenchError;
use poolc::interp;
use poolc::ir::{self, Expr};

/// The most keys an interpreted key list may have (one trampoline per index).
const MAX_KEYS: usize = 8;

/// Table numbers: queue keys, evict keys, spill `[pred, work]`.
const QUEUE: usize = 0;
const EVICT: usize = 1;
const SPILL: usize = 2;

struct Table {
    exprs: Vec<Expr>,
    shape: Shape,
}

thread_local! {
    static TABLES: RefCell<[Option<Table>; 3]> = const { RefCell::new([None, None, None]) };
}

/// A slice of `len` slots at `p` (`&[]` when `len` is 0: the pointer may dangle).
///
/// # Safety
/// `p` must point to `len` readable `f64`s that outlive the returned slice's use.
unsafe fn slots<'a>(p: *const f64, len: usize) -> &'a [f64] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller vouches for `len` readable slots.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

fn with_table<R>(t: usize, f: impl FnOnce(&Table) -> R) -> R {
    TABLES.with(|tables| {
        let tables = tables.borrow();
        let table = tables[t]
            .as_ref()
            .expect("an interpreted policy runs on the thread that installed it");
        f(table)
    })
}

unsafe extern "C" fn interp_key<const T: usize, const I: usize>(
    row: *const f64,
    ctx: *const f64,
) -> f64 {
    with_table(T, |t| {
        // SAFETY: the engine passes rows and ctx of the key list's shape.
        let (row, ctx) = unsafe { (slots(row, t.shape.row), slots(ctx, t.shape.ctx)) };
        interp::eval(&t.exprs[I], row, ctx)
    })
}

unsafe extern "C" fn interp_cmp<const T: usize>(
    a: *const f64,
    b: *const f64,
    ctx: *const f64,
) -> i32 {
    with_table(T, |t| {
        // SAFETY: as in `interp_key`, for both rows.
        let (a, b, ctx) = unsafe {
            (
                slots(a, t.shape.row),
                slots(b, t.shape.row),
                slots(ctx, t.shape.ctx),
            )
        };
        interp::cmp(&t.exprs, a, b, ctx)
    })
}

/// `interp::select`'s loop (a key vector per row, ties to the lowest index) over
/// rows that need not be contiguous beyond the shape.
unsafe extern "C" fn interp_select<const T: usize>(
    rows: *const f64,
    n: u64,
    stride: u64,
    ctx: *const f64,
) -> i64 {
    with_table(T, |t| {
        // SAFETY: as in `interp_key`.
        let ctx = unsafe { slots(ctx, t.shape.ctx) };
        let mut best: Option<(usize, Vec<f64>)> = None;
        for i in 0..n as usize {
            // SAFETY: the caller guarantees every row i < n at rows + i * stride.
            let row = unsafe { slots(rows.add(i * stride as usize), t.shape.row) };
            let values: Vec<f64> = t.exprs.iter().map(|e| interp::eval(e, row, ctx)).collect();
            let replace = match &best {
                None => true,
                Some((_, b)) => interp::compare_keys(&values, b).is_lt(),
            };
            if replace {
                best = Some((i, values));
            }
        }
        best.map_or(-1, |(i, _)| i as i64)
    })
}

fn interp_keys<const T: usize>() -> [KeyFn; MAX_KEYS] {
    [
        interp_key::<T, 0>,
        interp_key::<T, 1>,
        interp_key::<T, 2>,
        interp_key::<T, 3>,
        interp_key::<T, 4>,
        interp_key::<T, 5>,
        interp_key::<T, 6>,
        interp_key::<T, 7>,
    ]
}

fn install<const T: usize>(
    exprs: Vec<Expr>,
    shape: Shape,
) -> Result<[KeyFn; MAX_KEYS], BenchError> {
    if exprs.len() > MAX_KEYS {
        return Err(BenchError::TooManyKeys {
            keys: exprs.len(),
            max: MAX_KEYS,
        });
    }
    TABLES.with(|t| t.borrow_mut()[T] = Some(Table { exprs, shape }));
    Ok(interp_keys::<T>())
}

fn interp_list<const T: usize>(
    keys: &[ir::SiteExpr],
    compiled: &KeyList,
) -> Result<KeyList, BenchError> {
    let shape = compiled.shape();
    let fns = install::<T>(keys.iter().map(|k| k.expr.clone()).collect(), shape)?;
    // SAFETY: each trampoline reads the slots of `shape` (the compiled list's, which
    // covers every slot the expressions read) and evaluates the same expressions;
    // the functions are static.
    Ok(unsafe {
        KeyList::new(
            fns[..keys.len()].to_vec(),
            interp_cmp::<T>,
            interp_select::<T>,
            shape,
            CodeHandle::process(),
        )
    })
}

/// The interpreter's policy structs for pool `cp`, over the shapes of its compiled
/// `policy` (installing this thread's tables); spill functions stay compiled when the
/// pool has none in its IR.
pub(super) fn policy(cp: &ir::Pool, policy: &PoolPolicy) -> Result<PoolPolicy, BenchError> {
    let missing = |what: &'static str| BenchError::MissingCode {
        pool: cp.name.clone(),
        what,
    };
    let queue = match &cp.queue {
        ir::QueuePolicy::Fifo => None,
        ir::QueuePolicy::By(keys) => Some(interp_list::<QUEUE>(
            keys,
            policy.queue.as_ref().ok_or_else(|| missing("queue keys"))?,
        )?),
    };
    let evict = match &cp.evict {
        ir::Evict::Lru => None,
        ir::Evict::By(keys) => Some(interp_list::<EVICT>(
            keys,
            policy.evict.as_ref().ok_or_else(|| missing("evict keys"))?,
        )?),
    };
    let spill = match (&cp.spill, &policy.spill) {
        (Some(s), Some(fns)) => {
            let f = install::<SPILL>(vec![s.pred.expr.clone(), s.work.expr.clone()], fns.shape())?;
            // SAFETY: as in `interp_list`: trampolines over the same expressions,
            // reading the compiled functions' shape.
            Some(unsafe { SpillFns::new(f[0], f[1], fns.shape(), CodeHandle::process()) })
        }
        _ => policy.spill.clone(),
    };
    Ok(PoolPolicy {
        queue,
        evict,
        // The bench never grows a hold, so preempt keys stay compiled.
        preempt: policy.preempt.clone(),
        spill,
        // The bench admits into one pool: nothing is routed.
        route: policy.route.clone(),
        handoff: policy.handoff.clone(),
    })
}
