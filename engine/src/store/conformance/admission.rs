//! The store's test suite, admission: names, specs of the kind with field paths, scopes, image
//! references and container names, active namespaces, ownerReferences (self, across namespaces,
//! cluster-scoped), and the apiVersion a kind is served as.

/// Part of [`store_conformance_tests!`](crate::store_conformance_tests): expands, in the scope
/// of its helpers, the cases named in the module doc.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_admission {
    () => {
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
