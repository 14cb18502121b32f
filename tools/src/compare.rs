//! `poolc compare` as a library: the reports of several specs replayed on one workload,
//! side by side — one row per figure, one column per spec, the best of each row marked.
//! It only reads reports (the replays are `tools::run`'s) and renders text; it never
//! prints.

use std::fmt::Write;

use poolrt::host::Report;

/// Which end of a row is best.
#[derive(Clone, Copy)]
enum Best {
    Most,
    Least,
}

/// One row: its name, how to read it from a report, how to show it, what is best.
struct Row {
    name: &'static str,
    value: fn(&Report) -> Option<f64>,
    show: fn(f64) -> String,
    best: Best,
}

fn seconds(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1} s")
    } else {
        format!("{:.1} ms", v * 1000.0)
    }
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

fn percent(v: f64) -> String {
    format!("{:.2} %", v * 100.0)
}

fn rate(v: f64) -> String {
    format!("{v:.1}")
}

macro_rules! latency {
    ($name:literal, $field:ident, $p:ident) => {
        Row {
            name: $name,
            value: |r| r.$field.$p,
            show: seconds,
            best: Best::Least,
        }
    };
}

const ROWS: [Row; 15] = [
    Row {
        name: "finished",
        value: |r| Some(r.finished as f64),
        show: count,
        best: Best::Most,
    },
    Row {
        name: "rejected",
        value: |r| Some(r.rejected as f64),
        show: count,
        best: Best::Least,
    },
    latency!("ttft p50", ttft, p50),
    latency!("ttft p90", ttft, p90),
    latency!("ttft p99", ttft, p99),
    latency!("itl p50", itl, p50),
    latency!("itl p90", itl, p90),
    latency!("itl p99", itl, p99),
    latency!("e2e p50", e2e, p50),
    latency!("e2e p90", e2e, p90),
    latency!("e2e p99", e2e, p99),
    Row {
        name: "output tokens/s",
        value: |r| Some(r.tokens_per_second),
        show: rate,
        best: Best::Most,
    },
    Row {
        name: "prefix hits",
        value: |r| r.hit_rate,
        show: percent,
        best: Best::Most,
    },
    Row {
        name: "tier hits",
        value: |r| r.tier_hit_rate,
        show: percent,
        best: Best::Most,
    },
    Row {
        name: "preemptions",
        value: |r| Some(r.preemptions as f64),
        show: count,
        best: Best::Least,
    },
];

/// The side-by-side table of `reports` (each with its column's name): a `*` marks
/// the best value of each row (every one of them on a tie; none when the row has a
/// single value or all are equal), `-` a figure a report does not have.
pub fn table(reports: &[(String, Report)]) -> String {
    let mut cells: Vec<Vec<String>> = Vec::new();
    for row in &ROWS {
        let values: Vec<Option<f64>> = reports.iter().map(|(_, r)| (row.value)(r)).collect();
        let known: Vec<f64> = values.iter().flatten().copied().collect();
        let best = match row.best {
            Best::Most => known.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Best::Least => known.iter().copied().fold(f64::INFINITY, f64::min),
        };
        let differ = known.iter().any(|&v| v != best);
        cells.push(
            values
                .iter()
                .map(|v| match v {
                    None => "-".to_string(),
                    Some(x) if differ && *x == best => format!("{} *", (row.show)(*x)),
                    Some(x) => (row.show)(*x),
                })
                .collect(),
        );
    }
    let name_width = ROWS.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let widths: Vec<usize> = reports
        .iter()
        .enumerate()
        .map(|(c, (name, _))| {
            cells
                .iter()
                .filter_map(|row| row.get(c))
                .map(|s| s.chars().count())
                .chain(std::iter::once(name.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(out, "{:name_width$}", "");
    for ((name, _), w) in reports.iter().zip(&widths) {
        let _ = write!(out, "  {name:>w$}");
    }
    out.push('\n');
    for (row, values) in ROWS.iter().zip(&cells) {
        let _ = write!(out, "{:name_width$}", row.name);
        for (v, w) in values.iter().zip(&widths) {
            let _ = write!(out, "  {v:>w$}");
        }
        out.push('\n');
    }
    out
}
