//! The step log `poolc-steps/1` (docs/STEPS.md): JSON lines, or CSV when the file's
//! name ends in `.csv`, read into checked iterations, each reduced to the five numbers
//! a stage `time` reads, derived exactly as the host derives them at the end of an
//! iteration (runtime/src/host/sim/step.rs). Every mistake is a [`StepsError`] naming
//! the file and its 1-based line. It reads and checks; it does not fit, print or
//! panic on any input.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The `format` of the header line.
pub const FORMAT: &str = "poolc-steps/1";

/// The CSV header, column for column.
pub const CSV_COLUMNS: [&str; 6] = ["step", "seconds", "tokens", "computed", "prompt", "decode"];

/// Whole numbers above this would not be exact as the f64 a stage `time` reads.
const MAX_WHOLE: u64 = 1 << 53;

/// How a scheduled request's tokens count in its iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Generating (`decode` = 1): it already sampled a token since its latest
    /// admission, so its tokens are decode tokens.
    Decode,
    /// Catching up (`decode` = 0): a prefill chunk, or recompute after preemption.
    CatchUp,
}

/// One scheduled request of an iteration: `[tokens, computed, prompt, decode]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Tokens it takes this iteration (≥ 1).
    pub tokens: u64,
    /// Its KV tokens computed before the iteration.
    pub computed: u64,
    /// Its prompt length.
    pub prompt: u64,
    pub phase: Phase,
}

/// What a stage `time` reads of one iteration (S1, R20).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Σ tokens.
    pub tokens: u64,
    /// Σ tokens of the requests catching up.
    pub prefill: u64,
    /// Σ tokens of the requests generating.
    pub decode: u64,
    /// The number of requests scheduled.
    pub residents: u64,
    /// Σ (computed + tokens): the KV the iteration attends (R20).
    pub context: u64,
}

impl Counts {
    /// The counts of one iteration's requests, as the host sums its takes; `None`
    /// when a sum passes 2^53 (it would not be exact as an f64).
    pub fn of(requests: &[Request]) -> Option<Counts> {
        let mut n = Counts {
            residents: requests.len() as u64,
            ..Counts::default()
        };
        for r in requests {
            n.tokens = n.tokens.checked_add(r.tokens)?;
            let attended = r.computed.checked_add(r.tokens)?;
            n.context = n.context.checked_add(attended)?;
            match r.phase {
                Phase::Decode => n.decode += r.tokens,
                Phase::CatchUp => n.prefill += r.tokens,
            }
        }
        (n.tokens <= MAX_WHOLE && n.context <= MAX_WHOLE).then_some(n)
    }
}

/// One measured engine iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Iteration {
    pub step: u64,
    /// The 1-based line it starts on (its first row in CSV).
    pub line: usize,
    /// The measured duration, finite and > 0.
    pub seconds: f64,
    pub counts: Counts,
    /// Its scheduled requests, in the log's order: the rows `sum` adds over (R29).
    pub requests: Vec<Request>,
}

/// The optional facts of the header line (serialized with the absent ones left out).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Header {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vllm_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_batched_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_seqs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_gpu_blocks: Option<u64>,
}

impl Header {
    /// The facts given, as `(name, value)` in the order docs/STEPS.md lists them.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let text = [
            ("source", &self.source),
            ("vllm_version", &self.vllm_version),
            ("timing", &self.timing),
        ];
        let whole = [
            ("block_size", self.block_size),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
            ("max_num_seqs", self.max_num_seqs),
            ("num_gpu_blocks", self.num_gpu_blocks),
        ];
        let text = text
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v.clone())));
        let whole = whole
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v.to_string())));
        text.chain(whole).collect()
    }
}

/// A step log, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct StepLog {
    /// The file as the caller named it.
    pub file: String,
    pub header: Header,
    /// The iterations with at least one request, in file order.
    pub iterations: Vec<Iteration>,
    /// Steps with no request, skipped.
    pub empty_steps: usize,
}

/// The two spellings of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A header line, then one JSON object per iteration.
    Jsonl,
    /// One row per scheduled request under [`CSV_COLUMNS`].
    Csv,
}

impl Layout {
    /// CSV when the name ends in `.csv` (any case), else JSON lines.
    pub fn of_path(path: &Path) -> Layout {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            Layout::Csv
        } else {
            Layout::Jsonl
        }
    }
}

/// Why a step log was refused: where, and what is wrong there.
#[derive(Debug)]
pub struct StepsError {
    pub file: String,
    /// 1-based; 0 when the problem is the whole file.
    pub line: usize,
    pub problem: Problem,
}

/// A field of a line, as its message names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A key of a JSON line, or a column of the CSV.
    Named(&'static str),
    /// The `index`th (0-based) request of `reqs`, or one of its four numbers.
    Request { index: usize, part: Option<Part> },
}

/// One number of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Tokens,
    Computed,
    Prompt,
    Decode,
}

impl Part {
    const ALL: [Part; 4] = [Part::Tokens, Part::Computed, Part::Prompt, Part::Decode];

    fn name(self) -> &'static str {
        match self {
            Part::Tokens => "tokens",
            Part::Computed => "computed",
            Part::Prompt => "prompt",
            Part::Decode => "decode",
        }
    }
}

/// What a field must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Must {
    WholeNumber,
    AtLeastOne,
    ZeroOrOne,
    Seconds,
    Text,
    List,
    FourNumbers,
}

#[derive(Debug)]
pub enum Problem {
    Unreadable(std::io::Error),
    NotJson(serde_json::Error),
    NotAnObject,
    /// The header's `format` is not [`FORMAT`]; the value as written.
    Format(String),
    Missing(&'static str),
    /// A key a step line does not have (a typo must not pass silently).
    Unknown(String),
    /// A field that is not what it must be; the value as written.
    Invalid {
        field: Field,
        must: Must,
        found: String,
    },
    /// The CSV's first line is not [`CSV_COLUMNS`]; the line as written.
    CsvHeader(String),
    CsvColumns(usize),
    /// A CSV row of a step whose first row gave another `seconds`.
    SecondsDisagree {
        step: u64,
        first_line: usize,
    },
    /// A step number met again, not adjacent to its first appearance.
    Repeated {
        step: u64,
        first_line: usize,
    },
    /// An iteration whose tokens or context pass 2^53.
    TooLarge,
}

impl fmt::Display for StepsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.problem)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.problem)
        }
    }
}

impl std::error::Error for StepsError {}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "cannot read: {e}"),
            Problem::NotJson(e) => write!(f, "not JSON: {e}"),
            Problem::NotAnObject => write!(f, "a line must be a JSON object"),
            Problem::Format(found) => write!(
                f,
                "the header's format is {found}; this reader knows \"{FORMAT}\" (docs/STEPS.md)"
            ),
            Problem::Missing(key) => write!(f, "a step line needs `{key}`"),
            Problem::Unknown(key) => write!(
                f,
                "unknown field `{key}`: a step line has `step`, `seconds` and `reqs` only"
            ),
            Problem::Invalid { field, must, found } => {
                write!(f, "{field} must be {must}, not {found}")
            }
            Problem::CsvHeader(found) => write!(
                f,
                "the first line must be the header `{}`, not `{found}`",
                CSV_COLUMNS.join(",")
            ),
            Problem::CsvColumns(n) => write!(
                f,
                "a row has {} comma-separated values ({}), not {n}",
                CSV_COLUMNS.len(),
                CSV_COLUMNS.join(",")
            ),
            Problem::SecondsDisagree { step, first_line } => write!(
                f,
                "step {step} gives another `seconds` than its first row (line {first_line})"
            ),
            Problem::Repeated { step, first_line } => write!(
                f,
                "step {step} appears again (first at line {first_line}); a step's requests \
                 are one line, or adjacent rows in CSV"
            ),
            Problem::TooLarge => write!(f, "the iteration's tokens or context pass 2^53"),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Named(name) => write!(f, "`{name}`"),
            Field::Request { index, part: None } => write!(f, "`reqs[{index}]`"),
            Field::Request {
                index,
                part: Some(p),
            } => write!(f, "`reqs[{index}]`'s {}", p.name()),
        }
    }
}

impl fmt::Display for Must {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Must::WholeNumber => "a whole number from 0 to 2^53",
            Must::AtLeastOne => "a whole number from 1 to 2^53",
            Must::ZeroOrOne => "0 or 1",
            Must::Seconds => "a finite number of seconds above 0",
            Must::Text => "text",
            Must::List => "a list",
            Must::FourNumbers => "a list of four numbers [tokens, computed, prompt, decode]",
        })
    }
}

/// Reads a step log, in the layout its name says ([`Layout::of_path`]).
pub fn read_path(path: &Path) -> Result<StepLog, StepsError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| StepsError {
        file: file.clone(),
        line: 0,
        problem: Problem::Unreadable(e),
    })?;
    read_str(&file, &text, Layout::of_path(path))
}

/// Reads a step log from its text; `file` is how errors name it.
pub fn read_str(file: &str, text: &str, layout: Layout) -> Result<StepLog, StepsError> {
    let mut log = StepLog {
        file: file.to_string(),
        header: Header::default(),
        iterations: Vec::new(),
        empty_steps: 0,
    };
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let read = match layout {
        Layout::Jsonl => read_jsonl(&mut log, lines),
        Layout::Csv => read_csv(&mut log, lines),
    };
    read.map_err(|(line, problem)| StepsError {
        file: file.to_string(),
        line,
        problem,
    })?;
    Ok(log)
}

/// A problem at a 1-based line.
type AtLine = (usize, Problem);

fn at(line: usize) -> impl Fn(Problem) -> AtLine {
    move |problem| (line, problem)
}

fn read_jsonl<'a>(
    log: &mut StepLog,
    lines: impl Iterator<Item = (usize, &'a str)>,
) -> Result<(), AtLine> {
    let mut steps = Steps::default();
    for (k, (n, line)) in lines.enumerate() {
        let object = object(line).map_err(at(n))?;
        // The header, when there is one, is the first line.
        if k == 0 && object.contains_key("format") {
            log.header = header(&object).map_err(at(n))?;
            continue;
        }
        let (step, seconds, requests) = step_line(&object).map_err(at(n))?;
        steps.begin(step, n).map_err(at(n))?;
        add(log, step, n, seconds, &requests).map_err(at(n))?;
    }
    Ok(())
}

/// The rows of one step read so far.
struct Group {
    step: u64,
    line: usize,
    seconds: f64,
    requests: Vec<Request>,
}

fn read_csv<'a>(
    log: &mut StepLog,
    mut lines: impl Iterator<Item = (usize, &'a str)>,
) -> Result<(), AtLine> {
    let Some((n, first)) = lines.next() else {
        return Ok(());
    };
    let columns: Vec<&str> = first.split(',').map(str::trim).collect();
    if columns != CSV_COLUMNS {
        return Err((n, Problem::CsvHeader(first.to_string())));
    }
    let mut steps = Steps::default();
    let mut group: Option<Group> = None;
    for (n, line) in lines {
        let (step, seconds, request) = csv_row(line).map_err(at(n))?;
        match &mut group {
            Some(g) if g.step == step => {
                if seconds != g.seconds {
                    let first_line = g.line;
                    return Err((n, Problem::SecondsDisagree { step, first_line }));
                }
                g.requests.push(request);
            }
            _ => {
                if let Some(g) = group.take() {
                    add(log, g.step, g.line, g.seconds, &g.requests).map_err(at(g.line))?;
                }
                steps.begin(step, n).map_err(at(n))?;
                group = Some(Group {
                    step,
                    line: n,
                    seconds,
                    requests: vec![request],
                });
            }
        }
    }
    if let Some(g) = group {
        add(log, g.step, g.line, g.seconds, &g.requests).map_err(at(g.line))?;
    }
    Ok(())
}

/// The steps met so far, each with the line it first appeared on, so that a repeat
/// is refused.
#[derive(Default)]
struct Steps {
    first_line: BTreeMap<u64, usize>,
}

impl Steps {
    fn begin(&mut self, step: u64, line: usize) -> Result<(), Problem> {
        if let Some(&first_line) = self.first_line.get(&step) {
            return Err(Problem::Repeated { step, first_line });
        }
        self.first_line.insert(step, line);
        Ok(())
    }
}

/// One step's requests into the log: an iteration, or a skipped empty step.
fn add(
    log: &mut StepLog,
    step: u64,
    line: usize,
    seconds: f64,
    requests: &[Request],
) -> Result<(), Problem> {
    if requests.is_empty() {
        log.empty_steps += 1;
        return Ok(());
    }
    let counts = Counts::of(requests).ok_or(Problem::TooLarge)?;
    log.iterations.push(Iteration {
        step,
        line,
        seconds,
        counts,
        requests: requests.to_vec(),
    });
    Ok(())
}

/// A line's fields, each kept as its JSON text so that `seconds` is read by Rust's
/// correctly rounded parser (serde_json's own float parsing may be one ulp off, and
/// the CSV's `seconds` must read the same).
type Object<'a> = BTreeMap<String, &'a RawValue>;

fn object(line: &str) -> Result<Object<'_>, Problem> {
    serde_json::from_str(line).map_err(|e| match serde_json::from_str::<Value>(line) {
        Ok(_) => Problem::NotAnObject,
        Err(_) => Problem::NotJson(e),
    })
}

/// A field's value as a JSON tree.
fn value(raw: &RawValue) -> Result<Value, Problem> {
    serde_json::from_str(raw.get()).map_err(Problem::NotJson)
}

fn header(object: &Object<'_>) -> Result<Header, Problem> {
    match object.get("format").map(|raw| value(raw)).transpose()? {
        Some(Value::String(s)) if s == FORMAT => {}
        Some(other) => return Err(Problem::Format(other.to_string())),
        None => return Err(Problem::Missing("format")),
    }
    let text = |key: &'static str| match object.get(key).map(|raw| value(raw)).transpose()? {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(Field::Named(key), Must::Text, &other)),
    };
    let whole = |key: &'static str| {
        object
            .get(key)
            .map(|raw| whole_json(&value(raw)?, Field::Named(key), Must::WholeNumber))
            .transpose()
    };
    Ok(Header {
        source: text("source")?,
        vllm_version: text("vllm_version")?,
        timing: text("timing")?,
        block_size: whole("block_size")?,
        max_num_batched_tokens: whole("max_num_batched_tokens")?,
        max_num_seqs: whole("max_num_seqs")?,
        num_gpu_blocks: whole("num_gpu_blocks")?,
    })
}

/// `{"step": K, "seconds": S, "reqs": [[tokens, computed, prompt, decode], …]}`.
fn step_line(object: &Object<'_>) -> Result<(u64, f64, Vec<Request>), Problem> {
    const KEYS: [&str; 3] = ["step", "seconds", "reqs"];
    if let Some(key) = object.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Problem::Unknown(key.clone()));
    }
    let get = |key: &'static str| object.get(key).ok_or(Problem::Missing(key));
    let step = whole_json(
        &value(get("step")?)?,
        Field::Named("step"),
        Must::WholeNumber,
    )?;
    let seconds = seconds(get("seconds")?.get())?;
    let reqs = value(get("reqs")?)?;
    let Value::Array(reqs) = reqs else {
        return Err(invalid(Field::Named("reqs"), Must::List, &reqs));
    };
    let requests = reqs
        .iter()
        .enumerate()
        .map(|(index, r)| request_json(index, r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((step, seconds, requests))
}

fn request_json(index: usize, value: &Value) -> Result<Request, Problem> {
    let whole = Field::Request { index, part: None };
    let numbers = match value {
        Value::Array(a) if a.len() == 4 => a,
        other => return Err(invalid(whole, Must::FourNumbers, other)),
    };
    let mut parts = [0u64; 4];
    for ((slot, part), v) in parts.iter_mut().zip(Part::ALL).zip(numbers) {
        let field = Field::Request {
            index,
            part: Some(part),
        };
        *slot = whole_json(v, field, part_must(part))?;
    }
    let [tokens, computed, prompt, decode] = parts;
    Ok(request(tokens, computed, prompt, decode))
}

/// `step,seconds,tokens,computed,prompt,decode`.
fn csv_row(line: &str) -> Result<(u64, f64, Request), Problem> {
    let cells: Vec<&str> = line.split(',').map(str::trim).collect();
    let [step, seconds, tokens, computed, prompt, decode] = cells.as_slice() else {
        return Err(Problem::CsvColumns(cells.len()));
    };
    let whole = |cell: &str, name: &'static str, must: Must| {
        cell.parse::<u64>()
            .ok()
            .filter(|v| allows(must, *v))
            .ok_or_else(|| Problem::Invalid {
                field: Field::Named(name),
                must,
                found: cell.to_string(),
            })
    };
    let step = whole(step, "step", Must::WholeNumber)?;
    let seconds = self::seconds(seconds)?;
    let request = request(
        whole(tokens, "tokens", part_must(Part::Tokens))?,
        whole(computed, "computed", part_must(Part::Computed))?,
        whole(prompt, "prompt", part_must(Part::Prompt))?,
        whole(decode, "decode", part_must(Part::Decode))?,
    );
    Ok((step, seconds, request))
}

/// `seconds` from its text (a JSON number or a CSV cell), by Rust's correctly rounded
/// parser, so both layouts read the same f64.
fn seconds(text: &str) -> Result<f64, Problem> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| Problem::Invalid {
            field: Field::Named("seconds"),
            must: Must::Seconds,
            found: text.to_string(),
        })
}

fn part_must(part: Part) -> Must {
    match part {
        Part::Tokens => Must::AtLeastOne,
        Part::Computed | Part::Prompt => Must::WholeNumber,
        Part::Decode => Must::ZeroOrOne,
    }
}

/// A request from its four checked numbers.
fn request(tokens: u64, computed: u64, prompt: u64, decode: u64) -> Request {
    let phase = if decode == 1 {
        Phase::Decode
    } else {
        Phase::CatchUp
    };
    Request {
        tokens,
        computed,
        prompt,
        phase,
    }
}

/// A JSON whole number that `must` allows.
fn whole_json(value: &Value, field: Field, must: Must) -> Result<u64, Problem> {
    value
        .as_u64()
        .filter(|v| allows(must, *v))
        .ok_or_else(|| invalid(field, must, value))
}

/// Whether the whole number `v` is what `must` asks for.
fn allows(must: Must, v: u64) -> bool {
    match must {
        Must::AtLeastOne => (1..=MAX_WHOLE).contains(&v),
        Must::ZeroOrOne => v <= 1,
        _ => v <= MAX_WHOLE,
    }
}

fn invalid(field: Field, must: Must, found: &Value) -> Problem {
    Problem::Invalid {
        field,
        must,
        found: found.to_string(),
    }
}
