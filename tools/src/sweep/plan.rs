//! A grid expanded into its points (docs/SWEEP.md, "Points"): every spec with every
//! combination of its params, on every trace, at every rate scale, numbered in that
//! order (the last axis varying fastest), so that a point's index *is* its place in
//! coordinate order and both backends sort rows by it. It owns the expansion, the
//! checks that need the grid and the specs together (a swept param the spec does
//! not declare, a search without an SLO), and the fingerprint that ties a
//! results.jsonl to one plan. It compiles nothing and replays nothing.

use std::path::{Path, PathBuf};

use super::SweepError;
use super::grid::{self, Grid, Search};
use super::metrics::{MAX_RATE_SCALE, Metric};
use poolc::Options;
use poolc::diag::Diagnostic;

/// The most points a plan may have.
pub const MAX_POINTS: usize = 1_000_000;

/// Whether the capacity search runs: as the grid says (`[search]`), or as the
/// command line forces it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchChoice {
    #[default]
    Grid,
    On,
    Off,
}

impl SearchChoice {
    /// `rate` or `none` (the `--search` values); anything else is `None`.
    pub fn from_name(name: &str) -> Option<SearchChoice> {
        match name {
            "rate" => Some(SearchChoice::On),
            "none" => Some(SearchChoice::Off),
            _ => None,
        }
    }
}

/// One spec with one value for each of its swept params: what is compiled once.
#[derive(Clone, Debug)]
pub struct Combo {
    /// Index into the grid's specs.
    pub spec: usize,
    /// The `--set` values, in column order.
    pub set: Vec<(String, f64)>,
}

/// One point of the grid.
#[derive(Clone, Debug)]
pub struct Point {
    pub index: usize,
    /// Index into [`Plan::combos`].
    pub combo: usize,
    /// Index into the grid's traces.
    pub trace: usize,
    /// The rate scale, or `None` when a capacity search finds it.
    pub rate_scale: Option<f64>,
}

/// A grid and its points.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The grid file as named, and its text (diagnostics render against it).
    pub file: String,
    pub text: String,
    pub grid: Grid,
    /// The capacity search, when it runs.
    pub search: Option<Search>,
    pub combos: Vec<Combo>,
    pub points: Vec<Point>,
    /// Every swept param's name, in first-appearance order: the results' columns.
    pub params: Vec<String>,
}

impl Plan {
    /// Reads, parses and expands the grid at `path`. Relative paths in it start from
    /// its folder.
    pub fn load(path: &Path, choice: SearchChoice) -> Result<Plan, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|error| SweepError::Read {
            path: path.to_path_buf(),
            error: std::sync::Arc::new(error),
        })?;
        let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
        Plan::parse(&path.display().to_string(), &text, &dir, choice)
    }

    /// [`Plan::load`] from text.
    pub fn parse(
        file: &str,
        text: &str,
        dir: &Path,
        choice: SearchChoice,
    ) -> Result<Plan, SweepError> {
        let grid_error = |diags| SweepError::Grid {
            file: file.to_string(),
            text: text.to_string(),
            diags,
        };
        let grid = grid::parse(text, dir).map_err(grid_error)?;
        expand(&grid, choice)
            .map(|(search, combos, points, params)| Plan {
                file: file.to_string(),
                text: text.to_string(),
                grid,
                search,
                combos,
                points,
                params,
            })
            .map_err(grid_error)
    }

    /// The point at `index`.
    pub fn point(&self, index: usize) -> Option<&Point> {
        self.points.get(index)
    }

    /// The spec name, `--set` values and trace name of a point, as `name=value`
    /// words (progress lines and the summary).
    pub fn label(&self, point: &Point) -> String {
        let mut words = Vec::new();
        if let Some(combo) = self.combos.get(point.combo) {
            if let Some(spec) = self.grid.specs.get(combo.spec) {
                words.push(format!("spec={}", spec.name));
            }
            for (name, value) in &combo.set {
                words.push(format!("{name}={}", show(*value)));
            }
        }
        if let Some(t) = self.grid.traces.get(point.trace) {
            words.push(format!("trace={}", t.name));
        }
        if let Some(r) = point.rate_scale {
            words.push(format!("rate_scale={}", show(r)));
        }
        words.join(" ")
    }

    /// The metrics of the Pareto front: the grid's, or by default (with a search)
    /// `max_rate_scale` and the first metric, or the first two metrics.
    pub fn pareto(&self) -> Option<[Metric; 2]> {
        if let Some(p) = &self.grid.pareto {
            return Some(p.metrics);
        }
        let mut first = self.grid.metrics.iter().copied();
        match self.search {
            Some(_) => first.next().map(|m| [MAX_RATE_SCALE, m]),
            None => Some([first.next()?, first.next()?]),
        }
    }

    /// Reads every spec once, checks that it declares every param swept for it, and
    /// checks every combination of param values (as `poolc check --set` would), so
    /// that no mistake waits for its point to run. Gives each spec's source.
    pub fn check(&self) -> Result<Vec<String>, SweepError> {
        let mut sources = Vec::new();
        let mut grid_diags = Vec::new();
        for spec in &self.grid.specs {
            let source = read_spec(&spec.path)?;
            let program =
                poolc::check(&source, &Options::default()).map_err(|diags| SweepError::Spec {
                    file: spec.path.display().to_string(),
                    text: source.clone(),
                    diags,
                    with: String::new(),
                })?;
            let declared: Vec<&str> = program
                .values
                .iter()
                .filter(|v| v.is_param)
                .map(|v| v.name.as_str())
                .collect();
            for axis in self.grid.params.iter().chain(&spec.params) {
                if !declared.contains(&axis.name.as_str()) {
                    let list = if declared.is_empty() {
                        "it declares no param".to_string()
                    } else {
                        format!("its params are: {}", declared.join(", "))
                    };
                    grid_diags.push(
                        Diagnostic::new(
                            "grid",
                            format!(
                                "spec `{}` ({}) has no param `{}`",
                                spec.name,
                                spec.path.display(),
                                axis.name
                            ),
                        )
                        .primary(axis.span, "swept here")
                        .secondary(spec.span, "for this spec")
                        .note(list),
                    );
                }
            }
            sources.push(source);
        }
        if !grid_diags.is_empty() {
            grid_diags.sort_by_key(|d| d.primary_span().map(|s| s.start));
            return Err(SweepError::Grid {
                file: self.file.clone(),
                text: self.text.clone(),
                diags: grid_diags,
            });
        }
        for combo in &self.combos {
            let (Some(spec), Some(source)) =
                (self.grid.specs.get(combo.spec), sources.get(combo.spec))
            else {
                continue;
            };
            let options = Options {
                set: combo.set.clone(),
            };
            poolc::check(source, &options).map_err(|diags| SweepError::Spec {
                file: spec.path.display().to_string(),
                text: source.clone(),
                diags,
                with: set_words(&combo.set),
            })?;
        }
        Ok(sources)
    }

    /// A 64-bit FNV-1a hash (16 hex digits) of everything that decides a row: every
    /// point's coordinates, the spec sources, the traces, the metrics, the SLOs, the
    /// search and the percentile method. results.jsonl lines carry it, and `--resume` keeps only lines
    /// whose fingerprint is the plan's.
    pub fn fingerprint(&self, sources: &[String]) -> String {
        let mut h = Fnv::default();
        for (spec, source) in self.grid.specs.iter().zip(sources) {
            h.text(&spec.name);
            h.text(source);
        }
        for t in &self.grid.traces {
            h.text(&t.name);
            h.text(&format!("{:?}", t.source));
        }
        for m in &self.grid.metrics {
            h.text(m.name);
        }
        for s in &self.grid.slos {
            h.text(&format!("{} {} {:?}", s.metric.name, s.op.text(), s.bound));
        }
        if let Some(s) = &self.search {
            h.text(&format!("search {:?} {:?} {:?}", s.from, s.to, s.tolerance));
        }
        // Only when set, so the rows of grids written before the key resume.
        if self.grid.exact_percentiles {
            h.text("exact_percentiles");
        }
        for p in &self.points {
            let combo = self.combos.get(p.combo);
            h.text(&format!(
                "{} {:?} {} {:?}",
                p.index,
                combo.map(|c| (c.spec, &c.set)),
                p.trace,
                p.rate_scale
            ));
        }
        format!("{:016x}", h.0)
    }
}

/// A coordinate as the results show it: Rust's shortest round-trip form, plain
/// (`14000`, `0.25`, `inf`) unless that would be long (`1e300`, `1e-12`).
pub fn show(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() > 20 {
        format!("{x:e}")
    } else {
        plain
    }
}

/// `aging=250 num_gpu_blocks=14000`.
pub fn set_words(set: &[(String, f64)]) -> String {
    set.iter()
        .map(|(n, v)| format!("{n}={}", show(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads one spec file.
pub(super) fn read_spec(path: &Path) -> Result<String, SweepError> {
    std::fs::read_to_string(path).map_err(|error| SweepError::Read {
        path: path.to_path_buf(),
        error: std::sync::Arc::new(error),
    })
}

struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn text(&mut self, s: &str) {
        for b in s.bytes().chain([0xff]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

type Expanded = (Option<Search>, Vec<Combo>, Vec<Point>, Vec<String>);

fn expand(grid: &Grid, choice: SearchChoice) -> Result<Expanded, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let search = match choice {
        SearchChoice::Off => None,
        SearchChoice::Grid => grid.search.clone(),
        SearchChoice::On => Some(grid.search.clone().unwrap_or_default()),
    };
    if let Some(s) = &search {
        if let Some(axis) = &grid.rate_scale {
            diags.push(
                Diagnostic::new(
                    "grid",
                    "a capacity search finds the rate scale itself; the grid also sweeps it",
                )
                .primary(axis.span, "remove `rate_scale`")
                .note("or run without the search (`--search none`)"),
            );
        }
        if grid.slos.is_empty() {
            let d = Diagnostic::new(
                "grid",
                "a capacity search looks for the largest rate scale that meets the SLOs, and the grid has none",
            )
            .note("add `slo = [\"ttft_p99 <= 2.0\"]` at the top of the grid");
            diags.push(match s.span {
                Some(at) => d.primary(at, "this search"),
                None => d,
            });
        }
    } else if let Some(p) = &grid.pareto
        && p.metrics.contains(&MAX_RATE_SCALE)
    {
        diags.push(
            Diagnostic::new(
                "grid",
                "`max_rate_scale` is a result of the capacity search, which does not run",
            )
            .primary(p.span, "names `max_rate_scale`")
            .note("add a `[search]` table, or run with `--search rate`"),
        );
    }
    let scales: Vec<Option<f64>> = match (&search, &grid.rate_scale) {
        (Some(_), _) => vec![None],
        (None, Some(axis)) => axis.values.iter().map(|&v| Some(v)).collect(),
        (None, None) => vec![Some(1.0)],
    };
    let mut params: Vec<String> = Vec::new();
    let mut total: usize = 0;
    for spec in &grid.specs {
        let mut n: usize = 1;
        for axis in grid.params.iter().chain(&spec.params) {
            n = n.saturating_mul(axis.values.len());
            if !params.contains(&axis.name) {
                params.push(axis.name.clone());
            }
        }
        total = total.saturating_add(
            n.saturating_mul(grid.traces.len())
                .saturating_mul(scales.len()),
        );
    }
    if total > MAX_POINTS {
        diags.push(Diagnostic::new(
            "grid",
            format!("the grid has {total} points; at most {MAX_POINTS} are run"),
        ));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut combos = Vec::new();
    let mut points = Vec::new();
    for (s, spec) in grid.specs.iter().enumerate() {
        let axes: Vec<&grid::Axis> = grid.params.iter().chain(&spec.params).collect();
        // An odometer over the axes, the last one turning fastest.
        let mut digits = vec![0usize; axes.len()];
        loop {
            let set: Vec<(String, f64)> = axes
                .iter()
                .zip(&digits)
                .filter_map(|(a, &d)| a.values.get(d).map(|&v| (a.name.clone(), v)))
                .collect();
            let combo = combos.len();
            combos.push(Combo { spec: s, set });
            for trace in 0..grid.traces.len() {
                for &rate_scale in &scales {
                    points.push(Point {
                        index: points.len(),
                        combo,
                        trace,
                        rate_scale,
                    });
                }
            }
            let mut i = digits.len();
            let done = loop {
                if i == 0 {
                    break true;
                }
                i -= 1;
                let (Some(d), Some(axis)) = (digits.get_mut(i), axes.get(i)) else {
                    break true;
                };
                *d += 1;
                if *d < axis.values.len() {
                    break false;
                }
                *d = 0;
            };
            if done {
                break;
            }
        }
    }
    Ok((search, combos, points, params))
}
