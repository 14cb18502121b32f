//! The two iteration-time models `poolc model` writes into a stage's `time`, as Pool
//! text: the `const` declarations the expression reads (the model's shape, the GPU's
//! peaks, the coefficients, the basis functions in FLOPs and bytes) and the expression
//! itself, in seconds, with a comment saying what it is.
//!
//! - **Trained physics** ([`trained_physics`]): BLIS's default latency model
//!   (github.com/inference-sim/inference-sim at [`BLIS_COMMIT`],
//!   sim/latency/trained_physics_model.go; coefficients [`BETA`] and [`ALPHA`] from its
//!   defaults.yaml `trained_physics_coefficients`), its basis functions written over
//!   the per-session values of `sum(…)`.
//! - **Roofline** ([`roofline`]): the slower of the iteration's FLOPs at the peak and
//!   its memory traffic at full bandwidth, no learned coefficient.
//!
//! The formulas are BLIS's, re-derived and cited, not its code. It computes only the
//! counts the text folds in; the compiler checks and evaluates the result.

use std::fmt::Write;

use super::config::ModelShape;
use super::memory::{self, kv_heads_per_gpu};
use super::{ACTIVATION_BYTES, Deployment, Dtype};

/// The inference-sim (BLIS) commit whose formulas and coefficients are used.
pub const BLIS_COMMIT: &str = "f90a1e3a6787da17c2cd463dab6fb2660b1b1760";

/// BLIS's `beta_coeffs`, in its order: β1a (prefill compute), β2a (decode compute),
/// β3 (weight loading), β4 (TP all-reduce), β5 (µs per layer), β6 (µs per request),
/// β7 (µs per step), β8 (µs per interleaved MoE layer), β1b (prefill KV writes), β2b
/// (decode KV traffic), β_EP (MoE dispatch under data parallelism).
pub const BETA: [f64; 11] = [
    0.152128,
    0.0,
    1.36252915,
    0.752037,
    32.09546717,
    4.41684444,
    126.024825,
    481.8613888,
    0.0,
    1.94710771,
    0.752037,
];

/// BLIS's `alpha_coeffs`, µs: α0 queueing per request, α1 per request at completion,
/// α2 per output token. They are charged outside the iteration, which a stage `time`
/// cannot express.
pub const ALPHA: [f64; 3] = [15563.199579, 777.3455, 45.907545];

/// A time model as Pool text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeText {
    /// Comment lines (without `// `) saying what the model is, for the spec's header.
    pub about: Vec<String>,
    /// `const` declarations, one per line, with their comments.
    pub consts: String,
    /// The `time` expression, possibly over several lines (continuation lines indented
    /// for a stage body).
    pub expr: String,
}

/// `const` declarations: figures one per line with their comments aligned, and
/// formulas over them each after a comment line of its own.
struct Consts(Vec<Decl>);

enum Decl {
    Figure {
        name: String,
        value: String,
        comment: String,
    },
    Formula {
        name: String,
        expr: String,
        comment: String,
    },
}

impl Consts {
    fn new() -> Consts {
        Consts(Vec::new())
    }

    fn add(&mut self, name: &str, value: impl ToString, comment: impl ToString) {
        self.0.push(Decl::Figure {
            name: name.to_string(),
            value: value.to_string(),
            comment: comment.to_string(),
        });
    }

    /// The GPU's figures both time models read: `gpu_tflops` (the peak the dtype runs
    /// at) and `gpu_tb_per_s`.
    fn gpu(&mut self, deployment: &Deployment) {
        self.add(
            "gpu_tflops",
            number(deployment.peak_tflops()),
            peak_comment(deployment),
        );
        self.add(
            "gpu_tb_per_s",
            number(deployment.gpu.tb_per_s),
            "memory bandwidth, TB/s",
        );
    }

    fn formula(&mut self, name: &str, expr: &str, comment: &str) {
        self.0.push(Decl::Formula {
            name: name.to_string(),
            expr: expr.to_string(),
            comment: comment.to_string(),
        });
    }

    fn text(&self) -> String {
        let width = self
            .0
            .iter()
            .map(|d| match d {
                Decl::Figure { name, value, .. } => name.len() + value.len(),
                Decl::Formula { .. } => 0,
            })
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for decl in &self.0 {
            match decl {
                Decl::Figure {
                    name,
                    value,
                    comment,
                } => {
                    let pad = " ".repeat(width - (name.len() + value.len()));
                    let _ = writeln!(out, "const {name} = {value};{pad}  // {comment}");
                }
                Decl::Formula {
                    name,
                    expr,
                    comment,
                } => {
                    let _ = writeln!(out, "// {comment}\nconst {name} = {expr};");
                }
            }
        }
        out
    }
}

/// A number as Pool reads it back: whole numbers without a fraction.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn peak_comment(deployment: &Deployment) -> String {
    match (deployment.dtype, deployment.gpu.fp8_tflops) {
        (Dtype::Fp8, Some(_)) => "dense FP8 peak, TFLOP/s".to_string(),
        (Dtype::Fp8, None) => {
            "dense BF16 peak, TFLOP/s (no FP8 tensor cores: FP8 weights compute in BF16)"
                .to_string()
        }
        _ => "dense BF16 peak, TFLOP/s".to_string(),
    }
}

/// BLIS's trained-physics step time for this model and deployment, in seconds:
///
/// ```text
/// µs = β1a·T_pf_compute + β2b·T_dc_kv + β3·T_weight + β4·T_tp + β5·L + β6·B + β7
/// ```
///
/// with (per GPU; d hidden, d_kv KV heads × head_dim, L layers, P prefill tokens, N
/// decode tokens, B requests in the batch; peak in FLOP/µs, bandwidth in bytes/µs):
/// T_pf_compute = [L·P·(4d(d + d_kv) + 6·d·ffn·k)/tp + 4·L·(H/tp)·d_h·Σ t(s + t/2)] ÷
/// peak over the prefilling requests (t their tokens, s their prompt);
/// T_dc_kv = L·4·(d_kv/tp)·Σ (ctx + 1) ÷ bandwidth over the decoding ones;
/// T_weight = L·d·(2d + 2d_kv + 3·ffn·E)·bytes/tp ÷ bandwidth;
/// T_tp = 2L·(P + N)·d·2·2·(tp−1)/tp ÷ bandwidth.
/// β1b = β2a = 0, so BLIS's T_pf_kv and T_dc_compute drop out; β8 applies to
/// interleaved MoE layers and β_EP to data parallelism, neither of which is here.
pub fn trained_physics(shape: &ModelShape, deployment: &Deployment) -> TimeText {
    let tp = deployment.tp;
    // BLIS's step time takes the head dimension as hidden ÷ heads (Go integer
    // division), whatever `head_dim` says.
    let blis_head_dim = shape.hidden / shape.heads;
    let kv_dim = kv_heads_per_gpu(shape, tp) * tp * blis_head_dim;
    let replicated = shape.kv_heads < tp;

    let mut c = Consts::new();
    c.add("beta_prefill_compute", number(BETA[0]), "β1a");
    c.add("beta_decode_kv", number(BETA[9]), "β2b (the 10th β)");
    c.add("beta_weights", number(BETA[2]), "β3");
    c.add("beta_tp", number(BETA[3]), "β4");
    c.add("beta_layer_us", number(BETA[4]), "β5, µs per layer");
    c.add(
        "beta_request_us",
        number(BETA[5]),
        "β6, µs per request in the batch",
    );
    c.add("beta_step_us", number(BETA[6]), "β7, µs per step");
    c.add("layers", shape.layers, "num_hidden_layers");
    c.add("hidden", shape.hidden, "hidden_size");
    c.add("heads", shape.heads, "num_attention_heads");
    c.add(
        "head_dim",
        blis_head_dim,
        if shape.head_dim_explicit && shape.head_dim != blis_head_dim {
            format!(
                "hidden_size / num_attention_heads, as BLIS's step time takes it (config's head_dim is {})",
                shape.head_dim
            )
        } else {
            "hidden_size / num_attention_heads".to_string()
        },
    );
    c.add(
        "kv_dim",
        kv_dim,
        if replicated {
            format!(
                "num_key_value_heads x head_dim, one KV head per GPU: vLLM replicates the {} KV heads over tp {tp} (BLIS refuses this tp)",
                shape.kv_heads
            )
        } else {
            "num_key_value_heads x head_dim".to_string()
        },
    );
    c.add(
        "ffn",
        shape.ffn,
        if shape.moe.is_some() {
            "each expert's intermediate size"
        } else {
            "intermediate_size"
        },
    );
    c.add(
        "experts",
        shape.experts(),
        "experts each layer holds (1: a dense MLP)",
    );
    c.add(
        "active_experts",
        shape.active_experts(),
        "experts each token passes through",
    );
    c.add("tp", tp, "tensor parallelism");
    c.add(
        "weight_bytes",
        number(deployment.dtype.linear_bytes()),
        format!("bytes per weight ({})", deployment.dtype.name()),
    );
    c.gpu(deployment);
    c.formula(
        "prefill_flops_per_token",
        "layers * (4 * hidden * (hidden + kv_dim) + 6 * hidden * ffn * active_experts) / tp",
        "FLOPs of the projections and the MLP, per prefill token",
    );
    c.formula(
        "attention_flops",
        "4 * layers * heads / tp * head_dim",
        "FLOPs of attention, per prefill token and position attended",
    );
    c.formula(
        "kv_bytes_per_token",
        "4 * layers * kv_dim / tp",
        "KV bytes of one token of context: K and V, 2 bytes an element",
    );
    c.formula(
        "weight_bytes_per_step",
        "layers * hidden * (2 * hidden + 2 * kv_dim + 3 * ffn * experts) * weight_bytes / tp",
        "bytes of the layers' weights, read once an iteration",
    );
    c.formula(
        "allreduce_bytes_per_token",
        "2 * layers * hidden * 2 * 2 * (tp - 1) / tp",
        "bytes of two ring all-reduces a layer, per token (0 at tp 1)",
    );

    let expr = "1e-6 * (beta_prefill_compute * (prefill_flops_per_token * prefill\n\
        \x20                                      + attention_flops * sum(prefill * (prompt + prefill / 2))) / (gpu_tflops * 1e6)\n\
        \x20             + beta_decode_kv * kv_bytes_per_token * sum(decode * context) / (gpu_tb_per_s * 1e6)\n\
        \x20             + beta_weights * weight_bytes_per_step / (gpu_tb_per_s * 1e6)\n\
        \x20             + beta_tp * allreduce_bytes_per_token * tokens / (gpu_tb_per_s * 1e6)\n\
        \x20             + beta_layer_us * layers + beta_request_us * residents + beta_step_us)"
        .to_string();

    let about = vec![
        "Iteration time: BLIS's trained-physics model, in µs".to_string(),
        "  β1a·T_pf_compute + β2b·T_dc_kv + β3·T_weight + β4·T_tp + β5·layers + β6·requests + β7"
            .to_string(),
        format!(
            "(github.com/inference-sim/inference-sim at {}: sim/latency/trained_physics_model.go,",
            short(BLIS_COMMIT)
        ),
        "β from defaults.yaml's trained_physics_coefficients). T_pf_compute: the prefill's projection,"
            .to_string(),
        "MLP and attention FLOPs at the GPU's peak; T_dc_kv: the decode's KV reads and writes; T_weight:"
            .to_string(),
        "one read of the layers' weights; T_tp: tensor parallelism's ring all-reduces; each at the memory"
            .to_string(),
        "bandwidth. β1b and β2a are 0 in the published set (the prefill's KV writes and the decode's FLOPs"
            .to_string(),
        "drop out); β8 (interleaved MoE layers) and β_EP (data parallelism) do not apply. As in BLIS, a"
            .to_string(),
        "prefill chunk attends its whole prompt (s = prompt) and the KV cache is 2 bytes an element."
            .to_string(),
        format!(
            "Not modelled: BLIS's per-request overheads outside the iteration, α0 = {} µs queueing per",
            one_decimal(ALPHA[0])
        ),
        format!(
            "request, α1 = {} µs at completion and α2 = {} µs per output token (BLIS reports {:.1} ms more",
            one_decimal(ALPHA[1]),
            one_decimal(ALPHA[2]),
            ALPHA[0] / 1000.0
        ),
        format!(
            "TTFT, and {:.2} ms + {} µs per output token more end-to-end latency); its rounding to whole µs.",
            (ALPHA[0] + ALPHA[1]) / 1000.0,
            one_decimal(ALPHA[2])
        ),
    ];

    TimeText {
        about,
        consts: c.text(),
        expr,
    }
}

/// The roofline: each iteration lasts max(FLOPs ÷ peak, bytes ÷ bandwidth), with
/// FLOPs = 2 × the active linear parameters × tokens + the LM head of each request's
/// last token + causal attention (4·(H/tp)·d_h per token and position attended, each
/// of a session's t new tokens attending its computed tokens and the new ones up to
/// itself) and bytes = every weight but the embedding table read once (for a mixture
/// of experts, only the experts min(E, k × tokens) the tokens can reach) + the KV
/// cache read and written (`context` tokens).
pub fn roofline(shape: &ModelShape, deployment: &Deployment) -> TimeText {
    let tp = deployment.tp;
    let tp_f = tp as f64;
    let h = shape.hidden as f64;
    let weights = memory::weight_bytes(shape, tp, deployment.dtype);
    let l = shape.layers as f64;

    // Linear parameters one token passes through on one GPU.
    let q = shape.heads as f64 / tp_f * shape.head_dim as f64;
    let kv = (kv_heads_per_gpu(shape, tp) * shape.head_dim) as f64;
    let attention = h * q + 2.0 * h * kv + q * h;
    let mlp = shape.active_experts() as f64 * 3.0 * h * shape.ffn as f64 / tp_f;
    let router = shape.moe.map_or(0.0, |m| h * m.experts as f64);
    let linear_params = l * (attention + mlp + router);
    // The LM head's share of the padded vocabulary, as the weights count it.
    let vocab_rows = weights.embedding / (h * ACTIVATION_BYTES);

    // Read once per iteration: everything but the embedding table (read by row) and
    // the rotary cache (read by position); the experts apart.
    let table_read = if shape.tied_embeddings {
        weights.embedding
    } else {
        weights.lm_head
    };
    let step_bytes = table_read + weights.layers + weights.final_norm;
    let expert_bytes = shape.moe.map(|m| weights.experts / m.experts as f64);

    let mut c = Consts::new();
    c.add("layers", shape.layers, "num_hidden_layers");
    c.add(
        "heads_per_gpu",
        number(shape.heads as f64 / tp_f),
        "num_attention_heads / tp",
    );
    c.add(
        "head_dim",
        shape.head_dim,
        if shape.head_dim_explicit {
            "head_dim"
        } else {
            "hidden_size / num_attention_heads"
        },
    );
    c.add(
        "kv_heads_per_gpu",
        kv_heads_per_gpu(shape, tp),
        "num_key_value_heads / tp (at least 1)",
    );
    c.gpu(deployment);
    c.add(
        "flops_per_token",
        number(2.0 * linear_params),
        "2 x the linear parameters a token passes through, per GPU",
    );
    c.add(
        "lm_head_flops",
        number(2.0 * h * vocab_rows),
        "2 x hidden_size x the GPU's share of the vocabulary, per request",
    );
    c.formula(
        "attention_flops",
        "4 * layers * heads_per_gpu * head_dim",
        "FLOPs of attention, per token and position attended",
    );
    c.add(
        "weight_bytes_per_step",
        number(step_bytes),
        if shape.moe.is_some() {
            "per GPU: the layers' weights but the experts, the LM head, the final norm"
        } else {
            "per GPU: the layers' weights, the LM head, the final norm"
        },
    );
    if let (Some(moe), Some(bytes)) = (shape.moe, expert_bytes) {
        c.add("experts", moe.experts, "experts each layer holds");
        c.add(
            "active_experts",
            moe.experts_per_token,
            "experts each token passes through",
        );
        c.add(
            "expert_bytes",
            number(bytes),
            "one expert in every layer, per GPU",
        );
    }
    c.formula(
        "kv_bytes_per_token",
        "2 * layers * kv_heads_per_gpu * head_dim * 2",
        "KV bytes of one token of context: K and V, 2 bytes an element",
    );

    let experts_read = if shape.moe.is_some() {
        " + min(experts, active_experts * tokens) * expert_bytes"
    } else {
        ""
    };
    let expr = format!(
        "max((flops_per_token * tokens + lm_head_flops * residents\n\
        \x20            + attention_flops * sum(tokens * (computed + (tokens + 1) / 2))) / (gpu_tflops * 1e12),\n\
        \x20           (weight_bytes_per_step{experts_read} + kv_bytes_per_token * context) / (gpu_tb_per_s * 1e12))"
    );

    let mut about = vec![
        "Iteration time: a roofline, no learned coefficient: the slower of the iteration's FLOPs at the GPU's".to_string(),
        "peak and its memory traffic at full bandwidth. FLOPs: 2 x the linear parameters a token passes through".to_string(),
        "x tokens, the LM head for each request's last token, and causal attention (each of a session's new".to_string(),
        "tokens attends its computed tokens and the new ones up to itself). Bytes: the weights read once".to_string(),
    ];
    if shape.moe.is_some() {
        about.push("(of the experts, only the min(experts, active_experts x tokens) the tokens can reach) and the".to_string());
        about.push("KV cache read and written (context). Not modelled: per-step overheads, kernel efficiency,".to_string());
    } else {
        about.push("and the KV cache read and written (context). Not modelled: per-step overheads, kernel efficiency,".to_string());
    }
    about.push("tensor parallelism's all-reduces, and anything outside the iteration.".to_string());

    TimeText {
        about,
        consts: c.text(),
        expr,
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn one_decimal(x: f64) -> String {
    format!("{x:.1}")
}
