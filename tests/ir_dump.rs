//! Snapshot of `poolc ir` for every example spec, fleets included (insta): the folded values, slot
//! layouts, read-sets and joins a reviewer checked by hand when the snapshot was
//! accepted. A change to lowering shows up here as a reviewable diff.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::Path;

#[test]
fn ir_dump_of_every_example() {
    // examples/, the fleets of examples/fleet/ (snapshots `fleet_<name>`) and the
    // disaggregated fleets of examples/disagg/ (`disagg_<name>`) and the deployments
    // of examples/deployments/ (`deployments_<name>`).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut specs: Vec<_> = [
        "examples",
        "examples/fleet",
        "examples/disagg",
        "examples/deployments",
    ]
    .into_iter()
    .flat_map(|d| std::fs::read_dir(root.join(d)).expect("examples/ exists"))
    .filter_map(|e| e.ok().map(|e| e.path()))
    .filter(|p| p.extension().is_some_and(|x| x == "pool"))
    .collect();
    specs.sort();
    assert!(specs.len() >= 4, "expected the four bundled examples");
    for spec in specs {
        let source = std::fs::read_to_string(&spec).expect("readable example");
        let program = poolc::check(&source, &poolc::Options::default())
            .unwrap_or_else(|d| panic!("{} does not check: {d:#?}", spec.display()));
        let stem = spec.file_stem().and_then(|s| s.to_str()).unwrap_or("spec");
        let name = match spec.parent().and_then(|d| d.file_name()?.to_str()) {
            Some(dir @ ("fleet" | "disagg" | "deployments")) => format!("{dir}_{stem}"),
            _ => stem.to_string(),
        };
        insta::assert_snapshot!(name, poolc::ir::dump(&program));
    }
}
