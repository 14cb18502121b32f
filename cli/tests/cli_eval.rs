//! `poolc eval` and `poolc clif` as a user runs them: key values worked out by hand
//! from the seed's Ascend lanes, the JIT and `--interp` printing the same lines, and
//! the exit codes of each kind of mistake.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::process::Output;

use cli_support::poolc;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `poolc eval SPEC --pool POOL --site SITE ARGS…`.
fn eval(spec: &str, pool: &str, site: &str, args: &[&str]) -> Output {
    let mut all = vec!["eval", spec, "--pool", pool, "--site", site];
    all.extend_from_slice(args);
    poolc(&all)
}

fn ascend(inputs: &[&str], interp: bool) -> String {
    let mut args = inputs.to_vec();
    if interp {
        args.push("--interp");
    }
    let o = eval("examples/ascend.pool", "kv", "queue", &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o)
}

#[test]
fn eval_ascend_lanes_match_the_seed_by_hand() {
    // Lane key: immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3.
    let cases = [
        (
            ["prompt=300", "immediate=1", "waited=0", "serial=4"],
            "0.0\n4.0\n",
        ),
        (
            ["prompt=300", "immediate=0", "waited=3", "serial=4"],
            "1.0\n4.0\n",
        ),
        (
            ["prompt=300", "immediate=0", "waited=2.5", "serial=4"],
            "3.0\n4.0\n",
        ),
        (
            ["prompt=128", "immediate=0", "waited=9", "serial=4"],
            "2.0\n4.0\n",
        ),
        // NaN is true (E2): an immediate of NaN takes lane 0.
        (
            ["prompt=1", "immediate=NaN", "waited=0", "serial=-0"],
            "0.0\n-0.0\n",
        ),
    ];
    for (inputs, expected) in cases {
        assert_eq!(ascend(&inputs, false), expected, "JIT, {inputs:?}");
        assert_eq!(ascend(&inputs, true), expected, "interpreter, {inputs:?}");
    }
}

#[test]
fn eval_attribute_defaults_fill_inputs_not_given() {
    // ascend.pool declares `immediate = 0`, so it may be left out.
    assert_eq!(
        ascend(&["prompt=300", "waited=5", "serial=1"], false),
        "1.0\n1.0\n"
    );
}

#[test]
fn eval_spill_work_and_stage_time() {
    let o = eval("examples/tiered.pool", "kv", "work", &["units=16"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // work = units * 131072
    assert_eq!(stdout(&o), format!("{:?}\n", 16.0 * 131072.0));
    let o = eval(
        "examples/vllm_blackbox.pool",
        "engine",
        "time",
        &["prefill=1000", "decode=64"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // BLIS's fit: 5752.7 us + 17.25 us per prefill token + 6.00 us per decode token.
    assert_eq!(
        stdout(&o),
        format!("{:?}\n", 0.0057527 + 0.00001725 * 1000.0 + 0.000006 * 64.0)
    );
}

#[test]
fn eval_mistakes_name_what_is_wrong() {
    let o = eval("examples/ascend.pool", "kv", "queue", &["prompt=3"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("waited") && err.contains("serial"), "{err}");
    let o = eval("examples/ascend.pool", "nope", "queue", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no pool named `nope`"));
    let o = eval("examples/vllm.pool", "kv", "queue", &[]);
    assert_eq!(o.status.code(), Some(1), "a fifo pool has no queue keys");
    let o = eval("examples/vllm.pool", "kv", "sideways", &[]);
    assert_eq!(o.status.code(), Some(2), "an unknown site is a usage error");
}

#[test]
fn clif_lists_each_function_with_and_without_opt() {
    let o = poolc(&["clif", "examples/tiered.pool", "--pool", "kv"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    for symbol in [
        "; pool_kv_evict_key0",
        "; pool_kv_evict_key1",
        "; pool_kv_evict_cmp",
        "; pool_kv_evict_select",
        "; pool_kv_spill_pred",
        "; pool_kv_spill_work",
    ] {
        assert!(text.contains(symbol), "missing {symbol} in:\n{text}");
    }
    assert!(
        !text.contains("; stage_"),
        "--pool kv shows only kv's functions"
    );
    let o = poolc(&["clif", "examples/tiered.pool", "--pool", "kv", "--opt"]);
    assert!(o.status.success());
    let optimized = stdout(&o);
    assert_eq!(
        optimized.matches("; pool_kv_").count(),
        text.matches("; pool_kv_").count(),
        "--opt prints the same functions"
    );
}

/// R18 keys through `poolc eval --site preempt`: vLLM's priority victim keys
/// (examples/vllm_priority.pool) are the negated priority and arrival, the same from
/// the JIT and the interpreter; a pool that preempts lifo has no preempt keys.
#[test]
fn eval_preempt_keys_of_the_priority_spec() {
    for interp in [false, true] {
        let mut args = vec!["priority=3", "arrival=17"];
        if interp {
            args.push("--interp");
        }
        let o = eval("examples/vllm_priority.pool", "kv", "preempt", &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(stdout(&o), "-3.0\n-17.0\n");
    }
    let o = eval("examples/vllm.pool", "kv", "preempt", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("preempts by no keys"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
