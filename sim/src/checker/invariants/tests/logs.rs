//! Tests of the invariants about log readers and the system stream (`logs`).

use super::*;
use crate::logs::{Reader, Received};
use crate::workload::{LogRead, Target};
use drydock_engine::logs::{Channel, FollowOptions, Follower, Source, Step, Subject};

/// A physical container recording a real runtime container, made for it, that ran `script`
/// and exited.
fn ran(fx: &mut Fixture, script: &str) -> (Arc<Object>, String) {
    fx.runtime.add_image("busybox");
    let pc = fx.pc("a", busybox(), "none-yet");
    let (uid, ns_uid) = (pc.metadata.uid.0.clone(), fx.ns_uid.clone());
    let labels = [
        (names::LABEL_OWNER_UID, uid.as_str()),
        (names::LABEL_NAMESPACE, "ns"),
        (names::LABEL_NAMESPACE_UID, ns_uid.as_str()),
        (names::LABEL_CREATOR, "engine-0"),
    ];
    let create = ContainerCreate {
        name: "printer".into(),
        image: "busybox".into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let Ok(RuntimeReply::Created { id }) = fx.runtime.execute(&RuntimeRequest::CreateContainer(create)) else {
        panic!("the create must succeed")
    };
    fx.runtime.execute(&RuntimeRequest::StartContainer { id: id.clone() }).unwrap();
    // A program that ends at once does so a moment after its start.
    let now = fx.runtime.now();
    fx.runtime.advance(drydock_engine::WallTime(now.0 + 1));
    let mut exited = (*pc).clone();
    exited.status["phase"] = "Exited".into();
    exited.status["runtimeId"] = id.clone().into();
    (fx.store.update_status(exited).unwrap(), id)
}

fn reader(pc: &Object, follow: bool) -> Reader {
    let read = LogRead {
        target: Target::of::<PhysicalContainer>("ns", "a"),
        source: "stdout".into(),
        follow,
        every_ms: 100,
        batch: 100,
        tail_lines: None,
        close_after_ms: 10_000,
    };
    let mut reader = Reader::new(read, drydock_engine::MonoTime(0));
    reader.follower = Some(Follower::open(pc, Source::Stdout, FollowOptions { follow, ..Default::default() }));
    reader
}

fn read(fx: &mut Fixture, step: Step) {
    fx.observe(Happening::LogRead { reader: 0, step: &step });
}

#[test]
fn a_follower_waiting_after_its_container_exited_is_caught_one_ending_early_too() {
    let mut fx = Fixture::new();
    let (pc, _) = ran(&mut fx, "echo hi");
    fx.logs.readers.push(reader(&pc, true));
    read(&mut fx, Step::Lines(Default::default()));
    assert_eq!(fx.violated(), None);
    read(&mut fx, Step::Pending);
    assert_eq!(fx.violated().as_deref(), Some("log-followers-end"), "{}", fx.message());

    let mut fx = Fixture::new();
    let (pc, _) = ran(&mut fx, "echo hi; sleep 100");
    fx.logs.readers.push(reader(&pc, true));
    read(&mut fx, Step::End);
    assert_eq!(fx.violated().as_deref(), Some("log-followers-end"), "ended while it still runs: {}", fx.message());
}

#[test]
fn a_line_that_is_not_what_the_container_printed_or_a_skipped_one_is_caught() {
    let mut fx = Fixture::new();
    let (pc, id) = ran(&mut fx, "echo one; echo two; echo three");
    let line = |number, text: &str| Received {
        subject: Subject::Container(id.clone()),
        channel: Channel::Stdout,
        number,
        text: text.into(),
    };
    let mut good = reader(&pc, true);
    good.received = vec![line(1, "one"), line(2, "two")];
    fx.logs.readers.push(good);
    read(&mut fx, Step::Lines(Default::default()));
    assert_eq!(fx.violated(), None);

    let mut fx = Fixture::new();
    let (pc, _) = ran(&mut fx, "echo one; echo two; echo three");
    let mut skipped = reader(&pc, true);
    skipped.received = vec![line(1, "one"), line(3, "three")];
    fx.logs.readers.push(skipped);
    read(&mut fx, Step::Lines(Default::default()));
    assert_eq!(fx.violated().as_deref(), Some("log-lines-in-order-once"), "{}", fx.message());

    let mut fx = Fixture::new();
    let (pc, _) = ran(&mut fx, "echo one; echo two; echo three");
    let mut wrong = reader(&pc, true);
    wrong.received = vec![line(1, "two")];
    fx.logs.readers.push(wrong);
    read(&mut fx, Step::Lines(Default::default()));
    assert_eq!(fx.violated().as_deref(), Some("log-lines-in-order-once"), "{}", fx.message());
}

#[test]
fn a_terminal_failure_stored_without_its_system_line_is_caught() {
    let failing = |fx: &mut Fixture| {
        let pc = fx.pc("a", busybox(), "c1");
        let mut failed = (*pc).clone();
        failed.status["phase"] = "Failed".into();
        // A reason of the engine's own finding: no runtime answer to quote (failures.rs).
        failed.status["reason"] = "NameTaken".into();
        failed.status["message"] = "exec: no such file".into();
        (pc, StoreRequest::UpdateStatus { object: failed })
    };
    let mut fx = Fixture::new();
    let (_, request) = failing(&mut fx);
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(1), request: &request });
    assert_eq!(fx.violated().as_deref(), Some("system-records-terminal-failures"), "{}", fx.message());

    let mut fx = Fixture::new();
    let (pc, request) = failing(&mut fx);
    let own = Subject::Object(pc.metadata.uid.clone());
    fx.logs.hub.append(&own, Channel::System, WallTime(1), "phase Pending -> Failed: exec: no such file");
    fx.observe(Happening::StoreApplying { process: 0, id: OpId(1), request: &request });
    assert_eq!(fx.violated(), None);
}
