//! Tests of the trace's records: they render as the trace's lines always read.

#![allow(clippy::unwrap_used)]

use super::*;
use drydock_engine::api::container::CopiedFile;
use drydock_engine::api::logical::LogicalMode;
use drydock_engine::api::{Object, ObjectKey, ObjectMeta};
use drydock_engine::logs::{Channel, Source, Subject};
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, ImageBuild, ImageInfo, NetworkCreate, NetworkInfo,
    RuntimeError, RuntimeEvent, RuntimeReply, RuntimeRequest, VolumeCreate, VolumeInfo,
};
use drydock_engine::store::{DeleteOptions, EventType, Propagation, StoreError, StoreReply, StoreRequest};
use drydock_engine::{MonoTime, OpId, WallTime};
use drydock_faults::{FaultKind, FaultPlan};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const ID: &str = "3f2a9c81d0e4b7a65c1e22f0aa9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b";

fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([("drydock.dev/owner-uid".to_string(), ID.to_string()), ("tier".to_string(), "web".to_string())])
}

/// One request of every kind.
pub(super) fn runtime_requests() -> Vec<RuntimeRequest> {
    let file: CopiedFile =
        serde_json::from_value(serde_json::json!({"destination": "/etc/a", "contents": "x"})).unwrap();
    let create = ContainerCreate { name: "ns-web".into(), image: "nginx:1.27".into(), ..Default::default() };
    let build = ImageBuild { context: "/ctx/app".into(), tag: "app:dev".into(), ..Default::default() };
    vec![
        RuntimeRequest::CreateContainer(create),
        RuntimeRequest::StartContainer { id: ID.into() },
        RuntimeRequest::StopContainer { id: ID.into(), timeout_secs: 10 },
        RuntimeRequest::RemoveContainer { id: ID.into(), force: true },
        RuntimeRequest::InspectContainer { id: "ns-web".into() },
        RuntimeRequest::ListContainers { labels: labels() },
        RuntimeRequest::InspectImage { reference: "nginx:1.27".into() },
        RuntimeRequest::PullImage { reference: "docker.io/library/nginx:1.27".into() },
        RuntimeRequest::RemoveImage { reference: "nginx".into(), force: false },
        RuntimeRequest::ContainerEvents { id: ID.into(), since: WallTime(5) },
        RuntimeRequest::CopyFiles { id: ID.into(), files: vec![file.clone(), file] },
        RuntimeRequest::BuildImage(build),
        RuntimeRequest::CreateNetwork(NetworkCreate { name: "ns-net".into(), labels: labels() }),
        RuntimeRequest::InspectNetwork { id: ID.into() },
        RuntimeRequest::ListNetworks { labels: labels() },
        RuntimeRequest::RemoveNetwork { id: "ns-net".into() },
        RuntimeRequest::ConnectNetwork { network: ID.into(), container: "ns-web".into(), aliases: vec!["web".into()] },
        RuntimeRequest::DisconnectNetwork { network: "ns-net".into(), container: ID.into() },
        RuntimeRequest::CreateVolume(VolumeCreate { name: "ns-data".into(), labels: BTreeMap::new() }),
        RuntimeRequest::InspectVolume { name: "ns-data".into() },
        RuntimeRequest::ListVolumes { labels: BTreeMap::new() },
        RuntimeRequest::RemoveVolume { name: "ns-data".into() },
    ]
}

fn object(kind: &str, namespace: Option<&str>, name: &str, resource_version: u64) -> Object {
    let mut meta = ObjectMeta::named(namespace, name);
    meta.resource_version = resource_version;
    Object::new(kind, meta, serde_json::json!({}))
}

/// One request of every kind.
pub(super) fn store_requests() -> Vec<StoreRequest> {
    let pc = || object("PhysicalContainer", Some("ns"), "web", 12);
    vec![
        StoreRequest::Get { key: ObjectKey::namespaced("Lease", "ns", "pull-1") },
        StoreRequest::List { kind: Some("Namespace".into()), namespace: None },
        StoreRequest::List { kind: None, namespace: Some("ns".into()) },
        StoreRequest::Create { object: object("Namespace", None, "ns", 0) },
        StoreRequest::Update { object: pc() },
        StoreRequest::UpdateStatus { object: pc() },
        StoreRequest::Delete { key: ObjectKey::cluster("Namespace", "ns"), options: DeleteOptions::default() },
    ]
}

fn distinct_kinds<T>(items: &[T]) -> usize {
    let kinds: Vec<_> = items.iter().map(std::mem::discriminant).collect();
    let mut unique = Vec::new();
    for kind in kinds {
        if !unique.contains(&kind) {
            unique.push(kind);
        }
    }
    unique.len()
}

#[test]
fn runtime_and_store_requests_render_as_they_describe_themselves() {
    let runtime = runtime_requests();
    assert_eq!(distinct_kinds(&runtime), 22, "one request of every kind");
    for request in &runtime {
        assert_eq!(RuntimeOp::from(request).to_string(), request.describe());
    }
    let store = store_requests();
    assert_eq!(distinct_kinds(&store), 6, "one request of every kind");
    for request in &store {
        assert_eq!(StoreOp::from(request).to_string(), request.describe());
    }
}

#[test]
fn results_render_as_the_lines_did() {
    let container = ContainerInfo {
        id: ID.into(),
        name: "ns-web".into(),
        image: "nginx".into(),
        labels: Arc::new(BTreeMap::new()),
        state: ContainerState::Running,
        exit_code: None,
        error: None,
        ports: Vec::new(),
    };
    let event = RuntimeEvent {
        container_id: ID.into(),
        action: EventAction::Start,
        time: WallTime(1),
        labels: Arc::new(BTreeMap::new()),
    };
    let network = NetworkInfo { id: ID.into(), name: "ns-net".into(), labels: BTreeMap::new(), containers: vec![] };
    let volume = VolumeInfo { name: "ns-data".into(), labels: BTreeMap::new() };
    let cases: Vec<(RuntimeResult, &str)> = vec![
        (Ok(RuntimeReply::Created { id: ID.into() }), "created 3f2a9c81d0e4"),
        (Ok(RuntimeReply::Done), "ok"),
        (Ok(RuntimeReply::Container(container.clone())), "3f2a9c81d0e4 running"),
        (Ok(RuntimeReply::Containers(vec![container.clone(), container])), "2 containers"),
        (Ok(RuntimeReply::Image(ImageInfo { id: format!("sha256:{ID}"), tags: vec![] })), "image sha256:3f2a9"),
        (Ok(RuntimeReply::Events(vec![event.clone(), event.clone(), event])), "3 events"),
        (Ok(RuntimeReply::Pulled { progress: vec!["a".into()] }), "pulled (1 progress lines)"),
        (Ok(RuntimeReply::Built { progress: vec![] }), "built (0 progress lines)"),
        (Ok(RuntimeReply::Network(network.clone())), "network 3f2a9c81d0e4 ns-net"),
        (Ok(RuntimeReply::Networks(vec![network])), "1 networks"),
        (Ok(RuntimeReply::Volume(volume.clone())), "volume ns-data"),
        (Ok(RuntimeReply::Volumes(vec![volume])), "1 volumes"),
        (Err(RuntimeError::Uncertain("reset".into())), "Uncertain"),
    ];
    for (result, line) in &cases {
        assert_eq!(Record::RuntimeResult(result.into()).to_string(), format!(" -> {line}"));
    }
    let stored: StoreResult = Ok(StoreReply::Object(Arc::new(object("Namespace", None, "a", 7))));
    assert_eq!(Record::StoreResult((&stored).into()).to_string(), " -> ok rv=7");
    let listed: StoreResult = Ok(StoreReply::Objects(vec![]));
    assert_eq!(Record::StoreResult((&listed).into()).to_string(), " -> ok 0 objects");
    let failed: StoreResult = Err(StoreError::NotFound { key: "Namespace/a".into() });
    assert_eq!(Record::StoreResult((&failed).into()).to_string(), " -> NotFound");
}

type RuntimeResult = drydock_engine::runtime::RuntimeResult;
type StoreResult = drydock_engine::store::StoreResult;

#[test]
fn records_render_as_the_lines_did() {
    with_records(|cases| {
        for (record, line) in cases {
            assert_eq!(record.to_string(), *line);
        }
    });
}

/// Records of every kind (and of every variant of their parts), with the words they always
/// printed, handed to `check`.
pub(super) fn with_records(check: impl FnOnce(&[(Record<'_>, &str)])) {
    let key = Key::new("LogicalContainer", Some("p-app"), "db-2");
    let ns = Key::new("Namespace", None, "ns-0");
    let patch = serde_json::json!({"replicas": 3});
    let die = EventAction::Die { exit_code: Some(137) };
    let plan = FaultPlan::default();
    let skipped = crate::workload::ExternalOp::RemoveContainer { name: "web".into() };
    let unknown = Source::parse("Namespace", "stdout").unwrap_err();
    let subject = Subject::Container(ID.into());
    let (at, id) = (MonoTime(1_500_000_000), OpId(12));
    let pull = RuntimeRequest::PullImage { reference: "nginx".into() };
    let digest = format!("sha256:{ID}");
    let cases: Vec<(Record<'_>, &str)> = vec![
        (Record::StoreApply { process: 0, id, op: StoreOp::Create { key: ns } }, "p0 store #12 create Namespace/ns-0"),
        (Record::StoreReply { process: 1, id }, "p1 store-reply #12"),
        (Record::RuntimeApply { process: 0, id, op: (&pull).into() }, "p0 runtime #12 pull nginx"),
        (
            Record::RuntimeCancelled { process: 0, id, op: (&pull).into() },
            "p0 runtime #12 cancelled before it applied: pull nginx",
        ),
        (Record::RuntimeReply { process: 0, id }, "p0 runtime-reply #12"),
        (
            Record::RuntimeEvent { process: 1, action: &die, container: ID },
            "p1 runtime-event Die { exit_code: Some(137) } 3f2a9c81d0e4",
        ),
        (Record::RuntimeEventLost { process: 1 }, "p1 runtime event lost with its stream"),
        (Record::RuntimeResync { process: 0 }, "p0 runtime-resync"),
        (Record::RuntimeResyncLost { process: 0 }, "p0 runtime resync lost with its stream"),
        (Record::RemovalDone { container: ID, done: true }, "runtime removal of 3f2a9c81d0e4 done"),
        (Record::RemovalDone { container: ID, done: false }, "runtime removal of 3f2a9c81d0e4 was over"),
        (Record::RuntimeClock { ended: 2 }, "runtime clock: 2 main processes ended by themselves"),
        (
            Record::Deliver { process: 0, event: EventType::Added, key: ns, resource_version: 1 },
            "p0 deliver Added Namespace/ns-0 rv=1",
        ),
        (
            Record::DeliveryLost { process: 0, key },
            "p0 delivery lost with its watch stream: LogicalContainer/p-app/db-2",
        ),
        (
            Record::Coalesced { process: 0, key: ns, resource_version: 4 },
            "p0 [fault coalesced-watch] Namespace/ns-0 rv=4 merged into the next event",
        ),
        (Record::Wake { process: 0 }, "p0 wake"),
        (Record::Restart { process: 1, life: 2 }, "p1 restarts (life 2) and lists the store"),
        (Record::Relist { process: 1 }, "p1 relists after Gone"),
        (Record::RelistDropped { process: 1 }, "p1 relist dropped (the process restarted meanwhile)"),
        (Record::Listed { objects: 9, resource_version: 30 }, " (9 objects at rv=30)"),
        (Record::Client(ClientAct::Create { key: ns }), "client create Namespace/ns-0"),
        (
            Record::Client(ClientAct::CreateImage { key, image: "nginx:1.27" }),
            "client create LogicalContainer/p-app/db-2 nginx:1.27",
        ),
        (
            Record::Client(ClientAct::CreateLogical { key, mode: LogicalMode::Persistent }),
            "client create LogicalContainer/p-app/db-2 mode=Persistent",
        ),
        (
            Record::Client(ClientAct::Delete { key: ns, propagation: Propagation::Background }),
            "client delete Namespace/ns-0",
        ),
        (
            Record::Client(ClientAct::Delete { key, propagation: Propagation::Foreground }),
            "client delete LogicalContainer/p-app/db-2 (foreground)",
        ),
        (
            Record::Client(ClientAct::Delete { key, propagation: Propagation::Orphan }),
            "client delete LogicalContainer/p-app/db-2 (orphan)",
        ),
        (Record::Client(ClientAct::Stop { key }), "client stop LogicalContainer/p-app/db-2"),
        (Record::Client(ClientAct::Update { key }), "client update LogicalContainer/p-app/db-2"),
        (
            Record::Client(ClientAct::Patch { key, patch: &patch }),
            "client patch LogicalContainer/p-app/db-2 {\"replicas\":3}",
        ),
        (
            Record::ExternalSkipped { op: &skipped, fault: FaultKind::ExternalRemoval },
            "external RemoveContainer { name: \"web\" } skipped: fault external-removal is off",
        ),
        (
            Record::External(ExternalAct::RemoveContainer { name: "web", outcome: Ok(()) }),
            "external docker rm -f web -> removing",
        ),
        (
            Record::External(ExternalAct::RemoveContainer { name: "web", outcome: Err("NotFound") }),
            "external docker rm -f web -> refused",
        ),
        (
            Record::External(ExternalAct::CreateContainer { name: "web", image: "busybox", outcome: Err("Conflict") }),
            "external docker create --name web busybox -> failed",
        ),
        (
            Record::External(ExternalAct::RemoveImage { reference: "nginx", outcome: Ok(()) }),
            "external docker rmi -f nginx -> removed",
        ),
        (
            Record::External(ExternalAct::HoldLease { name: "pull-1", seconds: 30 }),
            "external hold lease pull-1 for 30s",
        ),
        (
            Record::External(ExternalAct::LeaseHeld { name: "pull-1", holder: "engine-0" }),
            "external hold lease pull-1: held by engine-0, not taken",
        ),
        (
            Record::External(ExternalAct::CreateNetwork { name: "n", outcome: Ok(()) }),
            "external docker network create n -> ok",
        ),
        (
            Record::External(ExternalAct::RemoveNetwork { name: "n", outcome: Err("Conflict") }),
            "external docker network rm n -> refused (Conflict)",
        ),
        (
            Record::External(ExternalAct::CreateVolume { name: "v", outcome: Ok(()) }),
            "external docker volume create v -> ok",
        ),
        (
            Record::External(ExternalAct::RemoveVolume { name: "v", outcome: Err("NotFound") }),
            "external docker volume rm v -> refused (NotFound)",
        ),
        (
            Record::External(ExternalAct::WriteContext { dir: "/ctx", files: 2 }),
            "external: build context /ctx written (2 files)",
        ),
        (
            Record::External(ExternalAct::RemoveOwn { name: "s", outcome: Ok(()) }),
            "external docker rm -f s (its own) -> ok",
        ),
        (
            Record::External(ExternalAct::RunUsing { name: "s", network: Some("n"), volume: None, outcome: Ok(()) }),
            "external docker run --name s network=n volume=- -> ok",
        ),
        (
            Record::External(ExternalAct::Push { reference: "nginx:1.27", digest: &digest }),
            "external push nginx:1.27 -> 3f2a9c81d0e4",
        ),
        (
            Record::External(ExternalAct::Leftover {
                creator: "engine-1",
                retained: true,
                container: "ns-x",
                outcome: Ok(()),
            }),
            "external leftover of engine-1 (retained) ns-x -> created",
        ),
        (
            Record::External(ExternalAct::LeftoverSkipped { namespace: "ns", name: "x" }),
            "external leftover ns-x skipped: no namespace ns",
        ),
        (
            Record::Reader { reader: 3, step: ReaderStep::Opens { key, source: "stdout", follow: true } },
            "client reads LogicalContainer/p-app/db-2 stdout -f (reader 3)",
        ),
        (
            Record::Reader { reader: 3, step: ReaderStep::Opens { key, source: "system", follow: false } },
            "client reads LogicalContainer/p-app/db-2 system (reader 3)",
        ),
        (Record::Reader { reader: 3, step: ReaderStep::Closes }, "reader 3 closes its stream"),
        (
            Record::Reader { reader: 3, step: ReaderStep::NotFound { key } },
            "reader 3: LogicalContainer/p-app/db-2 not found",
        ),
        (
            Record::Reader { reader: 3, step: ReaderStep::Refused { error: &unknown } },
            "reader 3: Namespace has no log source \"stdout\": the sources are system",
        ),
        (
            Record::Reader {
                reader: 3,
                step: ReaderStep::Lines { first: 1, last: 4, subject: &subject, channel: Channel::Stderr, missed: 0 },
            },
            "reader 3: lines 1..=4 of container 3f2a9c81d0e4 Stderr",
        ),
        (
            Record::Reader {
                reader: 3,
                step: ReaderStep::Lines { first: 9, last: 9, subject: &subject, channel: Channel::Stdout, missed: 5 },
            },
            "reader 3: lines 9..=9 of container 3f2a9c81d0e4 Stdout (5 missed)",
        ),
        (Record::Reader { reader: 3, step: ReaderStep::Waiting }, "reader 3: waiting"),
        (Record::Reader { reader: 3, step: ReaderStep::End }, "reader 3: end of stream"),
        (Record::Heal { faults: &plan }, "heal faults=none"),
        (Record::Judge, "liveness judge"),
        (Record::Fault(Fault::StoreConflict), " [fault store-conflict]"),
        (Record::Fault(Fault::StoreReplyLost), " [fault uncertain-store-write: reply lost]"),
        (
            Record::Fault(Fault::SlowRuntime { id, takes: Duration::from_micros(1_234_567) }),
            " [fault slow-runtime: #12 takes 1.234567s]",
        ),
        (Record::Fault(Fault::DaemonRestarting), " [daemon restarting: not applied]"),
        (Record::Fault(Fault::HungUnapplied), " [fault hung-runtime: never applied, never answered]"),
        (Record::Fault(Fault::HungApplied), " [fault hung-runtime: applied, never answered]"),
        (Record::Fault(Fault::TransientRuntimeError), " [fault transient-runtime-error: not applied]"),
        (Record::Fault(Fault::NotFoundAfterCreate), " [fault notfound-after-create]"),
        (
            Record::Fault(Fault::BuildInterrupted { applied: Some(false) }),
            " [fault build-interrupted: applied (false), stream broken]",
        ),
        (
            Record::Fault(Fault::BuildInterrupted { applied: None }),
            " [fault build-interrupted: broken off halfway, nothing tagged]",
        ),
        (Record::Fault(Fault::CopyRefused { written: 1, files: 3 }), " [fault copy-refused: 1 of 3 file(s) written]"),
        (Record::Fault(Fault::UncertainCreate), " [fault uncertain-create: reply lost]"),
        (Record::Fault(Fault::CreateCompletesLater), " [the create completes later: name held, container unlisted]"),
        (Record::Fault(Fault::UncertainRemove), " [fault uncertain-remove: reply lost]"),
        (
            Record::Fault(Fault::DisruptScheduled { disruption: Disruption::RemoveImage("nginx"), at }),
            " [fault disrupt-while-uncertain: RemoveImage(\"nginx\") at 1.500000s]",
        ),
        (
            Record::Fault(Fault::DisruptScheduled { disruption: Disruption::RestartDaemon, at }),
            " [fault disrupt-while-uncertain: RestartDaemon at 1.500000s]",
        ),
        (Record::Fault(Fault::Disrupts), "[fault disrupt-while-uncertain] "),
        (
            Record::Fault(Fault::RuntimeRestart { stopped: 4, back_at: at }),
            "[fault runtime-restart: 4 containers stopped, daemon back at 1.500000s] ",
        ),
        (
            Record::Fault(Fault::Crash { kind: FaultKind::CrashBetweenWrites, process: 1, restarts_at: at }),
            " [fault crash-between-writes: p1 crashed, restarts at 1.500000s]",
        ),
        (Record::Fault(Fault::WatchGone { process: 0 }), " [fault watch-gone: p0's watch answered 410 Gone]"),
        (
            Record::Fault(Fault::ReaderStall { reader: 2, stall: Duration::from_millis(1500) }),
            "[fault reader-stall] reader 2 stops reading for 1.5s",
        ),
    ];
    check(&cases);
}
