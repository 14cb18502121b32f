//! The tier side of R12: a block written by a pool that spills into this one joins
//! this pool's cache (`accept_spill`, with its S3 snapshot in a tier), and the
//! pieces a spilling pool's admission needs from a tier — the tier-hit run of a
//! header, read from the tier's block table without taking anything, the hits a
//! tier load counts there (R31), and the `work` of the tier load. It never moves
//! blocks between pools: the host carries them over its links.

use crate::cache::{Near, Store, WatchTicket};
use crate::config::{Input, SpillPolicy};
use crate::env::Env;
use crate::error::Error;
use crate::event::Event;
use crate::types::{BlockKey, Header, SessionId, Units};

use super::attrs::{attr, live_attrs};
use super::entry_rows::fill_entry_ctx;
use super::hits::hit_keys;
use super::{Pool, Scratch, Stored};

impl Pool {
    /// R12, the tier side: a block written by a pool that spills into this one joins
    /// this pool's cache, as part of the newest entry with the same session and
    /// release time `last` (at its head: an entry's blocks are spilled tail first),
    /// or of a new entry placed in release order by `last`. Room is made first by
    /// this pool's own eviction, which may spill further. A key already here is not
    /// stored twice. If the entry keys read attributes, the session's snapshot here
    /// takes its current values (S3 in a tier, docs/RUNTIME.md); a session the host
    /// no longer answers for and of which this pool holds no entry is
    /// `Err(NoAttrs)`.
    pub fn accept_spill<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        key: BlockKey,
        last: f64,
        env: &E,
    ) -> Result<Stored, Error> {
        self.check_time(now)?;
        let duplicate = self.store.lookup(&key).is_some();
        let no_room = self.cap_blocks == Some(0);
        let answers = env.attrs(session).is_some();
        if !duplicate && !no_room && self.snaps.on() && !answers && !self.snaps.has(session) {
            return Err(Error::NoAttrs(session));
        }
        self.begin(now);
        if duplicate {
            return Ok(Stored::Duplicate);
        }
        if no_room {
            return Ok(Stored::NoRoom);
        }
        // S3 in a tier: the snapshot is pinned before the eviction below, which may
        // take the session's other entries here (and their snapshot with them), and
        // takes the current values at every store the host still answers for.
        let snap = self.snaps.acquire(session);
        // Evict before choosing the entry: the eviction may take the entry's last
        // block, and with it the entry.
        self.make_room(1, env);
        if answers {
            self.snaps.record(session, env);
        }
        let slot = match self.store.find_entry(session, last) {
            Some(slot) => {
                self.snaps.release(snap, session);
                slot
            }
            None => self.store.open_entry_sorted(session, last, snap),
        };
        self.store.store_at_head(slot, key);
        let entry = self.store.entry(slot).id;
        let units = Units(self.block);
        self.record(Event::Store {
            entry,
            session,
            key,
            units,
        });
        Ok(Stored::Stored(entry))
    }
}

/// R12 tier hit: how many blocks right after the first `from` blocks of the header's
/// chain the tier holds (any copy, held or cached), within the header's hit limit.
pub(super) fn tier_run(tier: &Store, header: &Header, from: u64, block: u64) -> u64 {
    let mut near = Near::default();
    run_after(header, from, block, |key| {
        tier.lookup_near(key, &mut near).is_some()
    })
}

/// [`tier_run`], watching in the tier every key it looks at (the first missing one
/// included), so that a later attempt on the same hold can tell whether the run
/// would still be the same.
pub(super) fn tier_run_watched(
    tier: &mut Store,
    header: &Header,
    from: u64,
    block: u64,
) -> (u64, WatchTicket) {
    let ticket = tier.watch_start();
    let mut near = Near::default();
    let run = run_after(header, from, block, |key| {
        tier.watch_add(key);
        tier.lookup_near(key, &mut near).is_some()
    });
    (run, ticket)
}

/// The walk of [`tier_run`]: how many of the hit walk's keys right after its first
/// `from` are `present`, up to the first that is not.
#[inline(always)]
fn run_after(
    header: &Header,
    from: u64,
    block: u64,
    mut present: impl FnMut(&BlockKey) -> bool,
) -> u64 {
    hit_keys(header, block)
        .skip(from as usize)
        .take_while(|key| present(key))
        .count() as u64
}

/// R31 in a tier: a tier load counts one hit on each tier block it loads — the
/// `loaded` blocks of the header's chain right after its first `from` (their
/// earliest registered copies, as the walk of [`tier_run_watched`] found them).
pub(super) fn count_tier_hits(
    tier: &mut Store,
    header: &Header,
    from: u64,
    loaded: u64,
    block: u64,
) {
    let mut near = Near::default();
    for key in hit_keys(header, block)
        .skip(from as usize)
        .take(loaded as usize)
    {
        let c = tier
            .lookup_near(&key, &mut near)
            .expect("a loaded block is in the tier (nothing changed since the walk)");
        tier.count_hit(c);
    }
}

/// The spill `work` of a tier load: the spill's expression on a row of the loading
/// session (its current attributes, `size` = the units loaded, `last` = now,
/// `waiting` and `hits` = 0) with ctx `now` and `units` = the units loaded.
pub(super) fn load_work<E: Env + ?Sized>(
    spill: &SpillPolicy,
    scratch: &mut Scratch,
    session: SessionId,
    units: Units,
    now: f64,
    env: &E,
) -> f64 {
    let layout = &spill.layout;
    scratch.rows.clear();
    for input in &layout.row {
        scratch.rows.push(match *input {
            Input::Attr(a) => attr(live_attrs(env, session), a, session),
            Input::Size => units.0 as f64,
            Input::Last => now,
            Input::Waiting | Input::Hits => 0.0,
            other => unreachable!("validated entry row input {other:?}"),
        });
    }
    fill_entry_ctx(&mut scratch.ctx, &layout.ctx, units.0, now);
    spill.fns.work(&scratch.rows, &scratch.ctx)
}
