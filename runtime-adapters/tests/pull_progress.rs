//! A pull's progress reaches the image's `stdout` stream while the pull runs, and is not written
//! again when the engine is handed the whole of it: a runtime that holds its pull half-way shows
//! it.
#![allow(clippy::unwrap_used)]

use drydock_adapters::runtime::ProgressSink;
use drydock_adapters::{Driver, Runtime, SharedStore};
use drydock_engine::WallTime;
use drydock_engine::api::{
    ContainerImage, ContainerImageSpec, Namespace, NamespaceSpec, Object, ObjectMeta, PullPolicy,
};
use drydock_engine::logs::{Channel, Subject};
use drydock_engine::runtime::{ImageInfo, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Images appear once pulled; a pull prints a line, waits to be released, prints another.
#[derive(Default)]
struct HeldPull {
    pulled: AtomicBool,
    release: Notify,
}

impl Runtime for HeldPull {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        match request {
            RuntimeRequest::ListContainers { .. } => Ok(RuntimeReply::Containers(Vec::new())),
            RuntimeRequest::InspectImage { reference } if self.pulled.load(Ordering::SeqCst) => {
                Ok(RuntimeReply::Image(ImageInfo { id: "sha256:1".into(), tags: vec![reference] }))
            }
            RuntimeRequest::InspectImage { reference } => Err(RuntimeError::NotFound(reference)),
            other => Err(RuntimeError::Transient(format!("not in this stub: {}", other.describe()))),
        }
    }

    async fn execute_reporting(&self, request: RuntimeRequest, progress: ProgressSink) -> RuntimeResult {
        if !matches!(request, RuntimeRequest::PullImage { .. }) {
            return self.execute(request).await;
        }
        progress("1: Pulling from library/held");
        self.release.notified().await;
        progress("Digest: sha256:1");
        self.pulled.store(true, Ordering::SeqCst);
        Ok(RuntimeReply::Pulled { progress: vec!["1: Pulling from library/held".into(), "Digest: sha256:1".into()] })
    }
}

#[tokio::test]
async fn pull_progress_is_streamed_while_the_pull_runs_and_written_once() {
    let store = SharedStore::in_memory();
    let namespace = Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {});
    store.execute_at(WallTime(1), drydock_engine::store::StoreRequest::Create { object: namespace }).unwrap();
    let spec = ContainerImageSpec { image: "held:1".into(), pull_policy: PullPolicy::Missing, ..Default::default() };
    let image = Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), "held"), &spec);
    let created = store.execute_at(WallTime(1), drydock_engine::store::StoreRequest::Create { object: image }).unwrap();
    let drydock_engine::store::StoreReply::Object(created) = created else { panic!("created") };
    let subject = Subject::Object(created.metadata.uid.clone());

    let runtime = Arc::new(HeldPull::default());
    let driver = Driver::builtin("t", store.clone(), runtime.clone());
    let logs = driver.logs();
    let running = driver.spawn();
    let lines = || {
        logs.read(|hub| {
            hub.read(&subject, Channel::Stdout, 1, 100).lines.into_iter().map(|l| l.text).collect::<Vec<_>>()
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while lines().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no progress while the pull runs");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(lines(), ["1: Pulling from library/held"], "the first line, while the pull is held");
    runtime.release.notify_one();
    let ready = || store.read(|s| s.get(&created.key()).is_some_and(|o| o.status["phase"] == "Ready"));
    while !ready() {
        assert!(tokio::time::Instant::now() < deadline, "the image never became Ready");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(lines(), ["1: Pulling from library/held", "Digest: sha256:1"], "each line once");
    running.stop().await;
}
