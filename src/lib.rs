//! `poolc`: the Pool compiler as a library. The pipeline is `syntax` (text → AST) →
//! `sema` (AST → checked IR, checked again by `ir::verify` wherever it crosses a
//! boundary) → `interp` / `codegen` (IR → values / machine code) → `aot` (shared
//! objects: emit, link, manifest, header, load); `bridge` turns IR and compiled code
//! into the runtime's configuration; `atomic_file` writes every whole-file output. The
//! tools (`poolc_tools`, tools/) and the `poolc` binary (cli/) are crates on top of this
//! one, so nothing here can name them. This crate never prints and never exits.

pub mod aot;
pub mod assign;
/// Files written whole or not at all; the runtime's, shared by both crates.
pub use poolrt::atomic_file;
pub mod bridge;
pub mod codegen;
pub mod diag;
pub mod interp;
pub mod ir;
pub mod sema;
pub mod syntax;

pub use codegen::{CompileError, Compiled, compile};
use diag::Diagnostic;

/// Compile-time options shared by every entry point.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--set NAME=VALUE` overrides of `param` declarations (D2), in command-line order.
    pub set: Vec<(String, f64)>,
}

/// Parses and checks a spec, giving its IR or every diagnostic found.
pub fn check(source: &str, options: &Options) -> Result<ir::Program, Vec<Diagnostic>> {
    check_with_warnings(source, options).map(|(program, _)| program)
}

/// [`check`], with the warnings of a spec that checks (`poolc check` shows them).
pub fn check_with_warnings(
    source: &str,
    options: &Options,
) -> Result<(ir::Program, Vec<Diagnostic>), Vec<Diagnostic>> {
    let spec = syntax::parse(source)
        .map_err(|errors| errors.iter().map(|e| e.to_diagnostic()).collect::<Vec<_>>())?;
    let program = sema::analyze(&spec, options)?;
    Ok((program, sema::lint(&spec)))
}
