//! `drydock daemon` driven by the real `kubectl` against real Docker: discovery, apply, diff,
//! watch, patch, wait, describe, a cascading namespace delete that leaves nothing in Docker, and a
//! request without the token refused with 401; server-side apply with its conflicts; drydock's
//! finalizers kept; 300 idle connections that lock no one out.
//!
//! Skips with a printed reason where kubectl or Docker is absent and `CI` is unset; with `CI` set
//! their absence is a failure.
#![allow(clippy::unwrap_used)]

mod support;

use drydock_adapters::testing::{
    RemoveOnDrop, TEST_IMAGE, docker_names_with, docker_or_skip, ensure_test_image, kubectl_or_skip,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;
use support::{Daemon, KUBECTL, eventually, unique};

fn manifest(ns: &str) -> String {
    let trap = "trap 'exit 0' TERM; while true; do sleep 1; done";
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata: {{name: web, namespace: {ns}, labels: {{app: web}}}}
spec:
  image: {TEST_IMAGE}
  command: [sh, -c, "{trap}"]
---
apiVersion: drydock.dev/v1
kind: LogicalContainer
metadata: {{name: api, namespace: {ns}}}
spec:
  mode: session
  image: {TEST_IMAGE}
  command: [sh, -c, "{trap}"]
"#
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_drives_the_daemon_on_docker() {
    if !kubectl_or_skip("kubectl_drives_the_daemon") || docker_or_skip("kubectl_drives_the_daemon").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("kc");
    let _cleanup = RemoveOnDrop(ns.clone());
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-e2e"));
    let daemon = Daemon::start(&state_dir);

    // Discovery: drydock's kinds with their short names, and core namespaces.
    let resources = daemon.ok(&["api-resources"]);
    for expected in ["physicalcontainers", "logicalcontainers", "containerimages", "drydock.dev/v1", "namespaces"] {
        assert!(resources.contains(expected), "api-resources lacks {expected}:\n{resources}");
    }
    let short_names = |plural: &str| -> Vec<String> {
        let line = resources.lines().find(|l| l.starts_with(&format!("{plural} "))).unwrap_or_default();
        line.split_whitespace().nth(1).unwrap_or_default().split(',').map(str::to_string).collect()
    };
    assert!(short_names("physicalcontainers").contains(&"pc".to_string()), "{resources}");
    assert!(short_names("logicalcontainers").contains(&"lc".to_string()), "{resources}");

    // Watch from before the apply, so the phases are seen changing.
    let mut watch = daemon.watch(&["get", "pc", "-n", &ns, "-w", "--output-watch-events"]);
    let file = state_dir.join("stack.yaml");
    std::fs::write(&file, manifest(&ns)).unwrap();
    let applied = daemon.ok(&["apply", "-f", file.to_str().unwrap()]);
    assert!(applied.contains(&format!("namespace/{ns} created")), "{applied}");
    assert!(applied.contains("physicalcontainer.drydock.dev/web created"), "{applied}");
    assert!(applied.contains("logicalcontainer.drydock.dev/api created"), "{applied}");

    daemon.ok(&["wait", "-n", &ns, "pc/web", "--for=jsonpath={.status.phase}=Running", "--timeout=90s"]);
    daemon.ok(&["wait", "-n", &ns, "lc/api", "--for=jsonpath={.status.phase}=Running", "--timeout=90s"]);
    assert!(docker_names_with(&ns).iter().any(|n| n == &format!("{ns}-web")), "{:?}", docker_names_with(&ns));

    // A second apply of the same manifest changes nothing.
    let again = daemon.ok(&["apply", "-f", file.to_str().unwrap()]);
    assert!(again.contains("physicalcontainer.drydock.dev/web unchanged"), "{again}");

    // kubectl diff: nothing for the applied manifest; for a changed one the diff (through a
    // server-side dry run), and the object is not changed.
    let same = daemon.kubectl(&["diff", "-f", file.to_str().unwrap()]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&same.stdout),
        String::from_utf8_lossy(&same.stderr)
    );
    let changed = state_dir.join("changed.yaml");
    std::fs::write(&changed, manifest(&ns).replace("labels: {app: web}", "labels: {app: web, tier: front}")).unwrap();
    let diff = daemon.kubectl(&["diff", "-f", changed.to_str().unwrap()]);
    let diff_out = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "differences found: {diff_out}{}", String::from_utf8_lossy(&diff.stderr));
    assert!(diff_out.lines().any(|l| l.starts_with('+') && l.contains("tier: front")), "{diff_out}");
    let labels = daemon.ok(&["get", "pc", "web", "-n", &ns, "-o", "jsonpath={.metadata.labels}"]);
    assert!(!labels.contains("tier"), "kubectl diff changed the object: {labels}");

    // get shows the table's columns; label selectors select.
    let table = daemon.ok(&["get", "pc", "-n", &ns, "-l", "app=web"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.contains("NAME") && header.contains("PHASE") && header.contains("AGE"), "{table}");
    assert!(table.contains("web") && table.contains("Running"), "{table}");
    assert!(!daemon.ok(&["get", "pc", "-n", &ns, "-l", "app!=web"]).contains("web"));
    let described = daemon.ok(&["describe", "pc", "web", "-n", &ns]);
    assert!(described.contains("web") && described.contains(TEST_IMAGE), "{described}");

    // drydock's own client verbs, through the same API and kubeconfig.
    let verb = |args: &[&str]| -> Output { daemon.verb(args) };
    let got = verb(&["get", "pc", "-n", &ns]);
    let got_out = String::from_utf8_lossy(&got.stdout);
    assert!(got.status.success() && got_out.contains("PHASE") && got_out.contains("Running"), "{got_out}");
    let missing = verb(&["get", "pc", "nosuch", "-n", &ns]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("Error from server (NotFound)"));
    let reapplied = verb(&["apply", "-f", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&reapplied.stdout).contains("physicalcontainer.drydock.dev/web unchanged"));
    let waited = verb(&["wait", "lc/api", "-n", &ns, "--for", "jsonpath={.status.phase}=Running", "--timeout", "30s"]);
    assert!(waited.status.success() && String::from_utf8_lossy(&waited.stdout).contains("condition met"));
    let described = verb(&["describe", "lc", "api", "-n", &ns]);
    assert!(described.status.success() && String::from_utf8_lossy(&described.stdout).contains("Name:"));
    let as_json = verb(&["get", "pc", "web", "-n", &ns, "-o", "json"]);
    let object: serde_json::Value = serde_json::from_slice(&as_json.stdout).unwrap();
    assert_eq!(object["apiVersion"], "drydock.dev/v1", "{object}");

    // Stop by patch: the container exits, the object says so.
    daemon.ok(&["patch", "pc", "web", "-n", &ns, "--type", "merge", "-p", r#"{"spec":{"stop":true}}"#]);
    daemon.ok(&["wait", "-n", &ns, "pc/web", "--for=jsonpath={.status.phase}=Exited", "--timeout=90s"]);

    // The watch saw web go from Pending (or its first phase) to Running to Exited.
    watch.kill().unwrap();
    let watched = watch.wait_with_output().unwrap();
    let watched = String::from_utf8_lossy(&watched.stdout);
    assert!(watched.contains("ADDED") && watched.contains("MODIFIED"), "{watched}");
    let running = watched.find("Running").unwrap_or_else(|| panic!("watch never saw Running:\n{watched}"));
    assert!(watched[running..].contains("Exited"), "watch did not see Running then Exited:\n{watched}");

    // Deleting the namespace cascades to nothing left, in the API and in Docker.
    daemon.ok(&["delete", "ns", &ns, "--wait=false"]);
    eventually("the namespace and its containers to be gone", Duration::from_secs(90), || {
        let gone = !daemon.kubectl(&["get", "ns", &ns]).status.success();
        gone && docker_names_with(&ns).is_empty()
    });
    let left = daemon.ok(&["get", "pc,lc", "-A", "-o", "name"]);
    assert!(!left.contains(&ns), "objects left after the namespace was deleted: {left}");

    // Without the token: 401 as a Status, which kubectl reports as Unauthorized.
    let anonymous = strip_token(&daemon.kubeconfig, &state_dir);
    let out = Command::new(KUBECTL).arg("--kubeconfig").arg(&anonymous).args(["get", "ns"]).output().unwrap();
    let stderr = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "a request without the token was served");
    // kubectl answers a 401 with no credentials by asking for a username (EOF here, no stdin).
    let refused = ["Unauthorized", "must be logged in", "Please enter Username"];
    assert!(refused.iter().any(|r| stderr.contains(r)), "{stderr}");
    // The same request by hand: a 401 `Status` with reason Unauthorized.
    let server = std::fs::read_to_string(&daemon.kubeconfig)
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: ").map(str::to_string))
        .unwrap();
    let out = Command::new("curl")
        .args(["-s", "--cacert"])
        .arg(state_dir.join("ca.crt"))
        .arg(format!("{server}/api/v1/namespaces"))
        .output()
        .expect("curl runs");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((status["kind"].as_str(), status["code"].as_i64()), (Some("Status"), Some(401)), "{status}");
    assert_eq!(status["reason"], "Unauthorized", "{status}");
    let out = Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&daemon.kubeconfig)
        .args(["get", "ns", "--token", "not-the-token"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a request with a wrong token was served");

    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}

/// `kubectl apply --server-side` as on a Kubernetes cluster: a label the manifest drops is
/// removed, a label another manager set with `kubectl label` is a conflict kubectl reports (and
/// the object is unchanged), and `--force-conflicts` takes it.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_server_side_apply_removes_dropped_fields_and_reports_conflicts() {
    if !kubectl_or_skip("kubectl_server_side_apply") || docker_or_skip("kubectl_server_side_apply").await.is_none() {
        return;
    }
    let ns = unique("ssa");
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-ssa"));
    let daemon = Daemon::start(&state_dir);
    let file = state_dir.join("ns.yaml");
    let apply = |labels: &str, extra: &[&str]| -> Output {
        std::fs::write(
            &file,
            format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels: {{{labels}}}\n"),
        )
        .unwrap();
        let mut args = vec!["apply", "--server-side", "-f", file.to_str().unwrap()];
        args.extend_from_slice(extra);
        daemon.kubectl(&args)
    };
    let labels = || daemon.ok(&["get", "ns", &ns, "-o", "jsonpath={.metadata.labels}"]);
    let text =
        |out: &Output| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));

    let out = apply("team: a, tier: front", &[]);
    assert!(out.status.success() && text(&out).contains("serverside-applied"), "{}", text(&out));
    let out = apply("team: a", &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!labels().contains("tier"), "the dropped label stayed: {}", labels());

    daemon.ok(&["label", "ns", &ns, "team=b", "--overwrite"]);
    let out = apply("team: a", &[]);
    assert!(!out.status.success(), "a conflicting apply succeeded: {}", text(&out));
    assert!(text(&out).contains("conflict with \"kubectl-label\""), "{}", text(&out));
    assert!(text(&out).contains(".metadata.labels.team"), "{}", text(&out));
    assert!(labels().contains("\"team\":\"b\""), "a refused apply changed the object: {}", labels());

    let out = apply("team: a", &["--force-conflicts"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(labels().contains("\"team\":\"a\""), "{}", labels());
    let managed = daemon.ok(&["get", "ns", &ns, "--show-managed-fields", "-o", "json"]);
    let managed: serde_json::Value = serde_json::from_str(&managed).unwrap();
    let owners: Vec<&str> = managed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"]["f:metadata"]["f:labels"].get("f:team").is_some())
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(owners, ["kubectl"], "after --force-conflicts only kubectl's apply owns the label: {managed}");

    daemon.ok(&["delete", "ns", &ns]);
    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}

/// 300 idle connections that never send a request lock no one out: kubectl still works while
/// they are open, and the daemon closes them (the handshake timeout, 10 s) without a token.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_works_while_300_idle_connections_are_open_and_they_are_closed() {
    use std::io::Read as _;
    if !kubectl_or_skip("kubectl_idle_connections") || docker_or_skip("kubectl_idle_connections").await.is_none() {
        return;
    }
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-idle"));
    let daemon = Daemon::start(&state_dir);
    let server = std::fs::read_to_string(&daemon.kubeconfig)
        .unwrap()
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://").map(str::to_string))
        .unwrap();
    let mut idle: Vec<std::net::TcpStream> = (0..300).map(|_| std::net::TcpStream::connect(&server).unwrap()).collect();
    let ns = unique("idle");
    daemon.ok(&["create", "namespace", &ns]);
    let listed = daemon.ok(&["get", "ns", &ns, "-o", "name"]);
    assert_eq!(listed.trim(), format!("namespace/{ns}"), "kubectl with 300 idle connections open");
    let started = std::time::Instant::now();
    for stream in &mut idle {
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut byte = [0u8; 1];
        let closed = match stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        };
        assert!(closed, "an idle connection was neither closed nor reset within 30 s");
    }
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(25), "the idle connections were closed only after {waited:?}");
    daemon.ok(&["delete", "ns", &ns]);
    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}

/// A copy of the kubeconfig without the user's token.
fn strip_token(kubeconfig: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let mut config: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let users = config.get_mut("users").and_then(|u| u.as_sequence_mut()).unwrap();
    for user in users {
        let fields = user.get_mut("user").and_then(|u| u.as_mapping_mut()).unwrap();
        assert!(fields.remove("token").is_some(), "the kubeconfig's user has no token to remove");
    }
    let path = dir.join("anonymous.kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&config).unwrap()).unwrap();
    path
}

/// Issue 47: `kubectl patch` cannot strip drydock's namespace finalizer (merge or JSON patch),
/// `kubectl delete` still removes the namespace once the engine has cleaned it up, and a state dir
/// that existed beforehand with mode 0755 is made 0700, with every file in it 0600 (the store's
/// `-wal` and `-shm` included).
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_cannot_strip_drydocks_finalizer_and_the_state_dir_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    if !kubectl_or_skip("kubectl_finalizers") || docker_or_skip("kubectl_finalizers").await.is_none() {
        return;
    }
    let ns = unique("fin");
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-fin"));
    std::fs::create_dir_all(&state_dir).unwrap();
    std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let daemon = Daemon::start(&state_dir);
    let text =
        |out: &Output| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    daemon.ok(&["create", "namespace", &ns]);
    for (kind, patch) in [
        ("merge", r#"{"metadata":{"finalizers":null}}"#),
        ("json", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#),
    ] {
        let out = daemon.kubectl(&["patch", "ns", &ns, "--type", kind, "-p", patch]);
        assert!(!out.status.success(), "a {kind} patch stripped the finalizer: {}", text(&out));
        assert!(
            text(&out).contains("drydock.dev/namespace-cleanup") && text(&out).contains("drydock's"),
            "{}",
            text(&out)
        );
    }
    let finalizers = daemon.ok(&["get", "ns", &ns, "-o", "jsonpath={.metadata.finalizers}"]);
    assert!(finalizers.contains("drydock.dev/namespace-cleanup"), "{finalizers}");

    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&state_dir), 0o700);
    for entry in std::fs::read_dir(&state_dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }

    daemon.ok(&["delete", "ns", &ns, "--timeout=60s"]);
    let out = daemon.kubectl(&["get", "ns", &ns]);
    assert!(!out.status.success() && text(&out).contains("NotFound"), "{}", text(&out));
    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}

/// Issue 47: a namespace that disappears anyway (here: removed from the store's database while
/// the daemon was stopped, as an edit or a restored backup could) leaves no object and no
/// container behind: the restarted daemon deletes what it left, within a minute.
#[tokio::test(flavor = "multi_thread")]
async fn the_objects_and_containers_of_a_vanished_namespace_are_collected() {
    if !kubectl_or_skip("vanished_namespace") || docker_or_skip("vanished_namespace").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("gone");
    let _cleanup = RemoveOnDrop(ns.clone());
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-gone"));
    let daemon = Daemon::start(&state_dir);
    let file = state_dir.join("stack.yaml");
    std::fs::write(&file, manifest(&ns)).unwrap();
    daemon.ok(&["apply", "-f", file.to_str().unwrap()]);
    daemon.ok(&["wait", "-n", &ns, "pc/web", "--for=jsonpath={.status.phase}=Running", "--timeout=90s"]);
    daemon.ok(&["wait", "-n", &ns, "lc/api", "--for=jsonpath={.status.phase}=Running", "--timeout=90s"]);
    assert_eq!(docker_names_with(&ns).len(), 2, "{:?}", docker_names_with(&ns));
    assert_eq!(daemon.stop_keeping_state(), Some(0));

    let db = rusqlite::Connection::open(state_dir.join("store.db")).unwrap();
    let removed = db.execute("DELETE FROM objects WHERE kind = 'Namespace' AND name = ?1", [&ns]).unwrap();
    assert_eq!(removed, 1);
    drop(db);

    let daemon = Daemon::start(&state_dir);
    let kinds = "physicalcontainers,logicalcontainers,containerimages";
    let restarted = std::time::Instant::now();
    eventually("the vanished namespace's objects and containers to go", Duration::from_secs(60), || {
        let objects = daemon.ok(&["get", kinds, "-n", &ns, "-o", "name"]);
        objects.trim().is_empty() && docker_names_with(&ns).is_empty()
    });
    eprintln!("the vanished namespace's leftovers were gone {:?} after the restart", restarted.elapsed());
    assert_eq!(daemon.stop(), Some(0));
}

/// Issue 48: `kubectl explain` prints drydock's kinds and fields with their descriptions (the
/// Rust types' doc comments, served as OpenAPI v3 schemas), and `kubectl apply` of a manifest with
/// an unknown spec field is refused as a Kubernetes API server refuses it (kubectl asks for
/// `fieldValidation=Strict`), or accepted with a warning under `--validate=warn`.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explains_drydocks_fields_and_refuses_unknown_ones() {
    if !kubectl_or_skip("kubectl_explain") || docker_or_skip("kubectl_explain").await.is_none() {
        return;
    }
    let ns = unique("explain");
    let state_dir = std::env::temp_dir().join(unique("drydock-daemon-explain"));
    let daemon = Daemon::start(&state_dir);
    // kubectl wraps descriptions to its terminal's width: compare with the lines joined.
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mode = words(&daemon.ok(&["explain", "lc.spec.mode"]));
    assert!(mode.contains("FIELD: mode <string>"), "{mode}");
    assert!(
        mode.contains(
            "How the container relates to runtime containers: `session` (the default: created for this object"
        ),
        "{mode}"
    );
    let lc = words(&daemon.ok(&["explain", "lc"]));
    assert!(lc.contains("KIND: LogicalContainer") && lc.contains("A logical container:"), "{lc}");
    for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
        assert!(lc.contains(&format!("{field} <")), "kubectl explain lc lacks {field}: {lc}");
    }
    let spec = words(&daemon.ok(&["explain", "lc.spec"]));
    for field in ["mode <string>", "image <string>", "containerName <string>", "env <[]Object>", "ports <[]Object>"] {
        assert!(spec.contains(field), "kubectl explain lc.spec lacks {field}: {spec}");
    }
    let meta = words(&daemon.ok(&["explain", "pc.metadata"]));
    assert!(meta.contains("resourceVersion <string>") && meta.contains("ownerReferences <[]Object>"), "{meta}");

    daemon.ok(&["create", "namespace", &ns]);
    let file = state_dir.join("typo.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: drydock.dev/v1\nkind: LogicalContainer\nmetadata: {{name: typo, namespace: {ns}}}\n\
             spec:\n  image: {TEST_IMAGE}\n  foo: 1\n"
        ),
    )
    .unwrap();
    let text =
        |out: &Output| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let out = daemon.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    assert!(!out.status.success(), "an unknown field was applied: {}", text(&out));
    assert!(text(&out).contains(r#"strict decoding error: unknown field "spec.foo""#), "{}", text(&out));
    assert!(!daemon.kubectl(&["get", "lc", "-n", &ns, "typo"]).status.success(), "the refused apply created it");
    // Warned about, not refused, when asked; a server-side dry run, so nothing runs on Docker.
    let out = daemon.kubectl(&["apply", "--validate=warn", "--dry-run=server", "-f", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(r#"Warning: unknown field "spec.foo""#), "{}", text(&out));

    daemon.ok(&["delete", "ns", &ns]);
    assert_eq!(daemon.stop(), Some(0), "the daemon must exit 0 on SIGTERM");
}
