//! `poolc conform` as a library: a compiled spec becomes a host configuration through
//! `bridge`, and `crate::oracle` fits it to a scenario recorded from vLLM's real
//! scheduler, replays it and compares every step. All of the oracle format — reading,
//! settings, the step mapping, the comparison — lives in `crate::oracle`; this file
//! only joins the compiler to it. docs/CONFORMANCE.md.

use std::fmt;
use std::path::Path;

pub use crate::oracle::{
    OracleError, Outcome, Policy, Replay, Scenario, Settings, compare, read_scenario, write_steps,
};

use poolc::Compiled;
use poolc::bridge::BridgeError;

use crate::bundled::{self, Bundled};

/// Why a scenario could not be replayed or compared. A mismatch is not an error: it
/// is an [`Outcome`] with a divergence.
#[derive(Debug)]
pub enum ConformError {
    /// The compiled spec could not become a host configuration.
    Bridge(BridgeError),
    /// The scenario could not be read, or the replay could not run.
    Oracle(OracleError),
}

impl fmt::Display for ConformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConformError::Bridge(e) => write!(f, "{e}"),
            ConformError::Oracle(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConformError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConformError::Bridge(e) => Some(e),
            ConformError::Oracle(e) => Some(e),
        }
    }
}

impl From<OracleError> for ConformError {
    fn from(e: OracleError) -> ConformError {
        ConformError::Oracle(e)
    }
}

/// Replays a scenario through the host with the compiled spec's policies.
pub fn replay(compiled: &Compiled, scenario: &Scenario) -> Result<Replay, ConformError> {
    let config =
        poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
            .map_err(ConformError::Bridge)?;
    Ok(crate::oracle::replay(config, scenario)?)
}

/// Reads, replays and compares one scenario folder; with `out`, also writes the
/// replayed steps there.
pub fn check(compiled: &Compiled, dir: &Path, out: Option<&Path>) -> Result<Outcome, ConformError> {
    check_scenario(compiled, &read_scenario(dir)?, out)
}

/// [`check`] of a scenario already read.
pub fn check_scenario(
    compiled: &Compiled,
    scenario: &Scenario,
    out: Option<&Path>,
) -> Result<Outcome, ConformError> {
    let replay = replay(compiled, scenario)?;
    if let Some(out) = out {
        write_steps(out, scenario, &replay)?;
    }
    Ok(compare(scenario, &replay))
}

/// The bundled spec that is vLLM 0.33's scheduler under a recorded policy: what
/// `poolc conform` replays a scenario with when no spec is given.
pub fn default_spec(policy: Policy) -> Bundled {
    match policy {
        Policy::Fcfs => bundled::SPEC,
        Policy::Priority => bundled::PRIORITY_SPEC,
    }
}
