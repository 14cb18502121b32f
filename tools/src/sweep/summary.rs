//! The summary a sweep prints (docs/SWEEP.md, "Summary"): per metric the best
//! point, the points that meet every SLO, and the Pareto front of two metrics. It
//! reads finished rows and renders text; ties go to the lowest point index, so the
//! text depends on the rows alone (not on the order they finished in). It never
//! runs or prints anything.

use std::fmt::Write;

use super::metrics::{self, Best, MAX_RATE_SCALE, Metric};
use super::plan::Plan;
use super::results::Row;

/// At most this many points are listed under a heading; results.csv has them all.
pub const LISTED: usize = 20;

/// A row's value of `m` (`max_rate_scale` included).
fn value(plan: &Plan, row: &Row, m: Metric) -> Option<f64> {
    if m == MAX_RATE_SCALE {
        let s = plan.search.as_ref()?;
        return row.search.as_ref()?.k.map(|k| s.scale(k));
    }
    let i = plan.grid.metrics.iter().position(|x| *x == m)?;
    row.metrics.get(i).and_then(|t| metrics::number(t))
}

/// A value as a row holds it: the report's text, or the scale found.
fn shown(plan: &Plan, row: &Row, m: Metric) -> String {
    if m == MAX_RATE_SCALE {
        return value(plan, row, m).map_or("-".into(), super::plan::show);
    }
    plan.grid
        .metrics
        .iter()
        .position(|x| *x == m)
        .and_then(|i| row.metrics.get(i))
        .filter(|t| *t != "null")
        .map(|t| readable(t))
        .unwrap_or_else(|| "-".into())
}

/// A metric as a person reads it: four significant digits for a fraction
/// (`0.4680053000000015` → `0.468`), an integer as it is. The rows keep the exact
/// text; only the summary rounds.
fn readable(text: &str) -> String {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v.fract() != 0.0 => {
            let digits = 3 - v.abs().log10().floor() as i32;
            let s = format!("{v:.*}", digits.clamp(0, 12) as usize);
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        }
        _ => text.to_string(),
    }
}

fn label(plan: &Plan, row: &Row) -> String {
    plan.point(row.point)
        .map_or_else(String::new, |p| plan.label(p))
}

/// The points on the Pareto front of `a` and `b` among `rows`: those no other row
/// beats in one metric without being worse in the other. Rows missing either value
/// are left out. Sorted by point index.
pub fn pareto<'r>(plan: &Plan, rows: &[&'r Row], a: Metric, b: Metric) -> Vec<&'r Row> {
    let mut known: Vec<(f64, f64, &Row)> = rows
        .iter()
        .filter_map(|r| Some((value(plan, r, a)?, value(plan, r, b)?, *r)))
        .collect();
    // Best `a` first; within equal `a`, best `b` first.
    let order = |best: Best, x: f64, y: f64| match best {
        Best::Most => y.total_cmp(&x),
        Best::Least => x.total_cmp(&y),
    };
    known.sort_by(|x, y| {
        order(a.best, x.0, y.0)
            .then(order(b.best, x.1, y.1))
            .then(x.2.point.cmp(&y.2.point))
    });
    let mut front = Vec::new();
    let mut best_b: Option<f64> = None;
    let mut i = 0;
    while let Some(&(av, _, _)) = known.get(i) {
        // One group of equal `a`: its best `b` is its first.
        let group: Vec<&(f64, f64, &Row)> = known
            .iter()
            .skip(i)
            .take_while(|(x, _, _)| *x == av)
            .collect();
        i += group.len().max(1);
        let Some(&&(_, gb, _)) = group.first() else {
            break;
        };
        if best_b.is_none_or(|bb| b.best.better(gb, bb)) {
            front.extend(
                group
                    .iter()
                    .filter(|(_, y, _)| *y == gb)
                    .map(|(_, _, r)| *r),
            );
            best_b = Some(gb);
        }
    }
    front.sort_by_key(|r| r.point);
    front
}

/// Counts shown at the top of the summary.
pub struct Counts {
    /// Points run now, and kept from an earlier run by `--resume`.
    pub run: usize,
    pub resumed: usize,
}

/// The summary of `rows` (sorted by point).
pub fn render(plan: &Plan, rows: &[&Row], counts: &Counts) -> String {
    let mut out = String::new();
    let specs = plan.grid.specs.len();
    let _ = writeln!(
        out,
        "sweep {}: {} points ({} spec{} × params, {} trace{}{}), {} run, {} resumed",
        plan.file,
        plan.points.len(),
        specs,
        if specs == 1 { "" } else { "s" },
        plan.grid.traces.len(),
        if plan.grid.traces.len() == 1 { "" } else { "s" },
        match &plan.search {
            Some(s) => format!(
                "; capacity search of the rate scale from {} to {} by {}",
                s.from, s.to, s.tolerance
            ),
            None => String::new(),
        },
        counts.run,
        counts.resumed,
    );
    if rows.len() < plan.points.len() {
        let _ = writeln!(
            out,
            "only {} of {} points have finished",
            rows.len(),
            plan.points.len()
        );
    }
    let mut listed: Vec<Metric> = Vec::new();
    if plan.search.is_some() {
        listed.push(MAX_RATE_SCALE);
    }
    listed.extend(plan.grid.metrics.iter().copied());
    let width = listed.iter().map(|m| m.name.len()).max().unwrap_or(0);
    let _ = writeln!(out, "\nbest per metric:");
    for m in &listed {
        let mut best: Option<(&Row, f64)> = None;
        for r in rows {
            if let Some(v) = value(plan, r, *m)
                && best.is_none_or(|(_, b)| m.best.better(v, b))
            {
                best = Some((r, v));
            }
        }
        match best {
            Some((r, _)) => {
                let _ = writeln!(
                    out,
                    "  {:width$}  {:7}  {:>12}  point {}: {}",
                    m.name,
                    format!("({})", m.best.word()),
                    shown(plan, r, *m),
                    r.point,
                    label(plan, r)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {:width$}  {:7}  no point has it",
                    m.name,
                    format!("({})", m.best.word())
                );
            }
        }
    }
    if !plan.grid.slos.is_empty() {
        let slos: Vec<String> = plan.grid.slos.iter().map(|s| s.text()).collect();
        let meeting: Vec<&&Row> = rows.iter().filter(|r| r.slo_met == Some(true)).collect();
        let what = if plan.search.is_some() {
            "meet them at some rate scale of the search"
        } else {
            "meet them"
        };
        let _ = writeln!(
            out,
            "\nSLOs {}: {} of {} points {what}",
            slos.join(", "),
            meeting.len(),
            rows.len()
        );
        for r in meeting.iter().take(LISTED) {
            let extra = if plan.search.is_some() {
                format!(" (max_rate_scale {})", shown(plan, r, MAX_RATE_SCALE))
            } else {
                String::new()
            };
            let _ = writeln!(out, "  point {}: {}{extra}", r.point, label(plan, r));
        }
        if meeting.len() > LISTED {
            let _ = writeln!(out, "  … and {} more (results.csv)", meeting.len() - LISTED);
        }
    }
    if let Some([a, b]) = plan.pareto() {
        let front = pareto(plan, rows, a, b);
        let _ = writeln!(
            out,
            "\nPareto front of {} ({}) and {} ({}): {} point{}",
            a.name,
            a.best.word(),
            b.name,
            b.best.word(),
            front.len(),
            if front.len() == 1 { "" } else { "s" }
        );
        for r in front.iter().take(LISTED) {
            let _ = writeln!(
                out,
                "  point {}: {}  {}={} {}={}",
                r.point,
                label(plan, r),
                a.name,
                shown(plan, r, a),
                b.name,
                shown(plan, r, b)
            );
        }
        if front.len() > LISTED {
            let _ = writeln!(out, "  … and {} more", front.len() - LISTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// The summary rounds fractions to four significant digits, never integers.
    #[test]
    fn summary_values_have_four_significant_digits() {
        let r = |t: &str| super::readable(t);
        assert_eq!(
            [
                r("0.4680053000000015"),
                r("6.60930811846174"),
                r("1003.4956080670494"),
                r("3000"),
                r("0.05"),
                r("12345.6")
            ],
            ["0.468", "6.609", "1003", "3000", "0.05", "12346"]
        );
    }
}
