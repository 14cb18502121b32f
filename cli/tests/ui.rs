//! UI snapshot tests: every `tests/ui/NAME.pool` is a minimal spec that breaks one rule,
//! and `tests/ui/NAME.snap` (insta) holds what `poolc check` must print for it. This
//! file owns the harness only (run the binary, check its exit code and streams, hand
//! stderr to insta); the fixtures and snapshots live in `tests/ui/`, and each case is
//! a test of its own, so one failing case does not hide the others.
//!
//! A case runs as `poolc check tests/ui/NAME.pool [ARGS…]` from the crate root, so the
//! rendered file name is that relative path. `ARGS` come from an optional sibling
//! `NAME.args`, split on whitespace (no quoting), e.g. `--set nosuch=3`. Every case must
//! exit 1 with an empty stdout and a stderr with no leading blank and exactly one
//! final newline (insta ignores trailing whitespace, so the harness checks it).
//!
//! A missing or different snapshot fails the test: by default (`INSTA_UPDATE=auto`)
//! insta writes the new text beside it as `NAME.snap.new` and fails, and with `CI` set
//! it writes nothing and fails. Review with `cargo insta review`, or accept with
//! `INSTA_UPDATE=always` and read the diff before committing it. A new case is a
//! `.pool` file plus one name in the `ui_cases!` list below; the list is checked
//! against the directory, so a fixture cannot be forgotten.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// Where the fixtures live, relative to the repository root.
const UI_DIR: &str = "tests/ui";

/// Where insta keeps the snapshots, relative to this file's directory: beside the
/// fixtures, so a case's `.pool`, `.args` and `.snap` are read together.
const SNAPSHOT_DIR: &str = "../../tests/ui";

/// The exit code of `poolc check` when it reports diagnostics.
const EXIT_DIAGNOSTICS: i32 = 1;

/// One `#[test]` per case, named after its fixture, and [`CASES`] listing them all.
macro_rules! ui_cases {
    ($($name:ident),* $(,)?) => {
        /// Every case, in the order of the list (which must be sorted).
        const CASES: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                check_case(stringify!($name));
            }
        )*
    };
}

ui_cases! {
    d1_constant_cycle,
    d2_set_names_const,
    d2_unknown_param,
    d3_attribute_named_like_context_variable,
    d3_attribute_named_like_function,
    d3_redeclared_builtin_attribute,
    d3_two_session_blocks,
    d4_budget_in_link_stage,
    d4_rate_in_step_stage,
    d5_repeated_option,
    d5_repeated_preempt,
    d5_repeated_route,
    d6_array_size_zero,
    d6_block_zero,
    d6_budget_negative,
    d6_cap_fraction,
    d6_fair_negative_price,
    d6_rate_zero,
    d6_route_every_negative,
    d6_route_remember_zero,
    d7_attribute_named_like_pool,
    d7_duplicate_name,
    e4_hit_two_arguments,
    e4_min_one_argument,
    e4_sqrt_two_arguments,
    e4_unknown_function,
    e5_id_as_a_number,
    e5_id_without_keys,
    e6_hit_of_another_pool,
    e6_index_out_of_range,
    e6_member_outside_query,
    e6_min_of_one_member,
    e6_query_on_wrong_kind,
    k1_count_mismatch,
    k1_handoff_link_count,
    k1_query_count_mismatch,
    k2_admit_via_link_stage,
    k2_handoff_via_step,
    k2_spill_cycle,
    k2_spill_tier_is_stage,
    k2_spill_to_itself,
    k2_spill_via_step_stage,
    k3_lifo_without_admit,
    k3_preempt_by_without_admit,
    l3_malformed_number,
    l3_stray_character,
    l3_unterminated_comment,
    name_pool_used_as_value,
    name_unknown_did_you_mean,
    name_unknown_stage,
    parse_fair_one_price,
    parse_handoff_without_via,
    parse_missing_semicolon,
    parse_requeue_without_keyed,
    parse_route_without_by,
    parse_two_broken_declarations,
    parse_unknown_pool_option,
    r22_route_not_entry,
    r22_route_one_member,
    r22_route_other_entry,
    r25_handoff_chain,
    r25_handoff_into_self,
    r25_handoff_not_entry,
    r25_handoff_same_stage,
    r25_handoff_target_not_admitted,
    r25_handoff_target_routes_by_hit,
    r25_handoff_target_spills,
    r29_sum_arity,
    r29_sum_nested,
    r29_sum_outside_time,
    r29_sum_reads_residents,
    r29_take_value_outside_sum,
    r30_fair_by_a_pool,
    r30_fair_not_admitted,
    r30_fair_weight_unknown,
    r30_service_without_fair,
    r31_preempt_reads_hits,
    r31_queue_reads_hits,
    s1_cap_draws,
    s1_cap_reads_attribute,
    s1_evict_draws,
    s1_evict_reads_query,
    s1_evict_reads_service,
    s1_evict_reads_waited,
    s1_handoff_reads_now,
    s1_preempt_draws,
    s1_preempt_reads_waited,
    s1_queue_draws,
    s1_queue_reads_hit,
    s1_queue_reads_size,
    s1_route_draws,
    s1_route_reads_waited,
    s1_spill_when_draws,
    s1_spill_when_reads_computed,
    s1_spill_work_reads_now,
    s1_time_draws,
    s1_time_reads_attribute,
}

/// The list above is the directory: every `.pool` has a test, every test a `.pool`,
/// and nothing else lies in `tests/ui` but a case's `.args` and `.snap` (a `.snap`
/// or `.args` left behind by a rename would otherwise go unnoticed, since insta
/// never reports a snapshot no test reads).
#[test]
fn every_fixture_is_a_listed_case_and_nothing_else_is_there() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(UI_DIR);
    let mut sorted = CASES.to_vec();
    sorted.sort_unstable();
    assert_eq!(CASES, sorted, "keep the ui_cases! list sorted");

    let listed: BTreeSet<&str> = CASES.iter().copied().collect();
    let mut pools = BTreeSet::new();
    let mut strays = Vec::new();
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let file = entry.file_name().to_string_lossy().into_owned();
        // A pending `NAME.snap.new` is insta's report of a failing case, not a stray.
        if file.ends_with(".snap.new") {
            continue;
        }
        match file.rsplit_once('.') {
            Some((stem, "pool")) => {
                pools.insert(stem.to_owned());
            }
            Some((stem, "args" | "snap")) if listed.contains(stem) => {}
            _ => strays.push(file),
        }
    }
    let pools: BTreeSet<&str> = pools.iter().map(String::as_str).collect();
    let unlisted: Vec<&&str> = pools.difference(&listed).collect();
    let missing: Vec<&&str> = listed.difference(&pools).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty() && strays.is_empty(),
        "{UI_DIR}: .pool files not in ui_cases!: {unlisted:?}; cases without a .pool: \
         {missing:?}; files that belong to no case (delete them or restore the case): \
         {strays:?}"
    );
}

/// Runs one case: the exit code and streams first, then stderr against its snapshot.
fn check_case(name: &str) {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let pool = format!("{UI_DIR}/{name}.pool");
    let args = case_args(root, name);
    let output = run_check(root, &pool, &args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let command = format!(
        "poolc check {pool}{}",
        args.iter().map(|a| format!(" {a}")).collect::<String>()
    );

    let mut problems = Vec::new();
    match output.status.code() {
        Some(EXIT_DIAGNOSTICS) => {}
        Some(code) => problems.push(format!("exit code {code}, expected {EXIT_DIAGNOSTICS}")),
        None => problems.push("killed by a signal (did it panic or crash?)".to_owned()),
    }
    if !stdout.is_empty() {
        problems.push(format!(
            "stdout should be empty but was:\n{}",
            indent(&stdout)
        ));
    }
    if stderr != format!("{}\n", stderr.trim()) {
        problems.push(
            "stderr should start with text and end in exactly one newline \
             (the snapshot comparison ignores trailing whitespace)"
                .to_owned(),
        );
    }
    assert!(
        problems.is_empty(),
        "--- {name}: `{command}`\n{}\nstderr:\n{}",
        problems.join("\n"),
        indent(&stderr)
    );

    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(SNAPSHOT_DIR);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(root.join(&pool));
    settings.set_description(command);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, stderr));
}

/// The extra command-line arguments of a case, from `NAME.args` when it exists.
fn case_args(root: &Path, name: &str) -> Vec<String> {
    let path = root.join(UI_DIR).join(format!("{name}.args"));
    match fs::read_to_string(&path) {
        Ok(text) => text.split_whitespace().map(str::to_owned).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("--- {name}: cannot read {}: {e}", path.display()),
    }
}

/// Runs `poolc check FILE ARGS…` from the crate root, without colours.
fn run_check(root: &Path, file: &str, args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .arg("check")
        .arg(file)
        .args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("--- {file}: cannot run poolc: {e}"))
}

/// Every line of `text` indented by four spaces, so a report stands apart from its
/// heading; a missing final newline is shown.
fn indent(text: &str) -> String {
    let mut out: String = text.lines().map(|line| format!("    {line}\n")).collect();
    if text.is_empty() {
        out.push_str("    (empty)\n");
    } else if !text.ends_with('\n') {
        out.push_str("    (no newline at end)\n");
    }
    out
}
