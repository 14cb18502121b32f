//! The global symbol table (D7: one namespace for pools, stages, constants, parameters
//! and attributes) and "did you mean" suggestions. It records where each name was
//! declared; it evaluates nothing.

use std::collections::BTreeMap;

use crate::ir::AttrId;
use crate::syntax::Span;

/// What a global name refers to. Indices are positions among declarations of that kind,
/// in source order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sym {
    Const(usize),
    Param(usize),
    Attr(AttrId),
    Stage(usize),
    Pool(usize),
}

impl Sym {
    /// The phrase naming this kind of declaration in messages ("a pool", …).
    pub fn describe(self) -> &'static str {
        match self {
            Sym::Const(_) => "a constant",
            Sym::Param(_) => "a parameter",
            Sym::Attr(_) => "a session attribute",
            Sym::Stage(_) => "a stage",
            Sym::Pool(_) => "a pool",
        }
    }
}

#[derive(Default)]
pub struct Symbols {
    map: BTreeMap<String, (Sym, Span)>,
}

impl Symbols {
    /// Declares a name; on a duplicate returns the span of the earlier declaration.
    pub fn declare(&mut self, name: &str, sym: Sym, span: Span) -> Result<(), Span> {
        if let Some((_, first)) = self.map.get(name) {
            return Err(*first);
        }
        self.map.insert(name.to_string(), (sym, span));
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<(Sym, Span)> {
        self.map.get(name).copied()
    }

    /// Names whose symbol passes `keep`, in sorted order (deterministic suggestions).
    pub fn names_where(&self, keep: impl Fn(Sym) -> bool) -> Vec<&str> {
        self.map
            .iter()
            .filter(|(_, (s, _))| keep(*s))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// The closest candidate to `name` within an edit distance that a typo could explain,
/// or `None`. Ties go to the first candidate in the given order.
pub fn suggest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (name.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = edit_distance(name, c);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance with adjacent transpositions counted as one edit (the
/// optimal string alignment distance, from `strsim`).
fn edit_distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_a_near_miss_and_nothing_for_a_stranger() {
        assert_eq!(
            suggest("priorty", ["prompt", "priority", "output"]),
            Some("priority")
        );
        assert_eq!(suggest("waitd", ["waited", "waiting"]), Some("waited"));
        assert_eq!(suggest("zebra", ["prompt", "priority"]), None);
    }

    #[test]
    fn transposition_is_one_edit() {
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        // Optimal string alignment: an edited transposition is not a transposition.
        assert_eq!(edit_distance("ca", "abc"), 3);
    }
}
