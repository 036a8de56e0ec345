//! The store's test suite, for any backend: object lifecycle, preconditions, finalizers,
//! admission and the watch log. [`store_conformance_tests!`](crate::store_conformance_tests)
//! expands it into `#[test]` functions over a store constructor; the engine runs it over the
//! memory backend, drydock-store-sqlite over SQLite (in memory and in a file).
//!
//! The cases are in one macro per concept, which the suite's macro expands after its helpers:
//! `writes` (create, update, status, dispatch, uids), `deletion` (finalizers, propagation),
//! `admission` and `watch`.
//!
//! Only with the `testing` feature (or in the engine's own tests).

mod admission;
mod deletion;
mod watch;
mod writes;

/// Expand the store's test suite here: one `#[test]` per case, each on a fresh store made by
/// `$open`, an expression of type `impl Fn(StoreConfig) -> Store`.
///
/// *Assumptions*: the calling crate depends on `serde_json`, and allows `clippy::unwrap_used`
/// where it expands this (tests unwrap).
#[macro_export]
macro_rules! store_conformance_tests {
    ($open:expr) => {
        use std::sync::Arc;
        #[allow(unused_imports)]
        use $crate::api::{
            ContainerPhase, Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, OwnerReference, PhysicalContainer,
            PhysicalContainerSpec, PhysicalContainerStatus, Resource, Uid, names,
        };
        #[allow(unused_imports)]
        use $crate::store::*;
        use $crate::time::WallTime;

        // ---------------------------------------------------------------------------------------------
        // Helpers
        // ---------------------------------------------------------------------------------------------

        const NOW: WallTime = WallTime(1000);
        const LATER: WallTime = WallTime(2000);
        const NS: &str = "ns";

        fn store_with(config: StoreConfig) -> Store {
            ($open)(config)
        }

        /// An empty store with the default configuration.
        fn empty_store() -> Store {
            store_with(StoreConfig::default())
        }

        /// A store holding the namespace `ns`.
        fn store() -> Store {
            let mut store = empty_store();
            store.create(NOW, namespace(NS)).unwrap();
            store
        }

        fn namespace(name: &str) -> Object {
            Object::from_spec::<Namespace>(ObjectMeta::named(None, name), &NamespaceSpec {})
        }

        fn spec(image: &str) -> PhysicalContainerSpec {
            PhysicalContainerSpec { image: Some(image.into()), ..Default::default() }
        }

        /// A valid physical container `ns/name` running busybox.
        fn container(ns: &str, name: &str) -> Object {
            container_with(ns, name, spec("busybox:latest"))
        }

        fn container_with(ns: &str, name: &str, spec: PhysicalContainerSpec) -> Object {
            Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some(ns), name), &spec)
        }

        fn pc_key(ns: &str, name: &str) -> ObjectKey {
            ObjectKey::namespaced(PhysicalContainer::KIND, ns, name)
        }

        fn ns_key(name: &str) -> ObjectKey {
            ObjectKey::cluster(Namespace::KIND, name)
        }

        /// A copy of `object` (as a client would send it back) with its typed spec edited.
        fn edit_spec(object: &Object, edit: impl FnOnce(&mut PhysicalContainerSpec)) -> Object {
            let mut spec = object.spec::<PhysicalContainer>().unwrap();
            edit(&mut spec);
            let mut next = object.clone();
            next.spec = std::sync::Arc::new(serde_json::to_value(&spec).unwrap());
            next
        }

        fn with_label(object: &Object, key: &str, value: &str) -> Object {
            let mut next = object.clone();
            next.metadata.labels.insert(key.into(), value.into());
            next
        }

        fn with_status(object: &Object, phase: ContainerPhase) -> Object {
            let mut next = object.clone();
            next.set_status::<PhysicalContainer>(&PhysicalContainerStatus { phase, ..Default::default() });
            next
        }

        fn with_finalizers(object: &Object, finalizers: &[&str]) -> Object {
            let mut next = object.clone();
            next.metadata.finalizers = finalizers.iter().map(|f| f.to_string()).collect();
            next
        }

        fn with_owner(object: &Object, owner: OwnerReference) -> Object {
            let mut next = object.clone();
            next.metadata.owner_references = vec![owner];
            next
        }

        fn delete(store: &mut Store, now: WallTime, key: &ObjectKey) -> Result<Arc<Object>, StoreError> {
            store.delete(now, key, &DeleteOptions::default())
        }

        /// The field paths of an `Invalid` error; panics on any other result.
        fn invalid_paths<T: std::fmt::Debug>(result: Result<T, StoreError>) -> Vec<String> {
            match result {
                Err(StoreError::Invalid { errors, .. }) => {
                    assert!(!errors.is_empty(), "Invalid with no field errors");
                    errors.into_iter().map(|e| e.path).collect()
                }
                other => panic!("expected Invalid, got {other:?}"),
            }
        }

        /// Asserts `result` is `Invalid` with exactly the one field path `path`.
        fn assert_invalid_at<T: std::fmt::Debug>(result: Result<T, StoreError>, path: &str) {
            assert_eq!(invalid_paths(result), vec![path.to_string()]);
        }

        fn assert_conflict<T: std::fmt::Debug>(result: Result<T, StoreError>) {
            match result {
                Err(e @ StoreError::Conflict { .. }) => assert!(e.is_conflict()),
                other => panic!("expected Conflict, got {other:?}"),
            }
        }

        fn assert_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) {
            match result {
                Err(e @ StoreError::NotFound { .. }) => assert!(e.is_not_found()),
                other => panic!("expected NotFound, got {other:?}"),
            }
        }

        /// `(event type, object name, resource version)` of every event after `rv`.
        fn events(store: &Store, rv: u64) -> Vec<(EventType, String, u64)> {
            store
                .events_since(rv)
                .unwrap()
                .map(|e| (e.event, e.object.metadata.name.to_string(), e.resource_version()))
                .collect()
        }

        /// The only event after `rv`.
        fn single_event(store: &Store, rv: u64) -> WatchEvent {
            let events: Vec<WatchEvent> = store.events_since(rv).unwrap().cloned().collect();
            assert_eq!(events.len(), 1, "expected exactly one event after {rv}: {events:?}");
            events.into_iter().next().unwrap()
        }

        /// Asserts the store did not change: same version, no new event.
        fn assert_unchanged(store: &Store, rv: u64) {
            assert_eq!(store.resource_version(), rv, "resource version moved");
            assert_eq!(store.events_since(rv).unwrap().count(), 0, "an event was appended");
        }

        fn stored(store: &Store, key: &ObjectKey) -> Arc<Object> {
            store.get(key).cloned().unwrap_or_else(|| panic!("{key} is not stored"))
        }

        $crate::__store_conformance_writes!();
        $crate::__store_conformance_deletion!();
        $crate::__store_conformance_admission!();
        $crate::__store_conformance_watch!();
    };
}
