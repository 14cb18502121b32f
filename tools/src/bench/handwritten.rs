//! Hand-written Rust for the built-in key lists — `queue by (priority, serial)`, the
//! seed's Ascend lanes and `evict by (priority, last)` — in E5 order (NaN greatest,
//! −0 == +0), as `extern "C"` functions the engine calls like compiled code. They
//! assume the slot layouts that backends.rs recognises; they implement exactly the
//! order the JIT does ([`order_bits`], shared with benches/select.rs), never a cheaper
//! one, so the ratio to them is the compiled code's overhead.

use poolrt::policy::{CodeHandle, KeyList, Shape};

use super::backends::{KnownEvict, KnownQueue};

/// the hand-written loops, here and in benches/select.rs, implement the same order
/// and not a cheaper one.
#[inline(always)]
pub fn order_bits(x: f64) -> i64 {
    if x.is_nan() {
        return i64::MAX;
    }
    let bits = if x == 0.0 { 0 } else { x.to_bits() as i64 };
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

#[inline(always)]
fn cmp_pairs(a: (i64, i64), b: (i64, i64)) -> i32 {
    a.cmp(&b) as i32
}

/// The least row by a two-key list given as a function of the row (ties to the
/// lowest index).
///
/// # Safety
/// Every row `rows + i * stride`, `i < n`, must hold the slots `keys` reads.
#[inline(always)]
unsafe fn select2(
    rows: *const f64,
    n: u64,
    stride: u64,
    keys: impl Fn(*const f64) -> (i64, i64),
) -> i64 {
    let mut best = -1i64;
    let mut held = (0i64, 0i64);
    let mut row = rows;
    for i in 0..n as i64 {
        let k = keys(row);
        if best < 0 || k < held {
            best = i;
            held = k;
        }
        // SAFETY: stays inside (or one row past) the caller's extent.
        row = unsafe { row.add(stride as usize) };
    }
    best
}

// `(priority, serial)` on the queue row [serial, priority].
unsafe extern "C" fn ps_priority(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: the shape promises two row slots.
    unsafe { *row.add(1) }
}

unsafe extern "C" fn ps_serial(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row }
}

#[inline(always)]
unsafe fn ps_keys(row: *const f64) -> (i64, i64) {
    // SAFETY: two row slots.
    unsafe { (order_bits(*row.add(1)), order_bits(*row)) }
}

unsafe extern "C" fn ps_cmp(a: *const f64, b: *const f64, _: *const f64) -> i32 {
    // SAFETY: as above, for both rows.
    unsafe { cmp_pairs(ps_keys(a), ps_keys(b)) }
}

unsafe extern "C" fn ps_select(rows: *const f64, n: u64, stride: u64, _: *const f64) -> i64 {
    // SAFETY: the caller guarantees the rows.
    unsafe { select2(rows, n, stride, |r| ps_keys(r)) }
}

// The seed's Ascend lanes on the queue row [serial, prompt, immediate, enqueued]
// with ctx [now]: `immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128
// ? 2 : 3`, then `serial`.
#[inline(always)]
fn lane(prompt: f64, immediate: f64, enqueued: f64, now: f64) -> f64 {
    if immediate != 0.0 {
        0.0
    } else if prompt > 128.0 && now - enqueued >= 3.0 {
        1.0
    } else if prompt <= 128.0 {
        2.0
    } else {
        3.0
    }
}

unsafe extern "C" fn ascend_lane(row: *const f64, ctx: *const f64) -> f64 {
    // SAFETY: the shape promises four row slots and one ctx slot.
    unsafe { lane(*row.add(1), *row.add(2), *row.add(3), *ctx) }
}

unsafe extern "C" fn ascend_serial(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row }
}

#[inline(always)]
unsafe fn ascend_keys(row: *const f64, now: f64) -> (i64, i64) {
    // SAFETY: four row slots.
    unsafe {
        (
            order_bits(lane(*row.add(1), *row.add(2), *row.add(3), now)),
            order_bits(*row),
        )
    }
}

unsafe extern "C" fn ascend_cmp(a: *const f64, b: *const f64, ctx: *const f64) -> i32 {
    // SAFETY: as above, for both rows; one ctx slot.
    unsafe {
        let now = *ctx;
        cmp_pairs(ascend_keys(a, now), ascend_keys(b, now))
    }
}

unsafe extern "C" fn ascend_select(rows: *const f64, n: u64, stride: u64, ctx: *const f64) -> i64 {
    // SAFETY: the caller guarantees the rows and the ctx slot.
    unsafe {
        let now = *ctx;
        select2(rows, n, stride, |r| ascend_keys(r, now))
    }
}

// `(priority, last)` on the entry row [priority, …, last at L].
unsafe extern "C" fn pl_priority(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: the shape promises L + 1 row slots.
    unsafe { *row }
}

unsafe extern "C" fn pl_last<const L: usize>(row: *const f64, _: *const f64) -> f64 {
    // SAFETY: as above.
    unsafe { *row.add(L) }
}

#[inline(always)]
unsafe fn pl_keys<const L: usize>(row: *const f64) -> (i64, i64) {
    // SAFETY: L + 1 row slots.
    unsafe { (order_bits(*row), order_bits(*row.add(L))) }
}

unsafe extern "C" fn pl_cmp<const L: usize>(a: *const f64, b: *const f64, _: *const f64) -> i32 {
    // SAFETY: as above, for both rows.
    unsafe { cmp_pairs(pl_keys::<L>(a), pl_keys::<L>(b)) }
}

unsafe extern "C" fn pl_select<const L: usize>(
    rows: *const f64,
    n: u64,
    stride: u64,
    _: *const f64,
) -> i64 {
    // SAFETY: the caller guarantees the rows.
    unsafe { select2(rows, n, stride, |r| pl_keys::<L>(r)) }
}

pub(super) fn rust_queue(k: KnownQueue) -> Option<KeyList> {
    // SAFETY (each): the functions read at most the declared shape (checked against
    // the layout by `known_queue`), implement the key list in E5 order, and are
    // static.
    match k {
        KnownQueue::PrioritySerial => Some(unsafe {
            KeyList::new(
                vec![ps_priority, ps_serial],
                ps_cmp,
                ps_select,
                Shape { row: 2, ctx: 0 },
                CodeHandle::process(),
            )
        }),
        KnownQueue::Ascend => Some(unsafe {
            KeyList::new(
                vec![ascend_lane, ascend_serial],
                ascend_cmp,
                ascend_select,
                Shape { row: 4, ctx: 1 },
                CodeHandle::process(),
            )
        }),
        KnownQueue::Fifo | KnownQueue::Other => None,
    }
}

pub(super) fn rust_evict(k: KnownEvict) -> Option<KeyList> {
    fn list<const L: usize>() -> KeyList {
        // SAFETY: as in `rust_queue`; `known_evict` checked `last` is slot L.
        unsafe {
            KeyList::new(
                vec![pl_priority, pl_last::<L>],
                pl_cmp::<L>,
                pl_select::<L>,
                Shape { row: L + 1, ctx: 0 },
                CodeHandle::process(),
            )
        }
    }
    match k {
        KnownEvict::PriorityLast { last: 1 } => Some(list::<1>()),
        KnownEvict::PriorityLast { last: 2 } => Some(list::<2>()),
        KnownEvict::PriorityLast { last: 3 } => Some(list::<3>()),
        _ => None,
    }
}
