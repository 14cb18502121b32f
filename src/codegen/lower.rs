//! Lowering of IR expressions to Cranelift IR: one generated function per
//! [`FnKind`], built with cranelift-frontend into a caller-supplied
//! `ir::Function`. It works against any `cranelift_module::Module` (the JIT's and
//! the object backend's, through `Definer`) and takes the calling convention,
//! pointer type and frontend config from that module's `TargetIsa`; it must not
//! choose an ISA, own code memory, define or finalize functions, or hard-code a
//! target.
//!
//! Semantics are those of the reference interpreter (LANGUAGE.md E2–E5): `&&`, `||`
//! and `?:` are real branches; truth is `x != 0` (so NaN is true); comparisons
//! yield 1.0/0.0; `min`/`max` are Cranelift `fmin`/`fmax` (IEEE 754-2019
//! minimum/maximum, exactly E4); `%` calls the imported C `fmod`. Key order (E5)
//! compares keys as integers after `Translator::order_bits`.

// Indexing here is by slots and read-sets of a program `ir::verify` has checked
// before lowering (every slot inside its layout): an index out of range is a broken
// invariant, not bad input, so it panics (docs/ARCHITECTURE.md "Errors": panics are for broken invariants).
#![allow(clippy::indexing_slicing)]

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F64, I32, I64};
use cranelift_codegen::ir::{
    self, AbiParam, BlockArg, InstBuilder, MemFlagsData, Signature, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};

use super::CodegenError;

use crate::ir::{BinaryOp, Builtin, Expr, SiteExpr, Slot, UnaryOp};

/// What one generated function computes, and so its signature (docs/ABI.md).
#[derive(Clone, Copy, Debug)]
pub enum FnKind<'a> {
    /// `(row: ptr, ctx: ptr) -> f64`: a key, or a spill `pred`/`work`.
    Key(&'a Expr),
    /// `(rows: ptr, n: i64, stride: i64, ctx: ptr) -> f64`: a stage's `time`; row
    /// slots are read only inside `sum`, which loops over the `n` rows (R29).
    Time(&'a Expr),
    /// `(row_a: ptr, row_b: ptr, ctx: ptr) -> i32`: the fused E5 comparator.
    Cmp(Keys<'a>),
    /// `(rows: ptr, n: i64, stride: i64, ctx: ptr) -> i64`: the fused E5 scan.
    Select(Keys<'a>),
}

impl<'a> FnKind<'a> {
    fn exprs(&self) -> Vec<&'a Expr> {
        match *self {
            FnKind::Key(e) | FnKind::Time(e) => vec![e],
            FnKind::Cmp(keys) | FnKind::Select(keys) => keys.to_vec(),
        }
    }
}

/// A key list as the IR holds it (a site's `SiteExpr`s) or as a caller passes it.
#[derive(Clone, Copy, Debug)]
pub enum Keys<'a> {
    Sites(&'a [SiteExpr]),
    Exprs(&'a [Expr]),
}

impl<'a> Keys<'a> {
    pub fn to_vec(self) -> Vec<&'a Expr> {
        match self {
            Keys::Sites(keys) => keys.iter().map(|k| &k.expr).collect(),
            Keys::Exprs(keys) => keys.iter().collect(),
        }
    }
}

/// The C signature of a kind under the target's default calling convention (System V
/// on x86-64 Linux, AAPCS64 on aarch64 Linux), which is what Rust's `extern "C"`
/// uses there.
pub fn signature(kind: FnKind<'_>, module: &dyn Module) -> Signature {
    let isa = module.isa();
    let ptr = isa.pointer_type();
    let mut sig = Signature::new(isa.default_call_conv());
    let (params, ret): (&[ir::Type], ir::Type) = match kind {
        FnKind::Key(_) => (&[ptr, ptr], F64),
        FnKind::Time(_) => (&[ptr, I64, I64, ptr], F64),
        FnKind::Cmp(_) => (&[ptr, ptr, ptr], I32),
        FnKind::Select(_) => (&[ptr, I64, I64, ptr], I64),
    };
    sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
    sig.returns.push(AbiParam::new(ret));
    sig
}

/// Functions every generated module imports.
#[derive(Clone, Copy, Debug)]
pub struct Imports {
    /// C `fmod(double, double) -> double` for `%` (E3): Cranelift has no remainder
    /// instruction for floats.
    pub fmod: FuncId,
}

impl Imports {
    pub fn declare(module: &mut dyn Module) -> Result<Imports, CodegenError> {
        let mut sig = Signature::new(module.isa().default_call_conv());
        sig.params.extend([AbiParam::new(F64), AbiParam::new(F64)]);
        sig.returns.push(AbiParam::new(F64));
        let fmod = module
            .declare_function("fmod", Linkage::Import, &sig)
            .map_err(|e| CodegenError::Module {
                function: Some("fmod".into()),
                message: e.to_string(),
            })?;
        Ok(Imports { fmod })
    }
}

/// Builds the body of `kind` into `func` (which should be fresh, e.g. from a cleared
/// `Context`). The expressions must have passed `ir::verify` (a program) or
/// `ir::verify::expr` (a bare expression) for the layout of the site they belong to;
/// anything else is a broken invariant and panics.
pub fn build(
    module: &mut dyn Module,
    imports: &Imports,
    kind: FnKind<'_>,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
) {
    func.signature = signature(kind, module);
    // Import fmod only where `%` appears, so the CLIF of other functions stays clean.
    let fmod = kind
        .exprs()
        .into_iter()
        .any(uses_rem)
        .then(|| module.declare_func_in_func(imports.fmod, func));
    let ptr = module.isa().pointer_type();
    let frontend_config = module.target_config();

    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let ctx = *params.last().expect("every policy function takes ctx last");
    let takes = match kind {
        FnKind::Time(_) => Some(TakeTable {
            rows: params[0],
            n: params[1],
            stride: params[2],
        }),
        _ => None,
    };
    let mut t = Translator {
        b,
        ctx,
        fmod,
        ptr,
        takes,
    };
    match kind {
        FnKind::Key(e) => {
            let v = t.expr(e, Some(params[0]));
            t.b.ins().return_(&[v]);
        }
        FnKind::Time(e) => {
            let v = t.expr(e, None);
            t.b.ins().return_(&[v]);
        }
        FnKind::Cmp(keys) => t.cmp(&keys.to_vec(), params[0], params[1]),
        FnKind::Select(keys) => t.select(&keys.to_vec(), params[0], params[1], params[2]),
    }
    t.b.seal_all_blocks();
    t.b.finalize(frontend_config);
}

/// The number of row and ctx slots an expression reads (highest index + 1): the
/// shape of a bare expression compiled without a layout.
pub fn slots_read(expr: &Expr) -> (usize, usize) {
    match expr {
        Expr::Slot(Slot::Row(i)) => (*i as usize + 1, 0),
        Expr::Slot(Slot::Ctx(i)) => (0, *i as usize + 1),
        _ => expr
            .children()
            .into_iter()
            .map(slots_read)
            .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1))),
    }
}

fn uses_rem(expr: &Expr) -> bool {
    matches!(expr, Expr::Binary(BinaryOp::Rem, _, _)) || expr.children().into_iter().any(uses_rem)
}

/// Loads of row slots: rows are valid, aligned and unchanging for the whole call,
/// but only for the rows the caller passed, so they may not move above a branch.
const ROW_FLAGS: MemFlagsData = MemFlagsData::trusted().with_readonly();
/// Loads of ctx slots: the whole ctx is valid for the whole call, so they may move
/// (the egraph hoists them out of `select`'s loop).
const CTX_FLAGS: MemFlagsData = MemFlagsData::trusted().with_readonly().with_can_move();

/// The translator of one function: the builder plus the values every node needs.
struct Translator<'a> {
    b: FunctionBuilder<'a>,
    /// The ctx pointer parameter.
    ctx: Value,
    /// `fmod`, imported into this function when it uses `%`.
    fmod: Option<ir::FuncRef>,
    /// The target's pointer type, for the row cursors of `select` and `sum`.
    ptr: ir::Type,
    /// A `time` function's take table, which `sum` loops over.
    takes: Option<TakeTable>,
}

/// The parameters of a `time` function that describe its rows (R29).
#[derive(Clone, Copy)]
struct TakeTable {
    rows: Value,
    n: Value,
    stride: Value,
}

impl Translator<'_> {
    /// One arm per IR node; `row` is the record the row slots are read from (`None`
    /// in `time` outside `sum`, where the verifier allows no row slot).
    fn expr(&mut self, e: &Expr, row: Option<Value>) -> Value {
        match e {
            Expr::Const(c) => self.b.ins().f64const(*c),
            Expr::Slot(Slot::Row(i)) => {
                let row = row.expect("checked: a row slot at a site without rows");
                self.b.ins().load(F64, ROW_FLAGS, row, slot_offset(*i))
            }
            Expr::Slot(Slot::Ctx(i)) => {
                self.b.ins().load(F64, CTX_FLAGS, self.ctx, slot_offset(*i))
            }
            Expr::Unary(UnaryOp::Neg, x) => {
                let x = self.expr(x, row);
                self.b.ins().fneg(x)
            }
            _ if is_lazy_logic(e) => self.logic_value(e, row),
            Expr::Unary(UnaryOp::Not, _) | Expr::Binary(..) if is_boolean(e) => {
                let t = self.strict_truth(e, row);
                self.bool_to_f64(t)
            }
            Expr::Binary(op, a, b) => {
                let a = self.expr(a, row);
                let b = self.expr(b, row);
                self.arith(*op, a, b)
            }
            Expr::Cond(c, a, b) => self.cond(c, a, b, row),
            Expr::Call(f, args) => self.call(*f, args, row),
            Expr::Sum(x) => self.sum(x),
            Expr::Unary(UnaryOp::Not, _) => unreachable!("`!` is boolean"),
        }
    }

    /// Arithmetic operators.
    fn arith(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        match op {
            BinaryOp::Add => self.b.ins().fadd(a, b),
            BinaryOp::Sub => self.b.ins().fsub(a, b),
            BinaryOp::Mul => self.b.ins().fmul(a, b),
            BinaryOp::Div => self.b.ins().fdiv(a, b),
            BinaryOp::Rem => {
                let fmod = self.fmod.expect("fmod is imported wherever % appears");
                let call = self.b.ins().call(fmod, &[a, b]);
                self.b.inst_results(call)[0]
            }
            _ => unreachable!("{op:?} is not arithmetic"),
        }
    }

    /// The truth (an i8, 0 or 1) of an expression that is not a lazy `&&`/`||`:
    /// comparisons test their operands directly (IEEE: false on NaN except `!=`,
    /// as Rust's operators), `!` inverts, anything else is tested against zero.
    fn strict_truth(&mut self, e: &Expr, row: Option<Value>) -> Value {
        match e {
            Expr::Binary(op, a, b) if comparison(*op).is_some() => {
                let cc = comparison(*op).expect("guarded");
                let a = self.expr(a, row);
                let b = self.expr(b, row);
                self.b.ins().fcmp(cc, a, b)
            }
            Expr::Unary(UnaryOp::Not, x) => {
                let t = self.strict_truth(x, row);
                self.b.ins().bxor_imm_u(t, 1)
            }
            _ => {
                let v = self.expr(e, row);
                self.truth(v)
            }
        }
    }

    /// Jumps to `then` when `e` is true (E2) and to `otherwise` when not, deciding
    /// `&&`, `||` and `!` by control flow alone: the right side of `&&`/`||` is
    /// reached only when the left does not decide.
    fn branch(&mut self, e: &Expr, row: Option<Value>, then: ir::Block, otherwise: ir::Block) {
        match e {
            Expr::Const(c) => {
                let target = if *c != 0.0 { then } else { otherwise };
                self.b.ins().jump(target, &[]);
            }
            Expr::Unary(UnaryOp::Not, x) => self.branch(x, row, otherwise, then),
            Expr::Binary(BinaryOp::And, a, b) => {
                let right = self.b.create_block();
                self.branch(a, row, right, otherwise);
                self.b.switch_to_block(right);
                self.branch(b, row, then, otherwise);
            }
            Expr::Binary(BinaryOp::Or, a, b) => {
                let right = self.b.create_block();
                self.branch(a, row, then, right);
                self.b.switch_to_block(right);
                self.branch(b, row, then, otherwise);
            }
            _ => {
                let t = self.strict_truth(e, row);
                self.b.ins().brif(t, then, &[], otherwise, &[]);
            }
        }
    }

    /// The 1.0/0.0 value of a lazy `&&`/`||` (or `!` of one), by jump code.
    fn logic_value(&mut self, e: &Expr, row: Option<Value>) -> Value {
        let yes = self.b.create_block();
        let no = self.b.create_block();
        let merge = self.b.create_block();
        let result = self.b.append_block_param(merge, F64);
        self.branch(e, row, yes, no);
        for (block, value) in [(yes, 1.0), (no, 0.0)] {
            self.b.switch_to_block(block);
            let v = self.b.ins().f64const(value);
            self.b.ins().jump(merge, &[BlockArg::Value(v)]);
        }
        self.b.switch_to_block(merge);
        result
    }

    fn call(&mut self, f: Builtin, args: &[Expr], row: Option<Value>) -> Value {
        let first = self.expr(&args[0], row);
        match f {
            // fmin/fmax are IEEE 754-2019 minimum/maximum: E4 exactly, and
            // associative up to NaN payloads, so a left fold is the n-ary form.
            Builtin::Min | Builtin::Max => args[1..].iter().fold(first, |acc, a| {
                let v = self.expr(a, row);
                if f == Builtin::Min {
                    self.b.ins().fmin(acc, v)
                } else {
                    self.b.ins().fmax(acc, v)
                }
            }),
            Builtin::Abs => self.b.ins().fabs(first),
            Builtin::Floor => self.b.ins().floor(first),
            Builtin::Ceil => self.b.ins().ceil(first),
            Builtin::Sqrt => self.b.ins().sqrt(first),
        }
    }

    /// `c ? a : b`, evaluating only the arm taken. When both arms are constants
    /// there is nothing to skip, so a strict condition picks one without a branch.
    fn cond(&mut self, c: &Expr, a: &Expr, b: &Expr, row: Option<Value>) -> Value {
        if let (Expr::Const(x), Expr::Const(y)) = (a, b)
            && !is_lazy_logic(c)
        {
            let t = self.strict_truth(c, row);
            return self.pick(t, *x, *y);
        }
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let merge = self.b.create_block();
        let result = self.b.append_block_param(merge, F64);
        self.branch(c, row, then_block, else_block);
        for (block, arm) in [(then_block, a), (else_block, b)] {
            self.b.switch_to_block(block);
            let v = self.expr(arm, row);
            self.b.ins().jump(merge, &[BlockArg::Value(v)]);
        }
        self.b.switch_to_block(merge);
        result
    }

    /// `sum(x)`: a loop over the take table adding `x` of each row to a total that
    /// starts at +0, row 0 first, as the interpreter adds (so the same bits). The loop
    /// is top-tested (`n` may be 0) and walks a row pointer.
    fn sum(&mut self, x: &Expr) -> Value {
        let TakeTable { rows, n, stride } =
            self.takes.expect("checked: sum() only in a stage's time");
        let body = self.b.create_block();
        let exit = self.b.create_block();
        let total = self.b.declare_var(F64);
        let index = self.b.declare_var(I64);
        let cursor = self.b.declare_var(self.ptr);
        let zero = self.b.ins().f64const(0.0);
        self.b.def_var(total, zero);
        let first = self.b.ins().iconst(I64, 0);
        self.b.def_var(index, first);
        self.b.def_var(cursor, rows);
        let step = self.b.ins().ishl_imm_u(stride, 3);
        let step = self.int_to_ptr(step);
        let any = self.b.ins().icmp_imm_u(IntCC::NotEqual, n, 0);
        self.b.ins().brif(any, body, &[], exit, &[]);

        self.b.switch_to_block(body);
        let row = self.b.use_var(cursor);
        let v = self.expr(x, Some(row));
        let t = self.b.use_var(total);
        let t = self.b.ins().fadd(t, v);
        self.b.def_var(total, t);
        let i = self.b.use_var(index);
        let i = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(index, i);
        let row = self.b.use_var(cursor);
        let row = self.b.ins().iadd(row, step);
        self.b.def_var(cursor, row);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
        self.b.ins().brif(more, body, &[], exit, &[]);

        self.b.switch_to_block(exit);
        self.b.use_var(total)
    }

    /// E2 truth: non-zero, and NaN is non-zero (`NotEqual` is unordered-or-not-equal).
    fn truth(&mut self, x: Value) -> Value {
        let zero = self.b.ins().f64const(0.0);
        self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
    }

    fn bool_to_f64(&mut self, t: Value) -> Value {
        self.pick(t, 1.0, 0.0)
    }

    /// `t ? x : y` for constants, as an integer select of their bits: a float select
    /// becomes a branch on x86-64, an integer one a `cmov`.
    fn pick(&mut self, t: Value, x: f64, y: f64) -> Value {
        let x = self.b.ins().iconst(I64, x.to_bits() as i64);
        let y = self.b.ins().iconst(I64, y.to_bits() as i64);
        let bits = self.b.ins().select(t, x, y);
        self.b.ins().bitcast(F64, MemFlagsData::new(), bits)
    }

    /// Maps a key to an i64 whose signed order is E5's order on f64: −0 becomes +0,
    /// every NaN becomes i64::MAX (above +inf, all NaNs equal), and negative numbers
    /// get their magnitude bits flipped so that larger magnitudes sort lower. No
    /// branches: this runs once per key per row in `select`.
    fn order_bits(&mut self, x: Value) -> Value {
        // x + 0.0 is exact, so it changes only −0, to +0 (round to nearest, which the
        // ABI requires). Cranelift folds fadd only when both sides are constants.
        let zero = self.b.ins().f64const(0.0);
        let x_or_pos_zero = self.b.ins().fadd(x, zero);
        let bits = self
            .b
            .ins()
            .bitcast(I64, MemFlagsData::new(), x_or_pos_zero);
        let sign = self.b.ins().sshr_imm_u(bits, 63);
        let flip = self.b.ins().ushr_imm_u(sign, 1);
        let ordered = self.b.ins().bxor(bits, flip);
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let nan = self.b.ins().iconst(I64, i64::MAX);
        self.b.ins().select(is_nan, nan, ordered)
    }

    /// The key's order bits for one row.
    fn key_order(&mut self, key: &Expr, row: Value) -> Value {
        let v = self.expr(key, Some(row));
        self.order_bits(v)
    }

    /// `cmp(a, b, ctx)`: key by key, returning at the first difference.
    fn cmp(&mut self, keys: &[&Expr], a: Value, b: Value) {
        let done = self.b.create_block();
        let r = self.b.append_block_param(done, I32);
        for key in keys {
            let ka = self.key_order(key, a);
            let kb = self.key_order(key, b);
            let lt = self.b.ins().icmp(IntCC::SignedLessThan, ka, kb);
            let gt = self.b.ins().icmp(IntCC::SignedGreaterThan, ka, kb);
            let lt = self.b.ins().uextend(I32, lt);
            let gt = self.b.ins().uextend(I32, gt);
            let sign = self.b.ins().isub(gt, lt);
            let next = self.b.create_block();
            self.b
                .ins()
                .brif(sign, done, &[BlockArg::Value(sign)], next, &[]);
            self.b.switch_to_block(next);
        }
        let equal = self.b.ins().iconst(I32, 0);
        self.b.ins().jump(done, &[BlockArg::Value(equal)]);
        self.b.switch_to_block(done);
        self.b.ins().return_(&[r]);
    }

    /// `select(rows, n, stride, ctx)`: one loop keeping the best row's index and its
    /// keys' order bits. A row replaces the best only when strictly less, so ties
    /// keep the lowest index. The loop is bottom-tested and walks a row pointer.
    fn select(&mut self, keys: &[&Expr], rows: Value, n: Value, stride: Value) {
        let empty = self.b.create_block();
        let init = self.b.create_block();
        let body = self.b.create_block();
        let next = self.b.create_block();
        let exit = self.b.create_block();
        let best = self.b.declare_var(I64);
        let index = self.b.declare_var(I64);
        let cursor = self.b.declare_var(self.ptr);
        let best_keys: Vec<Variable> = keys.iter().map(|_| self.b.declare_var(I64)).collect();

        let is_empty = self.b.ins().icmp_imm_u(IntCC::Equal, n, 0);
        self.b.ins().brif(is_empty, empty, &[], init, &[]);

        self.b.switch_to_block(empty);
        let none = self.b.ins().iconst(I64, -1);
        self.b.ins().return_(&[none]);

        self.b.switch_to_block(init);
        let step = self.b.ins().ishl_imm_u(stride, 3);
        let step = self.int_to_ptr(step);
        for (key, var) in keys.iter().zip(&best_keys) {
            let k = self.key_order(key, rows);
            self.b.def_var(*var, k);
        }
        let zero = self.b.ins().iconst(I64, 0);
        let one = self.b.ins().iconst(I64, 1);
        self.b.def_var(best, zero);
        self.b.def_var(index, one);
        let second = self.b.ins().iadd(rows, step);
        self.b.def_var(cursor, second);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, one, n);
        self.b.ins().brif(more, body, &[], exit, &[]);

        self.b.switch_to_block(body);
        let row = self.b.use_var(cursor);
        let i = self.b.use_var(index);
        let held = Held {
            keys: &best_keys,
            best,
            index: i,
            next,
        };
        // Measured (docs/PERFORMANCE.md): with every key cheap, one predictable branch
        // per row beats a branch per key whose outcome on ties is random; when a key
        // branches anyway, leaving the row at its first greater key is faster.
        if keys.len() >= 2 && keys.iter().all(|k| is_cheap(k)) {
            self.compare_eager(keys, row, &held);
        } else {
            self.compare_lazy(keys, row, &held);
        }

        self.b.switch_to_block(next);
        let i = self.b.use_var(index);
        let i = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(index, i);
        let row = self.b.use_var(cursor);
        let row = self.b.ins().iadd(row, step);
        self.b.def_var(cursor, row);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
        self.b.ins().brif(more, body, &[], exit, &[]);

        self.b.switch_to_block(exit);
        let result = self.b.use_var(best);
        self.b.ins().return_(&[result]);
    }

    /// Every key of the row, then one branch on "strictly less" computed without
    /// branches: for cheap keys this beats a branch per key, whose outcome on ties
    /// the predictor cannot guess.
    fn compare_eager(&mut self, keys: &[&Expr], row: Value, held: &Held<'_>) {
        let ks: Vec<Value> = keys.iter().map(|k| self.key_order(k, row)).collect();
        let hs: Vec<Value> = held.keys.iter().map(|v| self.b.use_var(*v)).collect();
        let last = ks.len() - 1;
        let mut less = self.b.ins().icmp(IntCC::SignedLessThan, ks[last], hs[last]);
        for j in (0..last).rev() {
            let lt = self.b.ins().icmp(IntCC::SignedLessThan, ks[j], hs[j]);
            let eq = self.b.ins().icmp(IntCC::Equal, ks[j], hs[j]);
            let tie_then_less = self.b.ins().band(eq, less);
            less = self.b.ins().bor(lt, tie_then_less);
        }
        let take = self.b.create_block();
        self.b.ins().brif(less, take, &[], held.next, &[]);
        self.b.switch_to_block(take);
        for (var, k) in held.keys.iter().zip(ks) {
            self.b.def_var(*var, k);
        }
        self.b.def_var(held.best, held.index);
        self.b.ins().jump(held.next, &[]);
    }

    /// Key by key: key j of the row is computed only when keys 0..j tie with the
    /// best, for key lists whose later keys are costly.
    fn compare_lazy(&mut self, keys: &[&Expr], row: Value, held: &Held<'_>) {
        for (j, key) in keys.iter().enumerate() {
            let k = self.key_order(key, row);
            let h = self.b.use_var(held.keys[j]);
            let take = self.b.create_block();
            let less = self.b.ins().icmp(IntCC::SignedLessThan, k, h);
            let not_less = self.b.create_block();
            self.b.ins().brif(less, take, &[], not_less, &[]);
            self.b.switch_to_block(not_less);
            if j + 1 < keys.len() {
                let tie = self.b.create_block();
                let equal = self.b.ins().icmp(IntCC::Equal, k, h);
                self.b.ins().brif(equal, tie, &[], held.next, &[]);
                self.b.switch_to_block(take);
                self.take(keys, held, j, k, row);
                self.b.switch_to_block(tie);
            } else {
                self.b.ins().jump(held.next, &[]);
                self.b.switch_to_block(take);
                self.take(keys, held, j, k, row);
            }
        }
        if keys.is_empty() {
            self.b.ins().jump(held.next, &[]);
        }
    }

    /// The row beat the best at key `j` (its keys before `j` tie, so the held order
    /// bits stay right): record it, computing its remaining keys.
    fn take(&mut self, keys: &[&Expr], held: &Held<'_>, j: usize, k: Value, row: Value) {
        self.b.def_var(held.keys[j], k);
        for (key, var) in keys.iter().zip(held.keys).skip(j + 1) {
            let k = self.key_order(key, row);
            self.b.def_var(*var, k);
        }
        self.b.def_var(held.best, held.index);
        self.b.ins().jump(held.next, &[]);
    }

    /// Converts an i64 byte count to the pointer type (a no-op on 64-bit targets).
    fn int_to_ptr(&mut self, v: Value) -> Value {
        match self.ptr.bits() {
            64 => v,
            _ => self.b.ins().ireduce(self.ptr, v),
        }
    }
}

/// The condition code of a comparison operator (IEEE: ordered, except `!=`).
fn comparison(op: BinaryOp) -> Option<FloatCC> {
    Some(match op {
        BinaryOp::Eq => FloatCC::Equal,
        BinaryOp::Ne => FloatCC::NotEqual,
        BinaryOp::Lt => FloatCC::LessThan,
        BinaryOp::Le => FloatCC::LessThanOrEqual,
        BinaryOp::Gt => FloatCC::GreaterThan,
        BinaryOp::Ge => FloatCC::GreaterThanOrEqual,
        _ => return None,
    })
}

/// `&&`, `||`, or `!` of one: values that need control flow to stay lazy.
fn is_lazy_logic(e: &Expr) -> bool {
    match e {
        Expr::Binary(BinaryOp::And | BinaryOp::Or, _, _) => true,
        Expr::Unary(UnaryOp::Not, x) => is_lazy_logic(x),
        _ => false,
    }
}

/// Comparisons and `!`: expressions whose value is 1.0 or 0.0.
fn is_boolean(e: &Expr) -> bool {
    match e {
        Expr::Binary(op, _, _) => comparison(*op).is_some(),
        Expr::Unary(UnaryOp::Not, _) => true,
        _ => false,
    }
}

/// What the scan of `select` holds while it compares one row.
struct Held<'k> {
    /// Order bits of the best row's keys.
    keys: &'k [Variable],
    /// The best row's index.
    best: Variable,
    /// The current row's index.
    index: Value,
    /// The block that advances to the next row.
    next: ir::Block,
}

/// Whether a key costs so little that computing it for every row beats branching
/// to skip it: straight-line arithmetic on a few slots, no call, no branch.
fn is_cheap(expr: &Expr) -> bool {
    fn walk(e: &Expr, budget: &mut u32) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match e {
            Expr::Const(_) | Expr::Slot(_) => true,
            Expr::Unary(_, x) => walk(x, budget),
            Expr::Binary(BinaryOp::And | BinaryOp::Or | BinaryOp::Rem, _, _) => false,
            Expr::Binary(_, a, b) => walk(a, budget) && walk(b, budget),
            Expr::Cond(..) | Expr::Sum(_) => false,
            Expr::Call(_, args) => args.iter().all(|a| walk(a, budget)),
        }
    }
    walk(expr, &mut 16)
}

/// Byte offset of a slot, which `ir::verify` bounded by `ir::verify::MAX_SLOTS`.
fn slot_offset(slot: u32) -> i32 {
    i32::try_from(u64::from(slot) * 8).expect("slot offset fits in 32 bits")
}
