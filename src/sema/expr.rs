//! Lowering one AST expression at one site to an IR expression: name resolution,
//! site checks (S1), queries and their joins (E6, K1), built-in arity (E4), and
//! constant folding. Errors are pushed to the checker and lowering continues where it
//! can, so one run reports every independent mistake.

use crate::interp;
use crate::ir::{BinaryOp, PoolId, StageId};
use crate::ir::{
    Builtin, Expr, Extreme, Input, Member, Probe, Query, QueryKind, QueryTarget, Read, Scored, Var,
};
use crate::syntax::Span;
use crate::syntax::ast::{self, ExprKind, StageKind};

use super::Checker;
use super::errors;
use super::names::{Sym, suggest};
use super::site::{Site, SiteBuilder};

/// The function a stage's `time` sums per-session terms with (R29).
const SUM: &str = "sum";

/// The family whose member evaluates an expression: queries without an index join to
/// it by K1.
#[derive(Clone, Copy)]
pub struct Owner<'a> {
    pub name: &'a str,
    pub count: u32,
    pub span: Span,
}

impl<'a> Checker<'a> {
    /// Lowers `e` at the builder's site; `None` when an error was reported.
    pub(super) fn lower(
        &mut self,
        e: &ast::Expr,
        b: &mut SiteBuilder,
        owner: Option<Owner<'_>>,
    ) -> Option<Expr> {
        let out = match &e.kind {
            ExprKind::Number(v) => Expr::Const(*v),
            ExprKind::Name(id) => self.lower_name(id, b)?,
            ExprKind::Index(id, _) => {
                match self.symbols.get(&id.name) {
                    Some((Sym::Pool(_) | Sym::Stage(_), _)) => {
                        self.error(errors::member_outside_query(&id.name, e.span))
                    }
                    Some((sym, _)) => {
                        self.error(errors::not_a_family(&id.name, sym.describe(), id.span))
                    }
                    None => {
                        let cand = self
                            .symbols
                            .names_where(|s| matches!(s, Sym::Pool(_) | Sym::Stage(_)));
                        self.error(errors::unknown_name(
                            &id.name,
                            id.span,
                            suggest(&id.name, cand),
                        ))
                    }
                }
                return None;
            }
            ExprKind::Draw(_) => {
                self.error(errors::draw_forbidden(
                    b.site.name(),
                    e.span,
                    b.site.may_read(),
                ));
                return None;
            }
            ExprKind::Call(f, args) => return self.lower_call(f, args, e.span, b, owner),
            ExprKind::Unary(op, a) => fold(Expr::Unary(*op, Box::new(self.lower(a, b, owner)?))),
            ExprKind::Binary(op, l, r) => {
                let l = self.lower(l, b, owner);
                let r = self.lower(r, b, owner);
                fold(Expr::Binary(*op, Box::new(l?), Box::new(r?)))
            }
            ExprKind::Conditional(c, t, f) => {
                let c = self.lower(c, b, owner);
                let t = self.lower(t, b, owner);
                let f = self.lower(f, b, owner);
                fold(Expr::Cond(Box::new(c?), Box::new(t?), Box::new(f?)))
            }
        };
        Some(out)
    }

    fn lower_name(&mut self, id: &ast::Ident, b: &mut SiteBuilder) -> Option<Expr> {
        let site = b.site;
        match self.symbols.get(&id.name) {
            Some((Sym::Const(i), _)) => self.const_value(i).map(Expr::Const),
            Some((Sym::Param(i), _)) => self.param_value(i).map(Expr::Const),
            Some((Sym::Attr(a), _)) => {
                if !site.reads_attrs() {
                    let what = format!("the session attribute `{}`", id.name);
                    self.error(errors::forbidden_read(
                        site.name(),
                        &what,
                        id.span,
                        site.may_read(),
                    ));
                    return None;
                }
                b.reads.insert(Read::Attr(a));
                Some(b.leaf(Input::Attr(a)))
            }
            Some((sym @ (Sym::Pool(_) | Sym::Stage(_)), _)) => {
                self.error(errors::not_a_value(&id.name, sym.describe(), id.span));
                None
            }
            None => match Var::from_name(&id.name) {
                Some(v) if site.reads_var(v) => {
                    b.reads.insert(Read::Var(v));
                    Some(match v {
                        Var::Waited => sub(b.leaf(Input::Var(Var::Now)), b.leaf(Input::Enqueued)),
                        Var::Age => {
                            sub(b.leaf(Input::Var(Var::Now)), b.leaf(Input::Var(Var::Last)))
                        }
                        v => b.leaf(Input::Var(v)),
                    })
                }
                Some(_) => {
                    let what = format!("the context variable `{}`", id.name);
                    self.error(errors::forbidden_read(
                        site.name(),
                        &what,
                        id.span,
                        site.may_read(),
                    ));
                    None
                }
                None if id.name == super::SESSION_ID => {
                    self.error(errors::id_not_a_number(site.name(), id.span));
                    None
                }
                None => {
                    let mut cand: Vec<&str> = self.symbols.names_where(|s| match s {
                        Sym::Const(_) | Sym::Param(_) => true,
                        Sym::Attr(_) => site.reads_attrs(),
                        Sym::Pool(_) | Sym::Stage(_) => false,
                    });
                    cand.extend(
                        Var::ALL
                            .iter()
                            .filter(|v| site.reads_var(**v))
                            .map(|v| v.name()),
                    );
                    let hint = suggest(&id.name, cand);
                    self.error(errors::unknown_name(&id.name, id.span, hint));
                    None
                }
            },
        }
    }

    fn lower_call(
        &mut self,
        f: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        b: &mut SiteBuilder,
        owner: Option<Owner<'_>>,
    ) -> Option<Expr> {
        if let Some(builtin) = Builtin::from_name(&f.name) {
            if !builtin.arity_ok(args.len()) {
                let expected = if builtin.is_variadic() {
                    "2 or more arguments"
                } else {
                    "1 argument"
                };
                self.error(errors::wrong_arity(&f.name, expected, args.len(), span));
                return None;
            }
            let lowered: Vec<Option<Expr>> = args.iter().map(|a| self.lower(a, b, owner)).collect();
            let lowered: Option<Vec<Expr>> = lowered.into_iter().collect();
            return Some(fold(Expr::Call(builtin, lowered?)));
        }
        if f.name == SUM {
            return self.lower_sum(f, args, span, b, owner);
        }
        if let Some(scored) = Scored::from_name(&f.name) {
            let [arg] = self.route_call(f, args, span, b)?;
            self.scored_family(f, arg, owner)?;
            b.reads.insert(Read::Scored(scored));
            return Some(b.leaf(Input::Scored(scored)));
        }
        if let Some(extreme) = Extreme::from_name(&f.name) {
            let [arg] = self.route_call(f, args, span, b)?;
            let probe = self.probe(&f.name, arg, owner)?;
            b.reads.insert(Read::Over(extreme, probe));
            return Some(b.leaf(Input::Over(extreme, probe)));
        }
        let Some(kind) = QueryKind::from_name(&f.name) else {
            let mut cand: Vec<&str> = Builtin::ALL.iter().map(|b| b.name()).collect();
            cand.push(SUM);
            cand.extend(QueryKind::ALL.iter().map(|q| q.name()));
            cand.extend(Scored::ALL.iter().map(|q| q.name()));
            cand.extend(Extreme::ALL.iter().map(|q| q.name()));
            self.error(errors::unknown_function(
                &f.name,
                f.span,
                suggest(&f.name, cand),
            ));
            return None;
        };
        let [arg] = args else {
            let expected = if kind.on_stage() {
                "1 argument (a step stage)"
            } else {
                "1 argument (a pool)"
            };
            self.error(errors::wrong_arity(&f.name, expected, args.len(), span));
            return None;
        };
        if !b.site.reads_queries() {
            self.forbid(b, &format!("queries such as `{}(…)`", f.name), span);
            return None;
        }
        let target = self.query_target(kind, arg, owner)?;
        let q = Query { kind, target };
        b.reads.insert(Read::Query(q));
        Some(b.leaf(Input::Query(q)))
    }

    /// `sum(e)` in a stage's `time` (R29): `e` lowered at the take site, whose
    /// inputs are row slots, then summed over the iteration's takes.
    fn lower_sum(
        &mut self,
        f: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
        b: &mut SiteBuilder,
        owner: Option<Owner<'_>>,
    ) -> Option<Expr> {
        if b.site != Site::Time {
            let what = if b.site == Site::Take {
                format!("`{}(…)`: sums do not nest", f.name)
            } else {
                format!("`{}(…)`", f.name)
            };
            self.forbid(b, &what, span);
            return None;
        }
        let [arg] = args else {
            self.error(errors::wrong_arity(&f.name, "1 argument", args.len(), span));
            return None;
        };
        b.site = Site::Take;
        let term = self.lower(arg, b, owner);
        b.site = Site::Time;
        Some(Expr::Sum(Box::new(term?)))
    }

    /// S1: the builder's site may not read `what`.
    fn forbid(&mut self, b: &SiteBuilder, what: &str, span: Span) {
        self.error(errors::forbidden_read(
            b.site.name(),
            what,
            span,
            b.site.may_read(),
        ));
    }

    /// The one argument of a function only route keys may call (R22): refused at any
    /// other site (S1) or with another number of arguments (E4).
    fn route_call<'e>(
        &mut self,
        f: &ast::Ident,
        args: &'e [ast::Expr],
        span: Span,
        b: &SiteBuilder,
    ) -> Option<[&'e ast::Expr; 1]> {
        if b.site != Site::Route {
            self.forbid(b, &format!("`{}(…)`", f.name), span);
            return None;
        }
        match args {
            [arg] => Some([arg]),
            _ => {
                self.error(errors::wrong_arity(&f.name, "1 argument", args.len(), span));
                None
            }
        }
    }

    /// `hit(P)`, `tier_hit(P)`, `routed(P)`: `P` must be the routed family by its bare
    /// name (E6), the member being scored.
    fn scored_family(
        &mut self,
        f: &ast::Ident,
        arg: &ast::Expr,
        owner: Option<Owner<'_>>,
    ) -> Option<()> {
        match (&arg.kind, owner) {
            (ExprKind::Name(id), Some(o)) if id.name == o.name => Some(()),
            _ => {
                self.error(errors::scored_argument(
                    &f.name,
                    arg.span,
                    owner.map(|o| o.name),
                ));
                None
            }
        }
    }

    /// The argument of `min_of`/`max_of`: a value that differs by member — a query
    /// joined member for member with the routed family, or a scored value (E6).
    fn probe(
        &mut self,
        function: &str,
        arg: &ast::Expr,
        owner: Option<Owner<'_>>,
    ) -> Option<Probe> {
        if let ExprKind::Call(g, gargs) = &arg.kind {
            if Scored::from_name(&g.name).is_some() {
                if let [a] = gargs.as_slice() {
                    self.scored_family(g, a, owner)?;
                    return Scored::from_name(&g.name).map(Probe::Scored);
                }
            } else if let (Some(kind), [a]) = (QueryKind::from_name(&g.name), gargs.as_slice()) {
                let target = self.query_target(kind, a, owner)?;
                if matches!(
                    target,
                    QueryTarget::Pool(_, Member::Same) | QueryTarget::Stage(_, Member::Same)
                ) {
                    return Some(Probe::Query(Query { kind, target }));
                }
            }
        }
        self.error(errors::over_argument(function, arg.span));
        None
    }

    fn query_target(
        &mut self,
        kind: QueryKind,
        arg: &ast::Expr,
        owner: Option<Owner<'_>>,
    ) -> Option<QueryTarget> {
        let expected = if kind.on_stage() {
            "a step stage"
        } else {
            "a pool"
        };
        let (id, index) = match &arg.kind {
            ExprKind::Name(id) => (id, None),
            ExprKind::Index(id, ix) => (id, Some(ix.as_ref())),
            _ => {
                self.error(errors::query_argument(
                    kind.name(),
                    expected,
                    arg.span,
                    "this is an expression",
                ));
                return None;
            }
        };
        let (sym, _) = match self.symbols.get(&id.name) {
            Some(s) => s,
            None => {
                let cand = self.symbols.names_where(|s| {
                    if kind.on_stage() {
                        matches!(s, Sym::Stage(_))
                    } else {
                        matches!(s, Sym::Pool(_))
                    }
                });
                self.error(errors::unknown_name(
                    &id.name,
                    id.span,
                    suggest(&id.name, cand),
                ));
                return None;
            }
        };
        let (name, count, decl_span) = match (sym, kind.on_stage()) {
            (Sym::Pool(i), false) => {
                let p = self.pools[i];
                (p.name.name.as_str(), self.pool_counts[i], p.name.span)
            }
            (Sym::Stage(i), true) if self.stages[i].kind == StageKind::Step => {
                let s = self.stages[i];
                (s.name.name.as_str(), self.stage_counts[i], s.name.span)
            }
            (Sym::Stage(_), true) => {
                self.error(errors::query_argument(
                    kind.name(),
                    expected,
                    id.span,
                    &format!("`{}` is a link stage", id.name),
                ));
                return None;
            }
            (other, _) => {
                self.error(errors::query_argument(
                    kind.name(),
                    expected,
                    id.span,
                    &format!("`{}` is {}", id.name, other.describe()),
                ));
                return None;
            }
        };
        let member = match index {
            Some(ix) => {
                let v = self.eval_const_expr(ix)?;
                if v.fract() != 0.0 || v < 0.0 || v >= f64::from(count) {
                    self.error(errors::index_out_of_range(name, v, count, ix.span));
                    return None;
                }
                Member::Index(v as u32)
            }
            None => {
                let (owner_name, owner_count, owner_span) = match owner {
                    Some(o) => (o.name, o.count, o.span),
                    None => ("", 1, id.span),
                };
                if count == owner_count {
                    Member::Same
                } else if count == 1 {
                    Member::Index(0)
                } else {
                    let what = format!("the query `{}({name})`", kind.name());
                    self.error(errors::count_mismatch(
                        &what,
                        (owner_name, owner_count, owner_span),
                        (name, count, decl_span),
                    ));
                    return None;
                }
            }
        };
        Some(match sym {
            Sym::Pool(i) => QueryTarget::Pool(PoolId(i as u32), member),
            Sym::Stage(i) => QueryTarget::Stage(StageId(i as u32), member),
            _ => return None,
        })
    }

    /// Evaluates an expression at the compile-time site (D1, D6 operands).
    pub(super) fn eval_const_expr(&mut self, e: &ast::Expr) -> Option<f64> {
        let mut b = SiteBuilder::new(Site::Const);
        match self.lower(e, &mut b, None)? {
            Expr::Const(v) => Some(v),
            // Every leaf at the constant site is a constant, so folding leaves one.
            other => unreachable!("constant site left a non-constant: {other:?}"),
        }
    }
}

fn sub(a: Expr, b: Expr) -> Expr {
    Expr::Binary(BinaryOp::Sub, Box::new(a), Box::new(b))
}

/// Folds a node whose operands are all constants, with the interpreter's semantics so
/// folding can never change a value. A conditional with a constant condition keeps
/// only the taken branch.
fn fold(e: Expr) -> Expr {
    let all_const = match &e {
        Expr::Unary(_, a) => is_const(a),
        Expr::Binary(_, a, b) => is_const(a) && is_const(b),
        Expr::Cond(c, a, b) => {
            if let Expr::Const(cv) = **c {
                let taken = if interp::truthy(cv) { a } else { b };
                return (**taken).clone();
            }
            is_const(a) && is_const(b) && is_const(c)
        }
        Expr::Call(_, args) => args.iter().all(is_const),
        // `sum(3)` is 3 per take: never a constant.
        Expr::Const(_) | Expr::Slot(_) | Expr::Sum(_) => false,
    };
    if all_const {
        Expr::Const(interp::eval(&e, &[], &[]))
    } else {
        e
    }
}

fn is_const(e: &Expr) -> bool {
    matches!(e, Expr::Const(_))
}
