//! The compiled-policy ABI: the function-pointer types that compiled Pool code exports
//! (from the JIT or from a shared object), and the structs that carry them to the pool
//! engine together with what keeps their machine code mapped. This module knows
//! nothing of how the code was made: it never parses, never compiles and never depends
//! on the compiler crate. docs/ABI.md is the full contract; in short:
//!
//! - every value is an `f64`; a *row* is one record's slots (a waiting hold or a
//!   cache entry), a *ctx* is the per-moment slots (`now`, query values, …), both as
//!   contiguous `f64` arrays laid out by the spec's slot layout;
//! - `key(row, ctx) -> f64`, `pred`/`work` have the same shape;
//! - `time(rows, n, stride, ctx) -> f64`: the ctx holds the iteration's totals, the
//!   `n` rows (laid out as `select`'s) one session's take each, for `sum` (R29);
//! - `cmp(row_a, row_b, ctx) -> i32` is −1, 0 or 1 by the key list in E5 order;
//! - `select(rows, n, stride, ctx) -> i64` is the index of the least of `n` rows
//!   (E5 order, ties to the lowest index), −1 when `n` is 0; row `i` starts at
//!   `rows + i * stride` *f64 slots* (not bytes).
//!
//! The raw pointers are `unsafe` to call. The structs below pair them with a
//! [`CodeHandle`] and the number of slots they read, so their safe methods can check
//! slice lengths and the code cannot be unmapped while a struct exists.

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// `key(row, ctx)`: one key, or a spill `pred`/`work`, of one record.
///
/// # Safety
/// `row` must point to at least [`Shape::row`] readable `f64`s and `ctx` to at least
/// [`Shape::ctx`] (either may dangle when that count is 0), and the code must still
/// be mapped.
pub type KeyFn = unsafe extern "C" fn(row: *const f64, ctx: *const f64) -> f64;

/// `cmp(row_a, row_b, ctx)`: −1 when `row_a` orders before `row_b` by the key list
/// (E5: each key ascending, −0 == +0, NaN greatest and equal to NaN), 1 when after,
/// 0 when every key is equal. Tie rules (enqueue or release order) are the caller's.
///
/// # Safety
/// As [`KeyFn`], for both rows.
pub type CmpFn = unsafe extern "C" fn(row_a: *const f64, row_b: *const f64, ctx: *const f64) -> i32;

/// `select(rows, n, stride, ctx)`: the index of the least of `n` rows by the key list
/// in E5 order, the lowest index among equals; −1 when `n` is 0. Row `i` is at
/// `rows.add(i * stride)`: `stride` counts `f64` slots, and may be 0 (every row is
/// the same record) or smaller than a row (rows overlap); both are allowed.
///
/// # Safety
/// For every `i < n`, `rows.add(i * stride)` must point to [`Shape::row`] readable
/// `f64`s; `ctx` as in [`KeyFn`]. `n` must not exceed `i64::MAX`.
pub type SelectFn =
    unsafe extern "C" fn(rows: *const f64, n: u64, stride: u64, ctx: *const f64) -> i64;

/// `time(rows, n, stride, ctx)`: seconds a step-stage iteration takes, from its
/// totals in `ctx` and its take table: row `i` at `rows.add(i * stride)` holds the
/// values of the `i`-th session taking tokens, which `sum` adds over (R29).
///
/// # Safety
/// As [`SelectFn`]'s rows and ctx.
pub type TimeFn =
    unsafe extern "C" fn(rows: *const f64, n: u64, stride: u64, ctx: *const f64) -> f64;

/// How many `f64` slots the functions of a struct may read from a row and from the
/// ctx: the lengths of the site's slot layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub row: usize,
    pub ctx: usize,
}

/// A share in whatever keeps compiled functions mapped (a JIT module, a loaded shared
/// object). The machine code is released when the last handle goes, so a policy
/// struct can never outlive its code.
#[derive(Clone)]
pub struct CodeHandle(Arc<dyn Any + Send + Sync>);

impl CodeHandle {
    /// Wraps the owner of some machine code; dropping the last handle drops it.
    pub fn new(owner: Arc<dyn Any + Send + Sync>) -> CodeHandle {
        CodeHandle(owner)
    }

    /// For functions that live as long as the process (linked statically, or plain
    /// Rust functions in tests).
    pub fn process() -> CodeHandle {
        CodeHandle(Arc::new(()))
    }
}

impl fmt::Debug for CodeHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CodeHandle({} shares)", Arc::strong_count(&self.0))
    }
}

/// Panics (a caller bug, not bad input) unless `slice` holds `need` slots.
fn check_len(what: &str, slice: &[f64], need: usize) {
    assert!(
        slice.len() >= need,
        "{what} has {} slots, the policy reads {need}",
        slice.len()
    );
}

/// A key list (`queue by` or `evict by`): one function per key, the fused
/// comparator and the fused scan.
#[derive(Clone, Debug)]
pub struct KeyList {
    keys: Vec<KeyFn>,
    cmp: CmpFn,
    select: SelectFn,
    shape: Shape,
    code: CodeHandle,
}

impl KeyList {
    /// # Safety
    /// Every function must behave as its type documents, read no more than `shape`
    /// slots, and stay callable while `code` (or a clone of it) lives.
    pub unsafe fn new(
        keys: Vec<KeyFn>,
        cmp: CmpFn,
        select: SelectFn,
        shape: Shape,
        code: CodeHandle,
    ) -> KeyList {
        KeyList {
            keys,
            cmp,
            select,
            shape,
            code,
        }
    }

    pub fn select_fn(&self) -> SelectFn {
        self.select
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key `index` of one row. Panics if `index` is out of range or a slice is
    /// shorter than [`KeyList::shape`].
    pub fn key(&self, index: usize, row: &[f64], ctx: &[f64]) -> f64 {
        let Some(&key) = self.keys.get(index) else {
            panic!("key {index} of a key list of {}", self.keys.len());
        };
        check_len("row", row, self.shape.row);
        check_len("ctx", ctx, self.shape.ctx);
        // SAFETY: lengths checked against the shape the constructor vouched for; the
        // code is kept mapped by `self.code`.
        unsafe { key(row.as_ptr(), ctx.as_ptr()) }
    }

    /// The fused comparator: `Less` when `a` orders before `b`.
    pub fn cmp(&self, a: &[f64], b: &[f64], ctx: &[f64]) -> Ordering {
        check_len("row a", a, self.shape.row);
        check_len("row b", b, self.shape.row);
        check_len("ctx", ctx, self.shape.ctx);
        // SAFETY: as in `key`.
        let r = unsafe { (self.cmp)(a.as_ptr(), b.as_ptr(), ctx.as_ptr()) };
        r.cmp(&0)
    }

    /// The least of the first `n` rows of `rows`, row `i` starting at slot
    /// `i * stride`; `None` when `n` is 0. Panics if `rows` is too short.
    pub fn select(&self, rows: &[f64], n: usize, stride: usize, ctx: &[f64]) -> Option<usize> {
        if n == 0 {
            return None;
        }
        let need = (n - 1)
            .checked_mul(stride)
            .and_then(|s| s.checked_add(self.shape.row))
            .expect("select: rows extent overflows usize");
        check_len("rows", rows, need);
        check_len("ctx", ctx, self.shape.ctx);
        // SAFETY: every row i < n lies inside `rows` (checked above); `n` fits i64
        // because a slice of f64 is at most isize::MAX bytes long.
        let r = unsafe { (self.select)(rows.as_ptr(), n as u64, stride as u64, ctx.as_ptr()) };
        let index = usize::try_from(r).expect("select returned a negative index for n > 0");
        assert!(index < n, "select returned {index}, out of {n} rows");
        Some(index)
    }
}

/// A pool's spill `when` predicate and `work` expression, on the entry layout.
#[derive(Clone, Debug)]
pub struct SpillFns {
    pred: KeyFn,
    work: KeyFn,
    shape: Shape,
    code: CodeHandle,
}

impl SpillFns {
    /// # Safety
    /// As [`KeyList::new`].
    pub unsafe fn new(pred: KeyFn, work: KeyFn, shape: Shape, code: CodeHandle) -> SpillFns {
        SpillFns {
            pred,
            work,
            shape,
            code,
        }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }

    /// The raw value of `when (…)`; spill when it is non-zero (NaN counts as true).
    pub fn pred(&self, row: &[f64], ctx: &[f64]) -> f64 {
        self.call(self.pred, row, ctx)
    }

    pub fn work(&self, row: &[f64], ctx: &[f64]) -> f64 {
        self.call(self.work, row, ctx)
    }

    fn call(&self, f: KeyFn, row: &[f64], ctx: &[f64]) -> f64 {
        check_len("row", row, self.shape.row);
        check_len("ctx", ctx, self.shape.ctx);
        // SAFETY: as in `KeyList::key`.
        unsafe { f(row.as_ptr(), ctx.as_ptr()) }
    }
}

/// A handoff's `work` (R26): one function on the handoff's own layout (the session's
/// attributes in the row, `units` in the ctx).
#[derive(Clone, Debug)]
pub struct WorkFn {
    work: KeyFn,
    shape: Shape,
    code: CodeHandle,
}

impl WorkFn {
    /// # Safety
    /// As [`KeyList::new`].
    pub unsafe fn new(work: KeyFn, shape: Shape, code: CodeHandle) -> WorkFn {
        WorkFn { work, shape, code }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }

    pub fn work(&self, row: &[f64], ctx: &[f64]) -> f64 {
        check_len("row", row, self.shape.row);
        check_len("ctx", ctx, self.shape.ctx);
        // SAFETY: as in `KeyList::key`.
        unsafe { (self.work)(row.as_ptr(), ctx.as_ptr()) }
    }
}

/// Everything compiled for one pool declaration; every member of a family shares it.
#[derive(Clone, Debug, Default)]
pub struct PoolPolicy {
    /// `queue by` keys; `None` for `queue fifo`.
    pub queue: Option<KeyList>,
    /// `evict by` keys; `None` for `evict lru`.
    pub evict: Option<KeyList>,
    /// `preempt by` keys (R18); `None` for `preempt none` and `preempt lifo`.
    pub preempt: Option<KeyList>,
    pub spill: Option<SpillFns>,
    /// `route by` keys (R22), a row per member; `None` unless the family routes.
    pub route: Option<KeyList>,
    /// A `handoff`'s work (R26); `None` unless the family hands off.
    pub handoff: Option<WorkFn>,
}

/// Everything compiled for one stage declaration; every member of a family shares it.
#[derive(Clone, Debug)]
pub struct StagePolicy {
    time: TimeFn,
    shape: Shape,
    code: CodeHandle,
}

impl StagePolicy {
    /// # Safety
    /// `time` must read at most `shape.ctx` ctx slots and `shape.row` slots of each
    /// row, and stay callable while `code` lives.
    pub unsafe fn new(time: TimeFn, shape: Shape, code: CodeHandle) -> StagePolicy {
        StagePolicy { time, shape, code }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }

    /// Seconds an iteration takes, given the stage's ctx (`tokens`, `prefill`, …) and
    /// its take table: `rows` holds one row of [`Shape::row`] values per session
    /// taking tokens (none when the row is empty, and `n` says how many).
    pub fn time(&self, ctx: &[f64], rows: &[f64], n: usize) -> f64 {
        check_len("ctx", ctx, self.shape.ctx);
        let stride = self.shape.row;
        let needed = n.checked_mul(stride);
        assert!(
            needed.is_some_and(|k| rows.len() >= k),
            "{n} take rows of {stride} slots need more than the {} values given",
            rows.len()
        );
        // SAFETY: `rows` holds `n` rows of `shape.row` values and `ctx` `shape.ctx`
        // (checked above); the code lives as long as `self.code`.
        unsafe { (self.time)(rows.as_ptr(), n as u64, stride as u64, ctx.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn first(row: *const f64, _ctx: *const f64) -> f64 {
        // SAFETY: the shape below promises one row slot.
        unsafe { *row }
    }

    unsafe extern "C" fn cmp_first(a: *const f64, b: *const f64, _ctx: *const f64) -> i32 {
        // SAFETY: one row slot each.
        let (a, b) = unsafe { (*a, *b) };
        a.partial_cmp(&b).map_or(0, |o| o as i32)
    }

    unsafe extern "C" fn select_first(
        rows: *const f64,
        n: u64,
        stride: u64,
        _c: *const f64,
    ) -> i64 {
        let mut best = -1i64;
        for i in 0..n {
            // SAFETY: the caller checked every row lies in the slice.
            let v = unsafe { *rows.add((i * stride) as usize) };
            // SAFETY: as above; `best` was a valid index.
            if best < 0 || v < unsafe { *rows.add(best as usize * stride as usize) } {
                best = i as i64;
            }
        }
        best
    }

    fn list() -> KeyList {
        // SAFETY: the functions read one row slot and no ctx slot, and are static.
        unsafe {
            KeyList::new(
                vec![first],
                cmp_first,
                select_first,
                Shape { row: 1, ctx: 0 },
                CodeHandle::process(),
            )
        }
    }

    #[test]
    fn safe_wrappers_pass_pointers_and_lengths() {
        let l = list();
        assert_eq!(l.key(0, &[2.5], &[]), 2.5);
        assert_eq!(l.cmp(&[1.0], &[2.0], &[]), Ordering::Less);
        assert_eq!(l.select(&[3.0, 9.0, 1.0, 9.0], 2, 2, &[]), Some(1));
        assert_eq!(l.select(&[], 0, 2, &[]), None);
    }

    #[test]
    fn select_with_stride_zero_reads_one_row() {
        assert_eq!(list().select(&[4.0], 5, 0, &[]), Some(0));
    }
}
