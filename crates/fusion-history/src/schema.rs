//! The store's schema and its version. A file is a run store when its
//! SQLite `application_id` is ours and its `schema_version` table holds the
//! version this program reads; a new (empty) file gets the schema; anything
//! else is refused with what it is.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::sqlite_what;

/// The schema this program writes and reads. A later schema that changes
/// the tables gets the next number and a migration from this one.
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id` of a run store: "FLRS" (Fusionlab run store), so
/// that another program's SQLite file is not taken for one.
pub(crate) const APPLICATION_ID: i32 = 0x464c_5253;

const CREATE: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    stored_unix   INTEGER NOT NULL,  -- when the run was stored, seconds since 1970 (UTC)
    scenario      TEXT NOT NULL,     -- its name
    source        TEXT NOT NULL,     -- a path, or scenarios/NAME.toml for a shipped one
    scenario_text TEXT NOT NULL,     -- the file as run, before the overrides
    sets          TEXT NOT NULL,     -- the --set overrides, a JSON array of strings
    seed          TEXT NOT NULL,     -- decimal: a u64 does not fit SQLite's signed integers
    version       TEXT NOT NULL,     -- fusionlab VERSION
    driver        TEXT NOT NULL,     -- simulator | live
    verdict       TEXT NOT NULL,     -- REPRODUCED | NOT REPRODUCED | no expectations
    exit_status   INTEGER NOT NULL,
    report_json   TEXT NOT NULL,     -- the run --json object
    report_text   TEXT NOT NULL      -- the text report as run printed it
);
";

/// Why [`prepare`] did not finish.
#[derive(Debug)]
pub(crate) enum Unprepared {
    /// Another process holds the file. SQLite answers some conflicts at
    /// once, without waiting in its busy handler: a change of journal mode,
    /// or a lock upgrade that would deadlock with the other process's (two
    /// `fusionlab run`s creating a store at once meet both). The caller
    /// tries again.
    Busy(String),
    /// Not a run store this program can use: what it is.
    Refused(String),
}

/// Make `conn` a run store of [`SCHEMA_VERSION`]: create the schema in an
/// empty file, check it in any other. `write`: the caller will record runs
/// (the write-ahead log is turned on, which lets readers and a writer work
/// at once).
pub(crate) fn prepare(conn: &mut Connection, write: bool) -> Result<(), Unprepared> {
    let sql = |e: rusqlite::Error| {
        use rusqlite::ErrorCode as C;
        match e.sqlite_error_code() {
            Some(C::DatabaseBusy | C::DatabaseLocked) => Unprepared::Busy(sqlite_what(&e)),
            _ => Unprepared::Refused(sqlite_what(&e)),
        }
    };
    if write {
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Unprepared::Refused(format!(
                "the run store cannot use a write-ahead log (journal mode {mode})"
            )));
        }
    }
    // Immediate: two processes that find the file empty do not both create
    // the schema (the second waits, then finds it).
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let app: i32 = tx
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(sql)?;
    let objects: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sql)?;
    if app == 0 && objects == 0 {
        tx.execute_batch(CREATE).map_err(sql)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )
        .map_err(sql)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(sql)?;
        return tx.commit().map_err(sql);
    }
    if app != APPLICATION_ID {
        return Err(Unprepared::Refused(format!(
            "a SQLite database, but not a Fusionlab run store (application id {app:#x}, not \
             {APPLICATION_ID:#x}): use another --store-dir, or move it away"
        )));
    }
    let has_table: bool = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql)?
        == 1;
    let version: Option<i64> = if has_table {
        tx.query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .optional()
            .map_err(sql)?
            .flatten()
    } else {
        None
    };
    let Some(version) = version else {
        return Err(Unprepared::Refused(
            "a Fusionlab run store without a schema version (damaged): move it away and a new \
             store is started"
                .into(),
        ));
    };
    match version.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => tx.commit().map_err(sql),
        std::cmp::Ordering::Greater => Err(Unprepared::Refused(format!(
            "run store schema version {version} was written by a newer fusionlab; this one \
             reads version {SCHEMA_VERSION}: use that fusionlab, or another --store-dir"
        ))),
        std::cmp::Ordering::Less => Err(Unprepared::Refused(format!(
            "run store schema version {version} is older than any this fusionlab reads \
             (version {SCHEMA_VERSION}): move it away and a new store is started"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Access, RunStore};

    fn store_file(dir: &std::path::Path) -> std::path::PathBuf {
        dir.join(crate::FILE_NAME)
    }

    fn refused(dir: &std::path::Path, access: Access) -> String {
        RunStore::open(dir, access)
            .err()
            .expect("refused")
            .to_string()
    }

    #[test]
    fn a_corrupt_file_is_refused_with_its_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            store_file(dir.path()),
            b"this is not a database at all, just text\n",
        )
        .expect("writes");
        for access in [Access::Write, Access::Read] {
            let e = refused(dir.path(), access);
            assert!(
                e.starts_with(&format!(
                    "{}: not a SQLite database",
                    store_file(dir.path()).display()
                )),
                "{e}"
            );
        }
        // A store whose pages were overwritten half-way through.
        let dir = tempfile::tempdir().expect("tempdir");
        RunStore::open(dir.path(), Access::Write).expect("creates");
        let path = store_file(dir.path());
        let mut bytes = std::fs::read(&path).expect("reads");
        for b in bytes.iter_mut().skip(16) {
            *b = 0x5a;
        }
        let _ = std::fs::remove_file(path.with_extension("sqlite-wal"));
        let _ = std::fs::remove_file(path.with_extension("sqlite-shm"));
        std::fs::write(&path, bytes).expect("writes");
        let e = refused(dir.path(), Access::Read);
        assert!(e.starts_with(&path.display().to_string()), "{e}");
    }

    #[test]
    fn another_programs_database_is_not_taken_for_a_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = Connection::open(store_file(dir.path())).expect("opens");
        c.execute_batch("CREATE TABLE things (x INTEGER);")
            .expect("creates");
        drop(c);
        let e = refused(dir.path(), Access::Write);
        assert!(e.contains("not a Fusionlab run store"), "{e}");
    }

    fn with_version(version: i64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        RunStore::open(dir.path(), Access::Write).expect("creates");
        let c = Connection::open(store_file(dir.path())).expect("opens");
        c.execute("UPDATE schema_version SET version = ?1", [version])
            .expect("updates");
        dir
    }

    #[test]
    fn an_older_or_newer_schema_is_refused_with_both_versions() {
        let old = with_version(0);
        let e = refused(old.path(), Access::Write);
        assert!(
            e.contains(
                "run store schema version 0 is older than any this fusionlab reads (version 1)"
            ),
            "{e}"
        );
        let newer = with_version(SCHEMA_VERSION + 1);
        let e = refused(newer.path(), Access::Read);
        assert!(
            e.contains("run store schema version 2 was written by a newer fusionlab"),
            "{e}"
        );
        // Nothing was changed by looking.
        let c = Connection::open(store_file(newer.path())).expect("opens");
        let v: i64 = c
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .expect("reads");
        assert_eq!(v, SCHEMA_VERSION + 1);
    }

    #[test]
    fn a_store_without_its_version_table_is_damaged() {
        let dir = tempfile::tempdir().expect("tempdir");
        RunStore::open(dir.path(), Access::Write).expect("creates");
        let c = Connection::open(store_file(dir.path())).expect("opens");
        c.execute_batch("DROP TABLE schema_version;")
            .expect("drops");
        drop(c);
        let e = refused(dir.path(), Access::Read);
        assert!(e.contains("without a schema version"), "{e}");
    }
}
