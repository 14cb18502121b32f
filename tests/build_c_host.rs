//! examples/c-host: the C program is compiled with `cc` (warnings are errors), run
//! on shared objects that `poolc build` made from the example specs with queue
//! keys, and what it prints — read from the manifest alone — must match the JIT:
//! the layout it found, each row's key bits and the `select` index. Rows are given
//! by input name, some slots left out so the session defaults apply.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use build_support::{TempDir, build_so, draw, example_program, examples, seeded};
use poolc::ir::input_name;
use poolc::ir::{Input, Program, QueuePolicy};
use proptest::prelude::*;

/// Values the C side parses with `strtod` exactly as Rust prints them.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (0i32..400).prop_map(f64::from),
        1 => proptest::sample::select(vec![
            -0.0, 0.5, 1e300, 5e-324, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 128.0, 129.0
        ]),
    ]
}

fn compile_host(dir: &TempDir) -> std::path::PathBuf {
    let exe = dir.join("c-host");
    let src = build_support::repo().join("examples/c-host/host.c");
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("cc runs (Debian package gcc)");
    assert!(
        out.status.success(),
        "cc host.c:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run_host(exe: &Path, lib: &Path, pool: &str, input: &str) -> String {
    let mut child = Command::new(exe)
        .arg(lib)
        .arg(pool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the host runs");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("the host reads its input");
    let out = child.wait_with_output().expect("the host finishes");
    assert!(
        out.status.success(),
        "c-host failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("ASCII output")
}

/// Checks one pool's queue: random rows by name, the host's output against the JIT.
fn check_pool(exe: &Path, lib: &Path, program: &Program, pool_index: usize, seed: u8) {
    let pool = &program.pools[pool_index];
    let QueuePolicy::By(keys) = &pool.queue else {
        return;
    };
    let compiled = poolc::codegen::compile_program(program).expect("the JIT compiles it");
    let list = compiled.pools()[pool_index]
        .queue
        .as_ref()
        .expect("a queue key list");
    let layout = &pool.queue_layout;
    let width = layout.row.len();
    let mut runner = seeded(seed);
    for _ in 0..16 {
        let n = draw(&mut runner, &(0usize..8));
        let mut input = String::new();
        let ctx = draw(
            &mut runner,
            &proptest::collection::vec(value(), layout.ctx.len()),
        );
        input.push_str("ctx");
        for (i, v) in ctx.iter().enumerate() {
            input.push_str(&format!(" {}={v:?}", input_name(program, layout.ctx[i])));
        }
        input.push('\n');
        let mut rows = Vec::with_capacity(n * width);
        for _ in 0..n {
            input.push_str("row");
            for slot in &layout.row {
                let given = draw(&mut runner, &proptest::bool::weighted(0.8));
                let v = if given {
                    let v = draw(&mut runner, &value());
                    input.push_str(&format!(" {}={v:?}", input_name(program, *slot)));
                    v
                } else {
                    match slot {
                        Input::Attr(a) => program.session.attr(*a).default.unwrap_or(0.0),
                        _ => 0.0,
                    }
                };
                rows.push(v);
            }
            input.push_str("  # a record\n");
        }
        let out = run_host(exe, lib, &pool.name, &input);
        let names: Vec<String> = layout
            .row
            .iter()
            .enumerate()
            .map(|(i, x)| format!("[{i}] {}", input_name(program, *x)))
            .collect();
        assert!(
            out.contains(&format!("row {}", names.join(" "))),
            "the layout as read from the manifest:\n{out}"
        );
        for (r, line) in out
            .lines()
            .filter(|l| l.starts_with("row ") && l.contains(':'))
            .enumerate()
        {
            let row = &rows[r * width..(r + 1) * width];
            let want: Vec<String> = (0..keys.len())
                .map(|k| format!("({:016x})", list.key(k, row, &ctx).to_bits()))
                .collect();
            let got: Vec<&str> = line.split(' ').filter(|w| w.starts_with('(')).collect();
            assert_eq!(got, want, "row {r} keys\ninput:\n{input}output:\n{out}");
        }
        let want = list.select(&rows, n, width, &ctx).map_or(-1, |i| i as i64);
        assert!(
            out.contains(&format!("\nselect: {want}\n")),
            "select should be {want}\ninput:\n{input}output:\n{out}"
        );
    }
}

#[test]
fn c_host_reads_the_manifest_and_selects_what_the_jit_selects() {
    let dir = TempDir::new("c-host");
    let exe = compile_host(&dir);
    let mut checked = 0;
    for (i, (path, text)) in examples().into_iter().enumerate() {
        let program = example_program(&path, &text);
        let lib = build_so(&program, &dir, &format!("lib{i}.so"));
        for (p, pool) in program.pools.iter().enumerate() {
            if matches!(pool.queue, QueuePolicy::By(_)) {
                check_pool(&exe, &lib, &program, p, i as u8);
                checked += 1;
            }
        }
    }
    assert!(checked >= 2, "the examples have queue keys to evaluate");
}

#[test]
fn c_host_refuses_a_pool_without_queue_keys_and_an_unknown_name() {
    let dir = TempDir::new("c-host-errors");
    let exe = compile_host(&dir);
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("vllm.pool"))
        .expect("examples/vllm.pool");
    let lib = build_so(&example_program(&path, &text), &dir, "libvllm.so");
    for (pool, message) in [("kv", "first come, first served"), ("nope", "no such pool")] {
        let out = Command::new(&exe)
            .arg(&lib)
            .arg(pool)
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1));
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(message), "{e}");
    }
}
