//! The production driver: a tokio loop around the sans-IO engine.
//!
//! Each turn it feeds the engine every new store event (relisting if the log was compacted),
//! performs every request the engine has (store requests inline: the store is in-process; runtime
//! requests as concurrent tasks whose results come back over a channel), and then sleeps until a
//! runtime result arrives, the store changes, or the engine's next wakeup is due.
//!
//! *Guarantees* toward the runtime (the engine's, see `EngineConfig::max_runtime_in_flight`):
//! at most that many requests are inside it at once; the changes of one runtime object go in one
//! at a time; a change the engine gave up on (its timeout) runs on to its end
//! ([`Output::Detach`]), and its reply goes back to the engine, which learns from it that the
//! change has left the runtime and sends the object's next change only then. The one request the
//! driver sends of its own, the start's listing of this identity's containers, is not counted.

use crate::clock::SystemClock;
use crate::health::RuntimeHealth;
use crate::logs::{Captures, SharedLogs};
use crate::runtime::ProgressSink;
use crate::runtime::{Runtime, RuntimeNotice};
use crate::store::SharedStore;
use drydock_engine::api::{ObjectKey, Uid, names};
use drydock_engine::controllers::ControllerConfig;
use drydock_engine::logs::{Channel, Subject};
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{EventType, Store, WatchEvent};
use drydock_engine::{Engine, EngineConfig, Input, OpId, Output};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How the earlier life of an engine under the same identity ended, as its state dir tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predecessor {
    /// Unknown, or killed: a create it sent may still land for a while (the runtime timeout).
    MayHaveCrashed,
    /// It stopped with nothing in flight ([`Driver::stop`] returned `true`), or there was none.
    StoppedCleanly,
}

pub struct Driver<R: Runtime> {
    engine: Engine,
    store: Arc<SharedStore>,
    runtime: Arc<R>,
    clock: SystemClock,
    /// The store revision the engine has seen; `None` until the first list.
    watch_rv: Option<u64>,
    results_tx: mpsc::UnboundedSender<(OpId, RuntimeResult)>,
    results: mpsc::UnboundedReceiver<(OpId, RuntimeResult)>,
    runtime_events: Option<mpsc::UnboundedReceiver<RuntimeNotice>>,
    /// Runtime requests in flight, so they can be cancelled.
    tasks: BTreeMap<OpId, Task>,
    /// Requests the engine gave up on that still run inside the runtime ([`Output::Detach`]):
    /// their replies tell the engine they have left it.
    detached: BTreeSet<OpId>,
    logs: SharedLogs,
    captures: Captures,
    /// Containers already there were given a capture (once, at the first run).
    captured_at_boot: bool,
    /// The ids of this identity's containers that were there at the first run, listed in the
    /// background: a runtime slow to answer must not hold the engine back.
    boot_listing: Option<tokio::sync::oneshot::Receiver<Vec<String>>>,
    /// Per image object: the progress lines of its pull in flight streamed so far.
    streamed: Arc<parking_lot::Mutex<BTreeMap<Uid, Vec<String>>>>,
    /// Start requests in flight: op id -> container id.
    starts: BTreeMap<OpId, String>,
    health: RuntimeHealth,
}

/// A driver running in a task of its own ([`Driver::spawn`]).
pub struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stop the driver and wait for its task to end; a panic in it is re-raised here.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
    }
}

/// A runtime request in flight, so it can be aborted.
struct Task {
    abort: tokio::task::AbortHandle,
}

async fn next_event(events: &mut Option<mpsc::UnboundedReceiver<RuntimeNotice>>) -> Option<RuntimeNotice> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The boot listing's ids once it answers; never while there is none.
async fn boot_listed(listing: &mut Option<tokio::sync::oneshot::Receiver<Vec<String>>>) -> Vec<String> {
    match listing {
        Some(rx) => rx.await.unwrap_or_default(),
        None => std::future::pending().await,
    }
}

impl<R: Runtime> Driver<R> {
    pub fn new(engine: Engine, store: Arc<SharedStore>, runtime: Arc<R>) -> Self {
        let (results_tx, results) = mpsc::unbounded_channel();
        let logs = SharedLogs::default();
        Driver {
            engine,
            store,
            runtime,
            clock: SystemClock::default(),
            watch_rv: None,
            results_tx,
            results,
            runtime_events: None,
            tasks: BTreeMap::new(),
            detached: BTreeSet::new(),
            captures: Captures::new(logs.clone()),
            logs,
            captured_at_boot: false,
            boot_listing: None,
            streamed: Arc::default(),
            starts: BTreeMap::new(),
            health: RuntimeHealth::default(),
        }
    }

    /// The log hub this driver fills: the engine's diagnostics and pull output, and the output of
    /// every container drydock made.
    pub fn logs(&self) -> SharedLogs {
        self.logs.clone()
    }

    /// What this driver sees of its runtime, for a readiness probe.
    pub fn health(&self) -> RuntimeHealth {
        self.health.clone()
    }

    /// A driver running the built-in controllers as `identity`, assuming an earlier life under
    /// that identity may have crashed with runtime requests in flight.
    pub fn builtin(identity: &str, store: Arc<SharedStore>, runtime: Arc<R>) -> Self {
        Self::builtin_after(identity, store, runtime, Predecessor::MayHaveCrashed)
    }

    /// [`Driver::builtin`], told how the earlier life under `identity` ended.
    pub fn builtin_after(identity: &str, store: Arc<SharedStore>, runtime: Arc<R>, predecessor: Predecessor) -> Self {
        Self::with_components(identity, store, runtime, predecessor, &crate::Components::new())
    }

    /// A driver running `components`' controllers (the built-in ones and a user's) as
    /// `identity`, told how the earlier life under `identity` ended. The store should admit
    /// `components`' kinds (see [`SharedStore::open_sqlite_for`]).
    pub fn with_components(
        identity: &str,
        store: Arc<SharedStore>,
        runtime: Arc<R>,
        predecessor: Predecessor,
        components: &crate::Components,
    ) -> Self {
        let seed = crate::clock::wall_now().0;
        let config = EngineConfig {
            identity: identity.to_string(),
            seed,
            predecessor_stopped_cleanly: predecessor == Predecessor::StoppedCleanly,
            ..EngineConfig::default()
        };
        let engine =
            Engine::new(config, components.registry().clone(), components.controllers(&ControllerConfig::default()));
        Driver::new(engine, store, runtime)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Run until `stop` resolves.
    pub async fn run(&mut self, stop: impl Future<Output = ()>) {
        self.run_until(stop, |_| false).await;
    }

    /// Run until `done` holds for the store (true) or `stop` resolves (false).
    pub async fn run_until(&mut self, stop: impl Future<Output = ()>, done: impl Fn(&Store) -> bool) -> bool {
        let mut revisions = self.store.subscribe();
        let mut stop = std::pin::pin!(stop);
        if self.runtime_events.is_none() {
            self.runtime_events = self.runtime.events();
        }
        if !self.captured_at_boot {
            self.captured_at_boot = true;
            self.boot_listing = Some(self.list_existing());
        }
        loop {
            self.feed_watch();
            self.pump();
            if self.store.read(&done) {
                return true;
            }
            let wake = self.engine.next_wakeup().map(|t| self.clock.instant(t));
            let sleep = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = &mut stop => return false,
                Some((id, result)) = self.results.recv() => {
                    self.tasks.remove(&id);
                    // The container's stream is open again before the engine hears of the start
                    // (and can say Running, or Exited): a follower never takes the create's
                    // empty, ended capture for the run's.
                    if let Some(container) = self.starts.remove(&id)
                        && result.is_ok()
                    {
                        self.captures.restart(&self.runtime, &container);
                    }
                    if self.detached.remove(&id) {
                        // The engine learns from it that the request has left the runtime.
                        tracing::debug!(%id, ok = result.is_ok(), "a request given up on has left the runtime");
                    } else {
                        tracing::debug!(%id, ok = result.is_ok(), "runtime reply");
                    }
                    self.engine.handle(self.clock.now(), Input::RuntimeDone { id, result });
                }
                Some(notice) = next_event(&mut self.runtime_events) => {
                    let input = match notice {
                        RuntimeNotice::Event(event) => {
                            self.capture_on(&event);
                            Input::RuntimeEvent(event)
                        }
                        RuntimeNotice::Resynced => Input::RuntimeResync,
                    };
                    self.engine.handle(self.clock.now(), input);
                }
                Ok(()) = revisions.changed() => {}
                listed = boot_listed(&mut self.boot_listing) => {
                    self.boot_listing = None;
                    for id in listed {
                        self.captures.start(&self.runtime, &id);
                    }
                }
                () = sleep => {}
            }
        }
    }

    /// Stop: wait up to `grace` for the runtime requests in flight to be answered (a create
    /// cut off half-way could land after this process is gone), sending nothing new.
    ///
    /// *Guarantees*: `true` means no request of this driver is still in flight: a later life
    /// may be built with [`Predecessor::StoppedCleanly`]. `false` means some were abandoned.
    pub async fn stop(mut self, grace: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        while !self.tasks.is_empty() {
            match tokio::time::timeout_at(deadline, self.results.recv()).await {
                Ok(Some((id, _))) => {
                    self.tasks.remove(&id);
                }
                Ok(None) | Err(_) => break,
            }
        }
        if !self.tasks.is_empty() {
            tracing::warn!(in_flight = self.tasks.len(), "stopping with runtime requests unanswered");
        }
        self.tasks.is_empty()
    }

    /// Run in a task of its own until [`Running::stop`].
    pub fn spawn(mut self) -> Running
    where
        R: 'static,
    {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            self.run(async {
                let _ = stopped.await;
            })
            .await;
        });
        Running { stop, task }
    }

    /// Run until `done` holds, or give up after `timeout`.
    pub async fn run_for(&mut self, timeout: Duration, done: impl Fn(&Store) -> bool) -> bool {
        self.run_until(tokio::time::sleep(timeout), done).await
    }

    /// For a pull or a build: a sink that writes its progress lines to the image's `stdout` as they come
    /// (and remembers them, see `Output::Log` in `pump`).
    fn pull_progress(&self, request: &RuntimeRequest, key: &ObjectKey) -> Option<ProgressSink> {
        if !matches!(request, RuntimeRequest::PullImage { .. } | RuntimeRequest::BuildImage(_)) {
            return None;
        }
        let uid = self.store.read(|s| s.get(key).map(|o| o.metadata.uid.clone()))?;
        self.streamed.lock().insert(uid.clone(), Vec::new());
        let (logs, streamed, subject) = (self.logs.clone(), self.streamed.clone(), Subject::Object(uid.clone()));
        Some(Box::new(move |line: &str| {
            if let Some(lines) = streamed.lock().get_mut(&uid) {
                lines.push(line.to_string());
            }
            logs.write(|hub| hub.append(&subject, Channel::Stdout, crate::clock::wall_now(), line));
        }))
    }

    /// Start capturing the output of a container drydock made when it is created (a created
    /// container has none, and its capture ends at once) or starts; forget it once removed.
    fn capture_on(&mut self, event: &drydock_engine::runtime::RuntimeEvent) {
        use drydock_engine::runtime::EventAction;
        if !event.labels.contains_key(names::LABEL_OWNER_UID) {
            return;
        }
        match event.action {
            // A start drydock asked for reopens the capture when its reply comes (see `run_until`);
            // one it did not (a restart behind its back) does here.
            EventAction::Create | EventAction::Start => self.captures.start(&self.runtime, &event.container_id),
            EventAction::Destroy => self.captures.forget(&event.container_id),
            EventAction::Die { .. } => {}
        }
    }

    /// List, in the background, the containers this identity made that are already there (an
    /// earlier life's: the runtime kept their output), to capture them. Only this identity's,
    /// by its creator label: other tools' and other daemons' containers are none of its
    /// business, and on a busy host listing (and inspecting) them all took minutes.
    fn list_existing(&self) -> tokio::sync::oneshot::Receiver<Vec<String>> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let runtime = self.runtime.clone();
        let labels = BTreeMap::from([(names::LABEL_CREATOR.to_string(), self.engine.identity().to_string())]);
        tokio::spawn(async move {
            let ids = match runtime.execute(RuntimeRequest::ListContainers { labels }).await {
                Ok(RuntimeReply::Containers(containers)) => containers
                    .into_iter()
                    .filter(|c| c.labels.contains_key(names::LABEL_OWNER_UID))
                    .map(|c| c.id)
                    .collect(),
                Ok(_) => Vec::new(),
                Err(error) => {
                    tracing::warn!(%error, "could not list the containers of an earlier life: their output is not captured");
                    Vec::new()
                }
            };
            let _ = sender.send(ids);
        });
        receiver
    }

    /// Hand the engine what changed in the store. The first time (and after the log was compacted)
    /// that is a list, never a replay of the log: a durable store's log would replay as `Added`
    /// events the objects an earlier life of the engine created, and the engine would take them
    /// for objects no earlier life can have acted on.
    fn feed_watch(&mut self) {
        let since = self.watch_rv;
        let news = self.store.read(|s| match since.map(|rv| s.events_since(rv)) {
            Some(Ok(events)) => Ok(events.cloned().collect::<Vec<WatchEvent>>()),
            _ => Err((s.list(None, None), s.resource_version())),
        });
        match news {
            Ok(events) => {
                for event in events {
                    self.watch_rv = Some(event.resource_version());
                    if event.event == EventType::Deleted {
                        self.logs.write(|hub| hub.forget(&event.object.metadata.uid));
                    }
                    self.engine.handle(self.clock.now(), Input::Watch(event));
                }
            }
            Err((objects, resource_version)) => {
                if since.is_some() {
                    tracing::info!(?since, resource_version, "watch history compacted: relisting");
                }
                self.watch_rv = Some(resource_version);
                self.engine.handle(self.clock.now(), Input::Resync { objects, resource_version });
            }
        }
    }

    fn pump(&mut self) {
        while let Some(output) = self.engine.poll(self.clock.now()) {
            match output {
                Output::Store { id, request, .. } => {
                    let result = self.store.execute(request);
                    self.engine.handle(self.clock.now(), Input::StoreDone { id, result });
                }
                Output::Runtime { id, request, origin } => {
                    tracing::debug!(%id, controller = %origin.controller, key = %origin.key, request = %request.describe(), "runtime request");
                    let runtime = self.runtime.clone();
                    let results = self.results_tx.clone();
                    let progress = self.pull_progress(&request, &origin.key);
                    if let RuntimeRequest::StartContainer { id: container } = &request {
                        self.starts.insert(id, container.clone());
                    }
                    let health = self.health.clone();
                    let long = matches!(request, RuntimeRequest::PullImage { .. } | RuntimeRequest::BuildImage(_));
                    let task = tokio::spawn(async move {
                        let _inside = (!long).then(|| health.inside());
                        let result = match progress {
                            Some(progress) => runtime.execute_reporting(request, progress).await,
                            None => runtime.execute(request).await,
                        };
                        let _ = results.send((id, result));
                    });
                    self.tasks.insert(id, Task { abort: task.abort_handle() });
                }
                Output::Detach { id } => {
                    if self.tasks.contains_key(&id) {
                        tracing::debug!(%id, "given up on: it runs on inside the runtime, its object's next change waits for it");
                        self.detached.insert(id);
                    }
                }
                Output::Cancel { id } => {
                    self.starts.remove(&id);
                    self.detached.remove(&id);
                    if let Some(task) = self.tasks.remove(&id) {
                        tracing::debug!(%id, "cancelling runtime request");
                        task.abort.abort();
                    }
                }
                Output::Log(record) => {
                    // The engine hands back a pull's progress once it is done; lines already
                    // streamed while it ran are not written twice.
                    let streamed =
                        (record.channel == Channel::Stdout).then(|| self.streamed.lock().remove(&record.uid)).flatten();
                    if streamed.as_ref() != Some(&record.lines) {
                        self.logs.write(|hub| hub.apply(&record));
                    }
                }
            }
        }
        self.health.set_waiting(self.engine.runtime_held());
    }
}
