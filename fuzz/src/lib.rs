//! The fuzz targets of docs/RELIABILITY.md, "Fuzzing": each is one function from
//! bytes to a verdict that panics when a property fails, so that the same code runs
//! under every driver — the seeded, bounded runs and the corpus replay of this
//! crate's tests (part of `cargo test`), and libFuzzer's coverage-guided runs
//! (fuzz/libfuzzer, built only by hand). The targets:
//!
//! - [`spec`] (a): source → check → IR → JIT;
//! - [`jit_interp`] (b): the JIT equals the interpreter on whole generated specs;
//! - [`traces`] (c): each trace reader on any file;
//! - [`library`] (d): the shared-object loader on mutated libraries;
//! - [`engine`] (e): the engine's public API on call sequences.
//!
//! Inputs are read through [`Bytes`]. The targets never print, never write a file
//! other than their own temporary ones, and hold no state between inputs but what
//! they build once (target d's libraries).

mod bytes;
pub mod engine;
pub mod jit_interp;
pub mod library;
pub mod spec;
pub mod traces;

pub use bytes::{Bytes, CORNERS};

/// A target as its drivers call it: the verdict is dropped, a failure panics.
pub type Target = fn(&[u8]);

/// The targets by the names of their corpus folders and libFuzzer binaries.
pub const TARGETS: [(&str, Target); 5] = [
    ("spec", |d| {
        let _ = spec::run(d);
    }),
    ("jit_interp", |d| {
        let _ = jit_interp::run(d);
    }),
    ("traces", |d| {
        let _ = traces::run(d);
    }),
    ("library", |d| {
        let _ = library::run(d);
    }),
    ("engine", |d| {
        let _ = engine::run(d);
    }),
];
