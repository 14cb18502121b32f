//! Target (d): the shared-object loader (`aot::load`) on mutated libraries. Real
//! libraries are built once with `poolc build` — one from examples/vllm.pool, the
//! spec every input is loaded against, and one from examples/tiered.pool, another
//! spec — and kept in memory; each input picks one and mutates, from its bytes, the
//! parts of the file the loader reads before the dynamic loader may see it: the
//! manifest's bytes, the ELF identification and the section fields of the ELF
//! header, the section header table, or the file's length. The mutant is written to
//! a temporary file, loaded and removed. A library is accepted, or reaches the dynamic
//! loader at all, only if it is the spec's own and its manifest still says what
//! poolc writes for the spec; anything else is refused with a message naming the
//! file, and nothing panics. Code bytes and program headers are never mutated: the
//! loader cannot judge machine code (docs/RELIABILITY.md, "Not done"). No function
//! of a library is ever called here.

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use poolc::aot::load::{self, LoadError};
use poolc::aot::manifest;
use poolc::aot::object::{Prefix, Target};
use poolc::aot::{BuildOptions, Emit};
use poolc::ir::Program;

use crate::Bytes;

/// A library kept in memory and where its manifest sits in it.
struct Library {
    bytes: Vec<u8>,
    /// The manifest data symbol's bytes: the text and its NUL.
    manifest: std::ops::Range<usize>,
    /// The section header table.
    sections: std::ops::Range<usize>,
}

struct Setup {
    program: Program,
    /// The manifest this poolc writes for `program`, parsed.
    expected: manifest::Json,
    own: Library,
    other: Library,
}

fn example(name: &str) -> Program {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    poolc::check(&text, &poolc::Options::default())
        .unwrap_or_else(|d| panic!("{} does not check: {d:?}", path.display()))
}

fn le(bytes: &[u8], at: usize, len: usize) -> usize {
    let mut x = 0usize;
    for (i, &b) in bytes.iter().skip(at).take(len).enumerate() {
        x |= usize::from(b) << (8 * i);
    }
    x
}

/// Builds `program` with `poolc build` into `dir`, reads it back and removes it.
fn built(program: &Program, dir: &Path, name: &str) -> Library {
    let path = dir.join(name);
    let options = BuildOptions {
        target: Target::host().unwrap_or_else(|e| panic!("{e}")),
        emit: Emit::SharedObject,
        prefix: Prefix::default(),
        linker: None,
        header: None,
        source_name: name.to_string(),
    };
    poolc::aot::build(program, &path, &options).unwrap_or_else(|e| panic!("build: {e}"));
    let text = load::read_manifest(&path, &Prefix::default()).unwrap_or_else(|e| panic!("{e}"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(poolc::aot::default_header(&path));
    let at = bytes
        .windows(text.len())
        .position(|w| w == text.as_bytes())
        .unwrap_or_else(|| panic!("the manifest is in the file"));
    // An ELF64 header: e_shoff at 40 (8 bytes), e_shentsize at 58, e_shnum at 60.
    let shoff = le(&bytes, 40, 8);
    let shsize = le(&bytes, 58, 2) * le(&bytes, 60, 2);
    Library {
        manifest: at..at + text.len() + 1,
        sections: shoff..(shoff + shsize).min(bytes.len()),
        bytes,
    }
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("poolc-fuzz-library-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let program = example("vllm.pool");
        let target = Target::host().unwrap_or_else(|e| panic!("{e}"));
        let expected = manifest::parse(&manifest::write(&program, &target, &Prefix::default()))
            .unwrap_or_else(|e| panic!("{e}"));
        let own = built(&program, &dir, "libown.so");
        let other = built(&example("tiered.pool"), &dir, "libother.so");
        let _ = std::fs::remove_dir(&dir);
        Setup {
            program,
            expected,
            own,
            other,
        }
    })
}

/// ELF header bytes the loader reads and the dynamic loader does not depend on for
/// mapping: identification, type, machine, version, flags and the section fields
/// (never the entry point or the program header fields).
const HEADER: [std::ops::Range<usize>; 3] = [0..24, 40..52, 58..64];

/// Bytes that make manifest mutations land on its syntax.
const JSON: &[u8] = b"{}[]\",:0123456789 -.eE\\ntfalsu\0";

fn mutate(b: &mut Bytes, lib: &Library) -> Vec<u8> {
    let mut bytes = lib.bytes.clone();
    for _ in 0..1 + b.below(4) {
        let (range, value) = match b.below(8) {
            0..=3 => (lib.manifest.clone(), *b.pick(JSON)),
            4 => (lib.manifest.clone(), b.byte()),
            5 => (b.pick(&HEADER).clone(), b.byte()),
            6 => (lib.sections.clone(), b.byte()),
            _ => {
                // Anywhere in the file, to 1/65536 of its length.
                let at = b.below(1 << 16) * bytes.len() / (1 << 16);
                bytes.truncate(at);
                continue;
            }
        };
        let at = range.start + b.below(range.len().max(1));
        if let Some(x) = bytes.get_mut(at) {
            *x = value;
        }
    }
    bytes
}

/// Whether `bytes` still holds, where `lib`'s manifest was, a manifest that says
/// what poolc writes for the spec (all but `generator`).
fn manifest_matches(setup: &Setup, lib: &Library, bytes: &[u8]) -> bool {
    let Some(region) = bytes.get(lib.manifest.clone()) else {
        return false;
    };
    let Some((0, text)) = region.split_last() else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    manifest::parse(text)
        .is_ok_and(|m| manifest::first_difference(&m, &setup.expected, &["generator"]).is_none())
}

/// What the loader did with one mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Loaded: the spec's own library with a matching manifest.
    Loaded,
    /// Refused after the dynamic loader opened it (or refused to).
    RefusedWhenOpened,
    /// Refused from its bytes, before the dynamic loader saw it.
    RefusedBeforeLoading,
}

/// Loads one mutant; panics when a property fails.
pub fn run(data: &[u8]) -> Verdict {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let setup = setup();
    let mut b = Bytes::new(data);
    let own = b.below(4) != 0;
    let lib = if own { &setup.own } else { &setup.other };
    let bytes = mutate(&mut b, lib);
    let path = std::env::temp_dir().join(format!(
        "poolc-fuzz-mutant-{}-{}.so",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: a library poolc built, with only its manifest, ELF identification
    // and section table mutated; its code and program headers are poolc's, and it
    // has no initialisers. No function of it is called.
    let result = unsafe { load::load(&path, &setup.program) };
    let _ = std::fs::remove_file(&path);
    let matches = own && manifest_matches(setup, lib, &bytes);
    let verdict = match &result {
        Ok(_) => Verdict::Loaded,
        Err(LoadError::Open { .. } | LoadError::MissingSymbol { .. }) => Verdict::RefusedWhenOpened,
        Err(_) => Verdict::RefusedBeforeLoading,
    };
    assert!(
        verdict == Verdict::RefusedBeforeLoading || matches,
        "{verdict:?} although the manifest does not match the spec ({result:?})"
    );
    if let Err(e) = &result {
        let message = e.to_string();
        assert!(
            message.contains(&path.display().to_string()),
            "a refusal that does not name the file: {message}"
        );
    }
    verdict
}
