//! Running the built `poolc` binary the way the command-line tests do: from the
//! crate root, so that relative paths such as `examples/vllm.pool` resolve, with the
//! environment left as the test runner set it. Each test judges the output itself.

use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// Runs `poolc ARGS…` from the crate root and waits for it.
pub fn poolc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the poolc binary runs")
}

/// Sends SIGINT to `child` and waits for it to exit, at most `limit`; past it the
/// child is killed and the test fails, naming `what` did not stop.
#[allow(dead_code)] // not every test crate that shares this module interrupts
pub fn interrupt(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return status;
        }
        if sent.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not stop within {} s of SIGINT", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
