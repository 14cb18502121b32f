//! Snapshot of `poolc clif` for every example spec, fleets included (insta): the Cranelift IR each pool
//! and stage function is built as, before the mid-end, in the order `poolc clif`
//! prints it. A change to lowering shows up here as a reviewable diff. This file owns
//! only the snapshots; what the code computes is tested against the interpreter in
//! codegen.rs and codegen_examples.rs.
//!
//! The text is the one `poolc::codegen::clif` builds for the host (it takes no
//! target), and the host shows in it only through the pointer type and the default
//! calling convention in every signature: instruction selection, legalization and
//! ISA features come later, and the mid-end (`poolc clif --opt`) is not snapshotted.
//! The snapshots hold `i64` and `system_v`, which every 64-bit host but Windows and
//! Apple's aarch64 gives (Linux on x86-64 and aarch64 alike); on another host the
//! test fails saying so rather than with a diff of every signature.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use poolc::codegen::ClifForm;

/// Fails, saying why, unless every signature in `clif` starts with an `i64` pointer
/// and ends in `system_v`, as on the hosts the snapshots were taken on.
fn assert_snapshot_host(clif: &str) {
    for line in clif.lines().filter(|l| l.starts_with("function ")) {
        assert!(
            line.contains("(i64") && line.ends_with(" system_v {"),
            "the CLIF snapshots name i64 pointers and the system_v calling convention, \
             which this host's Cranelift ISA does not use ({line}); compare by hand"
        );
    }
}

#[test]
fn clif_of_every_example() {
    let specs = build_support::example_paths();
    assert!(specs.len() >= 4, "expected the four bundled examples");
    for spec in specs {
        let source = std::fs::read_to_string(&spec).expect("readable example");
        let program = poolc::check(&source, &poolc::Options::default())
            .unwrap_or_else(|d| panic!("{} does not check: {d:#?}", spec.display()));
        let clif = poolc::codegen::clif(&program, None, ClifForm::Built)
            .unwrap_or_else(|e| panic!("{}: no CLIF: {e}", spec.display()));
        let name = build_support::snapshot_name(&spec);
        assert_snapshot_host(&clif);
        insta::assert_snapshot!(name, clif);
    }
}
