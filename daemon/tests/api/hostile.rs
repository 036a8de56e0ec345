//! Hostile request bodies (issue 47): each is refused with a `Status` at once, in bounded memory,
//! and changes nothing. The times and the memory growth are printed (`--nocapture`); the bounds
//! asserted are generous, as CI machines are noisy.

use super::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const ITEM: &str = "/apis/drydock.dev/v1/namespaces/demo/physicalcontainers/a";
const LIMIT: usize = 1_572_864;
const SLOW: Duration = Duration::from_secs(2);

/// One hostile test at a time, so their times and memory are their own.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn raw<'a>(method: &'a str, uri: &'a str, content_type: &'a str, body: Vec<u8>) -> Call<'a> {
    Call { body, ..Call::new(method, uri).content_type(content_type) }
}

/// A line of `/proc/self/status`, in KiB.
fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Send `call`; its time, and how far the process's peak resident memory rose above what was
/// resident before (KiB). The peak is reset first where the kernel allows it.
async fn measured(app: &App, call: Call<'_>) -> ((StatusCode, Value), Duration, u64) {
    let resident = proc_status_kib("VmRSS:");
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let base = if reset { resident } else { proc_status_kib("VmHWM:") };
    let started = Instant::now();
    let answer = app.send(call).await;
    let elapsed = started.elapsed();
    (answer, elapsed, proc_status_kib("VmHWM:").saturating_sub(base))
}

/// The attacker's patch: 22 operations that each copy `/spec` into a new key of itself, so each
/// doubles the object (2^22 times in all), in 1,785 bytes.
fn self_copies() -> Vec<u8> {
    let patch = |name: &str| {
        let ops: Vec<String> =
            (0..22).map(|i| format!(r#"{{"op":"copy","from":"/spec","path":"/spec/{name}{i:02}"}}"#)).collect();
        format!("[{}]", ops.join(","))
    };
    let name = (0..).map(|n| "x".repeat(n)).take_while(|name| patch(name).len() <= 1785).last().unwrap();
    let mut body = patch(&name).into_bytes();
    body.resize(1785, b' ');
    body
}

#[tokio::test]
async fn a_self_copying_json_patch_is_refused_in_bounded_memory() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    let created = app.container("a", json!({})).await;
    let body = self_copies();
    assert_eq!(body.len(), 1785);
    let ((code, status), elapsed, growth) =
        measured(&app, raw("PATCH", ITEM, "application/json-patch+json", body)).await;
    println!("22 self-copies (1,785 bytes): {code} in {elapsed:?}, peak memory +{} KiB", growth);
    assert_status(code, &status, 413, "RequestEntityTooLarge");
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("1572864 bytes") && message.contains("copy"), "{message}");
    assert!(growth < 200 * 1024, "the peak resident memory grew by {growth} KiB");
    assert!(elapsed < SLOW, "{elapsed:?}");
    let (_, now) = app.get(ITEM).await;
    assert_eq!(now["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
}

/// About 195 KiB of `open`, an innermost value, and as many `close`.
fn nested(open: &str, inner: &str, close: &str) -> Vec<u8> {
    let levels = 195 * 1024 / (open.len() + close.len());
    format!("{}{inner}{}", open.repeat(levels), close.repeat(levels)).into_bytes()
}

/// About 195 KiB of block mappings, each indented one more than the one it is in.
fn block_nested() -> Vec<u8> {
    let mut text = String::new();
    for depth in 0.. {
        if text.len() >= 195 * 1024 {
            break;
        }
        text.push_str(&" ".repeat(depth));
        text.push_str("a:\n");
    }
    text.into_bytes()
}

#[tokio::test]
async fn deeply_nested_bodies_are_refused_at_once() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let cases = [
        ("YAML flow mappings", "POST", PCS, "application/yaml", nested("{a: ", "1", "}")),
        ("YAML flow sequences", "POST", PCS, "application/yaml", nested("[", "", "]")),
        ("YAML block mappings", "POST", PCS, "application/yaml", block_nested()),
        ("JSON objects", "POST", PCS, "application/json", nested("{\"a\":", "1", "}")),
        ("JSON arrays", "PUT", ITEM, "application/json", nested("[", "", "]")),
        ("JSON objects sent as YAML", "POST", PCS, "application/yaml", nested("{\"a\":", "1", "}")),
        ("apply patch, YAML flow", "PATCH", ITEM, "application/apply-patch+yaml", nested("{a: ", "1", "}")),
        ("merge patch, JSON", "PATCH", ITEM, "application/merge-patch+json", nested("{\"a\":", "1", "}")),
        ("JSON patch, JSON", "PATCH", ITEM, "application/json-patch+json", nested("[", "", "]")),
    ];
    for (name, method, uri, content_type, body) in cases {
        let size = body.len();
        let started = Instant::now();
        let (code, status) = app.send(raw(method, uri, content_type, body)).await;
        let elapsed = started.elapsed();
        println!("{name} ({size} bytes): {code} in {elapsed:?}");
        assert_status(code, &status, 400, "BadRequest");
        assert!(status["message"].as_str().unwrap().contains("more than 100 levels"), "{name}: {status}");
        assert!(elapsed < SLOW, "{name}: {elapsed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_do_not_stall_the_health_endpoint() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    // Each request on a worker thread, as the server runs them: two hostile ones first.
    let spawn = |method: &'static str, uri: &'static str, body: Vec<u8>| {
        let app = App { router: app.router.clone(), store: app.store.clone() };
        tokio::spawn(async move {
            let started = Instant::now();
            let (code, _) = app.send(raw(method, uri, "application/yaml", body)).await;
            (code, started.elapsed())
        })
    };
    let hostile = [spawn("POST", PCS, nested("{a: ", "1", "}")), spawn("POST", PCS, nested("{a: ", "1", "}"))];
    tokio::time::sleep(Duration::from_millis(1)).await;
    let (code, health) = spawn("GET", "/livez", Vec::new()).await.unwrap();
    println!("/livez while two nested bodies are decoded: {code} in {health:?}");
    assert_eq!(code, StatusCode::OK);
    assert!(health < SLOW, "{health:?}");
    for request in hostile {
        let (code, elapsed) = request.await.unwrap();
        assert_eq!(code, StatusCode::BAD_REQUEST);
        assert!(elapsed < SLOW, "{elapsed:?}");
    }
}

/// A physical container `name` with an annotation of `bytes` bytes.
fn with_annotation(name: &str, bytes: usize) -> Value {
    json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
        "metadata": {"name": name, "annotations": {"data": "x".repeat(bytes)}}, "spec": {"image": "busybox"}})
}

fn assert_too_large(what: &str, (code, status): (StatusCode, Value)) {
    assert_status(code, &status, 413, "RequestEntityTooLarge");
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("1572864 bytes") && message.contains("keep large data out"), "{what}: {message}");
}

#[tokio::test]
async fn objects_over_one_and_a_half_mebibytes_are_refused_by_every_write() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    let (big, fits) = (1_600 * 1024, 1_400 * 1024);
    let started = Instant::now();
    assert_too_large("create", app.post(PCS, with_annotation("a", big)).await);
    println!("create of a 1.6 MiB object refused in {:?}", started.elapsed());
    assert_too_large("dry run", app.post(&format!("{PCS}?dryRun=All"), with_annotation("a", big)).await);
    let yaml = serde_json::to_vec(&with_annotation("a", big)).unwrap();
    assert_too_large(
        "apply",
        app.send(raw("PATCH", &format!("{ITEM}?fieldManager=t"), "application/apply-patch+yaml", yaml)).await,
    );
    let (code, created) = app.post(PCS, with_annotation("a", fits)).await;
    assert_eq!(code, StatusCode::CREATED, "a 1.4 MiB object is accepted");
    let grow = LIMIT - fits + 1024;
    let more = json!({"metadata": {"annotations": {"more": "y".repeat(grow)}}});
    assert_too_large("update", app.put(ITEM, with_annotation("a", big)).await);
    assert_too_large("merge patch", app.patch(ITEM, "application/merge-patch+json", more.clone()).await);
    assert_too_large("strategic merge patch", app.patch(ITEM, "application/strategic-merge-patch+json", more).await);
    let add = json!([{"op": "add", "path": "/metadata/annotations/more", "value": "y".repeat(grow)}]);
    assert_too_large("JSON patch", app.patch(ITEM, "application/json-patch+json", add).await);
    let (_, now) = app.get(ITEM).await;
    assert_eq!(now["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"], "refusals change nothing");
    // A status update is measured as the object the store would keep: this one with the status.
    let mut status = created.clone();
    status["status"] = json!({"phase": "Pending", "message": "m".repeat(grow)});
    assert_too_large("status update", app.put(&format!("{ITEM}/status"), status.clone()).await);
    status["status"]["message"] = json!("short");
    assert_eq!(app.put(&format!("{ITEM}/status"), status).await.0, StatusCode::OK);
    let (_, now) = app.get(ITEM).await;
    assert_eq!(now["status"]["message"], "short");
    assert_eq!(now["metadata"]["annotations"]["data"].as_str().unwrap().len(), fits);
}

#[tokio::test]
async fn json_patches_have_at_most_ten_thousand_operations() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    app.container("a", json!({})).await;
    let test = json!({"op": "test", "path": "/kind", "value": "PhysicalContainer"});
    let (code, status) = app.patch(ITEM, "application/json-patch+json", Value::from(vec![test.clone(); 10_001])).await;
    assert_status(code, &status, 422, "Invalid");
    assert!(status["message"].as_str().unwrap().contains("10001 operations"), "{status}");
    let (code, body) = app.patch(ITEM, "application/json-patch+json", Value::from(vec![test; 10_000])).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn yaml_aliases_and_directives_are_bounded() {
    let _serial = SERIAL.lock().await;
    let app = app();
    app.namespace().await;
    let apply = format!("{ITEM}?fieldManager=t");
    // 400 aliases of a 10,000-item list: a 63 KiB body that would decode to 4 million strings.
    let aliases = format!(
        "apiVersion: drydock.dev/v1\nkind: PhysicalContainer\nmetadata: {{name: a}}\nspec: {{image: busybox}}\nx: &a [{}]\ny: [{}]\n",
        vec!["lol"; 10_000].join(", "),
        vec!["*a"; 400].join(", ")
    );
    let ((code, status), elapsed, growth) =
        measured(&app, raw("PATCH", &apply, "application/apply-patch+yaml", aliases.into_bytes())).await;
    println!("400 aliases of a 10,000-item list: {code} in {elapsed:?}, peak memory +{growth} KiB");
    assert_status(code, &status, 413, "RequestEntityTooLarge");
    assert!(growth < 200 * 1024 && elapsed < SLOW, "{growth} KiB, {elapsed:?}");
    let directives: String = (0..16_000).map(|i| format!("%TAG !a{i}! tag:x,{i}:\n")).collect::<String>() + "--- x\n";
    let started = Instant::now();
    let (code, status) = app.send(raw("POST", PCS, "application/yaml", directives.into_bytes())).await;
    println!("16,000 %TAG directives: {code} in {:?}", started.elapsed());
    assert_status(code, &status, 400, "BadRequest");
    assert!(started.elapsed() < SLOW);
}
