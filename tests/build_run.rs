//! The reference host driven by a shared object instead of the JIT (what
//! `poolc run --policy lib.so` does): for every example spec, the policies that
//! `poolc::aot::load::load` returns and the JIT's, bridged with the same
//! `poolc::bridge::host_config`, give a byte-identical report and event log on a
//! synthetic workload.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use build_support::{TempDir, build_so, example_program, examples};
use poolc::Compiled;
use poolrt::host::{Host, RunOptions};
use poolrt::trace;

/// The report text and the log of one run of `compiled` on `workload`.
fn run(compiled: &Compiled, workload: &trace::Workload) -> (String, Vec<u8>) {
    let config =
        poolc::bridge::host_config(compiled.program(), compiled.pools(), compiled.stages())
            .expect("the example bridges to a host configuration");
    let host = Host::new(config, workload).expect("the host accepts it");
    let mut log = Vec::new();
    let report = host
        .run(RunOptions {
            log: Some(&mut log),
            ..RunOptions::default()
        })
        .expect("the run completes");
    (report.to_text(), log)
}

#[test]
fn host_reports_and_logs_are_identical_with_the_library_and_the_jit() {
    let dir = TempDir::new("run");
    let workload = trace::synthetic(400, 7);
    for (i, (path, text)) in examples().into_iter().enumerate() {
        let program = example_program(&path, &text);
        let lib = build_so(&program, &dir, &format!("lib{i}.so"));
        // SAFETY: a library poolc just built from `program`.
        let so = unsafe { poolc::aot::load::load(&lib, &program) }
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let jit = poolc::compile(&text, &poolc::Options::default()).expect("compiles");
        let (so_report, so_log) = run(&so, &workload);
        let (jit_report, jit_log) = run(&jit, &workload);
        assert!(
            !jit_log.is_empty(),
            "{}: the run logged events",
            path.display()
        );
        assert_eq!(so_report, jit_report, "{}: reports", path.display());
        assert!(so_log == jit_log, "{}: logs differ", path.display());
    }
}
