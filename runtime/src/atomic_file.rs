//! Files that appear whole or not at all: every file poolc writes in one piece (the
//! library, object file and header of `poolc build`, the steps `poolc conform --out`
//! writes) goes through [`AtomicFile`], which writes a temporary file in the same
//! directory and renames it over the path only once every byte is written and
//! flushed to disk. It lives in the runtime so that both crates' writers share it;
//! the compiler re-exports it as `poolc::atomic_file`.
//! A write error, a crash or an interruption leaves the old file (or none) and never
//! a half-written one; a temporary file that was not committed is removed when its
//! `AtomicFile` drops. Streams that cannot wait for their end (the JSON-lines log)
//! do not belong here: they mark their own completeness (docs/TRACES.md). Nothing
//! here prints.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A file being written beside `path`, renamed to it by [`AtomicFile::commit`].
pub struct AtomicFile {
    /// The temporary file, `None` once committed.
    file: Option<File>,
    /// `.<name>.<pid>-<n>.tmp` in the target's directory, so the rename stays on one
    /// file system (and is atomic there).
    temp: PathBuf,
    path: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file for `path`. Fails as creating `path` itself would
    /// (a missing or read-only directory).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}-{n}.tmp", std::process::id()));
        let temp = path.with_file_name(temp_name);
        let file = File::create_new(&temp)?;
        Ok(AtomicFile {
            file: Some(file),
            temp,
            path: path.to_path_buf(),
        })
    }

    /// Flushes the bytes to disk and renames the temporary file to the path; on an
    /// error the temporary file is removed and the path left as it was.
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(file) = self.file.as_ref() {
            file.sync_all()?;
            fs::rename(&self.temp, &self.path)?;
            self.file = None;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.as_mut() {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("the file is already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Best effort: the path was never touched, and a leftover temporary file
            // is named as one.
            let _ = fs::remove_file(&self.temp);
        }
    }
}
