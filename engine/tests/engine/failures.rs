//! Permanent and retryable runtime failures, end to end: the built-in controllers against the
//! in-memory store and a small scripted runtime that fails the way Docker does. Every permanent
//! failure must end in a terminal status carrying the runtime's own message, after a bounded
//! number of attempts, and then cost nothing more; every retryable one must back off to a cap.

mod runtime;
mod world;

use drydock_engine::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalMode, LogicalPhase};
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, ContainerPhase, ImagePhase, Lease, ObjectKey, PhysicalContainer,
    PhysicalContainerSpec, PullPolicy, Resource, reasons,
};
use drydock_engine::controllers::image::pull_lease_name;
use drydock_engine::runtime::{ContainerInfo, ContainerState, RuntimeError, RuntimeRequest};
use drydock_engine::store::DeleteOptions;
use drydock_engine::{Input, WallTime};
use runtime::{Runtime, StartFault};
use std::collections::BTreeMap;
use std::time::Duration;
use world::World;

const NS: &str = "ns";
const IMAGE: &str = "busybox:latest";
const IMAGE_ID: &str = "sha256:b0b0";

fn web() -> PhysicalContainerSpec {
    PhysicalContainerSpec { image: Some(IMAGE.into()), ..Default::default() }
}

fn gaps(times: &[u64]) -> Vec<u64> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

const FIVE_MINUTES: Duration = Duration::from_secs(300);

#[test]
fn an_invalid_create_fails_at_once_and_is_never_verified_or_retried() {
    let mut runtime = Runtime::new();
    runtime.create_error = Some(RuntimeError::Invalid("invalid mount config: mount path must be absolute".into()));
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(5));

    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Failed, "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::CREATE_REFUSED));
    assert!(status.message.unwrap().contains("mount path must be absolute"), "the runtime's own message");
    assert_eq!(w.runtime.creates().len(), 1);
    let lists = w.runtime.times(|r| matches!(r, RuntimeRequest::ListContainers { .. }));
    assert!(lists.is_empty(), "an invalid create is never uncertain: {lists:?}");
    assert_eq!(w.requests_over(FIVE_MINUTES), [], "nothing more once Failed");
}

#[test]
fn a_missing_command_fails_after_one_start_with_the_exit_code_and_the_runtime_message() {
    let mut runtime = Runtime::new();
    runtime.start_fault = StartFault::MissingCommand;
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(5));

    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Failed, "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::START_FAILED));
    assert_eq!(status.exit_code, Some(127));
    assert!(status.message.unwrap().contains("executable file not found in $PATH"));
    assert!(status.runtime_id.is_some(), "the container exists (created) and is recorded");
    assert_eq!(w.runtime.starts().len(), 1, "the runtime said it can never succeed");
    assert_eq!(w.requests_over(FIVE_MINUTES), []);
}

#[test]
fn a_taken_host_port_fails_after_three_spaced_starts_however_many_inspections_succeed() {
    let mut runtime = Runtime::new();
    runtime.start_fault = StartFault::PortTaken;
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(10));

    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Failed, "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::START_FAILED));
    assert_eq!(status.exit_code, Some(128));
    let message = status.message.unwrap();
    assert!(message.contains("port is already allocated") && message.contains("3 attempts"), "{message}");
    let starts = w.runtime.starts();
    assert_eq!(starts.len(), 3, "{starts:?}");
    let gaps = gaps(&starts);
    assert!(gaps[0] >= 1_000 && gaps[1] >= 2_000, "backs off between starts: {gaps:?}");
    let inspects = w.runtime.times(|r| matches!(r, RuntimeRequest::InspectContainer { .. }));
    assert!(inspects.len() >= 3, "each failed start is followed by a successful inspection: {inspects:?}");
    assert_eq!(w.requests_over(FIVE_MINUTES), []);

    // Terminal for a later life of the engine too, which never saw the starts fail.
    w.restart_engine();
    w.run_for(FIVE_MINUTES);
    assert_eq!(w.runtime.starts().len(), 3, "never started again");
    assert_eq!(w.status::<PhysicalContainer>(&key).phase, ContainerPhase::Failed);
}

#[test]
fn a_start_the_daemon_keeps_failing_backs_off_to_the_cap_visibly_and_recovers() {
    let mut runtime = Runtime::new();
    runtime.start_fault = StartFault::DaemonError;
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(FIVE_MINUTES);

    let status = w.status::<PhysicalContainer>(&key);
    assert_ne!(status.phase, ContainerPhase::Failed, "the container recorded no failure: the daemon may recover");
    let message = status.message.unwrap_or_default();
    assert!(message.contains("cannot start the container") && message.contains("daemon is busy"), "{message}");
    let starts = w.runtime.starts();
    assert!(starts.len() <= 14, "1 s, 2 s, then every 30 s: {starts:?}");
    let gaps = gaps(&starts);
    assert!(gaps.iter().skip(2).all(|g| *g >= 30_000), "capped at 30 s, never less: {gaps:?}");

    w.runtime.start_fault = StartFault::None;
    w.run_for(Duration::from_secs(31));
    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Running, "{status:?}");
    assert_eq!(status.message, None, "the retry message goes once it runs");
}

#[test]
fn a_create_that_keeps_failing_backs_off_exponentially_to_thirty_seconds() {
    let mut runtime = Runtime::new();
    runtime.create_error = Some(RuntimeError::Transient("500: the daemon is busy".into()));
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(FIVE_MINUTES);

    let creates = w.runtime.creates();
    let gaps = gaps(&creates);
    assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "never shorter, though each is verified by a list: {gaps:?}");
    assert!(gaps.iter().all(|g| *g <= 31_000), "capped: {gaps:?}");
    assert!(gaps.last().is_some_and(|g| *g >= 30_000), "reaches the cap: {gaps:?}");
    assert!(creates.len() <= 20, "{} creates in five minutes", creates.len());
    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Pending, "retryable: never Failed");
    assert!(status.message.unwrap_or_default().contains("cannot create the container"), "but visible");

    w.runtime.create_error = None;
    w.run_for(Duration::from_secs(31));
    assert_eq!(w.status::<PhysicalContainer>(&key).phase, ContainerPhase::Running);
}

#[test]
fn an_image_that_can_never_be_pulled_fails_its_containers_and_their_logical_container() {
    let mut runtime = Runtime::new();
    runtime.pull_error = Some(RuntimeError::NotFound("pull access denied for ghost, repository does not exist".into()));
    let mut w = World::new(runtime);
    let image = ContainerImageSpec {
        image: "ghost:1".into(),
        pull_policy: PullPolicy::Missing,
        pull_retry_limit: 1,
        build: None,
    };
    let image_key = w.create::<ContainerImage>("ghost", &image);
    let pc = PhysicalContainerSpec { image_ref: Some("ghost".into()), ..Default::default() };
    let pc_key = w.create::<PhysicalContainer>("by-ref", &pc);
    let lc = LogicalContainerSpec { mode: LogicalMode::Session, image: Some("ghost:2".into()), ..Default::default() };
    let lc_key = w.create::<LogicalContainer>("app", &lc);
    w.run_for(Duration::from_secs(30));

    let image = w.status::<ContainerImage>(&image_key);
    assert_eq!((image.phase, image.pull_attempts), (ImagePhase::Failed, 2), "{image:?}");
    assert_eq!(image.reason.as_deref(), Some(reasons::PULL_FAILED));
    assert!(image.message.unwrap().contains("repository does not exist"));

    let pc = w.status::<PhysicalContainer>(&pc_key);
    assert_eq!(pc.phase, ContainerPhase::Failed, "{pc:?}");
    assert_eq!(pc.reason.as_deref(), Some(reasons::IMAGE_FAILED));
    assert!(pc.message.unwrap().contains("repository does not exist"), "the cause, all the way down");

    let lc = w.status::<LogicalContainer>(&lc_key);
    assert_eq!(lc.phase, LogicalPhase::Failed, "{lc:?}");
    assert_eq!(lc.reason.as_deref(), Some(reasons::IMAGE_FAILED));
    assert!(lc.message.unwrap().contains("repository does not exist"));
    assert_eq!(w.runtime.creates(), Vec::<u64>::new());
    assert_eq!(w.requests_over(FIVE_MINUTES), []);
}

#[test]
fn a_pull_the_runtime_refuses_fails_at_once() {
    let mut runtime = Runtime::new();
    runtime.pull_error = Some(RuntimeError::Invalid("invalid reference format".into()));
    let mut w = World::new(runtime);
    let image = ContainerImageSpec {
        image: "ghost:1".into(),
        pull_policy: PullPolicy::Always,
        pull_retry_limit: 5,
        build: None,
    };
    let key = w.create::<ContainerImage>("ghost", &image);
    w.run_for(Duration::from_secs(10));

    let status = w.status::<ContainerImage>(&key);
    assert_eq!((status.phase, status.pull_attempts), (ImagePhase::Failed, 1), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::REFERENCE_REFUSED));
    assert!(status.message.unwrap().contains("invalid reference format"));
}

#[test]
fn an_image_inspection_that_keeps_failing_is_retried_slower_and_visibly() {
    let mut runtime = Runtime::new();
    runtime.inspect_image_error = Some(RuntimeError::Transient("500: the daemon is busy".into()));
    let mut w = World::new(runtime);
    let image = ContainerImageSpec { image: IMAGE.into(), ..Default::default() };
    let key = w.create::<ContainerImage>("busybox", &image);
    w.run_for(FIVE_MINUTES);

    let inspects = w.runtime.times(|r| matches!(r, RuntimeRequest::InspectImage { .. }));
    assert!(inspects.len() <= 16, "1 s doubling to 30 s: {inspects:?}");
    assert!(gaps(&inspects).last().is_some_and(|g| *g >= 30_000));
    let status = w.status::<ContainerImage>(&key);
    assert_eq!(status.phase, ImagePhase::Pending);
    assert!(status.message.unwrap_or_default().contains("daemon is busy"));

    w.runtime.inspect_image_error = None;
    w.run_for(Duration::from_secs(31));
    assert_eq!(w.status::<ContainerImage>(&key).phase, ImagePhase::Ready);
}

#[test]
fn a_logical_container_fails_with_its_backings_start_failure() {
    let mut runtime = Runtime::new();
    runtime.start_fault = StartFault::MissingCommand;
    let mut w = World::new(runtime);
    let spec = LogicalContainerSpec {
        mode: LogicalMode::Session,
        image: Some(IMAGE.into()),
        command: vec!["nope".into()],
        ..Default::default()
    };
    let key = w.create::<LogicalContainer>("app", &spec);
    w.run_for(Duration::from_secs(10));

    let status = w.status::<LogicalContainer>(&key);
    assert_eq!(status.phase, LogicalPhase::Failed, "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::START_FAILED));
    assert!(status.message.unwrap().contains("executable file not found"));
}

#[test]
fn a_container_being_removed_is_neither_started_nor_called_exited_and_ends_missing() {
    let mut w = World::new(Runtime::new());
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(2));
    assert_eq!(w.status::<PhysicalContainer>(&key).phase, ContainerPhase::Running);

    // Someone runs `docker rm -f`; the removal takes a while.
    let id = w.status::<PhysicalContainer>(&key).runtime_id.unwrap();
    let c = w.runtime.containers.get_mut(&id).unwrap();
    (c.state, c.exit_code) = (ContainerState::Removing, Some(137));
    w.runtime.start_fault = StartFault::DaemonError; // a start would show up as a request anyway
    w.engine.handle(
        w.now(),
        Input::RuntimeEvent(drydock_engine::runtime::RuntimeEvent {
            container_id: id.clone(),
            action: drydock_engine::runtime::EventAction::Die { exit_code: Some(137) },
            time: WallTime(w.now_ms),
            labels: w.runtime.containers[&id].labels.clone(),
        }),
    );
    w.run_for(Duration::from_secs(5));
    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Running, "not Exited: it is about to be gone");
    assert!(status.message.unwrap().contains("being removed"));
    assert_eq!(w.runtime.starts().len(), 1, "only the first start, before the removal");

    w.runtime.containers.remove(&id);
    w.run_for(Duration::from_secs(30));
    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Missing, "{status:?}");
    assert_eq!(status.reason.as_deref(), Some(reasons::REMOVED_EXTERNALLY));
}

#[test]
fn a_delete_does_not_wait_out_the_backoff_of_a_start_it_makes_moot() {
    let mut runtime = Runtime::new();
    runtime.start_fault = StartFault::DaemonError;
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(40)); // into a 30 s wait between starts
    let starts = w.runtime.starts().len();

    w.store.delete(WallTime(w.now_ms), &key, &Default::default()).unwrap();
    w.run_for(Duration::from_secs(1));
    assert!(w.store.get(&key).is_none(), "removed within a second, not after the wait");
    assert!(w.runtime.containers.is_empty());
    assert_eq!(w.runtime.starts().len(), starts, "and not started on the way out");
}

#[test]
fn a_persistent_container_waits_for_a_namesake_being_removed_instead_of_reusing_it() {
    let mut runtime = Runtime::new();
    let labels = BTreeMap::from([(drydock_engine::api::names::LABEL_CREATOR.to_string(), "drydock-0".to_string())]);
    let old = ContainerInfo {
        id: "old".into(),
        name: "ns-app".into(),
        image: IMAGE.into(),
        labels: labels.into(),
        state: ContainerState::Removing,
        exit_code: Some(0),
        error: None,
        ports: Vec::new(),
    };
    runtime.containers.insert(old.id.clone(), old);
    let mut w = World::new(runtime);
    let spec = LogicalContainerSpec { mode: LogicalMode::Persistent, image: Some(IMAGE.into()), ..Default::default() };
    let key = w.create::<LogicalContainer>("app", &spec);
    w.run_for(Duration::from_secs(20));
    let inspects = w.runtime.times(|r| matches!(r, RuntimeRequest::InspectContainer { id } if id == "ns-app"));
    assert!((2..=6).contains(&inspects.len()), "looked again, slower each time: {inspects:?}");
    assert!(w.runtime.creates().is_empty() && w.runtime.starts().is_empty(), "neither reused nor replaced");

    w.runtime.containers.remove("old");
    w.run_for(Duration::from_secs(40));
    let status = w.status::<LogicalContainer>(&key);
    assert_eq!(status.phase, LogicalPhase::Running, "{status:?}");
    assert_eq!(w.runtime.creates().len(), 1);
}

#[test]
fn a_restarted_engine_creates_what_its_earlier_life_was_creating_only_once_that_lifes_requests_have_settled() {
    // The first life's creates all end without an answer: any of them may still land, until the
    // earlier lives' patience has passed.
    let mut runtime = Runtime::new();
    runtime.create_error = Some(RuntimeError::Uncertain("no reply".into()));
    let mut w = World::new(runtime);
    let key = w.create::<PhysicalContainer>("web", &web());
    w.run_for(Duration::from_secs(1));
    assert!(!w.runtime.creates().is_empty(), "the first life tried to create");

    w.runtime.create_error = None;
    w.restart_engine_from_a_list();
    let restarted = w.now_ms;
    let before = w.runtime.requests.len();
    let settle = drydock_engine::EngineConfig::default().earlier_lives_patience.as_millis() as u64;
    w.run_for(Duration::from_millis(settle + 30_000));
    let since: Vec<(u64, RuntimeRequest)> = w.runtime.requests[before..].to_vec();
    let first_create = since.iter().position(|(_, r)| matches!(r, RuntimeRequest::CreateContainer(_)));
    let first_list = since.iter().position(|(_, r)| matches!(r, RuntimeRequest::ListContainers { .. }));
    let (Some(create), Some(list)) = (first_create, first_list) else {
        panic!("the new life listed by label and then created: {since:?}");
    };
    assert!(list < create, "the label check comes before the create: {since:?}");
    assert!(
        since[list].0 >= restarted + settle,
        "the label check waited for the earlier life's requests to settle: at {} ms, restarted at {restarted} ms",
        since[list].0
    );
    let status = w.status::<PhysicalContainer>(&key);
    assert_eq!(status.phase, ContainerPhase::Running, "{status:?}");
}

/// A pull's lease can be lost while the pull runs (its renewals kept failing until it expired;
/// here it is deleted behind the engine's back). Another resource of the same process, for the
/// same reference, may then take the lease, but does not pull beside its own process's pull: it
/// waits for it, and both end Ready from the one pull.
#[test]
fn a_lost_lease_does_not_let_a_second_pull_start_beside_the_process_own() {
    let mut runtime = Runtime::new();
    runtime.hold_pulls = true;
    let mut w = World::new(runtime);
    let spec = ContainerImageSpec { image: "alpine:3".into(), ..Default::default() };
    let pulls = |w: &World| w.runtime.times(|r| matches!(r, RuntimeRequest::PullImage { .. })).len();
    let first = w.create::<ContainerImage>("first", &spec);
    w.run_for(Duration::from_millis(500));
    assert_eq!(pulls(&w), 1, "the first resource pulls");

    let lease = ObjectKey::cluster(Lease::KIND, &pull_lease_name("alpine:3"));
    w.store.delete(WallTime(w.now_ms), &lease, &DeleteOptions::default()).unwrap();
    let second = w.create::<ContainerImage>("second", &spec);
    w.run_for(Duration::from_secs(30));
    assert_eq!(pulls(&w), 1, "no second pull while the first runs");
    let waiting = w.status::<ContainerImage>(&second);
    assert_eq!(waiting.phase, ImagePhase::Pending, "{waiting:?}");
    let message = waiting.message.unwrap_or_default();
    assert!(message.starts_with("waiting for this engine's pull of docker.io/library/alpine:3"), "{message}");
    let holder = w.store.get(&lease).unwrap().spec::<Lease>().unwrap().holder.unwrap_or_default();
    let second_uid = w.store.get(&second).unwrap().metadata.uid.to_string();
    assert!(holder.ends_with(&second_uid), "the waiting resource took the free lease: {holder}");

    w.finish_pulls();
    w.run_for(Duration::from_secs(10));
    for key in [&first, &second] {
        let status = w.status::<ContainerImage>(key);
        assert_eq!(status.phase, ImagePhase::Ready, "{key}: {status:?}");
        assert_eq!(status.image_id.as_deref(), Some("sha256:alpine:3"));
    }
    assert_eq!(pulls(&w), 1, "one pull made both Ready");
}
