//! The native half of `poolc.sweep` (python/poolc/sweep.py): the grid, its points,
//! one point's run and the outputs, all `poolc_tools::sweep`'s — the code `poolc
//! sweep` runs — so that a Ray task's row is the local backend's row byte for byte.
//! [`SweepPlan`] is the driver's side (the checked plan, results.jsonl, results.csv,
//! the summary); [`sweep_point`] is a task's side (parse the grid, run one point,
//! give its row as a JSON line). The grid is parsed in Rust only; Python never
//! expands points or formats a row. Every error becomes `poolc.errors.SweepError`
//! with the rendered text; a point's replay runs with the GIL released.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};

use poolc::diag::Styling;
use poolc_tools::sweep::plan::{Plan, SearchChoice};
use poolc_tools::sweep::results::{Output, Row};
use poolc_tools::sweep::{SweepError, TraceCache, run_alone, summary};
use pyo3::prelude::*;

use crate::error;

fn sweep_error(py: Python<'_>, e: &SweepError) -> PyErr {
    error(py, "SweepError", (e.render(Styling::Plain),))
}

fn choice(py: Python<'_>, search: Option<&str>) -> PyResult<SearchChoice> {
    match search {
        None => Ok(SearchChoice::Grid),
        Some(s) => SearchChoice::from_name(s).ok_or_else(|| {
            error(
                py,
                "SweepError",
                (format!("search `{s}` is not one of rate, none"),),
            )
        }),
    }
}

/// A checked grid and, once opened, its output folder.
#[pyclass(module = "poolc._native", frozen)]
pub struct SweepPlan {
    plan: Plan,
    fingerprint: String,
    output: Mutex<Option<Output>>,
}

#[pymethods]
impl SweepPlan {
    /// How many points the grid has.
    #[getter]
    fn points(&self) -> usize {
        self.plan.points.len()
    }

    /// The grid file as named.
    #[getter]
    fn file(&self) -> String {
        self.plan.file.clone()
    }

    /// A point's coordinates as `name=value` words.
    fn label(&self, py: Python<'_>, index: usize) -> PyResult<String> {
        let point = self.plan.point(index).ok_or_else(|| {
            error(
                py,
                "SweepError",
                (format!("the grid has no point {index}"),),
            )
        })?;
        Ok(self.plan.label(point))
    }

    /// Opens the output folder as `poolc sweep --out DIR [--resume]` does and gives
    /// the points still to run, in index order.
    fn open(&self, py: Python<'_>, out: PathBuf, resume: bool) -> PyResult<Vec<usize>> {
        let output = Output::open(&out, &self.plan, &self.fingerprint, resume)
            .map_err(|e| sweep_error(py, &e))?;
        let pending = output.pending(&self.plan);
        *self.output.lock().unwrap_or_else(|e| e.into_inner()) = Some(output);
        Ok(pending)
    }

    /// How many rows `open(..., resume=True)` kept.
    fn resumed(&self) -> usize {
        let output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        output.as_ref().map_or(0, Output::resumed)
    }

    /// Appends a row [`sweep_point`] gave to results.jsonl (and flushes it).
    fn append(&self, py: Python<'_>, line: &str) -> PyResult<()> {
        let row = Row::from_line(&self.plan, line, None).map_err(|e| {
            error(
                py,
                "SweepError",
                (format!("a task gave a row that is not one: {e}"),),
            )
        })?;
        let mut output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        let output = output
            .as_mut()
            .ok_or_else(|| error(py, "SweepError", ("open() the output first".to_string(),)))?;
        output
            .append(&self.plan, row)
            .map_err(|e| sweep_error(py, &e))
    }

    /// Writes results.csv from every row held and gives the summary `poolc sweep`
    /// prints (`ran`: the points run now).
    fn finish(&self, py: Python<'_>, ran: usize) -> PyResult<String> {
        let output = self.output.lock().unwrap_or_else(|e| e.into_inner());
        let output = output
            .as_ref()
            .ok_or_else(|| error(py, "SweepError", ("open() the output first".to_string(),)))?;
        output
            .write_csv(&self.plan)
            .map_err(|e| sweep_error(py, &e))?;
        let rows: Vec<&Row> = output.rows().collect();
        let counts = summary::Counts {
            run: ran,
            resumed: output.resumed(),
        };
        Ok(summary::render(&self.plan, &rows, &counts))
    }
}

/// Parses, expands and checks the grid at `path` (every spec with every param
/// combination), as `poolc sweep` does before it runs anything.
#[pyfunction]
#[pyo3(signature = (path, search=None))]
pub fn sweep_plan(py: Python<'_>, path: PathBuf, search: Option<&str>) -> PyResult<SweepPlan> {
    let choice = choice(py, search)?;
    let plan = Plan::load(&path, choice).map_err(|e| sweep_error(py, &e))?;
    let sources = py
        .allow_threads(|| plan.check())
        .map_err(|e| sweep_error(py, &e))?;
    let fingerprint = plan.fingerprint(&sources);
    Ok(SweepPlan {
        plan,
        fingerprint,
        output: Mutex::new(None),
    })
}

/// Workloads read by this process, kept for the next points (a Ray worker process
/// runs many tasks).
fn traces() -> &'static TraceCache {
    static CACHE: OnceLock<TraceCache> = OnceLock::new();
    CACHE.get_or_init(TraceCache::default)
}

/// Runs point `index` of the grid at `path` on its own (a Ray task's work) and
/// gives its row as a JSON line for `SweepPlan.append`.
#[pyfunction]
#[pyo3(signature = (path, index, search=None))]
pub fn sweep_point(
    py: Python<'_>,
    path: PathBuf,
    index: usize,
    search: Option<&str>,
) -> PyResult<String> {
    let choice = choice(py, search)?;
    let plan = Plan::load(&path, choice).map_err(|e| sweep_error(py, &e))?;
    let never = AtomicBool::new(false);
    let row = py
        .allow_threads(|| run_alone(&plan, index, traces(), &never))
        .map_err(|e| sweep_error(py, &e))?;
    Ok(row.to_line(&plan, None))
}
