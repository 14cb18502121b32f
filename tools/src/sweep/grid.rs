//! A `poolc sweep` grid file (docs/SWEEP.md, "Grid file"): TOML text to a checked
//! [`Grid`], every mistake a [`Diagnostic`] pointing at its line and column (the
//! spans the `toml` crate keeps for every key and value). It owns the file's keys and
//! what each means; it resolves spec and trace paths against the grid's folder but
//! reads no other file, runs nothing and does not expand the grid into points
//! (plan.rs does). It reports every independent mistake, not only the first.
//! This file is long because it is the whole file format: every key, its checks and
//! the wording of its diagnostics, which docs/SWEEP.md documents as one table.

use std::borrow::Cow;
use std::ops::Range;
use std::path::{Path, PathBuf};

use poolrt::trace::Format;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::metrics::{self, MAX_RATE_SCALE, Metric};
use poolc::diag::Diagnostic;
use poolc::sema::suggest;
use poolc::syntax::Span;

/// The largest grid file read (grids are hand-written; spans are `u32`).
pub const MAX_GRID_BYTES: usize = 1 << 20;
/// The most values one axis (a list or a range) may have.
pub const MAX_AXIS_VALUES: usize = 100_000;
/// The most lattice steps a capacity search may bisect over.
pub const MAX_SEARCH_STEPS: f64 = 1e6;

/// A checked grid: what to run, what to collect, what to bound.
#[derive(Clone, Debug)]
pub struct Grid {
    pub specs: Vec<SpecEntry>,
    /// Params every spec is swept over (each spec must declare them).
    pub params: Vec<Axis>,
    /// The workloads; the bundled Mooncake trace when the grid names none.
    pub traces: Vec<TraceEntry>,
    /// The arrival-rate scales (`None`: the key is absent, one scale of 1).
    pub rate_scale: Option<Axis>,
    /// The metrics collected, SLO and Pareto metrics included.
    pub metrics: Vec<Metric>,
    pub slos: Vec<Slo>,
    /// The two metrics of the summary's Pareto front, if the grid names them.
    pub pareto: Option<Pareto>,
    /// The capacity search the grid declares (`[search]`).
    pub search: Option<Search>,
    /// `exact_percentiles = true`: every replay keeps every latency and reports exact
    /// nearest-rank percentiles (`poolc run --exact`) instead of the bounded sketch's.
    pub exact_percentiles: bool,
}

/// One axis: a param (or the rate scale) and its values, in the order written.
#[derive(Clone, Debug)]
pub struct Axis {
    pub name: String,
    pub values: Vec<f64>,
    /// The key's span, for errors found later (a spec that lacks the param).
    pub span: Span,
}

/// One spec of the grid.
#[derive(Clone, Debug)]
pub struct SpecEntry {
    /// Its column value: `name`, or the file's stem.
    pub name: String,
    /// As written in the grid.
    pub written: String,
    /// Resolved against the grid's folder.
    pub path: PathBuf,
    /// Params swept for this spec only, after the grid's `[params]`.
    pub params: Vec<Axis>,
    pub span: Span,
}

/// Where a trace entry's sessions come from.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceSource {
    /// A trace file (format detected unless given), optionally only its first
    /// `sessions` sessions.
    File {
        path: PathBuf,
        format: Option<Format>,
        sessions: Option<usize>,
    },
    /// `n` seeded synthetic sessions.
    Synthetic { n: usize, seed: u64 },
    /// The bundled Mooncake trace ([`crate::bundled::TRACE`]), when a grid names none.
    Bundled,
}

impl TraceSource {
    /// The trace's column value when the grid gives it no `name`: the file's stem, or
    /// `synthetic-N-sS`.
    fn column_name(&self) -> String {
        match self {
            TraceSource::File { path, .. } => stem(path),
            TraceSource::Synthetic { n, seed } => format!("synthetic-{n}-s{seed}"),
            TraceSource::Bundled => stem(Path::new(crate::bundled::TRACE.name)),
        }
    }
}

#[derive(Clone, Debug)]
pub struct TraceEntry {
    /// Its column value: `name`, the file's stem, or `synthetic-N-sS`.
    pub name: String,
    pub source: TraceSource,
    pub span: Span,
}

/// A comparison of an SLO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
}

impl Op {
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Op::Le => value <= bound,
            Op::Lt => value < bound,
            Op::Ge => value >= bound,
            Op::Gt => value > bound,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }
}

/// A service-level objective: `metric op bound`. A point whose metric is absent
/// (no sample) does not meet it.
#[derive(Clone, Debug)]
pub struct Slo {
    pub metric: Metric,
    pub op: Op,
    pub bound: f64,
    pub span: Span,
}

impl Slo {
    pub fn holds(&self, value: Option<f64>) -> bool {
        value.is_some_and(|v| self.op.holds(v, self.bound))
    }

    /// `ttft_p99 <= 2`, as the summary shows it.
    pub fn text(&self) -> String {
        format!("{} {} {}", self.metric.name, self.op.text(), self.bound)
    }
}

/// The two metrics of the Pareto front (either may be `max_rate_scale`).
#[derive(Clone, Debug)]
pub struct Pareto {
    pub metrics: [Metric; 2],
    pub span: Span,
}

/// A capacity search over the rate scale: the scales `from + k * tolerance` for
/// `k = 0..=steps`, bisected (docs/SWEEP.md, "Capacity search").
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    pub from: f64,
    pub to: f64,
    pub tolerance: f64,
    /// The `[search]` table's span (`None`: the defaults, asked by `--search rate`).
    pub span: Option<Span>,
}

impl Default for Search {
    fn default() -> Search {
        Search {
            from: 0.25,
            to: 8.0,
            tolerance: 0.05,
            span: None,
        }
    }
}

impl Search {
    /// The last lattice index: the largest `k` with `from + k * tolerance <= to`.
    pub fn steps(&self) -> u64 {
        // The small slack keeps `to` itself on the lattice when `(to - from) /
        // tolerance` is a whole number that rounding put just below it.
        let k = ((self.to - self.from) / self.tolerance * (1.0 + 1e-12)).floor();
        if k.is_finite() && k >= 0.0 {
            k as u64
        } else {
            0
        }
    }

    /// The rate scale of lattice index `k`: `from + k * tolerance`, rounded to 12
    /// significant digits so that the scales read as written (`0.4`, not
    /// `0.40000000000000013`).
    pub fn scale(&self, k: u64) -> f64 {
        let x = self.from + k as f64 * self.tolerance;
        format!("{x:.11e}").parse().unwrap_or(x)
    }
}

type Value<'i> = Spanned<DeValue<'i>>;
type Key<'i> = Spanned<Cow<'i, str>>;

fn span(r: Range<usize>) -> Span {
    Span::new(r.start, r.end)
}

/// A table's entries in the order they are written.
fn entries<'t, 'i>(table: &'t DeTable<'i>) -> Vec<(&'t Key<'i>, &'t Value<'i>)> {
    let mut list: Vec<_> = table.iter().collect();
    list.sort_by_key(|(k, _)| k.span().start);
    list
}

/// Parses and checks a grid. `dir` is the folder relative paths start from.
pub fn parse(text: &str, dir: &Path) -> Result<Grid, Vec<Diagnostic>> {
    if text.len() > MAX_GRID_BYTES {
        return Err(vec![Diagnostic::new(
            "grid",
            format!(
                "the grid file is {} bytes; at most {MAX_GRID_BYTES} are read",
                text.len()
            ),
        )]);
    }
    let root = DeTable::parse(text).map_err(|e| {
        let d = Diagnostic::new("toml", e.message().trim().to_string());
        vec![match e.span() {
            Some(r) => d.primary(span(r), "here"),
            None => d,
        }]
    })?;
    let mut cx = Cx {
        diags: Vec::new(),
        dir,
    };
    let grid = cx.grid(root.get_ref(), span(root.span()));
    match grid {
        Some(g) if cx.diags.is_empty() => Ok(g),
        _ => {
            let mut diags = cx.diags;
            diags.sort_by_key(|d| d.primary_span().map(|s| s.start));
            Err(diags)
        }
    }
}

const TOP_KEYS: [&str; 9] = [
    "specs",
    "params",
    "traces",
    "rate_scale",
    "metrics",
    "slo",
    "pareto",
    "search",
    "exact_percentiles",
];

struct Cx<'a> {
    diags: Vec<Diagnostic>,
    dir: &'a Path,
}

impl Cx<'_> {
    fn error(&mut self, at: Span, message: impl Into<String>, label: impl Into<String>) {
        self.diags
            .push(Diagnostic::new("grid", message).primary(at, label));
    }

    fn unknown_key(&mut self, key: &Key<'_>, known: &[&str], place: &str) {
        let name = key.get_ref();
        let mut d = Diagnostic::new("grid", format!("unknown key `{name}` in {place}"))
            .primary(span(key.span()), "not a key of this table");
        d = match suggest(name, known.iter().copied()) {
            Some(k) => d.note(format!("did you mean `{k}`?")),
            None => d.note(format!("the keys of {place} are: {}", known.join(", "))),
        };
        self.diags.push(d);
    }

    fn grid(&mut self, root: &DeTable<'_>, whole: Span) -> Option<Grid> {
        let mut specs = None;
        let mut params = Vec::new();
        let mut traces = None;
        let mut rate_scale = None;
        let mut metric_names: Option<Vec<(Metric, Span)>> = None;
        let mut slos = Vec::new();
        let mut pareto = None;
        let mut search = None;
        let mut exact_percentiles = false;
        for (key, value) in entries(root) {
            match key.get_ref().as_ref() {
                "specs" => specs = self.specs(value),
                "params" => {
                    if let Some(t) = self.table(value, "`params`") {
                        params = self.axes(t, "`[params]`");
                    }
                }
                "traces" => traces = self.traces(value),
                "rate_scale" => {
                    let at = span(key.span());
                    rate_scale = self.axis("rate_scale", value, at, Check::Positive);
                }
                "metrics" => metric_names = self.metrics(value),
                "slo" => slos = self.slos(value),
                "pareto" => pareto = self.pareto(value),
                "search" => search = self.search(value),
                "exact_percentiles" => {
                    exact_percentiles = self.boolean(value, "`exact_percentiles`").unwrap_or(false);
                }
                _ => self.unknown_key(key, &TOP_KEYS, "the grid"),
            }
        }
        let specs = match specs {
            Some(s) => s,
            None => {
                if root.iter().all(|(k, _)| k.get_ref() != "specs") {
                    self.diags.push(
                        Diagnostic::new("grid", "the grid names no spec")
                            .primary(Span::new(whole.start as usize, whole.start as usize), "")
                            .note("add `specs = [\"policy.pool\", …]` at the top of the file"),
                    );
                }
                return None;
            }
        };
        for axis in &params {
            for spec in &specs {
                if let Some(own) = spec.params.iter().find(|a| a.name == axis.name) {
                    self.diags.push(
                        Diagnostic::new(
                            "grid",
                            format!(
                                "param `{}` is swept both for every spec and for `{}`",
                                axis.name, spec.name
                            ),
                        )
                        .primary(own.span, "here for one spec")
                        .secondary(axis.span, "and here for every spec"),
                    );
                }
            }
        }
        let traces = traces.unwrap_or_else(|| {
            vec![TraceEntry {
                name: TraceSource::Bundled.column_name(),
                source: TraceSource::Bundled,
                span: Span::new(0, 0),
            }]
        });
        // Every metric an SLO or the Pareto front names is collected too.
        let mut metrics: Vec<Metric> = match metric_names {
            Some(list) => list.into_iter().map(|(m, _)| m).collect(),
            None => metrics::DEFAULT_METRICS
                .iter()
                .filter_map(|n| metrics::find(n))
                .collect(),
        };
        let wanted = slos
            .iter()
            .map(|s: &Slo| s.metric)
            .chain(pareto.iter().flat_map(|p: &Pareto| p.metrics));
        for m in wanted {
            if m != MAX_RATE_SCALE && !metrics.contains(&m) {
                metrics.push(m);
            }
        }
        Some(Grid {
            specs,
            params,
            traces,
            rate_scale,
            metrics,
            slos,
            pareto,
            search,
            exact_percentiles,
        })
    }

    /// `what` holds a value of another type than the grid needs there: an error at
    /// it, and no value.
    fn wrong_type<T>(
        &mut self,
        v: &Value<'_>,
        what: &str,
        must: &str,
        other: &DeValue<'_>,
        label: &str,
    ) -> Option<T> {
        self.error(
            span(v.span()),
            format!("{what} must be {must}, not a {}", other.type_str()),
            label,
        );
        None
    }

    fn table<'t, 'i>(&mut self, v: &'t Value<'i>, what: &str) -> Option<&'t DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            other => self.wrong_type(v, what, "a table", other, "expected a table"),
        }
    }

    fn array<'t, 'i>(&mut self, v: &'t Value<'i>, what: &str) -> Option<&'t [Value<'i>]> {
        match v.get_ref() {
            DeValue::Array(a) => Some(a),
            other => self.wrong_type(v, what, "a list", other, "expected a list"),
        }
    }

    fn string<'t>(&mut self, v: &'t Value<'_>, what: &str) -> Option<&'t str> {
        match v.get_ref() {
            DeValue::String(s) => Some(s),
            other => self.wrong_type(v, what, "a string", other, "expected a string"),
        }
    }

    fn boolean(&mut self, v: &Value<'_>, what: &str) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            other => self.wrong_type(v, what, "true or false", other, "expected a boolean"),
        }
    }

    fn number(&mut self, v: &Value<'_>, what: &str) -> Option<f64> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => {
                let digits = i.as_str().replace('_', "");
                i64::from_str_radix(&digits, i.radix()).ok().and_then(|n| {
                    // Only integers a double holds exactly (as `--set` values are).
                    (n.unsigned_abs() <= 1 << 53).then_some(n as f64)
                })
            }
            DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
            other => return self.wrong_type(v, what, "a number", other, "expected a number"),
        };
        if n.is_none() {
            self.error(
                span(v.span()),
                format!("{what} is not a number a double holds exactly"),
                "out of range",
            );
        }
        n
    }

    /// A whole number in `lo..=hi`.
    fn whole(&mut self, v: &Value<'_>, what: &str, lo: u64, hi: u64) -> Option<u64> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => {
                let digits = i.as_str().replace('_', "");
                i64::from_str_radix(&digits, i.radix()).ok()
            }
            other => {
                self.error(
                    span(v.span()),
                    format!("{what} must be a whole number, not a {}", other.type_str()),
                    "expected a whole number",
                );
                return None;
            }
        };
        match n.and_then(|n| u64::try_from(n).ok()) {
            Some(n) if (lo..=hi).contains(&n) => Some(n),
            _ => {
                self.error(
                    span(v.span()),
                    format!("{what} must be from {lo} to {hi}"),
                    "out of range",
                );
                None
            }
        }
    }

    fn specs(&mut self, v: &Value<'_>) -> Option<Vec<SpecEntry>> {
        let items = self.array(v, "`specs`")?;
        if items.is_empty() {
            self.error(span(v.span()), "`specs` is empty", "name at least one spec");
            return None;
        }
        let mut out: Vec<SpecEntry> = Vec::new();
        let mut ok = true;
        for item in items {
            let at = span(item.span());
            let entry = match item.get_ref() {
                DeValue::String(s) => Some((s.to_string(), None, Vec::new())),
                DeValue::Table(t) => self.spec_table(t, at),
                other => {
                    self.error(
                        at,
                        format!(
                            "a spec is a path or a table {{path, name, params}}, not a {}",
                            other.type_str()
                        ),
                        "expected a path or a table",
                    );
                    None
                }
            };
            let Some((written, name, params)) = entry else {
                ok = false;
                continue;
            };
            let path = self.dir.join(&written);
            let name = name.unwrap_or_else(|| stem(&path));
            if let Some(first) = out.iter().find(|s| s.name == name) {
                self.diags.push(
                    Diagnostic::new("grid", format!("two specs are named `{name}`"))
                        .primary(at, "this one")
                        .secondary(first.span, "and this one")
                        .note("give one of them a `name` (specs = [{path = \"…\", name = \"…\"}])"),
                );
                ok = false;
                continue;
            }
            out.push(SpecEntry {
                name,
                written,
                path,
                params,
                span: at,
            });
        }
        ok.then_some(out)
    }

    #[allow(clippy::type_complexity)]
    fn spec_table(
        &mut self,
        t: &DeTable<'_>,
        at: Span,
    ) -> Option<(String, Option<String>, Vec<Axis>)> {
        let mut path = None;
        let mut name = None;
        let mut params = Vec::new();
        for (key, value) in entries(t) {
            match key.get_ref().as_ref() {
                "path" => path = self.string(value, "a spec's `path`").map(str::to_string),
                "name" => name = self.name(value, "a spec's `name`"),
                "params" => {
                    if let Some(t) = self.table(value, "a spec's `params`") {
                        params = self.axes(t, "a spec's `params`");
                    }
                }
                _ => self.unknown_key(key, &["path", "name", "params"], "a spec"),
            }
        }
        if path.is_none() {
            self.error(at, "this spec has no `path`", "add `path = \"…\"`");
        }
        Some((path?, name, params))
    }

    fn name(&mut self, v: &Value<'_>, what: &str) -> Option<String> {
        let s = self.string(v, what)?;
        if s.trim().is_empty() || s.chars().any(char::is_control) {
            self.error(
                span(v.span()),
                format!("{what} must be a non-empty name without control characters"),
                "bad name",
            );
            return None;
        }
        Some(s.to_string())
    }

    fn axes(&mut self, t: &DeTable<'_>, _place: &str) -> Vec<Axis> {
        let mut out = Vec::new();
        for (key, value) in entries(t) {
            let name = key.get_ref().to_string();
            if let Some(axis) = self.axis(&name, value, span(key.span()), Check::Param) {
                out.push(axis);
            }
        }
        out
    }

    /// A number, a list of numbers, or `{from, to, steps}` (evenly spaced, both ends
    /// included).
    fn axis(&mut self, name: &str, v: &Value<'_>, key: Span, check: Check) -> Option<Axis> {
        let what = format!("a value of `{name}`");
        let values: Vec<(f64, Span)> = match v.get_ref() {
            DeValue::Integer(_) | DeValue::Float(_) => {
                vec![(self.number(v, &what)?, span(v.span()))]
            }
            DeValue::Array(items) => {
                if items.is_empty() {
                    self.error(
                        span(v.span()),
                        format!("`{name}` has no value"),
                        "empty list",
                    );
                    return None;
                }
                if items.len() > MAX_AXIS_VALUES {
                    self.error(
                        span(v.span()),
                        format!("`{name}` has more than {MAX_AXIS_VALUES} values"),
                        "too many",
                    );
                    return None;
                }
                let mut out = Vec::new();
                let mut ok = true;
                for item in items.iter() {
                    match self.number(item, &what) {
                        Some(n) => out.push((n, span(item.span()))),
                        None => ok = false,
                    }
                }
                if !ok {
                    return None;
                }
                out
            }
            DeValue::Table(t) => self.range(name, t, span(v.span()))?,
            other => {
                self.error(
                    span(v.span()),
                    format!(
                        "`{name}` must be a number, a list of numbers or {{from, to, steps}}, not a {}",
                        other.type_str()
                    ),
                    "expected values",
                );
                return None;
            }
        };
        let mut ok = true;
        for (i, &(x, at)) in values.iter().enumerate() {
            let bad = match check {
                Check::Param => x.is_nan().then_some("a param value may not be NaN"),
                Check::Positive => {
                    (!(x.is_finite() && x > 0.0)).then_some("a rate scale must be finite and > 0")
                }
            };
            if let Some(message) = bad {
                self.error(at, message, "here");
                ok = false;
            } else if let Some(&(_, first)) = values.iter().take(i).find(|(y, _)| *y == x) {
                self.diags.push(
                    Diagnostic::new("grid", format!("`{name}` repeats the value {x}"))
                        .primary(at, "again here")
                        .secondary(first, "first here"),
                );
                ok = false;
            }
        }
        ok.then(|| Axis {
            name: name.to_string(),
            values: values.into_iter().map(|(x, _)| x).collect(),
            span: key,
        })
    }

    fn range(&mut self, name: &str, t: &DeTable<'_>, at: Span) -> Option<Vec<(f64, Span)>> {
        let (mut from, mut to, mut steps) = (None, None, None);
        for (key, value) in entries(t) {
            match key.get_ref().as_ref() {
                "from" => from = self.number(value, &format!("`{name}.from`")),
                "to" => to = self.number(value, &format!("`{name}.to`")),
                "steps" => {
                    steps = self.whole(value, &format!("`{name}.steps`"), 1, MAX_AXIS_VALUES as u64)
                }
                _ => self.unknown_key(key, &["from", "to", "steps"], "a range"),
            }
        }
        let (Some(from), Some(to), Some(steps)) = (from, to, steps) else {
            if !t.iter().any(|(k, _)| k.get_ref() == "steps")
                || !t.iter().any(|(k, _)| k.get_ref() == "from")
                || !t.iter().any(|(k, _)| k.get_ref() == "to")
            {
                self.error(
                    at,
                    format!("the range of `{name}` needs `from`, `to` and `steps`"),
                    "incomplete range",
                );
            }
            return None;
        };
        if !(from.is_finite() && to.is_finite()) {
            self.error(
                at,
                format!("the range of `{name}` must have finite ends"),
                "here",
            );
            return None;
        }
        if steps == 1 {
            if from != to {
                self.error(
                    at,
                    format!("the range of `{name}` has one step but two different ends"),
                    "use `steps = 2` or more, or one value",
                );
                return None;
            }
            return Some(vec![(from, at)]);
        }
        let last = steps - 1;
        Some(
            (0..steps)
                .map(|i| {
                    let x = if i == last {
                        to
                    } else {
                        from + (to - from) * (i as f64) / (last as f64)
                    };
                    (x, at)
                })
                .collect(),
        )
    }

    fn traces(&mut self, v: &Value<'_>) -> Option<Vec<TraceEntry>> {
        let items = self.array(v, "`traces`")?;
        if items.is_empty() {
            self.error(
                span(v.span()),
                "`traces` is empty",
                "name at least one trace",
            );
            return None;
        }
        let mut out: Vec<TraceEntry> = Vec::new();
        let mut ok = true;
        for item in items {
            let at = span(item.span());
            let entry = match item.get_ref() {
                DeValue::String(s) => {
                    let path = self.dir.join(s.as_ref());
                    Some((
                        None,
                        TraceSource::File {
                            path,
                            format: None,
                            sessions: None,
                        },
                    ))
                }
                DeValue::Table(t) => self.trace_table(t, at),
                other => {
                    self.error(
                        at,
                        format!(
                            "a trace is a path or a table {{file | synthetic, …}}, not a {}",
                            other.type_str()
                        ),
                        "expected a path or a table",
                    );
                    None
                }
            };
            let Some((name, source)) = entry else {
                ok = false;
                continue;
            };
            let name = name.unwrap_or_else(|| source.column_name());
            if let Some(first) = out.iter().find(|t| t.name == name) {
                self.diags.push(
                    Diagnostic::new("grid", format!("two traces are named `{name}`"))
                        .primary(at, "this one")
                        .secondary(first.span, "and this one")
                        .note("give one of them a `name`"),
                );
                ok = false;
                continue;
            }
            out.push(TraceEntry {
                name,
                source,
                span: at,
            });
        }
        ok.then_some(out)
    }

    fn trace_table(&mut self, t: &DeTable<'_>, at: Span) -> Option<(Option<String>, TraceSource)> {
        let mut file = None;
        let mut synthetic = None;
        let mut format = None;
        let mut sessions = None;
        let mut seed = None;
        let mut name = None;
        let mut ok = true;
        let mut file_only: Option<Span> = None;
        let mut synthetic_only: Option<Span> = None;
        for (key, value) in entries(t) {
            let key_at = span(key.span());
            match key.get_ref().as_ref() {
                "file" => {
                    file = self.string(value, "a trace's `file`").map(str::to_string);
                    ok &= file.is_some();
                }
                "synthetic" => {
                    synthetic = self
                        .whole(value, "`synthetic`", 1, poolrt::trace::MAX_SESSIONS as u64)
                        .map(|n| n as usize);
                    ok &= synthetic.is_some();
                }
                "format" => {
                    file_only = Some(key_at);
                    format = match self.string(value, "`format`") {
                        Some("mooncake") => Some(Format::Mooncake),
                        Some("azure") => Some(Format::Azure),
                        Some("jsonl") => Some(Format::Jsonl),
                        Some(other) => {
                            self.error(
                                span(value.span()),
                                format!("format `{other}` is not one of mooncake, azure, jsonl"),
                                "unknown format",
                            );
                            None
                        }
                        None => None,
                    };
                    ok &= format.is_some();
                }
                "sessions" => {
                    file_only = Some(key_at);
                    sessions = self
                        .whole(value, "`sessions`", 1, poolrt::trace::MAX_SESSIONS as u64)
                        .map(|n| n as usize);
                    ok &= sessions.is_some();
                }
                "seed" => {
                    synthetic_only = Some(key_at);
                    seed = self.whole(value, "`seed`", 0, i64::MAX as u64);
                    ok &= seed.is_some();
                }
                "name" => {
                    name = self.name(value, "a trace's `name`");
                    ok &= name.is_some();
                }
                _ => {
                    self.unknown_key(
                        key,
                        &["file", "synthetic", "format", "sessions", "seed", "name"],
                        "a trace",
                    );
                    ok = false;
                }
            }
        }
        let has = |k: &str| t.iter().any(|(key, _)| key.get_ref() == k);
        match (has("file"), has("synthetic")) {
            (true, true) | (false, false) => {
                self.error(
                    at,
                    "a trace has either `file` or `synthetic`",
                    "give exactly one of them",
                );
                return None;
            }
            (true, false) => {
                if let Some(s) = synthetic_only {
                    self.error(s, "`seed` is for synthetic traces", "not for a file");
                    return None;
                }
            }
            (false, true) => {
                if let Some(s) = file_only {
                    self.error(
                        s,
                        "`format` and `sessions` are for trace files",
                        "not for a synthetic trace",
                    );
                    return None;
                }
            }
        }
        if !ok {
            return None;
        }
        let source = match (file, synthetic) {
            (Some(f), _) => TraceSource::File {
                path: self.dir.join(f),
                format,
                sessions,
            },
            (None, Some(n)) => TraceSource::Synthetic {
                n,
                seed: seed.unwrap_or(1),
            },
            (None, None) => return None,
        };
        Some((name, source))
    }

    fn metric(&mut self, v: &Value<'_>, allow_search: bool) -> Option<Metric> {
        let name = self.string(v, "a metric")?;
        if allow_search && name == MAX_RATE_SCALE.name {
            return Some(MAX_RATE_SCALE);
        }
        match metrics::find(name) {
            Some(m) => Some(m),
            None => {
                let mut d = Diagnostic::new("grid", format!("unknown metric `{name}`"))
                    .primary(span(v.span()), "not a metric of the report");
                d = match suggest(name, metrics::names()) {
                    Some(k) => d.note(format!("did you mean `{k}`?")),
                    None => d.note(format!(
                        "the metrics are: {}",
                        metrics::names().collect::<Vec<_>>().join(", ")
                    )),
                };
                self.diags.push(d);
                None
            }
        }
    }

    fn metrics(&mut self, v: &Value<'_>) -> Option<Vec<(Metric, Span)>> {
        let items = self.array(v, "`metrics`")?;
        if items.is_empty() {
            self.error(
                span(v.span()),
                "`metrics` is empty",
                "name at least one metric",
            );
            return None;
        }
        let mut out: Vec<(Metric, Span)> = Vec::new();
        let mut ok = true;
        for item in items {
            let at = span(item.span());
            match self.metric(item, false) {
                Some(m) => {
                    if let Some(&(_, first)) = out.iter().find(|(x, _)| *x == m) {
                        self.diags.push(
                            Diagnostic::new("grid", format!("metric `{}` is named twice", m.name))
                                .primary(at, "again here")
                                .secondary(first, "first here"),
                        );
                        ok = false;
                    } else {
                        out.push((m, at));
                    }
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn slos(&mut self, v: &Value<'_>) -> Vec<Slo> {
        let Some(items) = self.array(v, "`slo`") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            let Some(text) = self.string(item, "an SLO") else {
                continue;
            };
            let at = span(item.span());
            match parse_slo(text) {
                Ok((name, op, bound)) => match metrics::find(name) {
                    Some(metric) => out.push(Slo {
                        metric,
                        op,
                        bound,
                        span: at,
                    }),
                    None => {
                        let mut d = Diagnostic::new(
                            "grid",
                            format!("the SLO names an unknown metric `{name}`"),
                        )
                        .primary(at, "not a metric of the report");
                        if let Some(k) = suggest(name, metrics::names()) {
                            d = d.note(format!("did you mean `{k}`?"));
                        }
                        self.diags.push(d);
                    }
                },
                Err(why) => self.diags.push(
                    Diagnostic::new("grid", format!("`{text}` is not an SLO: {why}"))
                        .primary(at, "expected `METRIC <= NUMBER`")
                        .note("an SLO is a metric, one of <=, <, >=, >, and a finite number: `ttft_p99 <= 2.0`"),
                ),
            }
        }
        out
    }

    fn pareto(&mut self, v: &Value<'_>) -> Option<Pareto> {
        let items = self.array(v, "`pareto`")?;
        let at = span(v.span());
        if items.len() != 2 {
            self.error(
                at,
                format!("`pareto` names two metrics, not {}", items.len()),
                "expected two metrics",
            );
            return None;
        }
        let a = items.first().and_then(|x| self.metric(x, true));
        let b = items.get(1).and_then(|x| self.metric(x, true));
        let (a, b) = (a?, b?);
        if a == b {
            self.error(
                at,
                "`pareto` names one metric twice",
                "two different metrics",
            );
            return None;
        }
        Some(Pareto {
            metrics: [a, b],
            span: at,
        })
    }

    fn search(&mut self, v: &Value<'_>) -> Option<Search> {
        let t = self.table(v, "`search`")?;
        let at = span(v.span());
        let mut s = Search {
            span: Some(at),
            ..Search::default()
        };
        let mut ok = true;
        for (key, value) in entries(t) {
            match key.get_ref().as_ref() {
                "over" => match self.string(value, "`search.over`") {
                    Some("rate") => {}
                    Some(other) => {
                        self.error(
                            span(value.span()),
                            format!("a search is over `rate`, not `{other}`"),
                            "only `rate` is searched",
                        );
                        ok = false;
                    }
                    None => ok = false,
                },
                "from" => match self.number(value, "`search.from`") {
                    Some(x) => s.from = x,
                    None => ok = false,
                },
                "to" => match self.number(value, "`search.to`") {
                    Some(x) => s.to = x,
                    None => ok = false,
                },
                "tolerance" => match self.number(value, "`search.tolerance`") {
                    Some(x) => s.tolerance = x,
                    None => ok = false,
                },
                _ => {
                    self.unknown_key(key, &["over", "from", "to", "tolerance"], "`[search]`");
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        if let Some(why) = search_problem(&s) {
            self.error(at, why, "in this search");
            return None;
        }
        Some(s)
    }
}

/// Why a search's bounds are unusable, if they are.
pub fn search_problem(s: &Search) -> Option<String> {
    if !(s.from.is_finite() && s.from > 0.0) {
        return Some(format!("`from` must be finite and > 0, not {}", s.from));
    }
    if !(s.to.is_finite() && s.to > s.from) {
        return Some(format!(
            "`to` ({}) must be finite and above `from` ({})",
            s.to, s.from
        ));
    }
    if !(s.tolerance.is_finite() && s.tolerance > 0.0) {
        return Some(format!(
            "`tolerance` must be finite and > 0, not {}",
            s.tolerance
        ));
    }
    if (s.to - s.from) / s.tolerance > MAX_SEARCH_STEPS {
        return Some(format!(
            "from {} to {} by {} is more than {MAX_SEARCH_STEPS} steps",
            s.from, s.to, s.tolerance
        ));
    }
    None
}

#[derive(Clone, Copy)]
enum Check {
    Param,
    Positive,
}

/// `METRIC OP NUMBER` (spaces optional around the operator).
fn parse_slo(text: &str) -> Result<(&str, Op, f64), &'static str> {
    let at = text
        .find(['<', '>', '='])
        .ok_or("it has no comparison (<=, <, >=, >)")?;
    let (name, rest) = text.split_at(at);
    let (op, number) = if let Some(r) = rest.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = rest.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = rest.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Op::Gt, r)
    } else {
        return Err("its comparison is not one of <=, <, >=, >");
    };
    let name = name.trim();
    if name.is_empty() {
        return Err("it names no metric");
    }
    let bound = number
        .trim()
        .replace('_', "")
        .parse::<f64>()
        .map_err(|_| "its bound is not a number")?;
    if !bound.is_finite() {
        return Err("its bound is not finite");
    }
    Ok((name, op, bound))
}

/// A path's file stem, as a column value.
fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}
