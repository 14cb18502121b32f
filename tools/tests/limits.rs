//! The stated limits (docs/RELIABILITY.md, "Limits"), each at the limit and one past
//! it: a spec's declarations, expression height and family size, a trace's line
//! length and session count, and a session's units and a pool's cap (2^53). Past a
//! limit is a clear error (a diagnostic, or a trace error naming file and line),
//! never a panic or a silent rounding.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::diag::Diagnostic;
use poolc::sema::MAX_DECLARATIONS;
use poolc_tools::run::Source;
use poolrt::trace::{self, MAX_LINE_BYTES, MAX_SESSIONS, MAX_UNITS};

fn check(src: &str) -> Result<(), Vec<Diagnostic>> {
    poolc::check(src, &poolc::Options::default()).map(|_| ())
}

fn only_error(src: &str) -> Diagnostic {
    let mut d = check(src).expect_err("past the limit");
    assert_eq!(d.len(), 1, "{d:?}");
    d.remove(0)
}

#[test]
fn limit_declarations_at_the_limit_check_and_one_more_is_an_error() {
    let consts = |n: usize| {
        (0..n)
            .map(|i| format!("const c{i} = 1;\n"))
            .collect::<String>()
    };
    assert_eq!(MAX_DECLARATIONS, 4096);
    check(&consts(MAX_DECLARATIONS)).unwrap();
    let d = only_error(&consts(MAX_DECLARATIONS + 1));
    assert_eq!(d.code, "limit");
    assert_eq!(
        d.message,
        "the spec makes 4097 declarations; at most 4096 are allowed"
    );
    // Every kind counts: 4095 constants, an attribute and a pool are one too many.
    let mixed = format!(
        "{}session {{ prompt; }}\npool kv {{ cap 16; block 1; }}\n",
        consts(4095)
    );
    assert_eq!(only_error(&mixed).code, "limit");
}

#[test]
fn limit_expression_height_200_checks_and_201_is_an_error() {
    // `1 + 1 + … + 1` with k additions is a tree of height k + 1.
    let sum = |k: usize| format!("const x = 1{};", " + 1".repeat(k));
    check(&sum(199)).unwrap();
    let d = only_error(&sum(200));
    assert_eq!(d.message, "expression nested too deeply");
}

#[test]
fn limit_family_of_65536_members_checks_and_65537_is_an_error() {
    check("pool kv[65536] { cap 16; block 1; }").unwrap();
    let d = only_error("pool kv[65537] { cap 16; block 1; }");
    assert_eq!(d.code, "D6");
    assert!(d.message.contains("from 1 to 65536"), "{}", d.message);
}

#[test]
fn limit_a_cap_of_2_pow_53_checks_and_more_is_an_error() {
    check("pool kv { cap 9007199254740992; block 1; }").unwrap();
    // 2^53 + 1 is not an f64; the next one is 2^53 + 2.
    let d = only_error("pool kv { cap 9007199254740994; block 1; }");
    assert_eq!(d.code, "D6");
    assert_eq!(
        d.message,
        "`cap` must be at most 2^53 (9007199254740992), the largest integer every count \
         stays exact at, but it evaluates to 9007199254740994"
    );
    // A block too, and a value far past the limit.
    let d = only_error("pool kv { cap 16; block 1e300; }");
    assert!(
        d.message.starts_with("`block` must be at most 2^53"),
        "{}",
        d.message
    );
}

/// One JSONL line of exactly `len` bytes (without its newline).
fn line_of(len: usize) -> String {
    let head = r#"{"arrival": 0, "prompt": 4, "output": 1, "id": ""#;
    let tail = "\"}";
    let pad = len - head.len() - tail.len();
    format!("{head}{}{tail}", "x".repeat(pad))
}

#[test]
fn limit_a_trace_line_of_1_mib_reads_and_one_byte_more_is_an_error() {
    assert_eq!(MAX_LINE_BYTES, 1 << 20);
    // Both JSON-lines readers (ours and Mooncake's) share this line loop.
    let ok = format!("{}\n{}\n", line_of(60), line_of(MAX_LINE_BYTES));
    let w = trace::jsonl::read(ok.as_bytes(), "w.jsonl").unwrap();
    assert_eq!(w.sessions.len(), 2);
    let long = format!("{}\n{}\n", line_of(60), line_of(MAX_LINE_BYTES + 1));
    let e = trace::jsonl::read(long.as_bytes(), "w.jsonl").unwrap_err();
    assert_eq!(
        e.to_string(),
        "w.jsonl:2: cannot read: the line is longer than 1048576 bytes"
    );
    // The Azure CSV reader has the same limit.
    let header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
    let row = |len: usize| {
        let text = "2023-11-16 18:15:46.6805900,4,1";
        format!("{text}{}\n", " ".repeat(len - text.len()))
    };
    let ok = format!("{header}{}", row(MAX_LINE_BYTES));
    assert_eq!(
        trace::azure::read(ok.as_bytes(), "a.csv")
            .unwrap()
            .sessions
            .len(),
        1
    );
    let long = format!("{header}{}", row(MAX_LINE_BYTES + 1));
    let e = trace::azure::read(long.as_bytes(), "a.csv").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("a.csv:2: cannot read: the line is longer"),
        "{e}"
    );
    // Detecting a file's format reads up to its first non-blank line under the same
    // limit, and names the line that broke it (here line 2, after a blank one).
    let path = std::env::temp_dir().join(format!("poolc-long-{}.jsonl", std::process::id()));
    std::fs::write(&path, format!("\n{}\n", line_of(MAX_LINE_BYTES + 1))).unwrap();
    let e = trace::open_path(&path, None).map(|_| ()).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: cannot read: the line is longer than 1048576 bytes",
            path.display()
        )
    );
}

#[test]
fn limit_sessions_2_pow_24_is_allowed_and_one_more_is_an_error() {
    assert_eq!(MAX_SESSIONS, 1 << 24);
    // Reading 2^24 lines takes too long for the suite: the one check every reader
    // and `--synthetic` call is tested at the limit, and `--synthetic` past it.
    trace::session_limit(MAX_SESSIONS).unwrap();
    assert!(trace::session_limit(MAX_SESSIONS + 1).is_err());
    let e = Source::Synthetic {
        n: MAX_SESSIONS + 1,
        seed: 1,
    }
    .workload()
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--synthetic: a workload has at most 16777216 sessions (this one has more)"
    );
}

#[test]
fn limit_a_session_of_2_pow_53_units_reads_and_one_more_is_an_error() {
    assert_eq!(MAX_UNITS, 1 << 53);
    let session = |prompt: u64, output: u64| {
        format!("{{\"arrival\": 0, \"prompt\": {prompt}, \"output\": {output}}}\n")
    };
    let w = trace::jsonl::read(session(MAX_UNITS - 1, 1).as_bytes(), "w.jsonl").unwrap();
    assert_eq!(w.sessions[0].prompt, MAX_UNITS - 1);
    let e = trace::jsonl::read(session(MAX_UNITS - 1, 2).as_bytes(), "w.jsonl").unwrap_err();
    assert_eq!(
        e.to_string(),
        "w.jsonl:1: prompt 9007199254740991 + output 2 tokens is more than 2^53 \
         (9007199254740992), the most a session may have"
    );
    let e = trace::jsonl::read(session(u64::MAX, u64::MAX).as_bytes(), "w.jsonl").unwrap_err();
    assert_eq!(e.line, 1);
}
