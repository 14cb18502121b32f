//! The Azure LLM inference trace reader (AzurePublicDataset, 2023 "Splitwise" traces):
//! CSV with a header naming `TIMESTAMP`, `ContextTokens` and `GeneratedTokens` (in any
//! order; other columns are ignored). `TIMESTAMP` is a wall-clock datetime such as
//! `2023-11-16 18:17:03.9799600` with no zone; arrival is seconds since the first row,
//! computed exactly in nanoseconds so that no rounding depends on the date. The trace
//! has no content information: sessions share nothing. It must not guess at a
//! malformed datetime.

use std::io::Read;

use super::{Format, LineLimit, Reader, SessionSpec, TraceError, Workload};

/// Reads an Azure LLM inference CSV whole; `file` names it in errors.
pub fn read<R: Read>(reader: R, file: &str) -> Result<Workload, TraceError> {
    Reader::new(Format::Azure, reader, file)?.workload()
}

/// The rows of a CSV after its header, one at a time.
pub(super) struct Rows<R: Read> {
    csv: csv::Reader<LineLimit<R>>,
    file: String,
    /// Columns of `TIMESTAMP`, `ContextTokens`, `GeneratedTokens`.
    columns: (usize, usize, usize),
    /// The first row's time (arrival 0), in nanoseconds.
    t0: Option<i128>,
    record: csv::StringRecord,
}

impl<R: Read> Rows<R> {
    /// Reads and checks the header.
    pub(super) fn new(reader: R, file: &str) -> Result<Rows<R>, TraceError> {
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(csv::Trim::All)
            .from_reader(LineLimit::new(reader));
        let header = csv.headers().map_err(|e| csv_error(file, &e, 1))?.clone();
        let col = |name: &str| {
            header.iter().position(|h| h == name).ok_or_else(|| {
                TraceError::new(
                    file,
                    1,
                    format!("the header has no `{name}` column (it needs TIMESTAMP, ContextTokens, GeneratedTokens)"),
                )
            })
        };
        let columns = (
            col("TIMESTAMP")?,
            col("ContextTokens")?,
            col("GeneratedTokens")?,
        );
        Ok(Rows {
            csv,
            file: file.to_string(),
            columns,
            t0: None,
            record: csv::StringRecord::new(),
        })
    }

    /// The next row as a session with the line it starts on; `None` at the end.
    pub(super) fn next_row(&mut self) -> Result<Option<(u64, SessionSpec)>, TraceError> {
        let file = self.file.as_str();
        // The line the next record starts on (an I/O error has no position of its own).
        let line_before = self.csv.position().line();
        match self.csv.read_record(&mut self.record) {
            Ok(false) => return Ok(None),
            Ok(true) => {}
            Err(e) => return Err(csv_error(file, &e, line_before)),
        }
        let record = &self.record;
        let n = record.position().map_or(line_before, |p| p.line());
        let err = |m: String| TraceError::new(file, n, m);
        let field = |i: usize| record.get(i).unwrap_or("");
        let (ts, ctx, gen_) = self.columns;
        let t = parse_datetime(field(ts)).map_err(err)?;
        let prompt = tokens("ContextTokens", field(ctx)).map_err(err)?;
        let output = tokens("GeneratedTokens", field(gen_)).map_err(err)?;
        let t0 = *self.t0.get_or_insert(t);
        let s = SessionSpec {
            arrival: (t - t0) as f64 / 1e9,
            prompt,
            output,
            runs: Vec::new(),
            extra: Vec::new(),
            name: None,
            line: n,
        };
        Ok(Some((n, s)))
    }
}

fn csv_error(file: &str, e: &csv::Error, fallback: u64) -> TraceError {
    let line = e.position().map_or(fallback, |p| p.line());
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("the row has {len} fields, the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "the row is not valid UTF-8".to_string(),
        csv::ErrorKind::Io(e) => format!("cannot read: {e}"),
        _ => format!("bad CSV: {e}"),
    };
    TraceError::new(file, line, message)
}

fn tokens(column: &str, text: &str) -> Result<u64, String> {
    text.parse::<u64>()
        .map_err(|_| format!("{column} `{text}` is not a whole number of tokens"))
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` (a `T` may separate date and time) as
/// nanoseconds since 1970-01-01 00:00:00 of the same (unstated) zone.
pub fn parse_datetime(text: &str) -> Result<i128, String> {
    let bad = || format!("TIMESTAMP `{text}` is not a datetime like `2023-11-16 18:17:03.9799600`");
    let (date, time) = text.split_once([' ', 'T']).ok_or_else(bad)?;
    let mut d = date.split('-');
    let (y, mo, da) = match (d.next(), d.next(), d.next(), d.next()) {
        (Some(y), Some(m), Some(d), None) => (y, m, d),
        _ => return Err(bad()),
    };
    let (hms, frac) = match time.split_once('.') {
        Some((hms, frac)) => (hms, frac),
        None => (time, ""),
    };
    let mut t = hms.split(':');
    let (h, mi, s) = match (t.next(), t.next(), t.next(), t.next()) {
        (Some(h), Some(m), Some(s), None) => (h, m, s),
        _ => return Err(bad()),
    };
    let num = |s: &str, lo: i64, hi: i64| -> Result<i64, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 4 {
            return Err(bad());
        }
        let v: i64 = s.parse().map_err(|_| bad())?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(bad())
        }
    };
    let (y, mo, da) = (num(y, 0, 9999)?, num(mo, 1, 12)?, num(da, 1, 31)?);
    let (h, mi, s) = (num(h, 0, 23)?, num(mi, 0, 59)?, num(s, 0, 60)?);
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let mut nanos: i128 = 0;
    for (i, b) in frac.bytes().enumerate() {
        nanos += i128::from(b - b'0') * 10i128.pow(8 - i as u32);
    }
    let days = days_from_civil(y, mo, da);
    let secs = i128::from(days) * 86_400 + i128::from(h * 3600 + mi * 60 + s);
    Ok(secs * 1_000_000_000 + nanos)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_are_exact() {
        let a = parse_datetime("2023-11-16 18:17:03.9799600").unwrap();
        let b = parse_datetime("2023-11-16 18:17:04.0319600").unwrap();
        assert_eq!(b - a, 52_000_000);
        // Across midnight and a month end.
        let c = parse_datetime("2024-02-29T23:59:59").unwrap();
        let d = parse_datetime("2024-03-01 00:00:00.5").unwrap();
        assert_eq!(d - c, 1_500_000_000);
        assert_eq!(parse_datetime("1970-01-01 00:00:00").unwrap(), 0);
        assert!(parse_datetime("2023-13-01 00:00:00").is_err());
        assert!(parse_datetime("yesterday").is_err());
        assert!(parse_datetime("2023-11-16 18:17:03.12345678901").is_err());
    }
}
