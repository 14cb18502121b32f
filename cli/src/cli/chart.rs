//! `--html FILE` and `--svg DIR`, shared by `poolc run` and `poolc compare`: the
//! flags, the observer a run needs for them, and writing what
//! `poolc_tools::chart` renders — every file whole or not at all (an existing file
//! is replaced only once its successor is complete). Drawing is the library's.

use std::io::Write;
use std::path::{Path, PathBuf};

use poolc::atomic_file::AtomicFile;
use poolc_tools::chart::{self, Curves};
use poolrt::host::Series;

#[derive(clap::Args)]
pub(super) struct ChartArgs {
    /// Write one self-contained HTML page (no script, nothing fetched) with the
    /// TTFT and E2E distributions and, over simulated time, the waiting queue,
    /// residents, KV allocated and cached and the prefix-cache hit rate: one curve
    /// per spec.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write the same charts as SVG files into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

impl ChartArgs {
    /// The observer a run keeps for the charts, if any is asked for.
    pub(super) fn series(&self) -> Option<Series> {
        (self.html.is_some() || self.svg.is_some()).then(Series::new)
    }

    /// Renders the runs' curves and writes the asked files. `summary` is the text
    /// the page shows under the charts.
    pub(super) fn write(
        &self,
        title: &str,
        subtitle: &str,
        runs: &[Curves],
        summary: &str,
    ) -> Result<(), String> {
        if self.html.is_none() && self.svg.is_none() {
            return Ok(());
        }
        let charts = chart::charts(runs).map_err(|e| e.to_string())?;
        if let Some(dir) = &self.svg {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            for c in &charts {
                whole(&dir.join(c.file), &c.svg)?;
            }
        }
        if let Some(path) = &self.html {
            whole(path, &chart::page(title, subtitle, &charts, summary))?;
        }
        Ok(())
    }
}

/// Writes `text` to `path` through a temporary file renamed when complete.
fn whole(path: &Path, text: &str) -> Result<(), String> {
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = AtomicFile::create(path).map_err(cannot)?;
    file.write_all(text.as_bytes()).map_err(cannot)?;
    file.commit().map_err(cannot)
}
