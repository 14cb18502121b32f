//! The later copies of keys with more than one copy present (R7), in registration
//! order: a list per key through a slab of nodes, so that a warm replay allocates
//! nothing when a key gains or loses copies. It knows nothing of where a copy
//! lives; `cache.rs` says which copies these are and keeps their marks.

// Nodes index the slab this structure made (see cache.rs).
#![allow(clippy::indexing_slicing)]

use crate::hash::FxMap;
use crate::types::BlockKey;

use super::block::CopyRef;

const END: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    copy: CopyRef,
    next: u32,
}

#[derive(Debug, Default)]
pub(super) struct Dups {
    /// Key → its first later copy's node.
    heads: FxMap<BlockKey, u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
}

impl Dups {
    /// Whether `key` has later copies.
    #[inline]
    pub(super) fn contains(&self, key: &BlockKey) -> bool {
        self.heads.contains_key(key)
    }

    fn node(&mut self, copy: CopyRef) -> u32 {
        let node = Node { copy, next: END };
        match self.free.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                self.nodes.push(node);
                u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 later copies")
            }
        }
    }

    /// Appends a later copy of `key`; returns whether it is the key's first.
    pub(super) fn push(&mut self, key: BlockKey, copy: CopyRef) -> bool {
        let n = self.node(copy);
        match self.heads.get(&key) {
            None => {
                self.heads.insert(key, n);
                true
            }
            Some(&head) => {
                let mut at = head;
                while self.nodes[at as usize].next != END {
                    at = self.nodes[at as usize].next;
                }
                self.nodes[at as usize].next = n;
                false
            }
        }
    }

    /// Takes `key`'s earliest later copy; the bool says whether none is left.
    pub(super) fn pop_front(&mut self, key: &BlockKey) -> (CopyRef, bool) {
        let head = *self.heads.get(key).expect("a key with later copies");
        let Node { copy, next } = self.nodes[head as usize];
        self.free.push(head);
        if next == END {
            self.heads.remove(key);
        } else {
            self.heads.insert(*key, next);
        }
        (copy, next == END)
    }

    /// Takes `copy` out of `key`'s later copies; returns whether none is left.
    pub(super) fn remove(&mut self, key: &BlockKey, copy: CopyRef) -> bool {
        let head = *self.heads.get(key).expect("a key with later copies");
        if self.nodes[head as usize].copy == copy {
            return self.pop_front(key).1;
        }
        let mut at = head;
        loop {
            let next = self.nodes[at as usize].next;
            assert!(next != END, "a later copy is listed");
            if self.nodes[next as usize].copy == copy {
                self.nodes[at as usize].next = self.nodes[next as usize].next;
                self.free.push(next);
                return false;
            }
            at = next;
        }
    }

    /// `key`'s later copies, in registration order (none when it has none).
    pub(super) fn copies(&self, key: &BlockKey) -> impl Iterator<Item = CopyRef> + '_ {
        let mut at = self.heads.get(key).copied().unwrap_or(END);
        std::iter::from_fn(move || {
            let node = self.nodes.get(at as usize)?;
            at = node.next;
            Some(node.copy)
        })
    }

    /// Every key with its later copies, in registration order (for checks).
    pub(super) fn iter(&self) -> impl Iterator<Item = (BlockKey, Vec<CopyRef>)> + '_ {
        self.heads.iter().map(|(&key, &head)| {
            let mut out = Vec::new();
            let mut at = head;
            while at != END {
                out.push(self.nodes[at as usize].copy);
                at = self.nodes[at as usize].next;
            }
            (key, out)
        })
    }
}
