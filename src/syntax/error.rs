//! Lexical (L3) and parse errors as data, and their one conversion to `Diagnostic`. It
//! owns the wording of every syntax error; it must not decide where errors are found
//! (the lexer and parser do) nor print anything (`diag::render` does).

use crate::diag::Diagnostic;
use crate::syntax::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum SyntaxError {
    /// A character that starts no token (L3); non-ASCII characters span all their bytes.
    StrayCharacter { span: Span, ch: char },
    /// A `/*` with no `*/` after it (L3); the span is the opening `/*`.
    UnterminatedComment { span: Span },
    /// A number not of the L2 shape, or running into a name (L3); the span covers the
    /// whole malformed word, and `reason` says what is wrong with it.
    MalformedNumber {
        span: Span,
        text: String,
        reason: &'static str,
    },
    /// The grammar wanted `expected` (where: `context`, possibly empty) and met the
    /// token described by `found`, whose span is `span`.
    Expected {
        span: Span,
        expected: String,
        context: String,
        found: String,
        note: Option<&'static str>,
    },
    /// An expression deeper than `limit` levels, marked where the limit was crossed.
    TooDeep { span: Span, limit: u32 },
}

impl SyntaxError {
    /// The span of the offending text.
    pub fn span(&self) -> Span {
        match self {
            SyntaxError::StrayCharacter { span, .. }
            | SyntaxError::UnterminatedComment { span }
            | SyntaxError::MalformedNumber { span, .. }
            | SyntaxError::Expected { span, .. }
            | SyntaxError::TooDeep { span, .. } => *span,
        }
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            SyntaxError::StrayCharacter { span, ch } => {
                let d = Diagnostic::new(
                    "L3",
                    format!("unexpected character `{}`", ch.escape_debug()),
                )
                .primary(*span, "no token starts with this character");
                match ch {
                    '|' => d.note("the or operator is `||`"),
                    '&' => d.note("the and operator is `&&`"),
                    '.' => d.note("a number starts with a digit: `0.5`, not `.5`"),
                    c if !c.is_ascii() => d.note("outside comments, Pool source is ASCII"),
                    _ => d,
                }
            }
            SyntaxError::UnterminatedComment { span } => {
                Diagnostic::new("L3", "unterminated `/* */` comment")
                    .primary(*span, "this comment is never closed")
                    .note("comments do not nest: the first `*/` ends a comment")
            }
            SyntaxError::MalformedNumber { span, text, reason } => {
                Diagnostic::new("L3", format!("malformed number `{text}`"))
                    .primary(*span, *reason)
                    .note(
                        "a number is digits, an optional `.` and digits, and an optional exponent \
                     `e`, sign and digits; `_` may separate digits (`65_536`)",
                    )
            }
            SyntaxError::Expected {
                span,
                expected,
                context,
                found,
                note,
            } => {
                let message = if context.is_empty() {
                    format!("expected {expected}, found {found}")
                } else {
                    format!("expected {expected} {context}, found {found}")
                };
                let d = Diagnostic::new("parse", message)
                    .primary(*span, format!("expected {expected}"));
                match note {
                    Some(note) => d.note(*note),
                    None => d,
                }
            }
            SyntaxError::TooDeep { span, limit } => {
                Diagnostic::new("parse", "expression nested too deeply")
                    .primary(*span, format!("this goes deeper than {limit} levels"))
                    .note("split the expression with `const` declarations")
            }
        }
    }
}
