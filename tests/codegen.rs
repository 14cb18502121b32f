//! Differential tests of the Cranelift JIT (`poolc::codegen`) against the reference
//! interpreter (`poolc::interp`) and, for key order, against a plain Rust E5 order
//! written here: random expression trees must give the same bits (any NaN matches
//! any NaN, as interp.rs documents), and `select`/`cmp` the same index and sign.
//! Rules are cited from LANGUAGE.md (E2–E5). No test here times anything.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::cmp::Ordering;

use poolc::codegen::{ClifForm, compile_exprs, compile_key_list, compile_time};
use poolc::interp;
use poolc::ir::{BinaryOp, Builtin, Expr, Slot, UnaryOp};
use proptest::prelude::*;

mod expr_tree;

use expr_tree::{SPECIAL, same};

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => proptest::sample::select(SPECIAL.to_vec()),
        1 => any::<f64>(),
        1 => (-1000i32..1000).prop_map(f64::from),
    ]
}

const ROW_SLOTS: u32 = 4;
const CTX_SLOTS: u32 = 3;

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        value().prop_map(Expr::Const),
        (0..ROW_SLOTS).prop_map(|i| Expr::Slot(Slot::Row(i))),
        (0..CTX_SLOTS).prop_map(|i| Expr::Slot(Slot::Ctx(i))),
    ]
}

/// Well-formed trees of depth ≤ 6 using every operator, builtin (min/max with 2–4
/// arguments), the ternary and both slot kinds.
fn expr() -> impl Strategy<Value = Expr> {
    expr_tree::tree(leaf())
}

const BATCH: usize = 100;

proptest! {
    // 100 cases × 100 expressions per JIT module = 10,000 expressions compiled and
    // each evaluated on 3 (row, ctx) pairs: 30,000 comparisons in the default run.
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn e2_e4_jit_equals_interpreter_bit_for_bit(
        exprs in proptest::collection::vec(expr(), BATCH),
        inputs in proptest::collection::vec(
            (
                proptest::collection::vec(value(), ROW_SLOTS as usize),
                proptest::collection::vec(value(), CTX_SLOTS as usize),
            ),
            3,
        ),
    ) {
        let compiled = compile_exprs(&exprs).expect("well-formed expressions compile");
        for (row, ctx) in &inputs {
            for (i, e) in exprs.iter().enumerate() {
                let want = interp::eval(e, row, ctx);
                let got = compiled.eval(i, row, ctx);
                prop_assert!(
                    same(got, want),
                    "jit {got:?} != interp {want:?} for {e:?} on row {row:?} ctx {ctx:?}"
                );
            }
        }
    }
}

/// A stage `time` (R29): a tree over ctx slots and constants in which `sum` of a
/// full tree (row and ctx slots) may stand for any leaf.
fn time_expr() -> impl Strategy<Value = Expr> {
    let ctx_leaf = prop_oneof![
        value().prop_map(Expr::Const),
        (0..CTX_SLOTS).prop_map(|i| Expr::Slot(Slot::Ctx(i))),
    ];
    let leaf = prop_oneof![
        2 => ctx_leaf,
        1 => expr().prop_map(|e| Expr::Sum(Box::new(e))),
    ];
    expr_tree::tree(leaf)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn r29_time_with_sums_jit_equals_interpreter_bit_for_bit(
        e in time_expr(),
        ctx in proptest::collection::vec(value(), CTX_SLOTS as usize),
        n in 0usize..5,
        rows in proptest::collection::vec(value(), 4 * ROW_SLOTS as usize),
    ) {
        let time = compile_time(&e).expect("a well-formed time compiles");
        let stride = time.shape().row;
        let rows = &rows[..n * stride];
        let want = interp::eval_time(&e, interp::Takes { rows, n, stride }, &ctx[..time.shape().ctx]);
        let got = time.time(&ctx, rows, n);
        prop_assert!(
            same(got, want),
            "jit {got:?} != interp {want:?} for {e:?} on {n} rows {rows:?} ctx {ctx:?}"
        );
    }
}

#[test]
fn r29_sum_adds_its_term_over_the_rows_in_order_from_positive_zero() {
    // time = c0 + sum(r0 * r1): rows (2, 3) and (4, 5) give 1 + (6 + 20) = 27.
    let term = Expr::Binary(BinaryOp::Mul, Box::new(slot(0)), Box::new(slot(1)));
    let e = Expr::Binary(
        BinaryOp::Add,
        Box::new(Expr::Slot(Slot::Ctx(0))),
        Box::new(Expr::Sum(Box::new(term.clone()))),
    );
    let time = compile_time(&e).expect("compiles");
    let rows = [2.0, 3.0, 4.0, 5.0];
    assert_eq!(time.time(&[1.0], &rows, 2), 27.0);
    assert_eq!(time.time(&[1.0], &rows, 0), 1.0);
    // An empty sum is +0, and −0 terms leave it +0 (0 + −0 = +0), as the
    // interpreter adds: the bits agree.
    let neg_zero = Expr::Sum(Box::new(Expr::Const(-0.0)));
    let time = compile_time(&neg_zero).expect("compiles");
    for n in 0..3 {
        let got = time.time(&[], &[], n);
        assert_eq!(got.to_bits(), 0.0f64.to_bits(), "n = {n}");
        let want = interp::eval_time(&neg_zero, interp::Takes::NONE, &[]);
        assert_eq!(want.to_bits(), 0.0f64.to_bits());
    }
    // Left to right: (1e308 + 1e308) overflows before − 1e308 can bring it back.
    let time = compile_time(&Expr::Sum(Box::new(slot(0)))).expect("compiles");
    let rows = [1e308, 1e308, -1e308];
    assert_eq!(time.time(&[], &rows, 3), f64::INFINITY);
    let takes = interp::Takes {
        rows: &rows,
        n: 3,
        stride: 1,
    };
    assert_eq!(
        interp::eval_time(&Expr::Sum(Box::new(slot(0))), takes, &[]),
        f64::INFINITY
    );
}

// ---- key order (E5): select and cmp ----

/// A plain E5 order written independently of interp: canonicalise (every NaN to one
/// positive NaN, −0 to +0), then IEEE total order.
fn e5(a: f64, b: f64) -> Ordering {
    let canon = |x: f64| {
        if x.is_nan() {
            f64::NAN
        } else if x == 0.0 {
            0.0
        } else {
            x
        }
    };
    canon(a).total_cmp(&canon(b))
}

fn e5_keys(keys: &[Expr], a: &[f64], b: &[f64], ctx: &[f64]) -> Ordering {
    for k in keys {
        let o = e5(interp::eval(k, a, ctx), interp::eval(k, b, ctx));
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The least of `n` rows by `e5_keys`, lowest index among equals.
fn e5_select(
    keys: &[Expr],
    rows: &[f64],
    n: usize,
    stride: usize,
    width: usize,
    ctx: &[f64],
) -> Option<usize> {
    let row = |i: usize| &rows[i * stride..i * stride + width];
    (0..n).min_by(|&a, &b| e5_keys(keys, row(a), row(b), ctx).then(a.cmp(&b)))
}

/// Few distinct values, so that ties, NaNs and ±0 are frequent.
fn tie_value() -> impl Strategy<Value = f64> {
    proptest::sample::select(vec![
        0.0, -0.0, 1.0, -1.0, 2.0, NAN, -NAN, INF, -INF, 1e-300,
    ])
}

const KEY_ROW: usize = 3;

/// Keys over a 3-slot row and a 1-slot ctx: plain reads and small expressions that
/// produce NaN, −0 and ties from other values.
fn key() -> impl Strategy<Value = Expr> {
    let slot = (0..KEY_ROW as u32).prop_map(|i| Expr::Slot(Slot::Row(i)));
    prop_oneof![
        3 => slot.clone(),
        1 => slot.clone().prop_map(|x| Expr::Unary(UnaryOp::Neg, Box::new(x))),
        1 => slot.clone().prop_map(|x| Expr::Binary(BinaryOp::Mul, Box::new(x), Box::new(Expr::Const(0.0)))),
        1 => (slot.clone(), slot.clone()).prop_map(|(a, b)| Expr::Binary(BinaryOp::Sub, Box::new(a), Box::new(b))),
        1 => (slot.clone(), slot.clone(), slot).prop_map(|(c, a, b)| Expr::Cond(Box::new(c), Box::new(a), Box::new(b))),
        1 => Just(Expr::Binary(
            BinaryOp::Sub,
            Box::new(Expr::Slot(Slot::Ctx(0))),
            Box::new(Expr::Slot(Slot::Row(0))),
        )),
    ]
}

fn order_case() -> impl Strategy<Value = (Vec<Expr>, usize, usize, Vec<f64>, Vec<f64>)> {
    (
        proptest::collection::vec(key(), 1..=3),
        0usize..40,
        0usize..3,
        tie_value(),
    )
        .prop_flat_map(|(keys, n, pad, now)| {
            let stride = KEY_ROW + pad;
            (
                Just(keys),
                Just(n),
                Just(stride),
                proptest::collection::vec(tie_value(), n * stride),
                Just(vec![now]),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn e5_select_and_cmp_equal_interpreter_and_plain_rust(
        (keys, n, stride, rows, ctx) in order_case()
    ) {
        let list = compile_key_list(&keys).expect("keys compile");
        let got = list.select(&rows, n, stride, &ctx);
        prop_assert_eq!(got, interp::select(&keys, &rows, n, stride, &ctx), "vs interp, keys {:?}", keys);
        prop_assert_eq!(got, e5_select(&keys, &rows, n, stride, KEY_ROW, &ctx), "vs plain E5");
        // Every pair, both ways round.
        for a in 0..n.min(12) {
            for b in 0..n.min(12) {
                let ra = &rows[a * stride..(a + 1) * stride];
                let rb = &rows[b * stride..(b + 1) * stride];
                let c = list.cmp(ra, rb, &ctx);
                prop_assert_eq!(c as i32, interp::cmp(&keys, ra, rb, &ctx));
                prop_assert_eq!(c, e5_keys(&keys, ra, rb, &ctx));
            }
        }
    }
}

fn slot(i: u32) -> Expr {
    Expr::Slot(Slot::Row(i))
}

#[test]
fn e5_select_of_no_rows_is_none_and_of_one_row_is_it() {
    let list = compile_key_list(&[slot(0)]).expect("compiles");
    assert_eq!(list.select(&[], 0, 1, &[]), None);
    assert_eq!(list.select(&[NAN], 1, 1, &[]), Some(0));
    // The raw ABI says −1 for n = 0, whatever the pointers.
    // SAFETY: with n = 0 no row is read, and the key list reads no ctx slot.
    let raw = unsafe { (list.select_fn())(std::ptr::null(), 0, 1, std::ptr::null()) };
    assert_eq!(raw, -1);
}

#[test]
fn e5_select_with_stride_zero_is_index_zero() {
    // Every row is the same record, so all tie and the lowest index wins.
    let list = compile_key_list(&[slot(0), slot(1)]).expect("compiles");
    assert_eq!(list.select(&[5.0, NAN], 1000, 0, &[]), Some(0));
    // Against interp, whose stride-0 rows are empty, with ctx-only keys.
    let ctx_keys = [
        Expr::Slot(Slot::Ctx(0)),
        Expr::Unary(UnaryOp::Neg, Box::new(Expr::Slot(Slot::Ctx(0)))),
    ];
    let list = compile_key_list(&ctx_keys).expect("compiles");
    for n in [1, 2, 17] {
        assert_eq!(
            list.select(&[], n, 0, &[3.0]),
            interp::select(&ctx_keys, &[], n, 0, &[3.0])
        );
    }
}

#[test]
fn e5_negative_zero_ties_with_zero_and_nan_is_greatest() {
    let list = compile_key_list(&[slot(0)]).expect("compiles");
    assert_eq!(list.select(&[0.0, -0.0], 2, 1, &[]), Some(0));
    assert_eq!(list.select(&[-0.0, 0.0], 2, 1, &[]), Some(0));
    assert_eq!(list.select(&[NAN, INF, -NAN], 3, 1, &[]), Some(1));
    assert_eq!(list.select(&[NAN, -NAN], 2, 1, &[]), Some(0));
    assert_eq!(list.select(&[f64::MAX, -INF, -5e-324], 3, 1, &[]), Some(1));
    assert_eq!(list.cmp(&[-0.0], &[0.0], &[]), Ordering::Equal);
    assert_eq!(list.cmp(&[NAN], &[-NAN], &[]), Ordering::Equal);
    assert_eq!(list.cmp(&[NAN], &[INF], &[]), Ordering::Greater);
    assert_eq!(list.cmp(&[-INF], &[-f64::MAX], &[]), Ordering::Less);
}

#[test]
fn e5_later_keys_break_ties_of_earlier_ones() {
    let list = compile_key_list(&[slot(0), slot(1)]).expect("compiles");
    let rows = [1.0, 9.0, 0.0, 5.0, 0.0, 4.0, -0.0, 4.0];
    assert_eq!(list.select(&rows, 4, 2, &[]), Some(2));
    assert_eq!(list.cmp(&rows[4..6], &rows[6..8], &[]), Ordering::Equal);
    assert_eq!(list.cmp(&rows[2..4], &rows[4..6], &[]), Ordering::Greater);
}

#[test]
fn e3_rem_is_fmod_with_the_sign_of_the_dividend() {
    let rem = |a: f64| Expr::Binary(BinaryOp::Rem, Box::new(Expr::Const(a)), Box::new(slot(0)));
    let cases: [(f64, f64, f64); 4] = [
        (7.5, 2.0, 1.5),
        (-7.5, 2.0, -1.5),
        (-0.0, 3.0, -0.0),
        (5.0, INF, 5.0),
    ];
    let exprs: Vec<Expr> = cases.iter().map(|&(a, _, _)| rem(a)).collect();
    let compiled = compile_exprs(&exprs).expect("compiles");
    for (i, &(_, b, want)) in cases.iter().enumerate() {
        let got = compiled.eval(i, &[b], &[]);
        assert_eq!(got.to_bits(), want.to_bits(), "case {i}: {got:?}");
    }
    assert!(compiled.eval(0, &[0.0], &[]).is_nan());
}

#[test]
fn e2_short_circuit_on_nan_and_negative_zero_conditions() {
    // NaN is true and −0 is false (E2), so these decide on their left side alone.
    let other = || Box::new(slot(1));
    let exprs = [
        Expr::Binary(BinaryOp::And, Box::new(Expr::Const(-0.0)), other()),
        Expr::Binary(BinaryOp::Or, Box::new(Expr::Const(NAN)), other()),
        Expr::Cond(
            Box::new(Expr::Const(-0.0)),
            other(),
            Box::new(Expr::Const(7.0)),
        ),
        Expr::Cond(
            Box::new(Expr::Const(NAN)),
            Box::new(Expr::Const(7.0)),
            other(),
        ),
    ];
    let compiled = compile_exprs(&exprs).expect("compiles");
    let got: Vec<f64> = (0..exprs.len())
        .map(|i| compiled.eval(i, &[0.0, 5.0], &[]))
        .collect();
    assert_eq!(got, [0.0, 1.0, 7.0, 7.0]);
}

#[test]
fn e2_lazy_operators_branch_before_reading_the_other_side() {
    // Laziness is not observable through values (nothing has side effects), so this
    // pins the shape: each key's entry block reads `a` and branches; `b` and `c` are
    // loaded only in blocks reached through that branch.
    let spec = "session { a; b; c; } pool p { queue by (a ? b : c, a && b, a || c); }";
    let program = poolc::check(spec, &poolc::Options::default()).expect("test spec checks");
    let layout = &program.pools[0].queue_layout;
    let load_of = |name: &str| {
        let id = program.session.find(name).expect("declared");
        let slot = layout
            .row_slot(poolc::ir::Input::Attr(id))
            .expect("read by a key");
        if slot == 0 {
            "readonly v0\n".to_string()
        } else {
            format!("readonly v0+{}\n", 8 * slot)
        }
    };
    let text = poolc::codegen::clif(&program, Some("p"), ClifForm::Built).expect("clif");
    let uses = [("b", "c"), ("b", ""), ("", "c")];
    for (key, (lazy_b, lazy_c)) in uses.iter().enumerate() {
        let header = format!("; pool_p_queue_key{key}\n");
        let body = text.split(&header).nth(1).expect("key function printed");
        let body = body.split("\n; ").next().unwrap_or(body);
        let entry = body.split("\nblock").nth(1).expect("an entry block");
        let entry = entry.split("\n\n").next().unwrap_or(entry);
        assert!(
            entry.contains(&load_of("a")) && entry.contains("brif"),
            "key {key}: {body}"
        );
        for name in [lazy_b, lazy_c].into_iter().filter(|n| !n.is_empty()) {
            assert!(
                !entry.contains(&load_of(name)),
                "key {key} reads {name} eagerly: {body}"
            );
            assert!(
                body.contains(&load_of(name)),
                "key {key} never reads {name}: {body}"
            );
        }
    }
}

#[test]
fn e4_min_max_order_zeros_and_propagate_nan() {
    let call =
        |f: Builtin, args: &[f64]| Expr::Call(f, args.iter().map(|&x| Expr::Const(x)).collect());
    let exprs = [
        call(Builtin::Min, &[0.0, -0.0]),
        call(Builtin::Max, &[-0.0, 0.0]),
        call(Builtin::Min, &[1.0, NAN, -INF]),
        call(Builtin::Max, &[3.0, 1.0, 2.0, 0.5]),
        call(Builtin::Ceil, &[-0.5]),
        call(Builtin::Sqrt, &[-0.0]),
    ];
    let compiled = compile_exprs(&exprs).expect("compiles");
    let got: Vec<f64> = (0..exprs.len())
        .map(|i| compiled.eval(i, &[], &[]))
        .collect();
    assert_eq!(got[0].to_bits(), (-0.0f64).to_bits());
    assert_eq!(got[1].to_bits(), 0.0f64.to_bits());
    assert!(got[2].is_nan());
    assert_eq!(got[3], 3.0);
    assert_eq!(got[4].to_bits(), (-0.0f64).to_bits());
    assert_eq!(got[5].to_bits(), (-0.0f64).to_bits());
}

#[test]
fn malformed_expressions_are_errors_not_panics() {
    let bad = [
        Expr::Call(Builtin::Min, vec![Expr::Const(1.0)]),
        Expr::Call(Builtin::Abs, vec![Expr::Const(1.0), Expr::Const(2.0)]),
        Expr::Slot(Slot::Row(u32::MAX)),
    ];
    for e in bad {
        let err = compile_exprs(std::slice::from_ref(&e)).expect_err("must be rejected");
        assert!(err.to_string().contains("malformed IR"), "{err}");
    }
}

#[test]
fn compiled_code_can_be_shared_between_threads() {
    // The runtime may evaluate policies from several threads; the structs carry a
    // share of the code, so they must be Send + Sync, and a clone outlives its source.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<poolc::Compiled>();
    send_sync::<poolrt::policy::KeyList>();
    let list = compile_key_list(&[slot(0)]).expect("compiles");
    let clone = list.clone();
    drop(list);
    let picked = std::thread::spawn(move || clone.select(&[2.0, 1.0], 2, 1, &[]))
        .join()
        .expect("thread ran");
    assert_eq!(picked, Some(1));
}
