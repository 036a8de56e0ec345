//! The store's test suite (drydock-engine's `store_conformance_tests!`) over SQLite: in an
//! in-memory database and in a file.

#![allow(clippy::unwrap_used)]

use drydock_engine::store::{Registry, Store, StoreConfig};
use drydock_store_sqlite::SqliteBackend;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh database file under cargo's scratch directory for integration tests.
fn fresh_file() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("store-sqlite-conformance");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{}.db", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

mod in_memory {
    use super::*;

    drydock_engine::store_conformance_tests!(|config: StoreConfig| {
        Store::open(SqliteBackend::in_memory().unwrap(), Registry::builtin(), config).unwrap()
    });
}

mod in_a_file {
    use super::*;

    drydock_engine::store_conformance_tests!(|config: StoreConfig| {
        Store::open(SqliteBackend::open(&fresh_file()).unwrap(), Registry::builtin(), config).unwrap()
    });
}
