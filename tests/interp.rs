//! Tests of the reference interpreter (`poolc::interp`) against the E2–E5 rules of
//! LANGUAGE.md §1.3, one test per edge case, named after its rule. Every expected value
//! is worked out by hand here; no test may take its expectation from the code under
//! test. Sign bits are checked with `to_bits`, since `-0.0 == 0.0`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::cmp::Ordering;

use poolc::interp::{
    InterpError, cmp, compare_keys, eval, key_order, select, truthy, try_eval, try_select,
};
use poolc::ir::{BinaryOp, Builtin, Expr, Slot, UnaryOp};
use proptest::prelude::*;

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

fn c(x: f64) -> Expr {
    Expr::Const(x)
}

fn row(i: u32) -> Expr {
    Expr::Slot(Slot::Row(i))
}

fn ctx(i: u32) -> Expr {
    Expr::Slot(Slot::Ctx(i))
}

fn bin(op: BinaryOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

fn un(op: UnaryOp, x: Expr) -> Expr {
    Expr::Unary(op, Box::new(x))
}

fn cond(k: Expr, a: Expr, b: Expr) -> Expr {
    Expr::Cond(Box::new(k), Box::new(a), Box::new(b))
}

fn call(f: Builtin, args: &[f64]) -> f64 {
    ev(&Expr::Call(f, args.iter().copied().map(c).collect()))
}

fn ev(e: &Expr) -> f64 {
    eval(e, &[], &[])
}

fn binop(op: BinaryOp, a: f64, b: f64) -> f64 {
    ev(&bin(op, c(a), c(b)))
}

/// Same value and same sign bit, so that -0 and +0 are told apart.
#[track_caller]
fn assert_bits(got: f64, want: f64) {
    assert_eq!(got.to_bits(), want.to_bits(), "got {got:?}, want {want:?}");
}

#[track_caller]
fn assert_nan(got: f64) {
    assert!(got.is_nan(), "got {got:?}, want NaN");
}

/// A slot no test row has: reading it panics, so reaching it proves eagerness.
fn poison() -> Expr {
    row(99)
}

#[test]
fn eval_reads_row_and_ctx_slots() {
    let e = bin(BinaryOp::Sub, row(1), ctx(0));
    assert_bits(eval(&e, &[10.0, 7.0], &[2.0]), 5.0);
}

// A slot outside its row or context is a broken invariant of checked IR (sema lays
// out every slot a key reads), so `eval` panics on it; `try_eval` reports the same
// case as an error, whose text is the message `eval` panics with.

#[test]
fn eval_out_of_range_slot_is_an_error() {
    let err = try_eval(&poison(), &[1.0], &[]).expect_err("row slot 99 of a 1-value row");
    assert_eq!(
        err,
        InterpError::SlotOutOfRange {
            slot: Slot::Row(99),
            len: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "interp: row slot 99 out of range (row has 1 slots); sema broke the slot-layout \
         invariant"
    );
}

#[test]
fn eval_out_of_range_ctx_slot_is_an_error() {
    let err = try_eval(&ctx(3), &[], &[1.0]).expect_err("ctx slot 3 of a 1-value ctx");
    assert_eq!(
        err,
        InterpError::SlotOutOfRange {
            slot: Slot::Ctx(3),
            len: 1
        }
    );
    assert!(err.to_string().contains("ctx slot 3 out of range"), "{err}");
}

#[test]
fn eval_builtin_with_an_arity_sema_rejects_is_an_error() {
    let min_of_one = Expr::Call(Builtin::Min, vec![c(1.0)]);
    let err = try_eval(&min_of_one, &[], &[]).expect_err("min of one argument");
    assert_eq!(
        err,
        InterpError::Arity {
            builtin: Builtin::Min,
            given: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "interp: min called with 1 arguments; sema guarantees at least 2"
    );
    let sqrt_of_two = Expr::Call(Builtin::Sqrt, vec![c(1.0), c(4.0)]);
    assert_eq!(
        try_eval(&sqrt_of_two, &[], &[])
            .expect_err("sqrt of two arguments")
            .to_string(),
        "interp: sqrt called with 2 arguments; sema guarantees exactly 1"
    );
    let abs_of_none = Expr::Call(Builtin::Abs, vec![]);
    assert_eq!(
        try_eval(&abs_of_none, &[], &[]),
        Err(InterpError::Arity {
            builtin: Builtin::Abs,
            given: 0
        })
    );
}

#[test]
fn e2_nan_is_true() {
    assert!(truthy(NAN));
    assert!(truthy(-NAN));
    assert_bits(ev(&cond(c(NAN), c(1.0), c(2.0))), 1.0);
    assert_bits(ev(&un(UnaryOp::Not, c(NAN))), 0.0);
    assert_bits(binop(BinaryOp::And, NAN, NAN), 1.0);
    assert_bits(binop(BinaryOp::Or, 0.0, NAN), 1.0);
}

#[test]
fn e2_negative_zero_is_false() {
    assert!(!truthy(-0.0));
    assert!(!truthy(0.0));
    assert!(truthy(5e-324));
    assert!(truthy(-INF));
    assert_bits(ev(&cond(c(-0.0), c(1.0), c(2.0))), 2.0);
    assert_bits(ev(&un(UnaryOp::Not, c(-0.0))), 1.0);
    assert_bits(ev(&un(UnaryOp::Not, c(0.0))), 1.0);
    assert_bits(ev(&un(UnaryOp::Not, c(-3.0))), 0.0);
    assert_bits(binop(BinaryOp::Or, -0.0, -0.0), 0.0);
    assert_bits(binop(BinaryOp::And, 1.0, -0.0), 0.0);
}

#[test]
fn e2_and_or_are_lazy() {
    // The right side reads a slot that would panic; it must not be evaluated.
    assert_bits(ev(&bin(BinaryOp::And, c(0.0), poison())), 0.0);
    assert_bits(ev(&bin(BinaryOp::And, c(-0.0), poison())), 0.0);
    assert_bits(ev(&bin(BinaryOp::Or, c(1.0), poison())), 1.0);
    assert_bits(ev(&bin(BinaryOp::Or, c(NAN), poison())), 1.0);
    // When the left side does not decide, the right side is evaluated.
    assert_bits(ev(&bin(BinaryOp::And, c(2.0), c(3.0))), 1.0);
    assert_bits(ev(&bin(BinaryOp::Or, c(0.0), c(0.0))), 0.0);
    // `?:` evaluates only the taken branch.
    assert_bits(ev(&cond(c(1.0), c(5.0), poison())), 5.0);
    assert_bits(ev(&cond(c(0.0), poison(), c(7.0))), 7.0);
}

#[test]
fn e2_and_evaluates_right_when_left_is_true() {
    assert_eq!(
        try_eval(&bin(BinaryOp::And, c(1.0), poison()), &[], &[]),
        Err(InterpError::SlotOutOfRange {
            slot: Slot::Row(99),
            len: 0
        })
    );
}

#[test]
fn e2_comparisons_yield_one_or_zero() {
    use BinaryOp::*;
    // (op, a, b, expected)
    let cases = [
        (Eq, 2.0, 2.0, 1.0),
        (Eq, 2.0, 3.0, 0.0),
        (Eq, -0.0, 0.0, 1.0),
        (Eq, NAN, NAN, 0.0),
        (Ne, 2.0, 3.0, 1.0),
        (Ne, 2.0, 2.0, 0.0),
        (Ne, NAN, NAN, 1.0),
        (Ne, NAN, 1.0, 1.0),
        (Lt, 1.0, 2.0, 1.0),
        (Lt, 2.0, 2.0, 0.0),
        (Lt, NAN, 2.0, 0.0),
        (Lt, -INF, NAN, 0.0),
        (Le, 2.0, 2.0, 1.0),
        (Le, -0.0, 0.0, 1.0),
        (Le, NAN, INF, 0.0),
        (Gt, 3.0, 2.0, 1.0),
        (Gt, 2.0, 3.0, 0.0),
        (Gt, NAN, -INF, 0.0),
        (Ge, 2.0, 2.0, 1.0),
        (Ge, 0.0, -0.0, 1.0),
        (Ge, NAN, NAN, 0.0),
        // `&&` and `||` also yield exactly 1, not the operand.
        (And, 5.0, 7.0, 1.0),
        (Or, -3.0, 0.0, 1.0),
    ];
    for (op, a, b, want) in cases {
        let got = binop(op, a, b);
        assert_eq!(
            got.to_bits(),
            f64::to_bits(want),
            "{a:?} {} {b:?} = {got:?}",
            op.symbol()
        );
    }
}

#[test]
fn e3_division_by_zero() {
    assert_bits(binop(BinaryOp::Div, 1.0, 0.0), INF);
    assert_bits(binop(BinaryOp::Div, -1.0, 0.0), -INF);
    assert_bits(binop(BinaryOp::Div, 1.0, -0.0), -INF);
    assert_bits(binop(BinaryOp::Div, -1.0, -0.0), INF);
    assert_nan(binop(BinaryOp::Div, 0.0, 0.0));
    assert_nan(binop(BinaryOp::Div, -0.0, 0.0));
    assert_bits(binop(BinaryOp::Div, 0.0, 5.0), 0.0);
    assert_bits(binop(BinaryOp::Div, 0.0, -5.0), -0.0);
    assert_bits(binop(BinaryOp::Div, 1.0, INF), 0.0);
    assert_nan(binop(BinaryOp::Div, INF, INF));
}

#[test]
fn e3_fmod_sign_of_dividend() {
    assert_bits(binop(BinaryOp::Rem, 5.0, 3.0), 2.0);
    assert_bits(binop(BinaryOp::Rem, -5.0, 3.0), -2.0);
    assert_bits(binop(BinaryOp::Rem, 5.0, -3.0), 2.0);
    assert_bits(binop(BinaryOp::Rem, -5.0, -3.0), -2.0);
    assert_bits(binop(BinaryOp::Rem, 5.5, 2.0), 1.5);
    // An exact multiple keeps the dividend's sign on the zero.
    assert_bits(binop(BinaryOp::Rem, -6.0, 3.0), -0.0);
    assert_bits(binop(BinaryOp::Rem, -0.0, 3.0), -0.0);
    assert_nan(binop(BinaryOp::Rem, 5.0, 0.0));
    assert_nan(binop(BinaryOp::Rem, 5.0, -0.0));
    assert_nan(binop(BinaryOp::Rem, INF, 1.0));
    assert_bits(binop(BinaryOp::Rem, 1.0, INF), 1.0);
    assert_bits(binop(BinaryOp::Rem, -1.0, INF), -1.0);
    assert_nan(binop(BinaryOp::Rem, NAN, 1.0));
}

#[test]
fn e3_negation_flips_sign_bit() {
    assert_bits(ev(&un(UnaryOp::Neg, c(0.0))), -0.0);
    assert_bits(ev(&un(UnaryOp::Neg, c(-0.0))), 0.0);
    assert_bits(ev(&un(UnaryOp::Neg, c(3.0))), -3.0);
    assert_bits(ev(&un(UnaryOp::Neg, c(-INF))), INF);
    assert_bits(
        ev(&un(UnaryOp::Neg, c(NAN))),
        f64::from_bits(NAN.to_bits() ^ (1 << 63)),
    );
}

#[test]
fn e3_arithmetic_is_ieee() {
    assert_bits(binop(BinaryOp::Add, 0.1, 0.2), 0.300_000_000_000_000_04);
    assert_bits(binop(BinaryOp::Add, -0.0, -0.0), -0.0);
    assert_bits(binop(BinaryOp::Add, -0.0, 0.0), 0.0);
    assert_bits(binop(BinaryOp::Sub, 0.0, 0.0), 0.0);
    assert_bits(binop(BinaryOp::Mul, -2.0, 0.0), -0.0);
    assert_nan(binop(BinaryOp::Sub, INF, INF));
    assert_nan(binop(BinaryOp::Mul, 0.0, INF));
}

#[test]
fn e4_min_max_nan_propagation() {
    assert_nan(call(Builtin::Min, &[NAN, 1.0]));
    assert_nan(call(Builtin::Min, &[1.0, NAN]));
    assert_nan(call(Builtin::Min, &[-INF, NAN]));
    assert_nan(call(Builtin::Max, &[NAN, INF]));
    assert_nan(call(Builtin::Max, &[INF, NAN]));
    assert_nan(call(Builtin::Min, &[1.0, 2.0, NAN]));
    assert_nan(call(Builtin::Max, &[NAN, 2.0, 3.0]));
    assert_nan(call(Builtin::Max, &[1.0, NAN, 3.0]));
    // Without NaN, the plain least and greatest.
    assert_bits(call(Builtin::Min, &[3.0, 1.0, 2.0]), 1.0);
    assert_bits(call(Builtin::Max, &[3.0, 1.0, 2.0]), 3.0);
    assert_bits(call(Builtin::Min, &[INF, -INF]), -INF);
    assert_bits(call(Builtin::Max, &[-INF, INF]), INF);
    assert_bits(call(Builtin::Max, &[-5.0, -7.0]), -5.0);
}

#[test]
fn e4_min_max_signed_zero() {
    assert_bits(call(Builtin::Min, &[-0.0, 0.0]), -0.0);
    assert_bits(call(Builtin::Min, &[0.0, -0.0]), -0.0);
    assert_bits(call(Builtin::Max, &[-0.0, 0.0]), 0.0);
    assert_bits(call(Builtin::Max, &[0.0, -0.0]), 0.0);
    assert_bits(call(Builtin::Min, &[0.0, 0.0]), 0.0);
    assert_bits(call(Builtin::Max, &[-0.0, -0.0]), -0.0);
    assert_bits(call(Builtin::Min, &[0.0, -0.0, 0.0]), -0.0);
    assert_bits(call(Builtin::Max, &[-0.0, 0.0, -0.0]), 0.0);
}

#[test]
fn e4_ceil_negative_half_is_negative_zero() {
    assert_bits(call(Builtin::Ceil, &[-0.5]), -0.0);
    assert_bits(call(Builtin::Ceil, &[0.5]), 1.0);
    assert_bits(call(Builtin::Ceil, &[-1.5]), -1.0);
    assert_bits(call(Builtin::Floor, &[-0.0]), -0.0);
    assert_bits(call(Builtin::Floor, &[-0.5]), -1.0);
    assert_bits(call(Builtin::Floor, &[0.5]), 0.0);
    assert_bits(call(Builtin::Floor, &[-INF]), -INF);
    assert_nan(call(Builtin::Floor, &[NAN]));
}

#[test]
fn e4_abs_clears_sign() {
    assert_bits(call(Builtin::Abs, &[-0.0]), 0.0);
    assert_bits(call(Builtin::Abs, &[-3.0]), 3.0);
    assert_bits(call(Builtin::Abs, &[-INF]), INF);
    assert_bits(call(Builtin::Abs, &[2.5]), 2.5);
}

#[test]
fn e4_sqrt_negative_is_nan() {
    assert_nan(call(Builtin::Sqrt, &[-1.0]));
    assert_nan(call(Builtin::Sqrt, &[-INF]));
    assert_bits(call(Builtin::Sqrt, &[-0.0]), -0.0);
    assert_bits(call(Builtin::Sqrt, &[4.0]), 2.0);
    assert_bits(call(Builtin::Sqrt, &[INF]), INF);
}

#[test]
fn e5_negative_zero_equals_zero() {
    assert_eq!(key_order(-0.0, 0.0), Ordering::Equal);
    assert_eq!(key_order(0.0, -0.0), Ordering::Equal);
    assert_eq!(compare_keys(&[-0.0, 1.0], &[0.0, 1.0]), Ordering::Equal);
    assert_eq!(compare_keys(&[-0.0, 1.0], &[0.0, 2.0]), Ordering::Less);
}

#[test]
fn e5_nan_greatest_and_equal_to_nan() {
    let neg_nan = f64::from_bits(NAN.to_bits() | (1 << 63));
    assert_eq!(key_order(NAN, INF), Ordering::Greater);
    assert_eq!(key_order(INF, NAN), Ordering::Less);
    assert_eq!(key_order(-INF, NAN), Ordering::Less);
    assert_eq!(key_order(NAN, NAN), Ordering::Equal);
    // The sign of a NaN does not make it a small number.
    assert_eq!(key_order(neg_nan, -INF), Ordering::Greater);
    assert_eq!(key_order(neg_nan, NAN), Ordering::Equal);
    assert_eq!(compare_keys(&[NAN, 1.0], &[NAN, 2.0]), Ordering::Less);
}

#[test]
fn e5_numbers_in_order() {
    assert_eq!(key_order(1.0, 2.0), Ordering::Less);
    assert_eq!(key_order(2.0, 1.0), Ordering::Greater);
    assert_eq!(key_order(-INF, -1e308), Ordering::Less);
    assert_eq!(key_order(3.0, 3.0), Ordering::Equal);
}

#[test]
fn e5_lexicographic() {
    assert_eq!(compare_keys(&[1.0, 9.0], &[2.0, 0.0]), Ordering::Less);
    assert_eq!(compare_keys(&[2.0, 0.0], &[1.0, 9.0]), Ordering::Greater);
    assert_eq!(compare_keys(&[1.0, NAN], &[1.0, 5.0]), Ordering::Greater);
    assert_eq!(
        compare_keys(&[1.0, 2.0, 3.0], &[1.0, 2.0, 4.0]),
        Ordering::Less
    );
    assert_eq!(
        compare_keys(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]),
        Ordering::Equal
    );
    assert_eq!(compare_keys(&[], &[]), Ordering::Equal);
}

#[test]
fn e5_select_ties_lowest_index() {
    let k0 = [row(0)];
    assert_eq!(select(&k0, &[3.0, 1.0, 1.0, 2.0], 4, 1, &[]), Some(1));
    // -0 and +0 tie, so the earlier one wins either way round.
    assert_eq!(select(&k0, &[5.0, -0.0, 0.0], 3, 1, &[]), Some(1));
    assert_eq!(select(&k0, &[5.0, 0.0, -0.0], 3, 1, &[]), Some(1));
    // NaN loses to every number and ties with NaN.
    assert_eq!(select(&k0, &[NAN, NAN, 7.0], 3, 1, &[]), Some(2));
    assert_eq!(select(&k0, &[NAN, NAN], 2, 1, &[]), Some(0));
    // Two keys, stride 2: rows (1,5) (0,9) (0,3) (0,3) → (0,3) first seen at index 2.
    let k01 = [row(0), row(1)];
    let rows = [1.0, 5.0, 0.0, 9.0, 0.0, 3.0, 0.0, 3.0];
    assert_eq!(select(&k01, &rows, 4, 2, &[]), Some(2));
    // Descending by slot 1 via negation: rows (1,5) (0,9) (0,3) → index 1.
    let desc = [un(UnaryOp::Neg, row(1))];
    assert_eq!(select(&desc, &rows[..6], 3, 2, &[]), Some(1));
    // Only the first n rows count, even when more values are passed.
    assert_eq!(select(&k0, &[4.0, 3.0, 1.0], 2, 1, &[]), Some(1));
}

#[test]
fn select_stride_zero() {
    // Keys read only the context, so every row ties and the first wins.
    let keys = [ctx(0), bin(BinaryOp::Mul, ctx(0), c(2.0))];
    assert_eq!(select(&keys, &[], 3, 0, &[4.0]), Some(0));
    assert_eq!(select(&[c(1.0)], &[], 1, 0, &[]), Some(0));
    // An empty key list also makes every row a tie.
    assert_eq!(select(&[], &[], 5, 0, &[]), Some(0));
}

#[test]
fn select_no_rows() {
    assert_eq!(select(&[row(0)], &[], 0, 1, &[]), None);
    assert_eq!(select(&[c(1.0)], &[], 0, 0, &[]), None);
    assert_eq!(select(&[row(0)], &[1.0, 2.0], 0, 1, &[]), None);
}

// Rows shorter than `n * stride` break the engine's layout invariant: `select`
// panics, `try_select` reports it (with the message `select` panics with).

#[test]
fn select_short_rows_is_an_error() {
    let err = try_select(&[row(0)], &[1.0, 2.0, 3.0], 2, 2, &[]).expect_err("3 of 4 values");
    assert_eq!(
        err,
        InterpError::ShortRows {
            n: 2,
            stride: 2,
            needed: Some(4),
            got: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "rows: 2 rows of stride 2 need 4 values, got 3"
    );
}

#[test]
fn select_rows_whose_size_overflows_is_an_error() {
    let err = try_select(&[row(0)], &[], usize::MAX, 2, &[]).expect_err("n * stride overflows");
    assert_eq!(err.to_string(), "rows: n * stride overflows usize");
}

#[test]
fn select_key_reading_past_the_stride_is_an_error() {
    assert_eq!(
        try_select(&[row(1)], &[1.0, 2.0], 2, 1, &[]),
        Err(InterpError::SlotOutOfRange {
            slot: Slot::Row(1),
            len: 1
        })
    );
    assert_eq!(try_select(&[row(0)], &[2.0, 1.0], 2, 1, &[]), Ok(Some(1)));
}

#[test]
fn cmp_signs() {
    let keys = [row(0), un(UnaryOp::Neg, row(1))];
    assert_eq!(cmp(&keys, &[1.0, 0.0], &[2.0, 0.0], &[]), -1);
    assert_eq!(cmp(&keys, &[2.0, 0.0], &[1.0, 0.0], &[]), 1);
    // Second key is -slot1: -5 < -3, so (1,5) comes first.
    assert_eq!(cmp(&keys, &[1.0, 5.0], &[1.0, 3.0], &[]), -1);
    assert_eq!(cmp(&keys, &[1.0, 3.0], &[1.0, 5.0], &[]), 1);
    assert_eq!(cmp(&keys, &[-0.0, 0.0], &[0.0, -0.0], &[]), 0);
    assert_eq!(cmp(&keys, &[NAN, 1.0], &[NAN, 1.0], &[]), 0);
    assert_eq!(cmp(&keys, &[NAN, 1.0], &[INF, 1.0], &[]), 1);
    assert_eq!(cmp(&[], &[1.0], &[2.0], &[]), 0);
    // Keys may read the context too: slot0 − ctx0.
    let rel = [bin(BinaryOp::Sub, row(0), ctx(0))];
    assert_eq!(cmp(&rel, &[3.0], &[4.0], &[10.0]), -1);
}

// --- Property: `select` and `cmp` agree with a naive sort. -------------------------

/// Values with many ties: both zeros, NaNs of both signs, infinities.
fn value() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
        INF,
        -INF,
        NAN,
        f64::from_bits(NAN.to_bits() | (1 << 63)),
    ])
}

/// A key is a row slot, optionally negated; the naive side computes it by hand.
#[derive(Clone, Copy, Debug)]
struct Key {
    slot: usize,
    neg: bool,
}

impl Key {
    fn expr(self) -> Expr {
        let r = row(self.slot as u32);
        if self.neg { un(UnaryOp::Neg, r) } else { r }
    }

    fn value(self, r: &[f64]) -> f64 {
        if self.neg {
            -r[self.slot]
        } else {
            r[self.slot]
        }
    }
}

/// An E5 rank written independently of `key_order`: NaN after every number, and zero
/// folded to +0 so that the plain `partial_cmp` then orders the rest.
fn rank(x: f64) -> (u8, f64) {
    if x.is_nan() {
        (1, 0.0)
    } else if x == 0.0 {
        (0, 0.0)
    } else {
        (0, x)
    }
}

fn naive_order(keys: &[Key], a: &[f64], b: &[f64]) -> Ordering {
    for k in keys {
        let o = rank(k.value(a)).partial_cmp(&rank(k.value(b))).unwrap();
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn case() -> impl Strategy<Value = (usize, Vec<Key>, usize, Vec<f64>)> {
    (1usize..=3).prop_flat_map(|stride| {
        let key = (0..stride, any::<bool>()).prop_map(|(slot, neg)| Key { slot, neg });
        (0usize..12).prop_flat_map(move |n| {
            (
                Just(stride),
                prop::collection::vec(key.clone(), 0..=3),
                Just(n),
                prop::collection::vec(value(), n * stride),
            )
        })
    })
}

proptest! {
    #[test]
    fn select_agrees_with_naive_sort((stride, keys, n, rows) in case()) {
        let exprs: Vec<Expr> = keys.iter().map(|k| k.expr()).collect();
        let row_of = |i: usize| &rows[i * stride..(i + 1) * stride];
        let mut idx: Vec<usize> = (0..n).collect();
        idx.sort_by(|&a, &b| naive_order(&keys, row_of(a), row_of(b)).then(a.cmp(&b)));
        prop_assert_eq!(select(&exprs, &rows, n, stride, &[]), idx.first().copied());
    }

    #[test]
    fn cmp_agrees_with_naive_order((stride, keys, n, rows) in case()) {
        let exprs: Vec<Expr> = keys.iter().map(|k| k.expr()).collect();
        let row_of = |i: usize| &rows[i * stride..(i + 1) * stride];
        for a in 0..n {
            for b in 0..n {
                let want = match naive_order(&keys, row_of(a), row_of(b)) {
                    Ordering::Less => -1,
                    Ordering::Equal => 0,
                    Ordering::Greater => 1,
                };
                prop_assert_eq!(cmp(&exprs, row_of(a), row_of(b), &[]), want);
            }
        }
    }
}
