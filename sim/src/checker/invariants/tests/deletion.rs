//! Tests of the invariants about deletion (`deletion`).

use super::*;

/// A physical container `name` in `ns`, owned by `owner` (blocking its deletion if `blocking`).
fn owned_pc(w: &mut Fixture, name: &str, owner: Option<&Object>, blocking: bool) -> Arc<Object> {
    let mut meta = ObjectMeta::named(Some("ns"), name);
    if let Some(owner) = owner {
        let mut reference = owner.owner_reference(false);
        reference.block_owner_deletion = blocking;
        meta.owner_references.push(reference);
    }
    w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap()
}

fn engine_deletes(w: &mut Fixture, object: &Object) {
    let request = StoreRequest::Delete {
        key: object.key(),
        options: DeleteOptions { precondition_uid: Some(object.metadata.uid.clone()), ..Default::default() },
    };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &request });
    w.store_applied(request);
}

fn client_deletes(w: &mut Fixture, object: &Object, propagation: drydock_engine::store::Propagation) {
    let options = DeleteOptions { propagation, ..Default::default() };
    let marked = w.store.delete(WallTime(2), &object.key(), &options).unwrap();
    w.observe(Happening::ClientWrote { object: &marked });
}

#[test]
fn the_engine_deleting_an_object_that_is_not_garbage_is_caught() {
    // No owner, namespace active.
    let mut w = Fixture::new();
    let lonely = owned_pc(&mut w, "lonely", None, false);
    engine_deletes(&mut w, &lonely);
    assert_eq!(w.violated().as_deref(), Some("deletes-only-garbage"));
    // A live owner.
    let mut w = Fixture::new();
    let owner = owned_pc(&mut w, "owner", None, false);
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated().as_deref(), Some("deletes-only-garbage"));
    // An owner being deleted (background, held by a finalizer): garbage.
    let mut w = Fixture::new();
    let mut meta = ObjectMeta::named(Some("ns"), "owner");
    meta.finalizers.push(names::FINALIZER_RUNTIME.into());
    let owner = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    client_deletes(&mut w, &owner, Default::default());
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated(), None);
    // A terminating namespace: anything goes.
    let mut w = Fixture::new();
    let lonely = owned_pc(&mut w, "lonely", None, false);
    let mut ns = (**w.store.get(&ObjectKey::cluster(Namespace::KIND, "ns")).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    w.store.update(ns).unwrap();
    w.store.delete(WallTime(2), &ObjectKey::cluster(Namespace::KIND, "ns"), &DeleteOptions::default()).unwrap();
    engine_deletes(&mut w, &lonely);
    assert_eq!(w.violated(), None);
}

#[test]
fn deleting_an_orphaned_dependent_or_keeping_its_reference_is_caught() {
    use drydock_engine::store::{FINALIZER_ORPHAN, Propagation};
    // The engine deletes the dependent of an orphaning owner.
    let mut w = Fixture::new();
    let owner = owned_pc(&mut w, "owner", None, false);
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    client_deletes(&mut w, &owner, Propagation::Orphan);
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated().as_deref(), Some("orphans-survive"));
    // The owner goes with the dependent still referring to it, or after it was unlinked.
    for unlinked in [false, true] {
        let mut w = Fixture::new();
        let owner = owned_pc(&mut w, "owner", None, false);
        let child = owned_pc(&mut w, "child", Some(&owner), false);
        client_deletes(&mut w, &owner, Propagation::Orphan);
        if unlinked {
            let mut next = (*child).clone();
            next.metadata.owner_references.clear();
            w.store_applied(StoreRequest::Update { object: next });
        }
        let mut released = (**w.store.get(&owner.key()).unwrap()).clone();
        released.metadata.finalizers.retain(|f| f != FINALIZER_ORPHAN);
        w.store_applied(StoreRequest::Update { object: released });
        assert!(w.store.get(&owner.key()).is_none());
        let want = (!unlinked).then_some("orphans-survive");
        assert_eq!(w.violated().as_deref(), want, "unlinked: {unlinked}");
    }
}

#[test]
fn a_delete_with_a_live_owner_is_caught_from_drydocks_controllers_but_left_to_a_users_invariants() {
    for (controller, caught) in [("garbage-collector", true), ("namespace", true), ("containerset", false)] {
        let mut w = Fixture::new();
        let owner = w.pc("owner", busybox(), "c1");
        let mut meta = ObjectMeta::named(Some("ns"), "child");
        meta.owner_references.push(owner.owner_reference(true));
        let child = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
        let origin = drydock_engine::Origin {
            controller: Arc::from(controller),
            key: Arc::new(owner.key()),
            reconcile: 1,
            trigger: None,
        };
        w.observe(Happening::Requested { process: 0, id: OpId(7), origin: &origin, store: true });
        let delete = StoreRequest::Delete { key: child.key(), options: DeleteOptions::default() };
        w.observe(Happening::StoreApplying { process: 0, id: OpId(7), request: &delete });
        let want = caught.then_some("deletes-only-garbage");
        assert_eq!(w.violated().as_deref(), want, "a delete by {controller}");
    }
}

#[test]
fn a_foreground_owner_gone_before_its_blocking_dependents_is_caught() {
    use drydock_engine::store::{FINALIZER_FOREGROUND_DELETION, Propagation};
    for dependents_first in [false, true] {
        let mut w = Fixture::new();
        let owner = owned_pc(&mut w, "owner", None, false);
        let blocking = owned_pc(&mut w, "blocking", Some(&owner), true);
        // One that does not block may outlive it (the collector deletes it afterwards).
        owned_pc(&mut w, "other", Some(&owner), false);
        client_deletes(&mut w, &owner, Propagation::Foreground);
        if dependents_first {
            engine_deletes(&mut w, &blocking);
        }
        let mut released = (**w.store.get(&owner.key()).unwrap()).clone();
        released.metadata.finalizers.retain(|f| f != FINALIZER_FOREGROUND_DELETION);
        w.store_applied(StoreRequest::Update { object: released });
        let want = (!dependents_first).then_some("foreground-after-dependents");
        assert_eq!(w.violated().as_deref(), want, "dependents first: {dependents_first}");
    }
}

#[test]
fn garbage_left_past_the_bound_is_caught_a_crash_restarts_the_clock_and_a_delete_ends_it() {
    let at = |w: &mut Fixture, secs: u64| w.runtime.set_now(WallTime(1_000 * secs));
    let garbage = |w: &mut Fixture| {
        at(w, 10);
        let owner = owned_pc(w, "owner", None, false);
        let child = owned_pc(w, "child", Some(&owner), false);
        w.observe(Happening::ClientWrote { object: &owner });
        w.observe(Happening::ClientWrote { object: &child });
        client_deletes(w, &owner, Default::default());
        assert!(w.store.get_by_uid(&owner.metadata.uid).is_none(), "the owner is gone");
        child
    };
    let mut w = Fixture::new();
    garbage(&mut w);
    at(&mut w, 69);
    assert_eq!(w.violated(), None, "within the bound");
    at(&mut w, 71);
    assert_eq!(w.violated().as_deref(), Some("garbage-collected"));
    assert!(w.message().contains("PhysicalContainer/ns/child"), "{}", w.message());
    // A crash at 50 s: its next life has the bound from then.
    let mut w = Fixture::new();
    garbage(&mut w);
    at(&mut w, 50);
    w.observe(Happening::Crashed { process: 0 });
    at(&mut w, 105);
    assert_eq!(w.violated(), None, "counted anew from the crash");
    at(&mut w, 111);
    assert_eq!(w.violated().as_deref(), Some("garbage-collected"));
    // Collected: marked deleted in time.
    let mut w = Fixture::new();
    let child = garbage(&mut w);
    at(&mut w, 20);
    engine_deletes(&mut w, &child);
    at(&mut w, 200);
    assert_eq!(w.violated(), None);
}

#[test]
fn a_dependent_with_a_live_owner_left_is_not_garbage() {
    let mut w = Fixture::new();
    let (one, two) = (owned_pc(&mut w, "one", None, false), owned_pc(&mut w, "two", None, false));
    let mut meta = ObjectMeta::named(Some("ns"), "child");
    meta.owner_references = vec![one.owner_reference(false), two.owner_reference(false)];
    let child = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
    w.observe(Happening::ClientWrote { object: &child });
    client_deletes(&mut w, &one, Default::default());
    w.runtime.set_now(WallTime(500_000));
    assert_eq!(w.violated(), None);
}
