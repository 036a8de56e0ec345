//! `drydock up`: bad manifests are refused whole; a good one runs on Docker and tears down.
#![allow(clippy::unwrap_used)]

mod support;

use drydock_adapters::testing::{
    RemoveOnDrop, TEST_IMAGE, docker_bounded, docker_names_with, docker_or_skip, ensure_test_image, running_names_with,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::{drydock_in, unique};

/// A manifest in a temporary directory of its own (`drydock up` keeps its state beside the
/// manifest, and tests running at once must not share it), removed with it.
struct Manifest {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Manifest {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Manifest {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl AsRef<Path> for Manifest {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

fn manifest(name: &str, text: &str) -> Manifest {
    let dir = tempfile::Builder::new().prefix("drydock-up-test-").tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    Manifest { path, _dir: dir }
}

fn up_fails(path: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_drydock")).arg("up").arg("-f").arg(path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn a_manifest_with_an_unknown_field_is_refused_and_nothing_is_created() {
    let ns = unique("bad");
    let path = manifest(
        "unknown.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{image: {TEST_IMAGE}, comand: [sleep, '1']}}\n"
        ),
    );
    let stderr = up_fails(&path);
    assert!(
        stderr.contains("unknown.yaml") && stderr.contains("spec.comand") && stderr.contains("object #2"),
        "{stderr}"
    );
    if docker_or_skip("up_unknown_field").await.is_some() {
        assert!(docker_names_with(&ns).is_empty(), "containers were created");
    }
}

#[tokio::test]
async fn a_manifest_with_a_bad_image_reference_is_refused_and_nothing_is_created() {
    let ns = unique("bad");
    let path = manifest(
        "image.json",
        &format!(
            r#"[{{"kind":"Namespace","metadata":{{"name":"{ns}"}}}},
            {{"kind":"PhysicalContainer","metadata":{{"name":"ok","namespace":"{ns}"}},"spec":{{"image":"{TEST_IMAGE}"}}}},
            {{"kind":"PhysicalContainer","metadata":{{"name":"web","namespace":"{ns}"}},"spec":{{"image":"Not An Image"}}}}]"#
        ),
    );
    let stderr = up_fails(&path);
    assert!(stderr.contains("spec.image") && stderr.contains("object #3"), "{stderr}");
    if docker_or_skip("up_bad_image").await.is_some() {
        assert!(docker_names_with(&ns).is_empty(), "the valid object before it was not applied either");
    }
}

#[test]
fn a_misspelt_metadata_field_is_named() {
    let path = manifest("meta.yaml", "kind: Namespace\nmetadata: {name: x, lables: {}}\n");
    let stderr = up_fails(&path);
    assert!(stderr.contains("metadata.lables"), "{stderr}");
}

#[tokio::test]
async fn up_runs_a_manifest_on_docker_and_tears_down_on_sigterm() {
    if docker_or_skip("up_runs").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("up");
    let path = manifest(
        "good.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  image: {TEST_IMAGE}\n  command: [sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"
        ),
    );
    let keys = [format!("PhysicalContainer/{ns}/web")];
    let output = up_until_running_then(&path, &keys, || {
        assert_eq!(docker_names_with(&ns), vec![format!("{ns}-web")]);
    });
    assert!(output.contains("nothing left"), "{output}");
    assert!(output.contains(&format!("Namespace/{ns}")) && output.contains("deleted"), "{output}");
    assert!(docker_names_with(&ns).is_empty(), "runtime containers left behind");
}

/// Run `drydock up -f path` until each of `keys` has been shown Running, then SIGTERM it and
/// return its whole output (it must exit 0).
fn up_until_running(path: &Path, keys: &[String]) -> String {
    up_until_running_then(path, keys, || {})
}

/// The same, calling `while_running` before the SIGTERM.
fn up_until_running_then(path: &Path, keys: &[String], while_running: impl FnOnce()) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .arg("up")
        .arg("-f")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let running =
        |lines: &[String], key: &str| lines.iter().any(|l| l.contains(&format!("{key} ")) && l.contains("Running"));
    while !keys.iter().all(|k| running(&lines, k)) {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("{keys:?} not all Running within 60 s; output so far:\n{}", lines.join("\n"));
            }
        }
    }
    while_running();
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        lines.push(line);
    }
    let output = lines.join("\n");
    assert!(status.success(), "exit {status}:\n{output}");
    output
}

fn container_id(name: &str) -> Option<String> {
    let out = Command::new("docker").args(["inspect", "--format", "{{.Id}}", name]).output().unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[tokio::test]
async fn logical_containers_session_goes_persistent_stays_and_is_reused_then_replaced() {
    if docker_or_skip("up_logical").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("lc");
    let persistent_name = format!("{ns}-db");
    let session_name = format!("{ns}-web");
    let command = "[sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]";
    let manifest_with = |version: &str| {
        manifest(
            &format!("logical-{version}.yaml"),
            &format!(
                "kind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
                 kind: LogicalContainer\nmetadata: {{name: web, namespace: {ns}}}\n\
                 spec: {{mode: session, image: '{TEST_IMAGE}', command: {command}}}\n---\n\
                 kind: LogicalContainer\nmetadata: {{name: db, namespace: {ns}}}\n\
                 spec: {{mode: persistent, image: '{TEST_IMAGE}', containerName: {persistent_name}, env: [{{name: VERSION, value: '{version}'}}], command: {command}}}\n"
            ),
        )
    };
    let keys = [format!("LogicalContainer/{ns}/web"), format!("LogicalContainer/{ns}/db")];

    // Run 1: both reach Running; teardown removes the session container and keeps the persistent one.
    let out = up_until_running(&manifest_with("1"), &keys);
    assert!(out.contains("kept (persistent or retained)") && out.contains("nothing left"), "{out}");
    assert!(container_id(&session_name).is_none(), "the session container was removed:\n{out}");
    let first = container_id(&persistent_name).expect("the persistent container is kept");

    // Run 2, same spec: the persistent container is reused (same id, not created again).
    up_until_running(&manifest_with("1"), &keys);
    assert_eq!(container_id(&persistent_name).as_deref(), Some(first.as_str()), "reused");

    // Run 3, a change to the lifecycle key: replaced by a new container.
    up_until_running(&manifest_with("2"), &keys);
    let third = container_id(&persistent_name).expect("a persistent container");
    assert_ne!(third, first, "replaced after the key changed");
    let _ = docker_bounded(&["rm", "-f", &persistent_name]);
}

/// A proxy on a Unix socket in front of the Docker daemon that records the request line of every
/// HTTP request passing through (`POST /v1.41/containers/<id>/start`): a start Docker refuses
/// leaves no event, so counting requests is the only way to count attempts.
struct DockerProxy {
    socket: PathBuf,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl DockerProxy {
    async fn start() -> DockerProxy {
        let socket = std::env::temp_dir().join(format!("drydock-docker-proxy-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = requests.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let Ok(daemon) = tokio::net::UnixStream::connect("/var/run/docker.sock").await else { return };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut daemon_read, mut daemon_write) = daemon.into_split();
                    let upstream = async move {
                        use tokio::io::{AsyncReadExt, AsyncWriteExt};
                        let mut buffer = vec![0u8; 64 * 1024];
                        while let Ok(n) = client_read.read(&mut buffer).await {
                            if n == 0 {
                                break;
                            }
                            for line in String::from_utf8_lossy(&buffer[..n]).lines() {
                                let methods = ["GET ", "POST ", "DELETE ", "PUT ", "HEAD "];
                                if methods.iter().any(|m| line.starts_with(m)) && line.ends_with("HTTP/1.1") {
                                    log.lock().unwrap().push(line.to_string());
                                }
                            }
                            if daemon_write.write_all(&buffer[..n]).await.is_err() {
                                break;
                            }
                        }
                    };
                    let downstream = tokio::io::copy(&mut daemon_read, &mut client_write);
                    let _ = tokio::join!(upstream, downstream);
                });
            }
        });
        DockerProxy { socket, requests }
    }

    /// How many start requests reached Docker for container `id`.
    fn starts_of(&self, id: &str) -> usize {
        let requests = self.requests.lock().unwrap();
        requests.iter().filter(|r| r.starts_with("POST ") && r.contains(&format!("/containers/{id}/start"))).count()
    }
}

/// Issue 11's must-hold on real Docker: a container whose command is not in the image and one
/// whose host port is taken each end `Failed` with Docker's own message within 10 s, after a
/// handful of start attempts at most (counted as requests reaching Docker), and teardown leaves
/// nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_that_can_never_succeed_end_failed_with_dockers_message() {
    if docker_or_skip("up_start_failures").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let proxy = DockerProxy::start().await;
    let ns = unique("fail");
    let _cleanup = RemoveOnDrop(ns.clone());
    // A host process holds a port: Docker cannot publish on it.
    let held = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let path = manifest(
        "failing.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
             kind: PhysicalContainer\nmetadata: {{name: missing, namespace: {ns}}}\n\
             spec: {{image: '{TEST_IMAGE}', command: [nosuchprogram]}}\n---\n\
             kind: PhysicalContainer\nmetadata: {{name: porty, namespace: {ns}}}\n\
             spec: {{image: '{TEST_IMAGE}', command: [sleep, '3600'], ports: [{{containerPort: 80, hostPort: {port}}}]}}\n"
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .arg("up")
        .arg("-f")
        .arg(&path)
        .env("DOCKER_HOST", format!("unix://{}", proxy.socket.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let keys = [format!("PhysicalContainer/{ns}/missing "), format!("PhysicalContainer/{ns}/porty ")];
    let failed = |lines: &[String], key: &str| lines.iter().find(|l| l.contains(key) && l.contains("Failed")).cloned();
    let started = Instant::now();
    let mut lines: Vec<String> = Vec::new();
    while !keys.iter().all(|k| failed(&lines, k).is_some()) {
        match rx.recv_timeout(Duration::from_secs(10).saturating_sub(started.elapsed())) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                let starts: Vec<String> = ["missing", "porty"]
                    .iter()
                    .map(|name| {
                        let id = container_id(&format!("{ns}-{name}")).unwrap_or_default();
                        format!("{name}: {} start requests", proxy.starts_of(&id))
                    })
                    .collect();
                panic!("not both Failed within 10 s ({}); output so far:\n{}", starts.join(", "), lines.join("\n"));
            }
        }
    }
    let missing = failed(&lines, &keys[0]).unwrap_or_default();
    let porty = failed(&lines, &keys[1]).unwrap_or_default();
    assert!(missing.contains("executable file not found"), "Docker's message for the missing command: {missing}");
    assert!(
        porty.contains("address already in use") || porty.contains("port is already allocated"),
        "Docker's message for the taken port: {porty}"
    );
    for name in ["missing", "porty"] {
        let id = container_id(&format!("{ns}-{name}")).expect("the container exists until teardown");
        let starts = proxy.starts_of(&id);
        eprintln!(
            "{name}: Failed after {starts} start requests, {:.1} s after up began",
            started.elapsed().as_secs_f64()
        );
        assert!((1..=5).contains(&starts), "{name}: {starts} start requests reached Docker");
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        lines.push(line);
    }
    let output = lines.join("\n");
    assert!(status.success(), "exit {status}:\n{output}");
    assert!(output.contains("nothing left"), "{output}");
    assert!(docker_names_with(&ns).is_empty(), "runtime containers left behind:\n{output}");
    drop(held);
    let _ = std::fs::remove_file(&proxy.socket);
}

fn drydock(args: &[&str], path: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_drydock")).args(args).arg("-f").arg(path).output().unwrap()
}

#[tokio::test]
async fn up_wait_exits_1_when_an_object_fails_and_down_tears_down() {
    if docker_or_skip("up_wait").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("wait");
    let _cleanup = RemoveOnDrop(ns.clone());
    let sleeper = "[sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]";
    let good = format!(
        "kind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
         kind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{image: '{TEST_IMAGE}', command: {sleeper}}}\n"
    );
    // All settle and none fails: exit 0, and the container is left running for `down`.
    let path = manifest("wait-good.yaml", &good);
    let out = drydock(&["up", "--wait", "--wait-timeout-secs", "90"], &path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("none failed") && stdout.contains("drydock down"), "{stdout}");
    assert_eq!(docker_names_with(&ns), vec![format!("{ns}-web")], "left running after --wait");
    let down = drydock(&["down"], &path);
    let down_out = String::from_utf8_lossy(&down.stdout);
    assert_eq!(down.status.code(), Some(0), "{down_out}{}", String::from_utf8_lossy(&down.stderr));
    assert!(down_out.contains("nothing left"), "{down_out}");
    assert!(docker_names_with(&ns).is_empty(), "down left containers");

    // One object fails for good (its program does not exist): exit 1, naming it and Docker's message.
    let failing = format!(
        "{good}---\nkind: PhysicalContainer\nmetadata: {{name: broken, namespace: {ns}}}\n\
         spec: {{image: '{TEST_IMAGE}', command: [nosuchprogram]}}\n"
    );
    let path = manifest("wait-failing.yaml", &failing);
    let out = drydock(&["up", "--wait", "--wait-timeout-secs", "90"], &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains(&format!("PhysicalContainer/{ns}/broken")) && stderr.contains("nosuchprogram"), "{stderr}");
    assert!(stderr.contains("1 of 3 objects failed"), "{stderr}");
    let down = drydock(&["down"], &path);
    assert_eq!(down.status.code(), Some(0), "{}", String::from_utf8_lossy(&down.stderr));
    assert!(docker_names_with(&ns).is_empty(), "down left containers");
}

#[tokio::test]
async fn a_rerun_after_a_crash_finds_its_objects_and_adopts_its_containers() {
    if docker_or_skip("up_crash_rerun").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("crash");
    let _cleanup = RemoveOnDrop(ns.clone());
    let path = manifest(
        "crash.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  image: {TEST_IMAGE}\n  command: [sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"
        ),
    );
    let key = format!("PhysicalContainer/{ns}/web");
    // Run 1: up until Running, then SIGKILL: no teardown happens.
    let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .args(["up", "-f"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("web never Running");
        if line.contains(&format!("{key} ")) && line.contains("Running") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let first = container_id(&format!("{ns}-web")).expect("the container outlives the crashed run");

    // Run 2 over the same state: the objects are found (unchanged) and the container adopted.
    let output = up_until_running_then(&path, std::slice::from_ref(&key), || {
        assert_eq!(container_id(&format!("{ns}-web")).as_deref(), Some(first.as_str()), "adopted, not recreated");
    });
    assert!(output.contains(&key) && output.contains("unchanged"), "{output}");
    assert!(!output.contains("stranger"), "{output}");
    assert!(output.contains("nothing left"), "{output}");
    assert!(docker_names_with(&ns).is_empty(), "runtime containers left behind");
}

#[test]
fn a_wrong_api_version_is_refused_naming_the_one_served() {
    let path = manifest(
        "api-version.yaml",
        &format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: fine}}\n---\n\
             apiVersion: v1\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: fine}}\nspec: {{image: {TEST_IMAGE}}}\n"
        ),
    );
    let stderr = up_fails(&path);
    assert!(
        stderr.contains("object #2")
            && stderr.contains("field apiVersion")
            && stderr.contains("served as drydock.dev/v1"),
        "{stderr}"
    );
}

/// A manifest in `folder`, beside any others there.
fn manifest_in(folder: &std::path::Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(folder).unwrap();
    let path = folder.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A `.drydock` from before state was per manifest (a store directly in it, shared by every
/// manifest of the folder) is neither used as one manifest's nor lost: `up` and `down` refuse,
/// saying how to tear it down; `--state-dir` still reaches it.
#[test]
fn an_old_shared_state_dir_is_refused_with_what_to_do() {
    let folder = std::env::temp_dir().join(unique("drydock-up-legacy"));
    manifest_in(&folder, "a.yaml", "kind: Namespace\nmetadata: {name: legacy}\n");
    let old = folder.join(".drydock");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("store.db"), "an earlier version's store").unwrap();
    for args in [&["up", "--wait", "-f", "a.yaml"][..], &["down", "-f", "a.yaml"], &["up", "-f", "a.yaml", "-p", "x"]] {
        let out = drydock_in(&folder, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("./.drydock holds a store of an earlier drydock version"), "{stderr}");
        assert!(
            stderr.contains("drydock down --state-dir ./.drydock") && stderr.contains("rm -r ./.drydock"),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(old.join("store.db")).unwrap(), "an earlier version's store", "untouched");
    assert_eq!(std::fs::read_dir(&old).unwrap().count(), 1, "nothing added beside it");
    let _ = std::fs::remove_dir_all(&folder);
}

#[test]
fn a_project_name_is_a_plain_name() {
    let folder = std::env::temp_dir().join(unique("drydock-up-project"));
    manifest_in(&folder, "a.yaml", "kind: Namespace\nmetadata: {name: plain}\n");
    for bad in ["../x", ".hidden", "a/b", ""] {
        let out = drydock_in(&folder, &["up", "-f", "a.yaml", "-p", bad]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "-p {bad:?}: {stderr}");
        assert!(stderr.contains("a project name is"), "{stderr}");
    }
    let both = drydock_in(&folder, &["down", "-p", "x", "--state-dir", "elsewhere"]);
    assert_eq!(both.status.code(), Some(2), "-p and --state-dir together are refused");
    assert!(!folder.join(".drydock").exists(), "nothing was created");
    let _ = std::fs::remove_dir_all(&folder);
}

/// Issue 48: manifests in one folder have a state each: `down -f b.yaml` tears down b.yaml's
/// objects only (and, for a manifest never brought up, nothing), and `-p NAME` puts several
/// under one state that `down -p NAME` tears down together.
#[tokio::test]
async fn down_of_one_manifest_leaves_the_objects_of_another_in_the_same_folder() {
    if docker_or_skip("up_state_per_manifest").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let (ns_a, ns_b) = (unique("pera"), unique("perb"));
    let _cleanup = (RemoveOnDrop(ns_a.clone()), RemoveOnDrop(ns_b.clone()));
    let folder = std::env::temp_dir().join(unique("drydock-up-folder"));
    let sleeper = "[sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]";
    let stack = |ns: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
             apiVersion: drydock.dev/v1\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\n\
             spec: {{image: '{TEST_IMAGE}', command: {sleeper}}}\n"
        )
    };
    manifest_in(&folder, "a.yaml", &stack(&ns_a));
    manifest_in(&folder, "b.yaml", &stack(&ns_b));
    let (web_a, web_b) = (vec![format!("{ns_a}-web")], vec![format!("{ns_b}-web")]);
    let ok = |args: &[&str]| {
        let out = drydock_in(&folder, args);
        assert_eq!(out.status.code(), Some(0), "drydock {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // a.yaml up; b.yaml was never brought up: its down finds no state and touches nothing.
    let up_a = ok(&["up", "--wait", "-f", "a.yaml"]);
    assert!(up_a.contains("state in ./.drydock/a.yaml") && up_a.contains("`drydock down -f a.yaml`"), "{up_a}");
    let none = drydock_in(&folder, &["down", "-f", "b.yaml"]);
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no drydock state for b.yaml") && stderr.contains("beside it: a.yaml"), "{stderr}");
    assert_eq!(running_names_with(&ns_a), web_a, "a.yaml's container still runs");

    // b.yaml up and down: a.yaml's container still runs.
    ok(&["up", "--wait", "-f", "b.yaml"]);
    assert_eq!(running_names_with(&ns_b), web_b);
    let down_b = ok(&["down", "-f", "b.yaml"]);
    assert!(down_b.contains("tearing down 2 objects") && down_b.contains("nothing left"), "{down_b}");
    assert!(docker_names_with(&ns_b).is_empty(), "b.yaml's container removed");
    assert_eq!(running_names_with(&ns_a), web_a, "down -f b.yaml left a.yaml's container running");

    // down -f a.yaml removes a.yaml's.
    let down_a = ok(&["down", "-f", "a.yaml"]);
    assert!(down_a.contains("tearing down 2 objects") && down_a.contains("nothing left"), "{down_a}");
    assert!(docker_names_with(&ns_a).is_empty(), "a.yaml's container removed");

    // One project for both: one state, torn down together by `down -p NAME` in the folder.
    let up_a = ok(&["up", "--wait", "-f", "a.yaml", "-p", "both"]);
    assert!(up_a.contains("state in ./.drydock/both") && up_a.contains("`drydock down -f a.yaml -p both`"), "{up_a}");
    ok(&["up", "--wait", "-f", "b.yaml", "-p", "both"]);
    assert_eq!((running_names_with(&ns_a), running_names_with(&ns_b)), (web_a.clone(), web_b.clone()));
    let down = ok(&["down", "-p", "both"]);
    assert!(down.contains("tearing down 4 objects") && down.contains("nothing left"), "{down}");
    assert!(docker_names_with(&ns_a).is_empty() && docker_names_with(&ns_b).is_empty(), "{down}");
    let _ = std::fs::remove_dir_all(&folder);
}

/// What the refusal of an old shared `.drydock` advises works: `down --state-dir` tears down what
/// it holds (its containers with it), and once it is removed, `up` keeps its state per manifest.
#[tokio::test]
async fn an_old_shared_state_dir_is_torn_down_as_the_refusal_says() {
    if docker_or_skip("up_legacy_state").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("legacy");
    let _cleanup = RemoveOnDrop(ns.clone());
    let folder = std::env::temp_dir().join(unique("drydock-up-legacy-docker"));
    let sleeper = "[sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]";
    manifest_in(
        &folder,
        "a.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
             kind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{image: '{TEST_IMAGE}', command: {sleeper}}}\n"
        ),
    );
    // The layout of earlier versions: the store directly in `.drydock` beside the manifest.
    let old = drydock_in(&folder, &["up", "--wait", "-f", "a.yaml", "--state-dir", ".drydock"]);
    assert_eq!(old.status.code(), Some(0), "{}", String::from_utf8_lossy(&old.stderr));
    assert!(folder.join(".drydock/store.db").is_file());
    let refused = drydock_in(&folder, &["up", "--wait", "-f", "a.yaml"]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(running_names_with(&ns), vec![format!("{ns}-web")], "the refusal touched nothing");

    let down = drydock_in(&folder, &["down", "--state-dir", "./.drydock"]);
    let down_out = String::from_utf8_lossy(&down.stdout);
    assert_eq!(down.status.code(), Some(0), "{down_out}{}", String::from_utf8_lossy(&down.stderr));
    assert!(down_out.contains("tearing down 2 objects") && down_out.contains("nothing left"), "{down_out}");
    assert!(docker_names_with(&ns).is_empty(), "torn down");
    std::fs::remove_dir_all(folder.join(".drydock")).unwrap();
    let up = drydock_in(&folder, &["up", "--wait", "-f", "a.yaml"]);
    assert_eq!(up.status.code(), Some(0), "{}", String::from_utf8_lossy(&up.stderr));
    assert!(folder.join(".drydock/a.yaml/store.db").is_file(), "per manifest from now on");
    let down = drydock_in(&folder, &["down", "-f", "a.yaml"]);
    assert_eq!(down.status.code(), Some(0), "{}", String::from_utf8_lossy(&down.stderr));
    assert!(docker_names_with(&ns).is_empty());
    let _ = std::fs::remove_dir_all(&folder);
}
