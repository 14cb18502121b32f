//! The filter over the keys one remembered hit walk depends on (pool/ keeps the walk
//! of a hold that did not fit, so that the next attempt on the same hold need not
//! walk again). The block table tells it every change that could alter a walk's
//! result — a key registered or unregistered, a cached block claimed, a held block's
//! last holder gone — and it marks itself touched when that key may be watched.
//! False positives only cost a walk. It knows nothing of blocks or entries.
//!
//! One filter serves one walk at a time, but several walkers may read one table: a
//! tier's own admissions and the tier-hit walks of every pool that spills into it
//! (issue #35). Each start hands out a [`WatchTicket`]; a walk whose ticket is not
//! the latest counts as touched, so a walker never trusts another's watch.

// Bits are indexed by a 12-bit hash and words by a bit over 64: within the arrays by
// construction.
#![allow(clippy::indexing_slicing)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::types::BlockKey;

/// Words of the filter: 4,096 bits.
const WORDS: usize = 64;

/// Which start of which [`Watch`] a remembered walk was watched by: a ticket is
/// never mistaken for one of another table's watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WatchTicket {
    watch: u64,
    start: u64,
}

/// The next watch's identity. Identities are only ever compared for equality, so
/// their values (which depend on the order tables are made in) reach no result,
/// report or log (only a `Debug` print).
static NEXT_WATCH: AtomicU64 = AtomicU64::new(0);

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Watch {
    on: bool,
    /// This watch's identity, for its tickets.
    id: u64,
    /// Starts so far: the latest start's number.
    starts: u64,
    touched: bool,
    bits: [u64; WORDS],
    /// The words set since the last start (up to 16; beyond that, `crowded`), so
    /// that starting again clears those rather than the whole filter: most walks
    /// are short, and every admission attempt starts one.
    set: [u8; 16],
    nset: u8,
    crowded: bool,
}

impl Watch {
    /// Off, watching nothing.
    pub(super) fn new() -> Watch {
        Watch {
            on: false,
            id: NEXT_WATCH.fetch_add(1, Ordering::Relaxed),
            starts: 0,
            touched: false,
            bits: [0; WORDS],
            set: [0; 16],
            nset: 0,
            crowded: false,
        }
    }

    fn bit(key: &BlockKey) -> usize {
        let h = (key.run.0 ^ key.offset.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - 12)) as usize
    }

    /// Starts watching a new set of keys (empty, untouched); the ticket names this
    /// start.
    #[inline]
    pub(super) fn start(&mut self) -> WatchTicket {
        if self.crowded {
            self.bits = [0; WORDS];
        } else {
            for &word in &self.set[..self.nset as usize] {
                self.bits[word as usize] = 0;
            }
        }
        self.nset = 0;
        self.crowded = false;
        self.on = true;
        self.touched = false;
        self.starts += 1;
        self.ticket()
    }

    /// The ticket of the latest start.
    fn ticket(&self) -> WatchTicket {
        WatchTicket {
            watch: self.id,
            start: self.starts,
        }
    }

    /// Adds a key to the watched set.
    pub(super) fn add(&mut self, key: &BlockKey) {
        let i = Watch::bit(key);
        let word = i / 64;
        if self.bits[word] == 0 {
            if (self.nset as usize) < self.set.len() {
                self.set[self.nset as usize] = word as u8;
                self.nset += 1;
            } else {
                self.crowded = true;
            }
        }
        self.bits[word] |= 1 << (i % 64);
    }

    /// Stops watching (changes cost nothing again), if `ticket` names the latest
    /// start.
    pub(super) fn stop(&mut self, ticket: WatchTicket) {
        if ticket == self.ticket() {
            self.on = false;
        }
    }

    /// Whether a change may have touched a key watched since the start that gave
    /// `ticket` (a later start, or a stop, counts as a change).
    pub(super) fn touched(&self, ticket: WatchTicket) -> bool {
        !self.on || self.touched || ticket != self.ticket()
    }

    /// Whether it is watching (a change needs telling only then).
    pub(super) fn on(&self) -> bool {
        self.on
    }

    /// A change to `key`'s presence or holders.
    #[inline]
    pub(super) fn touch(&mut self, key: &BlockKey) {
        if self.on {
            let i = Watch::bit(key);
            if self.bits[i / 64] & (1 << (i % 64)) != 0 {
                self.touched = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::RunId;

    fn key(run: u64, offset: u64) -> BlockKey {
        BlockKey {
            run: RunId(run),
            offset,
        }
    }

    #[test]
    fn a_ticket_is_stale_once_its_watch_starts_again_stops_or_sees_a_watched_key() {
        let mut w = Watch::new();
        let a = w.start();
        assert!(!w.touched(a), "fresh");
        let b = w.start();
        assert!(w.touched(a), "another walk started since");
        assert!(!w.touched(b));
        w.stop(a);
        assert!(w.on() && !w.touched(b), "a stale ticket stops nothing");
        w.add(&key(1, 0));
        w.touch(&key(1, 0));
        assert!(w.touched(b), "a watched key changed");
        let c = w.start();
        w.stop(c);
        assert!(!w.on() && w.touched(c), "stopped");
    }

    #[test]
    fn a_ticket_of_another_watch_is_stale() {
        // Both at their first start: only the watch's identity tells them apart.
        let (mut v, mut w) = (Watch::new(), Watch::new());
        let tv = v.start();
        let tw = w.start();
        assert!(!v.touched(tv) && !w.touched(tw));
        assert!(v.touched(tw) && w.touched(tv));
        v.stop(tw);
        assert!(v.on(), "another watch's ticket stops nothing");
    }
}
