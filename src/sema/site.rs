//! Sites (S1): what each kind of expression may read, where each input sits (row or
//! context), and the per-site builder that interns inputs and turns them into a dense
//! `Layout`. It knows nothing of the AST.

use std::collections::BTreeSet;

use crate::ir::{Expr, Input, Layout, Member, QueryTarget, Read, ReadSet, Slot, Var};

/// The kinds of expression site of the S1 table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// `cap`, `block`, array sizes, stage options, constants, attribute defaults, indices.
    Const,
    Queue,
    Evict,
    /// `preempt by` keys (R18): a row per candidate victim.
    Preempt,
    SpillWork,
    SpillPred,
    Time,
    /// The argument of `sum(…)` in a stage's `time` (R29): a row per session taking
    /// tokens in the iteration.
    Take,
    /// `route by` keys (R22): a row per member of the routed family.
    Route,
    /// A `handoff`'s work (R26): once per transfer.
    Handoff,
}

impl Site {
    /// How messages name the site ("queue keys may not draw").
    pub fn name(self) -> &'static str {
        match self {
            Site::Const => "constant expressions",
            Site::Queue => "queue keys",
            Site::Evict => "evict keys",
            Site::Preempt => "preempt keys",
            Site::SpillWork => "spill work",
            Site::SpillPred => "spill predicates",
            Site::Time => "stage time",
            Site::Take => "sum terms",
            Site::Route => "route keys",
            Site::Handoff => "handoff work",
        }
    }

    pub fn may_read(self) -> &'static str {
        match self {
            Site::Const => {
                "literals, `const` and `param` values, arithmetic and `min max abs floor ceil sqrt`"
            }
            Site::Queue => {
                "constants; session attributes; the hold's `units`, `reserve`, `computed`; `waited`; `now`; queries; `service` (with `fair`)"
            }
            Site::Evict => {
                "constants; `size`, `age`, `last`, `waiting`, `hits`; the entry's session attributes"
            }
            Site::Preempt => {
                "constants; session attributes; the hold's `units`, `computed`, `admitted`; `now`; queries"
            }
            Site::SpillWork | Site::SpillPred => {
                "constants; `size`, `age`, `last`, `waiting`, `hits`, `units`; the entry's session attributes"
            }
            Site::Time => {
                "constants; `tokens`, `prefill`, `decode`, `residents`, `context`; `sum(…)` of per-session terms"
            }
            Site::Take => {
                "constants; the session's `tokens`, `prefill`, `decode`, `computed`, `context`; session attributes"
            }
            Site::Route => {
                "constants; session attributes; `member`; `now`; queries; `hit`, `tier_hit`, `routed` of the routed family; `min_of`, `max_of`"
            }
            Site::Handoff => {
                "constants; session attributes; `units` (the units the transfer reads)"
            }
        }
    }

    pub fn reads_attrs(self) -> bool {
        matches!(
            self,
            Site::Queue
                | Site::Evict
                | Site::Preempt
                | Site::SpillWork
                | Site::SpillPred
                | Site::Route
                | Site::Handoff
                | Site::Take
        )
    }

    pub fn reads_queries(self) -> bool {
        matches!(self, Site::Queue | Site::Preempt | Site::Route)
    }

    pub fn reads_var(self, v: Var) -> bool {
        use Var::*;
        match self {
            Site::Const => false,
            Site::Queue => matches!(v, Units | Reserve | Computed | Waited | Now | Service),
            Site::Evict => matches!(v, Size | Age | Last | Waiting | Hits),
            Site::Preempt => matches!(v, Units | Computed | Admitted | Now),
            Site::SpillWork | Site::SpillPred => {
                matches!(v, Size | Age | Last | Waiting | Hits | Units)
            }
            Site::Time => matches!(v, Tokens | Prefill | Decode | Residents | Context),
            Site::Take => matches!(v, Tokens | Prefill | Decode | Computed | Context),
            Site::Route => matches!(v, Now | Member),
            Site::Handoff => matches!(v, Units),
        }
    }

    /// Whether an input lives in the context (one per evaluation) rather than the row
    /// (one per record). Per-moment values are context; per-record values are row.
    fn in_ctx(self, input: Input) -> bool {
        match input {
            // A take's values are its row; the iteration's totals are the ctx.
            _ if self == Site::Take => false,
            // At the route site a row is a member: what differs between members (a
            // query joined member for member, what it would hit, its index) is in
            // the row; the session's attributes are the same for every member.
            Input::Query(q) if self == Site::Route => {
                matches!(
                    q.target,
                    QueryTarget::Pool(_, Member::Index(_))
                        | QueryTarget::Stage(_, Member::Index(_))
                )
            }
            Input::Attr(_) | Input::Over(..) => self == Site::Route,
            Input::Scored(_) | Input::Var(Var::Member) => false,
            Input::Query(_) => true,
            Input::Var(Var::Now) => true,
            // A hold's `units` is per record at the queue and resident sites, the
            // written units of one eviction at the spill sites.
            Input::Var(Var::Units) => !matches!(self, Site::Queue | Site::Preempt),
            Input::Var(
                Var::Tokens | Var::Prefill | Var::Decode | Var::Residents | Var::Context,
            ) => true,
            _ => false,
        }
    }
}

/// Accumulates the inputs of every expression of one layout (the queue site of a pool,
/// its entry sites, or a stage's time) and the read-set of the expression being lowered.
pub struct SiteBuilder {
    pub site: Site,
    /// Interned inputs; leaves refer to them as `Slot::Row(index)` until `finish`.
    inputs: Vec<(Input, bool)>,
    pub reads: BTreeSet<Read>,
}

impl SiteBuilder {
    pub fn new(site: Site) -> SiteBuilder {
        SiteBuilder {
            site,
            inputs: Vec::new(),
            reads: BTreeSet::new(),
        }
    }

    /// A leaf reading `input`, interned. The slot is provisional until `finish`.
    pub fn leaf(&mut self, input: Input) -> Expr {
        let ctx = self.site.in_ctx(input);
        // At a time site the same input may be both a total (ctx) and, inside `sum`,
        // a take's value (row): each side is interned apart.
        let i = match self.inputs.iter().position(|&x| x == (input, ctx)) {
            Some(i) => i,
            None => {
                self.inputs.push((input, ctx));
                self.inputs.len() - 1
            }
        };
        Expr::Slot(Slot::Row(i as u32))
    }

    /// Takes the read-set of the expression just lowered and starts a fresh one.
    pub fn take_reads(&mut self) -> ReadSet {
        ReadSet(std::mem::take(&mut self.reads))
    }

    /// The dense layout (inputs in `Input` order, row and ctx apart) and a function
    /// rewriting provisional leaves onto it.
    pub fn finish(self) -> (Layout, Remap) {
        let row: BTreeSet<Input> = self
            .inputs
            .iter()
            .filter(|(_, c)| !c)
            .map(|(i, _)| *i)
            .collect();
        let ctx: BTreeSet<Input> = self
            .inputs
            .iter()
            .filter(|(_, c)| *c)
            .map(|(i, _)| *i)
            .collect();
        let layout = Layout {
            row: row.into_iter().collect(),
            ctx: ctx.into_iter().collect(),
        };
        let map = self
            .inputs
            .iter()
            .map(|(input, c)| {
                if *c {
                    Slot::Ctx(layout.ctx_slot(*input).unwrap_or(0))
                } else {
                    Slot::Row(layout.row_slot(*input).unwrap_or(0))
                }
            })
            .collect();
        (layout, Remap(map))
    }
}

/// Rewrites provisional slots (intern indices) to their final places.
pub struct Remap(Vec<Slot>);

impl Remap {
    pub fn apply(&self, e: &mut Expr) {
        match e {
            Expr::Const(_) => {}
            Expr::Slot(s) => {
                if let Slot::Row(i) = *s {
                    *s = *self
                        .0
                        .get(i as usize)
                        .expect("a remap is built with an entry for every row slot");
                }
            }
            Expr::Unary(_, a) => self.apply(a),
            Expr::Binary(_, a, b) => {
                self.apply(a);
                self.apply(b);
            }
            Expr::Cond(c, a, b) => {
                self.apply(c);
                self.apply(a);
                self.apply(b);
            }
            Expr::Call(_, args) => args.iter_mut().for_each(|a| self.apply(a)),
            Expr::Sum(x) => self.apply(x),
        }
    }
}
