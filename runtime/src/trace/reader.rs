//! A trace file read one session at a time ([`Reader`]): each line is parsed and
//! checked (arrival order, lengths, content chains) only when the replay reaches it,
//! so a replay holds one line of the file, never the whole workload (issue #16,
//! docs/HOST.md "Memory"). The whole-file readers (`mooncake::read`, `jsonl::read`,
//! `azure::read`, [`super::read_path`]) collect a `Reader`, so a file read whole and
//! a file read streaming give the same sessions and the same errors by construction.
//! What a row means is each format's module's business; this file owns the loop, the
//! line numbers and the checks common to all formats. It never panics on input.

use std::cell::OnceCell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{
    ChainCheck, Format, LineLimit, Next, SessionSource, SessionSpec, TraceError, Workload, azure,
    check_session, jsonl, mooncake, session_limit,
};

/// A trace read one session at a time, in arrival order; a [`SessionSource`].
/// After an error, stop reading: the error is the file's verdict.
pub struct Reader<R: Read> {
    file: String,
    /// Names of the extra numeric fields seen so far (our JSONL only), in the order
    /// first seen; they only ever grow, so an index stays valid.
    fields: Vec<String>,
    rows: Rows<R>,
    /// Content chains (R2). It keeps one entry per distinct run id: the one part of
    /// reading that grows with the trace (with its content, not its length).
    chains: ChainCheck,
    count: usize,
    /// The previous session's arrival as the file gives it (before `scale`).
    previous: Option<f64>,
    /// Arrival times are divided by it after the checks (`Workload::scale_rate`).
    scale: f64,
    /// The session last handed out by [`SessionSource::next_session`].
    current: Option<SessionSpec>,
    /// The file to count rows in for [`SessionSource::len_hint`] (set by
    /// [`open_path`] for a regular file), and the count once asked for.
    rows_in: Option<(PathBuf, Format)>,
    row_count: OnceCell<Option<u64>>,
}

/// The rows of one format.
enum Rows<R: Read> {
    /// Mooncake JSONL, with the first row's timestamp once read (arrival 0).
    Mooncake {
        lines: Lines<R>,
        t0: Option<f64>,
    },
    Jsonl(Lines<R>),
    Azure(azure::Rows<R>),
}

impl<R: Read> Reader<R> {
    /// Starts reading `reader` as `format`; `file` names it in errors. An Azure
    /// CSV's header is read (and checked) here.
    pub fn new(format: Format, reader: R, file: &str) -> Result<Reader<R>, TraceError> {
        let rows = match format {
            Format::Mooncake => Rows::Mooncake {
                lines: Lines::new(reader, file),
                t0: None,
            },
            Format::Jsonl => Rows::Jsonl(Lines::new(reader, file)),
            Format::Azure => Rows::Azure(azure::Rows::new(reader, file)?),
        };
        Ok(Reader {
            file: file.to_string(),
            fields: Vec::new(),
            rows,
            chains: ChainCheck::default(),
            count: 0,
            previous: None,
            scale: 1.0,
            current: None,
            rows_in: None,
            row_count: OnceCell::new(),
        })
    }

    /// The same sessions with every arrival time divided by `factor`, as
    /// `Workload::scale_rate` does.
    pub fn rate_scale(mut self, factor: f64) -> Reader<R> {
        self.scale = factor;
        self
    }

    /// The next session, checked; `None` after the last.
    fn next_owned(&mut self) -> Result<Option<SessionSpec>, TraceError> {
        let file = self.file.as_str();
        let limit = || session_limit(self.count + 1);
        // A JSON line is parsed only within the limit; a CSV row is parsed first.
        let (n, row) = match &mut self.rows {
            Rows::Mooncake { lines, t0 } => {
                let Some(n) = lines.next_row()? else {
                    return Ok(None);
                };
                (n, limit().and_then(|()| mooncake::row(lines.text(), n, t0)))
            }
            Rows::Jsonl(lines) => {
                let Some(n) = lines.next_row()? else {
                    return Ok(None);
                };
                let fields = &mut self.fields;
                (
                    n,
                    limit().and_then(|()| jsonl::row(lines.text(), n, fields)),
                )
            }
            Rows::Azure(rows) => {
                let Some((n, s)) = rows.next_row()? else {
                    return Ok(None);
                };
                (n, limit().map(|()| s))
            }
        };
        let err = |m: String| TraceError::new(file, n, m);
        let mut s = row.map_err(err)?;
        check_session(&s, self.previous).map_err(err)?;
        self.chains.check(&s.runs, n).map_err(err)?;
        self.previous = Some(s.arrival);
        self.count += 1;
        if self.scale != 1.0 {
            s.arrival /= self.scale;
        }
        Ok(Some(s))
    }

    /// Reads every remaining session into a [`Workload`].
    pub fn workload(mut self) -> Result<Workload, TraceError> {
        let mut sessions = Vec::new();
        while let Some(s) = self.next_owned()? {
            sessions.push(s);
        }
        Ok(Workload {
            source: self.file,
            fields: self.fields,
            sessions,
        })
    }
}

impl<R: Read> SessionSource for Reader<R> {
    fn source(&self) -> &str {
        &self.file
    }

    /// The file's rows, counted by a scan of its bytes the first time it is asked
    /// for (only a progress bar asks): a hint, since a CSV field may hold a newline.
    /// `None` for a reader not made by [`open_path`] or [`open_text`], or of something
    /// other than a regular file (a pipe cannot be read twice).
    fn len_hint(&self) -> Option<u64> {
        *self.row_count.get_or_init(|| {
            let (path, format) = self.rows_in.as_ref()?;
            count_file_rows(path, *format)
        })
    }

    fn next_session(&mut self) -> Result<Option<Next<'_>>, TraceError> {
        self.current = self.next_owned()?;
        Ok(self.current.as_ref().map(|session| Next {
            session,
            fields: &self.fields,
        }))
    }
}

/// Opens a trace file for reading one session at a time, in `format` or the
/// detected one when `None` ([`Format::detect`] reads up to the first non-blank line).
pub fn open_path(path: &Path, format: Option<Format>) -> Result<Reader<File>, TraceError> {
    let name = path.display().to_string();
    let open =
        || File::open(path).map_err(|e| TraceError::new(&name, 0, format!("cannot open: {e}")));
    let format = match format {
        Some(f) => f,
        None => {
            let mut lines = Lines::new(open()?, &name);
            let first = match lines.next_row()? {
                Some(_) => lines.text(),
                None => "",
            };
            Format::detect(path, first)
        }
    };
    let mut reader = Reader::new(format, open()?, &name)?;
    // Only a regular file can be read twice: counting a pipe's rows would take them
    // from the replay.
    if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        reader.rows_in = Some((path.to_path_buf(), format));
    }
    Ok(reader)
}

/// Starts reading a trace held in memory (a workload bundled into a program), in
/// `format`; `name` names it in errors. Its rows are counted at once: the text is
/// at hand, and a progress bar then knows the length as it does for a file.
pub fn open_text(
    text: &'static str,
    name: &str,
    format: Format,
) -> Result<Reader<&'static [u8]>, TraceError> {
    let reader = Reader::new(format, text.as_bytes(), name)?;
    let _ = reader.row_count.set(count_rows(text.as_bytes(), format));
    Ok(reader)
}

/// A file's non-blank lines, less an Azure CSV's header; `None` if it cannot be read
/// (the reader reports that itself).
fn count_file_rows(path: &Path, format: Format) -> Option<u64> {
    count_rows(File::open(path).ok()?, format)
}

/// The non-blank lines `bytes` yields, less an Azure CSV's header; `None` on a read
/// error.
fn count_rows(bytes: impl Read, format: Format) -> Option<u64> {
    let mut file = BufReader::with_capacity(1 << 16, bytes);
    let (mut rows, mut blank) = (0u64, true);
    loop {
        let buf = file.fill_buf().ok()?;
        if buf.is_empty() {
            break;
        }
        for &b in buf {
            if b == b'\n' {
                rows += u64::from(!blank);
                blank = true;
            } else if !b.is_ascii_whitespace() {
                blank = false;
            }
        }
        let n = buf.len();
        file.consume(n);
    }
    rows += u64::from(!blank);
    Some(if format == Format::Azure {
        rows.saturating_sub(1)
    } else {
        rows
    })
}

/// The non-blank lines of a reader with their 1-based numbers, one line in memory at
/// a time (the buffer is reused), I/O errors and over-long lines as trace errors.
pub(crate) struct Lines<R: Read> {
    inner: BufReader<LineLimit<R>>,
    file: String,
    /// The current line, without its line ending.
    buf: String,
    n: u64,
}

impl<R: Read> Lines<R> {
    pub(crate) fn new(reader: R, file: &str) -> Lines<R> {
        Lines {
            inner: BufReader::new(LineLimit::new(reader)),
            file: file.to_string(),
            buf: String::new(),
            n: 0,
        }
    }

    /// Moves to the next non-blank line; its number, or `None` at the end.
    pub(crate) fn next_row(&mut self) -> Result<Option<u64>, TraceError> {
        loop {
            self.buf.clear();
            self.n += 1;
            let read = self
                .inner
                .read_line(&mut self.buf)
                .map_err(|e| TraceError::new(&self.file, self.n, format!("cannot read: {e}")))?;
            if read == 0 {
                return Ok(None);
            }
            // The line ending as `BufRead::lines` takes it off: `\n` or `\r\n`.
            if self.buf.ends_with('\n') {
                self.buf.pop();
                if self.buf.ends_with('\r') {
                    self.buf.pop();
                }
            }
            if !self.buf.trim().is_empty() {
                return Ok(Some(self.n));
            }
        }
    }

    /// The line [`Lines::next_row`] moved to.
    pub(crate) fn text(&self) -> &str {
        &self.buf
    }
}
