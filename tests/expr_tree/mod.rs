//! The random IR expression trees of the differential tests (tests/codegen.rs and
//! the `poolc build` tests): every operator, every builtin (min/max with 2–4
//! arguments), the ternary, up to depth 6, over whatever leaves the caller gives.
//! One generator, so the JIT and the shared objects are tested on the same shapes.

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
