//! Every manifest in `examples/` (found by listing `examples/*.yaml`, so a new one cannot be
//! forgotten) runs the two ways the README tells a user to run it: `kubectl apply -f` against
//! `drydock daemon`, and `drydock up --wait -f` then `drydock down -f`, on Docker with the offline
//! test image. And `examples/logical.yaml`'s persistent-container flow works as its comment types it.
//!
//! The examples use fixed names (namespaces `demo`, `shop`; containers `demo-web`, `shop-db`...),
//! so the tests of this file run one at a time, and remove only containers of those exact names
//! that drydock created (by its creator label), before and after.
//!
//! Skips with a printed reason where kubectl or Docker is absent and `CI` is unset; with `CI` set
//! their absence is a failure.
#![allow(clippy::unwrap_used)]

mod support;

use drydock_adapters::testing::{docker_bounded, docker_or_skip, ensure_test_image, kubectl_or_skip};
use drydock_engine::api::{Registry, names};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{Daemon, drydock_in, eventually, unique};

/// The examples' names are fixed: one test at a time.
static EXAMPLES: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    EXAMPLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One manifest of `examples/`, and what running it makes in Docker.
struct Example {
    path: PathBuf,
    /// `demo.yaml`.
    file_name: String,
    objects: Vec<Value>,
}

impl Example {
    /// The runtime containers its objects stand for: (name, kept on delete by design).
    fn containers(&self) -> Vec<(String, bool)> {
        self.objects
            .iter()
            .filter(|o| matches!(o["kind"].as_str(), Some("PhysicalContainer" | "LogicalContainer")))
            .map(|o| {
                let (ns, name) =
                    (o["metadata"]["namespace"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap());
                let runtime =
                    o["spec"]["containerName"].as_str().map_or_else(|| format!("{ns}-{name}"), str::to_string);
                let persistent = o["kind"] == "LogicalContainer" && o["spec"]["mode"] == "persistent";
                (runtime, persistent)
            })
            .collect()
    }

    /// `Kind/ns/name` of each object, as `drydock up` prints them.
    fn keys(&self) -> Vec<String> {
        self.objects
            .iter()
            .map(|o| {
                let (kind, name) = (o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap());
                match o["metadata"]["namespace"].as_str() {
                    Some(ns) => format!("{kind}/{ns}/{name}"),
                    None => format!("{kind}/{name}"),
                }
            })
            .collect()
    }
}

/// Every `examples/*.yaml`, by name.
fn examples() -> Vec<Example> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 2, "examples/*.yaml: expected demo.yaml and logical.yaml at least, found {paths:?}");
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let objects: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
                .map(|d| Value::deserialize(d).unwrap())
                .filter(|v| !v.is_null())
                .collect();
            let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
            Example { path, file_name, objects }
        })
        .collect()
}

/// `docker rm -f` the containers named `names` that drydock created (its creator label): what an
/// earlier run of these tests, or an example's persistent container, left.
fn remove_drydock_containers(names: &[String]) {
    for name in names {
        let filter = format!("name=^/{name}$");
        let label = format!("label={}", names::LABEL_CREATOR);
        let listed = docker_bounded(&["ps", "-aq", "--filter", &filter, "--filter", &label]).unwrap();
        if !String::from_utf8_lossy(&listed.stdout).trim().is_empty() {
            docker_bounded(&["rm", "-f", name]).unwrap();
        }
    }
}

/// Removes the example's drydock-made containers when dropped, however the test ends.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        remove_drydock_containers(&self.0);
    }
}

fn container_names(example: &Example) -> Vec<String> {
    example.containers().into_iter().map(|(name, _)| name).collect()
}

/// Docker's id of the container named `name`, if there is one.
fn container_id(name: &str) -> Option<String> {
    let out = docker_bounded(&["inspect", "--format", "{{.Id}}", name]).unwrap();
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn is_running(name: &str) -> bool {
    let out = docker_bounded(&["inspect", "--format", "{{.State.Running}}", name]).unwrap();
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "true"
}

/// Whether `object` (as the API shows it) has come up as meant: active, running, ready, or
/// exited with code 0. Panics on a phase it cannot leave.
fn up_as_meant(object: &Value) -> bool {
    let phase = object["status"]["phase"].as_str().unwrap_or("Pending");
    let key =
        format!("{}/{}", object["kind"].as_str().unwrap_or("?"), object["metadata"]["name"].as_str().unwrap_or("?"));
    assert!(!matches!(phase, "Failed" | "Missing" | "NotFound" | "Unavailable"), "{key} is {phase}: {object}");
    match phase {
        "Active" | "Running" | "Ready" => true,
        "Exited" => {
            let code = object["status"]["exitCode"].as_i64().unwrap_or(0);
            assert_eq!(code, 0, "{key} exited with {code}: {object}");
            true
        }
        _ => false,
    }
}

#[test]
fn every_example_names_the_api_version_its_kind_is_served_as() {
    let registry = Registry::builtin();
    for example in examples() {
        assert!(!example.objects.is_empty(), "{}: no objects", example.file_name);
        for object in &example.objects {
            let kind =
                object["kind"].as_str().unwrap_or_else(|| panic!("{}: an object without kind", example.file_name));
            let served = registry.get(kind).unwrap_or_else(|| panic!("{}: {kind} is not served", example.file_name));
            assert_eq!(
                object["apiVersion"].as_str(),
                Some(served.group_version.as_str()),
                "{}: {kind} needs apiVersion: {} (kubectl refuses an object without one)",
                example.file_name,
                served.group_version
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_example_applies_with_kubectl_runs_and_deletes() {
    if !kubectl_or_skip("examples_kubectl") || docker_or_skip("examples_kubectl").await.is_none() {
        return;
    }
    let _one = one_at_a_time();
    ensure_test_image().unwrap();
    let state_dir = std::env::temp_dir().join(unique("drydock-examples-daemon"));
    let daemon = Daemon::start(&state_dir);
    for example in examples() {
        let started = Instant::now();
        let names = container_names(&example);
        remove_drydock_containers(&names);
        let _cleanup = Cleanup(names);
        let file = example.path.to_str().unwrap();
        let applied = daemon.ok(&["apply", "-f", file]);
        assert_eq!(applied.matches(" created").count(), example.objects.len(), "{}: {applied}", example.file_name);

        // Every object comes up as meant, and each container shown Running is in Docker.
        let mut listed = Vec::new();
        eventually(&format!("{}'s objects to come up", example.file_name), Duration::from_secs(90), || {
            let json = daemon.ok(&["get", "-f", file, "-o", "json"]);
            let got: Value = serde_json::from_str(&json).unwrap();
            listed = match got["items"].as_array() {
                Some(items) => items.clone(),
                None => vec![got],
            };
            listed.len() == example.objects.len() && listed.iter().all(up_as_meant)
        });
        // (In Docker, not necessarily still running: demo.yaml's batch exits at once.)
        for object in listed.iter().filter(|o| o["status"]["phase"] == "Running") {
            let (name, ns) = (object["metadata"]["name"].as_str().unwrap(), object["metadata"]["namespace"].as_str());
            let runtime = object["spec"]["containerName"]
                .as_str()
                .map_or_else(|| format!("{}-{name}", ns.unwrap_or_default()), str::to_string);
            assert!(container_id(&runtime).is_some(), "{}: {runtime} is not in Docker", example.file_name);
        }

        // Deleted: nothing of it left in the API, and in Docker only what is kept by design.
        // `--ignore-not-found`: kubectl deletes in file order, and the namespace's cascade may
        // have removed an object of it before kubectl gets to it.
        daemon.ok(&["delete", "-f", file, "--ignore-not-found", "--timeout=120s"]);
        eventually(&format!("{}'s objects to be gone", example.file_name), Duration::from_secs(120), || {
            let left = daemon.kubectl(&["get", "-f", file, "-o", "name", "--ignore-not-found"]);
            left.status.success() && String::from_utf8_lossy(&left.stdout).trim().is_empty()
        });
        for (name, kept) in example.containers() {
            if kept {
                assert!(container_id(&name).is_some(), "{}: the persistent {name} is kept", example.file_name);
            } else {
                eventually(&format!("{name} to be removed"), Duration::from_secs(60), || container_id(&name).is_none());
            }
        }
        eprintln!(
            "{}: applied, up and deleted with kubectl in {:.1} s",
            example.file_name,
            started.elapsed().as_secs_f64()
        );
    }
    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}

/// `drydock ARGS` in `dir`, which must exit 0; its stdout.
fn drydock_ok(dir: &Path, args: &[&str]) -> String {
    let out = drydock_in(dir, args);
    assert_eq!(out.status.code(), Some(0), "drydock {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A copy of `examples/NAME` at `<tmp>/examples/NAME`: `drydock up` keeps its state beside the
/// manifest, which must not be in the source tree.
fn copy_of(example: &Example) -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("examples")).unwrap();
    std::fs::copy(&example.path, tmp.path().join("examples").join(&example.file_name)).unwrap();
    (tmp, format!("examples/{}", example.file_name))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_example_runs_with_drydock_up_wait_then_down() {
    if docker_or_skip("examples_up").await.is_none() {
        return;
    }
    let _one = one_at_a_time();
    ensure_test_image().unwrap();
    for example in examples() {
        let started = Instant::now();
        let names = container_names(&example);
        remove_drydock_containers(&names);
        let _cleanup = Cleanup(names);
        let (tmp, file) = copy_of(&example);
        let out = drydock_ok(tmp.path(), &["up", "--wait", "-f", &file]);
        for key in example.keys() {
            assert!(out.contains(&format!("{key} ")), "{file}: {key} not shown:\n{out}");
        }
        assert!(out.contains("none failed"), "{out}");
        assert!(out.contains(&format!("left running; `drydock down -f {file}` tears them down")), "{out}");
        let state = tmp.path().join("examples/.drydock").join(&example.file_name);
        assert!(state.join("store.db").is_file(), "the state is per manifest, in {}", state.display());
        for (name, _) in example.containers() {
            assert!(container_id(&name).is_some(), "{file}: {name} was not created");
        }

        let down = drydock_ok(tmp.path(), &["down", "-f", &file]);
        assert!(down.contains("nothing left"), "{down}");
        for (name, kept) in example.containers() {
            if kept {
                assert!(down.contains(&format!("kept (persistent or retained): {name} ")), "{down}");
                assert!(container_id(&name).is_some(), "{file}: the persistent {name} is kept");
            } else {
                assert!(container_id(&name).is_none(), "{file}: {name} was left by down");
            }
        }
        eprintln!("{}: up --wait and down in {:.1} s", example.file_name, started.elapsed().as_secs_f64());
    }
}

/// `examples/logical.yaml`'s comment, as typed: run twice and the persistent container is reused;
/// change VERSION with the objects still there and `up` refuses, saying to run `down` first; after
/// `down`, the changed file replaces it.
#[tokio::test(flavor = "multi_thread")]
async fn logical_yaml_reuses_its_persistent_container_and_replaces_it_when_version_changes() {
    if docker_or_skip("examples_logical_flow").await.is_none() {
        return;
    }
    let _one = one_at_a_time();
    ensure_test_image().unwrap();
    let example = examples().into_iter().find(|e| e.file_name == "logical.yaml").expect("examples/logical.yaml");
    let names = container_names(&example);
    remove_drydock_containers(&names);
    let _cleanup = Cleanup(names);
    let (tmp, file) = copy_of(&example);
    let dir = tmp.path();
    let up = ["up", "--wait", "-f", file.as_str()];
    let down = ["down", "-f", file.as_str()];

    // drydock up --wait: creates shop-web and shop-db.
    drydock_ok(dir, &up);
    let first = container_id("shop-db").expect("shop-db created");
    assert!(is_running("shop-web") && is_running("shop-db"));
    // drydock down: removes shop-web, keeps shop-db.
    let out = drydock_ok(dir, &down);
    assert!(out.contains("kept (persistent or retained): shop-db "), "{out}");
    assert!(container_id("shop-web").is_none(), "the session container goes with its object");
    assert_eq!(container_id("shop-db").as_deref(), Some(first.as_str()), "the persistent container is kept");

    // Run it again: the persistent container is reused.
    drydock_ok(dir, &up);
    assert_eq!(container_id("shop-db").as_deref(), Some(first.as_str()), "reused, not created again");
    assert!(is_running("shop-db"));

    // Change VERSION while the objects still exist: refused, with the way out, nothing changed.
    let path = dir.join(&file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(r#"{name: VERSION, value: "1"}"#).count(), 1, "logical.yaml sets VERSION to \"1\"");
    std::fs::write(&path, text.replace(r#"{name: VERSION, value: "1"}"#, r#"{name: VERSION, value: "2"}"#)).unwrap();
    let refused = drydock_in(dir, &up);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("LogicalContainer/shop/db") && stderr.contains("immutable"), "{stderr}");
    assert!(stderr.contains(&format!("run `drydock down -f {file}` first")), "{stderr}");
    assert!(!stderr.contains("LogicalContainer/shop/web"), "web's spec did not change: {stderr}");
    assert_eq!(container_id("shop-db").as_deref(), Some(first.as_str()), "nothing changed");
    assert!(is_running("shop-web"), "nothing changed");

    // As the message says: down, then up again: the persistent container is replaced. The refused
    // run started no engine: this down need not wait as after a crash.
    let out = drydock_ok(dir, &down);
    assert!(!out.contains("did not stop cleanly"), "{out}");
    let out = drydock_ok(dir, &up);
    assert!(out.contains("none failed"), "{out}");
    let replaced = container_id("shop-db").expect("a new shop-db");
    assert_ne!(replaced, first, "replaced: its lifecycle key changed with VERSION");
    assert!(is_running("shop-db"));
    let env = docker_bounded(&["inspect", "--format", "{{json .Config.Env}}", "shop-db"]).unwrap();
    assert!(String::from_utf8_lossy(&env.stdout).contains("VERSION=2"), "{}", String::from_utf8_lossy(&env.stdout));
    drydock_ok(dir, &down);
}
