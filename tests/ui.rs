//! UI snapshot tests: every `tests/ui/NAME.pool` is a minimal spec that breaks one rule,
//! and `tests/ui/NAME.stderr` is what `poolc check` must print for it, byte for byte.
//! This file owns the harness only (run the binary, compare, report every mismatch
//! with a diff); the fixtures and snapshots live in `tests/ui/`.
//!
//! A case runs as `poolc check tests/ui/NAME.pool [ARGS…]` from the crate root, so the
//! rendered file name is that relative path. `ARGS` come from an optional sibling
//! `NAME.args`, split on whitespace (no quoting), e.g. `--set nosuch=3`. Every case must
//! exit 1 with an empty stdout. Run with `UPDATE_UI=1` to write the `.stderr` files
//! from the current output instead of comparing (the exit code is still checked);
//! review the new snapshots by hand before committing them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the fixtures live, relative to the crate root.
const UI_DIR: &str = "tests/ui";

/// The exit code of `poolc check` when it reports diagnostics.
const EXIT_DIAGNOSTICS: i32 = 1;

#[test]
fn ui_diagnostics_match_snapshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let update = std::env::var("UPDATE_UI").is_ok_and(|v| v == "1");
    let cases = ui_cases(&root.join(UI_DIR));
    assert!(
        !cases.is_empty(),
        "no {UI_DIR}/*.pool files found under {}",
        root.display()
    );

    let mut failures: Vec<String> = orphan_files(&root.join(UI_DIR), &cases);
    for name in &cases {
        if let Err(message) = run_case(root, name, update) {
            failures.push(message);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} UI cases failed{}:\n\n{}",
        failures.len(),
        cases.len(),
        if update { " (UPDATE_UI=1)" } else { "" },
        failures.join("\n\n")
    );
}

/// The stems of every `*.pool` file in `dir`, sorted.
fn ui_cases(dir: &Path) -> Vec<String> {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut names: Vec<String> = entries
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path()
        })
        .filter(|path| path.extension().is_some_and(|ext| ext == "pool"))
        .filter_map(|path| path.file_stem().and_then(|s| s.to_str()).map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// `.stderr` and `.args` files with no `.pool` beside them: left behind by a rename.
fn orphan_files(dir: &Path, cases: &[String]) -> Vec<String> {
    let cases: BTreeSet<&str> = cases.iter().map(String::as_str).collect();
    let mut orphans: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "stderr" || ext == "args")
        })
        .filter(|path| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .is_none_or(|stem| !cases.contains(stem))
        })
        .map(|path| {
            format!(
                "{}: no matching .pool file; delete it or restore the case",
                path.display()
            )
        })
        .collect();
    orphans.sort();
    orphans
}

/// Runs one case; `Err` carries a self-contained report of what went wrong.
fn run_case(root: &Path, name: &str, update: bool) -> Result<(), String> {
    let pool = format!("{UI_DIR}/{name}.pool");
    let args = case_args(root, name)?;
    let output = run_check(root, &pool, &args)?;
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

    let snapshot = root.join(UI_DIR).join(format!("{name}.stderr"));
    if update {
        fs::write(&snapshot, &stderr)
            .map_err(|e| format!("{name}: cannot write {}: {e}", snapshot.display()))?;
    } else {
        match fs::read_to_string(&snapshot) {
            Ok(expected) if expected == stderr => {}
            Ok(expected) => problems.push(format!(
                "stderr differs from {UI_DIR}/{name}.stderr (- expected, + actual):\n{}",
                indent(&diff(&expected, &stderr))
            )),
            Err(e) => problems.push(format!(
                "cannot read {UI_DIR}/{name}.stderr ({e}); create it with \
                 `UPDATE_UI=1 cargo test --test ui` and review it. Actual stderr:\n{}",
                indent(&stderr)
            )),
        }
    }

    if problems.is_empty() {
        Ok(())
    } else {
        let problems: Vec<&str> = problems.iter().map(|p| p.trim_end()).collect();
        Err(format!("--- {name}: `{command}`\n{}", problems.join("\n")))
    }
}

/// The extra command-line arguments of a case, from `NAME.args` when it exists.
fn case_args(root: &Path, name: &str) -> Result<Vec<String>, String> {
    let path: PathBuf = root.join(UI_DIR).join(format!("{name}.args"));
    match fs::read_to_string(&path) {
        Ok(text) => Ok(text.split_whitespace().map(str::to_owned).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("--- {name}: cannot read {}: {e}", path.display())),
    }
}

/// Runs `poolc check FILE ARGS…` from the crate root, without colours.
fn run_check(root: &Path, file: &str, args: &[String]) -> Result<Output, String> {
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .arg("check")
        .arg(file)
        .args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| format!("--- {file}: cannot run poolc: {e}"))
}

/// Every line of `text` indented by four spaces, so a report stands apart from its
/// heading; a missing final newline is shown, since snapshots compare it too.
fn indent(text: &str) -> String {
    let mut out: String = text.lines().map(|line| format!("    {line}\n")).collect();
    if text.is_empty() {
        out.push_str("    (empty)\n");
    } else if !text.ends_with('\n') {
        out.push_str("    (no newline at end)\n");
    }
    out
}

/// A line diff of two texts (longest common subsequence): `-` lines only in
/// `expected`, `+` lines only in `actual`, two spaces before common lines.
fn diff(expected: &str, actual: &str) -> String {
    let old: Vec<&str> = expected.lines().collect();
    let new: Vec<&str> = actual.lines().collect();
    // lcs[i][j]: length of the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0usize; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            out.push_str(&format!("  {}\n", old[i]));
            i += 1;
            j += 1;
        } else if j < new.len() && (i == old.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", new[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", old[i]));
            i += 1;
        }
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("(the texts differ in their final newline)\n");
    }
    out
}
