//! `poolc model`'s two time models (docs/LATENCY.md, "A time model from the model's
//! shape") evaluated by the compiler: the trained-physics `time` against BLIS's
//! `StepTime` re-derived here from its published formulas, the roofline against one
//! computed here by hand, for mixed, decode-only and prefill-only batches, with the
//! `sum(…)` terms given as numbers and summed over one take row per session as the
//! host evaluates R29. Every expected number is the test's own arithmetic, never the
//! code under test's.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod model_support;

use model_support::{on, shipped};

use poolc_tools::eval::{self, Backend, Site};
use poolc_tools::model::time::{ALPHA, BETA};
use poolc_tools::model::{Dtype, TimeKind, spec};

/// A batch: prefill chunks (tokens, their request's prompt, its computed tokens
/// before) and decoding requests (their computed tokens before).
struct Batch {
    prefills: Vec<(f64, f64, f64)>,
    decodes: Vec<f64>,
}

fn batches() -> Vec<Batch> {
    vec![
        Batch {
            prefills: vec![(2048.0, 2048.0, 0.0), (512.0, 4000.0, 1024.0)],
            decodes: vec![100.0, 2000.0, 35.0],
        },
        Batch {
            prefills: vec![],
            decodes: (0..256).map(|i| 300.0 + 7.0 * f64::from(i)).collect(),
        },
        Batch {
            prefills: vec![(8192.0, 9000.0, 0.0)],
            decodes: vec![],
        },
    ]
}

/// BLIS's trained-physics step time in µs (inference-sim f90a1e3a6787,
/// sim/latency/trained_physics_model.go, StepTime at DP 1 without LoRA), re-derived
/// here from the published formulas, every β term written out (the zero ones too).
#[allow(clippy::too_many_arguments)]
fn blis_step_us(
    layers: f64,
    d: f64,
    heads: f64,
    kv_heads: f64,
    ffn: f64,
    moe: Option<(f64, f64)>,
    tp: f64,
    weight_bytes: f64,
    tflops: f64,
    tb_per_s: f64,
    b: &Batch,
) -> f64 {
    let dh = (d / heads).floor();
    let dkv = kv_heads * dh;
    let h_gpu = heads / tp;
    let flops_us = tflops * 1e6;
    let bw_us = tb_per_s * 1e6;
    let p: f64 = b.prefills.iter().map(|x| x.0).sum();
    let attn: f64 = b
        .prefills
        .iter()
        .map(|&(t, s, _)| 4.0 * h_gpu * t * (s + t / 2.0) * dh)
        .sum();
    let n = b.decodes.len() as f64;
    let ctx: f64 = b.decodes.iter().sum();
    let ffn_flops = |tokens: f64| match moe {
        Some((_, k)) => layers * (tokens * k / tp) * 6.0 * d * ffn,
        None => layers * tokens * 6.0 * d * ffn / tp,
    };
    let proj = |tokens: f64| layers * 2.0 * tokens * d * (2.0 * d + 2.0 * dkv) / tp;
    let pf_compute = (proj(p) + layers * attn + ffn_flops(p)) / flops_us;
    let pf_kv = layers * 2.0 * (dkv / tp) * p * 2.0 / bw_us;
    let dc_compute = (proj(n) + layers * 4.0 * h_gpu * ctx * dh + ffn_flops(n)) / flops_us;
    let dc_kv = layers * 2.0 * (dkv / tp) * 2.0 * (ctx + n) / bw_us;
    let ffn_weights = match moe {
        Some((e, _)) => layers * (e / tp) * 3.0 * d * ffn * weight_bytes,
        None => layers * 3.0 * d * ffn * weight_bytes / tp,
    };
    let weight = (layers * d * (2.0 * d + 2.0 * dkv) * weight_bytes / tp + ffn_weights) / bw_us;
    // Attention all-reduce per layer, and the dense FFN's (or at DP 1 the MoE FFN's).
    let all_reduce = if tp > 1.0 {
        2.0 * layers * (p + n) * d * 2.0 * 2.0 * (tp - 1.0) / tp / bw_us
    } else {
        0.0
    };
    let batch = b.prefills.len() as f64 + n;
    BETA[0] * pf_compute
        + BETA[8] * pf_kv
        + BETA[1] * dc_compute
        + BETA[9] * dc_kv
        + BETA[2] * weight
        + BETA[3] * all_reduce
        + BETA[4] * layers
        + BETA[5] * batch
        + BETA[6]
}

/// The spec's `time` evaluated by the compiler for `b`, its `sum(…)` terms replaced
/// by their values over the batch (which this test computes) and the totals given as
/// the site's inputs.
fn spec_time(text: &str, sums: &[(&str, f64)], b: &Batch) -> f64 {
    let mut text = text.to_string();
    for (term, value) in sums {
        assert!(text.contains(term), "the time has no `{term}`");
        text = text.replace(term, &format!("({value:?})"));
    }
    assert!(!text.contains("sum("), "a sum term left:\n{text}");
    let compiled = poolc::compile(&text, &poolc::Options::default()).unwrap();
    let p: f64 = b.prefills.iter().map(|x| x.0).sum();
    let n = b.decodes.len() as f64;
    let context: f64 = b.prefills.iter().map(|&(t, _, c)| c + t).sum::<f64>()
        + b.decodes.iter().map(|c| c + 1.0).sum::<f64>();
    let inputs = vec![
        ("tokens".to_string(), p + n),
        ("prefill".to_string(), p),
        ("decode".to_string(), n),
        ("residents".to_string(), b.prefills.len() as f64 + n),
        ("context".to_string(), context),
    ];
    eval::eval_site(&compiled, "engine", Site::Time, &inputs, Backend::Interp).unwrap()[0]
}

fn trained_physics_sums(b: &Batch) -> [(&'static str, f64); 2] {
    [
        (
            "sum(prefill * (prompt + prefill / 2))",
            b.prefills.iter().map(|&(t, s, _)| t * (s + t / 2.0)).sum(),
        ),
        (
            "sum(decode * context)",
            b.decodes.iter().map(|c| c + 1.0).sum(),
        ),
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn trained_physics_is_blis_step_time_for_a_dense_model() {
    let s = shipped("llama-3.1-8b");
    let text = spec::generate("llama.json", &s, &on("h100", 1))
        .unwrap()
        .text;
    for b in batches() {
        let expected = blis_step_us(
            32.0, 4096.0, 32.0, 8.0, 14336.0, None, 1.0, 2.0, 989.5, 3.35, &b,
        );
        let got = spec_time(&text, &trained_physics_sums(&b), &b) * 1e6;
        assert!(close(got, expected), "{got} µs, BLIS {expected} µs");
    }
}

#[test]
fn trained_physics_is_blis_step_time_for_moe_at_tp_2_in_fp8() {
    let s = shipped("mixtral-8x7b");
    let mut d = on("h100", 2);
    d.dtype = Dtype::Fp8; // one byte a weight, the FP8 peak (1979)
    let text = spec::generate("mixtral.json", &s, &d).unwrap().text;
    for b in batches() {
        let expected = blis_step_us(
            32.0,
            4096.0,
            32.0,
            8.0,
            14336.0,
            Some((8.0, 2.0)),
            2.0,
            1.0,
            1979.0,
            3.35,
            &b,
        );
        let got = spec_time(&text, &trained_physics_sums(&b), &b) * 1e6;
        assert!(close(got, expected), "{got} µs, BLIS {expected} µs");
    }
}

#[test]
fn trained_physics_takes_hidden_over_heads_as_blis_does() {
    // Qwen3-30B-A3B: BLIS's step time reads d_h = 2048 / 32 = 64 (not head_dim 128).
    let s = shipped("qwen3-30b-a3b");
    let text = spec::generate("qwen3.json", &s, &on("h200", 1))
        .unwrap()
        .text;
    assert!(text.contains("const head_dim = 64;"), "{text}");
    for b in batches() {
        let expected = blis_step_us(
            48.0,
            2048.0,
            32.0,
            4.0,
            768.0,
            Some((128.0, 8.0)),
            1.0,
            2.0,
            989.5,
            4.8,
            &b,
        );
        let got = spec_time(&text, &trained_physics_sums(&b), &b) * 1e6;
        assert!(close(got, expected), "{got} µs, BLIS {expected} µs");
    }
}

/// The spec's `time` evaluated as the host evaluates it (R29): the compiler's
/// interpreter over one take row per session, each row filled by the names of the
/// stage's row layout (`tokens`, `prefill`, `decode`, `computed`, `context`, `prompt`),
/// and the totals by its ctx layout.
fn spec_time_with_takes(text: &str, b: &Batch) -> f64 {
    let program = poolc::check(text, &poolc::Options::default()).unwrap();
    let stage = program.stages.iter().find(|s| s.name == "engine").unwrap();
    let poolc::ir::StageKind::Step(step) = &stage.kind else {
        panic!("engine is a step stage")
    };
    // One session per prefill chunk (its prompt, computed before, tokens) and per
    // decode (prompt 1, computed before, 1 token).
    let sessions: Vec<(f64, f64, f64, bool)> = b
        .prefills
        .iter()
        .map(|&(t, s, c)| (t, s, c, true))
        .chain(b.decodes.iter().map(|&c| (1.0, 1.0, c, false)))
        .collect();
    let value = |name: &str, (t, prompt, c, prefill): (f64, f64, f64, bool)| match name {
        "tokens" => t,
        "prefill" => {
            if prefill {
                t
            } else {
                0.0
            }
        }
        "decode" => {
            if prefill {
                0.0
            } else {
                t
            }
        }
        "computed" => c,
        "context" => c + t,
        "prompt" => prompt,
        other => panic!("a take reads `{other}`"),
    };
    let names = |inputs: &[poolc::ir::Input]| -> Vec<String> {
        inputs
            .iter()
            .map(|i| poolc::ir::input_name(&program, *i))
            .collect()
    };
    let row_names = names(&step.time_layout.row);
    let rows: Vec<f64> = sessions
        .iter()
        .flat_map(|s| row_names.iter().map(move |n| value(n, *s)))
        .collect();
    let total = |name: &str| -> f64 { sessions.iter().map(|s| value(name, *s)).sum() };
    let ctx: Vec<f64> = names(&step.time_layout.ctx)
        .iter()
        .map(|n| match n.as_str() {
            "residents" => sessions.len() as f64,
            n => total(n),
        })
        .collect();
    let takes = poolc::interp::Takes {
        rows: &rows,
        n: sessions.len(),
        stride: row_names.len(),
    };
    poolc::interp::eval_time(&step.time.expr, takes, &ctx)
}

#[test]
fn r29_the_summing_time_over_one_take_per_session_is_blis_step_time() {
    // (config, tp, experts and experts per token): Llama-3.1-8B alone, Mixtral-8x7B on two.
    for (name, tp, moe) in [
        ("llama-3.1-8b", 1, None),
        ("mixtral-8x7b", 2, Some((8.0, 2.0))),
    ] {
        let text = spec::generate("c.json", &shipped(name), &on("h100", tp))
            .unwrap()
            .text;
        for b in batches() {
            let want = blis_step_us(
                32.0, 4096.0, 32.0, 8.0, 14336.0, moe, tp as f64, 2.0, 989.5, 3.35, &b,
            );
            let got = spec_time_with_takes(&text, &b) * 1e6;
            // The sums add take by take, the test in closed form: equal to rounding.
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "{name}: {got} µs, BLIS {want} µs"
            );
        }
    }
}

#[test]
fn r29_the_roofline_over_one_take_per_session_is_the_substituted_one() {
    let mut d = on("h100", 1);
    d.time = TimeKind::Roofline;
    let text = spec::generate("c.json", &shipped("llama-3.1-8b"), &d)
        .unwrap()
        .text;
    for b in batches() {
        let causal: f64 = b
            .prefills
            .iter()
            .map(|&(t, _, c)| t * (c + (t + 1.0) / 2.0))
            .chain(b.decodes.iter().map(|c| c + 1.0))
            .sum();
        let sums = [("sum(tokens * (computed + (tokens + 1) / 2))", causal)];
        let want = spec_time(&text, &sums, &b);
        let got = spec_time_with_takes(&text, &b);
        assert!((got - want).abs() <= 1e-9 * want, "{got} s, {want} s");
    }
}

#[test]
fn a_decode_iteration_of_llama_8b_is_a_plausible_number_of_milliseconds() {
    // 64 requests at 1,000 tokens of context: weights 14 GB and KV 8.4 GB read at
    // 3.35 TB/s, corrected by β3 and β2b, plus the overheads: about 12 ms.
    let s = shipped("llama-3.1-8b");
    let text = spec::generate("llama.json", &s, &on("h100", 1))
        .unwrap()
        .text;
    let b = Batch {
        prefills: vec![],
        decodes: vec![999.0; 64],
    };
    let ms = spec_time(&text, &trained_physics_sums(&b), &b) * 1e3;
    let weights = 32.0 * 4096.0 * (2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14336.0) * 2.0;
    let kv = 64.0 * 1000.0 * 131072.0;
    let hand = (1.36252915 * weights + 1.94710771 * kv) / 3.35e12 * 1e3
        + (32.09546717 * 32.0 + 4.41684444 * 64.0 + 126.024825) / 1e3;
    assert!(close(ms, hand), "{ms} ms, by hand {hand} ms");
    assert!((8.0..15.0).contains(&ms), "{ms} ms");
}

#[test]
fn alpha_overheads_are_named_in_the_spec_not_modelled() {
    let text = spec::generate("llama.json", &shipped("llama-3.1-8b"), &on("h100", 1))
        .unwrap()
        .text;
    assert_eq!(ALPHA, [15563.199579, 777.3455, 45.907545]);
    assert!(text.contains("α0 = 15563.2 µs queueing"), "{text}");
    assert!(text.contains("α2 = 45.9 µs per output token"), "{text}");
}

#[test]
fn roofline_is_max_of_compute_and_memory_for_a_dense_model() {
    let s = shipped("llama-3.1-8b");
    let mut d = on("h100", 1);
    d.time = TimeKind::Roofline;
    let text = spec::generate("llama.json", &s, &d).unwrap().text;
    // Per token: 2 x (q, k, v, o and the MLP's linear parameters) x 32 layers; per
    // request the LM head (2 x 4096 x 128256); attention 4 x 32 heads x 128 per
    // position. Bytes: layers (linear and norms), LM head and final norm, all 2 bytes;
    // KV 128 KiB a token of context.
    let linear = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
    let weight_bytes = (linear + 32.0 * 2.0 * 4096.0 + 128256.0 * 4096.0 + 4096.0) * 2.0;
    for b in batches() {
        let causal: f64 = b
            .prefills
            .iter()
            .map(|&(t, _, c)| t * (c + (t + 1.0) / 2.0))
            .chain(b.decodes.iter().map(|c| c + 1.0))
            .sum();
        let tokens = b.prefills.iter().map(|x| x.0).sum::<f64>() + b.decodes.len() as f64;
        let requests = (b.prefills.len() + b.decodes.len()) as f64;
        let context: f64 = b.prefills.iter().map(|&(t, _, c)| c + t).sum::<f64>()
            + b.decodes.iter().map(|c| c + 1.0).sum::<f64>();
        let flops = 2.0 * linear * tokens
            + 2.0 * 4096.0 * 128256.0 * requests
            + 4.0 * 32.0 * 32.0 * 128.0 * causal;
        let bytes = weight_bytes + 131072.0 * context;
        let expected = (flops / 989.5e12).max(bytes / 3.35e12);
        let sums = [("sum(tokens * (computed + (tokens + 1) / 2))", causal)];
        let got = spec_time(&text, &sums, &b);
        assert!(close(got, expected), "{got} s, by hand {expected} s");
    }
}

#[test]
fn roofline_reads_only_the_experts_the_tokens_can_reach() {
    let s = shipped("qwen3-30b-a3b");
    let mut d = on("h100", 1);
    d.time = TimeKind::Roofline;
    let text = spec::generate("qwen3.json", &s, &d).unwrap().text;
    assert!(
        text.contains("min(experts, active_experts * tokens) * expert_bytes"),
        "{text}"
    );
    // One expert in every layer: 48 x 3 x 2048 x 768 x 2 bytes.
    assert!(
        text.contains(&format!(
            "const expert_bytes = {};",
            48 * 3 * 2048 * 768 * 2
        )),
        "{text}"
    );
}
