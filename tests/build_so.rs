//! The shared objects of `poolc build` on this machine (x86-64): loaded with
//! `poolc::aot::load::load`, every function of every example spec and of the random
//! expression corpus returns the same bits as the JIT (NaN payloads included) on
//! random rows — keys, spill `when`/`work`, stage `time` — and the same index and
//! sign for `select`/`cmp`; both backends hand Cranelift the same CLIF; the loader
//! refuses a library built from another program, format or prefix; the manifest
//! says what docs/ABI.md says; the header compiles.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use std::path::Path;

use build_support::{
    TempDir, aarch64, build_so, corpus_program, draw, draw_row_ctx, example_program, examples,
    host, options, policy_examples, seeded, value,
};
use poolc::Compiled;
use poolc::aot::load::{self, LoadError};
use poolc::aot::object::Prefix;
use poolc::aot::{self, Emit, manifest};
use poolc::codegen::ClifForm;
use poolc::ir::{Evict, PreemptMode, Program, QueuePolicy};
use poolrt::policy::KeyList;
use proptest::test_runner::TestRunner;

/// Loads a library `build_so` wrote for `program`.
fn load(path: &Path, program: &Program) -> Compiled {
    // SAFETY: the library was just written by `poolc build` from `program`.
    unsafe { load::load(path, program) }
        .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// Bit-for-bit, NaN payloads included: the library and the JIT run the same
/// instructions on this machine (libm's `floor`/`ceil` and `roundsd` agree).
fn assert_bits(what: &str, so: f64, jit: f64) {
    assert_eq!(
        so.to_bits(),
        jit.to_bits(),
        "{what}: library {so:?} ({:#018x}), JIT {jit:?} ({:#018x})",
        so.to_bits(),
        jit.to_bits()
    );
}

/// Draws per site.
const DRAWS: usize = 48;

fn check_list(what: &str, so: &KeyList, jit: &KeyList, runner: &mut TestRunner) {
    let width = so.shape().row;
    let ctx_len = so.shape().ctx;
    assert_eq!(so.shape(), jit.shape(), "{what}: shapes");
    assert_eq!(so.len(), jit.len(), "{what}: key counts");
    for _ in 0..DRAWS {
        let n = draw(runner, &(0usize..12));
        let rows = draw(runner, &proptest::collection::vec(value(), n * width));
        let ctx = draw(runner, &proptest::collection::vec(value(), ctx_len));
        for i in 0..n {
            let row = &rows[i * width..(i + 1) * width];
            for k in 0..so.len() {
                assert_bits(
                    &format!("{what} key {k} on {row:?} ctx {ctx:?}"),
                    so.key(k, row, &ctx),
                    jit.key(k, row, &ctx),
                );
            }
            if i + 1 < n {
                let next = &rows[(i + 1) * width..(i + 2) * width];
                assert_eq!(
                    so.cmp(row, next, &ctx),
                    jit.cmp(row, next, &ctx),
                    "{what} cmp {row:?} {next:?} ctx {ctx:?}"
                );
            }
        }
        assert_eq!(
            so.select(&rows, n, width, &ctx),
            jit.select(&rows, n, width, &ctx),
            "{what} select of {n} rows {rows:?} ctx {ctx:?}"
        );
        if n > 0 {
            assert_eq!(so.select(&rows, n, 0, &ctx), Some(0), "{what} stride 0");
        }
    }
}

/// Every function of `so` against the same function of `jit`.
fn check_program(name: &str, program: &Program, so: &Compiled, jit: &Compiled, seed: u8) {
    let mut runner = seeded(seed);
    for (i, pool) in program.pools.iter().enumerate() {
        let (s, j) = (&so.pools()[i], &jit.pools()[i]);
        let what = format!("{name}: pool {}", pool.name);
        match (&s.queue, &j.queue, &pool.queue) {
            (Some(s), Some(j), QueuePolicy::By(_)) => {
                check_list(&format!("{what} queue"), s, j, &mut runner)
            }
            (None, None, QueuePolicy::Fifo) => {}
            _ => panic!("{what}: queue functions differ"),
        }
        match (&s.evict, &j.evict, &pool.evict) {
            (Some(s), Some(j), Evict::By(_)) => {
                check_list(&format!("{what} evict"), s, j, &mut runner)
            }
            (None, None, Evict::Lru) => {}
            _ => panic!("{what}: evict functions differ"),
        }
        match (&s.preempt, &j.preempt, &pool.preempt) {
            (Some(s), Some(j), PreemptMode::By(_)) => {
                check_list(&format!("{what} preempt"), s, j, &mut runner)
            }
            (None, None, PreemptMode::None | PreemptMode::Lifo) => {}
            _ => panic!("{what}: preempt functions differ"),
        }
        match (&s.route, &j.route, &pool.route) {
            (Some(s), Some(j), Some(_)) => check_list(&format!("{what} route"), s, j, &mut runner),
            (None, None, None) => {}
            _ => panic!("{what}: route functions differ"),
        }
        match (&s.spill, &j.spill) {
            (Some(s), Some(j)) => {
                assert_eq!(s.shape(), j.shape());
                for _ in 0..DRAWS {
                    let (row, ctx) = draw_row_ctx(&mut runner, s.shape());
                    let at = format!("{what} on {row:?} ctx {ctx:?}");
                    assert_bits(
                        &format!("{at} pred"),
                        s.pred(&row, &ctx),
                        j.pred(&row, &ctx),
                    );
                    assert_bits(
                        &format!("{at} work"),
                        s.work(&row, &ctx),
                        j.work(&row, &ctx),
                    );
                }
            }
            (None, None) => {}
            _ => panic!("{what}: spill functions differ"),
        }
        match (&s.handoff, &j.handoff, &pool.handoff) {
            (Some(s), Some(j), Some(_)) => {
                assert_eq!(s.shape(), j.shape());
                for _ in 0..DRAWS {
                    let (row, ctx) = draw_row_ctx(&mut runner, s.shape());
                    let at = format!("{what} handoff on {row:?} ctx {ctx:?}");
                    assert_bits(&at, s.work(&row, &ctx), j.work(&row, &ctx));
                }
            }
            (None, None, None) => {}
            _ => panic!("{what}: handoff functions differ"),
        }
    }
    for (i, stage) in program.stages.iter().enumerate() {
        let (s, j) = (&so.stages()[i], &jit.stages()[i]);
        assert_eq!(s.shape(), j.shape());
        for k in 0..DRAWS {
            // 0 to 3 take rows, for `sum` (R29).
            let n = k % 4;
            let ctx = draw(
                &mut runner,
                &proptest::collection::vec(value(), s.shape().ctx),
            );
            let rows = draw(
                &mut runner,
                &proptest::collection::vec(value(), n * s.shape().row),
            );
            assert_bits(
                &format!("{name}: stage {} time on {ctx:?} {rows:?}", stage.name),
                s.time(&ctx, &rows, n),
                j.time(&ctx, &rows, n),
            );
        }
    }
}

#[test]
fn every_example_library_equals_the_jit_bit_for_bit() {
    let dir = TempDir::new("so-examples");
    for (i, (path, text)) in examples().into_iter().chain(policy_examples()).enumerate() {
        let program = example_program(&path, &text);
        let so_path = build_so(&program, &dir, &format!("lib{i}.so"));
        let so = load(&so_path, &program);
        let jit = poolc::codegen::compile_program(&program).expect("the JIT compiles it");
        check_program(&path.display().to_string(), &program, &so, &jit, i as u8);
    }
}

#[test]
fn the_expression_corpus_library_equals_the_jit_bit_for_bit() {
    // 4 programs × 6 pools × (2 × 20 keys + 2 spill functions) + stages: about 1,000
    // random expressions, each on random rows and contexts.
    let dir = TempDir::new("so-corpus");
    for seed in 0..4u8 {
        let program = corpus_program(seed, 6, 20);
        let so_path = build_so(&program, &dir, &format!("libcorpus{seed}.so"));
        let so = load(&so_path, &program);
        let jit = poolc::codegen::compile_program(&program).expect("the JIT compiles it");
        check_program(&format!("corpus {seed}"), &program, &so, &jit, 100 + seed);
    }
}

#[test]
fn object_and_jit_hand_cranelift_the_same_clif() {
    let mut programs: Vec<(String, Program)> = examples()
        .into_iter()
        .map(|(p, t)| (p.display().to_string(), example_program(&p, &t)))
        .collect();
    programs.push(("corpus".into(), corpus_program(7, 3, 8)));
    for (name, program) in &programs {
        let jit = poolc::codegen::clif(program, None, ClifForm::Built).expect("JIT CLIF");
        assert!(jit.contains("function %"), "{name}: {jit}");
        for target in [host(), aarch64()] {
            let (obj, _) = aot::object(program, &options(&target, Emit::Object))
                .unwrap_or_else(|e| panic!("{name} for {target}: {e}"));
            assert!(
                obj.clif == jit,
                "{name}: the object backend for {target} built other CLIF than the JIT"
            );
        }
    }
}

#[test]
fn a_library_outlives_the_compiled_bundle_it_came_in() {
    let dir = TempDir::new("so-lifetime");
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("ascend.pool"))
        .expect("examples/ascend.pool");
    let program = example_program(&path, &text);
    let so_path = build_so(&program, &dir, "libascend.so");
    let queue = load(&so_path, &program).pools()[0]
        .queue
        .clone()
        .expect("ascend queues by keys");
    // The bundle is gone; the list's CodeHandle keeps the library loaded.
    let width = queue.shape().row;
    let rows = vec![1.0; 3 * width];
    let ctx = vec![0.0; queue.shape().ctx];
    assert_eq!(queue.select(&rows, 3, width, &ctx), Some(0));
}

fn vllm() -> (Program, String) {
    example("vllm.pool")
}

/// The example whose file name is `name`, checked, with its text.
fn example(name: &str) -> (Program, String) {
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.file_name().is_some_and(|f| f == name))
        .unwrap_or_else(|| panic!("examples/{name}"));
    (example_program(&path, &text), text)
}

#[test]
fn load_refuses_a_library_built_with_other_set_values() {
    let dir = TempDir::new("so-mismatch");
    let (program, text) = vllm();
    let so_path = build_so(&program, &dir, "libvllm.so");
    let options = poolc::Options {
        set: vec![("num_gpu_blocks".into(), 8191.0)],
    };
    let other = poolc::check(&text, &options).expect("vllm with num_gpu_blocks=8191 checks");
    // SAFETY: a library poolc just built.
    let err = unsafe { load::load(&so_path, &other) }.expect_err("other --set values");
    match &err {
        LoadError::Mismatch {
            at, library, spec, ..
        } => {
            assert_eq!(at, "values[num_gpu_blocks].value");
            assert_eq!((library.as_str(), spec.as_str()), ("28000.0", "8191.0"));
        }
        e => panic!("expected a mismatch, got {e}"),
    }
    assert!(err.to_string().contains("--set"), "{err}");
}

#[test]
fn load_refuses_a_library_of_another_spec_naming_the_first_difference() {
    let dir = TempDir::new("so-other-spec");
    let (vllm, _) = example("vllm_blackbox.pool");
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("tiered.pool"))
        .expect("examples/tiered.pool");
    let tiered = example_program(&path, &text);
    let so_path = build_so(&tiered, &dir, "libtiered.so");
    // SAFETY: a library poolc just built.
    let err = unsafe { load::load(&so_path, &vllm) }.expect_err("another spec");
    assert!(
        matches!(&err, LoadError::Mismatch { at, .. } if at == "values[0].name"),
        "{err}"
    );
}

#[test]
fn load_finds_symbols_by_prefix() {
    let dir = TempDir::new("so-prefix");
    let (program, _) = example("vllm_blackbox.pool");
    let so_path = dir.join("libmine.so");
    let mut opts = options(&host(), Emit::SharedObject);
    opts.prefix = Prefix::parse("mine").expect("a C identifier");
    aot::build(&program, &so_path, &opts).expect("builds");
    // SAFETY: a library poolc just built.
    let err = unsafe { load::load(&so_path, &program) }.expect_err("default prefix");
    assert!(
        matches!(&err, LoadError::NoManifest { symbol, .. } if symbol == "poolc_manifest_data"),
        "{err}"
    );
    // SAFETY: as above.
    let c = unsafe { load::load_with_prefix(&so_path, &program, &opts.prefix) }
        .expect("the right prefix");
    // examples/vllm_blackbox.pool's time reads [prefill, decode].
    assert_eq!(
        c.stages()[0].time(&[100.0, 10.0], &[], 0),
        0.0057527 + 0.00001725 * 100.0 + 0.000006 * 10.0
    );
    assert!(Prefix::parse("9lives").is_err() && Prefix::parse("a-b").is_err());
}

#[test]
fn load_reports_a_missing_file_and_a_file_that_is_not_a_library() {
    let dir = TempDir::new("so-missing");
    let (program, _) = vllm();
    // SAFETY: nothing is loaded from a missing file.
    let err = unsafe { load::load(&dir.join("absent.so"), &program) }.expect_err("missing");
    assert!(matches!(err, LoadError::Open { .. }), "{err}");
    let text = dir.join("text.so");
    std::fs::write(&text, "not a library").expect("writes");
    // SAFETY: the dynamic loader refuses a text file before running anything.
    let err = unsafe { load::load(&text, &program) }.expect_err("not ELF");
    assert!(err.to_string().contains("text.so"), "{err}");
}

#[test]
fn manifest_gives_format_pools_layouts_keys_and_read_sets() {
    let dir = TempDir::new("so-manifest");
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("replicas.pool"))
        .expect("examples/replicas.pool");
    let program = example_program(&path, &text);
    let so_path = build_so(&program, &dir, "libreplicas.so");
    let text = load::read_manifest(&so_path, &Prefix::default()).expect("reads");
    assert_eq!(
        text,
        manifest::write(&program, &host(), &Prefix::default()),
        "the library carries exactly what the writer writes"
    );
    let m = manifest::parse(&text).expect("the manifest is JSON");
    let s = |v: &str| manifest::Json::String(v.into());
    let n = |v: &str| manifest::Json::Number(v.into());
    assert_eq!(m.get("format"), Some(&n("8")));
    let manifest::Json::Array(pools) = m.get("pools").expect("pools") else {
        panic!("pools is an array")
    };
    let kv = &pools[1];
    assert_eq!(kv.get("name"), Some(&s("kv")));
    // R30: no `fair`, no service counters.
    assert_eq!(kv.get("fair"), Some(&manifest::Json::Null));
    assert_eq!(kv.get("count"), Some(&n("4")));
    assert_eq!(kv.get("cap"), Some(&n("65536")));
    assert_eq!(kv.get("block"), Some(&n("16")));
    let queue = kv.get("queue").expect("queue");
    assert_eq!(queue.get("policy"), Some(&s("by")));
    assert_eq!(queue.get("select"), Some(&s("poolc_pool_kv_queue_select")));
    let manifest::Json::Array(keys) = queue.get("keys").expect("keys") else {
        panic!("keys is an array")
    };
    assert_eq!(keys.len(), 2);
    assert_eq!(
        keys[0].get("reads"),
        Some(&manifest::Json::Array(vec![s("reserve"), s("free(kv)")]))
    );
    assert_eq!(keys[0].get("expr"), Some(&s("(if (le r1 c0) 0.0 1.0)")));
    assert_eq!(keys[1].get("fixed"), Some(&manifest::Json::Bool(true)));
    let layout = kv.get("queue_layout").expect("queue layout");
    let manifest::Json::Array(row) = layout.get("row").expect("row") else {
        panic!("row is an array")
    };
    let names: Vec<_> = row.iter().map(|x| x.get("name").cloned()).collect();
    assert_eq!(names, vec![Some(s("serial")), Some(s("reserve"))]);
    let spill = kv.get("spill").expect("spill");
    assert_eq!(
        spill.get("tier").and_then(|t| t.get("pool")),
        Some(&s("host"))
    );
    let preempt = kv.get("preempt").expect("preempt");
    assert_eq!(preempt.get("policy"), Some(&s("lifo")));
    assert_eq!(preempt.get("keys"), Some(&manifest::Json::Array(vec![])));
    assert_eq!(kv.get("requeue"), Some(&s("head")));
}

/// R18, R19 in the manifest: a `preempt by` key list with its symbols, reads and
/// layout, and `requeue keyed`.
#[test]
fn manifest_carries_preempt_keys_and_requeue() {
    let dir = TempDir::new("so-preempt");
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("vllm_priority.pool"))
        .expect("examples/vllm_priority.pool");
    let program = example_program(&path, &text);
    let so_path = build_so(&program, &dir, "libprio.so");
    let text = load::read_manifest(&so_path, &Prefix::default()).expect("reads");
    let m = manifest::parse(&text).expect("the manifest is JSON");
    let s = |v: &str| manifest::Json::String(v.into());
    let manifest::Json::Array(pools) = m.get("pools").expect("pools") else {
        panic!("pools is an array")
    };
    let kv = &pools[0];
    let preempt = kv.get("preempt").expect("preempt");
    assert_eq!(preempt.get("policy"), Some(&s("by")));
    assert_eq!(preempt.get("cmp"), Some(&s("poolc_pool_kv_preempt_cmp")));
    let manifest::Json::Array(keys) = preempt.get("keys").expect("keys") else {
        panic!("keys is an array")
    };
    let reads: Vec<_> = keys.iter().map(|k| k.get("reads").cloned()).collect();
    assert_eq!(
        reads,
        vec![
            Some(manifest::Json::Array(vec![s("priority")])),
            Some(manifest::Json::Array(vec![s("arrival")]))
        ]
    );
    // R21: the queue's last tie, `id`, is in the manifest.
    assert_eq!(kv.get("queue_tie"), Some(&s("id")));
    assert_eq!(keys[0].get("expr"), Some(&s("(neg r1)")));
    assert_eq!(kv.get("requeue"), Some(&s("keyed")));
    let layout = kv.get("resident_layout").expect("resident layout");
    let manifest::Json::Array(row) = layout.get("row").expect("row") else {
        panic!("row is an array")
    };
    let names: Vec<_> = row.iter().map(|x| x.get("name").cloned()).collect();
    assert_eq!(names, vec![Some(s("arrival")), Some(s("priority"))]);
}

/// R30: a pool with `fair` gives its group and weight attributes by index and its
/// prices; its queue layout names `service` (a var slot the host fills).
#[test]
fn r30_manifest_carries_fair_and_the_service_slot() {
    let path = build_support::repo().join("examples/policies/wfq.pool");
    let text = std::fs::read_to_string(&path).expect("examples/policies/wfq.pool");
    let program = example_program(&path, &text);
    let m = manifest::parse(&manifest::write(&program, &host(), &Prefix::default()))
        .expect("the manifest is JSON");
    let s = |v: &str| manifest::Json::String(v.into());
    let n = |v: &str| manifest::Json::Number(v.into());
    let manifest::Json::Array(pools) = m.get("pools").expect("pools") else {
        panic!("pools is an array")
    };
    let fair = pools[0].get("fair").expect("fair");
    // session { prompt; output; tier = 1; share = 1; } after serial and arrival.
    assert_eq!(fair.get("by"), Some(&n("4")));
    assert_eq!(fair.get("weight"), Some(&n("5")));
    assert_eq!(fair.get("prefill"), Some(&n("1.0")));
    assert_eq!(fair.get("decode"), Some(&n("2.0")));
    let layout = pools[0].get("queue_layout").expect("queue layout");
    let manifest::Json::Array(row) = layout.get("row").expect("row") else {
        panic!("row is an array")
    };
    let kinds: Vec<_> = row
        .iter()
        .map(|x| (x.get("name").cloned(), x.get("kind").cloned()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (Some(s("serial")), Some(s("attr"))),
            (Some(s("service")), Some(s("var")))
        ]
    );
}

#[test]
fn header_declares_every_function_and_compiles_as_c() {
    if std::process::Command::new("cc")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("cc is needed by the build tests (Debian package gcc)");
    }
    let dir = TempDir::new("so-header");
    for (i, (path, text)) in examples().into_iter().enumerate() {
        let program = example_program(&path, &text);
        let so_path = build_so(&program, &dir, &format!("lib{i}.so"));
        let header = so_path.with_extension("h");
        let h = std::fs::read_to_string(&header).expect("the header is next to the library");
        assert!(
            h.contains("const char *poolc_manifest(uint64_t *len);"),
            "{h}"
        );
        for stage in &program.stages {
            assert!(h.contains(&format!("double poolc_stage_{}_time(", stage.name)));
        }
        for pool in &program.pools {
            if let QueuePolicy::By(keys) = &pool.queue {
                let p = &pool.name;
                assert!(h.contains(&format!("int64_t poolc_pool_{p}_queue_select(")));
                assert!(h.contains(&format!("int32_t poolc_pool_{p}_queue_cmp(")));
                assert!(h.contains(&format!("poolc_pool_{p}_queue_key{}(", keys.len() - 1)));
                assert!(h.contains(&format!(
                    "/* queue row, {} slot",
                    pool.queue_layout.row.len()
                )));
            }
        }
        // The header, included by a C file that takes every function's address,
        // compiles without a warning and links against the library.
        let main = dir.join(&format!("use{i}.c"));
        std::fs::write(
            &main,
            format!(
                "#include \"{}\"\n#include <stdio.h>\nint main(void) {{ uint64_t n = 0; \
                 const char *m = poolc_manifest(&n); printf(\"%llu %d\\n\", \
                 (unsigned long long)n, m[n] == 0); return 0; }}\n",
                header.display()
            ),
        )
        .expect("writes");
        let exe = dir.join(&format!("use{i}"));
        let out = std::process::Command::new("cc")
            .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&exe)
            .arg(&main)
            .arg(&so_path)
            .arg(format!("-Wl,-rpath,{}", dir.path.display()))
            .output()
            .expect("cc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(&exe).output().expect("runs");
        let stdout = String::from_utf8_lossy(&run.stdout);
        let len = manifest::write(&program, &host(), &Prefix::default()).len();
        assert_eq!(stdout.trim(), format!("{len} 1"));
    }
}

#[test]
fn emit_obj_writes_a_relocatable_elf_object_for_each_target() {
    let dir = TempDir::new("so-obj");
    let (program, _) = vllm();
    for (target, machine) in [(host(), 62u16), (aarch64(), 183u16)] {
        let out = dir.join(&format!("{}.o", target.name()));
        aot::build(&program, &out, &options(&target, Emit::Object)).expect("builds");
        let bytes = std::fs::read(&out).expect("written");
        assert_eq!(&bytes[..4], b"\x7fELF");
        assert_eq!(u16::from_le_bytes([bytes[16], bytes[17]]), 1, "ET_REL");
        assert_eq!(
            u16::from_le_bytes([bytes[18], bytes[19]]),
            machine,
            "e_machine"
        );
        assert!(
            out.with_extension("h").exists(),
            "header next to the object"
        );
    }
}
