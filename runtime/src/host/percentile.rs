//! The latency percentiles of a report, in bounded memory by default (docs/HOST.md,
//! "Percentiles"): an HDR histogram of nanoseconds whose buckets are at most 2^-10 of
//! their values wide, read at nearest rank, so a reported percentile is within
//! 2^-11 of the exact one plus 1 ns (the rounding to whole nanoseconds) whatever the
//! number of samples. `exact` keeps every value and sorts them at the end: the nearest-rank
//! method reports had before, at 8 bytes a sample. It owns the accumulation and the
//! reading; what a percentile means for a session is the host's business.

use hdrhistogram::Histogram;

use super::report::Percentiles;

/// Significant decimal digits the histogram keeps: 3 gives 2,048 sub-buckets, so
/// every value from 2^11 ns up lies in a bucket 2^-10 of it wide or narrower, and
/// values below 2^11 ns are kept exactly.
const SIGFIGS: u8 = 3;

/// Longest latency told apart, in nanoseconds (2^62 ns: 146 years of simulated time);
/// longer ones count as this. The histogram's size grows with the log of it: 442 KB
/// each (54 × 1,024 counts of 8 bytes), allocated once when the run starts.
const MAX_NS: u64 = 1 << 62;

/// One kind of latency (TTFT, ITL or E2E) of a run, as it accumulates.
#[derive(Debug)]
pub(crate) enum Latencies {
    /// Every value, for today's exact nearest-rank reading.
    Exact(Vec<f64>),
    /// The histogram, with the count and the sum of the values as given (for the
    /// mean, which the buckets would blur). Equal values in a row are recorded once
    /// with their count (`run` of `pending` ns, not yet in `hist`): a step host's
    /// residents that decode together give one inter-token latency each, all equal,
    /// and one record per sample was 7 % of a replay. The sum still adds every value
    /// in turn, so the mean is the same to the bit.
    Sketch {
        hist: Box<Histogram<u64>>,
        sum: f64,
        pending: u64,
        run: u64,
    },
    /// Nothing kept: the run's reader wants no percentiles (`LatencySamples::Unkept`).
    Unkept,
}

impl Latencies {
    /// Every value kept, `reserve` of them without reallocating.
    pub(crate) fn exact(reserve: usize) -> Latencies {
        Latencies::Exact(Vec::with_capacity(reserve))
    }

    /// The bounded accumulator.
    pub(crate) fn sketch() -> Latencies {
        // The bounds are constants the crate accepts (1 ≤ low, 2·low ≤ high,
        // sigfig ≤ 5): this cannot fail.
        let hist = Histogram::new_with_bounds(1, MAX_NS, SIGFIGS).expect("valid constant bounds");
        Latencies::Sketch {
            hist: Box::new(hist),
            sum: 0.0,
            pending: 0,
            run: 0,
        }
    }

    /// Adds one latency in seconds (finite and ≥ 0: the host's times are).
    #[inline]
    pub(crate) fn push(&mut self, seconds: f64) {
        self.push_n(seconds, 1);
    }

    /// Adds `n` equal latencies, as `n` calls of [`Latencies::push`] would: a sketch
    /// still adds the value to its sum once per latency (the mean is then the same
    /// to the bit), but compares and records it once.
    #[inline]
    pub(crate) fn push_n(&mut self, seconds: f64, n: u64) {
        if n == 0 {
            return;
        }
        match self {
            Latencies::Exact(v) => v.extend((0..n).map(|_| seconds)),
            Latencies::Unkept => {}
            Latencies::Sketch {
                hist,
                sum,
                pending,
                run,
            } => {
                for _ in 0..n {
                    *sum += seconds;
                }
                let ns = to_ns(seconds);
                if *run > 0 && ns == *pending {
                    *run += n;
                } else {
                    if *run > 0 {
                        hist.saturating_record_n(*pending, *run);
                    }
                    (*pending, *run) = (ns, n);
                }
            }
        }
    }

    /// Records the run of equal values still pending (a sketch's reading needs it).
    fn flush(&mut self) {
        if let Latencies::Sketch {
            hist, pending, run, ..
        } = self
            && *run > 0
        {
            hist.saturating_record_n(*pending, *run);
            *run = 0;
        }
    }

    /// p50/p90/p99 at nearest rank (the value at 1-based rank ⌈p·n/100⌉), the count
    /// and the mean. Exact: of the sorted values. Sketch: the middle of the bucket
    /// holding that rank's value.
    pub(crate) fn percentiles(&mut self) -> Percentiles {
        self.flush();
        match self {
            Latencies::Exact(v) => Percentiles::of(v),
            Latencies::Unkept => Percentiles::default(),
            Latencies::Sketch { hist, sum, .. } => {
                let n = hist.len();
                let at = |p: u64| (n > 0).then(|| at_rank(hist, rank(p, n)));
                Percentiles {
                    count: n,
                    mean: (n > 0).then(|| *sum / n as f64),
                    p50: at(50),
                    p90: at(90),
                    p99: at(99),
                }
            }
        }
    }
}

/// ⌈p·n/100⌉ in integers, at least 1: the same rank [`Percentiles::of`] reads. (The
/// crate's own `value_at_quantile` finds the same bucket but answers its highest
/// value, up to 2^-10 off; the middle of the bucket halves that.)
fn rank(p: u64, n: u64) -> u64 {
    (u128::from(p) * u128::from(n))
        .div_ceil(100)
        .try_into()
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The value at 1-based `rank` of the recorded values, as the middle of its bucket,
/// in seconds: for a value of `x` ns, within 2^-11·x of it.
fn at_rank(hist: &Histogram<u64>, rank: u64) -> f64 {
    let mut seen = 0u64;
    for v in hist.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return hist.median_equivalent(v.value_iterated_to()) as f64 / 1e9;
        }
    }
    // rank ≤ n, so the loop returns; the largest value is the honest answer anyway.
    hist.median_equivalent(hist.max()) as f64 / 1e9
}

/// Seconds to whole nanoseconds, rounded; negative or NaN (not produced by the host)
/// count as 0, beyond [`MAX_NS`] as the histogram saturates.
fn to_ns(seconds: f64) -> u64 {
    let ns = (seconds * 1e9).round();
    if ns >= 1.0 {
        // `as` saturates at u64::MAX for huge values; the histogram clamps further.
        ns as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::trace::synthetic::SplitMix64;

    /// The bound the module promises, checked for one percentile.
    fn within(sketch: f64, exact: f64) -> bool {
        (sketch - exact).abs() <= exact * 2f64.powi(-11) + 1e-9
    }

    fn both(values: &[f64]) -> (Percentiles, Percentiles) {
        let mut e = Latencies::exact(values.len());
        let mut s = Latencies::sketch();
        for &v in values {
            e.push(v);
            s.push(v);
        }
        (e.percentiles(), s.percentiles())
    }

    fn assert_agree(values: &[f64]) {
        let (e, s) = both(values);
        assert_eq!(e.count, s.count);
        for (name, a, b) in [
            ("p50", e.p50, s.p50),
            ("p90", e.p90, s.p90),
            ("p99", e.p99, s.p99),
        ] {
            let (a, b) = (a.unwrap(), b.unwrap());
            assert!(within(b, a), "{name}: exact {a}, sketch {b}");
        }
        let (a, b) = (e.mean.unwrap(), s.mean.unwrap());
        assert!((a - b).abs() <= a * 1e-9, "mean {a} vs {b}");
    }

    #[test]
    fn percentile_the_sketch_is_within_its_bound_of_the_exact_nearest_rank() {
        // Latencies over twelve decades, uniform in log: every bucket width is hit.
        let mut rng = SplitMix64::new(7);
        let wide: Vec<f64> = (0..200_000)
            .map(|_| 10f64.powf(-7.0 + 12.0 * rng.unit()))
            .collect();
        assert_agree(&wide);
        // A simulator's latencies are sums of a few iteration times: many repeats.
        let steps: Vec<f64> = (0..100_000)
            .map(|_| 0.004 * rng.range(1, 400) as f64 + 0.00002 * rng.range(0, 8192) as f64)
            .collect();
        assert_agree(&steps);
        // Tiny samples, where one rank is a large step: n = 1, 2, 10, 99, 101.
        for n in [1usize, 2, 10, 99, 101] {
            let v: Vec<f64> = (0..n).map(|i| 0.5 + i as f64).collect();
            assert_agree(&v);
        }
    }

    #[test]
    fn percentile_ranks_are_the_integer_nearest_rank() {
        // n = 10: p90 is rank ⌈90·10/100⌉ = 9, so 9 s of 1..=10 s, not 10 s.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let (e, s) = both(&v);
        assert_eq!(e.p90, Some(9.0));
        assert!(within(s.p90.unwrap(), 9.0), "{:?}", s.p90);
        assert_eq!((rank(50, 1), rank(99, 100), rank(99, 101)), (1, 99, 100));
    }

    #[test]
    fn percentile_every_rank_is_within_the_bound_at_the_bucket_edges() {
        // Values just below and at each bucket boundary 1024·2^k ns (rounding to
        // whole nanoseconds moves some across it), and every rank read against the
        // sorted values: not only the three the report reads.
        let mut values = Vec::new();
        for k in 1..40 {
            let edge = 1024.0 * 2f64.powi(k);
            for d in [-1.5, -0.5, -0.49, 0.0, 0.5, edge / 2048.0] {
                values.push((edge + d) * 1e-9);
            }
        }
        let mut sketch = Latencies::sketch();
        values.iter().for_each(|&v| sketch.push(v));
        sketch.flush();
        let Latencies::Sketch { hist, .. } = sketch else {
            unreachable!("sketch() makes a sketch")
        };
        values.sort_by(f64::total_cmp);
        for (i, &x) in values.iter().enumerate() {
            let got = at_rank(&hist, i as u64 + 1);
            assert!(within(got, x), "rank {}: exact {x}, sketch {got}", i + 1);
        }
    }

    #[test]
    fn percentile_runs_of_equal_values_record_what_each_value_would() {
        // Runs of equal values (and of values equal once rounded to ns), broken by
        // others, against a histogram fed one value at a time and the plain sum.
        let mut values = Vec::new();
        for (v, n) in [
            (0.05, 7),
            (0.05 + 1e-12, 3),
            (0.2, 1),
            (0.05, 4),
            (3.0, 2),
            (0.2, 5),
        ] {
            values.extend(std::iter::repeat_n(v, n));
        }
        let mut sketch = Latencies::sketch();
        values.iter().for_each(|&v| sketch.push(v));
        let got = sketch.percentiles();
        let mut reference = Histogram::<u64>::new_with_bounds(1, MAX_NS, SIGFIGS).unwrap();
        values
            .iter()
            .for_each(|&v| reference.saturating_record(to_ns(v)));
        let Latencies::Sketch { hist, sum, .. } = &sketch else {
            unreachable!("sketch() makes a sketch")
        };
        let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        };
        assert_eq!(counts(hist), counts(&reference));
        let plain = values.iter().fold(0.0, |a, &v| a + v);
        assert_eq!(sum.to_bits(), plain.to_bits());
        assert_eq!(got.count, values.len() as u64);
        // Reading again after more values: the run pending at the first reading was
        // recorded once, not twice.
        sketch.push(0.2);
        assert_eq!(sketch.percentiles().count, values.len() as u64 + 1);
    }

    #[test]
    fn percentile_n_equal_values_at_once_record_what_n_pushes_would() {
        // Batches that continue the pending run, break it, and are empty, in both
        // modes, against the same values pushed one at a time: the same sum to the
        // bit and the same percentiles.
        let batches = [
            (0.05, 3),
            (0.05, 4),
            (0.05 + 1e-12, 2),
            (0.2, 0),
            (0.2, 5),
            (0.05, 1),
        ];
        for mut one in [Latencies::sketch(), Latencies::exact(0)] {
            let mut many = match one {
                Latencies::Exact(_) => Latencies::exact(0),
                _ => Latencies::sketch(),
            };
            for (v, n) in batches {
                (0..n).for_each(|_| one.push(v));
                many.push_n(v, n);
            }
            if let (Latencies::Sketch { sum: a, .. }, Latencies::Sketch { sum: b, .. }) =
                (&one, &many)
            {
                assert_eq!(a.to_bits(), b.to_bits());
            }
            assert_eq!(one.percentiles(), many.percentiles());
            assert_eq!(many.percentiles().count, 15);
        }
    }

    #[test]
    fn percentile_an_empty_sketch_reports_none_and_small_values_are_exact() {
        let (_, s) = both(&[]);
        assert_eq!((s.count, s.mean, s.p50, s.p99), (0, None, None, None));
        // Below 2^11 ns every nanosecond has its own bucket.
        let (_, s) = both(&[1e-9, 2e-9, 2047e-9]);
        assert_eq!(s.p50, Some(2e-9));
        assert_eq!(s.p99, Some(2047e-9));
        // Zero and a latency past the histogram's range are kept, not dropped.
        let (_, s) = both(&[0.0, 1e12]);
        assert_eq!(s.count, 2);
        assert_eq!(s.p50, Some(0.0));
    }
}
