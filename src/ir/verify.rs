//! The IR verifier: checks that a `Program` keeps the contract every consumer of the
//! IR relies on, so that code generation, the loader, the bridge and the runtime can
//! index and lower without checking again. It is called where IR crosses a boundary:
//! after sema (debug builds), before codegen plans a program, when a shared object is
//! loaded against a program, and in the bridge. It never panics and never repairs:
//! the first broken invariant is returned as a [`VerifyError`].
//!
//! Invariants (each a [`Problem`]):
//! - **References in range.** Every `AttrId` is an attribute of the session; every
//!   `PoolId`/`StageId` (admit via, spill tier and link, query targets) is declared;
//!   a query's fixed member index is below its target's count. Families have at least
//!   one member.
//! - **Layouts.** Each layout's row and ctx are strictly increasing in `Input` order
//!   (dense, each input at most once: docs/ABI.md), hold at most [`MAX_SLOTS`] inputs
//!   (a slot's byte offset fits the `i32` displacement codegen uses), never hold
//!   `Var(Waited)` or `Var(Age)` (derived, not slots).
//! - **Slots in range.** Every slot an expression reads is inside its site's layout;
//!   [`expr`] checks this alone for bare expressions (and that no slot index reaches
//!   [`MAX_SLOTS`]).
//! - **Sums** (R29): `Sum` appears only in a stage's `time`, never inside another
//!   `Sum`; there, row slots are read only inside a `Sum`.
//! - **Built-in arity** (E4): `min`/`max` take two or more arguments, the others one.
//! - **Read-sets cover what the expressions read.** Every input a site expression's
//!   slots hold is named by its read-set (`waited` standing for `enqueued` and
//!   `now`, `age` for `last` and `now`), so `ReadSet::is_fixed` and the manifest's
//!   `reads` never hide a read. A read-set may name more: it is the source's, and
//!   folding can drop a read (`3 ? cached(kv) : free(kv)` reads only `cached(kv)`).
//! - **Key lists** of `queue by` and `evict by` are non-empty.
//! - **Joins** (K1): `admit via` and spill joins carry the rule sema derives from the
//!   family sizes (equal counts: member for member; a target of one: shared target;
//!   only `admit via` from a pool of one: shared source); a query naming the
//!   evaluating member's counterpart (`Member::Same`) targets a family of the pool's
//!   size.

use std::collections::BTreeSet;
use std::fmt;

use super::{
    AttrId, Builtin, Evict, Expr, Input, JoinClause, JoinRule, Layout, Member, Pool, PreemptMode,
    Probe, Program, QueryTarget, QueuePolicy, Read, Rows, SiteExpr, Slot, Var,
};

/// The most inputs a layout may hold (and one more than the largest slot index):
/// slot `i` is at byte offset `8 * i`, which generated code encodes as an `i32`
/// displacement.
pub const MAX_SLOTS: usize = (i32::MAX / 8) as usize + 1;

/// The first invariant a program breaks, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The site, as the function symbol names it (`pool_kv_queue_key0`,
    /// `stage_engine_time`, `pool_kv_queue_layout`, `pool_kv`).
    pub at: String,
    pub problem: Problem,
}

/// What is broken (the module documentation lists the invariants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    AttrOutOfRange {
        attr: u32,
        attrs: usize,
    },
    PoolOutOfRange {
        pool: u32,
        pools: usize,
    },
    StageOutOfRange {
        stage: u32,
        stages: usize,
    },
    MemberOutOfRange {
        member: u32,
        count: u32,
    },
    EmptyFamily,
    LayoutUnordered {
        index: usize,
    },
    LayoutTooLong {
        len: usize,
    },
    DerivedInLayout {
        var: Var,
    },
    /// A row slot of a stage's `time` outside `sum` (R29).
    RowOutsideSum {
        slot: u32,
    },
    /// `sum` at a pool's site, or inside another `sum` (R29).
    MisplacedSum,
    SlotOutOfRange {
        slot: Slot,
        len: usize,
    },
    SlotBeyondLimit {
        slot: Slot,
    },
    Arity {
        builtin: Builtin,
        args: usize,
    },
    UndeclaredRead {
        input: Input,
    },
    EmptyKeys,
    JoinRule {
        rule: JoinRule,
        expected: Option<JoinRule>,
    },
    SameMemberCount {
        count: u32,
        target_count: u32,
    },
    /// A route input (`member`, `hit`, `min_of`, …) in another site's layout, or a
    /// route on a family of one.
    RouteOnly {
        input: Option<Input>,
    },
    /// A handoff (R25) into its own pool or into a pool no step stage admits, or its
    /// work reading what only other sites read.
    Handoff {
        input: Option<Input>,
    },
    /// `service` (R30) outside the queue layout of a pool with `fair`.
    ServiceWithoutFair,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed IR in {}: ", self.at)?;
        match &self.problem {
            Problem::AttrOutOfRange { attr, attrs } => {
                write!(f, "attribute {attr} of a session with {attrs}")
            }
            Problem::PoolOutOfRange { pool, pools } => {
                write!(f, "pool {pool} of a program with {pools}")
            }
            Problem::StageOutOfRange { stage, stages } => {
                write!(f, "stage {stage} of a program with {stages}")
            }
            Problem::MemberOutOfRange { member, count } => {
                write!(f, "member {member} of a family of {count}")
            }
            Problem::EmptyFamily => f.write_str("a family of 0 members"),
            Problem::LayoutUnordered { index } => write!(
                f,
                "layout input {index} is not after the one before it (Input order, each once)"
            ),
            Problem::LayoutTooLong { len } => {
                write!(f, "a layout of {len} inputs (at most {MAX_SLOTS})")
            }
            Problem::DerivedInLayout { var } => {
                write!(f, "`{}` is derived and has no slot", var.name())
            }
            Problem::RowOutsideSum { slot } => {
                write!(f, "reads row slot {slot} of a stage's time outside sum()")
            }
            Problem::MisplacedSum => {
                f.write_str("sum() outside a stage's time, or inside another sum()")
            }
            Problem::SlotOutOfRange { slot, len } => {
                let (side, i) = match slot {
                    Slot::Row(i) => ("row", i),
                    Slot::Ctx(i) => ("ctx", i),
                };
                write!(f, "reads {side} slot {i}; the {side} layout has {len}")
            }
            Problem::SlotBeyondLimit { slot } => {
                write!(
                    f,
                    "{slot:?} is beyond the largest layout ({MAX_SLOTS} slots)"
                )
            }
            Problem::Arity { builtin, args } => {
                write!(f, "{}() with {args} arguments", builtin.name())
            }
            Problem::UndeclaredRead { input } => {
                write!(
                    f,
                    "the expression reads {input:?}, which its read-set does not name"
                )
            }
            Problem::EmptyKeys => f.write_str("a key list with no keys"),
            Problem::JoinRule { rule, expected } => {
                write!(
                    f,
                    "join rule {rule:?} where the family sizes give {expected:?}"
                )
            }
            Problem::SameMemberCount {
                count,
                target_count,
            } => write!(
                f,
                "a query of the same member from a family of {count} to one of {target_count}"
            ),
            Problem::RouteOnly { input: Some(input) } => {
                write!(f, "{input:?} outside route keys")
            }
            Problem::RouteOnly { input: None } => f.write_str("a route over a family of one"),
            Problem::Handoff { input: Some(input) } => {
                write!(f, "{input:?} in a handoff's work")
            }
            Problem::ServiceWithoutFair => {
                f.write_str("`service` outside the queue layout of a pool with `fair` (R30)")
            }
            Problem::Handoff { input: None } => {
                f.write_str("a handoff into its own pool or one no step stage admits")
            }
        }
    }
}

impl std::error::Error for VerifyError {}

/// Checks every invariant of the module documentation on `program`.
pub fn verify(program: &Program) -> Result<(), VerifyError> {
    let v = Verifier { program };
    for stage in &program.stages {
        let at = |what: &str| format!("stage_{}_{what}", stage.name);
        v.count(&at("family"), stage.count)?;
        let (time, time_layout) = stage.time();
        v.layout(&at("time_layout"), time_layout, None)?;
        v.site(&at("time"), time, time_layout, Rows::InSum)?;
    }
    for pool in &program.pools {
        v.pool(pool)?;
    }
    Ok(())
}

/// Checks a bare expression's slots, arities and sums against a shape: `rows` says
/// where it may read its `row_len` row slots (R29).
pub fn expr(e: &Expr, rows: Rows, row_len: usize, ctx_len: usize) -> Result<(), Problem> {
    let place = match rows {
        Rows::PerRecord => Place::Record,
        Rows::InSum => Place::Time,
    };
    check(e, place, row_len, ctx_len)
}

/// Where a node sits: what its row slots and a `Sum` may do there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A pool's site: rows readable, no `Sum`.
    Record,
    /// A stage's `time` outside `sum`: no row, `Sum` allowed.
    Time,
    /// Inside a `Sum`: rows readable, no `Sum`.
    InSum,
}

fn check(e: &Expr, place: Place, row_len: usize, ctx_len: usize) -> Result<(), Problem> {
    match e {
        Expr::Slot(slot @ (Slot::Row(i) | Slot::Ctx(i))) if *i as usize >= MAX_SLOTS => {
            Err(Problem::SlotBeyondLimit { slot: *slot })
        }
        Expr::Slot(Slot::Row(i)) if place == Place::Time => {
            Err(Problem::RowOutsideSum { slot: *i })
        }
        Expr::Slot(Slot::Row(i)) if (*i as usize) < row_len => Ok(()),
        Expr::Slot(Slot::Row(i)) => Err(Problem::SlotOutOfRange {
            slot: Slot::Row(*i),
            len: row_len,
        }),
        Expr::Slot(Slot::Ctx(i)) if (*i as usize) < ctx_len => Ok(()),
        Expr::Slot(Slot::Ctx(i)) => Err(Problem::SlotOutOfRange {
            slot: Slot::Ctx(*i),
            len: ctx_len,
        }),
        Expr::Sum(x) if place == Place::Time => check(x, Place::InSum, row_len, ctx_len),
        Expr::Sum(_) => Err(Problem::MisplacedSum),
        Expr::Call(f, args) if !f.arity_ok(args.len()) => Err(Problem::Arity {
            builtin: *f,
            args: args.len(),
        }),
        _ => e
            .children()
            .into_iter()
            .try_for_each(|x| check(x, place, row_len, ctx_len)),
    }
}

struct Verifier<'a> {
    program: &'a Program,
}

impl Verifier<'_> {
    fn count(&self, at: &str, count: u32) -> Result<(), VerifyError> {
        if count == 0 {
            return Err(fail(at, Problem::EmptyFamily));
        }
        Ok(())
    }

    fn pool(&self, pool: &Pool) -> Result<(), VerifyError> {
        let p = self.program;
        let at = |what: &str| format!("pool_{}_{what}", pool.name);
        self.count(&at("family"), pool.count)?;
        let counts = Some(pool.count);
        self.layout(&at("queue_layout"), &pool.queue_layout, counts)?;
        self.layout(&at("entry_layout"), &pool.entry_layout, counts)?;
        self.layout(&at("resident_layout"), &pool.resident_layout, counts)?;
        for layout in [
            &pool.queue_layout,
            &pool.entry_layout,
            &pool.resident_layout,
        ] {
            if let Some(&input) = layout.row.iter().chain(&layout.ctx).find(|i| {
                matches!(
                    i,
                    Input::Scored(_) | Input::Over(..) | Input::Var(Var::Member)
                )
            }) {
                return Err(fail(
                    &at("layout"),
                    Problem::RouteOnly { input: Some(input) },
                ));
            }
        }
        // R30: `service` is a queue row of a pool that keeps the counters.
        if let Some(f) = &pool.fair {
            self.input(&at("fair"), Input::Attr(f.by), counts)?;
            if let Some(w) = f.weight {
                self.input(&at("fair"), Input::Attr(w), counts)?;
            }
        }
        let service = Input::Var(Var::Service);
        let misplaced = [
            &pool.queue_layout.ctx,
            &pool.entry_layout.row,
            &pool.entry_layout.ctx,
            &pool.resident_layout.row,
            &pool.resident_layout.ctx,
        ];
        let unkept = pool.fair.is_none() && pool.queue_layout.row.contains(&service);
        if unkept || misplaced.iter().any(|l| l.contains(&service)) {
            return Err(fail(&at("fair"), Problem::ServiceWithoutFair));
        }
        if let Some(route) = &pool.route {
            if pool.count < 2 {
                return Err(fail(&at("route"), Problem::RouteOnly { input: None }));
            }
            self.layout(&at("route_layout"), &route.layout, counts)?;
            if route.keys.is_empty() {
                return Err(fail(&at("route"), Problem::EmptyKeys));
            }
            for (i, k) in route.keys.iter().enumerate() {
                self.site(
                    &at(&format!("route_key{i}")),
                    k,
                    &route.layout,
                    Rows::PerRecord,
                )?;
            }
        }
        if let Some(h) = &pool.handoff {
            let target = p.pools.get(h.target.0 as usize).ok_or_else(|| {
                fail(
                    &at("handoff"),
                    Problem::PoolOutOfRange {
                        pool: h.target.0,
                        pools: p.pools.len(),
                    },
                )
            })?;
            if std::ptr::eq(target, pool) || target.admit_via.is_none() {
                return Err(fail(&at("handoff"), Problem::Handoff { input: None }));
            }
            let link = self.stage_ref(&at("handoff"), h.link.target.0)?;
            self.rule(
                &at("handoff"),
                h.link.rule,
                JoinRule::for_counts(pool.count, link.count, JoinClause::Spill),
            )?;
            self.layout(&at("handoff_layout"), &h.layout, counts)?;
            if let Some(&input) = h
                .layout
                .row
                .iter()
                .chain(&h.layout.ctx)
                .find(|i| !matches!(i, Input::Attr(_) | Input::Var(Var::Units)))
            {
                return Err(fail(
                    &at("handoff_layout"),
                    Problem::Handoff { input: Some(input) },
                ));
            }
            self.site(&at("handoff_work"), &h.work, &h.layout, Rows::PerRecord)?;
        }
        if let Some(j) = &pool.admit_via {
            let stage = self.stage_ref(&at("admit_via"), j.target.0)?;
            let expected = JoinRule::for_counts(pool.count, stage.count, JoinClause::AdmitVia);
            self.rule(&at("admit_via"), j.rule, expected)?;
        }
        let lists = [
            (
                "queue",
                &pool.queue_layout,
                match &pool.queue {
                    QueuePolicy::Fifo => None,
                    QueuePolicy::By(keys) => Some(keys),
                },
            ),
            (
                "evict",
                &pool.entry_layout,
                match &pool.evict {
                    Evict::Lru => None,
                    Evict::By(keys) => Some(keys),
                },
            ),
            (
                "preempt",
                &pool.resident_layout,
                match &pool.preempt {
                    PreemptMode::None | PreemptMode::Lifo => None,
                    PreemptMode::By(keys) => Some(keys),
                },
            ),
        ];
        for (site, layout, keys) in lists {
            let Some(keys) = keys else { continue };
            if keys.is_empty() {
                return Err(fail(&at(site), Problem::EmptyKeys));
            }
            for (i, k) in keys.iter().enumerate() {
                self.site(&at(&format!("{site}_key{i}")), k, layout, Rows::PerRecord)?;
            }
        }
        if let Some(s) = &pool.spill {
            let tier = s.tier.target.0;
            let Some(tier_pool) = p.pools.get(tier as usize) else {
                return Err(fail(
                    &at("spill"),
                    Problem::PoolOutOfRange {
                        pool: tier,
                        pools: p.pools.len(),
                    },
                ));
            };
            let tier_count = tier_pool.count;
            self.rule(
                &at("spill"),
                s.tier.rule,
                JoinRule::for_counts(pool.count, tier_count, JoinClause::Spill),
            )?;
            let link = self.stage_ref(&at("spill"), s.link.target.0)?;
            self.rule(
                &at("spill"),
                s.link.rule,
                JoinRule::for_counts(pool.count, link.count, JoinClause::Spill),
            )?;
            self.site(
                &at("spill_pred"),
                &s.pred,
                &pool.entry_layout,
                Rows::PerRecord,
            )?;
            self.site(
                &at("spill_work"),
                &s.work,
                &pool.entry_layout,
                Rows::PerRecord,
            )?;
        }
        Ok(())
    }

    fn stage_ref(&self, at: &str, stage: u32) -> Result<&super::Stage, VerifyError> {
        let stages = &self.program.stages;
        stages.get(stage as usize).ok_or_else(|| {
            fail(
                at,
                Problem::StageOutOfRange {
                    stage,
                    stages: stages.len(),
                },
            )
        })
    }

    fn rule(
        &self,
        at: &str,
        rule: JoinRule,
        expected: Option<JoinRule>,
    ) -> Result<(), VerifyError> {
        if Some(rule) != expected {
            return Err(fail(at, Problem::JoinRule { rule, expected }));
        }
        Ok(())
    }

    /// A layout's order, length and references; `source_count` is the evaluating
    /// pool's family size (`None` for a stage, whose ctx holds no queries).
    fn layout(
        &self,
        at: &str,
        layout: &Layout,
        source_count: Option<u32>,
    ) -> Result<(), VerifyError> {
        for side in [&layout.row, &layout.ctx] {
            if side.len() > MAX_SLOTS {
                return Err(fail(at, Problem::LayoutTooLong { len: side.len() }));
            }
            for (i, pair) in side.windows(2).enumerate() {
                if let [a, b] = pair
                    && a >= b
                {
                    return Err(fail(at, Problem::LayoutUnordered { index: i + 1 }));
                }
            }
            for input in side {
                self.input(at, *input, source_count)?;
            }
        }
        Ok(())
    }

    fn input(&self, at: &str, input: Input, source_count: Option<u32>) -> Result<(), VerifyError> {
        let p = self.program;
        match input {
            Input::Attr(AttrId(a)) if a as usize >= p.session.attrs.len() => Err(fail(
                at,
                Problem::AttrOutOfRange {
                    attr: a,
                    attrs: p.session.attrs.len(),
                },
            )),
            Input::Var(var @ (Var::Waited | Var::Age)) => {
                Err(fail(at, Problem::DerivedInLayout { var }))
            }
            Input::Over(_, Probe::Query(q)) => {
                if matches!(
                    q.target,
                    QueryTarget::Pool(_, Member::Index(_))
                        | QueryTarget::Stage(_, Member::Index(_))
                ) {
                    return Err(fail(at, Problem::RouteOnly { input: Some(input) }));
                }
                self.input(at, Input::Query(q), source_count)
            }
            Input::Query(q) => {
                let (target_count, member) = match q.target {
                    QueryTarget::Pool(id, m) => match p.pools.get(id.0 as usize) {
                        Some(t) => (t.count, m),
                        None => {
                            return Err(fail(
                                at,
                                Problem::PoolOutOfRange {
                                    pool: id.0,
                                    pools: p.pools.len(),
                                },
                            ));
                        }
                    },
                    QueryTarget::Stage(id, m) => (self.stage_ref(at, id.0)?.count, m),
                };
                match member {
                    Member::Index(i) if i >= target_count => Err(fail(
                        at,
                        Problem::MemberOutOfRange {
                            member: i,
                            count: target_count,
                        },
                    )),
                    Member::Same => match source_count {
                        Some(count) if count != target_count => Err(fail(
                            at,
                            Problem::SameMemberCount {
                                count,
                                target_count,
                            },
                        )),
                        _ => Ok(()),
                    },
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// A site expression: slots and arities, then its slots against its read-set.
    fn site(
        &self,
        at: &str,
        site: &SiteExpr,
        layout: &Layout,
        rows: Rows,
    ) -> Result<(), VerifyError> {
        expr(&site.expr, rows, layout.row.len(), layout.ctx.len())
            .map_err(|problem| fail(at, problem))?;
        let mut read = BTreeSet::new();
        slots_read(&site.expr, layout, &mut read);
        let declared: BTreeSet<Input> = site.reads.0.iter().flat_map(|r| implied(*r)).collect();
        if let Some(input) = read.difference(&declared).next() {
            return Err(fail(at, Problem::UndeclaredRead { input: *input }));
        }
        Ok(())
    }
}

fn fail(at: &str, problem: Problem) -> VerifyError {
    VerifyError {
        at: at.to_string(),
        problem,
    }
}

/// The slot inputs a read stands for: derived names read what they are computed from.
fn implied(read: Read) -> Vec<Input> {
    match read {
        Read::Attr(a) => vec![Input::Attr(a)],
        Read::Var(Var::Waited) => vec![Input::Enqueued, Input::Var(Var::Now)],
        Read::Var(Var::Age) => vec![Input::Var(Var::Last), Input::Var(Var::Now)],
        Read::Var(v) => vec![Input::Var(v)],
        Read::Query(q) => vec![Input::Query(q)],
        Read::Scored(v) => vec![Input::Scored(v)],
        Read::Over(e, p) => vec![Input::Over(e, p)],
    }
}

/// The inputs of the slots `e` reads (slots already checked to be in range).
fn slots_read(e: &Expr, layout: &Layout, out: &mut BTreeSet<Input>) {
    match e {
        Expr::Slot(Slot::Row(i)) => out.extend(layout.row.get(*i as usize).copied()),
        Expr::Slot(Slot::Ctx(i)) => out.extend(layout.ctx.get(*i as usize).copied()),
        _ => e
            .children()
            .into_iter()
            .for_each(|x| slots_read(x, layout, out)),
    }
}
