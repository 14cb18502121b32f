//! `poolc fit` as a library (docs/LATENCY.md): a stage `time` expression with unknowns
//! fitted to measured engine iterations. `steps.rs` reads the step log
//! (docs/STEPS.md), `model.rs` takes the expression through the compiler and
//! evaluates it, `linear.rs` is the linearity rule, `nnls.rs` the non-negative least
//! squares, `report.rs` the text, JSON and stage block. This file joins them: for each
//! iteration the offset f(0) and the basis f(eᵢ) − f(0), the fit of (seconds − offset)
//! on the basis, then the accuracy of f at the fitted values overall and per regime.
//! Every failure is a typed error; nothing here prints.

pub mod linear;
pub mod model;
pub mod nnls;
pub mod report;
pub mod steps;

use std::fmt;

use poolc::diag::Diagnostic;

pub use model::TimeModel;
use steps::Iteration;
pub use steps::{Counts, StepLog};

/// The stage a fitted block declares: a name `stage NAME { step; }` checks with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageName(String);

impl StageName {
    /// The block's stage name, if the compiler accepts `stage NAME { step; }` as one
    /// stage so named (a Pool name that is no context variable or built-in).
    pub fn new(name: &str) -> Result<StageName, FitError> {
        let spec = format!("stage {name} {{ step; }}");
        let named = poolc::check(&spec, &poolc::Options::default())
            .ok()
            .is_some_and(|p| p.stages.len() == 1 && p.stages.iter().all(|s| s.name == name));
        if named {
            Ok(StageName(name.to_string()))
        } else {
            Err(FitError::StageName(name.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The iterations a regime groups, by what the batch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// `prefill` = 0: every scheduled request generated.
    DecodeOnly,
    /// `prefill` ≥ half of `tokens`.
    PrefillHeavy,
    /// The rest: some prefill, less than half of the tokens.
    Mixed,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::DecodeOnly, Regime::PrefillHeavy, Regime::Mixed];

    pub fn name(self) -> &'static str {
        match self {
            Regime::DecodeOnly => "decode-only",
            Regime::PrefillHeavy => "prefill-heavy",
            Regime::Mixed => "mixed",
        }
    }

    pub fn of(c: &Counts) -> Regime {
        if c.prefill == 0 {
            Regime::DecodeOnly
        } else if 2 * c.prefill >= c.tokens {
            Regime::PrefillHeavy
        } else {
            Regime::Mixed
        }
    }
}

/// How well the fitted time predicts a set of iterations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    pub iterations: usize,
    /// Mean |predicted − seconds| / seconds, in percent; `None` without iterations.
    pub mape_percent: Option<f64>,
    /// 1 − SS_res / SS_tot; `None` without iterations or when every `seconds` is the
    /// same (SS_tot = 0).
    pub r2: Option<f64>,
}

impl Accuracy {
    fn of(pairs: &[(f64, f64)]) -> Accuracy {
        let n = pairs.len();
        if n == 0 {
            return Accuracy {
                iterations: 0,
                mape_percent: None,
                r2: None,
            };
        }
        let mape = pairs.iter().map(|(p, y)| (p - y).abs() / y).sum::<f64>() / n as f64;
        let mean = pairs.iter().map(|(_, y)| y).sum::<f64>() / n as f64;
        let ss_res: f64 = pairs.iter().map(|(p, y)| (p - y) * (p - y)).sum();
        let ss_tot: f64 = pairs.iter().map(|(_, y)| (y - mean) * (y - mean)).sum();
        Accuracy {
            iterations: n,
            mape_percent: Some(100.0 * mape),
            r2: (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot),
        }
    }
}

/// What the data could not decide, or how the fit ended, said once per fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The unknown never changes the time of any iteration (its column is zero).
    NoEffect(String),
    /// The unknowns whose columns are linearly dependent, with the numerical rank of
    /// the columns that vary and their number.
    Dependent {
        names: Vec<String>,
        rank: usize,
        columns: usize,
    },
    /// The unknown is 0 at its bound: no positive value fits better.
    AtBound(String),
    /// Lawson–Hanson stopped at its iteration limit.
    IterationLimit,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::NoEffect(name) => write!(
                f,
                "{name} changes the time of no iteration (its column is zero): it is 0, \
                 and the data say nothing about it"
            ),
            Note::Dependent {
                names,
                rank,
                columns,
            } => write!(
                f,
                "the data cannot tell {} apart: their columns are linearly dependent \
                 (rank {rank} of {columns}), so other values of theirs fit as well; \
                 these are the ones non-negative least squares gives",
                and_list(names)
            ),
            Note::AtBound(name) => {
                write!(f, "{name} is 0 at its bound: no positive value fits better")
            }
            Note::IterationLimit => write!(
                f,
                "non-negative least squares stopped at its iteration limit; the values \
                 are feasible but may not be the best"
            ),
        }
    }
}

/// A fitted time expression and how well it predicts the log.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The step log's file, as the caller named it.
    pub steps: String,
    /// The expression as given.
    pub time: String,
    pub header: steps::Header,
    pub empty_steps: usize,
    /// Each unknown with its value, in order of first appearance.
    pub values: Vec<(String, f64)>,
    pub overall: Accuracy,
    pub regimes: [(Regime, Accuracy); 3],
    pub notes: Vec<Note>,
    /// The expression with the values in place.
    pub fitted_time: String,
    /// The stage block (report.rs).
    pub stage: String,
    /// The fitted time of each iteration, as the host would compute it.
    pub predicted: Vec<f64>,
}

/// Why a fit could not be made.
#[derive(Debug)]
pub enum FitError {
    /// `--stage` is not a name a stage can take.
    StageName(String),
    /// The expression does not parse, check or fit (diagnostics against its text).
    Time(Vec<Diagnostic>),
    Steps(steps::StepsError),
    /// The log has no iteration with a request.
    NoIterations {
        file: String,
    },
    /// The expression is not finite on an iteration (e.g. it divides by `prefill`).
    NotFinite {
        file: String,
        line: usize,
        step: u64,
    },
    Solver(nnls::NoConvergence),
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitError::StageName(name) => write!(
                f,
                "`{name}` cannot name a stage: a stage name is a Pool name (letters, \
                 digits and `_`, not starting with a digit) that is not a context variable"
            ),
            FitError::Time(diags) => write!(
                f,
                "the time expression has {} error{}",
                diags.len(),
                if diags.len() == 1 { "" } else { "s" }
            ),
            FitError::Steps(e) => e.fmt(f),
            FitError::NoIterations { file } => write!(
                f,
                "{file}: no iteration to fit (no step schedules a request)"
            ),
            FitError::NotFinite { file, line, step } => write!(
                f,
                "{file}:{line}: the time expression is not finite on step {step}"
            ),
            FitError::Solver(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FitError {}

/// Fits `model`'s unknowns to `log` and builds the stage block named `stage`.
pub fn fit(log: &StepLog, model: &TimeModel, stage: &StageName) -> Result<Fit, FitError> {
    if log.iterations.is_empty() {
        return Err(FitError::NoIterations {
            file: log.file.clone(),
        });
    }
    let (offset, columns) = basis(model, &log.iterations)?;
    not_finite_at(log, |i| {
        offset.get(i).is_some_and(|o| o.is_finite())
            && columns
                .iter()
                .all(|c| c.get(i).is_some_and(|v| v.is_finite()))
    })?;
    let target: Vec<f64> = log
        .iterations
        .iter()
        .zip(&offset)
        .map(|(it, o)| it.seconds - o)
        .collect();
    let solution = nnls::solve(&columns, &target).map_err(FitError::Solver)?;
    let values = solution.values.clone();
    let predicted = model
        .times(&values, &log.iterations)
        .map_err(FitError::Time)?;
    not_finite_at(log, |i| predicted.get(i).is_some_and(|p| p.is_finite()))?;

    let pairs = |keep: &dyn Fn(&Counts) -> bool| -> Vec<(f64, f64)> {
        log.iterations
            .iter()
            .zip(&predicted)
            .filter(|(it, _)| keep(&it.counts))
            .map(|(it, p)| (*p, it.seconds))
            .collect()
    };
    let overall = Accuracy::of(&pairs(&|_| true));
    let regimes = Regime::ALL.map(|r| (r, Accuracy::of(&pairs(&|c| Regime::of(c) == r))));
    let names = model.unknowns();
    let fitted_time = model.with_values(&values);
    Ok(Fit {
        steps: log.file.clone(),
        time: model.text().to_string(),
        header: log.header.clone(),
        empty_steps: log.empty_steps,
        values: names.iter().map(|n| n.to_string()).zip(values).collect(),
        overall,
        regimes,
        notes: notes(&solution, &names),
        stage: report::stage_block(stage, &log.header, &fitted_time),
        fitted_time,
        predicted,
    })
}

/// Per iteration, the offset f(0), and per unknown its column f(eᵢ) − f(0).
fn basis(
    model: &TimeModel,
    iterations: &[Iteration],
) -> Result<(Vec<f64>, Vec<Vec<f64>>), FitError> {
    let k = model.unknowns().len();
    let offset = model
        .times(&vec![0.0; k], iterations)
        .map_err(FitError::Time)?;
    let mut columns = Vec::with_capacity(k);
    for j in 0..k {
        let unit: Vec<f64> = (0..k).map(|i| if i == j { 1.0 } else { 0.0 }).collect();
        let at_unit = model.times(&unit, iterations).map_err(FitError::Time)?;
        columns.push(at_unit.iter().zip(&offset).map(|(f, o)| f - o).collect());
    }
    Ok((offset, columns))
}

/// What the solution could not decide, in the order the report lists it.
fn notes(solution: &nnls::Solution, names: &[&str]) -> Vec<Note> {
    let name = |j: &usize| names.get(*j).map(|n| n.to_string()).unwrap_or_default();
    let mut notes: Vec<Note> = solution
        .zero_columns
        .iter()
        .map(|j| Note::NoEffect(name(j)))
        .collect();
    if !solution.dependent.is_empty() {
        notes.push(Note::Dependent {
            names: solution.dependent.iter().map(name).collect(),
            rank: solution.rank,
            columns: names.len() - solution.zero_columns.len(),
        });
    }
    notes.extend(solution.at_bound.iter().map(|j| Note::AtBound(name(j))));
    if solution.ending == nnls::Ending::IterationLimit {
        notes.push(Note::IterationLimit);
    }
    notes
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The first iteration `finite` refuses, as an error.
fn not_finite_at(log: &StepLog, finite: impl Fn(usize) -> bool) -> Result<(), FitError> {
    match log.iterations.iter().enumerate().find(|(i, _)| !finite(*i)) {
        Some((_, it)) => Err(FitError::NotFinite {
            file: log.file.clone(),
            line: it.line,
            step: it.step,
        }),
        None => Ok(()),
    }
}
