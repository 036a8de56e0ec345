//! The ContainerSet controller on real Docker, through the example's own binary: `containerset up`
//! runs it beside the built-in controllers, and a SIGTERM tears everything down; `containerset
//! daemon` serves the kind to the real kubectl.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::{
    RemoveOnDrop, TEST_IMAGE, docker_names_with, docker_or_skip, ensure_test_image, kubectl_or_skip, running_names_with,
};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A ContainerSet `web` of `replicas` in a namespace of its own, written as a manifest; what
/// Docker holds of the namespace is removed when it is dropped, however the test ends.
struct Set {
    ns: String,
    path: PathBuf,
    _dir: tempfile::TempDir,
    _cleanup: RemoveOnDrop,
}

impl Set {
    fn new(prefix: &str, replicas: u32) -> Set {
        ensure_test_image().unwrap();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let ns = format!("{prefix}-{}-{}", std::process::id(), nanos % 100_000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\napiVersion: example.dev/v1\nkind: ContainerSet\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{image: '{TEST_IMAGE}', replicas: {replicas}}}\n"
            ),
        )
        .unwrap();
        Set { _cleanup: RemoveOnDrop(format!("{ns}-")), ns, path, _dir: dir }
    }

    /// The Docker containers of the set's namespace: running ones only, or all.
    fn containers(&self, running: bool) -> Vec<String> {
        let prefix = format!("{}-", self.ns);
        let mut names = if running { running_names_with(&prefix) } else { docker_names_with(&prefix) };
        names.sort();
        names
    }

    /// The runtime names of replicas `0..n`.
    fn replicas(&self, n: u32) -> Vec<String> {
        (0..n).map(|i| format!("{}-web-{i}", self.ns)).collect()
    }
}

#[tokio::test]
async fn containerset_up_runs_the_users_controller_on_docker_and_tears_down() {
    if docker_or_skip("containerset_up").await.is_none() {
        return;
    }
    let set = Set::new("cs", 2);
    let (ns, path) = (set.ns.as_str(), &set.path);
    let mut child = Command::new(env!("CARGO_BIN_EXE_containerset"))
        .arg("up")
        .arg("-f")
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<_>>());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let running = set.containers(true);
        if running == set.replicas(2) {
            break;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("the set's two containers did not run within 60 s: {running:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(term.success());
    let status = child.wait().unwrap();
    let output = lines.join().unwrap().join("\n");
    assert!(status.success(), "containerset up exited with {status}:\n{output}");
    assert!(output.contains(&format!("ContainerSet/{ns}/web")), "{output}");
    assert!(set.containers(false).is_empty(), "left behind after teardown:\n{output}");
}

/// `up --wait` waits for the kind's own rule (`KindInfo::with_settled`: every replica runs), and
/// `down` tears it down.
#[tokio::test]
async fn containerset_up_wait_returns_once_every_replica_runs() {
    if docker_or_skip("containerset_up_wait").await.is_none() {
        return;
    }
    let set = Set::new("csw", 3);
    let path = &set.path;
    let containerset = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_containerset")).args(args).arg("-f").arg(path).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "containerset {args:?} failed:\n{text}");
    };
    containerset(&["up", "--wait"]);
    assert_eq!(set.containers(true), set.replicas(3), "up --wait returned before every replica ran");
    containerset(&["down"]);
    assert!(set.containers(false).is_empty(), "down left containers");
}

#[test]
fn containerset_sim_knows_the_users_scenarios_and_invariant() {
    let out = Command::new(env!("CARGO_BIN_EXE_containerset")).args(["sim", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("containerset-buggy") && text.contains("containerset-never-over-replicated"), "{text}");
}

/// Wait until `done` holds, or fail with `what`.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "not within 60 s: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test]
async fn containerset_daemon_serves_the_users_kind_to_kubectl() {
    if docker_or_skip("containerset_daemon").await.is_none() || !kubectl_or_skip("containerset_daemon") {
        return;
    }
    let set = Set::new("csd", 2);
    let ns = set.ns.as_str();
    let state = tempfile::tempdir().unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_containerset"))
        .args(["daemon", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(daemon.stdout.take().unwrap()).lines().map_while(Result::ok);
    let kubeconfig = lines.find_map(|l| l.strip_prefix("kubeconfig: ").map(str::to_string)).expect("a kubeconfig line");
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl").arg("--kubeconfig").arg(&kubeconfig).args(args).output().unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let (ok, out) = kubectl(&["api-resources", "--api-group", "example.dev"]);
    assert!(ok && out.contains("containersets"), "{out}");
    let (ok, out) = kubectl(&["apply", "-f", set.path.to_str().unwrap()]);
    assert!(ok, "{out}");
    wait_for("two running containers", || set.containers(true) == set.replicas(2));
    let (ok, out) = kubectl(&["get", "containersets", "-n", ns, "web", "-o", "jsonpath={.status.containers}"]);
    assert!(ok && out.trim() == "2", "{out}");
    // Admission runs the kind's validation: 11 replicas is more than the kind allows.
    let (ok, out) =
        kubectl(&["patch", "containerset", "web", "-n", ns, "--type", "merge", "-p", r#"{"spec":{"replicas":11}}"#]);
    assert!(!ok && out.contains("spec.replicas"), "{out}");
    let (ok, out) = kubectl(&["delete", "namespace", ns, "--wait=true", "--timeout=60s"]);
    assert!(ok, "{out}");
    wait_for("nothing left in Docker", || set.containers(false).is_empty());
    let term = Command::new("kill").args(["-TERM", &daemon.id().to_string()]).status().unwrap();
    assert!(term.success());
    assert!(daemon.wait().unwrap().success());
}
