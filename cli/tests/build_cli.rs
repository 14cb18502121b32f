//! `poolc build` as a user runs it: examples/vllm.pool into a shared object and a
//! header for this machine and for aarch64, an object file with `--emit obj`, and
//! each mistake with its message and exit code — a missing linker (naming the
//! Debian package), an unknown or unsupported target (listing the supported ones),
//! an unwritable output path, a header that would overwrite the output (all 1), a
//! broken spec (1) and usage errors (2).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

#[path = "../../tests/build_support/mod.rs"]
mod build_support;
mod cli_support;

use std::path::Path;
use std::process::{Command, Output};

use build_support::TempDir;
use cli_support::poolc;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn build(out: &Path, extra: &[&str]) -> Output {
    let out = out.to_str().expect("temporary paths are UTF-8");
    let mut args = vec!["build", "examples/vllm.pool", "-o", out];
    args.extend_from_slice(extra);
    poolc(&args)
}

fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        stderr(o)
    );
}

/// The ELF machine of a file (62 x86-64, 183 aarch64) and its type (1 relocatable,
/// 3 shared).
fn elf(path: &Path) -> (u16, u16) {
    let b = std::fs::read(path).expect("the output exists");
    assert_eq!(&b[..4], b"\x7fELF", "{} is ELF", path.display());
    (
        u16::from_le_bytes([b[18], b[19]]),
        u16::from_le_bytes([b[16], b[17]]),
    )
}

#[test]
fn builds_vllm_into_a_shared_object_and_a_header() {
    let dir = TempDir::new("cli-so");
    let out = dir.join("libvllm.so");
    let o = build(&out, &[]);
    assert_exit(&o, 0);
    assert_eq!(elf(&out), (62, 3));
    let header = std::fs::read_to_string(dir.join("libvllm.h")).expect("header next to it");
    assert!(header.contains(
        "double poolc_stage_engine_time(const double *rows, uint64_t n, uint64_t stride, \
         const double *ctx);"
    ));
    assert!(String::from_utf8_lossy(&o.stdout).contains("libvllm.so"));
}

#[test]
#[cfg_attr(
    missing_aarch64_cross,
    ignore = "needs aarch64-linux-gnu-gcc (Debian package gcc-aarch64-linux-gnu)"
)]
fn builds_vllm_for_aarch64() {
    let dir = TempDir::new("cli-aarch64");
    let out = dir.join("libvllm.so");
    let o = build(&out, &["--target", "aarch64-unknown-linux-gnu"]);
    assert_exit(&o, 0);
    assert_eq!(elf(&out), (183, 3));
}

/// Without the cross linker on PATH the build fails with exit 1 and names the
/// package that provides it.
#[test]
fn a_missing_cross_linker_is_named_with_its_package() {
    let dir = TempDir::new("cli-aarch64-missing");
    let out = dir.join("libvllm.so");
    let o = Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(["build", "examples/vllm.pool", "-o"])
        .arg(&out)
        .args(["--target", "aarch64-unknown-linux-gnu"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("PATH", dir.join("empty"))
        .output()
        .expect("the poolc binary runs");
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("gcc-aarch64-linux-gnu"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "no library is left behind");
}

#[test]
fn emit_obj_and_header_write_where_asked() {
    let dir = TempDir::new("cli-obj");
    let out = dir.join("vllm.o");
    let header = dir.join("include-vllm.h");
    let h = header.to_str().expect("UTF-8");
    let o = build(&out, &["--emit", "obj", "--header", h, "--prefix", "vllm"]);
    assert_exit(&o, 0);
    assert_eq!(elf(&out), (62, 1));
    let text = std::fs::read_to_string(&header).expect("the header");
    assert!(
        text.contains("const char *vllm_manifest(uint64_t *len);"),
        "{text}"
    );
    assert!(
        !dir.join("vllm.h").exists(),
        "no header at the default place"
    );
}

#[test]
fn a_missing_linker_names_the_package_to_install() {
    let dir = TempDir::new("cli-linker");
    let out = dir.join("libvllm.so");
    let o = build(&out, &["--linker", "/nonexistent/cc"]);
    assert_exit(&o, 1);
    let e = stderr(&o);
    assert!(e.contains("cannot run the linker `/nonexistent/cc`"), "{e}");
    assert!(e.contains("apt-get install gcc"), "{e}");
    assert!(!out.exists(), "nothing is written when linking fails");
    assert!(!dir.join("libvllm.h").exists(), "not even the header");
}

#[test]
fn a_failing_linker_shows_its_message() {
    let dir = TempDir::new("cli-linker-fails");
    let out = dir.join("libvllm.so");
    // `cc` with an option it refuses: it runs, prints why, and fails.
    let o = build(&out, &["--linker", "cc -Wl,--no-such-linker-option"]);
    assert_exit(&o, 1);
    let e = stderr(&o);
    assert!(
        e.contains("the linker `cc -Wl,--no-such-linker-option` failed"),
        "{e}"
    );
    assert!(e.contains("no-such-linker-option"), "{e}");
}

#[test]
fn an_unknown_target_lists_the_supported_ones() {
    let dir = TempDir::new("cli-target");
    let out = dir.join("lib.so");
    for (target, word) in [
        ("no-such-triple-at-all", "unknown target"),
        ("riscv64gc-unknown-linux-gnu", "unsupported target"),
        ("x86_64-apple-darwin", "unsupported target"),
    ] {
        let o = build(&out, &["--target", target]);
        assert_exit(&o, 1);
        let e = stderr(&o);
        assert!(e.contains(&format!("{word} `{target}`")), "{e}");
        assert!(
            e.contains("x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu"),
            "{e}"
        );
    }
}

#[test]
fn an_unwritable_output_gives_its_path_and_error() {
    let dir = TempDir::new("cli-unwritable");
    // A directory that does not exist (permissions do not stop root, who runs CI).
    let out = dir.join("missing-dir").join("libvllm.so");
    for emit in ["so", "obj"] {
        let o = build(&out, &["--emit", emit]);
        assert_exit(&o, 1);
        let e = stderr(&o);
        assert!(
            e.contains(&format!("cannot write {}", out.display())) && e.contains("No such file"),
            "{e}"
        );
    }
    // An existing directory in the output's place.
    let o = build(&dir.path, &[]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
}

#[test]
fn a_header_that_would_overwrite_the_output_is_refused() {
    let dir = TempDir::new("cli-header-clash");
    let out = dir.join("policy.h");
    let o = build(&out, &["--emit", "obj"]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("--header"), "{}", stderr(&o));
}

#[test]
fn spec_errors_are_exit_1_and_usage_errors_exit_2() {
    let dir = TempDir::new("cli-usage");
    let bad = dir.join("bad.pool");
    std::fs::write(&bad, "pool p { cap nope; }\n").expect("writes");
    let out = dir.join("lib.so");
    let o = poolc(&[
        "build",
        bad.to_str().expect("UTF-8"),
        "-o",
        out.to_str().expect("UTF-8"),
    ]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));

    assert_exit(&poolc(&["build", "examples/vllm.pool"]), 2);
    assert_exit(&build(&out, &["--emit", "exe"]), 2);
    let o = build(&out, &["--prefix", "9lives"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("C identifier"), "{}", stderr(&o));
}
