//! The clients of the turmoil tests: the real client over simulated TCP, a workload of creates
//! (some with `generateName`) and deletes, what the clients were answered, and the check that the
//! store holds exactly what they were told.

use super::*;

#[derive(Clone)]
pub(super) struct SimConnector;

impl Connector for SimConnector {
    type Stream = turmoil::net::TcpStream;

    async fn connect(&self) -> io::Result<turmoil::net::TcpStream> {
        turmoil::net::TcpStream::connect(("server", PORT)).await
    }
}

pub(super) fn client(name: &str) -> Client<SimConnector> {
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

pub(super) fn container(name: &str, generate: bool) -> Value {
    let metadata = if generate { json!({"generateName": format!("{name}-")}) } else { json!({"name": name}) };
    json!({"apiVersion": "drydock.dev/v1", "kind": KIND, "metadata": metadata, "spec": {"image": "busybox:1.36"}})
}

pub(super) fn name_of(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap().to_string()
}

pub(super) fn uid_of(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap().to_string()
}

pub(super) fn request_id_of(object: &Value) -> String {
    object["metadata"]["annotations"][REQUEST_ID_ANNOTATION].as_str().unwrap().to_string()
}

/// What the clients were answered: name -> (uid, request id) of each create, and the deletes.
#[derive(Default)]
pub(super) struct Answers {
    pub(super) created: BTreeMap<String, (String, String)>,
    pub(super) deleted: BTreeSet<String>,
    pub(super) gone: u64,
}

/// `ops` creates (every other one with `generateName`) by `name`, and a delete of every third
/// object created, paced by the seed.
pub(super) async fn workload(
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
pub(super) fn check_no_loss_no_duplicate(db: &Path, record: &Record, answers: &Answers) {
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
