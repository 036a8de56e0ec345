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

/// p0's `request` (op `id`) was answered with `result`, and the answer handed back.
fn runtime_answered(
    w: &mut Fixture,
    id: u64,
    request: &RuntimeRequest,
    result: drydock_engine::runtime::RuntimeResult,
) {
    sent(w, id, request);
    w.observe(Happening::RuntimeApplied { process: 0, id: OpId(id), request, result: &result, removed: None });
    w.observe(Happening::RuntimeSettled { process: 0, id: OpId(id) });
    w.observe(Happening::Answered { process: 0, id: OpId(id) });
}

fn sent(w: &mut Fixture, id: u64, request: &RuntimeRequest) {
    let issuer = ObjectKey::namespaced(PhysicalContainer::KIND, "ns", "c");
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(id), request, issuer: &issuer });
}

#[test]
fn acting_on_a_container_its_remove_found_gone_is_caught_another_objects_a_start_not_found_or_a_crash_between_is_not() {
    use drydock_engine::runtime::RuntimeError;
    let remove = RuntimeRequest::RemoveContainer { id: "c1".into(), force: true };
    let start = RuntimeRequest::StartContainer { id: "c1".into() };
    let gone = || Err(RuntimeError::NotFound("no such container: c1".into()));
    // Told by a remove, then removing again.
    let mut w = Fixture::new();
    runtime_answered(&mut w, 1, &remove, gone());
    assert_eq!(w.violated(), None);
    sent(&mut w, 2, &remove);
    assert_eq!(w.violated().as_deref(), Some("notfound-is-final"));
    assert!(w.message().contains("container c1 does not exist"), "{}", w.message());
    // Another object's reconcile (the harvester, acting on its list) is not the one told.
    let mut w = Fixture::new();
    runtime_answered(&mut w, 1, &remove, gone());
    let harvest = ObjectKey::cluster("Harvest", "runtime");
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(2), request: &remove, issuer: &harvest });
    assert_eq!(w.violated(), None, "another object's reconcile");
    // A start's NotFound may be a missing network: the container may be there.
    let mut w = Fixture::new();
    runtime_answered(&mut w, 1, &start, gone());
    sent(&mut w, 2, &remove);
    assert_eq!(w.violated(), None);
    // A crash in between: the next life knows only what the object records.
    let mut w = Fixture::new();
    runtime_answered(&mut w, 1, &remove, gone());
    w.observe(Happening::Crashed { process: 0 });
    sent(&mut w, 2, &remove);
    assert_eq!(w.violated(), None);
    // Answered NotFound but never handed back (its process was down): it was told nothing.
    let mut w = Fixture::new();
    sent(&mut w, 1, &remove);
    w.observe(Happening::RuntimeApplied { process: 0, id: OpId(1), request: &remove, result: &gone(), removed: None });
    w.observe(Happening::RuntimeSettled { process: 0, id: OpId(1) });
    sent(&mut w, 2, &remove);
    assert_eq!(w.violated(), None);

    // Sent by a life that crashed, answered in the next: nobody was told.
    let mut w = Fixture::new();
    sent(&mut w, 1, &remove);
    w.observe(Happening::Crashed { process: 0 });
    w.observe(Happening::RuntimeApplied { process: 0, id: OpId(1), request: &remove, result: &gone(), removed: None });
    w.observe(Happening::RuntimeSettled { process: 0, id: OpId(1) });
    w.observe(Happening::Answered { process: 0, id: OpId(1) });
    sent(&mut w, 2, &remove);
    assert_eq!(w.violated(), None);
}

/// p0 hands out a store request as op `id` (all of one reconcile).
fn store_sent(w: &mut Fixture, id: u64) {
    let origin = drydock_engine::Origin {
        controller: Arc::from("physical-container"),
        key: Arc::new(ObjectKey::namespaced(PhysicalContainer::KIND, "ns", "c")),
        reconcile: 1,
        trigger: None,
    };
    w.observe(Happening::Requested { process: 0, id: OpId(id), origin: &origin, store: true });
}

/// The store applies p0's op `id`.
fn store_applies(w: &mut Fixture, id: u64, request: &StoreRequest) {
    w.observe(Happening::StoreApplying { process: 0, id: OpId(id), request });
    let result = w.store.execute(WallTime(2), request.clone());
    w.observe(Happening::StoreApplied { process: 0, request, result: &result });
}

#[test]
fn writing_to_an_object_a_write_found_gone_is_caught_a_write_that_crossed_the_answer_is_not() {
    let mut w = Fixture::new();
    let pc = w.pc("c", busybox(), "c1");
    w.store.delete(WallTime(2), &pc.key(), &DeleteOptions::default()).unwrap();
    let update = StoreRequest::Update { object: (*pc).clone() };
    // Two updates sent at once: the second crossed the first's NotFound.
    store_sent(&mut w, 1);
    store_sent(&mut w, 2);
    store_applies(&mut w, 1, &update);
    w.observe(Happening::Answered { process: 0, id: OpId(1) });
    store_applies(&mut w, 2, &update);
    assert_eq!(w.violated(), None, "sent before the answer");
    // One sent after it.
    store_sent(&mut w, 3);
    store_applies(&mut w, 3, &update);
    assert_eq!(w.violated().as_deref(), Some("notfound-is-final"));
    assert!(w.message().contains(&pc.metadata.uid.0), "{}", w.message());
}

#[test]
fn runtime_requests_beyond_the_pace_in_one_window_are_caught_spread_over_two_are_not() {
    let inspect = RuntimeRequest::InspectContainer { id: "c1".into() };
    // 50 at 10.0-19.8 s, then 50 more from 20 s: two windows, each at the budget.
    let mut w = Fixture::new();
    for n in 0..100u64 {
        w.runtime.set_now(WallTime(10_000 + n * 200));
        sent(&mut w, n, &inspect);
    }
    assert_eq!(w.violated(), None, "{}", w.message());
    // A crash starts the count again; the 51st in one window of one life is a loop.
    w.observe(Happening::Crashed { process: 0 });
    for n in 0..51u64 {
        w.runtime.set_now(WallTime(40_000 + n));
        sent(&mut w, 100 + n, &inspect);
    }
    assert_eq!(w.violated().as_deref(), Some("runtime-requests-paced"));
    assert!(w.message().contains("51 runtime requests for PhysicalContainer/ns/c"), "{}", w.message());
}
