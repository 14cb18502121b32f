//! The linearity rule of `poolc fit` (docs/LATENCY.md): a time expression can be
//! fitted by least squares only when it is linear in its unknowns, and this module
//! decides that structurally, on the AST, before any number is computed. Sums and
//! differences of linear terms are linear, and so is a negated one; a product is
//! linear when at most one factor holds unknowns, a quotient when its divisor holds
//! none; `sum(e)` is linear when `e` is (a sum of linear terms, R29); every other
//! form (a conditional, a comparison, `&&`, `||`, `%`, `!`, another function, an
//! index) must hold no unknown at all. It owns the wording of these
//! diagnostics and of "nothing to fit"; it evaluates nothing and never prints.

use poolc::diag::Diagnostic;
use poolc::syntax::Span;
use poolc::syntax::ast::{BinaryOp, Expr, ExprKind, UnaryOp};

use super::and_list as list;

/// The code of every diagnostic of this module.
const CODE: &str = "linear";

/// Every place where `expr` is not linear in the names `is_unknown` accepts, as
/// diagnostics against `source`, the text `expr` was parsed from (outermost first,
/// one per independent place).
pub fn check(expr: &Expr, source: &str, is_unknown: &dyn Fn(&str) -> bool) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    Walk { source, is_unknown }.expr(expr, &mut out);
    out
}

/// "Nothing to fit": the expression names no unknown. `inputs` are the names the
/// time site reads, for the note.
pub fn nothing_to_fit(expr: &Expr, source: &str, inputs: &[&str]) -> Diagnostic {
    let inputs = inputs
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Diagnostic::new(
        CODE,
        format!("`{}`: nothing to fit", text(source, expr.span)),
    )
    .primary(expr.span, "this time names no unknown")
    .note(format!(
        "an unknown is any other name than the time site's inputs ({inputs}), \
         e.g. `b0 + b1 * tokens`"
    ))
}

struct Walk<'a> {
    source: &'a str,
    is_unknown: &'a dyn Fn(&str) -> bool,
}

impl Walk<'_> {
    fn expr(&self, e: &Expr, out: &mut Vec<Diagnostic>) {
        match &e.kind {
            ExprKind::Number(_) | ExprKind::Name(_) => {}
            ExprKind::Unary(UnaryOp::Neg, a) => self.expr(a, out),
            ExprKind::Unary(op, a) => self.refuse_inside(e, &[a], out, &|names| {
                format!("`{}` applied to {names}", op.symbol())
            }),
            ExprKind::Binary(BinaryOp::Add | BinaryOp::Sub, l, r) => {
                self.expr(l, out);
                self.expr(r, out);
            }
            ExprKind::Binary(BinaryOp::Mul, l, r) => {
                let (left, right) = (self.unknowns(l), self.unknowns(r));
                if left.is_empty() || right.is_empty() {
                    self.expr(l, out);
                    self.expr(r, out);
                } else {
                    let mut names = left;
                    for n in right {
                        if !names.contains(&n) {
                            names.push(n);
                        }
                    }
                    let why = match names.as_slice() {
                        [one] => format!("{one} multiplies itself"),
                        many => format!("{} multiply", list(many)),
                    };
                    out.push(self.refusal(e, &why, "both factors hold unknowns"));
                }
            }
            ExprKind::Binary(BinaryOp::Div, l, r) => {
                let divisor = self.unknowns(r);
                if divisor.is_empty() {
                    self.expr(l, out);
                } else {
                    let why = format!("{} in a divisor", list(&divisor));
                    out.push(self.refusal(e, &why, "divides by an unknown"));
                }
            }
            ExprKind::Binary(op, l, r) => {
                let place = match op {
                    BinaryOp::Eq
                    | BinaryOp::Ne
                    | BinaryOp::Lt
                    | BinaryOp::Le
                    | BinaryOp::Gt
                    | BinaryOp::Ge => "a comparison".to_string(),
                    _ => format!("`{}`", op.symbol()),
                };
                self.refuse_inside(e, &[l, r], out, &|names| format!("{names} inside {place}"));
            }
            ExprKind::Conditional(c, t, f) => self.refuse_inside(e, &[c, t, f], out, &|names| {
                format!("{names} inside a conditional")
            }),
            ExprKind::Call(f, args) if f.name == "sum" && args.len() == 1 => {
                args.iter().for_each(|a| self.expr(a, out));
            }
            ExprKind::Call(f, args) => {
                let args: Vec<&Expr> = args.iter().collect();
                self.refuse_inside(e, &args, out, &|names| {
                    format!("{names} inside `{}`", f.name)
                })
            }
            ExprKind::Index(_, i) => {
                self.refuse_inside(e, &[i], out, &|names| format!("{names} inside an index"))
            }
            ExprKind::Draw(args) => {
                let args: Vec<&Expr> = args.iter().collect();
                self.refuse_inside(e, &args, out, &|names| format!("{names} inside `draw`"))
            }
        }
    }

    /// Refuses `e` when any of its operands holds an unknown; `why` words it from the
    /// list of those unknowns ("b1 inside `max`").
    fn refuse_inside(
        &self,
        e: &Expr,
        operands: &[&Expr],
        out: &mut Vec<Diagnostic>,
        why: &dyn Fn(&str) -> String,
    ) {
        let mut names = Vec::new();
        for o in operands {
            for n in self.unknowns(o) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        if !names.is_empty() {
            let why = why(&list(&names));
            out.push(self.refusal(e, &why, "an unknown may not be here"));
        }
    }

    fn refusal(&self, e: &Expr, why: &str, label: &str) -> Diagnostic {
        Diagnostic::new(
            CODE,
            format!(
                "`{}`: the time must be linear in its unknowns ({why})",
                text(self.source, e.span)
            ),
        )
        .primary(e.span, label)
        .note(
            "`poolc fit` fits sums of terms, each an unknown times an expression of the \
             inputs: `b1 * prefill`, `b2 * decode / 1000`, `-b3 * residents`",
        )
    }

    /// The unknowns `e` names, in order of first appearance.
    fn unknowns(&self, e: &Expr) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for id in e.names() {
            if (self.is_unknown)(&id.name) && !names.contains(&id.name) {
                names.push(id.name.clone());
            }
        }
        names
    }
}

/// The source text of `span` (empty if it is not in `source`).
fn text(source: &str, span: Span) -> &str {
    source.get(span.range()).unwrap_or_default()
}
