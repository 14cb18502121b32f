//! `poolc._native.Keys`: one compiled key list of a spec (`queue by`, `evict by` or
//! `preempt by`) with the names of the inputs its row and ctx slots hold, for a host
//! written in Python that keeps its own records (the vLLM plugin, poolc/vllm/__init__.py). The
//! host fills rows by those names and asks the compiled scan which row is least (E5,
//! ties to the lowest index) or the compiled keys' values; nothing here orders rows
//! itself or evaluates an expression any other way. Rows whose length does not match
//! the layout are refused with `poolc.PoolError`, never read out of bounds.

use poolc::Compiled;
use poolc::ir::{self, Evict, PreemptMode, QueuePolicy};
use poolrt::policy::KeyList;
use pyo3::prelude::*;

use crate::error;

#[pyclass(module = "poolc._native", frozen)]
pub struct Keys {
    keys: KeyList,
    row: Vec<String>,
    ctx: Vec<String>,
    fixed: bool,
}

impl Keys {
    /// The key list of `site` (`queue`, `evict` or `preempt`) of pool `pool`.
    pub fn new(py: Python<'_>, compiled: &Compiled, pool: &str, site: &str) -> PyResult<Keys> {
        let program = compiled.program();
        let bad = |m: String| error(py, "PoolError", (m,));
        let id = program
            .find_pool(pool)
            .ok_or_else(|| bad(format!("the spec has no pool named `{pool}`")))?;
        let p = program.pool(id);
        let policy = compiled.pool(id);
        let (exprs, layout, keys) = match site {
            "queue" => match &p.queue {
                QueuePolicy::By(k) => (k, &p.queue_layout, &policy.queue),
                QueuePolicy::Fifo => return Err(bad(format!("pool `{pool}` queues fifo"))),
            },
            "evict" => match &p.evict {
                Evict::By(k) => (k, &p.entry_layout, &policy.evict),
                Evict::Lru => return Err(bad(format!("pool `{pool}` evicts lru"))),
            },
            "preempt" => match &p.preempt {
                PreemptMode::By(k) => (k, &p.resident_layout, &policy.preempt),
                _ => return Err(bad(format!("pool `{pool}` preempts by no keys"))),
            },
            other => {
                return Err(bad(format!(
                    "unknown key site `{other}`; expected queue, evict or preempt"
                )));
            }
        };
        let keys = keys
            .clone()
            .ok_or_else(|| bad(format!("pool `{pool}` has no compiled {site} keys")))?;
        let names = |v: &[ir::Input]| v.iter().map(|i| ir::input_name(program, *i)).collect();
        Ok(Keys {
            keys,
            row: names(&layout.row),
            ctx: names(&layout.ctx),
            fixed: exprs.iter().all(|e| e.reads.is_fixed()),
        })
    }

    fn check(&self, py: Python<'_>, rows: usize, n: usize, ctx: usize) -> PyResult<()> {
        if rows != n * self.row.len() || ctx != self.ctx.len() {
            return Err(error(
                py,
                "PoolError",
                (format!(
                    "{n} rows of {} slots and a ctx of {} slots expected; got {rows} row \
                     values and {ctx} ctx values",
                    self.row.len(),
                    self.ctx.len()
                ),),
            ));
        }
        Ok(())
    }
}

#[pymethods]
impl Keys {
    /// The input each row slot holds, by its source name (`serial`, `units`,
    /// `enqueued`, `admitted`, …).
    #[getter]
    fn row(&self) -> Vec<String> {
        self.row.clone()
    }

    /// The input each ctx slot holds (`now`, a query as written: `free(kv)`).
    #[getter]
    fn ctx(&self) -> Vec<String> {
        self.ctx.clone()
    }

    /// Whether every key reads only inputs that cannot change while a record waits
    /// (attributes, `units`, `reserve`): such keys may be computed once.
    #[getter]
    fn fixed(&self) -> bool {
        self.fixed
    }

    fn __len__(&self) -> usize {
        self.keys.len()
    }

    /// The index of the least of `n` rows (laid out one after another in `rows`) by
    /// the compiled scan, the lowest index among equals; `None` when `n` is 0.
    fn select(
        &self,
        py: Python<'_>,
        rows: Vec<f64>,
        n: usize,
        ctx: Vec<f64>,
    ) -> PyResult<Option<usize>> {
        self.check(py, rows.len(), n, ctx.len())?;
        Ok(self.keys.select(&rows, n, self.row.len(), &ctx))
    }

    /// The compiled keys' values on one row.
    fn values(&self, py: Python<'_>, row: Vec<f64>, ctx: Vec<f64>) -> PyResult<Vec<f64>> {
        self.check(py, row.len(), 1, ctx.len())?;
        Ok((0..self.keys.len())
            .map(|k| self.keys.key(k, &row, &ctx))
            .collect())
    }
}
