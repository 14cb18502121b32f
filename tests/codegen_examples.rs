//! Every example spec (examples/*.pool) compiles through the JIT, and every function
//! compiled for it agrees with the interpreter on random rows: each key, spill `pred`
//! and `work` and stage `time` bit for bit, and `select`/`cmp` by index and sign.
//! This is what `poolc eval` on the examples relies on.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use std::path::Path;

use build_support::expr_tree::same;
use build_support::{examples, policy_examples};
use poolc::codegen::ClifForm;
use poolc::interp;
use poolc::ir::{Evict, Layout, PreemptMode, QueuePolicy, SiteExpr};
use poolc::{Compiled, Options, compile};
use poolrt::policy::KeyList;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

fn compile_example(path: &Path, text: &str) -> Compiled {
    compile(text, &Options::default())
        .unwrap_or_else(|d| panic!("{} does not compile: {d:#?}", path.display()))
}

/// Input values: small integers (the realistic ones, with many ties) and IEEE corners.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => (0i32..300).prop_map(f64::from),
        1 => proptest::sample::select(vec![0.0, -0.0, f64::INFINITY, -f64::INFINITY, f64::NAN, 1e300, 5e-324]),
        1 => any::<f64>(),
    ]
}

/// A fresh runner per site: a `TestRunner` counts successes across `run` calls.
fn runner() -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    })
}

/// Checks one key list site on `n` random rows of its layout.
fn check_list(what: &str, list: &KeyList, keys: &[SiteExpr], layout: &Layout) {
    let width = layout.row.len();
    let strategy = (0usize..30).prop_flat_map(move |n| {
        (
            Just(n),
            proptest::collection::vec(value(), n * width),
            proptest::collection::vec(value(), layout.ctx.len()),
        )
    });
    let exprs: Vec<_> = keys.iter().map(|k| k.expr.clone()).collect();
    runner()
        .run(&strategy, |(n, rows, ctx)| {
            for i in 0..n {
                let row = &rows[i * width..(i + 1) * width];
                for (k, e) in exprs.iter().enumerate() {
                    let (got, want) = (list.key(k, row, &ctx), interp::eval(e, row, &ctx));
                    prop_assert!(
                        same(got, want),
                        "{what} key {k}: jit {got:?} interp {want:?}"
                    );
                }
            }
            let got = list.select(&rows, n, width, &ctx);
            prop_assert_eq!(
                got,
                interp::select(&exprs, &rows, n, width, &ctx),
                "{} select",
                what
            );
            if n >= 2 {
                let (a, b) = (&rows[..width], &rows[width..2 * width]);
                prop_assert_eq!(
                    list.cmp(a, b, &ctx) as i32,
                    interp::cmp(&exprs, a, b, &ctx),
                    "{} cmp",
                    what
                );
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn every_example_compiles_and_agrees_with_the_interpreter() {
    for (path, text) in examples().into_iter().chain(policy_examples()) {
        let c = compile_example(&path, &text);
        let program = c.program();
        assert_eq!(c.pools().len(), program.pools.len());
        assert_eq!(c.stages().len(), program.stages.len());
        for (pool, policy) in program.pools.iter().zip(c.pools()) {
            let name = format!("{}: pool {}", path.display(), pool.name);
            match (&pool.queue, &policy.queue) {
                (QueuePolicy::By(keys), Some(list)) => {
                    check_list(&format!("{name} queue"), list, keys, &pool.queue_layout)
                }
                (QueuePolicy::Fifo, None) => {}
                _ => panic!("{name}: queue functions do not match the IR"),
            }
            match (&pool.evict, &policy.evict) {
                (Evict::By(keys), Some(list)) => {
                    check_list(&format!("{name} evict"), list, keys, &pool.entry_layout)
                }
                (Evict::Lru, None) => {}
                _ => panic!("{name}: evict functions do not match the IR"),
            }
            match (&pool.preempt, &policy.preempt) {
                (PreemptMode::By(keys), Some(list)) => check_list(
                    &format!("{name} preempt"),
                    list,
                    keys,
                    &pool.resident_layout,
                ),
                (PreemptMode::None | PreemptMode::Lifo, None) => {}
                _ => panic!("{name}: preempt functions do not match the IR"),
            }
            match (&pool.route, &policy.route) {
                (Some(route), Some(list)) => {
                    check_list(&format!("{name} route"), list, &route.keys, &route.layout)
                }
                (None, None) => {}
                _ => panic!("{name}: route functions do not match the IR"),
            }
            match (&pool.spill, &policy.spill) {
                (Some(spill), Some(fns)) => {
                    let layout = &pool.entry_layout;
                    let strategy = (
                        proptest::collection::vec(value(), layout.row.len()),
                        proptest::collection::vec(value(), layout.ctx.len()),
                    );
                    runner()
                        .run(&strategy, |(row, ctx)| {
                            let pred = (
                                fns.pred(&row, &ctx),
                                interp::eval(&spill.pred.expr, &row, &ctx),
                            );
                            prop_assert!(same(pred.0, pred.1), "{name} pred {pred:?}");
                            let work = (
                                fns.work(&row, &ctx),
                                interp::eval(&spill.work.expr, &row, &ctx),
                            );
                            prop_assert!(same(work.0, work.1), "{name} work {work:?}");
                            Ok(())
                        })
                        .unwrap_or_else(|e| panic!("{name} spill: {e}"));
                }
                (None, None) => {}
                _ => panic!("{name}: spill functions do not match the IR"),
            }
            match (&pool.handoff, &policy.handoff) {
                (Some(h), Some(f)) => {
                    let strategy = (
                        proptest::collection::vec(value(), h.layout.row.len()),
                        proptest::collection::vec(value(), h.layout.ctx.len()),
                    );
                    runner()
                        .run(&strategy, |(row, ctx)| {
                            let work = (f.work(&row, &ctx), interp::eval(&h.work.expr, &row, &ctx));
                            prop_assert!(same(work.0, work.1), "{name} handoff {work:?}");
                            Ok(())
                        })
                        .unwrap_or_else(|e| panic!("{name} handoff: {e}"));
                }
                (None, None) => {}
                _ => panic!("{name}: handoff functions do not match the IR"),
            }
        }
        for (stage, policy) in program.stages.iter().zip(c.stages()) {
            let (time, time_layout) = stage.time();
            // 0 to 3 take rows, for `sum` (R29).
            let stride = time_layout.row.len();
            let strategy = (
                proptest::collection::vec(value(), time_layout.ctx.len()),
                (0usize..4).prop_flat_map(move |n| {
                    proptest::collection::vec(value(), n * stride).prop_map(move |rows| (n, rows))
                }),
            );
            runner()
                .run(&strategy, |(ctx, (n, rows))| {
                    let takes = interp::Takes {
                        rows: &rows,
                        n,
                        stride,
                    };
                    let (got, want) = (
                        policy.time(&ctx, &rows, n),
                        interp::eval_time(&time.expr, takes, &ctx),
                    );
                    prop_assert!(
                        same(got, want),
                        "{} time: jit {got:?} interp {want:?}",
                        stage.name
                    );
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{}: stage {}: {e}", path.display(), stage.name));
        }
    }
}

#[test]
fn clif_lists_every_function_of_every_example_before_and_after_optimisation() {
    for (path, text) in examples() {
        let c = compile_example(&path, &text);
        let program = c.program();
        for form in [ClifForm::Built, ClifForm::Optimized] {
            let out = poolc::codegen::clif(program, None, form)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for stage in &program.stages {
                assert!(
                    out.contains(&format!("; stage_{}_time\n", stage.name)),
                    "{out}"
                );
            }
            for pool in &program.pools {
                if let QueuePolicy::By(keys) = &pool.queue {
                    let p = &pool.name;
                    assert!(
                        out.contains(&format!("; pool_{p}_queue_select\nfunction")),
                        "{out}"
                    );
                    assert!(out.contains(&format!("; pool_{p}_queue_cmp\n")), "{out}");
                    assert!(out.contains(&format!("; pool_{p}_queue_key{}\n", keys.len() - 1)));
                }
            }
        }
        let err = poolc::codegen::clif(program, Some("no_such_pool"), ClifForm::Built)
            .expect_err("unknown pool");
        assert!(err.to_string().contains("no_such_pool"), "{err}");
    }
}
