//! The server of the turmoil tests: the real router on the SQLite store, served on a simulated
//! host that may crash and restart on its durable state, and the record of what it saw (its store's
//! history, what each create was answered, replies lost after the commit).

use super::*;

/// turmoil's listener as a [`Listener`] (the orphan rule wants a type of ours).
pub(super) struct SimListener(turmoil::net::TcpListener);

impl Listener for SimListener {
    type Conn = turmoil::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(turmoil::net::TcpStream, SocketAddr)> {
        self.0.accept().await
    }
}

/// What the server saw, across its restarts.
#[derive(Default)]
pub(super) struct Record {
    /// The request id of every create answered `201 Created` (a new object).
    pub(super) created: Vec<String>,
    /// The request id of every create answered `200 OK` (a repeat, answered with the earlier
    /// object).
    pub(super) replayed: Vec<String>,
    /// Every change of the kind, from the store's log, in order: (resourceVersion, type, name).
    pub(super) history: Vec<(u64, EventType, String)>,
}

#[derive(Clone)]
pub(super) struct ServerSetup {
    pub(super) db: PathBuf,
    pub(super) log_capacity: usize,
    pub(super) record: Arc<Mutex<Record>>,
    /// The chance that the reply to a successful create is lost: the server partitions itself
    /// from `clients` right after the commit, and heals 50 ms - 2 s later.
    pub(super) lose_reply: f64,
    pub(super) clients: Vec<String>,
    pub(super) seed: u64,
    pub(super) boots: Arc<AtomicU64>,
}

pub(super) fn open_store(db: &Path, log_capacity: usize, uid_seed: u64) -> Arc<SharedStore> {
    let config = StoreConfig { uid_seed, log_capacity, ..StoreConfig::default() };
    SharedStore::new(drydock_store_sqlite::open_store(db, Registry::builtin(), config).unwrap())
}

pub(super) fn add_server(sim: &mut turmoil::Sim<'static>, setup: ServerSetup) {
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
pub(super) async fn record_history(store: Arc<SharedStore>, record: Arc<Mutex<Record>>) {
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
pub(super) async fn observe_create(
    setup: ServerSetup,
    faults: Arc<Mutex<ChaCha8Rng>>,
    request: Request,
    next: Next,
) -> Response {
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
pub(super) fn store_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm).unwrap() } else { tempfile::tempdir().unwrap() }
}

pub(super) fn setup(
    seed: u64,
    dir: &tempfile::TempDir,
    log_capacity: usize,
    lose_reply: f64,
    clients: &[String],
) -> ServerSetup {
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
pub(super) fn stored(db: &Path) -> BTreeMap<String, Value> {
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
