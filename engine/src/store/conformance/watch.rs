//! The store's test suite, the watch log: events since a resourceVersion in order, compaction
//! answering `Gone`.

/// Part of [`store_conformance_tests!`](crate::store_conformance_tests): expands, in the scope
/// of its helpers, the cases named in the module doc.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_watch {
    () => {
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
    };
}
