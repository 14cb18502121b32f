//! Measurement: the [`Meter`] a driver is timed with (the wall clock, or in
//! tests/bench_alloc.rs an allocation counter), medians, and the two measured
//! procedures — a phase of rounds with every backend interleaved round by round, and
//! the queue's scan alone — with the cross-check that the backends decided the same.
//! It is the only place that reads the clock (besides [`compile_timed`], which times
//! the compiler); it never renders (render.rs does).

use std::time::Instant;

use poolrt::env::default_query;
use poolrt::policy::KeyList;
use poolrt::{Env, Input, Limit, QueuePolicy};

use super::backends::{Backend, Backends, new_pool, pool_config};
use super::driver::{Counts, Driver, Phase, Totals};
use super::stream::{Stream, StreamShape};
use super::{BenchError, Options};
use poolc::CompileError;
use poolc::codegen::Compiled;
use poolc::ir::PoolId;

/// What the driver measures with: a clock, or (in the allocation test) a counter.
pub trait Meter {
    fn begin(&mut self);
    /// Nanoseconds (or whatever the meter counts) since `begin`.
    fn end(&mut self) -> u64;
}

/// The wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wall(Option<Instant>);

impl Meter for Wall {
    fn begin(&mut self) {
        self.0 = Some(Instant::now());
    }

    fn end(&mut self) -> u64 {
        self.0.take().map_or(0, |t| {
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
    }
}

/// The median of a non-empty list (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// One backend's figures in one phase: medians over runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub backend: Backend,
    /// Nanoseconds per operation (admission, eviction or scan).
    pub ns_per_op: f64,
    pub per_run: Vec<f64>,
    /// Per admission (admission phase): evictions and hit units; nanoseconds of the
    /// grow and release that follow it.
    pub evictions_per_admission: f64,
    pub hit_units_per_admission: f64,
    pub rest_ns_per_admission: f64,
}

impl Figures {
    pub fn ops_per_second(&self) -> f64 {
        1e9 / self.ns_per_op
    }
}

/// Ratios of time per operation, each the median over runs of the ratio within a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ratios {
    /// Interpreter time over compiled time (how many times slower it is).
    pub interp_over_compiled: Option<f64>,
    /// Compiled time over hand-written Rust time (1 is parity).
    pub compiled_over_rust: Option<f64>,
}

fn ratios(figures: &[Figures]) -> Ratios {
    let get = |b| figures.iter().find(|f| f.backend == b);
    let ratio = |num: Option<&Figures>, den: Option<&Figures>| {
        let (n, d) = (num?, den?);
        let per: Vec<f64> = n
            .per_run
            .iter()
            .zip(&d.per_run)
            .map(|(a, b)| a / b)
            .collect();
        Some(median(&per))
    };
    Ratios {
        interp_over_compiled: ratio(get(Backend::Interp), get(Backend::Compiled)),
        compiled_over_rust: ratio(get(Backend::Compiled), get(Backend::Rust)),
    }
}

/// One phase's results.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseReport {
    pub figures: Vec<Figures>,
    pub ratios: Ratios,
    /// Operations measured per run.
    pub ops: u64,
}

/// JIT compile latency of the spec, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileTimes {
    /// Parse and check, the first time in this process.
    pub check_cold_us: f64,
    pub jit_cold_us: f64,
    /// Medians of the repeats that follow.
    pub check_warm_us: f64,
    pub jit_warm_us: f64,
}

/// Parses, checks and JIT-compiles `source`, timing the first compile of the process
/// (cold) and the median of `repeats` more (warm). The compiled result is the first.
pub fn compile_timed(
    source: &str,
    options: &poolc::Options,
    repeats: usize,
) -> Result<(Compiled, CompileTimes), CompileError> {
    let codegen = CompileError::Codegen;
    let spec = CompileError::Spec;
    let t = Instant::now();
    let program = poolc::check(source, options).map_err(spec)?;
    let check_cold = t.elapsed().as_secs_f64() * 1e6;
    let t = Instant::now();
    let compiled = poolc::codegen::compile_program(&program).map_err(codegen)?;
    let jit_cold = t.elapsed().as_secs_f64() * 1e6;
    let (mut checks, mut jits) = (Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let p = poolc::check(source, options).map_err(spec)?;
        checks.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let again = poolc::codegen::compile_program(&p).map_err(codegen)?;
        jits.push(t.elapsed().as_secs_f64() * 1e6);
        drop(again);
    }
    Ok((
        compiled,
        CompileTimes {
            check_cold_us: check_cold,
            jit_cold_us: jit_cold,
            check_warm_us: median(&checks),
            jit_warm_us: median(&jits),
        },
    ))
}

/// Runs one phase for every backend, interleaved run by run.
pub(super) fn measure_phase(
    compiled: &Compiled,
    pool: PoolId,
    backends: &Backends,
    phase: Phase,
    opts: &Options,
    shape: &StreamShape,
    cap: Limit,
) -> Result<PhaseReport, BenchError> {
    let mut drivers = Vec::new();
    for (b, policy) in backends.available() {
        let mut config = pool_config(compiled, pool, policy)?;
        config.cap = cap;
        let stream = Stream::new(compiled.program(), shape.clone(), opts.seed);
        let mut d = Driver::new(new_pool(config)?, stream, phase);
        d.fill(opts.queue)?;
        // Warm-up: until the cache has filled (every admission brings at least one
        // new block) and the engine's buffers have grown, unmeasured.
        let warm = match (phase, cap) {
            (Phase::Admission, Limit::Finite(c)) => (opts.ops / 4).max(2 * (c.0 / shape.block)),
            _ => opts.ops / 4,
        };
        d.run(warm.max(1), &mut Wall::default())?;
        drivers.push((b, d));
    }
    let mut per_run: Vec<Vec<f64>> = vec![Vec::new(); drivers.len()];
    let mut extra: Vec<(u64, u64, u64, u64)> = vec![(0, 0, 0, 0); drivers.len()];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); drivers.len()];
    for _ in 0..opts.repeats.max(1) {
        let starts: Vec<Totals> = drivers.iter().map(|(_, d)| d.totals()).collect();
        samples.iter_mut().for_each(Vec::clear);
        // The backends take turns a round at a time (the same round: one stream),
        // so a burst of load from other jobs falls on all of them alike; a round
        // that was descheduled stands out, and the median over rounds drops it.
        let mut done = 0;
        while done < opts.ops {
            for (k, (_, d)) in drivers.iter_mut().enumerate() {
                let r = d.round(&mut Wall::default())?;
                samples[k].push(r.admit_ns as f64 / r.ops as f64);
                if k == 0 {
                    done += r.ops;
                }
            }
        }
        for (k, (_, d)) in drivers.iter().enumerate() {
            let (before, after) = (starts[k], d.totals());
            let c = |f: fn(&Counts) -> u64| f(&after.counts) - f(&before.counts);
            per_run[k].push(median(&samples[k]));
            let e = &mut extra[k];
            e.0 += c(|c| c.admissions);
            e.1 += c(|c| c.evictions);
            e.2 += c(|c| c.hit_units);
            e.3 += after.rest_ns - before.rest_ns;
        }
    }
    // The backends implement one policy, so they must have made the same decisions.
    let first = drivers[0].1.totals().counts;
    for (b, d) in &drivers[1..] {
        if d.totals().counts != first {
            return Err(BenchError::Diverged {
                backend: *b,
                got: d.totals().counts,
                want: first,
            });
        }
    }
    let figures: Vec<Figures> = drivers
        .iter()
        .zip(per_run)
        .zip(extra)
        .map(|(((b, _), runs), (adm, ev, hit, rest))| {
            let adm = adm.max(1) as f64;
            Figures {
                backend: *b,
                ns_per_op: median(&runs),
                per_run: runs,
                evictions_per_admission: ev as f64 / adm,
                hit_units_per_admission: hit as f64 / adm,
                rest_ns_per_admission: rest as f64 / adm,
            }
        })
        .collect();
    Ok(PhaseReport {
        ratios: ratios(&figures),
        figures,
        ops: opts.ops,
    })
}

/// The compiled (and interpreted, and hand-written) scan over `queue` rows of the
/// stream, filled as the engine fills them, when the engine scans this queue.
pub(super) fn scan(
    compiled: &Compiled,
    pool: PoolId,
    backends: &Backends,
    opts: &Options,
    shape: &StreamShape,
) -> Result<Option<PhaseReport>, BenchError> {
    let config = pool_config(compiled, pool, &backends.compiled)?;
    let QueuePolicy::By { layout, .. } = &config.queue else {
        return Ok(None);
    };
    let fixed = layout.ctx.is_empty()
        && layout
            .row
            .iter()
            .all(|i| matches!(i, Input::Attr(_) | Input::Units | Input::Reserve));
    if fixed {
        return Ok(None);
    }
    let n = opts.queue;
    let stride = layout.row.len();
    let mut stream = Stream::new(compiled.program(), shape.clone(), opts.seed);
    let mut rows = Vec::with_capacity(n * stride);
    for _ in 0..n {
        stream.tick();
        let h = stream.hold();
        let attrs = stream.env().attrs(h.session).unwrap_or(&[]);
        for input in &layout.row {
            rows.push(match *input {
                Input::Attr(a) => attrs.get(a as usize).copied().unwrap_or(0.0),
                Input::Units | Input::Reserve => h.units as f64,
                Input::Enqueued => stream.now(),
                // No hold is admitted in this scan, so nothing is hit.
                _ => 0.0,
            });
        }
    }
    let ctx: Vec<f64> = layout
        .ctx
        .iter()
        .map(|i| match *i {
            Input::Now => stream.now(),
            Input::Query(q) => default_query(q),
            _ => 0.0,
        })
        .collect();
    let lists: Vec<(Backend, &KeyList)> = backends
        .available()
        .into_iter()
        .filter_map(|(b, p)| p.queue.as_ref().map(|q| (b, q)))
        .collect();
    let want = lists[0].1.select(&rows, n, stride, &ctx);
    for (b, l) in &lists[1..] {
        let got = l.select(&rows, n, stride, &ctx);
        if got != want {
            return Err(BenchError::ScanDiverged {
                backend: *b,
                got,
                want,
            });
        }
    }
    // About two million rows per measurement: milliseconds for the compiled scan.
    let iters = (2_000_000 / n.max(1)).max(1);
    let mut per_run: Vec<Vec<f64>> = vec![Vec::new(); lists.len()];
    let turns = 32;
    let per_turn = iters.div_ceil(turns);
    for _ in 0..opts.repeats.max(1) {
        // Turns of a 32nd of a run each, medians over turns, as in the phases.
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); lists.len()];
        for _ in 0..turns {
            for (k, (_, l)) in lists.iter().enumerate() {
                let t = Instant::now();
                for _ in 0..per_turn {
                    std::hint::black_box(l.select(std::hint::black_box(&rows), n, stride, &ctx));
                }
                samples[k].push(t.elapsed().as_nanos() as f64 / per_turn as f64);
            }
        }
        for (k, s) in samples.iter().enumerate() {
            per_run[k].push(median(s));
        }
    }
    let figures: Vec<Figures> = lists
        .iter()
        .zip(per_run)
        .map(|((b, _), runs)| Figures {
            backend: *b,
            ns_per_op: median(&runs),
            per_run: runs,
            evictions_per_admission: 0.0,
            hit_units_per_admission: 0.0,
            rest_ns_per_admission: 0.0,
        })
        .collect();
    Ok(Some(PhaseReport {
        ratios: ratios(&figures),
        figures,
        ops: (turns * per_turn) as u64,
    }))
}
