//! Semantic analysis: from a parsed `Spec` to the checked IR `Program`. It resolves
//! names (D7), evaluates constants and parameters with `--set` overrides (D1, D2),
//! checks values (D6) and options (D4, D5), lowers every expression at its site (S1,
//! E4, E6), joins families (K1–K3, in `joins.rs`) and lays out slots. It reports every
//! independent error it finds as a `Diagnostic`; it never prints and never panics on
//! user input.

// Indexing here is by sema's own symbol numbers (`Sym::Const(i)`, `Sym::Pool(i)`, …)
// into the tables `declare_names` built from the same spec: an index out of range is a
// broken invariant of this module, not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants). The
// workspace denies `indexing_slicing` elsewhere; this covers sema's submodules.
#![allow(clippy::indexing_slicing)]

mod errors;
mod expr;
mod fair;
mod joins;
mod lints;
mod names;
mod site;

pub use lints::lint;

use crate::Options;
use crate::diag::Diagnostic;
use crate::ir::{
    self, Attr, AttrId, Evict, Layout, Limit, LinkStage, NamedValue, Pool, PreemptMode, Program,
    QueuePolicy, QueueTie, Read, Requeue, Route, Session, SiteExpr, Stage, StepStage, Var,
};
use crate::syntax::Span;
use crate::syntax::ast::{
    self, Decl, PoolDecl, PoolOptionKind, SessionDecl, Spec, StageDecl, StageKind, StageOptionKind,
    ValueDecl,
};

use expr::Owner;
/// "Did you mean": the one near-miss rule of the project, for sema's names and for
/// every other place that names a thing the user may have mistyped (sweep grids).
pub use names::suggest;
use names::{Sym, Symbols};
use site::{Site, SiteBuilder};

/// Largest family a declaration may have: large enough for any deployment, small
/// enough that a typo cannot ask the runtime for billions of members.
const MAX_MEMBERS: f64 = 65_536.0;

/// The name that, as the last key of `queue by`, is the session's id (R21).
const SESSION_ID: &str = "id";

/// Largest integer every f64 holds exactly: caps and blocks above it would round.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// Most declarations a spec may make (constants, parameters, session attributes,
/// stages and pools together; docs/RELIABILITY.md, "Limits"): far above any real
/// spec, and it keeps sema's tables and the manifest small.
pub const MAX_DECLARATIONS: usize = 4096;

/// What `name` already is if no declaration may take it (D3): a built-in session
/// attribute or a context variable (`poolc fit` leaves such names to the site check
/// instead of making them unknowns).
pub fn reserved(name: &str) -> Option<&'static str> {
    if matches!(name, "serial" | "arrival") {
        Some("a built-in session attribute")
    } else if Var::from_name(name).is_some() {
        Some("a context variable")
    } else {
        None
    }
}

/// Whether a stage's `time` reads `name` as one of its inputs (S1: `tokens`,
/// `prefill`, `decode`, `residents`, `context`).
pub fn time_reads(name: &str) -> bool {
    Var::from_name(name).is_some_and(|v| Site::Time.reads_var(v))
}

/// Checks a spec and lowers it to IR, or returns every diagnostic found.
pub fn analyze(spec: &Spec, options: &Options) -> Result<Program, Vec<Diagnostic>> {
    let mut c = Checker::new(spec);
    c.declare_names();
    c.apply_overrides(options);
    let program = c.build();
    if c.diags.is_empty() {
        // Debug builds hold sema to the IR's contract where the IR leaves it.
        #[cfg(debug_assertions)]
        if let Err(e) = crate::ir::verify(&program) {
            return Err(vec![Diagnostic::new("verify", e.to_string())]);
        }
        Ok(program)
    } else {
        // Report in source order; diagnostics with no span (command line) come first.
        let mut diags = c.diags;
        diags.sort_by_key(|d| d.primary_span().map(|s| s.start));
        Err(diags)
    }
}

/// Evaluation state of one `const` or `param` (for D1 cycle detection).
#[derive(Clone, Copy, PartialEq)]
enum ValueState {
    Pending,
    InProgress,
    Done(f64),
    Failed,
}

pub(crate) struct Checker<'a> {
    consts: Vec<&'a ValueDecl>,
    params: Vec<&'a ValueDecl>,
    sessions: Vec<&'a SessionDecl>,
    stages: Vec<&'a StageDecl>,
    pools: Vec<&'a PoolDecl>,
    symbols: Symbols,
    const_state: Vec<ValueState>,
    param_state: Vec<ValueState>,
    /// Values given with `--set`, by param index.
    overrides: Vec<Option<f64>>,
    /// The chain of constants being evaluated, for naming a cycle.
    eval_stack: Vec<Sym>,
    attrs: Vec<Attr>,
    pool_counts: Vec<u32>,
    stage_counts: Vec<u32>,
    diags: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    fn new(spec: &'a Spec) -> Checker<'a> {
        let mut c = Checker {
            consts: Vec::new(),
            params: Vec::new(),
            sessions: Vec::new(),
            stages: Vec::new(),
            pools: Vec::new(),
            symbols: Symbols::default(),
            const_state: Vec::new(),
            param_state: Vec::new(),
            overrides: Vec::new(),
            eval_stack: Vec::new(),
            attrs: Vec::new(),
            pool_counts: Vec::new(),
            stage_counts: Vec::new(),
            diags: Vec::new(),
        };
        for d in &spec.decls {
            match d {
                Decl::Const(v) => c.consts.push(v),
                Decl::Param(v) => c.params.push(v),
                Decl::Session(s) => c.sessions.push(s),
                Decl::Stage(s) => c.stages.push(s),
                Decl::Pool(p) => c.pools.push(p),
            }
        }
        c.const_state = vec![ValueState::Pending; c.consts.len()];
        c.param_state = vec![ValueState::Pending; c.params.len()];
        c.overrides = vec![None; c.params.len()];
        c
    }

    fn error(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// D3, D7: every declared name, in source order of kinds that can clash.
    fn declare_names(&mut self) {
        let mut named: Vec<(&'a ast::Ident, Sym)> = Vec::new();
        named.extend(
            self.consts
                .iter()
                .enumerate()
                .map(|(i, v)| (&v.name, Sym::Const(i))),
        );
        named.extend(
            self.params
                .iter()
                .enumerate()
                .map(|(i, v)| (&v.name, Sym::Param(i))),
        );
        named.extend(
            self.stages
                .iter()
                .enumerate()
                .map(|(i, s)| (&s.name, Sym::Stage(i))),
        );
        named.extend(
            self.pools
                .iter()
                .enumerate()
                .map(|(i, p)| (&p.name, Sym::Pool(i))),
        );

        self.attrs = vec![
            Attr {
                name: "serial".into(),
                default: None,
                builtin: true,
            },
            Attr {
                name: "arrival".into(),
                default: None,
                builtin: true,
            },
        ];
        for a in [SessionBuiltin::Serial, SessionBuiltin::Arrival] {
            let id = a.id();
            let name = self.attrs[id.0 as usize].name.clone();
            // Built-ins are declared first, so this cannot clash.
            let _ = self.symbols.declare(&name, Sym::Attr(id), Span::default());
        }
        let sessions = self.sessions.clone();
        if let Some((first, rest)) = sessions.split_first() {
            for extra in rest {
                self.error(errors::second_session(first.span, extra.span));
            }
            for attr in &first.attrs {
                let id = AttrId(self.attrs.len() as u32);
                named.push((&attr.name, Sym::Attr(id)));
                self.attrs.push(Attr {
                    name: attr.name.name.clone(),
                    default: None,
                    builtin: false,
                });
            }
        }
        named.sort_by_key(|(id, _)| id.span.start);
        if let Some((first_past, _)) = named.get(MAX_DECLARATIONS) {
            self.error(errors::too_many_declarations(
                named.len(),
                MAX_DECLARATIONS,
                first_past.span,
            ));
        }
        for (id, sym) in named {
            if let Some(what) = reserved(&id.name) {
                self.error(errors::reserved_name(&id.name, id.span, what));
                continue;
            }
            if matches!(sym, Sym::Attr(_))
                && (crate::ir::Builtin::from_name(&id.name).is_some()
                    || crate::ir::QueryKind::from_name(&id.name).is_some())
            {
                self.error(errors::reserved_name(&id.name, id.span, "a function"));
                continue;
            }
            if let Err(first) = self.symbols.declare(&id.name, sym, id.span) {
                self.error(errors::duplicate_name(&id.name, first, id.span));
            }
        }
    }

    /// D2: `--set NAME=VALUE` replaces a parameter's value.
    fn apply_overrides(&mut self, options: &Options) {
        for (name, value) in &options.set {
            match self.symbols.get(name) {
                Some((Sym::Param(i), _)) => self.overrides[i] = Some(*value),
                Some((sym, span)) => self.error(errors::set_not_param(name, sym.describe(), span)),
                None => {
                    let params = self.symbols.names_where(|s| matches!(s, Sym::Param(_)));
                    let hint = suggest(name, params);
                    self.error(errors::set_unknown(name, hint));
                }
            }
        }
    }

    fn const_value(&mut self, i: usize) -> Option<f64> {
        self.value_of(Sym::Const(i))
    }

    fn param_value(&mut self, i: usize) -> Option<f64> {
        self.value_of(Sym::Param(i))
    }

    /// D1: evaluates a constant or parameter once, on demand, detecting cycles.
    fn value_of(&mut self, sym: Sym) -> Option<f64> {
        let (decl, state) = match sym {
            Sym::Const(i) => (self.consts[i], self.const_state[i]),
            Sym::Param(i) => (self.params[i], self.param_state[i]),
            _ => return None,
        };
        match state {
            ValueState::Done(v) => return Some(v),
            ValueState::Failed => return None,
            ValueState::InProgress => {
                self.report_cycle(sym);
                return None;
            }
            ValueState::Pending => {}
        }
        self.set_state(sym, ValueState::InProgress);
        self.eval_stack.push(sym);
        let computed = self.eval_const_expr(&decl.value);
        self.eval_stack.pop();
        let overridden = match sym {
            Sym::Param(i) => self.overrides[i],
            _ => None,
        };
        // A cycle marks its members Failed while they are on the stack; keep that.
        let still = match sym {
            Sym::Const(i) => self.const_state[i],
            Sym::Param(i) => self.param_state[i],
            _ => ValueState::Failed,
        };
        if still == ValueState::Failed {
            return None;
        }
        let result = overridden.or(computed);
        self.set_state(sym, result.map_or(ValueState::Failed, ValueState::Done));
        result
    }

    fn set_state(&mut self, sym: Sym, state: ValueState) {
        match sym {
            Sym::Const(i) => self.const_state[i] = state,
            Sym::Param(i) => self.param_state[i] = state,
            _ => {}
        }
    }

    fn report_cycle(&mut self, sym: Sym) {
        let start = self.eval_stack.iter().position(|s| *s == sym).unwrap_or(0);
        let members: Vec<Sym> = self.eval_stack[start..].to_vec();
        let names = members
            .iter()
            .map(|s| {
                let d = match s {
                    Sym::Const(i) => self.consts[*i],
                    Sym::Param(i) => self.params[*i],
                    _ => unreachable!("only constants and parameters are evaluated"),
                };
                (d.name.name.clone(), d.name.span)
            })
            .collect::<Vec<_>>();
        for s in members {
            self.set_state(s, ValueState::Failed);
        }
        self.error(errors::const_cycle(&names));
    }

    fn build(&mut self) -> Program {
        for i in 0..self.consts.len() {
            self.const_value(i);
        }
        for i in 0..self.params.len() {
            self.param_value(i);
        }
        if let Some(session) = self.sessions.first().copied() {
            for (k, attr) in session.attrs.iter().enumerate() {
                if let Some(d) = &attr.default {
                    let v = self.eval_const_expr(d);
                    self.attrs[k + 2].default = v;
                }
            }
        }
        self.stage_counts = self
            .stages
            .iter()
            .map(|s| s.count.as_ref())
            .collect::<Vec<_>>()
            .into_iter()
            .map(|c| self.family_count(c))
            .collect();
        self.pool_counts = self
            .pools
            .iter()
            .map(|p| p.count.as_ref())
            .collect::<Vec<_>>()
            .into_iter()
            .map(|c| self.family_count(c))
            .collect();
        let stages = (0..self.stages.len())
            .map(|i| self.build_stage(i))
            .collect();
        let pools: Vec<Pool> = (0..self.pools.len()).map(|i| self.build_pool(i)).collect();
        self.check_spill_cycles(&pools);
        self.check_route_entry(&pools);
        self.check_handoffs(&pools);
        let mut values = Vec::new();
        for (i, d) in self.consts.iter().enumerate() {
            if let ValueState::Done(v) = self.const_state[i] {
                values.push((
                    d.span.start,
                    NamedValue {
                        name: d.name.name.clone(),
                        value: v,
                        is_param: false,
                    },
                ));
            }
        }
        for (i, d) in self.params.iter().enumerate() {
            if let ValueState::Done(v) = self.param_state[i] {
                values.push((
                    d.span.start,
                    NamedValue {
                        name: d.name.name.clone(),
                        value: v,
                        is_param: true,
                    },
                ));
            }
        }
        values.sort_by_key(|(start, _)| *start);
        Program {
            values: values.into_iter().map(|(_, v)| v).collect(),
            session: Session {
                attrs: self.attrs.clone(),
            },
            stages,
            pools,
        }
    }

    /// D6: an array size is an integer ≥ 1.
    fn family_count(&mut self, count: Option<&ast::Expr>) -> u32 {
        let Some(e) = count else { return 1 };
        let Some(v) = self.eval_const_expr(e) else {
            return 1;
        };
        if v.fract() == 0.0 && (1.0..=MAX_MEMBERS).contains(&v) {
            v as u32
        } else {
            self.error(errors::bad_value(
                "an array size",
                "an integer from 1 to 65536",
                v,
                e.span,
            ));
            1
        }
    }

    /// D6: an integer ≥ 1, or `inf` where `inf` says it may be.
    fn limit(&mut self, e: &ast::Expr, what: &str, inf: Inf) -> Option<Limit> {
        let v = self.eval_const_expr(e)?;
        if inf == Inf::Allowed && v == f64::INFINITY {
            return Some(Limit::Unbounded);
        }
        if v.fract() == 0.0 && (1.0..=MAX_EXACT).contains(&v) {
            return Some(Limit::Finite(v as u64));
        }
        if v.fract() == 0.0 && v > MAX_EXACT && v.is_finite() {
            self.error(errors::too_large(what, v, e.span));
            return None;
        }
        let must = match inf {
            Inf::Allowed => "an integer ≥ 1 or `inf`",
            Inf::Refused => "an integer ≥ 1",
        };
        self.error(errors::bad_value(what, must, v, e.span));
        None
    }

    fn build_stage(&mut self, i: usize) -> Stage {
        let decl = self.stages[i];
        let kind_name = match decl.kind {
            StageKind::Step => "step",
            StageKind::Link => "link",
        };
        // Options of the other kind are refused below, so only the declared kind's
        // options are ever set.
        let mut step = StepStage::default();
        let mut link = LinkStage::default();
        let mut seen: Vec<(&'static str, Span)> = Vec::new();
        let mut time_builder = SiteBuilder::new(Site::Time);
        for opt in &decl.options {
            let (key, for_step) = match &opt.kind {
                StageOptionKind::Budget(_) => ("budget", true),
                StageOptionKind::Seats(_) => ("seats", true),
                StageOptionKind::Chunk(_) => ("chunk", true),
                StageOptionKind::ServeExclusivePrefill => ("serve exclusive prefill", true),
                StageOptionKind::Time(_) => ("time", true),
                StageOptionKind::Rate(_) => ("rate", false),
            };
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                self.error(errors::repeated_option(key, *first, opt.span));
                continue;
            }
            seen.push((key, opt.span));
            if for_step != (decl.kind == StageKind::Step) {
                self.error(errors::wrong_stage_option(
                    key,
                    &decl.name.name,
                    kind_name,
                    opt.span,
                ));
                continue;
            }
            match &opt.kind {
                StageOptionKind::Budget(e) => {
                    step.budget = self
                        .limit(e, "`budget`", Inf::Allowed)
                        .unwrap_or(step.budget)
                }
                StageOptionKind::Seats(e) => {
                    step.seats = self.limit(e, "`seats`", Inf::Allowed).unwrap_or(step.seats)
                }
                StageOptionKind::Chunk(e) => {
                    step.chunk = self.limit(e, "`chunk`", Inf::Allowed).unwrap_or(step.chunk)
                }
                StageOptionKind::ServeExclusivePrefill => step.exclusive_prefill = true,
                StageOptionKind::Time(e) => {
                    if let Some(expr) = self.lower(e, &mut time_builder, None) {
                        step.time = SiteExpr {
                            expr,
                            reads: time_builder.take_reads(),
                        };
                    }
                }
                StageOptionKind::Rate(e) => {
                    if let Some(v) = self.eval_const_expr(e) {
                        if v > 0.0 {
                            link.rate = v;
                        } else {
                            self.error(errors::bad_value("`rate`", "a number > 0", v, e.span));
                        }
                    }
                }
            }
        }
        let kind = match decl.kind {
            StageKind::Step => {
                let (layout, remap) = time_builder.finish();
                remap.apply(&mut step.time.expr);
                step.time_layout = layout;
                ir::StageKind::Step(step)
            }
            StageKind::Link => ir::StageKind::Link(link),
        };
        Stage {
            name: decl.name.name.clone(),
            count: self.stage_counts[i],
            kind,
        }
    }

    fn build_pool(&mut self, i: usize) -> Pool {
        let decl = self.pools[i];
        let count = self.pool_counts[i];
        let owner = Owner {
            name: &decl.name.name,
            count,
            span: decl.name.span,
        };
        let mut pool = Pool {
            name: decl.name.name.clone(),
            count,
            cap: Limit::Unbounded,
            block: None,
            evict: Evict::Lru,
            preempt: PreemptMode::None,
            requeue: Requeue::Head,
            queue: QueuePolicy::Fifo,
            queue_tie: QueueTie::Enqueue,
            spill: None,
            admit_via: None,
            queue_layout: Layout::default(),
            entry_layout: Layout::default(),
            resident_layout: Layout::default(),
            route: None,
            handoff: None,
            fair: None,
        };
        let mut queue_b = SiteBuilder::new(Site::Queue);
        let mut entry_b = SiteBuilder::new(Site::Evict);
        let mut resident_b = SiteBuilder::new(Site::Preempt);
        let mut seen: Vec<(&'static str, Span)> = Vec::new();
        // The span of a `preempt lifo` or `preempt by`, for K3.
        let mut victim_span = None;
        // The span of `route by`, for R22.
        let mut route_span = None;
        // The spans of `fair` and `queue by`, for R30.
        let (mut fair_span, mut queue_span) = (None, None);
        for opt in &decl.options {
            let key = match &opt.kind {
                PoolOptionKind::Cap(_) => "cap",
                PoolOptionKind::Block(_) => "block",
                PoolOptionKind::EvictLru | PoolOptionKind::EvictBy(_) => "evict",
                PoolOptionKind::PreemptNone
                | PoolOptionKind::PreemptLifo
                | PoolOptionKind::PreemptBy(_) => "preempt",
                PoolOptionKind::RequeueKeyed => "requeue",
                PoolOptionKind::QueueFifo | PoolOptionKind::QueueBy(_) => "queue",
                PoolOptionKind::AdmitVia(_) => "admit via",
                PoolOptionKind::Spill(_) => "spill",
                PoolOptionKind::Route(_) => "route",
                PoolOptionKind::Handoff(_) => "handoff",
                PoolOptionKind::Fair(_) => "fair",
            };
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                self.error(errors::repeated_option(key, *first, opt.span));
                continue;
            }
            seen.push((key, opt.span));
            match &opt.kind {
                PoolOptionKind::Cap(e) => {
                    pool.cap = self.limit(e, "`cap`", Inf::Allowed).unwrap_or(pool.cap)
                }
                PoolOptionKind::Block(e) => {
                    pool.block = match self.limit(e, "`block`", Inf::Refused) {
                        Some(Limit::Finite(n)) => Some(n),
                        _ => None,
                    }
                }
                PoolOptionKind::EvictLru => pool.evict = Evict::Lru,
                PoolOptionKind::EvictBy(keys) => {
                    entry_b.site = Site::Evict;
                    pool.evict = Evict::By(self.lower_keys(keys, &mut entry_b, owner));
                }
                PoolOptionKind::PreemptNone => pool.preempt = PreemptMode::None,
                PoolOptionKind::PreemptLifo => {
                    pool.preempt = PreemptMode::Lifo;
                    victim_span = Some(("lifo", opt.span));
                }
                PoolOptionKind::PreemptBy(keys) => {
                    pool.preempt = PreemptMode::By(self.lower_keys(keys, &mut resident_b, owner));
                    victim_span = Some(("by", opt.span));
                }
                PoolOptionKind::RequeueKeyed => pool.requeue = Requeue::Keyed,
                PoolOptionKind::QueueFifo => pool.queue = QueuePolicy::Fifo,
                PoolOptionKind::QueueBy(keys) => {
                    let (keys, tie) = self.queue_tie(keys);
                    pool.queue = QueuePolicy::By(self.lower_keys(keys, &mut queue_b, owner));
                    pool.queue_tie = tie;
                    queue_span = Some(opt.span);
                }
                PoolOptionKind::AdmitVia(stage) => pool.admit_via = self.admit_via(i, stage),
                PoolOptionKind::Spill(spill) => {
                    pool.spill = self.spill(i, spill, &mut entry_b, owner)
                }
                PoolOptionKind::Route(r) => {
                    pool.route = self.route(r, owner);
                    route_span = Some(opt.span);
                }
                PoolOptionKind::Handoff(h) => pool.handoff = self.handoff(i, h, owner),
                PoolOptionKind::Fair(f) => {
                    pool.fair = self.fair(f);
                    fair_span = Some(opt.span);
                }
            }
        }
        if let (Some(span), None) = (fair_span, &pool.admit_via) {
            self.error(errors::fair_not_admitted(&decl.name.name, span));
        }
        if let (QueuePolicy::By(keys), None, Some(span)) = (&pool.queue, fair_span, queue_span)
            && keys
                .iter()
                .any(|k| k.reads.contains(Read::Var(Var::Service)))
        {
            self.error(errors::service_without_fair(&decl.name.name, span));
        }
        if let Some(span) = route_span {
            if pool.admit_via.is_none() {
                self.error(errors::route_not_entry(&decl.name.name, span));
            } else if count == 1 {
                self.error(errors::route_one_member(&decl.name.name, span));
            }
        }
        if let (Some((how, span)), None) = (victim_span, &pool.admit_via) {
            self.error(errors::preempt_without_admit(&decl.name.name, how, span));
        }
        let (layout, remap) = queue_b.finish();
        if let QueuePolicy::By(keys) = &mut pool.queue {
            keys.iter_mut().for_each(|k| remap.apply(&mut k.expr));
        }
        pool.queue_layout = layout;
        let (layout, remap) = entry_b.finish();
        if let Evict::By(keys) = &mut pool.evict {
            keys.iter_mut().for_each(|k| remap.apply(&mut k.expr));
        }
        if let Some(s) = &mut pool.spill {
            remap.apply(&mut s.work.expr);
            remap.apply(&mut s.pred.expr);
        }
        pool.entry_layout = layout;
        let (layout, remap) = resident_b.finish();
        if let PreemptMode::By(keys) = &mut pool.preempt {
            keys.iter_mut().for_each(|k| remap.apply(&mut k.expr));
        }
        pool.resident_layout = layout;
        pool
    }

    /// `route by (keys) [every T] [remember N];` (R22–R24), its keys on their own
    /// site (a row per member); `None` when an error was reported.
    fn route(&mut self, r: &ast::RouteClause, owner: Owner<'_>) -> Option<Route> {
        let mut b = SiteBuilder::new(Site::Route);
        let mut keys = self.lower_keys(&r.keys, &mut b, owner);
        let (layout, remap) = b.finish();
        keys.iter_mut().for_each(|k| remap.apply(&mut k.expr));
        let every = match &r.every {
            Some(e) => {
                let v = self.eval_const_expr(e)?;
                if !(v.is_finite() && v >= 0.0) {
                    self.error(errors::bad_value(
                        "`every`",
                        "a finite number of seconds ≥ 0",
                        v,
                        e.span,
                    ));
                    return None;
                }
                Some(v)
            }
            None => None,
        };
        let remember = match &r.remember {
            Some(e) => match self.limit(e, "`remember`", Inf::Refused)? {
                Limit::Finite(n) => n,
                Limit::Unbounded => return None,
            },
            None => ir::DEFAULT_REMEMBER,
        };
        (keys.len() == r.keys.len()).then_some(Route {
            keys,
            layout,
            every,
            remember,
        })
    }

    /// R21: a `queue by` list whose last key is the bare name `id` (when nothing is
    /// declared by that name) orders what its other keys leave tied by the sessions'
    /// ids; `id` alone has no keys to break the ties of (E5).
    fn queue_tie<'k>(&mut self, keys: &'k [ast::Expr]) -> (&'k [ast::Expr], QueueTie) {
        match keys.split_last() {
            Some((last, rest)) if self.is_session_id(last) => {
                if rest.is_empty() {
                    self.error(errors::id_without_keys(last.span));
                }
                (rest, QueueTie::Id)
            }
            _ => (keys, QueueTie::Enqueue),
        }
    }

    /// Whether `e` is the bare name `id` and names nothing declared (a declaration
    /// named `id` is that value, D7).
    pub(super) fn is_session_id(&self, e: &ast::Expr) -> bool {
        matches!(&e.kind, ast::ExprKind::Name(n) if n.name == SESSION_ID)
            && self.symbols.get(SESSION_ID).is_none()
    }

    fn lower_keys(
        &mut self,
        keys: &[ast::Expr],
        b: &mut SiteBuilder,
        owner: Owner<'_>,
    ) -> Vec<SiteExpr> {
        let mut out = Vec::new();
        for k in keys {
            if let Some(expr) = self.lower(k, b, Some(owner)) {
                out.push(SiteExpr {
                    expr,
                    reads: b.take_reads(),
                });
            } else {
                b.take_reads();
            }
        }
        out
    }
}

/// Whether a whole-number option may be `inf` (D6): limits (`cap`, `budget`, `seats`,
/// `chunk`) may be unbounded, a `block` size may not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inf {
    Allowed,
    Refused,
}

/// The built-in attributes, in their fixed slots.
#[derive(Clone, Copy)]
enum SessionBuiltin {
    Serial,
    Arrival,
}

impl SessionBuiltin {
    fn id(self) -> AttrId {
        match self {
            SessionBuiltin::Serial => Session::SERIAL,
            SessionBuiltin::Arrival => Session::ARRIVAL,
        }
    }
}
