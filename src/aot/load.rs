//! Loading a shared object made by `poolc build` in place of the JIT: open it with
//! libloading, read its manifest through `<prefix>_manifest`, check that manifest
//! against the checked `ir::Program` the host runs (format version, then every
//! field but `generator`: values, attributes, pools, stages, layouts,
//! key lists, expressions, read-sets, symbols), and hand out the same
//! [`Compiled`] bundle the JIT gives, whose [`CodeHandle`] keeps the library loaded.
//! It is the only place where a symbol of a library becomes a Rust function
//! pointer. It never generates code, writes files or prints.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;
use poolrt::policy::{
    CmpFn, CodeHandle, KeyFn, KeyList, PoolPolicy, SelectFn, SpillFns, StagePolicy, TimeFn,
};

use crate::aot::manifest::{self, FORMAT, Json};
use crate::aot::object::{Prefix, Target};
use crate::codegen::{CodegenError, Compiled, ListPlan, ProgramPlan};
use crate::ir;

/// Why a library was refused. Every variant is a message for a person.
#[derive(Debug)]
pub enum LoadError {
    /// The dynamic loader refused the file (missing, not a library, wrong machine).
    Open { path: PathBuf, message: String },
    /// A symbol the program needs is absent: not a poolc library, another prefix,
    /// or built from another spec.
    MissingSymbol { path: PathBuf, symbol: String },
    /// The manifest is not what `poolc build` writes.
    BadManifest { path: PathBuf, problem: String },
    /// The manifest is not JSON.
    Unparsable {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// The manifest's format version is not the one this poolc reads.
    Format { path: PathBuf, found: String },
    /// The library was built from another program (spec or `--set` values).
    Mismatch {
        path: PathBuf,
        at: String,
        library: String,
        spec: String,
    },
    /// The program breaks the IR's contract (a compiler bug or hand-built IR).
    Verify(ir::VerifyError),
    /// The program cannot be planned (a compiler bug).
    Plan(CodegenError),
    /// The manifest this poolc wrote for the program does not parse (a poolc bug).
    OwnManifest(serde_json::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open { path, message } => {
                write!(f, "cannot load {}: {message}", path.display())
            }
            LoadError::MissingSymbol { path, symbol } => write!(
                f,
                "{} has no symbol `{symbol}`: is it a library built by `poolc build` \
                 (with this --prefix) from this spec?",
                path.display()
            ),
            LoadError::BadManifest { path, problem } => {
                write!(f, "{}: unreadable manifest: {problem}", path.display())
            }
            LoadError::Unparsable { path, error } => {
                write!(f, "{}: unreadable manifest: {error}", path.display())
            }
            LoadError::Format { path, found } => write!(
                f,
                "{}: manifest format {found}, but this poolc reads format {FORMAT}; \
                 rebuild the library with this poolc",
                path.display()
            ),
            LoadError::Mismatch {
                path,
                at,
                library,
                spec,
            } => write!(
                f,
                "{} was built from another spec or other --set values: at {at} the \
                 library has {library}, the spec has {spec}",
                path.display()
            ),
            LoadError::Verify(e) => e.fmt(f),
            LoadError::Plan(e) => e.fmt(f),
            LoadError::OwnManifest(e) => write!(f, "poolc wrote an unreadable manifest: {e}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// `const char *<prefix>_manifest(uint64_t *len)`.
type ManifestFn = unsafe extern "C" fn(len: *mut u64) -> *const u8;

/// Loads a library built with the default prefix (`poolc`); see [`load_with_prefix`].
///
/// # Safety
/// As [`load_with_prefix`].
pub unsafe fn load(path: &Path, program: &ir::Program) -> Result<Compiled, LoadError> {
    // SAFETY: the caller upholds this function's contract, which is the callee's.
    unsafe { load_with_prefix(path, program, &Prefix::default()) }
}

/// Loads the shared object at `path`, built by `poolc build --prefix prefix`, and
/// returns its functions for `program` when its manifest matches `program` exactly.
///
/// # Safety
/// Loading a library runs its initialisers, and its functions are then called
/// through the types the manifest promises; nothing can check machine code. `path`
/// must be a library written by `poolc build` (or one that honours docs/ABI.md
/// for every symbol its manifest names). A library of poolc has no initialisers
/// and functions that match their manifest.
pub unsafe fn load_with_prefix(
    path: &Path,
    program: &ir::Program,
    prefix: &Prefix,
) -> Result<Compiled, LoadError> {
    // The program the library is checked against must itself keep the IR's
    // contract, or a matching manifest would prove nothing.
    ir::verify(program).map_err(LoadError::Verify)?;
    let plan = ProgramPlan::new(program).map_err(LoadError::Plan)?;
    // SAFETY: the caller vouches for the file (this function's contract).
    let lib = unsafe { Library::new(path) }.map_err(|e| LoadError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let loader = Loader { lib, path, prefix };
    loader.check_manifest(program)?;

    let pools = plan
        .pools
        .iter()
        .map(|p| {
            Ok((
                p.queue.as_ref().map(|l| loader.list(l)).transpose()?,
                p.evict.as_ref().map(|l| loader.list(l)).transpose()?,
                p.preempt.as_ref().map(|l| loader.list(l)).transpose()?,
                match &p.spill {
                    None => None,
                    Some(s) => Some((
                        loader.get::<KeyFn>(&s.pred.symbol)?,
                        loader.get::<KeyFn>(&s.work.symbol)?,
                        s.shape,
                    )),
                },
            ))
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    let stages = plan
        .stages
        .iter()
        .map(|s| Ok((loader.get::<TimeFn>(&s.time.symbol)?, s.ctx_len)))
        .collect::<Result<Vec<_>, LoadError>>()?;

    let code = CodeHandle::new(Arc::new(loader.lib));
    let key_list = |(keys, cmp, select, shape)| {
        // SAFETY: the manifest matched `program` field by field, so each symbol was
        // generated by `poolc build` from this very key list on a layout of `shape`
        // slots, with the types of docs/ABI.md; `code` keeps the library loaded.
        unsafe { KeyList::new(keys, cmp, select, shape, code.clone()) }
    };
    let pools = pools
        .into_iter()
        .map(|(queue, evict, preempt, spill)| PoolPolicy {
            queue: queue.map(key_list),
            evict: evict.map(key_list),
            preempt: preempt.map(key_list),
            spill: spill.map(|(pred, work, shape)| {
                // SAFETY: as for key lists, on the entry layout of `shape` slots.
                unsafe { SpillFns::new(pred, work, shape, code.clone()) }
            }),
        })
        .collect();
    let stages = stages
        .into_iter()
        .map(|(time, ctx_len)| {
            // SAFETY: as for key lists; `time` reads at most `ctx_len` ctx slots.
            unsafe { StagePolicy::new(time, ctx_len, code.clone()) }
        })
        .collect();
    Ok(Compiled::new(program.clone(), pools, stages, code))
}

/// The manifest text of a library built with `prefix`, without checking it (for
/// tools that show it, and for tests).
///
/// # Safety
/// As [`load_with_prefix`].
pub unsafe fn read_manifest(path: &Path, prefix: &Prefix) -> Result<String, LoadError> {
    // SAFETY: the caller vouches for the file.
    let lib = unsafe { Library::new(path) }.map_err(|e| LoadError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    Loader { lib, path, prefix }.manifest()
}

struct Loader<'a> {
    lib: Library,
    path: &'a Path,
    prefix: &'a Prefix,
}

/// A key list's pointers and shape, before a [`CodeHandle`] exists to own them.
type ListFns = (Vec<KeyFn>, CmpFn, SelectFn, poolrt::policy::Shape);

impl Loader<'_> {
    /// The exported function `<prefix>_<symbol>` as a pointer of type `F`.
    fn get<F: Copy>(&self, symbol: &str) -> Result<F, LoadError> {
        let name = self.prefix.symbol(symbol);
        // SAFETY: every `F` used here is the ABI type of the function kind that
        // `poolc build` exports under this name (the plan gives kind and name
        // together, and the manifest check proved the library was built from the
        // same plan). The pointer is copied out of the `Symbol`; it stays valid as
        // long as the library, which the `CodeHandle` made from it keeps loaded.
        let sym = unsafe { self.lib.get::<F>(name.as_bytes()) }.map_err(|_| {
            LoadError::MissingSymbol {
                path: self.path.to_path_buf(),
                symbol: name.clone(),
            }
        })?;
        Ok(*sym)
    }

    fn list(&self, plan: &ListPlan<'_>) -> Result<ListFns, LoadError> {
        let keys = plan
            .keys
            .iter()
            .map(|k| self.get::<KeyFn>(&k.symbol))
            .collect::<Result<_, _>>()?;
        Ok((
            keys,
            self.get::<CmpFn>(&plan.cmp.symbol)?,
            self.get::<SelectFn>(&plan.select.symbol)?,
            plan.shape,
        ))
    }

    fn bad(&self, problem: impl Into<String>) -> LoadError {
        LoadError::BadManifest {
            path: self.path.to_path_buf(),
            problem: problem.into(),
        }
    }

    fn manifest(&self) -> Result<String, LoadError> {
        let name = self.prefix.manifest_fn();
        // SAFETY: `<prefix>_manifest` has type `ManifestFn` in every poolc library.
        let accessor = unsafe { self.lib.get::<ManifestFn>(name.as_bytes()) }.map_err(|_| {
            LoadError::MissingSymbol {
                path: self.path.to_path_buf(),
                symbol: name.clone(),
            }
        })?;
        let mut len = 0u64;
        // SAFETY: the accessor writes one u64 through a valid pointer and returns
        // the address of read-only data that lives as long as the library.
        let ptr = unsafe { accessor(&mut len) };
        let len = usize::try_from(len).map_err(|_| self.bad("length overflows usize"))?;
        if ptr.is_null() {
            return Err(self.bad("the accessor returned null"));
        }
        // SAFETY: `ptr` points to `len` bytes of the library's read-only data (the
        // accessor's contract), valid while `self.lib` is loaded; they are copied.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        String::from_utf8(bytes).map_err(|_| self.bad("not UTF-8"))
    }

    /// The format version first (so an old library gets that message, not a field
    /// difference), then everything but `generator` must equal what this poolc
    /// writes for `program` and the library's own target (the dynamic loader has
    /// already accepted its machine code).
    fn check_manifest(&self, program: &ir::Program) -> Result<(), LoadError> {
        let text = self.manifest()?;
        let found = manifest::parse(&text).map_err(|error| LoadError::Unparsable {
            path: self.path.to_path_buf(),
            error,
        })?;
        match found.get("format") {
            Some(Json::Number(n)) if *n == FORMAT.to_string() => {}
            Some(Json::Number(n)) => {
                return Err(LoadError::Format {
                    path: self.path.to_path_buf(),
                    found: n.clone(),
                });
            }
            _ => return Err(self.bad("no `format` number")),
        }
        let target = match found.get("target") {
            Some(Json::String(t)) => Target::parse(t).map_err(|e| self.bad(e.to_string()))?,
            _ => return Err(self.bad("no `target` string")),
        };
        let expected = manifest::parse(&manifest::write(program, &target, self.prefix))
            .map_err(LoadError::OwnManifest)?;
        match manifest::first_difference(&found, &expected, &["generator"]) {
            None => Ok(()),
            Some((at, library, spec)) => Err(LoadError::Mismatch {
                path: self.path.to_path_buf(),
                at,
                library,
                spec,
            }),
        }
    }
}
