//! The bundled defaults: the spec and the trace the tools use when a caller names
//! none (`poolc run` with no arguments, `bench`, `compare`, `sweep`, `conform`, and the
//! Python package's `run`). Their text is compiled into the library, so a binary
//! copied elsewhere or an installed wheel needs no checkout, and no build machine's
//! path reaches a user. This module is the one place that names them; it reads no
//! file.

use std::borrow::Cow;
use std::io;
use std::path::Path;

/// A file of the repository carried inside the program: its repository path (what
/// diagnostics and reports call it) and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bundled {
    pub name: &'static str,
    pub text: &'static str,
}

/// vLLM 0.33's scheduler under its `fcfs` policy (docs/VLLM.md): the default spec.
pub const SPEC: Bundled = Bundled {
    name: "examples/vllm.pool",
    text: include_str!("../../examples/vllm.pool"),
};

/// vLLM 0.33's scheduler under its `priority` policy: what `poolc conform` replays a
/// priority recording with.
pub const PRIORITY_SPEC: Bundled = Bundled {
    name: "examples/vllm_priority.pool",
    text: include_str!("../../examples/vllm_priority.pool"),
};

/// The first hour of Mooncake's conversation trace (examples/traces/README.md): the
/// default workload.
pub const TRACE: Bundled = Bundled {
    name: "examples/traces/mooncake_conversation_trace.jsonl",
    text: include_str!("../../examples/traces/mooncake_conversation_trace.jsonl"),
};

/// A spec's text and the name its diagnostics show.
#[derive(Clone, Debug)]
pub struct SpecText {
    pub name: String,
    pub text: Cow<'static, str>,
}

/// The spec at `path`, or the bundled default [`SPEC`] when there is none.
pub fn spec_or_default(path: Option<&Path>) -> Result<SpecText, SpecReadError> {
    match path {
        Some(path) => read_spec(path),
        None => Ok(SPEC.into()),
    }
}

/// The spec at `path`.
pub fn read_spec(path: &Path) -> Result<SpecText, SpecReadError> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(SpecText {
            name,
            text: Cow::Owned(text),
        }),
        Err(error) => Err(SpecReadError { name, error }),
    }
}

impl From<Bundled> for SpecText {
    fn from(b: Bundled) -> SpecText {
        SpecText {
            name: b.name.to_owned(),
            text: Cow::Borrowed(b.text),
        }
    }
}

/// A spec file that cannot be read.
#[derive(Debug)]
pub struct SpecReadError {
    pub name: String,
    pub error: io::Error,
}

impl std::fmt::Display for SpecReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.name, self.error)
    }
}

impl std::error::Error for SpecReadError {}
