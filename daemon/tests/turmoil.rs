//! The API's network layer on turmoil's simulated network: the real HTTP server
//! ([`serve_plain`], plain HTTP: there is no TLS on the simulated network) and the real client
//! ([`drydock_daemon::client`]) over simulated TCP, with lost replies, partitions, latency,
//! random link failures and a crashing server host, deterministically from a seed.
//!
//! Each test runs `DRYDOCK_TURMOIL_SEEDS` seeds (default 50). A failing seed names itself and
//! the command that runs only it: `DRYDOCK_TURMOIL_SEED=S cargo test -p drydock-daemon --test
//! turmoil -- NAME`.
//!
//! What is deterministic: the network (latency, losses, partitions), the fault schedule and every
//! task's interleaving come from the seed. What is not: `generateName` suffixes and timestamps
//! (the server reads the wall clock), which no check depends on.
//!
//! The server keeps its objects in the SQLite store (on tmpfs when there is one), so the crash
//! test restarts it on its durable state.

#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use drydock_adapters::SharedStore;
use drydock_daemon::api::{ApiOptions, REQUEST_ID_ANNOTATION, router};
use drydock_daemon::client::{Client, ClientOptions, Connector, Deleted, WatchEvent, Watcher, WatcherStats};
use drydock_daemon::server::{Listener, serve_plain};
use drydock_engine::api::{Namespace, NamespaceSpec, Object, ObjectMeta, Resource};
use drydock_engine::store::{EventType, Registry, StoreConfig, StoreRequest};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const PORT: u16 = 6443;
const PCS: &str = "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers";
const KIND: &str = "PhysicalContainer";

// ---------------------------------------------------------------- seeds

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("DRYDOCK_TURMOIL_SEED") {
        return vec![seed.parse().expect("DRYDOCK_TURMOIL_SEED must be a number")];
    }
    let count = std::env::var("DRYDOCK_TURMOIL_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(50u64);
    (0..count).collect()
}

/// Run `check` for every seed; the first failure names its seed and how to run only it.
fn for_each_seed(test: &str, check: impl Fn(u64)) {
    for seed in seeds() {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(seed)));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "{test} failed at seed {seed}: {message}\nreproduce: DRYDOCK_TURMOIL_SEED={seed} cargo test -p drydock-daemon --test turmoil -- {test}"
            );
        }
    }
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

fn between(rng: &mut impl RngCore, low: u64, high: u64) -> u64 {
    low + rng.next_u64() % (high - low + 1)
}

fn millis(rng: &mut impl RngCore, low: u64, high: u64) -> Duration {
    Duration::from_millis(between(rng, low, high))
}

/// A simulation with the seed's network: latency between 1 ms and 1-40 ms, and, when
/// `fail_rate` > 0, links that break at random and heal.
fn sim(seed: u64, fail_rate: f64) -> turmoil::Sim<'static> {
    let mut knobs = rng(seed, 99);
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(600))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(millis(&mut knobs, 1, 40))
        .fail_rate(fail_rate)
        .repair_rate(0.3);
    builder.build()
}

// ---------------------------------------------------------------- the server

/// turmoil's listener as a [`Listener`] (the orphan rule wants a type of ours).
struct SimListener(turmoil::net::TcpListener);

impl Listener for SimListener {
    type Conn = turmoil::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(turmoil::net::TcpStream, SocketAddr)> {
        self.0.accept().await
    }
}

/// What the server saw, across its restarts.
#[derive(Default)]
struct Record {
    /// The request id of every create answered `201 Created` (a new object).
    created: Vec<String>,
    /// The request id of every create answered `200 OK` (a repeat, answered with the earlier
    /// object).
    replayed: Vec<String>,
    /// Every change of the kind, from the store's log, in order: (resourceVersion, type, name).
    history: Vec<(u64, EventType, String)>,
}

#[derive(Clone)]
struct ServerSetup {
    db: PathBuf,
    log_capacity: usize,
    record: Arc<Mutex<Record>>,
    /// The chance that the reply to a successful create is lost: the server partitions itself
    /// from `clients` right after the commit, and heals 50 ms - 2 s later.
    lose_reply: f64,
    clients: Vec<String>,
    seed: u64,
    boots: Arc<AtomicU64>,
}

fn open_store(db: &Path, log_capacity: usize, uid_seed: u64) -> Arc<SharedStore> {
    let config = StoreConfig { uid_seed, log_capacity, ..StoreConfig::default() };
    SharedStore::new(drydock_store_sqlite::open_store(db, Registry::builtin(), config).unwrap())
}

fn add_server(sim: &mut turmoil::Sim<'static>, setup: ServerSetup) {
    sim.host("server", move || {
        let setup = setup.clone();
        async move {
            let boot = setup.boots.fetch_add(1, Ordering::SeqCst);
            let store = open_store(&setup.db, setup.log_capacity, setup.seed.wrapping_mul(1000).wrapping_add(boot));
            let demo = ObjectMeta::named(None, "demo");
            if store.get(&drydock_engine::api::ObjectKey::cluster(Namespace::KIND, "demo")).is_none() {
                store
                    .execute(StoreRequest::Create { object: Object::from_spec::<Namespace>(demo, &NamespaceSpec {}) })
                    .unwrap();
            }
            tokio::spawn(record_history(store.clone(), setup.record.clone()));
            let faults = Arc::new(Mutex::new(rng(setup.seed, 1000 + boot)));
            let options = ApiOptions { bookmark_interval: Duration::from_secs(1), ..ApiOptions::default() };
            let layer_setup = setup.clone();
            let app = router(store, options).layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                observe_create(layer_setup.clone(), faults.clone(), request, next)
            }));
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
            serve_plain(SimListener(listener), app, std::future::pending(), Duration::ZERO).await;
            Ok(())
        }
    });
}

/// Copy the store's changes of the kind into the record as they happen (the test's record of
/// the server's history; a store whose log is short is read often enough not to lose any).
async fn record_history(store: Arc<SharedStore>, record: Arc<Mutex<Record>>) {
    let mut revisions = store.subscribe();
    let mut seen = record.lock().history.last().map_or(0, |(rv, _, _)| *rv);
    loop {
        let (events, revision): (Vec<(u64, EventType, String)>, u64) = store.read(|s| {
            let since = s.events_since(seen).expect("the history recorder fell behind the store's log");
            let events = since
                .filter(|e| e.object.kind == KIND)
                .map(|e| (e.resource_version(), e.event, e.object.metadata.name.to_string()))
                .collect();
            (events, s.resource_version())
        });
        seen = revision;
        record.lock().history.extend(events);
        if revisions.changed().await.is_err() {
            return;
        }
    }
}

/// Record what each create was answered, and maybe lose the reply of a committed one.
async fn observe_create(setup: ServerSetup, faults: Arc<Mutex<ChaCha8Rng>>, request: Request, next: Next) -> Response {
    let is_create = request.method() == axum::http::Method::POST && request.uri().path() == PCS;
    let response = next.run(request).await;
    if !is_create || !response.status().is_success() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let object: Value = serde_json::from_slice(&bytes).unwrap();
    let id = object["metadata"]["annotations"][REQUEST_ID_ANNOTATION].as_str().unwrap_or_default().to_string();
    {
        let mut record = setup.record.lock();
        if parts.status == axum::http::StatusCode::CREATED { record.created.push(id) } else { record.replayed.push(id) }
    }
    let (lose, heal_after) = {
        let mut faults = faults.lock();
        let roll = faults.next_u64() as f64 / u64::MAX as f64;
        (roll < setup.lose_reply, millis(&mut *faults, 50, 2000))
    };
    if lose {
        for client in &setup.clients {
            turmoil::partition("server", client.as_str());
        }
        let clients = setup.clients.clone();
        tokio::spawn(async move {
            tokio::time::sleep(heal_after).await;
            for client in &clients {
                turmoil::repair("server", client.as_str());
            }
        });
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A directory for the store: on tmpfs when there is one (SQLite syncs every commit).
fn store_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() }
}

fn setup(seed: u64, dir: &tempfile::TempDir, log_capacity: usize, lose_reply: f64, clients: &[String]) -> ServerSetup {
    ServerSetup {
        db: dir.path().join("store.db"),
        log_capacity,
        record: Arc::default(),
        lose_reply,
        clients: clients.to_vec(),
        seed,
        boots: Arc::default(),
    }
}

/// The stored objects of the kind after the simulation, from the database.
fn stored(db: &Path) -> BTreeMap<String, Value> {
    let store = open_store(db, 100_000, 0);
    store.read(|s| {
        s.list(Some(KIND), Some("demo"))
            .iter()
            .map(|o| {
                let request_id = o.metadata.annotations.get(REQUEST_ID_ANNOTATION).cloned().unwrap_or_default();
                (
                    o.metadata.name.to_string(),
                    json!({"uid": o.metadata.uid.0, "requestId": request_id,
                    "resourceVersion": o.metadata.resource_version}),
                )
            })
            .collect()
    })
}

// ---------------------------------------------------------------- the clients

#[derive(Clone)]
struct SimConnector;

impl Connector for SimConnector {
    type Stream = turmoil::net::TcpStream;

    async fn connect(&self) -> io::Result<turmoil::net::TcpStream> {
        turmoil::net::TcpStream::connect(("server", PORT)).await
    }
}

fn client(name: &str) -> Client<SimConnector> {
    Client::new(
        SimConnector,
        ClientOptions {
            request_timeout: Duration::from_secs(1),
            backoff_initial: Duration::from_millis(20),
            backoff_max: Duration::from_millis(500),
            give_up_after: Duration::from_secs(300),
            watch_idle_timeout: Duration::from_secs(3),
            request_id_prefix: name.to_string(),
            ..ClientOptions::default()
        },
    )
}

fn container(name: &str, generate: bool) -> Value {
    let metadata = if generate { json!({"generateName": format!("{name}-")}) } else { json!({"name": name}) };
    json!({"apiVersion": "drydock.dev/v1", "kind": KIND, "metadata": metadata, "spec": {"image": "busybox:1.36"}})
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap().to_string()
}

fn uid_of(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap().to_string()
}

fn request_id_of(object: &Value) -> String {
    object["metadata"]["annotations"][REQUEST_ID_ANNOTATION].as_str().unwrap().to_string()
}

/// What the clients were answered: name -> (uid, request id) of each create, and the deletes.
#[derive(Default)]
struct Answers {
    created: BTreeMap<String, (String, String)>,
    deleted: BTreeSet<String>,
    gone: u64,
}

/// `ops` creates (every other one with `generateName`) by `name`, and a delete of every third
/// object created, paced by the seed.
async fn workload(
    client: Client<SimConnector>,
    name: String,
    ops: u64,
    seed: u64,
    stream: u64,
    answers: Arc<Mutex<Answers>>,
) -> turmoil::Result {
    let mut pace = rng(seed, stream);
    let mut mine = Vec::new();
    for k in 0..ops {
        tokio::time::sleep(millis(&mut pace, 0, 200)).await;
        let object = client.create(PCS, container(&format!("{name}-{k}"), k % 2 == 1)).await;
        let object = object.map_err(|e| format!("{name}: create {k}: {e}"))?;
        let (created, uid, id) = (name_of(&object), uid_of(&object), request_id_of(&object));
        let previous = answers.lock().created.insert(created.clone(), (uid, id));
        assert!(previous.is_none(), "{name}: two creates were answered with {created}");
        mine.push(created);
        if k % 3 == 2 {
            let victim = mine.remove(between(&mut pace, 0, mine.len() as u64 - 1) as usize);
            let deleted =
                client.delete(&format!("{PCS}/{victim}")).await.map_err(|e| format!("{name}: delete {victim}: {e}"))?;
            let mut answers = answers.lock();
            if deleted == Deleted::Gone {
                answers.gone += 1;
            }
            answers.deleted.insert(victim);
        }
    }
    Ok(())
}

/// The stored objects are exactly the ones the clients were told they created and did not
/// delete, each with the uid they were answered, each request id once; the server created
/// once per request id.
fn check_no_loss_no_duplicate(db: &Path, record: &Record, answers: &Answers) {
    let stored = stored(db);
    let expected: BTreeSet<&String> = answers.created.keys().filter(|n| !answers.deleted.contains(*n)).collect();
    let have: BTreeSet<&String> = stored.keys().collect();
    assert_eq!(have, expected, "the stored objects are not the ones the clients created and kept");
    for (name, stored) in &stored {
        let (uid, id) = &answers.created[name];
        assert_eq!(stored["uid"], json!(uid), "{name}: the client was answered another object than the one stored");
        assert_eq!(stored["requestId"], json!(id), "{name}");
    }
    let mut ids = BTreeSet::new();
    for id in &record.created {
        assert!(ids.insert(id), "the server created two objects for the request id {id}");
    }
    let answered: BTreeSet<&String> = answers.created.values().map(|(_, id)| id).collect();
    assert!(ids.is_subset(&answered), "the server created objects no client was told of");
    // A create can commit and the host crash before its answer is recorded: its retry is then
    // recorded as a replay.
    for id in answered {
        assert!(ids.contains(id) || record.replayed.contains(id), "{id}: answered, but never created");
    }
}

// ---------------------------------------------------------------- watches

/// A consumer's view, built from a watcher's events, and the events it saw.
#[derive(Default)]
struct View {
    objects: BTreeMap<String, u64>,
    /// (resourceVersion, type, name), or (resourceVersion, None, "") for a restart.
    seen: Vec<(u64, Option<EventType>, String)>,
    /// The watcher's, when it was done.
    stats: WatcherStats,
}

impl View {
    fn apply(&mut self, event: WatchEvent) {
        let rv = event.resource_version();
        match event {
            WatchEvent::Restarted { objects, .. } => {
                self.objects = objects.iter().map(|o| (name_of(o), rv_of(o))).collect();
                self.seen.push((rv, None, String::new()));
            }
            WatchEvent::Added(o) => {
                self.objects.insert(name_of(&o), rv);
                self.seen.push((rv, Some(EventType::Added), name_of(&o)));
            }
            WatchEvent::Modified(o) => {
                self.objects.insert(name_of(&o), rv);
                self.seen.push((rv, Some(EventType::Modified), name_of(&o)));
            }
            WatchEvent::Deleted(o) => {
                self.objects.remove(&name_of(&o));
                self.seen.push((rv, Some(EventType::Deleted), name_of(&o)));
            }
        }
    }
}

fn rv_of(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// Watch until the watcher reached `target` (set when the writers are done).
async fn watch_until(
    mut watcher: Watcher<SimConnector>,
    target: Arc<AtomicU64>,
    view: Arc<Mutex<View>>,
) -> turmoil::Result {
    loop {
        if let Ok(event) = tokio::time::timeout(Duration::from_millis(200), watcher.next()).await {
            view.lock().apply(event.map_err(|e| format!("watch: {e}"))?);
        }
        let target = target.load(Ordering::SeqCst);
        if target != 0 && watcher.resource_version().is_some_and(|rv| rv >= target) {
            let stats = watcher.stats();
            assert_eq!(stats.stale_dropped, 0, "the server sent a change twice or out of order: {stats:?}");
            view.lock().stats = stats;
            return Ok(());
        }
    }
}

/// The consumer saw every change of the server's history once, in order, except those a relist
/// after `410 Gone` replaced; and its view is the server's final state.
fn check_watch(
    view: &View,
    history: &[(u64, EventType, String)],
    stored: &BTreeMap<String, Value>,
    gone_allowed: bool,
) {
    let mut cursor = None;
    let mut restarts = 0;
    for (rv, kind, name) in &view.seen {
        if let Some(cursor) = cursor {
            assert!(*rv > cursor, "versions not increasing: {cursor} then {rv}");
        }
        match kind {
            None => {
                restarts += 1;
                assert!(cursor.is_none() || gone_allowed, "a relist although the log reached back: {:?}", view.seen);
            }
            Some(kind) => {
                let at = history.iter().find(|(h, _, _)| h == rv);
                assert_eq!(at, Some(&(*rv, *kind, name.clone())), "an event the server's history does not have");
                let skipped: Vec<_> =
                    history.iter().filter(|(h, _, _)| cursor.is_some_and(|c| *h > c) && h < rv).collect();
                assert!(skipped.is_empty(), "changes missed before {rv}: {skipped:?}");
            }
        }
        cursor = Some(*rv);
    }
    assert!(restarts >= 1, "the watcher never listed");
    let last = history.last().map_or(0, |(rv, _, _)| *rv);
    assert!(cursor.unwrap_or(0) >= last, "the consumer stopped at {cursor:?}, before {last}");
    let want: BTreeMap<String, u64> =
        stored.iter().map(|(name, o)| (name.clone(), o["resourceVersion"].as_u64().unwrap())).collect();
    assert_eq!(view.objects, want, "the consumer's view is not the server's state");
}

// ---------------------------------------------------------------- the tests

/// A reply lost after the commit: the client's retry (same request id) is answered with the
/// object the first attempt made, so nothing is duplicated and no write that happened is
/// reported as failed, for named and `generateName` creates alike.
#[test]
fn lost_reply_after_commit_does_not_duplicate() {
    let replayed = Arc::new(AtomicU64::new(0));
    for_each_seed("lost_reply_after_commit_does_not_duplicate", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..2).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.3, &clients);
        let mut sim = sim(seed, 0.0);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers) = (client(name), name.clone(), answers.clone());
            sim.client(name.clone(), workload(client, name, 12, seed, i as u64, answers));
        }
        sim.run().unwrap();
        drop(sim);
        let record = setup.record.lock();
        check_no_loss_no_duplicate(&setup.db, &record, &answers.lock());
        replayed.fetch_add(record.replayed.len() as u64, Ordering::SeqCst);
    });
    if seeds().len() >= 10 {
        assert!(replayed.load(Ordering::SeqCst) > 0, "no seed lost a reply: the test tests nothing");
    }
}

/// Partitions between a watcher and the server while a writer changes things: the watcher
/// resumes from its last resourceVersion (a long log) or relists on `410 Gone` (a log of 4
/// events, odd seeds), and the consumer sees every change once, in order.
#[test]
fn partitioned_watch_sees_every_change_once_in_order() {
    let (resumes, gone) = (AtomicU64::new(0), AtomicU64::new(0));
    for_each_seed("partitioned_watch_sees_every_change_once_in_order", |seed| {
        let run = partitioned_watch(seed);
        check_watch(&run.view, &run.history, &run.stored, seed % 2 == 1);
        resumes.fetch_add(run.view.stats.resumes, Ordering::SeqCst);
        gone.fetch_add(run.view.stats.gone, Ordering::SeqCst);
    });
    if seeds().len() >= 10 {
        assert!(resumes.load(Ordering::SeqCst) > 0, "no watch was ever resumed: the test tests nothing");
        assert!(gone.load(Ordering::SeqCst) > 0, "no watch was ever answered 410 Gone: the relist is untested");
    }
}

/// What one run of the partitioned watch gave.
struct WatchRun {
    view: View,
    history: Vec<(u64, EventType, String)>,
    stored: BTreeMap<String, Value>,
    elapsed: Duration,
}

/// A writer, a watcher, and partitions between the watcher and the server (a log of 4 events
/// on odd seeds).
fn partitioned_watch(seed: u64) -> WatchRun {
    let dir = store_dir();
    let short_log = seed % 2 == 1;
    let setup = setup(seed, &dir, if short_log { 4 } else { 100_000 }, 0.0, &[]);
    let mut sim = sim(seed, 0.0);
    add_server(&mut sim, setup.clone());
    let answers = Arc::new(Mutex::new(Answers::default()));
    let target = Arc::new(AtomicU64::new(0));
    let view = Arc::new(Mutex::new(View::default()));
    {
        let (answers, target) = (answers.clone(), target.clone());
        sim.client("writer", async move {
            let writer = client("writer");
            workload(writer.clone(), "writer".into(), 30, seed, 1, answers).await?;
            let list = writer.list(PCS).await.map_err(|e| e.to_string())?;
            target.store(list.resource_version, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        let (view, target) = (view.clone(), target.clone());
        sim.client("watcher", async move { watch_until(client("watcher").watcher(PCS), target, view).await });
    }
    sim.client("chaos", async move {
        let mut chaos = rng(seed, 7);
        for _ in 0..between(&mut chaos, 1, 4) {
            tokio::time::sleep(millis(&mut chaos, 100, 2500)).await;
            turmoil::partition("server", "watcher");
            tokio::time::sleep(millis(&mut chaos, 200, 5000)).await;
            turmoil::repair("server", "watcher");
        }
        Ok(())
    });
    sim.run().unwrap();
    let elapsed = sim.elapsed();
    drop(sim);
    let history = std::mem::take(&mut setup.record.lock().history);
    let stored = stored(&setup.db);
    let view = std::mem::take(&mut *view.lock());
    WatchRun { view, history, stored, elapsed }
}

/// A seed reproduces: the same seed run twice gives the same run, to the simulated millisecond
/// (names made by `generateName` aside: they come from the wall clock).
#[test]
fn a_seed_reproduces() {
    let shape = |run: &WatchRun| {
        let seen: Vec<(u64, Option<EventType>)> = run.view.seen.iter().map(|(rv, kind, _)| (*rv, *kind)).collect();
        let history: Vec<(u64, EventType)> = run.history.iter().map(|(rv, kind, _)| (*rv, *kind)).collect();
        (run.elapsed, seen, history, run.view.stats, run.stored.len())
    };
    for seed in [2, 3] {
        let (first, second) = (partitioned_watch(seed), partitioned_watch(seed));
        assert_eq!(shape(&first), shape(&second), "seed {seed} ran differently twice");
    }
}

/// The server host crashes (once or twice, at seeded moments) and restarts on its durable
/// state while clients write and watch: every client request succeeds once, and every
/// watcher's view converges to the server's state.
#[test]
fn host_crash_and_restart_clients_converge() {
    for_each_seed("host_crash_and_restart_clients_converge", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..3).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.0, &[]);
        let mut sim = sim(seed, 0.0);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        let done = Arc::new(AtomicU64::new(0));
        let target = Arc::new(AtomicU64::new(0));
        let views: Vec<Arc<Mutex<View>>> = (0..2).map(|_| Arc::default()).collect();
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers, done, target) =
                (client(name), name.clone(), answers.clone(), done.clone(), target.clone());
            let writers = clients.len() as u64;
            sim.client(name.clone(), async move {
                workload(client.clone(), name, 15, seed, i as u64, answers).await?;
                if done.fetch_add(1, Ordering::SeqCst) + 1 == writers {
                    let list = client.list(PCS).await.map_err(|e| e.to_string())?;
                    target.store(list.resource_version, Ordering::SeqCst);
                }
                Ok(())
            });
        }
        for (i, view) in views.iter().enumerate() {
            let (view, target) = (view.clone(), target.clone());
            let name = format!("watcher{i}");
            sim.client(name.clone(), async move { watch_until(client(&name).watcher(PCS), target, view).await });
        }
        let mut schedule = rng(seed, 5);
        let mut crashes: Vec<(Duration, Duration)> = (0..between(&mut schedule, 1, 2))
            .map(|_| (millis(&mut schedule, 100, 1000), millis(&mut schedule, 10, 1500)))
            .collect();
        crashes.sort();
        let mut next = crashes.into_iter().peekable();
        let mut down_until = None;
        loop {
            let elapsed = sim.elapsed();
            if let Some(until) = down_until
                && elapsed >= until
            {
                sim.bounce("server");
                down_until = None;
            }
            if down_until.is_none()
                && let Some((at, _)) = next.peek()
                && elapsed >= *at
            {
                let (_, downtime) = next.next().unwrap();
                sim.crash("server");
                down_until = Some(elapsed + downtime);
            }
            if sim.step().unwrap() {
                break;
            }
        }
        assert!(
            setup.boots.load(Ordering::SeqCst) >= 2,
            "the server never restarted (finished at {:?}, {} creates answered)",
            sim.elapsed(),
            answers.lock().created.len()
        );
        drop(sim);
        let stored = stored(&setup.db);
        check_no_loss_no_duplicate(&setup.db, &setup.record.lock(), &answers.lock());
        for view in &views {
            let want: BTreeMap<String, u64> =
                stored.iter().map(|(name, o)| (name.clone(), o["resourceVersion"].as_u64().unwrap())).collect();
            let view = view.lock();
            let seen: Vec<u64> = view.seen.iter().map(|(rv, _, _)| *rv).collect();
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "versions not increasing: {seen:?}");
            assert_eq!(view.objects, want, "a watcher did not converge");
        }
    });
}

/// Eight clients at once on a lossy, slow network: every create is answered once with the
/// object it made, no object is made twice, every delete is answered.
#[test]
fn many_clients_no_request_lost_or_doubled() {
    for_each_seed("many_clients_no_request_lost_or_doubled", |seed| {
        let dir = store_dir();
        let clients: Vec<String> = (0..8).map(|i| format!("client{i}")).collect();
        let setup = setup(seed, &dir, 100_000, 0.1, &clients);
        let mut sim = sim(seed, 0.02);
        add_server(&mut sim, setup.clone());
        let answers = Arc::new(Mutex::new(Answers::default()));
        for (i, name) in clients.iter().enumerate() {
            let (client, name, answers) = (client(name), name.clone(), answers.clone());
            sim.client(name.clone(), workload(client, name, 9, seed, i as u64, answers));
        }
        sim.run().unwrap();
        drop(sim);
        check_no_loss_no_duplicate(&setup.db, &setup.record.lock(), &answers.lock());
        let answers = answers.lock();
        assert_eq!(answers.created.len(), clients.len() * 9, "a create was lost");
        assert_eq!(answers.deleted.len(), clients.len() * 3, "a delete was lost");
    });
}
