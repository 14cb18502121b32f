//! Running the built `poolc` binary the way the command-line tests do: from the
//! crate root, so that relative paths such as `examples/vllm.pool` resolve, with the
//! environment left as the test runner set it. Each test judges the output itself.

use std::process::{Command, Output};

/// Runs `poolc ARGS…` from the crate root and waits for it.
pub fn poolc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the poolc binary runs")
}
