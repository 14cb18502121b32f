//! The pretty-printer: an AST back to Pool source that parses to the same AST (spans
//! aside), with the fewest parentheses E1's precedence allows, one declaration per block
//! and one option per line. It also owns `erase_spans`, so that tests can compare
//! printed-and-reparsed trees. It must not check anything: it prints what it is given.
//! Numbers are assumed as the parser makes them (never NaN, per `ast::ExprKind`).

use std::fmt::Write;

use crate::syntax::ast::*;

/// Binding strength of a printed expression: a `?:` is loosest, binary operators take
/// their E1 precedence (1–6), then prefix operators, then primaries.
const CONDITIONAL: u8 = 0;
const PREFIX: u8 = 7;
const PRIMARY: u8 = 8;

pub fn print_spec(spec: &Spec) -> String {
    let blocks: Vec<String> = spec.decls.iter().map(print_decl).collect();
    blocks.join("\n")
}

pub fn print_expr(expr: &Expr) -> String {
    let mut out = String::new();
    write_expr(&mut out, expr, CONDITIONAL);
    out
}

fn print_decl(decl: &Decl) -> String {
    match decl {
        Decl::Const(d) => format!("const {} = {};\n", d.name.name, print_expr(&d.value)),
        Decl::Param(d) => format!("param {} = {};\n", d.name.name, print_expr(&d.value)),
        Decl::Session(s) => {
            let lines = s.attrs.iter().map(|a| match &a.default {
                Some(e) => format!("{} = {};", a.name.name, print_expr(e)),
                None => format!("{};", a.name.name),
            });
            block("session".to_string(), lines)
        }
        Decl::Stage(s) => {
            let kind = match s.kind {
                StageKind::Step => "step;".to_string(),
                StageKind::Link => "link;".to_string(),
            };
            let options = s.options.iter().map(|o| stage_option(&o.kind));
            block(
                header("stage", &s.name, &s.count),
                std::iter::once(kind).chain(options),
            )
        }
        Decl::Pool(p) => block(
            header("pool", &p.name, &p.count),
            p.options.iter().map(|o| pool_option(&o.kind)),
        ),
    }
}

fn header(word: &str, name: &Ident, count: &Option<Expr>) -> String {
    match count {
        Some(n) => format!("{word} {}[{}]", name.name, print_expr(n)),
        None => format!("{word} {}", name.name),
    }
}

/// `head { … }` with one line per item, or `head {}` when there are none.
fn block(head: String, lines: impl Iterator<Item = String>) -> String {
    let mut out = head;
    out.push_str(" {");
    let mut empty = true;
    for line in lines {
        empty = false;
        out.push_str("\n  ");
        out.push_str(&line);
    }
    out.push_str(if empty { "}\n" } else { "\n}\n" });
    out
}

fn stage_option(kind: &StageOptionKind) -> String {
    match kind {
        StageOptionKind::Budget(e) => format!("budget {};", print_expr(e)),
        StageOptionKind::Seats(e) => format!("seats {};", print_expr(e)),
        StageOptionKind::Chunk(e) => format!("chunk {};", print_expr(e)),
        StageOptionKind::ServeExclusivePrefill => "serve exclusive prefill;".to_string(),
        StageOptionKind::Time(e) => format!("time ({});", print_expr(e)),
        StageOptionKind::Rate(e) => format!("rate {};", print_expr(e)),
    }
}

fn pool_option(kind: &PoolOptionKind) -> String {
    match kind {
        PoolOptionKind::Cap(e) => format!("cap {};", print_expr(e)),
        PoolOptionKind::Block(e) => format!("block {};", print_expr(e)),
        PoolOptionKind::EvictLru => "evict lru;".to_string(),
        PoolOptionKind::EvictBy(keys) => format!("evict by ({});", list(keys)),
        PoolOptionKind::PreemptNone => "preempt none;".to_string(),
        PoolOptionKind::PreemptLifo => "preempt lifo;".to_string(),
        PoolOptionKind::PreemptBy(keys) => format!("preempt by ({});", list(keys)),
        PoolOptionKind::RequeueKeyed => "requeue keyed;".to_string(),
        PoolOptionKind::QueueFifo => "queue fifo;".to_string(),
        PoolOptionKind::QueueBy(keys) => format!("queue by ({});", list(keys)),
        PoolOptionKind::AdmitVia(stage) => format!("admit via {};", stage.name),
        PoolOptionKind::Spill(s) => format!(
            "spill {} via {} ({}) when ({});",
            s.tier.name,
            s.link.name,
            print_expr(&s.work),
            print_expr(&s.pred)
        ),
        PoolOptionKind::Route(r) => {
            let mut out = format!("route by ({})", list(&r.keys));
            if let Some(e) = &r.every {
                out.push_str(&format!(" every {}", print_expr(e)));
            }
            if let Some(e) = &r.remember {
                out.push_str(&format!(" remember {}", print_expr(e)));
            }
            out.push(';');
            out
        }
        PoolOptionKind::Handoff(h) => format!(
            "handoff {} via {} ({});",
            h.target.name,
            h.link.name,
            print_expr(&h.work)
        ),
        PoolOptionKind::Fair(f) => {
            let mut out = format!(
                "fair {} ({}, {})",
                f.by.name,
                print_expr(&f.prefill),
                print_expr(&f.decode)
            );
            if let Some(w) = &f.weight {
                out.push_str(&format!(" weight {}", w.name));
            }
            out.push(';');
            out
        }
    }
}

fn list(exprs: &[Expr]) -> String {
    exprs.iter().map(print_expr).collect::<Vec<_>>().join(", ")
}

fn binding(expr: &Expr) -> u8 {
    match &expr.kind {
        ExprKind::Conditional(..) => CONDITIONAL,
        ExprKind::Binary(op, ..) => op.precedence(),
        // A negative number prints with a leading `-`, which reads back as a prefix `-`.
        ExprKind::Unary(..) => PREFIX,
        ExprKind::Number(v) if v.is_sign_negative() => PREFIX,
        _ => PRIMARY,
    }
}

/// Writes `expr` where the context needs at least binding strength `min`, adding
/// parentheses only when the expression binds more loosely than that.
fn write_expr(out: &mut String, expr: &Expr, min: u8) {
    let parens = binding(expr) < min;
    if parens {
        out.push('(');
    }
    match &expr.kind {
        ExprKind::Number(v) => out.push_str(&number(*v)),
        ExprKind::Name(id) => out.push_str(&id.name),
        ExprKind::Index(id, index) => {
            out.push_str(&id.name);
            out.push('[');
            write_expr(out, index, CONDITIONAL);
            out.push(']');
        }
        ExprKind::Call(id, args) => {
            out.push_str(&id.name);
            write_args(out, args);
        }
        ExprKind::Draw(args) => {
            out.push_str("draw");
            write_args(out, args);
        }
        ExprKind::Unary(op, operand) => {
            // Prefix operators are separate tokens, so `--x` and `!-x` read back as
            // written; no space is needed between them.
            out.push_str(op.symbol());
            write_expr(out, operand, PREFIX);
        }
        ExprKind::Binary(op, lhs, rhs) => {
            // Left-associative: a right operand of the same precedence needs parentheses.
            write_expr(out, lhs, op.precedence());
            let _ = write!(out, " {} ", op.symbol());
            write_expr(out, rhs, op.precedence() + 1);
        }
        ExprKind::Conditional(cond, then, other) => {
            // Right-associative: only a conditional as the condition needs parentheses;
            // the middle operand is delimited by `?` and `:` on both sides.
            write_expr(out, cond, CONDITIONAL + 1);
            out.push_str(" ? ");
            write_expr(out, then, CONDITIONAL);
            out.push_str(" : ");
            write_expr(out, other, CONDITIONAL);
        }
    }
    if parens {
        out.push(')');
    }
}

fn write_args(out: &mut String, args: &[Expr]) {
    out.push('(');
    out.push_str(&list(args));
    out.push(')');
}

/// A number as L2 reads it back to the same f64: integers below 2^53-ish without a
/// fraction (`4096`, not `4096.0`), everything else in Rust's shortest round-trip form
/// (`0.1`, `1e-7`, `1e300`), which L2 accepts.
fn number(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        };
    }
    if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v}")
    } else {
        format!("{v:?}")
    }
}

/// Sets every span in `spec` to `Span::default()`, so trees parsed from different
/// texts compare equal when only their layout differs.
pub fn erase_spans(spec: &mut Spec) {
    for decl in &mut spec.decls {
        match decl {
            Decl::Const(d) | Decl::Param(d) => {
                erase_ident(&mut d.name);
                erase_expr_spans(&mut d.value);
                d.span = Span::default();
            }
            Decl::Session(s) => {
                for a in &mut s.attrs {
                    erase_ident(&mut a.name);
                    if let Some(e) = &mut a.default {
                        erase_expr_spans(e);
                    }
                    a.span = Span::default();
                }
                s.span = Span::default();
            }
            Decl::Stage(s) => {
                erase_ident(&mut s.name);
                if let Some(e) = &mut s.count {
                    erase_expr_spans(e);
                }
                s.kind_span = Span::default();
                for o in &mut s.options {
                    match &mut o.kind {
                        StageOptionKind::Budget(e)
                        | StageOptionKind::Seats(e)
                        | StageOptionKind::Chunk(e)
                        | StageOptionKind::Time(e)
                        | StageOptionKind::Rate(e) => erase_expr_spans(e),
                        StageOptionKind::ServeExclusivePrefill => {}
                    }
                    o.span = Span::default();
                }
                s.span = Span::default();
            }
            Decl::Pool(p) => {
                erase_ident(&mut p.name);
                if let Some(e) = &mut p.count {
                    erase_expr_spans(e);
                }
                for o in &mut p.options {
                    match &mut o.kind {
                        PoolOptionKind::Cap(e) | PoolOptionKind::Block(e) => erase_expr_spans(e),
                        PoolOptionKind::EvictBy(keys)
                        | PoolOptionKind::QueueBy(keys)
                        | PoolOptionKind::PreemptBy(keys) => {
                            keys.iter_mut().for_each(erase_expr_spans);
                        }
                        PoolOptionKind::AdmitVia(id) => erase_ident(id),
                        PoolOptionKind::Spill(s) => {
                            erase_ident(&mut s.tier);
                            erase_ident(&mut s.link);
                            erase_expr_spans(&mut s.work);
                            erase_expr_spans(&mut s.pred);
                        }
                        PoolOptionKind::Route(r) => {
                            r.keys.iter_mut().for_each(erase_expr_spans);
                            r.every.iter_mut().for_each(erase_expr_spans);
                            r.remember.iter_mut().for_each(erase_expr_spans);
                        }
                        PoolOptionKind::Handoff(h) => {
                            erase_ident(&mut h.target);
                            erase_ident(&mut h.link);
                            erase_expr_spans(&mut h.work);
                        }
                        PoolOptionKind::Fair(f) => {
                            erase_ident(&mut f.by);
                            erase_expr_spans(&mut f.prefill);
                            erase_expr_spans(&mut f.decode);
                            f.weight.iter_mut().for_each(erase_ident);
                        }
                        PoolOptionKind::EvictLru
                        | PoolOptionKind::PreemptNone
                        | PoolOptionKind::PreemptLifo
                        | PoolOptionKind::RequeueKeyed
                        | PoolOptionKind::QueueFifo => {}
                    }
                    o.span = Span::default();
                }
                p.span = Span::default();
            }
        }
    }
}

/// `erase_spans` for one expression.
pub fn erase_expr_spans(expr: &mut Expr) {
    expr.span = Span::default();
    match &mut expr.kind {
        ExprKind::Number(_) => {}
        ExprKind::Name(id) => erase_ident(id),
        ExprKind::Index(id, index) => {
            erase_ident(id);
            erase_expr_spans(index);
        }
        ExprKind::Call(id, args) => {
            erase_ident(id);
            args.iter_mut().for_each(erase_expr_spans);
        }
        ExprKind::Draw(args) => args.iter_mut().for_each(erase_expr_spans),
        ExprKind::Unary(_, operand) => erase_expr_spans(operand),
        ExprKind::Binary(_, lhs, rhs) => {
            erase_expr_spans(lhs);
            erase_expr_spans(rhs);
        }
        ExprKind::Conditional(cond, then, other) => {
            erase_expr_spans(cond);
            erase_expr_spans(then);
            erase_expr_spans(other);
        }
    }
}

fn erase_ident(id: &mut Ident) {
    id.span = Span::default();
}
