//! Selection (R8): which waiting hold an admission attempt tries next — the most
//! recently preempted, else the first in enqueue order (fifo) or the least by the
//! `queue by` keys, ties to enqueue order. Keys come from the ordered index when they
//! read only fixed inputs (filed here at enqueue and when the host says a hold's
//! inputs changed), else from the compiled scan over queue rows (S2) filled at the
//! attempt. It reads the queue and fills rows; it never removes a hold or judges a
//! fit (`admit.rs` does).

use std::cmp::Ordering;

use crate::cache::Store;
use crate::config::{Input, Query, QueuePolicy, QueueTie, Target};
use crate::env::Env;
use crate::queue::{Pick, WaitSlot, Waiting};
use crate::types::SessionId;

use super::Pool;
use super::attrs::{attr, live_attrs};
use super::fair::Fair;
use super::hits::hit_counts;

impl Pool {
    /// Tells an indexed queue that a waiting session's attributes changed, so that
    /// its fixed keys are computed again (scanned keys read attributes at every
    /// attempt and need no notice). A host must call it for every waiting session
    /// whose attributes it changes; for sessions not waiting it does nothing.
    pub fn attrs_changed<E: Env + ?Sized>(&mut self, session: SessionId, env: &E) {
        if let Some(slot) = self.sessions.waiting_slot(session)
            && self.queue.is_indexed()
            && !self.queue.is_preempted(slot)
        {
            self.file_keys(slot, env);
        }
    }

    /// Whether the queue orders ties of its keys by session id (R21): the host must
    /// answer [`Env::name`] for its waiting sessions.
    pub fn ties_by_id(&self) -> bool {
        self.queue_tie == QueueTie::Id && matches!(self.queue_policy, QueuePolicy::By { .. })
    }

    /// The next hold to try (R8): the most recently preempted, else the first in
    /// enqueue order (fifo) or the least by the keys, ties to enqueue order — from
    /// the ordered index when the keys read only fixed inputs, else by the compiled
    /// scan over rows filled now.
    pub(super) fn select<E: Env + ?Sized>(&mut self, env: &E) -> Option<Pick> {
        if self.queue.has_preempted() {
            return Some(Pick::Preempted);
        }
        if self.queue.is_indexed() {
            return self.queue.index_top().map(|_| Pick::Indexed);
        }
        if self.queue.fifo_len() == 0 {
            return None;
        }
        let (keys, layout) = match &self.queue_policy {
            QueuePolicy::Fifo => return Some(Pick::Queued(0)),
            QueuePolicy::By { keys, layout } => (keys, layout),
        };
        let stride = layout.row.len();
        let n = self.queue.fifo_len();
        let rows = &mut self.scratch.rows;
        rows.clear();
        rows.resize(n * stride, 0.0);
        // Row i by its range, as for entry rows: a key list may read no row slot
        // (only `now`, queries or constants), and every row is then empty.
        let fair = self.fair.as_ref();
        for (i, w) in self.queue.fifo_iter().enumerate() {
            let row = &mut rows[i * stride..(i + 1) * stride];
            fill_queue_row(row, &layout.row, w, &self.store, self.block, fair, env);
        }
        self.scratch.ctx.clear();
        for input in &layout.ctx {
            let value = match *input {
                Input::Now => self.now,
                Input::Query(q) => self.query_value(q, env),
                other => unreachable!("validated queue ctx input {other:?}"),
            };
            self.scratch.ctx.push(value);
        }
        let least = keys.select(&self.scratch.rows, n, stride, &self.scratch.ctx)?;
        if self.queue_tie == QueueTie::Enqueue {
            return Some(Pick::Queued(least));
        }
        // R21: of the holds whose keys equal the least's (all after it: the scan
        // takes the first least), the one with the least id as text; equal ids keep
        // enqueue order.
        let rows = &self.scratch.rows;
        let ctx = &self.scratch.ctx;
        let row = |i: usize| &rows[i * stride..(i + 1) * stride];
        let mut holds = self.queue.fifo_iter().enumerate().skip(least);
        let (mut best, mut best_session) = holds.next().map(|(j, w)| (j, w.session))?;
        for (j, w) in holds {
            if keys.cmp(row(j), row(least), ctx) == Ordering::Equal
                && cmp_ids(env, w.session, best_session) == Ordering::Less
            {
                (best, best_session) = (j, w.session);
            }
        }
        Some(Pick::Queued(best))
    }

    /// Computes a waiting hold's fixed keys and files it in the ordered index.
    pub(super) fn file_keys<E: Env + ?Sized>(&mut self, slot: WaitSlot, env: &E) {
        let QueuePolicy::By { keys, layout } = &self.queue_policy else {
            unreachable!("an indexed queue has keys");
        };
        let w = self.queue.get_slot(slot);
        let row = &mut self.scratch.rows;
        row.clear();
        row.resize(layout.row.len(), 0.0);
        // Fixed keys read no `service` (it changes while a hold waits: not fixed), so
        // no counters are passed.
        fill_queue_row(row, &layout.row, w, &self.store, self.block, None, env);
        // Fixed keys read no ctx slot (the layout's ctx is empty).
        let row = &self.scratch.rows;
        self.queue
            .set_keys(slot, (0..keys.len()).map(|k| keys.key(k, row, &[])));
    }

    /// A query of a queue or preempt key (E6): this pool's own state for queries
    /// naming it, the host's otherwise.
    pub(super) fn query_value<E: Env + ?Sized>(&self, q: Query, env: &E) -> f64 {
        if q.target == Target::Pool(self.me) {
            self.query(q.kind)
        } else {
            env.query(q)
        }
    }
}

/// Two sessions' ids in R21's order: text, byte by byte; a session the host does not
/// name is its number in decimal (formatted on the stack: no allocation).
fn cmp_ids<E: Env + ?Sized>(env: &E, a: SessionId, b: SessionId) -> Ordering {
    let (mut da, mut db) = ([0u8; 20], [0u8; 20]);
    let ta = env
        .name(a)
        .map_or_else(|| decimal(a.0, &mut da), str::as_bytes);
    let tb = env
        .name(b)
        .map_or_else(|| decimal(b.0, &mut db), str::as_bytes);
    ta.cmp(tb)
}

/// `n` in decimal, in the tail of `buf` (20 digits hold every u64).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

/// One queue row (S2): attributes read now, header values, the hit now, enqueue time.
#[inline(always)]
fn fill_queue_row<E: Env + ?Sized>(
    row: &mut [f64],
    inputs: &[Input],
    w: &Waiting,
    store: &Store,
    block: u64,
    fair: Option<&Fair>,
    env: &E,
) {
    // The host is asked once per row, not once per attribute.
    let mut attrs: Option<&[f64]> = None;
    for (slot, input) in row.iter_mut().zip(inputs) {
        *slot = match *input {
            Input::Attr(a) => attr(
                attrs.get_or_insert_with(|| live_attrs(env, w.session)),
                a,
                w.session,
            ),
            Input::Units => w.header.units.0 as f64,
            Input::Reserve => w.header.reserve.0 as f64,
            Input::Computed => (hit_counts(store, &w.header, block).0 * block) as f64,
            Input::Enqueued => w.enqueued,
            Input::Service => fair.map_or(0.0, |f| f.service(w.session, env)),
            other => unreachable!("validated queue row input {other:?}"),
        };
    }
}
