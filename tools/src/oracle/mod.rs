//! The recorded vLLM scenario's format (docs/CONFORMANCE.md), in one place:
//! reading a recorded scenario (`config.json`, `workload.jsonl`, `steps.jsonl`) and
//! checking it (`read.rs`), the scheduler settings and the one value of each that a
//! replay honours (`settings.rs`), fitting a host configuration to them and replaying
//! the workload with one iteration per time unit, so that iteration `t` is vLLM step
//! `t` (`replay.rs`), and comparing the replayed steps with the recorded ones and
//! rendering the first divergence (`compare.rs`). `poolc conform` and the tests use it alike. It owns the mapping between the two vocabularies; it never
//! changes what the host decides, and it never compiles a spec (a caller hands it a
//! [`poolrt::host::HostConfig`]). docs/CONFORMANCE.md states what is matched and what
//! is refused, and why.

mod compare;
mod read;
mod replay;
mod settings;
mod step;

use std::fmt;
use std::path::PathBuf;

use poolrt::host::HostError;

pub use compare::{Divergence, Outcome, Summary, compare, write_steps};
pub use read::{Request, Scenario, read_scenario};
pub use replay::{Engine, Replay, engine, fit, replay, workload};
pub use settings::{FORMAT, Plugin, Policy, Settings, VLLM_VERSIONS};
pub use step::{STEP_FIELDS, Step};

/// Why a scenario could not be replayed or compared. A mismatch is not an error: it
/// is an [`Outcome`] with a divergence.
#[derive(Debug)]
pub enum OracleError {
    /// A file could not be read or written.
    Io { path: PathBuf, message: String },
    /// A file is not in the oracle's format (`line` is 1-based, when known).
    Format {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// config.json asks for a scheduler behaviour the replay does not reproduce.
    Unsupported {
        path: PathBuf,
        setting: String,
        value: String,
        why: &'static str,
    },
    /// The configuration does not have the shape a vLLM engine maps onto.
    Shape(String),
    /// The host refused the configuration or failed during the replay.
    Host(HostError),
    /// The replay broke the one-iteration-per-step mapping (a bug, reported).
    Mapping(String),
}

impl fmt::Display for OracleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OracleError::Io { path, message } => write!(f, "{}: {message}", path.display()),
            OracleError::Format {
                path,
                line: Some(line),
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
            OracleError::Format {
                path,
                line: None,
                message,
            } => write!(f, "{}: {message}", path.display()),
            OracleError::Unsupported {
                path,
                setting,
                value,
                why,
            } => write!(
                f,
                "{}: unsupported setting `{setting}` = {value}: {why} (docs/CONFORMANCE.md)",
                path.display()
            ),
            OracleError::Shape(m) => write!(f, "{m}"),
            OracleError::Host(e) => write!(f, "the host: {e}"),
            OracleError::Mapping(m) => write!(f, "the replay broke the step mapping: {m}"),
        }
    }
}

impl std::error::Error for OracleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OracleError::Host(e) => Some(e),
            _ => None,
        }
    }
}
