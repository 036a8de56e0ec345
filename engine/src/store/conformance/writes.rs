//! The store's test suite, writes: create (uid, resourceVersion, generation, the system fields a
//! client cannot set), update and status update with their resourceVersion preconditions, the
//! immutability of a physical container's spec, `execute`'s dispatch of requests, and uids drawn
//! from the store's seed.

/// Part of [`store_conformance_tests!`](crate::store_conformance_tests): expands, in the scope
/// of its helpers, the cases named in the module doc.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_writes {
    () => {
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

        // ---------------------------------------------------------------------------------------------
        // dry run
        // ---------------------------------------------------------------------------------------------

        #[test]
        fn a_dry_run_answers_as_the_write_would_and_changes_nothing() {
            let mut store = store();
            let a = store.create(NOW, container(NS, "a")).unwrap();
            let rv = store.resource_version();

            // A create: the object it would store (uid, generation, finalizers), nothing stored.
            let b = store.dry_run(NOW, StoreRequest::Create { object: container(NS, "b") }).unwrap();
            let StoreReply::Object(b) = b else { panic!("a create answers an object") };
            assert_eq!((b.metadata.generation, b.metadata.name.as_str()), (1, "b"));
            assert!(!b.metadata.uid.0.is_empty());
            assert!(store.get(&pc_key(NS, "b")).is_none());
            assert_unchanged(&store, rv);
            // No uid was used up: the real create gets the uid the dry run showed.
            let real = store.create(NOW, container(NS, "b")).unwrap();
            assert_eq!(real.metadata.uid, b.metadata.uid);
            let rv = store.resource_version();

            // The same errors as the write: exists, invalid, stale.
            assert!(matches!(
                store.dry_run(NOW, StoreRequest::Create { object: container(NS, "a") }),
                Err(StoreError::AlreadyExists { .. })
            ));
            assert_invalid_at(
                store.dry_run(NOW, StoreRequest::Create { object: container_with(NS, "c", spec("a//b")) }),
                "spec.image",
            );
            let mut stale = with_label(&a, "x", "y");
            stale.metadata.resource_version = 1;
            assert_conflict(store.dry_run(NOW, StoreRequest::Update { object: stale }));

            // An update and a delete: answered as done, the stored object untouched.
            let labelled = store.dry_run(NOW, StoreRequest::Update { object: with_label(&a, "x", "y") }).unwrap();
            let StoreReply::Object(labelled) = labelled else { panic!("an update answers an object") };
            assert_eq!(labelled.metadata.labels.get("x").map(String::as_str), Some("y"));
            let key = pc_key(NS, "a");
            let deleted = store.dry_run(NOW, StoreRequest::Delete { key: key.clone(), options: Default::default() });
            assert!(deleted.is_ok(), "{deleted:?}");
            assert_eq!(stored(&store, &key), a);
            assert_unchanged(&store, rv);
        }
    };
}
