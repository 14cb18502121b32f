//! The committed corpus (fuzz/corpus/<target>/, kept minimised by libFuzzer's
//! `-merge=1`) replayed through its target: every input libFuzzer kept for its
//! coverage, and every input that once failed (named `regression-*`), still
//! passes. It also holds the corpus to its budget, so it stays small in the
//! repository.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::Path;

/// The corpus of all targets together stays under this many bytes.
const BUDGET: u64 = 512 * 1024;

#[test]
fn every_corpus_input_passes_its_target_and_the_corpus_stays_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut total = 0u64;
    for (name, target) in poolc_fuzz::TARGETS {
        let mut files: Vec<_> = std::fs::read_dir(root.join(name))
            .unwrap_or_else(|e| panic!("corpus/{name}: {e}"))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "corpus/{name} is empty");
        for file in files {
            let input = std::fs::read(&file).unwrap();
            total += input.len() as u64;
            if std::panic::catch_unwind(|| target(&input)).is_err() {
                panic!("{name} fails on {}", file.display());
            }
        }
    }
    assert!(total <= BUDGET, "the corpus holds {total} bytes");
}
