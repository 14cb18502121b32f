//! Warnings: patterns in a valid spec that are almost certainly not what was meant.
//! Each lint reads the parsed spec (for spans) and builds a warning `Diagnostic`; it
//! never rejects a spec, never changes the IR and never prints. `poolc check` shows
//! them and still exits 0.

use crate::diag::Diagnostic;
use crate::syntax::ast::{Decl, Expr, ExprKind, PoolOptionKind, Spec};

/// Every warning for a spec that checks (sema found no error).
pub fn lint(spec: &Spec) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for decl in &spec.decls {
        let Decl::Pool(pool) = decl else { continue };
        for opt in &pool.options {
            if let PoolOptionKind::Spill(s) = &opt.kind
                && let Some(size) = find_name(&s.pred, "size")
            {
                out.push(spill_reads_size(&pool.name.name, size.span, s.pred.span));
            }
        }
    }
    out
}

/// R12: the predicate runs once per evicted block with the entry's shrinking `size`,
/// and an entry loses its tail first, so a threshold on `size` never writes heads.
fn spill_reads_size(
    pool: &str,
    size: crate::syntax::Span,
    pred: crate::syntax::Span,
) -> Diagnostic {
    Diagnostic::warning(
        "R12",
        format!("the spill predicate of pool `{pool}` reads `size`, which shrinks as the entry is evicted"),
    )
    .primary(size, "the entry's cached units left at each evicted block")
    .secondary(pred, "evaluated once per evicted block (R12)")
    .note(
        "an entry loses its tail block first, so `size` falls with every block evicted: a \
         predicate such as `size >= 64` writes the first blocks evicted from a large entry \
         and never its last ones — the entry's head, the shared prefix later requests hit",
    )
    .note(
        "to keep heads, write every block (`when (1)`), or decide on what does not shrink: \
         the session's attributes, `last` or `age`",
    )
}

/// The first occurrence of the bare name `name` in `e`.
fn find_name<'a>(e: &'a Expr, name: &str) -> Option<&'a Expr> {
    match &e.kind {
        ExprKind::Name(id) if id.name == name => Some(e),
        ExprKind::Number(_) | ExprKind::Name(_) => None,
        ExprKind::Index(_, i) => find_name(i, name),
        ExprKind::Call(_, args) | ExprKind::Draw(args) => {
            args.iter().find_map(|a| find_name(a, name))
        }
        ExprKind::Unary(_, a) => find_name(a, name),
        ExprKind::Binary(_, a, b) => find_name(a, name).or_else(|| find_name(b, name)),
        ExprKind::Conditional(c, a, b) => find_name(c, name)
            .or_else(|| find_name(a, name))
            .or_else(|| find_name(b, name)),
    }
}
