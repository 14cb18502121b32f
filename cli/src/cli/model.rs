//! `poolc model`: prints a deployment spec (the KV capacity vLLM would derive, the
//! iteration time as a Pool expression) for a Hugging Face `config.json` served on a
//! GPU (docs/LATENCY.md, "A time model from the model's shape"). The work is
//! `poolc_tools::model`'s; this file parses the arguments, prints and picks the exit
//! code (1 for a bad config, GPU or option, or a model that does not fit).

use std::path::PathBuf;
use std::process::ExitCode;

use poolc_tools::model::{self, Deployment, Dtype, Engine, TimeKind, config, spec};

use super::{fail, print_out};

#[derive(clap::Args)]
pub struct ModelArgs {
    /// The model's Hugging Face config.json (e.g. examples/models/llama-3.1-8b/config.json).
    #[arg(value_name = "CONFIG")]
    config: PathBuf,
    /// The GPU: h100, h200, a100-80gb, l40s or b200.
    #[arg(long, value_name = "NAME")]
    gpu: String,
    /// Tensor parallelism: the GPUs one replica spans.
    #[arg(long, value_name = "N", default_value_t = 1)]
    tp: u64,
    /// The weights' data type; fp8 is vLLM's `--quantization fp8` (activations and
    /// the KV cache stay 16-bit).
    #[arg(long, value_enum, default_value = "bf16")]
    dtype: DtypeArg,
    /// The iteration-time model: BLIS's trained physics, or a plain roofline.
    #[arg(long, value_enum, default_value = "trained-physics")]
    time: TimeArg,
    /// vLLM's --gpu-memory-utilization.
    #[arg(long, value_name = "F", default_value_t = Engine::default().gpu_memory_utilization)]
    gpu_memory_utilization: f64,
    /// vLLM's --block-size: tokens per KV block.
    #[arg(long, value_name = "N", default_value_t = Engine::default().block_size)]
    block_size: u64,
    /// vLLM's --max-num-seqs: running requests at most.
    #[arg(long, value_name = "N", default_value_t = Engine::default().max_num_seqs)]
    max_num_seqs: u64,
    /// vLLM's --max-num-batched-tokens: tokens per iteration at most.
    #[arg(long, value_name = "N", default_value_t = Engine::default().max_num_batched_tokens)]
    max_num_batched_tokens: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DtypeArg {
    Bf16,
    Fp16,
    Fp8,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TimeArg {
    TrainedPhysics,
    Roofline,
}

pub fn run(args: ModelArgs) -> ExitCode {
    let gpu = match model::find_gpu(&args.gpu) {
        Ok(g) => g,
        Err(e) => return fail(&e.to_string()),
    };
    let shape = match config::read_path(&args.config) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let deployment = Deployment {
        gpu,
        tp: args.tp,
        dtype: match args.dtype {
            DtypeArg::Bf16 => Dtype::Bf16,
            DtypeArg::Fp16 => Dtype::Fp16,
            DtypeArg::Fp8 => Dtype::Fp8,
        },
        engine: Engine {
            gpu_memory_utilization: args.gpu_memory_utilization,
            block_size: args.block_size,
            max_num_seqs: args.max_num_seqs,
            max_num_batched_tokens: args.max_num_batched_tokens,
        },
        time: match args.time {
            TimeArg::TrainedPhysics => TimeKind::TrainedPhysics,
            TimeArg::Roofline => TimeKind::Roofline,
        },
    };
    let name = args.config.display().to_string();
    match spec::generate(&name, &shape, &deployment) {
        Ok(s) => print_out(&s.text),
        Err(e) => fail(&e.to_string()),
    }
}
