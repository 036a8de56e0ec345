//! Tests of the invariants about runtime containers (`containers`).

use super::*;

#[test]
fn recording_a_strangers_container_is_foreign_adoption_tracking_by_id_is_not() {
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c1", &pc, &[]);
    assert_eq!(w.violated(), None);
    let mut w = Fixture::new();
    w.pc("a", busybox(), "stranger");
    w.container("stranger", &[]);
    assert_eq!(w.violated().as_deref(), Some("no-foreign-adoption"));
    assert!(w.message().contains("not created for it"));
    let mut w = Fixture::new();
    w.pc("a", PhysicalContainerSpec { container_id: Some("stranger".into()), ..Default::default() }, "stranger");
    w.container("stranger", &[]);
    assert_eq!(w.violated(), None);
}

#[test]
fn caller_values_on_system_labels_are_caught() {
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c1", &pc, &[(names::LABEL_CREATOR, "mallory")]);
    assert_eq!(w.violated().as_deref(), Some("system-labels-win"));
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c1", &pc, &[(names::LABEL_RETAIN, "true")]);
    assert_eq!(w.violated().as_deref(), Some("system-labels-win"), "retain label on a spec that does not retain");
}

#[test]
fn creating_again_after_an_external_removal_of_a_recorded_container_is_caught() {
    for recorded in [true, false] {
        let mut w = Fixture::new();
        let pc = w.pc("a", busybox(), if recorded { "c1" } else { "other" });
        let container = w.ours("c1", &pc, &[]);
        w.runtime.remove_externally("c1");
        w.observe(Happening::ExternallyRemoved { container: &container });
        let uid = pc.metadata.uid.0.clone();
        w.applied(1, &create("again", &[(names::LABEL_OWNER_UID, &uid)]), None);
        let want = recorded.then_some("no-recreate-after-external-removal");
        assert_eq!(w.violated().as_deref(), want, "recorded: {recorded}");
    }
}

#[test]
fn a_request_the_runtime_refuses_as_invalid_is_caught() {
    let mut w = Fixture::new();
    let request = create("x", &[]);
    let ok = Ok(RuntimeReply::Created { id: "c1".into() });
    w.observe(Happening::RuntimeApplied { process: 0, id: OpId(1), request: &request, result: &ok, removed: None });
    assert_eq!(w.violated(), None);
    let refused = Err(drydock_engine::runtime::RuntimeError::Invalid("Invalid container name (x)".into()));
    w.observe(Happening::RuntimeApplied {
        process: 1,
        id: OpId(2),
        request: &request,
        result: &refused,
        removed: None,
    });
    assert_eq!(w.violated().as_deref(), Some("admission-before-runtime"));
    assert!(w.message().contains("p1 sent `create x from busybox`"), "{}", w.message());
}

#[test]
fn a_failed_physical_container_with_a_container_it_does_not_record_is_caught() {
    use drydock_engine::api::ContainerPhase;
    let fail = |w: &mut Fixture, pc: &Object, runtime_id: Option<&str>| {
        let mut next = (**w.store.get(&pc.key()).unwrap()).clone();
        next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
            phase: ContainerPhase::Failed,
            runtime_id: runtime_id.map(str::to_string),
            ..Default::default()
        });
        w.store.update_status(next).unwrap();
    };
    // A start that failed: the recorded container stays, and that is fine.
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c1", &pc, &[]);
    fail(&mut w, &pc, Some("c1"));
    assert_eq!(w.violated(), None);
    // Failed with nothing recorded, and no container: fine; one being removed: fine.
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    fail(&mut w, &pc, None);
    assert_eq!(w.violated(), None);
    let mut removing = w.ours("c2", &pc, &[]);
    removing.state = ContainerState::Removing;
    w.runtime.insert(removing);
    assert_eq!(w.violated(), None);
    // A create that landed unseen: its container lives on while the object says Failed.
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    fail(&mut w, &pc, None);
    w.ours("c2", &pc, &[]);
    assert_eq!(w.violated().as_deref(), Some("failed-has-no-stray-container"));
    assert!(
        w.message().contains("PhysicalContainer/ns/a is Failed") && w.message().contains("records none"),
        "{}",
        w.message()
    );
}

#[test]
fn an_object_recording_its_container_while_another_carries_its_uid_is_caught() {
    // The recorded one alone: fine.
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c1", &pc, &[]);
    assert_eq!(w.violated(), None);
    // The recorded one gone and another carrying its uid alive, in any phase: a stray nothing
    // will account for. One being removed is not live.
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    let mut removing = w.ours("c2", &pc, &[]);
    removing.state = ContainerState::Removing;
    w.runtime.insert(removing);
    assert_eq!(w.violated(), None);
    let mut w = Fixture::new();
    let pc = w.pc("a", busybox(), "c1");
    w.ours("c2", &pc, &[]);
    assert_eq!(w.violated().as_deref(), Some("no-stray-runtime-objects"));
    assert!(w.message().contains("PhysicalContainer/ns/a records container c1"), "{}", w.message());
    // Another object's container, or a stranger's: not this object's business.
    let mut w = Fixture::new();
    let (a, _b) = (w.pc("a", busybox(), "c1"), w.pc("b", busybox(), "c2"));
    w.ours("c1", &a, &[]);
    w.container("c3", &[]);
    assert_eq!(w.violated(), None);
}

#[test]
fn the_harvester_removing_a_volume_beside_its_container_removes_is_caught() {
    let harvest = ObjectKey::cluster(crate::checker::naming::HARVEST_KIND, "runtime");
    let remove_container = RuntimeRequest::RemoveContainer { id: "c1".into(), force: true };
    let remove_volume = RuntimeRequest::RemoveVolume { name: "v1".into() };
    for answered_first in [true, false] {
        let mut w = Fixture::new();
        w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &remove_container, issuer: &harvest });
        if answered_first {
            w.observe(Happening::Answered { process: 0, id: OpId(1) });
        }
        w.observe(Happening::RuntimeSent { process: 0, id: OpId(2), request: &remove_volume, issuer: &harvest });
        let want = (!answered_first).then_some("harvest-volumes-after-containers");
        assert_eq!(w.violated().as_deref(), want, "answered first {answered_first}: {}", w.message());
    }
}
