//! The Mooncake trace reader (FAST'25 release, `kvcache-ai/Mooncake`): one JSON object
//! per line with `timestamp` (milliseconds), `input_length`, `output_length` and
//! `hash_ids` (one prefix-chained id per 512-token block, the last block partial).
//! Each hash id becomes a content run of 512 tokens (the last one shorter), so equal
//! ids at equal positions share KV. Arrival is seconds since the first row's
//! timestamp. Other fields are ignored. It must not accept a row whose `hash_ids` do
//! not cover its prompt exactly.

use std::io::Read;

use super::{Format, Reader, SessionSpec, TraceError, Workload, number, object, run, whole};

/// Tokens per Mooncake hash block.
pub const BLOCK_TOKENS: u64 = 512;

/// Reads a Mooncake JSONL trace whole; `file` names it in errors. Blank lines are
/// skipped.
pub fn read<R: Read>(reader: R, file: &str) -> Result<Workload, TraceError> {
    Reader::new(Format::Mooncake, reader, file)?.workload()
}

/// One line as a session; `t0` is the first row's timestamp, set by the first row.
pub(super) fn row(line: &str, n: u64, t0: &mut Option<f64>) -> Result<SessionSpec, String> {
    let obj = object(line)?;
    let get = |k: &str| obj.get(k).ok_or_else(|| format!("missing field `{k}`"));
    let ms = number("timestamp", get("timestamp")?)?;
    let prompt = whole("input_length", get("input_length")?, 1)?;
    let output = whole("output_length", get("output_length")?, 1)?;
    let ids = get("hash_ids")?
        .as_array()
        .ok_or("`hash_ids` must be an array of block ids")?;
    let blocks = prompt.div_ceil(BLOCK_TOKENS);
    if ids.len() as u64 != blocks {
        return Err(format!(
            "`hash_ids` has {} ids, but an input of {prompt} tokens has {blocks} blocks of \
             {BLOCK_TOKENS}",
            ids.len()
        ));
    }
    let mut runs = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let id = whole("hash_ids", id, 0)?;
        let start = i as u64 * BLOCK_TOKENS;
        runs.push(run(id, BLOCK_TOKENS.min(prompt - start))?);
    }
    let t0 = *t0.get_or_insert(ms);
    Ok(SessionSpec {
        arrival: (ms - t0) / 1000.0,
        prompt,
        output,
        runs,
        extra: Vec::new(),
        name: None,
        line: n,
    })
}
