//! What `poolc fit` shows: the stage block (a step stage whose `time` is the fitted
//! expression, with `budget` and `seats` from the step log's header), the plain-text
//! report and the `--json` one (docs/LATENCY.md documents both). Numbers are written
//! as the AST printer writes them, which read back as the same f64, and percentages
//! and R² at fixed decimals, so the same fit is the same bytes. It formats only: it
//! computes nothing and never prints.

use std::fmt::Write;

use serde::Serialize;

use super::model::number;
use super::steps::Header;
use super::{Accuracy, Fit, StageName};

/// The `format` of the `--json` object.
pub const JSON_FORMAT: &str = "poolc-fit/1";

/// `stage NAME { step; budget …; seats …; time (…); }`, with a comment in place of
/// an option the header does not give.
pub fn stage_block(stage: &StageName, header: &Header, fitted_time: &str) -> String {
    let option = |word: &str, value: Option<u64>, fact: &str| match value {
        Some(v) => format!("  {word} {v};\n"),
        None => format!("  // {word} N;  (the step log's header has no {fact}: set it)\n"),
    };
    format!(
        "stage {} {{\n  step;\n{}{}  time ({fitted_time});\n}}\n",
        stage.as_str(),
        option(
            "budget",
            header.max_num_batched_tokens,
            "max_num_batched_tokens"
        ),
        option("seats", header.max_num_seqs, "max_num_seqs"),
    )
}

/// The plain-text report.
pub fn text(fit: &Fit) -> String {
    let mut out = String::new();
    let empty = match fit.empty_steps {
        0 => String::new(),
        1 => " (1 step with no request skipped)".to_string(),
        n => format!(" ({n} steps with no request skipped)"),
    };
    let _ = writeln!(
        out,
        "poolc fit: {} iterations of {}{empty}",
        fit.overall.iterations, fit.steps
    );
    for (fact, value) in fit.header.facts() {
        let _ = writeln!(out, "{fact}: {value}");
    }
    let _ = writeln!(out, "time ({})", fit.time.trim());
    out.push('\n');

    let width = fit
        .values
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max("unknown".len());
    let _ = writeln!(out, "{:<width$}  value", "unknown");
    for (name, value) in &fit.values {
        let _ = writeln!(out, "{name:<width$}  {}", number(*value));
    }
    out.push('\n');

    let _ = writeln!(
        out,
        "{:<13}  {:>10}  {:>9}  {:>9}",
        "regime", "iterations", "MAPE", "R²"
    );
    let rows = std::iter::once(("all", fit.overall))
        .chain(fit.regimes.iter().map(|(r, a)| (r.name(), *a)));
    for (name, a) in rows {
        let _ = writeln!(out, "{}", accuracy_row(name, &a));
    }

    if !fit.notes.is_empty() {
        out.push('\n');
        for note in &fit.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
    out.push('\n');
    out.push_str(&fit.stage);
    out
}

fn accuracy_row(name: &str, a: &Accuracy) -> String {
    let Some(mape) = a.mape_percent else {
        return format!("{name:<13}  {:>10}  (no iterations)", 0);
    };
    let r2 = a.r2.map_or("n/a".to_string(), |r| format!("{r:.4}"));
    format!(
        "{name:<13}  {:>10}  {:>7} %  {r2:>9}",
        a.iterations,
        format!("{mape:.2}")
    )
}

#[derive(Serialize)]
struct Json<'a> {
    format: &'static str,
    steps: &'a str,
    header: &'a Header,
    time: &'a str,
    iterations: usize,
    empty_steps: usize,
    unknowns: Vec<JsonUnknown<'a>>,
    regimes: Vec<JsonRegime>,
    notes: Vec<String>,
    fitted_time: &'a str,
    stage: &'a str,
}

#[derive(Serialize)]
struct JsonUnknown<'a> {
    name: &'a str,
    value: f64,
}

#[derive(Serialize)]
struct JsonRegime {
    regime: &'static str,
    iterations: usize,
    mape_percent: Option<f64>,
    r2: Option<f64>,
}

/// The `--json` report, one object, keys in a fixed order.
pub fn json(fit: &Fit) -> Result<String, serde_json::Error> {
    let regime = |name, a: &Accuracy| JsonRegime {
        regime: name,
        iterations: a.iterations,
        mape_percent: a.mape_percent,
        r2: a.r2,
    };
    let report = Json {
        format: JSON_FORMAT,
        steps: &fit.steps,
        header: &fit.header,
        time: fit.time.trim(),
        iterations: fit.overall.iterations,
        empty_steps: fit.empty_steps,
        unknowns: fit
            .values
            .iter()
            .map(|(name, value)| JsonUnknown {
                name,
                value: *value,
            })
            .collect(),
        regimes: std::iter::once(regime("all", &fit.overall))
            .chain(fit.regimes.iter().map(|(r, a)| regime(r.name(), a)))
            .collect(),
        notes: fit.notes.iter().map(|n| n.to_string()).collect(),
        fitted_time: &fit.fitted_time,
        stage: &fit.stage,
    };
    let mut text = serde_json::to_string_pretty(&report)?;
    text.push('\n');
    Ok(text)
}
