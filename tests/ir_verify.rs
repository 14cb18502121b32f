//! `ir::verify` holds the IR to its contract: every example verifies, and a program
//! broken by hand in one invariant at a time is refused with that invariant's
//! `Problem` (never a panic). The broken programs start from examples/replicas.pool,
//! which has families, a member-for-member join, a query, a spill and keys.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

use poolc::ir::verify::{MAX_SLOTS, Problem};
use poolc::ir::{
    self, AttrId, BinaryOp, Builtin, Evict, Expr, Input, JoinRule, Member, PoolId, Program,
    QueryTarget, QueuePolicy, Read, Rows, SiteExpr, Slot, StageId, StageKind, Var,
};

fn example(name: &str) -> Program {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let text = std::fs::read_to_string(&path).expect("the example exists");
    poolc::check(&text, &poolc::Options::default()).expect("the example checks")
}

fn replicas() -> Program {
    example("examples/replicas.pool")
}

/// The problem `ir::verify` finds once `f` has broken the replicas program.
fn problem(f: impl FnOnce(&mut Program)) -> Problem {
    let mut p = replicas();
    f(&mut p);
    ir::verify(&p)
        .expect_err("the broken program is refused")
        .problem
}

fn kv(p: &mut Program) -> &mut ir::Pool {
    let id = p.find_pool("kv").expect("kv");
    &mut p.pools[id.0 as usize]
}

fn queue_keys(p: &mut Program) -> &mut Vec<SiteExpr> {
    match &mut kv(p).queue {
        QueuePolicy::By(keys) => keys,
        QueuePolicy::Fifo => panic!("kv queues by keys"),
    }
}

#[test]
fn every_example_verifies() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).expect("dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "pool") {
            let name = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
            assert_eq!(ir::verify(&example(&name)), Ok(()), "{name}");
        }
    }
}

#[test]
fn a_slot_outside_its_layout_is_refused() {
    let got = problem(|p| queue_keys(p)[1].expr = Expr::Slot(Slot::Row(99)));
    assert!(
        matches!(
            got,
            Problem::SlotOutOfRange {
                slot: Slot::Row(99),
                ..
            }
        ),
        "{got:?}"
    );
}

#[test]
fn r29_a_row_slot_of_a_stage_time_outside_sum_is_refused() {
    let got = problem(|p| match &mut p.stages[0].kind {
        StageKind::Step(engine) => engine.time.expr = Expr::Slot(Slot::Row(0)),
        StageKind::Link(_) => panic!("replicas' first stage, engine, is a step stage"),
    });
    assert_eq!(got, Problem::RowOutsideSum { slot: 0 });
}

#[test]
fn r29_a_sum_inside_a_sum_or_at_a_pool_site_is_refused() {
    let sum = |x: Expr| Expr::Sum(Box::new(x));
    let nested = problem(|p| match &mut p.stages[0].kind {
        StageKind::Step(engine) => engine.time.expr = sum(sum(Expr::Const(1.0))),
        StageKind::Link(_) => panic!("replicas' first stage, engine, is a step stage"),
    });
    assert_eq!(nested, Problem::MisplacedSum);
    let in_queue = problem(|p| {
        queue_keys(p)[1].expr = sum(Expr::Const(1.0));
        queue_keys(p)[1].reads = ir::ReadSet::default();
    });
    assert_eq!(in_queue, Problem::MisplacedSum);
    // Where it belongs, with a row slot inside, it verifies.
    let ok = Expr::Sum(Box::new(Expr::Slot(Slot::Row(0))));
    assert_eq!(ir::verify::expr(&ok, Rows::InSum, 1, 0), Ok(()));
    assert_eq!(
        ir::verify::expr(&ok, Rows::InSum, 0, 0),
        Err(Problem::SlotOutOfRange {
            slot: Slot::Row(0),
            len: 0
        })
    );
}

#[test]
fn a_slot_beyond_every_layout_is_refused_for_a_bare_expression() {
    let slot = Slot::Ctx(MAX_SLOTS as u32);
    let got = ir::verify::expr(&Expr::Slot(slot), Rows::PerRecord, 0, usize::MAX);
    assert_eq!(got, Err(Problem::SlotBeyondLimit { slot }));
}

#[test]
fn a_builtin_with_the_wrong_arity_is_refused() {
    let got = problem(|p| {
        queue_keys(p)[1].expr = Expr::Call(Builtin::Min, vec![Expr::Const(1.0)]);
        queue_keys(p)[1].reads = ir::ReadSet::default();
    });
    assert_eq!(
        got,
        Problem::Arity {
            builtin: Builtin::Min,
            args: 1
        }
    );
}

#[test]
fn a_read_the_read_set_does_not_name_is_refused() {
    // Key 1 of kv is `serial`, attribute 0.
    let got = problem(|p| {
        let reads = &mut queue_keys(p)[1].reads;
        assert!(reads.0.remove(&Read::Attr(AttrId(0))), "key 1 reads serial");
    });
    assert_eq!(
        got,
        Problem::UndeclaredRead {
            input: Input::Attr(AttrId(0))
        }
    );
}

#[test]
fn a_read_set_may_name_more_than_folding_left() {
    // A read-set is the source's: folding (`3 ? cached(kv) : free(kv)` to
    // `cached(kv)`) can leave it naming more than the expression reads.
    let mut p = replicas();
    queue_keys(&mut p)[1].reads.0.insert(Read::Var(Var::Units));
    assert_eq!(ir::verify(&p), Ok(()));
}

#[test]
fn an_empty_key_list_is_refused() {
    let got = problem(|p| kv(p).evict = Evict::By(Vec::new()));
    assert_eq!(got, Problem::EmptyKeys);
}

#[test]
fn an_unordered_layout_is_refused() {
    let got = problem(|p| kv(p).queue_layout.row.reverse());
    assert_eq!(got, Problem::LayoutUnordered { index: 1 });
}

#[test]
fn a_derived_name_in_a_layout_is_refused() {
    let got = problem(|p| kv(p).entry_layout.ctx.insert(0, Input::Var(Var::Waited)));
    assert_eq!(got, Problem::DerivedInLayout { var: Var::Waited });
}

#[test]
fn references_out_of_range_are_refused() {
    let got = problem(|p| kv(p).entry_layout.row.insert(0, Input::Attr(AttrId(99))));
    assert!(
        matches!(got, Problem::AttrOutOfRange { attr: 99, .. }),
        "{got:?}"
    );
    let got = problem(|p| {
        let j = kv(p).admit_via.as_mut().expect("kv admits via engine");
        j.target = StageId(99);
    });
    assert!(
        matches!(got, Problem::StageOutOfRange { stage: 99, .. }),
        "{got:?}"
    );
    let got = problem(|p| {
        kv(p).spill.as_mut().expect("kv spills").tier.target = PoolId(99);
    });
    assert!(
        matches!(got, Problem::PoolOutOfRange { pool: 99, .. }),
        "{got:?}"
    );
}

#[test]
fn a_join_rule_the_family_sizes_do_not_give_is_refused() {
    let got = problem(|p| {
        kv(p).admit_via.as_mut().expect("kv admits via engine").rule = JoinRule::SharedTarget;
    });
    assert_eq!(
        got,
        Problem::JoinRule {
            rule: JoinRule::SharedTarget,
            expected: Some(JoinRule::MemberForMember)
        }
    );
    let got = problem(|p| kv(p).count = 3);
    assert!(matches!(got, Problem::JoinRule { .. }), "{got:?}");
    let got = problem(|p| kv(p).count = 0);
    assert_eq!(got, Problem::EmptyFamily);
}

#[test]
fn a_query_of_a_member_the_target_lacks_is_refused() {
    let retarget = |p: &mut Program, member: Member| {
        for input in &mut kv(p).queue_layout.ctx {
            if let Input::Query(q) = input
                && let QueryTarget::Pool(id, _) = q.target
            {
                q.target = QueryTarget::Pool(id, member);
            }
        }
    };
    let got = problem(|p| retarget(p, Member::Index(4)));
    assert_eq!(
        got,
        Problem::MemberOutOfRange {
            member: 4,
            count: 4
        }
    );
    let got = problem(|p| {
        let host = p.find_pool("host").expect("host");
        for input in &mut kv(p).queue_layout.ctx {
            if let Input::Query(q) = input {
                q.target = QueryTarget::Pool(host, Member::Same);
            }
        }
    });
    assert_eq!(
        got,
        Problem::SameMemberCount {
            count: 4,
            target_count: 1
        }
    );
}

#[test]
fn codegen_and_the_bridge_refuse_what_verify_refuses() {
    let mut p = replicas();
    queue_keys(&mut p)[1].expr = Expr::Binary(
        BinaryOp::Add,
        Box::new(Expr::Slot(Slot::Ctx(7))),
        Box::new(Expr::Const(1.0)),
    );
    let Err(err) = poolc::codegen::compile_program(&p) else {
        panic!("codegen compiled a program that verify refuses");
    };
    assert!(
        matches!(err, poolc::codegen::CodegenError::Verify(_)),
        "{err}"
    );
    let good = poolc::codegen::compile_program(&replicas()).expect("compiles");
    let kv_id = p.find_pool("kv").expect("kv");
    let err = poolc::bridge::pool_config(&p, kv_id, 0, good.pool(kv_id)).expect_err("bridge");
    assert!(
        matches!(err, poolc::bridge::BridgeError::Verify(_)),
        "{err}"
    );
}

/// R30: `service` is a queue row of a pool that keeps the counters, and `fair`
/// groups by an attribute the session has.
#[test]
fn r30_service_without_fair_and_a_fair_attribute_out_of_range_are_refused() {
    let service = Input::Var(Var::Service);
    let no_fair = problem(|p| kv(p).queue_layout.row.push(service));
    assert_eq!(no_fair, Problem::ServiceWithoutFair);
    let fair = ir::Fair {
        by: AttrId(0),
        prefill: 1.0,
        decode: 2.0,
        weight: None,
    };
    let in_entry = problem(|p| {
        kv(p).fair = Some(fair);
        kv(p).entry_layout.row.push(service);
    });
    assert_eq!(in_entry, Problem::ServiceWithoutFair);
    let attrs = replicas().session.attrs.len();
    let beyond = problem(|p| {
        kv(p).fair = Some(ir::Fair {
            weight: Some(AttrId(attrs as u32)),
            ..fair
        })
    });
    assert_eq!(
        beyond,
        Problem::AttrOutOfRange {
            attr: attrs as u32,
            attrs
        }
    );
    // With `fair`, the same queue slot verifies.
    let mut p = replicas();
    kv(&mut p).fair = Some(fair);
    kv(&mut p).queue_layout.row.push(service);
    assert!(ir::verify(&p).is_ok());
}
