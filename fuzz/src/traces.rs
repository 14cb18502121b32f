//! Target (c): each trace reader on any bytes. The first byte picks the reader
//! (Mooncake JSON lines, Azure CSV, our JSON lines), the rest is the file. A reader
//! may accept the file or refuse it, but never panic, and a refusal names the file
//! and a line of it (1-based, at most one past its last line). It never replays a
//! workload.

use poolrt::trace::{self, TraceError, Workload};

type Reader = fn(&[u8], &str) -> Result<Workload, TraceError>;

/// The readers, with the file name each target input is read as.
pub const READERS: [(&str, Reader); 3] = [
    ("mooncake.jsonl", |b, f| trace::mooncake::read(b, f)),
    ("azure.csv", |b, f| trace::azure::read(b, f)),
    ("ours.jsonl", |b, f| trace::jsonl::read(b, f)),
];

/// Reads one input; `Ok(true)` if the reader accepted the file, `Ok(false)` if it
/// refused it with a good error. Panics when a property fails.
pub fn run(data: &[u8]) -> bool {
    let Some((&which, file)) = data.split_first() else {
        return false;
    };
    let (name, read) = *crate::Bytes::new(&[which]).pick(&READERS);
    match read(file, name) {
        Ok(_) => true,
        Err(e) => {
            // `split` counts one piece past a final newline: the bound is the last
            // line plus one.
            let lines = file.split(|&b| b == b'\n').count() as u64;
            assert!(
                e.file == name && (1..=lines + 1).contains(&e.line),
                "{name}: `{e}` names no line of a file of {lines} pieces"
            );
            assert!(!e.message.is_empty(), "{name}: an error without a message");
            false
        }
    }
}

/// The input that reads `file` with reader `which` (an index into [`READERS`]).
pub fn input(which: u8, file: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(file.len() + 1);
    v.push(which);
    v.extend_from_slice(file);
    v
}
