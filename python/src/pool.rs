//! `poolc.Pool`: one live pool member of the engine, driven by a Python simulator
//! exactly as docs/EMBEDDING.md drives it from Rust — the same `poolrt::Pool` with
//! the spec's compiled policies. The Python side answers the pool's questions through
//! [`PyEnv`]: a session's attribute values are taken from the caller's `attrs` (a dict
//! or a callable) when the session is enqueued, kept while it is in the pool, and
//! dropped when it is released (the pool then keeps its own S3 snapshot). No stage:
//! every holder counts as resident, and queries of other pools read their defaults.
//! Every misuse is the engine's `Error`, raised as `poolc.PoolError`; nothing here
//! decides anything the engine decides.

use std::collections::HashMap;

use poolc::ir::{PoolId, Program};
use poolrt::{
    Admission, Chain, Enqueued, Env, Event, Grown, Header, Notice, Query, Record, Run, RunId,
    SessionId, Units, env::default_query,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::error;

/// Run ids the package gives a session enqueued without a chain: one run of its own,
/// so that only it can hit its blocks (the top bit keeps them apart from a caller's).
const OWN_RUN: u64 = 1 << 63;

/// What the pool reads of the Python host.
pub struct PyEnv {
    /// Attribute values of sessions in the pool, in the spec's slot order.
    attrs: HashMap<SessionId, Vec<f64>>,
}

impl Env for PyEnv {
    fn attrs(&self, session: SessionId) -> Option<&[f64]> {
        self.attrs.get(&session).map(Vec::as_slice)
    }

    fn is_resident(&self, _: SessionId) -> bool {
        true
    }

    fn query(&self, query: Query) -> f64 {
        default_query(query)
    }
}

/// A live pool member.
#[pyclass(module = "poolc._native", unsendable)]
pub struct Pool {
    pool: poolrt::Pool,
    env: PyEnv,
    /// The spec's attributes: name and default, in slot order.
    slots: Vec<(String, Option<f64>)>,
    /// `attrs`: a dict `session -> {name: value}` or a callable `session -> dict`.
    source: Option<Py<PyAny>>,
}

impl Pool {
    pub fn new(
        py: Python<'_>,
        program: &Program,
        compiled: &poolc::Compiled,
        pool: PoolId,
        member: u32,
        source: Option<Py<PyAny>>,
    ) -> PyResult<Pool> {
        let config = poolc::bridge::pool_config(program, pool, member, compiled.pool(pool))
            .map_err(|e| error(py, "PoolError", (e.to_string(),)))?;
        let pool =
            poolrt::Pool::new(config).map_err(|e| error(py, "PoolError", (e.to_string(),)))?;
        Ok(Pool {
            pool,
            env: PyEnv {
                attrs: HashMap::new(),
            },
            slots: program
                .session
                .attrs
                .iter()
                .map(|a| (a.name.clone(), a.default))
                .collect(),
            source,
        })
    }

    /// The session's attribute values from the caller, in slot order: `serial` is the
    /// session number and `arrival` the enqueue time unless the caller gives them.
    fn fetch(&self, py: Python<'_>, session: u64, now: f64) -> PyResult<Vec<f64>> {
        let given: Option<Bound<'_, PyAny>> = match &self.source {
            None => None,
            Some(src) => {
                let src = src.bind(py);
                if let Ok(dict) = src.downcast::<PyDict>() {
                    dict.get_item(session)?
                } else {
                    Some(src.call1((session,))?)
                }
            }
        };
        let mut values = Vec::with_capacity(self.slots.len());
        for (name, default) in &self.slots {
            let from_caller = match &given {
                Some(g) if !g.is_none() => match g.get_item(name.as_str()) {
                    Ok(v) => Some(v.extract::<f64>()?),
                    Err(_) => None,
                },
                _ => None,
            };
            let builtin = match name.as_str() {
                "serial" => Some(session as f64),
                "arrival" => Some(now),
                _ => None,
            };
            match from_caller.or(builtin).or(*default) {
                Some(v) => values.push(v),
                None => {
                    return Err(error(
                        py,
                        "PoolError",
                        (format!(
                            "session {session}: attribute `{name}` has no default and attrs \
                             gives no value for it"
                        ),),
                    ));
                }
            }
        }
        Ok(values)
    }
}

fn engine_err(py: Python<'_>) -> impl Fn(poolrt::Error) -> PyErr + '_ {
    move |e| error(py, "PoolError", (e.to_string(),))
}

fn chain_of(
    py: Python<'_>,
    session: u64,
    units: u64,
    chain: Option<Vec<(u64, u64)>>,
) -> PyResult<Chain> {
    let runs = match chain {
        Some(runs) => runs
            .into_iter()
            .map(|(id, len)| Run {
                id: RunId(id),
                len: Units(len),
            })
            .collect(),
        None => vec![Run {
            id: RunId(OWN_RUN | session),
            len: Units(units),
        }],
    };
    Chain::new(runs).map_err(|e| error(py, "PoolError", (e.to_string(),)))
}

/// An engine event as a dict: `ev` (the log's name), `session`, the event's own
/// fields under the log's names (docs/TRACES.md).
fn event_dict<'py>(py: Python<'py>, r: &Record) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ev", r.event.name())?;
    let session = match &r.event {
        Event::Enqueue { session } | Event::Reject { session } | Event::GrowWait { session } => {
            session
        }
        Event::Admit {
            session,
            hit,
            units,
        } => {
            d.set_item("hit", hit.0)?;
            d.set_item("units", units.0)?;
            session
        }
        Event::Grow { session, by } => {
            d.set_item("by", by.0)?;
            session
        }
        Event::Preempt { session, cached } | Event::Release { session, cached } => {
            d.set_item("kept", cached.0)?;
            session
        }
        Event::Evict {
            entry,
            session,
            key,
            units,
        }
        | Event::Store {
            entry,
            session,
            key,
            units,
        } => {
            d.set_item("entry", entry.0)?;
            d.set_item("key", (key.run.0, key.offset))?;
            d.set_item("units", units.0)?;
            session
        }
        Event::Spill {
            entry,
            session,
            key,
            units,
            work,
        } => {
            d.set_item("entry", entry.0)?;
            d.set_item("key", (key.run.0, key.offset))?;
            d.set_item("units", units.0)?;
            d.set_item("work", *work)?;
            session
        }
        Event::TierLoad {
            session,
            units,
            work,
        } => {
            d.set_item("units", units.0)?;
            d.set_item("work", *work)?;
            session
        }
    };
    d.set_item("session", session.0)?;
    d.set_item("allocated", r.allocated.0)?;
    d.set_item("cached", r.cached.0)?;
    d.set_item("queued", r.queued)?;
    Ok(d)
}

fn notice_dict<'py>(py: Python<'py>, n: &Notice) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match *n {
        Notice::Admitted {
            session,
            hit,
            units,
        } => {
            d.set_item("kind", "admitted")?;
            d.set_item("session", session.0)?;
            d.set_item("hit", hit.0)?;
            d.set_item("units", units.0)?;
        }
        Notice::Grown { session, by } => {
            d.set_item("kind", "grown")?;
            d.set_item("session", session.0)?;
            d.set_item("by", by.0)?;
        }
        Notice::Preempted { session } => {
            d.set_item("kind", "preempted")?;
            d.set_item("session", session.0)?;
        }
        Notice::Spill {
            session,
            key,
            units,
            work,
            ..
        } => {
            d.set_item("kind", "spill")?;
            d.set_item("session", session.0)?;
            d.set_item("key", (key.run.0, key.offset))?;
            d.set_item("units", units.0)?;
            d.set_item("work", work)?;
        }
        Notice::TierLoad {
            session,
            units,
            work,
            ..
        } => {
            d.set_item("kind", "tier_load")?;
            d.set_item("session", session.0)?;
            d.set_item("units", units.0)?;
            d.set_item("work", work)?;
        }
    }
    Ok(d)
}

#[pymethods]
impl Pool {
    /// Queues `session` for `units` (its hold may reach `reserve`; its content is
    /// `chain`). Gives "queued", or "rejected" when it can never fit (R5).
    #[pyo3(signature = (now, session, units, reserve=None, chain=None))]
    fn enqueue(
        &mut self,
        py: Python<'_>,
        now: f64,
        session: u64,
        units: u64,
        reserve: Option<u64>,
        chain: Option<Vec<(u64, u64)>>,
    ) -> PyResult<&'static str> {
        let values = self.fetch(py, session, now)?;
        let mut header = Header::new(Units(units), chain_of(py, session, units, chain)?);
        if let Some(r) = reserve {
            header.reserve = Units(r);
        }
        let s = SessionId(session);
        // Known before the engine runs (its keys may read them), forgotten if it refused.
        let before = self.env.attrs.insert(s, values);
        match self.pool.enqueue(now, s, header, &self.env) {
            Ok(Enqueued::Queued) => Ok("queued"),
            Ok(Enqueued::Rejected) => {
                self.env.attrs.remove(&s);
                Ok("rejected")
            }
            Err(e) => {
                match before {
                    Some(v) => self.env.attrs.insert(s, v),
                    None => self.env.attrs.remove(&s),
                };
                Err(engine_err(py)(e))
            }
        }
    }

    /// R9: retries waiting grows, then admits while the selected hold fits.
    fn settle(&mut self, py: Python<'_>, now: f64) -> PyResult<()> {
        self.pool.settle(now, &self.env).map_err(engine_err(py))
    }

    /// One admission attempt (R6–R8). `units` gives the admitted hold that many units
    /// (default: its header's). Gives `(session, hit, units)`, or None.
    #[pyo3(signature = (now, units=None))]
    fn admit_next(
        &mut self,
        py: Python<'_>,
        now: f64,
        units: Option<u64>,
    ) -> PyResult<Option<(u64, u64, u64)>> {
        let r = self
            .pool
            .admit_next(now, &self.env, |_, _, h| Some(units.map_or(h.units, Units)))
            .map_err(engine_err(py))?;
        Ok(match r {
            Admission::Admitted {
                session,
                hit,
                units,
            } => Some((session.0, hit.0, units.0)),
            _ => None,
        })
    }

    /// R13: the holder grows by `n` units. Gives "grown", "waiting" or
    /// "self_preempted"; other victims are in `notices()`.
    fn grow(&mut self, py: Python<'_>, now: f64, session: u64, n: u64) -> PyResult<&'static str> {
        let r = self
            .pool
            .grow(now, SessionId(session), Units(n), &self.env)
            .map_err(engine_err(py))?;
        Ok(match r {
            Grown::Grown => "grown",
            Grown::Waiting => "waiting",
            Grown::SelfPreempted => "self_preempted",
        })
    }

    /// The holder's KV exists for `units` (what R14 caches at release).
    fn set_computed(&mut self, py: Python<'_>, session: u64, units: u64) -> PyResult<()> {
        self.pool
            .set_computed(SessionId(session), Units(units))
            .map_err(engine_err(py))
    }

    /// R14: the hold ends; its computed prefix is cached.
    fn release(&mut self, py: Python<'_>, now: f64, session: u64) -> PyResult<()> {
        let s = SessionId(session);
        self.pool
            .release(now, s, &self.env)
            .map_err(engine_err(py))?;
        self.env.attrs.remove(&s);
        Ok(())
    }

    /// What the last operation did beyond its result: admissions with their hits,
    /// grows, preemptions, spills and tier loads.
    fn notices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for n in self.pool.notices() {
            list.append(notice_dict(py, n)?)?;
        }
        Ok(list)
    }

    /// Turns the event log on or off.
    #[pyo3(signature = (enabled=true))]
    fn log(&mut self, enabled: bool) {
        self.pool.set_logging(enabled);
    }

    /// The events logged since the last call, each with the pool's state after it.
    fn take_log<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for r in self.pool.take_log() {
            list.append(event_dict(py, &r)?)?;
        }
        Ok(list)
    }

    /// The cap in units (None: unbounded).
    #[getter]
    fn cap(&self) -> Option<u64> {
        match self.pool.cap() {
            poolrt::Limit::Finite(u) => Some(u.0),
            poolrt::Limit::Unbounded => None,
        }
    }

    #[getter]
    fn block(&self) -> u64 {
        self.pool.block().0
    }

    #[getter]
    fn allocated(&self) -> u64 {
        self.pool.allocated().0
    }

    #[getter]
    fn cached(&self) -> u64 {
        self.pool.cached().0
    }

    /// Units neither allocated nor cached (None: unbounded).
    #[getter]
    fn free(&self) -> Option<u64> {
        self.cap()
            .map(|c| c.saturating_sub(self.allocated() + self.cached()))
    }

    #[getter]
    fn queued(&self) -> usize {
        self.pool.queued()
    }

    #[getter]
    fn holders(&self) -> usize {
        self.pool.holders()
    }
}
