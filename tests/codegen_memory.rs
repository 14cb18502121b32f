//! Compiled code is freed with its owner: compiling and dropping every example spec
//! 1,000 times must not grow the resident set without bound. This test is alone in
//! its file so that no other test of the same process allocates meanwhile. It reads
//! `/proc/self/status`, so it checks only on Linux; it times nothing.

use poolc::ir::Program;
use poolc::{Options, check, codegen};

const ROUNDS: usize = 1_000;
/// Measured on this machine: about 110 KiB of growth when memory is freed, and
/// 32 MiB when it is not (a JIT module that is dropped without `free_memory` keeps
/// about two pages mapped). 8 MiB is generous to allocator noise yet catches that
/// leak; the 64 MiB suggested in the issue would not.
const BOUND_KIB: u64 = 8 * 1024;

fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
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
    let Some(before) = rss_kib() else {
        return; // not Linux: nothing to measure
    };
    for _ in 0..ROUNDS {
        for p in &programs {
            let compiled = codegen::compile_program(p).expect("example compiles");
            // Use the code so that the pages really were mapped and executable.
            for stage in compiled.stages() {
                let ctx = vec![1.0; stage.ctx_len()];
                assert!(stage.time(&ctx).is_finite());
            }
        }
    }
    let after = rss_kib().expect("VmRSS readable a second time");
    let growth = after.saturating_sub(before);
    assert!(
        growth < BOUND_KIB,
        "RSS grew by {growth} KiB over {ROUNDS} rounds of {} examples (from {before} to {after} KiB)",
        programs.len()
    );
}
