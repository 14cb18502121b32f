//! R30's `fair` clause checked: its attributes resolved to session attributes, its
//! prices compile-time values ≥ 0 (D6). Whether the pool may have it (admitted via a
//! step stage) and whether its queue keys may read `service` are `mod.rs`'s checks,
//! made once the pool's options are all known; the wording is `errors.rs`'s.

use crate::ir::{AttrId, Fair};
use crate::syntax::ast;

use super::names::{Sym, suggest};
use super::{Checker, errors};

impl Checker<'_> {
    /// `fair ATTR (prefill, decode) [weight ATTR];` (R30): the attributes resolved,
    /// the prices compile-time values ≥ 0 (D6); `None` when an error was reported.
    pub(super) fn fair(&mut self, f: &ast::FairClause) -> Option<Fair> {
        let by = self.fair_attr(&f.by);
        let weight = f.weight.as_ref().map(|w| self.fair_attr(w));
        let prefill = self.price(&f.prefill, "the prefill price of `fair`");
        let decode = self.price(&f.decode, "the decode price of `fair`");
        Some(Fair {
            by: by?,
            prefill: prefill?,
            decode: decode?,
            weight: match weight {
                Some(w) => Some(w?),
                None => None,
            },
        })
    }

    /// A session attribute named by `fair` (R30).
    fn fair_attr(&mut self, id: &ast::Ident) -> Option<AttrId> {
        match self.symbols.get(&id.name) {
            Some((Sym::Attr(a), _)) => Some(a),
            Some((other, _)) => {
                self.error(errors::fair_not_attr(&id.name, other.describe(), id.span));
                None
            }
            None => {
                let attrs = self.symbols.names_where(|s| matches!(s, Sym::Attr(_)));
                let d = errors::unknown_name(&id.name, id.span, suggest(&id.name, attrs));
                self.error(d);
                None
            }
        }
    }

    /// A price of `fair` (R30): a finite compile-time value ≥ 0 (D6).
    fn price(&mut self, e: &ast::Expr, what: &str) -> Option<f64> {
        let v = self.eval_const_expr(e)?;
        if !(v.is_finite() && v >= 0.0) {
            self.error(errors::bad_value(what, "a finite number ≥ 0", v, e.span));
            return None;
        }
        Some(v)
    }
}
