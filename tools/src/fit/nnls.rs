//! Non-negative least squares for `poolc fit`: the x ≥ 0 that minimises
//! ‖Σ_j x_j a_j − y‖₂ over columns a_j, by Lawson and Hanson's active-set method
//! (*Solving Least Squares Problems*, 1974, chapter 23, algorithm NNLS).
//!
//! Each column is scaled to unit norm first (a column of zeros is set aside: its
//! value is 0), and one Householder QR reduces the tall problem to its square part
//! R x ≈ Qᵀy, which has the same solutions. The unconstrained subproblems on the
//! passive columns are solved by SVD, with singular values at or below
//! σ_max · max(rows, columns) · ε treated as zero, so a rank-deficient subproblem gives
//! its minimum-norm solution instead of infinities or a panic. The same threshold on
//! the SVD of R gives the numerical rank, and the unknowns in the support of its null
//! space are the ones the data cannot tell apart. It knows nothing of expressions or
//! iterations: columns in, values out.

use std::fmt;
use std::iter;

use nalgebra::{DMatrix, DVector, SVD};

/// How many sweeps an SVD may take before it counts as not converging: far more than
/// the few a matrix of a handful of columns needs.
const SVD_SWEEPS: usize = 100_000;

/// The weight on a column, in the null space of the scaled problem, above which it is
/// reported as not told apart (a unit null vector's squared component).
const DEPENDENT: f64 = 1e-6;

/// How the active-set iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// At the optimum: no column outside the passive set would lower the residual.
    Optimal,
    /// At the iteration limit (3 × columns, as SciPy's `nnls` counts): the values are
    /// feasible and as good as the last step reached.
    IterationLimit,
}

/// The solution, and what the data could not decide.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// One value ≥ 0 per column, in the columns' own units.
    pub values: Vec<f64>,
    /// Columns that are zero everywhere: their value is 0 and the data say nothing of it.
    pub zero_columns: Vec<usize>,
    /// Columns in the support of the null space of the non-zero columns: other
    /// values of these fit equally well.
    pub dependent: Vec<usize>,
    /// The numerical rank of the non-zero columns.
    pub rank: usize,
    /// Columns whose value is 0 because of the bound (neither zero nor dependent): no
    /// positive value fits better.
    pub at_bound: Vec<usize>,
    pub ending: Ending,
}

/// An SVD that did not converge within its sweep limit (100,000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoConvergence;

impl fmt::Display for NoConvergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the singular value decomposition of a least-squares subproblem did not converge"
        )
    }
}

impl std::error::Error for NoConvergence {}

/// The non-negative least-squares fit of `y` on `columns` (each as long as `y`).
pub fn solve(columns: &[Vec<f64>], y: &[f64]) -> Result<Solution, NoConvergence> {
    let n = y.len();
    let norms: Vec<f64> = columns
        .iter()
        .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
        .collect();
    let (live, zero_columns): (Vec<usize>, Vec<usize>) =
        (0..columns.len()).partition(|&j| norms.get(j).is_some_and(|s| *s > 0.0));
    let mut solution = Solution {
        values: vec![0.0; columns.len()],
        zero_columns,
        dependent: Vec::new(),
        rank: 0,
        at_bound: Vec::new(),
        ending: Ending::Optimal,
    };
    let k = live.len();
    if k == 0 {
        return Ok(solution);
    }
    // Pad with zero rows to at least k, so that R is square; zero rows change no norm.
    let rows = n.max(k);
    let mut data = Vec::with_capacity(rows * k);
    for (column, scale) in live
        .iter()
        .filter_map(|&j| columns.get(j).zip(norms.get(j)))
    {
        let scaled = column.iter().map(|v| v / scale);
        data.extend(scaled.chain(iter::repeat(0.0)).take(rows));
    }
    let a = DMatrix::from_vec(rows, k, data);
    let padded = y.iter().copied().chain(iter::repeat(0.0)).take(rows);
    let mut rhs = DVector::from_iterator(rows, padded);
    let qr = a.qr();
    qr.q_tr_mul(&mut rhs);
    let r = qr.r();
    let d: DVector<f64> = rhs.rows(0, k).into_owned();

    let (z, ending) = lawson_hanson(&r, &d, rows)?;
    let (rank, null_weight) = null_space(&r, rows)?;
    solution.ending = ending;
    solution.rank = rank;
    for (t, &j) in live.iter().enumerate() {
        let (Some(&z), Some(&scale)) = (z.get(t), norms.get(j)) else {
            continue;
        };
        let dependent = null_weight.get(t).is_some_and(|w| *w > DEPENDENT);
        let value = z / scale;
        // +0 for a zero, never −0: the value is printed and read back.
        let value = if value > 0.0 { value } else { 0.0 };
        if let Some(slot) = solution.values.get_mut(j) {
            *slot = value;
        }
        if dependent {
            solution.dependent.push(j);
        } else if value == 0.0 {
            solution.at_bound.push(j);
        }
    }
    Ok(solution)
}

/// Lawson–Hanson on the square problem R x ≈ d; `rows` is the original row count,
/// which scales the tolerances.
fn lawson_hanson(
    r: &DMatrix<f64>,
    d: &DVector<f64>,
    rows: usize,
) -> Result<(Vec<f64>, Ending), NoConvergence> {
    let k = r.ncols();
    let mut x = vec![0.0; k];
    let mut passive = vec![false; k];
    // Columns that just entered and could not take a positive value: out of the
    // running until x moves (Lawson and Hanson's step 6, against cycling on rounding).
    let mut refused = vec![false; k];
    // A gradient entry at or below this is rounding, not a direction of descent.
    let tol = 10.0 * f64::EPSILON * rows as f64 * r.norm() * d.norm();
    for _ in 0..3 * k {
        let w = gradient(r, d, &x);
        // The column whose value would lower the residual fastest; the first on ties.
        let enter = w
            .iter()
            .zip(&passive)
            .zip(&refused)
            .enumerate()
            .filter(|(_, ((w, p), f))| **w > tol && !**p && !**f)
            .map(|(j, ((w, _), _))| (j, *w))
            .fold(None, |best: Option<(usize, f64)>, (j, w)| match best {
                Some((_, b)) if b >= w => best,
                _ => Some((j, w)),
            });
        let Some((entering, _)) = enter else {
            return Ok((x, Ending::Optimal));
        };
        set(&mut passive, entering, true);
        let mut first = true;
        loop {
            let s = passive_solution(r, d, &passive)?;
            let feasible = s.iter().zip(&passive).all(|(s, p)| !p || *s > 0.0);
            if feasible {
                x = s;
                refused.fill(false);
                break;
            }
            if first && s.get(entering).is_some_and(|s| *s <= 0.0) {
                set(&mut passive, entering, false);
                set(&mut refused, entering, true);
                break;
            }
            first = false;
            // Step from x towards s until the first passive value reaches 0; that
            // column leaves the passive set even if rounding kept it above 0.
            let Some((leaving, alpha)) = x
                .iter()
                .zip(&s)
                .zip(&passive)
                .enumerate()
                .filter(|(_, ((_, s), p))| **p && **s <= 0.0)
                .map(|(j, ((x, s), _))| (j, x / (x - s)))
                .fold(None, |best: Option<(usize, f64)>, (j, a)| match best {
                    Some((_, b)) if b <= a => best,
                    _ => Some((j, a)),
                })
            else {
                // Not reached: an infeasible s has a passive value at or below 0.
                break;
            };
            for ((x, s), p) in x.iter_mut().zip(&s).zip(passive.iter_mut()) {
                *x += alpha * (s - *x);
                if *p && *x <= 0.0 {
                    *p = false;
                    *x = 0.0;
                }
            }
            set(&mut passive, leaving, false);
            if let Some(v) = x.get_mut(leaving) {
                *v = 0.0;
            }
        }
    }
    Ok((x, Ending::IterationLimit))
}

fn set(flags: &mut [bool], j: usize, value: bool) {
    if let Some(f) = flags.get_mut(j) {
        *f = value;
    }
}

/// Rᵀ(d − R x): minus half the gradient of the squared residual.
fn gradient(r: &DMatrix<f64>, d: &DVector<f64>, x: &[f64]) -> Vec<f64> {
    let x = DVector::from_column_slice(x);
    let residual = d - r * x;
    r.tr_mul(&residual).iter().copied().collect()
}

/// The least-squares solution on the passive columns, 0 elsewhere.
fn passive_solution(
    r: &DMatrix<f64>,
    d: &DVector<f64>,
    passive: &[bool],
) -> Result<Vec<f64>, NoConvergence> {
    let columns: Vec<usize> = (0..passive.len())
        .filter(|&j| passive.get(j).copied().unwrap_or(false))
        .collect();
    let mut full = vec![0.0; passive.len()];
    if columns.is_empty() {
        return Ok(full);
    }
    let rp = r.select_columns(columns.iter());
    let shape = rp.nrows().max(rp.ncols());
    let svd = SVD::try_new(rp, true, true, f64::EPSILON, SVD_SWEEPS).ok_or(NoConvergence)?;
    let eps = svd.singular_values.max() * shape as f64 * f64::EPSILON;
    let s = svd.solve(d, eps).map_err(|_| NoConvergence)?;
    for (&j, v) in columns.iter().zip(s.iter()) {
        if let Some(slot) = full.get_mut(j) {
            *slot = *v;
        }
    }
    Ok(full)
}

/// The numerical rank of R and, per column, its squared weight in R's numerical null
/// space (0 for a column every null vector leaves alone).
fn null_space(r: &DMatrix<f64>, rows: usize) -> Result<(usize, Vec<f64>), NoConvergence> {
    let k = r.ncols();
    let svd =
        SVD::try_new(r.clone(), false, true, f64::EPSILON, SVD_SWEEPS).ok_or(NoConvergence)?;
    let v_t = svd.v_t.as_ref().ok_or(NoConvergence)?;
    let tol = svd.singular_values.max() * rows.max(k) as f64 * f64::EPSILON;
    let mut weight = vec![0.0; k];
    let mut rank = 0;
    for (i, sigma) in svd.singular_values.iter().enumerate() {
        if *sigma > tol {
            rank += 1;
            continue;
        }
        for (w, v) in weight.iter_mut().zip(v_t.row(i).iter()) {
            *w += v * v;
        }
    }
    Ok((rank, weight))
}
