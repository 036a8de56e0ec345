//! The API store shared between the driver and its clients (the CLI, the daemon's API).

use drydock_engine::WallTime;
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::store::{Registry, Store, StoreConfig, StoreRequest, StoreResult};
use parking_lot::Mutex;
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
        let seed = crate::clock::wall_now().0 ^ u64::from(std::process::id()).rotate_left(32);
        SharedStore::new(Store::in_memory(
            Registry::builtin(),
            StoreConfig { uid_seed: seed, ..StoreConfig::default() },
        ))
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
