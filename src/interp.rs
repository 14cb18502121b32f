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
//!
//! A slot outside its row or context, a builtin with the wrong number of arguments
//! and rows shorter than `n * stride` are not inputs to define but broken invariants
//! of checked IR (sema) or of the engine that lays out the rows. `try_eval` and
//! `try_select` report them as an [`InterpError`], so a test can pin each without
//! catching a panic; `eval` and `select`, which every caller of checked IR uses,
//! panic with the same message.

use std::cmp::Ordering;
use std::fmt;

use crate::ir::{BinaryOp, Builtin, Expr, Slot, UnaryOp};

/// An expression or selection that checked IR never asks for: a broken invariant,
/// reported by the `try_` functions (the others panic with its `Display` text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterpError {
    /// A slot at or past the end of its row or context, which has `len` values.
    SlotOutOfRange { slot: Slot, len: usize },
    /// A builtin given a number of arguments sema rejects (E4).
    Arity { builtin: Builtin, given: usize },
    /// `select` of `n` rows of `stride` values each over `got` values; `needed` is
    /// `n * stride`, or `None` when that overflows `usize`.
    ShortRows {
        n: usize,
        stride: usize,
        needed: Option<usize>,
        got: usize,
    },
    /// `sum` evaluated without a take table (at a pool's site) or inside another
    /// `sum` (R29).
    MisplacedSum,
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            InterpError::SlotOutOfRange { slot, len } => {
                let (name, index) = match slot {
                    Slot::Row(i) => ("row", i),
                    Slot::Ctx(i) => ("ctx", i),
                };
                write!(
                    f,
                    "interp: {name} slot {index} out of range ({name} has {len} slots); sema \
                     broke the slot-layout invariant"
                )
            }
            InterpError::Arity { builtin, given } => {
                let guarantee = match builtin {
                    Builtin::Min | Builtin::Max => "at least 2",
                    Builtin::Abs | Builtin::Floor | Builtin::Ceil | Builtin::Sqrt => "exactly 1",
                };
                write!(
                    f,
                    "interp: {} called with {given} arguments; sema guarantees {guarantee}",
                    builtin.name()
                )
            }
            InterpError::ShortRows { needed: None, .. } => {
                write!(f, "rows: n * stride overflows usize")
            }
            InterpError::MisplacedSum => write!(
                f,
                "interp: sum() outside a stage's time or inside another sum(); sema \
                 allows neither (R29)"
            ),
            InterpError::ShortRows {
                n,
                stride,
                needed: Some(needed),
                got,
            } => write!(
                f,
                "rows: {n} rows of stride {stride} need {needed} values, got {got}"
            ),
        }
    }
}

impl std::error::Error for InterpError {}

/// The value of a `try_` function, or a panic with its error's message: what the
/// functions for checked IR do on a broken invariant.
#[track_caller]
fn or_panic<T>(result: Result<T, InterpError>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// Evaluates an IR expression on one row and one context (E2–E4).
///
/// # Panics
/// Where [`try_eval`] returns an error: a `Slot` index out of range for `row` or
/// `ctx`, a builtin with the wrong number of arguments, or a `sum` (a stage's `time`
/// is evaluated by [`eval_time`]). Sema guarantees none happens, so this only fires
/// on a broken invariant.
pub fn eval(expr: &Expr, row: &[f64], ctx: &[f64]) -> f64 {
    or_panic(try_eval(expr, row, ctx))
}

/// [`eval`], reporting a broken invariant as an error instead of panicking. Because
/// `&&`, `||` and `?:` are lazy, a bad slot in a branch that is not taken is no
/// error. Recursion depth equals the tree depth, which sema keeps to source nesting.
pub fn try_eval(expr: &Expr, row: &[f64], ctx: &[f64]) -> Result<f64, InterpError> {
    Env {
        row,
        ctx,
        takes: None,
    }
    .value(expr)
}

/// The rows a stage's `time` sums over (R29): `n` rows of `stride` values each, row
/// `i` at `rows[i * stride ..]`, one per session taking tokens, in take order.
#[derive(Clone, Copy, Debug)]
pub struct Takes<'a> {
    pub rows: &'a [f64],
    pub n: usize,
    pub stride: usize,
}

impl Takes<'_> {
    /// No session: what a `time` without `sum` is evaluated with.
    pub const NONE: Takes<'static> = Takes {
        rows: &[],
        n: 0,
        stride: 0,
    };
}

/// Evaluates a stage's `time` on the iteration's totals `ctx` and its take table:
/// each `sum(e)` is `e` on row 0, 1, … added in that order, starting from +0.
///
/// # Panics
/// Where [`try_eval_time`] returns an error (a broken invariant, as for [`eval`]).
pub fn eval_time(expr: &Expr, takes: Takes<'_>, ctx: &[f64]) -> f64 {
    or_panic(try_eval_time(expr, takes, ctx))
}

/// [`eval_time`], reporting a broken invariant as an error: also a table shorter than
/// `n * stride`, checked before anything is evaluated.
pub fn try_eval_time(expr: &Expr, takes: Takes<'_>, ctx: &[f64]) -> Result<f64, InterpError> {
    rows_needed(takes.rows, takes.n, takes.stride)?;
    Env {
        row: &[],
        ctx,
        takes: Some(takes),
    }
    .value(expr)
}

/// What an expression is evaluated against: one row (a record's, or inside `sum` a
/// take's), the context, and the take table while a `sum` may still start.
struct Env<'a> {
    row: &'a [f64],
    ctx: &'a [f64],
    takes: Option<Takes<'a>>,
}

impl Env<'_> {
    fn value(&self, expr: &Expr) -> Result<f64, InterpError> {
        Ok(match expr {
            Expr::Const(c) => *c,
            Expr::Slot(slot) => read_slot(*slot, self.row, self.ctx)?,
            Expr::Unary(op, x) => {
                let x = self.value(x)?;
                match op {
                    // Rust's unary minus is IEEE negate: it flips the sign bit, so -0
                    // and -NaN come out as the JIT's `fneg` gives them.
                    UnaryOp::Neg => -x,
                    // `x == 0.0` is true for both zeros and false for NaN, which is E2.
                    UnaryOp::Not => bool_value(x == 0.0),
                }
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b)?,
            Expr::Cond(c, a, b) => {
                if truthy(self.value(c)?) {
                    self.value(a)?
                } else {
                    self.value(b)?
                }
            }
            Expr::Call(builtin, args) => self.call(*builtin, args)?,
            Expr::Sum(x) => {
                let takes = self.takes.ok_or(InterpError::MisplacedSum)?;
                let mut total = 0.0;
                for i in 0..takes.n {
                    // In range: `try_eval_time` checked `n * stride` values.
                    let row = takes
                        .rows
                        .get(i * takes.stride..(i + 1) * takes.stride)
                        .unwrap_or_default();
                    let inner = Env {
                        row,
                        ctx: self.ctx,
                        takes: None,
                    };
                    total += inner.value(x)?;
                }
                total
            }
        })
    }

    fn binary(&self, op: BinaryOp, a: &Expr, b: &Expr) -> Result<f64, InterpError> {
        // `&&` and `||` must not touch the right side unless it decides the result
        // (E2), so they are handled before both operands are evaluated.
        match op {
            BinaryOp::And => {
                let x = truthy(self.value(a)?);
                return Ok(bool_value(x && truthy(self.value(b)?)));
            }
            BinaryOp::Or => {
                let x = truthy(self.value(a)?);
                return Ok(bool_value(x || truthy(self.value(b)?)));
            }
            _ => {}
        }
        let x = self.value(a)?;
        let y = self.value(b)?;
        Ok(match op {
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
        })
    }

    fn call(&self, builtin: Builtin, args: &[Expr]) -> Result<f64, InterpError> {
        let values = args
            .iter()
            .map(|a| self.value(a))
            .collect::<Result<Vec<f64>, _>>()?;
        let arity = InterpError::Arity {
            builtin,
            given: values.len(),
        };
        match builtin {
            Builtin::Min | Builtin::Max => {
                let [first, rest @ ..] = values.as_slice() else {
                    return Err(arity);
                };
                if rest.is_empty() {
                    return Err(arity);
                }
                let pick = if builtin == Builtin::Min {
                    minimum
                } else {
                    maximum
                };
                // IEEE minimum/maximum are associative, so a left fold is the n-ary
                // form.
                Ok(rest.iter().fold(*first, |acc, &v| pick(acc, v)))
            }
            Builtin::Abs | Builtin::Floor | Builtin::Ceil | Builtin::Sqrt => {
                let [x] = values.as_slice() else {
                    return Err(arity);
                };
                // The std functions are the IEEE operations: `abs` clears the sign
                // bit, `floor`/`ceil` keep the sign of a zero result (`ceil(-0.5)` is
                // -0) and `sqrt` of a negative number is NaN while `sqrt(-0)` is -0.
                Ok(match builtin {
                    Builtin::Abs => x.abs(),
                    Builtin::Floor => x.floor(),
                    Builtin::Ceil => x.ceil(),
                    Builtin::Sqrt => x.sqrt(),
                    Builtin::Min | Builtin::Max => unreachable!("handled above"),
                })
            }
        }
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
/// Where [`try_select`] returns an error: when `rows` holds fewer than `n * stride`
/// values, or a key reads a slot outside `stride` or `ctx` (a broken sema or runtime
/// invariant).
pub fn select(keys: &[Expr], rows: &[f64], n: usize, stride: usize, ctx: &[f64]) -> Option<usize> {
    or_panic(try_select(keys, rows, n, stride, ctx))
}

/// [`select`], reporting a broken invariant as an error instead of panicking.
pub fn try_select(
    keys: &[Expr],
    rows: &[f64],
    n: usize,
    stride: usize,
    ctx: &[f64],
) -> Result<Option<usize>, InterpError> {
    let needed = rows_needed(rows, n, stride)?;
    let mut best: Option<(usize, Vec<f64>)> = None;
    for i in 0..n {
        // In range: `rows` holds at least `n * stride` values (checked above).
        let row = rows
            .get(i * stride..i * stride + stride)
            .ok_or(InterpError::ShortRows {
                n,
                stride,
                needed: Some(needed),
                got: rows.len(),
            })?;
        let values = key_values(keys, row, ctx)?;
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
    Ok(best.map(|(i, _)| i))
}

/// Fused comparator: `compare_keys` of the key values of two rows, as -1, 0 or 1.
///
/// # Panics
/// When a key reads a slot outside a row or `ctx` (a broken sema invariant).
pub fn cmp(keys: &[Expr], row_a: &[f64], row_b: &[f64], ctx: &[f64]) -> i32 {
    let a = or_panic(key_values(keys, row_a, ctx));
    let b = or_panic(key_values(keys, row_b, ctx));
    match compare_keys(&a, &b) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

fn key_values(keys: &[Expr], row: &[f64], ctx: &[f64]) -> Result<Vec<f64>, InterpError> {
    keys.iter().map(|k| try_eval(k, row, ctx)).collect()
}

/// `n * stride`, when `rows` holds at least that many values.
fn rows_needed(rows: &[f64], n: usize, stride: usize) -> Result<usize, InterpError> {
    let short = |needed| InterpError::ShortRows {
        n,
        stride,
        needed,
        got: rows.len(),
    };
    let needed = n.checked_mul(stride).ok_or_else(|| short(None))?;
    if rows.len() < needed {
        return Err(short(Some(needed)));
    }
    Ok(needed)
}

fn read_slot(slot: Slot, row: &[f64], ctx: &[f64]) -> Result<f64, InterpError> {
    let (values, index) = match slot {
        Slot::Row(i) => (row, i),
        Slot::Ctx(i) => (ctx, i),
    };
    values
        .get(index as usize)
        .copied()
        .ok_or(InterpError::SlotOutOfRange {
            slot,
            len: values.len(),
        })
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
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
