//! Tests of the invariant about overlapping reconciles (`reconciles`).

use super::*;

#[test]
fn a_reconcile_sending_while_an_earlier_one_of_its_key_waits_for_store_replies_is_caught() {
    let key = Arc::new(ObjectKey::namespaced(PhysicalContainer::KIND, "ns", "web"));
    let origin = |reconcile: u64| drydock_engine::Origin {
        controller: Arc::from("physical-container"),
        key: key.clone(),
        reconcile,
        trigger: None,
    };
    let (first, second) = (origin(1), origin(2));
    let requested = |w: &mut Fixture, process: usize, id: u64, origin: &drydock_engine::Origin, store: bool| {
        w.observe(Happening::Requested { process, id: OpId(id), origin, store });
    };
    // The good history: reconcile 1 sends two store requests and a runtime request; both store
    // replies come back; then reconcile 2 runs. Another process reconciling the key meanwhile,
    // and the runtime request still out, are no overlap.
    let mut w = Fixture::new();
    requested(&mut w, 0, 1, &first, true);
    requested(&mut w, 0, 2, &first, true);
    requested(&mut w, 0, 3, &first, false);
    requested(&mut w, 1, 9, &second, true);
    w.observe(Happening::Answered { process: 0, id: OpId(1) });
    w.observe(Happening::Answered { process: 0, id: OpId(2) });
    requested(&mut w, 0, 4, &second, true);
    assert_eq!(w.violated(), None);
    // A crash ends what was in progress: the new life's reconcile 1 is no overlap either.
    w.observe(Happening::Crashed { process: 0 });
    requested(&mut w, 0, 1 << 40, &first, true);
    assert_eq!(w.violated(), None);

    // The bad one: reconcile 2 sends while one of reconcile 1's store replies is still out.
    let mut w = Fixture::new();
    requested(&mut w, 0, 1, &first, true);
    requested(&mut w, 0, 2, &first, true);
    w.observe(Happening::Answered { process: 0, id: OpId(1) });
    requested(&mut w, 0, 3, &second, false);
    assert_eq!(w.violated().as_deref(), Some("reconciles-never-overlap"));
    assert!(
        w.message().contains("reconcile 2 of physical-container") && w.message().ends_with("store requests #2"),
        "{}",
        w.message()
    );
}
