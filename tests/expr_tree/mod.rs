//! The random IR expression trees of the differential tests (tests/codegen.rs and
//! the `poolc build` tests): every operator, every builtin (min/max with 2–4
//! arguments), the ternary, up to depth 6, over whatever leaves the caller gives;
//! the IEEE corner values those tests draw from, and the bit comparison they judge
//! results by. One generator, so the JIT and the shared objects are tested on the
//! same shapes and corners.

use poolc::ir::{BinaryOp, Builtin, Expr, UnaryOp};
use proptest::prelude::*;

pub const BINARY: [BinaryOp; 13] = [
    BinaryOp::Or,
    BinaryOp::And,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
];

/// Values that make IEEE corners visible: zeros of both signs, infinities, NaNs of
/// both signs, the ends of the range, subnormals and integers around 2^53.
pub const SPECIAL: [f64; 24] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    3.0,
    128.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    -f64::NAN,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    1e-300,
    9007199254740992.0, // 2^53
    9007199254740993.0, // rounds to 2^53
    9007199254740991.0, // 2^53 − 1
    -9007199254740992.0,
    1e300,
    0.1,
];

/// Equal bits, or both NaN (NaN payloads and signs are not part of the contract).
pub fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Well-formed trees of depth ≤ 6 built over `leaf`.
pub fn tree(leaf: impl Strategy<Value = Expr> + 'static) -> impl Strategy<Value = Expr> {
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            (
                proptest::sample::select(vec![UnaryOp::Neg, UnaryOp::Not]),
                inner.clone()
            )
                .prop_map(|(op, x)| Expr::Unary(op, Box::new(x))),
            (
                proptest::sample::select(BINARY.to_vec()),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| Expr::Binary(op, Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| Expr::Cond(
                Box::new(c),
                Box::new(a),
                Box::new(b)
            )),
            (
                proptest::sample::select(vec![Builtin::Min, Builtin::Max]),
                proptest::collection::vec(inner.clone(), 2..=4)
            )
                .prop_map(|(f, args)| Expr::Call(f, args)),
            (
                proptest::sample::select(vec![
                    Builtin::Abs,
                    Builtin::Floor,
                    Builtin::Ceil,
                    Builtin::Sqrt
                ]),
                inner
            )
                .prop_map(|(f, x)| Expr::Call(f, vec![x])),
        ]
    })
}
