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
