//! The store's test suite, deletion: finalizers (a delete marks, the last finalizer removed
//! removes), uid preconditions, and propagation (foreground and orphan finalizers; the store
//! itself never deletes dependents: that is the garbage collector's job).

/// Part of [`store_conformance_tests!`](crate::store_conformance_tests): expands, in the scope
/// of its helpers, the cases named in the module doc.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_deletion {
    () => {
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
    };
}
