//! The IR's small printers, one of each, shared by every text that shows IR: the name
//! an input or a read has in the source (`prompt`, `now`, `enqueued`, `free(kv)`,
//! `cap(kv[1])`), and the prefix form of an expression (`(add r0 (neg c1))`) that the
//! manifest carries and parses back, with slots written by the caller. `poolc ir`
//! (write.rs), the manifest and header (src/aot), `poolc eval` and `poolc bench` call
//! these rather than spelling names themselves, so a name reads the same everywhere.
//! Nothing here parses, and the bytes they print are pinned by snapshots and by
//! manifests that built libraries must match: change them only with a format bump.

use std::fmt::Write;

use super::{
    BinaryOp, Expr, Input, Member, Probe, Program, Query, QueryTarget, Read, Slot, UnaryOp,
};

/// The name a layout slot's input has in the source: an attribute's name, a context
/// variable's, `enqueued`, or a query as written (`free(kv)`, `cap(kv[1])`).
pub fn input_name(program: &Program, input: Input) -> String {
    match input {
        Input::Attr(a) => program.session.attr(a).name.clone(),
        Input::Var(v) => v.name().to_string(),
        Input::Enqueued => "enqueued".to_string(),
        Input::Query(q) => query_name(program, q),
        Input::Scored(v) => format!("{}({})", v.name(), routed_name(program)),
        Input::Over(e, Probe::Query(q)) => format!("{}({})", e.name(), query_name(program, q)),
        Input::Over(e, Probe::Scored(v)) => {
            format!("{}({}({}))", e.name(), v.name(), routed_name(program))
        }
    }
}

/// The routed entry family's name (R22), which `hit`, `tier_hit` and `routed` read:
/// a handoff target's route may not read them (R25), so it is the one routed family
/// that is no handoff's target.
fn routed_name(program: &Program) -> &str {
    let target = |i: usize| {
        program
            .pools
            .iter()
            .any(|p| p.handoff.as_ref().is_some_and(|h| h.target.0 as usize == i))
    };
    program
        .pools
        .iter()
        .enumerate()
        .find(|(i, p)| p.route.is_some() && !target(*i))
        .map_or("?", |(_, p)| p.name.as_str())
}

/// The name a read-set entry has in the source (as [`input_name`]).
pub fn read_name(program: &Program, read: Read) -> String {
    match read {
        Read::Attr(a) => input_name(program, Input::Attr(a)),
        Read::Var(v) => input_name(program, Input::Var(v)),
        Read::Query(q) => input_name(program, Input::Query(q)),
        Read::Scored(v) => input_name(program, Input::Scored(v)),
        Read::Over(e, p) => input_name(program, Input::Over(e, p)),
    }
}

fn query_name(program: &Program, q: Query) -> String {
    let (target, member) = match q.target {
        QueryTarget::Pool(id, m) => (&program.pool(id).name, m),
        QueryTarget::Stage(id, m) => (&program.stage(id).name, m),
    };
    match member {
        Member::Same => format!("{}({target})", q.kind.name()),
        Member::Index(i) => format!("{}({target}[{i}])", q.kind.name()),
    }
}

/// How [`prefix`] writes a slot: the manifest writes `rN`/`cN`, the header
/// `row.NAME`, the bench source names.
pub type SlotWriter<'a> = &'a dyn Fn(&mut String, Slot);

/// An expression in prefix notation (docs/ABI.md, "Manifest"): numbers as Rust's
/// `{:?}` prints them (exact: they parse back to the same `f64`), slots as `slot`
/// writes them, `(op args…)` for everything else, with `op` one of `neg not or and
/// eq ne lt le gt ge add sub mul div rem if sum` or a built-in's name.
pub fn prefix(e: &Expr, slot: SlotWriter<'_>) -> String {
    let mut s = String::new();
    write_prefix(&mut s, e, slot);
    s
}

/// The prefix form with slots `rN` / `cN`: exactly the IR, as the manifest holds it.
pub fn prefix_slots(e: &Expr) -> String {
    prefix(e, &|s, slot| {
        let _ = match slot {
            Slot::Row(i) => write!(s, "r{i}"),
            Slot::Ctx(i) => write!(s, "c{i}"),
        };
    })
}

fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Not => "not",
    }
}

fn binary_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Or => "or",
        BinaryOp::And => "and",
        BinaryOp::Eq => "eq",
        BinaryOp::Ne => "ne",
        BinaryOp::Lt => "lt",
        BinaryOp::Le => "le",
        BinaryOp::Gt => "gt",
        BinaryOp::Ge => "ge",
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Div => "div",
        BinaryOp::Rem => "rem",
    }
}

fn write_prefix(s: &mut String, e: &Expr, slot: SlotWriter<'_>) {
    match e {
        Expr::Const(v) => {
            let _ = write!(s, "{v:?}");
        }
        Expr::Slot(x) => slot(s, *x),
        Expr::Unary(op, x) => write_call(s, unary_name(*op), [&**x], slot),
        Expr::Binary(op, a, b) => write_call(s, binary_name(*op), [&**a, &**b], slot),
        Expr::Cond(c, a, b) => write_call(s, "if", [&**c, &**a, &**b], slot),
        Expr::Call(f, args) => write_call(s, f.name(), args, slot),
        Expr::Sum(x) => write_call(s, "sum", [&**x], slot),
    }
}

fn write_call<'e>(
    s: &mut String,
    name: &str,
    args: impl IntoIterator<Item = &'e Expr>,
    slot: SlotWriter<'_>,
) {
    s.push('(');
    s.push_str(name);
    for a in args {
        s.push(' ');
        write_prefix(s, a, slot);
    }
    s.push(')');
}
