//! The workload readers on small inline files, every error path with the line it
//! must name, and the bundled traces (examples/traces) read whole. Errors are
//! compared as whole messages, so their wording is pinned too.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::Path;

use poolrt::trace::{self, Format, TraceError, Workload, azure, jsonl, mooncake};

fn moon(text: &str) -> Result<Workload, TraceError> {
    mooncake::read(text.as_bytes(), "m.jsonl")
}

fn ours(text: &str) -> Result<Workload, TraceError> {
    jsonl::read(text.as_bytes(), "w.jsonl")
}

fn az(text: &str) -> Result<Workload, TraceError> {
    azure::read(text.as_bytes(), "a.csv")
}

fn err(r: Result<Workload, TraceError>) -> String {
    match r {
        Ok(w) => panic!("expected an error, read {} sessions", w.sessions.len()),
        Err(e) => e.to_string(),
    }
}

fn runs(w: &Workload, i: usize) -> Vec<(u64, u64)> {
    w.sessions[i]
        .runs
        .iter()
        .map(|r| (r.id.0, r.len.0))
        .collect()
}

#[test]
fn mooncake_hash_ids_become_512_token_runs_the_last_partial() {
    let w = moon(
        "{\"timestamp\": 1000, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}\n\
         \n\
         {\"timestamp\": 4500, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [0]}\n",
    )
    .unwrap();
    assert_eq!(w.sessions.len(), 2);
    assert_eq!(runs(&w, 0), [(0, 512), (1, 512), (2, 76)]);
    assert_eq!(runs(&w, 1), [(0, 512)]);
    // Arrival: seconds since the first row.
    assert_eq!((w.sessions[0].arrival, w.sessions[1].arrival), (0.0, 3.5));
    assert_eq!((w.sessions[0].prompt, w.sessions[0].output), (1100, 7));
    assert_eq!((w.sessions[0].line, w.sessions[1].line), (1, 3));
}

#[test]
fn mooncake_errors_name_the_line() {
    let ok = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n";
    let cases = [
        (
            "{\"timestamp\": 0, \"input_length\": 10",
            "m.jsonl:2: bad JSON: EOF while parsing an object at line 1 column 35",
        ),
        ("[1, 2]", "m.jsonl:2: expected a JSON object, found [1,2]"),
        (
            "{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [0]}",
            "m.jsonl:2: missing field `input_length`",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": -5, \"output_length\": 1, \"hash_ids\": []}",
            "m.jsonl:2: `input_length` must be a whole number of at least 1, not -5",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 0, \"hash_ids\": [0]}",
            "m.jsonl:2: `output_length` must be a whole number of at least 1, not 0",
        ),
        (
            "{\"timestamp\": \"x\", \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}",
            "m.jsonl:2: `timestamp` must be a number, not \"x\"",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0]}",
            "m.jsonl:2: `hash_ids` has 1 ids, but an input of 600 tokens has 2 blocks of 512",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1.5]}",
            "m.jsonl:2: `hash_ids` must be a whole number of at least 0, not 1.5",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": 3}",
            "m.jsonl:2: `hash_ids` must be an array of block ids",
        ),
        (
            "{\"timestamp\": -1, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}",
            "m.jsonl:2: arrival -0.001 s is earlier than the previous session's 0 s (sessions must come in arrival order)",
        ),
        // Run 0 names a 10-token prefix on line 1; here it is 600 tokens long.
        (
            "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, 5]}",
            "m.jsonl:2: run 0 is at unit 0 with length 512 after nothing here, but at unit 0 with length 10 after nothing on line 1 (a run id names the same prefix everywhere)",
        ),
        (
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [9223372036854775808]}",
            "m.jsonl:2: run id 9223372036854775808 is too large (ids from 2^63 on are the host's own)",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(err(moon(&format!("{ok}{line}\n"))), want, "for {line}");
    }
}

#[test]
fn our_jsonl_reads_runs_ids_and_extra_fields_as_attributes() {
    let w = ours(
        "{\"arrival\": 0.5, \"prompt\": 20, \"output\": 3, \"runs\": [[7, 16], [8, 4]], \"priority\": 2}\n\
         {\"arrival\": 0.5, \"prompt\": 5, \"output\": 1, \"id\": \"r1\", \"tenant\": 1, \"priority\": -1.5}\n\
         {\"arrival\": 2, \"prompt\": 9, \"output\": 9}\n",
    )
    .unwrap();
    assert_eq!(w.fields, ["priority", "tenant"]);
    assert_eq!(runs(&w, 0), [(7, 16), (8, 4)]);
    assert!(w.sessions[1].runs.is_empty() && w.sessions[2].runs.is_empty());
    assert_eq!(w.field(0, "priority"), Some(2.0));
    assert_eq!(
        (w.field(1, "priority"), w.field(1, "tenant")),
        (Some(-1.5), Some(1.0))
    );
    assert_eq!((w.field(2, "priority"), w.field(0, "tenant")), (None, None));
    assert_eq!(w.sessions[1].name.as_deref(), Some("r1"));
    assert_eq!(w.prompt_tokens(), 34);
}

#[test]
fn our_jsonl_errors_name_the_line() {
    let ok = "{\"arrival\": 1, \"prompt\": 8, \"output\": 1, \"runs\": [[3, 8]]}\n";
    let cases = [
        (
            "{\"arrival\": 1, \"prompt\": 8,",
            "w.jsonl:2: bad JSON: EOF while parsing a value at line 1 column 27",
        ),
        (
            "{\"prompt\": 8, \"output\": 1}",
            "w.jsonl:2: missing field `arrival`",
        ),
        (
            "{\"arrival\": 1, \"output\": 1}",
            "w.jsonl:2: missing field `prompt`",
        ),
        (
            "{\"arrival\": 1, \"prompt\": -3, \"output\": 1}",
            "w.jsonl:2: `prompt` must be a whole number of at least 1, not -3",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1.5}",
            "w.jsonl:2: `output` must be a whole number of at least 1, not 1.5",
        ),
        (
            "{\"arrival\": 0.5, \"prompt\": 3, \"output\": 1}",
            "w.jsonl:2: arrival 0.5 s is earlier than the previous session's 1 s (sessions must come in arrival order)",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"runs\": [[1, 2]]}",
            "w.jsonl:2: the runs add up to 2 tokens, the prompt has 3",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"runs\": [[1, 0], [2, 3]]}",
            "w.jsonl:2: `runs len` must be a whole number of at least 1, not 0",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"runs\": [[1, 2, 3]]}",
            "w.jsonl:2: `runs` must be a list of [id, len] pairs; [1,2,3] is not one",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"runs\": 4}",
            "w.jsonl:2: `runs` must be a list of [id, len] pairs, not 4",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"tier\": \"gold\"}",
            "w.jsonl:2: field `tier` is \"gold\", not a number (extra fields become session attributes, which are numbers)",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"id\": 7}",
            "w.jsonl:2: `id` must be a string, not 7",
        ),
        (
            "{\"arrival\": 1, \"prompt\": 3, \"output\": 1, \"serial\": 7}",
            "w.jsonl:2: `serial` is built in (the session's place in arrival order) and cannot be given",
        ),
        // Run 3 names 8 units from the start on line 1; here it follows run 2.
        (
            "{\"arrival\": 1, \"prompt\": 12, \"output\": 1, \"runs\": [[2, 4], [3, 8]]}",
            "w.jsonl:2: run 3 is at unit 4 with length 8 after run 2 here, but at unit 0 with length 8 after nothing on line 1 (a run id names the same prefix everywhere)",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(err(ours(&format!("{ok}{line}\n"))), want, "for {line}");
    }
}

#[test]
fn r2_a_run_met_after_another_prefix_names_where_it_was_first_met() {
    // Run 3 first starts at unit 12 (after runs 1 and 2, 4 + 8 units); on line 3 it
    // follows run 5. The check keeps no start per run: the message's 12 is the
    // lengths along run 3's first chain, and line 2's identical chain passes.
    let first =
        "{\"arrival\": 1, \"prompt\": 20, \"output\": 1, \"runs\": [[1, 4], [2, 8], [3, 8]]}\n";
    let again =
        "{\"arrival\": 2, \"prompt\": 20, \"output\": 1, \"runs\": [[1, 4], [2, 8], [3, 8]]}\n";
    let other = "{\"arrival\": 3, \"prompt\": 12, \"output\": 1, \"runs\": [[5, 4], [3, 8]]}\n";
    assert_eq!(
        err(ours(&format!("{first}{again}{other}"))),
        "w.jsonl:3: run 3 is at unit 4 with length 8 after run 5 here, but at unit 12 with length 8 after run 2 on line 1 (a run id names the same prefix everywhere)"
    );
}

#[test]
fn azure_csv_arrivals_are_seconds_since_the_first_row_and_nothing_is_shared() {
    let w = az("TIMESTAMP,ContextTokens,GeneratedTokens\n\
                2023-11-16 18:17:03.9799600,4808,10\n\
                2023-11-16 18:17:04.0319600,3180,8\n\
                2023-11-16 18:18:03.9799600,3,6")
    .unwrap();
    let a: Vec<f64> = w.sessions.iter().map(|s| s.arrival).collect();
    assert_eq!(a, [0.0, 0.052, 60.0]);
    assert_eq!((w.sessions[0].prompt, w.sessions[0].output), (4808, 10));
    assert!(w.sessions.iter().all(|s| s.runs.is_empty()));
    assert_eq!(w.sessions[2].line, 4);
    // Columns in another order, with one more.
    let w =
        az("GeneratedTokens,Extra,TIMESTAMP,ContextTokens\n5,x,2023-01-01 00:00:00,9\n").unwrap();
    assert_eq!((w.sessions[0].prompt, w.sessions[0].output), (9, 5));
}

#[test]
fn azure_errors_name_the_line() {
    let head = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10,2\n";
    let cases = [
        (
            "2023-11-16 18:17:04,10",
            "a.csv:3: the row has 2 fields, the header has 3",
        ),
        (
            "2023-11-16 18:17:04,ten,2",
            "a.csv:3: ContextTokens `ten` is not a whole number of tokens",
        ),
        (
            "2023-11-16 18:17:04,10,-2",
            "a.csv:3: GeneratedTokens `-2` is not a whole number of tokens",
        ),
        (
            "2023-11-16 18:17:04,0,2",
            "a.csv:3: the prompt must have at least 1 token",
        ),
        (
            "16/11/2023 18:17:04,10,2",
            "a.csv:3: TIMESTAMP `16/11/2023 18:17:04` is not a datetime like `2023-11-16 18:17:03.9799600`",
        ),
        (
            "2023-11-16 18:17:03,10,2",
            "a.csv:3: arrival -0.97 s is earlier than the previous session's 0 s (sessions must come in arrival order)",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(err(az(&format!("{head}{line}\n"))), want, "for {line}");
    }
    assert_eq!(
        err(az("time,ContextTokens,GeneratedTokens\n")),
        "a.csv:1: the header has no `TIMESTAMP` column (it needs TIMESTAMP, ContextTokens, GeneratedTokens)"
    );
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let e = trace::read_path(Path::new("/nonexistent/trace.jsonl"), None).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/trace.jsonl: cannot open:"),
        "{e}"
    );
}

fn bundled(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/traces")
        .join(name)
}

#[test]
fn the_bundled_traces_parse_whole() {
    // Row counts, spans and token sums as the traces' README states them.
    let m = trace::read_path(&bundled("mooncake_conversation_trace.jsonl"), None).unwrap();
    assert_eq!(m.sessions.len(), 12_031);
    assert_eq!(m.sessions.last().map(|s| s.arrival), Some(3536.999));
    let blocks: usize = m.sessions.iter().map(|s| s.runs.len()).sum();
    assert_eq!(blocks, 288_500);
    let a = trace::read_path(&bundled("azure_llm_2023_code.csv"), None).unwrap();
    assert_eq!(a.sessions.len(), 8_819);
    let span = a.sessions.last().map(|s| s.arrival).unwrap_or(0.0);
    assert!((span - 3435.95).abs() < 0.01, "{span}");
    let c = trace::read_path(&bundled("azure_llm_2023_conv.csv"), None).unwrap();
    assert_eq!(c.sessions.len(), 19_366);
    let span = c.sessions.last().map(|s| s.arrival).unwrap_or(0.0);
    assert!((span - 3501.721937).abs() < 1e-6, "{span}");
    assert_eq!(
        Format::detect(Path::new("x.jsonl"), "{\"arrival\": 0}"),
        Format::Jsonl
    );
}

#[test]
fn synthetic_workloads_are_seeded_and_share_prefixes() {
    let a = trace::synthetic(200, 3);
    assert_eq!(a, trace::synthetic(200, 3));
    assert_eq!(a.sessions.len(), 200);
    // Some prompt blocks recur: the shared roots and the conversations' history.
    let mut seen = std::collections::BTreeSet::new();
    let mut repeated = 0;
    for s in &a.sessions {
        for r in &s.runs {
            if !seen.insert(r.id.0) {
                repeated += 1;
            }
        }
        assert_eq!(s.runs.iter().map(|r| r.len.0).sum::<u64>(), s.prompt);
    }
    assert!(repeated > 100, "{repeated} repeated runs");
}

#[test]
fn a_file_opened_for_streaming_counts_its_rows_for_the_progress_bar() {
    use poolrt::trace::SessionSource;
    for (name, rows) in [
        ("mooncake_conversation_trace.jsonl", 12_031),
        ("azure_llm_2023_code.csv", 8_819),
        ("azure_llm_2023_conv.csv", 19_366),
    ] {
        let mut r = trace::open_path(&bundled(name), None).unwrap();
        assert_eq!(r.len_hint(), Some(rows), "{name}");
        let mut n = 0u64;
        while r.next_session().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, rows, "{name}: the hint is the sessions read");
    }
    // Blank lines (and a last line without its newline) count as a reader reads them.
    let path = std::env::temp_dir().join(format!("poolc-rows-{}.jsonl", std::process::id()));
    std::fs::write(
        &path,
        "\n{\"arrival\": 0, \"prompt\": 5, \"output\": 1}\n  \n\r\n{\"arrival\": 1, \"prompt\": 5, \"output\": 1}",
    )
    .unwrap();
    let r = trace::open_path(&path, None).unwrap();
    assert_eq!(r.len_hint(), Some(2));
    assert_eq!(trace::read_path(&path, None).unwrap().sessions.len(), 2);
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_pipe_is_read_once_its_rows_are_not_counted() {
    use poolrt::trace::SessionSource;
    let fifo = std::env::temp_dir().join(format!("poolc-fifo-{}.jsonl", std::process::id()));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let lines: String = (0..50)
                .map(|i| format!("{{\"arrival\": {i}, \"prompt\": 5, \"output\": 1}}\n"))
                .collect();
            std::fs::write(&fifo, lines).unwrap();
        })
    };
    // The format given, so nothing reads the pipe before the reader does.
    let mut r = trace::open_path(&fifo, Some(Format::Jsonl)).unwrap();
    assert_eq!(
        r.len_hint(),
        None,
        "counting would take the rows from the replay"
    );
    let mut n = 0;
    while r.next_session().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 50);
    writer.join().unwrap();
    let _ = std::fs::remove_file(fifo);
}
