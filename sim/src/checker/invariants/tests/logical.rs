//! Tests of the invariants about logical containers (`logical`).

use super::*;

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
