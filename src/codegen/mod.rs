//! Code generation: from a checked `ir::Program` to the policy functions of
//! docs/ABI.md. This module owns the *plan* (which functions a program needs, their
//! symbol names, the slot shapes they read), the error type and the public API;
//! [`lower`] turns one planned function into Cranelift IR for any module and ISA, and
//! `jit` owns the JIT module and its memory. Nothing here parses, checks names or
//! evaluates expressions (that is `sema` and `interp`), and nothing here may assume
//! the host is x86-64.
//!
//! Symbols (also the names the object backend exports): `pool_<P>_queue_key<i>`,
//! `pool_<P>_queue_cmp`, `pool_<P>_queue_select`, the same with `evict`,
//! `pool_<P>_spill_pred`, `pool_<P>_spill_work` and `stage_<S>_time`. Pool and stage
//! names are distinct identifiers (D7) and every site suffix has exactly one `_`, so
//! no two symbols of a program can collide.

mod jit;
pub mod lower;

use std::fmt;

use poolrt::policy::Shape;

use crate::diag::Diagnostic;
use crate::ir::{self, Evict, Expr, Layout, QueuePolicy, SiteExpr};
pub use jit::{Compiled, CompiledExprs, compile_exprs, compile_key_list, compile_program};
use lower::{FnKind, Keys};

/// Why code generation failed. Every variant is a message for a person: the ISA of
/// this machine is unusable, the IR broke its contract, or Cranelift refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// The host is not one Cranelift can generate code for, or its flags were refused.
    Isa(String),
    /// An expression that the IR contract forbids (slot outside its layout, wrong
    /// builtin arity): a front-end bug or hand-built IR.
    BadExpr { function: String, problem: String },
    /// Cranelift or the module rejected a function (verifier, relocation, memory).
    Module {
        function: Option<String>,
        message: String,
    },
    /// `clif --pool NAME` named no pool or stage of the program.
    NoSuchPool(String),
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::Isa(m) => write!(f, "this machine cannot run generated code: {m}"),
            CodegenError::BadExpr { function, problem } => {
                write!(f, "malformed IR in {function}: {problem}")
            }
            CodegenError::Module {
                function: Some(func),
                message,
            } => {
                write!(f, "code generation failed for {func}: {message}")
            }
            CodegenError::Module {
                function: None,
                message,
            } => {
                write!(f, "code generation failed: {message}")
            }
            CodegenError::NoSuchPool(name) => write!(f, "no pool or stage named `{name}`"),
        }
    }
}

impl std::error::Error for CodegenError {}

/// Parses, checks and JIT-compiles a spec. A code generation failure (which only a
/// compiler bug or an unusable host can cause) is a diagnostic with code `codegen`.
pub fn compile(source: &str, options: &crate::Options) -> Result<Compiled, Vec<Diagnostic>> {
    let program = crate::check(source, options)?;
    compile_program(&program).map_err(|e| vec![Diagnostic::new("codegen", e.to_string())])
}

/// The Cranelift IR of every function of `program` (of one pool or stage with
/// `only`), each preceded by a `; <symbol>` line, as built (`optimized == false`) or
/// after Cranelift's mid-end (egraph, LICM, constant folding) for this host's ISA.
pub fn clif(
    program: &ir::Program,
    only: Option<&str>,
    optimized: bool,
) -> Result<String, CodegenError> {
    let plan = ProgramPlan::new(program)?;
    let mut selected = Vec::new();
    for (pool, p) in program.pools.iter().zip(&plan.pools) {
        if only.is_none_or(|name| name == pool.name) {
            selected.extend(p.functions());
        }
    }
    for (stage, s) in program.stages.iter().zip(&plan.stages) {
        if only.is_none_or(|name| name == stage.name) {
            selected.push(&s.time);
        }
    }
    if let Some(name) = only
        && program.find_pool(name).is_none()
        && program.find_stage(name).is_none()
    {
        return Err(CodegenError::NoSuchPool(name.to_string()));
    }
    jit::clif_text(&selected, optimized)
}

/// One function to generate: its symbol and what it computes.
#[derive(Clone, Debug)]
pub(crate) struct Planned<'a> {
    pub symbol: String,
    pub kind: FnKind<'a>,
}

/// A key list: a function per key, then the fused comparator and scan.
#[derive(Clone, Debug)]
pub(crate) struct ListPlan<'a> {
    pub keys: Vec<Planned<'a>>,
    pub cmp: Planned<'a>,
    pub select: Planned<'a>,
    pub shape: Shape,
}

#[derive(Clone, Debug)]
pub(crate) struct SpillPlan<'a> {
    pub pred: Planned<'a>,
    pub work: Planned<'a>,
    pub shape: Shape,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct PoolPlan<'a> {
    pub queue: Option<ListPlan<'a>>,
    pub evict: Option<ListPlan<'a>>,
    pub spill: Option<SpillPlan<'a>>,
}

impl PoolPlan<'_> {
    /// Every function of the pool, in symbol order.
    pub fn functions(&self) -> Vec<&Planned<'_>> {
        let mut out = Vec::new();
        for list in [&self.queue, &self.evict].into_iter().flatten() {
            out.extend(list.keys.iter());
            out.push(&list.cmp);
            out.push(&list.select);
        }
        if let Some(spill) = &self.spill {
            out.push(&spill.pred);
            out.push(&spill.work);
        }
        out
    }
}

#[derive(Clone, Debug)]
pub(crate) struct StagePlan<'a> {
    pub time: Planned<'a>,
    pub ctx_len: usize,
}

/// Every function a program needs, indexed like `program.pools` and
/// `program.stages`, with every expression checked against its site's layout.
#[derive(Clone, Debug)]
pub(crate) struct ProgramPlan<'a> {
    pub pools: Vec<PoolPlan<'a>>,
    pub stages: Vec<StagePlan<'a>>,
}

impl<'a> ProgramPlan<'a> {
    pub fn new(program: &'a ir::Program) -> Result<ProgramPlan<'a>, CodegenError> {
        let mut pools = Vec::with_capacity(program.pools.len());
        for pool in &program.pools {
            let prefix = format!("pool_{}", pool.name);
            let queue = match &pool.queue {
                QueuePolicy::Fifo => None,
                QueuePolicy::By(keys) => Some(list_plan(
                    &format!("{prefix}_queue"),
                    keys,
                    &pool.queue_layout,
                )?),
            };
            let evict = match &pool.evict {
                Evict::Lru => None,
                Evict::By(keys) => Some(list_plan(
                    &format!("{prefix}_evict"),
                    keys,
                    &pool.entry_layout,
                )?),
            };
            let spill = match &pool.spill {
                None => None,
                Some(spill) => Some(SpillPlan {
                    pred: key_plan(
                        format!("{prefix}_spill_pred"),
                        &spill.pred.expr,
                        &pool.entry_layout,
                    )?,
                    work: key_plan(
                        format!("{prefix}_spill_work"),
                        &spill.work.expr,
                        &pool.entry_layout,
                    )?,
                    shape: shape_of(&pool.entry_layout),
                }),
            };
            pools.push(PoolPlan {
                queue,
                evict,
                spill,
            });
        }
        let mut stages = Vec::with_capacity(program.stages.len());
        for stage in &program.stages {
            let symbol = format!("stage_{}_time", stage.name);
            let ctx_len = stage.time_layout.ctx.len();
            check(&symbol, &stage.time.expr, None, ctx_len)?;
            stages.push(StagePlan {
                time: Planned {
                    symbol,
                    kind: FnKind::Time(&stage.time.expr),
                },
                ctx_len,
            });
        }
        Ok(ProgramPlan { pools, stages })
    }
}

fn shape_of(layout: &Layout) -> Shape {
    Shape {
        row: layout.row.len(),
        ctx: layout.ctx.len(),
    }
}

fn check(
    symbol: &str,
    expr: &Expr,
    row_len: Option<usize>,
    ctx_len: usize,
) -> Result<(), CodegenError> {
    lower::check_expr(expr, row_len, ctx_len).map_err(|e| CodegenError::BadExpr {
        function: symbol.to_string(),
        problem: e.0,
    })
}

fn key_plan<'a>(
    symbol: String,
    expr: &'a Expr,
    layout: &Layout,
) -> Result<Planned<'a>, CodegenError> {
    check(&symbol, expr, Some(layout.row.len()), layout.ctx.len())?;
    Ok(Planned {
        symbol,
        kind: FnKind::Key(expr),
    })
}

fn list_plan<'a>(
    prefix: &str,
    keys: &'a [SiteExpr],
    layout: &Layout,
) -> Result<ListPlan<'a>, CodegenError> {
    list_plan_of(prefix, Keys::Sites(keys), shape_of(layout))
}

/// The plan of a key list, shared by sites and bare key lists.
pub(crate) fn list_plan_of<'a>(
    prefix: &str,
    keys: Keys<'a>,
    shape: Shape,
) -> Result<ListPlan<'a>, CodegenError> {
    let mut planned = Vec::new();
    for (i, expr) in keys.to_vec().into_iter().enumerate() {
        let symbol = format!("{prefix}_key{i}");
        check(&symbol, expr, Some(shape.row), shape.ctx)?;
        planned.push(Planned {
            symbol,
            kind: FnKind::Key(expr),
        });
    }
    Ok(ListPlan {
        keys: planned,
        cmp: Planned {
            symbol: format!("{prefix}_cmp"),
            kind: FnKind::Cmp(keys),
        },
        select: Planned {
            symbol: format!("{prefix}_select"),
            kind: FnKind::Select(keys),
        },
        shape,
    })
}
