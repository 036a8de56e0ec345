//! The database's layout, and the checks a database passes before drydock writes to it.
//!
//! - `meta`: one row: the schema version, the revision, and the newest revision compacted out of
//!   the log.
//! - `objects`: one row per stored object (kind, namespace (`''` for cluster-scoped), name, uid,
//!   resourceVersion, the object as JSON).
//! - `log`: the change log that feeds watches (revision, event type, the object as JSON).

use crate::OpenError;
use rusqlite::{Connection, ErrorCode};
use std::path::Path;

/// The schema this build writes and reads.
pub const SCHEMA_VERSION: i64 = 1;

const CREATE: &str = "
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS meta (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    schema_version INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    compacted_through INTEGER NOT NULL
);
INSERT INTO meta (id, schema_version, revision, compacted_through)
    SELECT 0, 1, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM meta);
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL UNIQUE,
    resource_version INTEGER NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
    revision INTEGER PRIMARY KEY,
    event TEXT NOT NULL,
    json TEXT NOT NULL
);
COMMIT;
";

/// Read-only checks: the file is an SQLite database, passes `PRAGMA integrity_check`, and is
/// empty or a drydock store of a schema this build knows.
///
/// *Guarantees*: writes nothing (SQLite may roll back a hot journal left by a crash: that is
/// recovery, not a change).
///
/// The full `integrity_check` rather than `quick_check`: it also checks that indexes match their
/// tables, and a store's database is small (a few thousand objects and the log), so it is fast.
pub fn check(connection: &Connection, path: &Path) -> Result<(), OpenError> {
    let tables = user_tables(connection).map_err(|error| classify(path, error))?;
    integrity(connection, path)?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|t| t == "meta") {
        return Err(OpenError::Foreign { path: path.to_path_buf() });
    }
    let found: i64 = connection
        .query_row("SELECT schema_version FROM meta", [], |row| row.get(0))
        .map_err(|error| load_error(path, &error))?;
    if found > SCHEMA_VERSION {
        return Err(OpenError::NewerSchema { path: path.to_path_buf(), found, supported: SCHEMA_VERSION });
    }
    if found < SCHEMA_VERSION {
        return Err(OpenError::Load { path: path.to_path_buf(), reason: format!("unknown schema version {found}") });
    }
    Ok(())
}

/// WAL and `synchronous=FULL` (a file's journal mode is persistent: this is its first write).
pub fn configure(connection: &Connection, path: &Path, file: bool) -> Result<(), OpenError> {
    let configure = || -> rusqlite::Result<()> {
        if file {
            let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(rusqlite::Error::InvalidParameterName(format!("journal_mode is {mode}, not wal")));
            }
        }
        connection.pragma_update(None, "synchronous", "FULL")
    };
    configure().map_err(|error| classify(path, error))
}

/// drydock's tables, if they are not there yet.
pub fn create(connection: &Connection, path: &Path) -> Result<(), OpenError> {
    connection.execute_batch(CREATE).map_err(|error| classify(path, error))
}

fn user_tables(connection: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement =
        connection.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?;
    let names = statement.query_map([], |row| row.get::<_, String>(0))?;
    names.collect()
}

fn integrity(connection: &Connection, path: &Path) -> Result<(), OpenError> {
    let report = || -> rusqlite::Result<Vec<String>> {
        let mut statement = connection.prepare("PRAGMA integrity_check(20)")?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        rows.collect()
    };
    let report = report().map_err(|error| classify(path, error))?;
    if report.len() == 1 && report[0] == "ok" {
        return Ok(());
    }
    Err(OpenError::Corrupt { path: path.to_path_buf(), report: report.join("; ") })
}

/// An SQLite error at open, by what it says about the file.
fn classify(path: &Path, error: rusqlite::Error) -> OpenError {
    let path = path.to_path_buf();
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => OpenError::NotADatabase { path },
        Some(ErrorCode::DatabaseCorrupt) => OpenError::Corrupt { path, report: error.to_string() },
        _ => OpenError::Open { path, source: error },
    }
}

fn load_error(path: &Path, error: &rusqlite::Error) -> OpenError {
    OpenError::Load { path: path.to_path_buf(), reason: error.to_string() }
}
