//! Code generation: from a checked `ir::Program` to the policy functions of
//! docs/ABI.md. This module owns the *plan* (which functions a program needs, their
//! symbol names, the slot shapes they read), the one sequence by which every backend
//! declares, lowers and defines a planned function (`Definer`), the Cranelift flags
//! they share, the error type, the bundle of policy structs ([`Compiled`]) and the
//! public API; [`lower`] turns one planned function into Cranelift IR for any module
//! and ISA, and `jit` owns the JIT module and its memory (`crate::aot::object` writes
//! the same functions into an object file through the same `Definer`). Nothing
//! here parses, checks names or evaluates expressions (that is `sema` and `interp`),
//! emits objects, links or loads libraries (`crate::aot`), and nothing here may
//! assume the host is x86-64.
//!
//! Symbols: `pool_<P>_queue_key<i>`, `pool_<P>_queue_cmp`, `pool_<P>_queue_select`,
//! the same with `evict`, `preempt` and `route`, `pool_<P>_spill_pred`, `pool_<P>_spill_work`,
//! `pool_<P>_handoff_work` and `stage_<S>_time`; the object backend exports each as `<prefix>_<symbol>`. Pool
//! and stage names are distinct identifiers (D7) and every site suffix has exactly
//! one `_`, so no two symbols of a program can collide.

mod jit;
pub mod lower;

use std::fmt;

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, ir as clir};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{FuncId, Linkage, Module, ModuleError};
use poolrt::policy::{CodeHandle, PoolPolicy, Shape, StagePolicy};

use crate::diag::Diagnostic;
use crate::ir::{self, Evict, Expr, Layout, PoolId, PreemptMode, QueuePolicy, SiteExpr, StageId};
pub use jit::{CompiledExprs, compile_exprs, compile_key_list, compile_program, compile_time};
use lower::{FnKind, Imports, Keys};

/// Why code generation failed. Every variant is a message for a person: the ISA of
/// this machine is unusable, the IR broke its contract, or Cranelift refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// The host is not one Cranelift can generate code for, or its flags were refused.
    Isa(String),
    /// IR that breaks its contract (`ir::verify`): a front-end bug or hand-built IR.
    Verify(ir::VerifyError),
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
            CodegenError::Verify(e) => e.fmt(f),
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

/// A program's policy functions, JIT-compiled or loaded from a shared object
/// (`aot::load::load`), with the IR they came from. The policy structs share
/// ownership of the machine code: it is freed (or the library unloaded) when this
/// value and every clone of a struct taken from it are gone.
pub struct Compiled {
    program: ir::Program,
    pools: Vec<PoolPolicy>,
    stages: Vec<StagePolicy>,
    code: CodeHandle,
}

impl Compiled {
    /// Bundles policy structs made for `program` (indexed like its pools and
    /// stages) with the handle that keeps their code; only backends make one.
    pub(crate) fn new(
        program: ir::Program,
        pools: Vec<PoolPolicy>,
        stages: Vec<StagePolicy>,
        code: CodeHandle,
    ) -> Compiled {
        assert_eq!(pools.len(), program.pools.len(), "one policy per pool");
        assert_eq!(stages.len(), program.stages.len(), "one policy per stage");
        Compiled {
            program,
            pools,
            stages,
            code,
        }
    }

    /// The checked program: caps, blocks, read-sets, slot layouts, links.
    pub fn program(&self) -> &ir::Program {
        &self.program
    }

    /// The functions of a pool declaration; every member of its family uses them.
    pub fn pool(&self, id: PoolId) -> &PoolPolicy {
        self.pools
            .get(id.0 as usize)
            .expect("Compiled holds the functions of every pool of its program")
    }

    /// The functions of a stage declaration; every member of its family uses them.
    pub fn stage(&self, id: StageId) -> &StagePolicy {
        self.stages
            .get(id.0 as usize)
            .expect("Compiled holds the functions of every stage of its program")
    }

    /// Pool policies indexed like `program().pools`.
    pub fn pools(&self) -> &[PoolPolicy] {
        &self.pools
    }

    /// Stage policies indexed like `program().stages`.
    pub fn stages(&self) -> &[StagePolicy] {
        &self.stages
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("pools", &self.pools)
            .field("stages", &self.stages)
            .finish_non_exhaustive()
    }
}

/// Why a spec did not become code: what is wrong in the spec (diagnostics with
/// spans), or a code generation failure, which only a compiler bug or an unusable
/// host can cause.
#[derive(Debug)]
pub enum CompileError {
    Spec(Vec<Diagnostic>),
    Codegen(CodegenError),
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Spec(diags) => {
                write!(f, "{} error(s) in the spec", diags.len())?;
                if let Some(d) = diags.first() {
                    write!(f, ": {}", d.message)?;
                }
                Ok(())
            }
            CompileError::Codegen(e) => write!(f, "code generation failed: {e}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// Parses, checks and JIT-compiles a spec.
pub fn compile(source: &str, options: &crate::Options) -> Result<Compiled, CompileError> {
    let program = crate::check(source, options).map_err(CompileError::Spec)?;
    compile_program(&program).map_err(CompileError::Codegen)
}

/// Which Cranelift IR `clif` prints of each function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClifForm {
    /// As lowering built it.
    Built,
    /// After Cranelift's mid-end (egraph, LICM, constant folding) for this host's
    /// ISA.
    Optimized,
}

/// The Cranelift IR of every function of `program` (of one pool or stage with
/// `only`), each preceded by a `; <symbol>` line, in `form`.
pub fn clif(
    program: &ir::Program,
    only: Option<&str>,
    form: ClifForm,
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
    jit::clif_text(&selected, form)
}

/// Every planned function of a program in one fixed order (each pool's, in pool
/// order, then each stage's `time`): the order of `clif`, of the JIT's definitions
/// and of the object file's.
pub(crate) fn all_functions<'p>(plan: &'p ProgramPlan<'_>) -> Vec<&'p Planned<'p>> {
    let mut out = Vec::new();
    for p in &plan.pools {
        out.extend(p.functions());
    }
    out.extend(plan.stages.iter().map(|s| &s.time));
    out
}

/// The one path from a planned function to a module, shared by the JIT and the
/// object backend so that both generate the same Cranelift IR: declare the symbol,
/// lower the body with [`lower::build`], and define it (or print it). It holds what
/// is reused between functions.
pub(crate) struct Definer {
    /// Reused for every function so each definition does not reallocate.
    ctx: Context,
    /// cranelift-frontend's scratch state, reused likewise.
    fctx: FunctionBuilderContext,
    /// Declared once per module; every function that uses `%` refers to it.
    imports: Imports,
    /// `Local` in the JIT (nothing links against it), `Export` in an object file.
    linkage: Linkage,
    /// Put before every planned symbol in the module's symbol table (`""` in the
    /// JIT, `"<prefix>_"` in an object file); the CLIF name stays the bare symbol.
    symbol_prefix: String,
}

impl Definer {
    /// Declares the imports in `module`; call it before declaring anything else so
    /// that every backend numbers `fmod` alike (the CLIF text names it `u0:0`).
    pub fn new(
        module: &mut dyn Module,
        linkage: Linkage,
        symbol_prefix: String,
    ) -> Result<Definer, CodegenError> {
        let imports = Imports::declare(module)?;
        Ok(Definer {
            ctx: module.make_context(),
            fctx: FunctionBuilderContext::new(),
            imports,
            linkage,
            symbol_prefix,
        })
    }

    /// Declares `planned` and lowers it into the reused context, where it stays
    /// until the next call.
    pub fn build(
        &mut self,
        module: &mut dyn Module,
        planned: &Planned<'_>,
    ) -> Result<FuncId, CodegenError> {
        let sig = lower::signature(planned.kind, module);
        let name = format!("{}{}", self.symbol_prefix, planned.symbol);
        let id = module
            .declare_function(&name, self.linkage, &sig)
            .map_err(module_err(Some(&planned.symbol)))?;
        module.clear_context(&mut self.ctx);
        self.ctx.func.name = clir::UserFuncName::testcase(&planned.symbol);
        lower::build(
            module,
            &self.imports,
            planned.kind,
            &mut self.ctx.func,
            &mut self.fctx,
        );
        Ok(id)
    }

    /// The CLIF text of the function last built.
    pub fn text(&self) -> String {
        self.ctx.func.display().to_string()
    }

    /// Compiles the function last built into the module as `id`.
    pub fn define_built(
        &mut self,
        module: &mut dyn Module,
        id: FuncId,
        symbol: &str,
    ) -> Result<(), CodegenError> {
        module
            .define_function(id, &mut self.ctx)
            .map_err(module_err(Some(symbol)))
    }

    /// Declares, lowers and compiles `planned` into the module.
    pub fn define(
        &mut self,
        module: &mut dyn Module,
        planned: &Planned<'_>,
    ) -> Result<FuncId, CodegenError> {
        let id = self.build(module, planned)?;
        self.define_built(module, id, &planned.symbol)?;
        Ok(id)
    }

    /// The CLIF text of `planned` in `form` (the mid-end for the module's ISA); the
    /// function is declared but never defined.
    pub fn clif(
        &mut self,
        module: &mut dyn Module,
        planned: &Planned<'_>,
        form: ClifForm,
    ) -> Result<String, CodegenError> {
        self.build(module, planned)?;
        if form == ClifForm::Optimized {
            self.ctx
                .optimize(module.isa(), &mut ControlPlane::default())
                .map_err(|e| CodegenError::Module {
                    function: Some(planned.symbol.clone()),
                    message: e.to_string(),
                })?;
        }
        Ok(self.text())
    }
}

/// Whether generated code may be loaded at any address (`is_pic`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Position {
    /// A shared object's: it links into a library loaded anywhere.
    Independent,
    /// The JIT's: cranelift-jit requires it.
    Dependent,
}

/// The Cranelift flags of every backend: tuned for speed, libcalls never colocated
/// (generated code may lie far from them, or they are in another library), position
/// independence as the backend needs, and the verifier only in debug builds, and so
/// in every test (it costs a third of the compile time, docs/PERFORMANCE.md).
/// `isa_err` words a refused flag for its backend.
pub(crate) fn isa_flags(
    position: Position,
    isa_err: impl Fn(String) -> CodegenError,
) -> Result<settings::Flags, CodegenError> {
    let mut flags = settings::builder();
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    let is_pic = match position {
        Position::Independent => "true",
        Position::Dependent => "false",
    };
    for (name, value) in [
        ("opt_level", "speed"),
        ("is_pic", is_pic),
        ("use_colocated_libcalls", "false"),
        ("enable_verifier", verify),
    ] {
        flags
            .set(name, value)
            .map_err(|e| isa_err(format!("flag {name}={value}: {e}")))?;
    }
    Ok(settings::Flags::new(flags))
}

pub(crate) fn module_err(function: Option<&str>) -> impl Fn(ModuleError) -> CodegenError + '_ {
    move |e| CodegenError::Module {
        function: function.map(str::to_string),
        message: e.to_string(),
    }
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
    pub preempt: Option<ListPlan<'a>>,
    pub spill: Option<SpillPlan<'a>>,
    pub route: Option<ListPlan<'a>>,
    /// A handoff's work (R26) and its shape.
    pub handoff: Option<(Planned<'a>, Shape)>,
}

impl PoolPlan<'_> {
    /// Every function of the pool, in symbol order.
    pub fn functions(&self) -> Vec<&Planned<'_>> {
        let mut out = Vec::new();
        for list in [&self.queue, &self.evict, &self.preempt]
            .into_iter()
            .flatten()
        {
            out.extend(list.keys.iter());
            out.push(&list.cmp);
            out.push(&list.select);
        }
        if let Some(spill) = &self.spill {
            out.push(&spill.pred);
            out.push(&spill.work);
        }
        if let Some(list) = &self.route {
            out.extend(list.keys.iter());
            out.push(&list.cmp);
            out.push(&list.select);
        }
        if let Some((work, _)) = &self.handoff {
            out.push(work);
        }
        out
    }
}

#[derive(Clone, Debug)]
pub(crate) struct StagePlan<'a> {
    pub time: Planned<'a>,
    /// The time layout's lengths: a take row's slots and the ctx's.
    pub shape: Shape,
}

/// Every function a program needs, indexed like `program.pools` and
/// `program.stages`, with every expression checked against its site's layout.
#[derive(Clone, Debug)]
pub(crate) struct ProgramPlan<'a> {
    pub pools: Vec<PoolPlan<'a>>,
    pub stages: Vec<StagePlan<'a>>,
}

impl<'a> ProgramPlan<'a> {
    /// The plan of a program that `ir::verify` accepts (checked here: every backend
    /// plans before it lowers).
    pub fn new(program: &'a ir::Program) -> Result<ProgramPlan<'a>, CodegenError> {
        ir::verify(program).map_err(CodegenError::Verify)?;
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
            let preempt = match &pool.preempt {
                PreemptMode::None | PreemptMode::Lifo => None,
                PreemptMode::By(keys) => Some(list_plan(
                    &format!("{prefix}_preempt"),
                    keys,
                    &pool.resident_layout,
                )?),
            };
            let spill = pool.spill.as_ref().map(|spill| SpillPlan {
                pred: key_plan(format!("{prefix}_spill_pred"), &spill.pred.expr),
                work: key_plan(format!("{prefix}_spill_work"), &spill.work.expr),
                shape: shape_of(&pool.entry_layout),
            });
            let route = match &pool.route {
                None => None,
                Some(r) => Some(list_plan(&format!("{prefix}_route"), &r.keys, &r.layout)?),
            };
            let handoff = pool.handoff.as_ref().map(|h| {
                (
                    key_plan(format!("{prefix}_handoff_work"), &h.work.expr),
                    shape_of(&h.layout),
                )
            });
            pools.push(PoolPlan {
                queue,
                evict,
                preempt,
                spill,
                route,
                handoff,
            });
        }
        let mut stages = Vec::with_capacity(program.stages.len());
        for stage in &program.stages {
            let symbol = format!("stage_{}_time", stage.name);
            let (time, time_layout) = stage.time();
            stages.push(StagePlan {
                time: Planned {
                    symbol,
                    kind: FnKind::Time(&time.expr),
                },
                shape: shape_of(time_layout),
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

/// Checks a bare expression (not from a verified program) against its shape.
pub(crate) fn check_bare(symbol: &str, expr: &Expr, shape: Shape) -> Result<(), CodegenError> {
    ir::verify::expr(expr, ir::Rows::PerRecord, shape.row, shape.ctx).map_err(|problem| {
        CodegenError::Verify(ir::VerifyError {
            at: symbol.to_string(),
            problem,
        })
    })
}

fn key_plan(symbol: String, expr: &Expr) -> Planned<'_> {
    Planned {
        symbol,
        kind: FnKind::Key(expr),
    }
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
        if let Keys::Exprs(_) = keys {
            check_bare(&symbol, expr, shape)?;
        }
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
