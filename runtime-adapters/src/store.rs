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
///
/// *Guarantees*: a write (which over SQLite waits for its commit's fsync) does not stall the
/// other tasks of the tokio worker it is called on: on a multi-threaded runtime tokio hands them
/// to another worker first ([`tokio::task::block_in_place`]). Callers stay synchronous.
///
/// *Caveats*: reads wait for the lock a write holds through its commit.
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
        if request.is_read() {
            return self.inner.lock().execute(now, request);
        }
        off_the_worker(|| {
            let mut store = self.inner.lock();
            let result = store.execute(now, request);
            self.revision.send_replace(store.resource_version());
            result
        })
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

/// Run `blocking` so that the other tasks of this tokio worker go on meanwhile: on a
/// multi-threaded runtime, [`tokio::task::block_in_place`]; elsewhere (a current-thread runtime,
/// no runtime) there is no other worker to hand them to, and it just runs.
fn off_the_worker<T>(blocking: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|handle| handle.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(blocking),
        _ => blocking(),
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

    /// A backend whose commit waits until it is told to go on, like a commit waiting for fsync.
    struct WaitingBackend(std::sync::mpsc::Receiver<()>);

    impl drydock_engine::store::Backend for WaitingBackend {
        fn load(&mut self) -> Result<drydock_engine::store::Snapshot, drydock_engine::store::BackendError> {
            Ok(drydock_engine::store::Snapshot::default())
        }

        fn apply(&mut self, _: &drydock_engine::store::Change<'_>) -> Result<(), drydock_engine::store::BackendError> {
            self.0
                .recv_timeout(std::time::Duration::from_secs(20))
                .map_err(|_| drydock_engine::store::BackendError::Load { reason: "the other task never ran".into() })
        }
    }

    /// With one worker, a commit that blocks until another task runs would deadlock if it held
    /// the worker: the write must hand the worker's other tasks on.
    #[test]
    fn a_blocked_commit_leaves_the_workers_other_tasks_running() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let (go_on, wait) = std::sync::mpsc::channel();
        let store =
            SharedStore::new(Store::open(WaitingBackend(wait), Registry::builtin(), StoreConfig::default()).unwrap());
        let result = runtime.block_on(async move {
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
            let other = tokio::spawn(async move {
                let _ = ready_rx.await;
                go_on.send(()).unwrap();
            });
            let write = tokio::spawn(async move {
                let _ = ready_tx.send(());
                let ns = Object::from_spec::<Namespace>(ObjectMeta::named(None, "web"), &NamespaceSpec {});
                store.execute(StoreRequest::Create { object: ns })
            });
            let result = write.await.unwrap();
            other.await.unwrap();
            result
        });
        assert!(result.is_ok(), "{result:?}");
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
