//! `run --trace FILE [--trace-window A..B]`: the file is created before the
//! run (a path that cannot be written is refused at once, as bad input),
//! the simulator writes the trace as it runs, and a line on stderr says
//! what the trace holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fusion_report::trace::{TraceOut, TraceWindow, TraceWriter};

/// The trace `--trace` asked for, its file created.
pub struct TraceFile {
    pub path: PathBuf,
    pub writer: TraceWriter,
}

impl TraceFile {
    /// Create (truncate) the file `--trace` names, if any.
    pub fn create(
        path: Option<&Path>,
        window: Option<TraceWindow>,
    ) -> Result<Option<TraceFile>, crate::Failure> {
        let Some(path) = path else {
            return Ok(None);
        };
        let out = TraceOut::create(path).map_err(|e| {
            crate::Failure::input(format!(
                "--trace {}: cannot write the trace there: {e}",
                path.display()
            ))
        })?;
        Ok(Some(TraceFile {
            path: path.to_path_buf(),
            writer: TraceWriter::new(out, window.unwrap_or(TraceWindow::ALL)),
        }))
    }
}

/// End the trace at `path` and say on `err` what it holds.
pub fn finish(path: &Path, writer: TraceWriter, err: &mut dyn Write) -> Result<()> {
    let (summary, _) = writer
        .finish()
        .with_context(|| format!("cannot write the trace to {}", path.display()))?;
    writeln!(
        err,
        "trace: {} events, {:.1} MB of JSON, {} block transfers, written to {} \
         (open it in ui.perfetto.dev)",
        summary.events,
        summary.json_bytes as f64 / 1e6,
        summary.transfers,
        path.display()
    )?;
    if summary.transfers_unfinished > 0 {
        writeln!(
            err,
            "trace: {} requests have no arrow (on their way at the end, lost, or not wholly \
             inside --trace-window)",
            summary.transfers_unfinished
        )?;
    }
    if summary.records_dropped > 0 {
        writeln!(
            err,
            "trace: {} records were dropped (an instance's trace log was full)",
            summary.records_dropped
        )?;
    }
    Ok(())
}
