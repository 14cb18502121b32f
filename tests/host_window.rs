//! The host keeps only the window of live sessions (docs/HOST.md, "Memory"): a
//! replay that reads its sessions one at a time (`Host::streaming` over the
//! synthetic `Generator`, what `poolc run --synthetic` does) reports exactly what the
//! replay of the whole workload (`Host::new`) reports, every latency percentile exact.
//! The specs make ended sessions' attributes matter long after the window dropped
//! them: a pool that evicts by an attribute (read from its S3 snapshots once the host
//! no longer answers), a tier that orders by one (the host then keeps every
//! session's attributes), and `preempt by` an attribute.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolrt::host::{Host, Report, RunOptions};
use poolrt::trace::{self, Generator, SyntheticParams};

/// Sessions: enough that the window (trimmed in batches of 1,024 ended sessions)
/// drops its oldest sessions a few times.
const N: usize = 5000;

fn spec(path: &str, edits: &[(&str, &str)]) -> poolc::Compiled {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(root.join(path)).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{path} has `{from}`");
        text = text.replace(from, to);
    }
    poolc::compile(&text, &poolc::Options::default()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn options() -> RunOptions<'static> {
    RunOptions {
        exact_percentiles: true,
        ..RunOptions::default()
    }
}

/// The report of the whole workload, and of the same sessions streamed.
fn both(compiled: &poolc::Compiled) -> (Report, Report) {
    let config = || {
        poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages()).unwrap()
    };
    let whole = trace::synthetic(N, 11);
    let a = Host::new(config(), &whole).unwrap().run(options()).unwrap();
    let g = Generator::new(N, 11, SyntheticParams::default());
    let b = Host::streaming(config(), Box::new(g))
        .unwrap()
        .run(options())
        .unwrap();
    (a, b)
}

fn assert_same(name: &str, (a, b): (Report, Report)) -> Report {
    assert_eq!(a.finished + a.rejected, N as u64, "{name}: {}", a.to_text());
    assert_eq!(a.to_json(), b.to_json(), "{name}: whole vs streamed");
    a
}

#[test]
fn a_streamed_replay_reports_what_the_whole_workload_does() {
    let r = assert_same("vllm.pool", both(&spec("examples/vllm.pool", &[])));
    assert!(r.evictions > 0, "{}", r.to_text());
}

#[test]
fn attributes_of_dropped_sessions_come_from_the_pools_snapshots() {
    // The GPU pool evicts by the ended sessions' prompt lengths; its tier is lru.
    let c = spec(
        "examples/tiered.pool",
        &[
            ("param gpu_blocks = 28000;", "param gpu_blocks = 400;"),
            ("evict by (priority, last);", "evict by (-prompt, last);"),
        ],
    );
    let r = assert_same("tiered, GPU keyed by prompt", both(&c));
    assert!(r.evictions > 1000 && r.spills > 1000, "{}", r.to_text());
}

#[test]
fn a_tier_keyed_by_attributes_reads_them_for_every_ended_session() {
    let c = spec(
        "examples/tiered.pool",
        &[
            ("param gpu_blocks = 28000;", "param gpu_blocks = 400;"),
            ("param host_blocks = 524288;", "param host_blocks = 2000;"),
            ("evict lru;", "evict by (output, last);"),
        ],
    );
    let r = assert_same("tiered, tier keyed by output", both(&c));
    assert!(
        r.pools.iter().all(|p| p.evictions > 1000),
        "{}",
        r.to_text()
    );
}

#[test]
fn preempt_by_an_attribute_streams_the_same() {
    let c = spec(
        "examples/vllm_priority.pool",
        &[("param blocks = 4096;", "param blocks = 300;")],
    );
    let r = assert_same("vllm_priority", both(&c));
    assert!(r.preemptions > 0, "{}", r.to_text());
}
