//! Tests of `poolc_tools::eval` (the library side of `poolc eval`): site values by the JIT
//! and by the interpreter on inputs named as the source names them, the mapping of
//! the derived names `waited` and `age`, defaults, and every error a person can
//! provoke from the command line. Specs are inline so each test shows its policy.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::assign::AssignmentError;
use poolc::{Compiled, Options, compile};
use poolc_tools::eval::{Backend, EvalError, Site, eval_site, parse_input, render};

const SPEC: &str = r#"
session { prompt; output; priority = 0; immediate = 0; }
stage engine { step; budget 8192; time (0.005 + 0.00002 * tokens); }
stage pcie { link; rate 25e9; }
pool host { cap 1000000; block 16; }
pool kv {
  cap 65536;
  block 16;
  evict by (priority, age, -waiting);
  preempt lifo;
  queue by (immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3, serial, computed - free(kv));
  admit via engine;
  spill host via pcie (units * 131072) when (size >= 64);
}
pool plain { cap 10; }
"#;

fn compiled() -> Compiled {
    compile(SPEC, &Options::default()).unwrap_or_else(|d| panic!("test spec must compile: {d:#?}"))
}

fn inputs(text: &[&str]) -> Vec<(String, f64)> {
    text.iter()
        .map(|t| parse_input(t).expect("test inputs parse"))
        .collect()
}

/// Both backends, which must agree bit for bit (NaN with NaN).
fn both(c: &Compiled, pool: &str, site: Site, given: &[&str]) -> Result<Vec<f64>, EvalError> {
    let given = inputs(given);
    let jit = eval_site(c, pool, site, &given, Backend::Jit);
    let interp = eval_site(c, pool, site, &given, Backend::Interp);
    match (&jit, &interp) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!(
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                    "jit {x:?} interp {y:?}"
                );
            }
        }
        _ => assert_eq!(jit, interp, "both backends fail alike"),
    }
    jit
}

#[test]
fn queue_keys_by_source_names_with_waited_mapped_onto_now() {
    let c = compiled();
    let long_aged = both(
        &c,
        "kv",
        Site::Queue,
        &[
            "prompt=200",
            "waited=3",
            "serial=7",
            "computed=32",
            "free(kv)=100",
        ],
    );
    assert_eq!(long_aged, Ok(vec![1.0, 7.0, -68.0]));
    let long_fresh = both(
        &c,
        "kv",
        Site::Queue,
        &[
            "prompt=200",
            "waited=2.5",
            "serial=7",
            "computed=0",
            "free(kv)=0",
        ],
    );
    assert_eq!(long_fresh, Ok(vec![3.0, 7.0, 0.0]));
    // `immediate` given overrides its default of 0.
    let urgent = both(
        &c,
        "kv",
        Site::Queue,
        &[
            "immediate=1",
            "prompt=200",
            "waited=0",
            "serial=0",
            "computed=0",
            "free(kv)=0",
        ],
    );
    assert_eq!(urgent.map(|v| v[0]), Ok(0.0));
    // With `now` given, enqueued = now − waited.
    let with_now = both(
        &c,
        "kv",
        Site::Queue,
        &[
            "prompt=200",
            "now=10",
            "waited=4",
            "serial=1",
            "computed=0",
            "free(kv)=0",
        ],
    );
    assert_eq!(with_now.map(|v| v[0]), Ok(1.0));
}

#[test]
fn special_values_reach_the_keys_unchanged() {
    let c = compiled();
    let got = both(
        &c,
        "kv",
        Site::Queue,
        &[
            "prompt=NaN",
            "waited=inf",
            "serial=-0",
            "computed=inf",
            "free(kv)=inf",
        ],
    )
    .expect("all inputs given");
    // NaN > 128 is false, NaN <= 128 is false: lane 3. inf − inf is NaN.
    assert_eq!(got[0], 3.0);
    assert_eq!(got[1].to_bits(), (-0.0f64).to_bits());
    assert!(got[2].is_nan());
    assert_eq!(render(&got), "3.0\n-0.0\nNaN\n");
}

#[test]
fn evict_keys_map_age_onto_now_and_last() {
    let c = compiled();
    assert_eq!(
        both(&c, "kv", Site::Evict, &["age=5", "waiting=2"]),
        Ok(vec![0.0, 5.0, -2.0])
    );
    assert_eq!(
        both(
            &c,
            "kv",
            Site::Evict,
            &["priority=3", "now=10", "age=4", "waiting=0"]
        ),
        Ok(vec![3.0, 4.0, -0.0])
    );
    assert_eq!(
        both(&c, "kv", Site::Evict, &["last=2", "age=4", "waiting=1"]),
        Ok(vec![0.0, 4.0, -1.0])
    );
}

#[test]
fn spill_pred_and_work_read_size_and_units() {
    let c = compiled();
    assert_eq!(both(&c, "kv", Site::Pred, &["size=64"]), Ok(vec![1.0]));
    assert_eq!(both(&c, "kv", Site::Pred, &["size=63"]), Ok(vec![0.0]));
    assert_eq!(
        both(&c, "kv", Site::Work, &["units=16"]),
        Ok(vec![16.0 * 131072.0])
    );
}

#[test]
fn stage_time_reads_tokens() {
    let c = compiled();
    assert_eq!(
        both(&c, "engine", Site::Time, &["tokens=1000"]),
        Ok(vec![0.005 + 0.00002 * 1000.0])
    );
}

#[test]
fn r29_a_time_with_sum_is_evaluated_for_one_session_with_the_inputs_given() {
    let spec = "session { prompt; output; }\n\
                stage engine { step; time (0.001 * residents + sum(prefill * (computed + prompt))); }";
    let c = compile(spec, &Options::default()).unwrap();
    // One session: 100 prefill tokens after 20 computed, prompt 500.
    let given = ["residents=1", "prefill=100", "computed=20", "prompt=500"];
    assert_eq!(
        both(&c, "engine", Site::Time, &given),
        Ok(vec![0.001 + 100.0 * (20.0 + 500.0)])
    );
    let err = both(&c, "engine", Site::Time, &["residents=1", "prefill=100"]).unwrap_err();
    let EvalError::MissingInputs { names, .. } = &err else {
        panic!("wrong error {err:?}")
    };
    assert_eq!(names, &["computed", "prompt"]);
}

#[test]
fn missing_inputs_are_named_as_the_source_names_them() {
    let c = compiled();
    let err = both(&c, "kv", Site::Queue, &["prompt=1"])
        .expect_err("serial, waited, computed, free(kv) missing");
    let EvalError::MissingInputs { names, .. } = &err else {
        panic!("wrong error {err:?}")
    };
    for name in ["waited", "serial", "computed", "free(kv)"] {
        assert!(names.contains(&name.to_string()), "{name} not in {names:?}");
    }
    assert!(
        !names.contains(&"now".to_string()),
        "waited is asked for, not now: {names:?}"
    );
    assert!(err.to_string().contains("waited=VALUE"), "{err}");
    let err = both(&c, "kv", Site::Evict, &["waiting=1"]).expect_err("age missing");
    assert_eq!(
        err,
        EvalError::MissingInputs {
            site: Site::Evict,
            names: vec!["age".into()]
        }
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let c = compiled();
    let err = both(&c, "nope", Site::Queue, &[]).expect_err("unknown pool");
    assert!(
        err.to_string().contains("no pool named `nope`") && err.to_string().contains("`kv`"),
        "{err}"
    );
    let err = both(&c, "plain", Site::Queue, &[]).expect_err("fifo pool");
    assert!(err.to_string().contains("queues fifo"), "{err}");
    let err = both(&c, "plain", Site::Evict, &[]).expect_err("lru pool");
    assert!(err.to_string().contains("evicts lru"), "{err}");
    let err = both(&c, "plain", Site::Pred, &[]).expect_err("no spill");
    assert!(err.to_string().contains("does not spill"), "{err}");
    let err = both(&c, "kv", Site::Time, &[]).expect_err("kv is not a stage");
    assert!(err.to_string().contains("no stage named `kv`"), "{err}");
    let err = both(&c, "kv", Site::Queue, &["colour=1"]).expect_err("unknown input");
    assert_eq!(err, EvalError::UnknownInput("colour".into()));
    let err = both(&c, "kv", Site::Queue, &["free(nowhere)=1"]).expect_err("unknown query target");
    assert_eq!(err, EvalError::UnknownInput("free(nowhere)".into()));
    assert_eq!(
        Site::from_name("queues"),
        Err(EvalError::UnknownSite("queues".into()))
    );
    assert_eq!(
        parse_input("prompt"),
        Err(EvalError::BadInput(AssignmentError::NoEquals {
            text: "prompt".into()
        }))
    );
    assert_eq!(
        parse_input("prompt=lots"),
        Err(EvalError::BadInput(AssignmentError::NotANumber {
            value: "lots".into()
        }))
    );
    assert_eq!(
        parse_input("free( kv )=-inf"),
        Ok(("free(kv)".into(), f64::NEG_INFINITY))
    );
}
