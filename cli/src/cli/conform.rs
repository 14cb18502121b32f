//! `poolc conform`: replays scenarios recorded from vLLM 0.33's real scheduler through
//! the reference host with a spec (default examples/vllm.pool, or
//! examples/vllm_priority.pool for a scenario recorded with the priority policy) and
//! says, per
//! scenario, whether every step matches, or shows the first divergent step with the
//! three before it. Exit 0 only when every scenario matches; a scenario that cannot
//! be replayed (an unsupported setting, a bad file) is reported and counts as a
//! failure, and the others still run. The work is `poolc_tools::conform`'s; this file only
//! parses arguments, prints and picks the exit code. docs/CONFORMANCE.md.

use std::path::PathBuf;
use std::process::ExitCode;

use poolc::Compiled;
use poolc_tools::bundled::{self, Bundled, SpecText};
use poolc_tools::conform::{check_scenario, default_spec, read_scenario};

use super::{SetArgs, fail, print_out, report_compile};

#[derive(clap::Args)]
pub struct ConformArgs {
    /// Scenario folders, each with config.json, workload.jsonl and steps.jsonl (the
    /// vLLM oracle's format).
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The spec whose one step stage and the pool it admits play vLLM's engine and KV
    /// cache (default: examples/vllm.pool for scenarios recorded with the fcfs
    /// policy, examples/vllm_priority.pool for the priority policy). Its budget,
    /// seats, chunk, cap, block and time are replaced by the scenario's.
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Write each replay's steps to DIR/<scenario>/steps.jsonl (steps.jsonl schema).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    set: SetArgs,
}

/// A spec compiled once per run with the same `--set` values, however many
/// scenarios use it.
struct Specs {
    /// The command line's `--set`: applied after a plugin recording's own.
    set: Vec<(String, f64)>,
    compiled: Vec<(SpecKey, Option<Compiled>)>,
}

/// A spec and the `--set` values it was compiled with.
type SpecKey = (Spec, Vec<(String, f64)>);

/// A spec named on the command line or by a plugin recording, or a bundled default.
#[derive(Clone, Debug, PartialEq)]
enum Spec {
    File(PathBuf),
    Bundled(Bundled),
}

impl Specs {
    /// The compiled spec at `path` with `set` then the command line's values; its
    /// diagnostics are printed the first time and `None` is returned then and after.
    fn get(&mut self, spec: Spec, set: &[(String, f64)]) -> Option<&Compiled> {
        let mut all = set.to_vec();
        all.extend(self.set.iter().cloned());
        let key = (spec, all);
        let at = match self.compiled.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let options = poolc::Options { set: key.1.clone() };
                let compiled = compile(&key.0, &options);
                self.compiled.push((key, compiled));
                self.compiled.len() - 1
            }
        };
        self.compiled.get(at).and_then(|(_, c)| c.as_ref())
    }
}

fn compile(spec: &Spec, options: &poolc::Options) -> Option<Compiled> {
    let spec: SpecText = match spec {
        Spec::File(path) => match bundled::read_spec(path) {
            Ok(s) => s,
            Err(e) => {
                let _ = fail(&e.to_string());
                return None;
            }
        },
        Spec::Bundled(b) => (*b).into(),
    };
    match poolc::compile(&spec.text, options) {
        Ok(c) => Some(c),
        Err(diags) => {
            report_compile(std::path::Path::new(&spec.name), &spec.text, &diags);
            None
        }
    }
}

pub fn run(args: ConformArgs) -> ExitCode {
    let mut specs = Specs {
        set: args.set.options().set,
        compiled: Vec::new(),
    };
    // A spec given on the command line is checked before any scenario is read.
    if let Some(spec) = &args.spec
        && specs.get(Spec::File(spec.clone()), &[]).is_none()
    {
        return ExitCode::from(1);
    }
    let mut all_match = true;
    for dir in &args.dirs {
        let scenario = match read_scenario(dir) {
            Ok(s) => s,
            Err(e) => {
                let _ = fail(&format!("{}: {e}", dir.display()));
                all_match = false;
                continue;
            }
        };
        // Without --spec: the spec a plugin recording names (with its --set values),
        // else vLLM's own policy's.
        let plugin = scenario.settings.plugin.as_ref();
        let (spec, set) = match (&args.spec, plugin.and_then(|p| p.spec.as_deref())) {
            (Some(spec), _) => (Spec::File(spec.clone()), Vec::new()),
            (None, Some(spec)) => (
                Spec::File(PathBuf::from(spec)),
                plugin.map(|p| p.set.clone()).unwrap_or_default(),
            ),
            (None, None) => (
                Spec::Bundled(default_spec(scenario.settings.policy)),
                Vec::new(),
            ),
        };
        let Some(compiled) = specs.get(spec, &set) else {
            all_match = false;
            continue;
        };
        match check_scenario(compiled, &scenario, args.out.as_deref()) {
            Ok(outcome) => {
                // A failed write is exit 1 at once: nothing after it could be read.
                if print_out(&outcome.render()) != ExitCode::SUCCESS {
                    return ExitCode::from(1);
                }
                all_match &= outcome.matches();
            }
            Err(e) => {
                let _ = fail(&format!("{}: {e}", dir.display()));
                all_match = false;
            }
        }
    }
    if all_match {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
