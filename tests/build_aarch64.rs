//! The aarch64 target of `poolc build`: the same C harness (generated here from the
//! program; it includes the generated header) is linked once with the x86-64 object
//! by `cc` and run natively, and once with the aarch64 object by
//! `aarch64-linux-gnu-gcc -static` and run under `qemu-aarch64`; both print every
//! function's result on the same inputs (f64 as hex bits) and the outputs must
//! agree bit for bit — except NaN payloads, which docs/ABI.md leaves unspecified
//! (x86-64's default NaN has the sign bit set, aarch64's does not). Programs: every
//! example spec and the random expression corpus.
//!
//! Without the cross tools (Debian packages gcc-aarch64-linux-gnu,
//! libc6-dev-arm64-cross, qemu-user) the test runner lists the test as ignored, with
//! that reason (build.rs); with the environment variable CI set it always runs, so CI
//! fails if they are missing.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use std::fmt::Write;
use std::path::Path;
use std::process::Command;

use build_support::{
    TempDir, aarch64, corpus_program, draw, example_program, examples, host, options, seeded, value,
};
use poolc::aot::object::{Prefix, Target};
use poolc::aot::{self, Emit};
use poolc::ir::{Evict, PreemptMode, Program, QueuePolicy};

/// Slots of every input row and ctx of the harness: at least any layout's width, so
/// one table serves every function (a function reads only its layout's slots).
const W: usize = 16;
/// Rows and contexts in the input tables.
const ROWS: usize = 12;
const CTXS: usize = 4;

#[derive(Clone, Copy)]
enum Kind {
    Key,
    Cmp,
    Select,
    Time,
}

/// Every exported policy function of `program`, with its kind.
fn functions(program: &Program, prefix: &Prefix) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    for pool in &program.pools {
        let sym = format!("pool_{}", pool.name);
        let lists = [
            match &pool.queue {
                QueuePolicy::By(keys) => Some(("queue", keys.len())),
                QueuePolicy::Fifo => None,
            },
            match &pool.evict {
                Evict::By(keys) => Some(("evict", keys.len())),
                Evict::Lru => None,
            },
            match &pool.preempt {
                PreemptMode::By(keys) => Some(("preempt", keys.len())),
                PreemptMode::None | PreemptMode::Lifo => None,
            },
        ];
        for (site, n) in lists.into_iter().flatten() {
            for i in 0..n {
                out.push((prefix.symbol(&format!("{sym}_{site}_key{i}")), Kind::Key));
            }
            out.push((prefix.symbol(&format!("{sym}_{site}_cmp")), Kind::Cmp));
            out.push((prefix.symbol(&format!("{sym}_{site}_select")), Kind::Select));
        }
        if pool.spill.is_some() {
            for f in ["pred", "work"] {
                out.push((prefix.symbol(&format!("{sym}_spill_{f}")), Kind::Key));
            }
        }
        for l in [
            &pool.queue_layout,
            &pool.entry_layout,
            &pool.resident_layout,
        ] {
            assert!(l.row.len() <= W && l.ctx.len() <= W, "layout wider than W");
        }
    }
    for stage in &program.stages {
        let (_, l) = stage.time();
        assert!(l.row.len() <= W && l.ctx.len() <= W, "layout wider than W");
        out.push((
            prefix.symbol(&format!("stage_{}_time", stage.name)),
            Kind::Time,
        ));
    }
    out
}

fn hex_table(values: &[f64]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| format!("0x{:016x}ull", v.to_bits()))
        .collect();
    items.join(",\n  ")
}

/// A C program printing every function's result on the input tables: `f` lines
/// carry f64 bits in hex, `i` lines integers.
fn harness(program: &Program, header: &Path, seed: u8) -> String {
    let mut runner = seeded(seed);
    let rows = draw(&mut runner, &proptest::collection::vec(value(), ROWS * W));
    let ctxs = draw(&mut runner, &proptest::collection::vec(value(), CTXS * W));
    let mut c = format!(
        r#"#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "{header}"

#define W {W}
#define ROWS {ROWS}
#define CTXS {CTXS}
static const uint64_t row_bits[ROWS * W] = {{
  {rows}
}};
static const uint64_t ctx_bits[CTXS * W] = {{
  {ctxs}
}};
static double rows[ROWS * W], ctxs[CTXS * W];

static void f(const char *name, int c, int r, double v) {{
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  printf("f %s %d %d %016llx\n", name, c, r, (unsigned long long)b);
}}

static void key(const char *name, double (*fn)(const double *, const double *)) {{
  for (int c = 0; c < CTXS; c++)
    for (int r = 0; r < ROWS; r++) f(name, c, r, fn(rows + r * W, ctxs + c * W));
}}

static void cmp(const char *name, int32_t (*fn)(const double *, const double *, const double *)) {{
  for (int c = 0; c < CTXS; c++)
    for (int r = 0; r + 1 < ROWS; r++) {{
      printf("i %s %d %d %d\n", name, c, r, (int)fn(rows + r * W, rows + (r + 1) * W, ctxs + c * W));
      printf("i %s %d %d= %d\n", name, c, r, (int)fn(rows + r * W, rows + r * W, ctxs + c * W));
    }}
}}

static void sel(const char *name, int64_t (*fn)(const double *, uint64_t, uint64_t, const double *)) {{
  static const uint64_t ns[] = {{0, 1, 2, 5, ROWS}};
  for (int c = 0; c < CTXS; c++) {{
    for (int k = 0; k < 5; k++)
      printf("i %s %d n%d %lld\n", name, c, (int)ns[k], (long long)fn(rows, ns[k], W, ctxs + c * W));
    /* Overlapping rows (stride 1) and one record repeated (stride 0). */
    printf("i %s %d s1 %lld\n", name, c, (long long)fn(rows, ROWS, 1, ctxs + c * W));
    printf("i %s %d s0 %lld\n", name, c, (long long)fn(rows + W, ROWS, 0, ctxs + c * W));
  }}
}}

/* A stage time over 0, 1, 2, 5 and all the rows as its takes (R29). */
static void tim(const char *name, double (*fn)(const double *, uint64_t, uint64_t, const double *)) {{
  static const uint64_t ns[] = {{0, 1, 2, 5, ROWS}};
  for (int c = 0; c < CTXS; c++)
    for (int k = 0; k < 5; k++) f(name, c, (int)ns[k], fn(rows, ns[k], W, ctxs + c * W));
}}

int main(void) {{
  for (int i = 0; i < ROWS * W; i++) memcpy(&rows[i], &row_bits[i], sizeof rows[i]);
  for (int i = 0; i < CTXS * W; i++) memcpy(&ctxs[i], &ctx_bits[i], sizeof ctxs[i]);
"#,
        header = header.display(),
        rows = hex_table(&rows),
        ctxs = hex_table(&ctxs),
    );
    for (name, kind) in functions(program, &Prefix::default()) {
        let call = match kind {
            Kind::Key => "key",
            Kind::Cmp => "cmp",
            Kind::Select => "sel",
            Kind::Time => "tim",
        };
        let _ = writeln!(c, "  {call}(\"{name}\", {name});");
    }
    c.push_str("  return 0;\n}\n");
    c
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the harness prints ASCII")
}

/// Builds the object for `target` and the harness around it, runs it, and returns
/// what it printed.
fn results(program: &Program, dir: &TempDir, target: &Target, seed: u8) -> String {
    let tag = target.name();
    let obj = dir.join(&format!("policy-{tag}.o"));
    aot::build(program, &obj, &options(target, Emit::Object))
        .unwrap_or_else(|e| panic!("build for {tag}: {e}"));
    let c = dir.join(&format!("harness-{tag}.c"));
    std::fs::write(&c, harness(program, &obj.with_extension("h"), seed)).expect("writes");
    let exe = dir.join(&format!("harness-{tag}"));
    let (cc, runner): (&str, Option<&str>) = if *target == host() {
        ("cc", None)
    } else {
        ("aarch64-linux-gnu-gcc", Some("qemu-aarch64"))
    };
    let mut link = Command::new(cc);
    // Static, so qemu-aarch64 needs no aarch64 sysroot to run it.
    if runner.is_some() {
        link.arg("-static");
    }
    link.args([
        "-std=c99",
        "-O1",
        "-Wall",
        "-Werror",
        "-Wno-unused-function",
        "-o",
    ])
    .arg(&exe)
    .arg(&c)
    .arg(&obj)
    .arg("-lm");
    run(&mut link, &format!("{cc} (harness for {tag})"));
    match runner {
        None => run(&mut Command::new(&exe), &format!("harness for {tag}")),
        Some(q) => run(Command::new(q).arg(&exe), &format!("{q} harness for {tag}")),
    }
}

/// Line by line: equal, or two `f` lines whose values are both NaN.
fn assert_same_results(name: &str, x86: &str, arm: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) = (x86.lines().collect(), arm.lines().collect());
    assert_eq!(a.len(), b.len(), "{name}: line counts");
    assert!(!a.is_empty(), "{name}: the harness printed nothing");
    let nan = |line: &str| {
        line.starts_with("f ")
            && line
                .rsplit(' ')
                .next()
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .is_some_and(|bits| f64::from_bits(bits).is_nan())
    };
    let head = |line: &str| line.rsplit_once(' ').map(|(h, _)| h.to_string());
    for (x, y) in a.iter().zip(&b) {
        let both_nan = nan(x) && nan(y) && head(x) == head(y);
        assert!(x == y || both_nan, "{name}: x86-64 `{x}` but aarch64 `{y}`");
    }
}

// The native side of the comparison is x86-64 (CI's machine and this test's premise);
// elsewhere there is nothing to compare aarch64 with natively.
#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "the aarch64 comparison runs on x86-64 hosts only"
)]
#[cfg_attr(
    any(missing_aarch64_cross, missing_qemu_aarch64),
    ignore = "needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian packages \
              gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user)"
)]
fn aarch64_objects_compute_what_x86_64_objects_compute() {
    let mut programs: Vec<(String, Program)> = examples()
        .into_iter()
        .map(|(p, t)| (p.display().to_string(), example_program(&p, &t)))
        .collect();
    for seed in 0..2u8 {
        programs.push((format!("corpus {seed}"), corpus_program(50 + seed, 4, 12)));
    }
    for (i, (name, program)) in programs.iter().enumerate() {
        let dir = TempDir::new(&format!("aarch64-{i}"));
        let x86 = results(program, &dir, &host(), i as u8);
        let arm = results(program, &dir, &aarch64(), i as u8);
        assert_same_results(name, &x86, &arm);
    }
}
