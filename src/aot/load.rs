//! Loading a shared object made by `poolc build` in place of the JIT. A library is
//! code that runs in this process, so it is refused, if at all, before the dynamic
//! loader sees it: the file is read as bytes and its ELF header and manifest are
//! checked first — an ELF file, for this machine's ISA, a shared object, with the
//! manifest data symbol `<prefix>_manifest_data`, whose text has this poolc's format
//! version, names the same target, and equals field for field (all but
//! `generator`: values, attributes, pools, stages, slot layouts, key lists,
//! expressions, read-sets, symbols) what this poolc writes for the checked
//! `ir::Program` the host runs. Only then is it opened with libloading (running its
//! initialisers; the dynamic loader's own message is shown if it refuses), and its
//! functions resolved into the same [`Compiled`] bundle the JIT gives, whose
//! [`CodeHandle`] keeps the library loaded (a file replaced between the check and
//! the open is not detected: docs/RELIABILITY.md, "Not done"). No function of the
//! library is called here. It is the only place where a symbol of a library becomes
//! a Rust function pointer. It never generates code, writes files or prints.

use std::error::Error as _;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;
use object::{Object, ObjectSection, ObjectSymbol};
use poolrt::policy::{
    CmpFn, CodeHandle, KeyFn, KeyList, PoolPolicy, SelectFn, SpillFns, StagePolicy, TimeFn, WorkFn,
};

use crate::aot::manifest::{self, FORMAT, Json};
use crate::aot::object::{Arch, Prefix, Target};
use crate::codegen::{CodegenError, Compiled, ListPlan, ProgramPlan};
use crate::ir;

/// Why a library was refused. Every variant is a message for a person.
#[derive(Debug)]
pub enum LoadError {
    /// The file cannot be read, or the dynamic loader refused it (its own message).
    Open { path: PathBuf, message: String },
    /// The file is not an ELF file.
    NotElf { path: PathBuf, problem: String },
    /// The library's machine code is for another ISA than this machine's.
    Isa {
        path: PathBuf,
        library: String,
        host: String,
    },
    /// An ELF file that is not a shared object (e.g. `--emit obj`'s object file).
    NotShared { path: PathBuf, kind: String },
    /// No manifest data symbol: not a library of `poolc build` (or another prefix).
    NoManifest { path: PathBuf, symbol: String },
    /// The manifest names another target than the machine code is for.
    TargetMismatch {
        path: PathBuf,
        manifest: String,
        code: String,
    },

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
            LoadError::NotElf { path, problem } => write!(
                f,
                "{} is not a shared object built by `poolc build` (not ELF: {problem}); \
                 refused before loading",
                path.display()
            ),
            LoadError::Isa {
                path,
                library,
                host,
            } => write!(
                f,
                "{} holds {library} code, but this machine is {host}; rebuild it with \
                 `poolc build --target` for this machine",
                path.display()
            ),
            LoadError::NotShared { path, kind } => write!(
                f,
                "{} is an ELF {kind}, not a shared object; link it (`poolc build --emit so`)",
                path.display()
            ),
            LoadError::NoManifest { path, symbol } => write!(
                f,
                "{} has no poolc manifest (no symbol `{symbol}`): it is not a library \
                 built by `poolc build` with this --prefix; refused before loading",
                path.display()
            ),
            LoadError::TargetMismatch {
                path,
                manifest,
                code,
            } => write!(
                f,
                "{}: the manifest says {manifest} but the machine code is {code}; refused",
                path.display()
            ),

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
    // Everything that can be checked without running the library's code is.
    let inspected = inspect(path, prefix)?;
    check_manifest(path, prefix, &inspected, program)?;
    // SAFETY: the caller vouches for the file (this function's contract), and its
    // manifest has just been checked against `program`.
    let lib = unsafe { Library::new(path) }.map_err(|e| open_error(path, &e))?;
    let loader = Loader { lib, path, prefix };

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
                p.route.as_ref().map(|l| loader.list(l)).transpose()?,
                match &p.handoff {
                    None => None,
                    Some((work, shape)) => Some((loader.get::<KeyFn>(&work.symbol)?, *shape)),
                },
            ))
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    let stages = plan
        .stages
        .iter()
        .map(|s| Ok((loader.get::<TimeFn>(&s.time.symbol)?, s.shape)))
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
        .map(
            |(queue, evict, preempt, spill, route, handoff)| PoolPolicy {
                route: route.map(key_list),
                handoff: handoff.map(|(work, shape)| {
                    // SAFETY: as for key lists, on the handoff layout of `shape` slots.
                    unsafe { WorkFn::new(work, shape, code.clone()) }
                }),
                queue: queue.map(key_list),
                evict: evict.map(key_list),
                preempt: preempt.map(key_list),
                spill: spill.map(|(pred, work, shape)| {
                    // SAFETY: as for key lists, on the entry layout of `shape` slots.
                    unsafe { SpillFns::new(pred, work, shape, code.clone()) }
                }),
            },
        )
        .collect();
    let stages = stages
        .into_iter()
        .map(|(time, shape)| {
            // SAFETY: as for key lists, on the time layout of `shape` slots.
            unsafe { StagePolicy::new(time, shape, code.clone()) }
        })
        .collect();
    Ok(Compiled::new(program.clone(), pools, stages, code))
}

/// The dynamic loader's error with its own description (libloading's `Display`
/// alone says only "dlopen failed").
fn open_error(path: &Path, e: &libloading::Error) -> LoadError {
    let mut message = e.to_string();
    if let Some(source) = e.source() {
        message = format!("{message}: {source}");
    }
    LoadError::Open {
        path: path.to_path_buf(),
        message,
    }
}

/// What a checked file's ELF header and manifest data symbol say.
struct Inspected {
    /// The manifest's bytes (without the NUL the data symbol ends with).
    manifest: Vec<u8>,
    /// The ISA its machine code is for.
    arch: Arch,
}

/// The manifest text of the library at `path` built with `prefix`, read from the
/// file without loading it (nothing of it runs), after checking that it is an ELF
/// shared object for this machine's ISA; the text itself is not checked.
pub fn read_manifest(path: &Path, prefix: &Prefix) -> Result<String, LoadError> {
    Ok(manifest_text(path, &inspect(path, prefix)?)?.to_string())
}

fn manifest_text<'a>(path: &Path, inspected: &'a Inspected) -> Result<&'a str, LoadError> {
    std::str::from_utf8(&inspected.manifest).map_err(|_| LoadError::BadManifest {
        path: path.to_path_buf(),
        problem: "not UTF-8".into(),
    })
}

/// Reads `path` as an ELF file and finds its manifest, in this order: ELF, ISA,
/// shared object, manifest symbol.
fn inspect(path: &Path, prefix: &Prefix) -> Result<Inspected, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let file = object::File::parse(&*bytes).map_err(|e| LoadError::NotElf {
        path: path.to_path_buf(),
        problem: e.to_string(),
    })?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(LoadError::NotElf {
            path: path.to_path_buf(),
            problem: format!("a {:?} file", file.format()),
        });
    }
    let arch = match file.architecture() {
        object::Architecture::X86_64 => Some(Arch::X86_64),
        object::Architecture::Aarch64 => Some(Arch::Aarch64),
        _ => None,
    };
    let host = Target::host().map_err(|e| LoadError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let arch = match arch {
        Some(a) if a == host.arch() => a,
        other => {
            return Err(LoadError::Isa {
                path: path.to_path_buf(),
                library: match other {
                    Some(a) => format!("{a:?}"),
                    None => format!("{:?}", file.architecture()),
                },
                host: format!("{:?}", host.arch()),
            });
        }
    };
    if file.kind() != object::ObjectKind::Dynamic {
        return Err(LoadError::NotShared {
            path: path.to_path_buf(),
            kind: format!("{:?} file", file.kind()).to_lowercase(),
        });
    }
    let name = prefix.manifest_data();
    let no_manifest = || LoadError::NoManifest {
        path: path.to_path_buf(),
        symbol: name.clone(),
    };
    let symbol = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(name.as_str()))
        .ok_or_else(no_manifest)?;
    let bad = |problem: &str| LoadError::BadManifest {
        path: path.to_path_buf(),
        problem: format!("the symbol `{name}` {problem}"),
    };
    let section = symbol
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .ok_or_else(|| bad("is in no section"))?;
    let data = section
        .data()
        .map_err(|_| bad("is in a section without data"))?;
    let start = symbol
        .address()
        .checked_sub(section.address())
        .and_then(|o| usize::try_from(o).ok());
    let len = usize::try_from(symbol.size()).ok();
    let bytes = match (start, len) {
        (Some(start), Some(len)) => start
            .checked_add(len)
            .and_then(|end| data.get(start..end))
            .ok_or_else(|| bad("lies outside its section"))?,
        _ => return Err(bad("lies outside its section")),
    };
    let manifest = match bytes.split_last() {
        Some((0, text)) => text.to_vec(),
        _ => return Err(bad("does not end with a NUL")),
    };
    Ok(Inspected { manifest, arch })
}

/// The format version first (so an old library gets that message, not a field
/// difference), then the target against the machine code, then everything but
/// `generator` must equal what this poolc writes for `program` and that target.
fn check_manifest(
    path: &Path,
    prefix: &Prefix,
    inspected: &Inspected,
    program: &ir::Program,
) -> Result<(), LoadError> {
    let text = manifest_text(path, inspected)?;
    let bad = |problem: &str| LoadError::BadManifest {
        path: path.to_path_buf(),
        problem: problem.into(),
    };
    let found = manifest::parse(text).map_err(|error| LoadError::Unparsable {
        path: path.to_path_buf(),
        error,
    })?;
    match found.get("format") {
        Some(Json::Number(n)) if *n == FORMAT.to_string() => {}
        Some(Json::Number(n)) => {
            return Err(LoadError::Format {
                path: path.to_path_buf(),
                found: n.clone(),
            });
        }
        _ => return Err(bad("no `format` number")),
    }
    let target = match found.get("target") {
        Some(Json::String(t)) => Target::parse(t).map_err(|e| bad(&e.to_string()))?,
        _ => return Err(bad("no `target` string")),
    };
    let code = inspected.arch;
    if target.arch() != code {
        return Err(LoadError::TargetMismatch {
            path: path.to_path_buf(),
            manifest: target.name().to_string(),
            code: format!("{code:?}"),
        });
    }
    let expected = manifest::parse(&manifest::write(program, &target, prefix))
        .map_err(LoadError::OwnManifest)?;
    match manifest::first_difference(&found, &expected, &["generator"]) {
        None => Ok(()),
        Some((at, library, spec)) => Err(LoadError::Mismatch {
            path: path.to_path_buf(),
            at,
            library,
            spec,
        }),
    }
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
}
