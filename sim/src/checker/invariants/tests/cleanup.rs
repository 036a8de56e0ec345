//! Tests of the invariants about cleanup (`cleanup`).

use super::*;

#[test]
fn retained_containers_may_outlive_their_object_and_namespace() {
    let mut w = Fixture::new();
    w.container(
        "kept",
        &[(names::LABEL_OWNER_UID, "gone"), (names::LABEL_NAMESPACE_UID, "gone-ns"), (names::LABEL_RETAIN, "true")],
    );
    assert_eq!(w.violated(), None);
    w.container("leaked", &[(names::LABEL_OWNER_UID, "gone-2")]);
    assert_eq!(w.violated().as_deref(), Some("finalizer-after-runtime-cleanup"));
}

#[test]
fn a_physical_container_leaving_the_store_with_an_operation_in_flight_is_caught() {
    for in_flight in [false, true] {
        let mut w = Fixture::new();
        let pc = w.pc("a", busybox(), "c1");
        if in_flight {
            let start = RuntimeRequest::StartContainer { id: "c1".into() };
            w.facts.in_flight.send(0, OpId(1), &start, Some(pc.metadata.uid.0.clone()), None);
        }
        w.store_applied(StoreRequest::Delete { key: pc.key(), options: DeleteOptions::default() });
        let want = in_flight.then_some("finalizer-after-runtime-cleanup");
        assert_eq!(w.violated().as_deref(), want, "in flight: {in_flight}");
    }
}

#[test]
fn deleting_an_image_while_containers_remain_in_a_terminating_namespace_is_caught() {
    let mut w = Fixture::new();
    let pc = w.pc("web", busybox(), "c1");
    let spec = ContainerImageSpec { image: "busybox".into(), ..Default::default() };
    let image =
        w.store.create(WallTime(1), Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), "img"), &spec));
    let image = image.unwrap();
    let mut ns = (**w.store.get(&ObjectKey::cluster(Namespace::KIND, "ns")).unwrap()).clone();
    ns.metadata.finalizers.push("test/hold".into());
    w.store.update(ns).unwrap();
    w.store.delete(WallTime(2), &ObjectKey::cluster(Namespace::KIND, "ns"), &DeleteOptions::default()).unwrap();
    let delete = |key: ObjectKey| StoreRequest::Delete { key, options: DeleteOptions::default() };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &delete(pc.key()) });
    assert_eq!(w.violated(), None, "containers first is the order");
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &delete(image.key()) });
    assert_eq!(w.violated().as_deref(), Some("namespace-cleanup-order"));
}

#[test]
fn releasing_a_namespace_finalizer_while_a_child_remains_is_caught() {
    let mut w = Fixture::new();
    let key = ObjectKey::cluster(Namespace::KIND, "ns");
    let mut ns = (**w.store.get(&key).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    let ns = w.store.update(ns).unwrap();
    w.pc("web", busybox(), "c1");
    let mut released = (*ns).clone();
    released.metadata.finalizers.retain(|f| f != names::FINALIZER_NAMESPACE);
    let release = StoreRequest::Update { object: released };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &release });
    assert_eq!(w.violated().as_deref(), Some("namespace-released-empty"));
    assert!(w.message().contains("PhysicalContainer"), "{}", w.message());

    let mut w = Fixture::new();
    let mut ns = (**w.store.get(&key).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    let ns = w.store.update(ns).unwrap();
    let mut released = (*ns).clone();
    released.metadata.finalizers.clear();
    w.observe(Happening::StoreApplying {
        process: 0,
        id: OpId(0),
        request: &StoreRequest::Update { object: released },
    });
    assert_eq!(w.violated(), None, "an empty namespace may go");
}
