//! Issue #31 item 4: the iteration time `poolc model` prints is checked against an
//! independent implementation of BLIS's trained-physics step time, written here from
//! the published formula and coefficients (inference-sim at commit f90a1e3a6787:
//! sim/latency/trained_physics_model.go, defaults.yaml; docs/LATENCY.md cites them),
//! not by calling poolc's own model code: this file reads the shipped Hugging Face
//! configs itself, works each basis function out request by request, and compares
//! with the spec's compiled `time` evaluated by the JIT on the same hand-made
//! batches. They must agree to 1e-9 relative.
//!
//! What is modelled here is BLIS at data parallelism 1 with its default balanced
//! expert placement: the case `poolc model` serves (one engine, tensor parallel).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::path::Path;

use cli_support::poolc;
use poolc::ir::{Input, Program, Var};
use poolc::{Options, compile};

/// BLIS's global trained-physics coefficients (defaults.yaml,
/// `trained_physics_coefficients.beta_coeffs`), in its order: β₁ₐ prefill compute,
/// β₂ₐ decode compute, β₃ weights, β₄ TP all-reduce, β₅ µs per layer, β₆ µs per
/// request, β₇ µs per step, β₈ µs per interleaved MoE layer, β₁ᵦ prefill KV write,
/// β₂ᵦ decode KV read (β_EP, the eleventh, only matters at DP > 1).
const BETA: [f64; 10] = [
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
];

/// Dense BF16 tensor FLOP/s and HBM bytes/s of the GPUs the tests use.
struct Gpu {
    name: &'static str,
    flops: f64,
    bytes: f64,
}

const H100: Gpu = Gpu {
    name: "h100",
    flops: 989.5e12,
    bytes: 3.35e12,
};
const A100: Gpu = Gpu {
    name: "a100-80gb",
    flops: 312e12,
    bytes: 2.039e12,
};

/// What the formula reads of a model, from its config.json.
struct Arch {
    layers: f64,
    hidden: f64,
    heads: f64,
    kv_heads: f64,
    head_dim: f64,
    /// The FFN width of a dense layer, or of one expert in an MoE layer.
    ffn: f64,
    /// Experts per MoE layer (0: dense) and experts each token goes to.
    experts: f64,
    top_k: f64,
}

fn arch(model: &str) -> Arch {
    let path = format!(
        "{}/../examples/models/{model}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let c: serde_json::Value = serde_json::from_str(&text).unwrap();
    let n = |k: &str| c[k].as_f64();
    let heads = n("num_attention_heads").unwrap();
    let hidden = n("hidden_size").unwrap();
    let experts = n("num_local_experts").or(n("num_experts")).unwrap_or(0.0);
    Arch {
        layers: n("num_hidden_layers").unwrap(),
        hidden,
        heads,
        kv_heads: n("num_key_value_heads").unwrap_or(heads),
        // BLIS's d_h, even where a config gives another `head_dim` (Qwen3).
        head_dim: hidden / heads,
        ffn: if experts > 0.0 {
            n("moe_intermediate_size")
                .or(n("intermediate_size"))
                .unwrap()
        } else {
            n("intermediate_size").unwrap()
        },
        experts,
        top_k: n("num_experts_per_tok").unwrap_or(1.0).max(1.0),
    }
}

/// One session's share of an iteration: the tokens it takes, its computed tokens
/// before the iteration, its prompt length, and whether it is generating.
#[derive(Clone, Copy)]
struct Take {
    tokens: u64,
    computed: u64,
    prompt: u64,
    decoding: bool,
}

fn prefill(tokens: u64, computed: u64, prompt: u64) -> Take {
    Take {
        tokens,
        computed,
        prompt,
        decoding: false,
    }
}

fn decode(computed: u64) -> Take {
    Take {
        tokens: 1,
        computed,
        prompt: computed / 2,
        decoding: true,
    }
}

/// The step time in seconds by the published formula, term by term (µs, then /1e6).
fn blis_step_seconds(a: &Arch, gpu: &Gpu, tp: f64, batch: &[Take]) -> f64 {
    let (l, d, d_h) = (a.layers, a.hidden, a.head_dim);
    let d_kv = a.kv_heads * d_h;
    let heads_per_gpu = a.heads / tp;
    let flops_per_us = gpu.flops / 1e6;
    let bytes_per_us = gpu.bytes / 1e6;
    let (bpp, kv_bytes) = (2.0, 2.0);
    let moe = a.experts > 0.0;

    let mut t_pf = 0.0;
    let mut t_dc = 0.0;
    let mut attn_pf = 0.0;
    let mut ctx = 0.0;
    for take in batch {
        if take.decoding {
            t_dc += 1.0;
            ctx += take.computed as f64;
        } else {
            let (t, s) = (take.tokens as f64, take.prompt as f64);
            t_pf += t;
            attn_pf += 4.0 * heads_per_gpu * t * (s + t / 2.0) * d_h;
        }
    }
    let ffn_flops = |tokens: f64| {
        if moe {
            l * (tokens * a.top_k / tp) * 6.0 * d * a.ffn
        } else {
            l * tokens * 6.0 * d * a.ffn / tp
        }
    };
    let proj = |tokens: f64| l * 2.0 * tokens * d * (2.0 * d + 2.0 * d_kv) / tp;
    let pf_compute = if t_pf > 0.0 {
        (proj(t_pf) + l * attn_pf + ffn_flops(t_pf)) / flops_per_us
    } else {
        0.0
    };
    let pf_kv = l * 2.0 * (d_kv / tp) * t_pf * kv_bytes / bytes_per_us;
    let dc_compute = if t_dc > 0.0 {
        (proj(t_dc) + l * 4.0 * heads_per_gpu * ctx * d_h + ffn_flops(t_dc)) / flops_per_us
    } else {
        0.0
    };
    let dc_kv = l * 2.0 * (d_kv / tp) * kv_bytes * (ctx + t_dc) / bytes_per_us;
    let ffn_bytes = if moe {
        l * (a.experts / tp) * 3.0 * d * a.ffn * bpp
    } else {
        l * 3.0 * d * a.ffn * bpp / tp
    };
    let weight = (l * d * (2.0 * d + 2.0 * d_kv) * bpp / tp + ffn_bytes) / bytes_per_us;
    // Ring all-reduce: two units a layer (attention, and the FFN, dense or MoE).
    let all_reduce = if tp > 1.0 {
        2.0 * l * (t_pf + t_dc) * d * 2.0 * 2.0 * (tp - 1.0) / tp / bytes_per_us
    } else {
        0.0
    };
    let micros = BETA[0] * pf_compute
        + BETA[8] * pf_kv
        + BETA[1] * dc_compute
        + BETA[9] * dc_kv
        + BETA[2] * weight
        + BETA[3] * all_reduce
        + BETA[4] * l
        + BETA[5] * batch.len() as f64
        + BETA[6];
    micros / 1e6
}

/// The spec `poolc model` prints for a model, GPU and TP degree, compiled.
fn printed(model: &str, gpu: &Gpu, tp: u32) -> poolc::Compiled {
    let config = format!("examples/models/{model}/config.json");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(&config)
            .exists(),
        "{config} is shipped"
    );
    let out = poolc(&["model", &config, "--gpu", gpu.name, "--tp", &tp.to_string()]);
    assert!(
        out.status.success(),
        "poolc model {config} --gpu {} --tp {tp}: {}",
        gpu.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    compile(&text, &Options::default()).unwrap_or_else(|d| panic!("{text}\n{d:#?}"))
}

/// The compiled `time` of the spec's one step stage on `batch`: the totals in its
/// ctx, one take row per session, as the host fills them (R20, R29).
fn compiled_seconds(c: &poolc::Compiled, batch: &[Take]) -> f64 {
    let program: &Program = c.program();
    let (_, layout) = program.stages[0].time();
    let total = |f: &dyn Fn(&Take) -> u64| batch.iter().map(f).sum::<u64>() as f64;
    let ctx: Vec<f64> = layout
        .ctx
        .iter()
        .map(|input| match input {
            Input::Var(Var::Tokens) => total(&|t| t.tokens),
            Input::Var(Var::Prefill) => total(&|t| if t.decoding { 0 } else { t.tokens }),
            Input::Var(Var::Decode) => total(&|t| if t.decoding { t.tokens } else { 0 }),
            Input::Var(Var::Residents) => batch.len() as f64,
            Input::Var(Var::Context) => total(&|t| t.computed + t.tokens),
            other => panic!("a stage time's ctx holds no {other:?}"),
        })
        .collect();
    let mut rows = Vec::new();
    for t in batch {
        for input in &layout.row {
            rows.push(match input {
                Input::Var(Var::Tokens) => t.tokens as f64,
                Input::Var(Var::Prefill) => (if t.decoding { 0 } else { t.tokens }) as f64,
                Input::Var(Var::Decode) => (if t.decoding { t.tokens } else { 0 }) as f64,
                Input::Var(Var::Computed) => t.computed as f64,
                Input::Var(Var::Context) => (t.computed + t.tokens) as f64,
                Input::Attr(a) if program.session.attr(*a).name == "prompt" => t.prompt as f64,
                other => panic!("a take row holds no {other:?}"),
            });
        }
    }
    c.stages()[0].time(&ctx, &rows, batch.len())
}

/// Hand-made iterations: decode-only at short and long contexts, a lone prefill
/// chunk, chunks in the middle of long prompts, and a mixed batch.
fn batches() -> Vec<Vec<Take>> {
    vec![
        vec![decode(17)],
        (0..64).map(|i| decode(100 + 37 * i)).collect(),
        (0..8).map(|i| decode(30_000 + 1000 * i)).collect(),
        vec![prefill(512, 0, 512)],
        vec![prefill(2048, 6144, 9000), prefill(100, 0, 100)],
        {
            let mut b = vec![prefill(700, 300, 4096)];
            b.extend((0..200).map(|i| decode(50 + 11 * i)));
            b
        },
    ]
}

fn assert_agrees(model: &str, gpu: &Gpu, tp: u32) {
    let c = printed(model, gpu, tp);
    let a = arch(model);
    for (k, batch) in batches().iter().enumerate() {
        let want = blis_step_seconds(&a, gpu, f64::from(tp), batch);
        let got = compiled_seconds(&c, batch);
        let error = ((got - want) / want).abs();
        assert!(
            error <= 1e-9,
            "{model} on {} TP {tp}, batch {k}: compiled {got} s, formula {want} s ({error:e})",
            gpu.name
        );
    }
}

#[test]
fn llama_3_1_8b_on_one_h100_is_blis_trained_physics() {
    assert_agrees("llama-3.1-8b", &H100, 1);
}

#[test]
fn llama_3_1_70b_at_tp_4_adds_the_all_reduce() {
    assert_agrees("llama-3.1-70b", &H100, 4);
}

#[test]
fn qwen2_5_32b_on_a100s_at_tp_2() {
    assert_agrees("qwen2.5-32b", &A100, 2);
}

#[test]
fn an_moe_model_reads_its_experts_weights_and_routes_top_k_tokens() {
    assert_agrees("mixtral-8x7b", &H100, 2);
    assert_agrees("qwen3-30b-a3b", &H100, 1);
}
