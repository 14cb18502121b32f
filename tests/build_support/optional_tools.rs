//! Which optional tools this machine has, for the build scripts of the crates whose
//! tests need them (build.rs, cli/build.rs): each missing tool sets a cfg
//! `missing_<tool>`, and a test that needs it carries
//! `#[cfg_attr(missing_<tool>, ignore = "needs …")]`, so the test runner reports it as
//! ignored with the reason instead of passing it silently. Under `CI` no tool is
//! missing by decree: every such test runs, and fails if its tool is absent (.ci/run
//! installs them). It only looks on PATH; it runs nothing.

use std::path::Path;

/// A tool some test needs: the cfg set when it is missing, and the commands any one
/// of which provides it.
pub struct Tool {
    pub cfg: &'static str,
    pub commands: &'static [&'static str],
}

/// Every optional tool of the test suites; a crate's tests read the cfgs they need.
const TOOLS: [Tool; 3] = [
    Tool {
        cfg: "missing_aarch64_cross",
        commands: &["aarch64-linux-gnu-gcc"],
    },
    Tool {
        cfg: "missing_qemu_aarch64",
        commands: &["qemu-aarch64"],
    },
    Tool {
        cfg: "missing_chromium",
        commands: &["chromium", "chromium-browser"],
    },
];

/// Declares each tool's cfg to the compiler and sets it when the tool is missing.
/// The script runs again when PATH or CI changes, or when one of `sources` (the build
/// script and this file, relative to the crate) does; a tool installed into a folder
/// already on PATH is seen after `touch build.rs`.
pub fn detect(sources: &[&str]) {
    for s in sources {
        println!("cargo::rerun-if-changed={s}");
    }
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    let ci = std::env::var_os("CI").is_some();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in &TOOLS {
        println!("cargo::rustc-check-cfg=cfg({})", tool.cfg);
        let found = tool
            .commands
            .iter()
            .any(|c| std::env::split_paths(&path).any(|d| is_executable(&d.join(c))));
        if !found && !ci {
            println!("cargo::rustc-cfg={}", tool.cfg);
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
