//! `poolc model` as a library (docs/LATENCY.md, "A time model from the model's shape"):
//! config.json parsing and its errors; the GPU table against the datasheets; parameter
//! counts against the published ones and weights against what vLLM logs; the KV
//! capacity of Llama-3.1-8B on one H100 against vLLM's 28,000 blocks; TP and option
//! refusals; the spec's params and header. The time models are tools/tests/model_time.rs's.
//! Every expected number is the test's own arithmetic or a published figure, never the
//! code under test's.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod model_support;

use model_support::{on, shipped};

use std::path::Path;

use poolc_tools::model::config::{self, ConfigErrorKind, Moe};
use poolc_tools::model::memory::{self, GIB};
use poolc_tools::model::time;
use poolc_tools::model::{Dtype, Engine, ModelError, find_gpu, gpu, spec};

fn config_error(text: &str) -> String {
    let e = config::parse(text, "c.json").unwrap_err();
    assert_eq!(e.file, "c.json");
    e.to_string()
}

const DENSE: &str = r#"{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
 "intermediate_size": 128, "vocab_size": 1000}"#;

// ---------------------------------------------------------------- config.json

#[test]
fn llama_3_1_8b_reads_as_its_shape() {
    let s = shipped("llama-3.1-8b");
    assert_eq!(
        (
            s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn, s.vocab
        ),
        (32, 4096, 32, 8, 128, 14336, 128256)
    );
    assert!(!s.head_dim_explicit && !s.tied_embeddings && !s.attention_bias && !s.qk_norm);
    assert_eq!(s.max_position, 131072);
    assert_eq!(s.moe, None);
    assert_eq!(s.model_type.as_deref(), Some("llama"));
    assert_eq!(s.architecture.as_deref(), Some("LlamaForCausalLM"));
}

#[test]
fn qwen3_moe_takes_its_explicit_head_dim_and_expert_size() {
    let s = shipped("qwen3-30b-a3b");
    // head_dim 128 although hidden / heads = 2048 / 32 = 64.
    assert_eq!((s.head_dim, s.head_dim_explicit), (128, true));
    // moe_intermediate_size, not intermediate_size (6144).
    assert_eq!(s.ffn, 768);
    assert_eq!(
        s.moe,
        Some(Moe {
            experts: 128,
            experts_per_token: 8
        })
    );
    assert_eq!(s.kv_heads, 4);
    assert!(s.qk_norm);
}

#[test]
fn mixtral_experts_use_intermediate_size() {
    let s = shipped("mixtral-8x7b");
    assert_eq!(s.ffn, 14336);
    assert_eq!(
        s.moe,
        Some(Moe {
            experts: 8,
            experts_per_token: 2
        })
    );
}

#[test]
fn qwen2_has_attention_biases_without_a_key() {
    assert!(shipped("qwen2.5-32b").attention_bias);
}

#[test]
fn kv_heads_default_to_the_attention_heads_and_head_dim_to_hidden_over_heads() {
    let s = config::parse(DENSE, "c.json").unwrap();
    assert_eq!((s.kv_heads, s.head_dim), (4, 16));
}

#[test]
fn null_keys_are_absent_and_a_text_config_is_read() {
    let s = config::parse(
        r#"{"model_type": "x", "head_dim": null, "text_config": {"num_hidden_layers": 2, "hidden_size": 64,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
            "tie_word_embeddings": true}}"#,
        "c.json",
    )
    .unwrap();
    assert_eq!((s.layers, s.kv_heads, s.head_dim), (2, 2, 16));
    assert!(s.tied_embeddings);
    let e = config_error(r#"{"text_config": {"hidden_size": 64}}"#);
    assert_eq!(
        e,
        "c.json: the key `text_config.num_hidden_layers` is missing"
    );
}

#[test]
fn a_missing_key_is_named_with_the_file() {
    assert_eq!(
        config_error(r#"{"num_hidden_layers": 2, "hidden_size": 64}"#),
        "c.json: the key `num_attention_heads` is missing"
    );
}

#[test]
fn an_ill_typed_key_says_what_it_must_be() {
    let text = DENSE.replace("\"hidden_size\": 64", "\"hidden_size\": \"64\"");
    assert_eq!(
        config_error(&text),
        "c.json: `hidden_size` must be a whole number, not \"64\""
    );
    let text = DENSE.replace("\"vocab_size\": 1000", "\"vocab_size\": 1000.5");
    assert_eq!(
        config_error(&text),
        "c.json: `vocab_size` must be a whole number, not 1000.5"
    );
    let text = DENSE.replace('}', ", \"tie_word_embeddings\": 1}");
    assert_eq!(
        config_error(&text),
        "c.json: `tie_word_embeddings` must be true or false, not 1"
    );
}

#[test]
fn malformed_json_names_line_and_column() {
    assert_eq!(
        config_error("{\n  \"hidden_size\": 64,,\n}"),
        "c.json:2:21: not valid JSON: key must be a string"
    );
    assert_eq!(
        config_error("[1, 2]"),
        "c.json: a config.json must be a JSON object"
    );
}

#[test]
fn zero_and_inconsistent_counts_are_refused() {
    let text = DENSE.replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 0");
    assert_eq!(
        config_error(&text),
        "c.json: `num_hidden_layers` must be at least 1, not 0"
    );
    let text = DENSE.replace('}', ", \"num_key_value_heads\": 3}");
    assert!(
        config_error(&text)
            .starts_with("c.json: `num_key_value_heads` (3) must divide `num_attention_heads` (4)"),
        "{}",
        config_error(&text)
    );
    let text = DENSE.replace("\"hidden_size\": 64", "\"hidden_size\": 66");
    assert!(config_error(&text).starts_with("c.json: `hidden_size` (66) is not a multiple of"));
    let moe = DENSE.replace('}', ", \"num_local_experts\": 8}");
    assert_eq!(
        config_error(&moe),
        "c.json: the key `num_experts_per_tok` is missing"
    );
}

#[test]
fn shapes_not_sized_are_refused_by_name() {
    for (key, value, what) in [
        ("kv_lora_rank", "512", "multi-head latent attention"),
        ("shared_expert_intermediate_size", "2048", "shared experts"),
        (
            "mlp_only_layers",
            "[0, 1]",
            "dense layers among its MoE layers",
        ),
        (
            "decoder_sparse_step",
            "2",
            "dense layers among its MoE layers",
        ),
    ] {
        let text = DENSE.replace('}', &format!(", \"{key}\": {value}}}"));
        assert_eq!(
            config_error(&text),
            format!("c.json: `{key}` says the model has {what}, which poolc model does not size")
        );
    }
    // Off values are no refusal (Qwen3-MoE writes `"mlp_only_layers": []`).
    let text = DENSE.replace(
        '}',
        ", \"mlp_only_layers\": [], \"decoder_sparse_step\": 1, \"kv_lora_rank\": null}",
    );
    assert!(config::parse(&text, "c.json").is_ok());
}

#[test]
fn an_unreadable_config_is_a_read_error() {
    let e = config::read_path(Path::new("/nonexistent/config.json")).unwrap_err();
    assert!(matches!(e.kind, ConfigErrorKind::Read(_)));
    assert!(
        e.to_string()
            .starts_with("cannot read /nonexistent/config.json: ")
    );
}

// ---------------------------------------------------------------- GPUs

#[test]
fn gpu_table_holds_the_datasheet_figures() {
    // (key, dense BF16 TFLOP/s, dense FP8 TFLOP/s, TB/s, nominal GB): NVIDIA's
    // datasheets quote tensor peaks with sparsity; these are half of them.
    let expected = [
        ("h100", 989.5, Some(1979.0), 3.35, 80.0),
        ("h200", 989.5, Some(1979.0), 4.8, 141.0),
        ("a100-80gb", 312.0, None, 2.039, 80.0),
        ("l40s", 362.05, Some(733.0), 0.864, 48.0),
        ("b200", 2250.0, Some(4500.0), 8.0, 180.0),
    ];
    assert_eq!(gpu::GPUS.len(), expected.len());
    for (g, (key, bf16, fp8, tb, gb)) in gpu::GPUS.iter().zip(expected) {
        assert_eq!(
            (g.key, g.bf16_tflops, g.fp8_tflops, g.tb_per_s, g.nominal_gb),
            (key, bf16, fp8, tb, gb)
        );
        // PyTorch sees less than the nominal size but within 10 % of it.
        let torch_gb = g.torch_total_bytes as f64 / 1e9;
        assert!(
            torch_gb < gb * 1.08 && torch_gb > gb * 0.9,
            "{key}: {torch_gb}"
        );
        // FP8 is twice BF16 where the chip has it (L40S's datasheet: 733 vs 2 x 362.05).
        if let Some(fp8) = fp8 {
            assert!((fp8 / (2.0 * bf16) - 1.0).abs() < 0.02, "{key}");
        }
    }
    // The H100 as vLLM logs it: 79.19 GiB.
    assert_eq!(find_gpu("h100").unwrap().torch_total_bytes, 85_029_158_912);
}

#[test]
fn gpus_are_found_by_key_or_alias_in_any_case() {
    assert_eq!(find_gpu("H100").unwrap().key, "h100");
    assert_eq!(find_gpu("a100").unwrap().key, "a100-80gb");
    assert_eq!(find_gpu("L40S").unwrap().key, "l40s");
    let e = find_gpu("v100").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown GPU `v100`; known: h100, h200, a100-80gb, l40s, b200"
    );
}

#[test]
fn fp8_runs_at_the_fp8_peak_where_the_gpu_has_one() {
    let mut d = on("h100", 1);
    d.dtype = Dtype::Fp8;
    assert_eq!(d.peak_tflops(), 1979.0);
    let mut d = on("a100-80gb", 1);
    d.dtype = Dtype::Fp8;
    assert_eq!(d.peak_tflops(), 312.0);
    assert_eq!(on("h100", 1).peak_tflops(), 989.5);
}

// ---------------------------------------------------------------- weights

#[test]
fn llama_3_1_8b_has_8_030_261_248_parameters() {
    // Embeddings and LM head, then per layer q (4096²), k and v (4096 x 8 x 128 each),
    // o (4096²), gate/up/down (3 x 4096 x 14336) and two norms, then the final norm.
    let per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096;
    let hand = 2 * 128256 * 4096 + 32 * per_layer + 4096;
    assert_eq!(hand, 8_030_261_248_u64);
    assert_eq!(memory::params(&shipped("llama-3.1-8b")), hand as f64);
}

#[test]
fn parameter_counts_match_the_published_ones() {
    // Model cards: Llama-3.1-8B 8.03 B, -70B 70.6 B, Qwen2.5-32B 32.8 B ("32.5 B
    // non-embedding"), Mixtral-8x7B 46.7 B, Qwen3-30B-A3B 30.5 B; each to its rounding.
    for (name, published) in [
        ("llama-3.1-8b", 8.03e9),
        ("llama-3.1-70b", 70.6e9),
        ("qwen2.5-32b", 32.8e9),
        ("mixtral-8x7b", 46.7e9),
        ("qwen3-30b-a3b", 30.5e9),
    ] {
        let counted = memory::params(&shipped(name));
        let rounding = if published < 10e9 { 0.005e9 } else { 0.05e9 };
        assert!(
            (counted - published).abs() <= rounding,
            "{name}: counted {counted}, published {published}"
        );
    }
}

#[test]
fn llama_3_1_8b_weights_are_what_vllm_loads() {
    // bf16: 2 bytes a parameter, plus vLLM's rotary cos/sin cache (131072 positions x
    // 128, bf16). vLLM logs "Model loading took 14.9888 GiB" for it.
    let w = memory::weight_bytes(&shipped("llama-3.1-8b"), 1, Dtype::Bf16);
    let hand = 2.0 * 8_030_261_248.0 + 131072.0 * 128.0 * 2.0;
    assert_eq!(w.total(), hand);
    assert!(
        (w.total() / GIB - 14.9888).abs() < 0.0001,
        "{}",
        w.total() / GIB
    );
}

#[test]
fn llama_3_1_70b_weights_shard_over_four_gpus() {
    // Per GPU: a quarter of the vocabulary in each table, 16 of 64 heads, 2 of 8 KV
    // heads, a quarter of the MLP's columns; norms and the rotary cache whole.
    let table = 32064.0 * 8192.0 * 2.0;
    let linear = 8192.0 * 2048.0 + 2.0 * 8192.0 * 256.0 + 2048.0 * 8192.0 + 3.0 * 8192.0 * 7168.0;
    let layer = linear * 2.0 + 2.0 * 8192.0 * 2.0;
    let hand = 2.0 * table + 80.0 * layer + 8192.0 * 2.0 + 131072.0 * 128.0 * 2.0;
    let w = memory::weight_bytes(&shipped("llama-3.1-70b"), 4, Dtype::Bf16);
    assert_eq!(w.total(), hand);
}

#[test]
fn fp8_halves_the_linear_layers_only() {
    let s = shipped("llama-3.1-8b");
    let bf16 = memory::weight_bytes(&s, 1, Dtype::Bf16);
    let fp8 = memory::weight_bytes(&s, 1, Dtype::Fp8);
    let linear_params =
        32.0 * (4096.0 * 4096.0 * 2.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
    assert_eq!(bf16.total() - fp8.total(), linear_params);
    assert_eq!(fp8.embedding, bf16.embedding);
}

#[test]
fn mixtral_experts_shard_over_tp_and_the_router_is_replicated() {
    let w = memory::weight_bytes(&shipped("mixtral-8x7b"), 2, Dtype::Bf16);
    // 32 layers x 8 experts x 3 x 4096 x 14336 / 2 GPUs, 2 bytes.
    assert_eq!(w.experts, 32.0 * 8.0 * 3.0 * 4096.0 * 14336.0 / 2.0 * 2.0);
    // Attention: 16 heads and 4 KV heads of 128 per GPU; norms and router (4096 x 8) whole.
    let attention = 4096.0 * 2048.0 + 2.0 * 4096.0 * 512.0 + 2048.0 * 4096.0;
    assert_eq!(
        w.layers,
        32.0 * (attention * 2.0 + (2.0 * 4096.0 + 4096.0 * 8.0) * 2.0)
    );
}

// ---------------------------------------------------------------- KV capacity

#[test]
fn kv_bytes_per_token_follow_the_kv_heads_a_gpu_holds() {
    let s = shipped("llama-3.1-8b");
    // 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB.
    assert_eq!(memory::kv_bytes_per_token(&s, 1), 131072.0);
    assert_eq!(memory::kv_bytes_per_token(&s, 2), 65536.0);
    // 16 GPUs, 8 KV heads: vLLM replicates, one head per GPU.
    assert_eq!(memory::kv_bytes_per_token(&s, 16), 2.0 * 32.0 * 128.0 * 2.0);
    // Qwen3-30B-A3B: its explicit head_dim 128, not 2048 / 32.
    assert_eq!(
        memory::kv_bytes_per_token(&shipped("qwen3-30b-a3b"), 1),
        2.0 * 48.0 * 4.0 * 128.0 * 2.0
    );
}

#[test]
fn llama_3_1_8b_on_one_h100_is_within_2_percent_of_vllms_28000_blocks() {
    let s = shipped("llama-3.1-8b");
    let c = memory::capacity(&s, &on("h100", 1)).unwrap();

    // The derivation, worked here: 79.19 GiB x 0.9; weights as above; activations
    // max(8192 x (2 x 4096 + 5 x 14336) x 2, 1024 x 128256 x 8); 0.15 GiB non-torch;
    // blocks of 16 x 128 KiB.
    let usable = 85_029_158_912.0 * 0.9;
    let weights = 2.0 * 8_030_261_248.0 + 131072.0 * 128.0 * 2.0;
    let forward = 8192.0 * (2.0 * 4096.0 + 5.0 * 14336.0) * 2.0;
    let sampler = 1024.0 * 128256.0 * 8.0;
    assert!(forward > sampler);
    let kv = usable - weights - forward - 0.15 * GIB;
    let blocks = (kv / (16.0 * 131072.0)).floor();
    assert_eq!(c.num_gpu_blocks as f64, blocks);
    assert_eq!(c.usable_blocks() as f64, blocks - 1.0);
    assert_eq!(c.bytes_per_block, 2.0 * 1024.0 * 1024.0);

    // vLLM 0.33 logs 28,000 blocks for this deployment (examples/vllm.pool).
    let residual = c.num_gpu_blocks as f64 / 28_000.0 - 1.0;
    assert!(
        residual.abs() < 0.02,
        "{} blocks, {:+.2} %",
        c.num_gpu_blocks,
        residual * 100.0
    );
}

#[test]
fn more_batched_tokens_or_sequences_leave_fewer_blocks() {
    let s = shipped("llama-3.1-8b");
    let base = memory::capacity(&s, &on("h100", 1)).unwrap().num_gpu_blocks;
    let mut d = on("h100", 1);
    d.engine.max_num_batched_tokens = 16384;
    assert!(memory::capacity(&s, &d).unwrap().num_gpu_blocks < base);
    let mut d = on("h100", 1);
    d.engine.max_num_seqs = 4096; // the sampler's logits: 4096 x 128256 x 8 > forward
    assert!(memory::capacity(&s, &d).unwrap().num_gpu_blocks < base);
    let mut d = on("h100", 1);
    d.engine.gpu_memory_utilization = 0.95;
    assert!(memory::capacity(&s, &d).unwrap().num_gpu_blocks > base);
}

#[test]
fn a_model_that_does_not_fit_is_refused_with_its_budget() {
    let e = memory::capacity(&shipped("llama-3.1-70b"), &on("h100", 1)).unwrap_err();
    let ModelError::DoesNotFit(c) = &e else {
        panic!("{e}")
    };
    assert!(c.kv_cache < 0.0);
    let text = e.to_string();
    assert!(
        text.starts_with("the model does not fit: weights 131.45 GiB"),
        "{text}"
    );
    assert!(text.contains("use more GPUs (--tp)"), "{text}");
    // On four it fits.
    assert!(memory::capacity(&shipped("llama-3.1-70b"), &on("h100", 4)).is_ok());
}

// ---------------------------------------------------------------- TP and options

#[test]
fn tp_must_split_heads_kv_heads_and_the_mlp_as_vllm_does() {
    let s = shipped("llama-3.1-8b");
    let refused = |tp: u64| on("h100", tp).check(&s).unwrap_err().to_string();
    assert_eq!(
        refused(3),
        "--tp 3: vLLM splits the 32 attention heads evenly over the GPUs, so --tp must divide them"
    );
    assert_eq!(refused(0), "--tp 0: a replica spans at least one GPU");
    assert!(on("h100", 16).check(&s).is_ok()); // 8 KV heads replicated over 16
    let odd = config::parse(
        r#"{"num_hidden_layers": 2, "hidden_size": 768, "num_attention_heads": 48,
            "num_key_value_heads": 8, "intermediate_size": 1536, "vocab_size": 1000}"#,
        "c.json",
    )
    .unwrap();
    let e = on("h100", 6).check(&odd).unwrap_err().to_string();
    assert!(
        e.starts_with("--tp 6: vLLM splits the 8 KV heads evenly"),
        "{e}"
    );
    let mlp = config::parse(
        r#"{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 130, "vocab_size": 1000}"#,
        "c.json",
    )
    .unwrap();
    let e = on("h100", 4).check(&mlp).unwrap_err().to_string();
    assert!(e.contains("130 intermediate columns"), "{e}");
}

#[test]
fn engine_options_out_of_range_are_refused() {
    let s = shipped("llama-3.1-8b");
    for (util, ok) in [
        (0.9, true),
        (1.0, true),
        (0.0, false),
        (1.5, false),
        (f64::NAN, false),
    ] {
        let mut d = on("h100", 1);
        d.engine.gpu_memory_utilization = util;
        assert_eq!(d.check(&s).is_ok(), ok, "{util}");
    }
    let mut d = on("h100", 1);
    d.engine.block_size = 0;
    assert_eq!(
        d.check(&s).unwrap_err().to_string(),
        "--block-size must be at least 1"
    );
}

// ---------------------------------------------------------------- the spec

#[test]
fn the_spec_names_its_command_and_its_params_as_vllm_does() {
    let mut d = on("h100", 2);
    d.dtype = Dtype::Fp8;
    d.engine = Engine {
        max_num_seqs: 256,
        ..Engine::default()
    };
    let s = shipped("qwen2.5-32b");
    let out = spec::generate("examples/models/qwen2.5-32b/config.json", &s, &d).unwrap();
    assert!(
        out.text
            .starts_with("// qwen2.5-32b (Qwen2ForCausalLM): 2 x NVIDIA H100"),
        "{}",
        out.text
    );
    assert!(out.text.contains(
        "Generated by `poolc model examples/models/qwen2.5-32b/config.json --gpu h100 --tp 2 --dtype fp8 --max-num-seqs 256`"
    ));
    let usable = out.capacity.num_gpu_blocks - 1;
    for line in [
        format!("param num_gpu_blocks = {usable};"),
        "param block_size = 16;".to_string(),
        "param max_num_seqs = 256;".to_string(),
        "param max_num_batched_tokens = 8192;".to_string(),
        "  cap num_gpu_blocks * block_size;".to_string(),
        "  admit via engine;".to_string(),
    ] {
        assert!(out.text.contains(&line), "no `{line}` in\n{}", out.text);
    }
}

#[test]
fn the_same_inputs_give_the_same_bytes() {
    let s = shipped("mixtral-8x7b");
    let a = spec::generate("m.json", &s, &on("h100", 2)).unwrap();
    let b = spec::generate("m.json", &s, &on("h100", 2)).unwrap();
    assert_eq!(a.text, b.text);
    assert!(!time::BLIS_COMMIT.is_empty());
}
