//! Semantic analysis (placeholder).

use crate::diag::Diagnostic;
use crate::ir::Program;
use crate::syntax::ast::Spec;
use crate::Options;

pub fn analyze(_spec: &Spec, _options: &Options) -> Result<Program, Vec<Diagnostic>> {
    Err(vec![Diagnostic::new("todo", "semantic analysis is not written yet")])
}
