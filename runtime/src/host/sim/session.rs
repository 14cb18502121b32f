//! Sessions: their state, their attribute values (D3) and what the pools read of
//! them through [`Env`] (attributes, residency, queries), kept apart from the pools so
//! that one pool can be borrowed mutably while this is read; reading sessions from
//! their source one at a time and dropping ended ones from the window (docs/HOST.md,
//! "Memory"); and the arrival of a session (routing, the host's own refusal, its
//! content chain, its enqueue).

use crate::config::{PoolRef, Query, QueryKind, StageRef, Target};
use crate::env::{Env, default_query};
use crate::pool::Enqueued;
use crate::trace::{HOST_RUN_IDS, SessionSpec};
use crate::types::{Chain, Header, Run, RunId, SessionId, Units};

use super::super::config::{AttrSpec, HostError};
use super::super::observe::HostEvent;
use super::build::config_err;
use super::table::{Table, Window};
use super::{Host, Io, LinkIx, PoolIx, StepIx};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Pending,
    Waiting,
    /// Resident of this step member.
    Resident(StepIx),
    Done,
    Rejected,
}

#[derive(Clone, Debug)]
pub(super) struct Sess {
    pub(super) arrival: f64,
    pub(super) prompt: u64,
    pub(super) output: u64,
    /// The pool member it is in: the entry member it is routed to (round-robin by
    /// serial, or by the route keys at its arrival, R22), then, once handed off,
    /// its decode member (R25).
    pub(super) pool: PoolIx,
    /// The entry member it was routed to.
    pub(super) entry: PoolIx,
    /// Handed off: the prefill member whose hold it keeps until its transfer ends.
    pub(super) from: Option<PoolIx>,
    /// Handed off and not yet admitted on the decode side: its admission there
    /// reads the prompt over the link (R26).
    pub(super) remote: bool,
    pub(super) state: State,
    pub(super) generated: u64,
    /// Units of its sequence whose KV exists (mirrors the pool's computed).
    pub(super) computed: u64,
    /// The most `computed` has ever been: units beyond it are new work (progress.rs).
    pub(super) high: u64,
    /// Its last execution sampled a token: its next take is a decode.
    pub(super) caught_up: bool,
    pub(super) admitted_once: bool,
    /// A tier load is under way (generation `load_gen`): it takes no tokens.
    pub(super) loading: bool,
    pub(super) load_gen: u32,
    pub(super) first_token: f64,
    pub(super) last_token: f64,
    /// Its first admission, its handoff, its first admission on the decode side and
    /// the end of its transfer (NaN until they happen): the TTFT split (R27).
    pub(super) t_admit: f64,
    pub(super) t_handoff: f64,
    pub(super) t_dadmit: f64,
    pub(super) t_kv: f64,
    /// The trace's name for it, kept only under `Shared::keep_names`.
    pub(super) name: Option<Box<str>>,
}

impl Sess {
    pub(super) fn seq(&self) -> u64 {
        self.prompt + self.generated
    }
}

/// A pool member's queryable state, refreshed after every operation on it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PoolQ {
    pub(super) free: f64,
    pub(super) used: f64,
    pub(super) cached: f64,
    pub(super) cap: f64,
    pub(super) queued: f64,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct StageQ {
    pub(super) budget_left: f64,
    pub(super) residents: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StageIdx {
    Step(StepIx),
    Link(LinkIx),
}

/// What the pools read through [`Env`]: attributes, residency and queries. Kept apart
/// from the pools so that one can be borrowed mutably while this is read.
pub(super) struct Shared {
    /// The sessions from the oldest not yet ended on (and the next to arrive).
    pub(super) sess: Window<Sess>,
    /// Attribute values, `n_attrs` per session from session `attrs_first` on. They
    /// never change in this host, so they are answered for ended sessions too while
    /// kept (S3 then reads the same values): with the window's sessions, or for every
    /// session when `keep_attrs`.
    pub(super) attrs: Vec<f64>,
    pub(super) attrs_first: u64,
    pub(super) n_attrs: usize,
    /// A tier orders entries by attributes: it may be handed a block of any ended
    /// session (a spill), and must then have its values (`Pool::accept_spill`'s
    /// host contract), so no session's attributes are dropped.
    pub(super) keep_attrs: bool,
    /// Some pool orders its queue's ties by session id (R21): sessions keep the
    /// trace's name for them (`Env::name`); otherwise no name is copied.
    pub(super) keep_names: bool,
    pub(super) pool_q: Table<PoolIx, PoolQ>,
    pub(super) stage_q: Table<StepIx, StageQ>,
    pub(super) pool_flat: Vec<Vec<PoolIx>>,
    pub(super) stage_flat: Vec<Vec<StageIdx>>,
    /// The step member whose iteration is being scheduled: `preempt lifo` victims are
    /// its residents (NONE outside an iteration).
    pub(super) current: Option<StepIx>,
}

impl Shared {
    pub(super) fn pool_index(&self, r: PoolRef) -> Option<PoolIx> {
        self.pool_flat
            .get(r.pool as usize)?
            .get(r.member as usize)
            .copied()
    }

    pub(super) fn stage_index(&self, r: StageRef) -> Option<StageIdx> {
        self.stage_flat
            .get(r.stage as usize)?
            .get(r.member as usize)
            .copied()
    }
}

impl Env for Shared {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        let i = usize::try_from(session.0.checked_sub(self.attrs_first)?).ok()?;
        self.attrs.get(i * self.n_attrs..(i + 1) * self.n_attrs)
    }

    fn name(&self, session: SessionId) -> Option<&str> {
        self.sess.get(session)?.name.as_deref()
    }

    fn is_resident(&self, session: SessionId) -> bool {
        self.current.is_some_and(|m| {
            self.sess
                .get(session)
                .is_some_and(|s| s.state == State::Resident(m))
        })
    }

    fn query(&self, query: Query) -> f64 {
        match query.target {
            Target::Pool(r) => match self.pool_index(r) {
                Some(p) => {
                    let q = self.pool_q[p];
                    match query.kind {
                        QueryKind::Free => q.free,
                        QueryKind::Used => q.used,
                        QueryKind::Cached => q.cached,
                        QueryKind::Cap => q.cap,
                        QueryKind::Queued => q.queued,
                        _ => default_query(query),
                    }
                }
                None => default_query(query),
            },
            Target::Stage(r) => match self.stage_index(r) {
                Some(StageIdx::Step(m)) => {
                    let q = self.stage_q[m];
                    match query.kind {
                        QueryKind::BudgetLeft => q.budget_left,
                        QueryKind::Residents => q.residents,
                        _ => default_query(query),
                    }
                }
                _ => default_query(query),
            },
        }
    }
}

/// Source of one attribute's value.
pub(super) enum AttrSource {
    Serial,
    Arrival,
    Prompt,
    Output,
    Field(Option<usize>, Option<f64>),
}

/// Checks session `i` of `source` (the readers check it too; a workload built by hand
/// may not have been) and appends its attribute values (D3) to `out`.
pub(super) fn bind(
    attrs: &[AttrSpec],
    sources: &[AttrSource],
    source: &str,
    i: u64,
    s: &SessionSpec,
    previous: f64,
    out: &mut Vec<f64>,
) -> Result<(), HostError> {
    let runs: u64 = s.runs.iter().map(|r| r.len.0).sum();
    if s.prompt == 0
        || s.output == 0
        || (!s.runs.is_empty() && runs != s.prompt)
        || !(s.arrival >= previous && s.arrival.is_finite())
    {
        return Err(config_err(format!(
            "session {i} of {source}: prompt {} (runs {runs}), output {}, arrival {}: a \
             session needs a prompt and an output of at least 1, runs adding up to the \
             prompt, and a finite arrival not before the previous one",
            s.prompt, s.output, s.arrival
        )));
    }
    for (a, src) in attrs.iter().zip(sources) {
        let v = match *src {
            AttrSource::Serial => i as f64,
            AttrSource::Arrival => s.arrival,
            AttrSource::Prompt => s.prompt as f64,
            AttrSource::Output => s.output as f64,
            AttrSource::Field(f, default) => {
                let given = f.and_then(|f| {
                    let f = f as u32;
                    s.extra
                        .binary_search_by_key(&f, |&(k, _)| k)
                        .ok()
                        .map(|j| s.extra[j].1)
                });
                match given.or(default) {
                    Some(v) => v,
                    None => {
                        return Err(HostError::MissingAttr {
                            attr: a.name.clone(),
                            session: i,
                            line: s.line,
                            source: source.to_string(),
                        });
                    }
                }
            }
        };
        out.push(v);
    }
    Ok(())
}

/// Where each attribute's value comes from, given the source's extra fields.
pub(super) fn attr_sources(attrs: &[AttrSpec], fields: &[String]) -> Vec<AttrSource> {
    attrs
        .iter()
        .map(|a| match a.name.as_str() {
            "serial" => AttrSource::Serial,
            "arrival" => AttrSource::Arrival,
            "prompt" => AttrSource::Prompt,
            "output" => AttrSource::Output,
            other => AttrSource::Field(fields.iter().position(|f| f == other), a.default),
        })
        .collect()
}

/// Sessions that ended leave the window in batches of at least this many (or half the
/// window), so dropping them costs O(1) per session.
const TRIM_BATCH: usize = 1024;

impl<'w> Host<'w> {
    /// Reads the next session from the source into the window (state `Pending`),
    /// with its attributes and its prompt runs (in `next_runs` until it arrives).
    /// `false` when the source has no more.
    pub(super) fn pull(&mut self) -> Result<bool, HostError> {
        let Some(next) = self.src.next_session().map_err(HostError::Trace)? else {
            return Ok(false);
        };
        // A field first met in this session (our JSONL) may be an attribute's source.
        if next.fields.len() != self.attr_fields {
            self.attr_sources = attr_sources(&self.attr_specs, next.fields);
            self.attr_fields = next.fields.len();
        }
        let s = next.session;
        let i = self.shared.sess.end();
        bind(
            &self.attr_specs,
            &self.attr_sources,
            self.src_name.as_str(),
            i,
            s,
            self.previous_arrival,
            &mut self.shared.attrs,
        )?;
        self.previous_arrival = s.arrival;
        self.next_runs.clear();
        self.next_runs.extend_from_slice(&s.runs);
        let (arrival, prompt, output) = (s.arrival, s.prompt, s.output);
        let pool = self.entries[(i % self.entries.len() as u64) as usize];
        self.shared.sess.push(Sess {
            arrival,
            prompt,
            output,
            pool,
            entry: pool,
            from: None,
            remote: false,
            state: State::Pending,
            generated: 0,
            computed: 0,
            high: 0,
            caught_up: false,
            admitted_once: false,
            loading: false,
            load_gen: 0,
            first_token: f64::NAN,
            last_token: f64::NAN,
            t_admit: f64::NAN,
            t_handoff: f64::NAN,
            t_dadmit: f64::NAN,
            t_kv: f64::NAN,
            name: if self.shared.keep_names {
                s.name.as_deref().map(Box::from)
            } else {
                None
            },
        });
        Ok(true)
    }

    /// Drops the oldest sessions from the window once enough of them have ended
    /// (every session older than them too), with their attributes unless kept.
    pub(super) fn trim(&mut self) {
        let w = &self.shared.sess;
        while w
            .get(self.live_from)
            .is_some_and(|x| matches!(x.state, State::Done | State::Rejected) && x.from.is_none())
        {
            self.live_from = SessionId(self.live_from.0 + 1);
        }
        let ended = usize::try_from(self.live_from.0 - w.first()).unwrap_or(usize::MAX);
        if ended < TRIM_BATCH.max(w.len() / 2) {
            return;
        }
        self.shared.sess.drop_front(ended);
        if !self.shared.keep_attrs {
            let drop = self.shared.sess.first() - self.shared.attrs_first;
            let n = usize::try_from(drop).unwrap_or(usize::MAX);
            let values = n.saturating_mul(self.shared.n_attrs);
            self.shared
                .attrs
                .drain(..values.min(self.shared.attrs.len()));
            self.shared.attrs_first = self.shared.sess.first();
        }
    }

    // ----- arrivals -------------------------------------------------------------------

    /// Session `s` arrives at its entry pool member (fixed when it was bound),
    /// refused if it could never finish there, else queued (R5 may still refuse it).
    pub(super) fn arrive(&mut self, s: SessionId, io: &mut Io<'_>) -> Result<(), HostError> {
        let chain = self.chain(s)?;
        let prompt = self.shared.sess[s].prompt;
        let header = Header {
            units: Units(prompt),
            reserve: Units(prompt),
            chain,
            max_hit: Some(Units(prompt - 1)),
        };
        if self.router.is_some() {
            let p = self.route(s, &header);
            let x = &mut self.shared.sess[s];
            x.pool = p;
            x.entry = p;
        }
        let p = self.shared.sess[s].pool;
        // Where the session produces its tokens: here, or the family it is handed
        // off to (R25), whose members share one cap.
        let (cap_blocks, block) = match &self.info[p].handoff {
            Some(h) => {
                let d = self.targets[h.target].members[0];
                (self.info[d].cap_blocks, self.info[d].block)
            }
            None => (self.info[p].cap_blocks, self.info[p].block),
        };
        let info = &mut self.info[p];
        info.sessions += 1;
        let (prompt, output) = {
            let x = &mut self.shared.sess[s];
            x.state = State::Waiting;
            (x.prompt, x.output)
        };
        // A session needs prompt + output − 1 units of KV to produce its last token
        // (vLLM refuses such a request by max_model_len). R5 refuses prompts above the
        // cap itself; this refuses one whose prompt fits but whose outputs never will,
        // which would otherwise be preempted and recomputed forever.
        let need = prompt + output - 1;
        let prompt_fits = info
            .cap_blocks
            .is_none_or(|cap| Units(prompt).blocks_up(info.block) <= cap);
        if let Some(cap) = cap_blocks
            && prompt_fits
            && Units(need).blocks_up(block) > cap
        {
            info.host_rejected += 1;
            self.shared.sess[s].state = State::Rejected;
            self.rejected += 1;
            self.host_event(
                io,
                p,
                HostEvent::Reject {
                    session: s,
                    need: Units(need),
                },
            )?;
            self.done_one(io);
            return Ok(());
        }
        let r = self.pools[p]
            .enqueue(self.now, s, header, &self.shared)
            .map_err(self.engine(p))?;
        self.after_op(p, io)?;
        match r {
            Enqueued::Rejected => {
                self.shared.sess[s].state = State::Rejected;
                self.rejected += 1;
                self.done_one(io);
            }
            Enqueued::Queued => self.wake_pool(p),
        }
        Ok(())
    }

    /// Session `s`'s content (the session just read: its runs are `next_runs`): its
    /// prompt runs (or one run of its own), then a run of its own for its outputs, so
    /// that only it can hit its output blocks.
    pub(super) fn chain(&self, s: SessionId) -> Result<Chain, HostError> {
        let x = &self.shared.sess[s];
        let i = s.0;
        let mut runs = Vec::with_capacity(self.next_runs.len() + 1);
        if self.next_runs.is_empty() {
            runs.push(Run {
                id: RunId(HOST_RUN_IDS | (2 * i)),
                len: Units(x.prompt),
            });
        } else {
            runs.extend_from_slice(&self.next_runs);
        }
        runs.push(Run {
            id: RunId(HOST_RUN_IDS | (2 * i + 1)),
            len: Units(x.output),
        });
        Chain::new(runs).map_err(|e| config_err(format!("session {i}: {e}")))
    }
}
