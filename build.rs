//! Build script of the compiler crate, for its tests only: the aarch64 comparison
//! (tests/build_aarch64.rs) needs a cross linker and qemu, and is reported as ignored
//! with the reason on a machine without them (tests/build_support/optional_tools.rs).
//! The library uses nothing it sets.

#[path = "tests/build_support/optional_tools.rs"]
mod optional_tools;

fn main() {
    optional_tools::detect(&["build.rs", "tests/build_support/optional_tools.rs"]);
}
