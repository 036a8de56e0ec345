//! Tests of the invariants about images, pulls and leases (`images`).

use super::*;

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
    w.facts.in_flight.send(0, OpId(1), &pull("busybox"), None, None);
    assert_eq!(w.violated(), None, "one is fine");
    w.facts.in_flight.send(1, OpId(7), &pull("docker.io/library/busybox:latest"), None, None);
    assert_eq!(w.violated().as_deref(), Some("single-pull-per-ref"));
    assert!(w.message().contains("2 pulls"));
    w.facts.in_flight.applied(0, OpId(1), None);
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

#[test]
fn an_always_image_ready_without_a_pull_in_its_life_is_caught() {
    use drydock_engine::api::PullPolicy;
    for pulled in [None, Some("busybox:latest"), Some("alpine")] {
        let mut w = Fixture::new();
        let spec =
            ContainerImageSpec { image: "busybox".into(), pull_policy: PullPolicy::Always, ..Default::default() };
        let created = w
            .store
            .create(WallTime(1), Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), "img"), &spec))
            .unwrap();
        w.observe(Happening::ClientWrote { object: &created });
        if let Some(reference) = pulled {
            let pull = RuntimeRequest::PullImage { reference: reference.into() };
            w.applied(3, &pull, None);
        }
        let mut ready = (*created).clone();
        ready.set_status::<ContainerImage>(&ContainerImageStatus {
            phase: ImagePhase::Ready,
            image_id: Some("sha256:abc".into()),
            ..Default::default()
        });
        // A status write carries the status alone, as the engine's do.
        ready.spec = Arc::new(serde_json::Value::Null);
        let request = StoreRequest::UpdateStatus { object: ready };
        w.observe(Happening::StoreApplying { process: 0, id: OpId(4), request: &request });
        // `busybox:latest` is `busybox`, normalized; `alpine` is another image.
        let want = (pulled != Some("busybox:latest")).then_some("always-pulls-before-ready");
        assert_eq!(w.violated().as_deref(), want, "pulled {pulled:?}: {}", w.message());
    }
}
