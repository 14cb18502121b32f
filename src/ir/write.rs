//! The readable text form of a `Program` (`poolc ir`): every value, attribute, stage
//! and pool, each expression with its slots named, its read-set, the slot layouts and
//! the family joins. It is for people and snapshot tests; nothing parses it back.
//! Names of inputs and reads come from print.rs, as everywhere else.

use std::fmt::Write;

use super::*;

/// Renders a whole program.
pub fn dump(p: &Program) -> String {
    let mut out = String::new();
    for v in &p.values {
        let kind = if v.is_param { "param" } else { "const" };
        let _ = writeln!(out, "{kind} {} = {}", v.name, num(v.value));
    }
    let _ = writeln!(out, "session");
    for (i, a) in p.session.attrs.iter().enumerate() {
        let how = match (a.builtin, a.default) {
            (true, _) => "built-in".to_string(),
            (false, Some(d)) => format!("default {}", num(d)),
            (false, None) => "required".to_string(),
        };
        let _ = writeln!(out, "  attr {i} {} ({how})", a.name);
    }
    for s in &p.stages {
        let _ = writeln!(out, "stage {}{}: {}", s.name, count(s.count), s.kind.name());
        match &s.kind {
            StageKind::Step(step) => {
                let _ = writeln!(
                    out,
                    "  budget {}, seats {}, chunk {}, exclusive prefill {}",
                    step.budget,
                    step.seats,
                    step.chunk,
                    if step.exclusive_prefill { "on" } else { "off" }
                );
                let l = &step.time_layout;
                let _ = writeln!(out, "  time = {}", expr(&step.time.expr, p, l));
                let _ = writeln!(out, "    reads {}", reads(&step.time.reads, p));
                write_layout(&mut out, p, l, "time");
            }
            StageKind::Link(link) => {
                let _ = writeln!(out, "  rate {}", num(link.rate));
            }
        }
    }
    for pool in &p.pools {
        let _ = writeln!(out, "pool {}{}", pool.name, count(pool.count));
        let block = pool.block.map_or("none (1)".to_string(), |b| b.to_string());
        let _ = writeln!(out, "  cap {}, block {block}", pool.cap);
        match &pool.preempt {
            PreemptMode::None => {
                let _ = writeln!(out, "  preempt none");
            }
            PreemptMode::Lifo => {
                let _ = writeln!(out, "  preempt lifo");
            }
            PreemptMode::By(keys) => {
                let _ = writeln!(out, "  preempt by");
                write_keys(&mut out, p, keys, &pool.resident_layout, Fixedness::Hidden);
                write_layout(&mut out, p, &pool.resident_layout, "resident");
            }
        }
        if pool.requeue == Requeue::Keyed {
            let _ = writeln!(out, "  requeue keyed");
        }
        match &pool.admit_via {
            Some(j) => {
                let _ = writeln!(
                    out,
                    "  admit via {} ({})",
                    p.stage(j.target).name,
                    rule(j.rule)
                );
            }
            None => {
                let _ = writeln!(out, "  admit at every settle");
            }
        }
        match &pool.queue {
            QueuePolicy::Fifo => {
                let _ = writeln!(out, "  queue fifo");
            }
            QueuePolicy::By(keys) => {
                let _ = writeln!(out, "  queue by");
                write_keys(&mut out, p, keys, &pool.queue_layout, Fixedness::Shown);
                if pool.queue_tie == QueueTie::Id {
                    let _ = writeln!(out, "    ties: id");
                }
                write_layout(&mut out, p, &pool.queue_layout, "queue");
            }
        }
        match &pool.evict {
            Evict::Lru => {
                let _ = writeln!(out, "  evict lru");
            }
            Evict::By(keys) => {
                let _ = writeln!(out, "  evict by");
                write_keys(&mut out, p, keys, &pool.entry_layout, Fixedness::Hidden);
            }
        }
        if let Some(s) = &pool.spill {
            let _ = writeln!(
                out,
                "  spill to {} ({}) via {} ({})",
                p.pool(s.tier.target).name,
                rule(s.tier.rule),
                p.stage(s.link.target).name,
                rule(s.link.rule)
            );
            let l = &pool.entry_layout;
            let _ = writeln!(out, "    work = {}", expr(&s.work.expr, p, l));
            let _ = writeln!(out, "      reads {}", reads(&s.work.reads, p));
            let _ = writeln!(out, "    when = {}", expr(&s.pred.expr, p, l));
            let _ = writeln!(out, "      reads {}", reads(&s.pred.reads, p));
        }
        if matches!(pool.evict, Evict::By(_)) || pool.spill.is_some() {
            write_layout(&mut out, p, &pool.entry_layout, "entry");
        }
        if let Some(r) = &pool.route {
            let every = r
                .every
                .map_or("live".to_string(), |t| format!("every {}", num(t)));
            let _ = writeln!(
                out,
                "  route by (a row per member; load {every}; remembers {} blocks per member)",
                r.remember
            );
            write_keys(&mut out, p, &r.keys, &r.layout, Fixedness::Hidden);
            write_layout(&mut out, p, &r.layout, "route");
        }
        if let Some(f) = &pool.fair {
            let weight = f
                .weight
                .map_or(String::new(), |w| format!(" / {}", p.session.attr(w).name));
            let _ = writeln!(
                out,
                "  fair by {}: charge ({} * prefill + {} * decode){weight}",
                p.session.attr(f.by).name,
                num(f.prefill),
                num(f.decode)
            );
        }
        if let Some(h) = &pool.handoff {
            let _ = writeln!(
                out,
                "  handoff to {} via {} ({})",
                p.pool(h.target).name,
                p.stage(h.link.target).name,
                rule(h.link.rule)
            );
            let _ = writeln!(out, "    work = {}", expr(&h.work.expr, p, &h.layout));
            let _ = writeln!(out, "      reads {}", reads(&h.work.reads, p));
            write_layout(&mut out, p, &h.layout, "handoff");
        }
    }
    out
}

/// Whether keys are written with whether they are fixed while a hold waits
/// (computed once at enqueue) or evaluated at every admission attempt: only queue
/// keys are evaluated while a hold waits.
#[derive(Clone, Copy)]
enum Fixedness {
    Shown,
    Hidden,
}

fn write_keys(
    out: &mut String,
    p: &Program,
    keys: &[SiteExpr],
    layout: &Layout,
    fixedness: Fixedness,
) {
    for (i, k) in keys.iter().enumerate() {
        let _ = writeln!(out, "    key {i} = {}", expr(&k.expr, p, layout));
        let when = match (fixedness, k.reads.is_fixed()) {
            (Fixedness::Hidden, _) => "",
            (Fixedness::Shown, true) => " (fixed)",
            (Fixedness::Shown, false) => " (per attempt)",
        };
        let _ = writeln!(out, "      reads {}{when}", reads(&k.reads, p));
    }
}

fn write_layout(out: &mut String, p: &Program, l: &Layout, site: &str) {
    let names = |v: &[Input]| {
        v.iter()
            .enumerate()
            .map(|(i, x)| format!("{i}:{}", input_name(p, *x)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        out,
        "  {site} layout: row [{}] ctx [{}]",
        names(&l.row),
        names(&l.ctx)
    );
}

fn count(n: u32) -> String {
    if n == 1 {
        String::new()
    } else {
        format!("[{n}]")
    }
}

fn rule(r: JoinRule) -> &'static str {
    match r {
        JoinRule::MemberForMember => "member for member",
        JoinRule::SharedTarget => "one shared by every member",
        JoinRule::SharedSource => "every member serves the one",
    }
}

/// A number as Pool source would write it, so dumps read like the spec.
fn num(v: f64) -> String {
    if v == f64::INFINITY {
        "inf".into()
    } else if v == f64::NEG_INFINITY {
        "-inf".into()
    } else if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

fn reads(r: &ReadSet, p: &Program) -> String {
    let names: Vec<String> = r.0.iter().map(|x| read_name(p, *x)).collect();
    format!("{{{}}}", names.join(", "))
}

/// An expression with slots shown as `row.NAME` / `ctx.NAME`, parenthesised by E1
/// precedence.
fn expr(e: &Expr, p: &Program, l: &Layout) -> String {
    let mut s = String::new();
    write_expr(&mut s, e, p, l, 0);
    s
}

fn write_expr(s: &mut String, e: &Expr, p: &Program, l: &Layout, outer: u8) {
    match e {
        Expr::Const(v) => s.push_str(&num(*v)),
        Expr::Slot(Slot::Row(i)) => {
            let name = l
                .row
                .get(*i as usize)
                .map_or("?".to_string(), |x| input_name(p, *x));
            let _ = write!(s, "row.{name}");
        }
        Expr::Slot(Slot::Ctx(i)) => {
            let name = l
                .ctx
                .get(*i as usize)
                .map_or("?".to_string(), |x| input_name(p, *x));
            let _ = write!(s, "ctx.{name}");
        }
        Expr::Unary(op, a) => {
            s.push_str(op.symbol());
            write_expr(s, a, p, l, 7);
        }
        Expr::Binary(op, a, b) => {
            let prec = op.precedence();
            if prec < outer {
                s.push('(');
            }
            write_expr(s, a, p, l, prec);
            let _ = write!(s, " {} ", op.symbol());
            write_expr(s, b, p, l, prec + 1);
            if prec < outer {
                s.push(')');
            }
        }
        Expr::Cond(c, a, b) => {
            if outer > 0 {
                s.push('(');
            }
            write_expr(s, c, p, l, 1);
            s.push_str(" ? ");
            write_expr(s, a, p, l, 0);
            s.push_str(" : ");
            write_expr(s, b, p, l, 0);
            if outer > 0 {
                s.push(')');
            }
        }
        Expr::Call(f, args) => {
            let _ = write!(s, "{}(", f.name());
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                write_expr(s, a, p, l, 0);
            }
            s.push(')');
        }
        Expr::Sum(x) => {
            s.push_str("sum(");
            write_expr(s, x, p, l, 0);
            s.push(')');
        }
    }
}
