//! The queue's side of a pool member's operations: enqueue with rejection (R5),
//! settle (R9), the step stage's admission entry points (R15), revising a waiting
//! header, and one admission attempt — select, ask for the units, judge the fit on
//! the reserve (R6), claim the hit (R7, R11), evict for the new blocks, allocate,
//! register, and the tier load of an R12 tier hit — or the same attempt up to its fit,
//! for a host that asks whether it would admit before an iteration it runs ahead.
//! Which hold is selected is `select.rs`'s; making room is `evict.rs`'s. An attempt
//! that does not admit changes nothing but the remembered walks (this pool's, and
//! the watch it keeps in its tier's block table).

use crate::cache::MAX_CHAIN_BLOCKS;
use crate::env::Env;
use crate::error::Error;
use crate::event::{Event, Notice};
use crate::queue::Pick;
use crate::types::{Header, SessionId, Units};

use super::fair::Entering;
use super::hits::{HitMemo, TierMemo, hit_counts_watched, register_new};
use super::holders::{Holder, Links};
use super::tier::{count_tier_hits, load_work, tier_run_watched};
use super::{Admission, Enqueued, Hit, Outlook, Pool};

impl Pool {
    /// Puts a hold in the queue, or rejects it when it can never fit (R5). Does not
    /// admit: call [`Pool::settle`] after it (R9) unless a stage serves the pool.
    pub fn enqueue<E: Env + ?Sized>(
        &mut self,
        now: f64,
        session: SessionId,
        header: Header,
        env: &E,
    ) -> Result<Enqueued, Error> {
        self.check_time(now)?;
        // One probe both checks that the session is new and keeps its place.
        let Some(vacancy) = self.sessions.enter(session) else {
            return Err(Error::AlreadyInPool(session));
        };
        if header.chain.full_blocks(self.block) >= MAX_CHAIN_BLOCKS {
            return Err(Error::TooManyBlocks(session));
        }
        // `begin`, field by field: `vacancy` still borrows the sessions.
        self.now = now;
        self.notices.clear();
        if let Some(cap) = self.cap_blocks
            && header.fit_units().blocks_up(self.block) > cap
        {
            self.record(Event::Reject { session });
            return Ok(Enqueued::Rejected);
        }
        let slot = self.queue.push(session, header, now);
        vacancy.wait(slot);
        if let Some(f) = &mut self.fair {
            f.enter(session, Entering::Arrival, env);
        }
        if self.queue.is_indexed() {
            self.file_keys(slot, env);
        }
        self.record(Event::Enqueue { session });
        Ok(Enqueued::Queued)
    }

    /// R9 settle for a pool without `admit via`: retries waiting grows in the order
    /// they failed (stopping at the first that still does not fit, and then admitting
    /// nothing), then admits selected holds until the queue is empty or the selected
    /// hold does not fit (R8). Admissions and grows are in [`Pool::notices`].
    pub fn settle<E: Env + ?Sized>(&mut self, now: f64, env: &E) -> Result<(), Error> {
        self.check_time(now)?;
        self.begin(now);
        if !self.grow_waiting(env) {
            return Ok(());
        }
        while let Admission::Admitted { .. } = self.attempt(env, None, |_, _, h| Some(h.units))? {}
        Ok(())
    }

    /// One admission attempt for a step stage (R15 step 2): selects the next hold
    /// (R8), computes its hit, and asks `units_for(session, hit, header)` how many
    /// units to allocate (`hit + min(sequence − hit, chunk, budget left)`), or `None`
    /// to decline. The fit is judged on `max(units, reserve)` (R6). The stage calls it
    /// while it has budget and seats, and stops at anything but `Admitted`.
    pub fn admit_next<E, F>(&mut self, now: f64, env: &E, units_for: F) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Units, &Header) -> Option<Units>,
    {
        self.check_time(now)?;
        self.begin(now);
        self.attempt(env, None, |s, hit, h| units_for(s, hit.local, h))
    }

    /// [`Pool::admit_next`] with R12 tier hits: after its own hit, the walk goes on in
    /// `tier` (the pool this one spills into, with the same block size; copies there
    /// are read, not taken, and each one loaded counts a hit there, R31), and
    /// `units_for` sees both parts. The admitted hold
    /// allocates its tier-hit blocks here like any new block, but its computed is
    /// only its own hit: [`Notice::TierLoad`] asks the host to load the tier part
    /// over the spill link (`work` evaluated as the spill's, on a row of the
    /// admitted session with `size` and `units` = the units loaded, `last` = now,
    /// `waiting` = 0) and to set computed when the load completes. Without a tier,
    /// in a pool that does not spill, or given a pool that is not the one this pool
    /// spills into (by its `me`) or has another block size, it is `admit_next`.
    pub fn admit_next_tiered<E, F>(
        &mut self,
        now: f64,
        env: &E,
        tier: Option<&mut Pool>,
        units_for: F,
    ) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        self.check_time(now)?;
        self.begin(now);
        let tier = tier.filter(|t| self.spills_into(t));
        self.attempt(env, tier, units_for)
    }

    /// Whether `tier` is the pool this one spills into (by its `me`), with the same
    /// block size: the only pool whose copies extend a hit (R12).
    fn spills_into(&self, tier: &Pool) -> bool {
        tier.block == self.block && self.spill.as_ref().is_some_and(|sp| sp.tier == tier.me)
    }

    /// Revises a waiting hold's header values, for a step host whose preempted
    /// session's sequence grew (`reserve = sequence`, `max_hit = sequence − 1`,
    /// R15). Refused (nothing changes) when the hold does not wait or would never
    /// fit (R5).
    pub fn set_waiting_header<E: Env + ?Sized>(
        &mut self,
        session: SessionId,
        units: Units,
        reserve: Units,
        max_hit: Option<Units>,
        env: &E,
    ) -> Result<(), Error> {
        let slot = self
            .sessions
            .waiting_slot(session)
            .ok_or(Error::NotWaiting(session))?;
        if let Some(cap) = self.cap_blocks
            && units.max(reserve).blocks_up(self.block) > cap
        {
            return Err(Error::NeverFits(session));
        }
        let h = &mut self.queue.get_slot_mut(slot).header;
        h.units = units;
        h.reserve = reserve;
        h.max_hit = max_hit;
        // Its walk's limit may have changed.
        self.memo = None;
        if self.queue.is_indexed() && !self.queue.is_preempted(slot) {
            self.file_keys(slot, env);
        }
        Ok(())
    }

    /// What [`Pool::admit_next_tiered`] would do now, without admitting: the same
    /// selection, walk and fit, with the same effect on the remembered walk when it
    /// does not admit — so that a host may ask before an iteration it runs ahead
    /// (docs/HOST.md, "Runs known in advance") whether the waiting head still stays
    /// out, and then make the attempt itself only when it would admit.
    pub(crate) fn peek_next_tiered<E, F>(
        &mut self,
        now: f64,
        env: &E,
        tier: Option<&mut Pool>,
        units_for: F,
    ) -> Result<Outlook, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        self.check_time(now)?;
        self.begin(now);
        let tier = tier.filter(|t| self.spills_into(t));
        Ok(match self.plan(env, tier, units_for)? {
            Plan::Returns(_) => Outlook::AdmitsNobody,
            Plan::Fits(_) => Outlook::Admits,
        })
    }

    /// One admission attempt (R6, R7, R8): select, ask for the units, judge the fit
    /// on the reserve, claim the hit, evict for the new blocks, allocate, register.
    fn attempt<E, F>(
        &mut self,
        env: &E,
        mut tier: Option<&mut Pool>,
        units_for: F,
    ) -> Result<Admission, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        match self.plan(env, tier.as_deref_mut(), units_for)? {
            Plan::Returns(a) => Ok(a),
            Plan::Fits(fit) => Ok(self.commit(env, tier, fit)),
        }
    }

    /// An attempt up to its fit (R6, R8): select, walk (or recall the walk), ask for
    /// the units. Changes nothing but the remembered walks (this pool's, and its
    /// watch in the tier's block table, which stales other walkers' there).
    fn plan<E, F>(&mut self, env: &E, tier: Option<&mut Pool>, units_for: F) -> Result<Plan, Error>
    where
        E: Env + ?Sized,
        F: FnOnce(SessionId, Hit, &Header) -> Option<Units>,
    {
        let Some(pick) = self.select(env) else {
            return Ok(Plan::Returns(Admission::Empty));
        };
        let block = self.block;
        let w = self.queue.get(pick);
        let session = w.session;
        let memo = match &mut self.memo {
            Some(m) if m.seq == w.seq && !self.store.watch_touched(m.ticket) => m,
            memo => {
                // Started here rather than in the walk: the walk's result stays
                // two words, returned in registers (the 1-block admission counts).
                let ticket = self.store.watch_start();
                let (hit, shared) = hit_counts_watched(
                    &mut self.store,
                    &w.header,
                    block,
                    &mut self.scratch.memo_hits,
                );
                memo.insert(HitMemo {
                    seq: w.seq,
                    hit,
                    shared,
                    ticket,
                    tier: None,
                })
            }
        };
        let (hit, shared) = (memo.hit, memo.shared);
        // The tier's run after the local hit, remembered as the local walk is: a
        // blocked head with a tier hit is planned twice an iteration (the host's
        // peek, then the attempt) and again every iteration it stays out.
        // A local hit at the walk's limit leaves the tier no key to look at: no walk,
        // and no watch started that would stale the tier's other walkers.
        let tier_blocks = match tier {
            Some(t) if hit < w.header.hit_limit_blocks(block) => match memo.tier {
                Some(m) if !t.store.watch_touched(m.ticket) => m.blocks,
                _ => {
                    let (blocks, ticket) = tier_run_watched(&mut t.store, &w.header, hit, block);
                    memo.tier = Some(TierMemo { blocks, ticket });
                    blocks
                }
            },
            _ => 0,
        };
        let found = Hit {
            local: Units(hit * block),
            tier: Units(tier_blocks * block),
        };
        let Some(units) = units_for(session, found, &w.header) else {
            return Ok(Plan::Returns(Admission::Declined));
        };
        if units.0 < hit * block {
            return Err(Error::UnitsBelowHit {
                session,
                units,
                hit: Units(hit * block),
            });
        }
        let need = units.max(w.header.reserve).blocks_up(block) - shared;
        if !self.fits(need) {
            return Ok(Plan::Returns(Admission::Blocked));
        }
        Ok(Plan::Fits(Fit {
            pick,
            hit,
            tier_blocks,
            units,
        }))
    }

    /// The rest of an attempt whose hold fits: claim the hit (R7, R11), evict for
    /// the new blocks, allocate, register, and the tier load of an R12 tier hit.
    fn commit<E: Env + ?Sized>(
        &mut self,
        env: &E,
        mut tier: Option<&mut Pool>,
        fit: Fit,
    ) -> Admission {
        let Fit {
            pick,
            hit,
            tier_blocks,
            units,
        } = fit;
        let block = self.block;
        let mut w = self.queue.take(pick);
        let session = w.session;
        if let Some(f) = &mut self.fair {
            f.leave(session);
        }
        // The walks end here. A stop is a change to any walk that holds a ticket,
        // so only a watch still this attempt's own is stopped: a tier's watch may
        // since serve another pool's walk, or the tier's own.
        let memo = self
            .memo
            .as_ref()
            .expect("an attempt that fits was planned");
        let tier_ticket = memo.tier.map(|m| m.ticket);
        self.store.watch_stop(memo.ticket);
        if let (Some(t), Some(ticket)) = (tier.as_deref_mut(), tier_ticket) {
            t.store.watch_stop(ticket);
        }
        self.memo = None;
        let mut blocks = self.scratch.spare.pop().unwrap_or_default();
        // The blocks of the walk above (nothing watched changed since, so they are
        // still the keys' first copies), judged under the header's own limit
        // before it takes the chosen units. Hit blocks are taken first, so the
        // evictions below cannot take them; each counts one hit (R31), shared or
        // claimed.
        let copies = std::mem::take(&mut self.scratch.memo_hits);
        assert_eq!(
            copies.len() as u64,
            hit,
            "the hit changed within one attempt"
        );
        if !copies.is_empty() {
            // The walk's keys: the chain's first, one for each copy (within the
            // hit limit, as the walk was). No hit, no keys (a 1-block admission's
            // usual case, issue #35 item 3).
            let snaps = &mut self.snaps;
            let keys = w.header.chain.block_keys(block);
            self.store.take_hits(&copies, keys, &mut blocks, |gone| {
                snaps.release(gone.snap, gone.session);
            });
        }
        self.scratch.memo_hits = copies;
        w.header.units = units;
        let total = w.header.units.blocks_up(block);
        let physical = total.min(w.header.chain.full_blocks(block));
        self.make_room(total - hit, env);
        for _ in hit..physical {
            blocks.push(self.store.alloc());
        }
        self.store.alloc_anonymous(total - physical);
        // Built in its slot (registration follows there), not moved into it.
        let held = self.holders.admit(Holder {
            session: w.session,
            units: w.header.units.0,
            computed: hit * block,
            header: w.header,
            blocks: Vec::new(),
            anonymous: total - physical,
            keyed: hit,
            pending_grow: None,
            admitted: self.now,
            seq: w.seq,
            order: Links::default(),
        });
        // Its blocks go in after: as a field of the value built above, the list
        // was copied through the stack in pieces that the wider loads of the next
        // copy straddled, a store-forwarding stall in every admission
        // (docs/PERFORMANCE.md, "Store-forwarding stalls").
        let holder = self.holders.get_mut(held);
        holder.blocks = blocks;
        register_new(&mut self.store, holder, block);
        self.sessions.admitted(session, held);
        // Tier-hit blocks within the allocation are loaded, not computed; each
        // counts a hit in the tier (R31).
        let loaded = tier_blocks.min(units.blocks_down(block).saturating_sub(hit));
        if loaded > 0
            && let Some(t) = tier
        {
            let header = &self.holders.get(held).header;
            count_tier_hits(&mut t.store, header, hit, loaded, block);
        }
        let hit = Units(hit * block);
        self.record(Event::Admit {
            session,
            hit,
            units,
        });
        self.notices.push(Notice::Admitted {
            session,
            hit,
            units,
        });
        if loaded > 0
            && let Some(sp) = &self.spill
        {
            let units = Units(loaded * block);
            let work = load_work(sp, &mut self.scratch, session, units, self.now, env);
            let (tier, link) = (sp.tier, sp.link);
            self.record(Event::TierLoad {
                session,
                units,
                work,
            });
            self.notices.push(Notice::TierLoad {
                session,
                units,
                work,
                tier,
                link,
            });
        }
        Admission::Admitted {
            session,
            hit,
            units,
        }
    }
}

/// An attempt judged up to its fit ([`Pool::plan`]).
enum Plan {
    /// What the attempt returns without admitting.
    Returns(Admission),
    Fits(Fit),
}

/// A selected hold that fits, with what its attempt found.
struct Fit {
    pick: Pick,
    hit: u64,
    tier_blocks: u64,
    units: Units,
}
