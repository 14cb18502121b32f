//! Repository hygiene that a reviewer would otherwise check by eye: every Rust file
//! opens with a `//!` paragraph saying what it owns; no test is skipped but for a
//! missing tool, with its reason, and none is written to expect a panic;
//! no file is over 800 lines unless its `//!` says why; no file names a path outside
//! the checkout; and the Architecture Invariants of docs/ARCHITECTURE.md that the tree
//! can show: the crates' dependencies are the layers (the build then keeps every
//! module of a lower crate from naming a higher one), only the binary prints, the
//! vLLM scenario files are read in one place, and the front end never names the
//! runtime.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn all_rust_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "build.rs",
        "src",
        "runtime/src",
        "runtime/tests",
        "tools/src",
        "tools/tests",
        "cli/build.rs",
        "cli/src",
        "cli/tests",
        "tests",
        "benches",
        "examples",
        "python/src",
        "fuzz/src",
        "fuzz/tests",
        "fuzz/libfuzzer/fuzz_targets",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 10,
        "found only {} Rust files; is the walk broken?",
        files.len()
    );
    files
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let missing: Vec<String> = all_rust_files()
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a leading `//!` paragraph: {missing:#?}"
    );
}

/// A test is ignored only when the machine lacks a tool it needs, and then with the
/// reason, so the runner's summary says what did not run and why: the one allowed
/// form is `#[cfg_attr(missing_TOOL, ignore = "…")]` (the cfg comes from build.rs,
/// which never sets it under CI) or `#[cfg_attr(not(target_arch = …), ignore = "…")]`.
/// A bare `#[ignore]` and `#[should_panic]` stay banned.
#[test]
fn tests_are_ignored_only_for_a_missing_tool_and_say_why() {
    let banned = [concat!("#[", "ignore"), concat!("#[", "should_panic")];
    let reason = concat!("ignore", " = \"");
    let mut offenders = Vec::new();
    for p in all_rust_files() {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let code: String = code_lines(&text).collect::<Vec<_>>().join("\n");
        for n in banned {
            if code.contains(n) {
                offenders.push(format!("{}: {n}", p.display()));
            }
        }
        // Every `ignore = "…"` sits in a `cfg_attr` whose condition is a missing tool
        // or the host's architecture.
        let mut from = 0;
        while let Some(at) = code.get(from..).and_then(|rest| rest.find(reason)) {
            let at = from + at;
            let attr = code
                .get(..at)
                .and_then(|head| head.rfind("#["))
                .unwrap_or(0);
            let head = code.get(attr..at).unwrap_or_default();
            let allowed = head.starts_with("#[cfg_attr(")
                && (head.contains("missing_") || head.contains("target_arch"));
            if !allowed {
                offenders.push(format!("{}: {}", p.display(), head.trim()));
            }
            from = at + reason.len();
        }
    }
    assert!(
        offenders.is_empty(),
        "tests ignored without a missing tool, or expecting a panic: {offenders:#?}"
    );
}

/// The leading `//!` paragraph of a file, joined.
fn module_doc(text: &str) -> String {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lines that are code, not comments (a `use` or path inside a doc comment does not
/// count as an import).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// The names a manifest lists under `section` (`dependencies`, `dev-dependencies`,
/// `build-dependencies`).
fn dependencies(manifest: &toml::Table, section: &str) -> Vec<String> {
    manifest
        .get(section)
        .and_then(toml::Value::as_table)
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

/// Architecture Invariant: the crates are the layers — cli → tools → compiler →
/// runtime, python → tools, fuzz → compiler — and a dependency that `cargo tree`
/// shows is the only way one layer reaches another. So no lower crate lists a higher
/// one in any section (cargo allows a dev-dependency cycle, so the build alone does
/// not forbid it), and only the binary links the command line's crates: the Python
/// and fuzz crates get no clap, indicatif or signal-hook through anything.
#[test]
fn the_crates_depend_on_each_other_as_the_layers_do() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cli_only = ["clap", "indicatif", "signal-hook"];
    // (crate folder, crates it must not list anywhere, crates it must not list as a
    // normal dependency).
    let layers: [(&str, &[&str], &[&str]); 6] = [
        ("runtime", &["poolc", "poolc-tools", "poolc-cli"], &cli_only),
        (".", &["poolc-tools", "poolc-cli"], &cli_only),
        ("tools", &["poolc-cli"], &cli_only),
        ("python", &["poolc-cli"], &cli_only),
        ("fuzz", &["poolc-tools", "poolc-cli"], &cli_only),
        ("cli", &[], &[]),
    ];
    let mut offenders = Vec::new();
    for (dir, never, not_normal) in layers {
        let path = root.join(dir).join("Cargo.toml");
        let text = std::fs::read_to_string(&path).expect("manifest reads");
        let manifest: toml::Table = text.parse().expect("manifest parses");
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            for dep in dependencies(&manifest, section) {
                let normal = section == "dependencies";
                if never.contains(&dep.as_str()) || (normal && not_normal.contains(&dep.as_str())) {
                    offenders.push(format!("{}: [{section}] {dep}", path.display()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "dependencies against the layers: {offenders:#?}"
    );
}

/// The text files of the checkout: everything but build outputs, git's own folder
/// and caches that a run leaves behind.
fn checkout_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == ".git" {
            // git's own folder, or in a linked worktree the file naming it.
            continue;
        }
        if p.is_dir() {
            if !["target", "__pycache__", ".pytest_cache"].contains(&name.as_str()) {
                checkout_files(&p, out);
            }
        } else {
            out.push(p);
        }
    }
}

/// Where a run of `../` in `line` climbs to, counted in folders above `depth` (the
/// file's own depth below the root): a positive value leaves the checkout.
fn climbs_out(line: &str, depth: usize) -> bool {
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(at) = line.get(i..).and_then(|rest| rest.find("../")) {
        let start = i + at;
        // Only the first `../` of a run counts; `a/../b` is inside a path already.
        let preceded = start > 0 && matches!(bytes.get(start - 1), Some(b'.' | b'/'));
        let mut n = 0;
        let mut j = start;
        while line.get(j..j + 3) == Some("../") {
            n += 1;
            j += 3;
        }
        if !preceded && n > depth {
            return true;
        }
        i = j;
    }
    false
}

/// Self-contained: no file of the repository names a path outside the checkout —
/// not by climbing above the root with `../`, not by an absolute path into a
/// machine's home or work folders — so a clone in an empty folder has everything
/// its tests, scripts and docs refer to.
#[test]
fn no_file_names_a_path_outside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    checkout_files(root, &mut files);
    assert!(
        files.len() > 200,
        "the checkout walk found {} files",
        files.len()
    );
    let absolute = [
        concat!("/wo", "rk/"),
        concat!("/ro", "ot/"),
        concat!("/ho", "me/"),
    ];
    let mut offenders = Vec::new();
    for p in &files {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue; // not text
        };
        let rel = p.strip_prefix(root).unwrap_or(p);
        let depth = rel.components().count().saturating_sub(1);
        for (n, line) in text.lines().enumerate() {
            if climbs_out(line, depth)
                || line.contains(concat!("../sha", "red"))
                || absolute.iter().any(|a| line.contains(a))
            {
                offenders.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "files naming a path outside the checkout: {offenders:#?}"
    );
}

/// A file over this many lines does several jobs, unless its `//!` says why it is
/// one job (the phrase "This file is long because").
const LONG_FILE: usize = 800;

#[test]
fn no_source_file_is_long_without_saying_why() {
    let offenders: Vec<String> = all_rust_files()
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let n = text.lines().count();
            (n > LONG_FILE && !module_doc(&text).contains("This file is long because"))
                .then(|| format!("{} ({n} lines)", p.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "files over {LONG_FILE} lines whose `//!` does not say why: {offenders:#?}"
    );
}

/// The library crates' files: the compiler (src/), the runtime and the tools.
fn library_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "runtime/src", "tools/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 40,
        "the library walk found {} files",
        files.len()
    );
    files
}

/// Files among `files` with a code line that contains any of `needles`.
fn naming(files: &[PathBuf], needles: &[&str]) -> Vec<String> {
    files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("source file reads");
            code_lines(&text).any(|l| needles.iter().any(|n| l.contains(n)))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// Architecture Invariant: only the binary (cli/) prints or exits; the libraries
/// return values and errors.
#[test]
fn only_the_cli_prints_or_exits() {
    let offenders = naming(
        &library_files(),
        &[
            "print!(",
            "println!(",
            "eprint!(",
            "eprintln!(",
            "process::exit(",
        ],
    );
    assert!(
        offenders.is_empty(),
        "library files that print or exit: {offenders:#?}"
    );
}

/// Architecture Invariant: a recorded vLLM scenario's files are read in one place,
/// `poolc_tools::oracle`; nothing else in the libraries names them.
#[test]
fn the_scenario_format_lives_in_the_tools_oracle() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/src/oracle");
    // `poolc model` reads a different config.json, a Hugging Face model's.
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/src/model");
    let mut files = library_files();
    let all = files.len();
    files.retain(|p| !p.starts_with(&oracle));
    assert!(all - files.len() >= 4, "the oracle module was not found");
    files.retain(|p| !p.starts_with(&model));
    let offenders = naming(&files, &["steps.jsonl", "workload.jsonl", "config.json"]);
    assert!(
        offenders.is_empty(),
        "library files outside poolc_tools::oracle that name the scenario's files: {offenders:#?}"
    );
}

/// Architecture Invariant: the front end and the interpreter (syntax, sema, ir,
/// interp) never name the runtime; only `bridge`, `codegen` and `aot` know it.
#[test]
fn the_front_end_never_names_the_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["syntax", "sema", "ir"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.push(root.join("interp.rs"));
    assert!(
        files.len() > 10,
        "the front-end walk found {} files",
        files.len()
    );
    let offenders = naming(&files, &["poolrt"]);
    assert!(
        offenders.is_empty(),
        "front-end files naming poolrt: {offenders:#?}"
    );
}
