//! A torn-down connection to Docker (what a daemon restart looks like from the client: every
//! open connection, the event stream's included, drops, and new ones are refused for a while) is
//! survived: the event stream backs off, reconnects, tells the engine to look again, and the
//! engine notices what changed meanwhile, without leaking or duplicating containers.
//!
//! Docker itself is not restarted (that would break every other test using it): a proxy on a
//! Unix socket stands in front of it and is cut and restored.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::{TEST_IMAGE, docker_or_skip, ensure_test_image};
use drydock_adapters::{DockerRuntime, Driver, Runtime, RuntimeNotice, SharedStore};
use drydock_engine::api::{
    ContainerPhase, Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec,
    Resource, names,
};
use drydock_engine::store::{DeleteOptions, Store, StoreRequest};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::task::AbortHandle;

/// A proxy in front of Docker's socket that can be cut (open connections dropped, new ones
/// refused) and restored.
struct CuttableProxy {
    socket: PathBuf,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl CuttableProxy {
    fn new(name: &str) -> CuttableProxy {
        let socket = std::env::temp_dir().join(format!("drydock-{name}-{}.sock", std::process::id()));
        let proxy = CuttableProxy { socket, tasks: Arc::default() };
        proxy.restore();
        proxy
    }

    /// Accept connections again, each relayed to Docker's socket.
    fn restore(&self) {
        let _ = std::fs::remove_file(&self.socket);
        let listener = UnixListener::bind(&self.socket).unwrap();
        let tasks = self.tasks.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let relay = tokio::spawn(async move {
                    let Ok(mut daemon) = UnixStream::connect("/var/run/docker.sock").await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut daemon).await;
                });
                tasks.lock().push(relay.abort_handle());
            }
        });
        self.tasks.lock().push(accepting.abort_handle());
    }

    /// Drop every open connection and stop accepting: a connect now fails as with no daemon.
    fn cut(&self) {
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
    }
}

impl Drop for CuttableProxy {
    fn drop(&mut self) {
        self.cut();
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn phase(store: &Store, key: &ObjectKey) -> Option<ContainerPhase> {
    store.get(key)?.status::<PhysicalContainer>().ok().map(|s| s.phase)
}

fn sleeper(name: &str, ns: &str) -> Object {
    let spec = PhysicalContainerSpec {
        image: Some(TEST_IMAGE.into()),
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"].map(String::from).to_vec(),
        ..Default::default()
    };
    Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some(ns), name), &spec)
}

/// Docker containers carrying `ns`'s namespace label, by name.
fn docker_names(ns: &str) -> Vec<String> {
    let filter = format!("label={}={ns}", names::LABEL_NAMESPACE);
    let out =
        Command::new("docker").args(["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"]).output().unwrap();
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_reconnects_after_a_cut_and_says_so() {
    if docker_or_skip("resync_stream").await.is_none() {
        return;
    }
    let proxy = CuttableProxy::new("resync-stream");
    let runtime = DockerRuntime::connect_unix(&proxy.socket).await.unwrap();
    let mut notices = runtime.events().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // (Events of other tests' containers may have arrived before the cut.)
    while let Ok(notice) = notices.try_recv() {
        assert_ne!(notice, RuntimeNotice::Resynced, "no resync while Docker is unreachable");
    }
    proxy.restore();
    let resynced = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match notices.recv().await {
                Some(RuntimeNotice::Resynced) => return true,
                Some(RuntimeNotice::Event(_)) => continue,
                None => return false,
            }
        }
    })
    .await;
    assert_eq!(resynced, Ok(true), "no Resynced within 15 s of Docker answering again");
}

/// While the connection is cut, a container drydock runs is killed behind its back (as a daemon
/// restart stops containers) and a new object is created. Once Docker answers again, the engine
/// reports the killed one `Exited` well before its 30 s monitoring pass would, creates the new
/// one exactly once, and a namespace delete leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_survives_a_torn_down_docker_connection() {
    if docker_or_skip("resync_engine").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let proxy = CuttableProxy::new("resync-engine");
    let runtime = Arc::new(DockerRuntime::connect_unix(&proxy.socket).await.unwrap());
    let ns = format!("resync-{}-{}", std::process::id(), drydock_adapters::clock::wall_now().0 % 100_000);
    let store = SharedStore::in_memory();
    let namespace = Object::from_spec::<Namespace>(ObjectMeta::named(None, &ns), &NamespaceSpec {});
    store.execute(StoreRequest::Create { object: namespace }).unwrap();
    store.execute(StoreRequest::Create { object: sleeper("web", &ns) }).unwrap();
    let web = ObjectKey::namespaced(PhysicalContainer::KIND, &ns, "web");
    let api = ObjectKey::namespaced(PhysicalContainer::KIND, &ns, "api");
    let mut driver = Driver::builtin("resync-test", store.clone(), runtime.clone());
    let running = |s: &Store| phase(s, &web) == Some(ContainerPhase::Running);
    assert!(driver.run_for(Duration::from_secs(60), running).await, "web not Running within 60 s");

    // The cut, and what happens during it, runs beside the engine.
    let (cut_store, cut_ns) = (store.clone(), ns.clone());
    let outage = async move {
        proxy.cut();
        let killed = Command::new("docker").args(["kill", &format!("{cut_ns}-web")]).output().unwrap();
        assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
        cut_store.execute(StoreRequest::Create { object: sleeper("api", &cut_ns) }).unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        proxy.restore();
        proxy
    };
    let outage = tokio::spawn(outage);
    let recovered =
        |s: &Store| phase(s, &web) == Some(ContainerPhase::Exited) && phase(s, &api) == Some(ContainerPhase::Running);
    let noticed = driver.run_for(Duration::from_secs(20), recovered).await;
    let proxy = outage.await.unwrap();
    let (web_phase, api_phase) = store.read(|s| (phase(s, &web), phase(s, &api)));
    assert!(noticed, "20 s after the cut: web {web_phase:?} (want Exited), api {api_phase:?} (want Running)");
    assert_eq!(docker_names(&ns), vec![format!("{ns}-api"), format!("{ns}-web")], "one container per object");

    let delete =
        StoreRequest::Delete { key: ObjectKey::cluster(Namespace::KIND, &ns), options: DeleteOptions::default() };
    store.execute(delete).unwrap();
    let gone = |s: &Store| s.get(&ObjectKey::cluster(Namespace::KIND, &ns)).is_none();
    assert!(driver.run_for(Duration::from_secs(60), gone).await, "namespace not gone within 60 s");
    assert!(docker_names(&ns).is_empty(), "left behind: {:?}", docker_names(&ns));
    drop(proxy);
}
