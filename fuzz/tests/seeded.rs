//! The seeded, bounded drivers of the fuzz targets (docs/RELIABILITY.md,
//! "Fuzzing"), part of `cargo test`: each runs its target — the same function
//! libFuzzer runs — on inputs made by a seeded SplitMix64, so a failure repeats and
//! prints the input that failed. (a) and (c) mutate the seeds (examples/ and
//! tests/ui/ specs; the first lines of the bundled traces) with grammar-aware text
//! mutations; (b), (d) and (e) read random bytes as their structure. Each also
//! checks that its target is not vacuous. `POOLC_FUZZ_CASES` raises the number of
//! cases per target for a longer run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use poolc_fuzz::{engine, jit_interp, library, spec, traces};
use poolrt::trace::synthetic::SplitMix64;

/// Cases per target: the default, or `POOLC_FUZZ_CASES`.
fn cases(default: u64) -> u64 {
    std::env::var("POOLC_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The runtime's SplitMix64 (the synthetic workload's generator), with the draws the
/// mutator needs.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Words that make mutations land in interesting places of the grammar.
const SPEC_WORDS: &[&str] = &[
    "pool",
    "stage",
    "session",
    "const",
    "param",
    "cap",
    "block",
    "queue",
    "by",
    "evict",
    "preempt",
    "requeue",
    "keyed",
    "lifo",
    "none",
    "fifo",
    "lru",
    "admit",
    "via",
    "spill",
    "when",
    "work",
    "step",
    "link",
    "budget",
    "seats",
    "chunk",
    "time",
    "rate",
    "serve",
    "exclusive",
    "prefill",
    "inf",
    "draw",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    "?",
    ":",
    "-",
    "+",
    "*",
    "/",
    "%",
    "<",
    ">=",
    "==",
    "!",
    "&&",
    "||",
    "0",
    "1",
    "-1",
    "1e308",
    "65536",
    "0.5",
    "NaN",
    "min",
    "max",
    "abs",
    "free",
    "used",
    "cached",
    "queued",
    "now",
    "waited",
    "age",
    "size",
    "last",
    "units",
    "computed",
    "admitted",
    "serial",
    "prompt",
    "kv",
    "engine",
    "kv[1]",
    "kv[0]",
];

/// One mutation of `text`: delete, duplicate or move a span, or insert a word or a
/// character, at byte offsets on char boundaries.
fn mutate(text: &str, rng: &mut Rng, words: &[&str]) -> String {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let at = |rng: &mut Rng| bounds[rng.below(bounds.len())];
    let (mut a, mut b) = (at(rng), at(rng));
    if a > b {
        std::mem::swap(&mut a, &mut b);
    }
    // Spans of at most 40 bytes, so most mutants stay close to a valid spec: the
    // last char boundary at or before a + 40 (`a` itself is one).
    if b - a > 40 {
        b = bounds[bounds.partition_point(|&x| x <= a + 40) - 1];
    }
    let c = at(rng);
    match rng.below(5) {
        0 => format!("{}{}", &text[..a], &text[b..]),
        1 => format!("{}{}{}", &text[..b], &text[a..b], &text[b..]),
        2 => format!("{}{}{}", &text[..c], &text[a..b], &text[c..]),
        3 => format!(
            "{} {} {}",
            &text[..c],
            words[rng.below(words.len())],
            &text[c..]
        ),
        _ => {
            let set = b" \n;{}()[]-+*/%<>=!?:,.0123456789e_\"#@x";
            let ch = char::from(set[rng.below(set.len())]);
            format!("{}{ch}{}", &text[..c], &text[c..])
        }
    }
}

fn read_dir_texts(dir: &Path, ext: &str) -> Vec<String> {
    let mut out: Vec<(std::path::PathBuf, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, t)| t).collect()
}

#[test]
fn fuzz_mutated_specs_never_panic_and_every_checked_spec_compiles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut corpus = read_dir_texts(&root.join("examples"), "pool");
    corpus.extend(read_dir_texts(&root.join("tests/ui"), "pool"));
    let mut rng = Rng(SplitMix64::new(0x19));
    let (mut checked, n) = (0u64, cases(4000));
    for case in 0..n {
        let seed = &corpus[rng.below(corpus.len())];
        let mut text = mutate(seed, &mut rng, SPEC_WORDS);
        for _ in 0..rng.below(3) {
            text = mutate(&text, &mut rng, SPEC_WORDS);
        }
        let outcome = catch_unwind(|| spec::run(text.as_bytes()));
        match outcome {
            Ok(verdict) => checked += u64::from(verdict == spec::Verdict::Compiled),
            Err(_) => panic!("case {case} failed on this spec:\n{text}"),
        }
    }
    // Not vacuous: a fair share of mutants still check and reach the JIT.
    assert!(checked * 20 >= n, "only {checked} of {n} mutants checked");
}

/// Mutations of one line: a JSON- or CSV-shaped change, or a byte-level one.
const TRACE_WORDS: &[&str] = &[
    "null",
    "true",
    "-1",
    "0",
    "1e400",
    "1.5",
    "18446744073709551616",
    "9007199254740993",
    "\"x\"",
    "[]",
    "{}",
    "[[1,2]]",
    "[[0, 1e3]]",
    ",",
    ":",
    "\"",
    "\"prompt\"",
    "\"runs\"",
    "\"output\"",
    "\"arrival\"",
    "\"hash_ids\"",
    "\"input_length\"",
    "NaN",
    "\u{0}",
    "\u{feff}",
    "2023-13-40 25:61:61.0",
    "9999-12-31 23:59:59.9999999",
];

fn mutate_trace(text: &str, rng: &mut Rng) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let k = rng.below(lines.len());
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[k] = mutate(lines[k], rng, TRACE_WORDS);
    if rng.below(4) == 0 {
        let j = rng.below(out.len());
        out.swap(k, j);
    }
    out.join("\n") + "\n"
}

#[test]
fn fuzz_each_trace_reader_on_mutated_lines_errs_at_a_line_and_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/traces");
    let first_lines = |name: &str, n: usize| {
        let text = std::fs::read_to_string(root.join(name)).unwrap();
        text.lines().take(n).collect::<Vec<_>>().join("\n") + "\n"
    };
    let mooncake = first_lines("mooncake_conversation_trace.jsonl", 12);
    let azure = first_lines("azure_llm_2023_code.csv", 12);
    let ours = "{\"arrival\": 0, \"prompt\": 8, \"output\": 2, \"runs\": [[1, 4], [2, 4]], \"id\": \"a\"}\n\
                {\"arrival\": 0.5, \"prompt\": 6, \"output\": 1, \"runs\": [[1, 4], [3, 2]], \"priority\": 1}\n\
                {\"arrival\": 1, \"prompt\": 3, \"output\": 5}\n"
        .to_string();
    let seeds: [&str; 3] = [&mooncake, &azure, &ours];
    let mut rng = Rng(SplitMix64::new(0x1919));
    let n = cases(5000);
    for (which, seed) in seeds.into_iter().enumerate() {
        let name = traces::READERS[which].0;
        let mut errors = 0u64;
        for case in 0..n {
            let text = mutate_trace(seed, &mut rng);
            let input = traces::input(which as u8, text.as_bytes());
            match catch_unwind(|| traces::run(&input)) {
                Err(_) => panic!("{name} case {case} failed on:\n{text}"),
                Ok(accepted) => errors += u64::from(!accepted),
            }
        }
        assert!(
            errors * 10 >= n,
            "{name}: only {errors} of {n} mutants were refused"
        );
    }
}

/// `n` random inputs of 0 to `max` bytes for a target that reads its structure
/// from bytes; a failure prints the failing input in hex.
fn random_inputs<T>(seed: u64, n: u64, max: usize, mut target: impl FnMut(&[u8]) -> T) -> Vec<T> {
    let mut rng = Rng(SplitMix64::new(seed));
    (0..n)
        .map(|case| {
            let len = rng.below(max + 1);
            let input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            match catch_unwind(AssertUnwindSafe(|| target(&input))) {
                Ok(t) => t,
                Err(_) => {
                    let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
                    panic!("case {case} failed on the input {hex}")
                }
            }
        })
        .collect()
}

#[test]
fn fuzz_whole_specs_jit_equals_interpreter_bit_for_bit() {
    let texts = random_inputs(0x1902, cases(300), 600, jit_interp::run);
    // Not vacuous: the generator reaches every structure.
    for needle in [
        "[2]",
        "queue by",
        "evict by",
        "preempt by",
        "requeue keyed",
        "spill host",
    ] {
        let hits = texts.iter().filter(|t| t.contains(needle)).count();
        assert!(hits * 20 >= texts.len(), "`{needle}` in only {hits} specs");
    }
}

#[test]
fn fuzz_mutated_libraries_are_refused_unless_their_manifest_matches() {
    let verdicts = random_inputs(0x1904, cases(400), 24, library::run);
    // Not vacuous: mutants are refused from their bytes, and some are harmless
    // enough (a changed `generator`, a section field nobody reads) to load.
    let count = |v: library::Verdict| verdicts.iter().filter(|&&x| x == v).count();
    assert!(
        count(library::Verdict::RefusedBeforeLoading) * 2 >= verdicts.len(),
        "{verdicts:?}"
    );
    assert!(count(library::Verdict::Loaded) > 0, "no mutant loaded");
}

#[test]
fn fuzz_engine_misuse_is_always_an_error_and_r1_always_holds() {
    let n = cases(3000);
    let tallies = random_inputs(0x1913, n, 400, engine::run);
    let oks: u64 = tallies.iter().map(|t| t.oks).sum();
    let errors: u64 = tallies.iter().map(|t| t.errors).sum();
    // Not vacuous: both the happy path and misuse are exercised.
    assert!(oks > n * 10 && errors > n * 10, "{oks} ok, {errors} errors");
}
