//! The host keeps only the window of live sessions (docs/HOST.md, "Memory"): a
//! replay that reads its sessions one at a time (`Host::streaming` over the
//! synthetic `Generator`, what `poolc run --synthetic` does) reports exactly what the
//! replay of the whole workload (`Host::new`) reports, every latency percentile exact.
//! The specs make ended sessions' attributes matter long after the window dropped
//! them: a pool that evicts by an attribute (read from its S3 snapshots once the host
//! no longer answers), a tier that orders by one (the host then keeps every
//! session's attributes), and `preempt by` an attribute. A trace file read line by
//! line (`trace::open_path`, what `poolc run --trace` does) reports what the file
//! read whole does, an attribute field first met mid-file included, and a bad line
//! fails the replay when it is reached, naming the line.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolrt::host::{Host, HostError, LatencySamples, Report, RunOptions};
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
        latencies: LatencySamples::Exact,
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

/// Our JSONL of the synthetic sessions, content runs included; `priority` is given
/// by every session from the fifth on except each third one (so the field is first
/// met on line 5, and later sessions fall back to the default too).
fn jsonl_with_priority_from_line_5(n: usize) -> String {
    let w = trace::synthetic(n, 11);
    let mut text = String::new();
    for (i, s) in w.sessions.iter().enumerate() {
        let runs: Vec<String> = s
            .runs
            .iter()
            .map(|r| format!("[{}, {}]", r.id.0, r.len.0))
            .collect();
        text.push_str(&format!(
            "{{\"arrival\": {}, \"prompt\": {}, \"output\": {}, \"runs\": [{}]",
            s.arrival,
            s.prompt,
            s.output,
            runs.join(", ")
        ));
        if i >= 4 && i % 3 != 0 {
            text.push_str(&format!(", \"priority\": {}", (i * 7) % 5));
        }
        text.push_str("}\n");
    }
    text
}

fn scratch(name: &str, text: &str) -> std::path::PathBuf {
    let path =
        std::env::temp_dir().join(format!("poolc-host-window-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_trace_file_read_line_by_line_reports_what_the_whole_file_does() {
    let c = spec(
        "examples/vllm_priority.pool",
        &[("param blocks = 4096;", "param blocks = 300;")],
    );
    let config = || poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
    let path = scratch("priority.jsonl", &jsonl_with_priority_from_line_5(N));
    let whole = trace::read_path(&path, None).unwrap();
    assert_eq!(whole.fields, ["priority"]);
    let a = Host::new(config(), &whole).unwrap().run(options()).unwrap();
    let reader = trace::open_path(&path, None).unwrap();
    let b = Host::streaming(config(), Box::new(reader))
        .unwrap()
        .run(options())
        .unwrap();
    let r = assert_same("vllm_priority, JSONL file", (a, b));
    assert!(r.preemptions > 0, "{}", r.to_text());
    // The priorities reach the replay: the same file with the field renamed (so
    // every session takes the default), at the same path so that the report names
    // the same source, replays differently. A host that missed the field first met
    // on line 5 would give that report.
    let renamed = std::fs::read_to_string(&path)
        .unwrap()
        .replace("priority", "other");
    std::fs::write(&path, renamed).unwrap();
    let reader = trace::open_path(&path, None).unwrap();
    let u = Host::streaming(config(), Box::new(reader))
        .unwrap()
        .run(options())
        .unwrap();
    assert_eq!(u.source, r.source);
    assert_ne!(u.to_json(), r.to_json(), "priorities change the replay");
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_bad_line_fails_a_streamed_replay_when_it_is_reached_and_names_it() {
    let c = spec("examples/vllm.pool", &[]);
    let mut text = jsonl_with_priority_from_line_5(200);
    // Line 201 arrives before line 200.
    text.push_str("{\"arrival\": 0.5, \"prompt\": 10, \"output\": 2}\n");
    let path = scratch("late.jsonl", &text);
    let reader = trace::open_path(&path, None).unwrap();
    let config = poolc::bridge::host_config(c.program(), c.pools(), c.stages()).unwrap();
    let e = Host::streaming(config, Box::new(reader))
        .unwrap()
        .run(options())
        .unwrap_err();
    let t = match e {
        HostError::Trace(t) => t,
        other => panic!("expected a trace error, got {other}"),
    };
    assert_eq!(t.line, 201, "{t}");
    assert!(t.message.contains("earlier than the previous"), "{t}");
    assert_eq!(t.file, path.display().to_string());
    // Read whole, the same file fails with the same error.
    assert_eq!(trace::read_path(&path, None).unwrap_err(), t);
    let _ = std::fs::remove_file(path);
}
