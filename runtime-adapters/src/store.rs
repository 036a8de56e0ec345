//! The API store shared between the driver and its clients (the CLI, the daemon's API).

use drydock_engine::WallTime;
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::store::{Registry, Store, StoreConfig, StoreRequest, StoreResult};
pub use drydock_store_sqlite::OpenError;
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::watch;

/// A [`Store`] behind a lock. Every mutation publishes the store's new resource version, which
/// is how the driver learns that there are watch events to deliver.
pub struct SharedStore {
    inner: Mutex<Store>,
    revision: watch::Sender<u64>,
}

impl SharedStore {
    pub fn new(store: Store) -> Arc<Self> {
        let (revision, _) = watch::channel(store.resource_version());
        Arc::new(SharedStore { inner: Mutex::new(store), revision })
    }

    /// An in-memory store with the built-in kinds and a random uid seed.
    pub fn in_memory() -> Arc<Self> {
        SharedStore::new(Store::in_memory(
            Registry::builtin(),
            StoreConfig { uid_seed: random_seed(), ..StoreConfig::default() },
        ))
    }

    /// A durable store in the SQLite database at `path` (created if missing), with the built-in
    /// kinds, the default configuration and a random uid seed.
    ///
    /// *Guarantees*: a database that cannot be opened, is not one, is corrupt or is of a newer
    /// schema is an [`OpenError`] naming the file and what to do; it is never modified.
    pub fn open_sqlite(path: &Path) -> Result<Arc<Self>, OpenError> {
        SharedStore::open_sqlite_with(path, StoreConfig::default())
    }

    /// [`SharedStore::open_sqlite`] with `config`; its `uid_seed` is replaced by a random one
    /// (uids must not repeat across restarts, and the seed is not persisted).
    pub fn open_sqlite_with(path: &Path, config: StoreConfig) -> Result<Arc<Self>, OpenError> {
        SharedStore::open_sqlite_for(path, Registry::builtin(), config)
    }

    /// [`SharedStore::open_sqlite_with`] admitting the kinds of `registry` (a user's too).
    pub fn open_sqlite_for(path: &Path, registry: Registry, config: StoreConfig) -> Result<Arc<Self>, OpenError> {
        let config = StoreConfig { uid_seed: random_seed(), ..config };
        Ok(SharedStore::new(drydock_store_sqlite::open_store(path, registry, config)?))
    }

    /// Carry out one request, stamped with the current wall time.
    pub fn execute(&self, request: StoreRequest) -> StoreResult {
        self.execute_at(crate::clock::wall_now(), request)
    }

    pub fn execute_at(&self, now: WallTime, request: StoreRequest) -> StoreResult {
        let mut store = self.inner.lock();
        let result = store.execute(now, request);
        self.revision.send_replace(store.resource_version());
        result
    }

    /// What `request` would answer, with nothing changed: Kubernetes' `dryRun=All`
    /// ([`Store::dry_run`]). Watchers are not woken: there is nothing new.
    pub fn dry_run(&self, request: StoreRequest) -> StoreResult {
        self.inner.lock().dry_run(crate::clock::wall_now(), request)
    }

    /// Read under the lock.
    pub fn read<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.inner.lock())
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<Object>> {
        self.read(|s| s.get(key).cloned())
    }

    /// Notified with the new resource version after every mutation.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }
}

/// A uid seed that differs from run to run and from process to process.
fn random_seed() -> u64 {
    crate::clock::wall_now().0 ^ u64::from(std::process::id()).rotate_left(32)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use drydock_engine::api::{Namespace, NamespaceSpec, ObjectMeta, Resource};

    #[test]
    fn a_sqlite_store_keeps_its_objects_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = SharedStore::open_sqlite(&path).unwrap();
        let ns = Object::from_spec::<Namespace>(ObjectMeta::named(None, "web"), &NamespaceSpec {});
        store.execute(StoreRequest::Create { object: ns }).unwrap();
        let revision = store.read(Store::resource_version);
        drop(store);
        let store =
            SharedStore::open_sqlite_with(&path, StoreConfig { log_capacity: 1, ..StoreConfig::default() }).unwrap();
        assert_eq!(store.read(Store::resource_version), revision);
        assert!(store.get(&ObjectKey::cluster(Namespace::KIND, "web")).is_some());
    }

    #[test]
    fn a_file_that_is_not_a_store_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "not a database, and long enough to have a header ".repeat(20)).unwrap();
        let error = SharedStore::open_sqlite(&path).err().unwrap();
        assert!(matches!(error, OpenError::NotADatabase { .. }), "{error:?}");
        assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    }
}
