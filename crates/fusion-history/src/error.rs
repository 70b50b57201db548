//! What goes wrong with a run store, with the file it is about, and how
//! long a writer waits for a store another process holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process's transaction to end
/// before it gives up (runs are stored in milliseconds; a `show` reading
/// meanwhile does not block a writer in WAL mode).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A run store problem: the file (or directory) and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}", path.display())]
pub struct HistoryError {
    pub path: PathBuf,
    pub what: String,
}

impl HistoryError {
    pub fn new(path: &Path, what: impl Into<String>) -> HistoryError {
        HistoryError {
            path: path.to_path_buf(),
            what: what.into(),
        }
    }
}

/// What a SQLite error means for a user, in words.
pub(crate) fn sqlite_what(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::NotADatabase) => {
            "not a SQLite database (the file is corrupt or something else): move it away \
             and a new store is started"
                .into()
        }
        Some(C::DatabaseCorrupt) => {
            "the run store is corrupt: move it away and a new store is started".into()
        }
        Some(C::DatabaseBusy | C::DatabaseLocked) => format!(
            "the run store stayed locked by another process for {} s",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(C::ReadOnly) => "the run store is read-only".into(),
        Some(C::CannotOpen) => format!("cannot open the run store ({e})"),
        Some(C::DiskFull) => "the disk is full".into(),
        _ => format!("run store: {e}"),
    }
}
