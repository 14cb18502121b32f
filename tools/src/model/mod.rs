//! `poolc model` as a library (docs/LATENCY.md, "A time model from the model's shape"):
//! from a Hugging Face `config.json`, a GPU, a tensor-parallel degree, a dtype and
//! vLLM's engine arguments, a ready deployment spec: the KV capacity in blocks as
//! vLLM's memory profile derives it and the iteration time as a Pool expression.
//! `config.rs` reads the config into a [`ModelShape`], `gpu.rs` is the GPU table,
//! `memory.rs` the weights, activation estimate and KV capacity, `time.rs` the two
//! time models (BLIS's trained physics, a plain roofline) and `spec.rs` the whole
//! text. This file holds the deployment's options, their checks and [`ModelError`].
//! Every failure is a typed error; nothing here prints, and the spec is text: the
//! compiler checks it like any other (the tests do).

pub mod config;
pub mod gpu;
pub mod memory;
pub mod spec;
pub mod time;

use std::fmt;

pub use config::{ConfigError, ModelShape};
pub use gpu::Gpu;

/// The weights' data type (vLLM's `--dtype`, or `--quantization fp8` for `Fp8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    Bf16,
    Fp16,
    /// FP8 weights in every linear layer (vLLM's `--quantization fp8`): one byte per
    /// weight there; embeddings, the LM head, norms and routers stay 16-bit, and so do
    /// activations and the KV cache (vLLM's `kv_cache_dtype` `auto`).
    Fp8,
}

impl Dtype {
    pub const ALL: [Dtype; 3] = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp8];

    /// The dtype `--dtype` names `name`.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The name `--dtype` takes.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    /// Bytes per weight of a linear layer.
    pub fn linear_bytes(self) -> f64 {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2.0,
            Dtype::Fp8 => 1.0,
        }
    }
}

/// Bytes of one element of the KV cache and of activations: 16-bit for every dtype.
pub const ACTIVATION_BYTES: f64 = 2.0;

/// Which iteration-time model the spec's `time` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    /// BLIS's trained-physics model with its published coefficients (the default).
    TrainedPhysics,
    /// max(FLOPs ÷ peak, bytes ÷ bandwidth), no learned coefficient.
    Roofline,
}

impl TimeKind {
    pub const ALL: [TimeKind; 2] = [TimeKind::TrainedPhysics, TimeKind::Roofline];

    /// The model `--time` names `name`.
    pub fn from_name(name: &str) -> Option<TimeKind> {
        TimeKind::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The name `--time` takes.
    pub fn name(self) -> &'static str {
        match self {
            TimeKind::TrainedPhysics => "trained-physics",
            TimeKind::Roofline => "roofline",
        }
    }
}

/// vLLM's engine arguments that size the deployment; [`Default`] is what `vllm serve`
/// 0.33 takes on an H100-class GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Engine {
    /// `--gpu-memory-utilization`: the share of the GPU's memory vLLM may use.
    pub gpu_memory_utilization: f64,
    /// `--block-size`: tokens per KV block.
    pub block_size: u64,
    /// `--max-num-seqs`: running requests at most.
    pub max_num_seqs: u64,
    /// `--max-num-batched-tokens`: tokens per iteration at most (and the batch vLLM
    /// profiles its activation memory with).
    pub max_num_batched_tokens: u64,
}

impl Default for Engine {
    fn default() -> Engine {
        Engine {
            gpu_memory_utilization: 0.9,
            block_size: 16,
            max_num_seqs: 1024,
            max_num_batched_tokens: 8192,
        }
    }
}

/// One deployment of a model: where and how it is served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Deployment {
    pub gpu: &'static Gpu,
    /// Tensor-parallel degree: GPUs one replica spans.
    pub tp: u64,
    pub dtype: Dtype,
    pub engine: Engine,
    pub time: TimeKind,
}

impl Deployment {
    /// The deployment of `gpu` with every other option at its default (TP 1, bf16,
    /// [`Engine::default`], trained physics).
    pub fn on(gpu: &'static Gpu) -> Deployment {
        Deployment {
            gpu,
            tp: 1,
            dtype: Dtype::Bf16,
            engine: Engine::default(),
            time: TimeKind::TrainedPhysics,
        }
    }

    /// The compute peak the weights' dtype runs at, TFLOP/s: FP8's where the dtype is
    /// FP8 and the GPU has FP8 tensor cores, BF16's otherwise.
    pub fn peak_tflops(&self) -> f64 {
        match (self.dtype, self.gpu.fp8_tflops) {
            (Dtype::Fp8, Some(fp8)) => fp8,
            _ => self.gpu.bf16_tflops,
        }
    }

    /// Checks the options against each other and against the model: the engine
    /// arguments in range, and a TP degree vLLM can shard this model over.
    pub fn check(&self, shape: &ModelShape) -> Result<(), ModelError> {
        let e = &self.engine;
        let util = e.gpu_memory_utilization;
        if !(util > 0.0 && util <= 1.0) {
            return Err(ModelError::Option {
                flag: "--gpu-memory-utilization",
                reason: format!("must be more than 0 and at most 1, not {util}"),
            });
        }
        for (flag, value) in [
            ("--block-size", e.block_size),
            ("--max-num-seqs", e.max_num_seqs),
            ("--max-num-batched-tokens", e.max_num_batched_tokens),
        ] {
            if value == 0 {
                return Err(ModelError::Option {
                    flag,
                    reason: "must be at least 1".to_string(),
                });
            }
        }
        let tp = self.tp;
        let refuse = |reason: String| Err(ModelError::Tp { tp, reason });
        if tp == 0 {
            return refuse("a replica spans at least one GPU".to_string());
        }
        if !shape.heads.is_multiple_of(tp) {
            return refuse(format!(
                "vLLM splits the {} attention heads evenly over the GPUs, so --tp must divide them",
                shape.heads
            ));
        }
        let kv = shape.kv_heads;
        if !kv.is_multiple_of(tp) && !tp.is_multiple_of(kv) {
            return refuse(format!(
                "vLLM splits the {kv} KV heads evenly over the GPUs, or replicates each over a whole group of them, so --tp must divide {kv} or be a multiple of it"
            ));
        }
        if !shape.ffn.is_multiple_of(tp) {
            return refuse(format!(
                "vLLM splits the MLP's {} intermediate columns evenly over the GPUs, so --tp must divide them",
                shape.ffn
            ));
        }
        Ok(())
    }
}

/// Why `poolc model` could not produce a spec.
#[derive(Debug)]
pub enum ModelError {
    /// The config could not be read or does not describe a model this tool sizes.
    Config(ConfigError),
    /// `--gpu` names no GPU of the table.
    UnknownGpu { name: String },
    /// An engine option out of range.
    Option { flag: &'static str, reason: String },
    /// A TP degree vLLM cannot shard this model over.
    Tp { tp: u64, reason: String },
    /// Weights, activations and runtime overhead leave no memory for one KV block.
    DoesNotFit(Box<memory::Capacity>),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Config(e) => e.fmt(f),
            ModelError::UnknownGpu { name } => {
                write!(f, "unknown GPU `{name}`; known: {}", gpu::keys().join(", "))
            }
            ModelError::Option { flag, reason } => write!(f, "{flag} {reason}"),
            ModelError::Tp { tp, reason } => write!(f, "--tp {tp}: {reason}"),
            ModelError::DoesNotFit(c) => write!(
                f,
                "the model does not fit: {} leave {} for the KV cache, not even two blocks of {} (vLLM's null block and one to use); use more GPUs (--tp), FP8 weights (--dtype fp8), a larger GPU or fewer --max-num-batched-tokens",
                c.budget_text(),
                memory::gib_text(c.kv_cache),
                memory::bytes_text(c.bytes_per_block)
            ),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ModelError::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for ModelError {
    fn from(e: ConfigError) -> ModelError {
        ModelError::Config(e)
    }
}

/// The GPU `--gpu NAME` names, or [`ModelError::UnknownGpu`] (whose message lists the
/// known ones).
pub fn find_gpu(name: &str) -> Result<&'static Gpu, ModelError> {
    gpu::find(name).ok_or_else(|| ModelError::UnknownGpu {
        name: name.to_string(),
    })
}
