//! Running one point (docs/SWEEP.md, "Capacity search"): its replays through
//! `tools::run` (the workload at the point's rate scale, exactly as `poolc run
//! --rate-scale` scales it), its metrics and SLOs, and with a capacity search the
//! bisection over the search's lattice of scales. Both backends call [`measure`]
//! (the local one from its threads, the Ray one through the Python package), so a
//! point's row is the same whichever runs it. The wall seconds of the row are the one
//! clock reading here; they decide nothing. It never writes a file.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use poolrt::host::HostError;
use poolrt::trace::Workload;

use super::grid::Search;
use super::metrics;
use super::plan::{Plan, Point};
use super::results::{Bound, Found, Row};
use super::{PointError, SweepError};
use crate::run::{self, RunError, Watch};
use poolc::Compiled;

/// What one replay measured: the metrics' texts and whether every SLO held.
struct Measured {
    metrics: Vec<String>,
    met: bool,
}

/// Runs `point` of `plan` with its compiled spec on its (unscaled) workload. A set
/// `stop` ends the replay under way with [`SweepError::Interrupted`].
pub fn measure(
    plan: &Plan,
    point: &Point,
    compiled: &Compiled,
    workload: &Workload,
    stop: &AtomicBool,
) -> Result<Row, SweepError> {
    let wall = Instant::now();
    let once = |scale: f64| replay(plan, point, compiled, workload, scale, stop);
    let (search, measured) = match (&plan.search, point.rate_scale) {
        (Some(s), _) => {
            let (found, m) = bisect(s, once)?;
            (Some(found), m)
        }
        (None, Some(scale)) => (None, once(scale)?),
        (None, None) => (None, once(1.0)?),
    };
    let slo_met = (!plan.grid.slos.is_empty()).then_some(measured.met);
    Ok(Row {
        point: point.index,
        search,
        metrics: measured.metrics,
        slo_met,
        wall_seconds: wall.elapsed().as_secs_f64(),
    })
}

/// The capacity search: the largest lattice scale `from + k * tolerance` (up to
/// `to`) at which `meets` holds, by bisection between a scale that meets the SLOs
/// and one that does not. With SLOs that hold at every scale below one that breaks
/// them (the usual shape: more load, more latency) it is the scale a scan of every
/// lattice scale from the bottom finds.
fn bisect<F>(s: &Search, mut once: F) -> Result<(Found, Measured), SweepError>
where
    F: FnMut(f64) -> Result<Measured, SweepError>,
{
    let first = once(s.scale(0))?;
    let mut runs = 1;
    if !first.met {
        let found = Found {
            k: None,
            bound: Bound::Below,
            runs,
        };
        return Ok((found, first));
    }
    let top = s.steps();
    if top == 0 {
        let found = Found {
            k: Some(0),
            bound: Bound::Upper,
            runs,
        };
        return Ok((found, first));
    }
    let last = once(s.scale(top))?;
    runs += 1;
    if last.met {
        let found = Found {
            k: Some(top),
            bound: Bound::Upper,
            runs,
        };
        return Ok((found, last));
    }
    // Invariant: `lo` meets the SLOs, `hi` does not.
    let (mut lo, mut hi, mut at_lo) = (0u64, top, first);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let m = once(s.scale(mid))?;
        runs += 1;
        if m.met {
            lo = mid;
            at_lo = m;
        } else {
            hi = mid;
        }
    }
    let found = Found {
        k: Some(lo),
        bound: Bound::Inside,
        runs,
    };
    Ok((found, at_lo))
}

fn replay(
    plan: &Plan,
    point: &Point,
    compiled: &Compiled,
    workload: &Workload,
    scale: f64,
    stop: &AtomicBool,
) -> Result<Measured, SweepError> {
    let scaled;
    let workload = if scale == 1.0 {
        workload
    } else {
        let mut w = workload.clone();
        w.scale_rate(scale);
        scaled = w;
        &scaled
    };
    let watch = Watch {
        exact_percentiles: plan.grid.exact_percentiles,
        ..Watch::default()
    };
    let report = match run::replay_until(compiled, workload, watch, stop) {
        Ok(r) => r,
        Err(RunError::Host(HostError::Interrupted)) => return Err(SweepError::Interrupted),
        // A capacity search drives the spec into overload on purpose: a scale at
        // which it stops making progress meets no SLO (docs/SWEEP.md), and has no
        // metrics. Without a search the point fails the sweep, below.
        Err(RunError::Host(HostError::Deadlock { .. } | HostError::NoProgress { .. }))
            if plan.search.is_some() =>
        {
            return Ok(Measured {
                metrics: vec!["null".to_string(); plan.grid.metrics.len()],
                met: false,
            });
        }
        Err(e) => {
            return Err(SweepError::Run {
                point: point.index,
                label: plan.label(point),
                error: PointError::Replay {
                    scale,
                    error: Arc::new(e),
                },
            });
        }
    };
    let texts = metrics::values(&report, &plan.grid.metrics).map_err(|e| SweepError::Run {
        point: point.index,
        label: plan.label(point),
        error: PointError::Encode(Arc::new(e)),
    })?;
    let met = plan.grid.slos.iter().all(|slo| {
        let at = plan.grid.metrics.iter().position(|m| *m == slo.metric);
        let value = at
            .and_then(|i| texts.get(i))
            .and_then(|t| metrics::number(t));
        slo.holds(value)
    });
    Ok(Measured {
        metrics: texts,
        met,
    })
}
