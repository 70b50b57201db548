//! The run store: every `fusionlab run` (simulated or live) recorded in one
//! SQLite file, `runs.sqlite`, under the user's data directory: the scenario
//! text, the `--set` overrides, seed, version, time, verdict and the report
//! (its JSON and its text). `fusionlab runs`, `show` and `compare` read it.
//!
//! The file is versioned (`schema.rs`): a file that is not a run store, is
//! corrupt, or was written by an older or newer schema is refused with its
//! path and what is wrong, never read as if it were one. Several processes
//! may record runs at once (write-ahead log, a busy timeout).

mod dirs;
mod error;
mod schema;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use dirs::{DATA_DIR_ENV, data_dir};
pub use error::{BUSY_TIMEOUT, HistoryError};
pub use schema::SCHEMA_VERSION;
use schema::Unprepared;

/// The store's file in its directory.
pub const FILE_NAME: &str = "runs.sqlite";

/// The pause before preparing the store again when SQLite said at once
/// that another process holds it (see `schema::Unprepared::Busy`).
const BUSY_RETRY: Duration = Duration::from_millis(5);

/// A run to record.
#[derive(Clone, Debug, Default)]
pub struct NewRun {
    /// The scenario's name (`myth-cpu-starvation`).
    pub scenario: String,
    /// Where it came from: a path, or `scenarios/NAME.toml` for a shipped one.
    pub source: String,
    /// The scenario file's text as it was run (before the overrides).
    pub scenario_text: String,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<String>,
    pub seed: u64,
    /// `fusionlab 0.1.0`.
    pub version: String,
    /// `simulator` or `live`.
    pub driver: String,
    /// `REPRODUCED`, `NOT REPRODUCED`, or `no expectations`.
    pub verdict: String,
    /// The run's exit status (3 when the checkers or the protocol found problems).
    pub exit_status: u8,
    /// The `run --json` object.
    pub report_json: String,
    /// The text report as `run` prints it.
    pub report_text: String,
}

/// One line of `fusionlab runs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRow {
    pub id: i64,
    /// When the run was stored, `YYYY-MM-DD HH:MM:SS` UTC.
    pub time: String,
    pub scenario: String,
    pub seed: u64,
    pub sets: Vec<String>,
    pub driver: String,
    pub verdict: String,
    pub exit_status: u8,
}

/// A stored run, all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRun {
    pub row: RunRow,
    pub source: String,
    pub scenario_text: String,
    pub version: String,
    pub report_json: String,
    pub report_text: String,
}

/// Whether a command writes runs or only reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Create the directory and the file if need be.
    Write,
    /// The file must exist; nothing is created.
    Read,
}

/// An open run store.
pub struct RunStore {
    conn: Connection,
    path: PathBuf,
}

impl RunStore {
    /// Open the store in `dir` (its file is [`FILE_NAME`]).
    pub fn open(dir: &Path, access: Access) -> Result<RunStore, HistoryError> {
        let path = dir.join(FILE_NAME);
        let fail = |what: String| HistoryError::new(&path, what);
        let flags = match access {
            Access::Write => {
                create_private_dir(dir)
                    .map_err(|e| HistoryError::new(dir, format!("cannot create: {e}")))?;
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
            }
            Access::Read => {
                if !path.exists() {
                    return Err(fail(
                        "no run store here yet (every `fusionlab run` without --no-store adds \
                         one)"
                            .into(),
                    ));
                }
                OpenFlags::SQLITE_OPEN_READ_WRITE
            }
        };
        let conn = Connection::open_with_flags(&path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| fail(error::sqlite_what(&e)))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| fail(error::sqlite_what(&e)))?;
        let mut store = RunStore { conn, path };
        let started = Instant::now();
        loop {
            match schema::prepare(&mut store.conn, access == Access::Write) {
                Ok(()) => return Ok(store),
                Err(Unprepared::Busy(_)) if started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(BUSY_RETRY);
                }
                Err(Unprepared::Busy(what) | Unprepared::Refused(what)) => {
                    return Err(HistoryError::new(&store.path, what));
                }
            }
        }
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, e: &rusqlite::Error) -> HistoryError {
        HistoryError::new(&self.path, error::sqlite_what(e))
    }

    /// Record a run; its id.
    pub fn record(&self, r: &NewRun) -> Result<i64, HistoryError> {
        let sets = serde_json::to_string(&r.sets)
            .map_err(|e| HistoryError::new(&self.path, e.to_string()))?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.conn
            .execute(
                "INSERT INTO runs (stored_unix, scenario, source, scenario_text, sets, seed, \
                 version, driver, verdict, exit_status, report_json, report_text) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    now,
                    r.scenario,
                    r.source,
                    r.scenario_text,
                    sets,
                    r.seed.to_string(),
                    r.version,
                    r.driver,
                    r.verdict,
                    r.exit_status,
                    r.report_json,
                    r.report_text,
                ],
            )
            .map_err(|e| self.fail(&e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Every run, oldest first (the last `limit` when given).
    pub fn list(&self, limit: Option<usize>) -> Result<Vec<RunRow>, HistoryError> {
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT * FROM (SELECT {ROW_COLUMNS} FROM runs ORDER BY id DESC LIMIT ?1) \
                 ORDER BY id"
            ))
            .map_err(|e| self.fail(&e))?;
        let rows = stmt
            .query_map([limit], raw_row)
            .map_err(|e| self.fail(&e))?;
        let mut out = Vec::new();
        for r in rows {
            let raw = r.map_err(|e| self.fail(&e))?;
            out.push(
                raw.parse()
                    .map_err(|what| HistoryError::new(&self.path, what))?,
            );
        }
        Ok(out)
    }

    /// The run with this id.
    pub fn get(&self, id: i64) -> Result<StoredRun, HistoryError> {
        let found = self
            .conn
            .query_row(
                &format!(
                    "SELECT {ROW_COLUMNS}, source, scenario_text, version, report_json, \
                     report_text FROM runs WHERE id = ?1"
                ),
                [id],
                |r| {
                    Ok((
                        raw_row(r)?,
                        r.get::<_, String>(8)?,
                        r.get::<_, String>(9)?,
                        r.get::<_, String>(10)?,
                        r.get::<_, String>(11)?,
                        r.get::<_, String>(12)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.fail(&e))?;
        let Some((raw, source, scenario_text, version, report_json, report_text)) = found else {
            let last = self
                .conn
                .query_row("SELECT max(id) FROM runs", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .map_err(|e| self.fail(&e))?;
            return Err(HistoryError::new(
                &self.path,
                match last {
                    Some(last) => format!("no run {id} (runs are numbered 1 to {last})"),
                    None => format!("no run {id}: no run is stored yet"),
                },
            ));
        };
        Ok(StoredRun {
            row: raw
                .parse()
                .map_err(|what| HistoryError::new(&self.path, what))?,
            source,
            scenario_text,
            version,
            report_json,
            report_text,
        })
    }
}

/// The columns of a [`RunRow`], in [`raw_row`]'s order.
const ROW_COLUMNS: &str = "id, strftime('%Y-%m-%d %H:%M:%S', stored_unix, 'unixepoch'), \
                           scenario, seed, sets, driver, verdict, exit_status";

/// A row as stored, before its seed and sets are parsed.
struct RawRow {
    id: i64,
    time: Option<String>,
    scenario: String,
    seed: String,
    sets: String,
    driver: String,
    verdict: String,
    exit_status: i64,
}

fn raw_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRow> {
    Ok(RawRow {
        id: r.get(0)?,
        time: r.get(1)?,
        scenario: r.get(2)?,
        seed: r.get(3)?,
        sets: r.get(4)?,
        driver: r.get(5)?,
        verdict: r.get(6)?,
        exit_status: r.get(7)?,
    })
}

impl RawRow {
    fn parse(self) -> Result<RunRow, String> {
        let id = self.id;
        let bad = |what: &str, value: &str| format!("run {id}: {what} {value:?} is not valid");
        Ok(RunRow {
            id,
            time: self.time.unwrap_or_else(|| "?".into()),
            scenario: self.scenario,
            seed: self.seed.parse().map_err(|_| bad("seed", &self.seed))?,
            sets: serde_json::from_str(&self.sets).map_err(|_| bad("sets", &self.sets))?,
            driver: self.driver,
            verdict: self.verdict,
            exit_status: u8::try_from(self.exit_status)
                .map_err(|_| bad("exit status", &self.exit_status.to_string()))?,
        })
    }
}

/// Create a directory (and its parents) readable by its owner only: the
/// store holds the scenarios a user ran.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: &str, seed: u64) -> NewRun {
        NewRun {
            scenario: scenario.into(),
            source: format!("scenarios/{scenario}.toml"),
            scenario_text: "name = \"x\"\n".into(),
            sets: vec!["phase.a.duration_s=1".into(), "seed=3".into()],
            seed,
            version: "fusionlab 0.1.0".into(),
            driver: "simulator".into(),
            verdict: "REPRODUCED".into(),
            exit_status: 0,
            report_json: "{\"seed\": 1}".into(),
            report_text: "report\n".into(),
        }
    }

    #[test]
    fn runs_come_back_as_they_were_recorded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = RunStore::open(dir.path(), Access::Write).expect("opens");
        let a = store.record(&run("a", u64::MAX)).expect("records");
        let b = store.record(&run("b", 7)).expect("records");
        assert_eq!((a, b), (1, 2));
        drop(store);

        let store = RunStore::open(dir.path(), Access::Read).expect("opens again");
        let rows = store.list(None).expect("lists");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].scenario, "a");
        assert_eq!(rows[0].seed, u64::MAX, "a seed above i64::MAX survives");
        assert_eq!(rows[1].sets, ["phase.a.duration_s=1", "seed=3"]);
        assert_eq!(rows[1].time.len(), "2026-01-01 00:00:00".len());
        assert_eq!(
            store.list(Some(1)).expect("lists")[0].id,
            2,
            "the last ones"
        );
        let got = store.get(2).expect("gets");
        assert_eq!(got.row, rows[1]);
        assert_eq!(got.report_text, "report\n");
        assert_eq!(got.report_json, "{\"seed\": 1}");
        assert_eq!(got.scenario_text, "name = \"x\"\n");
        let missing = store.get(9).expect_err("no run 9").to_string();
        assert!(
            missing.ends_with("runs.sqlite: no run 9 (runs are numbered 1 to 2)"),
            "{missing}"
        );
    }

    #[test]
    fn reading_a_directory_without_a_store_creates_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = RunStore::open(&dir.path().join("none"), Access::Read)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("none/runs.sqlite: no run store here yet"), "{e}");
        assert!(!dir.path().join("none").exists());
    }

    #[test]
    fn the_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/fusionlab");
        RunStore::open(&nested, Access::Write).expect("opens");
        let mode = std::fs::metadata(&nested)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
