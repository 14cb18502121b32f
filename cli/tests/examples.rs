//! The bundled example specs and the `poolc check` command line: every
//! `examples/*.pool` and `examples/policies/*.pool` checks clean (exit 0, nothing on
//! stderr, or only its expected warning), a `--set` of a declared
//! `param` is accepted, and the two ways of not giving `check` a readable file fail
//! with the documented exit codes (2: usage error; 1: unreadable file, named in the
//! message). It runs the built binary; it does not look inside the IR.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// The specs the README and docs point people to; each must exist and check clean.
const BUNDLED: [&str; 4] = ["vllm", "ascend", "tiered", "replicas"];

/// Runs the built `poolc` with `args` from the crate root, without colours.
fn poolc(args: &[&str]) -> Output {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run poolc {args:?}: {e}"))
}

/// A readable account of one run, for assert messages.
fn describe(args: &[&str], output: &Output) -> String {
    format!(
        "`poolc {}` exited with {:?}\n--- stdout\n{}--- stderr\n{}---",
        args.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

/// `examples/*.pool` and `examples/policies/*.pool` (one deployment, one policy each:
/// docs/POLICIES.md), as paths relative to the crate root, sorted.
fn example_specs() -> Vec<String> {
    let mut specs = specs_in("examples");
    specs.extend(specs_in("examples/policies"));
    specs.sort();
    specs
}

/// The `*.pool` files directly in `folder` (relative to the crate root).
fn specs_in(folder: &str) -> Vec<String> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(folder);
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    entries
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path()
        })
        .filter(|path| path.extension().is_some_and(|ext| ext == "pool"))
        .filter_map(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .map(|n| format!("{folder}/{n}"))
        })
        .collect()
}

#[test]
fn bundled_examples_exist() {
    let specs = example_specs();
    for name in BUNDLED {
        let path = format!("examples/{name}.pool");
        assert!(
            specs.contains(&path),
            "{path} is missing; examples/ holds {specs:?}"
        );
    }
}

/// The examples whose queues starve by design, or whose aging R28 cannot see, with the
/// warning `poolc check` gives them (R28 is conservative: docs/LANGUAGE.md says why each
/// is the expected warning, docs/POLICIES.md what each policy is).
const EXPECTED_WARNINGS: [(&str, &str); 11] = [
    ("examples/ascend.pool", "R28"),
    ("examples/replicas.pool", "R28"),
    ("examples/vllm_priority.pool", "R28"),
    // Strict lanes and priorities: a newcomer of a better lane or tier goes first.
    ("examples/policies/ascend_lanes.pool", "R28"),
    ("examples/policies/priority.pool", "R28"),
    ("examples/policies/priority_readmit.pool", "R28"),
    ("examples/policies/sla_tiers.pool", "R28"),
    // SGLang's longest prefix first starves a cold prompt while warm ones keep coming.
    ("examples/policies/lpm.pool", "R28"),
    // They age, but inside a comparison, `max` or a product R28 does not look through:
    // a hold that waited `max_wait` is served FCFS; every `promote` s it moves up a lane
    // until lane 0, FCFS; its score grows with the time since its arrival.
    ("examples/policies/residual_sjf.pool", "R28"),
    ("examples/policies/mlfq_lanes.pool", "R28"),
    ("examples/policies/ewsjf.pool", "R28"),
];

#[test]
fn every_example_checks_clean_or_with_its_expected_warning() {
    let mut failures = Vec::new();
    for spec in example_specs() {
        let args = ["check", spec.as_str()];
        let output = poolc(&args);
        let err = String::from_utf8_lossy(&output.stderr);
        let expected = EXPECTED_WARNINGS.iter().find(|(s, _)| *s == spec);
        let as_expected = match expected {
            None => err.is_empty(),
            Some((_, code)) => {
                err.contains(&format!("warning[{code}]")) && err.contains("1 warning in")
            }
        };
        if output.status.code() != Some(0) || !as_expected {
            failures.push(describe(&args, &output));
        }
    }
    assert!(
        failures.is_empty(),
        "examples that do not check clean (or with their expected warning):\n\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn d2_set_of_a_declared_param_is_accepted() {
    let args = [
        "check",
        "examples/vllm.pool",
        "--set",
        "num_gpu_blocks=8191",
    ];
    let output = poolc(&args);
    assert!(
        output.status.code() == Some(0) && output.stderr.is_empty(),
        "a --set of a declared param should check clean:\n{}",
        describe(&args, &output)
    );
}

#[test]
fn check_without_a_file_is_a_usage_error() {
    let args = ["check"];
    let output = poolc(&args);
    assert_eq!(
        output.status.code(),
        Some(2),
        "expected exit 2 (usage error):\n{}",
        describe(&args, &output)
    );
    assert!(
        !output.stderr.is_empty(),
        "a usage error must say what is wrong:\n{}",
        describe(&args, &output)
    );
    assert!(
        output.stdout.is_empty(),
        "a usage error belongs on stderr:\n{}",
        describe(&args, &output)
    );
}

#[test]
fn check_of_a_missing_file_names_it() {
    let missing = "tests/no-such-spec.pool";
    assert!(
        !Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join(missing)
            .exists(),
        "{missing} must not exist"
    );
    let args = ["check", missing];
    let output = poolc(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected exit 1 (unreadable file):\n{}",
        describe(&args, &output)
    );
    assert!(
        stderr.contains(&format!("cannot read {missing}: ")),
        "stderr should contain `cannot read {missing}: …`:\n{}",
        describe(&args, &output)
    );
    assert!(
        output.stdout.is_empty(),
        "the error belongs on stderr:\n{}",
        describe(&args, &output)
    );
}
