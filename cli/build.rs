//! Build script of the `poolc` binary's crate, for its tests only: the page test
//! (tests/chart_page.rs) needs headless Chromium and the aarch64 build test
//! (tests/build_cli.rs) a cross linker; each is reported as ignored with the reason on
//! a machine without its tool (optional_tools.rs in the repository's
//! tests/build_support). The binary uses nothing it sets.

#[path = "../tests/build_support/optional_tools.rs"]
mod optional_tools;

fn main() {
    optional_tools::detect(&["build.rs", "../tests/build_support/optional_tools.rs"]);
}
