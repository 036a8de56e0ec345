//! Every built-in invariant against a hand-built violating case and a near miss. Invariants that
//! keep history are driven through the happenings they observe, as the world would.

#![allow(clippy::unwrap_used)]

use super::builtin;
use crate::checker::{Checker, Happening, Invariant, View, check_all};
use crate::facts::Facts;
use crate::runtime::SimRuntime;
use drydock_engine::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalContainerStatus, LogicalMode};
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, ContainerImageStatus, ImagePhase, Lease, LeaseSpec, Namespace, NamespaceSpec,
    Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus, Resource, names,
};
use drydock_engine::runtime::{ContainerCreate, ContainerInfo, ContainerState, RuntimeReply, RuntimeRequest};
use drydock_engine::store::{DeleteOptions, Registry, Store, StoreConfig, StoreReply, StoreRequest};
use drydock_engine::{OpId, WallTime};
use std::sync::Arc;

/// A store with namespace `ns`, a runtime, the world's facts, and one instance of every invariant.
struct Fixture {
    store: Store,
    runtime: SimRuntime,
    facts: Facts,
    checker: Checker,
    logs: crate::logs::Logs,
    ns_uid: String,
}

impl Fixture {
    fn new() -> Self {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let ns = store
            .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
            .unwrap();
        Fixture {
            store,
            runtime: SimRuntime::new(1),
            facts: Facts::default(),
            checker: Checker::builtin(),
            logs: crate::logs::Logs::default(),
            ns_uid: ns.metadata.uid.0.clone(),
        }
    }

    fn view(&self) -> View<'_> {
        View { store: &self.store, runtime: &self.runtime, facts: &self.facts, logs: &self.logs, now: WallTime(0) }
    }

    fn observe(&mut self, happening: Happening<'_>) {
        let view =
            View { store: &self.store, runtime: &self.runtime, facts: &self.facts, logs: &self.logs, now: WallTime(0) };
        self.checker.observe(&view, &happening);
    }

    /// The invariant the checker reports first, if any.
    fn violated(&self) -> Option<String> {
        self.checker.check(&self.view()).map(|(name, _)| name.to_string())
    }

    fn message(&self) -> String {
        self.checker.check(&self.view()).map(|(_, message)| message).unwrap_or_default()
    }

    /// A physical container recording runtime container `id`.
    fn pc(&mut self, name: &str, spec: PhysicalContainerSpec, id: &str) -> Arc<Object> {
        let created = self
            .store
            .create(WallTime(1), Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap();
        let mut next = (*created).clone();
        next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
            runtime_id: Some(id.into()),
            ..Default::default()
        });
        self.store.update_status(next).unwrap()
    }

    fn logical(&mut self, name: &str, mode: LogicalMode) -> Arc<Object> {
        let spec = match mode {
            LogicalMode::Existing => {
                LogicalContainerSpec { mode, container_name: Some(format!("{name}-1")), ..Default::default() }
            }
            _ => LogicalContainerSpec { mode, image: Some("busybox".into()), ..Default::default() },
        };
        self.store
            .create(WallTime(1), Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap()
    }

    fn container(&mut self, id: &str, labels: &[(&str, &str)]) -> ContainerInfo {
        let info = ContainerInfo {
            ports: Vec::new(),
            id: id.into(),
            name: format!("name-{id}"),
            image: "busybox".into(),
            labels: std::sync::Arc::new(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            state: ContainerState::Running,
            exit_code: None,
            error: None,
        };
        self.runtime.insert(info.clone());
        info
    }

    /// A container drydock created for physical container `pc`.
    fn ours(&mut self, id: &str, pc: &Object, extra: &[(&str, &str)]) -> ContainerInfo {
        let (uid, ns_uid) = (pc.metadata.uid.0.clone(), self.ns_uid.clone());
        let mut labels = vec![
            (names::LABEL_OWNER_UID, uid.as_str()),
            (names::LABEL_NAMESPACE, "ns"),
            (names::LABEL_NAMESPACE_UID, ns_uid.as_str()),
            (names::LABEL_CREATOR, "engine-0"),
        ];
        labels.extend_from_slice(extra);
        self.container(id, &labels)
    }

    /// The runtime applied `request` successfully (a create answers with a fresh id).
    fn applied(&mut self, id: u64, request: &RuntimeRequest, removed: Option<&ContainerInfo>) {
        let result = match request {
            RuntimeRequest::CreateContainer(_) => Ok(RuntimeReply::Created { id: format!("new-{id}") }),
            _ => Ok(RuntimeReply::Done),
        };
        self.observe(Happening::RuntimeApplied { process: 0, id: OpId(id), request, result: &result, removed });
    }

    /// A store request applied with its result as the store gives it.
    fn store_applied(&mut self, request: StoreRequest) {
        let result = self.store.execute(WallTime(2), request.clone());
        self.observe(Happening::StoreApplied { process: 0, request: &request, result: &result });
    }
}

fn busybox() -> PhysicalContainerSpec {
    PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() }
}

fn create(name: &str, labels: &[(&str, &str)]) -> RuntimeRequest {
    RuntimeRequest::CreateContainer(ContainerCreate {
        name: name.into(),
        image: "busybox".into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    })
}

#[test]
fn every_built_in_invariant_holds_in_an_empty_world() {
    let fixture = Fixture::new();
    assert_eq!(fixture.violated(), None);
    assert_eq!(check_all(&fixture.view()), None);
    assert_eq!(builtin().len(), super::InvariantId::ALL.len());
}

// --- runtime containers, ownership, cleanup --------------------------------------------------

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
fn retained_containers_may_outlive_their_object_and_namespace() {
    let mut w = Fixture::new();
    w.container(
        "kept",
        &[(names::LABEL_OWNER_UID, "gone"), (names::LABEL_NAMESPACE_UID, "gone-ns"), (names::LABEL_RETAIN, "true")],
    );
    assert_eq!(w.violated(), None);
    w.container("leaked", &[(names::LABEL_OWNER_UID, "gone-2")]);
    assert_eq!(w.violated().as_deref(), Some("finalizer-after-runtime-cleanup"));
}

#[test]
fn a_physical_container_leaving_the_store_with_an_operation_in_flight_is_caught() {
    for in_flight in [false, true] {
        let mut w = Fixture::new();
        let pc = w.pc("a", busybox(), "c1");
        if in_flight {
            let start = RuntimeRequest::StartContainer { id: "c1".into() };
            w.facts.in_flight.send(0, OpId(1), &start, Some(pc.metadata.uid.0.clone()));
        }
        w.store_applied(StoreRequest::Delete { key: pc.key(), options: DeleteOptions::default() });
        let want = in_flight.then_some("finalizer-after-runtime-cleanup");
        assert_eq!(w.violated().as_deref(), want, "in flight: {in_flight}");
    }
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

#[test]
fn deleting_an_image_while_containers_remain_in_a_terminating_namespace_is_caught() {
    let mut w = Fixture::new();
    let pc = w.pc("web", busybox(), "c1");
    let spec = ContainerImageSpec { image: "busybox".into(), ..Default::default() };
    let image =
        w.store.create(WallTime(1), Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), "img"), &spec));
    let image = image.unwrap();
    let mut ns = (**w.store.get(&ObjectKey::cluster(Namespace::KIND, "ns")).unwrap()).clone();
    ns.metadata.finalizers.push("test/hold".into());
    w.store.update(ns).unwrap();
    w.store.delete(WallTime(2), &ObjectKey::cluster(Namespace::KIND, "ns"), &DeleteOptions::default()).unwrap();
    let delete = |key: ObjectKey| StoreRequest::Delete { key, options: DeleteOptions::default() };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &delete(pc.key()) });
    assert_eq!(w.violated(), None, "containers first is the order");
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &delete(image.key()) });
    assert_eq!(w.violated().as_deref(), Some("namespace-cleanup-order"));
}

#[test]
fn releasing_a_namespace_finalizer_while_a_child_remains_is_caught() {
    let mut w = Fixture::new();
    let key = ObjectKey::cluster(Namespace::KIND, "ns");
    let mut ns = (**w.store.get(&key).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    let ns = w.store.update(ns).unwrap();
    w.pc("web", busybox(), "c1");
    let mut released = (*ns).clone();
    released.metadata.finalizers.retain(|f| f != names::FINALIZER_NAMESPACE);
    let release = StoreRequest::Update { object: released };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &release });
    assert_eq!(w.violated().as_deref(), Some("namespace-released-empty"));
    assert!(w.message().contains("PhysicalContainer"), "{}", w.message());

    let mut w = Fixture::new();
    let mut ns = (**w.store.get(&key).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    let ns = w.store.update(ns).unwrap();
    let mut released = (*ns).clone();
    released.metadata.finalizers.clear();
    w.observe(Happening::StoreApplying {
        process: 0,
        id: OpId(0),
        request: &StoreRequest::Update { object: released },
    });
    assert_eq!(w.violated(), None, "an empty namespace may go");
}

// --- images, pulls, leases -------------------------------------------------------------------

fn image(w: &mut Fixture, name: &str, limit: u32, status: ContainerImageStatus) -> Arc<Object> {
    let spec = ContainerImageSpec { image: "busybox".into(), pull_retry_limit: limit, ..Default::default() };
    let created = w
        .store
        .create(WallTime(1), Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), name), &spec))
        .unwrap();
    let mut next = (*created).clone();
    next.set_status::<ContainerImage>(&status);
    w.store.update_status(next).unwrap()
}

#[test]
fn two_pulls_of_one_normalized_reference_in_flight_are_caught() {
    let mut w = Fixture::new();
    let pull = |reference: &str| RuntimeRequest::PullImage { reference: reference.into() };
    w.facts.in_flight.send(0, OpId(1), &pull("busybox"), None);
    assert_eq!(w.violated(), None, "one is fine");
    w.facts.in_flight.send(1, OpId(7), &pull("docker.io/library/busybox:latest"), None);
    assert_eq!(w.violated().as_deref(), Some("single-pull-per-ref"));
    assert!(w.message().contains("2 pulls"));
    w.facts.in_flight.applied(0, OpId(1));
    assert_eq!(w.violated(), None, "an applied pull is no longer in flight");
}

#[test]
fn two_live_lease_holders_are_caught_but_an_expired_one_is_not() {
    let mut w = Fixture::new();
    w.facts.leases.insert("pull-abc", "engine-0/a", WallTime(1_000));
    w.facts.leases.insert("pull-abc", "engine-1/b", WallTime(5_000));
    let at = |w: &Fixture, now: u64| {
        let view = View { now: WallTime(now), ..w.view() };
        w.checker.check(&view).map(|(name, _)| name.to_string())
    };
    assert_eq!(at(&w, 1_000), None, "the first expired at 1000");
    assert_eq!(at(&w, 999).as_deref(), Some("lease-exclusive"));
}

/// Judged by what changed, as the world judges after every event: a second live claim is
/// caught when its lease is written; a change elsewhere does not look at leases again (time only
/// ends claims), and pruning keeps live claims.
#[test]
fn a_second_live_lease_holder_is_caught_when_the_lease_is_written() {
    let mut w = Fixture::new();
    let judge = |w: &mut Fixture, now: u64| {
        let journal = w.runtime.take_journal();
        let view = View { store: &w.store, runtime: &w.runtime, facts: &w.facts, logs: &w.logs, now: WallTime(now) };
        w.checker.check_changes(&view, &journal).map(|(name, _)| name.to_string())
    };
    assert_eq!(judge(&mut w, 0), None, "the first check judges everything");
    let spec = |holder: &str| LeaseSpec {
        key: "busybox".into(),
        holder: Some(holder.into()),
        renew_time: Some(WallTime(1)),
        duration_ms: 5_000,
        ..Default::default()
    };
    let lease = Object::from_spec::<Lease>(ObjectMeta::named(None, "pull-abc"), &spec("engine-0/a"));
    let lease = w.store.create(WallTime(1), lease).unwrap();
    w.facts.leases.record(&lease, 0);
    assert_eq!(judge(&mut w, 2), None, "one holder");
    let mut taken = (*lease).clone();
    taken.spec = Arc::new(serde_json::to_value(spec("engine-1/b")).unwrap());
    let taken = w.store.update(taken).unwrap();
    assert!(w.facts.leases.record(&taken, 0), "a take-over");
    w.facts.leases.prune(WallTime(3));
    assert_eq!(judge(&mut w, 3).as_deref(), Some("lease-exclusive"), "two live holders after the write");
}

#[test]
fn a_pinned_id_that_changes_is_caught() {
    let mut w = Fixture::new();
    let ready =
        |id: &str| ContainerImageStatus { phase: ImagePhase::Ready, image_id: Some(id.into()), ..Default::default() };
    let pinned = image(&mut w, "img", 3, ready("sha256:aaa"));
    w.observe(Happening::ClientWrote { object: &pinned });
    assert_eq!(w.violated(), None);
    let mut repinned = (*pinned).clone();
    repinned.set_status::<ContainerImage>(&ready("sha256:bbb"));
    w.store_applied(StoreRequest::UpdateStatus { object: repinned });
    assert_eq!(w.violated().as_deref(), Some("pinned-image-stable"));
    assert!(w.message().contains("pinned sha256:aaa"));
}

#[test]
fn pull_attempts_over_the_limit_are_caught_in_status_and_in_total() {
    let mut w = Fixture::new();
    let img = image(&mut w, "img", 0, ContainerImageStatus { pull_attempts: 1, ..Default::default() });
    w.observe(Happening::ClientWrote { object: &img });
    let issuer = img.key();
    let pull = RuntimeRequest::PullImage { reference: "docker.io/library/busybox".into() };
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &pull, issuer: &issuer });
    assert_eq!(w.violated(), None, "limit 0 allows exactly one");
    w.observe(Happening::RuntimeSent { process: 1, id: OpId(2), request: &pull, issuer: &issuer });
    assert_eq!(w.violated().as_deref(), Some("pull-attempts-within-limit"));
    assert!(w.message().contains("2 pulls"));

    let mut w = Fixture::new();
    image(&mut w, "img", 1, ContainerImageStatus { pull_attempts: 3, ..Default::default() });
    assert!(w.message().contains("3 pull attempts"), "{}", w.message());
}

// --- logical containers ----------------------------------------------------------------------

#[test]
fn two_runtime_containers_for_one_logical_container_are_caught() {
    let mut w = Fixture::new();
    let uid = w.logical("web", LogicalMode::Session).metadata.uid.0.clone();
    w.container("a", &[(names::LABEL_LOGICAL_UID, &uid)]);
    assert_eq!(w.violated(), None);
    w.container("b", &[(names::LABEL_LOGICAL_UID, &uid)]);
    assert_eq!(w.violated().as_deref(), Some("single-backing"));
}

#[test]
fn a_session_container_without_its_logical_container_is_caught_a_retained_one_is_not() {
    let mut w = Fixture::new();
    w.container("kept", &[(names::LABEL_LOGICAL_UID, "gone"), (names::LABEL_RETAIN, "true")]);
    assert_eq!(w.violated(), None);
    w.container("leaked", &[(names::LABEL_LOGICAL_UID, "gone-too")]);
    assert_eq!(w.violated().as_deref(), Some("session-never-outlives-owner"));
}

#[test]
fn removing_a_matching_container_to_create_it_again_is_caught() {
    for wanted in ["key-1", "key-2"] {
        let mut w = Fixture::new();
        let labels = [(names::LABEL_LIFECYCLE_KEY.to_string(), wanted.to_string())].into();
        let spec = PhysicalContainerSpec { labels, ..busybox() };
        let remover = w.store.create(
            WallTime(1),
            Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), "web-backing"), &spec),
        );
        let remover = remover.unwrap();
        let old = w.container("old", &[(names::LABEL_CREATOR, "engine-0"), (names::LABEL_LIFECYCLE_KEY, "key-1")]);
        let remove = RuntimeRequest::RemoveContainer { id: "old".into(), force: true };
        w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &remove, issuer: &remover.key() });
        w.applied(1, &remove, Some(&old));
        w.applied(2, &create(&old.name, &[(names::LABEL_LIFECYCLE_KEY, "key-1")]), None);
        let want = (wanted == "key-1").then_some("persistent-reuse");
        assert_eq!(w.violated().as_deref(), want, "replacing for {wanted}");
    }
}

#[test]
fn a_persistent_logical_container_creating_twice_is_caught_unless_the_first_was_never_recorded() {
    for recorded in [true, false] {
        let mut w = Fixture::new();
        let uid = w.logical("db", LogicalMode::Persistent).metadata.uid.0.clone();
        let request = create("ns-db", &[(names::LABEL_LOGICAL_UID, &uid)]);
        w.applied(1, &request, None);
        if !recorded {
            // Removed outside drydock before anything recorded it: the next create is a first.
            let first = w.container("first", &[(names::LABEL_LOGICAL_UID, &uid)]);
            w.observe(Happening::ExternallyRemoved { container: &first });
        }
        w.applied(2, &request, None);
        let want = recorded.then_some("persistent-replace-once");
        assert_eq!(w.violated().as_deref(), want, "recorded: {recorded}");
    }
}

#[test]
fn an_existing_mode_logical_container_creating_is_caught() {
    let mut w = Fixture::new();
    let uid = w.logical("ext", LogicalMode::Existing).metadata.uid.0.clone();
    w.applied(1, &create("ns-ext", &[(names::LABEL_LOGICAL_UID, &uid)]), None);
    assert_eq!(w.violated().as_deref(), Some("existing-never-creates"));
}

#[test]
fn removing_the_persistent_container_of_a_live_logical_container_is_caught() {
    let mut w = Fixture::new();
    let uid = w.logical("db", LogicalMode::Persistent).metadata.uid.0.clone();
    let kept = w.container("kept", &[(names::LABEL_LOGICAL_UID, &uid), (names::LABEL_RETAIN, "true")]);
    w.applied(1, &RuntimeRequest::RemoveContainer { id: "kept".into(), force: true }, Some(&kept));
    assert_eq!(w.violated().as_deref(), Some("persistent-survives-delete"));
}

#[test]
fn a_live_logical_containers_backing_losing_its_hold_is_caught() {
    let mut w = Fixture::new();
    let lc = w.logical("web", LogicalMode::Session);
    let mut meta = ObjectMeta::named(Some("ns"), "web-backing");
    meta.owner_references.push(lc.owner_reference(true));
    meta.finalizers.push(names::FINALIZER_HOLD.into());
    let pc = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
    assert_eq!(w.violated(), None);
    let mut released = (*pc).clone();
    released.metadata.finalizers.clear();
    w.store_applied(StoreRequest::Update { object: released });
    assert_eq!(w.violated().as_deref(), Some("hold-before-release"));
    assert!(w.message().contains("lost its hold"), "seen as it happened: {}", w.message());
}

#[test]
fn releasing_a_startup_lease_before_recording_the_workload_is_caught() {
    for recorded in [false, true] {
        let mut w = Fixture::new();
        let lc = w.logical("db", LogicalMode::Persistent);
        if recorded {
            let mut next = (*lc).clone();
            next.set_status::<LogicalContainer>(&LogicalContainerStatus {
                workload: Some("app".into()),
                ..Default::default()
            });
            w.store.update_status(next).unwrap();
        }
        let holder = format!("engine-0/{}", lc.metadata.uid);
        let name = drydock_engine::controllers::logical::startup_lease_name("ns-db");
        w.facts.leases.insert(&name, &holder, WallTime(60_000));
        let spec = LeaseSpec { key: "ns-db".into(), ..Default::default() };
        let lease = w.store.create(WallTime(1), Object::from_spec::<Lease>(ObjectMeta::named(None, &name), &spec));
        let lease = lease.unwrap();
        let result = Ok(StoreReply::Object(lease.clone()));
        let request = StoreRequest::Update { object: (*lease).clone() };
        w.observe(Happening::StoreApplied { process: 0, request: &request, result: &result });
        let want = (!recorded).then_some("workload-recorded-before-lease-release");
        assert_eq!(w.violated().as_deref(), want, "recorded: {recorded}");
    }
}

/// A user's invariant runs beside the built-in ones, observing what it asks for.
#[test]
fn a_users_invariant_observes_and_checks_like_a_built_in_one() {
    #[derive(Default)]
    struct NoPulls(u32);
    impl Invariant for NoPulls {
        fn name(&self) -> &str {
            "no-pulls"
        }
        fn description(&self) -> &str {
            "nothing is ever pulled"
        }
        fn observes(&self) -> &'static [crate::checker::HappeningKind] {
            &[crate::checker::HappeningKind::RuntimeSent]
        }
        fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
            if let Happening::RuntimeSent { request: RuntimeRequest::PullImage { .. }, .. } = happening {
                self.0 += 1;
            }
        }
        fn check(&self, _view: &View<'_>) -> Result<(), String> {
            if self.0 == 0 { Ok(()) } else { Err(format!("{} pulls", self.0)) }
        }
    }
    let mut w = Fixture::new();
    w.checker = Checker::new(Vec::new());
    w.checker.push(Box::new(NoPulls::default()));
    let key = ObjectKey::namespaced(ContainerImage::KIND, "ns", "img");
    let inspect = RuntimeRequest::InspectImage { reference: "busybox".into() };
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &inspect, issuer: &key });
    assert_eq!(w.violated(), None);
    let pull = RuntimeRequest::PullImage { reference: "busybox".into() };
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(2), request: &pull, issuer: &key });
    assert_eq!(w.violated().as_deref(), Some("no-pulls"));
    assert_eq!(w.message(), "1 pulls");
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

/// A persistent logical container `name` with `spec`, as a client writes it.
fn persistent(w: &mut Fixture, name: &str, spec: &LogicalContainerSpec) -> Arc<Object> {
    // Two live logical containers cannot share a runtime name; the name is outside the content.
    let spec = &LogicalContainerSpec { container_name: Some(format!("ns-{name}")), ..spec.clone() };
    let lc = w
        .store
        .create(WallTime(1), Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some("ns"), name), spec))
        .unwrap();
    w.observe(Happening::ClientWrote { object: &lc });
    lc
}

fn db_spec() -> LogicalContainerSpec {
    use drydock_engine::api::container::EnvVar;
    let env = |n: &str, v: &str| EnvVar { name: n.into(), value: v.into() };
    LogicalContainerSpec {
        mode: LogicalMode::Persistent,
        image: Some("busybox".into()),
        container_name: Some("ns-db".into()),
        env: vec![env("A", "1"), env("B", "2")],
        ..Default::default()
    }
}

/// The backing of `lc`, tracking runtime container `container_id` if given.
fn backing_of(w: &mut Fixture, lc: &Object, container_id: Option<&str>) -> Arc<Object> {
    let mut meta = ObjectMeta::named(Some("ns"), &format!("{}-backing", lc.metadata.name));
    meta.owner_references.push(lc.owner_reference(true));
    meta.finalizers.push(names::FINALIZER_HOLD.into());
    let spec = match container_id {
        Some(id) => PhysicalContainerSpec { container_id: Some(id.into()), ..Default::default() },
        None => busybox(),
    };
    w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &spec)).unwrap()
}

#[test]
fn replacing_a_persistent_container_for_an_edit_outside_its_content_is_caught() {
    for content_changed in [false, true] {
        let mut w = Fixture::new();
        let first = persistent(&mut w, "db", &db_spec());
        let mut edited = db_spec();
        edited.env.reverse();
        edited.command = vec!["sh".into()];
        if content_changed {
            edited.env[0].value = "9".into();
        }
        let second = persistent(&mut w, "db2", &edited);
        let backing = backing_of(&mut w, &second, None);
        let made_for = first.metadata.uid.0.clone();
        let old = w.container("old", &[(names::LABEL_CREATOR, "engine-0"), (names::LABEL_LOGICAL_UID, &made_for)]);
        let remove = RuntimeRequest::RemoveContainer { id: "old".into(), force: true };
        w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &remove, issuer: &backing.key() });
        w.applied(1, &remove, Some(&old));
        let want = (!content_changed).then_some("persistent-replace-justified");
        assert_eq!(w.violated().as_deref(), want, "content changed: {content_changed}");
    }
}

#[test]
fn reusing_a_persistent_container_made_for_other_content_is_caught() {
    for content_changed in [false, true] {
        let mut w = Fixture::new();
        let first = persistent(&mut w, "db", &db_spec());
        let mut edited = db_spec();
        edited.networks.push(drydock_engine::api::container::NetworkAttachment { name: "n".into(), aliases: vec![] });
        if content_changed {
            edited.image = Some("nginx:1.27".into());
        }
        let second = persistent(&mut w, "db2", &edited);
        let made_for = first.metadata.uid.0.clone();
        w.container("old", &[(names::LABEL_CREATOR, "engine-0"), (names::LABEL_LOGICAL_UID, &made_for)]);
        backing_of(&mut w, &second, Some("old"));
        let want = content_changed.then_some("persistent-replace-justified");
        assert_eq!(w.violated().as_deref(), want, "content changed: {content_changed}");
    }
}

/// A physical container `name` in `ns`, owned by `owner` (blocking its deletion if `blocking`).
fn owned_pc(w: &mut Fixture, name: &str, owner: Option<&Object>, blocking: bool) -> Arc<Object> {
    let mut meta = ObjectMeta::named(Some("ns"), name);
    if let Some(owner) = owner {
        let mut reference = owner.owner_reference(false);
        reference.block_owner_deletion = blocking;
        meta.owner_references.push(reference);
    }
    w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap()
}

fn engine_deletes(w: &mut Fixture, object: &Object) {
    let request = StoreRequest::Delete {
        key: object.key(),
        options: DeleteOptions { precondition_uid: Some(object.metadata.uid.clone()), ..Default::default() },
    };
    w.observe(Happening::StoreApplying { process: 0, id: OpId(0), request: &request });
    w.store_applied(request);
}

fn client_deletes(w: &mut Fixture, object: &Object, propagation: drydock_engine::store::Propagation) {
    let options = DeleteOptions { propagation, ..Default::default() };
    let marked = w.store.delete(WallTime(2), &object.key(), &options).unwrap();
    w.observe(Happening::ClientWrote { object: &marked });
}

#[test]
fn the_engine_deleting_an_object_that_is_not_garbage_is_caught() {
    // No owner, namespace active.
    let mut w = Fixture::new();
    let lonely = owned_pc(&mut w, "lonely", None, false);
    engine_deletes(&mut w, &lonely);
    assert_eq!(w.violated().as_deref(), Some("deletes-only-garbage"));
    // A live owner.
    let mut w = Fixture::new();
    let owner = owned_pc(&mut w, "owner", None, false);
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated().as_deref(), Some("deletes-only-garbage"));
    // An owner being deleted (background, held by a finalizer): garbage.
    let mut w = Fixture::new();
    let mut meta = ObjectMeta::named(Some("ns"), "owner");
    meta.finalizers.push(names::FINALIZER_RUNTIME.into());
    let owner = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    client_deletes(&mut w, &owner, Default::default());
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated(), None);
    // A terminating namespace: anything goes.
    let mut w = Fixture::new();
    let lonely = owned_pc(&mut w, "lonely", None, false);
    let mut ns = (**w.store.get(&ObjectKey::cluster(Namespace::KIND, "ns")).unwrap()).clone();
    ns.metadata.finalizers.push(names::FINALIZER_NAMESPACE.into());
    w.store.update(ns).unwrap();
    w.store.delete(WallTime(2), &ObjectKey::cluster(Namespace::KIND, "ns"), &DeleteOptions::default()).unwrap();
    engine_deletes(&mut w, &lonely);
    assert_eq!(w.violated(), None);
}

#[test]
fn deleting_an_orphaned_dependent_or_keeping_its_reference_is_caught() {
    use drydock_engine::store::{FINALIZER_ORPHAN, Propagation};
    // The engine deletes the dependent of an orphaning owner.
    let mut w = Fixture::new();
    let owner = owned_pc(&mut w, "owner", None, false);
    let child = owned_pc(&mut w, "child", Some(&owner), false);
    client_deletes(&mut w, &owner, Propagation::Orphan);
    engine_deletes(&mut w, &child);
    assert_eq!(w.violated().as_deref(), Some("orphans-survive"));
    // The owner goes with the dependent still referring to it, or after it was unlinked.
    for unlinked in [false, true] {
        let mut w = Fixture::new();
        let owner = owned_pc(&mut w, "owner", None, false);
        let child = owned_pc(&mut w, "child", Some(&owner), false);
        client_deletes(&mut w, &owner, Propagation::Orphan);
        if unlinked {
            let mut next = (*child).clone();
            next.metadata.owner_references.clear();
            w.store_applied(StoreRequest::Update { object: next });
        }
        let mut released = (**w.store.get(&owner.key()).unwrap()).clone();
        released.metadata.finalizers.retain(|f| f != FINALIZER_ORPHAN);
        w.store_applied(StoreRequest::Update { object: released });
        assert!(w.store.get(&owner.key()).is_none());
        let want = (!unlinked).then_some("orphans-survive");
        assert_eq!(w.violated().as_deref(), want, "unlinked: {unlinked}");
    }
}

#[test]
fn a_delete_with_a_live_owner_is_caught_from_drydocks_controllers_but_left_to_a_users_invariants() {
    for (controller, caught) in [("garbage-collector", true), ("namespace", true), ("containerset", false)] {
        let mut w = Fixture::new();
        let owner = w.pc("owner", busybox(), "c1");
        let mut meta = ObjectMeta::named(Some("ns"), "child");
        meta.owner_references.push(owner.owner_reference(true));
        let child = w.store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &busybox())).unwrap();
        let origin = drydock_engine::Origin {
            controller: Arc::from(controller),
            key: Arc::new(owner.key()),
            reconcile: 1,
            trigger: None,
        };
        w.observe(Happening::Requested { process: 0, id: OpId(7), origin: &origin, store: true });
        let delete = StoreRequest::Delete { key: child.key(), options: DeleteOptions::default() };
        w.observe(Happening::StoreApplying { process: 0, id: OpId(7), request: &delete });
        let want = caught.then_some("deletes-only-garbage");
        assert_eq!(w.violated().as_deref(), want, "a delete by {controller}");
    }
}

// --- reconciles --------------------------------------------------------------------------------

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
fn a_pull_after_the_pin_and_a_create_from_a_reference_are_caught() {
    let ready =
        ContainerImageStatus { phase: ImagePhase::Ready, image_id: Some("sha256:aaa".into()), ..Default::default() };
    let pull = RuntimeRequest::PullImage { reference: "busybox".into() };
    // Not pinned yet: a pull is what it is for.
    let mut w = Fixture::new();
    let img = image(&mut w, "img", 3, ContainerImageStatus::default());
    w.observe(Happening::ClientWrote { object: &img });
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &pull, issuer: &img.key() });
    assert_eq!(w.violated(), None);
    // Pinned: never again.
    let mut w = Fixture::new();
    let img = image(&mut w, "img", 3, ready.clone());
    w.observe(Happening::ClientWrote { object: &img });
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &pull, issuer: &img.key() });
    assert_eq!(w.violated().as_deref(), Some("pinned-image-honoured"));
    assert!(w.message().contains("which pinned sha256:aaa"), "{}", w.message());
    // A container made from the ContainerImage: from the pinned id, not from the reference.
    for (from, bad) in [("sha256:aaa", false), ("busybox", true)] {
        let mut w = Fixture::new();
        image(&mut w, "img", 3, ready.clone());
        let spec = PhysicalContainerSpec { image_ref: Some("img".into()), ..Default::default() };
        let pc = w.pc("a", spec, "c1");
        let uid = pc.metadata.uid.0.clone();
        let mut request = create("ns-a", &[(names::LABEL_OWNER_UID, &uid)]);
        if let RuntimeRequest::CreateContainer(c) = &mut request {
            c.image = from.into();
        }
        w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &request, issuer: &pc.key() });
        assert_eq!(w.violated().as_deref(), bad.then_some("pinned-image-honoured"), "from {from}");
    }
}

#[test]
fn a_foreground_owner_gone_before_its_blocking_dependents_is_caught() {
    use drydock_engine::store::{FINALIZER_FOREGROUND_DELETION, Propagation};
    for dependents_first in [false, true] {
        let mut w = Fixture::new();
        let owner = owned_pc(&mut w, "owner", None, false);
        let blocking = owned_pc(&mut w, "blocking", Some(&owner), true);
        // One that does not block may outlive it (the collector deletes it afterwards).
        owned_pc(&mut w, "other", Some(&owner), false);
        client_deletes(&mut w, &owner, Propagation::Foreground);
        if dependents_first {
            engine_deletes(&mut w, &blocking);
        }
        let mut released = (**w.store.get(&owner.key()).unwrap()).clone();
        released.metadata.finalizers.retain(|f| f != FINALIZER_FOREGROUND_DELETION);
        w.store_applied(StoreRequest::Update { object: released });
        let want = (!dependents_first).then_some("foreground-after-dependents");
        assert_eq!(w.violated().as_deref(), want, "dependents first: {dependents_first}");
    }
}

#[test]
fn ready_long_after_the_engine_was_told_the_pinned_image_is_gone_is_caught() {
    use drydock_engine::runtime::RuntimeError;
    let mut w = Fixture::new();
    w.runtime.add_image("busybox");
    let id = match w.runtime.execute(&RuntimeRequest::InspectImage { reference: "busybox".into() }) {
        Ok(RuntimeReply::Image(info)) => info.id,
        other => panic!("{other:?}"),
    };
    let ready = ContainerImageStatus { phase: ImagePhase::Ready, image_id: Some(id.clone()), ..Default::default() };
    let img = image(&mut w, "img", 3, ready);
    let at = |w: &Fixture, secs: u64| {
        let view = View { now: WallTime(secs * 1000), ..w.view() };
        w.checker.check(&view).map(|(name, _)| name.to_string())
    };
    let inspect = RuntimeRequest::InspectImage { reference: id.clone() };
    let gone: drydock_engine::runtime::RuntimeResult = Err(RuntimeError::NotFound(format!("No such image: {id}")));
    w.runtime.execute(&RuntimeRequest::RemoveImage { reference: "busybox".into(), force: true }).unwrap();
    w.observe(Happening::RuntimeSent { process: 0, id: OpId(1), request: &inspect, issuer: &img.key() });
    w.observe(Happening::RuntimeApplied { process: 0, id: OpId(1), request: &inspect, result: &gone, removed: None });
    assert_eq!(at(&w, 100), None, "removed, but nobody was told yet: the engine cannot know");
    w.observe(Happening::Answered { process: 0, id: OpId(1) });
    assert_eq!(at(&w, 30), None, "told at 0 s: it has 35 s to say so");
    assert_eq!(at(&w, 36).as_deref(), Some("ready-while-pinned-present"));
    // A crash of the process that was told: its next life must look again.
    w.observe(Happening::Crashed { process: 0 });
    assert_eq!(at(&w, 36), None);
}

mod logs {
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
}

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
