//! What survives a reopen, what a failed commit leaves, and which files are refused (untouched).

#![allow(clippy::unwrap_used)]

use drydock_engine::WallTime;
use drydock_engine::api::{
    Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, Resource,
};
use drydock_engine::store::{DeleteOptions, Registry, Store, StoreConfig, StoreError, WatchEvent};
use drydock_store_sqlite::{OpenError, SqliteBackend, open_store};
use std::path::{Path, PathBuf};

const NOW: WallTime = WallTime(1000);

fn namespace(name: &str) -> Object {
    Object::from_spec::<Namespace>(ObjectMeta::named(None, name), &NamespaceSpec {})
}

fn container(name: &str) -> Object {
    let spec = PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() };
    Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), name), &spec)
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::namespaced(PhysicalContainer::KIND, "ns", name)
}

fn config(log_capacity: usize, uid_seed: u64) -> StoreConfig {
    StoreConfig { log_capacity, uid_seed, ..StoreConfig::default() }
}

fn open(path: &Path, log_capacity: usize) -> Store {
    open_store(path, Registry::builtin(), config(log_capacity, 1)).unwrap()
}

fn revisions(store: &Store, since: u64) -> Vec<u64> {
    store.events_since(since).unwrap().map(WatchEvent::resource_version).collect()
}

fn db_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("store.db")
}

/// Versions 1..=7: the namespace, a..e, then a deleted.
fn write_some(store: &mut Store) {
    store.create(NOW, namespace("ns")).unwrap();
    for name in ["a", "b", "c", "d", "e"] {
        store.create(NOW, container(name)).unwrap();
    }
    store.delete(NOW, &key("a"), &DeleteOptions::default()).unwrap();
}

#[test]
fn objects_log_and_revision_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let mut store = open(&path, 3);
    write_some(&mut store);
    let objects = store.list(None, None);
    let kept: Vec<WatchEvent> = store.events_since(4).unwrap().cloned().collect();
    drop(store);

    let mut store = open(&path, 3);
    assert_eq!(store.resource_version(), 7);
    assert_eq!(store.list(None, None), objects);
    assert_eq!(store.events_since(4).unwrap().cloned().collect::<Vec<_>>(), kept);
    assert_eq!(revisions(&store, 6), vec![7]);
    // Compaction was persisted: 4 and before are gone, 5..=7 kept.
    assert!(matches!(store.events_since(3).map(Iterator::count), Err(StoreError::Gone { requested: 3, oldest: 5 })));
    // The revision never goes back; the deleted object stays deleted.
    assert!(store.get(&key("a")).is_none());
    let f = store.create(NOW, container("f")).unwrap();
    assert_eq!(f.metadata.resource_version, 8);
    drop(store);

    // A reopen with a smaller capacity keeps less; with a larger one it cannot bring back more.
    let store = open(&path, 1);
    assert_eq!(revisions(&store, 7), vec![8]);
    assert!(store.events_since(6).is_err());
    drop(store);
    let store = open(&path, 100);
    assert_eq!(store.resource_version(), 8);
    assert_eq!(revisions(&store, 7), vec![8]);
}

#[test]
fn a_reopened_store_keeps_enforcing_its_rules() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let mut store = open(&path, 100);
    write_some(&mut store);
    let b = store.get(&key("b")).cloned().unwrap();
    drop(store);
    let mut store = open(&path, 100);
    assert_eq!(store.create(NOW, container("b")).unwrap_err().code(), "AlreadyExists");
    let mut stale = (*b).clone();
    stale.metadata.resource_version -= 1;
    assert_eq!(store.update(stale).unwrap_err().code(), "Conflict");
    assert_eq!(store.get_by_uid(&b.metadata.uid), Some(&b));
}

#[test]
fn a_failed_commit_is_unavailable_changes_nothing_and_the_next_write_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let mut store = open(&path, 100);
    write_some(&mut store);
    let before = store.list(None, None);
    // Another connection makes the next log entry fail, after the object row was written.
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .execute_batch("CREATE TRIGGER refuse BEFORE INSERT ON log BEGIN SELECT RAISE(ABORT, 'injected failure'); END;")
        .unwrap();

    let error = store.create(NOW, container("x")).unwrap_err();
    assert_eq!(error.code(), "Unavailable");
    assert!(error.to_string().contains("injected failure") && error.to_string().contains("not applied"), "{error}");
    let b = store.get(&key("b")).cloned().unwrap();
    assert_eq!(store.update_status((*b).clone()).map(|o| o.metadata.resource_version), Ok(3), "a no-op writes nothing");
    let mut labelled = (*b).clone();
    labelled.metadata.labels.insert("k".into(), "v".into());
    assert_eq!(store.update(labelled.clone()).unwrap_err().code(), "Unavailable");
    assert_eq!(store.delete(NOW, &key("b"), &DeleteOptions::default()).unwrap_err().code(), "Unavailable");
    assert_eq!(store.resource_version(), 7);
    assert_eq!(store.list(None, None), before);
    assert!(revisions(&store, 7).is_empty());

    other.execute_batch("DROP TRIGGER refuse").unwrap();
    let x = store.create(NOW, container("x")).unwrap();
    assert_eq!(x.metadata.resource_version, 8);
    assert_eq!(store.update(labelled).unwrap().metadata.resource_version, 9);
    drop(store);
    // Nothing of the failed transactions reached the file.
    let store = open(&path, 100);
    assert_eq!(store.resource_version(), 9);
    assert_eq!(revisions(&store, 7), vec![8, 9]);
    assert_eq!(store.len(), before.len() + 1);
}

#[test]
fn a_file_is_in_wal_mode_with_full_sync() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let backend = SqliteBackend::open(&path).unwrap();
    assert_eq!(backend.path(), path);
    let check = rusqlite::Connection::open(&path).unwrap();
    let mode: String = check.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    drop(backend);
}

/// Asserts opening `path` fails, the message names the file and says what to do, and the
/// file's bytes are as they were.
fn assert_refused(path: &Path, expect: fn(&OpenError) -> bool) -> String {
    let before = std::fs::read(path).unwrap();
    let error = SqliteBackend::open(path).unwrap_err();
    assert!(expect(&error), "unexpected error: {error:?}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "the message does not name the file: {message}");
    assert!(message.contains("never replaces it"), "the message does not say what to do: {message}");
    assert_eq!(std::fs::read(path).unwrap(), before, "the file was modified");
    let error = open_store(path, Registry::builtin(), StoreConfig::default()).err().unwrap();
    assert!(expect(&error), "unexpected error: {error:?}");
    assert_eq!(std::fs::read(path).unwrap(), before, "the file was modified");
    message
}

#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    std::fs::write(&path, b"apiVersion: v1\nkind: Namespace\n".repeat(200)).unwrap();
    assert_refused(&path, |e| matches!(e, OpenError::NotADatabase { .. }));
    assert!(!dir.path().join("store.db-wal").exists());
}

#[test]
fn a_corrupt_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let mut store = open(&path, 100);
    write_some(&mut store);
    for i in 0..200 {
        store.create(NOW, container(&format!("filler-{i}"))).unwrap();
    }
    drop(store);
    // Checkpoint the WAL into the file and leave journal mode so the file alone is the data.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0)).unwrap();
    drop(c);
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 4 * 4096, "{} bytes", bytes.len());
    // Scribble over the middle of the third page (a b-tree page) and beyond.
    for byte in &mut bytes[2 * 4096 + 8..3 * 4096] {
        *byte = 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let message = assert_refused(&path, |e| matches!(e, OpenError::Corrupt { .. } | OpenError::NotADatabase { .. }));
    assert!(message.contains("restore it from a backup"), "{message}");
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    drop(SqliteBackend::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute("UPDATE meta SET schema_version = 2", []).unwrap();
    c.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0)).unwrap();
    drop(c);
    let message = assert_refused(&path, |e| matches!(e, OpenError::NewerSchema { found: 2, supported: 1, .. }));
    assert!(message.contains("schema version 2"), "{message}");
}

#[test]
fn another_programs_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch("CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x');").unwrap();
    drop(c);
    assert_refused(&path, |e| matches!(e, OpenError::Foreign { .. }));
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere").join("store.db");
    let error = SqliteBackend::open(&path).unwrap_err();
    assert!(matches!(error, OpenError::Open { .. }), "{error:?}");
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    assert!(!path.exists());
}

#[test]
fn a_new_file_and_an_empty_one_start_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_in(&dir);
    let store = open(&path, 100);
    assert_eq!((store.resource_version(), store.len()), (0, 0));
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let store = open(&empty, 100);
    assert_eq!((store.resource_version(), store.len()), (0, 0));
}
