//! Snapshot of `poolc ir` for every example spec, fleets included (insta): the folded values, slot
//! layouts, read-sets and joins a reviewer checked by hand when the snapshot was
//! accepted. A change to lowering shows up here as a reviewable diff.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

#[test]
fn ir_dump_of_every_example() {
    let specs = build_support::example_paths();
    assert!(specs.len() >= 4, "expected the four bundled examples");
    for spec in specs {
        let source = std::fs::read_to_string(&spec).expect("readable example");
        let program = poolc::check(&source, &poolc::Options::default())
            .unwrap_or_else(|d| panic!("{} does not check: {d:#?}", spec.display()));
        let name = build_support::snapshot_name(&spec);
        insta::assert_snapshot!(name, poolc::ir::dump(&program));
    }
}
