//! The store's test suite, for any backend: object lifecycle, preconditions, finalizers,
//! admission and the watch log. [`store_conformance_tests!`](crate::store_conformance_tests)
//! expands it into `#[test]` functions over a store constructor; the engine runs it over the
//! memory backend, drydock-store-sqlite over SQLite (in memory and in a file).
//!
//! Only with the `testing` feature (or in the engine's own tests).

/// Expand the store's test suite here: one `#[test]` per case, each on a fresh store made by
/// `$open`, an expression of type `impl Fn(StoreConfig) -> Store`.
///
/// *Assumptions*: the calling crate depends on `serde_json`, and allows `clippy::unwrap_used`
/// where it expands this (tests unwrap).
#[macro_export]
macro_rules! store_conformance_tests {
    ($open:expr) => {
        #[allow(unused_imports)]
        use $crate::api::{
            ContainerPhase, Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, OwnerReference,
            PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus, Resource, Uid, names,
        };
        #[allow(unused_imports)]
        use $crate::store::*;
        use $crate::time::WallTime;
        use std::sync::Arc;

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
            store.events_since(rv).unwrap().map(|e| (e.event, e.object.metadata.name.to_string(), e.resource_version())).collect()
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

        // ---------------------------------------------------------------------------------------------
        // create
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn create_assigns_uid_version_generation_and_creation_time() {
            let mut store = empty_store();
            let ns = store.create(WallTime(1000), namespace(NS)).unwrap();
            let a = store.create(WallTime(1500), container(NS, "a")).unwrap();
            let b = store.create(WallTime(1700), container(NS, "b")).unwrap();

            for o in [&ns, &a, &b] {
                assert!(!o.metadata.uid.0.is_empty(), "{} has no uid", o.key());
                assert_eq!(o.metadata.generation, 1);
            }
            assert_ne!(ns.metadata.uid, a.metadata.uid);
            assert_ne!(a.metadata.uid, b.metadata.uid);
            assert_ne!(ns.metadata.uid, b.metadata.uid);

            assert!(ns.metadata.resource_version > 0);
            assert!(a.metadata.resource_version > ns.metadata.resource_version);
            assert!(b.metadata.resource_version > a.metadata.resource_version);
            assert_eq!(store.resource_version(), b.metadata.resource_version);

            assert_eq!(ns.metadata.creation_timestamp, Some(WallTime(1000)));
            assert_eq!(a.metadata.creation_timestamp, Some(WallTime(1500)));
            assert_eq!(b.metadata.creation_timestamp, Some(WallTime(1700)));

            // What create returns is what is stored, and it can be found by uid.
            assert_eq!(stored(&store, &pc_key(NS, "a")), a);
            assert_eq!(store.get_by_uid(&a.metadata.uid).unwrap().key(), pc_key(NS, "a"));
            assert_eq!(store.len(), 3);
        }

        #[test]
        fn create_ignores_system_fields_sent_by_the_client() {
            let mut store = store();
            let mut object = container(NS, "a");
            object.metadata.uid = Uid("client-chosen".into());
            object.metadata.resource_version = 777;
            object.metadata.generation = 9;
            object.metadata.creation_timestamp = Some(WallTime(5));
            object.metadata.deletion_timestamp = Some(WallTime(6));

            let a = store.create(NOW, object).unwrap();
            assert_ne!(a.metadata.uid, Uid("client-chosen".into()));
            assert!(!a.metadata.uid.0.is_empty());
            assert_eq!(a.metadata.resource_version, 2);
            assert_eq!(a.metadata.generation, 1);
            assert_eq!(a.metadata.creation_timestamp, Some(NOW));
            assert_eq!(a.metadata.deletion_timestamp, None);
        }

        #[test]
        fn create_appends_an_added_event() {
            let mut store = store();
            let rv = store.resource_version();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Added);
            assert_eq!(event.object, a);
            assert_eq!(event.resource_version(), rv + 1);
        }

        #[test]
        fn create_of_a_taken_name_is_already_exists() {
            let mut store = store();
            let first = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let err = store.create(LATER, container_with(NS, "a", spec("alpine"))).unwrap_err();
            assert!(matches!(&err, StoreError::AlreadyExists { key } if key == "PhysicalContainer/ns/a"), "{err:?}");
            assert_eq!(err.code(), "AlreadyExists");
            assert_unchanged(&store, rv);
            assert_eq!(stored(&store, &pc_key(NS, "a")), first);

            let err = store.create(LATER, namespace(NS)).unwrap_err();
            assert!(matches!(err, StoreError::AlreadyExists { .. }), "{err:?}");
        }

        #[test]
        fn same_name_in_another_namespace_or_kind_is_not_taken() {
            let mut store = store();
            store.create(NOW, namespace("other")).unwrap();
            store.create(NOW, container(NS, "a")).unwrap();
            store.create(NOW, container("other", "a")).unwrap();
            store.create(NOW, namespace("a")).unwrap();
            assert_eq!(store.list(Some(PhysicalContainer::KIND), None).len(), 2);
            assert_eq!(store.list(Some(Namespace::KIND), None).len(), 3);
        }

        #[test]
        fn create_namespace_gets_the_default_finalizer() {
            let mut store = empty_store();
            let ns = store.create(NOW, namespace(NS)).unwrap();
            assert_eq!(ns.metadata.finalizers, vec![names::FINALIZER_NAMESPACE.to_string()]);
            assert_eq!(names::FINALIZER_NAMESPACE, "drydock.dev/namespace-cleanup");

            // A client that already lists it, plus one of its own, does not get a duplicate.
            let other = with_finalizers(&namespace("other"), &["example.com/mine", names::FINALIZER_NAMESPACE]);
            let other = store.create(NOW, other).unwrap();
            assert_eq!(other.metadata.finalizers, vec!["example.com/mine".to_string(), names::FINALIZER_NAMESPACE.to_string()]);
        }

        #[test]
        fn create_container_gets_no_default_finalizer() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            assert!(a.metadata.finalizers.is_empty(), "{:?}", a.metadata.finalizers);
        }

        #[test]
        fn create_drops_status_sent_by_the_client() {
            let mut store = store();
            let a = store.create(NOW, with_status(&container(NS, "a"), ContainerPhase::Running)).unwrap();
            assert_eq!(a.status, serde_json::json!({}));
            assert_eq!(a.status::<PhysicalContainer>().unwrap().phase, ContainerPhase::Pending);

            let mut ns = namespace("other");
            ns.status = serde_json::json!({ "phase": "Terminating" });
            let ns = store.create(NOW, ns).unwrap();
            assert_eq!(ns.status, serde_json::json!({}));
        }

        // ---------------------------------------------------------------------------------------------
        // update
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn update_with_a_stale_resource_version_is_conflict() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let a2 = store.update(with_label(&a, "x", "1")).unwrap();
            let rv = store.resource_version();

            // `a` still carries the version before the first update.
            let err = store.update(with_label(&a, "y", "2")).unwrap_err();
            assert!(matches!(&err, StoreError::Conflict { key, .. } if key == "PhysicalContainer/ns/a"), "{err:?}");
            assert_unchanged(&store, rv);
            assert_eq!(stored(&store, &pc_key(NS, "a")), a2);

            // A version from the future is as wrong as a stale one.
            let mut future = with_label(&a2, "y", "2");
            future.metadata.resource_version += 10;
            assert_conflict(store.update(future));
            assert_unchanged(&store, rv);
        }

        #[test]
        fn update_of_spec_bumps_generation_and_version() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let b = store.update(edit_spec(&a, |s| s.stop = true)).unwrap();
            assert_eq!(b.metadata.generation, 2);
            assert_eq!(b.metadata.resource_version, rv + 1);
            assert!(b.spec::<PhysicalContainer>().unwrap().stop);
            assert_eq!(b.metadata.uid, a.metadata.uid);
            assert_eq!(b.metadata.creation_timestamp, a.metadata.creation_timestamp);

            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Modified);
            assert_eq!(event.object, b);
        }

        #[test]
        fn update_of_labels_keeps_generation() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let b = store.update(with_label(&a, "team", "blue")).unwrap();
            assert_eq!(b.metadata.generation, 1);
            assert_eq!(b.metadata.resource_version, rv + 1);
            assert_eq!(b.metadata.labels.get("team").map(String::as_str), Some("blue"));
            assert_eq!(single_event(&store, rv).event, EventType::Modified);

            let mut annotated = (*b).clone();
            annotated.metadata.annotations.insert("note".into(), "hi".into());
            let c = store.update(annotated).unwrap();
            assert_eq!(c.metadata.generation, 1);
            assert_eq!(c.metadata.resource_version, rv + 2);
            assert_eq!(c.metadata.annotations.get("note").map(String::as_str), Some("hi"));
        }

        #[test]
        fn noop_update_keeps_version_and_appends_no_event() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let b = store.update((*a).clone()).unwrap();
            assert_eq!(b, a);
            assert_unchanged(&store, rv);

            // The same with a client that leaves the uid out.
            let mut no_uid = (*a).clone();
            no_uid.metadata.uid = Uid::default();
            assert_eq!(store.update(no_uid).unwrap(), a);
            assert_unchanged(&store, rv);
        }

        #[test]
        fn update_cannot_change_status() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            // Status alone: nothing to do.
            let b = store.update(with_status(&a, ContainerPhase::Running)).unwrap();
            assert_eq!(b.status, serde_json::json!({}));
            assert_unchanged(&store, rv);

            // Status together with a label: the label is written, the status is not.
            let c = store.update(with_label(&with_status(&a, ContainerPhase::Running), "x", "1")).unwrap();
            assert_eq!(c.status, serde_json::json!({}));
            assert_eq!(c.metadata.labels.len(), 1);
            assert_eq!(stored(&store, &pc_key(NS, "a")).status, serde_json::json!({}));
        }

        #[test]
        fn update_ignores_system_fields_sent_by_the_client() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let mut forged = with_label(&a, "x", "1");
            forged.metadata.generation = 42;
            forged.metadata.creation_timestamp = Some(WallTime(1));
            forged.metadata.deletion_timestamp = Some(WallTime(2));

            let b = store.update(forged).unwrap();
            assert_eq!(b.metadata.generation, 1);
            assert_eq!(b.metadata.creation_timestamp, Some(NOW));
            assert_eq!(b.metadata.deletion_timestamp, None, "update must not mark an object deleted");
        }

        #[test]
        fn update_with_another_uid_is_conflict() {
            let mut store = store();
            let old = store.create(NOW, container(NS, "a")).unwrap();
            delete(&mut store, NOW, &pc_key(NS, "a")).unwrap();
            let new = store.create(NOW, container(NS, "a")).unwrap();
            assert_ne!(old.metadata.uid, new.metadata.uid);
            let rv = store.resource_version();

            // The current version with the old uid: the uid precondition alone fails.
            let mut stale = with_label(&new, "x", "1");
            stale.metadata.uid = old.metadata.uid.clone();
            let err = store.update(stale.clone()).unwrap_err();
            assert!(matches!(&err, StoreError::Conflict { reason, .. } if reason.contains(&old.metadata.uid.0)), "{err:?}");
            assert_conflict(store.update_status(with_status(&stale, ContainerPhase::Running)));
            assert_unchanged(&store, rv);
        }

        #[test]
        fn update_of_a_missing_object_is_not_found() {
            let mut store = store();
            let a = container(NS, "a");
            assert_not_found(store.update(a.clone()));
            assert_not_found(store.update_status(with_status(&a, ContainerPhase::Running)));
            assert_unchanged(&store, 1);
        }

        // ---------------------------------------------------------------------------------------------
        // update_status
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn update_status_changes_only_status() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            // The client also changes spec, labels and finalizers: all ignored.
            let sent = edit_spec(&with_status(&a, ContainerPhase::Running), |s| s.stop = true);
            let sent = with_finalizers(&with_label(&sent, "x", "1"), &["example.com/f"]);
            let b = store.update_status(sent).unwrap();
            assert_eq!(b.status::<PhysicalContainer>().unwrap().phase, ContainerPhase::Running);
            assert_eq!(b.spec, a.spec);
            assert_eq!(b.metadata.labels, a.metadata.labels);
            assert_eq!(b.metadata.finalizers, a.metadata.finalizers);
            assert_eq!(b.metadata.generation, 1);
            assert_eq!(b.metadata.resource_version, rv + 1);

            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Modified);
            assert_eq!(event.object, b);
            assert_eq!(stored(&store, &pc_key(NS, "a")), b);
        }

        #[test]
        fn update_status_with_a_stale_version_is_conflict() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let b = store.update_status(with_status(&a, ContainerPhase::Running)).unwrap();
            let rv = store.resource_version();

            assert_conflict(store.update_status(with_status(&a, ContainerPhase::Exited)));
            assert_unchanged(&store, rv);
            assert_eq!(stored(&store, &pc_key(NS, "a")), b);

            // A spec update also moves the version: the status writer must re-read.
            let c = store.update(edit_spec(&b, |s| s.stop = true)).unwrap();
            assert_conflict(store.update_status(with_status(&b, ContainerPhase::Exited)));
            let d = store.update_status(with_status(&c, ContainerPhase::Exited)).unwrap();
            assert_eq!(d.metadata.generation, 2, "status writes never bump generation");
            assert!(d.spec::<PhysicalContainer>().unwrap().stop);
        }

        #[test]
        fn noop_update_status_keeps_version() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let b = store.update_status(with_status(&a, ContainerPhase::Running)).unwrap();
            let rv = store.resource_version();
            assert_eq!(store.update_status((*b).clone()).unwrap(), b);
            assert_unchanged(&store, rv);
        }

        // ---------------------------------------------------------------------------------------------
        // PhysicalContainer spec immutability
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn container_stop_can_be_set() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let b = store.update(edit_spec(&a, |s| s.stop = true)).unwrap();
            assert!(b.spec::<PhysicalContainer>().unwrap().stop);
            assert_eq!(b.metadata.generation, 2);
        }

        #[test]
        fn container_stop_cannot_be_cleared() {
            let mut store = store();
            let stopped = PhysicalContainerSpec { stop: true, ..spec("busybox") };
            let a = store.create(NOW, container_with(NS, "a", stopped)).unwrap();
            let rv = store.resource_version();
            assert_invalid_at(store.update(edit_spec(&a, |s| s.stop = false)), "spec.stop");
            assert_unchanged(&store, rv);
            assert!(stored(&store, &pc_key(NS, "a")).spec::<PhysicalContainer>().unwrap().stop);
        }

        #[test]
        fn container_spec_is_otherwise_immutable() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();
            let edits: Vec<fn(&mut PhysicalContainerSpec)> = vec![
                |s| s.image = Some("alpine:3".into()),
                |s| s.container_name = Some("custom".into()),
                |s| s.command = vec!["sleep".into(), "1".into()],
                |s| {
                    s.env.insert("A".into(), "1".into());
                },
                |s| {
                    s.labels.insert("team".into(), "blue".into());
                },
            ];
            for edit in edits {
                let sent = edit_spec(&a, edit);
                assert_invalid_at(store.update(sent.clone()), "spec");
                // Setting stop at the same time does not make it acceptable.
                assert_invalid_at(store.update(edit_spec(&sent, |s| s.stop = true)), "spec");
            }
            assert_unchanged(&store, rv);
        }

        // ---------------------------------------------------------------------------------------------
        // finalizers and delete
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn delete_with_finalizers_marks_and_keeps_the_object() {
            let mut store = store();
            let a = store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let rv = store.resource_version();

            let marked = delete(&mut store, LATER, &pc_key(NS, "a")).unwrap();
            assert_eq!(marked.metadata.deletion_timestamp, Some(LATER));
            assert_eq!(marked.metadata.finalizers, a.metadata.finalizers);
            assert_eq!(marked.metadata.resource_version, rv + 1);
            assert_eq!(marked.metadata.generation, a.metadata.generation);
            assert_eq!(stored(&store, &pc_key(NS, "a")), marked);
            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Modified);
            assert_eq!(event.object, marked);
        }

        #[test]
        fn delete_of_a_namespace_marks_it_with_its_default_finalizer() {
            let mut store = store();
            let ns = delete(&mut store, LATER, &ns_key(NS)).unwrap();
            assert_eq!(ns.metadata.deletion_timestamp, Some(LATER));
            assert!(ns.metadata.has_finalizer(names::FINALIZER_NAMESPACE));
            assert!(store.get(&ns_key(NS)).unwrap().metadata.is_deleting());
        }

        #[test]
        fn deleting_a_deleting_object_again_is_a_noop() {
            let mut store = store();
            store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let marked = delete(&mut store, LATER, &pc_key(NS, "a")).unwrap();
            let rv = store.resource_version();

            let again = delete(&mut store, WallTime(9999), &pc_key(NS, "a")).unwrap();
            assert_eq!(again, marked);
            assert_eq!(again.metadata.deletion_timestamp, Some(LATER), "the first deletion time stays");
            assert_unchanged(&store, rv);
        }

        #[test]
        fn no_finalizer_can_be_added_to_a_deleting_object() {
            let mut store = store();
            store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f", "example.com/g"])).unwrap();
            let marked = delete(&mut store, LATER, &pc_key(NS, "a")).unwrap();
            let rv = store.resource_version();

            assert_invalid_at(
                store.update(with_finalizers(&marked, &["example.com/f", "example.com/g", "example.com/new"])),
                "metadata.finalizers",
            );
            // Swapping one for a new one is adding too.
            assert_invalid_at(
                store.update(with_finalizers(&marked, &["example.com/f", "example.com/new"])),
                "metadata.finalizers",
            );
            assert_unchanged(&store, rv);

            // Removing one of two is fine and keeps the object.
            let one = store.update(with_finalizers(&marked, &["example.com/g"])).unwrap();
            assert_eq!(one.metadata.finalizers, vec!["example.com/g".to_string()]);
            assert_eq!(one.metadata.deletion_timestamp, Some(LATER));
            assert_eq!(single_event(&store, rv).event, EventType::Modified);
            assert!(store.get(&pc_key(NS, "a")).is_some());
        }

        #[test]
        fn removing_the_last_finalizer_removes_the_object() {
            let mut store = store();
            store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let marked = delete(&mut store, LATER, &pc_key(NS, "a")).unwrap();
            let rv = store.resource_version();

            let gone = store.update(with_finalizers(&marked, &[])).unwrap();
            assert!(store.get(&pc_key(NS, "a")).is_none());
            assert!(store.get_by_uid(&marked.metadata.uid).is_none());
            assert_eq!(store.resource_version(), rv + 1);

            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Deleted);
            assert_eq!(event.object, gone);
            assert_eq!(event.resource_version(), rv + 1);
            assert_eq!(event.object.metadata.deletion_timestamp, Some(LATER));
            assert!(event.object.metadata.finalizers.is_empty());
            assert_eq!(event.object.metadata.uid, marked.metadata.uid);

            // The name is free again, for a new object with a new uid.
            let again = store.create(NOW, container(NS, "a")).unwrap();
            assert_ne!(again.metadata.uid, marked.metadata.uid);
        }

        #[test]
        fn removing_the_namespace_finalizer_removes_the_namespace() {
            let mut store = store();
            let marked = delete(&mut store, LATER, &ns_key(NS)).unwrap();
            let rv = store.resource_version();
            store.update(with_finalizers(&marked, &[])).unwrap();
            assert!(store.get(&ns_key(NS)).is_none());
            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Deleted);
            assert_eq!(event.object.metadata.deletion_timestamp, Some(LATER));
        }

        #[test]
        fn removing_finalizers_of_a_live_object_keeps_it() {
            let mut store = store();
            let a = store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let b = store.update(with_finalizers(&a, &[])).unwrap();
            assert!(b.metadata.finalizers.is_empty());
            assert!(store.get(&pc_key(NS, "a")).is_some());
        }

        #[test]
        fn delete_without_finalizers_removes_at_once() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let gone = delete(&mut store, LATER, &pc_key(NS, "a")).unwrap();
            assert!(store.get(&pc_key(NS, "a")).is_none());
            assert!(store.get_by_uid(&a.metadata.uid).is_none());
            assert_eq!(gone.metadata.uid, a.metadata.uid);
            let event = single_event(&store, rv);
            assert_eq!(event.event, EventType::Deleted);
            assert_eq!(event.resource_version(), rv + 1);
            assert_eq!(event.object.metadata.name, "a");

            assert_not_found(delete(&mut store, LATER, &pc_key(NS, "a")));
        }

        #[test]
        fn delete_with_a_uid_precondition() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            let wrong = DeleteOptions { precondition_uid: Some(Uid("not-the-uid".into())), ..Default::default() };
            let err = store.delete(LATER, &pc_key(NS, "a"), &wrong).unwrap_err();
            assert!(matches!(&err, StoreError::Conflict { reason, .. } if reason.contains("not-the-uid")), "{err:?}");
            assert_unchanged(&store, rv);
            assert!(store.get(&pc_key(NS, "a")).is_some());

            // Also checked before an object with finalizers is marked.
            let ns_wrong = store.delete(LATER, &ns_key(NS), &wrong);
            assert_conflict(ns_wrong);
            assert!(!store.get(&ns_key(NS)).unwrap().metadata.is_deleting());

            let right = DeleteOptions { precondition_uid: Some(a.metadata.uid.clone()), ..Default::default() };
            store.delete(LATER, &pc_key(NS, "a"), &right).unwrap();
            assert!(store.get(&pc_key(NS, "a")).is_none());
        }

        #[test]
        fn missing_objects_are_not_found() {
            let mut store = store();
            assert_not_found(delete(&mut store, NOW, &pc_key(NS, "nope")));
            assert_not_found(delete(&mut store, NOW, &pc_key("elsewhere", "a")));
            assert_not_found(delete(&mut store, NOW, &ns_key("nope")));
            assert_not_found(store.execute(NOW, StoreRequest::Get { key: pc_key(NS, "nope") }));
            assert_unchanged(&store, 1);
        }

        // ---------------------------------------------------------------------------------------------
        // cascade
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn store_does_not_delete_dependents_of_a_removed_owner() {
            let mut store = store();
            let parent = store.create(NOW, container(NS, "parent")).unwrap();
            let child = store.create(NOW, with_owner(&container(NS, "child"), parent.owner_reference(true))).unwrap();
            let rv = store.resource_version();

            delete(&mut store, LATER, &pc_key(NS, "parent")).unwrap();
            assert!(store.get(&pc_key(NS, "parent")).is_none());
            assert_eq!(stored(&store, &pc_key(NS, "child")), child, "the dependent is untouched");
            assert_eq!(events(&store, rv), vec![(EventType::Deleted, "parent".to_string(), rv + 1)]);
        }

        #[test]
        fn store_does_not_delete_children_of_a_deleting_namespace() {
            let mut store = store();
            store.create(NOW, container(NS, "a")).unwrap();
            store.create(NOW, container(NS, "b")).unwrap();
            delete(&mut store, LATER, &ns_key(NS)).unwrap();
            assert_eq!(store.list(Some(PhysicalContainer::KIND), Some(NS)).len(), 2);
            assert!(store.list(None, Some(NS)).iter().all(|o| !o.metadata.is_deleting()));
        }

        fn delete_with(store: &mut Store, key: &ObjectKey, propagation: Propagation) -> Result<Arc<Object>, StoreError> {
            store.delete(LATER, key, &DeleteOptions { propagation, ..Default::default() })
        }

        /// A store holding `ns/parent` and two dependents of it, one with `blockOwnerDeletion`.
        fn owner_and_dependents() -> (Store, Arc<Object>, Vec<Arc<Object>>) {
            let mut store = store();
            let parent = store.create(NOW, container(NS, "parent")).unwrap();
            let mut blocking = parent.owner_reference(true);
            blocking.block_owner_deletion = true;
            let a = store.create(NOW, with_owner(&container(NS, "a"), blocking)).unwrap();
            let b = store.create(NOW, with_owner(&container(NS, "b"), parent.owner_reference(false))).unwrap();
            (store, parent, vec![a, b])
        }

        #[test]
        fn propagation_finalizers_are_the_kubernetes_ones() {
            assert_eq!(Propagation::default(), Propagation::Background);
            assert_eq!(Propagation::Background.finalizer(), None);
            assert_eq!(Propagation::Foreground.finalizer(), Some("foregroundDeletion"));
            assert_eq!(Propagation::Orphan.finalizer(), Some("orphan"));
        }

        #[test]
        fn foreground_delete_marks_the_owner_with_its_finalizer_and_leaves_dependents_alone() {
            let (mut store, parent, dependents) = owner_and_dependents();
            let rv = store.resource_version();

            let marked = delete_with(&mut store, &pc_key(NS, "parent"), Propagation::Foreground).unwrap();
            assert_eq!(marked.metadata.deletion_timestamp, Some(LATER));
            assert_eq!(marked.metadata.finalizers, vec![FINALIZER_FOREGROUND_DELETION.to_string()]);
            assert_eq!(marked.metadata.uid, parent.metadata.uid);
            assert_eq!(marked.metadata.generation, parent.metadata.generation);
            assert_eq!(stored(&store, &pc_key(NS, "parent")), marked, "kept although it had no finalizer");
            assert_eq!(events(&store, rv), vec![(EventType::Modified, "parent".to_string(), rv + 1)]);
            for dependent in &dependents {
                assert_eq!(stored(&store, &dependent.key()), *dependent, "the store does not touch dependents");
            }
        }

        #[test]
        fn orphan_delete_marks_the_owner_with_its_finalizer_and_leaves_dependents_alone() {
            let (mut store, _, dependents) = owner_and_dependents();
            let rv = store.resource_version();

            let marked = delete_with(&mut store, &pc_key(NS, "parent"), Propagation::Orphan).unwrap();
            assert_eq!(marked.metadata.deletion_timestamp, Some(LATER));
            assert_eq!(marked.metadata.finalizers, vec![FINALIZER_ORPHAN.to_string()]);
            assert_eq!(stored(&store, &pc_key(NS, "parent")), marked);
            assert_eq!(events(&store, rv), vec![(EventType::Modified, "parent".to_string(), rv + 1)]);
            for dependent in &dependents {
                assert_eq!(stored(&store, &dependent.key()), *dependent, "the store does not touch dependents");
            }
        }

        #[test]
        fn propagation_finalizer_joins_existing_ones_and_replaces_the_other_propagation() {
            let mut store = store();
            store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let marked = delete_with(&mut store, &pc_key(NS, "a"), Propagation::Orphan).unwrap();
            assert_eq!(marked.metadata.finalizers, vec!["example.com/f".to_string(), FINALIZER_ORPHAN.to_string()]);

            // A client put `orphan` there; deleting in the foreground replaces it.
            store.create(NOW, with_finalizers(&container(NS, "b"), &[FINALIZER_ORPHAN, "example.com/f"])).unwrap();
            let marked = delete_with(&mut store, &pc_key(NS, "b"), Propagation::Foreground).unwrap();
            assert_eq!(
                marked.metadata.finalizers,
                vec!["example.com/f".to_string(), FINALIZER_FOREGROUND_DELETION.to_string()]
            );

            // A background delete leaves a client's propagation finalizer in place.
            store.create(NOW, with_finalizers(&container(NS, "c"), &[FINALIZER_ORPHAN])).unwrap();
            let marked = delete_with(&mut store, &pc_key(NS, "c"), Propagation::Background).unwrap();
            assert_eq!(marked.metadata.finalizers, vec![FINALIZER_ORPHAN.to_string()]);
            assert!(marked.metadata.is_deleting());
        }

        #[test]
        fn background_delete_still_removes_an_object_without_finalizers_at_once() {
            let (mut store, _, dependents) = owner_and_dependents();
            let rv = store.resource_version();
            delete_with(&mut store, &pc_key(NS, "parent"), Propagation::Background).unwrap();
            assert!(store.get(&pc_key(NS, "parent")).is_none());
            assert_eq!(events(&store, rv), vec![(EventType::Deleted, "parent".to_string(), rv + 1)]);
            assert_eq!(stored(&store, &dependents[0].key()), dependents[0]);
        }

        #[test]
        fn deleting_a_marked_object_again_changes_nothing_whatever_the_propagation() {
            let mut store = store();
            store.create(NOW, with_finalizers(&container(NS, "a"), &["example.com/f"])).unwrap();
            let marked = delete(&mut store, NOW, &pc_key(NS, "a")).unwrap();
            let rv = store.resource_version();
            for propagation in [Propagation::Foreground, Propagation::Orphan, Propagation::Background] {
                assert_eq!(delete_with(&mut store, &pc_key(NS, "a"), propagation).unwrap(), marked);
            }
            assert_unchanged(&store, rv);

            // Nor does the first propagation's finalizer switch to another.
            store.create(NOW, container(NS, "b")).unwrap();
            let orphaning = delete_with(&mut store, &pc_key(NS, "b"), Propagation::Orphan).unwrap();
            let rv = store.resource_version();
            assert_eq!(delete_with(&mut store, &pc_key(NS, "b"), Propagation::Foreground).unwrap(), orphaning);
            assert_unchanged(&store, rv);
        }

        #[test]
        fn preconditions_are_checked_before_a_propagation_finalizer_is_added() {
            let (mut store, parent, _) = owner_and_dependents();
            let rv = store.resource_version();
            let options = DeleteOptions {
                precondition_resource_version: Some(parent.metadata.resource_version - 1),
                propagation: Propagation::Foreground,
                ..Default::default()
            };
            assert_conflict(store.delete(LATER, &pc_key(NS, "parent"), &options));
            let options = DeleteOptions {
                precondition_uid: Some(Uid("not-the-uid".into())),
                propagation: Propagation::Orphan,
                ..Default::default()
            };
            assert_conflict(store.delete(LATER, &pc_key(NS, "parent"), &options));
            assert_unchanged(&store, rv);
            assert_eq!(stored(&store, &pc_key(NS, "parent")), parent);
        }

        #[test]
        fn removing_the_propagation_finalizer_removes_the_owner_and_still_not_its_dependents() {
            for (propagation, finalizer) in
                [(Propagation::Foreground, FINALIZER_FOREGROUND_DELETION), (Propagation::Orphan, FINALIZER_ORPHAN)]
            {
                let (mut store, _, dependents) = owner_and_dependents();
                let marked = delete_with(&mut store, &pc_key(NS, "parent"), propagation).unwrap();
                let rv = store.resource_version();
                let mut released = (*marked).clone();
                released.metadata.finalizers.retain(|f| f != finalizer);
                store.update(released).unwrap();
                assert!(store.get(&pc_key(NS, "parent")).is_none());
                assert_eq!(events(&store, rv), vec![(EventType::Deleted, "parent".to_string(), rv + 1)]);
                for dependent in &dependents {
                    assert_eq!(stored(&store, &dependent.key()), *dependent);
                }
            }
        }

        // ---------------------------------------------------------------------------------------------
        // admission
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn admission_rejects_a_bad_name() {
            let mut store = store();
            assert_invalid_at(store.create(NOW, container(NS, "Upper")), "metadata.name");
            assert_invalid_at(store.create(NOW, container(NS, "-dash")), "metadata.name");
            assert_invalid_at(store.create(NOW, container(NS, "")), "metadata.name");
            assert_invalid_at(store.create(NOW, container(NS, &"a".repeat(64))), "metadata.name");
            assert_invalid_at(store.create(NOW, namespace("Bad_NS")), "metadata.name");
            store.create(NOW, container(NS, &"a".repeat(63))).unwrap();
            assert_unchanged(&store, 2);
        }

        #[test]
        fn admission_rejects_an_unknown_spec_field_with_its_path() {
            let mut store = store();
            let mut object = container(NS, "a");
            object.spec = std::sync::Arc::new(serde_json::json!({ "image": "busybox", "imagee": "typo" }));
            assert_invalid_at(store.create(NOW, object), "spec.imagee");

            let mut ns = namespace("other");
            ns.spec = std::sync::Arc::new(serde_json::json!({ "finalize": true }));
            let paths = invalid_paths(store.create(NOW, ns));
            assert!(paths[0].contains("finalize"), "{paths:?}");
            assert_unchanged(&store, 1);
        }

        #[test]
        fn admission_rejects_a_spec_that_is_not_of_the_kind() {
            let mut store = store();
            let mut object = container(NS, "a");
            object.spec = std::sync::Arc::new(serde_json::json!({ "image": 5 }));
            let paths = invalid_paths(store.create(NOW, object));
            assert!(paths[0].starts_with("spec") && paths[0].contains("image"), "{paths:?}");

            let mut object = container(NS, "a");
            object.spec = std::sync::Arc::new(serde_json::json!("busybox"));
            assert!(invalid_paths(store.create(NOW, object))[0].starts_with("spec"));
        }

        #[test]
        fn admission_reports_a_missing_spec_field_at_a_well_formed_path() {
            let mut store = store();
            let mut object = container(NS, "a");
            object.spec = std::sync::Arc::new(serde_json::json!({}));
            let paths = invalid_paths(store.create(NOW, object));
            assert!(paths == ["spec"] || paths == ["spec.image"], "{paths:?}");
        }

        #[test]
        fn admission_requires_a_namespace_for_a_namespaced_kind() {
            let mut store = store();
            let mut object = container(NS, "a");
            object.metadata.namespace = None;
            assert_invalid_at(store.create(NOW, object), "metadata.namespace");
        }

        #[test]
        fn admission_rejects_a_namespace_on_a_cluster_scoped_kind() {
            let mut store = store();
            let mut object = namespace("other");
            object.metadata.namespace = Some(NS.into());
            assert_invalid_at(store.create(NOW, object), "metadata.namespace");
        }

        #[test]
        fn admission_rejects_an_unknown_kind() {
            let mut store = store();
            let object = Object::new("Pod", ObjectMeta::named(Some(NS), "a"), serde_json::json!({}));
            let err = store.create(NOW, object.clone()).unwrap_err();
            assert_eq!(err.code(), "Invalid");
            assert_eq!(invalid_paths::<()>(Err(err.clone())), vec!["kind".to_string()]);
            assert!(err.to_string().contains("PhysicalContainer"), "the error lists known kinds: {err}");
            // There is nothing of an unknown kind to update.
            assert_not_found(store.update(object));
            assert_unchanged(&store, 1);
        }

        #[test]
        fn admission_rejects_a_bad_image_reference() {
            let mut store = store();
            for image in ["", "BusyBox", "busybox:", "a//b", "busy box"] {
                assert_invalid_at(store.create(NOW, container_with(NS, "a", spec(image))), "spec.image");
            }
            assert_unchanged(&store, 1);
            store.create(NOW, container_with(NS, "a", spec("docker.io/library/busybox:1.36"))).unwrap();
        }

        #[test]
        fn admission_rejects_a_bad_container_name() {
            let mut store = store();
            let bad = PhysicalContainerSpec { container_name: Some("-x".into()), ..spec("busybox") };
            assert_invalid_at(store.create(NOW, container_with(NS, "a", bad)), "spec.containerName");
        }

        #[test]
        fn caller_labels_may_name_system_labels_and_are_overridden_later() {
            // Admission accepts them; the physical-container controller applies its system labels after
            // the caller's, so the runtime never sees the forged value (invariant system-labels-win).
            let mut store = store();
            let mut s = spec("busybox");
            s.labels.insert(names::LABEL_OWNER_UID.into(), "forged".into());
            s.labels.insert("team".into(), "blue".into());
            let created = store.create(NOW, container_with(NS, "a", s)).unwrap();
            let spec = created.spec::<PhysicalContainer>().unwrap();
            assert_eq!(spec.labels.get(names::LABEL_OWNER_UID).map(String::as_str), Some("forged"));
        }

        #[test]
        fn admission_reports_every_error_at_once() {
            let mut store = store();
            let mut object = container_with(NS, "Bad", spec("BAD"));
            object.metadata.namespace = None;
            let mut paths = invalid_paths(store.create(NOW, object));
            paths.sort();
            assert_eq!(paths, vec!["metadata.name", "metadata.namespace", "spec.image"]);
        }

        #[test]
        fn admission_applies_to_updates() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();
            let mut broken = (*a).clone();
            broken.spec = std::sync::Arc::new(serde_json::json!({ "image": "busybox:latest", "imagee": "x" }));
            let paths = invalid_paths(store.update(broken));
            assert!(paths.iter().any(|p| p.contains("imagee")), "{paths:?}");
            assert_unchanged(&store, rv);
        }

        #[test]
        fn create_in_a_missing_namespace_is_namespace_not_active() {
            let mut store = store();
            let err = store.create(NOW, container("nowhere", "a")).unwrap_err();
            match &err {
                StoreError::NamespaceNotActive { namespace, reason, .. } => {
                    assert_eq!(namespace, "nowhere");
                    assert!(reason.contains("does not exist"), "{reason}");
                }
                other => panic!("expected NamespaceNotActive, got {other:?}"),
            }
            assert_unchanged(&store, 1);
        }

        #[test]
        fn create_in_a_terminating_namespace_is_namespace_not_active() {
            let mut store = store();
            store.create(NOW, container(NS, "a")).unwrap();
            delete(&mut store, LATER, &ns_key(NS)).unwrap();
            let rv = store.resource_version();
            let err = store.create(LATER, container(NS, "b")).unwrap_err();
            match &err {
                StoreError::NamespaceNotActive { namespace, reason, .. } => {
                    assert_eq!(namespace, NS);
                    assert!(reason.contains("terminating"), "{reason}");
                }
                other => panic!("expected NamespaceNotActive, got {other:?}"),
            }
            assert_unchanged(&store, rv);

            // Existing children can still be updated (their controllers must finish their work).
            let a = stored(&store, &pc_key(NS, "a"));
            store.update(edit_spec(&a, |s| s.stop = true)).unwrap();
        }

        #[test]
        fn self_owner_reference_is_rejected_on_create_by_kind_and_name() {
            let mut store = store();
            let owner = OwnerReference {
                kind: PhysicalContainer::KIND.into(),
                name: "a".into(),
                uid: Uid("whatever".into()),
                controller: true,
                block_owner_deletion: false,
            };
            assert_invalid_at(store.create(NOW, with_owner(&container(NS, "a"), owner)), "metadata.ownerReferences[0]");
            assert_unchanged(&store, 1);

            // A namespace that owns itself, too.
            let owner = OwnerReference {
                kind: Namespace::KIND.into(),
                name: "other".into(),
                uid: Uid("whatever".into()),
                controller: false,
                block_owner_deletion: false,
            };
            assert_invalid_at(store.create(NOW, with_owner(&namespace("other"), owner)), "metadata.ownerReferences[0]");
        }

        #[test]
        fn self_owner_reference_is_rejected_on_update_by_uid() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();
            assert_invalid_at(store.update(with_owner(&a, a.owner_reference(true))), "metadata.ownerReferences[0]");

            // The uid alone identifies the object, whatever name the reference gives.
            let mut by_uid = a.owner_reference(true);
            by_uid.name = "someone-else".into();
            let err = store.update(with_owner(&a, by_uid)).unwrap_err();
            assert!(err.to_string().contains("cannot own itself"), "{err}");
            assert_unchanged(&store, rv);
        }

        #[test]
        fn self_owner_reference_is_admitted_when_the_check_is_off() {
            let config = StoreConfig { admission: AdmissionConfig { reject_self_owner: false }, ..StoreConfig::default() };
            let mut store = store_with(config);
            store.create(NOW, namespace(NS)).unwrap();

            let owner = OwnerReference {
                kind: PhysicalContainer::KIND.into(),
                name: "a".into(),
                uid: Uid("guess".into()),
                controller: true,
                block_owner_deletion: false,
            };
            let a = store.create(NOW, with_owner(&container(NS, "a"), owner)).unwrap();
            assert_eq!(a.metadata.owner_references.len(), 1);

            let b = store.create(NOW, container(NS, "b")).unwrap();
            let b = store.update(with_owner(&b, b.owner_reference(true))).unwrap();
            assert_eq!(b.metadata.owner_references, vec![b.owner_reference(true)]);
        }

        #[test]
        fn owner_in_another_namespace_is_rejected() {
            let mut store = store();
            store.create(NOW, namespace("other")).unwrap();
            let owner = store.create(NOW, container("other", "owner")).unwrap();
            let rv = store.resource_version();
            let err = store.create(NOW, with_owner(&container(NS, "a"), owner.owner_reference(true))).unwrap_err();
            assert_eq!(invalid_paths::<()>(Err(err.clone())), vec!["metadata.ownerReferences[0]".to_string()]);
            assert!(err.to_string().contains("cross-namespace"), "{err}");

            // Same on update.
            let a = store.create(NOW, container(NS, "a")).unwrap();
            assert_invalid_at(store.update(with_owner(&a, owner.owner_reference(true))), "metadata.ownerReferences[0]");
            assert_eq!(store.resource_version(), rv + 1);
        }

        #[test]
        fn cluster_scoped_object_cannot_be_owned_by_a_namespaced_one() {
            let mut store = store();
            let owner = store.create(NOW, container(NS, "owner")).unwrap();
            let err = store.create(NOW, with_owner(&namespace("other"), owner.owner_reference(false))).unwrap_err();
            assert_eq!(invalid_paths::<()>(Err(err.clone())), vec!["metadata.ownerReferences[0]".to_string()]);
            assert!(err.to_string().contains("cluster-scoped object cannot be owned"), "{err}");

            // Rejected by scope alone, even when the owner is not (or no longer) stored.
            let mut ghost = owner.owner_reference(false);
            ghost.name = "ghost".into();
            ghost.uid = Uid("ghost-uid".into());
            assert_invalid_at(store.create(NOW, with_owner(&namespace("other"), ghost)), "metadata.ownerReferences[0]");
            assert!(store.get(&ns_key("other")).is_none());
        }

        #[test]
        fn owner_uid_of_an_object_with_another_name_is_rejected() {
            let mut store = store();
            let real = store.create(NOW, container(NS, "real")).unwrap();
            let mut lie = real.owner_reference(true);
            lie.name = "fake".into();
            let err = store.create(NOW, with_owner(&container(NS, "a"), lie)).unwrap_err();
            assert_eq!(invalid_paths::<()>(Err(err.clone())), vec!["metadata.ownerReferences[0]".to_string()]);
            assert!(err.to_string().contains(&real.metadata.uid.0), "{err}");

            // And of another kind: the namespace's uid under the container kind.
            let ns = stored(&store, &ns_key(NS));
            let mut wrong_kind = ns.owner_reference(false);
            wrong_kind.kind = PhysicalContainer::KIND.into();
            assert_invalid_at(store.create(NOW, with_owner(&container(NS, "b"), wrong_kind)), "metadata.ownerReferences[0]");
        }

        #[test]
        fn owner_reference_needs_a_known_kind_and_a_uid() {
            let mut store = store();
            let real = store.create(NOW, container(NS, "real")).unwrap();
            let mut unknown = real.owner_reference(true);
            unknown.kind = "Deployment".into();
            assert_invalid_at(store.create(NOW, with_owner(&container(NS, "a"), unknown)), "metadata.ownerReferences[0]");
            let mut no_uid = real.owner_reference(true);
            no_uid.uid = Uid::default();
            assert_invalid_at(store.create(NOW, with_owner(&container(NS, "a"), no_uid)), "metadata.ownerReferences[0]");
        }

        #[test]
        fn valid_owner_references_are_admitted() {
            let mut store = store();
            let ns = stored(&store, &ns_key(NS));
            let parent = store.create(NOW, container(NS, "parent")).unwrap();
            // Same namespace.
            let a = store.create(NOW, with_owner(&container(NS, "a"), parent.owner_reference(true))).unwrap();
            assert_eq!(a.metadata.owner_references, vec![parent.owner_reference(true)]);
            // A cluster-scoped owner of a namespaced object.
            store.create(NOW, with_owner(&container(NS, "b"), ns.owner_reference(false))).unwrap();
            // An owner that does not exist (yet, or any more) is left to the garbage collector.
            let mut ghost = parent.owner_reference(true);
            ghost.name = "ghost".into();
            ghost.uid = Uid("ghost-uid".into());
            store.create(NOW, with_owner(&container(NS, "c"), ghost)).unwrap();
            // The second of two references is reported with its own index.
            let mut second_self = parent.owner_reference(false);
            second_self.name = "d".into();
            second_self.uid = Uid("x".into());
            let mut d = container(NS, "d");
            d.metadata.owner_references = vec![parent.owner_reference(true), second_self];
            assert_invalid_at(store.create(NOW, d), "metadata.ownerReferences[1]");
        }

        // ---------------------------------------------------------------------------------------------
        // watch
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn events_since_returns_later_events_in_order() {
            let mut store = empty_store();
            store.create(NOW, namespace(NS)).unwrap(); // 1
            let a = store.create(NOW, container(NS, "a")).unwrap(); // 2
            let a = store.update(with_label(&a, "x", "1")).unwrap(); // 3
            store.update_status(with_status(&a, ContainerPhase::Running)).unwrap(); // 4
            store.create(NOW, container(NS, "b")).unwrap(); // 5
            delete(&mut store, LATER, &pc_key(NS, "a")).unwrap(); // 6
            delete(&mut store, LATER, &ns_key(NS)).unwrap(); // 7 (marked only)

            let all = vec![
                (EventType::Added, NS.to_string(), 1),
                (EventType::Added, "a".to_string(), 2),
                (EventType::Modified, "a".to_string(), 3),
                (EventType::Modified, "a".to_string(), 4),
                (EventType::Added, "b".to_string(), 5),
                (EventType::Deleted, "a".to_string(), 6),
                (EventType::Modified, NS.to_string(), 7),
            ];
            assert_eq!(events(&store, 0), all);
            assert_eq!(events(&store, 3), all[3..].to_vec());
            assert_eq!(events(&store, 6), all[6..].to_vec());
            assert_eq!(store.resource_version(), 7);
            assert!(events(&store, 7).is_empty());
            assert!(events(&store, 100).is_empty());

            // An event carries the object as it was at that version.
            let at3 = store.events_since(2).unwrap().next().unwrap();
            assert_eq!(at3.object.metadata.labels.get("x").map(String::as_str), Some("1"));
            assert_eq!(at3.object.status, serde_json::json!({}));
        }

        #[test]
        fn events_since_an_empty_store_is_empty() {
            let store = empty_store();
            assert_eq!(store.resource_version(), 0);
            assert!(events(&store, 0).is_empty());
        }

        #[test]
        fn compacted_history_is_gone() {
            let mut store = store_with(StoreConfig { log_capacity: 3, ..StoreConfig::default() });
            store.create(NOW, namespace(NS)).unwrap();
            for name in ["a", "b", "c", "d", "e"] {
                store.create(NOW, container(NS, name)).unwrap();
            }
            // Versions 1..=6; the log keeps 4, 5, 6.
            assert_eq!(store.resource_version(), 6);

            for old in [0, 1, 2] {
                match store.events_since(old).map(|events| events.count()) {
                    Err(StoreError::Gone { requested, oldest }) => {
                        assert_eq!(requested, old);
                        assert_eq!(oldest, 4);
                    }
                    other => panic!("expected Gone for {old}, got {other:?}"),
                }
            }
            assert_eq!(store.events_since(0).err().unwrap().code(), "Gone");
            // 3 is the last version before the oldest kept event: nothing is missing from there.
            assert_eq!(events(&store, 3).iter().map(|e| e.2).collect::<Vec<_>>(), vec![4, 5, 6]);
            assert_eq!(events(&store, 5).iter().map(|e| e.2).collect::<Vec<_>>(), vec![6]);
            assert!(events(&store, 6).is_empty(), "the latest version is never gone");
        }

        #[test]
        fn latest_version_is_not_gone_even_with_no_log() {
            let mut store = store_with(StoreConfig { log_capacity: 0, ..StoreConfig::default() });
            store.create(NOW, namespace(NS)).unwrap();
            store.create(NOW, container(NS, "a")).unwrap();
            assert!(events(&store, 2).is_empty());
            assert!(matches!(store.events_since(1).map(Iterator::count), Err(StoreError::Gone { requested: 1, .. })));
        }

        #[test]
        fn events_since_a_huge_version_does_not_panic() {
            let mut store = store();
            store.create(NOW, container(NS, "a")).unwrap();
            assert!(events(&store, u64::MAX).is_empty());
        }

        // ---------------------------------------------------------------------------------------------
        // execute
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn execute_dispatches_requests() {
            let mut store = store();
            let reply = store.execute(NOW, StoreRequest::Create { object: container(NS, "a") }).unwrap();
            let StoreReply::Object(a) = reply else { panic!("expected an object") };
            assert_eq!(store.execute(NOW, StoreRequest::Get { key: pc_key(NS, "a") }).unwrap(), StoreReply::Object(a.clone()));

            let list = StoreRequest::List { kind: Some(PhysicalContainer::KIND.into()), namespace: Some(NS.into()) };
            assert!(list.is_read());
            assert_eq!(store.execute(NOW, list).unwrap(), StoreReply::Objects(vec![a.clone()]));
            let everything = store.execute(NOW, StoreRequest::List { kind: None, namespace: None }).unwrap();
            assert!(matches!(everything, StoreReply::Objects(ref all) if all.len() == 2));

            let update = StoreRequest::Update { object: with_label(&a, "x", "1") };
            assert!(!update.is_read());
            assert_eq!(update.describe(), format!("update PhysicalContainer/ns/a@{}", a.metadata.resource_version));
            store.execute(NOW, update).unwrap();
            let delete = StoreRequest::Delete { key: pc_key(NS, "a"), options: DeleteOptions::default() };
            store.execute(LATER, delete).unwrap();
            assert!(store.get(&pc_key(NS, "a")).is_none());
        }

        // ---------------------------------------------------------------------------------------------
        // determinism
        // ---------------------------------------------------------------------------------------------

        fn uids_with_seed(seed: u64) -> Vec<Uid> {
            let mut store = store_with(StoreConfig { uid_seed: seed, ..StoreConfig::default() });
            let mut uids = vec![store.create(NOW, namespace(NS)).unwrap().metadata.uid.clone()];
            for name in ["a", "b", "c"] {
                uids.push(store.create(NOW, container(NS, name)).unwrap().metadata.uid.clone());
            }
            uids
        }

        #[test]
        fn same_seed_gives_same_uids() {
            let first = uids_with_seed(7);
            assert_eq!(first, uids_with_seed(7));
            let distinct: std::collections::BTreeSet<&Uid> = first.iter().collect();
            assert_eq!(distinct.len(), first.len());
            // Uids look like UUIDs: 8-4-4-4-12 hex digits.
            let parts: Vec<usize> = first[0].0.split('-').map(str::len).collect();
            assert_eq!(parts, vec![8, 4, 4, 4, 12], "{}", first[0]);
            assert!(first[0].0.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        }

        #[test]
        fn different_seeds_give_different_uids() {
            let a = uids_with_seed(7);
            let b = uids_with_seed(8);
            for uid in &a {
                assert!(!b.contains(uid), "{uid} appears with both seeds");
            }
            assert_ne!(uids_with_seed(0), a);
        }

        #[test]
        fn an_api_version_is_checked_against_the_kind_and_not_stored() {
            let mut store = empty_store();
            let mut ns = namespace("core");
            ns.api_version = Some("v1".into());
            let stored = store.create(NOW, ns).unwrap();
            assert_eq!(stored.api_version, None, "the registration says it; nothing to store");
            let mut pc = container("core", "web");
            pc.api_version = Some("drydock.dev/v1".into());
            store.create(NOW, pc).unwrap();
            let mut wrong = container("core", "db");
            wrong.api_version = Some("v1".into());
            let err = store.create(NOW, wrong).unwrap_err();
            let StoreError::Invalid { errors, .. } = err else { panic!("{err:?}") };
            assert_eq!(errors[0].path, "apiVersion");
            assert!(errors[0].message.contains("served as drydock.dev/v1"), "{}", errors[0].message);
            let parsed: Object = serde_json::from_value(serde_json::json!({
                "apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
                "metadata": {"name": "x", "namespace": "core"}, "spec": {"image": "busybox"}
            }))
            .unwrap();
            assert_eq!(parsed.api_version.as_deref(), Some("drydock.dev/v1"));
        }
    };
}
