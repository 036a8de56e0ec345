//! Client compatibility: one scripted scenario (create a namespace and an object of each kind, get,
//! a list read a page at a time, patches each way, server-side apply with a conflict, a watch from
//! a version, a stale update, a dry run, bad input, typed times, deletes with each propagation and
//! by collection) driven by real
//! clients nobody here wrote, against one `drydock daemon` on Docker. Each driver prints one JSON
//! line per step; [`judge`] holds each against what the Kubernetes API conventions say.
//!
//! Drivers: the official Python client (`tools/clients/python_client.py`, run in the virtual
//! environment `.ci/run` makes at `~/.cache/drydock/python-clients`; `DRYDOCK_PYTHON_CLIENTS` names
//! another) and kube-rs (`kube_rs.rs`). A client added later is one more driver printing the same
//! steps: `{"step": NAME, "code": HTTP_CODE, ...}`, where a client that shows a success without
//! its code reports 200.
//!
//! Skips with a printed reason where Docker or the Python client is absent and `CI` is unset;
//! with `CI` set their absence is a failure.
#![allow(clippy::unwrap_used)]

mod kube_rs;
#[path = "../support/mod.rs"]
mod support;

use drydock_adapters::testing::{RemoveOnDrop, TEST_IMAGE, docker_or_skip, ensure_test_image};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{Daemon, eventually, unique};

/// The virtual environment holding the `kubernetes` package.
fn python_clients() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
    let venv = std::env::var_os("DRYDOCK_PYTHON_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache.join("drydock/python-clients"));
    let python = venv.join("bin/python");
    let works = Command::new(&python).args(["-c", "import kubernetes"]).output().is_ok_and(|o| o.status.success());
    match works {
        true => Some(python),
        false if std::env::var_os("CI").is_some() => panic!(
            "CI is set and the Python client is required, but {} cannot import kubernetes: \
             .ci/run installs it (python3 -m venv ~/.cache/drydock/python-clients && \
             ~/.cache/drydock/python-clients/bin/pip install kubernetes==37.0.2)",
            python.display()
        ),
        false => {
            eprintln!(
                "SKIPPED the Python client scenario: {} cannot import kubernetes (run .ci/run, or set \
                 DRYDOCK_PYTHON_CLIENTS to a virtual environment that has it); set CI=true to make this a failure",
                python.display()
            );
            None
        }
    }
}

/// A lease's `metav1.MicroTime`, written and read back as it is.
const LEASE_RENEWED: &str = "2026-12-07T00:00:00.500000Z";

fn sleeper() -> Value {
    json!(["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"])
}

/// What every driver is given: the namespace, one object of each kind, and what to page,
/// patch and delete.
fn scenario(kubeconfig: &std::path::Path, ns: &str) -> Value {
    let named = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
    let typed = |kind: &str, name: &str, spec: Value| {
        let mut body = named(name, spec);
        body["apiVersion"] = json!("drydock.dev/v1");
        body["kind"] = json!(kind);
        body
    };
    let volume = |name: &str, labels: Value| {
        let mut body = typed("ContainerVolume", name, json!({}));
        body["metadata"]["labels"] = labels;
        body
    };
    json!({
        "kubeconfig": kubeconfig, "namespace": ns, "group": "drydock.dev", "version": "v1",
        "objects": [
            {"plural": "physicalcontainers", "body": typed("PhysicalContainer", "pc", json!({"image": TEST_IMAGE, "command": sleeper()}))},
            {"plural": "logicalcontainers", "body": typed("LogicalContainer", "lc", json!({"mode": "session", "image": TEST_IMAGE, "command": sleeper()}))},
            {"plural": "containerimages", "body": typed("ContainerImage", "img", json!({"image": TEST_IMAGE}))},
            {"plural": "containernetworks", "body": typed("ContainerNetwork", "net", json!({}))},
            {"plural": "containervolumes", "body": typed("ContainerVolume", "vol", json!({}))},
            {"plural": "leases", "cluster": true, "body": typed("Lease", &format!("{ns}-lease"), json!({"key": "compat", "durationMs": 15000, "holder": "compat", "renewTime": LEASE_RENEWED}))},
        ],
        "paged": {
            "plural": "containervolumes",
            "bodies": [volume("page-a", json!({})), volume("page-b", json!({})), volume("page-c", json!({}))],
            "dry_run_body": volume("dry", json!({})),
            "collection": {"selector": "batch=old", "bodies": [volume("old-1", json!({"batch": "old"})), volume("old-2", json!({"batch": "old"}))]},
        },
        "conditions": {"plural": "logicalcontainers", "name": "lc"},
    })
}

/// The steps a driver printed.
fn drive(program: &PathBuf, script: &str, input: &Value) -> Vec<Value> {
    let mut child = Command::new(program)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} {script}: {e}", program.display()));
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{script} printed {l:?}: {e}"))).collect()
}

/// Each step against the conventions; every failure is listed, not just the first.
fn judge(client: &str, steps: &[Value], input: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            failures.push(what);
        }
    };
    let all = |name: &str| steps.iter().filter(|s| s["step"] == name).collect::<Vec<_>>();
    let one = |name: &str| all(name).into_iter().next().cloned().unwrap_or(Value::Null);
    let code = |name: &str| one(name)["code"].as_u64().unwrap_or(0);
    // What a client shows of a success: 201 for a create where it tells, 200 where it does not.
    let ok = |name: &str| (200..300).contains(&code(name));
    let field = |name: &str, field: &str| one(name)[field].clone();

    expect(ok("create namespace"), format!("create namespace: {}", one("create namespace")));
    expect(ok("read namespace typed"), format!("typed read: {}", one("read namespace typed")));
    expect(
        field("typed namespace times", "created").as_str().is_some_and(|t| t.starts_with("20")),
        format!("a typed client parses creationTimestamp: {}", one("typed namespace times")),
    );
    for object in input["objects"].as_array().unwrap() {
        let plural = object["plural"].as_str().unwrap();
        expect(ok(&format!("create {plural}")), format!("create {plural}: {}", one(&format!("create {plural}"))));
        expect(ok(&format!("get {plural}")), format!("get {plural}: {}", one(&format!("get {plural}"))));
        if plural == "leases" {
            expect(
                field("got leases", "spec")["renewTime"] == LEASE_RENEWED,
                format!("a lease's time reads back as written: {}", one("got leases")),
            );
        }
        if object["cluster"] == true {
            expect(ok(&format!("delete {plural}")), format!("delete {plural}: {}", one(&format!("delete {plural}"))));
        }
        expect(
            field(&format!("got {plural}"), "name") == object["body"]["metadata"]["name"]
                && field(&format!("got {plural}"), "apiVersion") == "drydock.dev/v1",
            format!("got {plural}: {}", one(&format!("got {plural}"))),
        );
    }
    let paged = &input["paged"];
    let mut wanted: Vec<&str> =
        paged["bodies"].as_array().unwrap().iter().map(|b| b["metadata"]["name"].as_str().unwrap()).collect();
    wanted.push("vol");
    wanted.sort_unstable();
    let mut listed: Vec<String> = serde_json::from_value(field("list paged", "names")).unwrap_or_default();
    listed.sort();
    expect(
        listed == wanted && field("list paged", "pages") == json!(wanted.len()),
        format!("limit=1 and its continue tokens give {wanted:?}, one page each: {}", one("list paged")),
    );
    expect(all("list page").iter().all(|s| s["code"] == 200), "every page is 200".into());
    for (step, label) in [
        ("patch merge", "patched merge"),
        ("patch json", "patched json"),
        ("patch strategic namespace", "patched strategic"),
    ] {
        expect(ok(step) && field(label, "label") == "yes", format!("{step}: {} {}", one(step), one(label)));
    }
    expect(ok("apply owner"), format!("a server-side apply: {}", one("apply owner")));
    expect(
        ok("apply dropped") && field("applied labels", "labels").get("dropped").is_none(),
        format!("an apply removes the label its manager dropped: {} {}", one("apply dropped"), one("applied labels")),
    );
    expect(
        code("apply conflict") == 409 && field("apply conflict", "reason") == "Conflict",
        format!("another manager's apply of a different value is a 409 Conflict: {}", one("apply conflict")),
    );
    expect(
        ok("apply forced") && field("forced", "label") == "b",
        format!("a forced apply takes the field: {} {}", one("apply forced"), one("forced")),
    );
    expect(
        field("watch from version", "seen") == "MODIFIED",
        format!("watch from a version: {}", one("watch from version")),
    );
    expect(
        code("replace stale") == 409 && field("replace stale", "reason") == "Conflict",
        format!("a stale resourceVersion is a 409 Conflict: {}", one("replace stale")),
    );
    expect(ok("create dry run"), format!("a dry-run create succeeds: {}", one("create dry run")));
    expect(code("get after dry run") == 404, format!("a dry run creates nothing: {}", one("get after dry run")));
    for (step, want, reason) in
        [("create invalid", 422, "Invalid"), ("get missing", 404, "NotFound"), ("list bad selector", 400, "BadRequest")]
    {
        expect(
            code(step) == want && field(step, "reason") == reason && field(step, "kind") == "Status",
            format!("{step}: want {want} {reason}: {}", one(step)),
        );
    }
    expect(
        code("create unknown field strict") == 400 && field("create unknown field strict", "reason") == "BadRequest",
        format!("fieldValidation=Strict refuses an unknown field: {}", one("create unknown field strict")),
    );
    expect(
        ok("create unknown field ignored") && field("pruned", "spec").get("volumeNme").is_none(),
        format!(
            "fieldValidation=Ignore prunes an unknown field: {} {}",
            one("create unknown field ignored"),
            one("pruned")
        ),
    );
    expect(
        field("typed condition times", "parsed").as_array().is_some_and(|p| !p.is_empty()),
        format!("a typed client parses condition times: {}", one("typed condition times")),
    );
    for propagation in ["Background", "Foreground", "Orphan"] {
        let step = format!("delete {propagation}");
        expect(ok(&step), format!("{step}: {}", one(&step)));
    }
    let mut left: Vec<String> = serde_json::from_value(field("deleted", "left")).unwrap_or_default();
    left.retain(|name| name != "typo"); // deleted just before, its finalizer maybe not yet done
    expect(left == ["vol"], format!("each propagation deletes (the volumes' finalizers done): {}", one("deleted")));
    expect(ok("delete collection"), format!("delete collection: {}", one("delete collection")));
    expect(
        field("deleted collection", "names") == json!(["old-1", "old-2"]),
        format!("a collection delete answers what it deleted: {}", one("deleted collection")),
    );
    expect(ok("delete namespace"), format!("delete namespace: {}", one("delete namespace")));
    failures.into_iter().map(|f| format!("{client}: {f}")).collect()
}

/// One daemon on Docker, the scenario driven by `driver`, and every step judged.
async fn run_scenario<F, Fut>(client: &str, driver: F)
where
    F: FnOnce(Value) -> Fut,
    Fut: std::future::Future<Output = Vec<Value>>,
{
    ensure_test_image().unwrap();
    let ns = unique(client);
    let _cleanup = RemoveOnDrop(ns.clone());
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-clients"));
    let daemon = Daemon::start(&state_dir);
    let input = scenario(&daemon.kubeconfig, &ns);
    let steps = driver(input.clone()).await;
    let failures = judge(client, &steps, &input);
    let printed: Vec<String> = steps.iter().map(Value::to_string).collect();
    assert!(failures.is_empty(), "{}\n\nsteps:\n{}", failures.join("\n"), printed.join("\n"));
    // The namespace's delete takes its containers, networks and volumes out of Docker.
    eventually("the namespace is gone", Duration::from_secs(120), || {
        !daemon.kubectl(&["get", "namespace", &ns]).status.success()
    });
    drop(daemon);
    let _ = std::fs::remove_dir_all(&state_dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_client_runs_the_scenario() {
    let Some(python) = python_clients() else { return };
    if docker_or_skip("the_official_python_client_runs_the_scenario").await.is_none() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/clients/python_client.py");
    run_scenario("py", |input| async move { drive(&python, script, &input) }).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_runs_the_scenario() {
    if docker_or_skip("kube_rs_runs_the_scenario").await.is_none() {
        return;
    }
    run_scenario("kube", |input| async move { kube_rs::drive(&input).await }).await;
}
