//! The bench report rendered: text for people and one JSON object for machines. The
//! figures are computed elsewhere (measure.rs); this file only formats them, and
//! neither form may change without the tests that read it (tests/bench_cli.rs).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::Report;
use super::backends::Backend;
use super::measure::PhaseReport;
use super::stream::EVICT_BLOCKS;

/// A rate with an SI prefix: `12.3 M`, `450 k`.
fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.1} ")
    }
}

fn ratio_text(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |x| format!("{x:.2}"))
}

impl Report {
    /// The report for people.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let o = &self.options;
        let a = &self.admission_shape;
        let cap = self.cap.map_or("inf".to_string(), |c| c.to_string());
        let _ = writeln!(
            s,
            "spec {}, pool {} (member 0 of {}): queue {}, evict {}, block {}, cap {cap}",
            self.spec, self.pool, self.members, self.queue_policy, self.evict_policy, self.block
        );
        let _ = writeln!(
            s,
            "stream: seed {}; rounds of {} holds of 1-{} blocks (+{} on grow); {:.0}% start \
             with one of {} shared {}-block prefixes",
            o.seed,
            a.batch,
            a.max_blocks,
            a.grow_blocks,
            if a.prefix_blocks > 0 {
                o.share * 100.0
            } else {
                0.0
            },
            a.prefixes,
            a.prefix_blocks
        );
        let c = &self.compile;
        let _ = writeln!(
            s,
            "compile: check {:.0} us cold, {:.0} us warm; JIT {:.0} us cold, {:.0} us warm \
             (median of {})",
            c.check_cold_us, c.check_warm_us, c.jit_cold_us, c.jit_warm_us, o.repeats
        );
        if let Some(adm) = &self.admission {
            let _ = writeln!(
                s,
                "\nadmission: queue of {} waiting, {} admissions per run, median of {} runs",
                o.queue, adm.ops, o.repeats
            );
            let _ = writeln!(
                s,
                "  {:<9} {:>14} {:>14} {:>14} {:>12} {:>17}",
                "backend",
                "admissions/s",
                "ns/admission",
                "evict/admission",
                "hit units/adm",
                "ns grow+release"
            );
            for f in &adm.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14} {:>14.1} {:>14.2} {:>12.1} {:>17.1}",
                    f.backend.name(),
                    si(f.ops_per_second()),
                    f.ns_per_op,
                    f.evictions_per_admission,
                    f.hit_units_per_admission,
                    f.rest_ns_per_admission
                );
            }
        }
        if let Some(ev) = &self.eviction {
            let e = &self.eviction_shape;
            let _ = writeln!(
                s,
                "\neviction: {} entries of {} blocks, rounds of {} admissions of {} fresh blocks, \
             {} evictions per run, median of {} runs",
                o.queue, EVICT_BLOCKS, e.batch, EVICT_BLOCKS, ev.ops, o.repeats
            );
            let _ = writeln!(
                s,
                "  {:<9} {:>14} {:>14}",
                "backend", "evictions/s", "ns/eviction"
            );
            for f in &ev.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14} {:>14.1}",
                    f.backend.name(),
                    si(f.ops_per_second()),
                    f.ns_per_op
                );
            }
        }
        if let Some(scan) = &self.scan {
            let _ = writeln!(
                s,
                "\nscan: the queue's select over {} rows, {} scans per run, median of {} runs",
                o.queue, scan.ops, o.repeats
            );
            let _ = writeln!(s, "  {:<9} {:>14} {:>14}", "backend", "ns/scan", "ns/row");
            for f in &scan.figures {
                let _ = writeln!(
                    s,
                    "  {:<9} {:>14.1} {:>14.2}",
                    f.backend.name(),
                    f.ns_per_op,
                    f.ns_per_op / o.queue as f64
                );
            }
        }
        let _ = writeln!(
            s,
            "\nratios of time per operation (median over runs of the ratio within a run; \
             backends interleaved in this process):"
        );
        let phases = [
            ("admission", &self.admission),
            ("eviction", &self.eviction),
            ("scan", &self.scan),
        ];
        for (name, ph) in phases
            .iter()
            .filter_map(|(n, p)| p.as_ref().map(|p| (n, p)))
        {
            let _ = writeln!(
                s,
                "  {:<9} interp/compiled {:>7}   compiled/rust {:>6}",
                name,
                ratio_text(ph.ratios.interp_over_compiled),
                ratio_text(ph.ratios.compiled_over_rust)
            );
        }
        if !self.has_code {
            let _ = writeln!(
                s,
                "note: `queue fifo` and `evict lru` have no policy code: every backend runs \
                 the same engine path, so these ratios show the measurement's noise"
            );
        } else if [&self.admission, &self.eviction, &self.scan]
            .iter()
            .filter_map(|p| p.as_ref())
            .all(|p| p.figures.iter().all(|f| f.backend != Backend::Rust))
        {
            let _ = writeln!(
                s,
                "note: no hand-written Rust exists for these keys (only fifo, (priority, \
                 serial), the seed's Ascend lanes and evict by (priority, last))"
            );
        }
        s
    }

    /// The report for machines.
    pub fn to_json(&self) -> Value {
        fn phase(p: &PhaseReport, op: &str) -> Value {
            let mut backends = serde_json::Map::new();
            for f in &p.figures {
                let mut b = serde_json::Map::new();
                b.insert(format!("{op}s_per_s"), f.ops_per_second().into());
                b.insert(format!("ns_per_{op}"), f.ns_per_op.into());
                b.insert("ns_per_run".into(), json!(f.per_run));
                if op == "admission" {
                    b.insert(
                        "evictions_per_admission".into(),
                        f.evictions_per_admission.into(),
                    );
                    b.insert(
                        "hit_units_per_admission".into(),
                        f.hit_units_per_admission.into(),
                    );
                    b.insert(
                        "grow_release_ns_per_admission".into(),
                        f.rest_ns_per_admission.into(),
                    );
                }
                backends.insert(f.backend.name().into(), Value::Object(b));
            }
            json!({
                "ops_per_run": p.ops,
                "backends": backends,
                "ratios": {
                    "interp_over_compiled": p.ratios.interp_over_compiled,
                    "compiled_over_rust": p.ratios.compiled_over_rust,
                },
            })
        }
        let o = &self.options;
        let per = |p: &Option<PhaseReport>, b| {
            p.as_ref()?
                .figures
                .iter()
                .find(|f| f.backend == b)
                .map(|f| f.ops_per_second())
        };
        json!({
            "spec": self.spec,
            "pool": self.pool,
            "member": 0,
            "queue_policy": self.queue_policy,
            "evict_policy": self.evict_policy,
            "policy_code": self.has_code,
            "block": self.block,
            "cap": self.cap,
            "queue": o.queue,
            "ops": o.ops,
            "repeats": o.repeats,
            "seed": o.seed,
            "share": o.share,
            "batch": self.admission_shape.batch,
            "max_blocks": self.admission_shape.max_blocks,
            "prefix_blocks": self.admission_shape.prefix_blocks,
            "admissions_per_s": per(&self.admission, Backend::Compiled),
            "evictions_per_s": per(&self.eviction, Backend::Compiled),
            "ns_per_admission": self
                .admission
                .as_ref()
                .and_then(|a| a.figures.first().map(|f| f.ns_per_op)),
            "compile_us": {
                "check_cold": self.compile.check_cold_us,
                "jit_cold": self.compile.jit_cold_us,
                "check_warm": self.compile.check_warm_us,
                "jit_warm": self.compile.jit_warm_us,
            },
            "admission": self.admission.as_ref().map(|p| phase(p, "admission")),
            "eviction": self.eviction.as_ref().map(|p| phase(p, "eviction")),
            "scan": self.scan.as_ref().map(|s| phase(s, "scan")),
        })
    }
}
