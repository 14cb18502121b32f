//! `--html` and `--svg` as a user sees them: `poolc compare` of two specs on the
//! first sessions of the bundled Mooncake trace writes seven SVG charts and one page;
//! the page is opened in headless Chromium (Debian's `chromium`, which .ci/run
//! installs) and its screenshot must show every chart where the page's fixed layout
//! puts it, drawn (neither blank nor flooded), with a curve in each spec's colour,
//! and nothing past the last chart. Without Chromium the browser test is listed by
//! the test runner as ignored, with the reason (cli/build.rs); with `CI` set it always
//! runs, so CI fails without Chromium. The screenshot is kept at
//! `$CARGO_TARGET_TMPDIR/chart_page.png` to be looked at.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::poolc;
use poolc_tools::chart::{COLOURS, COLUMNS, HEADER, HEIGHT, WIDTH};

const FILES: [&str; 7] = [
    "ttft_cdf.svg",
    "e2e_cdf.svg",
    "waiting.svg",
    "residents.svg",
    "kv_allocated.svg",
    "kv_cached.svg",
    "hit_rate.svg",
];

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("poolc-chart-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The first `n` sessions of the bundled Mooncake trace, as a file of their own.
fn trace_head(dir: &Path, n: usize) -> PathBuf {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let text =
        std::fs::read_to_string(root.join("examples/traces/mooncake_conversation_trace.jsonl"))
            .unwrap();
    let head: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    let path = dir.join("head.jsonl");
    std::fs::write(&path, head).unwrap();
    path
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// Runs headless Chromium on `page` with a fixed window and returns the screenshot's
/// path.
fn screenshot(page: &Path, dir: &Path, size: (u32, u32)) -> PathBuf {
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
        .expect("headless Chromium is installed (Debian package chromium; .ci/run installs it)");
    let shot = dir.join("shot.png");
    // The flags keep a headless Chromium off the network (this machine has none)
    // and make one CSS pixel one screenshot pixel.
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium took more than 90 s to take a screenshot");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    shot
}

struct Image {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

impl Image {
    fn read(path: &Path) -> Image {
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        assert!(
            info.bit_depth == png::BitDepth::Eight && channels >= 3,
            "{info:?}"
        );
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Image {
            width: info.width,
            height: info.height,
            rgb,
        }
    }

    /// The pixels of the rectangle at (x, y) of size (w, h).
    fn cell(&self, x: u32, y: u32, w: u32, h: u32) -> impl Iterator<Item = [u8; 3]> + '_ {
        (y..y + h)
            .flat_map(move |r| (x..x + w).map(move |c| self.rgb[(r * self.width + c) as usize]))
    }
}

fn near(p: [u8; 3], (r, g, b): (u8, u8, u8)) -> bool {
    let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).abs();
    d(p[0], r) + d(p[1], g) + d(p[2], b) <= 40
}

/// The two specs compared, in colour order.
const SPECS: [&str; 2] = [
    "examples/policies/fifo.pool",
    "examples/policies/tiered.pool",
];

/// `poolc compare` of [`SPECS`] on the trace's first sessions, writing the page and
/// the SVG files into `dir`: (page, svg folder, the printed table).
fn compare_with_charts(dir: &Path) -> (PathBuf, PathBuf, String) {
    let trace = trace_head(dir, 1500);
    let page = dir.join("page.html");
    let svg = dir.join("svg");
    let mut args = vec!["compare"];
    args.extend(SPECS);
    let (trace_s, page_s, svg_s) = (
        trace.display().to_string(),
        page.display().to_string(),
        svg.display().to_string(),
    );
    args.extend(["--trace", &trace_s, "--html", &page_s, "--svg", &svg_s]);
    let o = poolc(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (page, svg, String::from_utf8(o.stdout).unwrap())
}

#[test]
fn html_page_and_svg_charts_hold_every_chart_with_a_curve_per_spec() {
    let dir = scratch("page");
    let (page, svg, table) = compare_with_charts(&dir);
    let specs = SPECS;

    // Seven SVG files of the stated size, each with a polyline in each spec's colour.
    let mut names: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
    for f in FILES {
        let text = std::fs::read_to_string(svg.join(f)).unwrap();
        assert!(
            text.starts_with(&format!("<svg width=\"{WIDTH}\" height=\"{HEIGHT}\"")),
            "{f}: {}",
            &text[..80]
        );
        for (i, _) in specs.iter().enumerate() {
            let stroke = format!(
                "<polyline fill=\"none\" opacity=\"1\" stroke=\"{}\"",
                hex(COLOURS[i])
            );
            assert!(text.contains(&stroke), "{f}: no curve for spec {i}");
        }
        // The legend names both specs.
        assert!(text.contains("fifo") && text.contains("tiered"), "{f}");
    }

    // The page holds the same charts inline and the printed table, and nothing that
    // would be fetched.
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<figure id=").count(), FILES.len());
    assert_eq!(html.matches("<svg ").count(), FILES.len());
    for needle in ["src=", "href=", "<script", "@import", "url("] {
        assert!(
            !html.contains(needle),
            "the page refers outside itself: {needle}"
        );
    }
    let first_row = table.lines().nth(1).unwrap();
    assert!(html.contains(first_row.trim()), "the table is on the page");
    let _ = std::fs::remove_dir_all(&dir);
}

/// In the browser: every chart where the layout puts it, drawn, in both colours.
#[test]
#[cfg_attr(
    missing_chromium,
    ignore = "needs headless Chromium (Debian package chromium)"
)]
fn html_page_in_chromium_shows_every_chart_with_a_curve_per_spec() {
    let dir = scratch("page-browser");
    let (page, _, _) = compare_with_charts(&dir);
    let specs = SPECS;
    let rows = (FILES.len() as u32).div_ceil(COLUMNS);
    let size = (COLUMNS * WIDTH, HEADER + rows * HEIGHT);
    let shot = screenshot(&page, &dir, size);
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chart_page.png");
    std::fs::copy(&shot, &kept).unwrap();
    let img = Image::read(&shot);
    assert_eq!(
        (img.width, img.height),
        size,
        "the screenshot has the window's size"
    );
    let white = |p: &[u8; 3]| p.iter().all(|&c| c >= 250);
    let header: Vec<[u8; 3]> = img.cell(0, 0, size.0, HEADER).collect();
    assert!(
        header.iter().filter(|p| p.iter().all(|&c| c < 100)).count() > 200,
        "the header's title was drawn"
    );
    for (k, f) in FILES.iter().enumerate() {
        let (x, y) = (
            (k as u32 % COLUMNS) * WIDTH,
            HEADER + (k as u32 / COLUMNS) * HEIGHT,
        );
        let px: Vec<[u8; 3]> = img.cell(x, y, WIDTH, HEIGHT).collect();
        let inked = px.iter().filter(|p| !white(p)).count() as f64 / px.len() as f64;
        assert!(
            (0.02..0.6).contains(&inked),
            "{f}: {:.1} % of the chart is inked (blank or flooded); see {}",
            inked * 100.0,
            kept.display()
        );
        for (i, _) in specs.iter().enumerate() {
            let n = px.iter().filter(|p| near(**p, COLOURS[i])).count();
            assert!(
                n >= 100,
                "{f}: only {n} pixels of spec {i}'s colour; see {}",
                kept.display()
            );
        }
    }
    // The grid's last cell holds no chart: nothing overflowed into it.
    let k = FILES.len() as u32;
    if !k.is_multiple_of(COLUMNS) {
        let (x, y) = ((k % COLUMNS) * WIDTH, HEADER + (k / COLUMNS) * HEIGHT);
        assert!(
            img.cell(x, y, WIDTH, HEIGHT).all(|p| white(&p)),
            "something drew past the charts"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A page that cannot be written is a clean error (exit 1, the path named) and
/// leaves no file, partial or temporary, behind; the report is not printed as if
/// all went well.
#[test]
fn an_unwritable_page_is_an_error_and_leaves_nothing() {
    let dir = scratch("unwritable");
    let ro = dir.join("missing-dir").join("page.html");
    let ro_s = ro.display().to_string();
    let o = poolc(&["run", "--synthetic", "40", "--html", &ro_s]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot write") && err.contains("page.html"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "no report on a failed run");
    assert!(!dir.join("missing-dir").exists());
    // `--svg` naming a file, not a directory.
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let file_s = file.display().to_string();
    let o = poolc(&["run", "--synthetic", "40", "--svg", &file_s]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a-file"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "only the file this test made: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
