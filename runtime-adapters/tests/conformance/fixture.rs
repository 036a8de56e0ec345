//! What every conformance case gets: a runtime, the host around it (a registry, ports, volumes,
//! build contexts), unique names, a label marking its containers and networks, and cleanup
//! afterwards: its containers, then its networks, volumes, built images and build contexts.

use super::host::TestHost;
use drydock_adapters::Runtime;
use drydock_adapters::clock::wall_now;
use drydock_adapters::testing::{Published, TEST_REGISTRY};
use drydock_engine::WallTime;
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ImageBuild, ImageInfo, NetworkCreate, NetworkInfo, RuntimeError, RuntimeEvent,
    RuntimeReply, RuntimeRequest, RuntimeResult, VolumeCreate, VolumeInfo,
};
use futures_util::FutureExt;
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

pub const RUN_LABEL: &str = "drydock.test/case";

/// The cases that make hundreds of events to push others out of Docker's replay window.
const EVENT_FLOODERS: &[&str] = &["events_replay_only_the_last_256", "events_replay_counts_events_of_every_type"];

/// How the names of case `case`'s objects start.
fn case_prefix(case: &str) -> String {
    format!("dct-{}", case.replace('_', "-").chars().take(40).collect::<String>())
}

/// Held for reading by every case, for writing by a case of [`EVENT_FLOODERS`].
static EVENT_WINDOW: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

pub struct Fixture<R: Runtime> {
    pub rt: Arc<R>,
    pub host: Arc<dyn TestHost>,
    pub case: String,
    pub image: String,
    pub since: WallTime,
    /// Ids of the images published for this case, removed at cleanup.
    published: parking_lot::Mutex<Vec<String>>,
    /// Named volumes this case named, removed at cleanup.
    volumes: parking_lot::Mutex<Vec<String>>,
    /// Networks this case named, removed at cleanup (as are those carrying its label).
    networks: parking_lot::Mutex<Vec<String>>,
    /// Tags this case built, removed at cleanup.
    built: parking_lot::Mutex<Vec<String>>,
    /// Build context directories this case made, removed at cleanup.
    contexts: parking_lot::Mutex<Vec<String>>,
}

impl<R: Runtime> Fixture<R> {
    pub fn new(rt: Arc<R>, host: Arc<dyn TestHost>, case: &str) -> Self {
        let nonce = wall_now().0 % 1_000_000;
        Fixture {
            rt,
            host,
            published: parking_lot::Mutex::new(Vec::new()),
            volumes: parking_lot::Mutex::new(Vec::new()),
            networks: parking_lot::Mutex::new(Vec::new()),
            built: parking_lot::Mutex::new(Vec::new()),
            contexts: parking_lot::Mutex::new(Vec::new()),
            case: format!("{}-{nonce}-{}", case_prefix(case), std::process::id()),
            image: drydock_adapters::testing::TEST_IMAGE.to_string(),
            since: WallTime(wall_now().0.saturating_sub(2_000)),
        }
    }

    /// Run `case`, then remove every container it made, even if it panicked. A case that
    /// floods Docker's event log (it replays only the last 256 events, of every client) runs
    /// alone: the cases running beside it would lose their own events from the replay.
    pub async fn run<'a, F, Fut>(&'a self, case: F)
    where
        F: FnOnce(&'a Fixture<R>) -> Fut,
        Fut: Future<Output = ()> + 'a,
    {
        let floods = EVENT_FLOODERS.iter().any(|name| self.case.starts_with(&case_prefix(name)));
        let (_alone, _beside) =
            if floods { (Some(EVENT_WINDOW.write().await), None) } else { (None, Some(EVENT_WINDOW.read().await)) };
        let outcome = AssertUnwindSafe(case(self)).catch_unwind().await;
        self.cleanup().await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }

    async fn cleanup(&self) {
        let labels = self.labels();
        if let Ok(RuntimeReply::Containers(list)) =
            self.rt.execute(RuntimeRequest::ListContainers { labels: labels.clone() }).await
        {
            for c in list {
                let _ = self.rt.execute(RuntimeRequest::RemoveContainer { id: c.id, force: true }).await;
            }
        }
        let mut networks = std::mem::take(&mut *self.networks.lock());
        if let Ok(RuntimeReply::Networks(list)) =
            self.rt.execute(RuntimeRequest::ListNetworks { labels: labels.clone() }).await
        {
            networks.extend(list.into_iter().map(|n| n.id));
        }
        for id in networks {
            let _ = self.rt.execute(RuntimeRequest::RemoveNetwork { id }).await;
        }
        if let Ok(RuntimeReply::Volumes(list)) = self.rt.execute(RuntimeRequest::ListVolumes { labels }).await {
            self.volumes.lock().extend(list.into_iter().map(|v| v.name));
        }
        let built = std::mem::take(&mut *self.built.lock());
        for tag in built {
            let _ = self.rt.execute(RuntimeRequest::RemoveImage { reference: tag, force: true }).await;
        }
        let contexts = std::mem::take(&mut *self.contexts.lock());
        if !contexts.is_empty() {
            self.host.prune_images(RUN_LABEL, &self.case);
        }
        for dir in contexts {
            self.host.remove_build_context(&dir);
        }
        let published = std::mem::take(&mut *self.published.lock());
        for id in published {
            let _ = self.rt.execute(RuntimeRequest::RemoveImage { reference: id, force: true }).await;
        }
        let volumes = std::mem::take(&mut *self.volumes.lock());
        for name in volumes {
            let _ = self.host.remove_volume(&name);
        }
    }

    /// A named volume's name for this case, removed at cleanup if the case left it.
    pub fn volume(&self, suffix: &str) -> String {
        let name = self.name(suffix);
        self.volumes.lock().push(name.clone());
        name
    }

    /// This case's label, which its containers, networks and volumes carry.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(RUN_LABEL.to_string(), self.case.clone())])
    }

    /// A network's name for this case, removed at cleanup if the case left it.
    pub fn network(&self, suffix: &str) -> String {
        let name = self.name(suffix);
        self.networks.lock().push(name.clone());
        name
    }

    /// Create network `name` with this case's label and `labels`.
    pub async fn create_network(&self, name: &str, labels: &[(&str, &str)]) -> RuntimeResult {
        let mut all = self.labels();
        all.extend(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.exec(RuntimeRequest::CreateNetwork(NetworkCreate { name: name.into(), labels: all })).await
    }

    /// A network of this case (`network(suffix)`), created: its id.
    pub async fn new_network(&self, suffix: &str) -> String {
        let name = self.network(suffix);
        match self.create_network(&name, &[]).await {
            Ok(RuntimeReply::Created { id }) => id,
            other => panic!("network create failed: {other:?}"),
        }
    }

    pub async fn inspect_network(&self, id: &str) -> Result<NetworkInfo, RuntimeError> {
        match self.exec(RuntimeRequest::InspectNetwork { id: id.into() }).await? {
            RuntimeReply::Network(info) => Ok(info),
            other => panic!("inspect-network replied {other:?}"),
        }
    }

    /// Create volume `name` with `labels` (exactly those).
    pub async fn create_volume(&self, name: &str, labels: &[(&str, &str)]) -> Result<VolumeInfo, RuntimeError> {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        match self.exec(RuntimeRequest::CreateVolume(VolumeCreate { name: name.into(), labels })).await? {
            RuntimeReply::Volume(info) => Ok(info),
            other => panic!("create-volume replied {other:?}"),
        }
    }

    /// A build context directory of this case holding `files`, removed at cleanup.
    pub fn context(&self, suffix: &str, files: &[(&str, &str)]) -> String {
        let files = files.iter().map(|(p, c)| (p.to_string(), c.to_string())).collect();
        let dir = self.host.build_context(&self.name(suffix), &files);
        self.contexts.lock().push(dir.clone());
        dir
    }

    /// Replay a sequence `drydock runtime diff` found, each step with what Docker observed (a
    /// case it printed calls this): every step must observe what Docker did.
    pub async fn replay(&self, steps: &[(drydock_runtime_diff::ops::Op, &str)]) {
        use drydock_runtime_diff::requests::{Names, build_context_files};
        let files = build_context_files(&self.image);
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        let context = self.context("diff", &files);
        let names = Names::new(&self.case, "0", self.host.free_port(), &self.image, &context);
        if let Err(disagreement) = drydock_runtime_diff::replay(self.rt.clone(), names, steps).await {
            panic!("{disagreement}");
        }
    }

    /// A tag for an image this case builds (removed at cleanup).
    pub fn tag(&self, suffix: &str) -> String {
        let tag = format!("drydock-test/{}-{suffix}:1", self.case);
        self.built.lock().push(tag.clone());
        tag
    }

    /// Build `Dockerfile` in `context` as `tag`: the progress lines.
    pub async fn build(&self, context: &str, tag: &str, target: Option<&str>) -> Result<Vec<String>, RuntimeError> {
        let build = ImageBuild {
            context: context.into(),
            dockerfile: "Dockerfile".into(),
            target: target.map(str::to_string),
            tag: tag.into(),
            ..Default::default()
        };
        match self.exec(RuntimeRequest::BuildImage(build)).await? {
            RuntimeReply::Built { progress } => Ok(progress),
            other => panic!("build replied {other:?}"),
        }
    }

    /// A repository of this case's own in the test registry: `127.0.0.1:5487/drydock-test/<case>-<suffix>`.
    pub fn repo(&self, suffix: &str) -> String {
        format!("{TEST_REGISTRY}/drydock-test/{}-{suffix}", self.case)
    }

    /// Publish new content under `references` in the registry (removed locally at cleanup).
    pub fn publish(&self, references: &[&str]) -> Published {
        let published = self.host.publish(references);
        self.published.lock().push(published.id.clone());
        published
    }

    pub async fn pull(&self, reference: &str) -> Result<Vec<String>, RuntimeError> {
        match self.exec(RuntimeRequest::PullImage { reference: reference.into() }).await? {
            RuntimeReply::Pulled { progress } => Ok(progress),
            other => panic!("pull replied {other:?}"),
        }
    }

    pub async fn inspect_image(&self, reference: &str) -> Result<ImageInfo, RuntimeError> {
        match self.exec(RuntimeRequest::InspectImage { reference: reference.into() }).await? {
            RuntimeReply::Image(image) => Ok(image),
            other => panic!("inspect-image replied {other:?}"),
        }
    }

    pub async fn remove_image(&self, reference: &str, force: bool) -> RuntimeResult {
        self.exec(RuntimeRequest::RemoveImage { reference: reference.into(), force }).await
    }

    pub fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.case)
    }

    pub fn spec(&self, suffix: &str, command: &[&str]) -> ContainerCreate {
        ContainerCreate {
            name: self.name(suffix),
            image: self.image.clone(),
            command: command.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            labels: BTreeMap::from([(RUN_LABEL.to_string(), self.case.clone())]),
            ..Default::default()
        }
    }

    pub async fn exec(&self, request: RuntimeRequest) -> RuntimeResult {
        self.rt.execute(request).await
    }

    pub async fn try_create(&self, spec: ContainerCreate) -> RuntimeResult {
        self.exec(RuntimeRequest::CreateContainer(spec)).await
    }

    /// Create a container that sleeps (default command) and return its id.
    pub async fn create(&self, suffix: &str) -> String {
        self.create_with(self.spec(suffix, &[])).await
    }

    pub async fn create_with(&self, spec: ContainerCreate) -> String {
        match self.try_create(spec).await {
            Ok(RuntimeReply::Created { id }) => id,
            other => panic!("create failed: {other:?}"),
        }
    }

    pub async fn start(&self, id: &str) {
        self.exec(RuntimeRequest::StartContainer { id: id.into() }).await.unwrap();
    }

    pub async fn stop(&self, id: &str) -> RuntimeResult {
        self.exec(RuntimeRequest::StopContainer { id: id.into(), timeout_secs: 1 }).await
    }

    pub async fn remove(&self, id: &str, force: bool) -> RuntimeResult {
        self.exec(RuntimeRequest::RemoveContainer { id: id.into(), force }).await
    }

    pub async fn inspect(&self, id: &str) -> Result<ContainerInfo, RuntimeError> {
        match self.exec(RuntimeRequest::InspectContainer { id: id.into() }).await? {
            RuntimeReply::Container(info) => Ok(info),
            other => panic!("inspect replied {other:?}"),
        }
    }

    pub async fn list(&self, labels: &[(&str, &str)]) -> Vec<ContainerInfo> {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        match self.exec(RuntimeRequest::ListContainers { labels }).await.unwrap() {
            RuntimeReply::Containers(list) => list,
            other => panic!("list replied {other:?}"),
        }
    }

    pub async fn events(&self, id: &str) -> Vec<RuntimeEvent> {
        match self.exec(RuntimeRequest::ContainerEvents { id: id.into(), since: self.since }).await.unwrap() {
            RuntimeReply::Events(events) => events,
            other => panic!("events replied {other:?}"),
        }
    }

    /// Retry `check` until it passes (Docker does some things asynchronously); at most ~20 s.
    /// On a loaded 2-core host (the CI run, its Docker tests in parallel) Docker's event stream
    /// was seen to lag more than 5 s behind the container it reports.
    pub async fn eventually<T>(&self, what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
        for _ in 0..400 {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{}: gave up waiting for {what}", self.case);
    }
}
