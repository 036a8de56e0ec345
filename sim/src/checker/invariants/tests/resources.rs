//! Tests of the invariants about networks, volumes and copied files (`resources`).

use super::*;

#[test]
fn starting_a_container_without_all_its_copied_files_is_caught() {
    use drydock_engine::api::container::CopiedFile;
    let file = |destination: &str, contents: &str| CopiedFile {
        destination: destination.into(),
        contents: contents.into(),
        mode: 0o644,
        owner: 0,
        group: 0,
    };
    let mut w = Fixture::new();
    let spec =
        PhysicalContainerSpec { files: vec![file("/etc/app/a", "one\n"), file("/etc/app/b", "two\n")], ..busybox() };
    let pc = w.pc("web", spec, "c1");
    w.ours("c1", &pc, &[]);
    let start = RuntimeRequest::StartContainer { id: "c1".into() };
    // A copy refused partway: the first file is there, the second is not.
    let partial = RuntimeRequest::CopyFiles { id: "c1".into(), files: vec![file("/etc/app/a", "one\n")] };
    w.runtime.execute(&partial).unwrap();
    w.applied(1, &start, None);
    assert_eq!(w.violated().as_deref(), Some("files-before-start"));
    assert!(w.message().contains("without its file /etc/app/b"), "{}", w.message());

    // Near miss: every file there (also one the same, copied twice), and a container whose
    // object copies nothing.
    let mut w = Fixture::new();
    let spec = PhysicalContainerSpec { files: vec![file("/etc/app/a", "one\n")], ..busybox() };
    let pc = w.pc("web", spec, "c1");
    w.ours("c1", &pc, &[]);
    let all = RuntimeRequest::CopyFiles { id: "c1".into(), files: vec![file("/etc/app/a", "one\n")] };
    w.runtime.execute(&all).unwrap();
    w.applied(1, &start, None);
    let plain = w.pc("plain", busybox(), "c2");
    w.ours("c2", &plain, &[]);
    w.applied(2, &RuntimeRequest::StartContainer { id: "c2".into() }, None);
    assert_eq!(w.violated(), None);
}

#[test]
fn a_network_that_failed_saying_ready_later_is_caught() {
    use drydock_engine::api::{ContainerNetwork, ContainerNetworkSpec};
    let mut w = Fixture::new();
    let meta = ObjectMeta::named(Some("ns"), "net");
    let object = Object::from_spec::<ContainerNetwork>(meta, &ContainerNetworkSpec::default());
    let created = match w.store.execute(WallTime(1), StoreRequest::Create { object }) {
        Ok(StoreReply::Object(o)) => o,
        other => panic!("create: {other:?}"),
    };
    let status = |w: &Fixture, phase: &str| {
        let mut next = (**w.store.get(&created.key()).unwrap()).clone();
        next.status = serde_json::json!({ "phase": phase, "reason": "CreateRefused", "message": "refused" });
        StoreRequest::UpdateStatus { object: next }
    };
    w.store_applied(status(&w, "Failed"));
    assert_eq!(w.violated(), None, "{}", w.message());
    w.store_applied(status(&w, "Failed"));
    assert_eq!(w.violated(), None, "saying Failed again is fine: {}", w.message());
    w.store_applied(status(&w, "Ready"));
    assert_eq!(w.violated().as_deref(), Some("resource-end-is-final"), "{}", w.message());
}

/// Network object `net` (runtime name `ns-net`), `replace_existing` as given, about to be stored
/// Failed with NameTaken.
fn name_taken(w: &mut Fixture, replace_existing: bool) -> StoreRequest {
    use drydock_engine::api::{ContainerNetwork, ContainerNetworkSpec};
    let spec = ContainerNetworkSpec { replace_existing, ..Default::default() };
    let meta = ObjectMeta::named(Some("ns"), "net");
    let created = w.store.create(WallTime(1), Object::from_spec::<ContainerNetwork>(meta, &spec)).unwrap();
    // Its system stream says so, as system-records-terminal-failures requires.
    let own = drydock_engine::logs::Subject::Object(created.metadata.uid.clone());
    w.logs.hub.append(
        &own,
        drydock_engine::logs::Channel::System,
        WallTime(1),
        "phase Pending -> Failed: held".to_string(),
    );
    let mut next = (*created).clone();
    next.status = serde_json::json!({ "phase": "Failed", "reason": "NameTaken", "message": "held" });
    StoreRequest::UpdateStatus { object: next }
}

#[test]
fn a_name_taken_without_a_stranger_or_despite_replace_existing_is_caught() {
    // Nobody holds the name.
    let mut w = Fixture::new();
    let request = name_taken(&mut w, false);
    w.observe(Happening::StoreApplying { process: 0, id: OpId(1), request: &request });
    assert_eq!(w.violated().as_deref(), Some("name-taken-justified"), "{}", w.message());
    // A stranger holds it, and the spec does not ask to replace it: justified.
    let mut w = Fixture::new();
    w.runtime.insert_network("ns-net", Default::default());
    let request = name_taken(&mut w, false);
    w.observe(Happening::StoreApplying { process: 0, id: OpId(1), request: &request });
    assert_eq!(w.violated(), None, "{}", w.message());
    // The spec asks to replace the stranger, and no removal was refused.
    let mut w = Fixture::new();
    w.runtime.insert_network("ns-net", Default::default());
    let request = name_taken(&mut w, true);
    w.observe(Happening::StoreApplying { process: 0, id: OpId(1), request: &request });
    assert_eq!(w.violated().as_deref(), Some("name-taken-justified"), "{}", w.message());
}

#[test]
fn removing_a_network_its_object_retains_is_caught() {
    use drydock_engine::api::{ContainerNetwork, ContainerNetworkSpec};
    let mut w = Fixture::new();
    let meta = ObjectMeta::named(Some("ns"), "net");
    let object = w
        .store
        .create(WallTime(1), Object::from_spec::<ContainerNetwork>(meta, &ContainerNetworkSpec::default()))
        .unwrap();
    let uid = object.metadata.uid.0.clone();
    for (retained, want) in [(false, None), (true, Some("removes-only-its-own"))] {
        let mut w2 = Fixture::new();
        std::mem::swap(&mut w2.store, &mut w.store);
        let mut labels = std::collections::BTreeMap::from([(names::LABEL_OWNER_UID.to_string(), uid.clone())]);
        if retained {
            labels.insert(names::LABEL_RETAIN.to_string(), "true".into());
        }
        let id = w2.runtime.insert_network("ns-net", labels);
        let remove = RuntimeRequest::RemoveNetwork { id };
        w2.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &remove, issuer: &object.key() });
        assert_eq!(w2.violated().as_deref(), want, "retained {retained}: {}", w2.message());
        std::mem::swap(&mut w2.store, &mut w.store);
    }
}
