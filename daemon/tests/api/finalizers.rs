//! drydock's own finalizers (`drydock.dev/...`) are changed by drydock only: no API write may add
//! or remove one (issue 47). The engine does not run in these in-process tests; its writes go to
//! the store directly and stay allowed.

use crate::common::*;
use axum::http::StatusCode;
use drydock_engine::api::{ObjectKey, names};
use drydock_engine::store::StoreRequest;
use serde_json::{Value, json};

const NS: &str = "/api/v1/namespaces/demo";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// A 422 `Invalid` about `metadata.finalizers` naming `finalizer`.
fn assert_refused(code: StatusCode, body: &Value, finalizer: &str) {
    assert_status(code, body, 422, "Invalid");
    let cause = &body["details"]["causes"][0];
    assert_eq!(cause["field"], "metadata.finalizers", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(finalizer) && message.contains("drydock's"), "{message}");
    assert!(message.contains("kubectl delete"), "says how to delete instead: {message}");
}

async fn finalizers(app: &App, uri: &str) -> Value {
    let (code, body) = app.get(uri).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    body["metadata"]["finalizers"].clone()
}

#[tokio::test]
async fn a_merge_patch_cannot_drop_the_namespace_finalizer() {
    let app = app();
    app.namespace().await;
    let (code, body) = app.patch(NS, MERGE, json!({"metadata": {"finalizers": null}})).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    assert!(body["message"].as_str().unwrap().contains("kubectl delete namespaces demo"), "{body}");
    let (code, body) = app.patch(NS, MERGE, json!({"metadata": {"finalizers": []}})).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    let (code, body) = app.patch(NS, STRATEGIC, json!({"metadata": {"finalizers": null}})).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    let directive = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [names::FINALIZER_NAMESPACE]}});
    let (code, body) = app.patch(NS, STRATEGIC, directive).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    let (code, body) = app.patch(&format!("{NS}?dryRun=All"), MERGE, json!({"metadata": {"finalizers": null}})).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    assert_eq!(finalizers(&app, NS).await, json!([names::FINALIZER_NAMESPACE]));
}

#[tokio::test]
async fn a_json_patch_cannot_remove_the_namespace_finalizer() {
    let app = app();
    app.namespace().await;
    let remove = json!([{"op": "remove", "path": "/metadata/finalizers/0"}]);
    let (code, body) = app.patch(NS, JSON_PATCH, remove).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    let replace = json!([{"op": "replace", "path": "/metadata/finalizers", "value": ["example.com/mine"]}]);
    let (code, body) = app.patch(NS, JSON_PATCH, replace).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    assert_eq!(finalizers(&app, NS).await, json!([names::FINALIZER_NAMESPACE]));
}

#[tokio::test]
async fn a_put_cannot_drop_the_namespace_finalizer_but_may_keep_it() {
    let app = app();
    app.namespace().await;
    let (_, mut ns) = app.get(NS).await;
    let unchanged = ns.clone();
    ns["metadata"]["finalizers"] = json!([]);
    let (code, body) = app.put(NS, ns).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    let (code, body) = app.put(NS, unchanged.clone()).await;
    assert_eq!(code, StatusCode::OK, "a PUT that keeps drydock's finalizers goes through: {body}");
    // A PUT from a stale read is a 409, whatever it does to the finalizers: the client reads again.
    let mut stale = unchanged;
    stale["metadata"]["labels"] = json!({"a": "b"});
    let (code, body) = app.put(NS, stale.clone()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    stale["metadata"]["finalizers"] = json!([]);
    let (code, body) = app.put(NS, stale).await;
    assert_status(code, &body, 409, "Conflict");
    assert_eq!(finalizers(&app, NS).await, json!([names::FINALIZER_NAMESPACE]));
}

#[tokio::test]
async fn a_users_own_finalizer_can_be_added_and_removed() {
    let app = app();
    app.namespace().await;
    let both = json!({"metadata": {"finalizers": [names::FINALIZER_NAMESPACE, "example.com/mine"]}});
    let (code, body) = app.patch(NS, MERGE, both).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!([names::FINALIZER_NAMESPACE, "example.com/mine"]));
    let remove = json!([{"op": "remove", "path": "/metadata/finalizers/1"}]);
    let (code, body) = app.patch(NS, JSON_PATCH, remove).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!([names::FINALIZER_NAMESPACE]));
    // Kubernetes' own propagation finalizers are a client's to set and take off, as on Kubernetes.
    app.container("a", json!({})).await;
    let pc = format!("{PCS}/a");
    let (code, body) = app.patch(&pc, MERGE, json!({"metadata": {"finalizers": ["orphan"]}})).await;
    assert_eq!((code, body["metadata"]["finalizers"].clone()), (StatusCode::OK, json!(["orphan"])), "{body}");
    let (code, body) = app.patch(&pc, MERGE, json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn adding_one_of_drydocks_finalizers_is_refused() {
    let app = app();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "demo", "finalizers": [names::FINALIZER_NAMESPACE]}});
    let (code, body) = app.post("/api/v1/namespaces", ns).await;
    assert_eq!(code, StatusCode::CREATED, "a create may list the defaults the store adds anyway: {body}");
    assert_eq!(body["metadata"]["finalizers"], json!([names::FINALIZER_NAMESPACE]));
    let pc = |name: &str| {
        json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
            "metadata": {"name": name, "finalizers": [names::FINALIZER_HOLD]}, "spec": {"image": "busybox:1.36"}})
    };
    let (code, body) = app.post(PCS, pc("held")).await;
    assert_refused(code, &body, names::FINALIZER_HOLD);
    let yaml = "apiVersion: drydock.dev/v1\nkind: PhysicalContainer\nmetadata:\n  name: applied\n  finalizers: [drydock.dev/runtime-cleanup]\nspec:\n  image: busybox:1.36\n";
    let apply = |uri| Call { body: yaml.as_bytes().to_vec(), ..Call::new("PATCH", uri).content_type(APPLY) };
    let uri = format!("{PCS}/applied?fieldManager=t");
    let (code, body) = app.send(apply(&uri)).await;
    assert_refused(code, &body, names::FINALIZER_RUNTIME);
    app.container("a", json!({})).await;
    let (code, body) =
        app.patch(&format!("{PCS}/a"), MERGE, json!({"metadata": {"finalizers": [names::FINALIZER_RUNTIME]}})).await;
    assert_refused(code, &body, names::FINALIZER_RUNTIME);
    assert!(body["message"].as_str().unwrap().contains("-n demo"), "{body}");
    let (code, body) = app.get(&format!("{PCS}/held")).await;
    assert_status(code, &body, 404, "NotFound");
}

#[tokio::test]
async fn a_namespace_delete_still_works_and_the_engine_may_remove_the_finalizer() {
    let app = app();
    app.namespace().await;
    let (code, ns) = app.send(Call::new("DELETE", NS)).await;
    assert_eq!(code, StatusCode::OK, "{ns}");
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "marked deleting: {ns}");
    assert_eq!(ns["metadata"]["finalizers"], json!([names::FINALIZER_NAMESPACE]), "kept for the engine: {ns}");
    let (code, body) = app.patch(NS, MERGE, json!({"metadata": {"finalizers": null}})).await;
    assert_refused(code, &body, names::FINALIZER_NAMESPACE);
    // The engine's namespace controller removes it through the store, not the API.
    let key = ObjectKey::cluster("Namespace", "demo");
    let mut done = (*app.store.get(&key).unwrap()).clone();
    done.metadata.finalizers.clear();
    app.store.execute(StoreRequest::Update { object: done }).unwrap();
    let (code, body) = app.get(NS).await;
    assert_status(code, &body, 404, "NotFound");
}
