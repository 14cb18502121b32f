//! `poolc bench`'s errors are data: each names what went wrong and carries the error
//! it wraps (the bridge's, here), so callers match on variants instead of parsing
//! messages, and the CLI can word option errors in terms of its flags.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::error::Error as _;

use poolc::bridge::BridgeError;
use poolc_tools::bench::{self, BenchError, Options, OptionsError, StreamShape};
use poolrt::policy::PoolPolicy;

const SPEC: &str = "
    session { prompt; priority = 0; }
    pool kv { cap 65536; block 16; queue by (priority, serial); evict lru; }
";

fn compiled() -> poolc::codegen::Compiled {
    poolc::compile(SPEC, &poolc::Options::default()).expect("spec compiles")
}

fn run(options: Options) -> Result<bench::Report, BenchError> {
    let c = compiled();
    let pool = bench::default_pool(c.program()).expect("a pool");
    bench::run("spec", &c, pool, bench::CompileTimes::default(), &options)
}

#[test]
fn options_the_bench_cannot_honour_are_options_errors() {
    let empty = run(Options {
        queue: 0,
        ..Options::default()
    });
    assert_eq!(empty, Err(BenchError::Options(OptionsError::EmptyQueue)));
    let none = run(Options {
        ops: 0,
        ..Options::default()
    });
    assert_eq!(none, Err(BenchError::Options(OptionsError::NoOps)));
    let share = run(Options {
        share: 2.0,
        ..Options::default()
    });
    assert_eq!(share, Err(BenchError::Options(OptionsError::Share(2.0))));
}

#[test]
fn a_cap_of_one_block_is_too_small_for_the_stream() {
    let shape = StreamShape::admission(16, Some(1), 10, 0.5, bench::MAX_HOLD_BLOCKS);
    assert_eq!(shape, Err(BenchError::CapTooSmall { blocks: 1 }));
    assert!(StreamShape::admission(16, Some(2), 10, 0.5, bench::MAX_HOLD_BLOCKS).is_ok());
}

#[test]
fn a_policy_set_without_the_irs_keys_is_a_bridge_error_it_carries() {
    let c = compiled();
    let pool = bench::default_pool(c.program()).expect("a pool");
    let empty = PoolPolicy {
        queue: None,
        evict: None,
        preempt: None,
        spill: None,
        route: None,
        handoff: None,
    };
    let e = bench::pool_config(&c, pool, &empty).expect_err("queue keys are missing");
    let BenchError::Bridge(inner) = &e else {
        panic!("not a bridge error: {e:?}");
    };
    assert!(matches!(inner, BridgeError::Mismatch { .. }), "{inner:?}");
    let source = e.source().expect("the bridge error is the source");
    assert_eq!(source.to_string(), inner.to_string());
}
