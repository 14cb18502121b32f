//! Repository hygiene that a reviewer would otherwise check by eye: every Rust file
//! opens with a `//!` paragraph saying what it owns; no test is skipped or written to
//! expect a panic (the two attributes for that are banned by STYLE.md); no file is
//! over 800 lines unless its `//!` says why; and the Architecture Invariants of
//! docs/ARCHITECTURE.md that the tree can show: pipeline modules never import the
//! tools, and the runtime never depends on the compiler.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "runtime/src",
        "runtime/tests",
        "tests",
        "benches",
        "examples",
        "python/src",
        "fuzz/src",
        "fuzz/tests",
        "fuzz/libfuzzer/fuzz_targets",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 10,
        "found only {} Rust files; is the walk broken?",
        files.len()
    );
    files
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let missing: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` paragraph: {missing:#?}"
    );
}

#[test]
fn no_test_is_ignored_or_expects_a_panic() {
    let needles = [concat!("#[", "ignore"), concat!("#[", "should_panic")];
    let offenders: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            needles.iter().any(|n| text.contains(n))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "ignored or should_panic tests in: {offenders:#?}"
    );
}

/// The leading `//!` paragraph of a file, joined.
fn module_doc(text: &str) -> String {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lines that are code, not comments (a `use` or path inside a doc comment does not
/// count as an import).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// Architecture Invariant: the pipeline (syntax, sema, ir, interp, codegen, aot,
/// bridge, diag) never imports the tools that use it (`src/tools`); the tools sit on
/// top. A tool can change without touching the compiler.
#[test]
fn pipeline_modules_never_import_tool_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["syntax", "sema", "ir", "codegen", "aot"] {
        rust_files(&root.join(dir), &mut files);
    }
    for file in ["interp.rs", "bridge.rs", "diag.rs"] {
        files.push(root.join(file));
    }
    assert!(
        files.len() > 15,
        "the pipeline walk found {} files",
        files.len()
    );
    let offenders: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("pipeline file reads");
            code_lines(&text).any(|l| l.contains("crate::tools") || l.contains("poolc::tools"))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "pipeline modules that import src/tools: {offenders:#?}"
    );
}

/// Architecture Invariant: the runtime (`poolrt`) never depends on the compiler —
/// not in its manifest, not in its code, not in its tests.
#[test]
fn poolrt_never_depends_on_poolc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("runtime manifest");
    let deps: Vec<&str> = manifest
        .lines()
        .skip_while(|l| !l.contains("dependencies]"))
        .filter(|l| l.trim_start().starts_with("poolc"))
        .collect();
    assert!(
        deps.is_empty(),
        "runtime/Cargo.toml depends on poolc: {deps:?}"
    );
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    rust_files(&root.join("benches"), &mut files);
    assert!(
        files.len() > 10,
        "the runtime walk found {} files",
        files.len()
    );
    let offenders: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("runtime file reads");
            code_lines(&text).any(|l| l.contains("poolc::"))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "runtime files naming poolc: {offenders:#?}"
    );
}

/// A file over this many lines does several jobs, unless its `//!` says why it is
/// one job (the phrase "This file is long because").
const LONG_FILE: usize = 800;

#[test]
fn no_source_file_is_long_without_saying_why() {
    let offenders: Vec<String> = all_rust_files()
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let n = text.lines().count();
            (n > LONG_FILE && !module_doc(&text).contains("This file is long because"))
                .then(|| format!("{} ({n} lines)", p.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "files over {LONG_FILE} lines whose `//!` does not say why: {offenders:#?}"
    );
}

/// The library files of both crates: src/ without the binary (main.rs and the `cli`
/// module), and runtime/src.
fn library_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("runtime/src"), &mut files);
    let bin = [root.join("src/main.rs"), root.join("src/cli.rs")];
    let cli = root.join("src/cli");
    files.retain(|p| !bin.contains(p) && !p.starts_with(&cli));
    assert!(
        files.len() > 40,
        "the library walk found {} files",
        files.len()
    );
    files
}

/// Files among `files` with a code line that contains any of `needles`.
fn naming(files: &[PathBuf], needles: &[&str]) -> Vec<String> {
    files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("source file reads");
            code_lines(&text).any(|l| needles.iter().any(|n| l.contains(n)))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// Architecture Invariant: only the binary (main.rs and the `cli` module) prints or
/// exits; the libraries return values and errors.
#[test]
fn only_the_cli_prints_or_exits() {
    let offenders = naming(
        &library_files(),
        &[
            "print!(",
            "println!(",
            "eprint!(",
            "eprintln!(",
            "process::exit(",
        ],
    );
    assert!(
        offenders.is_empty(),
        "library files that print or exit: {offenders:#?}"
    );
}

/// Architecture Invariant: the vLLM oracle's files are read in one place,
/// `poolrt::oracle`; nothing else in the libraries names them.
#[test]
fn the_oracle_format_lives_in_poolrt_oracle() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src/oracle");
    let mut files = library_files();
    let all = files.len();
    files.retain(|p| !p.starts_with(&oracle));
    assert!(all - files.len() >= 4, "the oracle module was not found");
    let offenders = naming(&files, &["steps.jsonl", "workload.jsonl", "config.json"]);
    assert!(
        offenders.is_empty(),
        "library files outside poolrt::oracle that name the oracle's files: {offenders:#?}"
    );
}

/// Architecture Invariant: the front end and the interpreter (syntax, sema, ir,
/// interp) never name the runtime; only `bridge`, `codegen` and `aot` know it.
#[test]
fn the_front_end_never_names_the_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["syntax", "sema", "ir"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.push(root.join("interp.rs"));
    assert!(
        files.len() > 10,
        "the front-end walk found {} files",
        files.len()
    );
    let offenders = naming(&files, &["poolrt"]);
    assert!(
        offenders.is_empty(),
        "front-end files naming poolrt: {offenders:#?}"
    );
}
