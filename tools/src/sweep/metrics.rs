//! The figures a sweep can collect, compare and bound: a fixed catalogue of the
//! report's numeric fields under flat names (`ttft_p99` is the report's
//! `ttft.p99`), which end of each is best, and how a metric's value is read from a
//! report as JSON text, so that a sweep's cell is byte for byte what `poolc run
//! --json` prints for the same replay. It never runs a replay and never parses a grid.

use poolrt::host::Report;

/// Which end of a metric is best.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Best {
    Most,
    Least,
}

impl Best {
    /// Whether `a` is strictly better than `b`.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Best::Most => a > b,
            Best::Least => a < b,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Best::Most => "most",
            Best::Least => "least",
        }
    }
}

/// A metric of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// The flat name a grid uses and a results column is headed with.
    pub name: &'static str,
    /// The report's field, and for the latency distributions the percentile within it.
    field: &'static str,
    within: Option<&'static str>,
    pub best: Best,
}

macro_rules! top {
    ($name:literal, $best:ident) => {
        Metric {
            name: $name,
            field: $name,
            within: None,
            best: Best::$best,
        }
    };
}

macro_rules! dist {
    ($name:literal, $field:literal, $p:literal) => {
        Metric {
            name: $name,
            field: $field,
            within: Some($p),
            best: Best::Least,
        }
    };
}

/// Every metric a grid may name, in the order docs/SWEEP.md lists them.
pub const CATALOGUE: [Metric; 38] = [
    top!("sessions", Most),
    top!("finished", Most),
    top!("rejected", Least),
    top!("unfinished", Least),
    top!("sim_seconds", Least),
    top!("output_tokens", Most),
    top!("tokens_per_second", Most),
    top!("computed_tokens", Least),
    dist!("ttft_mean", "ttft", "mean"),
    dist!("ttft_p50", "ttft", "p50"),
    dist!("ttft_p90", "ttft", "p90"),
    dist!("ttft_p99", "ttft", "p99"),
    dist!("itl_mean", "itl", "mean"),
    dist!("itl_p50", "itl", "p50"),
    dist!("itl_p90", "itl", "p90"),
    dist!("itl_p99", "itl", "p99"),
    dist!("e2e_mean", "e2e", "mean"),
    dist!("e2e_p50", "e2e", "p50"),
    dist!("e2e_p90", "e2e", "p90"),
    dist!("e2e_p99", "e2e", "p99"),
    top!("hit_rate", Most),
    top!("tier_hit_rate", Most),
    top!("admissions", Least),
    top!("preemptions", Least),
    top!("evictions", Least),
    top!("spills", Least),
    top!("tier_loads", Least),
    Metric {
        name: "ttft_count",
        field: "ttft",
        within: Some("count"),
        best: Best::Most,
    },
    Metric {
        name: "itl_count",
        field: "itl",
        within: Some("count"),
        best: Best::Most,
    },
    Metric {
        name: "e2e_count",
        field: "e2e",
        within: Some("count"),
        best: Best::Most,
    },
    // R27: the mean TTFT of handed-off sessions in parts, and how busy each side and
    // the links were (`null` for a spec that does not hand off).
    dist!("handoff_queue", "handoff", "queue"),
    dist!("handoff_prefill", "handoff", "prefill"),
    dist!("handoff_decode_queue", "handoff", "decode_queue"),
    dist!("handoff_transfer", "handoff", "transfer"),
    dist!("handoff_first_decode", "handoff", "first_decode"),
    dist!("prefill_busy", "handoff", "prefill_busy"),
    dist!("decode_busy", "handoff", "decode_busy"),
    dist!("link_busy", "handoff", "link_busy"),
];

/// The metrics a grid collects when it names none.
pub const DEFAULT_METRICS: [&str; 6] = [
    "finished",
    "ttft_p50",
    "ttft_p99",
    "e2e_p90",
    "tokens_per_second",
    "preemptions",
];

/// The pseudo-metric of a capacity search: the largest rate scale that meets every
/// SLO. It is a column of its own, not a report field.
pub const MAX_RATE_SCALE: Metric = Metric {
    name: "max_rate_scale",
    field: "",
    within: None,
    best: Best::Most,
};

/// The catalogue's metric named `name`.
pub fn find(name: &str) -> Option<Metric> {
    CATALOGUE.iter().copied().find(|m| m.name == name)
}

/// The catalogue's names, for "did you mean" and error notes.
pub fn names() -> impl Iterator<Item = &'static str> {
    CATALOGUE.iter().map(|m| m.name)
}

/// Each metric's value in `report`, as the JSON text `poolc run --json` prints for
/// it (`null` for a figure the report does not have, such as a percentile of no
/// sample).
pub fn values(report: &Report, metrics: &[Metric]) -> Result<Vec<String>, serde_json::Error> {
    let json = serde_json::to_value(report)?;
    Ok(metrics
        .iter()
        .map(|m| {
            let field = json.get(m.field);
            let value = match m.within {
                None => field,
                Some(p) => field.and_then(|f| f.get(p)),
            };
            value.map_or_else(|| "null".to_string(), serde_json::Value::to_string)
        })
        .collect())
}

/// A metric's JSON text as a number (`None` for `null` or anything not a number).
/// Rust's parser rounds correctly, so the number is the one the report held.
pub fn number(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}
