//! Target (a): source → check → IR → JIT. Any bytes, read as UTF-8 text (invalid
//! sequences replaced), go through `poolc::check`; a refusal must carry at least one
//! diagnostic and render without panicking, and an accepted spec must keep the IR's
//! contract (`ir::verify`) and compile with the JIT (which verifies Cranelift's
//! output too). It never runs the compiled code: target (b) does.

use poolc::Options;
use poolc::diag::Styling;

/// What the pipeline did with one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Diagnostics: the text is not a valid spec.
    Refused,
    /// The spec checked, verified and compiled.
    Compiled,
}

/// Runs one input through the pipeline; panics when a property fails.
pub fn run(data: &[u8]) -> Verdict {
    let text = String::from_utf8_lossy(data);
    match poolc::check(&text, &Options::default()) {
        Err(diags) => {
            assert!(!diags.is_empty(), "a refusal with no diagnostic");
            let rendered = poolc::diag::render("fuzz.pool", &text, &diags, Styling::Plain);
            assert!(!rendered.is_empty(), "diagnostics rendered to nothing");
            Verdict::Refused
        }
        Ok(program) => {
            if let Err(e) = poolc::ir::verify(&program) {
                panic!("a checked spec breaks the IR's contract: {e}\n{text}");
            }
            if let Err(e) = poolc::codegen::compile_program(&program) {
                panic!("a spec that checks does not compile: {e}\n{text}");
            }
            Verdict::Compiled
        }
    }
}
