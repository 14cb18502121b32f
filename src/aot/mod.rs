//! Ahead-of-time compilation: everything about shared objects lives here. From a
//! checked program to files a host in any language can use — an object file
//! ([`object`](mod@object), the codegen plan compiled by cranelift-object) or a shared library
//! (linked by the system's C compiler driver against libm), its C header
//! ([`header`]) and, inside the library, its manifest ([`manifest`]); and back:
//! [`load`] opens such a library in place of the JIT. This file owns `poolc build`'s
//! output files, the temporary directory, the choice and running of the linker and
//! the errors of all that. Lowering is `codegen`'s; nothing here prints.

pub mod header;
pub mod load;
pub mod manifest;
pub mod object;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use self::object::{Arch, ObjectFile, Prefix, Target};
use crate::atomic_file::AtomicFile;
use crate::codegen::CodegenError;
use crate::ir;

/// What `poolc build` writes at the output path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Emit {
    /// A relocatable ELF object, for hosts that link it themselves (with `-lm`).
    Object,
    /// A shared library (`.so`), linked with the system linker.
    #[default]
    SharedObject,
}

/// Everything `build` needs besides the program and the output path.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub target: Target,
    pub emit: Emit,
    pub prefix: Prefix,
    /// The linker command (a program and its leading arguments, split at
    /// whitespace); `None` picks [`default_linker`].
    pub linker: Option<String>,
    /// Where the header goes; `None` puts it next to the output with extension `.h`.
    pub header: Option<PathBuf>,
    /// How the header's opening comment names the spec (usually its path).
    pub source_name: String,
}

/// The files a build wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    pub output: PathBuf,
    pub header: PathBuf,
}

/// Why a build failed. Every variant is a message for a person.
#[derive(Debug)]
pub enum BuildError {
    Codegen(CodegenError),
    /// An output file (or the temporary directory) could not be written.
    Write {
        path: PathBuf,
        error: io::Error,
    },
    /// The header would overwrite the output.
    HeaderIsOutput(PathBuf),
    /// The linker program does not exist (or cannot be run).
    LinkerMissing {
        linker: String,
        target: &'static str,
        package: &'static str,
        error: io::Error,
    },
    /// The linker ran and failed.
    LinkFailed {
        linker: String,
        status: String,
        stderr: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Codegen(e) => write!(f, "{e}"),
            BuildError::Write { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
            BuildError::HeaderIsOutput(path) => write!(
                f,
                "the header would overwrite the output {}; name another with --header",
                path.display()
            ),
            BuildError::LinkerMissing {
                linker,
                target,
                package,
                error,
            } => write!(
                f,
                "cannot run the linker `{linker}` for {target} ({error}); install it with \
                 `apt-get install {package}` (Debian package {package}), or name another \
                 with --linker, or write an object file with --emit obj"
            ),
            BuildError::LinkFailed {
                linker,
                status,
                stderr,
            } => {
                write!(f, "the linker `{linker}` failed ({status})")?;
                if !stderr.trim().is_empty() {
                    write!(f, ":\n{}", stderr.trim_end())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BuildError {}

impl From<CodegenError> for BuildError {
    fn from(e: CodegenError) -> BuildError {
        BuildError::Codegen(e)
    }
}

/// The C compiler driver that links for `target` on this machine: `cc` for the
/// host's own architecture, the Debian cross compiler otherwise.
pub fn default_linker(target: &Target) -> &'static str {
    if same_arch_as_host(target) {
        "cc"
    } else {
        match target.arch() {
            Arch::X86_64 => "x86_64-linux-gnu-gcc",
            Arch::Aarch64 => "aarch64-linux-gnu-gcc",
        }
    }
}

/// The Debian package that provides [`default_linker`].
pub fn linker_package(target: &Target) -> &'static str {
    if same_arch_as_host(target) {
        "gcc"
    } else {
        match target.arch() {
            Arch::X86_64 => "gcc-x86-64-linux-gnu",
            Arch::Aarch64 => "gcc-aarch64-linux-gnu",
        }
    }
}

fn same_arch_as_host(target: &Target) -> bool {
    Target::host().is_ok_and(|h| h.arch() == target.arch())
}

/// The header path `build` uses when none is given: the output's with `.h`.
pub fn default_header(output: &Path) -> PathBuf {
    output.with_extension("h")
}

/// The manifest, the object file and the header of `program`, in memory.
pub fn object(
    program: &ir::Program,
    options: &BuildOptions,
) -> Result<(ObjectFile, String), BuildError> {
    let text = manifest::write(program, &options.target, &options.prefix);
    let obj = object::emit_object(program, &options.target, &options.prefix, text.as_bytes())?;
    let header = header::render(
        program,
        &options.target,
        &options.prefix,
        &options.source_name,
    );
    Ok((obj, header))
}

/// Builds `program` into `output` (an object file or a linked shared library, as
/// `options.emit` says) and writes its header. Both are written whole beside their
/// paths and renamed only once both are written ([`crate::atomic_file`]), so a
/// failed code generation, link or write leaves neither file half-written.
pub fn build(
    program: &ir::Program,
    output: &Path,
    options: &BuildOptions,
) -> Result<Built, BuildError> {
    let header_path = options
        .header
        .clone()
        .unwrap_or_else(|| default_header(output));
    if header_path == output {
        return Err(BuildError::HeaderIsOutput(header_path));
    }
    let (obj, header) = object(program, options)?;
    let library = match options.emit {
        Emit::Object => staged(output, &obj.bytes)?,
        Emit::SharedObject => {
            let dir = TempDir::new()?;
            let obj_path = dir.path.join("policy.o");
            let so_path = dir.path.join("policy.so");
            staged(&obj_path, &obj.bytes)?.commit(&obj_path)?;
            link(
                &options.target,
                options.linker.as_deref(),
                &obj_path,
                &so_path,
            )?;
            // Linked in the temporary directory, then written beside the output, so
            // an unwritable output is reported by its own path.
            let so = std::fs::read(&so_path).map_err(|error| BuildError::Write {
                path: so_path.clone(),
                error,
            })?;
            staged(output, &so)?
        }
    };
    let header_file = staged(&header_path, header.as_bytes())?;
    library.commit(output)?;
    header_file.commit(&header_path)?;
    Ok(Built {
        output: output.to_path_buf(),
        header: header_path,
    })
}

/// An output written in full to its temporary file, not yet renamed to its path.
struct Staged(AtomicFile);

impl Staged {
    fn commit(self, path: &Path) -> Result<(), BuildError> {
        self.0.commit().map_err(|error| BuildError::Write {
            path: path.to_path_buf(),
            error,
        })
    }
}

/// Writes `bytes` to a temporary file beside `path` ([`crate::atomic_file`]).
fn staged(path: &Path, bytes: &[u8]) -> Result<Staged, BuildError> {
    let error = |error| BuildError::Write {
        path: path.to_path_buf(),
        error,
    };
    let mut file = AtomicFile::create(path).map_err(error)?;
    file.write_all(bytes).map_err(error)?;
    Ok(Staged(file))
}

/// Runs `linker -shared -o so obj -lm`: libm provides `fmod` (and `floor`/`ceil`,
/// which baseline x86-64 calls); `--no-undefined` turns a missing symbol into a
/// link error instead of a failure at load time.
fn link(target: &Target, linker: Option<&str>, obj: &Path, so: &Path) -> Result<(), BuildError> {
    let command = linker.unwrap_or_else(|| default_linker(target));
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or(command);
    let mut cmd = Command::new(program);
    cmd.args(words)
        .arg("-shared")
        .arg("-o")
        .arg(so)
        .arg(obj)
        .arg("-lm")
        .arg("-Wl,--no-undefined");
    let out = cmd.output().map_err(|error| BuildError::LinkerMissing {
        linker: command.to_string(),
        target: target.name(),
        package: linker_package(target),
        error,
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(BuildError::LinkFailed {
            linker: command.to_string(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> Result<TempDir, BuildError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("poolc-build-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|error| BuildError::Write {
            path: path.clone(),
            error,
        })?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover directory in /tmp is harmless.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
