//! Tests of what the digest hashes: the records' encoding, never their text. Rewording a line
//! changes no digest; changing a field's value, or a record's kind, does.

#![allow(clippy::unwrap_used)]

use super::encode::{Encode, Encoder, hundredths};
use super::record::Tag;
use super::tests::{runtime_requests, with_records};
use super::*;
use drydock_engine::runtime::{RuntimeError, RuntimeRequest, RuntimeResult};
use drydock_engine::store::EventType;
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, FaultPlan};
use sha2::{Digest, Sha256};
use std::time::Duration;

fn encoded(record: &Record<'_>) -> Vec<u8> {
    let mut out = Encoder::default();
    record.encode(&mut out);
    out.bytes().to_vec()
}

/// The digest of a trace of one event at `at` holding `records`, kept (rendered) or not.
fn digest_of(keep: bool, at: MonoTime, records: &[Record<'_>]) -> String {
    let mut trace = Trace::new(keep);
    trace.begin(at);
    for record in records {
        trace.record(record);
    }
    trace.end(None);
    trace.digest()
}

const PC: Key<'static> = Key { kind: "PhysicalContainer", namespace: Some("ns"), name: "web" };

/// The bytes of a store update of `PhysicalContainer/ns/web` at rv 12, sent by p1 as #7, by hand.
fn update_bytes() -> Vec<u8> {
    let mut bytes = vec![
        16,  // Tag::StoreApply
        1,   // process
        7,   // op id
        115, // store.rs Tag::Update
        17,  // the kind's length
    ];
    bytes.extend_from_slice(b"PhysicalContainer");
    bytes.extend_from_slice(&[1, 2]); // a namespace, of 2 bytes
    bytes.extend_from_slice(b"ns");
    bytes.push(3);
    bytes.extend_from_slice(b"web");
    bytes.push(12); // resource version
    bytes
}

#[test]
fn the_digest_hashes_the_encoding_and_nothing_of_the_text() {
    let apply = Record::StoreApply { process: 1, id: OpId(7), op: StoreOp::Update { key: PC, resource_version: 12 } };
    assert_eq!(encoded(&apply), update_bytes(), "the encoding is pinned, byte for byte");
    let result = Record::StoreResult(StoreOutcome::Stored { resource_version: 13 });
    let at = MonoTime(1_500_000_123);
    // 1_500_000_123 in LEB128, low seven bits first.
    let mut event = vec![0xfb, 0xde, 0xa0, 0xcb, 0x05];
    event.extend(update_bytes());
    event.extend(encoded(&result));
    event.push(Tag::EventEnd as u8);
    let expected = hex::encode(Sha256::digest(&event));
    assert_eq!(digest_of(false, at, &[apply, result]), expected, "the time, the records, the end: nothing else");
    assert_eq!(digest_of(true, at, &[apply, result]), expected, "rendering the line changes nothing");
}

#[test]
fn a_kept_trace_renders_its_lines_and_an_unkept_one_renders_nothing() {
    let records = [
        Record::StoreApply { process: 1, id: OpId(7), op: StoreOp::Update { key: PC, resource_version: 12 } },
        Record::Fault(Fault::StoreConflict),
        Record::StoreResult(StoreOutcome::Failed { code: "Conflict" }),
    ];
    let mut kept = Trace::new(true);
    let mut unkept = Trace::new(false);
    for trace in [&mut kept, &mut unkept] {
        trace.begin(MonoTime(2_000_000));
        for record in &records {
            trace.record(record);
        }
        trace.end(None);
    }
    let events = kept.take_events().unwrap();
    assert_eq!(
        events[0].line,
        "0.002000s p1 store #7 update PhysicalContainer/ns/web@12 [fault store-conflict] -> Conflict"
    );
    assert_eq!(kept.digest(), unkept.digest());
    assert!(unkept.line.is_empty(), "a run that does not keep its trace formats no text");
}

#[test]
fn records_that_read_alike_digest_apart() {
    // Ids that share their first 12 characters print alike; they are different containers.
    let (a, b) = ("3f2a9c81d0e4aaaa", "3f2a9c81d0e4bbbb");
    let [a, b] = [a, b].map(|id| RuntimeRequest::StartContainer { id: id.to_string() });
    let start = |request| Record::RuntimeApply { process: 0, id: OpId(3), op: RuntimeOp(request) };
    assert_eq!(start(&a).to_string(), start(&b).to_string());
    assert_ne!(encoded(&start(&a)), encoded(&start(&b)));
    // `Kind/a/b`: a name in namespace `a`, or a cluster-scoped name with a slash.
    let namespaced = Key::new("Lease", Some("a"), "b");
    let cluster = Key::new("Lease", None, "a/b");
    assert_eq!(namespaced.to_string(), cluster.to_string());
    let lost = |key| Record::DeliveryLost { process: 0, key };
    assert_ne!(encoded(&lost(namespaced)), encoded(&lost(cluster)));
    // Two records in one event, or one in each of two events.
    let (wake, judge) = (Record::Wake { process: 0 }, Record::Judge);
    let mut one = Trace::new(false);
    one.begin(MonoTime(5));
    one.record(&wake);
    one.record(&judge);
    one.end(None);
    let mut two = Trace::new(false);
    for record in [wake, judge] {
        two.begin(MonoTime(5));
        two.record(&record);
        two.end(None);
    }
    assert_ne!(one.digest(), two.digest());
}

#[test]
fn every_record_of_the_samples_encodes_apart() {
    with_records(|cases| {
        let encodings: Vec<Vec<u8>> = cases.iter().map(|(record, _)| encoded(record)).collect();
        for (i, a) in encodings.iter().enumerate() {
            for (j, b) in encodings.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{:?} and {:?} encode alike", cases[i].0, cases[j].0);
            }
        }
    });
    let requests = runtime_requests();
    let ops: Vec<Vec<u8>> =
        requests.iter().map(|r| encoded(&Record::RuntimeApply { process: 0, id: OpId(1), op: r.into() })).collect();
    for (i, a) in ops.iter().enumerate() {
        assert!(ops[i + 1..].iter().all(|b| a != b), "{:?}", requests[i]);
    }
}

#[test]
fn changing_a_field_changes_the_digest() {
    let at = MonoTime(7_000);
    let deliver = |process, event, key, resource_version| Record::Deliver { process, event, key, resource_version };
    let base = deliver(0, EventType::Added, PC, 4);
    let changed = [
        deliver(1, EventType::Added, PC, 4),
        deliver(0, EventType::Modified, PC, 4),
        deliver(0, EventType::Added, Key { kind: "LogicalContainer", ..PC }, 4),
        deliver(0, EventType::Added, Key { namespace: Some("other"), ..PC }, 4),
        deliver(0, EventType::Added, Key { namespace: None, ..PC }, 4),
        deliver(0, EventType::Added, Key { name: "db", ..PC }, 4),
        deliver(0, EventType::Added, PC, 5),
    ];
    let digest = digest_of(false, at, &[base]);
    assert_ne!(digest, digest_of(false, MonoTime(7_001), &[base]), "the time is digested, to the nanosecond");
    for record in &changed {
        assert_ne!(digest, digest_of(false, at, &[*record]), "{record:?}");
    }
    let slow = |nanos| Record::Fault(Fault::SlowRuntime { id: OpId(9), takes: Duration::from_nanos(nanos) });
    assert_ne!(encoded(&slow(1_000_000_000)), encoded(&slow(1_000_000_001)), "a latency, to the nanosecond");
    let crash = |kind, process, restarts_at| Record::Fault(Fault::Crash { kind, process, restarts_at });
    let crashed = crash(FaultKind::EngineCrash, 0, MonoTime(10));
    for other in [
        crash(FaultKind::CrashBetweenWrites, 0, MonoTime(10)),
        crash(FaultKind::EngineCrash, 1, MonoTime(10)),
        crash(FaultKind::EngineCrash, 0, MonoTime(11)),
    ] {
        assert_ne!(encoded(&crashed), encoded(&other));
    }
    let (not_found, conflict): (RuntimeResult, RuntimeResult) =
        (Err(RuntimeError::NotFound("x".into())), Err(RuntimeError::Conflict("x".into())));
    let result = |result| Record::RuntimeResult(RuntimeOutcome(result));
    assert_ne!(encoded(&result(&not_found)), encoded(&result(&conflict)));
    let plan = FaultPlan::none().with(FaultKind::StaleCache, 0.25);
    let other = FaultPlan::none().with(FaultKind::StaleCache, 0.26);
    assert_ne!(encoded(&Record::Heal { faults: &plan }), encoded(&Record::Heal { faults: &other }));
}

#[test]
fn a_plans_rates_are_digested_as_it_prints_them() {
    let mut rate = 0.0f64;
    let mut rates = vec![0.0, 0.005, 0.015, 0.125, 0.135, 0.145, 0.5, 0.995, 0.999, 1.0, f64::MIN_POSITIVE, 1e-300];
    for _ in 0..10_000 {
        rate = (rate + 0.000_123_456_7) % 1.0;
        rates.push(rate);
    }
    for rate in rates {
        let printed = format!("{rate:.2}");
        let expected: u64 = printed.replace('.', "").parse().unwrap();
        assert_eq!(hundredths(rate), expected, "{rate:e} prints {printed}");
    }
    // Two plans that print alike, with kinds in either order, digest alike.
    let a = FaultPlan::none().with(FaultKind::StaleCache, 0.251).with(FaultKind::WatchGone, 0.1);
    let b = FaultPlan::none().with(FaultKind::WatchGone, 0.1).with(FaultKind::StaleCache, 0.249);
    assert_eq!(a.describe(), b.describe());
    assert_eq!(encoded(&Record::Heal { faults: &a }), encoded(&Record::Heal { faults: &b }));
}

#[test]
fn integers_are_leb128_and_zigzag() {
    let bytes = |f: &dyn Fn(&mut Encoder)| {
        let mut out = Encoder::default();
        f(&mut out);
        out.bytes().to_vec()
    };
    assert_eq!(bytes(&|o| o.u64(0)), [0]);
    assert_eq!(bytes(&|o| o.u64(127)), [0x7f]);
    assert_eq!(bytes(&|o| o.u64(128)), [0x80, 0x01]);
    assert_eq!(bytes(&|o| o.u64(300)), [0xac, 0x02]);
    assert_eq!(bytes(&|o| o.u64(u64::MAX)), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert_eq!(bytes(&|o| o.i64(0)), [0]);
    assert_eq!(bytes(&|o| o.i64(-1)), [1]);
    assert_eq!(bytes(&|o| o.i64(1)), [2]);
    assert_eq!(bytes(&|o| o.i64(137)), [0x92, 0x02]);
    assert_eq!(bytes(&|o| o.i64(i64::MIN)).len(), 10);
}
