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
