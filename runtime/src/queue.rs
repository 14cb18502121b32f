//! The waiting holds of one pool member (R8): holds in enqueue order, and preempted
//! holds on a stack ahead of them (the most recently preempted on top). It stores and
//! hands out holds; choosing among the enqueue-order holds by keys is done by
//! `pool.rs`, which fills the rows. It never decides fits.

use std::collections::VecDeque;

use crate::types::{Header, SessionId};

#[derive(Clone, Debug)]
pub(crate) struct Waiting {
    pub session: SessionId,
    pub header: Header,
    /// When the hold entered the queue (its latest entry: `waited` resets, S2).
    pub enqueued: f64,
}

/// Which waiting hold a selection picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The top of the preempted stack.
    Preempted,
    /// Index into the enqueue-order holds.
    Queued(usize),
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// Holds in enqueue order (oldest first).
    pub fifo: VecDeque<Waiting>,
    /// Preempted holds; the last is the most recently preempted and goes first.
    pub preempted: Vec<Waiting>,
}

impl Queue {
    pub fn len(&self) -> usize {
        self.fifo.len() + self.preempted.len()
    }

    pub fn get(&self, pick: Pick) -> &Waiting {
        match pick {
            Pick::Preempted => self.preempted.last().expect("picked an empty stack"),
            Pick::Queued(i) => &self.fifo[i],
        }
    }

    pub fn take(&mut self, pick: Pick) -> Waiting {
        match pick {
            Pick::Preempted => self.preempted.pop().expect("picked an empty stack"),
            Pick::Queued(i) => self.fifo.remove(i).expect("picked index in range"),
        }
    }

    /// Every waiting hold: preempted (top first), then enqueue order. The order
    /// matters to nothing observable; it is fixed for determinism.
    pub fn iter(&self) -> impl Iterator<Item = &Waiting> {
        self.preempted.iter().rev().chain(self.fifo.iter())
    }
}
