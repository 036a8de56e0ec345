//! Tests of the invariants about ownerReferences (`ownership`).

use super::*;

#[test]
fn an_engine_adding_an_owner_to_an_owned_object_is_caught_a_first_owner_is_not() {
    let mut w = Fixture::new();
    let (a, b) = (w.pc("a", busybox(), "c1"), w.pc("b", busybox(), "c2"));
    let mut owned = (*w.pc("c", busybox(), "c3")).clone();
    owned.metadata.owner_references.push(a.owner_reference(false));
    w.observe(Happening::StoreApplying {
        process: 0,
        id: OpId(0),
        request: &StoreRequest::Update { object: owned.clone() },
    });
    assert_eq!(w.violated(), None, "a first owner");
    w.store.update(owned.clone()).unwrap();
    let mut twice = (**w.store.get(&owned.key()).unwrap()).clone();
    twice.metadata.owner_references.push(b.owner_reference(false));
    w.observe(Happening::StoreApplying { process: 1, id: OpId(0), request: &StoreRequest::Update { object: twice } });
    assert_eq!(w.violated().as_deref(), Some("ownership-stable"));
    assert!(w.message().contains("p1 changed the ownerReferences"), "{}", w.message());
}

/// `process` hands out an update of `object` from `controller`, and the store applies it.
fn update_from(w: &mut Fixture, controller: &str, id: u64, object: Object) {
    let origin = drydock_engine::Origin {
        controller: controller.into(),
        key: Arc::new(object.key()),
        reconcile: 1,
        trigger: None,
    };
    w.observe(Happening::Requested { process: 0, id: OpId(id), origin: &origin, store: true });
    let request = StoreRequest::Update { object };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(id), request: &request });
    w.store_applied(request);
}

#[test]
fn a_built_in_controller_owning_a_clients_object_is_caught_a_users_controller_is_not() {
    let owned_by = |w: &mut Fixture, owner: &Object, name: &str| {
        let mut next = (**w.store.get(&ObjectKey::namespaced(PhysicalContainer::KIND, "ns", name)).unwrap()).clone();
        next.metadata.owner_references.push(owner.owner_reference(false));
        next
    };
    let mut w = Fixture::new();
    let owner = w.pc("owner", busybox(), "c1");
    let client = w.pc("client", busybox(), "c2");
    w.observe(Happening::ClientWrote { object: &client });
    // A user's controller may (the rdd-namespaces example does).
    let next = owned_by(&mut w, &owner, "client");
    update_from(&mut w, "widgets", 1, next);
    assert_eq!(w.violated(), None);
    // One of drydock's may not.
    let mut w = Fixture::new();
    let owner = w.pc("owner", busybox(), "c1");
    let client = w.pc("client", busybox(), "c2");
    w.observe(Happening::ClientWrote { object: &client });
    let next = owned_by(&mut w, &owner, "client");
    update_from(&mut w, "garbage-collector", 1, next);
    assert_eq!(w.violated().as_deref(), Some("adopts-only-its-own"));
    assert!(w.message().contains("an owner of PhysicalContainer/ns/client, which a client created"), "{}", w.message());
}

#[test]
fn a_built_in_controller_owning_what_an_engine_made_is_not_caught() {
    let mut w = Fixture::new();
    let owner = w.pc("owner", busybox(), "c1");
    let create = StoreRequest::Create {
        object: Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), "made"), &busybox()),
    };
    w.store_applied(create);
    let mut next = (**w.store.get(&ObjectKey::namespaced(PhysicalContainer::KIND, "ns", "made")).unwrap()).clone();
    next.metadata.owner_references.push(owner.owner_reference(false));
    update_from(&mut w, "logical-container", 2, next);
    assert_eq!(w.violated(), None);
}
