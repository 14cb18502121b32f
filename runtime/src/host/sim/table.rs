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

    /// Entries `a` and `b` (≠ `a`) both mutably, for an operation of one pool member
    /// that reaches into another (a tier hit, which counts hits there, R31).
    pub(super) fn pair(&mut self, a: I, b: I) -> (&mut T, &mut T) {
        let (a, b) = (a.ix(), b.ix());
        assert_ne!(a, b, "a table entry paired with itself");
        if a < b {
            let (x, y) = self.items.split_at_mut(b);
            (in_range(x.get_mut(a)), in_range(y.first_mut()))
        } else {
            let (x, y) = self.items.split_at_mut(a);
            (in_range(y.first_mut()), in_range(x.get_mut(b)))
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

/// The sessions from the oldest one the host still keeps on, by serial: a session's
/// record is pushed when the host reads it from its source and dropped, with every
/// older one, once they have all ended (`Host::trim`). So a replay holds the
/// sessions alive at each moment, not the whole workload. Indexing a session outside
/// the window is a broken invariant (only ended sessions leave it, and the host
/// reaches ended sessions through `get`).
#[derive(Debug)]
pub(super) struct Window<T> {
    items: Vec<T>,
    /// The serial of `items[0]`.
    first: u64,
}

impl<T> Window<T> {
    pub(super) fn new() -> Window<T> {
        Window {
            items: Vec::new(),
            first: 0,
        }
    }

    /// Adds the next session's record; gives its id.
    pub(super) fn push(&mut self, value: T) -> SessionId {
        self.items.push(value);
        SessionId(self.end() - 1)
    }

    /// The serial of the oldest record kept.
    pub(super) fn first(&self) -> u64 {
        self.first
    }

    /// The serial after the newest record: how many sessions were ever pushed.
    pub(super) fn end(&self) -> u64 {
        self.first + self.items.len() as u64
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    fn pos(&self, s: SessionId) -> Option<usize> {
        usize::try_from(s.0.checked_sub(self.first)?).ok()
    }

    pub(super) fn get(&self, s: SessionId) -> Option<&T> {
        self.items.get(self.pos(s)?)
    }

    pub(super) fn get_mut(&mut self, s: SessionId) -> Option<&mut T> {
        let i = self.pos(s)?;
        self.items.get_mut(i)
    }

    /// The records kept, with their ids, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (SessionId, &T)> {
        (self.first..).map(SessionId).zip(&self.items)
    }

    /// Drops the `n` oldest records.
    pub(super) fn drop_front(&mut self, n: usize) {
        let n = n.min(self.items.len());
        self.items.drain(..n);
        self.first += n as u64;
    }
}

impl<T> Index<SessionId> for Window<T> {
    type Output = T;

    fn index(&self, s: SessionId) -> &T {
        self.get(s)
            .expect("only ended sessions leave the window, and they are reached by `get`")
    }
}

impl<T> IndexMut<SessionId> for Window<T> {
    fn index_mut(&mut self, s: SessionId) -> &mut T {
        self.get_mut(s)
            .expect("only ended sessions leave the window, and they are reached by `get`")
    }
}
