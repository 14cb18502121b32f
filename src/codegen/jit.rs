//! The JIT backend: a `JITModule` for this host (ISA from cranelift-native), the
//! definition of every planned function in one batch with one
//! `finalize_definitions`, and the ownership of the resulting machine code, which is
//! freed (`free_memory`) when the last [`CodeHandle`] share of it goes. It is the only
//! place where a JIT code pointer becomes a Rust function pointer ([`Finished::get`]).
//! It does not decide what to generate (that is the plan in `mod.rs`), how
//! expressions lower (`lower.rs`) nor how a function is declared and built (the
//! `Definer` in `mod.rs`, shared with the object backend).

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, default_libcall_names};
use poolrt::policy::{
    CmpFn, CodeHandle, KeyFn, KeyList, PoolPolicy, SelectFn, Shape, SpillFns, StagePolicy, TimeFn,
    WorkFn,
};

use super::lower::{self, FnKind, Keys};
use super::{
    ClifForm, CodegenError, Compiled, Definer, ListPlan, Planned, Position, ProgramPlan, isa_flags,
    list_plan_of, module_err,
};
use crate::ir::{self, Expr};

/// JIT-compiles every policy function of `program` in one module.
pub fn compile_program(program: &ir::Program) -> Result<Compiled, CodegenError> {
    let plan = ProgramPlan::new(program)?;
    let mut jit = Jit::new()?;
    let mut pools = Vec::with_capacity(plan.pools.len());
    for p in &plan.pools {
        let queue = p.queue.as_ref().map(|l| jit.list(l)).transpose()?;
        let evict = p.evict.as_ref().map(|l| jit.list(l)).transpose()?;
        let preempt = p.preempt.as_ref().map(|l| jit.list(l)).transpose()?;
        let spill = match &p.spill {
            None => None,
            Some(s) => Some((
                jit.define::<KeyFn>(&s.pred)?,
                jit.define::<KeyFn>(&s.work)?,
                s.shape,
            )),
        };
        let route = p.route.as_ref().map(|l| jit.list(l)).transpose()?;
        let handoff = match &p.handoff {
            None => None,
            Some((work, shape)) => Some((jit.define::<KeyFn>(work)?, *shape)),
        };
        pools.push((queue, evict, preempt, spill, route, handoff));
    }
    let mut stages = Vec::with_capacity(plan.stages.len());
    for s in &plan.stages {
        stages.push((jit.define::<TimeFn>(&s.time)?, s.shape));
    }
    let done = jit.finish()?;
    let code = done.handle();
    let pools = pools
        .into_iter()
        .map(
            |(queue, evict, preempt, spill, route, handoff)| PoolPolicy {
                route: route.map(|l| done.key_list(l, &code)),
                handoff: handoff.map(|(work, shape)| {
                    // SAFETY: lowered as `Key` on the handoff layout, whose lengths are
                    // `shape` (checked by the plan); `code` keeps the module alive.
                    unsafe { WorkFn::new(done.get(work), shape, code.clone()) }
                }),
                queue: queue.map(|l| done.key_list(l, &code)),
                evict: evict.map(|l| done.key_list(l, &code)),
                preempt: preempt.map(|l| done.key_list(l, &code)),
                spill: spill.map(|(pred, work, shape)| {
                    // SAFETY: both were lowered as `Key` on the entry layout, whose
                    // lengths are `shape` (ProgramPlan checked every slot against it),
                    // and `code` keeps the module alive.
                    unsafe { SpillFns::new(done.get(pred), done.get(work), shape, code.clone()) }
                }),
            },
        )
        .collect();
    let stages = stages
        .into_iter()
        .map(|(time, shape)| {
            // SAFETY: lowered as `Time` on the time layout, whose lengths are `shape`
            // (checked by the plan); `code` keeps it alive.
            unsafe { StagePolicy::new(done.get(time), shape, code.clone()) }
        })
        .collect();
    Ok(Compiled::new(program.clone(), pools, stages, code))
}

/// Bare expressions compiled as `key(row, ctx)` functions in one module: for tests,
/// `poolc eval` and benchmarks. Row and ctx must hold the slots the expressions
/// read ([`CompiledExprs::shape`]).
#[derive(Clone, Debug)]
pub struct CompiledExprs {
    fns: Vec<KeyFn>,
    shape: Shape,
    code: CodeHandle,
}

impl CompiledExprs {
    pub fn len(&self) -> usize {
        self.fns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fns.is_empty()
    }

    /// Slots read: one past the highest row and ctx slot index of any expression.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Expression `index` on one row. Panics if a slice is shorter than the shape.
    pub fn eval(&self, index: usize, row: &[f64], ctx: &[f64]) -> f64 {
        let Some(&f) = self.fns.get(index) else {
            panic!("expression {index} of {} compiled", self.fns.len());
        };
        assert!(
            row.len() >= self.shape.row,
            "row has {} slots, needs {}",
            row.len(),
            self.shape.row
        );
        assert!(
            ctx.len() >= self.shape.ctx,
            "ctx has {} slots, needs {}",
            ctx.len(),
            self.shape.ctx
        );
        // SAFETY: `f` reads at most `shape` slots (computed from the expressions),
        // both slices are that long, and `self.code` keeps the code mapped.
        unsafe { f(row.as_ptr(), ctx.as_ptr()) }
    }

    pub fn code(&self) -> &CodeHandle {
        &self.code
    }
}

/// Compiles each expression as a `key(row, ctx)` function, all in one module.
pub fn compile_exprs(exprs: &[Expr]) -> Result<CompiledExprs, CodegenError> {
    let shape = bare_shape(exprs);
    let mut jit = Jit::new()?;
    let mut handles = Vec::with_capacity(exprs.len());
    for (i, expr) in exprs.iter().enumerate() {
        let symbol = format!("expr{i}");
        super::check_bare(&symbol, expr, shape)?;
        handles.push(jit.define::<KeyFn>(&Planned {
            symbol,
            kind: FnKind::Key(expr),
        })?);
    }
    let done = jit.finish()?;
    let fns = handles.into_iter().map(|h| done.get(h)).collect();
    Ok(CompiledExprs {
        fns,
        shape: bare_shape(exprs),
        code: done.handle(),
    })
}

/// Compiles a key list (keys, `cmp`, `select`) whose shape is the slots it reads.
pub fn compile_key_list(keys: &[Expr]) -> Result<KeyList, CodegenError> {
    let plan = list_plan_of("keys", Keys::Exprs(keys), bare_shape(keys))?;
    let mut jit = Jit::new()?;
    let handles = jit.list(&plan)?;
    let done = jit.finish()?;
    let code = done.handle();
    Ok(done.key_list(handles, &code))
}

/// Compiles a stage `time` (R29: row slots only inside `sum`) whose shape is the
/// slots it reads.
pub fn compile_time(expr: &Expr) -> Result<StagePolicy, CodegenError> {
    let shape = bare_shape(std::slice::from_ref(expr));
    let symbol = "time".to_string();
    ir::verify::expr(expr, ir::Rows::InSum, shape.row, shape.ctx).map_err(|problem| {
        CodegenError::Verify(ir::VerifyError {
            at: symbol.clone(),
            problem,
        })
    })?;
    let mut jit = Jit::new()?;
    let handle = jit.define::<TimeFn>(&Planned {
        symbol,
        kind: FnKind::Time(expr),
    })?;
    let done = jit.finish()?;
    // SAFETY: lowered as `Time`, reading at most `shape`'s slots (verified above);
    // the handle keeps the module alive.
    Ok(unsafe { StagePolicy::new(done.get(handle), shape, done.handle()) })
}

fn bare_shape(exprs: &[Expr]) -> Shape {
    let (row, ctx) = exprs
        .iter()
        .map(lower::slots_read)
        .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    Shape { row, ctx }
}

/// The text of `clif`: each function as built, or after the mid-end.
pub(super) fn clif_text(
    functions: &[&Planned<'_>],
    form: ClifForm,
) -> Result<String, CodegenError> {
    let mut jit = Jit::new()?;
    let mut out = String::new();
    for planned in functions {
        let text = jit.clif(planned, form)?;
        out.push_str(&format!("; {}\n{text}\n", planned.symbol));
    }
    Ok(out)
}

/// The ISA of this machine, tuned for speed, with every feature cranelift-native
/// detects (SSE4.1 inlines `floor`/`ceil`, AVX shortens encodings).
fn native_isa() -> Result<OwnedTargetIsa, CodegenError> {
    host_isa(Features::Detected)
}

/// Which CPU features of this machine the host ISA uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Features {
    /// Every feature cranelift-native detects.
    Detected,
    /// Only the baseline (SSE2 on x86-64), so that tests can reach the libcall paths
    /// a machine without SSE4.1 takes.
    #[cfg(test)]
    Baseline,
}

/// The host ISA with `features`.
fn host_isa(features: Features) -> Result<OwnedTargetIsa, CodegenError> {
    let isa_err = |m: String| CodegenError::Isa(m);
    // `is_pic` off and non-colocated libcalls are what cranelift-jit requires (calls
    // may be far from the code).
    let flags = isa_flags(Position::Dependent, isa_err)?;
    let builder = cranelift_native::builder_with_options(features == Features::Detected)
        .map_err(|m| isa_err(m.to_string()))?;
    builder.finish(flags).map_err(|e| isa_err(e.to_string()))
}

// Host implementations of what generated code calls. A Rust binary does not export
// libm to dlsym, and these are the very operations the interpreter uses, so JIT and
// interpreter share the bits. `floor` and `ceil` are called only when the ISA lacks
// SSE4.1 (Cranelift then legalizes them to libcalls).
extern "C" fn host_fmod(a: f64, b: f64) -> f64 {
    a % b
}

extern "C" fn host_floor(x: f64) -> f64 {
    x.floor()
}

extern "C" fn host_ceil(x: f64) -> f64 {
    x.ceil()
}

/// The Rust function type of a generated function of one [`FnKind`]; sealed to the
/// four ABI types so a [`Handle`] can only name a matching one.
pub(crate) trait AbiFn: Copy + sealed::Sealed {
    fn matches(kind: &FnKind<'_>) -> bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for poolrt::policy::KeyFn {}
    impl Sealed for poolrt::policy::TimeFn {}
    impl Sealed for poolrt::policy::CmpFn {}
    impl Sealed for poolrt::policy::SelectFn {}
}

impl AbiFn for KeyFn {
    fn matches(kind: &FnKind<'_>) -> bool {
        matches!(kind, FnKind::Key(_))
    }
}

impl AbiFn for TimeFn {
    fn matches(kind: &FnKind<'_>) -> bool {
        matches!(kind, FnKind::Time(_))
    }
}

impl AbiFn for CmpFn {
    fn matches(kind: &FnKind<'_>) -> bool {
        matches!(kind, FnKind::Cmp(_))
    }
}

impl AbiFn for SelectFn {
    fn matches(kind: &FnKind<'_>) -> bool {
        matches!(kind, FnKind::Select(_))
    }
}

/// A defined function whose Rust type is `F`: made only by [`Jit::define`], which
/// checks that `F` matches the kind it lowered.
pub(crate) struct Handle<F> {
    id: FuncId,
    _type: PhantomData<F>,
}

impl<F> Clone for Handle<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F> Copy for Handle<F> {}

pub(crate) struct ListHandles {
    keys: Vec<Handle<KeyFn>>,
    cmp: Handle<CmpFn>,
    select: Handle<SelectFn>,
    shape: Shape,
}

/// One compile batch: the module plus the [`Definer`] shared with the object backend.
pub(crate) struct Jit {
    /// Owns the code memory until [`Jit::finish`] passes it on; `None` only after.
    module: Option<JITModule>,
    /// Declares, lowers and defines planned functions; reused between them.
    definer: Definer,
}

impl Jit {
    pub fn new() -> Result<Jit, CodegenError> {
        Jit::with_isa(native_isa()?)
    }

    fn with_isa(isa: OwnedTargetIsa) -> Result<Jit, CodegenError> {
        let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
        builder.symbol("fmod", host_fmod as *const u8);
        builder.symbol("floor", host_floor as *const u8);
        builder.symbol("ceil", host_ceil as *const u8);
        let mut module = JITModule::new(builder);
        // Local: the JIT's symbols are looked up by id, never linked against.
        let definer = Definer::new(&mut module, Linkage::Local, String::new())?;
        Ok(Jit {
            module: Some(module),
            definer,
        })
    }

    /// Lowers and compiles one function of type `F` into the module.
    pub fn define<F: AbiFn>(&mut self, planned: &Planned<'_>) -> Result<Handle<F>, CodegenError> {
        assert!(
            F::matches(&planned.kind),
            "{} requested with the wrong function type",
            planned.symbol
        );
        let module = self
            .module
            .as_mut()
            .expect("the module is present until finish()");
        let id = self.definer.define(module, planned)?;
        Ok(Handle {
            id,
            _type: PhantomData,
        })
    }

    fn list(&mut self, plan: &ListPlan<'_>) -> Result<ListHandles, CodegenError> {
        let keys = plan
            .keys
            .iter()
            .map(|k| self.define::<KeyFn>(k))
            .collect::<Result<_, _>>()?;
        Ok(ListHandles {
            keys,
            cmp: self.define::<CmpFn>(&plan.cmp)?,
            select: self.define::<SelectFn>(&plan.select)?,
            shape: plan.shape,
        })
    }

    /// The CLIF text of one function, never defined in the module.
    fn clif(&mut self, planned: &Planned<'_>, form: ClifForm) -> Result<String, CodegenError> {
        let module = self
            .module
            .as_mut()
            .expect("the module is present until finish()");
        self.definer.clif(module, planned, form)
    }

    /// Resolves relocations and makes the batch executable (one
    /// `finalize_definitions`, which seals the pages).
    pub fn finish(mut self) -> Result<Finished, CodegenError> {
        let mut module = self
            .module
            .take()
            .expect("the module is present until finish()");
        if let Err(e) = module.finalize_definitions() {
            // SAFETY: no pointer into the module was handed out before finalizing.
            unsafe { module.free_memory() };
            return Err(module_err(None)(e));
        }
        Ok(Finished {
            code: Arc::new(JitCode {
                module: Mutex::new(Some(module)),
            }),
        })
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: a batch dropped before `finish` never handed out a pointer.
            unsafe { module.free_memory() };
        }
    }
}

/// A finalized module, from which typed function pointers are taken.
pub(crate) struct Finished {
    code: Arc<JitCode>,
}

impl Finished {
    /// The Rust function pointer of a defined function.
    pub fn get<F: AbiFn>(&self, handle: Handle<F>) -> F {
        let guard = self
            .code
            .module
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let module = guard
            .as_ref()
            .expect("the module lives until JitCode drops");
        let ptr = module.get_finalized_function(handle.id);
        assert_eq!(
            size_of::<F>(),
            size_of::<*const u8>(),
            "ABI function types are thin pointers"
        );
        // SAFETY: `handle` was made by `Jit::define::<F>`, which lowered the function
        // with `lower::signature` of a kind that `F::matches`: the same parameter and
        // return types, under the target's default calling convention, which is the C
        // convention of `F` (an `unsafe extern "C" fn`). The module is finalized, so
        // the pointer is executable; it stays valid while `self.code` (wrapped in
        // every `CodeHandle` given out) lives.
        unsafe { std::mem::transmute_copy::<*const u8, F>(&ptr) }
    }

    /// A share in the code, for the policy structs.
    pub fn handle(&self) -> CodeHandle {
        CodeHandle::new(self.code.clone())
    }

    fn key_list(&self, h: ListHandles, code: &CodeHandle) -> KeyList {
        let keys = h.keys.into_iter().map(|k| self.get(k)).collect();
        // SAFETY: the functions were lowered as their types say on a layout of
        // `h.shape` slots (every slot checked), and `code` keeps them mapped.
        unsafe {
            KeyList::new(
                keys,
                self.get(h.cmp),
                self.get(h.select),
                h.shape,
                code.clone(),
            )
        }
    }
}

/// The machine code of one batch; freed when the last share drops. The mutex makes
/// it `Sync` (the JIT module is only `Send`); nothing locks it after compilation.
struct JitCode {
    module: Mutex<Option<JITModule>>,
}

impl Drop for JitCode {
    fn drop(&mut self) {
        let slot = self
            .module
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = slot.take() {
            // SAFETY: this is the last share: every policy struct holding a pointer
            // into the module also held a `CodeHandle` to this value, so none is left
            // to call into the code.
            unsafe { module.free_memory() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Builtin, Slot};

    /// Without SSE4.1, Cranelift legalizes `floor`/`ceil` to libcalls, which must
    /// resolve to the host functions registered in `Jit::with_isa` and agree with
    /// Rust's (the interpreter's) results, signs of zero included.
    #[test]
    fn e4_floor_and_ceil_through_libcalls_on_the_baseline_isa() {
        let isa = host_isa(Features::Baseline).expect("the host has a baseline ISA");
        let mut jit = Jit::with_isa(isa).expect("a JIT on the baseline ISA");
        let x = Expr::Slot(Slot::Row(0));
        let floor = Expr::Call(Builtin::Floor, vec![x.clone()]);
        let ceil = Expr::Call(Builtin::Ceil, vec![x]);
        let plan = |symbol: &str, e| Planned {
            symbol: symbol.to_string(),
            kind: FnKind::Key(e),
        };
        let f = jit
            .define::<KeyFn>(&plan("floor", &floor))
            .expect("floor compiles");
        let c = jit
            .define::<KeyFn>(&plan("ceil", &ceil))
            .expect("ceil compiles");
        let done = jit.finish().expect("finalizes");
        let (f, c) = (done.get(f), done.get(c));
        for v in [
            -0.5,
            0.5,
            -0.0,
            0.0,
            2.5,
            -2.5,
            f64::INFINITY,
            f64::NAN,
            1e300,
            -1e-300,
        ] {
            let row = [v];
            // SAFETY: both functions read row slot 0 only; `done` keeps them mapped.
            let (got_f, got_c) =
                unsafe { (f(row.as_ptr(), row.as_ptr()), c(row.as_ptr(), row.as_ptr())) };
            assert!(
                got_f.to_bits() == v.floor().to_bits() || (got_f.is_nan() && v.is_nan()),
                "floor({v:?}) = {got_f:?}"
            );
            assert!(
                got_c.to_bits() == v.ceil().to_bits() || (got_c.is_nan() && v.is_nan()),
                "ceil({v:?}) = {got_c:?}"
            );
        }
    }
}
