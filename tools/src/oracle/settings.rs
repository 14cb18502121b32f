//! A scenario's scheduler settings (config.json), read and checked: every vLLM setting
//! a replay cannot honour is an [`OracleError::Unsupported`] naming the setting and
//! why, never silently ignored. It reads values; it does not touch files.

use std::path::Path;

use serde_json::Value;

use super::OracleError;

/// The recorded format this module reads (config.json `format`).
pub const FORMAT: &str = "vllm-oracle/1";
/// The vLLM releases whose scheduler rules the host reproduces: 0.33.0's rules
/// (docs/CONFORMANCE.md), which 0.32.0's scheduler follows on every setting a
/// replay honours (docs/VLLM.md, "Versions": its engine's recordings replay step for
/// step, python/tests/test_vllm_engine.py).
pub const VLLM_VERSIONS: [&str; 2] = ["0.32.0", "0.33.0"];

/// The one value of a config.json setting that the replay honours.
#[derive(Clone, Copy)]
enum Honoured {
    Text(&'static str),
    Whole(u64),
    Flag(bool),
}

/// What a recording made through poolc's vLLM plugin (`poolc.vllm.Scheduler`,
/// docs/VLLM.md) says of it: config.json's `additional_config.poolc`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plugin {
    /// The spec the plugin scheduled with, as given to it.
    pub spec: Option<String>,
    /// Its `--set` values.
    pub set: Vec<(String, f64)>,
    /// `clock_step`: the plugin's `now` was the number of `schedule()` calls so far
    /// times this many seconds; the replay runs the same clock.
    pub clock_step: Option<f64>,
}

/// The scheduler parameters of a scenario, in the spec's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `policy`: which of vLLM's two scheduling policies was recorded. The replay
    /// follows the spec's policies whatever it says; it tells which spec to use.
    pub policy: Policy,
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
    /// `max_model_len`: checked against the workload, never binding (docs/CONFORMANCE.md, rule 3 of the format).
    pub max_model_len: u64,
    /// Present when the scenario was recorded through poolc's vLLM plugin.
    pub plugin: Option<Plugin>,
}

/// vLLM 0.33's `--scheduling-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// First come, first served; the newest running request is the victim.
    Fcfs,
    /// A heap on (priority, arrival time); the lowest-priority running request is the
    /// victim and goes back into the heap (examples/vllm_priority.pool).
    Priority,
}

impl Settings {
    /// The pool's `cap` in tokens.
    pub fn cap(&self) -> u64 {
        self.usable_blocks * self.block
    }

    /// Reads and checks a parsed config.json: every setting the replay cannot honour
    /// is an [`OracleError::Unsupported`], never silently ignored.
    pub fn from_config(config: &Value, path: &Path) -> Result<Settings, OracleError> {
        let format_err = |message: String| OracleError::Format {
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
            |setting: &str, value: &Value, why: &'static str| OracleError::Unsupported {
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
                "format `{format}` is not `{FORMAT}` (docs/CONFORMANCE.md)"
            )));
        }
        // The order of the checks is the order a reader meets them in docs/CONFORMANCE.md.
        if !VLLM_VERSIONS.contains(&text("vllm_version")?) {
            return Err(unsupported(
                "vllm_version",
                get("vllm_version")?,
                "the replay reproduces the scheduler rules of vLLM 0.32.0 and 0.33.0; \
                 another release may decide differently",
            ));
        }
        honour(&[(
            "scheduler_class",
            Honoured::Text("Scheduler"),
            "only the synchronous `Scheduler` is reproduced (async scheduling updates \
                 a step after the next one is scheduled)",
        )])?;
        let policy = match text("policy")? {
            "fcfs" => Policy::Fcfs,
            "priority" => Policy::Priority,
            _ => {
                return Err(unsupported(
                    "policy",
                    get("policy")?,
                    "vLLM 0.33 has two policies, `fcfs` and `priority`",
                ));
            }
        };
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
        let plugin = match config.get("additional_config").and_then(|a| a.get("poolc")) {
            None => None,
            Some(p) => {
                Some(plugin(p).map_err(|m| format_err(format!("additional_config.poolc: {m}")))?)
            }
        };
        Ok(Settings {
            plugin,
            policy,
            block,
            usable_blocks,
            seats,
            budget,
            chunk: (chunk > 0).then_some(chunk),
            max_model_len,
        })
    }
}

/// Reads `additional_config.poolc` (the plugin's own checks made it well formed).
fn plugin(p: &Value) -> Result<Plugin, String> {
    let spec = match p.get("spec") {
        None => None,
        Some(v) => Some(v.as_str().ok_or("`spec` is not a string")?.to_string()),
    };
    let mut set = Vec::new();
    if let Some(v) = p.get("set") {
        let obj = v.as_object().ok_or("`set` is not an object")?;
        for (k, v) in obj {
            let x = v
                .as_f64()
                .ok_or_else(|| format!("`set.{k}` is not a number"))?;
            set.push((k.clone(), x));
        }
    }
    let clock_step = match p.get("clock_step") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            // A power of two, or a small multiple of one: the plugin's `now` is
            // calls × step and the host's a sum of steps, equal only when exact.
            Some(x) if x > 0.0 && x.is_finite() && (x * 1_048_576.0).fract() == 0.0 => Some(x),
            _ => {
                return Err(format!(
                    "`clock_step` {v} is not a number > 0 that is a multiple of 2^-20 (the \
                     replay's clock must add up exactly: use 1, 0.5, 0.25, …)"
                ));
            }
        },
    };
    Ok(Plugin {
        spec,
        set,
        clock_step,
    })
}
