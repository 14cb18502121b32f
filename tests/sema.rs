//! Semantic analysis pinned rule by rule: the IR it builds (folded constants, slots,
//! layouts, read-sets, joins) and the diagnostics it gives, checked through the public
//! `poolc::check` entry point. Rendered diagnostics are snapshot-tested in tests/ui.
//! A test that pins what sema builds as a whole also compares the IR's dump with an
//! inline insta snapshot through the one `check!` helper (ir_dump.rs does the same
//! for the example specs, as file snapshots); it must not replace the assertions that
//! pin a rule on the IR's types.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::diag::Diagnostic;
use poolc::ir::*;
use poolc::{Options, check};

fn ok(src: &str) -> Program {
    match check(src, &Options::default()) {
        Ok(p) => p,
        Err(d) => panic!("expected a clean spec, got {d:#?}"),
    }
}

fn errs(src: &str) -> Vec<Diagnostic> {
    errs_with(src, &Options::default())
}

fn errs_with(src: &str, options: &Options) -> Vec<Diagnostic> {
    match check(src, options) {
        Ok(p) => panic!("expected diagnostics, got a program: {p:#?}"),
        Err(d) => d,
    }
}

/// The IR dump (`poolc ir`, `poolc::ir::dump`) of a clean spec against an inline
/// snapshot: the one helper through which a test pins what sema builds as a whole,
/// so it reads as the source and the IR a reviewer checked. The assertions beside it
/// pin the rule itself on the IR's types.
macro_rules! check {
    ($src:expr, @$expect:literal) => {
        insta::assert_snapshot!(poolc::ir::dump(&ok($src)), @$expect)
    };
}

fn codes(d: &[Diagnostic]) -> Vec<&'static str> {
    d.iter().map(|d| d.code).collect()
}

fn queue_keys(p: &Program, pool: &str) -> Vec<SiteExpr> {
    let id = p.find_pool(pool).expect("pool exists");
    match &p.pool(id).queue {
        QueuePolicy::By(k) => k.clone(),
        QueuePolicy::Fifo => panic!("pool {pool} is fifo"),
    }
}

#[test]
fn d1_constants_fold_through_other_constants_declared_later() {
    let src =
        "pool kv { cap a * b; block b; } const a = 4 + c; const b = 16; const c = max(1, 2) * 2;";
    let p = ok(src);
    let kv = p.pool(PoolId(0));
    assert_eq!(kv.cap, Limit::Finite(128));
    assert_eq!(kv.block, Some(16));
    check!(src, @r"
        const a = 8
        const b = 16
        const c = 4
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
        pool kv
          cap 128, block 16
          preempt none
          admit at every settle
          queue fifo
          evict lru
    ");
}

#[test]
fn d1_cycle_is_reported_once_naming_every_member() {
    let d = errs("const a = b + 1; const b = c; const c = a; pool kv { cap a; }");
    assert_eq!(codes(&d), vec!["D1"]);
    assert!(
        d[0].message.contains("`a` → `b` → `c` → `a`"),
        "{}",
        d[0].message
    );
    assert_eq!(d[0].labels.len(), 3);
}

#[test]
fn d2_set_replaces_a_param_and_rejects_anything_else() {
    let src = "param blocks = 10; const bt = 16; pool kv { cap blocks * bt; }";
    let p = check(
        src,
        &Options {
            set: vec![("blocks".into(), 100.0)],
        },
    )
    .expect("clean");
    assert_eq!(p.pool(PoolId(0)).cap, Limit::Finite(1600));
    let d = errs_with(
        src,
        &Options {
            set: vec![("bt".into(), 1.0)],
        },
    );
    assert_eq!(codes(&d), vec!["D2"]);
    assert!(d[0].message.contains("only a `param` can be set"));
    let d = errs_with(
        src,
        &Options {
            set: vec![("blokcs".into(), 1.0)],
        },
    );
    assert_eq!(codes(&d), vec!["D2"]);
    assert_eq!(d[0].notes, vec!["did you mean `blocks`?".to_string()]);
}

#[test]
fn d3_builtins_come_first_and_defaults_are_evaluated() {
    let src = "const two = 2; session { prompt; priority = two * 3; }";
    let p = ok(src);
    let names: Vec<&str> = p.session.attrs.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["serial", "arrival", "prompt", "priority"]);
    assert_eq!(p.session.attrs[2].default, None);
    assert_eq!(p.session.attrs[3].default, Some(6.0));
    assert!(p.session.attrs[0].builtin && !p.session.attrs[2].builtin);
    check!(src, @r"
        const two = 2
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
          attr 2 prompt (required)
          attr 3 priority (default 6)
    ");
}

#[test]
fn d5_evict_lru_and_evict_by_are_the_same_option() {
    let d = errs("pool kv { evict lru; evict by (size); }");
    assert_eq!(codes(&d), vec!["D5"]);
    assert_eq!(d[0].labels.len(), 2);
}

#[test]
fn d6_values_are_shown_as_evaluated() {
    let d = errs("const z = 1 - 1; pool kv { block z; cap 2.5; } stage s { step; seats -1; }");
    assert_eq!(codes(&d), vec!["D6", "D6", "D6"]);
    assert!(d[0].message.ends_with("evaluates to 0"), "{}", d[0].message);
    assert!(
        d[1].message.ends_with("evaluates to 2.5"),
        "{}",
        d[1].message
    );
    assert!(
        d[2].message.ends_with("evaluates to -1"),
        "{}",
        d[2].message
    );
}

#[test]
fn d6_inf_is_a_valid_cap_but_not_a_block() {
    let p = ok("pool kv { cap inf; }");
    assert_eq!(p.pool(PoolId(0)).cap, Limit::Unbounded);
    assert_eq!(codes(&errs("pool kv { block inf; }")), vec!["D6"]);
}

#[test]
fn d7_every_kind_of_name_shares_one_namespace() {
    let d = errs("pool x { } stage x { link; }");
    assert_eq!(codes(&d), vec!["D7"]);
    let d = errs("const prompt = 1; session { prompt; }");
    assert_eq!(codes(&d), vec!["D7"]);
}

#[test]
fn s1_waited_expands_to_now_minus_enqueued() {
    let src = "pool kv { queue by (waited); }";
    let p = ok(src);
    let keys = queue_keys(&p, "kv");
    let layout = &p.pool(PoolId(0)).queue_layout;
    assert_eq!(layout.row, vec![Input::Enqueued]);
    assert_eq!(layout.ctx, vec![Input::Var(Var::Now)]);
    assert_eq!(
        keys[0].expr,
        Expr::Binary(
            BinaryOp::Sub,
            Box::new(Expr::Slot(Slot::Ctx(0))),
            Box::new(Expr::Slot(Slot::Row(0)))
        )
    );
    assert!(keys[0].reads.contains(Read::Var(Var::Waited)));
    assert!(!keys[0].reads.is_fixed());
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
        pool kv
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue by
            key 0 = ctx.now - row.enqueued
              reads {waited} (per attempt)
          queue layout: row [0:enqueued] ctx [0:now]
          evict lru
    ");
}

#[test]
fn s1_key_reading_only_attributes_and_header_is_fixed() {
    let src = "session { priority = 0; } pool kv { queue by (priority, units + reserve, serial, computed); }";
    let p = ok(src);
    let keys = queue_keys(&p, "kv");
    assert!(keys[0].reads.is_fixed());
    assert!(keys[1].reads.is_fixed());
    assert!(keys[2].reads.is_fixed());
    assert!(!keys[3].reads.is_fixed(), "computed changes with the cache");
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
          attr 2 priority (default 0)
        pool kv
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue by
            key 0 = row.priority
              reads {priority} (fixed)
            key 1 = row.units + row.reserve
              reads {units, reserve} (fixed)
            key 2 = row.serial
              reads {serial} (fixed)
            key 3 = row.computed
              reads {computed} (per attempt)
          queue layout: row [0:serial 1:priority 2:units 3:reserve 4:computed] ctx []
          evict lru
    ");
}

#[test]
fn s1_layout_is_shared_by_all_keys_of_a_site_and_dense() {
    let src = "session { priority = 0; } pool kv { queue by (priority * now, serial, priority); }";
    let p = ok(src);
    let l = &p.pool(PoolId(0)).queue_layout;
    // Inputs in `Input` order: serial (AttrId 0) before priority (AttrId 2).
    assert_eq!(l.row, vec![Input::Attr(AttrId(0)), Input::Attr(AttrId(2))]);
    assert_eq!(l.ctx, vec![Input::Var(Var::Now)]);
    let keys = queue_keys(&p, "kv");
    assert_eq!(keys[1].expr, Expr::Slot(Slot::Row(0)));
    assert_eq!(keys[2].expr, Expr::Slot(Slot::Row(1)));
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
          attr 2 priority (default 0)
        pool kv
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue by
            key 0 = row.priority * ctx.now
              reads {priority, now} (per attempt)
            key 1 = row.serial
              reads {serial} (fixed)
            key 2 = row.priority
              reads {priority} (fixed)
          queue layout: row [0:serial 1:priority] ctx [0:now]
          evict lru
    ");
}

#[test]
fn s1_entry_sites_share_one_layout_with_units_in_ctx() {
    let src = "stage l { link; } pool t { } session { priority = 0; }
        pool kv { evict by (priority, age); spill t via l (units * 2) when (size >= 64); }";
    let p = ok(src);
    let kv = p.pool(p.find_pool("kv").unwrap());
    let l = &kv.entry_layout;
    assert_eq!(
        l.row,
        vec![
            Input::Attr(AttrId(2)),
            Input::Var(Var::Size),
            Input::Var(Var::Last)
        ]
    );
    assert_eq!(l.ctx, vec![Input::Var(Var::Now), Input::Var(Var::Units)]);
    let spill = kv.spill.as_ref().unwrap();
    assert_eq!(
        spill.work.expr,
        Expr::Binary(
            BinaryOp::Mul,
            Box::new(Expr::Slot(Slot::Ctx(1))),
            Box::new(Expr::Const(2.0))
        )
    );
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
          attr 2 priority (default 0)
        stage l: link
          rate inf
        pool t
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue fifo
          evict lru
        pool kv
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue fifo
          evict by
            key 0 = row.priority
              reads {priority}
            key 1 = ctx.now - row.last
              reads {age}
          spill to t (member for member) via l (member for member)
            work = ctx.units * 2
              reads {units}
            when = row.size >= 64
              reads {size}
          entry layout: row [0:priority 1:size 2:last] ctx [0:now 1:units]
    ");
}

#[test]
fn s1_each_site_rejects_what_it_may_not_read() {
    let cases = [
        (
            "pool kv { queue by (size); }",
            "queue keys may not read the context variable `size`",
        ),
        (
            "pool kv { evict by (waited); }",
            "evict keys may not read the context variable `waited`",
        ),
        (
            "pool kv { evict by (free(kv)); }",
            "evict keys may not read queries such as `free(…)`",
        ),
        (
            "session { p = 1; } stage s { step; time (p); }",
            "stage time may not read the session attribute `p`",
        ),
        (
            "session { p = 1; } pool kv { cap p; }",
            "constant expressions may not read the session attribute `p`",
        ),
        ("pool kv { queue by (draw(1)); }", "queue keys may not draw"),
        ("pool kv { evict by (draw()); }", "evict keys may not draw"),
    ];
    for (src, message) in cases {
        let d = errs(src);
        assert_eq!(codes(&d), vec!["S1"], "{src}");
        assert_eq!(d[0].message, message, "{src}");
        assert!(d[0].notes[0].contains("may read:"), "{src}");
    }
}

#[test]
fn unknown_name_suggests_a_readable_near_miss() {
    let d = errs("session { priority = 0; } pool kv { queue by (priorty); }");
    assert_eq!(codes(&d), vec!["name"]);
    assert_eq!(d[0].notes, vec!["did you mean `priority`?".to_string()]);
    // A near miss the site may not read is not suggested.
    let d = errs("pool kv { evict by (waitd); }");
    assert_eq!(d[0].notes, Vec::<String>::new());
}

#[test]
fn e4_arity_and_unknown_functions() {
    assert_eq!(
        errs("pool kv { cap sqrt(1, 2); }")[0].message,
        "`sqrt` takes 1 argument, but 2 arguments were given"
    );
    assert_eq!(
        errs("pool kv { cap min(1); }")[0].message,
        "`min` takes 2 or more arguments, but 1 argument was given"
    );
    let d = errs("pool kv { cap sqr(4); }");
    assert_eq!(codes(&d), vec!["E4"]);
    assert!(d[0].notes.contains(&"did you mean `sqrt`?".to_string()));
}

#[test]
fn e6_queries_join_by_k1_or_name_a_member() {
    let src = "pool kv[4] { queue by (free(kv), used(host), cap(kv[3])); } pool host { }";
    let p = ok(src);
    let keys = queue_keys(&p, "kv");
    let l = &p.pool(PoolId(0)).queue_layout;
    let q = |kind, target| Input::Query(Query { kind, target });
    assert_eq!(
        l.ctx,
        vec![
            q(QueryKind::Free, QueryTarget::Pool(PoolId(0), Member::Same)),
            q(
                QueryKind::Used,
                QueryTarget::Pool(PoolId(1), Member::Index(0))
            ),
            q(
                QueryKind::Cap,
                QueryTarget::Pool(PoolId(0), Member::Index(3))
            ),
        ]
    );
    assert_eq!(keys.len(), 3);
    assert_eq!(
        codes(&errs("pool kv[4] { queue by (free(kv[4])); }")),
        vec!["E6"]
    );
    assert_eq!(
        codes(&errs("pool kv[4] { queue by (free(h)); } pool h[2] { }")),
        vec!["K1"]
    );
    assert_eq!(
        codes(&errs("pool kv { queue by (budget_left(kv)); }")),
        vec!["E6"]
    );
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
        pool kv[4]
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue by
            key 0 = ctx.free(kv)
              reads {free(kv)} (per attempt)
            key 1 = ctx.used(host[0])
              reads {used(host[0])} (per attempt)
            key 2 = ctx.cap(kv[3])
              reads {cap(kv[3])} (per attempt)
          queue layout: row [] ctx [0:free(kv) 1:used(host[0]) 2:cap(kv[3])]
          evict lru
        pool host
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue fifo
          evict lru
    ");
}

#[test]
fn k1_admit_via_joins_and_rejects_other_counts() {
    let src = "stage e[4] { step; } pool kv[4] { admit via e; } pool one { admit via e; }";
    let p = ok(src);
    assert_eq!(
        p.pool(PoolId(0)).admit_via.unwrap().rule,
        JoinRule::MemberForMember
    );
    assert_eq!(
        p.pool(PoolId(1)).admit_via.unwrap().rule,
        JoinRule::SharedSource
    );
    let d = errs("stage e[3] { step; } pool kv[4] { admit via e; }");
    assert_eq!(codes(&d), vec!["K1"]);
    assert!(
        d[0].message.contains("`kv` has 4 members and `e` has 3"),
        "{}",
        d[0].message
    );
    assert_eq!(d[0].labels.len(), 2, "names both declarations");
    check!(src, @r"
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
        stage e[4]: step
          budget inf, seats inf, chunk inf, exclusive prefill off
          time = 0
            reads {}
          time layout: row [] ctx []
        pool kv[4]
          cap inf, block none (1)
          preempt none
          admit via e (member for member)
          queue fifo
          evict lru
        pool one
          cap inf, block none (1)
          preempt none
          admit via e (every member serves the one)
          queue fifo
          evict lru
    ");
}

#[test]
fn k2_kinds_and_spill_cycles() {
    assert_eq!(
        codes(&errs("stage l { link; } pool kv { admit via l; }")),
        vec!["K2"]
    );
    assert_eq!(
        codes(&errs(
            "stage s { step; } pool t { } pool kv { spill t via s (1) when (1); }"
        )),
        vec!["K2"]
    );
    assert_eq!(
        codes(&errs(
            "stage l { link; } pool kv { spill kv via l (1) when (1); }"
        )),
        vec!["K2"]
    );
    let d = errs(
        "stage l { link; } pool a { spill b via l (1) when (1); } pool b { spill c via l (1) when (1); } pool c { spill a via l (1) when (1); }",
    );
    assert_eq!(codes(&d), vec!["K2"]);
    assert!(
        d[0].message.contains("`a` → `b` → `c` → `a`"),
        "{}",
        d[0].message
    );
}

#[test]
fn r18_preempt_keys_read_a_resident_row_and_the_moment() {
    // Attributes by id (serial 0, arrival 1, priority 2), then `units`, `computed`,
    // `admitted` in the row (per resident); `now` and the query in the ctx.
    let src = "stage e { step; } session { priority = 0; }
        pool kv { preempt by (-priority, units - computed, now - admitted, free(kv), serial);
                  requeue keyed; admit via e; }";
    let p = ok(src);
    let kv = p.pool(p.find_pool("kv").unwrap());
    let l = &kv.resident_layout;
    assert_eq!(
        l.row,
        vec![
            Input::Attr(AttrId(0)),
            Input::Attr(AttrId(2)),
            Input::Var(Var::Units),
            Input::Var(Var::Computed),
            Input::Var(Var::Admitted)
        ]
    );
    assert_eq!(l.ctx.len(), 2);
    assert_eq!(l.ctx[0], Input::Var(Var::Now));
    assert!(matches!(l.ctx[1], Input::Query(_)));
    let PreemptMode::By(keys) = &kv.preempt else {
        panic!("preempt by")
    };
    assert_eq!(keys.len(), 5);
    assert_eq!(
        keys[2].expr,
        Expr::Binary(
            BinaryOp::Sub,
            Box::new(Expr::Slot(Slot::Ctx(0))),
            Box::new(Expr::Slot(Slot::Row(4)))
        )
    );
    assert_eq!(kv.requeue, Requeue::Keyed);
    // The queue and entry layouts are untouched by preempt keys.
    assert!(kv.queue_layout.row.is_empty() && kv.entry_layout.row.is_empty());
}

#[test]
fn r20_stage_time_reads_context_and_queue_keys_may_not() {
    let p = ok("stage e { step; time (0.005 + 0.00000004 * context + 0.00001 * prefill); }");
    let (_, time_layout) = p.stage(p.find_stage("e").unwrap()).time();
    assert_eq!(
        time_layout.ctx,
        vec![Input::Var(Var::Prefill), Input::Var(Var::Context)]
    );
    let d = errs("stage e { step; } pool kv { queue by (context); admit via e; }");
    assert_eq!(codes(&d), vec!["S1"]);
    let d = errs("session { context; }");
    assert_eq!(codes(&d), vec!["D3"]);
}

#[test]
fn r29_a_sum_reads_take_rows_and_the_same_name_outside_it_the_totals() {
    let p = ok("session { prompt; } \
                stage e { step; time (0.001 * tokens + sum(tokens * (computed + prompt))); }");
    let (time, layout) = p.stage(p.find_stage("e").unwrap()).time();
    // `tokens` is a ctx slot (the total) and a row slot (one take's), apart.
    assert_eq!(layout.ctx, vec![Input::Var(Var::Tokens)]);
    let prompt = Input::Attr(p.session.find("prompt").unwrap());
    assert_eq!(
        layout.row,
        vec![prompt, Input::Var(Var::Computed), Input::Var(Var::Tokens)]
    );
    let row = |i| Box::new(Expr::Slot(Slot::Row(i)));
    let term = Expr::Binary(
        BinaryOp::Mul,
        row(2),
        Box::new(Expr::Binary(BinaryOp::Add, row(1), row(0))),
    );
    assert_eq!(
        time.expr,
        Expr::Binary(
            BinaryOp::Add,
            Box::new(Expr::Binary(
                BinaryOp::Mul,
                Box::new(Expr::Const(0.001)),
                Box::new(Expr::Slot(Slot::Ctx(0)))
            )),
            Box::new(Expr::Sum(Box::new(term)))
        )
    );
    // A sum of a constant is not folded: it counts the takes.
    let p = ok("stage e { step; time (sum(2 * 3)); }");
    let (time, layout) = p.stage(p.find_stage("e").unwrap()).time();
    assert_eq!(time.expr, Expr::Sum(Box::new(Expr::Const(6.0))));
    assert!(layout.row.is_empty() && layout.ctx.is_empty());
}

#[test]
fn r12_a_spill_predicate_that_reads_size_is_warned_not_refused() {
    let src = "stage l { link; } pool t { } pool kv { spill t via l (units) when (size >= 64); }";
    let (_, warnings) = poolc::check_with_warnings(src, &Options::default()).expect("valid");
    assert_eq!(codes(&warnings), vec!["R12"]);
    assert_eq!(warnings[0].severity, poolc::diag::Severity::Warning);
    let span = warnings[0].primary_span().expect("a span");
    assert_eq!(&src[span.start as usize..span.end as usize], "size");
    let ok = "stage l { link; } pool t { } pool kv { spill t via l (units) when (last > 3); }";
    let (_, warnings) = poolc::check_with_warnings(ok, &Options::default()).expect("valid");
    assert!(warnings.is_empty());
}

/// The R28 warnings of a spec with one engine and `pool kv` queued by `keys`, each as
/// its code and the source text of its primary span.
fn r28(decls: &str, keys: &str) -> Vec<(&'static str, String)> {
    let src = format!(
        "{decls} session {{ prompt; output; priority = 0; }} stage e {{ step; }} \
         pool kv {{ queue by ({keys}); admit via e; }}"
    );
    let (_, warnings) = poolc::check_with_warnings(&src, &Options::default()).expect("valid");
    warnings
        .iter()
        .map(|w| {
            let span = w.primary_span().expect("a span");
            (
                w.code,
                src[span.start as usize..span.end as usize].to_string(),
            )
        })
        .collect()
}

#[test]
fn r28_a_key_a_newcomer_can_beat_ahead_of_any_aging_key_is_warned_at_that_key() {
    // Strict priority (vLLM's priority policy), the largest prefix first, fits-first:
    // a steady stream of sessions that beat a waiting one on the first key that
    // tells them apart is always selected first.
    assert_eq!(
        r28("", "priority, serial"),
        vec![("R28", "priority".to_string())]
    );
    assert_eq!(
        r28("", "-computed, serial"),
        vec![("R28", "-computed".to_string())]
    );
    assert_eq!(
        r28("", "reserve <= free(kv) ? 0 : 1, serial"),
        vec![("R28", "reserve <= free(kv) ? 0 : 1".to_string())]
    );
    // Keys equal for every hold at a selection are passed over to the next one.
    assert_eq!(
        r28("", "queued(kv), 3, prompt"),
        vec![("R28", "prompt".to_string())]
    );
}

#[test]
fn r28_a_key_that_grows_while_a_session_waits_is_warned() {
    // Last come, first served, and keys that rise with waiting.
    assert_eq!(r28("", "-arrival"), vec![("R28", "-arrival".to_string())]);
    assert_eq!(r28("", "waited"), vec![("R28", "waited".to_string())]);
    assert_eq!(
        r28("", "now - arrival"),
        vec![("R28", "now - arrival".to_string())]
    );
    // A param read as a negative aging rate makes waiting hurt.
    assert_eq!(
        r28("param k = -2;", "prompt - k * waited, serial"),
        vec![("R28", "prompt - k * waited".to_string())]
    );
    // Two trends R28 cannot order: warned, conservatively.
    assert_eq!(
        r28("", "waited * prompt"),
        vec![("R28", "waited * prompt".to_string())]
    );
}

#[test]
fn r28_a_queue_whose_first_telling_key_ages_is_not_warned() {
    for keys in [
        "serial",
        "arrival, prompt",
        "prompt - 200 * waited, serial",
        "queued(kv), prompt / 100 - waited",
        "2 * serial - 3 * waited + output",
        "arrival - now",
        "7, -(waited - prompt)",
    ] {
        assert_eq!(r28("", keys), vec![], "{keys}");
    }
    assert_eq!(r28("param k = 200;", "prompt - k * waited, serial"), vec![]);
    assert_eq!(
        r28("const k = 0.5;", "prompt * k - waited, priority"),
        vec![]
    );
}

/// R28 with R30: `service` is passed over (the next key decides) only when `fair`
/// charges every take something; at a zero price a group served for free never rises.
#[test]
fn r28_service_is_passed_over_only_when_both_prices_are_positive() {
    let warned = |prices: &str, keys: &str| {
        let src = format!(
            "session {{ tenant = 0; }} stage e {{ step; }} \
             pool kv {{ queue by ({keys}); fair tenant ({prices}); admit via e; }}"
        );
        let (_, warnings) = poolc::check_with_warnings(&src, &Options::default()).expect("valid");
        warnings
            .iter()
            .map(|w| {
                let span = w.primary_span().expect("a span");
                src[span.start as usize..span.end as usize].to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(warned("1, 2", "service, serial"), Vec::<String>::new());
    // The key after `service` still has to age.
    assert_eq!(warned("1, 2", "service, tenant"), vec!["tenant"]);
    assert_eq!(warned("0, 2", "service, serial"), vec!["service"]);
    assert_eq!(warned("1, 0", "service, serial"), vec!["service"]);
}

#[test]
fn r28_fifo_and_enqueue_order_never_starve() {
    let src = "stage e { step; } pool kv { queue fifo; admit via e; } pool k2 { queue by (1); admit via e; }";
    let (_, warnings) = poolc::check_with_warnings(src, &Options::default()).expect("valid");
    assert!(warnings.is_empty());
}

#[test]
fn d3_admitted_is_a_context_variable_name() {
    let d = errs("session { admitted; }");
    assert_eq!(codes(&d), vec!["D3"]);
}

#[test]
fn k3_lifo_needs_admit_via() {
    let d = errs("pool kv { preempt lifo; }");
    assert_eq!(codes(&d), vec!["K3"]);
    ok("stage e { step; } pool kv { preempt lifo; admit via e; }");
}

#[test]
fn several_independent_errors_are_reported_in_source_order() {
    let d = errs("pool kv { cap nope; block 0; } stage s { step; rate 1; } const c = d;");
    assert_eq!(codes(&d), vec!["name", "D6", "D4", "name"]);
}

#[test]
fn constant_subexpressions_fold_and_constant_conditions_pick_a_branch() {
    let src =
        "const k = 3; session { p = 0; } pool kv { queue by (p + k * 2, k > 2 ? p : 1 / 0); }";
    let p = ok(src);
    let keys = queue_keys(&p, "kv");
    assert_eq!(
        keys[0].expr,
        Expr::Binary(
            BinaryOp::Add,
            Box::new(Expr::Slot(Slot::Row(0))),
            Box::new(Expr::Const(6.0))
        )
    );
    assert_eq!(keys[1].expr, Expr::Slot(Slot::Row(0)));
    check!(src, @r"
        const k = 3
        session
          attr 0 serial (built-in)
          attr 1 arrival (built-in)
          attr 2 p (default 0)
        pool kv
          cap inf, block none (1)
          preempt none
          admit at every settle
          queue by
            key 0 = row.p + 6
              reads {p} (fixed)
            key 1 = row.p
              reads {p} (fixed)
          queue layout: row [0:p] ctx []
          evict lru
    ");
}
