//! The object backend of `poolc build`: the same planned functions as the JIT,
//! declared, lowered and compiled through the same `Definer` into a
//! cranelift-object `ObjectModule` for a chosen [`Target`] (position-independent,
//! every function exported as `<prefix>_<symbol>`), plus a read-only data symbol
//! holding the manifest bytes it is given and the accessor `<prefix>_manifest`. It
//! owns target and prefix validation. It does not write files, link, or know what
//! the manifest says (that is `crate::aot`), and it never runs the code it makes.

use std::fmt;
use std::str::FromStr;

use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{self as clir, AbiParam, InstBuilder, MemFlagsData, Signature};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, Linkage, Module, default_libcall_names};
use cranelift_object::{ObjectBuilder, ObjectModule};
use target_lexicon::{Architecture, BinaryFormat, Environment, OperatingSystem, Triple};

use crate::codegen::{
    CodegenError, Definer, Position, ProgramPlan, all_functions, isa_flags, module_err,
};
use crate::ir;

/// The triples `poolc build` generates for, in the wording of error messages.
pub const SUPPORTED_TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

/// A target `poolc build` supports: an ELF, GNU/Linux triple on x86-64 or aarch64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    triple: Triple,
}

/// Why a `--target` was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetError {
    /// target-lexicon could not parse the text.
    Unknown { given: String, reason: String },
    /// A real triple, but not one we generate and link for.
    Unsupported { given: String },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let supported = SUPPORTED_TARGETS.join(", ");
        match self {
            TargetError::Unknown { given, reason } => write!(
                f,
                "unknown target `{given}` ({reason}); supported targets: {supported}"
            ),
            TargetError::Unsupported { given } => write!(
                f,
                "unsupported target `{given}`; supported targets: {supported}"
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// The CPU family of a supported target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Target {
    /// Parses a triple (target-lexicon's grammar) and accepts it when it is one of
    /// [`SUPPORTED_TARGETS`], whatever its vendor field says.
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let triple = Triple::from_str(text).map_err(|e| TargetError::Unknown {
            given: text.to_string(),
            reason: e.to_string(),
        })?;
        Target::from_triple(triple, text)
    }

    /// The machine poolc runs on, when it is a supported target.
    pub fn host() -> Result<Target, TargetError> {
        let host = Triple::host();
        let text = host.to_string();
        Target::from_triple(host, &text)
    }

    fn from_triple(triple: Triple, given: &str) -> Result<Target, TargetError> {
        let arch_ok = matches!(
            triple.architecture,
            Architecture::X86_64 | Architecture::Aarch64(_)
        );
        let os_ok = triple.operating_system == OperatingSystem::Linux
            && triple.environment == Environment::Gnu
            && matches!(
                triple.binary_format,
                BinaryFormat::Elf | BinaryFormat::Unknown
            );
        if !(arch_ok && os_ok) {
            return Err(TargetError::Unsupported {
                given: given.to_string(),
            });
        }
        let mut triple = triple;
        // cranelift-object reads the object format from the triple.
        triple.binary_format = BinaryFormat::Elf;
        Ok(Target { triple })
    }

    pub fn arch(&self) -> Arch {
        match self.triple.architecture {
            Architecture::Aarch64(_) => Arch::Aarch64,
            _ => Arch::X86_64,
        }
    }

    /// The canonical name, one of [`SUPPORTED_TARGETS`].
    pub fn name(&self) -> &'static str {
        match self.arch() {
            Arch::X86_64 => SUPPORTED_TARGETS[0],
            Arch::Aarch64 => SUPPORTED_TARGETS[1],
        }
    }

    pub fn triple(&self) -> &Triple {
        &self.triple
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The start of every exported symbol: a C identifier, `poolc` unless chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix(String);

impl Prefix {
    /// Accepts a C identifier (`[A-Za-z_][A-Za-z0-9_]*`), so that every symbol and
    /// the header's macros are valid C names.
    pub fn parse(text: &str) -> Result<Prefix, String> {
        let mut chars = text.chars();
        let ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            Ok(Prefix(text.to_string()))
        } else {
            Err(format!(
                "`{text}` is not a C identifier (letters, digits and `_`, not starting with a digit)"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The exported name of a planned symbol (`pool_kv_queue_cmp` →
    /// `poolc_pool_kv_queue_cmp`).
    pub fn symbol(&self, symbol: &str) -> String {
        format!("{}_{symbol}", self.0)
    }

    /// The manifest accessor, `const char *<prefix>_manifest(uint64_t *len)`.
    pub fn manifest_fn(&self) -> String {
        self.symbol("manifest")
    }

    /// The manifest bytes themselves, a read-only data symbol.
    pub fn manifest_data(&self) -> String {
        self.symbol("manifest_data")
    }
}

impl Default for Prefix {
    fn default() -> Prefix {
        Prefix("poolc".to_string())
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An object file in memory, and the CLIF of every policy function in it.
#[derive(Clone, Debug)]
pub struct ObjectFile {
    /// The relocatable ELF object.
    pub bytes: Vec<u8>,
    /// Each policy function exactly as it was handed to Cranelift for compiling,
    /// after a `; <symbol>` line, in the format and order of `codegen::clif`
    /// (the manifest accessor is not a policy function and is left out).
    pub clif: String,
}

/// Compiles every policy function of `program` for `target` into one object,
/// with `manifest` (any bytes; a NUL is appended) behind `<prefix>_manifest`.
pub fn emit_object(
    program: &ir::Program,
    target: &Target,
    prefix: &Prefix,
    manifest: &[u8],
) -> Result<ObjectFile, CodegenError> {
    let plan = ProgramPlan::new(program)?;
    let mut builder = ObjectBuilder::new(target_isa(target)?, "poolc", default_libcall_names())
        .map_err(module_err(None))?;
    // `.eh_frame`, so debuggers and profilers can walk the stack through a policy
    // function (nothing unwinds through them otherwise: they never throw).
    builder.unwind_info(true);
    let mut module = ObjectModule::new(builder);
    let mut definer = Definer::new(&mut module, Linkage::Export, format!("{prefix}_"))?;
    let mut clif = String::new();
    for planned in all_functions(&plan) {
        let id = definer.build(&mut module, planned)?;
        clif.push_str(&format!("; {}\n{}\n", planned.symbol, definer.text()));
        definer.define_built(&mut module, id, &planned.symbol)?;
    }
    define_manifest(&mut module, prefix, manifest)?;
    let bytes = module.finish().emit().map_err(|e| CodegenError::Module {
        function: None,
        message: format!("writing the object file: {e}"),
    })?;
    Ok(ObjectFile { bytes, clif })
}

/// The ISA of `target` at its baseline (no CPU feature beyond what every machine of
/// the triple has: SSE2 on x86-64, so `floor`/`ceil` are libm calls), tuned for
/// speed, position-independent so the object links into a shared library.
fn target_isa(target: &Target) -> Result<OwnedTargetIsa, CodegenError> {
    let isa_err = |m: String| CodegenError::Isa(format!("{target}: {m}"));
    // Position-independent, so the object links into a shared library; libcalls go
    // through the PLT, libm being another library.
    let flags = isa_flags(Position::Independent, isa_err)?;
    cranelift_codegen::isa::lookup(target.triple().clone())
        .map_err(|e| isa_err(e.to_string()))?
        .finish(flags)
        .map_err(|e| isa_err(e.to_string()))
}

/// The manifest as `<prefix>_manifest_data` (its bytes and a NUL) and the accessor
/// `const char *<prefix>_manifest(uint64_t *len)`, which stores the length without
/// the NUL through `len` unless it is null and returns the data's address.
fn define_manifest(
    module: &mut ObjectModule,
    prefix: &Prefix,
    manifest: &[u8],
) -> Result<(), CodegenError> {
    let data_name = prefix.manifest_data();
    let fn_name = prefix.manifest_fn();
    let data = module
        .declare_data(&data_name, Linkage::Export, false, false)
        .map_err(module_err(Some(&data_name)))?;
    let mut bytes = manifest.to_vec();
    bytes.push(0);
    let mut desc = DataDescription::new();
    desc.define(bytes.into_boxed_slice());
    desc.set_align(8);
    module
        .define_data(data, &desc)
        .map_err(module_err(Some(&data_name)))?;

    let ptr = module.isa().pointer_type();
    let mut sig = Signature::new(module.isa().default_call_conv());
    sig.params.push(AbiParam::new(ptr));
    sig.returns.push(AbiParam::new(ptr));
    let id = module
        .declare_function(&fn_name, Linkage::Export, &sig)
        .map_err(module_err(Some(&fn_name)))?;
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = clir::UserFuncName::testcase(&fn_name);
    let gv = module.declare_data_in_func(data, &mut ctx.func);
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    let store = b.create_block();
    let done = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let len_out = *b
        .block_params(entry)
        .first()
        .expect("the accessor's signature has a first parameter");
    b.ins().brif(len_out, store, &[], done, &[]);
    b.switch_to_block(store);
    let len = b.ins().iconst(I64, manifest.len() as i64);
    // `len` is a caller's `uint64_t *`: aligned, writable, nothing else aliases it.
    b.ins().store(MemFlagsData::trusted(), len, len_out, 0);
    b.ins().jump(done, &[]);
    b.switch_to_block(done);
    let addr = b.ins().symbol_value(ptr, gv);
    b.ins().return_(&[addr]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
    module
        .define_function(id, &mut ctx)
        .map_err(module_err(Some(&fn_name)))
}
