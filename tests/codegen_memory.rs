//! Compiled code is freed with its owner: compiling and dropping every example spec
//! 1,000 times must not grow the resident set without bound. This test is alone in
//! its file so that no other test of the same process allocates meanwhile. It reads
//! the resident set from `/proc/self/status` and fails, saying so, where that cannot
//! be read (not Linux, or no procfs mounted): a memory test that passes without
//! measuring would hide the leak it exists to catch. It times nothing.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::ir::Program;
use poolc::{Options, check, codegen};

const ROUNDS: usize = 1_000;
/// Measured on this machine: about 110 KiB of growth when memory is freed, and
/// 32 MiB when it is not (a JIT module that is dropped without `free_memory` keeps
/// about two pages mapped). 8 MiB is generous to allocator noise yet catches that
/// leak; the 64 MiB suggested in the issue would not.
const BOUND_KIB: u64 = 8 * 1024;

/// Where Linux reports this process's resident set (the `VmRSS:` line, in KiB).
const STATUS: &str = "/proc/self/status";

/// The resident set in KiB, or why it cannot be measured here.
fn rss_kib() -> Result<u64, String> {
    let status = std::fs::read_to_string(STATUS).map_err(|e| {
        format!(
            "cannot measure the resident set: {STATUS} is unreadable ({e}); this test \
             needs Linux with procfs mounted"
        )
    })?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or_else(|| format!("cannot measure the resident set: no VmRSS line in {STATUS}"))?;
    line.split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .ok_or_else(|| format!("cannot measure the resident set: {STATUS} has {line:?}"))
}

fn example_programs() -> Vec<Program> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pool"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no examples/*.pool found");
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("example readable");
            check(&text, &Options::default())
                .unwrap_or_else(|d| panic!("{} does not check: {d:#?}", p.display()))
        })
        .collect()
}

#[test]
fn repeated_compile_and_drop_of_every_example_does_not_grow_memory() {
    let programs = example_programs();
    // Warm up allocator pools and lazily initialised state before measuring.
    for p in &programs {
        drop(codegen::compile_program(p).expect("example compiles"));
    }
    let before = rss_kib().unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..ROUNDS {
        for p in &programs {
            let compiled = codegen::compile_program(p).expect("example compiles");
            // Use the code so that the pages really were mapped and executable.
            for stage in compiled.stages() {
                let ctx = vec![1.0; stage.shape().ctx];
                let rows = vec![1.0; stage.shape().row];
                assert!(stage.time(&ctx, &rows, 1).is_finite());
            }
        }
    }
    let after = rss_kib().unwrap_or_else(|e| panic!("{e}"));
    let growth = after.saturating_sub(before);
    assert!(
        growth < BOUND_KIB,
        "RSS grew by {growth} KiB over {ROUNDS} rounds of {} examples (from {before} to {after} KiB)",
        programs.len()
    );
}
