//! Diagnostics: the one data type every phase reports errors as, and the one place
//! they are rendered to text (codespan-reporting: file, line, column, carets). Phases
//! build `Diagnostic` values; they never print.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};

use crate::syntax::Span;

/// One labelled span of a diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// The primary label is drawn with `^`, secondary ones with `-`.
    pub primary: bool,
}

/// Whether a diagnostic stops the spec (an error) or only points at a likely mistake
/// in a valid one (a warning: `poolc check` still exits 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

/// An error found in a spec (or a warning), with where it is and what would fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable short code naming the rule broken (`L3`, `parse`, `D7`, `S1`, …).
    pub code: &'static str,
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A warning: the spec is valid, but this is likely not what was meant.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::new(code, message)
        }
    }

    pub fn primary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }

    pub fn secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// The span of the first primary label, if any.
    pub fn primary_span(&self) -> Option<Span> {
        self.labels.iter().find(|l| l.primary).map(|l| l.span)
    }
}

/// How rendered diagnostics are styled: a terminal shows colours, anything else
/// (snapshots, files, pipes, Python exceptions) reads plain text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Styling {
    /// Text only.
    Plain,
    /// Text with ANSI colour escapes, for a terminal.
    Ansi,
}

/// Renders diagnostics against the source they point into, as a user sees them.
pub fn render(
    file_name: &str,
    source: &str,
    diagnostics: &[Diagnostic],
    styling: Styling,
) -> String {
    let file = SimpleFile::new(file_name, source);
    let config = Config::default();
    let mut out = String::new();
    for d in diagnostics {
        let labels = d
            .labels
            .iter()
            .map(|l| {
                let range = clamp(l.span, source.len());
                let label = if l.primary {
                    CsLabel::primary((), range)
                } else {
                    CsLabel::secondary((), range)
                };
                label.with_message(l.message.clone())
            })
            .collect();
        let cs = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        }
        .with_code(d.code)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.clone());
        let mut buf = match styling {
            Styling::Plain => term::termcolor::Buffer::no_color(),
            Styling::Ansi => term::termcolor::Buffer::ansi(),
        };
        // Writing into an in-memory buffer cannot fail for I/O reasons; a failure
        // here would be a span outside the file, which `clamp` rules out.
        let _ = term::emit(&mut buf, &config, &file, &cs);
        out.push_str(&String::from_utf8_lossy(buf.as_slice()));
    }
    out
}

/// Keeps a span inside the file and on character boundaries, so rendering never fails.
fn clamp(span: Span, len: usize) -> std::ops::Range<usize> {
    let start = (span.start as usize).min(len);
    let end = (span.end as usize).clamp(start, len);
    start..end
}
