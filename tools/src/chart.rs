//! The pictures of a replay: from the [`Series`] each run kept, the charts of
//! `--svg DIR` (one SVG file each, drawn with `plotters`) and the one self-contained
//! page of `--html FILE` that holds them inline — no script, no network, no font to
//! fetch. One curve per spec on every chart: TTFT and E2E distributions, and over
//! simulated time the waiting queue, the residents, KV allocated and cached, and the
//! prefix-cache hit rate. It renders text only; writing files is the CLI's (through
//! [`poolc::atomic_file`]). The page's layout is fixed (constants below) so a test
//! can find each chart in a screenshot.

use std::fmt::Write;
use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use poolrt::host::{Series, SeriesPoint};

/// Every chart's size, pixels.
pub const WIDTH: u32 = 720;
pub const HEIGHT: u32 = 360;
/// The page: a header of this height, then the charts in a grid of this many
/// columns, in [`Chart`] order, with no gap; the summary table follows them.
pub const HEADER: u32 = 96;
pub const COLUMNS: u32 = 2;

/// Curve colours, one per spec in order (Okabe and Ito's colour-blind-safe set,
/// without its yellow, which is unreadable on white); a sixth spec reuses the first.
pub const COLOURS: [(u8, u8, u8); 6] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (0, 0, 0),
];

/// What one spec's run gives the charts.
pub struct Curves {
    /// The legend's name for the spec.
    pub name: String,
    pub points: Vec<SeriesPoint>,
    /// Sorted (total order).
    pub ttft: Vec<f64>,
    pub e2e: Vec<f64>,
}

impl Curves {
    /// Reads a finished run's series up to its simulated end.
    pub fn of(name: String, mut series: Series, end: f64) -> Curves {
        let points = series.points(end);
        let mut ttft = series.ttft().to_vec();
        let mut e2e = series.e2e().to_vec();
        ttft.sort_by(f64::total_cmp);
        e2e.sort_by(f64::total_cmp);
        Curves {
            name,
            points,
            ttft,
            e2e,
        }
    }
}

/// One rendered chart.
pub struct Chart {
    /// Its file name under `--svg DIR`, and its element id on the page.
    pub file: &'static str,
    pub title: &'static str,
    pub svg: String,
}

/// A chart that `plotters` failed to draw (a message; it does not happen for finite
/// data, which is all a report holds).
#[derive(Debug)]
pub struct ChartError(String);

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw a chart: {}", self.0)
    }
}

impl std::error::Error for ChartError {}

fn drawing<E: std::fmt::Debug>(e: E) -> ChartError {
    ChartError(format!("{e:?}"))
}

/// A time series: what it reads of a point, and its axis.
struct Over {
    file: &'static str,
    title: &'static str,
    y: &'static str,
    value: fn(&SeriesPoint) -> Option<f64>,
}

const OVER_TIME: [Over; 5] = [
    Over {
        file: "waiting.svg",
        title: "Waiting sessions over time",
        y: "waiting (mean per bucket)",
        value: |p| Some(p.waiting),
    },
    Over {
        file: "residents.svg",
        title: "Resident sessions over time",
        y: "residents (mean per bucket)",
        value: |p| Some(p.residents),
    },
    Over {
        file: "kv_allocated.svg",
        title: "KV allocated over time",
        y: "units allocated",
        value: |p| Some(p.allocated),
    },
    Over {
        file: "kv_cached.svg",
        title: "KV cached (evictable) over time",
        y: "units cached",
        value: |p| Some(p.cached),
    },
    Over {
        file: "hit_rate.svg",
        title: "Prefix-cache hit rate over time (pool and tier)",
        y: "hit units / prompt units",
        value: |p| p.with_tier,
    },
];

/// Every chart, in page order: the TTFT and E2E distributions, then the five over simulated time.
pub fn charts(runs: &[Curves]) -> Result<Vec<Chart>, ChartError> {
    let mut out = vec![
        Chart {
            file: "ttft_cdf.svg",
            title: "Time to first token: distribution",
            svg: cdf(runs, "Time to first token: distribution", "TTFT", |c| {
                &c.ttft
            })?,
        },
        Chart {
            file: "e2e_cdf.svg",
            title: "End-to-end latency: distribution",
            svg: cdf(runs, "End-to-end latency: distribution", "E2E", |c| &c.e2e)?,
        },
    ];
    for o in &OVER_TIME {
        out.push(Chart {
            file: o.file,
            title: o.title,
            svg: over_time(runs, o)?,
        });
    }
    Ok(out)
}

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = COLOURS.get(i % COLOURS.len()).copied().unwrap_or((0, 0, 0));
    RGBColor(r, g, b)
}

/// Draws on a fresh SVG of the chart size and returns its text.
fn svg(
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        draw(&root)?;
        root.present().map_err(drawing)?;
    }
    Ok(text)
}

/// Seconds on a log axis: `0.05`, `2`, `300`.
fn seconds_label(v: &f64) -> String {
    if *v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

/// Large counts: `448k`, `1.2M`.
fn count_label(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').to_string()
    }
}

/// The empirical CDF of each run's sorted sample, at most this many points a curve
/// (evenly spaced ranks; the first and last sample always among them).
const CDF_POINTS: usize = 400;

fn cdf_points(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let m = CDF_POINTS.min(n);
    (0..m)
        .filter_map(|k| {
            let rank = if m == 1 { n - 1 } else { k * (n - 1) / (m - 1) };
            sorted.get(rank).map(|&v| (v, (rank + 1) as f64 / n as f64))
        })
        .collect()
}

fn cdf(
    runs: &[Curves],
    title: &str,
    what: &str,
    sample: fn(&Curves) -> &Vec<f64>,
) -> Result<String, ChartError> {
    // A log axis over every positive value of every run.
    let positive = runs
        .iter()
        .flat_map(|c| sample(c).iter().copied())
        .filter(|v| *v > 0.0);
    let (lo, hi) = positive.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let (lo, hi) = if lo.is_finite() {
        (lo * 0.8, hi * 1.25)
    } else {
        (0.01, 100.0)
    };
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(format!("{what}, seconds (log scale)"))
            .y_desc("fraction of sessions")
            .x_label_formatter(&seconds_label)
            .draw()
            .map_err(drawing)?;
        for (i, c) in runs.iter().enumerate() {
            let pts: Vec<(f64, f64)> = cdf_points(sample(c))
                .into_iter()
                .map(|(x, y)| (x.max(lo), y))
                .collect();
            let style = colour(i).stroke_width(2);
            chart
                .draw_series(LineSeries::new(pts, style))
                .map_err(drawing)?
                .label(c.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(drawing)?;
        Ok(())
    })
}

/// A run's curve, cut where the series has no value (a bucket with no admission has
/// no hit rate).
fn segments(
    points: &[SeriesPoint],
    value: fn(&SeriesPoint) -> Option<f64>,
) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut open = false;
    for p in points {
        match value(p) {
            Some(v) if v.is_finite() => {
                if !open {
                    out.push(Vec::new());
                    open = true;
                }
                if let Some(seg) = out.last_mut() {
                    seg.push((p.t, v));
                }
            }
            _ => open = false,
        }
    }
    out
}

fn range_of(values: impl Iterator<Item = f64>) -> Range<f64> {
    let hi = values.fold(0.0f64, f64::max);
    0.0..if hi > 0.0 { hi * 1.05 } else { 1.0 }
}

fn over_time(runs: &[Curves], o: &Over) -> Result<String, ChartError> {
    let curves: Vec<Vec<Vec<(f64, f64)>>> =
        runs.iter().map(|c| segments(&c.points, o.value)).collect();
    let all = || curves.iter().flatten().flatten();
    let x = range_of(all().map(|p| p.0));
    let y = range_of(all().map(|p| p.1));
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .caption(o.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x, y)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("simulated time, seconds")
            .y_desc(o.y)
            .y_label_formatter(&count_label)
            .x_label_formatter(&count_label)
            .draw()
            .map_err(drawing)?;
        for (i, (c, segs)) in runs.iter().zip(&curves).enumerate() {
            let style = colour(i).stroke_width(2);
            for (k, seg) in segs.iter().enumerate() {
                let drawn = chart
                    .draw_series(LineSeries::new(seg.iter().copied(), style))
                    .map_err(drawing)?;
                if k == 0 {
                    drawn
                        .label(c.name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(drawing)?;
        Ok(())
    })
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The page: `title` and `subtitle` in its header, every chart inline in the grid,
/// then `summary` (the report or comparison table, as text).
pub fn page(title: &str, subtitle: &str, charts: &[Chart], summary: &str) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{t}</title>\n<style>\n\
         body {{ margin: 0; background: #fff; color: #111; font-family: sans-serif; }}\n\
         header {{ box-sizing: border-box; height: {HEADER}px; overflow: hidden; padding: 8px 16px; }}\n\
         header h1 {{ font-size: 20px; margin: 8px 0; }}\n\
         header p {{ font-size: 14px; margin: 4px 0; }}\n\
         .charts {{ display: grid; grid-template-columns: repeat({COLUMNS}, {WIDTH}px); }}\n\
         figure {{ margin: 0; width: {WIDTH}px; height: {HEIGHT}px; overflow: hidden; }}\n\
         figure svg {{ display: block; }}\n\
         pre {{ padding: 16px; font-size: 13px; }}\n\
         </style>\n</head>\n<body>\n<header>\n<h1>{t}</h1>\n<p>{s}</p>\n</header>\n\
         <div class=\"charts\">\n",
        t = escape(title),
        s = escape(subtitle),
    );
    for c in charts {
        let id = c.file.trim_end_matches(".svg");
        let _ = write!(
            html,
            "<figure id=\"{id}\" title=\"{}\">\n{}\n</figure>\n",
            escape(c.title),
            strip_prolog(&c.svg)
        );
    }
    let _ = write!(
        html,
        "</div>\n<pre>{}</pre>\n</body>\n</html>\n",
        escape(summary)
    );
    html
}

/// An SVG document's text without its XML declaration, to sit inside HTML.
fn strip_prolog(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest
            .find("?>")
            .map_or(svg, |i| rest.get(i + 2..).unwrap_or(svg)),
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    /// The CDF's points are (value, rank/n) at evenly spaced ranks, ending at 1.
    #[test]
    fn cdf_points_are_ranks_over_n() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(
            cdf_points(&s),
            vec![(1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]
        );
        let big: Vec<f64> = (0..10_000).map(f64::from).collect();
        let p = cdf_points(&big);
        assert_eq!(p.len(), CDF_POINTS);
        assert_eq!(p[0], (0.0, 1.0 / 10_000.0));
        assert_eq!(*p.last().unwrap(), (9_999.0, 1.0));
    }

    /// Axis labels read as a person writes them.
    #[test]
    fn axis_labels_are_short() {
        let c = |v: f64| count_label(&v);
        assert_eq!(
            [
                c(0.0),
                c(5.0),
                c(0.9),
                c(0.25),
                c(35.0),
                c(448_000.0),
                c(1_250_000.0)
            ],
            ["0", "5", "0.9", "0.25", "35", "448k", "1.2M"]
        );
        let s = |v: f64| seconds_label(&v);
        assert_eq!(
            [s(0.05), s(0.1), s(1.0), s(300.0)],
            ["0.05", "0.1", "1", "300"]
        );
    }

    /// A series with a gap draws two pieces, not a line across the gap.
    #[test]
    fn curves_break_where_a_bucket_has_no_value() {
        let p = |t, h| SeriesPoint {
            t,
            waiting: 0.0,
            residents: 0.0,
            allocated: 0.0,
            cached: 0.0,
            hit_rate: h,
            with_tier: h,
        };
        let pts = [
            p(0.5, Some(0.1)),
            p(1.5, None),
            p(2.5, Some(0.3)),
            p(3.5, Some(0.2)),
        ];
        let segs = segments(&pts, |p| p.with_tier);
        assert_eq!(segs, vec![vec![(0.5, 0.1)], vec![(2.5, 0.3), (3.5, 0.2)]]);
    }

    /// The page escapes what it is given and holds no reference to anything outside
    /// it.
    #[test]
    fn page_is_self_contained_and_escaped() {
        let charts = [Chart {
            file: "x.svg",
            title: "X",
            svg: "<?xml version=\"1.0\"?>\n<svg width=\"720\"></svg>".into(),
        }];
        let html = page("a <b> & c", "sub", &charts, "rows < 3");
        assert!(html.contains("<h1>a &lt;b&gt; &amp; c</h1>"));
        assert!(html.contains("<figure id=\"x\" title=\"X\">\n\n<svg width=\"720\"></svg>"));
        assert!(html.contains("<pre>rows &lt; 3</pre>"));
        assert!(!html.contains("<?xml"));
        for needle in ["src=", "href=", "@import", "url(", "<script"] {
            assert!(!html.contains(needle), "{needle}");
        }
    }
}
