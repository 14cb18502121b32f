//! Faults the CLI must survive cleanly (docs/RELIABILITY.md, "Fault tests"): stdout
//! and the `--log` file on a full disk (/dev/full), outputs in a read-only
//! directory, and SIGINT in the middle of `poolc run`. Each ends with exit 1 (130 for
//! SIGINT), one `poolc:` line on stderr and no Rust panic, and leaves nothing that
//! looks complete: no half-written library or header, no leftover temporary file, no
//! final `complete` line in an interrupted log. Every test is bounded in time and in
//! what it writes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../../tests/build_support/mod.rs"]
mod build_support;
mod cli_support;

use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use build_support::TempDir;
use cli_support::poolc;
use serde_json::Value;

/// Runs `poolc ARGS…` from the crate root with stdout on /dev/full.
fn poolc_to_full_disk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdout(File::create("/dev/full").expect("/dev/full exists on Linux"))
        .output()
        .expect("the poolc binary runs")
}

/// A clean failure: the exit code, one `poolc:` message naming the problem, no panic.
fn assert_clean_failure(o: &Output, code: i32, message: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
}

/// A directory this process cannot create files in: a fresh one made read-only, or,
/// when permissions do not bind (running as root), sysfs's root, which refuses new
/// files to everyone.
fn read_only_dir(scratch: &TempDir) -> PathBuf {
    let dir = scratch.path.join("read-only");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    let probe = dir.join("probe");
    if File::create(&probe).is_ok() {
        fs::remove_file(&probe).unwrap();
        return PathBuf::from("/sys");
    }
    dir
}

/// The names in `dir` that look like temporary files of ours (`.<name>.<pid>-<n>.tmp`).
fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn run_json_on_a_full_disk_is_a_clean_error() {
    let o = poolc_to_full_disk(&["run", "--synthetic", "20", "--json"]);
    assert_clean_failure(
        &o,
        1,
        "poolc: cannot write the output: No space left on device",
    );
}

#[test]
fn every_printing_command_on_a_full_disk_is_a_clean_error() {
    for args in [
        &["run", "--synthetic", "20"][..],
        &["check", "examples/vllm.pool"],
        &["ir", "examples/vllm.pool"],
        &["clif", "examples/vllm.pool"],
        &[
            "eval",
            "examples/vllm.pool",
            "--pool",
            "engine",
            "--site",
            "time",
            "tokens=10",
            "prefill=10",
            "decode=0",
            "residents=1",
            "computed=0",
            "context=10",
            "prompt=10",
        ],
        &["bench", "--ops", "100", "--queue", "8"],
        &["conform", "tests/data/vllm-oracle/g_bs32_tight_preempt"],
    ] {
        let o = poolc_to_full_disk(args);
        assert_clean_failure(&o, 1, "cannot write the output");
    }
}

#[test]
fn a_log_on_a_full_disk_is_a_clean_error_and_no_report() {
    let o = poolc(&["run", "--synthetic", "200", "--log", "/dev/full"]);
    assert_clean_failure(
        &o,
        1,
        "poolc: cannot write the log: No space left on device",
    );
    assert!(o.stdout.is_empty(), "no report after a failed log");
}

#[test]
fn a_complete_log_ends_with_one_complete_line_counting_the_others() {
    let scratch = TempDir::new("faults-log");
    let path = scratch.path.join("log.jsonl");
    let o = poolc(&[
        "run",
        "--synthetic",
        "40",
        "--json",
        "--log",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (last, before) = lines.split_last().unwrap();
    let end: Value = serde_json::from_str(last).unwrap();
    assert_eq!(end["complete"], true, "{last}");
    let iterations = before.iter().filter(|l| l.starts_with("{\"step\"")).count();
    assert_eq!(end["lines"], before.len() as u64);
    assert_eq!(end["iterations"], iterations as u64);
    assert_eq!(end["events"], (before.len() - iterations) as u64);
    for field in [
        "sessions",
        "finished",
        "rejected",
        "unfinished",
        "sim_seconds",
    ] {
        assert_eq!(end[field], report[field], "{field}");
    }
    assert!(
        before.iter().all(|l| !l.contains("\"complete\"")),
        "only the last line says complete"
    );
}

#[test]
fn sigint_stops_a_run_with_130_and_no_complete_line() {
    let scratch = TempDir::new("faults-sigint");
    let log = scratch.path.join("log.jsonl");
    // 20,000 sessions take seconds even in a release build (and their whole log is
    // under a gigabyte); the signal goes as soon as the replay has written its first
    // lines, so the run is stopped a long way from its end.
    let mut child = Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args([
            "run",
            "--synthetic",
            "20000",
            "--log",
            log.to_str().unwrap(),
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while fs::metadata(&log).map_or(0, |m| m.len()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the replay never started writing its log"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = cli_support::interrupt(&mut child, Duration::from_secs(20), "poolc run");
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("poolc: interrupted"));
    assert!(out.stdout.is_empty(), "no report from an interrupted run");
    let text = fs::read_to_string(&log).unwrap();
    assert!(!text.is_empty());
    assert!(
        !text.contains("\"complete\""),
        "an interrupted log is never complete"
    );
    assert!(leftovers(&scratch.path).is_empty());
}

#[test]
fn a_build_into_a_read_only_directory_is_a_clean_error_and_writes_nothing() {
    let scratch = TempDir::new("faults-ro");
    let dir = read_only_dir(&scratch);
    let lib = dir.join("libpolicy.so");
    let o = poolc(&["build", "examples/vllm.pool", "-o", lib.to_str().unwrap()]);
    assert_clean_failure(&o, 1, &format!("poolc: cannot write {}", lib.display()));
    assert!(!lib.exists() && !dir.join("libpolicy.h").exists());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn a_log_in_a_read_only_directory_is_a_clean_error() {
    let scratch = TempDir::new("faults-ro-log");
    let dir = read_only_dir(&scratch);
    let log = dir.join("log.jsonl");
    let o = poolc(&["run", "--synthetic", "5", "--log", log.to_str().unwrap()]);
    assert_clean_failure(&o, 1, &format!("poolc: cannot write {}", log.display()));
    assert!(!log.exists());
}

#[test]
fn conform_out_writes_steps_whole_and_a_read_only_directory_is_a_clean_error() {
    // A written steps.jsonl goes through a temporary file that is renamed: none
    // is left beside it.
    let scratch = TempDir::new("faults-conform-out");
    let scenario = "tests/data/vllm-oracle/g_bs32_tight_preempt";
    let out = scratch.path.join("out");
    let o = poolc(&["conform", scenario, "--out", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let written = out.join("g_bs32_tight_preempt");
    assert!(written.join("steps.jsonl").exists());
    assert!(leftovers(&written).is_empty(), "{:?}", leftovers(&written));
    // Into a directory that refuses new files: exit 1, the path named, no panic.
    let dir = read_only_dir(&scratch);
    let o = poolc(&["conform", scenario, "--out", dir.to_str().unwrap()]);
    assert_clean_failure(&o, 1, "cannot write");
    assert!(!dir.join("g_bs32_tight_preempt").exists());
}

#[test]
fn a_failed_header_leaves_the_old_library_whole_and_no_temporary_file() {
    // The library is written before the header is known to fail: both are staged
    // beside their paths and renamed only once both are written, so the old library
    // is untouched.
    let scratch = TempDir::new("faults-header");
    let lib = scratch.path.join("libpolicy.so");
    fs::write(&lib, b"the previous build").unwrap();
    let header = read_only_dir(&scratch).join("policy.h");
    let o = poolc(&[
        "build",
        "examples/vllm.pool",
        "-o",
        lib.to_str().unwrap(),
        "--header",
        header.to_str().unwrap(),
    ]);
    assert_clean_failure(&o, 1, &format!("poolc: cannot write {}", header.display()));
    assert_eq!(fs::read(&lib).unwrap(), b"the previous build");
    assert!(
        leftovers(&scratch.path).is_empty(),
        "{:?}",
        leftovers(&scratch.path)
    );
}
