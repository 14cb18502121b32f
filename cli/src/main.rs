//! The `poolc` binary: parse the command line, run the command, turn the outcome into
//! an exit code. All the work is in the library; only this file and the `cli` module
//! (`cli.rs`, `cli/*.rs`) print or choose exit codes.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::install_panic_hook();
    cli::run()
}
