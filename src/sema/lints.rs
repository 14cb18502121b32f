//! Warnings: patterns in a valid spec that are almost certainly not what was meant,
//! or that can go wrong under some traffic. Each lint reads the parsed spec (for spans)
//! and builds a warning `Diagnostic`; it never rejects a spec, never changes the IR and
//! never prints. `poolc check` shows them and still exits 0.

use std::collections::BTreeMap;

use crate::diag::Diagnostic;
use crate::ir::{BinaryOp, QueryKind, UnaryOp};
use crate::syntax::ast::{Decl, Expr, ExprKind, Ident, PoolDecl, PoolOptionKind, Spec};

/// Every warning for a spec that checks (sema found no error).
pub fn lint(spec: &Spec) -> Vec<Diagnostic> {
    let values = constants(spec);
    let mut out = Vec::new();
    for decl in &spec.decls {
        let Decl::Pool(pool) = decl else { continue };
        for opt in &pool.options {
            match &opt.kind {
                PoolOptionKind::Spill(s) => {
                    if let Some(size) = find_name(&s.pred, "size") {
                        out.push(spill_reads_size(&pool.name.name, size.span, s.pred.span));
                    }
                }
                PoolOptionKind::QueueBy(keys) => {
                    let fair = fairness(pool, &values);
                    if let Some(d) = queue_can_starve(&pool.name.name, keys, &values, fair) {
                        out.push(d);
                    }
                }
                _ => {}
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
fn find_name<'a>(e: &'a Expr, name: &str) -> Option<&'a Ident> {
    e.names().into_iter().find(|id| id.name == name)
}

/// How a queue key (R8: the least is selected) of a waiting hold compares with a
/// newcomer's as the hold waits: the abstraction R28 reasons with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Trend {
    /// Equal for every hold at one selection: constants, `now`, queries; `Some` when
    /// the value is a known number (a literal, a `const` or a `param`'s literal).
    Same(Option<f64>),
    /// A hold's own bounded value that waiting does not move: attributes, `units`,
    /// `reserve`, `computed`, and anything bounded built from them (comparisons,
    /// conditionals). A newcomer may hold a smaller one forever.
    Bounded,
    /// Falls without bound against any newcomer's as the hold waits: a positive
    /// multiple of `arrival`, `serial` or `enqueued` (a newcomer's are larger, growing
    /// with time), or a negative multiple of `waited` (a newcomer's is 0), plus bounded
    /// terms.
    Ages,
    /// Rises without bound as the hold waits (the opposite multiples).
    Anti,
    /// Not one of the above (a product of two trends, an aging term under a
    /// conditional, …): R28 cannot show that waiting helps.
    Unknown,
}

/// The numbers the lint can read off `const` and `param` declarations whose value
/// is a literal (or a negated one); `--set` may change a param, so the warning says
/// which value it read.
fn constants(spec: &Spec) -> BTreeMap<&str, f64> {
    let mut out = BTreeMap::new();
    for decl in &spec.decls {
        if let Decl::Const(v) | Decl::Param(v) = decl
            && let Trend::Same(Some(x)) = trend(&v.value, &BTreeMap::new(), Fairness::NotCharging)
        {
            out.insert(v.name.name.as_str(), x);
        }
    }
    out
}

fn neg(t: Trend) -> Trend {
    match t {
        Trend::Same(v) => Trend::Same(v.map(|x| -x)),
        Trend::Ages => Trend::Anti,
        Trend::Anti => Trend::Ages,
        other => other,
    }
}

fn add(a: Trend, b: Trend) -> Trend {
    use Trend::*;
    match (a, b) {
        (Same(x), Same(y)) => Same(x.zip(y).map(|(x, y)| x + y)),
        (Same(_), t) | (t, Same(_)) => t,
        (Unknown, _) | (_, Unknown) | (Ages, Anti) | (Anti, Ages) => Unknown,
        (Ages, _) | (_, Ages) => Ages,
        (Anti, _) | (_, Anti) => Anti,
        (Bounded, Bounded) => Bounded,
    }
}

/// `c · t` for a known number `c`.
fn scale(c: f64, t: Trend) -> Trend {
    match t {
        Trend::Same(v) => Trend::Same(v.map(|x| c * x)),
        _ if c == 0.0 => Trend::Same(Some(0.0)),
        _ if c > 0.0 => t,
        _ if c < 0.0 => neg(t),
        _ => Trend::Unknown,
    }
}

fn mul(a: Trend, b: Trend) -> Trend {
    use Trend::*;
    match (a, b) {
        (Same(Some(c)), t) | (t, Same(Some(c))) => scale(c, t),
        (Same(None), Same(None)) => Same(None),
        (Same(None) | Bounded, Same(None) | Bounded) => Bounded,
        _ => Unknown,
    }
}

/// Bounded when every part is bounded or the same for all holds; the same for all when
/// every part is (a comparison, a conditional, a function of such parts).
fn bounded_of(parts: &[Trend]) -> Trend {
    if parts.iter().all(|t| matches!(t, Trend::Same(_))) {
        Trend::Same(None)
    } else if parts
        .iter()
        .all(|t| matches!(t, Trend::Same(_) | Trend::Bounded))
    {
        Trend::Bounded
    } else {
        Trend::Unknown
    }
}

fn trend(e: &Expr, values: &BTreeMap<&str, f64>, fair: Fairness) -> Trend {
    match &e.kind {
        ExprKind::Number(x) => Trend::Same(Some(*x)),
        ExprKind::Name(id) => match id.name.as_str() {
            "waited" => Trend::Anti,
            "arrival" | "serial" | "enqueued" => Trend::Ages,
            "now" => Trend::Same(None),
            // R30: the holds of one group share their counter, and a group that is
            // served at positive prices rises past a waiting group's (an arrival is
            // lifted to the least waiting counter), so the next key decides.
            "service" if fair == Fairness::Charging => Trend::Same(None),
            name => match values.get(name) {
                Some(x) => Trend::Same(Some(*x)),
                // Attributes and the hold's own sizes.
                None => Trend::Bounded,
            },
        },
        // A query (`free(kv)`, `queued(kv)`, `residents(S)`, …) is one value at a
        // selection; a built-in function of parts is bounded when they are.
        ExprKind::Call(f, _) if QueryKind::from_name(&f.name).is_some() => Trend::Same(None),
        ExprKind::Call(_, args) | ExprKind::Draw(args) => bounded_of(
            &args
                .iter()
                .map(|a| trend(a, values, fair))
                .collect::<Vec<_>>(),
        ),
        ExprKind::Index(..) => Trend::Same(None),
        ExprKind::Unary(UnaryOp::Neg, a) => neg(trend(a, values, fair)),
        ExprKind::Unary(UnaryOp::Not, a) => bounded_of(&[trend(a, values, fair)]),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (trend(a, values, fair), trend(b, values, fair));
            match op {
                BinaryOp::Add => add(x, y),
                BinaryOp::Sub => add(x, neg(y)),
                BinaryOp::Mul => mul(x, y),
                BinaryOp::Div => match y {
                    Trend::Same(Some(c)) if c != 0.0 => scale(1.0 / c, x),
                    _ => mul(x, bounded_of(&[y])),
                },
                _ => bounded_of(&[x, y]),
            }
        }
        ExprKind::Conditional(c, a, b) => bounded_of(&[
            trend(c, values, fair),
            trend(a, values, fair),
            trend(b, values, fair),
        ]),
    }
}

/// Whether a pool's `fair` charges every take something (R30 with both prices > 0):
/// only then does a served group's counter rise past a waiting one's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fairness {
    Charging,
    NotCharging,
}

fn fairness(pool: &PoolDecl, values: &BTreeMap<&str, f64>) -> Fairness {
    let positive = |e: &Expr| matches!(trend(e, values, Fairness::NotCharging), Trend::Same(Some(x)) if x > 0.0);
    let charging = pool.options.iter().any(|o| {
        matches!(&o.kind, PoolOptionKind::Fair(f) if positive(&f.prefill) && positive(&f.decode))
    });
    if charging {
        Fairness::Charging
    } else {
        Fairness::NotCharging
    }
}

/// R28: the first queue key that can tell two holds apart must age, or a steady
/// stream of newcomers that beat a hold on it holds that hold back forever.
fn queue_can_starve(
    pool: &str,
    keys: &[Expr],
    values: &BTreeMap<&str, f64>,
    fair: Fairness,
) -> Option<Diagnostic> {
    for (i, key) in keys.iter().enumerate() {
        let why = match trend(key, values, fair) {
            Trend::Same(_) => continue,
            Trend::Ages => return None,
            Trend::Bounded => {
                "a newcomer with a smaller value is selected first however long a hold has waited"
            }
            Trend::Anti => "it grows as a hold waits, so newcomers are selected first",
            Trend::Unknown => "R28 cannot show that waiting ever brings a hold ahead on it",
        };
        let earlier = if i == 0 {
            "no key before it".to_string()
        } else {
            "the keys before it are equal for every hold".to_string()
        };
        return Some(
            Diagnostic::warning(
                "R28",
                format!("the waiting queue of pool `{pool}` can hold a session back forever"),
            )
            .primary(key.span, why)
            .note(format!(
                "{earlier}, and this key does not age: under a steady stream of sessions \
                 that beat a waiting one on it, the waiting one is never selected (R8 selects \
                 the least keys)"
            ))
            .note(
                "make the first key that tells holds apart age: subtract a multiple of \
                 `waited` (`prompt - k * waited`), or add one of `arrival` or `serial`; \
                 strict priorities starve by design (vLLM's priority policy does), and then \
                 this warning is the expected one",
            ),
        );
    }
    None
}
