//! The driver toward a struggling runtime: at most `IN_FLIGHT` requests inside it at once, and a
//! start that lists only this identity's containers, in the background, so a runtime that never
//! answers the list holds nothing else back, and which readiness then reports.
#![allow(clippy::unwrap_used)]

use drydock_adapters::driver::IN_FLIGHT;
use drydock_adapters::{Driver, Runtime, SharedStore};
use drydock_engine::WallTime;
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, Namespace, NamespaceSpec, Object, ObjectMeta, PullPolicy, names,
};
use drydock_engine::runtime::{ImageInfo, RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{StoreReply, StoreRequest};
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
            other => Err(drydock_engine::runtime::RuntimeError::Transient(other.describe())),
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
    const IMAGES: usize = 3 * IN_FLIGHT;
    let store = SharedStore::in_memory();
    create(&store, Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}));
    for i in 0..IMAGES {
        let spec =
            ContainerImageSpec { image: format!("img{i}:1"), pull_policy: PullPolicy::Missing, ..Default::default() };
        create(&store, Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), &format!("i{i}")), &spec));
    }
    let runtime = Arc::new(Slow::default());
    let mut driver = Driver::builtin("me", store.clone(), runtime.clone());
    let health = driver.health();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let driving = tokio::spawn(async move {
        driver
            .run(async {
                let _ = stopped.await;
            })
            .await;
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while runtime.counts.lock().2 < IMAGES {
        assert!(tokio::time::Instant::now() < deadline, "inspections stalled: {:?}", *runtime.counts.lock());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, most, _) = *runtime.counts.lock();
    assert!(most <= IN_FLIGHT, "{most} requests were inside the runtime at once (bound {IN_FLIGHT})");
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
    let _ = stop.send(());
    driving.await.unwrap();
}
