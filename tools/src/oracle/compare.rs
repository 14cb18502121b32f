//! Comparing a replay with its recording: the first divergent step with the fields
//! that differ and the three steps before it, the count of divergent steps, the
//! summary counts recomputed from the replayed steps and checked against the
//! recorded summary line; the text `poolc conform` prints; and the replayed steps
//! written in the recording's own schema.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use serde_json::Value;

use poolc::atomic_file::AtomicFile;

use super::step::quote;
use super::{OracleError, Replay, Scenario, Step};

/// The oracle's summary counts, computed from steps.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub name: String,
    pub num_requests: u64,
    pub steps: u64,
    pub idle_steps: u64,
    pub admitted_new: u64,
    pub admitted_resumed: u64,
    pub preemptions: u64,
    pub finished: u64,
    pub hit_tokens_new: u64,
    pub hit_tokens_resumed: u64,
    pub prompt_tokens_admitted: u64,
    pub scheduled_tokens: u64,
    pub max_running: u64,
    pub hit_tokens_total: u64,
    pub admissions: u64,
    /// `hit_tokens_new / prompt_tokens_admitted`, rounded to 6 decimals.
    pub prefix_hit_rate: f64,
}

impl Summary {
    pub fn of(scenario: &Scenario, steps: &[Step]) -> Summary {
        let prompt: HashMap<&str, u64> = scenario
            .requests
            .iter()
            .map(|r| (r.id.as_str(), r.prompt))
            .collect();
        let mut s = Summary {
            name: scenario.name.clone(),
            num_requests: scenario.requests.len() as u64,
            steps: steps.len() as u64,
            ..Summary::default()
        };
        for st in steps {
            if st.n_sched_tokens == 0 {
                s.idle_steps += 1;
            }
            for (id, kind, hit, _) in &st.admitted {
                if kind == "new" {
                    s.admitted_new += 1;
                    s.hit_tokens_new += hit;
                    s.prompt_tokens_admitted += prompt.get(id.as_str()).copied().unwrap_or(0);
                } else {
                    s.admitted_resumed += 1;
                    s.hit_tokens_resumed += hit;
                }
            }
            s.preemptions += st.preempted.len() as u64;
            s.finished += st.finished.len() as u64;
            s.scheduled_tokens += st.n_sched_tokens;
            s.max_running = s.max_running.max(st.running);
        }
        s.hit_tokens_total = s.hit_tokens_new + s.hit_tokens_resumed;
        s.admissions = s.admitted_new + s.admitted_resumed;
        let rate = s.hit_tokens_new as f64 / s.prompt_tokens_admitted.max(1) as f64;
        s.prefix_hit_rate = (rate * 1e6).round() / 1e6;
        s
    }

    /// The compared keys and values, in the oracle's order.
    fn counts(&self) -> [(&'static str, f64); 15] {
        [
            ("num_requests", self.num_requests as f64),
            ("steps", self.steps as f64),
            ("idle_steps", self.idle_steps as f64),
            ("admitted_new", self.admitted_new as f64),
            ("admitted_resumed", self.admitted_resumed as f64),
            ("preemptions", self.preemptions as f64),
            ("finished", self.finished as f64),
            ("hit_tokens_new", self.hit_tokens_new as f64),
            ("hit_tokens_resumed", self.hit_tokens_resumed as f64),
            ("prompt_tokens_admitted", self.prompt_tokens_admitted as f64),
            ("scheduled_tokens", self.scheduled_tokens as f64),
            ("max_running", self.max_running as f64),
            ("hit_tokens_total", self.hit_tokens_total as f64),
            ("admissions", self.admissions as f64),
            ("prefix_hit_rate", self.prefix_hit_rate),
        ]
    }

    /// The summary line, keys in the oracle's order (`replayed_by` in place of
    /// `vllm_version`; the workspace's crates share one version).
    pub fn to_line(&self) -> String {
        let mut line = format!(
            "{{\"summary\":true,\"name\":{},\"replayed_by\":\"poolc {}\"",
            quote(&self.name),
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in self.counts() {
            if k == "prefix_hit_rate" {
                line.push_str(&format!(",\"{k}\":{}", Value::from(v)));
            } else {
                line.push_str(&format!(",\"{k}\":{}", v as u64));
            }
        }
        line.push('}');
        line
    }

    /// The keys whose values differ from a recorded summary line.
    pub fn differences(&self, recorded: &Value) -> Vec<String> {
        self.counts()
            .into_iter()
            .filter_map(|(k, ours)| {
                let theirs = recorded.get(k).and_then(Value::as_f64);
                // The rate is rounded to 6 decimals on both sides.
                let same = theirs.is_some_and(|t| (t - ours).abs() <= 1e-6 * t.abs().max(1.0));
                (!same).then(|| {
                    let theirs = recorded.get(k).map_or("none".to_string(), Value::to_string);
                    format!("{k}: recorded {theirs}, replayed {}", Value::from(ours))
                })
            })
            .collect()
    }
}

/// The first step where the replay and the recording part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub step: u64,
    /// The differing fields, or empty when one side has no such step.
    pub fields: Vec<&'static str>,
    /// The recorded line (`None`: vLLM's trace ended before this step).
    pub expected: Option<String>,
    /// The replayed line (`None`: the replay ended before this step).
    pub actual: Option<String>,
    /// Up to three recorded lines before it (equal in both).
    pub before: Vec<String>,
}

/// The result of comparing one scenario.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub name: String,
    /// Recorded steps.
    pub recorded: usize,
    /// Replayed steps.
    pub replayed: usize,
    /// Steps that differ (a step missing on either side counts).
    pub divergent: usize,
    pub first: Option<Divergence>,
    /// Summary keys that differ from the recorded summary line (none when the steps
    /// match, unless the recording contradicts itself).
    pub summary: Vec<String>,
    pub unfinished: u64,
    pub rejected: u64,
}

impl Outcome {
    pub fn matches(&self) -> bool {
        self.first.is_none() && self.summary.is_empty()
    }

    /// What `poolc conform` prints for it.
    pub fn render(&self) -> String {
        let name = &self.name;
        let Some(d) = &self.first else {
            if self.summary.is_empty() {
                return format!("{name}: all {} steps match\n", self.recorded);
            }
            return format!(
                "{name}: all {} steps match, but the summary line differs: {}\n",
                self.recorded,
                self.summary.join("; ")
            );
        };
        let mut out = format!("{name}: step {} is the first divergent step", d.step);
        if d.fields.is_empty() {
            out.push_str(&format!(
                " (vLLM recorded {} steps, the replay has {})",
                self.recorded, self.replayed
            ));
        } else {
            out.push_str(&format!(" (differs in {})", d.fields.join(", ")));
        }
        out.push_str(&format!(
            "; {} of {} recorded steps differ\n",
            self.divergent, self.recorded
        ));
        for (i, line) in d.before.iter().enumerate() {
            let back = d.before.len() - i;
            out.push_str(&format!("  step {}:  {line}\n", d.step - back as u64));
        }
        let none = |who: &str| format!("(none: {who} has no step {})", d.step);
        out.push_str(&format!(
            "  expected: {}\n",
            d.expected.clone().unwrap_or_else(|| none("vLLM"))
        ));
        out.push_str(&format!(
            "  actual:   {}\n",
            d.actual.clone().unwrap_or_else(|| none("the replay"))
        ));
        if self.unfinished > 0 || self.rejected > 0 {
            out.push_str(&format!(
                "  (the host left {} sessions unfinished and rejected {})\n",
                self.unfinished, self.rejected
            ));
        }
        out
    }
}

/// Compares replayed steps with the recorded ones.
pub fn compare(scenario: &Scenario, replay: &Replay) -> Outcome {
    let recorded = &scenario.recorded;
    let ours = &replay.steps;
    let n = recorded.len().max(ours.len());
    let mut divergent = 0;
    let mut first = None;
    for i in 0..n {
        let (want, got) = (recorded.get(i), ours.get(i));
        let fields = match (want, got) {
            (Some((_, w)), Some(g)) => {
                let f = w.differing_fields(g);
                if f.is_empty() {
                    continue;
                }
                f
            }
            _ => Vec::new(),
        };
        divergent += 1;
        if first.is_none() {
            first = Some(Divergence {
                step: i as u64,
                fields,
                expected: want.map(|(line, _)| line.clone()),
                actual: got.map(Step::to_line),
                before: recorded
                    .get(i.saturating_sub(3)..i.min(recorded.len()))
                    .unwrap_or_default()
                    .iter()
                    .map(|(line, _)| line.clone())
                    .collect(),
            });
        }
    }
    let summary = scenario
        .summary
        .as_ref()
        .map(|v| replay.summary.differences(v))
        .unwrap_or_default();
    Outcome {
        name: scenario.name.clone(),
        recorded: recorded.len(),
        replayed: ours.len(),
        divergent,
        first,
        summary,
        unfinished: replay.unfinished,
        rejected: replay.rejected,
    }
}

/// Writes the replayed steps and summary to `out/<name>/steps.jsonl`.
pub fn write_steps(out: &Path, scenario: &Scenario, replay: &Replay) -> Result<(), OracleError> {
    let dir = out.join(&scenario.name);
    let io_err = |path: &Path, e: io::Error| OracleError::Io {
        path: path.to_path_buf(),
        message: format!("cannot write: {e}"),
    };
    fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let path = dir.join("steps.jsonl");
    let mut text = String::new();
    for s in &replay.steps {
        text.push_str(&s.to_line());
        text.push('\n');
    }
    text.push_str(&replay.summary.to_line());
    text.push('\n');
    // Written whole or not at all: a steps.jsonl that exists is complete.
    let mut file = AtomicFile::create(&path).map_err(|e| io_err(&path, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.commit())
        .map_err(|e| io_err(&path, e))
}
