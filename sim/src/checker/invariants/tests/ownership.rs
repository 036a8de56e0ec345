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
