//! The driver toward a struggling runtime: at most the engine's bound of requests inside it at once, and a
//! start that lists only this identity's containers, in the background, so a runtime that never
//! answers the list holds nothing else back, and which readiness then reports; a change the
//! engine gave up on is not sent again while it still runs inside the runtime.
#![allow(clippy::unwrap_used)]

use drydock_adapters::{Driver, Runtime, SharedStore};
use drydock_engine::WallTime;
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, Namespace, NamespaceSpec, Object, ObjectMeta, PhysicalContainer,
    PhysicalContainerSpec, PullPolicy, names,
};
use drydock_engine::controllers::ControllerConfig;
use drydock_engine::runtime::{
    ContainerInfo, ContainerState, ImageInfo, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult,
};
use drydock_engine::store::{StoreReply, StoreRequest};
use drydock_engine::{Components, Engine, EngineConfig};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Lists never answer; an image inspection takes a while and finds the image.
#[derive(Default)]
struct Slow {
    /// (inside now, most inside at once, inspections done)
    counts: Mutex<(usize, usize, usize)>,
    lists: Mutex<Vec<BTreeMap<String, String>>>,
}

impl Runtime for Slow {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        match request {
            RuntimeRequest::ListContainers { labels } | RuntimeRequest::ListVolumes { labels } => {
                self.lists.lock().push(labels);
                std::future::pending().await
            }
            RuntimeRequest::InspectImage { reference } => {
                {
                    let mut counts = self.counts.lock();
                    counts.0 += 1;
                    counts.1 = counts.1.max(counts.0);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut counts = self.counts.lock();
                counts.0 -= 1;
                counts.2 += 1;
                Ok(RuntimeReply::Image(ImageInfo { id: "sha256:1".into(), tags: vec![reference] }))
            }
            other => Err(RuntimeError::Transient(other.describe())),
        }
    }
}

fn create(store: &SharedStore, object: Object) -> Arc<Object> {
    match store.execute_at(WallTime(1), StoreRequest::Create { object }).unwrap() {
        StoreReply::Object(object) => object,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_struggling_runtime_gets_a_bounded_number_of_requests_and_a_hung_list_blocks_nothing() {
    let bound = EngineConfig::default().max_runtime_in_flight;
    let images = 3 * bound;
    let store = SharedStore::in_memory();
    create(&store, Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}));
    for i in 0..images {
        let spec =
            ContainerImageSpec { image: format!("img{i}:1"), pull_policy: PullPolicy::Missing, ..Default::default() };
        create(&store, Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), &format!("i{i}")), &spec));
    }
    let runtime = Arc::new(Slow::default());
    let driver = Driver::builtin("me", store.clone(), runtime.clone());
    let health = driver.health();
    let running = driver.spawn();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while runtime.counts.lock().2 < images {
        assert!(tokio::time::Instant::now() < deadline, "inspections stalled: {:?}", *runtime.counts.lock());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, most, _) = *runtime.counts.lock();
    assert!(most <= bound, "{most} requests were inside the runtime at once (bound {bound})");
    assert!(most > 1, "requests were not concurrent at all: {most}");
    let lists = runtime.lists.lock().clone();
    assert!(!lists.is_empty(), "the start's listing was never sent");
    for labels in &lists {
        assert_eq!(
            labels.get(names::LABEL_CREATOR).map(String::as_str),
            Some("me"),
            "a list beyond our own: {labels:?}"
        );
    }
    // The lists never answer: readiness names a runtime that holds requests.
    let reason = health.degraded(Duration::from_millis(100));
    assert!(reason.as_deref().is_some_and(|r| r.contains("has not answered")), "{reason:?}");
    running.stop().await;
}

/// One container; its first start takes seconds (a struggling Docker), later ones do not.
#[derive(Default)]
struct SlowStart {
    state: Mutex<Option<ContainerInfo>>,
    /// (starts inside now, most inside at once, starts sent)
    starts: Mutex<(usize, usize, usize)>,
}

impl Runtime for SlowStart {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        match request {
            RuntimeRequest::InspectImage { reference } => {
                Ok(RuntimeReply::Image(ImageInfo { id: "sha256:1".into(), tags: vec![reference] }))
            }
            RuntimeRequest::CreateContainer(create) => {
                let info = ContainerInfo {
                    id: "c1".into(),
                    name: create.name.clone(),
                    image: create.image.clone(),
                    labels: create.labels.clone().into(),
                    state: ContainerState::Created,
                    exit_code: None,
                    error: None,
                    ports: Vec::new(),
                };
                *self.state.lock() = Some(info);
                Ok(RuntimeReply::Created { id: "c1".into() })
            }
            RuntimeRequest::StartContainer { .. } => {
                let first = {
                    let mut starts = self.starts.lock();
                    starts.0 += 1;
                    starts.1 = starts.1.max(starts.0);
                    starts.2 += 1;
                    starts.2 == 1
                };
                tokio::time::sleep(Duration::from_millis(if first { 3_000 } else { 10 })).await;
                if let Some(info) = self.state.lock().as_mut() {
                    info.state = ContainerState::Running;
                }
                self.starts.lock().0 -= 1;
                Ok(RuntimeReply::Done)
            }
            RuntimeRequest::InspectContainer { id } => {
                self.state.lock().clone().map(RuntimeReply::Container).ok_or(RuntimeError::NotFound(id))
            }
            RuntimeRequest::ListContainers { .. } => {
                Ok(RuntimeReply::Containers(self.state.lock().clone().into_iter().collect()))
            }
            RuntimeRequest::ListVolumes { .. } => Ok(RuntimeReply::Volumes(Vec::new())),
            RuntimeRequest::ContainerEvents { .. } => Ok(RuntimeReply::Events(Vec::new())),
            other => Err(RuntimeError::Transient(other.describe())),
        }
    }
}

/// A start the engine gave up on (its timeout) runs on inside Docker; the engine's retry waits
/// for it to leave instead of joining it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_the_engine_gave_up_on_is_not_sent_again_while_it_runs() {
    let store = SharedStore::in_memory();
    create(&store, Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}));
    let spec = PhysicalContainerSpec { image: Some("img:1".into()), ..Default::default() };
    let pc = create(&store, Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), "pc"), &spec));
    let components = Components::new();
    let config =
        EngineConfig { identity: "me".into(), runtime_timeout: Duration::from_millis(200), ..EngineConfig::default() };
    let engine =
        Engine::new(config, components.registry().clone(), components.controllers(&ControllerConfig::default()));
    let runtime = Arc::new(SlowStart::default());
    let driver = Driver::new(engine, store.clone(), runtime.clone());
    let running = driver.spawn();
    let is_running = || store.read(|s| s.get(&pc.key()).is_some_and(|o| o.status["phase"] == "Running"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !is_running() {
        assert!(tokio::time::Instant::now() < deadline, "never Running: {:?}", *runtime.starts.lock());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, most, sent) = *runtime.starts.lock();
    assert!(sent >= 2, "the engine never retried the start it gave up on: the test shows nothing");
    assert_eq!(most, 1, "a start was sent while the earlier one was still inside the runtime ({sent} sent)");
    running.stop().await;
}
