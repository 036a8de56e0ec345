//! kill -9 trials on real Docker (issue 13, item 3).
//!
//! Each trial starts the real `drydock daemon` on a fresh state dir, drives a seeded workload
//! through its API (namespaces, physical containers, session and persistent logical containers,
//! deletes of objects and of namespaces), keeps a log of every write the API acknowledged, sends
//! SIGKILL at a seeded moment (after a seeded number of acknowledged writes, plus a seeded delay of
//! 0..1500 ms), restarts the daemon on the same state dir and checks:
//!
//! 1. every acknowledged write survived: an acknowledged create exists with the uid it was given
//!    (unless an acknowledged delete of it or of its namespace followed), an acknowledged delete
//!    left the object absent or deleting; the store's resourceVersion did not go back;
//! 2. Docker holds no container drydock created whose owner uid is not a live object (retained
//!    ones aside), no object has two runtime containers, and every Running physical container's
//!    runtime container exists and runs;
//! 3. no namespace delete stays stuck: every namespace the client deleted is gone;
//! 4. all this within [`CONVERGE_BOUND`] of the restart: every physical and logical container
//!    (and owned image) settled, no object deleting, and the Docker check holding.
//!
//! `cargo test -p drydock --test crash_trials` runs seeds 1..=5. The ignored `many_kill9_trials`
//! runs `DRYDOCK_CRASH_TRIALS` (20) trials from `DRYDOCK_CRASH_START` (1); `DRYDOCK_CRASH_SEED=S`
//! reruns one seed. The ignored `restart_converge_20_containers` times restarts over 20 running
//! containers (`DRYDOCK_CRASH_RESTARTS`, 5).
//!
//! Trials run `DRYDOCK_CRASH_PARALLEL` (5) at a time.
//!
//! Without Docker (and without `CI`) each test prints SKIPPED and passes.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::{TEST_IMAGE, docker_bounded, docker_or_skip, ensure_test_image};
use drydock_engine::api::names;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a restarted daemon may take to converge.
const CONVERGE_BOUND: Duration = Duration::from_secs(60);
/// Writes a trial's workload attempts (it stops at the first one whose outcome is unknown).
const WRITES: u64 = 24;
/// The longest seeded delay between the kill point and the kill.
const MAX_KILL_DELAY_MS: u64 = 1500;
/// After this long, a trial notes what it is still waiting for.
const SLOW: Duration = Duration::from_secs(5);
/// The longest seeded pause between two writes.
const MAX_PACE_MS: u64 = 150;
const SLEEPER: [&str; 3] = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"];

// ---------------------------------------------------------------------------------------------
// The seeded generator: SplitMix64, small and stable across versions.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_c7a5_4d1e_0001)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

// ---------------------------------------------------------------------------------------------
// The daemon, as a user runs it.

/// A running `drydock daemon`; SIGKILLed on drop.
struct Daemon {
    child: Child,
    kubeconfig: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// `drydock daemon --state-dir STATE --listen 127.0.0.1:0`, its stderr appended to `log`;
    /// returns once both ready lines are out.
    fn start(state: &Path, log: &Path) -> Daemon {
        let stderr = File::options().create(true).append(true).open(log).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
            .arg("daemon")
            .arg("--state-dir")
            .arg(state)
            .args(["--listen", "127.0.0.1:0"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep draining after the ready lines: a closed pipe would fail the daemon's prints.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut daemon = Daemon { child, kubeconfig: PathBuf::new() };
        let mut next = || match lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(e) => {
                let _ = daemon.child.kill();
                let _ = daemon.child.wait();
                panic!("no ready line from the daemon ({e}); its log:\n{}", tail(log, 40))
            }
        };
        let first = next();
        let second = next();
        assert!(first.starts_with("drydock daemon listening on "), "{first}");
        daemon.kubeconfig = second.strip_prefix("kubeconfig: ").unwrap_or_else(|| panic!("{second}")).into();
        daemon
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, then reap it.
    fn kill9(&mut self) {
        kill9(self.pid());
        let _ = self.child.wait();
    }
}

fn kill9(pid: u32) {
    let status = Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

/// The last `lines` lines of a file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The identity the daemon of `state` runs as (kept in the state dir across restarts).
fn identity(state: &Path) -> String {
    let id = std::fs::read_to_string(state.join(drydock_daemon::state_dir::ID_FILE)).unwrap();
    format!("drydock-daemon-{}", id.trim())
}

async fn connect(kubeconfig: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(15));
    Client::try_from(config).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The API's kinds.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Namespace,
    Physical,
    Logical,
    Image,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Namespace, Kind::Physical, Kind::Logical, Kind::Image];

    fn resource(self) -> ApiResource {
        let (group, kind, plural) = match self {
            Kind::Namespace => ("", "Namespace", "namespaces"),
            Kind::Physical => ("drydock.dev", "PhysicalContainer", "physicalcontainers"),
            Kind::Logical => ("drydock.dev", "LogicalContainer", "logicalcontainers"),
            Kind::Image => ("drydock.dev", "ContainerImage", "containerimages"),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    }

    fn api(self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &self.resource()),
            None => Api::all_with(client.clone(), &self.resource()),
        }
    }

    fn short(self) -> &'static str {
        match self {
            Kind::Namespace => "ns",
            Kind::Physical => "pc",
            Kind::Logical => "lc",
            Kind::Image => "img",
        }
    }

    /// Running, ended or failed for good (`phase::settled` of `drydock up --wait`).
    fn settled(self, phase: &str) -> bool {
        match self {
            Kind::Physical => matches!(phase, "Running" | "Exited" | "Failed" | "Missing"),
            Kind::Logical => matches!(phase, "Running" | "Exited" | "Failed" | "NotFound"),
            Kind::Image => matches!(phase, "Ready" | "Failed" | "Unavailable"),
            Kind::Namespace => true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    kind: Kind,
    namespace: Option<String>,
    name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind.short(), self.name),
            None => write!(f, "{} {}", self.kind.short(), self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The workload and the client's log of writes.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create,
    Delete,
}

#[derive(Clone, Debug)]
enum Outcome {
    /// 2xx: the uid and resourceVersion the answer carried.
    Acked { uid: String, rv: String },
    /// The API refused it (the store is unchanged).
    Refused(String),
    /// No answer: the daemon died around it; it may or may not have happened.
    Unknown(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Acked { uid, rv } => write!(f, "acked uid={uid} rv={rv}"),
            Outcome::Refused(message) => write!(f, "refused: {message}"),
            Outcome::Unknown(error) => write!(f, "unknown: {error}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Write {
    key: Key,
    op: Op,
    body: Option<Value>,
    outcome: Option<Outcome>,
}

impl Write {
    fn acked(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Acked { .. }))
    }

    fn unknown(&self) -> bool {
        matches!(self.outcome, Some(Outcome::Unknown(_)))
    }
}

/// What the client believes exists: objects it created (and had acknowledged) and not deleted.
struct Model {
    prefix: String,
    counter: u64,
    namespaces: Vec<String>,
    objects: Vec<Key>,
}

impl Model {
    /// The next write, drawn from `rng` over what exists now.
    fn next_write(&mut self, rng: &mut Rng) -> Write {
        self.counter += 1;
        let n = self.counter;
        let roll = rng.below(100);
        if self.namespaces.is_empty() || (self.namespaces.len() < 3 && roll < 12) {
            let name = format!("{}ns{n}", self.prefix);
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            return Write {
                key: Key { kind: Kind::Namespace, namespace: None, name },
                op: Op::Create,
                body: Some(body),
                outcome: None,
            };
        }
        let delete_namespace = roll >= 94 && self.namespaces.len() >= 2;
        if delete_namespace {
            let name = self.namespaces[rng.below(self.namespaces.len() as u64) as usize].clone();
            return Write {
                key: Key { kind: Kind::Namespace, namespace: None, name },
                op: Op::Delete,
                body: None,
                outcome: None,
            };
        }
        if roll >= 68 && !self.objects.is_empty() {
            let key = self.objects[rng.below(self.objects.len() as u64) as usize].clone();
            return Write { key, op: Op::Delete, body: None, outcome: None };
        }
        let ns = self.namespaces[rng.below(self.namespaces.len() as u64) as usize].clone();
        let (kind, name, spec) = if !(40..68).contains(&roll) {
            (Kind::Physical, format!("pc{n}"), json!({"image": TEST_IMAGE, "command": SLEEPER}))
        } else if roll < 56 {
            (Kind::Logical, format!("session{n}"), json!({"mode": "session", "image": TEST_IMAGE, "command": SLEEPER}))
        } else {
            let container = format!("{}persistent{n}", self.prefix);
            (
                Kind::Logical,
                format!("persistent{n}"),
                json!({"mode": "persistent", "image": TEST_IMAGE, "containerName": container, "command": SLEEPER}),
            )
        };
        let resource = kind.resource();
        let body = json!({"apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "namespace": ns}, "spec": spec});
        Write { key: Key { kind, namespace: Some(ns), name }, op: Op::Create, body: Some(body), outcome: None }
    }

    /// `write` was acknowledged.
    fn apply(&mut self, write: &Write) {
        match (write.op, write.key.kind) {
            (Op::Create, Kind::Namespace) => self.namespaces.push(write.key.name.clone()),
            (Op::Create, _) => self.objects.push(write.key.clone()),
            (Op::Delete, Kind::Namespace) => {
                self.namespaces.retain(|n| *n != write.key.name);
                self.objects.retain(|k| k.namespace.as_ref() != Some(&write.key.name));
            }
            (Op::Delete, _) => self.objects.retain(|k| *k != write.key),
        }
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Create => "create",
        Op::Delete => "delete",
    }
}

async fn perform(client: &Client, write: &Write) -> Outcome {
    let api = write.key.kind.api(client, write.key.namespace.as_deref());
    let answer = match write.op {
        Op::Create => {
            let object: DynamicObject = serde_json::from_value(write.body.clone().unwrap()).unwrap();
            api.create(&PostParams::default(), &object)
                .await
                .map(|o| (o.metadata.uid.unwrap_or_default(), o.metadata.resource_version.unwrap_or_default()))
        }
        Op::Delete => api.delete(&write.key.name, &DeleteParams::default()).await.map(|answer| {
            answer.either(
                |o| (o.metadata.uid.unwrap_or_default(), o.metadata.resource_version.unwrap_or_default()),
                |status| (status.details.map(|d| d.uid).unwrap_or_default(), String::new()),
            )
        }),
    };
    match answer {
        Ok((uid, rv)) => Outcome::Acked { uid, rv },
        Err(kube::Error::Api(status)) => {
            Outcome::Refused(format!("{} {}: {}", status.code, status.reason, status.message))
        }
        Err(other) => Outcome::Unknown(other.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// What the store and Docker hold.

#[derive(Clone, Debug)]
struct Seen {
    uid: String,
    deleting: bool,
    phase: String,
    runtime_id: Option<String>,
}

#[derive(Clone, Debug)]
struct DockerContainer {
    id: String,
    name: String,
    state: String,
    owner_uid: String,
    retained: bool,
}

struct Snapshot {
    objects: BTreeMap<Key, Seen>,
    /// The highest list resourceVersion the store answered with (numeric ones only).
    store_rv: Option<u64>,
    docker: Vec<DockerContainer>,
}

async fn snapshot(client: &Client, identity: &str) -> Result<Snapshot, String> {
    let mut objects = BTreeMap::new();
    let mut store_rv = None;
    for kind in Kind::ALL {
        let list =
            kind.api(client, None).list(&ListParams::default()).await.map_err(|e| format!("list {kind:?}: {e}"))?;
        let rv = list.metadata.resource_version.as_deref().and_then(|rv| rv.parse::<u64>().ok());
        store_rv = store_rv.max(rv);
        for object in list.items {
            let key = Key {
                kind,
                namespace: object.metadata.namespace.clone(),
                name: object.metadata.name.clone().unwrap_or_default(),
            };
            let status = object.data.get("status");
            let field = |f: &str| status.and_then(|s| s.get(f)).and_then(Value::as_str).map(str::to_string);
            let seen = Seen {
                uid: object.metadata.uid.clone().unwrap_or_default(),
                deleting: object.metadata.deletion_timestamp.is_some(),
                phase: field("phase").unwrap_or_else(|| "Pending".into()),
                runtime_id: field("runtimeId"),
            };
            objects.insert(key, seen);
        }
    }
    Ok(Snapshot { objects, store_rv, docker: docker_containers(identity) })
}

/// Every container (running or not) whose creator label is `identity`.
fn docker_containers(identity: &str) -> Vec<DockerContainer> {
    let format = format!(
        "{{{{.ID}}}}|{{{{.Names}}}}|{{{{.State}}}}|{{{{.Label \"{}\"}}}}|{{{{.Label \"{}\"}}}}",
        names::LABEL_OWNER_UID,
        names::LABEL_RETAIN
    );
    let filter = format!("label={}={identity}", names::LABEL_CREATOR);
    let out = docker_bounded(&["ps", "-a", "--no-trunc", "--filter", &filter, "--format", &format])
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(out.status.success(), "docker ps: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            DockerContainer {
                id: f[0].to_string(),
                name: f.get(1).unwrap_or(&"").to_string(),
                state: f.get(2).unwrap_or(&"").to_string(),
                owner_uid: f.get(3).unwrap_or(&"").to_string(),
                retained: f.get(4) == Some(&"true"),
            }
        })
        .collect()
}

/// `docker rm -f` every container `identity` created.
fn remove_containers(identity: &str) {
    let ids: Vec<String> = docker_containers(identity).into_iter().map(|c| c.id).collect();
    if !ids.is_empty() {
        let args: Vec<&str> = ["rm", "-f"].into_iter().chain(ids.iter().map(String::as_str)).collect();
        if let Err(error) = docker_bounded(&args) {
            eprintln!("cleanup: {error}");
        }
    }
}

/// Check 2: what Docker holds against what the store wants.
fn docker_problems(snap: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    let live: BTreeSet<&str> = snap.objects.values().filter(|o| !o.deleting).map(|o| o.uid.as_str()).collect();
    let mut by_owner: BTreeMap<&str, Vec<&DockerContainer>> = BTreeMap::new();
    for c in &snap.docker {
        if c.owner_uid.is_empty() {
            continue;
        }
        by_owner.entry(c.owner_uid.as_str()).or_default().push(c);
        if !c.retained && !live.contains(c.owner_uid.as_str()) {
            problems.push(format!(
                "leak: container {} ({}, {}) of owner uid {} that no live object has",
                c.name,
                short(&c.id),
                c.state,
                c.owner_uid
            ));
        }
    }
    for (owner, containers) in by_owner {
        if containers.len() > 1 {
            let list: Vec<String> =
                containers.iter().map(|c| format!("{} ({}, {})", c.name, short(&c.id), c.state)).collect();
            problems.push(format!(
                "owner uid {owner} has {} runtime containers: {}",
                containers.len(),
                list.join(", ")
            ));
        }
    }
    let running: BTreeSet<&str> = snap.docker.iter().filter(|c| c.state == "running").map(|c| c.id.as_str()).collect();
    for (key, seen) in &snap.objects {
        if key.kind == Kind::Physical && seen.phase == "Running" && !seen.deleting {
            match &seen.runtime_id {
                Some(id) if running.contains(id.as_str()) => {}
                other => problems
                    .push(format!("{key} is Running but its runtime container {other:?} is not running in Docker")),
            }
        }
    }
    problems
}

/// Not converged yet: what is unsettled, deleting, or wrong in Docker.
fn convergence_problems(snap: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, seen) in &snap.objects {
        if seen.deleting {
            problems.push(format!("{key} still deleting ({})", seen.phase));
        } else if !key.kind.settled(&seen.phase) {
            problems.push(format!("{key} not settled ({})", seen.phase));
        }
    }
    problems.extend(docker_problems(snap));
    problems
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Check 1 (and 3): every acknowledged write is in the store. `settled`: the store has converged,
/// so an acknowledged delete must be complete (and nothing may be deleting).
fn durability_problems(log: &[Write], snap: &Snapshot, settled: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let when = if settled { "after convergence" } else { "right after the restart" };
    for (i, write) in log.iter().enumerate() {
        let Some(Outcome::Acked { uid, .. }) = &write.outcome else { continue };
        let later = &log[i + 1..];
        let deleted_by = |pred: &dyn Fn(&Write) -> bool| later.iter().any(|w| w.op == Op::Delete && pred(w));
        let is_it = |w: &Write| w.key == write.key;
        let its_namespace =
            |w: &Write| w.key.kind == Kind::Namespace && write.key.namespace.as_ref() == Some(&w.key.name);
        let seen = snap.objects.get(&write.key);
        match write.op {
            Op::Create => {
                let own_delete = deleted_by(&|w: &Write| w.acked() && is_it(w));
                let namespace_delete = deleted_by(&|w: &Write| w.acked() && its_namespace(w));
                let acked_delete = own_delete || namespace_delete;
                let maybe_deleted = deleted_by(&|w: &Write| w.unknown() && (is_it(w) || its_namespace(w)));
                // A namespace delete reaches its objects through the namespace controller, later:
                // until the namespace is gone they may still be there, not yet deleting.
                let namespace_gone = write.key.namespace.as_ref().is_some_and(|ns| {
                    let key = Key { kind: Kind::Namespace, namespace: None, name: ns.clone() };
                    !snap.objects.contains_key(&key)
                });
                match seen {
                    Some(s) if s.uid != *uid => {
                        problems.push(format!(
                            "{} {when}: uid {} where the acknowledged create gave {uid}",
                            write.key, s.uid
                        ));
                    }
                    Some(s)
                        if (own_delete && (settled || !s.deleting))
                            || (namespace_delete && (settled || namespace_gone)) =>
                    {
                        problems.push(format!(
                            "{} {when}: present (deleting: {}) after an acknowledged delete",
                            write.key, s.deleting
                        ));
                    }
                    Some(s) if settled && s.deleting => {
                        problems.push(format!("{} {when}: still deleting", write.key));
                    }
                    None if !acked_delete && !maybe_deleted => {
                        problems.push(format!("{} {when}: absent after an acknowledged create (uid {uid})", write.key));
                    }
                    _ => {}
                }
            }
            Op::Delete => {
                let recreated = later.iter().any(|w| w.op == Op::Create && w.key == write.key);
                if let Some(s) = seen
                    && !recreated
                    && (settled || !s.deleting)
                {
                    let stuck = if write.key.kind == Kind::Namespace { " (stuck namespace delete)" } else { "" };
                    problems.push(format!(
                        "{} {when}: present (deleting: {}) after an acknowledged delete{stuck}",
                        write.key, s.deleting
                    ));
                }
            }
        }
    }
    let acked_rv = log
        .iter()
        .filter_map(|w| match &w.outcome {
            Some(Outcome::Acked { rv, .. }) => rv.parse::<u64>().ok(),
            _ => None,
        })
        .max();
    if let (Some(acked), Some(store)) = (acked_rv, snap.store_rv)
        && store < acked
    {
        problems.push(format!("{when}: the store's resourceVersion {store} is behind an acknowledged {acked}"));
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// A trial.

struct TrialReport {
    seed: u64,
    kill_after: u64,
    delay_ms: u64,
    acked: usize,
    unknown: usize,
    refused: usize,
    converge: Option<Duration>,
    problems: Vec<String>,
    /// What convergence was still waiting for `SLOW` after the restart.
    slow: Vec<String>,
}

impl TrialReport {
    fn line(&self) -> String {
        let outcome = if self.problems.is_empty() {
            "ok".to_string()
        } else {
            format!("FAIL ({} problems)", self.problems.len())
        };
        let converge = match self.converge {
            Some(d) => format!("{} ms", d.as_millis()),
            None => format!("not within {} s", CONVERGE_BOUND.as_secs()),
        };
        format!(
            "seed={:<4} kill=after {:>2} acks +{:>4} ms (writes: {:>2} acked, {} unknown, {} refused)  outcome={outcome}  converge={converge}",
            self.seed, self.kill_after, self.delay_ms, self.acked, self.unknown, self.refused
        )
    }
}

async fn trial(seed: u64) -> TrialReport {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let log_path = tmp.path().join("daemon.log");
    let prefix = format!("crash-{}-{seed}-", std::process::id());
    let mut rng = Rng::new(seed);
    let kill_after = 2 + rng.below(WRITES - 2);
    let delay_ms = rng.below(MAX_KILL_DELAY_MS + 1);

    let mut daemon = Daemon::start(&state, &log_path);
    let identity = identity(&state);
    let client = connect(&daemon.kubeconfig).await;

    // The workload, with the kill armed once `kill_after` writes are acknowledged.
    let mut model = Model { prefix: prefix.clone(), counter: 0, namespaces: Vec::new(), objects: Vec::new() };
    let mut log: Vec<Write> = Vec::new();
    let mut killer: Option<tokio::task::JoinHandle<()>> = None;
    let arm = move |pid: u32| {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            kill9(pid);
        })
    };
    let mut acked = 0;
    let mut problems = Vec::new();
    for _ in 0..WRITES {
        let mut write = model.next_write(&mut rng);
        let pace = rng.below(MAX_PACE_MS + 1);
        let outcome = perform(&client, &write).await;
        write.outcome = Some(outcome.clone());
        match outcome {
            Outcome::Acked { .. } => {
                model.apply(&write);
                acked += 1;
                if acked == kill_after && killer.is_none() {
                    killer = Some(arm(daemon.pid()));
                }
            }
            Outcome::Refused(message) => {
                // The workload only writes what the API should take: a refusal is a finding.
                problems.push(format!("{} of {} refused before the kill: {message}", op_name(write.op), write.key));
            }
            Outcome::Unknown(_) => {
                log.push(write);
                break;
            }
        }
        log.push(write);
        tokio::time::sleep(Duration::from_millis(pace)).await;
    }
    let killer = killer.unwrap_or_else(|| arm(daemon.pid()));
    killer.await.unwrap();
    let _ = daemon.child.wait();
    drop(daemon);

    // Restart on the same state dir, and watch it converge.
    let restarted_at = Instant::now();
    let daemon = Daemon::start(&state, &log_path);
    let client = connect(&daemon.kubeconfig).await;
    let mut first: Option<Snapshot> = None;
    let mut last: Option<Snapshot> = None;
    let mut converge = None;
    let mut last_problems = Vec::new();
    let mut slow = None;
    while restarted_at.elapsed() < CONVERGE_BOUND {
        match snapshot(&client, &identity).await {
            Ok(snap) => {
                if first.is_none() {
                    problems.extend(durability_problems(&log, &snap, false));
                }
                last_problems = convergence_problems(&snap);
                let done = last_problems.is_empty();
                if slow.is_none() && restarted_at.elapsed() >= SLOW {
                    slow = Some(last_problems.clone());
                }
                if first.is_none() {
                    first = Some(snap);
                } else {
                    last = Some(snap);
                }
                if done {
                    converge = Some(restarted_at.elapsed());
                    break;
                }
            }
            Err(e) => last_problems = vec![e],
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let final_snap = last.as_ref().or(first.as_ref());
    match final_snap {
        Some(snap) => problems.extend(durability_problems(&log, snap, converge.is_some())),
        None => problems.push("the restarted daemon never answered a list".into()),
    }
    if converge.is_none() {
        problems.push(format!("not converged within {} s:", CONVERGE_BOUND.as_secs()));
        problems.extend(last_problems.into_iter().map(|p| format!("  {p}")));
    }

    let count = |f: fn(&Write) -> bool| log.iter().filter(|w| f(w)).count();
    let report = TrialReport {
        seed,
        kill_after,
        delay_ms,
        acked: count(Write::acked),
        unknown: count(Write::unknown),
        refused: count(|w| matches!(w.outcome, Some(Outcome::Refused(_)))),
        converge,
        problems,
        slow: slow.unwrap_or_default(),
    };
    if !report.problems.is_empty() {
        eprintln!("---- seed {seed}: the client's log of writes");
        for w in &log {
            let outcome = w.outcome.as_ref().map_or_else(|| "not sent".to_string(), Outcome::to_string);
            eprintln!("  {:?} {} -> {outcome}", w.op, w.key);
        }
        if let Some(snap) = final_snap {
            eprintln!("---- seed {seed}: the store and Docker at the end");
            for (key, seen) in &snap.objects {
                eprintln!(
                    "  {key}: uid {} phase {} deleting {} runtime {:?}",
                    seen.uid,
                    seen.phase,
                    seen.deleting,
                    seen.runtime_id.as_deref().map(short)
                );
            }
            for c in &snap.docker {
                eprintln!(
                    "  docker {} {} {} owner {} retained {}",
                    c.name,
                    short(&c.id),
                    c.state,
                    c.owner_uid,
                    c.retained
                );
            }
        }
        eprintln!("---- seed {seed}: problems");
        for p in &report.problems {
            eprintln!("  {p}");
        }
        eprintln!("---- seed {seed}: the daemon's log (tail)\n{}", tail(&log_path, 60));
    }
    drop(daemon);
    remove_containers(&identity);
    if !report.problems.is_empty() {
        eprintln!("---- seed {seed}: state dir and daemon log kept in {}", tmp.keep().display());
    }
    report
}

/// Run `seeds` one after another, print a line each, and fail if any trial found a problem.
fn run_trials(test: &str, seeds: impl IntoIterator<Item = u64>) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        if docker_or_skip(test).await.is_none() {
            return;
        }
        ensure_test_image().unwrap();
        // Trials are independent (own daemon, state dir, identity and names), and most of a
        // trial is waiting out the restarted daemon's 30 s for the killed one's requests: run
        // `DRYDOCK_CRASH_PARALLEL` (5) at a time.
        let parallel = usize::try_from(env_u64("DRYDOCK_CRASH_PARALLEL", 5).max(1)).unwrap_or(1);
        let seeds: Vec<u64> = seeds.into_iter().collect();
        let mut reports = Vec::new();
        for batch in seeds.chunks(parallel) {
            // Each on its own thread and runtime: a trial's blocking waits never delay another's kill.
            let batch_reports: Vec<TrialReport> = std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|&seed| {
                        scope.spawn(move || {
                            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                            runtime.block_on(trial(seed))
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for report in batch_reports {
                println!("{}", report.line());
                for reason in report.slow.iter().take(6) {
                    println!("    waiting {} s after the restart: {reason}", SLOW.as_secs());
                }
                reports.push(report);
            }
        }
        println!("---- {test}: {} trials", reports.len());
        for report in &reports {
            println!("{}", report.line());
        }
        let failed: Vec<u64> = reports.iter().filter(|r| !r.problems.is_empty()).map(|r| r.seed).collect();
        assert!(failed.is_empty(), "kill -9 trials failed for seeds {failed:?} (details above; rerun one with DRYDOCK_CRASH_SEED=S cargo test -p drydock --test crash_trials -- --ignored many_kill9_trials --nocapture)");
    });
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value.trim().parse().unwrap_or_else(|_| panic!("{name}={value:?}: not a number")),
        Err(_) => default,
    }
}

#[test]
fn kill9_trials() {
    run_trials("kill9_trials", 1..=5);
}

#[test]
#[ignore = "long: DRYDOCK_CRASH_TRIALS (20) kill -9 trials from DRYDOCK_CRASH_START (1), or DRYDOCK_CRASH_SEED=S"]
fn many_kill9_trials() {
    match std::env::var_os("DRYDOCK_CRASH_SEED") {
        Some(_) => {
            let seed = env_u64("DRYDOCK_CRASH_SEED", 1);
            run_trials("many_kill9_trials", [seed]);
        }
        None => {
            let start = env_u64("DRYDOCK_CRASH_START", 1);
            let trials = env_u64("DRYDOCK_CRASH_TRIALS", 20);
            run_trials("many_kill9_trials", start..start + trials);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Restart time over 20 running containers.

/// All `count` physical containers Running, each on its own running container, and Docker
/// holding exactly `count` containers of `identity`, all running.
fn all_running(snap: &Snapshot, count: usize) -> Result<(), String> {
    let pcs: Vec<(&Key, &Seen)> = snap.objects.iter().filter(|(k, _)| k.kind == Kind::Physical).collect();
    let running = pcs.iter().filter(|(_, s)| s.phase == "Running" && !s.deleting).count();
    let docker_running = snap.docker.iter().filter(|c| c.state == "running").count();
    let problems = docker_problems(snap);
    if pcs.len() == count
        && running == count
        && snap.docker.len() == count
        && docker_running == count
        && problems.is_empty()
    {
        Ok(())
    } else {
        Err(format!(
            "{} objects, {running} Running; Docker holds {} ({docker_running} running); {problems:?}",
            pcs.len(),
            snap.docker.len()
        ))
    }
}

async fn wait_all_running(client: &Client, identity: &str, count: usize, since: Instant, bound: Duration) -> Duration {
    let mut last = String::new();
    while since.elapsed() < bound {
        match snapshot(client, identity).await {
            Ok(snap) => match all_running(&snap, count) {
                Ok(()) => return since.elapsed(),
                Err(e) => last = e,
            },
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not all {count} Running within {} s: {last}", bound.as_secs())
}

/// Create a namespace and `count` physical containers through the API, returning once every
/// create is acknowledged.
async fn create_twenty(client: &Client, ns: &str, count: usize) {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    Kind::Namespace
        .api(client, None)
        .create(&PostParams::default(), &serde_json::from_value(namespace).unwrap())
        .await
        .unwrap();
    for i in 0..count {
        let pc = json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
            "metadata": {"name": format!("pc{i}"), "namespace": ns},
            "spec": {"image": TEST_IMAGE, "command": SLEEPER}});
        Kind::Physical
            .api(client, Some(ns))
            .create(&PostParams::default(), &serde_json::from_value(pc).unwrap())
            .await
            .unwrap();
    }
}

/// The restart-to-converged time for a workload of 20 containers, two ways, each
/// `DRYDOCK_CRASH_RESTARTS` (5) times on a fresh state dir:
/// - *mid-creation*: SIGKILL right after the 20 creates are acknowledged, while the daemon is
///   creating their containers; converged = all 20 Running, Docker holding exactly 20;
/// - *steady*: SIGKILL once all 20 run; converged = the same, found again after the restart.
#[test]
#[ignore = "long: DRYDOCK_CRASH_RESTARTS (5) kill -9 restarts over a workload of 20 containers"]
fn restart_converge_20_containers() {
    const TEST: &str = "restart_converge_20_containers";
    const COUNT: usize = 20;
    let restarts = env_u64("DRYDOCK_CRASH_RESTARTS", 5);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        if docker_or_skip(TEST).await.is_none() {
            return;
        }
        ensure_test_image().unwrap();
        let (mut mid, mut steady) = (Vec::new(), Vec::new());
        for round in 1..=restarts {
            let tmp = tempfile::tempdir().unwrap();
            let state = tmp.path().join("state");
            let log_path = tmp.path().join("daemon.log");
            let ns = format!("crash-{}-twenty-{round}", std::process::id());
            let mut daemon = Daemon::start(&state, &log_path);
            let identity = identity(&state);
            create_twenty(&connect(&daemon.kubeconfig).await, &ns, COUNT).await;
            for (label, times) in [("mid-creation", &mut mid), ("steady", &mut steady)] {
                daemon.kill9();
                drop(daemon);
                let restarted_at = Instant::now();
                daemon = Daemon::start(&state, &log_path);
                let client = connect(&daemon.kubeconfig).await;
                let took = wait_all_running(&client, &identity, COUNT, restarted_at, CONVERGE_BOUND).await;
                println!(
                    "{TEST}: round {round}, killed {label}: all {COUNT} Running, Docker holding exactly {COUNT}, {} ms after the restart",
                    took.as_millis()
                );
                times.push(took);
            }
            drop(daemon);
            remove_containers(&identity);
        }
        for (label, times) in [("mid-creation", &mut mid), ("steady", &mut steady)] {
            times.sort();
            if let Some(median) = times.get(times.len() / 2) {
                println!("{TEST}: killed {label}: median restart-to-converged over {} restarts: {} ms", times.len(), median.as_millis());
            }
        }
    });
}
