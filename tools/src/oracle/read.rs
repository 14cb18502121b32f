//! Reading a scenario folder: config.json through [`Settings`], workload.jsonl by
//! docs/CONFORMANCE.md's "Workload files" rules (ids unique, arrivals in feed order, runs
//! prefix-chained and adding up to the prompt, every request able to finish), and
//! steps.jsonl (numbered without gaps, at most one summary line, last). Every error
//! names the file and, where there is one, the line.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{OracleError, Settings, Step};

/// One request of workload.jsonl.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub arrival_step: u64,
    pub prompt: u64,
    pub output: u64,
    /// `(run id, length)`, prefix-chained.
    pub runs: Vec<(u64, u64)>,
    /// vLLM's request priority (`priority`, 0 when absent): smaller is served first.
    pub priority: i64,
    /// The request's tenant (`tenant`), given to the plugin as the session attribute
    /// of that name (R30); `None` when absent: the spec's default applies.
    pub tenant: Option<i64>,
    /// The request's share (`share`, a whole number ≥ 1), given to the plugin as the
    /// session attribute of that name (a `fair … weight share`, R30); `None` when
    /// absent.
    pub share: Option<u64>,
}

/// A recorded scenario, read and checked.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The folder's name.
    pub name: String,
    pub dir: PathBuf,
    pub settings: Settings,
    /// In feed order; a request's index is its host serial.
    pub requests: Vec<Request>,
    /// The recorded step lines, exactly as in the file, and parsed.
    pub recorded: Vec<(String, Step)>,
    /// The recorded summary line, if any.
    pub summary: Option<Value>,
}

fn read(path: &Path) -> Result<String, OracleError> {
    fs::read_to_string(path).map_err(|e| OracleError::Io {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })
}

/// Reads a scenario folder and checks its config (unsupported settings are errors),
/// its workload (docs/CONFORMANCE.md "Workload files" rules) and its recorded steps.
pub fn read_scenario(dir: &Path) -> Result<Scenario, OracleError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    if !dir.is_dir() {
        return Err(OracleError::Io {
            path: dir.to_path_buf(),
            message: "not a scenario folder (config.json, workload.jsonl, steps.jsonl)".to_string(),
        });
    }
    let config_path = dir.join("config.json");
    let config: Value =
        serde_json::from_str(&read(&config_path)?).map_err(|e| OracleError::Format {
            path: config_path.clone(),
            line: None,
            message: format!("not JSON: {e}"),
        })?;
    let settings = Settings::from_config(&config, &config_path)?;
    let requests = read_workload(&dir.join("workload.jsonl"), &settings)?;
    let (recorded, summary) = read_steps(&dir.join("steps.jsonl"))?;
    Ok(Scenario {
        name,
        dir: dir.to_path_buf(),
        settings,
        requests,
        recorded,
        summary,
    })
}

/// One non-blank line of a JSON-lines file, with its 1-based number for errors.
struct Line<'a> {
    path: &'a Path,
    number: usize,
    text: &'a str,
}

impl Line<'_> {
    /// A format error at this line.
    fn err(&self, message: String) -> OracleError {
        OracleError::Format {
            path: self.path.to_path_buf(),
            line: Some(self.number),
            message,
        }
    }

    fn json(&self) -> Result<Value, OracleError> {
        serde_json::from_str(self.text).map_err(|e| self.err(format!("not JSON: {e}")))
    }
}

/// The non-blank lines of `text`, read from `path`.
fn lines<'a>(path: &'a Path, text: &'a str) -> impl Iterator<Item = Line<'a>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(move |(i, text)| Line {
            path,
            number: i + 1,
            text,
        })
}

const WORKLOAD_FIELDS: [&str; 8] = [
    "id",
    "arrival_step",
    "prompt",
    "output",
    "runs",
    "priority",
    "tenant",
    "share",
];

fn read_workload(path: &Path, s: &Settings) -> Result<Vec<Request>, OracleError> {
    let text = read(path)?;
    let mut requests = Vec::new();
    let mut ids = HashSet::new();
    // Run id → (start, length, previous run): a run must mean the same content
    // everywhere, since the pool keys blocks by (run, offset).
    let mut chain: HashMap<u64, (u64, u64, Option<u64>)> = HashMap::new();
    let mut last_arrival = 0;
    for line in lines(path, &text) {
        let err = |message: String| line.err(message);
        let v = line.json()?;
        let obj = v
            .as_object()
            .ok_or_else(|| err("not a JSON object".to_string()))?;
        if let Some(k) = obj.keys().find(|k| !WORKLOAD_FIELDS.contains(&k.as_str())) {
            return Err(err(format!("unknown field `{k}`")));
        }
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| err(format!("`{k}` is missing or not a whole number ≥ 0")))
        };
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| err("`id` is missing or not a non-empty string".to_string()))?
            .to_string();
        if !ids.insert(id.clone()) {
            return Err(err(format!("id `{id}` appears twice")));
        }
        let arrival_step = num("arrival_step")?;
        if arrival_step < last_arrival {
            return Err(err(format!(
                "arrival_step {arrival_step} is before the previous line's {last_arrival} \
                 (lines are in feed order)"
            )));
        }
        last_arrival = arrival_step;
        let prompt = num("prompt")?;
        let output = num("output")?;
        if prompt == 0 || output == 0 {
            return Err(err("`prompt` and `output` must be at least 1".to_string()));
        }
        let mut runs = Vec::new();
        let mut start = 0u64;
        let mut prev = None;
        for r in v
            .get("runs")
            .and_then(Value::as_array)
            .ok_or_else(|| err("`runs` is missing or not a list".to_string()))?
        {
            let (run, len) = match r.as_array().map(Vec::as_slice) {
                Some([a, b]) => match (a.as_u64(), b.as_u64()) {
                    (Some(a), Some(b)) if b > 0 => (a, b),
                    _ => return Err(err(format!("run {r} is not [run_id ≥ 0, len ≥ 1]"))),
                },
                _ => return Err(err(format!("run {r} is not [run_id ≥ 0, len ≥ 1]"))),
            };
            let here = (start, len, prev);
            if *chain.entry(run).or_insert(here) != here {
                return Err(err(format!(
                    "run {run} is not prefix-chained: it appears with another start, \
                     length or previous run than before"
                )));
            }
            runs.push((run, len));
            start += len;
            prev = Some(run);
        }
        if start != prompt {
            return Err(err(format!(
                "the runs add up to {start} tokens, the prompt is {prompt}"
            )));
        }
        if prompt + output > s.max_model_len {
            return Err(err(format!(
                "prompt + output = {} exceeds max_model_len {} (vLLM would refuse it)",
                prompt + output,
                s.max_model_len
            )));
        }
        // A request whose last token needs more blocks than the pool has would be
        // preempted and recomputed forever in vLLM; the oracle never records one.
        let need = (prompt + output - 1).div_ceil(s.block);
        if need > s.usable_blocks {
            return Err(err(format!(
                "needs {need} blocks to finish but the pool has {} usable blocks",
                s.usable_blocks
            )));
        }
        let priority = match v.get("priority") {
            None => 0,
            Some(p) => p
                .as_i64()
                .ok_or_else(|| err(format!("`priority` {p} is not a whole number")))?,
        };
        let tenant = match v.get("tenant") {
            None => None,
            Some(t) => Some(
                t.as_i64()
                    .ok_or_else(|| err(format!("`tenant` {t} is not a whole number")))?,
            ),
        };
        let share = match v.get("share") {
            None => None,
            Some(w) => Some(
                w.as_u64()
                    .filter(|&w| w >= 1)
                    .ok_or_else(|| err(format!("`share` {w} is not a whole number >= 1")))?,
            ),
        };
        requests.push(Request {
            id,
            arrival_step,
            prompt,
            output,
            runs,
            priority,
            tenant,
            share,
        });
    }
    Ok(requests)
}

type Recorded = (Vec<(String, Step)>, Option<Value>);

fn read_steps(path: &Path) -> Result<Recorded, OracleError> {
    let text = read(path)?;
    // One step a line: room for them up front spares the copies of a growing list
    // (at most 65,536 steps' worth, whatever a malformed file's line count).
    let mut steps = Vec::with_capacity(text.lines().count().min(1 << 16));
    let mut summary = None;
    for line in lines(path, &text) {
        let err = |message: String| line.err(message);
        if summary.is_some() {
            return Err(err("a line after the summary line".to_string()));
        }
        let Some(step) = Step::parse(line.text).map_err(err)? else {
            summary = Some(line.json()?);
            continue;
        };
        if step.step != steps.len() as u64 {
            return Err(err(format!(
                "step {} where step {} was expected (steps are numbered 0, 1, … without gaps)",
                step.step,
                steps.len()
            )));
        }
        steps.push((line.text.to_string(), step));
    }
    Ok((steps, summary))
}
