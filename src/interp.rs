//! Reference interpreter: evaluates IR expressions (E2–E4) and orders key lists (E5)
//! by walking the tree. It is the oracle the Cranelift JIT is tested against, so every
//! rule is spelled out directly rather than left to a library function whose edge cases
//! differ (Rust's `f64::min`/`max` ignore NaN and do not order ±0). It must stay
//! simple and obviously correct; it must not optimise, cache, fold, or depend on
//! `codegen`, `sema` or the runtime.
//!
//! NaN payloads and NaN sign bits are not part of the contract: the interpreter only
//! promises *a* NaN wherever E3/E4 give NaN (the hardware picks the bits for
//! arithmetic, and `min`/`max` return `f64::NAN`). A bit-for-bit comparison against
//! the JIT should therefore treat any two NaNs as equal and compare all other values
//! by `to_bits`, which keeps the sign of zero significant.

use std::cmp::Ordering;

use crate::ir::{BinaryOp, Builtin, Expr, Slot, UnaryOp};

/// Evaluates an IR expression on one row and one context (E2–E4).
///
/// # Panics
/// When a `Slot` index is out of range for `row` or `ctx`. Sema guarantees every slot
/// lies inside its site's layout, so this only fires on a broken invariant. Because
/// `&&`, `||` and `?:` are lazy, a bad slot in a branch that is not taken does not
/// panic. Recursion depth equals the tree depth, which sema keeps to source nesting.
pub fn eval(expr: &Expr, row: &[f64], ctx: &[f64]) -> f64 {
    match expr {
        Expr::Const(c) => *c,
        Expr::Slot(slot) => read_slot(*slot, row, ctx),
        Expr::Unary(op, x) => {
            let x = eval(x, row, ctx);
            match op {
                // Rust's unary minus is IEEE negate: it flips the sign bit, so -0 and
                // -NaN come out as the JIT's `fneg` gives them.
                UnaryOp::Neg => -x,
                // `x == 0.0` is true for both zeros and false for NaN, which is E2.
                UnaryOp::Not => bool_value(x == 0.0),
            }
        }
        Expr::Binary(op, a, b) => eval_binary(*op, a, b, row, ctx),
        Expr::Cond(c, a, b) => {
            if truthy(eval(c, row, ctx)) {
                eval(a, row, ctx)
            } else {
                eval(b, row, ctx)
            }
        }
        Expr::Call(builtin, args) => eval_call(*builtin, args, row, ctx),
    }
}

/// E2 truthiness: non-zero is true; NaN is true; -0 is false.
pub fn truthy(x: f64) -> bool {
    // IEEE `!=` is true for NaN and false for -0, exactly E2.
    x != 0.0
}

/// E5 order of one key: -0 == +0; NaN greater than every number, equal to NaN.
pub fn key_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        // Written with IEEE comparisons rather than `total_cmp`, which would put -0
        // before +0.
        (false, false) => {
            if a < b {
                Ordering::Less
            } else if a > b {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
    }
}

/// E5 lexicographic order of two key vectors of equal length.
///
/// # Panics
/// When the lengths differ: both vectors come from the same key list, so a mismatch is
/// a caller bug, not an order to define.
pub fn compare_keys(a: &[f64], b: &[f64]) -> Ordering {
    assert_eq!(
        a.len(),
        b.len(),
        "compare_keys: key vectors of different lengths"
    );
    for (&x, &y) in a.iter().zip(b) {
        let order = key_order(x, y);
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

/// The index of the least of `n` rows (row i is `rows[i*stride .. i*stride+stride]`)
/// by the key list, E5 order, ties → lowest index; `None` when `n == 0`. `stride` may
/// be 0 (keys read no row slot); every row is then the empty slice.
///
/// # Panics
/// When `rows` holds fewer than `n * stride` values, or a key reads a slot outside
/// `stride` or `ctx` (a broken sema or runtime invariant).
pub fn select(keys: &[Expr], rows: &[f64], n: usize, stride: usize, ctx: &[f64]) -> Option<usize> {
    let needed = n
        .checked_mul(stride)
        .expect("select: n * stride overflows usize");
    assert!(
        rows.len() >= needed,
        "select: {n} rows of stride {stride} need {needed} values, got {}",
        rows.len()
    );
    let mut best: Option<(usize, Vec<f64>)> = None;
    for i in 0..n {
        let row = &rows[i * stride..i * stride + stride];
        let values = key_values(keys, row, ctx);
        // Only a strictly smaller row replaces the best, so among equal rows the
        // earliest one stays: the site's tie rule is index order.
        let replace = match &best {
            None => true,
            Some((_, best_values)) => compare_keys(&values, best_values) == Ordering::Less,
        };
        if replace {
            best = Some((i, values));
        }
    }
    best.map(|(i, _)| i)
}

/// Fused comparator: `compare_keys` of the key values of two rows, as -1, 0 or 1.
///
/// # Panics
/// When a key reads a slot outside a row or `ctx` (a broken sema invariant).
pub fn cmp(keys: &[Expr], row_a: &[f64], row_b: &[f64], ctx: &[f64]) -> i32 {
    let a = key_values(keys, row_a, ctx);
    let b = key_values(keys, row_b, ctx);
    match compare_keys(&a, &b) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

fn key_values(keys: &[Expr], row: &[f64], ctx: &[f64]) -> Vec<f64> {
    keys.iter().map(|k| eval(k, row, ctx)).collect()
}

fn read_slot(slot: Slot, row: &[f64], ctx: &[f64]) -> f64 {
    let (name, values, index) = match slot {
        Slot::Row(i) => ("row", row, i),
        Slot::Ctx(i) => ("ctx", ctx, i),
    };
    match values.get(index as usize) {
        Some(v) => *v,
        None => panic!(
            "interp: {name} slot {index} out of range ({name} has {} slots); sema broke \
             the slot-layout invariant",
            values.len()
        ),
    }
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

fn eval_binary(op: BinaryOp, a: &Expr, b: &Expr, row: &[f64], ctx: &[f64]) -> f64 {
    // `&&` and `||` must not touch the right side unless it decides the result (E2),
    // so they are handled before both operands are evaluated.
    match op {
        BinaryOp::And => {
            return bool_value(truthy(eval(a, row, ctx)) && truthy(eval(b, row, ctx)));
        }
        BinaryOp::Or => {
            return bool_value(truthy(eval(a, row, ctx)) || truthy(eval(b, row, ctx)));
        }
        _ => {}
    }
    let x = eval(a, row, ctx);
    let y = eval(b, row, ctx);
    match op {
        BinaryOp::And | BinaryOp::Or => unreachable!("handled above"),
        // Rust's float comparisons are the IEEE ones: false on any NaN except `!=`.
        BinaryOp::Eq => bool_value(x == y),
        BinaryOp::Ne => bool_value(x != y),
        BinaryOp::Lt => bool_value(x < y),
        BinaryOp::Le => bool_value(x <= y),
        BinaryOp::Gt => bool_value(x > y),
        BinaryOp::Ge => bool_value(x >= y),
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        // Rust's `%` on f64 is C `fmod` (sign of the dividend), which is E3.
        BinaryOp::Rem => x % y,
    }
}

fn eval_call(builtin: Builtin, args: &[Expr], row: &[f64], ctx: &[f64]) -> f64 {
    let values: Vec<f64> = args.iter().map(|a| eval(a, row, ctx)).collect();
    match builtin {
        Builtin::Min | Builtin::Max => {
            assert!(
                values.len() >= 2,
                "interp: {} called with {} arguments; sema guarantees at least 2",
                builtin.name(),
                values.len()
            );
            let pick = if builtin == Builtin::Min {
                minimum
            } else {
                maximum
            };
            // IEEE minimum/maximum are associative, so a left fold is the n-ary form.
            values[1..].iter().fold(values[0], |acc, &v| pick(acc, v))
        }
        Builtin::Abs | Builtin::Floor | Builtin::Ceil | Builtin::Sqrt => {
            assert!(
                values.len() == 1,
                "interp: {} called with {} arguments; sema guarantees exactly 1",
                builtin.name(),
                values.len()
            );
            let x = values[0];
            // The std functions are the IEEE operations: `abs` clears the sign bit,
            // `floor`/`ceil` keep the sign of a zero result (`ceil(-0.5)` is -0) and
            // `sqrt` of a negative number is NaN while `sqrt(-0)` is -0.
            match builtin {
                Builtin::Abs => x.abs(),
                Builtin::Floor => x.floor(),
                Builtin::Ceil => x.ceil(),
                Builtin::Sqrt => x.sqrt(),
                Builtin::Min | Builtin::Max => unreachable!("handled above"),
            }
        }
    }
}

/// IEEE 754-2019 `minimum` (E4): NaN if either is NaN; -0 is less than +0.
fn minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a < b {
        a
    } else if b < a {
        b
    } else if a.is_sign_negative() {
        // Equal values: only ±0 can differ, and -0 is the smaller.
        a
    } else {
        b
    }
}

/// IEEE 754-2019 `maximum` (E4): NaN if either is NaN; +0 is greater than -0.
fn maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else if a.is_sign_positive() {
        // Equal values: only ±0 can differ, and +0 is the greater.
        a
    } else {
        b
    }
}
