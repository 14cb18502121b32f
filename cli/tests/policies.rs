//! The policies of examples/policies/ that encode a rule worth pinning by hand, each
//! replayed as shipped (only `--set num_gpu_blocks` shrinks the memory) over a tiny
//! workload whose iterations are worked out below, against the same replay under
//! fifo.pool's LIFO victim. It reads the step log (docs/TRACES.md); the report's
//! figures are docs/POLICIES.md's business.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::poolc;
use serde_json::Value;

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("poolc-cli-policies-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `poolc run SPEC --trace TRACE --set num_gpu_blocks=BLOCKS --log …`, which must
/// succeed: the `preempted` list of every iteration line, by step.
fn preempted_by_step(dir: &Path, spec: &str, trace: &str, blocks: u32) -> Vec<Vec<u64>> {
    let log = dir.join(format!("{}.log", spec.replace('/', "_")));
    let set = format!("num_gpu_blocks={blocks}");
    let o = poolc(&[
        "run",
        spec,
        "--trace",
        trace,
        "--set",
        &set,
        "--log",
        log.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("step").is_some())
        .map(|v| {
            v["preempted"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// Two sessions arrive at 0 into 6 blocks of 16: A (serial 0, prompt 16) and B
/// (serial 1, prompt 48), 40 outputs each. Step 0 admits both (1 + 3 blocks) and
/// computes their prompts; from step 1 each decodes one token a step, so at the start
/// of step k A has computed 15 + k tokens and B 47 + k. Step 1 takes the sixth block
/// (A to 17 tokens, B to 49). At step 17 A (32 computed) grows into a third block and
/// B (64) into a fifth: 7 > 6, so A's grow preempts. Least-computed-first picks A
/// itself (32 < 64; R18: the grower is a candidate), and B goes on; LIFO picks B, the
/// newest admitted. Nothing is preempted before step 17.
#[test]
fn least_computed_first_preempts_the_resident_with_the_fewest_computed_tokens() {
    let dir = scratch("lcf");
    let trace = dir.join("two.jsonl");
    std::fs::write(
        &trace,
        "{\"arrival\": 0, \"prompt\": 16, \"output\": 40}\n\
         {\"arrival\": 0, \"prompt\": 48, \"output\": 40}\n",
    )
    .unwrap();
    let trace = trace.to_str().unwrap();
    for (spec, victim) in [
        ("examples/policies/least_computed_preempt.pool", 0),
        ("examples/policies/fifo.pool", 1),
    ] {
        let steps = preempted_by_step(&dir, spec, trace, 6);
        let first = steps.iter().position(|p| !p.is_empty());
        assert_eq!(first, Some(17), "{spec}: {steps:?}");
        assert_eq!(steps[17], vec![victim], "{spec}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
