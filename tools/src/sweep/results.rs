//! A sweep's outputs (docs/SWEEP.md, "Outputs" and "Resume"): the [`Row`] of one
//! finished point, its line in results.jsonl, and results.csv. results.jsonl is a
//! stream: each finished point is appended as one line and flushed at once, so an
//! interrupted sweep keeps every row it finished; a last line without its newline
//! was cut off mid-write and is dropped (and cut from the file) by `--resume`.
//! results.csv is written whole through [`AtomicFile`], rows sorted by point index.
//! Every number of a row is kept as the JSON text the report gave (a metric is
//! byte for byte what `poolc run --json` prints), so reading a line back never
//! rounds. Nothing here runs a point or prints.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

use super::SweepError;
use super::plan::{Plan, show};
use poolc::atomic_file::AtomicFile;

/// results.jsonl's name in the output folder.
pub const JSONL: &str = "results.jsonl";
/// results.csv's name in the output folder.
pub const CSV: &str = "results.csv";

/// Where a capacity search's answer lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The scale meets the SLOs and the next lattice scale does not.
    Inside,
    /// Even the search's `to` meets them: the capacity may be higher.
    Upper,
    /// Not even its `from` meets them.
    Below,
}

impl Bound {
    pub fn word(self) -> &'static str {
        match self {
            Bound::Inside => "inside",
            Bound::Upper => "upper",
            Bound::Below => "below",
        }
    }

    fn from_word(w: &str) -> Option<Bound> {
        match w {
            "inside" => Some(Bound::Inside),
            "upper" => Some(Bound::Upper),
            "below" => Some(Bound::Below),
            _ => None,
        }
    }
}

/// What a capacity search found for one point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The lattice index of the largest scale that met every SLO (`None`: none did).
    pub k: Option<u64>,
    pub bound: Bound,
    /// Replays the search took.
    pub runs: u32,
}

/// One finished point.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub point: usize,
    /// With a capacity search, what it found; the metrics are measured at the scale
    /// found (or at the search's `from` when none met the SLOs).
    pub search: Option<Found>,
    /// The plan's metrics, each as its JSON text (`null` when the report has none).
    pub metrics: Vec<String>,
    /// Whether every SLO held (`None`: the grid has no SLO).
    pub slo_met: Option<bool>,
    /// The one figure that varies between identical runs.
    pub wall_seconds: f64,
}

fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn json_f64(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}

impl Row {
    /// The row as one line of JSON (no newline): the coordinates for people (and
    /// tools) to read, then what was measured. `fingerprint` ties it to its plan.
    pub fn to_line(&self, plan: &Plan, fingerprint: Option<&str>) -> String {
        let mut s = String::from("{");
        if let Some(f) = fingerprint {
            let _ = write!(s, "\"fingerprint\":{},", json_str(f));
        }
        let _ = write!(s, "\"point\":{}", self.point);
        if let Some(p) = plan.point(self.point) {
            let combo = plan.combos.get(p.combo);
            let spec = combo.and_then(|c| plan.grid.specs.get(c.spec));
            let _ = write!(s, ",\"spec\":{}", json_str(spec.map_or("", |x| &x.name)));
            s.push_str(",\"params\":{");
            for (i, (name, value)) in combo.iter().flat_map(|c| &c.set).enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(s, "{sep}{}:{}", json_str(name), json_f64(*value));
            }
            s.push('}');
            let trace = plan.grid.traces.get(p.trace).map_or("", |t| &t.name);
            let _ = write!(s, ",\"trace\":{}", json_str(trace));
            let scale = self.rate_scale(plan);
            let _ = write!(
                s,
                ",\"rate_scale\":{}",
                scale.map_or("null".into(), json_f64)
            );
        }
        if let Some(f) = &self.search {
            let max =
                f.k.and_then(|k| plan.search.as_ref().map(|s| s.scale(k)))
                    .map_or("null".into(), json_f64);
            let k = f.k.map_or("null".into(), |k| k.to_string());
            let _ = write!(
                s,
                ",\"search\":{{\"max_rate_scale\":{max},\"k\":{k},\"bound\":{},\"runs\":{}}}",
                json_str(f.bound.word()),
                f.runs
            );
        }
        s.push_str(",\"metrics\":{");
        for (i, (m, v)) in plan.grid.metrics.iter().zip(&self.metrics).enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(s, "{sep}{}:{v}", json_str(m.name));
        }
        s.push('}');
        if let Some(met) = self.slo_met {
            let _ = write!(s, ",\"slo_met\":{met}");
        }
        let _ = write!(s, ",\"wall_seconds\":{}}}", json_f64(self.wall_seconds));
        s
    }

    /// The scale the metrics were measured at: the point's, or with a search the
    /// one found (its `from` when none met the SLOs).
    pub fn rate_scale(&self, plan: &Plan) -> Option<f64> {
        let point = plan.point(self.point)?;
        match (&self.search, &plan.search) {
            (Some(f), Some(s)) => Some(s.scale(f.k.unwrap_or(0))),
            _ => point.rate_scale,
        }
    }

    /// Reads a line [`Row::to_line`] wrote for `plan`; `fingerprint`, when given,
    /// must be the line's. The coordinates are the plan's (the point index names
    /// them); the measured values are taken as written.
    pub fn from_line(plan: &Plan, line: &str, fingerprint: Option<&str>) -> Result<Row, RowError> {
        let fields: BTreeMap<String, &RawValue> =
            serde_json::from_str(line).map_err(|e| RowError::NotJson(Arc::new(e)))?;
        let get = |name: &'static str| fields.get(name).copied().ok_or(RowError::Missing(name));
        if let Some(want) = fingerprint {
            let got: String = serde_json::from_str(get("fingerprint")?.get())
                .map_err(|_| RowError::NotA("fingerprint", "a string"))?;
            if got != want {
                return Err(RowError::OtherGrid {
                    got,
                    want: want.to_owned(),
                });
            }
        }
        let point: usize = serde_json::from_str(get("point")?.get())
            .map_err(|_| RowError::NotA("point", "a point number"))?;
        if plan.point(point).is_none() {
            return Err(RowError::NoSuchPoint(point));
        }
        let metrics: BTreeMap<String, &RawValue> = serde_json::from_str(get("metrics")?.get())
            .map_err(|_| RowError::NotA("metrics", "an object"))?;
        let metrics = plan
            .grid
            .metrics
            .iter()
            .map(|m| {
                let v = metrics.get(m.name).ok_or(RowError::MissingMetric(m.name))?;
                let text = v.get();
                if text == "null" || super::metrics::number(text).is_some() {
                    Ok(text.to_string())
                } else {
                    Err(RowError::MetricNotANumber(m.name))
                }
            })
            .collect::<Result<Vec<_>, RowError>>()?;
        let search = match (fields.get("search"), &plan.search) {
            (None, None) => None,
            (Some(raw), Some(_)) => {
                let f: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get())
                    .map_err(|_| RowError::NotA("search", "an object"))?;
                let field = |n: &'static str| {
                    f.get(n)
                        .map(|r| r.get())
                        .ok_or(RowError::MissingInSearch(n))
                };
                let k: Option<u64> = serde_json::from_str(field("k")?)
                    .map_err(|_| RowError::NotA("search.k", "a lattice index"))?;
                let bound: String = serde_json::from_str(field("bound")?)
                    .map_err(|_| RowError::NotA("search.bound", "a string"))?;
                let bound = Bound::from_word(&bound).ok_or(RowError::UnknownBound(bound))?;
                let runs: u32 = serde_json::from_str(field("runs")?)
                    .map_err(|_| RowError::NotA("search.runs", "a count"))?;
                Some(Found { k, bound, runs })
            }
            (None, Some(_)) => return Err(RowError::Missing("search")),
            (Some(_), None) => return Err(RowError::UnexpectedSearch),
        };
        let slo_met = match fields.get("slo_met") {
            None => None,
            Some(raw) => Some(
                serde_json::from_str::<bool>(raw.get())
                    .map_err(|_| RowError::NotA("slo_met", "true or false"))?,
            ),
        };
        if slo_met.is_some() == plan.grid.slos.is_empty() {
            return Err(RowError::SloMetMismatch);
        }
        let wall_seconds = get("wall_seconds")?
            .get()
            .parse::<f64>()
            .map_err(|_| RowError::NotA("wall_seconds", "a number"))?;
        Ok(Row {
            point,
            search,
            metrics,
            slo_met,
            wall_seconds,
        })
    }
}

/// Why a line of results.jsonl is not a row of this grid.
#[derive(Clone, Debug)]
pub enum RowError {
    /// The line is not a JSON object.
    NotJson(Arc<serde_json::Error>),
    /// A field the row must have is absent.
    Missing(&'static str),
    /// A field of `search` is absent.
    MissingInSearch(&'static str),
    /// A field holds something else than (field, what it must be).
    NotA(&'static str, &'static str),
    /// The row was written for a grid with another fingerprint.
    OtherGrid { got: String, want: String },
    /// The point number is not one of the grid's.
    NoSuchPoint(usize),
    /// A metric the grid collects is absent.
    MissingMetric(&'static str),
    /// A metric's value is neither a number nor null.
    MetricNotANumber(&'static str),
    /// `search.bound` is not a bound's word.
    UnknownBound(String),
    /// The row has a `search` and the plan searches nothing.
    UnexpectedSearch,
    /// `slo_met` is present without SLOs, or absent with them.
    SloMetMismatch,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowError::NotJson(e) => write!(f, "not a row: {e}"),
            RowError::Missing(name) => write!(f, "the row has no `{name}`"),
            RowError::MissingInSearch(name) => write!(f, "`search` has no `{name}`"),
            RowError::NotA(name, what) => write!(f, "`{name}` is not {what}"),
            RowError::OtherGrid { got, want } => write!(
                f,
                "it was written for another grid (fingerprint {got}, this grid's is {want})"
            ),
            RowError::NoSuchPoint(point) => write!(f, "point {point} is not a point of the grid"),
            RowError::MissingMetric(name) => write!(f, "the row has no metric `{name}`"),
            RowError::MetricNotANumber(name) => write!(f, "metric `{name}` is not a number"),
            RowError::UnknownBound(word) => write!(f, "`search.bound` `{word}` is unknown"),
            RowError::UnexpectedSearch => write!(f, "the row has a `search` the plan has not"),
            RowError::SloMetMismatch => {
                write!(f, "`slo_met` is there if and only if the grid has SLOs")
            }
        }
    }
}

impl std::error::Error for RowError {}

/// The output folder of a sweep: results.jsonl open for appending, the rows it
/// holds, and results.csv written from them.
pub struct Output {
    dir: PathBuf,
    jsonl: File,
    fingerprint: String,
    rows: BTreeMap<usize, Row>,
    resumed: usize,
}

impl Output {
    /// Opens (creating) `dir` and its results.jsonl. Without `resume` the file starts
    /// empty; with it, its complete lines of this plan are kept (a cut-off last line
    /// is dropped from the file), and their points are not run again.
    pub fn open(
        dir: &Path,
        plan: &Plan,
        fingerprint: &str,
        resume: bool,
    ) -> Result<Output, SweepError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |error| SweepError::Output {
                path,
                error: std::sync::Arc::new(error),
            }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(JSONL);
        let mut rows = BTreeMap::new();
        if resume && path.exists() {
            let mut text = String::new();
            File::open(&path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(io(&path))?;
            // Every complete line ends with a newline; what follows the last one
            // was cut off by an interruption.
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            let (whole, _cut) = text.split_at(complete);
            for (n, line) in whole.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let row = Row::from_line(plan, line, Some(fingerprint)).map_err(|message| {
                    SweepError::Resume {
                        path: path.clone(),
                        line: n + 1,
                        message,
                    }
                })?;
                rows.entry(row.point).or_insert(row);
            }
            if complete < text.len() {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(io(&path))?;
                f.set_len(complete as u64).map_err(io(&path))?;
            }
        }
        let mut options = OpenOptions::new();
        options.create(true);
        if resume {
            options.append(true);
        } else {
            options.write(true).truncate(true);
        }
        let jsonl = options.open(&path).map_err(io(&path))?;
        let resumed = rows.len();
        Ok(Output {
            dir: dir.to_path_buf(),
            jsonl,
            fingerprint: fingerprint.to_string(),
            rows,
            resumed,
        })
    }

    /// The points not yet finished, in index order.
    pub fn pending(&self, plan: &Plan) -> Vec<usize> {
        (0..plan.points.len())
            .filter(|i| !self.rows.contains_key(i))
            .collect()
    }

    /// How many rows `--resume` kept.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// The rows, sorted by point.
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.values()
    }

    /// Appends a finished point's line and flushes it to the file at once.
    pub fn append(&mut self, plan: &Plan, row: Row) -> Result<(), SweepError> {
        let mut line = row.to_line(plan, Some(&self.fingerprint));
        line.push('\n');
        // One write of the whole line: an interruption leaves at most this line cut.
        self.jsonl
            .write_all(line.as_bytes())
            .and_then(|()| self.jsonl.flush())
            .map_err(|error| SweepError::Output {
                path: self.dir.join(JSONL),
                error: std::sync::Arc::new(error),
            })?;
        self.rows.insert(row.point, row);
        Ok(())
    }

    /// Writes results.csv (whole, or not at all) from every row held.
    pub fn write_csv(&self, plan: &Plan) -> Result<PathBuf, SweepError> {
        let path = self.dir.join(CSV);
        let text = csv(plan, self.rows.values());
        let write = || -> std::io::Result<()> {
            let mut f = AtomicFile::create(&path)?;
            f.write_all(text.as_bytes())?;
            f.commit()
        };
        write().map_err(|error| SweepError::Output {
            path: path.clone(),
            error: std::sync::Arc::new(error),
        })?;
        Ok(path)
    }
}

/// A CSV cell, quoted when it holds a comma, a quote or a line break.
fn cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The header of results.csv.
pub fn header(plan: &Plan) -> Vec<String> {
    let mut h = vec!["point".to_string(), "spec".to_string()];
    h.extend(plan.params.iter().cloned());
    h.push("trace".into());
    if plan.search.is_some() {
        h.extend(["max_rate_scale", "search_bound", "search_runs"].map(String::from));
    } else {
        h.push("rate_scale".into());
    }
    h.extend(plan.grid.metrics.iter().map(|m| m.name.to_string()));
    if !plan.grid.slos.is_empty() {
        h.push("slo_met".into());
    }
    h.push("wall_seconds".into());
    h
}

/// results.csv's text: the header, then one line per row in the order given.
/// Numbers are as the report's JSON wrote them; a missing value is an empty cell.
pub fn csv<'a>(plan: &Plan, rows: impl Iterator<Item = &'a Row>) -> String {
    let mut out = header(plan)
        .iter()
        .map(|h| cell(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in rows {
        let Some(point) = plan.point(row.point) else {
            continue;
        };
        let combo = plan.combos.get(point.combo);
        let mut cells = vec![row.point.to_string()];
        let spec = combo.and_then(|c| plan.grid.specs.get(c.spec));
        cells.push(cell(spec.map_or("", |s| &s.name)));
        for name in &plan.params {
            let v = combo.and_then(|c| c.set.iter().find(|(n, _)| n == name));
            cells.push(v.map_or(String::new(), |(_, v)| show(*v)));
        }
        let trace = plan.grid.traces.get(point.trace).map_or("", |t| &t.name);
        cells.push(cell(trace));
        match (&row.search, &plan.search) {
            (Some(f), Some(s)) => {
                cells.push(f.k.map_or(String::new(), |k| show(s.scale(k))));
                cells.push(f.bound.word().to_string());
                cells.push(f.runs.to_string());
            }
            _ => cells.push(point.rate_scale.map_or(String::new(), show)),
        }
        for v in &row.metrics {
            cells.push(if v == "null" {
                String::new()
            } else {
                v.clone()
            });
        }
        if let Some(met) = row.slo_met {
            cells.push(met.to_string());
        }
        cells.push(format!("{:.3}", row.wall_seconds));
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}
