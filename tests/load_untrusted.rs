//! `aot::load` on libraries it did not build or that do not match (docs/ABI.md,
//! "Loading an untrusted library"): each refusal with its reason, and the order that
//! makes refusing safe — the ELF header and the manifest are checked from the file's
//! bytes before the dynamic loader runs any of the library's code (a library
//! without a manifest is refused before its initialiser runs), and when the dynamic
//! loader itself refuses, its own message is shown. The foreign libraries are small
//! C files built with `cc`, as the other build tests do.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod build_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use build_support::{TempDir, aarch64, build_so, example_program, examples, host, options};
use poolc::aot::load::{self, LoadError};
use poolc::aot::object::{Prefix, Target};
use poolc::aot::{self, Emit, manifest};
use poolc::ir::Program;

fn vllm() -> Program {
    let (path, text) = examples()
        .into_iter()
        .find(|(p, _)| p.ends_with("vllm.pool"))
        .unwrap();
    example_program(&path, &text)
}

fn refuse(path: &Path, program: &Program) -> LoadError {
    // SAFETY: every file here is refused before the dynamic loader sees it, or is a
    // C library of this file whose only code is the initialiser the test watches.
    match unsafe { load::load(path, program) } {
        Ok(_) => panic!("{} was loaded", path.display()),
        Err(e) => e,
    }
}

/// Compiles `source` into the shared object `dir/name` with `cc` and `extra` flags.
fn cc(dir: &TempDir, name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let c = dir.path.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let out = dir.path.join(name);
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&c)
        .args(extra)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed on {name}");
    out
}

/// A C definition of `poolc_manifest_data` holding `text` and its NUL, as
/// `poolc build` lays it out.
fn manifest_in_c(text: &str) -> String {
    let bytes: Vec<String> = text.bytes().map(|b| b.to_string()).collect();
    format!(
        "const unsigned char poolc_manifest_data[] = {{{}, 0}};\n",
        bytes.join(",")
    )
}

#[test]
fn a_file_that_is_not_elf_is_refused_before_loading() {
    let dir = TempDir::new("untrusted-text");
    let path = dir.path.join("libtext.so");
    std::fs::write(&path, "not a library").unwrap();
    let e = refuse(&path, &vllm());
    assert!(matches!(e, LoadError::NotElf { .. }), "{e}");
    assert!(e.to_string().contains("refused before loading"), "{e}");
}

#[test]
fn an_object_file_is_refused_as_not_a_shared_object() {
    let dir = TempDir::new("untrusted-obj");
    let program = vllm();
    let path = dir.path.join("policy.o");
    aot::build(&program, &path, &options(&host(), Emit::Object)).unwrap();
    let e = refuse(&path, &program);
    assert!(
        matches!(&e, LoadError::NotShared { kind, .. } if kind == "relocatable file"),
        "{e}"
    );
}

#[test]
fn code_for_another_isa_is_refused() {
    let dir = TempDir::new("untrusted-isa");
    let program = vllm();
    let other = if host().arch() == aarch64().arch() {
        Target::parse("x86_64-unknown-linux-gnu").unwrap()
    } else {
        aarch64()
    };
    let path = dir.path.join("policy.o");
    aot::build(&program, &path, &options(&other, Emit::Object)).unwrap();
    let e = refuse(&path, &program);
    assert!(matches!(e, LoadError::Isa { .. }), "{e}");
    assert!(e.to_string().contains("this machine is"), "{e}");
}

#[test]
fn a_library_without_a_manifest_is_refused_before_its_initialiser_runs() {
    let dir = TempDir::new("untrusted-ctor");
    let marker = dir.path.join("initialiser-ran");
    let source = format!(
        "#include <stdio.h>\n\
         __attribute__((constructor)) static void init(void) {{\n\
           FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f);\n\
         }}\n\
         double poolc_stage_engine_time(const double *ctx) {{ return 0.0; }}\n",
        marker.display()
    );
    let path = cc(&dir, "libctor.so", &source, &[]);
    let e = refuse(&path, &vllm());
    assert!(
        matches!(&e, LoadError::NoManifest { symbol, .. } if symbol == "poolc_manifest_data"),
        "{e}"
    );
    assert!(
        !marker.exists(),
        "the library's code ran before it was refused"
    );
    // The marker does work: loading the library runs the initialiser.
    // SAFETY: this test's own library; its initialiser only creates the marker.
    drop(unsafe { libloading::Library::new(&path) }.unwrap());
    assert!(marker.exists());
}

#[test]
fn a_manifest_that_says_another_target_than_its_code_is_refused() {
    let dir = TempDir::new("untrusted-target");
    let program = vllm();
    let other = if host().arch() == aarch64().arch() {
        Target::parse("x86_64-unknown-linux-gnu").unwrap()
    } else {
        aarch64()
    };
    let text = manifest::write(&program, &other, &Prefix::default());
    let path = cc(&dir, "liblie.so", &manifest_in_c(&text), &[]);
    let e = refuse(&path, &program);
    assert!(matches!(e, LoadError::TargetMismatch { .. }), "{e}");
}

#[test]
fn a_mutated_manifest_is_refused_with_its_reason() {
    let dir = TempDir::new("untrusted-mutated");
    let program = vllm();
    let good = build_so(&program, &dir, "libgood.so");
    let bytes = std::fs::read(&good).unwrap();
    let mutate = |from: &str, to: &str| {
        assert_eq!(from.len(), to.len(), "a mutation keeps the file's layout");
        let at = bytes
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap_or_else(|| panic!("`{from}` is in the manifest"));
        let mut b = bytes.clone();
        b[at..at + from.len()].copy_from_slice(to.as_bytes());
        let path = dir.path.join("libmutated.so");
        std::fs::write(&path, b).unwrap();
        refuse(&path, &program)
    };
    let e = mutate("\"format\": 8,", "\"format\": 9,");
    assert!(
        matches!(&e, LoadError::Format { found, .. } if found == "9"),
        "{e}"
    );
    let e = mutate("\"format\": 8,", "\"format\"; 4,");
    assert!(matches!(e, LoadError::Unparsable { .. }), "{e}");
    let e = mutate("\"format\": 8,", "\"formal\": 8,");
    assert!(matches!(e, LoadError::BadManifest { .. }), "{e}");
    // A slot layout that names another input: the library reads other slots.
    let e = mutate("\"prompt\"", "\"promPt\"");
    assert!(matches!(e, LoadError::Mismatch { .. }), "{e}");
    // The library itself loads.
    // SAFETY: a library poolc just built.
    assert!(unsafe { load::load(&good, &program) }.is_ok());
}

#[test]
fn the_dynamic_loaders_own_message_is_shown() {
    // A library whose manifest matches, linked against a library that is then
    // removed: every check before loading passes, and dlopen refuses it.
    let dir = TempDir::new("untrusted-dlopen");
    let program = vllm();
    cc(&dir, "libgone.so", "int gone(void) { return 1; }\n", &[]);
    let text = manifest::write(&program, &host(), &Prefix::default());
    let source = format!(
        "int gone(void);\nint use_gone(void) {{ return gone(); }}\n{}",
        manifest_in_c(&text)
    );
    let lib_dir = format!("-L{}", dir.path.display());
    let path = cc(&dir, "libneeds.so", &source, &[&lib_dir, "-lgone"]);
    std::fs::remove_file(dir.path.join("libgone.so")).unwrap();
    let e = refuse(&path, &program);
    assert!(matches!(e, LoadError::Open { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("libgone.so: cannot open shared object file"),
        "{e}"
    );
}
