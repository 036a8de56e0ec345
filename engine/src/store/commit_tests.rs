//! The store and its backend: a write is applied only after the backend committed it, and a
//! store opens over what a backend holds.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::api::{Namespace, NamespaceSpec, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, Resource};
use std::sync::Mutex;

const NOW: WallTime = WallTime(1000);

/// What the backend saw, and whether it refuses the next changes.
#[derive(Default)]
struct Log {
    refuse: bool,
    changes: Vec<(u64, EventType, bool, u64)>,
}

/// A backend that records `(revision, event, is a put, compacted_through)` and fails on demand.
struct Recording(Arc<Mutex<Log>>);

impl Backend for Recording {
    fn load(&mut self) -> Result<Snapshot, BackendError> {
        Ok(Snapshot::default())
    }

    fn apply(&mut self, change: &Change<'_>) -> Result<(), BackendError> {
        let mut log = self.0.lock().unwrap();
        if log.refuse {
            return Err(BackendError::Commit { revision: change.revision(), reason: "disk full".into() });
        }
        let put = matches!(change.write(), ObjectWrite::Put(_));
        log.changes.push((change.revision(), change.event.event, put, change.compacted_through));
        Ok(())
    }
}

fn recording(log_capacity: usize) -> (Store, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let config = StoreConfig { log_capacity, ..StoreConfig::default() };
    (Store::open(Recording(log.clone()), Registry::builtin(), config).unwrap(), log)
}

fn namespace(name: &str) -> Object {
    Object::from_spec::<Namespace>(ObjectMeta::named(None, name), &NamespaceSpec {})
}

/// A container wanting the runtime name `shared` (`b` wants its own, `ns-b`).
fn container(name: &str) -> Object {
    let spec = PhysicalContainerSpec {
        image: Some("busybox".into()),
        container_name: (name != "b").then(|| "shared".into()),
        ..Default::default()
    };
    Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), name), &spec)
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::namespaced(PhysicalContainer::KIND, "ns", name)
}

#[test]
fn the_backend_sees_every_change_with_its_write_and_compaction() {
    let (mut store, log) = recording(2);
    store.create(NOW, namespace("ns")).unwrap();
    let a = store.create(NOW, container("a")).unwrap();
    let mut labelled = (*a).clone();
    labelled.metadata.labels.insert("x".into(), "1".into());
    store.update(labelled).unwrap();
    store.delete(NOW, &key("a"), &DeleteOptions::default()).unwrap();
    let changes = log.lock().unwrap().changes.clone();
    assert_eq!(
        changes,
        vec![
            (1, EventType::Added, true, 0),
            (2, EventType::Added, true, 0),
            (3, EventType::Modified, true, 1),
            (4, EventType::Deleted, false, 2),
        ]
    );
}

#[test]
fn a_refused_commit_is_unavailable_and_changes_nothing() {
    let (mut store, log) = recording(100);
    store.create(NOW, namespace("ns")).unwrap();
    let a = store.create(NOW, container("a")).unwrap();
    let before: Vec<Arc<Object>> = store.list(None, None);
    log.lock().unwrap().refuse = true;

    let error = store.create(NOW, container("b")).unwrap_err();
    assert_eq!(error.code(), "Unavailable");
    assert!(
        matches!(&error, StoreError::Unavailable { key, reason } if key == "PhysicalContainer/ns/b" && reason.contains("disk full"))
    );
    assert!(error.to_string().contains("was not applied"), "{error}");
    let mut labelled = (*a).clone();
    labelled.metadata.labels.insert("x".into(), "1".into());
    assert_eq!(store.update(labelled).unwrap_err().code(), "Unavailable");
    assert_eq!(store.delete(NOW, &key("a"), &DeleteOptions::default()).unwrap_err().code(), "Unavailable");

    assert_eq!(store.resource_version(), 2);
    assert_eq!(store.list(None, None), before);
    assert_eq!(store.events_since(2).unwrap().count(), 0);
    assert_eq!(store.events_since(0).unwrap().count(), 2);

    // The next good write works, and the refused ones left no trace: not in the claims (the
    // refused b claims nothing, a's claim still holds), not in the uids (b gets the uid it would
    // have had).
    log.lock().unwrap().refuse = false;
    assert_eq!(store.create(NOW, container("c")).unwrap_err().code(), "Invalid", "a still holds its name");
    let b = store.create(NOW, container("b")).unwrap();
    assert_eq!(b.metadata.resource_version, 3);
    let mut twin = Store::in_memory(Registry::builtin(), StoreConfig::default());
    twin.create(NOW, namespace("ns")).unwrap();
    twin.create(NOW, container("a")).unwrap();
    let uid_of_the_third = twin.create(NOW, namespace("other")).unwrap().metadata.uid.clone();
    assert_eq!(b.metadata.uid, uid_of_the_third);
}

#[test]
fn a_store_opens_over_a_snapshot() {
    let mut source = Store::in_memory(Registry::builtin(), StoreConfig::default());
    source.create(NOW, namespace("ns")).unwrap();
    source.create(NOW, container("a")).unwrap();
    source.delete(NOW, &key("a"), &DeleteOptions::default()).unwrap();
    let snapshot = Snapshot {
        revision: source.resource_version(),
        objects: source.list(None, None),
        log: source.events_since(0).unwrap().cloned().collect(),
    };
    let config = StoreConfig { log_capacity: 2, uid_seed: 9, ..StoreConfig::default() };
    let mut store = Store::open(MemoryBackend::holding(snapshot), Registry::builtin(), config).unwrap();
    assert_eq!(store.resource_version(), 3);
    assert_eq!(store.list(None, None), source.list(None, None));
    assert_eq!(store.events_since(1).unwrap().map(WatchEvent::resource_version).collect::<Vec<_>>(), vec![2, 3]);
    assert!(matches!(store.events_since(0).map(Iterator::count), Err(StoreError::Gone { oldest: 2, .. })));
    assert_eq!(store.create(NOW, container("c")).unwrap().metadata.resource_version, 4);
}

#[test]
fn a_snapshot_that_does_not_hold_together_is_refused() {
    let mut source = Store::in_memory(Registry::builtin(), StoreConfig::default());
    source.create(NOW, namespace("ns")).unwrap();
    source.create(NOW, container("a")).unwrap();
    let log: Vec<WatchEvent> = source.events_since(0).unwrap().cloned().collect();
    let objects = source.list(None, None);
    let open = |snapshot: Snapshot| {
        Store::open(MemoryBackend::holding(snapshot), Registry::builtin(), StoreConfig::default()).err()
    };
    let gap = Snapshot { revision: 2, objects: objects.clone(), log: vec![log[1].clone(), log[0].clone()] };
    assert!(open(gap).unwrap().to_string().contains("jumps"));
    let short = Snapshot { revision: 5, objects: objects.clone(), log: log.clone() };
    assert!(open(short).unwrap().to_string().contains("ends at revision 2"));
    let future = Snapshot { revision: 1, objects: objects.clone(), log: Vec::new() };
    assert!(open(future).unwrap().to_string().contains("after the store's 1"));
    let twice = Snapshot { revision: 2, objects: vec![objects[0].clone(), objects[0].clone()], log };
    assert!(open(twice).unwrap().to_string().contains("stored twice"));
}
