//! Tables indexed by their own entity references, as Cranelift's `PrimaryMap` is: the
//! host's pool, step and link members and its sessions each live in a [`Table`]
//! whose index type says which table it belongs to. The host makes every index it
//! uses from the table it indexes (by `push`, `keys` or a session's serial), so an
//! index is always in range; a miss is a broken invariant and panics here, the one
//! place where a host index can, with a message. Nothing else lives here.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use crate::types::SessionId;

/// An entity reference: a position in one kind of table.
pub(super) trait Ix: Copy {
    fn from_ix(i: usize) -> Self;
    fn ix(self) -> usize;
}

/// A vector indexed by `I`.
#[derive(Clone, Debug)]
pub(super) struct Table<I, T> {
    items: Vec<T>,
    kind: PhantomData<I>,
}

impl<I: Ix, T> Table<I, T> {
    pub(super) fn new() -> Table<I, T> {
        Table {
            items: Vec::new(),
            kind: PhantomData,
        }
    }

    /// A table of `n` copies of `value`.
    pub(super) fn filled(n: usize, value: T) -> Table<I, T>
    where
        T: Clone,
    {
        Table {
            items: vec![value; n],
            kind: PhantomData,
        }
    }

    /// Adds `value`; gives its index.
    pub(super) fn push(&mut self, value: T) -> I {
        self.items.push(value);
        I::from_ix(self.items.len() - 1)
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    pub(super) fn reserve(&mut self, n: usize) {
        self.items.reserve(n);
    }

    pub(super) fn get(&self, i: I) -> Option<&T> {
        self.items.get(i.ix())
    }

    /// Every index, in order.
    pub(super) fn keys(&self) -> impl Iterator<Item = I> + use<I, T> {
        (0..self.items.len()).map(I::from_ix)
    }

    pub(super) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    pub(super) fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }

    /// Entry `a` mutably and entry `b` (≠ `a`) shared, for an operation of one pool
    /// member that reads another (a tier hit).
    pub(super) fn pair(&mut self, a: I, b: I) -> (&mut T, &T) {
        let (a, b) = (a.ix(), b.ix());
        assert_ne!(a, b, "a table entry paired with itself");
        if a < b {
            let (x, y) = self.items.split_at_mut(b);
            (in_range(x.get_mut(a)), in_range(y.first()))
        } else {
            let (x, y) = self.items.split_at_mut(a);
            (in_range(y.first_mut()), in_range(x.get(b)))
        }
    }
}

fn in_range<T>(entry: Option<T>) -> T {
    entry.expect("a host index is made by the table it indexes, so it is in range")
}

impl<I: Ix, T> Index<I> for Table<I, T> {
    type Output = T;

    fn index(&self, i: I) -> &T {
        in_range(self.items.get(i.ix()))
    }
}

impl<I: Ix, T> IndexMut<I> for Table<I, T> {
    fn index_mut(&mut self, i: I) -> &mut T {
        in_range(self.items.get_mut(i.ix()))
    }
}

impl<'a, I: Ix, T> IntoIterator for &'a Table<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

/// Sessions are numbered by serial, so a session's id is its row in the table.
impl Ix for SessionId {
    fn from_ix(i: usize) -> SessionId {
        SessionId(i as u64)
    }

    fn ix(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}
