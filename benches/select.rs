//! Criterion benchmarks of compiled policies: `select` over n = 10, 1,000 and
//! 100,000 rows by the JIT, by the reference interpreter and by a hand-written Rust
//! loop of the same policy (same E5 order), for the seed's Ascend key list and for
//! `(priority, last)`; and the JIT compile latency of each example spec. Ratios, not
//! absolute times, go into docs/PERFORMANCE.md. Run with
//! `cargo bench --bench select -- --warm-up-time 1 --measurement-time 2`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a benchmark fails by panicking

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use poolc::codegen::{compile_key_list, compile_program};
use poolc::interp;
use poolc::ir::{BinaryOp, Expr, Slot};
use poolc_tools::bench::order_bits;
use poolrt::policy::KeyList;

const SIZES: [usize; 3] = [10, 1_000, 100_000];

/// A fixed xorshift generator: the data are the same in every run, and the bench
/// needs no random-number dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> f64 {
        (self.next() % n) as f64
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn row(i: u32) -> Box<Expr> {
    Box::new(Expr::Slot(Slot::Row(i)))
}

fn num(x: f64) -> Box<Expr> {
    Box::new(Expr::Const(x))
}

fn bin(op: BinaryOp, a: Box<Expr>, b: Box<Expr>) -> Box<Expr> {
    Box::new(Expr::Binary(op, a, b))
}

fn cond(c: Box<Expr>, a: Box<Expr>, b: Box<Expr>) -> Box<Expr> {
    Box::new(Expr::Cond(c, a, b))
}

// Ascend rows: [prompt, immediate, serial, enqueued]; ctx: [now].
const ASCEND_STRIDE: usize = 4;

/// `(immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3, serial)`
/// with `waited` expanded to `now − enqueued`, as sema writes it.
fn ascend_keys() -> Vec<Expr> {
    let waited = bin(BinaryOp::Sub, Box::new(Expr::Slot(Slot::Ctx(0))), row(3));
    let aged_long = bin(
        BinaryOp::And,
        bin(BinaryOp::Gt, row(0), num(128.0)),
        bin(BinaryOp::Ge, waited, num(3.0)),
    );
    let lane = cond(
        row(1),
        num(0.0),
        cond(
            aged_long,
            num(1.0),
            cond(bin(BinaryOp::Le, row(0), num(128.0)), num(2.0), num(3.0)),
        ),
    );
    vec![*lane, Expr::Slot(Slot::Row(2))]
}

fn ascend_rows(n: usize) -> Vec<f64> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rows = Vec::with_capacity(n * ASCEND_STRIDE);
    for i in 0..n {
        let prompt = 1.0 + rng.below(2000);
        let immediate = if rng.below(20) == 0.0 { 1.0 } else { 0.0 };
        let enqueued = rng.unit() * 10.0;
        rows.extend([prompt, immediate, i as f64, enqueued]);
    }
    rows
}

// (priority, last) rows: [priority, last]; no ctx.
const PL_STRIDE: usize = 2;

fn priority_last_keys() -> Vec<Expr> {
    vec![Expr::Slot(Slot::Row(0)), Expr::Slot(Slot::Row(1))]
}

fn priority_last_rows(n: usize) -> Vec<f64> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    (0..n)
        .flat_map(|_| [rng.below(4), rng.unit() * 1000.0])
        .collect()
}

/// The Ascend policy written by hand in Rust.
fn rust_select_ascend(rows: &[f64], n: usize, now: f64) -> Option<usize> {
    let lane = |r: &[f64]| {
        if r[1] != 0.0 {
            0.0
        } else if r[0] > 128.0 && now - r[3] >= 3.0 {
            1.0
        } else if r[0] <= 128.0 {
            2.0
        } else {
            3.0
        }
    };
    let mut best = None;
    let mut held = (0i64, 0i64);
    for (i, r) in rows.chunks_exact(ASCEND_STRIDE).take(n).enumerate() {
        let k0 = order_bits(lane(r));
        if best.is_none() || k0 < held.0 || (k0 == held.0 && order_bits(r[2]) < held.1) {
            best = Some(i);
            held = (k0, order_bits(r[2]));
        }
    }
    best
}

/// `(priority, last)` written by hand in Rust.
fn rust_select_priority_last(rows: &[f64], n: usize) -> Option<usize> {
    let mut best = None;
    let mut held = (0i64, 0i64);
    for (i, r) in rows.chunks_exact(PL_STRIDE).take(n).enumerate() {
        let k0 = order_bits(r[0]);
        if best.is_none() || k0 < held.0 || (k0 == held.0 && order_bits(r[1]) < held.1) {
            best = Some(i);
            held = (k0, order_bits(r[1]));
        }
    }
    best
}

struct Policy {
    name: &'static str,
    keys: Vec<Expr>,
    stride: usize,
    ctx: Vec<f64>,
    rows: fn(usize) -> Vec<f64>,
    rust: fn(&[f64], usize, &[f64]) -> Option<usize>,
}

fn policies() -> Vec<Policy> {
    vec![
        Policy {
            name: "ascend",
            keys: ascend_keys(),
            stride: ASCEND_STRIDE,
            ctx: vec![10.0],
            rows: ascend_rows,
            rust: |rows, n, ctx| rust_select_ascend(rows, n, ctx[0]),
        },
        Policy {
            name: "priority_last",
            keys: priority_last_keys(),
            stride: PL_STRIDE,
            ctx: vec![],
            rows: priority_last_rows,
            rust: |rows, n, _| rust_select_priority_last(rows, n),
        },
    ]
}

fn bench_select(c: &mut Criterion) {
    for p in policies() {
        let list: KeyList = compile_key_list(&p.keys).expect("bench keys compile");
        let mut group = c.benchmark_group(format!("select/{}", p.name));
        for n in SIZES {
            let rows = (p.rows)(n);
            // The three must agree, or the comparison means nothing.
            let want = interp::select(&p.keys, &rows, n, p.stride, &p.ctx);
            assert_eq!(
                list.select(&rows, n, p.stride, &p.ctx),
                want,
                "{} jit",
                p.name
            );
            assert_eq!((p.rust)(&rows, n, &p.ctx), want, "{} rust", p.name);
            group.throughput(Throughput::Elements(n as u64));
            if n >= 100_000 {
                group.sample_size(10);
            }
            group.bench_with_input(BenchmarkId::new("jit", n), &rows, |b, rows| {
                b.iter(|| list.select(black_box(rows), n, p.stride, &p.ctx))
            });
            group.bench_with_input(BenchmarkId::new("rust", n), &rows, |b, rows| {
                b.iter(|| (p.rust)(black_box(rows), n, &p.ctx))
            });
            group.bench_with_input(BenchmarkId::new("interp", n), &rows, |b, rows| {
                b.iter(|| interp::select(&p.keys, black_box(rows), n, p.stride, &p.ctx))
            });
        }
        group.finish();
    }
}

fn bench_compile(c: &mut Criterion) {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|x| x == "pool"));
    paths.sort();
    let mut group = c.benchmark_group("compile");
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Examples that do not check (yet) are skipped, not failed: this measures
        // the JIT, not the front end.
        let Ok(program) = poolc::check(&text, &poolc::Options::default()) else {
            eprintln!("skipping {}: it does not check", path.display());
            continue;
        };
        group.bench_function(BenchmarkId::new("jit", &name), |b| {
            b.iter(|| compile_program(black_box(&program)).expect("example compiles"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_select, bench_compile);
criterion_main!(benches);
