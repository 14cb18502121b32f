//! Target (b): the JIT equals the interpreter, bit for bit (any NaN equal to any
//! NaN), on whole random specs and random inputs. The bytes are read first as a spec
//! — constants and a parameter, session attributes, a step and a link stage, a pool
//! with every kind of queue, evict and preempt key list, `requeue keyed`, a spill to
//! a tier pool, families of one or two — whose expressions read only what their site
//! may read (S1), so every generated spec must check; then as rows and contexts for
//! every compiled site: each key, `select` and `cmp` of every key list, spill `pred`
//! and `work`, and every stage `time` (with a `sum` over 0 to 3 take rows, R29). It compares values only: it runs no engine.

use poolc::diag::Styling;
use poolc::interp;
use poolc::ir::{Evict, Layout, PreemptMode, Program, QueuePolicy, SiteExpr};
use poolrt::policy::KeyList;

use crate::Bytes;

const BINARY: [&str; 13] = [
    "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
];
const LITERALS: [&str; 9] = ["0", "1", "2", "3", "0.5", "16", "1e308", "inf", "c"];

/// Names a queue key may read (S1) besides literals and constants.
const QUEUE: [&str; 20] = [
    "priority",
    "tenant",
    "prompt",
    "serial",
    "arrival",
    "units",
    "reserve",
    "computed",
    "waited",
    "now",
    "p",
    "free(kv)",
    "used(kv)",
    "cached(kv)",
    "cap(kv)",
    "queued(kv)",
    "free(host)",
    "queued(host)",
    "budget_left(engine)",
    "residents(engine)",
];
/// Names a preempt key may read (R18).
const PREEMPT: [&str; 16] = [
    "priority",
    "tenant",
    "prompt",
    "serial",
    "arrival",
    "units",
    "computed",
    "admitted",
    "now",
    "p",
    "free(kv)",
    "used(kv)",
    "queued(kv)",
    "cap(host)",
    "budget_left(engine)",
    "residents(engine)",
];
/// Names an evict key may read.
const ENTRY: [&str; 11] = [
    "priority", "tenant", "prompt", "serial", "arrival", "size", "age", "last", "waiting", "hits",
    "p",
];
/// Names spill `work` and `when` may read: an evict key's and `units`.
const SPILL: [&str; 12] = [
    "priority", "tenant", "prompt", "serial", "arrival", "size", "age", "last", "waiting", "hits",
    "p", "units",
];
/// Names a stage `time` may read.
const TIME: [&str; 6] = ["tokens", "prefill", "decode", "residents", "context", "p"];
/// Names a `sum` term of a stage `time` may read (R29).
const TAKE: [&str; 8] = [
    "tokens", "prefill", "decode", "computed", "context", "prompt", "priority", "p",
];

/// A random expression over `names`, fully parenthesised so the text is the tree.
fn expr(b: &mut Bytes, names: &[&str], depth: u32) -> String {
    if depth == 0 || b.below(3) == 0 {
        return if b.below(3) == 0 {
            b.pick(&LITERALS).to_string()
        } else {
            b.pick(names).to_string()
        };
    }
    let d = depth - 1;
    match b.below(6) {
        0 | 1 => {
            let op = b.pick(&BINARY);
            format!("({} {op} {})", expr(b, names, d), expr(b, names, d))
        }
        2 => format!("({}{})", b.pick(&["- ", "! "]), expr(b, names, d)),
        3 => format!(
            "({} ? {} : {})",
            expr(b, names, d),
            expr(b, names, d),
            expr(b, names, d)
        ),
        4 => {
            let f = b.pick(&["min", "max"]);
            let args: Vec<String> = (0..2 + b.below(3)).map(|_| expr(b, names, d)).collect();
            format!("{f}({})", args.join(", "))
        }
        _ => {
            let f = b.pick(&["abs", "floor", "ceil", "sqrt"]);
            format!("{f}({})", expr(b, names, d))
        }
    }
}

/// `(k1, k2, …)`: one to three keys.
fn keys(b: &mut Bytes, names: &[&str]) -> String {
    let keys: Vec<String> = (0..1 + b.below(3)).map(|_| expr(b, names, 4)).collect();
    format!("({})", keys.join(", "))
}

fn cap(b: &mut Bytes) -> String {
    match b.below(5) {
        0 => "inf".into(),
        _ => (1 + b.below(4096)).to_string(),
    }
}

/// A spec every byte string describes, and every one of which must check.
pub fn spec(b: &mut Bytes) -> String {
    let n = if b.below(4) == 0 { "[2]" } else { "" };
    let mut s = format!(
        "param p = {};\nconst c = {};\nsession {{ prompt; output; priority = {}; tenant = {}; }}\n",
        b.below(100),
        b.pick(&["1", "p * 2", "min(p, 7) + 0.5", "-3"]),
        b.below(4),
        b.below(3),
    );
    s += &format!(
        "stage engine{n} {{ step; budget {}; seats {};{}{} time ({}{}); }}\n",
        1 + b.below(8192),
        1 + b.below(256),
        if b.bool() {
            format!(" chunk {};", 1 + b.below(512))
        } else {
            String::new()
        },
        if b.below(4) == 0 {
            " serve exclusive prefill;"
        } else {
            ""
        },
        expr(b, &TIME, 4),
        if b.bool() {
            format!(" + sum({})", expr(b, &TAKE, 3))
        } else {
            String::new()
        },
    );
    s += &format!(
        "stage pcie{n} {{ link; rate {}; }}\n",
        b.pick(&["inf", "25e9", "1"])
    );
    let block = *b.pick(&[1u32, 4, 16]);
    s += &format!(
        "pool host{n} {{ cap {}; block {block}; evict {}; }}\n",
        cap(b),
        if b.bool() {
            format!("by {}", keys(b, &ENTRY))
        } else {
            "lru".into()
        }
    );
    let queue = if b.below(4) == 0 {
        "fifo".into()
    } else {
        format!("by {}", keys(b, &QUEUE))
    };
    let evict = if b.below(3) == 0 {
        "lru".into()
    } else {
        format!("by {}", keys(b, &ENTRY))
    };
    let preempt = match b.below(3) {
        0 => "none".into(),
        1 => "lifo".into(),
        _ => format!("by {}", keys(b, &PREEMPT)),
    };
    let requeue = if b.bool() { " requeue keyed;" } else { "" };
    let spill = if b.bool() {
        format!(
            " spill host via pcie ({}) when ({});",
            expr(b, &SPILL, 4),
            expr(b, &SPILL, 4)
        )
    } else {
        String::new()
    };
    s += &format!(
        "pool kv{n} {{ cap {}; block {block}; queue {queue}; evict {evict}; preempt {preempt};{requeue} admit via engine;{spill} }}\n",
        cap(b)
    );
    s
}

/// Equal bits, or both NaN (NaN payloads and signs are not part of the contract).
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn values(b: &mut Bytes, n: usize) -> Vec<f64> {
    (0..n).map(|_| b.value()).collect()
}

/// One key list on up to 8 rows of its layout: every key, `select` and `cmp`.
fn list(b: &mut Bytes, what: &str, list: &KeyList, keys: &[SiteExpr], layout: &Layout) {
    let width = layout.row.len();
    let n = b.below(9);
    let rows = values(b, n * width);
    let ctx = values(b, layout.ctx.len());
    let exprs: Vec<_> = keys.iter().map(|k| k.expr.clone()).collect();
    for (i, row) in rows.chunks(width.max(1)).enumerate().take(n) {
        let row = if width == 0 { &[][..] } else { row };
        for (k, e) in exprs.iter().enumerate() {
            let (jit, int) = (list.key(k, row, &ctx), interp::eval(e, row, &ctx));
            assert!(
                same(jit, int),
                "{what} key {k} row {i}: jit {jit:?} interp {int:?}; row {row:?} ctx {ctx:?}"
            );
        }
    }
    let (jit, int) = (
        list.select(&rows, n, width, &ctx),
        interp::select(&exprs, &rows, n, width, &ctx),
    );
    assert_eq!(jit, int, "{what} select; rows {rows:?} ctx {ctx:?}");
    if n >= 2 {
        let (x, y) = rows.split_at(width);
        let y = y.get(..width).unwrap_or(&[]);
        let (jit, int) = (list.cmp(x, y, &ctx) as i32, interp::cmp(&exprs, x, y, &ctx));
        assert_eq!(jit, int, "{what} cmp; rows {rows:?} ctx {ctx:?}");
    }
}

/// Every compiled site of `program` against the interpreter on inputs from `b`.
fn compare(b: &mut Bytes, program: &Program, compiled: &poolc::Compiled, text: &str) {
    for (pool, policy) in program.pools.iter().zip(compiled.pools()) {
        let name = &pool.name;
        match (&pool.queue, &policy.queue) {
            (QueuePolicy::By(keys), Some(l)) => list(b, name, l, keys, &pool.queue_layout),
            (QueuePolicy::Fifo, None) => {}
            _ => panic!("{name}: queue functions do not match the IR\n{text}"),
        }
        match (&pool.evict, &policy.evict) {
            (Evict::By(keys), Some(l)) => list(b, name, l, keys, &pool.entry_layout),
            (Evict::Lru, None) => {}
            _ => panic!("{name}: evict functions do not match the IR\n{text}"),
        }
        match (&pool.preempt, &policy.preempt) {
            (PreemptMode::By(keys), Some(l)) => list(b, name, l, keys, &pool.resident_layout),
            (PreemptMode::None | PreemptMode::Lifo, None) => {}
            _ => panic!("{name}: preempt functions do not match the IR\n{text}"),
        }
        match (&pool.spill, &policy.spill) {
            (Some(spill), Some(fns)) => {
                let layout = &pool.entry_layout;
                let (row, ctx) = (values(b, layout.row.len()), values(b, layout.ctx.len()));
                let pred = (
                    fns.pred(&row, &ctx),
                    interp::eval(&spill.pred.expr, &row, &ctx),
                );
                assert!(
                    same(pred.0, pred.1),
                    "{name} pred {pred:?}; {row:?} {ctx:?}"
                );
                let work = (
                    fns.work(&row, &ctx),
                    interp::eval(&spill.work.expr, &row, &ctx),
                );
                assert!(
                    same(work.0, work.1),
                    "{name} work {work:?}; {row:?} {ctx:?}"
                );
            }
            (None, None) => {}
            _ => panic!("{name}: spill functions do not match the IR\n{text}"),
        }
    }
    for (stage, policy) in program.stages.iter().zip(compiled.stages()) {
        let (time, time_layout) = stage.time();
        let ctx = values(b, time_layout.ctx.len());
        let n = b.below(4);
        let rows = values(b, n * time_layout.row.len());
        let takes = interp::Takes {
            rows: &rows,
            n,
            stride: time_layout.row.len(),
        };
        let (jit, int) = (
            policy.time(&ctx, &rows, n),
            interp::eval_time(&time.expr, takes, &ctx),
        );
        assert!(
            same(jit, int),
            "{} time: jit {jit:?} interp {int:?}; ctx {ctx:?} rows {rows:?}",
            stage.name
        );
    }
}

/// Generates one spec, compiles it and compares every site on a few rounds of
/// inputs; panics when a property fails. Returns the spec's text.
pub fn run(data: &[u8]) -> String {
    let mut b = Bytes::new(data);
    let text = spec(&mut b);
    let program = poolc::check(&text, &poolc::Options::default()).unwrap_or_else(|d| {
        panic!(
            "a generated spec does not check:\n{text}\n{}",
            poolc::diag::render("gen.pool", &text, &d, Styling::Plain)
        )
    });
    let compiled = poolc::codegen::compile_program(&program)
        .unwrap_or_else(|e| panic!("a generated spec does not compile: {e}\n{text}"));
    for _ in 0..4 {
        compare(&mut b, &program, &compiled, &text);
    }
    text
}
