//! Workloads: the sessions a host replays, and the readers that make them from trace
//! files — Mooncake JSONL ([`mooncake`]), the Azure LLM inference CSV ([`azure`]),
//! our own JSONL ([`jsonl`], documented in docs/TRACES.md) — and a seeded synthetic
//! generator ([`synthetic()`]). A file is read one session at a time ([`Reader`],
//! [`open_path`]) or whole ([`read_path`]). A reader checks everything a file can get
//! wrong and reports it as a [`TraceError`] naming the file and the 1-based line; it
//! never panics on input. This module knows nothing of pools or stages: binding workload
//! fields to declared session attributes (D3) is the host's job.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;

use crate::hash::FxMap;
use crate::types::{Run, RunId, Units};

pub mod azure;
pub mod jsonl;
pub mod mooncake;
mod reader;
pub mod synthetic;

pub use reader::{Reader, open_path, open_text};
pub use synthetic::{Generator, SyntheticParams, synthetic, synthetic_with};

/// Longest line a trace may have, in bytes without its newline (docs/RELIABILITY.md,
/// "Limits"): a line of our JSONL with a few thousand runs fits many times over, and
/// a file that is not line-structured is refused before it fills memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Most sessions a workload may have (2^24): a replay keeps a few hundred bytes per
/// session, so the largest workload still fits in a few gigabytes.
pub const MAX_SESSIONS: usize = 1 << 24;

/// Largest `prompt + output` of a session, in tokens (2^53): every count up to it is
/// exact as the f64 the compiled policies read.
pub const MAX_UNITS: u64 = 1 << 53;

/// Whether a workload of `count` sessions is within [`MAX_SESSIONS`].
pub fn session_limit(count: usize) -> Result<(), String> {
    if count > MAX_SESSIONS {
        Err(format!(
            "a workload has at most {MAX_SESSIONS} sessions (this one has more)"
        ))
    } else {
        Ok(())
    }
}

/// Whether a session of `prompt + output` tokens is within [`MAX_UNITS`]. Every
/// reader checks it, and so does any other maker of sessions (the Python package's
/// workload rows).
pub fn units_limit(prompt: u64, output: u64) -> Result<(), String> {
    if prompt.checked_add(output).is_none_or(|t| t > MAX_UNITS) {
        return Err(format!(
            "prompt {prompt} + output {output} tokens is more than 2^53 ({MAX_UNITS}), the \
             most a session may have"
        ));
    }
    Ok(())
}

/// A reader that fails once a line runs past [`MAX_LINE_BYTES`], so no reader
/// above it ever holds a longer line in memory.
pub(crate) struct LineLimit<R> {
    inner: R,
    /// Bytes read since the last newline.
    run: usize,
}

impl<R: Read> LineLimit<R> {
    pub(crate) fn new(inner: R) -> LineLimit<R> {
        LineLimit { inner, run: 0 }
    }
}

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in buf.get(..n).unwrap_or_default() {
            if b == b'\n' {
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > MAX_LINE_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("the line is longer than {MAX_LINE_BYTES} bytes"),
                    ));
                }
            }
        }
        Ok(n)
    }
}

/// Run ids at and above this are the host's own (a session's unique prompt run when
/// the trace gives no content, and its output run); trace run ids must stay below.
pub const HOST_RUN_IDS: u64 = 1 << 63;

/// One session of a workload, as the trace describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSpec {
    /// Arrival time, seconds from the workload's start (non-decreasing in a workload).
    pub arrival: f64,
    /// Prompt tokens, at least 1.
    pub prompt: u64,
    /// Output tokens to generate, at least 1.
    pub output: u64,
    /// The prompt's content runs (R2), adding up to `prompt`; empty when the trace
    /// has no content information (the host then gives the prompt a run of its own).
    pub runs: Vec<Run>,
    /// Extra numeric fields as (index into the field names — [`Workload::fields`], or
    /// [`Next::fields`] from a [`SessionSource`] — value), ascending by index: they
    /// become session attributes of the same name.
    pub extra: Vec<(u32, f64)>,
    /// The trace's own name for it (our JSONL's optional `id`), if any.
    pub name: Option<String>,
    /// The 1-based line it was read from; 0 for generated sessions.
    pub line: u64,
}

/// The sessions to replay, in arrival order (`serial` = index).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// Where it came from (a file name, or the generator and its seed), for messages.
    pub source: String,
    /// Names of the extra numeric fields, in the order first seen.
    pub fields: Vec<String>,
    pub sessions: Vec<SessionSpec>,
}

impl Workload {
    /// Multiplies the arrival rate by `factor`: every arrival time is divided by it
    /// (2 replays the trace twice as fast). Order and spacing ratios are kept.
    pub fn scale_rate(&mut self, factor: f64) {
        for s in &mut self.sessions {
            s.arrival /= factor;
        }
    }

    /// The value of extra field `name` for session `i`, if it supplies one.
    pub fn field(&self, i: usize, name: &str) -> Option<f64> {
        let f = u32::try_from(self.fields.iter().position(|n| n == name)?).ok()?;
        let s = self.sessions.get(i)?;
        let j = s.extra.binary_search_by_key(&f, |&(k, _)| k).ok()?;
        s.extra.get(j).map(|&(_, v)| v)
    }

    /// The first `n` sessions (all when there are fewer).
    pub fn truncate(&mut self, n: usize) {
        self.sessions.truncate(n);
    }

    /// Sum of prompt tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.sessions.iter().map(|s| s.prompt).sum()
    }
}

/// Sessions handed to a host one at a time, in arrival order, so that a replay needs
/// only the sessions alive at each moment (issue #16, docs/HOST.md "Memory"). A
/// [`Workload`] is one ([`Sessions`]); so are a trace file being read ([`Reader`])
/// and the synthetic generator ([`synthetic::Generator`]), neither of which ever
/// holds the whole workload.
pub trait SessionSource {
    /// Where the sessions come from, for messages and the report.
    fn source(&self) -> &str;
    /// How many sessions there will be, when known in advance or estimated (a trace
    /// file's row count): the progress bar's total, never a result.
    fn len_hint(&self) -> Option<u64>;
    /// The next session, `None` after the last. The borrow lasts until the next call.
    fn next_session(&mut self) -> Result<Option<Next<'_>>, TraceError>;
}

/// A session as a [`SessionSource`] hands it over, with the names its `extra`
/// indices refer to. Names only ever grow by appending (our JSONL meets a field
/// when a line first has it), so an index never changes its meaning.
pub struct Next<'a> {
    pub session: &'a SessionSpec,
    pub fields: &'a [String],
}

/// A whole [`Workload`] as a [`SessionSource`], borrowed or owned.
pub struct Sessions<W> {
    workload: W,
    next: usize,
}

impl<W: std::borrow::Borrow<Workload>> Sessions<W> {
    pub fn new(workload: W) -> Sessions<W> {
        Sessions { workload, next: 0 }
    }
}

impl<W: std::borrow::Borrow<Workload>> SessionSource for Sessions<W> {
    fn source(&self) -> &str {
        &self.workload.borrow().source
    }

    fn len_hint(&self) -> Option<u64> {
        Some(self.workload.borrow().sessions.len() as u64)
    }

    fn next_session(&mut self) -> Result<Option<Next<'_>>, TraceError> {
        let w = self.workload.borrow();
        let s = w.sessions.get(self.next);
        self.next += usize::from(s.is_some());
        Ok(s.map(|session| Next {
            session,
            fields: &w.fields,
        }))
    }
}

/// A trace that could not be read: the file, the 1-based line (0: the file as a
/// whole) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub line: u64,
    pub message: String,
}

impl TraceError {
    pub fn new(file: &str, line: u64, message: impl Into<String>) -> TraceError {
        TraceError {
            file: file.to_string(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// The trace formats the readers understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Mooncake JSONL: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`.
    Mooncake,
    /// Azure LLM inference CSV: `TIMESTAMP`, `ContextTokens`, `GeneratedTokens`.
    Azure,
    /// Our JSONL: `arrival` (s), `prompt`, `output`, optional `runs`, `id`, extras.
    Jsonl,
}

impl Format {
    /// Guesses the format: `.csv` is Azure; otherwise JSON lines, Mooncake when the
    /// first non-blank line has an `input_length` field, else ours.
    pub fn detect(path: &Path, first_line: &str) -> Format {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            return Format::Azure;
        }
        if first_line.contains("\"input_length\"") {
            Format::Mooncake
        } else {
            Format::Jsonl
        }
    }
}

/// Reads a whole trace file in `format`, or the detected one when `None`: the
/// sessions of [`open_path`]'s reader, collected.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<Workload, TraceError> {
    open_path(path, format)?.workload()
}

/// Checks that run ids are prefix-chained across a workload (R2; docs/CONFORMANCE.md): every
/// occurrence of an id starts at the same unit, has the same length and follows the
/// same id. Lookups only; the map's order never reaches a result.
///
/// An id's start is not kept: it is the sum of the lengths along its chain of
/// previous ids, each checked when it was met, so equal length and previous id
/// imply an equal start, and a message recomputes it. The map holds every id of the
/// trace (the largest structure of a long replay: 24 bytes a value instead of 40
/// made a Mooncake replay's peak memory 20 % smaller, docs/PERFORMANCE.md).
#[derive(Debug, Default)]
pub(crate) struct ChainCheck {
    seen: FxMap<u64, Seen>,
}

/// How an id was first met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    len: u64,
    /// The id before it in its chain, or [`FIRST`].
    prev: u64,
    /// The line it was first met on.
    line: u64,
}

/// `Seen::prev` of an id that starts a chain (ids from [`HOST_RUN_IDS`] on are
/// refused before a run is built, so this is never an id).
const FIRST: u64 = u64::MAX;

impl ChainCheck {
    /// Checks the runs of one session read from `line`; the message names the run.
    pub fn check(&mut self, runs: &[Run], line: u64) -> Result<(), String> {
        let mut start = 0u64;
        let mut prev = FIRST;
        for run in runs {
            let id = run.id.0;
            debug_assert!(id < HOST_RUN_IDS, "a trace's run id is below the host's");
            match self.seen.get(&id) {
                None => {
                    self.seen.insert(
                        id,
                        Seen {
                            len: run.len.0,
                            prev,
                            line,
                        },
                    );
                }
                Some(&seen) if (seen.len, seen.prev) != (run.len.0, prev) => {
                    return Err(format!(
                        "run {id} is at unit {start} with length {} after {} here, but at \
                         unit {} with length {} after {} on line {} (a run id names \
                         the same prefix everywhere)",
                        run.len.0,
                        describe_prev(prev),
                        self.start_of(seen.prev),
                        seen.len,
                        describe_prev(seen.prev),
                        seen.line,
                    ));
                }
                Some(_) => {}
            }
            start = start.saturating_add(run.len.0);
            prev = id;
        }
        Ok(())
    }

    /// The start of an id whose previous id is `prev`: the lengths along the chain.
    fn start_of(&self, mut prev: u64) -> u64 {
        let mut start = 0u64;
        while let Some(seen) = self.seen.get(&prev) {
            start = start.saturating_add(seen.len);
            prev = seen.prev;
        }
        start
    }
}

fn describe_prev(p: u64) -> String {
    if p == FIRST {
        "nothing".to_string()
    } else {
        format!("run {p}")
    }
}

/// Builds a run, refusing ids reserved for the host and empty runs.
pub(crate) fn run(id: u64, len: u64) -> Result<Run, String> {
    if id >= HOST_RUN_IDS {
        return Err(format!(
            "run id {id} is too large (ids from 2^63 on are the host's own)"
        ));
    }
    if len == 0 {
        return Err(format!("run {id} has length 0"));
    }
    Ok(Run {
        id: RunId(id),
        len: Units(len),
    })
}

/// Checks arrival order and the common lengths of a session before it is added.
pub(crate) fn check_session(s: &SessionSpec, previous_arrival: Option<f64>) -> Result<(), String> {
    if let Some(p) = previous_arrival
        && s.arrival < p
    {
        return Err(format!(
            "arrival {} s is earlier than the previous session's {p} s (sessions must come \
             in arrival order)",
            s.arrival
        ));
    }
    if !s.arrival.is_finite() || s.arrival < 0.0 {
        return Err(format!(
            "arrival {} is not a finite time at or after 0",
            s.arrival
        ));
    }
    if s.prompt == 0 {
        return Err("the prompt must have at least 1 token".into());
    }
    if s.output == 0 {
        return Err("the output must have at least 1 token".into());
    }
    units_limit(s.prompt, s.output)?;
    if !s.runs.is_empty() {
        let sum = s.runs.iter().try_fold(0u64, |a, r| a.checked_add(r.len.0));
        if sum != Some(s.prompt) {
            return Err(format!(
                "the runs add up to {} tokens, the prompt has {}",
                sum.map_or_else(|| "more than 2^64".to_string(), |v| v.to_string()),
                s.prompt
            ));
        }
    }
    Ok(())
}

/// A JSON value as a whole number of at least `min`, or a message naming `field`.
pub(crate) fn whole(field: &str, v: &serde_json::Value, min: u64) -> Result<u64, String> {
    match v.as_u64() {
        Some(n) if n >= min => Ok(n),
        _ => Err(format!(
            "`{field}` must be a whole number of at least {min}, not {}",
            short(v)
        )),
    }
}

/// A JSON value as a finite number, or a message naming `field`.
pub(crate) fn number(field: &str, v: &serde_json::Value) -> Result<f64, String> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(format!("`{field}` must be a number, not {}", short(v))),
    }
}

/// A value for a message, cut short.
pub(crate) fn short(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        let cut = (0..=40).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        format!("{}…", &s[..cut])
    } else {
        s
    }
}

/// Parses one line as a JSON object, or a message.
pub(crate) fn object(line: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected a JSON object, found {}", short(&other))),
        Err(e) => Err(format!("bad JSON: {e}")),
    }
}
