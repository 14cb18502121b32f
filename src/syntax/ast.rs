//! The abstract syntax tree: declarations and expressions exactly as written, every
//! node with the byte span it came from. Names are unresolved strings here; nothing in
//! this module evaluates, resolves or checks anything (that is `sema`'s job).

use std::ops::Range;

pub use crate::ir::{BinaryOp, UnaryOp};

/// A half-open byte range `start..end` into the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        // Spec files larger than 4 GiB are refused before parsing, so offsets fit.
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A name as written, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole spec file: its declarations in source order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Spec {
    pub decls: Vec<Decl>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Decl {
    Const(ValueDecl),
    Param(ValueDecl),
    Session(SessionDecl),
    Stage(StageDecl),
    Pool(PoolDecl),
}

/// `const NAME = expr;` or `param NAME = expr;` (D1, D2).
#[derive(Clone, Debug, PartialEq)]
pub struct ValueDecl {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `session { attr; attr = expr; … }` (D3).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionDecl {
    pub attrs: Vec<AttrDecl>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AttrDecl {
    pub name: Ident,
    pub default: Option<Expr>,
    pub span: Span,
}

/// The keyword that opens a stage's body (D4): which options the stage may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StageKind {
    Step,
    Link,
}

/// `stage NAME [ '[' N ']' ] { step|link; options… }` (D4).
#[derive(Clone, Debug, PartialEq)]
pub struct StageDecl {
    pub name: Ident,
    pub count: Option<Expr>,
    pub kind: StageKind,
    /// The span of the `step` or `link` keyword.
    pub kind_span: Span,
    pub options: Vec<StageOption>,
    pub span: Span,
}

/// One stage option; `span` covers the option from its keyword to its `;`.
#[derive(Clone, Debug, PartialEq)]
pub struct StageOption {
    pub kind: StageOptionKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StageOptionKind {
    Budget(Expr),
    Seats(Expr),
    Chunk(Expr),
    ServeExclusivePrefill,
    Time(Expr),
    Rate(Expr),
}

/// `pool NAME [ '[' N ']' ] { options }` (seed, D5).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolDecl {
    pub name: Ident,
    pub count: Option<Expr>,
    pub options: Vec<PoolOption>,
    pub span: Span,
}

/// One pool option; `span` covers the option from its keyword to its `;`.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolOption {
    pub kind: PoolOptionKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PoolOptionKind {
    Cap(Expr),
    Block(Expr),
    EvictLru,
    EvictBy(Vec<Expr>),
    PreemptNone,
    PreemptLifo,
    /// `preempt by (keys);` (R18).
    PreemptBy(Vec<Expr>),
    /// `requeue keyed;` (R19).
    RequeueKeyed,
    QueueFifo,
    QueueBy(Vec<Expr>),
    AdmitVia(Ident),
    Spill(SpillClause),
    /// `route by (keys) [every T] [remember N];` (R22–R24).
    Route(RouteClause),
    /// `handoff POOL via LINK (work);` (R25–R27): a computed prompt's KV goes to
    /// another pool family over a link, and the session continues there.
    Handoff(HandoffClause),
    /// `fair ATTR (prefill, decode) [weight ATTR];` (R30): service counters per value
    /// of a session attribute, which the pool's `queue by` keys read as `service`.
    Fair(FairClause),
}

/// `fair ATTR (prefill, decode) [weight ATTR];` on a pool admitted via a step stage
/// (R30): each take charges its group `(prefill × its prefill tokens + decode × its
/// decode tokens) / weight`.
#[derive(Clone, Debug, PartialEq)]
pub struct FairClause {
    pub by: Ident,
    pub prefill: Expr,
    pub decode: Expr,
    pub weight: Option<Ident>,
}

/// `handoff POOL via LINK (work);` on an entry pool family (R25).
#[derive(Clone, Debug, PartialEq)]
pub struct HandoffClause {
    pub target: Ident,
    pub link: Ident,
    pub work: Expr,
}

/// `route by (keys) [every T] [remember N];` on an entry pool family (R22): the keys
/// score each member for an arriving session; `every` the staleness of the load
/// queries (R23); `remember` the router's own prefix index, in blocks (R24).
#[derive(Clone, Debug, PartialEq)]
pub struct RouteClause {
    pub keys: Vec<Expr>,
    pub every: Option<Expr>,
    pub remember: Option<Expr>,
}

/// `spill TIER via LINK (work) when (pred);`
#[derive(Clone, Debug, PartialEq)]
pub struct SpillClause {
    pub tier: Ident,
    pub link: Ident,
    pub work: Expr,
    pub pred: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A numeric literal; `inf` is `Number(f64::INFINITY)`. Never negative or NaN:
    /// a minus sign is a `Unary(Neg, …)`.
    Number(f64),
    Name(Ident),
    /// `name[index]`: one member of a family.
    Index(Ident, Box<Expr>),
    /// `f(args)`: a built-in function or a query (E4, E6).
    Call(Ident, Vec<Expr>),
    /// `draw(args)` (E7): parsed so that sites can reject it by name.
    Draw(Vec<Expr>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The direct sub-expressions, in source order: what a walk over the tree that
    /// treats every form alike recurses into.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Number(_) | ExprKind::Name(_) => Vec::new(),
            ExprKind::Index(_, i) | ExprKind::Unary(_, i) => vec![&**i],
            ExprKind::Call(_, args) | ExprKind::Draw(args) => args.iter().collect(),
            ExprKind::Binary(_, l, r) => vec![&**l, &**r],
            ExprKind::Conditional(c, t, f) => vec![&**c, &**t, &**f],
        }
    }

    /// [`Expr::children`], to rewrite them.
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Number(_) | ExprKind::Name(_) => Vec::new(),
            ExprKind::Index(_, i) | ExprKind::Unary(_, i) => vec![&mut **i],
            ExprKind::Call(_, args) | ExprKind::Draw(args) => args.iter_mut().collect(),
            ExprKind::Binary(_, l, r) => vec![&mut **l, &mut **r],
            ExprKind::Conditional(c, t, f) => vec![&mut **c, &mut **t, &mut **f],
        }
    }

    /// Every bare name (`ExprKind::Name`) in the expression, in source order, repeats
    /// included (a family's name in `name[index]` is not one).
    pub fn names(&self) -> Vec<&Ident> {
        let mut out = Vec::new();
        self.push_names(&mut out);
        out
    }

    fn push_names<'a>(&'a self, out: &mut Vec<&'a Ident>) {
        if let ExprKind::Name(id) = &self.kind {
            out.push(id);
        }
        for c in self.children() {
            c.push_names(out);
        }
    }
}
