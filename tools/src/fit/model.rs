//! The `--time` expression of `poolc fit`, through the compiler: parsed once by the
//! front end (`syntax::parse_expression`), its unknowns found (every name that the
//! time site does not read and that a spec could declare, except `prompt`), checked
//! by sema as the `time` of a step stage whose unknowns are `param`s, in a spec
//! whose one session attribute is `prompt` (the step log's prompt length, which
//! `sum` terms may read, R29), then held to linearity (linear.rs). Numbers come only from sema with the unknowns set as `--set` sets a
//! param (D2) and from `interp::eval`, the reference evaluator that `poolc eval
//! --interp` runs and the JIT equals bit for bit, so a fitted value means what the
//! host would compute. It never solves and never prints.

use poolc::diag::Diagnostic;
use poolc::interp;
use poolc::ir::{Input, Var};
use poolc::sema;
use poolc::syntax::ast::{
    AttrDecl, Decl, Expr, ExprKind, Ident, SessionDecl, Spec, StageDecl, StageKind, StageOption,
    StageOptionKind, ValueDecl,
};
use poolc::syntax::{self, Span, printer};

use super::linear;
use super::steps::{Counts, Iteration, Phase, Request};

/// The name of the analysed stage: not an identifier, so no unknown can take it.
const STAGE: &str = "fit-stage";

/// The session attribute a step log gives per request: its prompt length.
const PROMPT: &str = "prompt";

/// A checked time expression with at least one unknown, linear in them.
#[derive(Clone, Debug)]
pub struct TimeModel {
    text: String,
    expr: Expr,
    unknowns: Vec<Ident>,
    /// `param UNKNOWN = 0;` for each unknown, then the stage.
    spec: Spec,
}

/// The time expression compiled for one set of values of the unknowns: the IR of
/// the stage's `time` and the inputs of its ctx and take-row slots.
struct Compiled {
    expr: poolc::ir::Expr,
    ctx: Vec<Input>,
    row: Vec<Input>,
}

impl TimeModel {
    /// Parses and checks `text`; every diagnostic points into it.
    pub fn parse(text: &str) -> Result<TimeModel, Vec<Diagnostic>> {
        let expr = syntax::parse_expression(text)
            .map_err(|errors| errors.iter().map(|e| e.to_diagnostic()).collect::<Vec<_>>())?;
        let mut unknowns = Vec::new();
        collect_unknowns(&expr, &mut unknowns);
        let spec = analysed_spec(&expr, &unknowns);
        let model = TimeModel {
            text: text.to_string(),
            expr,
            unknowns,
            spec,
        };
        model.compile(&vec![0.0; model.unknowns.len()])?;
        let linear = linear::check(&model.expr, text, &|name| model.is_unknown(name));
        if !linear.is_empty() {
            return Err(linear);
        }
        if model.unknowns.is_empty() {
            let inputs: Vec<&str> = Var::ALL
                .iter()
                .map(|v| v.name())
                .filter(|n| sema::time_reads(n))
                .collect();
            return Err(vec![linear::nothing_to_fit(&model.expr, text, &inputs)]);
        }
        Ok(model)
    }

    /// The expression as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The unknowns' names, in order of first appearance.
    pub fn unknowns(&self) -> Vec<&str> {
        self.unknowns.iter().map(|u| u.name.as_str()).collect()
    }

    fn is_unknown(&self, name: &str) -> bool {
        self.unknowns.iter().any(|u| u.name == name)
    }

    /// The time of each iteration with the unknowns at `values` (one per unknown, in
    /// order), as the host would compute it: its counts in the ctx, a take row per
    /// scheduled request.
    pub fn times(
        &self,
        values: &[f64],
        iterations: &[Iteration],
    ) -> Result<Vec<f64>, Vec<Diagnostic>> {
        let compiled = self.compile(values)?;
        let mut ctx = Vec::with_capacity(compiled.ctx.len());
        let mut rows = Vec::new();
        Ok(iterations
            .iter()
            .map(|it| {
                ctx.clear();
                ctx.extend(
                    compiled
                        .ctx
                        .iter()
                        .map(|input| input_value(*input, &it.counts)),
                );
                rows.clear();
                for r in &it.requests {
                    rows.extend(compiled.row.iter().map(|input| take_value(*input, r)));
                }
                let takes = interp::Takes {
                    rows: &rows,
                    n: it.requests.len(),
                    stride: compiled.row.len(),
                };
                interp::eval_time(&compiled.expr, takes, &ctx)
            })
            .collect())
    }

    /// The expression with each unknown replaced by its value (one per unknown, in
    /// order), printed by the AST printer: the same tree, so the same structure and
    /// precedence, and numbers that read back as the same f64.
    pub fn with_values(&self, values: &[f64]) -> String {
        let mut expr = self.expr.clone();
        substitute(&mut expr, &|name| {
            self.unknowns
                .iter()
                .position(|u| u.name == name)
                .and_then(|i| values.get(i).copied())
        });
        printer::print_expr(&expr)
    }

    /// Sema on the analysed spec with the unknowns set to `values`.
    fn compile(&self, values: &[f64]) -> Result<Compiled, Vec<Diagnostic>> {
        let set = self
            .unknowns
            .iter()
            .zip(values)
            .map(|(u, v)| (u.name.clone(), *v))
            .collect();
        let program = sema::analyze(&self.spec, &poolc::Options { set })?;
        let stage = program
            .stages
            .first()
            .expect("the analysed spec declares one stage, and sema keeps it");
        let (time, layout) = stage.time();
        Ok(Compiled {
            expr: time.expr.clone(),
            ctx: layout.ctx.clone(),
            row: layout.row.clone(),
        })
    }
}

/// A number as the AST printer writes it (and as L2 reads it back).
pub fn number(v: f64) -> String {
    printer::print_expr(&Expr {
        kind: ExprKind::Number(v),
        span: Span::default(),
    })
}

/// The value of one ctx input of the time site for an iteration.
fn input_value(input: Input, c: &Counts) -> f64 {
    let n = match input {
        Input::Var(Var::Tokens) => c.tokens,
        Input::Var(Var::Prefill) => c.prefill,
        Input::Var(Var::Decode) => c.decode,
        Input::Var(Var::Residents) => c.residents,
        Input::Var(Var::Context) => c.context,
        other => panic!("sema lets a stage `time` read only its five inputs (S1), not {other:?}"),
    };
    // Counts stay below 2^53 (steps.rs), so the conversion is exact.
    n as f64
}

/// The value of one take-row input for a scheduled request (R29).
fn take_value(input: Input, r: &Request) -> f64 {
    let decoding = r.phase == Phase::Decode;
    let n = match input {
        Input::Var(Var::Tokens) => r.tokens,
        Input::Var(Var::Prefill) if decoding => 0,
        Input::Var(Var::Prefill) => r.tokens,
        Input::Var(Var::Decode) if decoding => r.tokens,
        Input::Var(Var::Decode) => 0,
        Input::Var(Var::Computed) => r.computed,
        // The iteration's sum of these is below 2^53 (steps.rs), so is each.
        Input::Var(Var::Context) => r.computed + r.tokens,
        Input::Attr(_) => r.prompt,
        other => panic!("sema lets a `sum` term read only a take's values (R29), not {other:?}"),
    };
    n as f64
}

/// Every name that the time site does not read and a declaration may take, first
/// appearance first; the rest (`now`, `serial`, …) are left to sema's site check.
fn collect_unknowns(e: &Expr, out: &mut Vec<Ident>) {
    for id in e.names() {
        let unknown =
            !sema::time_reads(&id.name) && sema::reserved(&id.name).is_none() && id.name != PROMPT;
        if unknown && !out.iter().any(|u| u.name == id.name) {
            out.push(id.clone());
        }
    }
}

/// `param U = 0;` for each unknown (spanning its first appearance, so sema's
/// diagnostics point into the expression), `session { prompt; }`, then
/// `stage fit-stage { step; time (e); }`.
fn analysed_spec(expr: &Expr, unknowns: &[Ident]) -> Spec {
    let prompt = Ident {
        name: PROMPT.to_string(),
        span: expr.span,
    };
    let session = Decl::Session(SessionDecl {
        attrs: vec![AttrDecl {
            name: prompt,
            default: None,
            span: expr.span,
        }],
        span: expr.span,
    });
    let mut decls: Vec<Decl> = unknowns
        .iter()
        .map(|u| {
            Decl::Param(ValueDecl {
                name: u.clone(),
                value: Expr {
                    kind: ExprKind::Number(0.0),
                    span: u.span,
                },
                span: u.span,
            })
        })
        .collect();
    decls.push(session);
    decls.push(Decl::Stage(StageDecl {
        name: Ident {
            name: STAGE.to_string(),
            span: expr.span,
        },
        count: None,
        kind: StageKind::Step,
        kind_span: expr.span,
        options: vec![StageOption {
            kind: StageOptionKind::Time(expr.clone()),
            span: expr.span,
        }],
        span: expr.span,
    }));
    Spec { decls }
}

/// Replaces every name `value_of` knows by its value.
fn substitute(e: &mut Expr, value_of: &dyn Fn(&str) -> Option<f64>) {
    if let ExprKind::Name(id) = &e.kind
        && let Some(v) = value_of(&id.name)
    {
        e.kind = ExprKind::Number(v);
    }
    for c in e.children_mut() {
        substitute(c, value_of);
    }
}
