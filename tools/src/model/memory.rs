//! Memory of one GPU of a deployment, as vLLM's startup profile accounts it: the
//! weights it holds ([`WeightBytes`], counted from the config as vLLM shards them),
//! the KV cache per token, an estimate of the activation peak the profile measures,
//! and from them the KV capacity in blocks ([`capacity`]). Also the whole model's
//! parameter count ([`params`]). docs/LATENCY.md states every formula and compares
//! the result with what vLLM logs; the figures are f64 (exact for whole numbers up to
//! 2^53, and no overflow to panic on for absurd configs). It prints nothing.

use super::config::ModelShape;
use super::{ACTIVATION_BYTES, Deployment, Dtype, ModelError};

/// Bytes in a GiB.
pub const GIB: f64 = 1_073_741_824.0;

/// vLLM pads the vocabulary of its embedding and LM head to a multiple of this
/// (`DEFAULT_VOCAB_PADDING_SIZE`) before splitting it over the GPUs.
const VOCAB_PADDING: u64 = 64;

/// Memory outside PyTorch's allocator that vLLM's profile subtracts (CUDA context
/// growth, cuBLAS workspaces, NCCL buffers), per GPU: the figures llm-d's capacity
/// planner uses, as BLIS's sim/latency/kv_capacity.go (commit f90a1e3a6787) takes them.
pub const NON_TORCH_TP1_GIB: f64 = 0.15;
/// As [`NON_TORCH_TP1_GIB`], for a GPU of a tensor-parallel group (NCCL's buffers).
pub const NON_TORCH_TP_GIB: f64 = 0.6;

/// Hidden-size-wide and MLP-wide 16-bit tensors per token alive at the forward pass's
/// peak, in the activation estimate: the residual stream and its normalised copy
/// (2 × hidden), and five intermediate-wide ones per expert a token passes through
/// (gate and up, their product, and the kernels' temporaries). The 5 is calibrated:
/// it makes Llama-3.1-8B at 8192 batched tokens 1.22 GiB, the activation peak vLLM
/// logs for it on an H100 (1.19 to 1.26 GiB in published logs; docs/LATENCY.md).
pub const FORWARD_HIDDEN_WIDTHS: f64 = 2.0;
/// See [`FORWARD_HIDDEN_WIDTHS`].
pub const FORWARD_MLP_WIDTHS: f64 = 5.0;

/// Bytes per logit of the sampler's peak: the float32 logits of every running request
/// over the whole vocabulary, and one temporary of the same size.
pub const SAMPLER_BYTES_PER_LOGIT: f64 = 8.0;

/// The weights one GPU holds, by part, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WeightBytes {
    /// The input embedding table (its share of the padded vocabulary).
    pub embedding: f64,
    /// The LM head; 0 when it is the embedding table (tied embeddings).
    pub lm_head: f64,
    /// Every layer's attention projections and dense MLP (or shared router and norms),
    /// the experts excluded.
    pub layers: f64,
    /// Every layer's experts (0 for a dense model).
    pub experts: f64,
    /// The final norm.
    pub final_norm: f64,
    /// vLLM's rotary cos/sin cache: `max_position_embeddings` × head_dim, 16-bit.
    pub rotary: f64,
}

impl WeightBytes {
    pub fn total(&self) -> f64 {
        self.embedding + self.lm_head + self.layers + self.experts + self.final_norm + self.rotary
    }
}

/// One layer's parameters on one GPU: the linear layers' weights (which FP8 quantises)
/// apart from the 16-bit rest (norms, biases, the router).
struct LayerParams {
    attention: f64,
    mlp_per_expert: f64,
    sixteen_bit: f64,
}

/// KV heads one GPU holds: its share, or one replicated head when there are fewer KV
/// heads than GPUs (vLLM's `num_kv_head_replicas`).
pub fn kv_heads_per_gpu(shape: &ModelShape, tp: u64) -> u64 {
    (shape.kv_heads / tp.max(1)).max(1)
}

fn layer_params(shape: &ModelShape, tp: u64) -> LayerParams {
    let h = shape.hidden as f64;
    let tp_f = tp.max(1) as f64;
    let q = shape.heads as f64 / tp_f * shape.head_dim as f64;
    let kv = (kv_heads_per_gpu(shape, tp) * shape.head_dim) as f64;
    let mut sixteen_bit = 2.0 * h; // input and post-attention norms
    if shape.qk_norm {
        sixteen_bit += 2.0 * shape.head_dim as f64;
    }
    if shape.attention_bias {
        sixteen_bit += q + 2.0 * kv;
    }
    if let Some(moe) = shape.moe {
        sixteen_bit += h * moe.experts as f64; // the router, replicated
    }
    LayerParams {
        attention: h * q + 2.0 * h * kv + q * h,
        mlp_per_expert: 3.0 * h * shape.ffn as f64 / tp_f,
        sixteen_bit,
    }
}

/// The whole model's parameters (one copy, unpadded vocabulary): embeddings (twice
/// unless tied), every layer's q/k/v/o projections (and biases), MLP (gate, up, down;
/// or every expert's, and the router) and norms, and the final norm.
pub fn params(shape: &ModelShape) -> f64 {
    let h = shape.hidden as f64;
    let tables = if shape.tied_embeddings { 1.0 } else { 2.0 };
    let layer = layer_params(shape, 1);
    let per_layer =
        layer.attention + layer.mlp_per_expert * shape.experts() as f64 + layer.sixteen_bit;
    tables * shape.vocab as f64 * h + shape.layers as f64 * per_layer + h
}

/// The weights one GPU of a `tp`-wide group holds in `dtype`, as vLLM shards them:
/// vocabulary, heads and MLP columns split over the GPUs, KV heads split or
/// replicated, norms and routers replicated, the rotary cache once.
pub fn weight_bytes(shape: &ModelShape, tp: u64, dtype: Dtype) -> WeightBytes {
    let h = shape.hidden as f64;
    let padded = shape.vocab.div_ceil(VOCAB_PADDING) * VOCAB_PADDING;
    let rows = padded.div_ceil(tp.max(1)) as f64;
    let table = rows * h * ACTIVATION_BYTES;
    let layer = layer_params(shape, tp);
    let layers = shape.layers as f64;
    let lb = dtype.linear_bytes();
    let (dense_mlp, experts) = match shape.moe {
        None => (layer.mlp_per_expert, 0.0),
        Some(moe) => (0.0, layer.mlp_per_expert * moe.experts as f64),
    };
    WeightBytes {
        embedding: table,
        lm_head: if shape.tied_embeddings { 0.0 } else { table },
        layers: layers
            * ((layer.attention + dense_mlp) * lb + layer.sixteen_bit * ACTIVATION_BYTES),
        experts: layers * experts * lb,
        final_norm: h * ACTIVATION_BYTES,
        rotary: shape.max_position as f64 * shape.head_dim as f64 * ACTIVATION_BYTES,
    }
}

/// KV-cache bytes of one token on one GPU: K and V, in every layer, of the KV heads
/// the GPU holds, 16-bit.
pub fn kv_bytes_per_token(shape: &ModelShape, tp: u64) -> f64 {
    2.0 * shape.layers as f64
        * kv_heads_per_gpu(shape, tp) as f64
        * shape.head_dim as f64
        * ACTIVATION_BYTES
}

/// The activation estimate: vLLM profiles a forward pass of `max_num_batched_tokens`
/// tokens and then the sampler on `max_num_seqs` requests; its peak is the larger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Activation {
    /// T × (2·hidden + 5·experts_per_token·intermediate ÷ tp) × 2 bytes.
    pub forward: f64,
    /// max_num_seqs × vocabulary × 8 bytes (on the GPU that samples, whole vocabulary).
    pub sampler: f64,
}

impl Activation {
    pub fn peak(&self) -> f64 {
        self.forward.max(self.sampler)
    }
}

pub fn activation(shape: &ModelShape, deployment: &Deployment) -> Activation {
    let e = &deployment.engine;
    let mlp = shape.active_experts() as f64 * shape.ffn as f64 / deployment.tp.max(1) as f64;
    let per_token = FORWARD_HIDDEN_WIDTHS * shape.hidden as f64 + FORWARD_MLP_WIDTHS * mlp;
    Activation {
        forward: e.max_num_batched_tokens as f64 * per_token * ACTIVATION_BYTES,
        sampler: e.max_num_seqs as f64 * shape.vocab as f64 * SAMPLER_BYTES_PER_LOGIT,
    }
}

/// Non-torch memory per GPU: [`NON_TORCH_TP1_GIB`] alone, [`NON_TORCH_TP_GIB`] in a
/// tensor-parallel group.
pub fn non_torch_bytes(tp: u64) -> f64 {
    if tp <= 1 {
        NON_TORCH_TP1_GIB * GIB
    } else {
        NON_TORCH_TP_GIB * GIB
    }
}

/// The KV capacity of one GPU and every figure it follows from, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capacity {
    /// The GPU's memory as PyTorch reports it.
    pub total: f64,
    /// `total × gpu_memory_utilization`: what vLLM may use.
    pub usable: f64,
    pub weights: WeightBytes,
    pub activation: Activation,
    pub non_torch: f64,
    /// `usable − weights − activation peak − non_torch` (may be negative).
    pub kv_cache: f64,
    pub bytes_per_token: f64,
    /// `block_size × bytes_per_token`.
    pub bytes_per_block: f64,
    /// ⌊kv_cache ÷ bytes_per_block⌋ (0 when nothing is left): vLLM's `num_gpu_blocks`,
    /// its null block included.
    pub num_gpu_blocks: u64,
}

impl Capacity {
    /// The blocks a request can use: vLLM's block 0 is its null block.
    pub fn usable_blocks(&self) -> u64 {
        self.num_gpu_blocks.saturating_sub(1)
    }

    /// "weights 14.99 GiB + activations 1.22 GiB + non-torch 0.15 GiB of 71.27 GiB".
    pub fn budget_text(&self) -> String {
        format!(
            "weights {} + activations {} + non-torch memory {} of the {} vLLM may use",
            gib_text(self.weights.total()),
            gib_text(self.activation.peak()),
            gib_text(self.non_torch),
            gib_text(self.usable)
        )
    }
}

/// The KV capacity of one GPU, as vLLM's memory profile derives it:
/// `num_gpu_blocks = ⌊(total × utilization − weights − activation peak − non-torch)
/// ÷ (block_size × KV bytes per token)⌋`. [`ModelError::DoesNotFit`] when fewer than
/// two blocks (the null block and one usable) remain.
pub fn capacity(shape: &ModelShape, deployment: &Deployment) -> Result<Capacity, ModelError> {
    let tp = deployment.tp;
    let total = deployment.gpu.torch_total_bytes as f64;
    let usable = total * deployment.engine.gpu_memory_utilization;
    let weights = weight_bytes(shape, tp, deployment.dtype);
    let activation = activation(shape, deployment);
    let non_torch = non_torch_bytes(tp);
    let kv_cache = usable - weights.total() - activation.peak() - non_torch;
    let bytes_per_token = kv_bytes_per_token(shape, tp);
    let bytes_per_block = deployment.engine.block_size as f64 * bytes_per_token;
    let blocks = (kv_cache / bytes_per_block).floor();
    let capacity = Capacity {
        total,
        usable,
        weights,
        activation,
        non_torch,
        kv_cache,
        bytes_per_token,
        bytes_per_block,
        // `as` saturates: NaN and negatives become 0.
        num_gpu_blocks: blocks as u64,
    };
    if blocks >= 2.0 {
        Ok(capacity)
    } else {
        Err(ModelError::DoesNotFit(Box::new(capacity)))
    }
}

/// Bytes as GiB with two decimals: "14.99 GiB".
pub fn gib_text(bytes: f64) -> String {
    format!("{:.2} GiB", bytes / GIB)
}

/// Bytes in the largest binary unit that divides them: "2 MiB", "128 KiB", "1000 bytes".
pub fn bytes_text(bytes: f64) -> String {
    let whole = bytes.round();
    if whole != bytes || whole <= 0.0 {
        return format!("{bytes} bytes");
    }
    for (unit, size) in [("GiB", GIB), ("MiB", 1_048_576.0), ("KiB", 1024.0)] {
        if whole % size == 0.0 {
            return format!("{} {unit}", whole / size);
        }
    }
    format!("{whole} bytes")
}
