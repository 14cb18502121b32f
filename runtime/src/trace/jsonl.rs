//! Our own workload format (docs/TRACES.md): one JSON object per line with `arrival`
//! (seconds), `prompt` and `output` (tokens), optional `runs` (`[[id, len], …]`, the
//! prompt's prefix-chained content) and `id` (a name for the session), and any other
//! field a number that becomes a session attribute of that name. It must refuse
//! anything else rather than guess: a non-numeric extra field, runs that do not add up
//! to the prompt, sessions out of arrival order.

use std::io::Read;

use super::{Format, Reader, SessionSpec, TraceError, Workload, number, object, run, short, whole};

/// Reads our JSONL format whole; `file` names it in errors. Blank lines are skipped.
pub fn read<R: Read>(reader: R, file: &str) -> Result<Workload, TraceError> {
    Reader::new(Format::Jsonl, reader, file)?.workload()
}

/// One line as a session; a field name first met here is appended to `fields`.
pub(super) fn row(line: &str, n: u64, fields: &mut Vec<String>) -> Result<SessionSpec, String> {
    let obj = object(line)?;
    let get = |k: &str| obj.get(k).ok_or_else(|| format!("missing field `{k}`"));
    let arrival = number("arrival", get("arrival")?)?;
    let prompt = whole("prompt", get("prompt")?, 1)?;
    let output = whole("output", get("output")?, 1)?;
    let mut runs = Vec::new();
    if let Some(v) = obj.get("runs") {
        let list = v
            .as_array()
            .ok_or_else(|| format!("`runs` must be a list of [id, len] pairs, not {}", short(v)))?;
        for pair in list {
            match pair.as_array().map(Vec::as_slice) {
                Some([id, len]) => {
                    runs.push(run(whole("runs id", id, 0)?, whole("runs len", len, 1)?)?)
                }
                _ => {
                    return Err(format!(
                        "`runs` must be a list of [id, len] pairs; {} is not one",
                        short(pair)
                    ));
                }
            }
        }
    }
    let name = match obj.get("id") {
        None => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v) => return Err(format!("`id` must be a string, not {}", short(v))),
    };
    let mut extra = Vec::new();
    for (key, value) in &obj {
        if matches!(
            key.as_str(),
            "arrival" | "prompt" | "output" | "runs" | "id"
        ) {
            continue;
        }
        if key == "serial" {
            return Err(
                "`serial` is built in (the session's place in arrival order) and cannot be \
                 given"
                    .into(),
            );
        }
        let value = value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
            format!(
                "field `{key}` is {}, not a number (extra fields become session attributes, \
                 which are numbers)",
                short(value)
            )
        })?;
        let index = match fields.iter().position(|f| f == key) {
            Some(i) => i,
            None => {
                fields.push(key.clone());
                fields.len() - 1
            }
        };
        let index = u32::try_from(index).map_err(|_| "too many distinct extra fields")?;
        extra.push((index, value));
    }
    extra.sort_by_key(|&(i, _)| i);
    Ok(SessionSpec {
        arrival,
        prompt,
        output,
        runs,
        extra,
        name,
        line: n,
    })
}
