//! Every semantic diagnostic's wording, in one file, so messages stay consistent and
//! the error catalogue in docs/LANGUAGE.md can be checked against one place. Each
//! function builds a `Diagnostic`; none decides whether an error occurred.

use crate::diag::Diagnostic;
use crate::syntax::Span;

/// Formats an evaluated value the way a user would write it.
pub fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-inf".to_string()
    } else {
        format!("{v}")
    }
}

pub fn with_suggestion(d: Diagnostic, suggestion: Option<&str>) -> Diagnostic {
    match suggestion {
        Some(s) => d.note(format!("did you mean `{s}`?")),
        None => d,
    }
}

pub fn duplicate_name(name: &str, first: Span, second: Span) -> Diagnostic {
    Diagnostic::new("D7", format!("`{name}` is declared twice"))
        .primary(second, "declared again here")
        .secondary(first, "first declared here")
        .note("pools, stages, constants, parameters and session attributes share one namespace")
}

pub fn reserved_name(name: &str, span: Span, what: &str) -> Diagnostic {
    Diagnostic::new("D3", format!("`{name}` is {what} and cannot be declared"))
        .primary(span, format!("`{name}` is {what}"))
}

pub fn too_many_declarations(found: usize, limit: usize, first_past: Span) -> Diagnostic {
    Diagnostic::new(
        "limit",
        format!("the spec makes {found} declarations; at most {limit} are allowed"),
    )
    .primary(
        first_past,
        format!("declaration {} is one too many", limit + 1),
    )
    .note("constants, parameters, session attributes, stages and pools count together")
}

pub fn second_session(first: Span, second: Span) -> Diagnostic {
    Diagnostic::new("D3", "a spec has at most one `session` block")
        .primary(second, "second `session` block")
        .secondary(first, "first `session` block")
}

pub fn const_cycle(names: &[(String, Span)]) -> Diagnostic {
    let mut chain: Vec<String> = names.iter().map(|(n, _)| format!("`{n}`")).collect();
    if let Some(first) = chain.first().cloned() {
        chain.push(first);
    }
    let mut d = Diagnostic::new("D1", format!("constant cycle: {}", chain.join(" → ")));
    for (i, (n, span)) in names.iter().enumerate() {
        d = if i == 0 {
            d.primary(*span, format!("`{n}` depends on itself through this cycle"))
        } else {
            d.secondary(*span, format!("`{n}` is part of the cycle"))
        };
    }
    d
}

pub fn set_unknown(name: &str, suggestion: Option<&str>) -> Diagnostic {
    with_suggestion(
        Diagnostic::new(
            "D2",
            format!("`--set {name}=…`: there is no parameter named `{name}`"),
        ),
        suggestion,
    )
}

pub fn set_not_param(name: &str, what: &str, decl: Span) -> Diagnostic {
    Diagnostic::new(
        "D2",
        format!("`--set {name}=…`: `{name}` is {what}, and only a `param` can be set"),
    )
    .primary(decl, format!("`{name}` is declared here"))
    .note("declare it with `param` to make it overridable")
}

pub fn repeated_option(option: &str, first: Span, second: Span) -> Diagnostic {
    Diagnostic::new("D5", format!("the `{option}` option is given twice"))
        .primary(second, "given again here")
        .secondary(first, "first given here")
}

pub fn bad_value(what: &str, must: &str, v: f64, span: Span) -> Diagnostic {
    Diagnostic::new(
        "D6",
        format!("{what} must be {must}, but it evaluates to {}", value(v)),
    )
    .primary(span, format!("this evaluates to {}", value(v)))
}

/// D6 past the limit of docs/RELIABILITY.md: an integer too large to be exact.
pub fn too_large(what: &str, v: f64, span: Span) -> Diagnostic {
    Diagnostic::new(
        "D6",
        format!(
            "{what} must be at most 2^53 (9007199254740992), the largest integer every \
             count stays exact at, but it evaluates to {}",
            value(v)
        ),
    )
    .primary(span, format!("this evaluates to {}", value(v)))
}

pub fn wrong_stage_option(option: &str, stage: &str, kind: &str, span: Span) -> Diagnostic {
    let other = if kind == "step" { "link" } else { "step" };
    Diagnostic::new(
        "D4",
        format!("`{option}` is an option of {other} stages, but `{stage}` is a {kind} stage"),
    )
    .primary(span, format!("not allowed in a {kind} stage"))
}

pub fn unknown_name(name: &str, span: Span, suggestion: Option<&str>) -> Diagnostic {
    with_suggestion(
        Diagnostic::new("name", format!("unknown name `{name}`")).primary(span, "not declared"),
        suggestion,
    )
}

/// R21: `id` is text; it orders only as the last key of `queue by`.
pub fn id_not_a_number(site: &str, span: Span) -> Diagnostic {
    Diagnostic::new("E5", "`id` is the session's id, text, not a number")
        .primary(span, format!("{site} compute with numbers"))
        .note("`id` may only be the last key of `queue by`, after at least one other key: `queue by (priority, arrival, id)` (R21)")
}

/// R21: `queue by (id)` has no keys whose ties `id` would break.
pub fn id_without_keys(span: Span) -> Diagnostic {
    Diagnostic::new(
        "E5",
        "`id` breaks the ties of the keys before it, and there are none",
    )
    .primary(span, "the only key")
    .note("give at least one key first, e.g. `queue by (arrival, id)` (R21)")
}

pub fn not_a_value(name: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::new("name", format!("`{name}` is {what}, not a value"))
        .primary(span, format!("`{name}` is {what}"))
        .note(if what == "a stage" {
            format!("a stage can be the argument of a query, e.g. `residents({name})`")
        } else {
            format!("a pool can be the argument of a query, e.g. `free({name})`")
        })
}

pub fn member_outside_query(name: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "E6",
        format!("`{name}[…]` names a member of a family, not a value"),
    )
    .primary(span, "only a query can take a family member")
    .note(format!("e.g. `free({name}[0])`"))
}

pub fn forbidden_read(site: &str, what: &str, span: Span, may_read: &str) -> Diagnostic {
    Diagnostic::new("S1", format!("{site} may not read {what}"))
        .primary(span, "not readable here")
        .note(format!("{site} may read: {may_read}"))
}

pub fn draw_forbidden(site: &str, span: Span, may_read: &str) -> Diagnostic {
    Diagnostic::new("S1", format!("{site} may not draw"))
        .primary(span, "`draw` samples a random value")
        .note(format!("{site} may read: {may_read}"))
        .note("no pool expression may draw (E7)")
}

pub fn unknown_function(name: &str, span: Span, suggestion: Option<&str>) -> Diagnostic {
    with_suggestion(
        Diagnostic::new("E4", format!("unknown function `{name}`"))
            .primary(span, "not a built-in function or query"),
        suggestion,
    )
    .note("functions: min, max, abs, floor, ceil, sqrt; queries: free, used, cached, cap, queued, budget_left, residents")
}

pub fn wrong_arity(name: &str, expected: &str, found: usize, span: Span) -> Diagnostic {
    let given = if found == 1 {
        "1 argument was given".to_string()
    } else {
        format!("{found} arguments were given")
    };
    Diagnostic::new("E4", format!("`{name}` takes {expected}, but {given}")).primary(
        span,
        format!("{found} argument{}", if found == 1 { "" } else { "s" }),
    )
}

pub fn query_argument(query: &str, expected: &str, span: Span, found: &str) -> Diagnostic {
    Diagnostic::new("E6", format!("`{query}` takes {expected}, but {found}"))
        .primary(span, format!("expected {expected}"))
}

pub fn index_out_of_range(name: &str, index: f64, count: u32, span: Span) -> Diagnostic {
    Diagnostic::new(
        "E6",
        format!(
            "index {} is out of range for `{name}`, which has {count} member{}",
            value(index),
            if count == 1 { "" } else { "s" }
        ),
    )
    .primary(
        span,
        format!("expected an integer from 0 to {}", count.saturating_sub(1)),
    )
}

pub fn count_mismatch(
    what: &str,
    (from, from_count, from_span): (&str, u32, Span),
    (to, to_count, to_span): (&str, u32, Span),
) -> Diagnostic {
    let members = |n: u32| {
        if n == 1 {
            "1 member".to_string()
        } else {
            format!("{n} members")
        }
    };
    Diagnostic::new(
        "K1",
        format!(
            "{what}: `{from}` has {} and `{to}` has {}; they cannot be joined",
            members(from_count),
            members(to_count)
        ),
    )
    .primary(from_span, format!("`{from}` declared with {} here", members(from_count)))
    .secondary(to_span, format!("`{to}` declared with {} here", members(to_count)))
    .note("families join member for member when their counts are equal, or through a family of one (K1)")
}

pub fn wrong_kind(
    clause: &str,
    expected: &str,
    name: &str,
    found: &str,
    span: Span,
    decl: Span,
) -> Diagnostic {
    Diagnostic::new(
        "K2",
        format!("`{clause}` needs {expected}, but `{name}` is {found}"),
    )
    .primary(span, format!("expected {expected}"))
    .secondary(decl, format!("`{name}` is declared here"))
}

pub fn spill_into_self(name: &str, span: Span) -> Diagnostic {
    Diagnostic::new("K2", format!("pool `{name}` cannot spill into itself"))
        .primary(span, "the tier must be another pool")
}

pub fn spill_cycle(names: &[(String, Span)]) -> Diagnostic {
    let mut chain: Vec<String> = names.iter().map(|(n, _)| format!("`{n}`")).collect();
    if let Some(first) = chain.first().cloned() {
        chain.push(first);
    }
    let mut d = Diagnostic::new("K2", format!("spill cycle: {}", chain.join(" → ")));
    for (i, (n, span)) in names.iter().enumerate() {
        d = if i == 0 {
            d.primary(*span, format!("`{n}` spills here"))
        } else {
            d.secondary(*span, format!("`{n}` spills here"))
        };
    }
    d.note("spilled blocks must end in a tier that spills no further")
}

/// K3: `preempt lifo` (R13) or `preempt by` (R18) without `admit via`.
pub fn preempt_without_admit(pool: &str, how: &str, span: Span) -> Diagnostic {
    let victims = match how {
        "lifo" => "lifo preempts the most recent resident",
        _ => "`preempt by` chooses its victim among the residents",
    };
    Diagnostic::new("K3", format!("`preempt {how}` in pool `{pool}` needs `admit via`"))
        .primary(span, "no step stage to take victims from")
        .note(format!("{victims} of the step stage the pool is admitted via; add `admit via STAGE;` or use `preempt none;`"))
}

pub fn not_a_family(name: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "E6",
        format!("`{name}` is {what}, not a family; it cannot be indexed"),
    )
    .primary(span, "only pools and stages have members")
}

pub fn scored_argument(function: &str, span: Span, routed: Option<&str>) -> Diagnostic {
    let d = Diagnostic::new(
        "E6",
        format!("`{function}` reads the member being scored of the routed family"),
    )
    .primary(span, "not the routed family's name");
    match routed {
        Some(p) => d.note(format!("write `{function}({p})` (R22)")),
        None => d.note("only `route by` keys score members (R22)"),
    }
}

pub fn over_argument(function: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "E6",
        format!("`{function}` ranges over the members: its argument must differ by member"),
    )
    .primary(span, "not a per-member value")
    .note(
        "give a query on the routed family (or a family joined to it member for member), or \
         `hit`, `tier_hit` or `routed` of it, e.g. `min_of(queued(kv))` (R22)",
    )
}

pub fn route_not_entry(pool: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R22",
        format!("`route by` in pool `{pool}`, which is not admitted via a step stage"),
    )
    .primary(span, "sessions arrive only at entry pools")
    .note("the entry pools are those with `admit via STAGE` of a step stage (docs/HOST.md)")
}

pub fn handoff_into_self(name: &str, span: Span) -> Diagnostic {
    Diagnostic::new("R25", format!("pool `{name}` cannot hand off to itself"))
        .primary(span, "the target must be another pool family")
}

pub fn handoff_not_entry(pool: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R25",
        format!("`handoff` in pool `{pool}`, which is not admitted via a step stage"),
    )
    .primary(
        span,
        "only a pool whose sessions compute their prompt here can hand them off",
    )
    .note("the prefill side is an entry pool: `admit via STAGE` of a step stage (R25)")
}

pub fn handoff_target(
    pool: &str,
    span: Span,
    target: &str,
    target_span: Span,
    why: &str,
) -> Diagnostic {
    Diagnostic::new(
        "R25",
        format!("pool `{pool}` hands off to pool `{target}`, which {why}"),
    )
    .primary(span, "the handoff")
    .secondary(target_span, format!("`{target}` is declared here"))
    .note("a handoff target is a pool family admitted via another step stage, that neither hands off nor spills (R25)")
}

pub fn route_one_member(pool: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R22",
        format!("`route by` in pool `{pool}`, a family of one: there is nothing to choose"),
    )
    .primary(span, "one member")
    .note("route over a family of several members, e.g. `pool kv[4]` with `stage engine[4]`")
}

pub fn route_other_entry(pool: &str, span: Span, other: &str, other_span: Span) -> Diagnostic {
    Diagnostic::new(
        "R22",
        format!("`route by` in pool `{pool}`, but pool `{other}` is an entry pool too"),
    )
    .primary(span, "routes over this family only")
    .secondary(other_span, "another entry pool")
    .note("a spec that routes has one entry family; sessions arrive there only (R22)")
}

/// R30: `fair` counts the tokens a step stage's iterations take.
pub fn fair_not_admitted(pool: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R30",
        format!("`fair` in pool `{pool}`, which is not admitted via a step stage"),
    )
    .primary(span, "no iteration takes tokens here to charge")
    .note("`fair` charges each take of a step stage's iterations: add `admit via STAGE;` (R30)")
}

/// R30: `service` is the counter `fair` keeps.
pub fn service_without_fair(pool: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R30",
        format!("the queue keys of pool `{pool}` read `service`, but the pool has no `fair`"),
    )
    .primary(span, "reads `service`")
    .note("declare whose service is counted and at what prices, e.g. `fair tenant (1, 2);` (R30)")
}

/// R30: `fair` groups sessions by an attribute's value.
pub fn fair_not_attr(name: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "R30",
        format!("`fair` needs a session attribute, but `{name}` is {what}"),
    )
    .primary(span, "not a session attribute")
    .note("declare it in `session { … }`, e.g. `session { tenant = 0; }` (R30)")
}
