//! Conformance with vLLM's real scheduler: reads a scenario recorded by the vLLM
//! oracle (../shared/oracle/vllm/FORMAT.md: `config.json`, `workload.jsonl`,
//! `steps.jsonl`), maps its scheduler configuration onto a spec's one step stage and
//! the one pool it admits, replays the workload through the reference host with one
//! iteration per time unit (so iteration `t` is vLLM step `t`), turns the host's log
//! into lines of the steps.jsonl schema and compares them field by field with the
//! recorded ones. It owns the mapping between the two vocabularies and the list of
//! vLLM settings a replay cannot honour; it never changes what the host decides.
//! docs/CONFORMANCE.md states what is matched and what is refused, and why.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use poolrt::host::{Host, HostConfig, IterTime, RunOptions, StageKind};
use poolrt::trace::{SessionSpec, Workload};
use poolrt::{Limit, Run, RunId, Units};
use serde_json::Value;

use crate::Compiled;

/// The recorded format this module reads (config.json `format`).
pub const FORMAT: &str = "vllm-oracle/1";
/// The vLLM release whose scheduler rules the host reproduces.
pub const VLLM_VERSION: &str = "0.33.0";

/// The one value of a config.json setting that the replay honours.
#[derive(Clone, Copy)]
enum Honoured {
    Text(&'static str),
    Whole(u64),
    Flag(bool),
}

/// Why a scenario could not be replayed or compared. A mismatch is not an error: it
/// is an [`Outcome`] with a divergence.
#[derive(Debug, Clone, PartialEq)]
pub enum ConformError {
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
    /// The spec does not have the shape a vLLM engine maps onto.
    Spec(String),
    /// The host refused the configuration or failed during the replay.
    Host(String),
}

impl fmt::Display for ConformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConformError::Io { path, message } => write!(f, "{}: {message}", path.display()),
            ConformError::Format {
                path,
                line: Some(line),
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
            ConformError::Format {
                path,
                line: None,
                message,
            } => write!(f, "{}: {message}", path.display()),
            ConformError::Unsupported {
                path,
                setting,
                value,
                why,
            } => write!(
                f,
                "{}: unsupported setting `{setting}` = {value}: {why} (docs/CONFORMANCE.md)",
                path.display()
            ),
            ConformError::Spec(m) => write!(f, "{m}"),
            ConformError::Host(m) => write!(f, "the host: {m}"),
        }
    }
}

impl std::error::Error for ConformError {}

/// The scheduler parameters of a scenario, in the spec's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `block_size`: tokens per KV block → the pool's `block`.
    pub block: u64,
    /// `usable_blocks` (`num_blocks` less the null block) → `cap` = blocks × block.
    pub usable_blocks: u64,
    /// `max_num_seqs` → the stage's `seats`.
    pub seats: u64,
    /// `max_num_batched_tokens` → the stage's `budget`.
    pub budget: u64,
    /// `long_prefill_token_threshold` → the stage's `chunk` (0 in vLLM: `None`, inf).
    pub chunk: Option<u64>,
    /// `max_model_len`: checked against the workload, never binding (FORMAT.md rule 3).
    pub max_model_len: u64,
}

impl Settings {
    /// The pool's `cap` in tokens.
    pub fn cap(&self) -> u64 {
        self.usable_blocks * self.block
    }

    /// Reads and checks a parsed config.json: every setting the replay cannot honour
    /// is an [`ConformError::Unsupported`], never silently ignored.
    pub fn from_config(config: &Value, path: &Path) -> Result<Settings, ConformError> {
        let format_err = |message: String| ConformError::Format {
            path: path.to_path_buf(),
            line: None,
            message,
        };
        let get = |key: &str| {
            config
                .get(key)
                .ok_or_else(|| format_err(format!("missing key `{key}`")))
        };
        let num = |key: &str| {
            get(key)?
                .as_u64()
                .ok_or_else(|| format_err(format!("`{key}` is not a whole number ≥ 0")))
        };
        let text = |key: &str| {
            get(key)?
                .as_str()
                .ok_or_else(|| format_err(format!("`{key}` is not a string")))
        };
        let flag = |key: &str| {
            get(key)?
                .as_bool()
                .ok_or_else(|| format_err(format!("`{key}` is not true or false")))
        };
        let unsupported =
            |setting: &str, value: &Value, why: &'static str| ConformError::Unsupported {
                path: path.to_path_buf(),
                setting: setting.to_string(),
                value: value.to_string(),
                why,
            };
        // Each row: a setting, the one value the replay honours, why no other is.
        let honour = |table: &[(&str, Honoured, &'static str)]| {
            for &(setting, honoured, why) in table {
                let honours = match honoured {
                    Honoured::Text(t) => text(setting)? == t,
                    Honoured::Whole(n) => num(setting)? == n,
                    Honoured::Flag(b) => flag(setting)? == b,
                };
                if !honours {
                    return Err(unsupported(setting, get(setting)?, why));
                }
            }
            Ok(())
        };

        let format = text("format")?;
        if format != FORMAT {
            return Err(format_err(format!(
                "format `{format}` is not `{FORMAT}` (shared/oracle/vllm/FORMAT.md)"
            )));
        }
        // The order of the checks is the order a reader meets them in FORMAT.md.
        honour(&[
            (
                "vllm_version",
                Honoured::Text(VLLM_VERSION),
                "the replay reproduces vLLM 0.33.0's scheduler rules; another release \
                 may decide differently",
            ),
            (
                "scheduler_class",
                Honoured::Text("Scheduler"),
                "only the synchronous `Scheduler` is reproduced (async scheduling updates \
                 a step after the next one is scheduled)",
            ),
            (
                "policy",
                Honoured::Text("fcfs"),
                "only FCFS is reproduced; the priority policy orders the waiting queue \
                 and chooses preemption victims by priority",
            ),
        ])?;
        let block = num("block_size")?;
        let num_blocks = num("num_blocks")?;
        let usable_blocks = num("usable_blocks")?;
        if block == 0 || num_blocks == 0 || usable_blocks != num_blocks - 1 {
            return Err(format_err(format!(
                "block_size {block}, num_blocks {num_blocks} and usable_blocks \
                 {usable_blocks} are inconsistent (usable_blocks = num_blocks - 1, the \
                 null block excluded)"
            )));
        }
        honour(&[(
            "null_block_id",
            Honoured::Whole(0),
            "vLLM's null block is block 0 in every recorded pool",
        )])?;
        let seats = num("max_num_seqs")?;
        if let Some(active) = config.get("max_num_active_seqs")
            && active.as_u64() != Some(seats)
        {
            return Err(unsupported(
                "max_num_active_seqs",
                active,
                "the running list is limited by max_num_seqs alone (seats)",
            ));
        }
        let budget = num("max_num_batched_tokens")?;
        if num("max_num_scheduled_tokens")? != budget {
            return Err(unsupported(
                "max_num_scheduled_tokens",
                get("max_num_scheduled_tokens")?,
                "the stage has one token budget, so it must equal max_num_batched_tokens",
            ));
        }
        let max_model_len = num("max_model_len")?;
        let chunk = num("long_prefill_token_threshold")?;
        honour(&[(
            "long_prefill_token_threshold_adaptive",
            Honoured::Flag(false),
            "an adaptive threshold changes the chunk from step to step; `chunk` is fixed",
        )])?;
        let watermark = get("watermark")?;
        if watermark.as_f64() != Some(0.0) {
            return Err(unsupported(
                "watermark",
                watermark,
                "vLLM then keeps watermark_blocks free when admitting next to running \
                 requests; the pool has no watermark",
            ));
        }
        honour(&[
            (
                "watermark_blocks",
                Honoured::Whole(0),
                "vLLM then keeps that many blocks free when admitting next to running \
                 requests; the pool has no watermark",
            ),
            (
                "reserve_full_isl",
                Honoured::Flag(true),
                "without it vLLM admits on the first chunk's blocks alone; the pool \
                 admits only when the whole sequence fits",
            ),
            (
                "async_scheduling",
                Honoured::Flag(false),
                "async scheduling updates a step after the next one is scheduled, so \
                 finishes lag by a step; the host finishes sessions in the iteration \
                 that computes their last token",
            ),
            (
                "enable_prefix_caching",
                Honoured::Flag(true),
                "the pool always caches released blocks by content",
            ),
            (
                "enable_chunked_prefill",
                Honoured::Flag(true),
                "the step stage always splits a prefill that exceeds the budget left",
            ),
            (
                "prefill_schedule_interval",
                Honoured::Whole(1),
                "the step stage admits every iteration",
            ),
            (
                "num_lookahead_tokens",
                Honoured::Whole(0),
                "lookahead slots (speculative decoding) are not modelled",
            ),
            (
                "num_spec_tokens",
                Honoured::Whole(0),
                "speculative decoding schedules several tokens per decode and rejects \
                 some of them; a decode takes exactly one token here",
            ),
        ])?;
        if budget == 0 || seats == 0 {
            return Err(format_err(
                "max_num_seqs and max_num_batched_tokens must be at least 1".to_string(),
            ));
        }
        Ok(Settings {
            block,
            usable_blocks,
            seats,
            budget,
            chunk: (chunk > 0).then_some(chunk),
            max_model_len,
        })
    }
}

/// One request of workload.jsonl.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: String,
    pub arrival_step: u64,
    pub prompt: u64,
    pub output: u64,
    /// `(run id, length)`, prefix-chained.
    pub runs: Vec<(u64, u64)>,
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

/// One line of steps.jsonl (FORMAT.md "steps.jsonl"), without `sched`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub step: u64,
    pub arrivals: Vec<String>,
    /// `(id, "new" | "resumed", hit tokens, scheduled tokens)`.
    pub admitted: Vec<(String, String, u64, u64)>,
    pub cont: Vec<(String, u64)>,
    pub preempted: Vec<String>,
    pub finished: Vec<String>,
    pub n_sched_tokens: u64,
    pub n_decode: u64,
    pub running: u64,
    pub waiting: u64,
    pub free_blocks: u64,
}

/// The fields compared, in the file's order.
pub const STEP_FIELDS: [&str; 11] = [
    "step",
    "arrivals",
    "admitted",
    "cont",
    "preempted",
    "finished",
    "n_sched_tokens",
    "n_decode",
    "running",
    "waiting",
    "free_blocks",
];

fn quote(s: &str) -> String {
    // serde_json escapes exactly as Python's json.dumps does for printable ASCII
    // (and the oracle's ids are `r<n>`), so matching lines are byte-identical.
    Value::from(s).to_string()
}

fn id_list(ids: &[String]) -> String {
    let items: Vec<String> = ids.iter().map(|s| quote(s)).collect();
    format!("[{}]", items.join(","))
}

impl Step {
    /// The compact JSON line, keys in the oracle's order (no newline).
    pub fn to_line(&self) -> String {
        let admitted: Vec<String> = self
            .admitted
            .iter()
            .map(|(id, kind, hit, n)| format!("[{},{},{hit},{n}]", quote(id), quote(kind)))
            .collect();
        let cont: Vec<String> = self
            .cont
            .iter()
            .map(|(id, n)| format!("[{},{n}]", quote(id)))
            .collect();
        format!(
            "{{\"step\":{},\"arrivals\":{},\"admitted\":[{}],\"cont\":[{}],\"preempted\":{},\
             \"finished\":{},\"n_sched_tokens\":{},\"n_decode\":{},\"running\":{},\
             \"waiting\":{},\"free_blocks\":{}}}",
            self.step,
            id_list(&self.arrivals),
            admitted.join(","),
            cont.join(","),
            id_list(&self.preempted),
            id_list(&self.finished),
            self.n_sched_tokens,
            self.n_decode,
            self.running,
            self.waiting,
            self.free_blocks
        )
    }

    /// The names of the fields in which `self` and `other` differ, in file order.
    pub fn differing_fields(&self, other: &Step) -> Vec<&'static str> {
        let same = [
            self.step == other.step,
            self.arrivals == other.arrivals,
            self.admitted == other.admitted,
            self.cont == other.cont,
            self.preempted == other.preempted,
            self.finished == other.finished,
            self.n_sched_tokens == other.n_sched_tokens,
            self.n_decode == other.n_decode,
            self.running == other.running,
            self.waiting == other.waiting,
            self.free_blocks == other.free_blocks,
        ];
        STEP_FIELDS
            .iter()
            .zip(same)
            .filter(|(_, s)| !s)
            .map(|(f, _)| *f)
            .collect()
    }

    /// Parses a step line; the error says which field is wrong.
    pub fn from_value(v: &Value) -> Result<Step, String> {
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("`{k}` is missing or not a whole number ≥ 0"))
        };
        let arr = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .ok_or_else(|| format!("`{k}` is missing or not a list"))
        };
        let ids = |k: &str| -> Result<Vec<String>, String> {
            arr(k)?
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("`{k}` holds a non-string"))
                })
                .collect()
        };
        let admitted = arr("admitted")?
            .iter()
            .map(|a| match a.as_array().map(Vec::as_slice) {
                Some([id, kind, hit, n]) => {
                    match (id.as_str(), kind.as_str(), hit.as_u64(), n.as_u64()) {
                        (Some(id), Some(kind), Some(hit), Some(n)) => {
                            Ok((id.to_string(), kind.to_string(), hit, n))
                        }
                        _ => Err(format!(
                            "`admitted` entry {a} is not [id, kind, hit, tokens]"
                        )),
                    }
                }
                _ => Err(format!(
                    "`admitted` entry {a} is not [id, kind, hit, tokens]"
                )),
            })
            .collect::<Result<_, _>>()?;
        let cont = arr("cont")?
            .iter()
            .map(|c| match c.as_array().map(Vec::as_slice) {
                Some([id, n]) => match (id.as_str(), n.as_u64()) {
                    (Some(id), Some(n)) => Ok((id.to_string(), n)),
                    _ => Err(format!("`cont` entry {c} is not [id, tokens]")),
                },
                _ => Err(format!("`cont` entry {c} is not [id, tokens]")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Step {
            step: num("step")?,
            arrivals: ids("arrivals")?,
            admitted,
            cont,
            preempted: ids("preempted")?,
            finished: ids("finished")?,
            n_sched_tokens: num("n_sched_tokens")?,
            n_decode: num("n_decode")?,
            running: num("running")?,
            waiting: num("waiting")?,
            free_blocks: num("free_blocks")?,
        })
    }
}

fn read(path: &Path) -> Result<String, ConformError> {
    fs::read_to_string(path).map_err(|e| ConformError::Io {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })
}

/// Reads a scenario folder and checks its config (unsupported settings are errors),
/// its workload (FORMAT.md "Workload files" rules) and its recorded steps.
pub fn read_scenario(dir: &Path) -> Result<Scenario, ConformError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    if !dir.is_dir() {
        return Err(ConformError::Io {
            path: dir.to_path_buf(),
            message: "not a scenario folder (config.json, workload.jsonl, steps.jsonl)".to_string(),
        });
    }
    let config_path = dir.join("config.json");
    let config: Value =
        serde_json::from_str(&read(&config_path)?).map_err(|e| ConformError::Format {
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

const WORKLOAD_FIELDS: [&str; 6] = ["id", "arrival_step", "prompt", "output", "runs", "priority"];

fn read_workload(path: &Path, s: &Settings) -> Result<Vec<Request>, ConformError> {
    let text = read(path)?;
    let mut requests = Vec::new();
    let mut ids = HashSet::new();
    // Run id → (start, length, previous run): a run must mean the same content
    // everywhere, since the pool keys blocks by (run, offset).
    let mut chain: HashMap<u64, (u64, u64, Option<u64>)> = HashMap::new();
    let mut last_arrival = 0;
    for (i, line) in text.lines().enumerate() {
        let err = |message: String| ConformError::Format {
            path: path.to_path_buf(),
            line: Some(i + 1),
            message,
        };
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
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
        requests.push(Request {
            id,
            arrival_step,
            prompt,
            output,
            runs,
        });
    }
    Ok(requests)
}

type Recorded = (Vec<(String, Step)>, Option<Value>);

fn read_steps(path: &Path) -> Result<Recorded, ConformError> {
    let text = read(path)?;
    let mut steps = Vec::new();
    let mut summary = None;
    for (i, line) in text.lines().enumerate() {
        let err = |message: String| ConformError::Format {
            path: path.to_path_buf(),
            line: Some(i + 1),
            message,
        };
        if line.trim().is_empty() {
            continue;
        }
        if summary.is_some() {
            return Err(err("a line after the summary line".to_string()));
        }
        let v: Value = serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
        if v.get("summary").is_some() {
            summary = Some(v);
            continue;
        }
        let step = Step::from_value(&v).map_err(err)?;
        if step.step != steps.len() as u64 {
            return Err(err(format!(
                "step {} where step {} was expected (steps are numbered 0, 1, … without gaps)",
                step.step,
                steps.len()
            )));
        }
        steps.push((line.to_string(), step));
    }
    Ok((steps, summary))
}

/// Where in the host configuration the vLLM engine lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    /// Index of the step stage in `HostConfig::stages` (one member).
    pub stage: usize,
    /// Index of the pool it admits in `HostConfig::pools` (one member).
    pub pool: usize,
}

/// Finds the spec's engine: exactly one step stage, of one member, admitting exactly
/// one pool, of one member. Other pools (tiers) and link stages may exist; whatever
/// they change shows up as a divergence, not as an error.
pub fn engine(config: &HostConfig) -> Result<Engine, ConformError> {
    let steps: Vec<usize> = config
        .stages
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.kind, StageKind::Step(_)))
        .map(|(i, _)| i)
        .collect();
    let [stage] = steps[..] else {
        return Err(ConformError::Spec(format!(
            "the spec has {} step stages; conform maps vLLM's one engine onto exactly one",
            steps.len()
        )));
    };
    let decl = &config.stages[stage];
    if decl.count != 1 {
        return Err(ConformError::Spec(format!(
            "stage `{}` is a family of {}; conform maps vLLM's one engine onto one member",
            decl.name, decl.count
        )));
    }
    let admitted: Vec<usize> = config
        .pools
        .iter()
        .enumerate()
        .filter(|(_, p)| p.members.iter().any(|m| !m.admit_via.is_empty()))
        .map(|(i, _)| i)
        .collect();
    let [pool] = admitted[..] else {
        return Err(ConformError::Spec(format!(
            "{} pools are admitted via stage `{}`; conform maps vLLM's KV cache onto \
             exactly one",
            admitted.len(),
            decl.name
        )));
    };
    let p = &config.pools[pool];
    if p.members.len() != 1 {
        return Err(ConformError::Spec(format!(
            "pool `{}` is a family of {}; conform maps vLLM's KV cache onto one member",
            p.name,
            p.members.len()
        )));
    }
    Ok(Engine { stage, pool })
}

/// The host configuration of a compiled spec for a scenario: the bridge's, with the
/// engine's `budget`, `seats`, `chunk` and the pool's `cap` and `block` replaced by
/// the scenario's, and `time` replaced by one time unit per iteration. The spec keeps
/// everything else: its queue, eviction and preemption policies and any tiers.
pub fn host_config(
    compiled: &Compiled,
    settings: &Settings,
) -> Result<(HostConfig, Engine), ConformError> {
    let mut config =
        crate::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
            .map_err(|e| ConformError::Spec(e.to_string()))?;
    let engine = engine(&config)?;
    if let StageKind::Step(step) = &mut config.stages[engine.stage].kind {
        let fin = |n| Limit::Finite(Units(n));
        step.budget = fin(settings.budget);
        step.seats = fin(settings.seats);
        step.chunk = settings.chunk.map_or(Limit::Unbounded, fin);
        step.time = IterTime::Fixed(1.0);
    }
    let member = &mut config.pools[engine.pool].members[0].config;
    member.cap = Limit::Finite(Units(settings.cap()));
    member.block = Units(settings.block);
    Ok((config, engine))
}

/// The workload as the host reads it: arrival time = `arrival_step`.
pub fn workload(scenario: &Scenario) -> Workload {
    let sessions = scenario
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| SessionSpec {
            arrival: r.arrival_step as f64,
            prompt: r.prompt,
            output: r.output,
            runs: r
                .runs
                .iter()
                .map(|&(id, len)| Run {
                    id: RunId(id),
                    len: Units(len),
                })
                .collect(),
            extra: Vec::new(),
            name: Some(r.id.clone()),
            line: i as u64 + 1,
        })
        .collect();
    Workload {
        source: scenario.dir.join("workload.jsonl").display().to_string(),
        fields: Vec::new(),
        sessions,
    }
}

/// Keeps the iteration lines of one stage from the host's log as it is written
/// (pool event lines are dropped at once, so a long replay needs little memory).
struct IterationSink {
    stage: String,
    partial: Vec<u8>,
    lines: Vec<Value>,
}

impl IterationSink {
    fn take_line(&mut self) -> io::Result<()> {
        // Iteration lines start with their `step` key; event lines with `t`.
        if self.partial.starts_with(b"{\"step\":") {
            let v: Value = serde_json::from_slice(&self.partial).map_err(io::Error::other)?;
            if v.get("stage").and_then(Value::as_str) == Some(self.stage.as_str()) {
                self.lines.push(v);
            }
        }
        self.partial.clear();
        Ok(())
    }
}

impl Write for IterationSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            self.partial.extend_from_slice(&rest[..nl]);
            self.take_line()?;
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a replay decided, in the steps.jsonl schema.
#[derive(Clone, Debug)]
pub struct Replay {
    pub steps: Vec<Step>,
    /// The summary line (same keys as the oracle's, `replayed_by` for
    /// `vllm_version`).
    pub summary: Summary,
    /// Sessions the host left unfinished or rejected (0 when it matches vLLM).
    pub unfinished: u64,
    pub rejected: u64,
}

/// Replays a scenario through the host and renders its iterations as vLLM steps.
pub fn replay(compiled: &Compiled, scenario: &Scenario) -> Result<Replay, ConformError> {
    let (config, engine) = host_config(compiled, &scenario.settings)?;
    let stage = config.stages[engine.stage].name.clone();
    let w = workload(scenario);
    let host = Host::new(config, &w).map_err(|e| ConformError::Host(e.to_string()))?;
    let mut sink = IterationSink {
        stage,
        partial: Vec::new(),
        lines: Vec::new(),
    };
    let report = host
        .run(RunOptions {
            log: Some(&mut sink),
            progress: None,
        })
        .map_err(|e| ConformError::Host(e.to_string()))?;
    let steps = to_steps(scenario, &sink.lines)?;
    let summary = Summary::of(scenario, &steps);
    Ok(Replay {
        steps,
        summary,
        unfinished: report.unfinished,
        rejected: report.rejected,
    })
}

fn internal(message: String) -> ConformError {
    ConformError::Host(format!("unexpected log line: {message}"))
}

/// One vLLM step per time unit: iteration lines become steps at their start time,
/// and a time with no iteration is an idle step that carries the queues over.
fn to_steps(scenario: &Scenario, lines: &[Value]) -> Result<Vec<Step>, ConformError> {
    let s = &scenario.settings;
    let id = |v: &Value| -> Result<String, ConformError> {
        v.as_u64()
            .and_then(|n| scenario.requests.get(n as usize))
            .map(|r| r.id.clone())
            .ok_or_else(|| internal(format!("session {v} is not in the workload")))
    };
    let ids = |l: &Value, k: &str| -> Result<Vec<String>, ConformError> {
        l.get(k)
            .and_then(Value::as_array)
            .ok_or_else(|| internal(format!("no `{k}` in {l}")))?
            .iter()
            .map(id)
            .collect()
    };
    let num = |l: &Value, k: &str| {
        l.get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| internal(format!("no `{k}` in {l}")))
    };
    let mut by_step: Vec<(u64, &Value)> = Vec::with_capacity(lines.len());
    for l in lines {
        let t = l
            .get("t")
            .and_then(Value::as_f64)
            .ok_or_else(|| internal(format!("no `t` in {l}")))?;
        // With one time unit per iteration and whole arrival steps every start is a
        // whole number; anything else means the mapping broke.
        if t.fract() != 0.0 || t < 0.0 {
            return Err(internal(format!("an iteration starts at t = {t}")));
        }
        let step = t as u64;
        if by_step.last().is_some_and(|&(prev, _)| prev >= step) {
            return Err(internal(format!("two iterations at or before step {step}")));
        }
        by_step.push((step, l));
    }
    let n_steps = by_step.last().map_or(0, |&(s, _)| s + 1);
    let mut steps = Vec::with_capacity(n_steps as usize);
    let mut next_arrival = 0;
    let mut iters = by_step.into_iter().peekable();
    let (mut running, mut waiting, mut free) = (0, 0, s.usable_blocks);
    for step in 0..n_steps {
        let mut arrivals = Vec::new();
        while let Some(r) = scenario.requests.get(next_arrival)
            && r.arrival_step <= step
        {
            arrivals.push(r.id.clone());
            next_arrival += 1;
        }
        let Some((_, l)) = iters.next_if(|&(s, _)| s == step) else {
            waiting += arrivals.len() as u64;
            steps.push(Step {
                step,
                arrivals,
                running,
                waiting,
                free_blocks: free,
                ..Step::default()
            });
            continue;
        };
        let admitted = l
            .get("admitted")
            .and_then(Value::as_array)
            .ok_or_else(|| internal(format!("no `admitted` in {l}")))?
            .iter()
            .map(|a| match a.as_array().map(Vec::as_slice) {
                Some([who, kind, hit, n]) => match (kind.as_str(), hit.as_u64(), n.as_u64()) {
                    (Some(kind), Some(hit), Some(n)) => Ok((id(who)?, kind.to_string(), hit, n)),
                    _ => Err(internal(format!("admitted entry {a}"))),
                },
                _ => Err(internal(format!("admitted entry {a}"))),
            })
            .collect::<Result<_, _>>()?;
        let cont = l
            .get("cont")
            .and_then(Value::as_array)
            .ok_or_else(|| internal(format!("no `cont` in {l}")))?
            .iter()
            .map(|c| match c.as_array().map(Vec::as_slice) {
                Some([who, n]) => match n.as_u64() {
                    Some(n) => Ok((id(who)?, n)),
                    None => Err(internal(format!("cont entry {c}"))),
                },
                _ => Err(internal(format!("cont entry {c}"))),
            })
            .collect::<Result<_, _>>()?;
        let allocated = l
            .get("allocated")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_u64)
            .ok_or_else(|| internal(format!("no `allocated` in {l}")))?;
        running = num(l, "residents")?;
        waiting = num(l, "waiting")?;
        // vLLM's free queue counts cached (evictable) blocks as free; the pool's
        // allocated units are the blocks held by sessions.
        free = s.usable_blocks.saturating_sub(allocated.div_ceil(s.block));
        steps.push(Step {
            step,
            arrivals,
            admitted,
            cont,
            preempted: ids(l, "preempted")?,
            finished: ids(l, "finished")?,
            n_sched_tokens: num(l, "tokens")?,
            n_decode: num(l, "decode")?,
            running,
            waiting,
            free_blocks: free,
        });
    }
    Ok(steps)
}

/// The oracle's summary counts, computed from steps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub name: String,
    pub num_requests: u64,
    pub steps: u64,
    pub idle_steps: u64,
    pub admitted_new: u64,
    pub admitted_resumed: u64,
    pub preemptions: u64,
    pub finished: u64,
    pub hit_tokens_new: u64,
    pub hit_tokens_resumed: u64,
    pub prompt_tokens_admitted: u64,
    pub scheduled_tokens: u64,
    pub max_running: u64,
    pub hit_tokens_total: u64,
    pub admissions: u64,
    /// `hit_tokens_new / prompt_tokens_admitted`, rounded to 6 decimals.
    pub prefix_hit_rate: f64,
}

impl Summary {
    pub fn of(scenario: &Scenario, steps: &[Step]) -> Summary {
        let prompt: HashMap<&str, u64> = scenario
            .requests
            .iter()
            .map(|r| (r.id.as_str(), r.prompt))
            .collect();
        let mut s = Summary {
            name: scenario.name.clone(),
            num_requests: scenario.requests.len() as u64,
            steps: steps.len() as u64,
            ..Summary::default()
        };
        for st in steps {
            if st.n_sched_tokens == 0 {
                s.idle_steps += 1;
            }
            for (id, kind, hit, _) in &st.admitted {
                if kind == "new" {
                    s.admitted_new += 1;
                    s.hit_tokens_new += hit;
                    s.prompt_tokens_admitted += prompt.get(id.as_str()).copied().unwrap_or(0);
                } else {
                    s.admitted_resumed += 1;
                    s.hit_tokens_resumed += hit;
                }
            }
            s.preemptions += st.preempted.len() as u64;
            s.finished += st.finished.len() as u64;
            s.scheduled_tokens += st.n_sched_tokens;
            s.max_running = s.max_running.max(st.running);
        }
        s.hit_tokens_total = s.hit_tokens_new + s.hit_tokens_resumed;
        s.admissions = s.admitted_new + s.admitted_resumed;
        let rate = s.hit_tokens_new as f64 / s.prompt_tokens_admitted.max(1) as f64;
        s.prefix_hit_rate = (rate * 1e6).round() / 1e6;
        s
    }

    /// The compared keys and values, in the oracle's order.
    fn counts(&self) -> [(&'static str, f64); 15] {
        [
            ("num_requests", self.num_requests as f64),
            ("steps", self.steps as f64),
            ("idle_steps", self.idle_steps as f64),
            ("admitted_new", self.admitted_new as f64),
            ("admitted_resumed", self.admitted_resumed as f64),
            ("preemptions", self.preemptions as f64),
            ("finished", self.finished as f64),
            ("hit_tokens_new", self.hit_tokens_new as f64),
            ("hit_tokens_resumed", self.hit_tokens_resumed as f64),
            ("prompt_tokens_admitted", self.prompt_tokens_admitted as f64),
            ("scheduled_tokens", self.scheduled_tokens as f64),
            ("max_running", self.max_running as f64),
            ("hit_tokens_total", self.hit_tokens_total as f64),
            ("admissions", self.admissions as f64),
            ("prefix_hit_rate", self.prefix_hit_rate),
        ]
    }

    /// The summary line, keys in the oracle's order (`replayed_by` in place of
    /// `vllm_version`).
    pub fn to_line(&self) -> String {
        let mut line = format!(
            "{{\"summary\":true,\"name\":{},\"replayed_by\":\"poolc {}\"",
            quote(&self.name),
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in self.counts() {
            if k == "prefix_hit_rate" {
                line.push_str(&format!(",\"{k}\":{}", Value::from(v)));
            } else {
                line.push_str(&format!(",\"{k}\":{}", v as u64));
            }
        }
        line.push('}');
        line
    }

    /// The keys whose values differ from a recorded summary line.
    pub fn differences(&self, recorded: &Value) -> Vec<String> {
        self.counts()
            .into_iter()
            .filter_map(|(k, ours)| {
                let theirs = recorded.get(k).and_then(Value::as_f64);
                // The rate is rounded to 6 decimals on both sides.
                let same = theirs.is_some_and(|t| (t - ours).abs() <= 1e-6 * t.abs().max(1.0));
                (!same).then(|| {
                    let theirs = recorded.get(k).map_or("none".to_string(), Value::to_string);
                    format!("{k}: recorded {theirs}, replayed {}", Value::from(ours))
                })
            })
            .collect()
    }
}

/// The first step where the replay and the recording part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub step: u64,
    /// The differing fields, or empty when one side has no such step.
    pub fields: Vec<&'static str>,
    /// The recorded line (`None`: vLLM's trace ended before this step).
    pub expected: Option<String>,
    /// The replayed line (`None`: the replay ended before this step).
    pub actual: Option<String>,
    /// Up to three recorded lines before it (equal in both).
    pub before: Vec<String>,
}

/// The result of comparing one scenario.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub name: String,
    /// Recorded steps.
    pub recorded: usize,
    /// Replayed steps.
    pub replayed: usize,
    /// Steps that differ (a step missing on either side counts).
    pub divergent: usize,
    pub first: Option<Divergence>,
    /// Summary keys that differ from the recorded summary line (none when the steps
    /// match, unless the recording contradicts itself).
    pub summary: Vec<String>,
    pub unfinished: u64,
    pub rejected: u64,
}

impl Outcome {
    pub fn matches(&self) -> bool {
        self.first.is_none() && self.summary.is_empty()
    }

    /// What `poolc conform` prints for it.
    pub fn render(&self) -> String {
        let name = &self.name;
        let Some(d) = &self.first else {
            if self.summary.is_empty() {
                return format!("{name}: all {} steps match\n", self.recorded);
            }
            return format!(
                "{name}: all {} steps match, but the summary line differs: {}\n",
                self.recorded,
                self.summary.join("; ")
            );
        };
        let mut out = format!("{name}: step {} is the first divergent step", d.step);
        if d.fields.is_empty() {
            out.push_str(&format!(
                " (vLLM recorded {} steps, the replay has {})",
                self.recorded, self.replayed
            ));
        } else {
            out.push_str(&format!(" (differs in {})", d.fields.join(", ")));
        }
        out.push_str(&format!(
            "; {} of {} recorded steps differ\n",
            self.divergent, self.recorded
        ));
        for (i, line) in d.before.iter().enumerate() {
            let back = d.before.len() - i;
            out.push_str(&format!("  step {}:  {line}\n", d.step - back as u64));
        }
        let none = |who: &str| format!("(none: {who} has no step {})", d.step);
        out.push_str(&format!(
            "  expected: {}\n",
            d.expected.clone().unwrap_or_else(|| none("vLLM"))
        ));
        out.push_str(&format!(
            "  actual:   {}\n",
            d.actual.clone().unwrap_or_else(|| none("the replay"))
        ));
        if self.unfinished > 0 || self.rejected > 0 {
            out.push_str(&format!(
                "  (the host left {} sessions unfinished and rejected {})\n",
                self.unfinished, self.rejected
            ));
        }
        out
    }
}

/// Compares replayed steps with the recorded ones.
pub fn compare(scenario: &Scenario, replay: &Replay) -> Outcome {
    let recorded = &scenario.recorded;
    let ours = &replay.steps;
    let n = recorded.len().max(ours.len());
    let mut divergent = 0;
    let mut first = None;
    for i in 0..n {
        let (want, got) = (recorded.get(i), ours.get(i));
        let fields = match (want, got) {
            (Some((_, w)), Some(g)) => {
                let f = w.differing_fields(g);
                if f.is_empty() {
                    continue;
                }
                f
            }
            _ => Vec::new(),
        };
        divergent += 1;
        if first.is_none() {
            first = Some(Divergence {
                step: i as u64,
                fields,
                expected: want.map(|(line, _)| line.clone()),
                actual: got.map(Step::to_line),
                before: recorded[i.saturating_sub(3)..i.min(recorded.len())]
                    .iter()
                    .map(|(line, _)| line.clone())
                    .collect(),
            });
        }
    }
    let summary = scenario
        .summary
        .as_ref()
        .map(|v| replay.summary.differences(v))
        .unwrap_or_default();
    Outcome {
        name: scenario.name.clone(),
        recorded: recorded.len(),
        replayed: ours.len(),
        divergent,
        first,
        summary,
        unfinished: replay.unfinished,
        rejected: replay.rejected,
    }
}

/// Writes the replayed steps and summary to `out/<name>/steps.jsonl`.
pub fn write_steps(out: &Path, scenario: &Scenario, replay: &Replay) -> Result<(), ConformError> {
    let dir = out.join(&scenario.name);
    let io_err = |path: &Path, e: io::Error| ConformError::Io {
        path: path.to_path_buf(),
        message: format!("cannot write: {e}"),
    };
    fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let path = dir.join("steps.jsonl");
    let mut text = String::new();
    for s in &replay.steps {
        text.push_str(&s.to_line());
        text.push('\n');
    }
    text.push_str(&replay.summary.to_line());
    text.push('\n');
    fs::write(&path, text).map_err(|e| io_err(&path, e))
}

/// Reads, replays and compares one scenario folder; with `out`, also writes the
/// replayed steps there.
pub fn check(compiled: &Compiled, dir: &Path, out: Option<&Path>) -> Result<Outcome, ConformError> {
    let scenario = read_scenario(dir)?;
    let replay = replay(compiled, &scenario)?;
    if let Some(out) = out {
        write_steps(out, &scenario, &replay)?;
    }
    Ok(compare(&scenario, &replay))
}
