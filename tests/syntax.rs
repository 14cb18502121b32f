//! Tests of the syntax phase (LANGUAGE.md §1: L1–L3, D1–D5, E1, E7): the parser's trees
//! and spans, its errors (wording, spans, recovery, limits), and the printer's round
//! trip. Tests are named after the rule they pin. This file tests only through
//! `poolc::syntax`'s public API and must not reach into sema or later phases.
//!
//! This file is long because it is one job, the syntax phase's rules, with one short
//! test per rule or edge case and the tree builders they all share; splitting it by
//! rule would spread those builders over a support module without making any test
//! shorter. Its sections follow LANGUAGE.md §1 (lexical rules, declarations,
//! expressions), then parse errors, the printer and properties, so a rule is found by
//! its code.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::diag::Diagnostic;
use poolc::syntax::ast::*;
use poolc::syntax::{Span, SyntaxError, parse, printer};
use proptest::prelude::*;

/// The example spec of LANGUAGE.md §1, verbatim.
const EXAMPLE: &str = r#"param blocks = 4096;            // overridable from the command line
const block_tokens = 16;

session {                       // attributes every session carries
  prompt;                       // no default: the workload must supply it
  output;
  priority = 0;
  immediate = 0;
}

stage engine {                  // a step stage (an iteration-based batch engine)
  step;
  budget 8192;                  // tokens per iteration (vLLM max_num_batched_tokens)
  seats 256;                    // residents at most (vLLM max_num_seqs)
  chunk 2048;                   // largest prefill piece per iteration (optional)
  time (0.004 + 0.00002 * tokens);   // seconds an iteration takes
}

stage pcie { link; rate 25e9; } // a link stage: work per second

pool host { cap 4000000; block 16; }

pool kv {
  cap blocks * block_tokens;
  block block_tokens;
  evict by (priority, last);
  preempt lifo;
  queue by (immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3, serial);
  admit via engine;
  spill host via pcie (units * 131072) when (size >= 64);
}
"#;

// ---------------------------------------------------------------------------------
// Helpers.

fn parse_ok(src: &str) -> Spec {
    match parse(src) {
        Ok(spec) => spec,
        Err(errors) => panic!("{src:?} should parse, got {errors:#?}"),
    }
}

fn errors(src: &str) -> Vec<SyntaxError> {
    match parse(src) {
        Ok(spec) => panic!("{src:?} should not parse, got {spec:#?}"),
        Err(errors) => errors,
    }
}

fn diagnostics(src: &str) -> Vec<Diagnostic> {
    errors(src).iter().map(SyntaxError::to_diagnostic).collect()
}

/// The one diagnostic `src` gives.
fn only_diagnostic(src: &str) -> Diagnostic {
    let mut ds = diagnostics(src);
    assert_eq!(ds.len(), 1, "{src:?} should give one error, got {ds:#?}");
    ds.remove(0)
}

/// The text a diagnostic's primary label points at.
fn primary_text<'a>(src: &'a str, d: &Diagnostic) -> &'a str {
    let span = d.primary_span().expect("a primary label");
    &src[span.range()]
}

/// The value of `const x = <src>;`, spans kept.
fn expr_with_spans(src: &str) -> Expr {
    let spec = parse_ok(&format!("const x = {src};"));
    match spec.decls.into_iter().next() {
        Some(Decl::Const(d)) => d.value,
        other => panic!("expected a const, got {other:?}"),
    }
}

/// The value of `const x = <src>;`, spans erased.
fn expr(src: &str) -> Expr {
    let mut e = expr_with_spans(src);
    printer::erase_expr_spans(&mut e);
    e
}

/// An expression with every operator application in parentheses, to check structure.
fn full(e: &Expr) -> String {
    let list = |args: &[Expr]| args.iter().map(full).collect::<Vec<_>>().join(", ");
    match &e.kind {
        ExprKind::Number(v) if v.is_infinite() => "inf".to_string(),
        ExprKind::Number(v) => format!("{v}"),
        ExprKind::Name(id) => id.name.clone(),
        ExprKind::Index(id, i) => format!("{}[{}]", id.name, full(i)),
        ExprKind::Call(id, args) => format!("{}({})", id.name, list(args)),
        ExprKind::Draw(args) => format!("draw({})", list(args)),
        ExprKind::Unary(op, x) => format!("({}{})", op.symbol(), full(x)),
        ExprKind::Binary(op, l, r) => format!("({} {} {})", full(l), op.symbol(), full(r)),
        ExprKind::Conditional(c, a, b) => format!("({} ? {} : {})", full(c), full(a), full(b)),
    }
}

fn structure(src: &str) -> String {
    full(&expr(src))
}

fn e(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}
fn id(name: &str) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::default(),
    }
}
fn num(v: f64) -> Expr {
    e(ExprKind::Number(v))
}
fn var(name: &str) -> Expr {
    e(ExprKind::Name(id(name)))
}
fn bin(op: BinaryOp, l: Expr, r: Expr) -> Expr {
    e(ExprKind::Binary(op, Box::new(l), Box::new(r)))
}
fn un(op: UnaryOp, x: Expr) -> Expr {
    e(ExprKind::Unary(op, Box::new(x)))
}
fn cond(c: Expr, a: Expr, b: Expr) -> Expr {
    e(ExprKind::Conditional(Box::new(c), Box::new(a), Box::new(b)))
}
fn call(f: &str, args: Vec<Expr>) -> Expr {
    e(ExprKind::Call(id(f), args))
}

fn erased(mut spec: Spec) -> Spec {
    printer::erase_spans(&mut spec);
    spec
}

fn pool_options(src: &str) -> Vec<PoolOptionKind> {
    match erased(parse_ok(src)).decls.into_iter().next() {
        Some(Decl::Pool(p)) => p.options.into_iter().map(|o| o.kind).collect(),
        other => panic!("expected a pool, got {other:?}"),
    }
}

fn span_text(src: &str, span: Span) -> &str {
    &src[span.range()]
}

// ---------------------------------------------------------------------------------
// L1–L3: lexical rules.

#[test]
fn l1_identifiers_take_letters_digits_and_underscores() {
    assert_eq!(expr("_a9_Z"), var("_a9_Z"));
    assert_eq!(expr("_"), var("_"));
    assert_eq!(structure("a1+b_2"), "(a1 + b_2)");
}

#[test]
fn l1_keywords_are_names_in_expressions() {
    let src = "pool + cap * size - step + link % queue / by";
    assert_eq!(
        structure(src),
        "(((pool + (cap * size)) - step) + ((link % queue) / by))"
    );
    // Queries reuse option keywords as function names (E6).
    assert_eq!(
        expr("cap(kv) - used(kv)"),
        bin(
            BinaryOp::Sub,
            call("cap", vec![var("kv")]),
            call("used", vec![var("kv")])
        )
    );
    assert_eq!(
        expr("session[const]"),
        e(ExprKind::Index(id("session"), Box::new(var("const"))))
    );
}

#[test]
fn l1_keywords_are_names_of_declarations_and_attributes() {
    let spec = erased(parse_ok(
        "pool link { admit via step; } stage step { step; } const pool = 1; session { cap; queue = 2; }",
    ));
    let names: Vec<&str> = spec
        .decls
        .iter()
        .map(|d| match d {
            Decl::Pool(p) => p.name.name.as_str(),
            Decl::Stage(s) => s.name.name.as_str(),
            Decl::Const(c) | Decl::Param(c) => c.name.name.as_str(),
            Decl::Session(s) => s.attrs[1].name.name.as_str(),
        })
        .collect();
    assert_eq!(names, ["link", "step", "pool", "queue"]);
}

#[test]
fn l1_inf_is_always_the_literal() {
    assert_eq!(expr("inf"), num(f64::INFINITY));
    assert_eq!(expr("-inf"), un(UnaryOp::Neg, num(f64::INFINITY)));
    for src in [
        "const inf = 1;",
        "pool inf { }",
        "session { inf; }",
        "pool p { admit via inf; }",
    ] {
        let d = only_diagnostic(src);
        assert_eq!(d.code, "parse");
        assert!(d.message.contains("found `inf`"), "{src}: {}", d.message);
        assert_eq!(primary_text(src, &d), "inf");
        assert!(
            d.notes.iter().any(|n| n.contains("number literal")),
            "{src}: {:?}",
            d.notes
        );
    }
    // `inf` is not a name, so `inf(…)` is a number followed by a stray `(`.
    let d = only_diagnostic("const x = inf(1);");
    assert_eq!(
        d.message,
        "expected `;` after the constant's value, found `(`"
    );
}

#[test]
fn l1_draw_is_never_a_name() {
    let d = only_diagnostic("const draw = 1;");
    assert_eq!(d.message, "expected a name after `const`, found `draw`");
    let src = "const x = draw + 1;";
    let d = only_diagnostic(src);
    assert_eq!(d.message, "expected `(` after `draw`, found `+`");
    assert_eq!(primary_text(src, &d), "+");
    assert!(d.notes.iter().any(|n| n.contains("draw form")));
}

#[test]
fn l2_number_shapes() {
    for (src, v) in [
        ("42", 42.0),
        ("0.5", 0.5),
        ("25e9", 25e9),
        ("1.5e-3", 1.5e-3),
        ("1e+300", 1e300),
        ("2E3", 2000.0),
        ("007", 7.0),
        ("0.1", 0.1),
    ] {
        assert_eq!(expr(src), num(v), "{src}");
    }
}

#[test]
fn l2_underscores_between_digits() {
    assert_eq!(expr("65_536"), num(65536.0));
    assert_eq!(expr("1_000.2_5e1_0"), num(1000.25e10));
    assert_eq!(expr("1_2_3"), num(123.0));
    for bad in ["1__0", "1_", "1_.5", "1._5", "1e_5", "1.5_e3"] {
        let d = only_diagnostic(&format!("const x = {bad};"));
        assert_eq!(d.code, "L3", "{bad}");
        assert_eq!(d.message, format!("malformed number `{bad}`"));
    }
}

#[test]
fn l2_a_literal_too_large_is_inf() {
    assert_eq!(expr("1e400"), num(f64::INFINITY));
    assert_eq!(expr(&"9".repeat(400)), num(f64::INFINITY));
    assert_eq!(expr("1e-400"), num(0.0));
}

#[test]
fn l3_malformed_numbers_have_the_span_of_the_whole_word() {
    for (bad, reason) in [
        ("1e", "exponent"),
        ("1e+", "exponent"),
        ("1.5E-", "exponent"),
        ("1.", "followed by digits"),
        ("1.2.3", "at most one `.`"),
        ("1__0", "between two digits"),
        ("12abc", "run into a name"),
        ("3x_1", "run into a name"),
    ] {
        let src = format!("const x = {bad} ;");
        let d = only_diagnostic(&src);
        assert_eq!(d.code, "L3");
        assert_eq!(d.message, format!("malformed number `{bad}`"));
        assert_eq!(primary_text(&src, &d), bad);
        assert!(
            d.labels[0].message.contains(reason),
            "{bad}: {}",
            d.labels[0].message
        );
    }
}

#[test]
fn l3_stray_character_has_span() {
    let src = "const x = 1 @ 2;";
    let d = only_diagnostic(src);
    assert_eq!(d.code, "L3");
    assert_eq!(d.message, "unexpected character `@`");
    assert_eq!(d.primary_span(), Some(Span::new(12, 13)));
    // A lone `|` gets a hint about `||`, a leading `.` one about digits.
    let d = only_diagnostic("const x = a | b;");
    assert!(d.notes.iter().any(|n| n.contains("`||`")));
    let src = "const x = .5;";
    let d = only_diagnostic(src);
    assert_eq!(primary_text(src, &d), ".");
    assert!(d.notes.iter().any(|n| n.contains("`0.5`")));
}

#[test]
fn l3_non_ascii_character_spans_all_its_bytes() {
    let src = "const x = é + 1;";
    let d = only_diagnostic(src);
    assert_eq!(d.code, "L3");
    assert_eq!(d.primary_span(), Some(Span::new(10, 12)));
    assert_eq!(primary_text(src, &d), "é");
    let src = "pool p { cap 1; }\u{1F600}";
    let d = only_diagnostic(src);
    assert_eq!(primary_text(src, &d), "\u{1F600}");
    // Anything goes inside comments.
    parse_ok("// é ✓\n/* ∞ */ const x = 1;");
}

#[test]
fn l3_unterminated_comment_has_span() {
    let src = "const x = 1;\n/* never closed\nconst y = 2;";
    let d = only_diagnostic(src);
    assert_eq!(d.code, "L3");
    assert_eq!(d.message, "unterminated `/* */` comment");
    assert_eq!(d.primary_span(), Some(Span::new(13, 15)));
    // Cut off mid-declaration, the comment is the only error reported.
    let d = only_diagnostic("pool p { cap 1; /* cap 2; }");
    assert_eq!(d.message, "unterminated `/* */` comment");
}

#[test]
fn l3_comments_are_whitespace_and_do_not_nest() {
    let spec = parse_ok("/* a */const/**/x// b\n=/*\n*/1;//");
    assert_eq!(spec.decls.len(), 1);
    // The first `*/` ends the comment; the second is `*` `/` outside it.
    let d = only_diagnostic("/* /* */ */ const x = 1;");
    assert_eq!(d.code, "parse");
    assert!(d.message.contains("found `*`"), "{}", d.message);
    // A lone carriage return does not end a line comment early or trip the lexer.
    parse_ok("// a\r b\nconst x = 1;");
}

#[test]
fn l3_an_empty_or_blank_file_is_an_empty_spec() {
    assert_eq!(parse_ok(""), Spec::default());
    assert_eq!(
        parse_ok(" \n\t// only a comment\n/* and */"),
        Spec::default()
    );
}

// ---------------------------------------------------------------------------------
// D1–D5: declarations.

#[test]
fn d1_d2_const_and_param() {
    let src = "const a = 1 + b;\nparam b = 2;";
    let spec = parse_ok(src);
    match &spec.decls[..] {
        [Decl::Const(a), Decl::Param(b)] => {
            assert_eq!(a.name.name, "a");
            assert_eq!(span_text(src, a.name.span), "a");
            assert_eq!(span_text(src, a.span), "const a = 1 + b;");
            assert_eq!(span_text(src, a.value.span), "1 + b");
            assert_eq!(b.name.name, "b");
            assert_eq!(span_text(src, b.span), "param b = 2;");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn d3_session_attributes_with_and_without_defaults() {
    let src = "session { prompt; priority = 1 + 2; }";
    let spec = parse_ok(src);
    let Decl::Session(s) = &spec.decls[0] else {
        panic!("{spec:?}")
    };
    assert_eq!(span_text(src, s.span), src);
    assert_eq!(s.attrs.len(), 2);
    assert_eq!(s.attrs[0].name.name, "prompt");
    assert_eq!(s.attrs[0].default, None);
    assert_eq!(span_text(src, s.attrs[0].span), "prompt;");
    assert_eq!(span_text(src, s.attrs[1].span), "priority = 1 + 2;");
    assert_eq!(
        structure("1 + 2"),
        full(s.attrs[1].default.as_ref().expect("a default"))
    );
    let Decl::Session(empty) = &parse_ok("session {}").decls[0] else {
        panic!()
    };
    assert!(empty.attrs.is_empty());
}

#[test]
fn d4_stage_kind_count_and_every_option() {
    let src = "stage engine[2] { step; budget 8192; seats 256; chunk 2048; serve exclusive prefill; time (0.5 + tokens); rate 1; }";
    let spec = parse_ok(src);
    let Decl::Stage(s) = &spec.decls[0] else {
        panic!("{spec:?}")
    };
    assert_eq!(s.name.name, "engine");
    assert_eq!(s.kind, StageKind::Step);
    assert_eq!(span_text(src, s.kind_span), "step");
    assert_eq!(
        s.count.as_ref().map(|c| c.kind.clone()),
        Some(ExprKind::Number(2.0))
    );
    assert_eq!(span_text(src, s.span), src);
    let spans: Vec<&str> = s.options.iter().map(|o| span_text(src, o.span)).collect();
    assert_eq!(
        spans,
        [
            "budget 8192;",
            "seats 256;",
            "chunk 2048;",
            "serve exclusive prefill;",
            "time (0.5 + tokens);",
            "rate 1;"
        ]
    );
    let kinds: Vec<StageOptionKind> = match erased(spec).decls.remove(0) {
        Decl::Stage(s) => s.options.into_iter().map(|o| o.kind).collect(),
        _ => unreachable!(),
    };
    assert_eq!(
        kinds,
        [
            StageOptionKind::Budget(num(8192.0)),
            StageOptionKind::Seats(num(256.0)),
            StageOptionKind::Chunk(num(2048.0)),
            StageOptionKind::ServeExclusivePrefill,
            StageOptionKind::Time(bin(BinaryOp::Add, num(0.5), var("tokens"))),
            StageOptionKind::Rate(num(1.0)),
        ]
    );
    let Decl::Stage(link) = &parse_ok("stage pcie { link; }").decls[0] else {
        panic!()
    };
    assert_eq!(
        (link.kind, link.count.is_none(), link.options.len()),
        (StageKind::Link, true, 0)
    );
}

#[test]
fn d5_pool_every_option() {
    let kinds = pool_options(
        "pool kv[n] { cap 10; block 16; evict lru; evict by (a, -b); preempt none; preempt lifo; \
         queue fifo; queue by (serial); admit via engine; spill host via pcie (units * 2) when (size >= 64); }",
    );
    assert_eq!(
        kinds,
        [
            PoolOptionKind::Cap(num(10.0)),
            PoolOptionKind::Block(num(16.0)),
            PoolOptionKind::EvictLru,
            PoolOptionKind::EvictBy(vec![var("a"), un(UnaryOp::Neg, var("b"))]),
            PoolOptionKind::PreemptNone,
            PoolOptionKind::PreemptLifo,
            PoolOptionKind::QueueFifo,
            PoolOptionKind::QueueBy(vec![var("serial")]),
            PoolOptionKind::AdmitVia(id("engine")),
            PoolOptionKind::Spill(SpillClause {
                tier: id("host"),
                link: id("pcie"),
                work: bin(BinaryOp::Mul, var("units"), num(2.0)),
                pred: bin(BinaryOp::Ge, var("size"), num(64.0)),
            }),
        ]
    );
}

#[test]
fn r18_r19_preempt_by_and_requeue_keyed_parse() {
    let kinds = pool_options("pool kv { preempt by (-priority, -arrival); requeue keyed; }");
    assert_eq!(
        kinds,
        [
            PoolOptionKind::PreemptBy(vec![
                un(UnaryOp::Neg, var("priority")),
                un(UnaryOp::Neg, var("arrival"))
            ]),
            PoolOptionKind::RequeueKeyed,
        ]
    );
}

#[test]
fn r22_route_by_with_every_and_remember_parses() {
    let kinds = pool_options(
        "pool kv[2] { route by (-hit(kv), member); route by (queued(kv)) every 0.05 remember 64; }",
    );
    assert_eq!(
        kinds,
        [
            PoolOptionKind::Route(RouteClause {
                keys: vec![
                    un(UnaryOp::Neg, call("hit", vec![var("kv")])),
                    var("member")
                ],
                every: None,
                remember: None,
            }),
            PoolOptionKind::Route(RouteClause {
                keys: vec![call("queued", vec![var("kv")])],
                every: Some(num(0.05)),
                remember: Some(num(64.0)),
            }),
        ]
    );
}

#[test]
fn r25_handoff_parses() {
    let kinds = pool_options("pool pkv { handoff dkv via nic (units * kv_bytes); }");
    assert_eq!(
        kinds,
        [PoolOptionKind::Handoff(HandoffClause {
            target: id("dkv"),
            link: id("nic"),
            work: bin(BinaryOp::Mul, var("units"), var("kv_bytes")),
        })]
    );
}

#[test]
fn r30_fair_parses_with_and_without_weight() {
    let kinds = pool_options("pool kv { fair tenant (1, 2 * k); fair t (0, 1) weight share; }");
    assert_eq!(
        kinds,
        [
            PoolOptionKind::Fair(FairClause {
                by: id("tenant"),
                prefill: num(1.0),
                decode: bin(BinaryOp::Mul, num(2.0), var("k")),
                weight: None,
            }),
            PoolOptionKind::Fair(FairClause {
                by: id("t"),
                prefill: num(0.0),
                decode: num(1.0),
                weight: Some(id("share")),
            }),
        ]
    );
}

#[test]
fn d5_option_and_declaration_spans() {
    let src = "pool kv {\n  cap 10;\n  spill host via pcie (units) when (size > 1);\n}";
    let spec = parse_ok(src);
    let Decl::Pool(p) = &spec.decls[0] else {
        panic!()
    };
    assert_eq!(span_text(src, p.span), src);
    assert_eq!(span_text(src, p.name.span), "kv");
    let spans: Vec<&str> = p.options.iter().map(|o| span_text(src, o.span)).collect();
    assert_eq!(
        spans,
        ["cap 10;", "spill host via pcie (units) when (size > 1);"]
    );
    let Decl::Pool(empty) = &parse_ok("pool p {}").decls[0] else {
        panic!()
    };
    assert!(empty.options.is_empty());
}

#[test]
fn d5_repeated_options_and_foreign_stage_options_are_not_parse_errors() {
    assert_eq!(pool_options("pool p { cap 1; cap 2; }").len(), 2);
    // A link option in a step stage: sema's business, not the grammar's.
    parse_ok("stage s { step; rate 1; rate 2; }");
}

#[test]
fn d_declarations_come_in_any_order_and_the_example_parses() {
    let spec = parse_ok(EXAMPLE);
    let kinds: Vec<&str> = spec
        .decls
        .iter()
        .map(|d| match d {
            Decl::Const(_) => "const",
            Decl::Param(_) => "param",
            Decl::Session(_) => "session",
            Decl::Stage(_) => "stage",
            Decl::Pool(_) => "pool",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "param", "const", "session", "stage", "stage", "pool", "pool"
        ]
    );
}

// ---------------------------------------------------------------------------------
// E1, E7: expressions.

#[test]
fn e1_precedence_matches_c() {
    assert_eq!(
        structure("a || b && c == d < e + f * g"),
        "(a || (b && (c == (d < (e + (f * g))))))"
    );
    assert_eq!(
        structure("a * b + c < d == e && f || g"),
        "((((((a * b) + c) < d) == e) && f) || g)"
    );
    assert_eq!(structure("a % b / c * d"), "(((a % b) / c) * d)");
    assert_eq!(structure("a != b >= c - d"), "(a != (b >= (c - d)))");
    assert_eq!(structure("a <= b > c"), "((a <= b) > c)");
    assert_eq!(structure("c || d ? a + b : e"), "((c || d) ? (a + b) : e)");
}

#[test]
fn e1_binary_operators_are_left_associative() {
    assert_eq!(structure("a - b - c"), "((a - b) - c)");
    assert_eq!(structure("a / b / c"), "((a / b) / c)");
    assert_eq!(structure("a - (b - c)"), "(a - (b - c))");
    assert_eq!(structure("a || b || c"), "((a || b) || c)");
}

#[test]
fn e1_ternary_is_right_associative() {
    assert_eq!(structure("a ? b : c ? d : e"), "(a ? b : (c ? d : e))");
    assert_eq!(structure("a ? b ? c : d : e"), "(a ? (b ? c : d) : e)");
    assert_eq!(structure("(a ? b : c) ? d : e"), "((a ? b : c) ? d : e)");
    assert_eq!(
        expr("a ? b : c ? d : e"),
        cond(var("a"), var("b"), cond(var("c"), var("d"), var("e")))
    );
}

#[test]
fn e1_unary_binds_tighter_than_binary_and_repeats() {
    assert_eq!(structure("-a * b"), "((-a) * b)");
    assert_eq!(structure("!a && -b"), "((!a) && (-b))");
    assert_eq!(structure("--x"), "(-(-x))");
    assert_eq!(structure("!-x"), "(!(-x))");
    assert_eq!(structure("a - -b"), "(a - (-b))");
    assert_eq!(structure("a--b"), "(a - (-b))");
    assert_eq!(structure("-(a + b)"), "(-(a + b))");
    assert_eq!(expr("-2"), un(UnaryOp::Neg, num(2.0)));
}

#[test]
fn e1_primaries_calls_and_index() {
    assert_eq!(expr("f()"), call("f", vec![]));
    assert_eq!(
        structure("max(a, b + 1, min(c, d))"),
        "max(a, (b + 1), min(c, d))"
    );
    assert_eq!(structure("kv[i + 1] * 2"), "(kv[(i + 1)] * 2)");
    assert_eq!(structure("((a))"), "a");
}

#[test]
fn e7_draw_parses_as_draw() {
    assert_eq!(expr("draw()"), e(ExprKind::Draw(vec![])));
    assert_eq!(
        expr("draw(1, x) + 1"),
        bin(
            BinaryOp::Add,
            e(ExprKind::Draw(vec![num(1.0), var("x")])),
            num(1.0)
        )
    );
    let keys = pool_options("pool p { queue by (draw(2)); }");
    assert_eq!(
        keys,
        [PoolOptionKind::QueueBy(vec![e(ExprKind::Draw(vec![num(
            2.0
        )]))])]
    );
}

#[test]
fn e1_spans_cover_the_whole_expression_and_parentheses() {
    let src = "a + b * c";
    let x = expr_with_spans(src);
    // `const x = ` is 10 bytes.
    assert_eq!(x.span, Span::new(10, 19));
    let ExprKind::Binary(_, l, r) = &x.kind else {
        panic!()
    };
    assert_eq!((l.span, r.span), (Span::new(10, 11), Span::new(14, 19)));
    // A parenthesised expression's span takes in its parentheses.
    let x = expr_with_spans("(a + b) * c");
    assert_eq!(x.span, Span::new(10, 21));
    let ExprKind::Binary(_, l, _) = &x.kind else {
        panic!()
    };
    assert_eq!(l.span, Span::new(10, 17));
    for (src, len) in [
        ("f(a, b)", 7),
        ("k[1]", 4),
        ("draw()", 6),
        ("-!x", 3),
        ("c ? a : b", 9),
    ] {
        assert_eq!(expr_with_spans(src).span, Span::new(10, 10 + len), "{src}");
    }
}

// ---------------------------------------------------------------------------------
// Parse errors: wording, spans, recovery, limits.

#[test]
fn parse_error_missing_semicolon_after_option() {
    let src = "pool kv { cap 10 }";
    let d = only_diagnostic(src);
    assert_eq!(d.code, "parse");
    assert_eq!(d.message, "expected `;` after the `cap` option, found `}`");
    assert_eq!(d.primary_span(), Some(Span::new(17, 18)));
}

#[test]
fn parse_error_missing_semicolon_before_next_declaration() {
    let src = "const a = 1\npool p { cap 2; }\nconst b = ;";
    let ds = diagnostics(src);
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(
        ds[0].message,
        "expected `;` after the constant's value, found `pool`"
    );
    assert_eq!(primary_text(src, &ds[0]), "pool");
    // Recovery resumed at `pool` and reached the broken `const b`.
    assert_eq!(ds[1].message, "expected an expression after `=`, found `;`");
}

#[test]
fn parse_error_unknown_pool_option() {
    let src = "pool kv { cap 1; capacity 10; }";
    let d = only_diagnostic(src);
    assert_eq!(
        d.message,
        "expected a pool option (`cap`, `block`, `evict`, `preempt`, `requeue`, `queue`, `admit`, `spill`, `route`, `handoff`, `fair`) or `}`, found `capacity`"
    );
    assert_eq!(primary_text(src, &d), "capacity");
}

#[test]
fn parse_error_stage_without_kind() {
    let src = "stage s { budget 1; }";
    let d = only_diagnostic(src);
    assert_eq!(
        d.message,
        "expected the stage kind `step` or `link` first in a stage, found `budget`"
    );
    assert_eq!(primary_text(src, &d), "budget");
}

#[test]
fn parse_error_end_of_input() {
    let src = "pool p { cap 1;";
    let d = only_diagnostic(src);
    assert!(d.message.ends_with("found end of input"), "{}", d.message);
    assert_eq!(d.primary_span(), Some(Span::new(src.len(), src.len())));
}

#[test]
fn parse_errors_name_what_was_expected() {
    for (src, message, at) in [
        (
            "foo = 1;",
            "expected a declaration (`const`, `param`, `session`, `stage` or `pool`), found `foo`",
            "foo",
        ),
        (
            "const = 1;",
            "expected a name after `const`, found `=`",
            "=",
        ),
        (
            "param p 1;",
            "expected `=` after the parameter's name, found `1`",
            "1",
        ),
        (
            "const x = 1 +;",
            "expected an expression after `+`, found `;`",
            ";",
        ),
        ("const x = (1;", "expected `)` to close `(`, found `;`", ";"),
        (
            "const x = a ? b;",
            "expected `:` after the `?` branch, found `;`",
            ";",
        ),
        (
            "const x = f(a b);",
            "expected `,` or `)` after an argument, found `b`",
            "b",
        ),
        (
            "const x = k[1;",
            "expected `]` after the index, found `;`",
            ";",
        ),
        (
            "pool p { evict fifo; }",
            "expected `lru` or `by` after `evict`, found `fifo`",
            "fifo",
        ),
        (
            "pool p { queue by (); }",
            "expected an expression in the key list, found `)`",
            ")",
        ),
        (
            "pool p { queue by (a b); }",
            "expected `,` or `)` in the key list, found `b`",
            "b",
        ),
        (
            "pool p { preempt fifo; }",
            "expected `none`, `lifo` or `by` after `preempt`, found `fifo`",
            "fifo",
        ),
        (
            "pool p { admit engine; }",
            "expected `via` after `admit`, found `engine`",
            "engine",
        ),
        (
            "pool p { spill t via l (1) (2); }",
            "expected `when` after the spill work, found `(`",
            "(",
        ),
        (
            "pool p[2 { }",
            "expected `]` after the count, found `{`",
            "{",
        ),
        (
            "pool p ( }",
            "expected `[` or `{` after the pool name, found `(`",
            "(",
        ),
        (
            "stage s { step budget 1; }",
            "expected `;` after the stage kind, found `budget`",
            "budget",
        ),
        (
            "stage s { step; serve prefill; }",
            "expected `exclusive` after `serve`, found `prefill`",
            "prefill",
        ),
        (
            "stage s { step; time 1; }",
            "expected `(` after `time`, found `1`",
            "1",
        ),
        (
            "session { a = ; }",
            "expected an expression after `=`, found `;`",
            ";",
        ),
        (
            "session { a b; }",
            "expected `=` or `;` after the attribute name, found `b`",
            "b",
        ),
        (
            "session { 1; }",
            "expected an attribute name or `}` in the `session` block, found `1`",
            "1",
        ),
    ] {
        let d = only_diagnostic(src);
        assert_eq!(d.code, "parse", "{src}");
        assert_eq!(d.message, message, "{src}");
        assert_eq!(primary_text(src, &d), at, "{src}");
    }
}

#[test]
fn parse_errors_two_broken_declarations_give_two_errors() {
    let src = "pool a { cap 1 }\nconst ok = 1;\nstage s { budget 2; }\npool b { cap 3; }";
    let es = errors(src);
    assert_eq!(es.len(), 2, "{es:#?}");
    assert_eq!(span_text(src, es[0].span()), "}");
    assert_eq!(span_text(src, es[1].span()), "budget");
}

#[test]
fn parse_errors_recovery_resumes_at_the_next_declaration() {
    // A missing `}`: the next `pool` is not swallowed by the unclosed block.
    let src = "pool a { cap 1;\npool b { cap x y; }\nsession { s; }";
    let ds = diagnostics(src);
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert!(
        ds[0].message.ends_with("or `}`, found `pool`"),
        "{}",
        ds[0].message
    );
    assert_eq!(
        ds[1].message,
        "expected `;` after the `cap` option, found `y`"
    );
    // A keyword used as a name inside an option is no place to resume.
    let src = "pool a { cap 1 spill pool via l (1) when (1); }\nconst k = ;";
    let ds = diagnostics(src);
    assert_eq!(ds.len(), 2, "{ds:#?}");
    assert_eq!(primary_text(src, &ds[0]), "spill");
    assert_eq!(ds[1].message, "expected an expression after `=`, found `;`");
}

#[test]
fn parse_errors_lexical_and_grammar_errors_come_in_source_order() {
    let src = "const a = ;\nconst b = 1 @;\nconst c = 1e;\npool p { bad; }";
    let ds = diagnostics(src);
    let codes: Vec<&str> = ds.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["parse", "L3", "L3", "parse"], "{ds:#?}");
    let starts: Vec<u32> = ds
        .iter()
        .map(|d| d.primary_span().expect("span").start)
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
}

#[test]
fn parse_errors_stop_after_twenty() {
    let src = "const = 1;\n".repeat(50);
    assert_eq!(errors(&src).len(), 20);
}

#[test]
fn parse_errors_a_stray_closing_brace_is_skipped() {
    let src = "} const x = 1; }";
    let es = errors(src);
    assert_eq!(es.len(), 2, "{es:#?}");
}

/// Runs `f` on a thread with 2 MiB of stack, a spawned thread's default, whatever
/// `RUST_MIN_STACK` says, so the nesting tests pin the stack budget.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let thread = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn");
    if let Err(panic) = thread.join() {
        std::panic::resume_unwind(panic);
    }
}

/// The nesting limit: far past it, every kind of nesting is one clean error, never a
/// stack overflow.
#[test]
fn e1_deep_nesting_is_an_error_not_a_crash() {
    on_small_stack(|| {
        let n = 100_000;
        for (open, close) in [
            ("(", ")"),
            ("-", ""),
            ("!", ""),
            ("a ? b : ", ""),
            ("(a ? b : c) ? ", " : d"),
            ("f(", ")"),
            ("k[", "]"),
            ("draw(", ")"),
            ("1 * (", ")"),
            ("g(1, -k[", "])"),
        ] {
            let src = format!("const x = {}1{};", open.repeat(n), close.repeat(n));
            let d = only_diagnostic(&src);
            assert_eq!(d.code, "parse", "{open}");
            assert_eq!(d.message, "expression nested too deeply", "{open}");
        }
        // A long left-associative chain is a deep tree too.
        let d = only_diagnostic(&format!("const x = 1{};", " + 1".repeat(n)));
        assert_eq!(d.message, "expression nested too deeply");
    });
}

#[test]
fn e1_nesting_up_to_the_limit_parses() {
    on_small_stack(|| {
        let deep = |open: &str, close: &str, n: usize| {
            format!("const x = {}1{};", open.repeat(n), close.repeat(n))
        };
        // The most stack-hungry nestings, just inside the limit.
        for (open, close) in [
            ("(", ")"),
            ("-", ""),
            ("f(", ")"),
            ("draw(", ")"),
            ("a ? b : ", ""),
            ("k[", "]"),
        ] {
            parse_ok(&deep(open, close, 199));
        }
        parse_ok(&format!("const x = 1{};", " + 1".repeat(199)));
        // Parentheses count as a level: the `1` inside 199 of them sits at level 200,
        // the limit; inside 200 it is one too deep, and the error points at it.
        let src = deep("(", ")", 200);
        let d = only_diagnostic(&src);
        assert_eq!(d.primary_span(), Some(Span::new(10 + 200, 10 + 201)));
        let d = only_diagnostic(&format!("const x = 1{};", " + 1".repeat(200)));
        assert_eq!(d.message, "expression nested too deeply");
    });
}

// ---------------------------------------------------------------------------------
// The printer.

fn reprint(src: &str) -> String {
    printer::print_expr(&expr(src))
}

#[test]
fn printer_uses_minimal_parentheses() {
    for (src, printed) in [
        ("(a - b) - c", "a - b - c"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a * b) + (c * d)", "a * b + c * d"),
        ("(a + b) * c", "(a + b) * c"),
        ("a ? b : (c ? d : e)", "a ? b : c ? d : e"),
        ("(a ? b : c) ? d : e", "(a ? b : c) ? d : e"),
        ("a ? (b ? c : d) : e", "a ? b ? c : d : e"),
        ("(a ? b : c) + 1", "(a ? b : c) + 1"),
        ("-(-x)", "--x"),
        ("-(a + b)", "-(a + b)"),
        ("!(a == b)", "!(a == b)"),
        ("(-a) * b", "-a * b"),
        ("f((a), (b + c))", "f(a, b + c)"),
        ("k[(a ? b : c)]", "k[a ? b : c]"),
        ("(a || b) && c", "(a || b) && c"),
        ("a || (b && c)", "a || b && c"),
    ] {
        assert_eq!(reprint(src), printed, "{src}");
        assert_eq!(expr(printed), expr(src), "{printed} must parse back");
    }
}

#[test]
fn printer_numbers_read_back_exactly() {
    for v in [
        0.0,
        1.0,
        5.0,
        0.1,
        1e-7,
        1.5e-3,
        1e300,
        25e9,
        4096.0,
        1e15,
        1e16,
        1.2345678901234567e17,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        f64::INFINITY,
    ] {
        let text = printer::print_expr(&num(v));
        assert_eq!(expr(&text), num(v), "{v:?} printed as {text}");
    }
    assert_eq!(printer::print_expr(&num(f64::INFINITY)), "inf");
    assert_eq!(printer::print_expr(&num(4096.0)), "4096");
    assert_eq!(printer::print_expr(&num(1e-7)), "1e-7");
}

#[test]
fn printer_lays_out_the_example_and_round_trips_it() {
    let spec = parse_ok(EXAMPLE);
    let printed = printer::print_spec(&spec);
    assert!(
        printed.contains("stage pcie {\n  link;\n  rate 25000000000;\n}\n"),
        "{printed}"
    );
    assert!(
        printed.contains("pool host {\n  cap 4000000;\n  block 16;\n}\n"),
        "{printed}"
    );
    assert!(
        printed.contains("  time (0.004 + 2e-5 * tokens);\n"),
        "{printed}"
    );
    let reparsed = parse_ok(&printed);
    assert_eq!(erased(reparsed.clone()), erased(spec));
    assert_eq!(
        printer::print_spec(&reparsed),
        printed,
        "printing is stable"
    );
    assert_eq!(
        printer::print_spec(&parse_ok("session {} pool p {}")),
        "session {}\n\npool p {}\n"
    );
}

/// Every node kind the example lacks (arrays, indexing, calls, queries, unary
/// operators, `draw`, `inf`, a fifo queue), so that erasing is checked on each.
const MORE_SPANS: &str = "stage e[2] { link; rate inf; }
pool arr[2] { queue by (-free(arr), !used(arr[1]), min(cap(arr[0]), 2), draw(1)); queue fifo; }";

/// Every `Span { start, end }` of a `Debug` rendering, in order.
fn spans_in(debug: &str) -> Vec<(u32, u32)> {
    let number = |text: &str| -> (u32, usize) {
        let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let value = text[..digits]
            .parse()
            .unwrap_or_else(|e| panic!("not a span offset in {text:?}: {e}"));
        (value, digits)
    };
    let mut spans = Vec::new();
    let mut rest = debug;
    while let Some(at) = rest.find("Span { start: ") {
        rest = &rest[at + "Span { start: ".len()..];
        let (start, len) = number(rest);
        rest = rest[len..]
            .strip_prefix(", end: ")
            .unwrap_or_else(|| panic!("a Span without `end` at {:?}", &rest[..len]));
        let (end, len) = number(rest);
        rest = &rest[len..];
        spans.push((start, end));
    }
    spans
}

#[test]
fn erase_spans_clears_every_span() {
    let spec = parse_ok(&format!("{EXAMPLE}{MORE_SPANS}"));
    // Debug output names every span field; the reader must find them all in the
    // parsed tree (every `Span {` is read, and they are real offsets) or an empty
    // list would pass the check below.
    let debug = format!("{spec:?}");
    let before = spans_in(&debug);
    assert_eq!(before.len(), debug.matches("Span {").count(), "{debug}");
    assert!(
        before.iter().filter(|span| **span != (0, 0)).count() > 100,
        "the parser should give real spans: {before:?}"
    );

    let debug = format!("{:?}", erased(spec));
    let after = spans_in(&debug);
    assert_eq!(after.len(), before.len(), "erasing keeps the tree's shape");
    let left: Vec<_> = after.iter().filter(|span| **span != (0, 0)).collect();
    assert!(left.is_empty(), "spans left unerased: {left:?} in {debug}");
}

// ---------------------------------------------------------------------------------
// Properties.

/// Pool-ish fragments, so random inputs get deep into the grammar.
const FRAGMENTS: &[&str] = &[
    "pool",
    "stage",
    "session",
    "const",
    "param",
    "cap",
    "block",
    "evict",
    "lru",
    "by",
    "preempt",
    "none",
    "lifo",
    "queue",
    "fifo",
    "admit",
    "via",
    "spill",
    "when",
    "step",
    "link",
    "budget",
    "seats",
    "chunk",
    "time",
    "rate",
    "serve",
    "exclusive",
    "prefill",
    "inf",
    "draw",
    "x",
    "kv",
    "_a1",
    "0",
    "1.5",
    "25e9",
    "1e",
    "1__0",
    "12ab",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ";",
    ",",
    "=",
    "?",
    ":",
    "||",
    "&&",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "|",
    "&",
    "@",
    "é",
    " ",
    "\n",
    "//",
    "/*",
    "*/",
    "\r",
];

fn fragments() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..80).prop_map(|v| v.concat())
}

fn check_no_panic(src: &str) {
    match parse(src) {
        Ok(spec) => {
            // Whatever parses prints back to something that parses the same.
            let printed = printer::print_spec(&spec);
            let reparsed = parse(&printed).unwrap_or_else(|e| panic!("{printed:?} failed: {e:?}"));
            assert_eq!(erased(reparsed), erased(spec));
        }
        Err(errors) => {
            assert!(!errors.is_empty() && errors.len() <= 20);
            for error in &errors {
                let d = error.to_diagnostic();
                let span = d.primary_span().expect("every error has a primary label");
                assert!(
                    src.get(span.range()).is_some(),
                    "span {span:?} not on char boundaries of {src:?}"
                );
                assert!(!d.message.ends_with('.'), "{}", d.message);
            }
        }
    }
}

/// One random edit of a text: delete, insert or replace a range, or do the same to a
/// whitespace-separated word.
#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, usize, String),
    DeleteWord(usize),
    ReplaceWord(usize, String),
    DuplicateWord(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let text = prop_oneof![
        prop::sample::select(FRAGMENTS).prop_map(str::to_string),
        "[ -~]{0,6}",
        any::<String>()
    ];
    prop_oneof![
        (any::<usize>(), 0usize..20).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), text.clone()).prop_map(|(a, s)| Mutation::Insert(a, s)),
        (any::<usize>(), 0usize..20, text.clone()).prop_map(|(a, n, s)| Mutation::Replace(a, n, s)),
        any::<usize>().prop_map(Mutation::DeleteWord),
        (any::<usize>(), text).prop_map(|(a, s)| Mutation::ReplaceWord(a, s)),
        any::<usize>().prop_map(Mutation::DuplicateWord),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let mut words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    let len = chars.len();
    let range = |a: usize, n: usize| {
        let start = a % (len + 1);
        start..(start + n).min(len)
    };
    match m {
        Mutation::Delete(a, n) => {
            chars.drain(range(*a, *n));
        }
        Mutation::Insert(a, s) => {
            let at = a % (len + 1);
            chars.splice(at..at, s.chars());
        }
        Mutation::Replace(a, n, s) => {
            chars.splice(range(*a, *n), s.chars());
        }
        Mutation::DeleteWord(a) if !words.is_empty() => {
            words.remove(a % words.len());
            return words.concat();
        }
        Mutation::ReplaceWord(a, s) if !words.is_empty() => {
            let i = a % words.len();
            words[i] = s;
            return words.concat();
        }
        Mutation::DuplicateWord(a) if !words.is_empty() => {
            let i = a % words.len();
            words.insert(i, words[i]);
            return words.concat();
        }
        _ => {}
    }
    chars.into_iter().collect()
}

fn ident() -> impl Strategy<Value = Ident> {
    "[A-Za-z_][A-Za-z0-9_]{0,6}"
        .prop_filter("`inf` and `draw` are not names", |s| {
            s != "inf" && s != "draw"
        })
        .prop_map(|s| id(&s))
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(f64::INFINITY),
        Just(5e-324),
        Just(1e-7),
        Just(1e300),
        Just(f64::MAX),
        (0u32..100_000).prop_map(f64::from),
        any::<u64>().prop_map(|n| n as f64),
        0.0f64..1.0,
        any::<f64>().prop_filter_map("not NaN", |v| (!v.is_nan()).then_some(v.abs())),
    ]
}

fn binary_op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    prop::sample::select(vec![
        Or, And, Eq, Ne, Lt, Le, Gt, Ge, Add, Sub, Mul, Div, Rem,
    ])
}

fn expression() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        number().prop_map(num),
        ident().prop_map(|i| e(ExprKind::Name(i)))
    ];
    leaf.prop_recursive(6, 48, 3, |inner| {
        let args = prop::collection::vec(inner.clone(), 0..4);
        prop_oneof![
            (
                prop::sample::select(vec![UnaryOp::Neg, UnaryOp::Not]),
                inner.clone()
            )
                .prop_map(|(op, x)| un(op, x)),
            (binary_op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| bin(op, l, r)),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| cond(c, a, b)),
            (ident(), args.clone()).prop_map(|(f, args)| e(ExprKind::Call(f, args))),
            (ident(), inner.clone()).prop_map(|(n, i)| e(ExprKind::Index(n, Box::new(i)))),
            args.prop_map(|args| e(ExprKind::Draw(args))),
        ]
    })
}

fn keys() -> impl Strategy<Value = Vec<Expr>> {
    prop::collection::vec(expression(), 1..4)
}

fn stage_option() -> impl Strategy<Value = StageOption> {
    use StageOptionKind as K;
    prop_oneof![
        expression().prop_map(K::Budget),
        expression().prop_map(K::Seats),
        expression().prop_map(K::Chunk),
        Just(K::ServeExclusivePrefill),
        expression().prop_map(K::Time),
        expression().prop_map(K::Rate),
    ]
    .prop_map(|kind| StageOption {
        kind,
        span: Span::default(),
    })
}

fn pool_option() -> impl Strategy<Value = PoolOption> {
    use PoolOptionKind as K;
    prop_oneof![
        expression().prop_map(K::Cap),
        expression().prop_map(K::Block),
        Just(K::EvictLru),
        keys().prop_map(K::EvictBy),
        Just(K::PreemptNone),
        Just(K::PreemptLifo),
        keys().prop_map(K::PreemptBy),
        Just(K::RequeueKeyed),
        Just(K::QueueFifo),
        keys().prop_map(K::QueueBy),
        (
            keys(),
            proptest::option::of(expression()),
            proptest::option::of(expression())
        )
            .prop_map(|(keys, every, remember)| K::Route(RouteClause {
                keys,
                every,
                remember
            })),
        ident().prop_map(K::AdmitVia),
        (ident(), ident(), expression(), expression()).prop_map(|(tier, link, work, pred)| {
            K::Spill(SpillClause {
                tier,
                link,
                work,
                pred,
            })
        }),
        (ident(), ident(), expression())
            .prop_map(|(target, link, work)| K::Handoff(HandoffClause { target, link, work })),
        (
            ident(),
            expression(),
            expression(),
            proptest::option::of(ident())
        )
            .prop_map(|(by, prefill, decode, weight)| K::Fair(FairClause {
                by,
                prefill,
                decode,
                weight
            })),
    ]
    .prop_map(|kind| PoolOption {
        kind,
        span: Span::default(),
    })
}

fn declaration() -> impl Strategy<Value = Decl> {
    let d = Span::default();
    let value = || {
        (ident(), expression()).prop_map(move |(name, value)| ValueDecl {
            name,
            value,
            span: d,
        })
    };
    let attr =
        (ident(), prop::option::of(expression())).prop_map(move |(name, default)| AttrDecl {
            name,
            default,
            span: d,
        });
    let kind = prop::sample::select(vec![StageKind::Step, StageKind::Link]);
    prop_oneof![
        value().prop_map(Decl::Const),
        value().prop_map(Decl::Param),
        prop::collection::vec(attr, 0..4)
            .prop_map(move |attrs| Decl::Session(SessionDecl { attrs, span: d })),
        (
            ident(),
            prop::option::of(expression()),
            kind,
            prop::collection::vec(stage_option(), 0..5)
        )
            .prop_map(move |(name, count, kind, options)| Decl::Stage(StageDecl {
                name,
                count,
                kind,
                kind_span: d,
                options,
                span: d
            })),
        (
            ident(),
            prop::option::of(expression()),
            prop::collection::vec(pool_option(), 0..6)
        )
            .prop_map(move |(name, count, options)| Decl::Pool(PoolDecl {
                name,
                count,
                options,
                span: d
            })),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    prop::collection::vec(declaration(), 0..6).prop_map(|decls| Spec { decls })
}

proptest! {
    #[test]
    fn prop_arbitrary_strings_never_panic(src in any::<String>()) {
        check_no_panic(&src);
    }

    #[test]
    fn prop_pool_like_strings_never_panic(src in fragments()) {
        check_no_panic(&src);
    }

    #[test]
    fn prop_printable_ascii_never_panics(src in "[ -~\n]{0,200}") {
        check_no_panic(&src);
    }

    #[test]
    fn prop_mutated_example_never_panics(mutations in prop::collection::vec(mutation(), 1..5)) {
        let src = mutations.iter().fold(EXAMPLE.to_string(), |text, m| apply(&text, m));
        check_no_panic(&src);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn prop_printed_specs_parse_back_to_the_same_tree(spec in spec()) {
        let printed = printer::print_spec(&spec);
        let parsed = parse(&printed).map_err(|e| TestCaseError::fail(format!("{printed}\n{e:#?}")))?;
        prop_assert_eq!(erased(parsed), spec, "printed:\n{}", printed);
    }

    #[test]
    fn prop_printed_expressions_parse_back_to_the_same_tree(x in expression()) {
        let printed = printer::print_expr(&x);
        prop_assert_eq!(expr(&printed), x, "printed: {}", printed);
    }
}
