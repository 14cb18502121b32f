//! `poolc sweep` end to end (docs/SWEEP.md): every row equals `poolc run --json` of
//! the same point run on its own (metric texts byte for byte); the capacity search
//! finds the scale a brute-force scan of `poolc run --rate-scale` finds; a sweep
//! stopped by SIGINT keeps its finished rows, and `--resume` (after a cut-off last
//! line) gives the results.csv an uninterrupted sweep gives; a results.jsonl of
//! another grid is refused; bad grids and flags exit 1 and 2 without a panic; a
//! point that deadlocks fails the sweep naming the point and its sessions.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test may panic: it is how it fails

mod cli_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::poolc;
use serde_json::value::RawValue;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn policy(name: &str) -> String {
    root()
        .join("examples/policies")
        .join(format!("{name}.pool"))
        .display()
        .to_string()
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("poolc-cli-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sweep(args: &[&str]) -> std::process::Output {
    let mut all = vec!["sweep"];
    all.extend(args);
    poolc(&all)
}

fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// results.csv as (header, rows of cells); our names hold no comma.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

/// `poolc sweep GRID --out OUT [more…]`, which must succeed, and its results.csv.
fn sweep_csv(grid: &Path, out: &Path, more: &[&str]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut args = vec![grid.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(more);
    ok(&sweep(&args));
    read_csv(&out.join("results.csv"))
}

/// The index of column `name` in a results.csv header.
fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap()
}

/// The JSON text of `metric` in a `poolc run --json` report (`ttft_p99` is
/// `ttft.p99`), as printed.
fn run_metric(report: &str, metric: &str) -> String {
    let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(report).unwrap();
    if let Some(v) = top.get(metric) {
        return v.get().to_string();
    }
    let (field, p) = metric.rsplit_once('_').unwrap();
    let inner: BTreeMap<String, Box<RawValue>> = serde_json::from_str(top[field].get()).unwrap();
    inner[p].get().to_string()
}

const METRICS: [&str; 10] = [
    "finished",
    "rejected",
    "ttft_p50",
    "ttft_p99",
    "itl_p90",
    "e2e_p99",
    "tokens_per_second",
    "hit_rate",
    "preemptions",
    "sim_seconds",
];

#[test]
fn every_row_equals_poolc_run_json_of_its_point_run_alone() {
    let dir = scratch("equal");
    // A file trace too: the first 150 sessions of the bundled Mooncake trace.
    let trace = dir.join("head.jsonl");
    let text =
        std::fs::read_to_string(root().join("examples/traces/mooncake_conversation_trace.jsonl"))
            .unwrap();
    let head: String = text.lines().take(150).map(|l| format!("{l}\n")).collect();
    std::fs::write(&trace, head).unwrap();
    let metrics: Vec<String> = METRICS.iter().map(|m| format!("\"{m}\"")).collect();
    let grid = dir.join("grid.toml");
    std::fs::write(
        &grid,
        format!(
            "specs = [{:?}, {{ path = {:?}, params = {{ aging = [0, 3000] }} }}]\n\
             metrics = [{}]\nslo = [\"ttft_p99 <= 0.5\"]\nrate_scale = [1, 3]\n\
             [params]\nnum_gpu_blocks = [600, 28000]\n\
             [[traces]]\nsynthetic = 300\nseed = 4\n[[traces]]\nfile = \"head.jsonl\"\n",
            policy("fifo"),
            policy("sjf_aging"),
            metrics.join(", ")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let (header, rows) = sweep_csv(&grid, &out, &["--jobs", "2"]);
    let mut want_header = vec![
        "point",
        "spec",
        "num_gpu_blocks",
        "aging",
        "trace",
        "rate_scale",
    ];
    want_header.extend(METRICS);
    want_header.extend(["slo_met", "wall_seconds"]);
    assert_eq!(header, want_header);
    assert_eq!(rows.len(), (2 + 2 * 2) * 2 * 2);
    let jsonl = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let mut lines: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for line in jsonl.lines() {
        let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(line).unwrap();
        let m: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(top["metrics"].get()).unwrap();
        let point: usize = top["point"].get().parse().unwrap();
        lines.insert(
            point,
            m.into_iter()
                .map(|(k, v)| (k, v.get().to_string()))
                .collect(),
        );
    }
    assert_eq!(lines.len(), rows.len());
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], i.to_string(), "rows are sorted by point");
        let spec = policy(&row[1]);
        let mut args = vec!["run".to_string(), spec, "--json".into()];
        for (name, cell) in [("num_gpu_blocks", &row[2]), ("aging", &row[3])] {
            if !cell.is_empty() {
                args.extend(["--set".into(), format!("{name}={cell}")]);
            }
        }
        match row[4].as_str() {
            "synthetic-300-s4" => {
                args.extend(["--synthetic", "300", "--seed", "4"].map(String::from))
            }
            "head" => args.extend(["--trace".into(), trace.display().to_string()]),
            other => panic!("trace {other}"),
        }
        args.extend(["--rate-scale".into(), row[5].clone()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let report = ok(&poolc(&args));
        for (j, m) in METRICS.iter().enumerate() {
            let want = run_metric(&report, m);
            let cell = &row[6 + j];
            let want_cell = if want == "null" { "" } else { want.as_str() };
            assert_eq!(cell, want_cell, "point {i} {m}: {args:?}");
            assert_eq!(lines[&i][*m], want, "results.jsonl point {i} {m}");
        }
        let ttft: Option<f64> = run_metric(&report, "ttft_p99").parse().ok();
        let met = ttft.is_some_and(|t| t <= 0.5);
        assert_eq!(row[6 + METRICS.len()], met.to_string(), "point {i} slo_met");
    }
    // The SLO is not met everywhere, so the column says something.
    assert!(rows.iter().any(|r| r[16] == "true") && rows.iter().any(|r| r[16] == "false"));
}

#[test]
fn the_capacity_search_finds_the_scale_a_brute_force_scan_finds() {
    let dir = scratch("search");
    let grid = dir.join("grid.toml");
    let (from, to, tolerance) = (1.0f64, 40.0f64, 1.0f64);
    std::fs::write(
        &grid,
        format!(
            "specs = [{:?}]\nmetrics = [\"ttft_p99\", \"finished\"]\nslo = [\"ttft_p99 <= 0.2\"]\n\
             [params]\nnum_gpu_blocks = [1500, 28000]\n[[traces]]\nsynthetic = 400\nseed = 4\n\
             [search]\nfrom = {from:?}\nto = {to:?}\ntolerance = {tolerance:?}\n",
            policy("fifo")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let (header, rows) = sweep_csv(&grid, &out, &[]);
    assert_eq!(
        header,
        [
            "point",
            "spec",
            "num_gpu_blocks",
            "trace",
            "max_rate_scale",
            "search_bound",
            "search_runs",
            "ttft_p99",
            "finished",
            "slo_met",
            "wall_seconds"
        ]
    );
    let steps = ((to - from) / tolerance) as u64;
    let mut found = Vec::new();
    for row in &rows {
        // Brute force: every lattice scale from the bottom, each run on its own.
        let mut meets = Vec::new();
        let mut reports = Vec::new();
        for k in 0..=steps {
            let scale = from + k as f64 * tolerance;
            let report = ok(&poolc(&[
                "run",
                &policy("fifo"),
                "--set",
                &format!("num_gpu_blocks={}", row[2]),
                "--synthetic",
                "400",
                "--seed",
                "4",
                "--rate-scale",
                &scale.to_string(),
                "--json",
            ]));
            let ttft: Option<f64> = run_metric(&report, "ttft_p99").parse().ok();
            meets.push(ttft.is_some_and(|t| t <= 0.2));
            reports.push(report);
        }
        let first_fail = meets.iter().position(|m| !m);
        // The scan is monotone here (below the first failure all meet, above it
        // none), so "the largest scale that meets the SLO" is well defined.
        if let Some(f) = first_fail {
            assert!(meets[f..].iter().all(|m| !m), "not monotone: {meets:?}");
        }
        match first_fail {
            Some(0) => panic!("the grid should meet the SLO at its lowest scale: {meets:?}"),
            Some(f) => {
                let k = f - 1;
                let want = from + k as f64 * tolerance;
                assert_eq!(row[4], want.to_string(), "max_rate_scale of {row:?}");
                assert_eq!(row[5], "inside");
                assert_eq!(
                    row[7],
                    run_metric(&reports[k], "ttft_p99"),
                    "ttft at the scale found"
                );
                assert_eq!(row[8], run_metric(&reports[k], "finished"));
            }
            None => {
                assert_eq!(row[4], to.to_string());
                assert_eq!(row[5], "upper");
            }
        }
        // Bisection: the two ends, then at most ceil(log2(steps)) more replays.
        let runs: u64 = row[6].parse().unwrap();
        assert!(
            runs <= 2 + (steps as f64).log2().ceil() as u64,
            "{runs} replays"
        );
        assert_eq!(row[9], "true");
        found.push(row[4].clone());
    }
    assert_ne!(found[0], found[1], "the deployment size matters: {found:?}");
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// results.csv without its wall_seconds column.
fn without_wall(path: &Path) -> Vec<String> {
    let (header, rows) = read_csv(path);
    assert_eq!(header.last().unwrap(), "wall_seconds");
    std::iter::once(header)
        .chain(rows)
        .map(|mut r| {
            r.pop();
            r.join(",")
        })
        .collect()
}

#[test]
fn an_interrupted_sweep_keeps_its_rows_and_resume_gives_the_uninterrupted_file() {
    let dir = scratch("resume");
    let grid = dir.join("grid.toml");
    let points = 40;
    std::fs::write(
        &grid,
        format!(
            "specs = [{:?}]\nmetrics = [\"ttft_p99\", \"e2e_p90\", \"preemptions\"]\n\
             [params]\nnum_gpu_blocks = {{ from = 1300, to = 28600, steps = {points} }}\n\
             [[traces]]\nsynthetic = 3000\nseed = 2\n",
            policy("fifo")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let jsonl = out.join("results.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_poolc"))
        .args(["sweep", grid.to_str().unwrap(), "--jobs", "1", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while lines(&jsonl) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no row within 60 s"
        );
        if let Some(s) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the sweep ended before it was interrupted ({s}): {err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = cli_support::interrupt(&mut child, Duration::from_secs(30), "poolc sweep");
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted") && !stderr.contains("panicked"),
        "{stderr}"
    );
    let kept = lines(&jsonl);
    assert!((2..points).contains(&kept), "{kept} rows kept");
    // results.csv holds exactly the finished rows.
    assert_eq!(read_csv(&out.join("results.csv")).1.len(), kept);
    // A line cut off by a crash mid-write is dropped by --resume.
    let mut text = std::fs::read_to_string(&jsonl).unwrap();
    text.push_str("{\"fingerprint\":\"0123\",\"point\":3");
    std::fs::write(&jsonl, text).unwrap();
    let summary = ok(&sweep(&[
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ]));
    assert!(
        summary.contains(&format!("{} run, {kept} resumed", points - kept)),
        "{summary}"
    );
    assert_eq!(lines(&jsonl), points);
    assert!(std::fs::read_to_string(&jsonl).unwrap().ends_with("}\n"));
    let fresh = dir.join("fresh");
    ok(&sweep(&[
        grid.to_str().unwrap(),
        "--out",
        fresh.to_str().unwrap(),
    ]));
    assert_eq!(
        without_wall(&out.join("results.csv")),
        without_wall(&fresh.join("results.csv"))
    );
}

#[test]
fn resume_refuses_the_rows_of_another_grid_and_a_fresh_sweep_replaces_them() {
    let dir = scratch("other");
    let write = |name: &str, metric: &str| {
        let g = dir.join(name);
        std::fs::write(
            &g,
            format!(
                "specs = [{:?}]\nmetrics = [\"{metric}\"]\n[[traces]]\nsynthetic = 50\n",
                policy("fifo")
            ),
        )
        .unwrap();
        g
    };
    let a = write("a.toml", "finished");
    let b = write("b.toml", "ttft_p99");
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    ok(&sweep(&[a.to_str().unwrap(), "--out", o]));
    let refused = sweep(&[b.to_str().unwrap(), "--out", o, "--resume"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("results.jsonl:1") && err.contains("another grid"),
        "{err}"
    );
    ok(&sweep(&[b.to_str().unwrap(), "--out", o]));
    let (header, rows) = read_csv(&out.join("results.csv"));
    assert!(header.contains(&"ttft_p99".to_string()) && rows.len() == 1);
}

#[test]
fn a_bad_grid_exits_1_with_its_line_and_column_and_bad_flags_exit_2() {
    let dir = scratch("bad");
    let grid = dir.join("grid.toml");
    std::fs::write(
        &grid,
        "specs = [\"nowhere.pool\"]\nmetrics = [\"ttft_p999\"]\n",
    )
    .unwrap();
    let o = sweep(&[
        grid.to_str().unwrap(),
        "--out",
        dir.join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("grid.toml:2:12"), "{err}");
    assert!(err.contains("did you mean `ttft_p99`?"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // A spec that is not there is an input error too.
    std::fs::write(&grid, "specs = [\"nowhere.pool\"]\n").unwrap();
    let o = sweep(&[
        grid.to_str().unwrap(),
        "--out",
        dir.join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
    let o = sweep(&[grid.to_str().unwrap(), "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = sweep(&[grid.to_str().unwrap(), "--search", "budget"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_point_without_progress_fails_the_sweep_naming_the_point_and_its_sessions() {
    // `preempt none` (R13) with two 6-token prompts: 18 units hold both sequences,
    // 10 deadlock them (tests/host_progress.rs walks the same replay step by step).
    let dir = scratch("deadlock");
    std::fs::write(
        dir.join("none.pool"),
        "param kv_units = 18;\nsession { prompt; output; }\n\
         stage engine { step; budget 100; seats 8; chunk 2; time (1); }\n\
         pool kv { cap kv_units; block 1; evict lru; preempt none; admit via engine; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("w.jsonl"),
        "{\"arrival\": 0, \"prompt\": 6, \"output\": 3}\n\
         {\"arrival\": 0, \"prompt\": 6, \"output\": 3}\n",
    )
    .unwrap();
    let grid = dir.join("grid.toml");
    std::fs::write(
        &grid,
        "specs = [\"none.pool\"]\nmetrics = [\"finished\"]\n\
         [params]\nkv_units = [18, 10]\n[[traces]]\nfile = \"w.jsonl\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = sweep(&[
        grid.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--jobs",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("point 1 (spec=none kv_units=10 trace=w"),
        "names the point: {err}"
    );
    assert!(
        err.contains("no progress: deadlock since t=3 s")
            && err.contains("sessions involved: 0, 1"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // The point that finished keeps its row, in results.jsonl and in the results.csv
    // written on the way out (as for an interrupted sweep); the failed one has none.
    assert_eq!(lines(&out.join("results.jsonl")), 1);
    let (_, rows) = read_csv(&out.join("results.csv"));
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0][0].as_str(), rows[0][2].as_str()), ("0", "18"));
}

#[test]
fn exact_percentiles_in_the_grid_gives_the_rows_of_poolc_run_exact() {
    // `exact_percentiles = true` (docs/SWEEP.md): each row's percentiles are those of
    // `poolc run --json --exact`; without it, those of `poolc run --json` (the
    // sketch's). The two differ on this workload, so the test tells them apart.
    let dir = scratch("exact");
    let fifo = policy("fifo");
    let write = |name: &str, extra: &str| {
        let g = dir.join(name);
        std::fs::write(
            &g,
            format!(
                "specs = [{fifo:?}]\nmetrics = [\"ttft_p50\", \"e2e_p99\"]\n{extra}\
                 [[traces]]\nsynthetic = 300\nseed = 4\n"
            ),
        )
        .unwrap();
        g
    };
    let mut got = Vec::new();
    for (name, extra) in [
        ("exact.toml", "exact_percentiles = true\n"),
        ("sketch.toml", ""),
    ] {
        let out = dir.join(name).with_extension("out");
        let (header, rows) = sweep_csv(&write(name, extra), &out, &[]);
        got.push((
            rows[0][column(&header, "ttft_p50")].clone(),
            rows[0][column(&header, "e2e_p99")].clone(),
        ));
    }
    for (k, flags) in [&["--exact"][..], &[][..]].iter().enumerate() {
        let mut args = vec![
            "run",
            fifo.as_str(),
            "--synthetic",
            "300",
            "--seed",
            "4",
            "--json",
        ];
        args.extend_from_slice(flags);
        let report = ok(&poolc(&args));
        let want = (
            run_metric(&report, "ttft_p50"),
            run_metric(&report, "e2e_p99"),
        );
        assert_eq!(got[k], want, "{flags:?}");
    }
    assert_ne!(
        got[0], got[1],
        "the sketch and the exact method differ here"
    );
    // Not a boolean: an error with its place.
    let bad = write("bad.toml", "exact_percentiles = \"yes\"\n");
    let o = sweep(&[
        bad.to_str().unwrap(),
        "--out",
        dir.join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:3:") && err.contains("must be true or false"),
        "{err}"
    );
}

#[test]
fn a_capacity_search_counts_a_deadlocked_scale_as_failing_its_slos() {
    // `preempt none`, 8 units, budget 2, chunk 1, two 4-token prompts 2 s apart
    // (worked by hand): at rate scale 1 and 1.5 the second arrives after the first
    // took its whole prompt and waits for it to finish; from scale 2 on it arrives
    // at t=1, both are admitted, fill the pool at t=4 and wait for each other for
    // ever. `poolc run --rate-scale` agrees (exit 0 at 1 and 1.5, 1 at 2).
    let dir = scratch("search-deadlock");
    std::fs::write(
        dir.join("none.pool"),
        "session { prompt; output; }\n\
         stage engine { step; budget 2; seats 8; chunk 1; time (1); }\n\
         pool kv { cap 8; block 1; evict lru; preempt none; admit via engine; }\n",
    )
    .unwrap();
    let trace = dir.join("w.jsonl");
    std::fs::write(
        &trace,
        "{\"arrival\": 0, \"prompt\": 4, \"output\": 3}\n\
         {\"arrival\": 2, \"prompt\": 4, \"output\": 3}\n",
    )
    .unwrap();
    for (scale, code) in [("1.5", 0), ("2", 1)] {
        let o = poolc(&[
            "run",
            dir.join("none.pool").to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--rate-scale",
            scale,
        ]);
        assert_eq!(o.status.code(), Some(code), "scale {scale}");
    }
    let grid = dir.join("grid.toml");
    std::fs::write(
        &grid,
        "specs = [\"none.pool\"]\nmetrics = [\"finished\"]\nslo = [\"finished >= 2\"]\n\
         [[traces]]\nfile = \"w.jsonl\"\n[search]\nfrom = 1\nto = 4\ntolerance = 0.5\n",
    )
    .unwrap();
    let (header, rows) = sweep_csv(&grid, &dir.join("out"), &[]);
    let col = |m: &str| column(&header, m);
    assert_eq!(rows[0][col("max_rate_scale")], "1.5");
    assert_eq!(rows[0][col("search_bound")], "inside");
    assert_eq!(rows[0][col("finished")], "2");
}
