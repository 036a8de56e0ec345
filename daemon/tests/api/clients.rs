//! The conventions that clients other than kubectl's everyday verbs rely on: a body without a
//! `Content-Type`, `dryRun=All` on every write, paging with `limit`/`continue`, collection
//! deletes by selector, and RFC 3339 times in status.

use super::common::*;
use axum::http::StatusCode;
use drydock_engine::WallTime;
use drydock_engine::api::{Condition, ConditionStatus, ObjectKey};
use drydock_engine::store::StoreRequest;
use serde_json::{Value, json};

fn pc(name: &str) -> Value {
    json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
        "metadata": {"name": name, "labels": {"app": "web"}}, "spec": {"image": "busybox:1.36"}})
}

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_body_without_a_content_type_is_json() {
    let app = app();
    let call = Call {
        body: serde_json::to_vec(&json!({"metadata": {"name": "demo"}})).unwrap(),
        ..Call::new("POST", "/api/v1/namespaces")
    };
    let (code, body) = app.send(call).await;
    assert_eq!((code, body["metadata"]["name"].clone()), (StatusCode::CREATED, json!("demo")), "{body}");
    let uri = format!("{PCS}/a");
    let call = Call { body: serde_json::to_vec(&pc("a")).unwrap(), ..Call::new("PUT", &uri) };
    let (code, body) = app.send(call).await;
    assert_status(code, &body, 404, "NotFound"); // read as JSON: the object is just not there
    let call = Call { body: b"metadata: {name: b}".to_vec(), ..Call::new("POST", PCS) };
    let (code, body) = app.send(call).await;
    assert_status(code, &body, 400, "BadRequest"); // YAML needs its media type
}

#[tokio::test]
async fn a_dry_run_answers_every_write_and_changes_nothing() {
    let app = app();
    app.namespace().await;
    let existing = app.container("a", json!({"app": "web"})).await;
    let revision = app.store.read(|s| s.resource_version());
    let unchanged = |app: &App| {
        assert_eq!(app.store.read(|s| s.resource_version()), revision, "a dry run changed the store");
    };

    let (code, created) = app.post(&format!("{PCS}?dryRun=All"), pc("b")).await;
    assert_eq!((code, created["metadata"]["name"].clone()), (StatusCode::CREATED, json!("b")), "{created}");
    assert_eq!(app.get(&format!("{PCS}/b")).await.0, StatusCode::NOT_FOUND);
    let (code, body) = app.post(&format!("{PCS}?dryRun=All"), pc("a")).await;
    assert_status(code, &body, 409, "AlreadyExists");
    let (code, body) =
        app.post(&format!("{PCS}?dryRun=All"), json!({"metadata": {"name": "c"}, "spec": {"image": "a//b"}})).await;
    assert_status(code, &body, 422, "Invalid");

    let mut relabelled = existing.clone();
    relabelled["metadata"]["labels"]["app"] = json!("db");
    let (code, body) = app.put(&format!("{PCS}/a?dryRun=All"), relabelled).await;
    assert_eq!((code, body["metadata"]["labels"]["app"].clone()), (StatusCode::OK, json!("db")), "{body}");
    let (code, body) = app
        .patch(
            &format!("{PCS}/a?dryRun=All"),
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!((code, body["metadata"]["labels"]["x"].clone()), (StatusCode::OK, json!("y")), "{body}");
    let (code, body) = app
        .patch(&format!("{PCS}/a?dryRun=All"), "application/merge-patch+json", json!({"spec": {"image": "other"}}))
        .await;
    assert_status(code, &body, 422, "Invalid"); // the same admission as the real write
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}/a?dryRun=All"))).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]});
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}/a")).json(&options)).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}?dryRun=All"))).await;
    assert_eq!((code, names(&body)), (StatusCode::OK, vec!["a".to_string()]), "{body}");
    unchanged(&app);
    assert_eq!(app.get(&format!("{PCS}/a")).await.1["metadata"]["labels"], json!({"app": "web"}));

    for bad in ["all", "None", "true"] {
        let (code, body) = app.post(&format!("{PCS}?dryRun={bad}"), pc("d")).await;
        assert_status(code, &body, 400, "BadRequest");
    }
    unchanged(&app);
}

#[tokio::test]
async fn a_paged_list_is_one_snapshot_however_the_store_changes() {
    let app = app();
    app.namespace().await;
    for name in ["a", "b", "c", "d", "e"] {
        app.container(name, json!({"app": "web"})).await;
    }
    let (code, first) = app.get(&format!("{PCS}?limit=2")).await;
    assert_eq!((code, names(&first)), (StatusCode::OK, vec!["a".to_string(), "b".to_string()]), "{first}");
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let revision = first["metadata"]["resourceVersion"].clone();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();

    // Between the pages: one deleted, one added. The pages still show the first page's list.
    app.send(Call::new("DELETE", &format!("{PCS}/d"))).await;
    app.container("f", json!({"app": "web"})).await;
    let (code, second) = app.get(&format!("{PCS}?limit=2&continue={token}")).await;
    assert_eq!((code, names(&second)), (StatusCode::OK, vec!["c".to_string(), "d".to_string()]), "{second}");
    assert_eq!(second["metadata"]["resourceVersion"], revision);
    let token = second["metadata"]["continue"].as_str().unwrap().to_string();
    let (_, last) = app.get(&format!("{PCS}?limit=2&continue={token}")).await;
    assert_eq!(names(&last), vec!["e".to_string()]);
    assert!(last["metadata"].get("continue").is_none(), "{last}");

    // A new list sees the change; selectors page too; a token is only for its own list.
    let (_, now) = app.get(PCS).await;
    assert_eq!(names(&now), ["a", "b", "c", "e", "f"]);
    let (_, selected) = app.get(&format!("{PCS}?limit=1&labelSelector=app%3Dweb")).await;
    let token = selected["metadata"]["continue"].as_str().unwrap().to_string();
    let (code, body) = app.get(&format!("{PCS}?limit=1&continue={token}")).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) = app.get(&format!("{PCS}?limit=1&continue=bm90LWEtdG9rZW4")).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, all) = app.get(&format!("{PCS}?limit=0")).await;
    assert_eq!((code, names(&all).len()), (StatusCode::OK, 5));
}

#[tokio::test]
async fn an_expired_continue_token_is_410_and_a_new_list_works() {
    let options = drydock_daemon::api::ApiOptions { continue_ttl: std::time::Duration::ZERO, ..Default::default() };
    let app = app_with(store(100), options);
    app.namespace().await;
    for name in ["a", "b"] {
        app.container(name, json!({})).await;
    }
    let (_, first) = app.get(&format!("{PCS}?limit=1")).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let (code, body) = app.get(&format!("{PCS}?limit=1&continue={token}")).await;
    assert_status(code, &body, 410, "Expired");
    assert!(body["message"].as_str().unwrap().contains("start a new list"), "{body}");
}

#[tokio::test]
async fn a_collection_delete_deletes_what_its_selectors_match() {
    let app = app();
    app.namespace().await;
    app.container("web-1", json!({"app": "web"})).await;
    app.container("web-2", json!({"app": "web"})).await;
    app.container("db", json!({"app": "db"})).await;
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}?labelSelector=app%3Dweb"))).await;
    assert_eq!((code, names(&body)), (StatusCode::OK, vec!["web-1".to_string(), "web-2".to_string()]), "{body}");
    assert_eq!(body["kind"], "PhysicalContainerList");
    let (_, left) = app.get(PCS).await;
    assert_eq!(names(&left), ["db"]);
    let (code, body) = app.send(Call::new("DELETE", &format!("{PCS}?labelSelector=a%3D%3D%3Db"))).await;
    assert_status(code, &body, 400, "BadRequest");
    let (_, left) = app.get(PCS).await;
    assert_eq!(names(&left), ["db"]);
}

#[tokio::test]
async fn condition_times_are_rfc_3339_both_ways() {
    // A namespace's status has conditions (a physical container's has none: its schema would
    // drop them as unknown fields).
    let app = app();
    app.namespace().await;
    let key = ObjectKey::cluster("Namespace", "demo");
    let mut object = (*app.store.get(&key).unwrap()).clone();
    let mut conditions = Vec::new();
    Condition::new("Ready", ConditionStatus::True, "Running", "up").set(&mut conditions, WallTime(1_796_099_625_250));
    object.status = json!({"phase": "Active", "conditions": conditions});
    app.store.execute(StoreRequest::UpdateStatus { object }).unwrap();
    const NS: &str = "/api/v1/namespaces/demo";

    let (_, got) = app.get(NS).await;
    assert_eq!(got["status"]["conditions"][0]["lastTransitionTime"], "2026-12-01T04:33:45.250Z", "{got}");
    // Written back as read (kubectl edit, a typed client's update): the store keeps the time.
    let (code, body) = app.put(&format!("{NS}/status"), got.clone()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let stored = app.store.get(&key).unwrap();
    assert_eq!(stored.status["conditions"][0]["lastTransitionTime"], 1_796_099_625_250u64);
    let mut bad = got;
    bad["status"]["conditions"][0]["lastTransitionTime"] = json!("yesterday");
    let (code, body) = app.put(&format!("{NS}/status"), bad).await;
    assert_status(code, &body, 400, "BadRequest");
}

#[tokio::test]
async fn a_strategic_merge_patch_merges_lists_by_key() {
    const SMP: &str = "application/strategic-merge-patch+json";
    let uri = "/apis/drydock.dev/v1/namespaces/demo/logicalcontainers/web";
    let app = app();
    app.namespace().await;
    let env = json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]);
    let lc = json!({"apiVersion": "drydock.dev/v1", "kind": "LogicalContainer", "metadata": {"name": "web"},
        "spec": {"image": "busybox:1.36", "env": env}});
    let (code, body) = app.post("/apis/drydock.dev/v1/namespaces/demo/logicalcontainers", lc).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let key = ObjectKey::new("LogicalContainer", Some("demo"), "web");

    // The spec is immutable: an env item merged by name into the same list changes nothing (a
    // merge patch of the same body would replace the list and be refused), and a deletion is
    // refused as a change.
    let same = json!({"spec": {"env": [{"name": "B", "value": "2"}]}});
    let (code, body) = app.patch(uri, SMP, same.clone()).await;
    assert_eq!((code, &body["spec"]["env"]), (StatusCode::OK, &env), "{body}");
    let (code, body) = app.patch(uri, "application/merge-patch+json", same).await;
    assert_status(code, &body, 422, "Invalid");
    let (code, body) = app.patch(uri, SMP, json!({"spec": {"env": [{"name": "B", "$patch": "delete"}]}})).await;
    assert_status(code, &body, 422, "Invalid");
    assert_eq!(app.store.get(&key).unwrap().spec["env"], env);

    // Conditions (by `type`) through the status: one changed, one added, one deleted.
    let condition = |type_: &str, status: &str, reason: &str| json!({"type": type_, "status": status, "reason": reason, "message": ""});
    let status = format!("{uri}/status");
    let first = json!({"status": {"phase": "Starting",
        "conditions": [condition("Ready", "False", "Starting"), condition("Pulled", "False", "Pulling")]}});
    let (code, body) = app.patch(&status, SMP, first).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let patch = json!({"status": {"conditions": [condition("Ready", "True", "Running"),
        condition("Started", "True", "Running"), {"type": "Pulled", "$patch": "delete"}]}});
    let (code, body) = app.patch(&status, SMP, patch).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let stored = app.store.get(&key).unwrap().status.clone();
    let summary: Vec<(String, String, String)> = stored["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].to_string(), c["status"].to_string(), c["reason"].to_string()))
        .collect();
    let want = [("Ready", "True", "Running"), ("Started", "True", "Running")]
        .map(|(t, s, r)| (format!("{t:?}"), format!("{s:?}"), format!("{r:?}")));
    assert_eq!(summary, want, "{stored}");
    assert_eq!(stored["phase"], "Starting", "{stored}");

    // An item without its merge key is refused and changes nothing.
    let (code, body) = app.patch(&status, SMP, json!({"status": {"conditions": [{"status": "True"}]}})).await;
    assert_status(code, &body, 400, "BadRequest");
    assert_eq!(app.store.get(&key).unwrap().status, stored);
}
