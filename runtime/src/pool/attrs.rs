//! Session attributes as the layouts read them: live, from the host's [`Env`] (with
//! the contract breaks as out-of-line panics), and the S3 snapshots of sessions with
//! entries (values at the session's last release in this pool, or in a tier at its
//! last store there, read once the session has ended). It keeps values; it does not
//! decide when a snapshot is taken (`release.rs` and `tier.rs` do) and never reads a
//! snapshot of a session the host still answers for.

use crate::config::{Input, Layout};
use crate::env::Env;
use crate::hash::FxMap;
use crate::types::{SessionId, SnapSlot};

/// Attribute snapshots of sessions with entries, for S3.
#[derive(Debug, Default)]
pub(super) struct Snapshots {
    /// Attribute numbers the entry layout reads; empty: snapshots are off.
    attrs: Vec<u32>,
    /// `attrs.len()` values per slot.
    values: Vec<f64>,
    /// Per slot: the entries of its session.
    refs: Vec<u32>,
    free: Vec<SnapSlot>,
    of: FxMap<SessionId, SnapSlot>,
}

impl Snapshots {
    pub fn new(layouts: &[&Layout]) -> Snapshots {
        let mut attrs: Vec<u32> = layouts
            .iter()
            .flat_map(|l| &l.row)
            .filter_map(|i| match i {
                Input::Attr(a) => Some(*a),
                _ => None,
            })
            .collect();
        attrs.sort_unstable();
        attrs.dedup();
        Snapshots {
            attrs,
            ..Snapshots::default()
        }
    }

    pub fn on(&self) -> bool {
        !self.attrs.is_empty()
    }

    /// Whether the session has entries here (and so a snapshot).
    pub fn has(&self, session: SessionId) -> bool {
        self.of.contains_key(&session)
    }

    /// The snapshot slot of a session that is gaining an entry (one more reference);
    /// `None` when snapshots are off.
    pub fn acquire(&mut self, session: SessionId) -> Option<SnapSlot> {
        if !self.on() {
            return None;
        }
        if let Some(&slot) = self.of.get(&session) {
            self.refs[slot.0 as usize] += 1;
            return Some(slot);
        }
        let n = self.attrs.len();
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.refs.push(0);
                self.values.resize(self.values.len() + n, f64::NAN);
                SnapSlot(u32::try_from(self.refs.len() - 1).expect("fewer than 2^32 snapshots"))
            }
        };
        self.refs[slot.0 as usize] = 1;
        self.of.insert(session, slot);
        Some(slot)
    }

    /// One entry of the snapshot's session disappeared.
    pub fn release(&mut self, slot: Option<SnapSlot>, session: SessionId) {
        let Some(slot) = slot else {
            return;
        };
        let r = &mut self.refs[slot.0 as usize];
        *r -= 1;
        if *r == 0 {
            self.of.remove(&session);
            self.free.push(slot);
        }
    }

    /// A release (or, in a tier, a store) of `session`: its snapshot, if it has
    /// entries, takes the current values.
    pub fn record<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        let Some(&slot) = self.of.get(&session) else {
            return;
        };
        let attrs = live_attrs(env, session);
        let n = self.attrs.len();
        for (i, &a) in self.attrs.iter().enumerate() {
            self.values[slot.0 as usize * n + i] = attr(attrs, a, session);
        }
    }

    /// Attribute `a` of an entry's snapshot (an entry layout reads it, so snapshots
    /// are on and every entry has one).
    pub fn value(&self, slot: Option<SnapSlot>, a: u32) -> f64 {
        let i = self
            .attrs
            .binary_search(&a)
            .expect("snapshotted attributes cover the entry layout");
        let slot = slot.expect("an entry read by attribute has a snapshot");
        self.values[slot.0 as usize * self.attrs.len() + i]
    }
}

/// The attributes of a session in the pool; the host must answer for it.
#[inline]
pub(super) fn live_attrs<E: Env + ?Sized>(env: &E, session: SessionId) -> &[f64] {
    match env.attrs(session) {
        Some(a) => a,
        None => no_attrs(session),
    }
}

#[cold]
fn no_attrs(session: SessionId) -> ! {
    panic!("Env contract broken: no attributes for session {session}, which is in the pool")
}

/// Attribute `a` of a session's attributes `attrs`; the host must give enough.
// Inlined, with the panic out of line: a scanned queue reads attributes for every
// waiting hold at every admission attempt.
#[inline]
pub(super) fn attr(attrs: &[f64], a: u32, session: SessionId) -> f64 {
    match attrs.get(a as usize) {
        Some(v) => *v,
        None => short_attrs(attrs.len(), a, session),
    }
}

#[cold]
fn short_attrs(len: usize, a: u32, session: SessionId) -> ! {
    panic!("Env contract broken: session {session} has {len} attributes, a layout reads #{a}")
}
