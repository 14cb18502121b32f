//! `poolc conform` and `poolc_tools::conform` against vLLM 0.33's real scheduler: every
//! step of every recorded scenario (tests/data/vllm-oracle; how each was recorded is in
//! its README.md) matches; the replayed
//! steps.jsonl is byte-identical to the recorded lines; a recording altered in one
//! field is caught at that step with the expected and actual lines and the three
//! steps before; unsupported settings, bad files and specs of the wrong shape are
//! clear errors with exit 1; and a spec with another preemption policy diverges, so
//! the comparison is not vacuous.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use cli_support::poolc;
use poolc_tools::conform::{self, OracleError, Policy, Settings};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Where the recorded scenarios live.
fn recorded() -> PathBuf {
    root().join("tests/data/vllm-oracle")
}

/// The first six recordings (a–f: five generated, one from the Mooncake trace) and
/// their step counts (tests/data/vllm-oracle/README.md).
const FIRST: [(&str, usize); 6] = [
    ("a_fcfs_budget_seats", 1360),
    ("b_fcfs_prefix", 582),
    ("c_fcfs_preempt", 4083),
    ("d_fcfs_chunked", 3281),
    ("e_fcfs_mixed", 3894),
    ("f_mooncake_conversation", 6038),
];

/// The later FCFS recordings (g–m) and their step counts (the same README).
const LATER: [(&str, usize); 7] = [
    ("g_bs32_tight_preempt", 2408),
    ("h_bs32_chunked_ample", 2203),
    ("i_bs16_chunked_tight", 3573),
    ("j_bs32_exact_sharing", 282),
    ("k_mooncake_bs32_tight", 3694),
    ("l_bs16_tiny_budget", 2463),
    ("m_bs8_odd_budget", 2622),
];

/// Our recordings of vLLM's priority policy (`--policy priority`, README.md there)
/// and their steps: `poolc conform` replays them with examples/vllm_priority.pool
/// when no spec is given.
const PRIORITY: [(&str, usize); 6] = [
    ("n_prio_bs16_long_chunks", 4637),
    ("o_prio_bs32_chunk_preempt", 3359),
    ("p_prio_bs16_prefix_tree", 3380),
    ("q_prio_bs32_eight_levels", 6524),
    ("r_prio_bs16_decode_thrash", 7834),
    ("s_prio_bs16_burst_ids", 898),
];

/// Recordings of vLLM driven by poolc's plugin with non-FCFS specs, and (q1–q18) with
/// every spec of examples/policies/ the plugin accepts (docs/POLICIES.md)
/// (tests/data/vllm-plugin/make_scenarios.sh): `poolc conform` with no `--spec` takes
/// the spec, `set` and clock from their config.json and predicts every step.
const PLUGIN: [(&str, usize); 24] = [
    ("p1_sjf_aging", 3070),
    ("p2_ascend_lanes", 3599),
    ("p3_largest_victim", 2982),
    ("p4_fits_first", 2850),
    ("p5_sjf_idle_gaps", 1145),
    ("p6_small_first", 3090),
    ("q1_fifo", 1549),
    ("q2_sjf_aging", 1553),
    ("q3_ewsjf", 1528),
    ("q4_residual_sjf", 1541),
    ("q5_mlfq_lanes", 1550),
    ("q6_slo_aware", 1542),
    ("q7_edf_slo", 1549),
    ("q8_sla_tiers", 1621),
    ("q9_priority", 1621),
    ("q10_priority_readmit", 1621),
    ("q11_lpm", 1399),
    ("q12_least_computed_preempt", 1544),
    ("q13_pinned_prefix", 1549),
    ("q14_ascend_lanes", 1569),
    ("q15_vtc", 1605),
    ("q16_lfu", 1549),
    ("q17_freq_cost", 1549),
    ("q18_wfq", 1572),
];

fn plugin() -> PathBuf {
    root().join("tests/data/vllm-plugin")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("poolc-conform-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Copies a scenario folder's three files to `to`.
fn copy_scenario(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("scenario copy");
    for f in ["config.json", "workload.jsonl", "steps.jsonl"] {
        fs::copy(from.join(f), to.join(f)).expect("copy a scenario file");
    }
}

fn all_match(dirs: &[PathBuf], expected: &[(&str, usize)]) {
    let args: Vec<&str> = std::iter::once("conform")
        .chain(dirs.iter().map(|d| d.to_str().expect("UTF-8 path")))
        .collect();
    let o = poolc(&args);
    let (out, err) = text(&o);
    for (name, steps) in expected {
        assert!(
            out.contains(&format!("{name}: all {steps} steps match\n")),
            "{name}: {out}{err}"
        );
    }
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
}

#[test]
fn every_first_recording_matches_step_for_step() {
    let dirs: Vec<PathBuf> = FIRST.iter().map(|(n, _)| recorded().join(n)).collect();
    all_match(&dirs, &FIRST);
}

#[test]
fn every_later_fcfs_recording_matches_step_for_step() {
    let dirs: Vec<PathBuf> = LATER.iter().map(|(n, _)| recorded().join(n)).collect();
    all_match(&dirs, &LATER);
}

#[test]
fn every_priority_scenario_matches_step_for_step_with_the_default_spec() {
    let dirs: Vec<PathBuf> = PRIORITY.iter().map(|(n, _)| recorded().join(n)).collect();
    all_match(&dirs, &PRIORITY);
}

#[test]
fn every_plugin_recording_matches_the_spec_it_was_recorded_with() {
    let dirs: Vec<PathBuf> = PLUGIN.iter().map(|(n, _)| plugin().join(n)).collect();
    all_match(&dirs, &PLUGIN);
}

/// The plugin recordings whose spec decides as vLLM's FCFS on the recorder's workload:
/// fifo.pool is FCFS; edf_slo.pool's `slo` and pinned_prefix.pool's `pin` take their
/// defaults there (the recorder draws only priorities), so the deadlines are in arrival
/// order and every cached entry is pinned alike (LRU).
const PLUGIN_FCFS: [&str; 3] = ["q1_fifo", "q7_edf_slo", "q13_pinned_prefix"];

/// Not vacuous: vLLM's own FCFS spec diverges on every plugin recording but those of
/// `PLUGIN_FCFS`, which it matches.
#[test]
fn the_fcfs_spec_diverges_on_every_plugin_recording() {
    let compiled = compile(&vllm_spec());
    for (name, _) in PLUGIN {
        let outcome = conform::check(&compiled, &plugin().join(name), None).expect("replays");
        assert_eq!(outcome.matches(), PLUGIN_FCFS.contains(&name), "{name}");
    }
}

/// A plugin recording's clock is read from config.json: without it (one time unit
/// per step) a spec whose keys read `waited` diverges.
#[test]
fn the_plugin_clock_is_replayed() {
    let tmp = scratch("clock");
    let dir = tmp.join("p1_sjf_aging");
    copy_scenario(&plugin().join("p1_sjf_aging"), &dir);
    let path = dir.join("config.json");
    let mut config: Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("config")).expect("JSON");
    assert_eq!(config["additional_config"]["poolc"]["clock_step"], 0.5);
    config["additional_config"]["poolc"]["clock_step"] = 1.into();
    fs::write(&path, config.to_string()).expect("write");
    let o = poolc(&["conform", dir.to_str().expect("UTF-8")]);
    let (out, err) = text(&o);
    assert!(out.contains("p1_sjf_aging: step "), "{out}{err}");
    assert_eq!(o.status.code(), Some(1));
    config["additional_config"]["poolc"]["clock_step"] = 0.3.into();
    fs::write(&path, config.to_string()).expect("write");
    let (_, err) = text(&poolc(&["conform", dir.to_str().expect("UTF-8")]));
    assert!(err.contains("clock_step"), "{err}");
    let _ = fs::remove_dir_all(&tmp);
}

/// A spec named with `--spec` is used for every scenario: vLLM's FCFS spec matches
/// an FCFS recording and diverges on a priority one. (The other way round, the
/// priority spec matches every FCFS recording, whose priorities are all 0: with
/// equal priorities vLLM's two policies decided alike on all of them.)
#[test]
fn a_named_spec_is_used_for_every_scenario() {
    let prio = recorded().join(PRIORITY[0].0);
    let fcfs = recorded().join("c_fcfs_preempt");
    let spec = root().join("examples/vllm.pool");
    let o = poolc(&[
        "conform",
        "--spec",
        spec.to_str().expect("UTF-8"),
        fcfs.to_str().expect("UTF-8"),
        prio.to_str().expect("UTF-8"),
    ]);
    let (out, err) = text(&o);
    assert!(
        out.contains("c_fcfs_preempt: all 4083 steps match"),
        "{out}{err}"
    );
    assert!(
        out.contains(&format!("{}: step ", PRIORITY[0].0)),
        "{out}{err}"
    );
    assert_eq!(o.status.code(), Some(1));
}

/// Each rule of the priority spec is needed: with FCFS's queue, without the id tie
/// (R21), with lifo victims or with victims back at the head, some recording diverges.
#[test]
fn each_rule_of_the_priority_spec_is_needed() {
    let spec = fs::read_to_string(root().join("examples/vllm_priority.pool")).expect("spec");
    let variants = [
        ("queue by (priority, arrival, id);", "queue fifo;"),
        // R21: without the ids, requests fed in one step tie on `arrival` and go in
        // enqueue order, where vLLM orders them by request id as text.
        (
            "queue by (priority, arrival, id);",
            "queue by (priority, arrival);",
        ),
        ("preempt by (-priority, -arrival);", "preempt lifo;"),
        ("requeue keyed;", ""),
    ];
    for (rule, instead) in variants {
        assert!(spec.contains(rule), "{rule}");
        let compiled = compile(&spec.replace(rule, instead));
        let diverged = PRIORITY.iter().any(|(name, _)| {
            !conform::check(&compiled, &recorded().join(name), None)
                .expect("replays")
                .matches()
        });
        assert!(
            diverged,
            "without `{rule}` every priority recording still matches"
        );
    }
}

/// `--out` writes the replay in the steps.jsonl schema: every step line is the
/// recorded line byte for byte, and the summary line has the oracle's counts.
#[test]
fn out_writes_the_recorded_lines_byte_for_byte() {
    let out = scratch("out");
    for dir in [
        recorded().join("d_fcfs_chunked"),
        recorded().join(LATER[0].0),
    ] {
        let o = poolc(&[
            "conform",
            dir.to_str().expect("UTF-8"),
            "--out",
            out.to_str().expect("UTF-8"),
        ]);
        assert!(o.status.success(), "{:?}", text(&o));
        let name = dir.file_name().expect("name");
        let recorded = fs::read_to_string(dir.join("steps.jsonl")).expect("recorded");
        let written = fs::read_to_string(out.join(name).join("steps.jsonl")).expect("written");
        let (r, w): (Vec<&str>, Vec<&str>) =
            (recorded.lines().collect(), written.lines().collect());
        assert_eq!(r.len(), w.len());
        assert_eq!(r[..r.len() - 1], w[..w.len() - 1]);
        let (rs, ws): (Value, Value) = (
            serde_json::from_str(r[r.len() - 1]).expect("summary"),
            serde_json::from_str(w[w.len() - 1]).expect("summary"),
        );
        for key in [
            "steps",
            "idle_steps",
            "admissions",
            "hit_tokens_total",
            "max_running",
        ] {
            assert_eq!(rs[key], ws[key], "{key}");
        }
        assert_eq!(rs["prefix_hit_rate"], ws["prefix_hit_rate"]);
    }
    let _ = fs::remove_dir_all(&out);
}

/// One field changed in one recorded step: the command names that step and field,
/// shows the expected and actual lines and the three steps before, and exits 1.
#[test]
fn an_altered_recording_is_caught_at_its_step() {
    let tmp = scratch("altered");
    let dir = tmp.join("c_fcfs_preempt");
    copy_scenario(&recorded().join("c_fcfs_preempt"), &dir);
    let recorded = fs::read_to_string(dir.join("steps.jsonl")).expect("steps");
    let mut lines: Vec<String> = recorded.lines().map(str::to_string).collect();
    let original = lines[700].clone();
    let mut v: Value = serde_json::from_str(&original).expect("step 700");
    let free = v["free_blocks"].as_u64().expect("free_blocks");
    v["free_blocks"] = (free + 1).into();
    lines[700] = v.to_string();
    fs::write(dir.join("steps.jsonl"), lines.join("\n") + "\n").expect("write");

    let o = poolc(&["conform", dir.to_str().expect("UTF-8")]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains(
            "c_fcfs_preempt: step 700 is the first divergent step (differs in free_blocks); \
             1 of 4083 recorded steps differ"
        ),
        "{out}"
    );
    for back in [697, 698, 699] {
        assert!(
            out.contains(&format!("  step {back}:  {}\n", lines[back])),
            "step {back}: {out}"
        );
    }
    assert!(
        out.contains(&format!("  expected: {}\n", lines[700])),
        "{out}"
    );
    assert!(out.contains(&format!("  actual:   {original}\n")), "{out}");
    assert!(!out.contains("all 4083 steps match"), "{out}");
    let _ = fs::remove_dir_all(&tmp);
}

/// A recording cut short: the replay has steps vLLM never recorded.
#[test]
fn a_truncated_recording_diverges_where_it_ends() {
    let tmp = scratch("truncated");
    let dir = tmp.join("b_fcfs_prefix");
    copy_scenario(&recorded().join("b_fcfs_prefix"), &dir);
    let recorded = fs::read_to_string(dir.join("steps.jsonl")).expect("steps");
    let kept: Vec<&str> = recorded.lines().take(500).collect();
    fs::write(dir.join("steps.jsonl"), kept.join("\n") + "\n").expect("write");
    let o = poolc(&["conform", dir.to_str().expect("UTF-8")]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains(
            "b_fcfs_prefix: step 500 is the first divergent step (vLLM recorded 500 steps, \
             the replay has 582); 82 of 500 recorded steps differ"
        ),
        "{out}"
    );
    assert!(
        out.contains("  expected: (none: vLLM has no step 500)"),
        "{out}"
    );
    let _ = fs::remove_dir_all(&tmp);
}

/// Writes a copy of a_fcfs_budget_seats with one config.json key replaced.
fn with_config(test: &str, key: &str, value: Value) -> PathBuf {
    let dir = scratch(test).join("a_fcfs_budget_seats");
    copy_scenario(&recorded().join("a_fcfs_budget_seats"), &dir);
    let mut config: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("config.json")).expect("config"))
            .expect("JSON");
    config[key] = value;
    fs::write(dir.join("config.json"), config.to_string()).expect("write");
    dir
}

/// Each setting the replay does not reproduce is refused by name, with exit 1.
#[test]
fn unsupported_settings_are_refused_clearly() {
    let cases: [(&str, Value, &str); 5] = [
        ("watermark", 0.01.into(), "the pool has no watermark"),
        (
            "policy",
            "lottery".into(),
            "two policies, `fcfs` and `priority`",
        ),
        ("async_scheduling", true.into(), "async scheduling"),
        ("num_spec_tokens", 3.into(), "speculative decoding"),
        ("scheduler_class", "AsyncScheduler".into(), "synchronous"),
    ];
    for (key, value, why) in cases {
        let dir = with_config(key, key, value.clone());
        let o = poolc(&["conform", dir.to_str().expect("UTF-8")]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{key}: {out}{err}");
        assert!(
            err.contains(&format!("unsupported setting `{key}` = {value}")) && err.contains(why),
            "{key}: {err}"
        );
        assert!(err.contains("config.json"), "{err}");
        assert!(!out.contains("steps match"), "{key}: {out}");
        let _ = fs::remove_dir_all(dir.parent().expect("scratch"));
    }
}

/// Every other flag docs/CONFORMANCE.md lists is checked too (library level, no replay).
#[test]
fn settings_map_and_refuse_as_documented() {
    let path = recorded().join("d_fcfs_chunked/config.json");
    let config: Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("config")).expect("JSON");
    let s = Settings::from_config(&config, &path).expect("d is supported");
    assert_eq!(
        s,
        Settings {
            plugin: None,
            policy: Policy::Fcfs,
            block: 16,
            usable_blocks: 8191,
            seats: 32,
            budget: 512,
            chunk: Some(256),
            max_model_len: 4096,
        }
    );
    assert_eq!(s.cap(), 8191 * 16);
    let refused: [(&str, Value); 11] = [
        ("vllm_version", "0.34.0".into()),
        ("watermark_blocks", 81.into()),
        ("reserve_full_isl", false.into()),
        ("enable_prefix_caching", false.into()),
        ("enable_chunked_prefill", false.into()),
        ("long_prefill_token_threshold_adaptive", true.into()),
        ("prefill_schedule_interval", 2.into()),
        ("num_lookahead_tokens", 1.into()),
        ("max_num_scheduled_tokens", 256.into()),
        ("max_num_active_seqs", 8.into()),
        ("null_block_id", 1.into()),
    ];
    for (key, value) in refused {
        let mut c = config.clone();
        c[key] = value;
        match Settings::from_config(&c, &path) {
            Err(OracleError::Unsupported { setting, .. }) => assert_eq!(setting, key),
            other => panic!("{key}: {other:?}"),
        }
    }
    let mut c = config.clone();
    c["long_prefill_token_threshold"] = 0.into();
    assert_eq!(
        Settings::from_config(&c, &path).expect("supported").chunk,
        None
    );
    let mut c = config.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("async_scheduling");
    }
    let e = Settings::from_config(&c, &path).expect_err("a missing key");
    assert!(
        e.to_string().contains("missing key `async_scheduling`"),
        "{e}"
    );
    let mut c = config;
    c["format"] = "vllm-oracle/2".into();
    let e = Settings::from_config(&c, &path).expect_err("another format");
    assert!(e.to_string().contains("vllm-oracle/2"), "{e}");
}

/// A bad workload line is named by file and line; the other scenarios still run
/// and the command exits 1.
#[test]
fn a_bad_workload_line_is_named_and_others_still_run() {
    let tmp = scratch("badline");
    let dir = tmp.join("a_fcfs_budget_seats");
    copy_scenario(&recorded().join("a_fcfs_budget_seats"), &dir);
    let w = fs::read_to_string(dir.join("workload.jsonl")).expect("workload");
    let mut lines: Vec<String> = w.lines().map(str::to_string).collect();
    let mut v: Value = serde_json::from_str(&lines[4]).expect("line 5");
    v["prompt"] = (v["prompt"].as_u64().expect("prompt") + 1).into();
    lines[4] = v.to_string();
    fs::write(dir.join("workload.jsonl"), lines.join("\n") + "\n").expect("write");
    let good = recorded().join("b_fcfs_prefix");
    let o = poolc(&[
        "conform",
        dir.to_str().expect("UTF-8"),
        good.to_str().expect("UTF-8"),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("workload.jsonl:5: the runs add up to"),
        "{err}"
    );
    assert!(out.contains("b_fcfs_prefix: all 582 steps match"), "{out}");
    let o = poolc(&["conform", tmp.join("nothing-here").to_str().expect("UTF-8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains("not a scenario folder"),
        "{:?}",
        text(&o)
    );
    let _ = fs::remove_dir_all(&tmp);
}

/// R30 with `weight share`: the replay reads each request's `share` from
/// workload.jsonl (q18_wfq was recorded with shares 4, 2, 1), so with every share
/// made 1 it is VTC and diverges; a share that is no whole number ≥ 1 is named with
/// its line.
#[test]
fn the_recorded_shares_decide_and_a_bad_share_is_named() {
    let tmp = scratch("shares");
    let rewrite = |name: &str, edit: &dyn Fn(usize, &mut Value)| {
        let dir = tmp.join(name);
        copy_scenario(&plugin().join("q18_wfq"), &dir);
        let w = fs::read_to_string(dir.join("workload.jsonl")).expect("workload");
        let lines: Vec<String> = w
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let mut v: Value = serde_json::from_str(l).expect("a JSON line");
                edit(i, &mut v);
                v.to_string()
            })
            .collect();
        fs::write(dir.join("workload.jsonl"), lines.join("\n") + "\n").expect("write");
        dir
    };
    // `poolc conform DIR`, which must exit 1: its stdout and stderr.
    let failing = |dir: &Path| {
        let o = poolc(&["conform", dir.to_str().expect("UTF-8")]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{out}{err}");
        (out, err)
    };
    let (out, _) = failing(&rewrite("q18_equal_shares", &|_, v| v["share"] = 1.into()));
    assert!(
        out.contains("q18_equal_shares: step 19 is the first divergent step"),
        "{out}"
    );
    let (_, err) = failing(&rewrite("q18_bad_share", &|i, v| {
        if i == 2 {
            v["share"] = 0.into();
        }
    }));
    assert!(
        err.contains("workload.jsonl:3: `share` 0 is not a whole number >= 1"),
        "{err}"
    );
    let _ = fs::remove_dir_all(&tmp);
}

fn compile(source: &str) -> poolc::Compiled {
    poolc::compile(source, &poolc::Options::default()).expect("the spec compiles")
}

fn vllm_spec() -> String {
    fs::read_to_string(root().join("examples/vllm.pool")).expect("examples/vllm.pool")
}

/// The spec's own policies are kept: with `preempt none` instead of vLLM's LIFO
/// victims, the preemption scenario diverges at its first preemption.
#[test]
fn the_spec_decides_and_another_policy_diverges() {
    let spec = vllm_spec().replace("preempt lifo;", "preempt none;");
    assert_ne!(spec, vllm_spec());
    let outcome =
        conform::check(&compile(&spec), &recorded().join("c_fcfs_preempt"), None).expect("replays");
    assert!(!outcome.matches());
    let first = outcome.first.expect("a divergence");
    let expected: Value =
        serde_json::from_str(first.expected.as_deref().expect("recorded")).expect("JSON");
    assert_ne!(expected["preempted"], serde_json::json!([]), "{expected}");

    // The same spec with vLLM's policy matches, whatever its sizes and `time` say.
    let spec = vllm_spec()
        .replace("budget 8192;", "budget 3;")
        .replace("time (0.005 + 0.00002 * tokens);", "time (7.5 * tokens);");
    let outcome =
        conform::check(&compile(&spec), &recorded().join("c_fcfs_preempt"), None).expect("replays");
    assert!(outcome.matches(), "{}", outcome.render());
}

/// conform needs one engine: one step stage of one member admitting one pool of
/// one member.
#[test]
fn a_spec_of_the_wrong_shape_is_refused() {
    let two_stages = vllm_spec().replace(
        "pool kv {",
        "stage other { step; budget 1; seats 1; }\npool kv2 { cap 64; admit via other; }\npool kv {",
    );
    let e = conform::check(
        &compile(&two_stages),
        &recorded().join("b_fcfs_prefix"),
        None,
    )
    .expect_err("two engines");
    assert!(e.to_string().contains("2 step stages"), "{e}");

    let family = vllm_spec().replace("stage engine {", "stage engine[2] {");
    let family = family.replace("pool kv {", "pool kv[2] {");
    let e = conform::check(&compile(&family), &recorded().join("b_fcfs_prefix"), None)
        .expect_err("a family");
    assert!(e.to_string().contains("family of 2"), "{e}");

    let tmp = scratch("shape");
    let spec = tmp.join("two.pool");
    fs::write(&spec, &two_stages).expect("write");
    let o = poolc(&[
        "conform",
        "--spec",
        spec.to_str().expect("UTF-8"),
        recorded().join("b_fcfs_prefix").to_str().expect("UTF-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("2 step stages"), "{:?}", text(&o));
    let _ = fs::remove_dir_all(&tmp);
}
