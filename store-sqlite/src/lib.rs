//! A durable [`Backend`] for the drydock store, on SQLite.
//!
//! The store (drydock-engine's `store`) keeps the semantics and its read path (objects and the
//! change log in memory: objects are few); this backend is its durable copy. Every change is one
//! SQLite transaction: the object's put or delete, the log entry, the log's compaction and the
//! revision. A write is acknowledged only after that transaction committed.
//!
//! *Guarantees*
//! - Files run in WAL mode with `synchronous=FULL`: a committed change survives a crash of the
//!   process or of the machine (as far as the disk honours fsync).
//! - At open, the file is checked (`PRAGMA integrity_check`, the schema version) before anything
//!   is written to it. A file that cannot be opened, is not an SQLite database, is corrupt, is
//!   another program's database or comes from a newer drydock is refused with an [`OpenError`]
//!   naming the file and what to do; it is never modified nor replaced.
//! - The revision and how far the log is compacted are persisted with every change: after a
//!   reopen the revision never goes back, and a watch from a compacted version answers `Gone`.
//!
//! *Caveats*: one process at a time. Nothing stops a second drydock from opening the same file;
//! its writes would interleave with the first one's revisions.

mod schema;

use drydock_engine::api::Object;
use drydock_engine::store::{
    Backend, BackendError, Change, EventType, ObjectWrite, Registry, Snapshot, Store, StoreConfig, WatchEvent,
};
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the message of every refusal to open ends with: how to get going again.
const WHAT_TO_DO: &str =
    "restore it from a backup, or move it aside to start with an empty store; drydock never replaces it";

/// Why a store database could not be opened. Every message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open the store database {}: {source}; check that the path and its directory exist and that drydock may read and write them", path.display())]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("{} is not an SQLite database, so not a drydock store; point drydock at another file, or {WHAT_TO_DO}", path.display())]
    NotADatabase { path: PathBuf },
    #[error("the store database {} is corrupt ({report}); {WHAT_TO_DO}", path.display())]
    Corrupt { path: PathBuf, report: String },
    #[error("{} is an SQLite database but not a drydock store (it has tables, none of them drydock's); point drydock at another file, or {WHAT_TO_DO}", path.display())]
    Foreign { path: PathBuf },
    #[error("the store database {} has schema version {found}, newer than this drydock's {supported}; run the drydock that wrote it (or a newer one), or {WHAT_TO_DO}", path.display())]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error("cannot read the store database {}: {reason}; {WHAT_TO_DO}", path.display())]
    Load { path: PathBuf, reason: String },
}

/// The store's objects, change log and revision in an SQLite database.
pub struct SqliteBackend {
    connection: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteBackend {
    /// Open the database at `path`, creating it (and only it: not its directory) if it does not
    /// exist; check it; create drydock's tables in a new or empty one.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)
            .map_err(|source| OpenError::Open { path: path.to_path_buf(), source })?;
        SqliteBackend::prepare(connection, path, true)
    }

    /// A database in memory: nothing outlives the backend. For tests and the simulator.
    pub fn in_memory() -> Result<Self, OpenError> {
        let path = Path::new(":memory:");
        let connection =
            Connection::open_in_memory().map_err(|source| OpenError::Open { path: path.to_path_buf(), source })?;
        SqliteBackend::prepare(connection, path, false)
    }

    /// The file this backend writes (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Check, then set up: nothing is written before the checks passed.
    fn prepare(connection: Connection, path: &Path, file: bool) -> Result<Self, OpenError> {
        schema::check(&connection, path)?;
        schema::configure(&connection, path, file)?;
        schema::create(&connection, path)?;
        Ok(SqliteBackend { connection, path: path.to_path_buf() })
    }

    fn load_objects(&self) -> rusqlite::Result<Result<Vec<Arc<Object>>, String>> {
        let mut statement = self.connection.prepare("SELECT json FROM objects ORDER BY kind, namespace, name")?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        let mut objects = Vec::new();
        for json in rows {
            match serde_json::from_str::<Object>(&json?) {
                Ok(object) => objects.push(Arc::new(object)),
                Err(error) => return Ok(Err(format!("an object does not parse: {error}"))),
            }
        }
        Ok(Ok(objects))
    }

    fn load_log(&self) -> rusqlite::Result<Result<Vec<WatchEvent>, String>> {
        let mut statement = self.connection.prepare("SELECT revision, event, json FROM log ORDER BY revision")?;
        let rows = statement
            .query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?)))?;
        let mut log = Vec::new();
        for row in rows {
            let (revision, event, json) = row?;
            match decode_event(&event, &json) {
                Ok(event) => log.push(event),
                Err(reason) => return Ok(Err(format!("log entry {revision}: {reason}"))),
            }
        }
        Ok(Ok(log))
    }

    fn commit(&mut self, change: &Change<'_>) -> rusqlite::Result<Result<(), String>> {
        let revision = to_sql_int(change.revision())?;
        let compacted_through = to_sql_int(change.compacted_through)?;
        let json = match serde_json::to_string(&*change.event.object) {
            Ok(json) => json,
            Err(error) => return Ok(Err(format!("the object does not serialize: {error}"))),
        };
        let tx = self.connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        match change.write() {
            ObjectWrite::Put(object) => {
                let (kind, namespace, name) = key_columns(object);
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO objects (kind, namespace, name, uid, resource_version, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![kind, namespace, name, object.metadata.uid.0, revision, json])?;
            }
            ObjectWrite::Remove(object) => {
                let (kind, namespace, name) = key_columns(object);
                tx.prepare_cached("DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND name = ?3")?
                    .execute(params![kind, namespace, name])?;
            }
        }
        tx.prepare_cached("INSERT INTO log (revision, event, json) VALUES (?1, ?2, ?3)")?.execute(params![
            revision,
            event_name(change.event.event),
            json
        ])?;
        tx.prepare_cached("DELETE FROM log WHERE revision <= ?1")?.execute([compacted_through])?;
        tx.prepare_cached("UPDATE meta SET revision = ?1, compacted_through = max(compacted_through, ?2)")?
            .execute([revision, compacted_through])?;
        tx.commit()?;
        Ok(Ok(()))
    }
}

impl Backend for SqliteBackend {
    /// *Caveats*: reads everything; meant to be called once, at open.
    fn load(&mut self) -> Result<Snapshot, BackendError> {
        let load = || -> rusqlite::Result<Result<Snapshot, String>> {
            let revision: i64 = self.connection.query_row("SELECT revision FROM meta", [], |row| row.get(0))?;
            let Ok(revision) = u64::try_from(revision) else {
                return Ok(Err(format!("the revision {revision} is negative")));
            };
            let objects = match self.load_objects()? {
                Ok(objects) => objects,
                Err(reason) => return Ok(Err(reason)),
            };
            let log = match self.load_log()? {
                Ok(log) => log,
                Err(reason) => return Ok(Err(reason)),
            };
            Ok(Ok(Snapshot { revision, objects, log }))
        };
        match load() {
            Ok(Ok(snapshot)) => Ok(snapshot),
            Ok(Err(reason)) => Err(BackendError::Load { reason }),
            Err(error) => Err(BackendError::Load { reason: error.to_string() }),
        }
    }

    fn apply(&mut self, change: &Change<'_>) -> Result<(), BackendError> {
        let revision = change.revision();
        match self.commit(change) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => Err(BackendError::Commit { revision, reason }),
            Err(error) => {
                Err(BackendError::Commit { revision, reason: format!("{} (SQLite): {error}", self.path.display()) })
            }
        }
    }
}

/// Open the store database at `path` and a store over it.
///
/// *Caveats*: see [`Store::open`] on `config.uid_seed`: give it a random one.
pub fn open_store(path: &Path, registry: Registry, config: StoreConfig) -> Result<Store, OpenError> {
    let backend = SqliteBackend::open(path)?;
    Store::open(backend, registry, config)
        .map_err(|error| OpenError::Load { path: path.to_path_buf(), reason: error.to_string() })
}

/// An object's key as the objects table stores it: a cluster-scoped object's namespace is `''`.
fn key_columns(object: &Object) -> (&str, &str, &str) {
    (&object.kind, object.metadata.namespace.as_deref().unwrap_or(""), &object.metadata.name)
}

fn event_name(event: EventType) -> &'static str {
    match event {
        EventType::Added => "Added",
        EventType::Modified => "Modified",
        EventType::Deleted => "Deleted",
    }
}

fn decode_event(event: &str, json: &str) -> Result<WatchEvent, String> {
    let event = match event {
        "Added" => EventType::Added,
        "Modified" => EventType::Modified,
        "Deleted" => EventType::Deleted,
        other => return Err(format!("unknown event type {other:?}")),
    };
    let object = serde_json::from_str::<Object>(json).map_err(|error| format!("the object does not parse: {error}"))?;
    Ok(WatchEvent { event, object: Arc::new(object) })
}

/// SQLite integers are signed: a revision past `i64::MAX` cannot be stored.
fn to_sql_int(value: u64) -> rusqlite::Result<i64> {
    i64::try_from(value).map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))
}
