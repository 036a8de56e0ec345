//! The machine around the runtime under test: a registry to publish images in, host ports a
//! process listens on, named volumes, removals held open, and build contexts. For Docker, the
//! real thing (the test registry on the loopback, the host's sockets, `docker volume`, `docker
//! rm`, a temporary directory); for the simulated runtime, its model of each (a build context is
//! registered with it: it reads no files).

use drydock_adapters::clock::wall_now;
use drydock_adapters::runtime::{CaptureStream, CapturedLine};
use drydock_adapters::testing::{Published, test_registry_image};
use drydock_adapters::{Runtime, RuntimeNotice};
use drydock_engine::api::container::Protocol;
use drydock_engine::api::names::LABEL_OWNER_UID;
use drydock_engine::logs::Channel;
use drydock_engine::runtime::{RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_sim::runtime::SimRuntime;
use drydock_sim::runtime::Stream;
use futures_util::StreamExt;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What the cases need besides the runtime contract.
pub trait TestHost: Send + Sync {
    /// The registry is up and holds the test image as `test_registry_image()`.
    fn ensure(&self);
    /// New content under every one of `references` (tags in the registry); the local store is
    /// left as it was.
    fn publish(&self, references: &[&str]) -> Published;
    /// A TCP port on the host that nothing listens on, outside the ephemeral range (so that no
    /// container publishing port 0 is handed it meanwhile).
    fn free_port(&self) -> u16;
    /// A process on the host listens on a TCP port (on every IPv4 address) until the hold is
    /// dropped.
    fn listen(&self) -> HostPortHold;
    /// Whether named volume `name` exists.
    fn volume_exists(&self, name: &str) -> bool;
    /// `docker volume rm NAME`.
    fn remove_volume(&self, name: &str) -> Result<(), RuntimeError>;
    /// Begin removing stopped container `id` in a way that stays in progress long enough to be
    /// watched (longer at each further `attempt`); the returned removal completes when waited
    /// for.
    fn begin_slow_removal(&self, id: &str, attempt: u32) -> PendingRemoval;
    /// A build context directory holding `files` (relative path -> contents), for the runtime
    /// to build from: its absolute path. `remove_build_context` removes it.
    fn build_context(&self, name: &str, files: &BTreeMap<String, String>) -> String;
    /// Remove a directory `build_context` made.
    fn remove_build_context(&self, path: &str);
    /// Remove the untagged images labelled `key=value` that nothing uses (`docker image prune`):
    /// what a failed build leaves of a Dockerfile that labels its steps.
    fn prune_images(&self, key: &str, value: &str);
}

/// A port a host process listens on, while this lives.
pub struct HostPortHold {
    pub port: u16,
    _release: Box<dyn Send + Sync>,
}

/// A removal in progress: `wait` for it to complete.
pub struct PendingRemoval(Box<dyn FnOnce() -> Result<(), String> + Send>);

impl PendingRemoval {
    pub fn wait(self) -> Result<(), String> {
        (self.0)()
    }
}

/// Ports handed out by `free_port` and `listen`, shared by the cases of one process.
static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A port of 20000..29999 (below the ephemeral range), different for each call and process.
fn candidate_port() -> u16 {
    let n = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
    let spread = (std::process::id() % 97) as u16 * 97;
    20_000 + (spread + n) % 10_000
}

/// The simulated runtime behind the async contract, on the system clock: before each request,
/// the time that passed applies (a script's sleeps end as they would on Docker). It streams the
/// owner-labelled events, as the Docker adapter does.
pub struct SimAdapter {
    runtime: Arc<Mutex<SimRuntime>>,
    /// The event streams handed out.
    streams: Mutex<Vec<UnboundedSender<RuntimeNotice>>>,
}

impl SimAdapter {
    /// `image` present locally and, as `ensure_test_registry` does on Docker, pushed to the test
    /// registry as `test_registry_image()`.
    pub fn new(image: &str) -> Self {
        let mut runtime = SimRuntime::new(7);
        runtime.advance(wall_now());
        runtime.add_image(image);
        runtime.registry_push_image(image, &test_registry_image());
        SimAdapter { runtime: Arc::new(Mutex::new(runtime)), streams: Mutex::new(Vec::new()) }
    }

    /// Send the events recorded since the last call to every stream.
    fn forward_events(&self, runtime: &mut SimRuntime) {
        let mut senders = self.streams.lock();
        for event in runtime.take_events() {
            if event.labels.contains_key(LABEL_OWNER_UID) {
                senders.retain(|tx| tx.send(RuntimeNotice::Event(event.clone())).is_ok());
            }
        }
    }
}

/// How long a network create takes on Docker 20.10 (130-150 ms measured): the time between its
/// check of the name and the network existing, in which another create of the name passes too.
const NETWORK_CREATE_TAKES: std::time::Duration = std::time::Duration::from_millis(140);

impl Runtime for SimAdapter {
    async fn execute(&self, request: RuntimeRequest) -> RuntimeResult {
        if let RuntimeRequest::CreateNetwork(create) = &request {
            let creating = self.runtime.lock().begin_network_create(create)?;
            tokio::time::sleep(NETWORK_CREATE_TAKES).await;
            let mut runtime = self.runtime.lock();
            let id = runtime.finish_network_create(creating);
            self.forward_events(&mut runtime);
            return Ok(RuntimeReply::Created { id });
        }
        let mut runtime = self.runtime.lock();
        runtime.advance(wall_now());
        let result = runtime.execute(&request);
        self.forward_events(&mut runtime);
        result
    }

    fn events(&self) -> Option<UnboundedReceiver<RuntimeNotice>> {
        let mut runtime = self.runtime.lock();
        self.forward_events(&mut runtime);
        let (tx, rx) = unbounded_channel();
        self.streams.lock().push(tx);
        Some(rx)
    }

    /// What the model says the container printed, as the clock reaches each line; a follow ends
    /// once its output is complete (it exited, or was removed, or was never started). A
    /// container that is not there (also a removed one: its logs went with it) is NotFound, as
    /// Docker's logs API answers it; a follow already open when it is removed ends.
    fn capture(&self, id: &str, follow: bool, since: Option<u128>) -> Option<CaptureStream> {
        let opened = {
            let mut runtime = self.runtime.lock();
            runtime.advance(wall_now());
            runtime.open_logs(id)
        };
        let id = match opened {
            Ok(id) => id,
            Err(error) => return Some(Box::pin(futures_util::stream::iter([Err(error)]))),
        };
        let runtime = self.runtime.clone();
        let since_ms = since.map_or(0, |nanos| u64::try_from(nanos / 1_000_000_000 * 1_000).unwrap_or(u64::MAX));
        let stream = futures_util::stream::unfold((0usize, false), move |(taken, done)| {
            let (runtime, id) = (runtime.clone(), id.clone());
            async move {
                if done {
                    return None;
                }
                loop {
                    let step = {
                        let mut runtime = runtime.lock();
                        runtime.advance(wall_now());
                        let now = wall_now();
                        match runtime.output(&id) {
                            None => Some(Err(RuntimeError::NotFound(format!("No such container: {id}")))),
                            Some(output) => {
                                let printed = output.printed_by(now);
                                let fresh: Vec<CapturedLine> = printed[taken.min(printed.len())..]
                                    .iter()
                                    .filter(|l| l.at.0 >= since_ms)
                                    .map(|l| CapturedLine {
                                        channel: match l.stream {
                                            Stream::Stdout => Channel::Stdout,
                                            Stream::Stderr => Channel::Stderr,
                                        },
                                        time: l.at,
                                        stamp: u128::from(l.at.0) * 1_000_000,
                                        text: l.text.clone(),
                                    })
                                    .collect();
                                let over = !follow || output.finished_by(now);
                                Some(Ok((fresh, printed.len(), over)))
                            }
                        }
                    };
                    match step {
                        Some(Err(error)) => return Some((vec![Err(error)], (taken, true))),
                        Some(Ok((fresh, total, over))) if !fresh.is_empty() || over => {
                            return Some((fresh.into_iter().map(Ok).collect(), (total, over)));
                        }
                        _ => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                    }
                }
            }
        })
        .flat_map(futures_util::stream::iter);
        Some(Box::pin(stream))
    }
}

impl TestHost for SimAdapter {
    fn ensure(&self) {}

    fn publish(&self, references: &[&str]) -> Published {
        let mut runtime = self.runtime.lock();
        let (first, rest) = references.split_first().expect("a reference to publish");
        let digest = runtime.registry_push(first);
        for reference in rest {
            runtime.registry_tag(first, reference).expect("just pushed");
        }
        let (_, id) = runtime.registry_lookup(first).expect("just pushed");
        Published { digest, id }
    }

    fn free_port(&self) -> u16 {
        candidate_port()
    }

    fn listen(&self) -> HostPortHold {
        struct Release(Arc<Mutex<SimRuntime>>, u16);
        impl Drop for Release {
            fn drop(&mut self) {
                self.0.lock().release_host_port(self.1, Protocol::Tcp);
            }
        }
        let port = candidate_port();
        self.runtime.lock().hold_host_port(port, Protocol::Tcp);
        HostPortHold { port, _release: Box::new(Release(self.runtime.clone(), port)) }
    }

    fn volume_exists(&self, name: &str) -> bool {
        self.runtime.lock().volumes().any(|v| v == name)
    }

    fn remove_volume(&self, name: &str) -> Result<(), RuntimeError> {
        self.runtime.lock().remove_volume(name)
    }

    fn build_context(&self, name: &str, files: &BTreeMap<String, String>) -> String {
        let path = format!("/drydock-sim-contexts/{name}");
        self.runtime.lock().add_build_context(&path, files.clone());
        path
    }

    fn remove_build_context(&self, _path: &str) {}

    /// The simulated builder keeps no intermediate images.
    fn prune_images(&self, _key: &str, _value: &str) {}

    fn begin_slow_removal(&self, id: &str, _attempt: u32) -> PendingRemoval {
        let begun = self.runtime.lock().begin_removal(id, false);
        let runtime = self.runtime.clone();
        PendingRemoval(Box::new(move || {
            let id = begun.map_err(|e| e.to_string())?;
            runtime.lock().finish_removal(&id);
            Ok(())
        }))
    }
}

/// Docker's side.
pub struct DockerHost;

/// Empty files `begin_slow_removal` copies into a container first (twice as many at each further
/// attempt): removing a container's writable layer takes time in proportion to its files (about
/// 0.1 s per 3,000 with the fuse-overlayfs storage driver of the machine this was measured on),
/// which is the window in which Docker shows it `removing`.
const SLOW_REMOVAL_FILES: usize = 6_000;

impl TestHost for DockerHost {
    fn ensure(&self) {
        if let Err(e) = drydock_adapters::testing::ensure_test_registry() {
            panic!("cannot run the test registry: {e}");
        }
    }

    fn publish(&self, references: &[&str]) -> Published {
        drydock_adapters::testing::registry_push(references)
            .unwrap_or_else(|e| panic!("cannot publish {references:?}: {e}"))
    }

    fn free_port(&self) -> u16 {
        loop {
            let port = candidate_port();
            if TcpListener::bind(("0.0.0.0", port)).is_ok() {
                return port;
            }
        }
    }

    fn listen(&self) -> HostPortHold {
        loop {
            let port = candidate_port();
            if let Ok(listener) = TcpListener::bind(("0.0.0.0", port)) {
                return HostPortHold { port, _release: Box::new(listener) };
            }
        }
    }

    fn volume_exists(&self, name: &str) -> bool {
        docker(&["volume", "inspect", name]).is_ok()
    }

    fn remove_volume(&self, name: &str) -> Result<(), RuntimeError> {
        docker(&["volume", "rm", name]).map(|_| ()).map_err(|stderr| {
            let message = stderr.trim().trim_start_matches("Error response from daemon: ").to_string();
            if message.contains("volume is in use") {
                RuntimeError::Conflict(message)
            } else if message.contains("no such volume") {
                RuntimeError::NotFound(message)
            } else {
                RuntimeError::Transient(message)
            }
        })
    }

    fn build_context(&self, name: &str, files: &BTreeMap<String, String>) -> String {
        let dir = std::env::temp_dir().join(format!("drydock-context-{}-{name}", std::process::id()));
        for (path, contents) in files {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
            }
            std::fs::write(&file, contents).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
        }
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        dir.display().to_string()
    }

    fn remove_build_context(&self, path: &str) {
        let _ = std::fs::remove_dir_all(path);
    }

    fn prune_images(&self, key: &str, value: &str) {
        let _ = docker(&["image", "prune", "--force", "--filter", &format!("label={key}={value}")]);
    }

    fn begin_slow_removal(&self, id: &str, attempt: u32) -> PendingRemoval {
        if let Err(e) = copy_empty_files(id, SLOW_REMOVAL_FILES << attempt.min(3)) {
            panic!("cannot fill container {id}: {e}");
        }
        let child = Command::new("docker").args(["rm", id]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn();
        PendingRemoval(Box::new(move || {
            let output = child.and_then(|c| c.wait_with_output()).map_err(|e| format!("docker rm: {e}"))?;
            match output.status.success() {
                true => Ok(()),
                false => Err(String::from_utf8_lossy(&output.stderr).into_owned()),
            }
        }))
    }
}

/// The Docker daemon's Unix socket: the path `DOCKER_HOST` names (`unix://PATH`), else
/// `/var/run/docker.sock`, where the adapter connects too.
fn docker_socket() -> String {
    match std::env::var("DOCKER_HOST") {
        Ok(host) => match host.strip_prefix("unix://") {
            Some(path) => path.to_string(),
            None => panic!("DOCKER_HOST={host}: this check speaks to Docker's Unix socket only"),
        },
        Err(_) => "/var/run/docker.sock".to_string(),
    }
}

/// A client that goes away: write `request` (a whole HTTP/1.1 request, by hand) to the Docker
/// daemon's socket, wait `hold`, then close the connection without reading a byte of the answer.
pub async fn send_to_docker_and_hang_up(request: &str, hold: std::time::Duration) {
    use tokio::io::AsyncWriteExt;
    let socket = docker_socket();
    let mut stream =
        tokio::net::UnixStream::connect(&socket).await.unwrap_or_else(|e| panic!("connect to {socket}: {e}"));
    stream.write_all(request.as_bytes()).await.unwrap_or_else(|e| panic!("write to {socket}: {e}"));
    stream.flush().await.unwrap_or_else(|e| panic!("flush to {socket}: {e}"));
    tokio::time::sleep(hold).await;
    // Our side ends (the daemon reads end of file, as when a client goes away), then the socket closes.
    let _ = stream.shutdown().await;
    drop(stream);
}

/// `docker cp` a tar of `count` empty files into container `id`'s `/junk`.
fn copy_empty_files(id: &str, count: usize) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("drydock-junk-{}-{id}", std::process::id()));
    let junk = dir.join("junk");
    std::fs::create_dir_all(&junk).map_err(|e| format!("create {}: {e}", junk.display()))?;
    for i in 0..count {
        std::fs::write(junk.join(i.to_string()), b"").map_err(|e| format!("write: {e}"))?;
    }
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&dir)
        .args(["-cf", "-", "junk"])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("run tar: {e}"))?;
    let stdout = tar.stdout.ok_or("tar has no stdout")?;
    let copied = Command::new("docker").args(["cp", "-", &format!("{id}:/")]).stdin(stdout).output();
    let _ = std::fs::remove_dir_all(&dir);
    let copied = copied.map_err(|e| format!("run docker cp: {e}"))?;
    match copied.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&copied.stderr).into_owned()),
    }
}

fn docker(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker").args(args).output().map_err(|e| format!("run docker: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}
