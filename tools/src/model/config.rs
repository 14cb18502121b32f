//! A Hugging Face `config.json` read into the shape `poolc model` computes with
//! ([`ModelShape`]): layers, hidden size, attention and KV heads (GQA; KV heads default
//! to the attention heads), the head dimension (explicit `head_dim`, or hidden ÷ heads),
//! the MLP's intermediate size, the vocabulary, tied embeddings, and for a mixture of
//! experts the experts, experts per token and each expert's intermediate size
//! (`num_local_experts` as Mixtral names it, `num_experts` and `moe_intermediate_size` as
//! Qwen3-MoE does). A config whose text model sits under `text_config` is read from
//! there. Every problem is a [`ConfigError`] naming the file and the key (or the line
//! and column of malformed JSON); shapes this tool cannot size honestly (latent
//! attention, shared experts, dense layers among MoE ones) are refused by name rather
//! than guessed. It reads one file and computes nothing.

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value};

/// The figures of one model that its KV capacity, weights and iteration time follow
/// from. Counts are whole numbers ≥ 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelShape {
    /// `model_type`, if given (e.g. `llama`, `qwen2`, `mixtral`, `qwen3_moe`).
    pub model_type: Option<String>,
    /// `architectures[0]`, if given (e.g. `LlamaForCausalLM`).
    pub architecture: Option<String>,
    /// `num_hidden_layers`.
    pub layers: u64,
    /// `hidden_size`.
    pub hidden: u64,
    /// `num_attention_heads`.
    pub heads: u64,
    /// `num_key_value_heads`, or `heads` when absent (multi-head attention).
    pub kv_heads: u64,
    /// `head_dim`, or `hidden / heads` when absent.
    pub head_dim: u64,
    /// Whether `head_dim` was given (it may differ from hidden ÷ heads, as in Qwen3).
    pub head_dim_explicit: bool,
    /// The dense MLP's `intermediate_size`, or each expert's for a mixture of experts
    /// (`moe_intermediate_size` when given, else `intermediate_size` as in Mixtral).
    pub ffn: u64,
    /// `vocab_size`.
    pub vocab: u64,
    /// `tie_word_embeddings` (false when absent, as for Llama, Qwen2 and Mixtral).
    pub tied_embeddings: bool,
    /// `max_position_embeddings`, 0 when absent: the rows of vLLM's rotary cache.
    pub max_position: u64,
    /// Whether q, k and v projections carry biases: `attention_bias`, or Qwen2's
    /// architecture (`model_type` `qwen2`, which has them without a key).
    pub attention_bias: bool,
    /// Whether each layer normalises q and k per head (Qwen3: `model_type` `qwen3` or
    /// `qwen3_moe`): two vectors of `head_dim` weights per layer.
    pub qk_norm: bool,
    /// The experts, for a mixture of experts; `None` for a dense model.
    pub moe: Option<Moe>,
}

/// A mixture-of-experts MLP in every layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moe {
    /// `num_local_experts` (Mixtral) or `num_experts` (Qwen-MoE), at least 2.
    pub experts: u64,
    /// `num_experts_per_tok`.
    pub experts_per_token: u64,
}

impl ModelShape {
    /// Experts whose weights each layer holds: 1 for a dense model.
    pub fn experts(&self) -> u64 {
        self.moe.map_or(1, |m| m.experts)
    }

    /// Experts each token passes through: 1 for a dense model.
    pub fn active_experts(&self) -> u64 {
        self.moe.map_or(1, |m| m.experts_per_token)
    }
}

/// What went wrong reading a config, and in which file.
#[derive(Debug)]
pub struct ConfigError {
    /// The file, as the caller named it.
    pub file: String,
    pub kind: ConfigErrorKind,
}

#[derive(Debug)]
pub enum ConfigErrorKind {
    /// The file could not be read.
    Read(std::io::Error),
    /// Not JSON: serde_json's message and its 1-based line and column.
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but not an object.
    NotObject,
    /// A key the shape needs is absent (or `null`).
    Missing { key: String },
    /// A key of the wrong JSON type: what it must be and what it is.
    IllTyped {
        key: String,
        expected: &'static str,
        found: String,
    },
    /// A key whose value is of the right type but unusable, and why.
    Invalid { key: String, reason: String },
    /// A key saying the model has a shape this tool does not size.
    Unsupported { key: String, what: &'static str },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = &self.file;
        match &self.kind {
            ConfigErrorKind::Read(e) => write!(f, "cannot read {file}: {e}"),
            ConfigErrorKind::Json {
                line,
                column,
                message,
            } => write!(f, "{file}:{line}:{column}: not valid JSON: {message}"),
            ConfigErrorKind::NotObject => {
                write!(f, "{file}: a config.json must be a JSON object")
            }
            ConfigErrorKind::Missing { key } => {
                write!(f, "{file}: the key `{key}` is missing")
            }
            ConfigErrorKind::IllTyped {
                key,
                expected,
                found,
            } => write!(f, "{file}: `{key}` must be {expected}, not {found}"),
            ConfigErrorKind::Invalid { key, reason } => write!(f, "{file}: `{key}` {reason}"),
            ConfigErrorKind::Unsupported { key, what } => write!(
                f,
                "{file}: `{key}` says the model has {what}, which poolc model does not size"
            ),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ConfigErrorKind::Read(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads and parses the config at `path`; errors name it as `path.display()` shows it.
pub fn read_path(path: &Path) -> Result<ModelShape, ConfigError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, &file),
        Err(e) => Err(ConfigError {
            file,
            kind: ConfigErrorKind::Read(e),
        }),
    }
}

/// Parses the text of a config; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<ModelShape, ConfigError> {
    let fail = |kind| ConfigError {
        file: file.to_string(),
        kind,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        fail(ConfigErrorKind::Json {
            line: e.line(),
            column: e.column(),
            message: json_message(&e),
        })
    })?;
    let Value::Object(root) = value else {
        return Err(fail(ConfigErrorKind::NotObject));
    };
    // Multimodal configs keep the language model's figures under `text_config`.
    let keys = match root.get("text_config") {
        Some(Value::Object(inner)) if !root.contains_key("num_hidden_layers") => Keys {
            map: inner,
            prefix: "text_config.",
        },
        _ => Keys {
            map: &root,
            prefix: "",
        },
    };
    keys.shape().map_err(fail)
}

/// serde_json's message without its own " at line L column C" (the error names them).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text.get(..at).unwrap_or(&text).to_string(),
        None => text,
    }
}

/// The object the figures are read from, and how its keys are named in errors.
struct Keys<'a> {
    map: &'a Map<String, Value>,
    prefix: &'static str,
}

impl Keys<'_> {
    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The value of `key`, treating `null` as absent (HF writes `"head_dim": null`).
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn count(&self, key: &str) -> Result<u64, ConfigErrorKind> {
        match self.optional_count(key)? {
            Some(n) => Ok(n),
            None => Err(ConfigErrorKind::Missing {
                key: self.name(key),
            }),
        }
    }

    /// A whole number ≥ 1, or `None` when the key is absent.
    fn optional_count(&self, key: &str) -> Result<Option<u64>, ConfigErrorKind> {
        match self.optional_whole(key)? {
            Some(0) => Err(ConfigErrorKind::Invalid {
                key: self.name(key),
                reason: "must be at least 1, not 0".to_string(),
            }),
            n => Ok(n),
        }
    }

    /// A whole number ≥ 0, or `None` when the key is absent.
    fn optional_whole(&self, key: &str) -> Result<Option<u64>, ConfigErrorKind> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                // 2^53: beyond it the arithmetic in f64 would not be exact.
                Some(n) if n > (1 << 53) => Err(ConfigErrorKind::Invalid {
                    key: self.name(key),
                    reason: format!("is implausibly large ({n})"),
                }),
                Some(n) => Ok(Some(n)),
                None => Err(self.ill_typed(key, "a whole number", v)),
            },
        }
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, ConfigErrorKind> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.ill_typed(key, "true or false", v)),
        }
    }

    fn text(&self, key: &str) -> Result<Option<String>, ConfigErrorKind> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.ill_typed(key, "a string", v)),
        }
    }

    fn ill_typed(&self, key: &str, expected: &'static str, found: &Value) -> ConfigErrorKind {
        let mut shown = found.to_string();
        if shown.chars().count() > 40 {
            shown = shown.chars().take(37).collect::<String>() + "...";
        }
        ConfigErrorKind::IllTyped {
            key: self.name(key),
            expected,
            found: shown,
        }
    }

    /// Refuses a key that, when present and not "off", means a shape this tool does
    /// not size. "Off" is `null`, `0`, `false` or an empty list.
    fn refuse(&self, key: &str, what: &'static str) -> Result<(), ConfigErrorKind> {
        let on = match self.get(key) {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if on {
            Err(ConfigErrorKind::Unsupported {
                key: self.name(key),
                what,
            })
        } else {
            Ok(())
        }
    }

    fn shape(&self) -> Result<ModelShape, ConfigErrorKind> {
        self.refuse("kv_lora_rank", "multi-head latent attention")?;
        self.refuse("shared_expert_intermediate_size", "shared experts")?;
        self.refuse("n_shared_experts", "shared experts")?;
        self.refuse("mlp_only_layers", "dense layers among its MoE layers")?;
        self.refuse("first_k_dense_replace", "dense layers among its MoE layers")?;
        self.refuse(
            "interleave_moe_layer_step",
            "dense layers among its MoE layers",
        )?;
        if let Some(step) = self.optional_count("decoder_sparse_step")?
            && step > 1
        {
            return Err(ConfigErrorKind::Unsupported {
                key: self.name("decoder_sparse_step"),
                what: "dense layers among its MoE layers",
            });
        }

        let layers = self.count("num_hidden_layers")?;
        let hidden = self.count("hidden_size")?;
        let heads = self.count("num_attention_heads")?;
        let kv_heads = self.optional_count("num_key_value_heads")?.unwrap_or(heads);
        if !heads.is_multiple_of(kv_heads) {
            return Err(ConfigErrorKind::Invalid {
                key: self.name("num_key_value_heads"),
                reason: format!(
                    "({kv_heads}) must divide `{}` ({heads}): each KV head serves a whole group of attention heads",
                    self.name("num_attention_heads")
                ),
            });
        }
        let (head_dim, head_dim_explicit) = match self.optional_count("head_dim")? {
            Some(d) => (d, true),
            None if hidden.is_multiple_of(heads) => (hidden / heads, false),
            None => {
                return Err(ConfigErrorKind::Invalid {
                    key: self.name("hidden_size"),
                    reason: format!(
                        "({hidden}) is not a multiple of `{}` ({heads}) and there is no `{}` to say the head dimension",
                        self.name("num_attention_heads"),
                        self.name("head_dim")
                    ),
                });
            }
        };
        let vocab = self.count("vocab_size")?;

        let experts = match self.optional_whole("num_local_experts")? {
            Some(n) => Some(("num_local_experts", n)),
            None => self
                .optional_whole("num_experts")?
                .map(|n| ("num_experts", n)),
        };
        // 0 or 1 expert is a dense MLP (as BLIS and vLLM read it).
        let moe = match experts {
            Some((_, 0 | 1)) | None => None,
            Some((key, experts)) => {
                let experts_per_token = self.count("num_experts_per_tok")?;
                if experts_per_token > experts {
                    return Err(ConfigErrorKind::Invalid {
                        key: self.name("num_experts_per_tok"),
                        reason: format!(
                            "({experts_per_token}) must not exceed `{}` ({experts})",
                            self.name(key)
                        ),
                    });
                }
                Some(Moe {
                    experts,
                    experts_per_token,
                })
            }
        };
        let ffn = match moe {
            Some(_) => match self.optional_count("moe_intermediate_size")? {
                Some(n) => n,
                None => self.count("intermediate_size")?,
            },
            None => self.count("intermediate_size")?,
        };

        let model_type = self.text("model_type")?;
        let architecture = match self.get("architectures") {
            None => None,
            Some(Value::Array(list)) => match list.first() {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(v) => return Err(self.ill_typed("architectures", "a list of strings", v)),
            },
            Some(v) => return Err(self.ill_typed("architectures", "a list of strings", v)),
        };
        let kind = model_type.as_deref().unwrap_or("");
        let attention_bias = self.flag("attention_bias")?.unwrap_or(kind == "qwen2");
        Ok(ModelShape {
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            head_dim_explicit,
            ffn,
            vocab,
            tied_embeddings: self.flag("tie_word_embeddings")?.unwrap_or(false),
            max_position: self.optional_count("max_position_embeddings")?.unwrap_or(0),
            attention_bias,
            qk_norm: matches!(kind, "qwen3" | "qwen3_moe"),
            moe,
            model_type,
            architecture,
        })
    }
}
