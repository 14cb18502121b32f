//! Joins between declarations (K1–K3): a pool's `admit via` stage, its spill tier
//! and link, each resolved to a declaration of the right kind with family counts that
//! join, the spill graph checked for cycles, and the one entry family of a spec that
//! routes (R22). It only resolves and checks; the
//! IR it returns is assembled by `mod.rs`, and all wording is `errors.rs`'s.

use crate::diag::Diagnostic;
use crate::ir::{
    Handoff, Input, Join, JoinClause, JoinRule, Pool, PoolId, Probe, SiteExpr, Spill, StageId,
};
use crate::syntax::Span;
use crate::syntax::ast::{self, PoolOptionKind, StageKind};

use super::expr::Owner;
use super::names::{Sym, suggest};
use super::site::{Site, SiteBuilder};
use super::{Checker, errors};

impl Checker<'_> {
    /// K1, K2: `admit via STAGE` names a step stage; the counts join.
    pub(super) fn admit_via(&mut self, pool: usize, stage: &ast::Ident) -> Option<Join<StageId>> {
        let decl = self.pools[pool];
        let s = self.resolve_stage(stage, "admit via", "a step stage", StageKind::Step)?;
        let rule = self.join(
            "`admit via`",
            (&decl.name, self.pool_counts[pool]),
            (&self.stages[s].name, self.stage_counts[s]),
            JoinClause::AdmitVia,
        )?;
        Some(Join {
            target: StageId(s as u32),
            rule,
        })
    }

    pub(super) fn spill(
        &mut self,
        pool: usize,
        spill: &ast::SpillClause,
        b: &mut SiteBuilder,
        owner: Owner<'_>,
    ) -> Option<Spill> {
        let decl = self.pools[pool];
        let tier = self
            .other_pool(pool, &spill.tier, "spill", errors::spill_into_self)
            .and_then(|t| {
                let rule = self.join(
                    "`spill`",
                    (&decl.name, self.pool_counts[pool]),
                    (&self.pools[t].name, self.pool_counts[t]),
                    JoinClause::Spill,
                )?;
                Some(Join {
                    target: PoolId(t as u32),
                    rule,
                })
            });
        let link = self.link(pool, &spill.link, "spill … via");
        b.site = Site::SpillWork;
        let work = self
            .lower(&spill.work, b, Some(owner))
            .map(|expr| SiteExpr {
                expr,
                reads: b.take_reads(),
            });
        b.take_reads();
        b.site = Site::SpillPred;
        let pred = self
            .lower(&spill.pred, b, Some(owner))
            .map(|expr| SiteExpr {
                expr,
                reads: b.take_reads(),
            });
        b.take_reads();
        Some(Spill {
            tier: tier?,
            link: link?,
            work: work?,
            pred: pred?,
        })
    }

    /// The pool `id` names in `clause` of pool `pool`: a pool other than `pool`
    /// (`into_self` words the error when it is `pool` itself).
    fn other_pool(
        &mut self,
        pool: usize,
        id: &ast::Ident,
        clause: &str,
        into_self: fn(&str, Span) -> Diagnostic,
    ) -> Option<usize> {
        match self.symbols.get(&id.name) {
            Some((Sym::Pool(t), _)) if t == pool => {
                self.error(into_self(&self.pools[pool].name.name, id.span));
                None
            }
            Some((Sym::Pool(t), _)) => Some(t),
            found => {
                self.misnamed(id, clause, "a pool", found, |s| matches!(s, Sym::Pool(_)));
                None
            }
        }
    }

    /// K2, name: `id` in `clause` names `found`, which is not `expected`, or nothing
    /// (then the names `wanted` accepts are the suggestions).
    fn misnamed(
        &mut self,
        id: &ast::Ident,
        clause: &str,
        expected: &str,
        found: Option<(Sym, Span)>,
        wanted: fn(Sym) -> bool,
    ) {
        let d = match found {
            Some((sym, span)) => {
                errors::wrong_kind(clause, expected, &id.name, sym.describe(), id.span, span)
            }
            None => {
                let cand = self.symbols.names_where(wanted);
                errors::unknown_name(&id.name, id.span, suggest(&id.name, cand))
            }
        };
        self.error(d);
    }

    /// K1, K2: the link stage `id` that `clause` of pool `pool` names, joined with it.
    fn link(&mut self, pool: usize, id: &ast::Ident, clause: &str) -> Option<Join<StageId>> {
        let decl = self.pools[pool];
        let l = self.resolve_stage(id, clause, "a link stage", StageKind::Link)?;
        let rule = self.join(
            &format!("`{clause}`"),
            (&decl.name, self.pool_counts[pool]),
            (&self.stages[l].name, self.stage_counts[l]),
            JoinClause::Spill,
        )?;
        Some(Join {
            target: StageId(l as u32),
            rule,
        })
    }

    /// `handoff POOL via LINK (work);` (R25): the target resolved to a pool other than
    /// this one, the link to a link stage joined by K1, the work on its own site. What
    /// the target must be (admitted, neither handing off nor spilling) is checked once
    /// every pool is built ([`Checker::check_handoffs`]).
    pub(super) fn handoff(
        &mut self,
        pool: usize,
        h: &ast::HandoffClause,
        owner: Owner<'_>,
    ) -> Option<Handoff> {
        let target = self.other_pool(pool, &h.target, "handoff", errors::handoff_into_self);
        let link = self.link(pool, &h.link, "handoff … via");
        let mut b = SiteBuilder::new(Site::Handoff);
        let work = self.lower(&h.work, &mut b, Some(owner));
        let reads = b.take_reads();
        let (layout, remap) = b.finish();
        let mut expr = work?;
        remap.apply(&mut expr);
        Some(Handoff {
            target: PoolId(target? as u32),
            link: link?,
            work: SiteExpr { expr, reads },
            layout,
        })
    }

    /// R25: a handoff leaves an entry family for a family another step stage admits,
    /// which itself neither hands off nor spills (this compiler), nor routes by what
    /// its cache holds.
    pub(super) fn check_handoffs(&mut self, pools: &[Pool]) {
        for (i, p) in pools.iter().enumerate() {
            let Some(h) = &p.handoff else { continue };
            let span = self.option_span(i, |k| matches!(k, PoolOptionKind::Handoff(_)));
            let name = self.pools[i].name.name.clone();
            let t = h.target.0 as usize;
            let target = &pools[t];
            let tname = self.pools[t].name.clone();
            let problem = if p.admit_via.is_none() {
                Some(errors::handoff_not_entry(&name, span))
            } else if target.admit_via.is_none() {
                Some(errors::handoff_target(
                    &name,
                    span,
                    &tname.name,
                    tname.span,
                    "is not admitted via a step stage: nothing would serve the sessions there",
                ))
            } else if target.admit_via.map(|j| j.target) == p.admit_via.map(|j| j.target) {
                Some(errors::handoff_target(
                    &name,
                    span,
                    &tname.name,
                    tname.span,
                    "is admitted via the same step stage: a prefill hold would be a resident of the decode side's stage",
                ))
            } else if target.handoff.is_some() {
                Some(errors::handoff_target(
                    &name,
                    span,
                    &tname.name,
                    tname.span,
                    "hands off itself: a session hands off once",
                ))
            } else if target.spill.is_some() {
                Some(errors::handoff_target(
                    &name,
                    span,
                    &tname.name,
                    tname.span,
                    "spills: a handoff target with a tier is not supported by this compiler",
                ))
            } else if target.route.as_ref().is_some_and(|r| {
                r.layout
                    .row
                    .iter()
                    .chain(&r.layout.ctx)
                    .any(|x| matches!(x, Input::Scored(_) | Input::Over(_, Probe::Scored(_))))
            }) {
                Some(errors::handoff_target(
                    &name,
                    span,
                    &tname.name,
                    tname.span,
                    "routes by `hit`, `tier_hit` or `routed`: in this compiler only the entry family's route reads them",
                ))
            } else {
                None
            };
            if let Some(d) = problem {
                self.error(d);
            }
        }
    }

    /// The span of pool `pool`'s first option of a kind, else its name's.
    pub(super) fn option_span(&self, pool: usize, kind: impl Fn(&PoolOptionKind) -> bool) -> Span {
        self.pools[pool]
            .options
            .iter()
            .find(|o| kind(&o.kind))
            .map_or(self.pools[pool].name.span, |o| o.span)
    }

    pub(super) fn resolve_stage(
        &mut self,
        id: &ast::Ident,
        clause: &str,
        expected: &str,
        kind: StageKind,
    ) -> Option<usize> {
        match self.symbols.get(&id.name) {
            Some((Sym::Stage(s), span)) => {
                if self.stages[s].kind == kind {
                    Some(s)
                } else {
                    let found = match self.stages[s].kind {
                        StageKind::Step => "a step stage",
                        StageKind::Link => "a link stage",
                    };
                    self.error(errors::wrong_kind(
                        clause, expected, &id.name, found, id.span, span,
                    ));
                    None
                }
            }
            found => {
                self.misnamed(id, clause, expected, found, |s| matches!(s, Sym::Stage(_)));
                None
            }
        }
    }

    /// K1: how a family of `from` members reaches one of `to` members.
    pub(super) fn join(
        &mut self,
        what: &str,
        (from, from_count): (&ast::Ident, u32),
        (to, to_count): (&ast::Ident, u32),
        clause: JoinClause,
    ) -> Option<JoinRule> {
        let rule = JoinRule::for_counts(from_count, to_count, clause);
        if rule.is_none() {
            self.error(errors::count_mismatch(
                what,
                (&from.name, from_count, from.span),
                (&to.name, to_count, to.span),
            ));
        }
        rule
    }

    /// K2: no chain of spills may come back to where it started.
    pub(super) fn check_spill_cycles(&mut self, pools: &[Pool]) {
        let next = |p: usize| pools[p].spill.as_ref().map(|s| s.tier.target.0 as usize);
        for start in 0..pools.len() {
            let mut path = vec![start];
            let mut p = start;
            while let Some(n) = next(p) {
                if let Some(pos) = path.iter().position(|&x| x == n) {
                    let cycle = &path[pos..];
                    // Report each cycle once: from its first pool in source order,
                    // the only start that both lies on the cycle and is its least.
                    if cycle.iter().min() == Some(&start) {
                        let names = cycle
                            .iter()
                            .map(|&q| (self.pools[q].name.name.clone(), self.spill_span(q)))
                            .collect::<Vec<_>>();
                        self.error(errors::spill_cycle(&names));
                    }
                    break;
                }
                path.push(n);
                p = n;
            }
        }
    }

    pub(super) fn spill_span(&self, pool: usize) -> Span {
        self.pools[pool]
            .options
            .iter()
            .find(|o| matches!(o.kind, PoolOptionKind::Spill(_)))
            .map_or(self.pools[pool].name.span, |o| o.span)
    }

    /// R22: a spec that routes its entry family has one entry family, the routed
    /// one; handoff targets (R25) are not entry families, and route on their own.
    pub(super) fn check_route_entry(&mut self, pools: &[Pool]) {
        let targets: Vec<usize> = pools
            .iter()
            .filter_map(|p| p.handoff.as_ref().map(|h| h.target.0 as usize))
            .collect();
        let entry = |j: usize, p: &Pool| p.admit_via.is_some() && !targets.contains(&j);
        let routed = pools
            .iter()
            .enumerate()
            .position(|(j, p)| p.route.is_some() && entry(j, p));
        let Some(r) = routed else { return };
        let span = self.option_span(r, |k| matches!(k, PoolOptionKind::Route(_)));
        let name = self.pools[r].name.name.clone();
        for (j, p) in pools.iter().enumerate() {
            if j != r && entry(j, p) {
                let other = self.pools[j].name.clone();
                self.error(errors::route_other_entry(
                    &name,
                    span,
                    &other.name,
                    other.span,
                ));
            }
        }
    }
}
