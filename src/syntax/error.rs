//! Lexical and parse errors as data, and their conversion to `Diagnostic`.

use crate::diag::Diagnostic;
use crate::syntax::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum SyntaxError {
    Expected { span: Span, expected: String },
}

impl SyntaxError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            SyntaxError::Expected { span, expected } => {
                Diagnostic::new("parse", format!("expected {expected}")).primary(*span, "here")
            }
        }
    }
}
