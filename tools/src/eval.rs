//! The library side of `poolc eval`: evaluates the expressions of one site of one
//! pool (its queue keys, evict keys, preempt keys, route keys, spill `when` predicate or
//! spill `work`, or a stage's `time`) on inputs named as the source names them, with the JIT or the
//! reference interpreter, so that a person can check a policy by hand and the two
//! backends can be compared from the command line. It builds the row and ctx from
//! the site's slot layout; it never prints ([`render`] formats each value with
//! `{:?}`, which parses back to the same f64: `NaN`, `inf`, `-inf`, `-0.0`; the CLI
//! prints it).
//!
//! Input names: session attributes (`prompt`, `serial`, `arrival`, …), context
//! variables (`units`, `reserve`, `computed`, `waited`, `now`, `size`, `age`, `last`,
//! `waiting`, `tokens`, `prefill`, `decode`, `residents`) and queries written as in
//! the source (`free(kv)`, `budget_left(engine)`, `queued(q[1])`). An attribute not
//! given takes its session default; anything else the site reads must be given.
//!
//! A stage's `time` reads the iteration's totals, and inside `sum(…)` the values of
//! each session taking tokens (R29): eval evaluates it for an iteration of **one**
//! session, whose take row holds the same names' values (`tokens`, `prefill`,
//! `decode`, `computed`, `context`, its attributes), so `sum(e)` is `e` of them.
//!
//! Derived names: the IR stores `waited` as `now − enqueued` and `age` as
//! `now − last`. Given `waited=W` without `now`, eval sets `now = W` and
//! `enqueued = 0`, so the key sees `waited` exactly W (also for inf and NaN); with
//! `now` given too, `enqueued = now − W`. Likewise `age=A` sets `now = A` and
//! `last = 0` when neither `now` nor `last` is given, `last = now − A` when `now`
//! is given, and `now = last + A` when only `last` is given.

use std::collections::BTreeMap;
use std::fmt;

use poolc::assign::AssignmentError;
use poolc::codegen::Compiled;
use poolc::interp;
use poolc::ir::{
    self, Evict, Expr, Input, Layout, Member, PoolId, PreemptMode, Program, Query, QueryKind,
    QueryTarget, QueuePolicy, Read, ReadSet, SiteExpr, Slot, StageId, Var,
};

/// Which expressions of a pool (or stage) to evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// `queue by (…)`: one value per key, on the queue layout.
    Queue,
    /// `evict by (…)`: one value per key, on the entry layout.
    Evict,
    /// `preempt by (…)`: one value per key, on the resident layout (R18).
    Preempt,
    /// The spill `when (…)` predicate.
    Pred,
    /// The spill `(…)` work expression.
    Work,
    /// A stage's `time (…)`; the name given is a stage's.
    Time,
    /// `route by (…)` (R22): one value per key for one member, on the route layout.
    Route,
    /// A `handoff`'s work (R26), on the handoff layout.
    Handoff,
}

impl Site {
    pub const ALL: [Site; 8] = [
        Site::Queue,
        Site::Evict,
        Site::Preempt,
        Site::Pred,
        Site::Work,
        Site::Time,
        Site::Route,
        Site::Handoff,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Site::Queue => "queue",
            Site::Evict => "evict",
            Site::Preempt => "preempt",
            Site::Pred => "pred",
            Site::Work => "work",
            Site::Time => "time",
            Site::Route => "route",
            Site::Handoff => "handoff",
        }
    }

    pub fn from_name(name: &str) -> Result<Site, EvalError> {
        Site::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| EvalError::UnknownSite(name.to_string()))
    }
}

/// Which evaluator computes the values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// The compiled functions of [`Compiled`].
    #[default]
    Jit,
    /// `interp::eval` on the IR expressions.
    Interp,
}

/// Why a site could not be evaluated; each is a sentence for the person at the
/// command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    UnknownPool {
        name: String,
        known: Vec<String>,
    },
    UnknownStage {
        name: String,
        known: Vec<String>,
    },
    UnknownSite(String),
    /// The pool has no such expressions (`queue fifo`, `evict lru`, no `spill`).
    SiteAbsent {
        pool: String,
        site: Site,
        why: &'static str,
    },
    UnknownInput(String),
    /// `NAME=VALUE` that does not parse.
    BadInput(AssignmentError),
    /// Names the site reads that were not given and have no default.
    MissingInputs {
        site: Site,
        names: Vec<String>,
    },
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::UnknownPool { name, known } => {
                write!(f, "no pool named `{name}`; the pools are: {}", list(known))
            }
            EvalError::UnknownStage { name, known } => {
                write!(
                    f,
                    "no stage named `{name}`; the stages are: {}",
                    list(known)
                )
            }
            EvalError::UnknownSite(s) => write!(
                f,
                "unknown site `{s}`; expected one of queue, evict, preempt, pred, work, time, route, handoff"
            ),
            EvalError::SiteAbsent { pool, site, why } => {
                write!(f, "pool `{pool}` has no {} expressions: {why}", site.name())
            }
            EvalError::UnknownInput(name) => write!(
                f,
                "unknown input `{name}`: not a session attribute, a context variable or a \
                 query such as `free(POOL)`"
            ),
            EvalError::BadInput(e) => write!(f, "bad input: {e}"),
            EvalError::MissingInputs { site, names } => write!(
                f,
                "the {} site reads {} without a default; give {}",
                site.name(),
                list(names),
                names
                    .iter()
                    .map(|n| format!("{n}=VALUE"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }
}

impl std::error::Error for EvalError {}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Parses one `NAME=VALUE` input, by the rule `--set` follows too
/// ([`poolc::assign`]).
pub fn parse_input(text: &str) -> Result<(String, f64), EvalError> {
    poolc::assign::parse_assignment(text).map_err(EvalError::BadInput)
}

/// Evaluates the expressions of `site` of the pool (or, for [`Site::Time`], the
/// stage) named `name`, in source order: one value per key, or one value.
pub fn eval_site(
    compiled: &Compiled,
    name: &str,
    site: Site,
    inputs: &[(String, f64)],
    backend: Backend,
) -> Result<Vec<f64>, EvalError> {
    let program = compiled.program();
    let target = SiteRef::find(program, name, site)?;
    let given = Given::new(program, inputs)?;
    let (layout, exprs) = target.parts(program);
    let (row, ctx) = given.fill(program, site, layout, exprs)?;
    let values = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| match (backend, target) {
            (Backend::Interp, SiteRef::Stage(_)) => {
                interp::eval_time(&e.expr, one_take(&row), &ctx)
            }
            (Backend::Interp, SiteRef::Pool(..)) => interp::eval(&e.expr, &row, &ctx),
            (Backend::Jit, _) => target.jit(compiled, i, &row, &ctx),
        })
        .collect();
    Ok(values)
}

/// The take table of an iteration of one session, whose row is `row`.
fn one_take(row: &[f64]) -> interp::Takes<'_> {
    interp::Takes {
        rows: row,
        n: 1,
        stride: row.len(),
    }
}

/// One site of one declaration, resolved.
#[derive(Clone, Copy, Debug)]
enum SiteRef {
    Pool(PoolId, Site),
    Stage(StageId),
}

impl SiteRef {
    fn find(program: &Program, name: &str, site: Site) -> Result<SiteRef, EvalError> {
        if site == Site::Time {
            let known = || program.stages.iter().map(|s| s.name.clone()).collect();
            let id = program
                .find_stage(name)
                .ok_or_else(|| EvalError::UnknownStage {
                    name: name.to_string(),
                    known: known(),
                })?;
            return Ok(SiteRef::Stage(id));
        }
        let known = || program.pools.iter().map(|p| p.name.clone()).collect();
        let id = program
            .find_pool(name)
            .ok_or_else(|| EvalError::UnknownPool {
                name: name.to_string(),
                known: known(),
            })?;
        let pool = program.pool(id);
        let absent = |why| EvalError::SiteAbsent {
            pool: pool.name.clone(),
            site,
            why,
        };
        match site {
            Site::Queue if matches!(pool.queue, QueuePolicy::Fifo) => {
                Err(absent("it queues fifo (enqueue order)"))
            }
            Site::Evict if matches!(pool.evict, Evict::Lru) => {
                Err(absent("it evicts lru (release time, then release order)"))
            }
            Site::Preempt if !matches!(pool.preempt, PreemptMode::By(_)) => {
                Err(absent("it preempts by no keys (`preempt none` or `lifo`)"))
            }
            Site::Pred | Site::Work if pool.spill.is_none() => Err(absent("it does not spill")),
            Site::Route if pool.route.is_none() => Err(absent("it has no `route by`")),
            Site::Handoff if pool.handoff.is_none() => Err(absent("it does not hand off")),
            _ => Ok(SiteRef::Pool(id, site)),
        }
    }

    /// The layout and the expressions of the site.
    fn parts(self, program: &Program) -> (&Layout, &[SiteExpr]) {
        match self {
            SiteRef::Stage(s) => {
                let (time, time_layout) = program.stage(s).time();
                (time_layout, std::slice::from_ref(time))
            }
            SiteRef::Pool(p, site) => {
                let pool = program.pool(p);
                let spill = || pool.spill.as_ref().expect("checked by SiteRef::find");
                match (site, &pool.queue, &pool.evict) {
                    (Site::Queue, QueuePolicy::By(keys), _) => (&pool.queue_layout, keys),
                    (Site::Evict, _, Evict::By(keys)) => (&pool.entry_layout, keys),
                    (Site::Preempt, _, _) => match &pool.preempt {
                        PreemptMode::By(keys) => (&pool.resident_layout, keys),
                        _ => unreachable!("SiteRef::find admits only sites the pool has"),
                    },
                    (Site::Pred, _, _) => (&pool.entry_layout, std::slice::from_ref(&spill().pred)),
                    (Site::Work, _, _) => (&pool.entry_layout, std::slice::from_ref(&spill().work)),
                    (Site::Route, _, _) => match &pool.route {
                        Some(r) => (&r.layout, r.keys.as_slice()),
                        None => unreachable!("SiteRef::find admits only sites the pool has"),
                    },
                    (Site::Handoff, _, _) => match &pool.handoff {
                        Some(h) => (&h.layout, std::slice::from_ref(&h.work)),
                        None => unreachable!("SiteRef::find admits only sites the pool has"),
                    },
                    _ => unreachable!("SiteRef::find admits only sites the pool has"),
                }
            }
        }
    }

    fn jit(self, compiled: &Compiled, i: usize, row: &[f64], ctx: &[f64]) -> f64 {
        let missing = "Compiled has a function for every site of its program";
        match self {
            SiteRef::Stage(s) => compiled.stage(s).time(ctx, row, 1),
            SiteRef::Pool(p, site) => {
                let policy = compiled.pool(p);
                match site {
                    Site::Queue => policy.queue.as_ref().expect(missing).key(i, row, ctx),
                    Site::Evict => policy.evict.as_ref().expect(missing).key(i, row, ctx),
                    Site::Preempt => policy.preempt.as_ref().expect(missing).key(i, row, ctx),
                    Site::Pred => policy.spill.as_ref().expect(missing).pred(row, ctx),
                    Site::Work => policy.spill.as_ref().expect(missing).work(row, ctx),
                    Site::Route => policy.route.as_ref().expect(missing).key(i, row, ctx),
                    Site::Handoff => policy.handoff.as_ref().expect(missing).work(row, ctx),
                    Site::Time => unreachable!("a pool site is never Time"),
                }
            }
        }
    }
}

/// What a name given on the command line sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Name {
    Attr(u32),
    Var(Var),
    /// A query, by kind, target declaration and explicit member (`None`: no index).
    Query(QueryKind, TargetName, Option<u32>),
    /// A route input written as the source writes it (`hit(kv)`, `min_of(queued(kv))`).
    Route(Input),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TargetName {
    Pool(u32),
    Stage(u32),
}

/// The inputs given, resolved, with the derived variables worked out.
struct Given {
    values: BTreeMap<Name, f64>,
    now: Option<f64>,
    enqueued: Option<f64>,
    last: Option<f64>,
}

impl Given {
    fn new(program: &Program, inputs: &[(String, f64)]) -> Result<Given, EvalError> {
        let mut values = BTreeMap::new();
        for (name, value) in inputs {
            values.insert(resolve(program, name)?, *value);
        }
        let var = |v: Var| values.get(&Name::Var(v)).copied();
        let (now_given, waited, age, last_given) = (
            var(Var::Now),
            var(Var::Waited),
            var(Var::Age),
            var(Var::Last),
        );
        // `now` first, then what is derived from it (see the module comment); when
        // `now` is itself derived from W or A, the derived slot is an exact 0.
        let now = now_given
            .or(waited)
            .or(age.map(|a| last_given.map_or(a, |l| l + a)));
        let enqueued = waited.map(|w| match now_given {
            Some(now) => now - w,
            None => 0.0,
        });
        let last = last_given.or_else(|| {
            age.map(|a| match (now_given, waited) {
                (None, None) => 0.0,
                _ => now.map_or(0.0, |now| now - a),
            })
        });
        Ok(Given {
            values,
            now,
            enqueued,
            last,
        })
    }

    /// The value of a layout input, if given or defaulted.
    fn value(&self, program: &Program, input: Input) -> Option<f64> {
        match input {
            Input::Attr(id) => self
                .values
                .get(&Name::Attr(id.0))
                .copied()
                .or(program.session.attr(id).default),
            Input::Var(Var::Now) => self.now,
            Input::Var(Var::Last) => self.last,
            Input::Var(v) => self.values.get(&Name::Var(v)).copied(),
            Input::Enqueued => self.enqueued,
            Input::Scored(_) | Input::Over(..) => self.values.get(&Name::Route(input)).copied(),
            Input::Query(q) => self
                .values
                .iter()
                .find(|(name, _)| query_matches(program, **name, q))
                .map(|(_, v)| *v),
        }
    }

    /// The row and ctx of the site: every slot the expressions read holds its value;
    /// slots they do not read hold NaN.
    fn fill(
        &self,
        program: &Program,
        site: Site,
        layout: &Layout,
        exprs: &[SiteExpr],
    ) -> Result<(Vec<f64>, Vec<f64>), EvalError> {
        let mut row = vec![f64::NAN; layout.row.len()];
        let mut ctx = vec![f64::NAN; layout.ctx.len()];
        let mut slots = Vec::new();
        for e in exprs {
            slots_of(&e.expr, &mut slots);
        }
        let mut reads = ReadSet::default();
        for e in exprs {
            reads.0.extend(e.reads.0.iter().copied());
        }
        let mut missing: Vec<String> = Vec::new();
        for slot in slots {
            let (input, place) = match slot {
                Slot::Row(i) => (layout.row.get(i as usize), row.get_mut(i as usize)),
                Slot::Ctx(i) => (layout.ctx.get(i as usize), ctx.get_mut(i as usize)),
            };
            let (Some(&input), Some(place)) = (input, place) else {
                // The compiler checked every slot against the layout already.
                unreachable!("slot {slot:?} outside its layout survived compilation");
            };
            match self.value(program, input) {
                Some(v) => *place = v,
                None => {
                    let name = source_name(program, input, &reads);
                    if !missing.contains(&name) {
                        missing.push(name);
                    }
                }
            }
        }
        if missing.is_empty() {
            Ok((row, ctx))
        } else {
            Err(EvalError::MissingInputs {
                site,
                names: missing,
            })
        }
    }
}

fn slots_of(expr: &Expr, out: &mut Vec<Slot>) {
    match expr {
        Expr::Slot(s) => {
            if !out.contains(s) {
                out.push(*s);
            }
        }
        _ => expr.children().into_iter().for_each(|x| slots_of(x, out)),
    }
}

/// The name a person should give for a missing input: what the source wrote, so a
/// key that reads `waited` asks for `waited`, not for `now` and `enqueued`.
fn source_name(program: &Program, input: Input, reads: &ReadSet) -> String {
    let reads_var = |v| reads.contains(Read::Var(v));
    match input {
        Input::Enqueued => "waited".to_string(),
        Input::Var(Var::Now) if !reads_var(Var::Now) && reads_var(Var::Waited) => "waited".into(),
        Input::Var(Var::Now) if !reads_var(Var::Now) && reads_var(Var::Age) => "age".into(),
        Input::Var(Var::Last) if !reads_var(Var::Last) && reads_var(Var::Age) => "age".into(),
        other => ir::input_name(program, other),
    }
}

/// Whether a query named on the command line is the query `q` of a layout: same
/// kind and declaration, and the same member (`P` also names member 0 of a family of
/// one, which the IR records as an explicit index).
fn query_matches(program: &Program, name: Name, q: Query) -> bool {
    let Name::Query(kind, target, index) = name else {
        return false;
    };
    let (same_decl, member, count) = match (target, q.target) {
        (TargetName::Pool(a), QueryTarget::Pool(b, m)) => (a == b.0, m, program.pool(b).count),
        (TargetName::Stage(a), QueryTarget::Stage(b, m)) => (a == b.0, m, program.stage(b).count),
        _ => return false,
    };
    let member_ok = match (index, member) {
        (None, Member::Same) => true,
        (None, Member::Index(0)) => count == 1,
        (Some(i), Member::Index(j)) => i == j,
        _ => false,
    };
    kind == q.kind && same_decl && member_ok
}

/// Resolves a command-line input name.
fn resolve(program: &Program, name: &str) -> Result<Name, EvalError> {
    if let Some(id) = program.session.find(name) {
        return Ok(Name::Attr(id.0));
    }
    if let Some(v) = Var::from_name(name) {
        return Ok(Name::Var(v));
    }
    let route_inputs = program
        .pools
        .iter()
        .filter_map(|p| p.route.as_ref())
        .flat_map(|r| r.layout.row.iter().chain(&r.layout.ctx));
    for &input in route_inputs {
        if matches!(input, Input::Scored(_) | Input::Over(..))
            && ir::input_name(program, input) == name
        {
            return Ok(Name::Route(input));
        }
    }
    parse_query(program, name).ok_or_else(|| EvalError::UnknownInput(name.to_string()))
}

/// `kind(decl)` or `kind(decl[i])`, whitespace already removed.
fn parse_query(program: &Program, text: &str) -> Option<Name> {
    let (kind, rest) = text.split_once('(')?;
    let inner = rest.strip_suffix(')')?;
    let kind = QueryKind::from_name(kind)?;
    let (decl, index) = match inner.split_once('[') {
        Some((decl, idx)) => (decl, Some(idx.strip_suffix(']')?.parse::<u32>().ok()?)),
        None => (inner, None),
    };
    let target = if kind.on_stage() {
        TargetName::Stage(program.find_stage(decl)?.0)
    } else {
        TargetName::Pool(program.find_pool(decl)?.0)
    };
    Some(Name::Query(kind, target, index))
}

/// The values one per line, each in Rust's `{:?}` form (which parses back to the
/// same f64).
pub fn render(values: &[f64]) -> String {
    values.iter().map(|v| format!("{v:?}\n")).collect()
}
