//! Repository hygiene that a reviewer would otherwise check by eye: every Rust file
//! opens with a `//!` paragraph saying what it owns, and no test is skipped or
//! written to expect a panic (the two attributes for that are banned by STYLE.md).

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
