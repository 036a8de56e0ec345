//! The OpenAPI documents kubectl reads (`kubectl explain`, server-side validation), and unknown
//! fields anywhere in a body refused, warned about or ignored as `fieldValidation` asks.

use crate::common::{App, Call, app, assert_status};
use axum::http::StatusCode;
use serde_json::{Value, json};
use tower::ServiceExt;

const LCS: &str = "/apis/drydock.dev/v1/namespaces/demo/logicalcontainers";

fn lc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "drydock.dev/v1", "kind": "LogicalContainer", "metadata": {"name": name}, "spec": spec})
}

/// A call's status and its `Warning` headers.
async fn warnings(app: &App, call: Call<'_>) -> (StatusCode, Vec<String>) {
    let response = app.router.clone().oneshot(call.request()).await.unwrap();
    let warnings = response.headers().get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    (response.status(), warnings)
}

#[tokio::test]
async fn every_served_kind_has_a_schema_kubectl_explain_can_read() {
    let app = app();
    let (code, root) = app.get("/openapi/v3").await;
    assert_eq!(code, StatusCode::OK);
    let mut kinds = 0;
    for (path, entry) in root["paths"].as_object().unwrap() {
        let (code, doc) = app.get(entry["serverRelativeURL"].as_str().unwrap()).await;
        assert_eq!(code, StatusCode::OK, "{path}");
        let (_, resources) = app.get(&format!("/{path}")).await;
        for resource in resources["resources"].as_array().unwrap() {
            let Some(kind) = resource["kind"].as_str().filter(|_| !resource["name"].as_str().unwrap().contains('/'))
            else {
                continue;
            };
            let schema = doc["components"]["schemas"]
                .as_object()
                .unwrap()
                .values()
                .find(|s| s["x-kubernetes-group-version-kind"][0]["kind"] == kind)
                .unwrap_or_else(|| panic!("{path}: no schema for {kind}"));
            assert!(schema["properties"]["spec"]["description"].is_string(), "{kind}: {schema}");
            kinds += 1;
        }
    }
    assert_eq!(kinds, 7, "Namespace and drydock.dev's six kinds");
    let (_, doc) = app.get("/openapi/v3/apis/drydock.dev/v1").await;
    let mode =
        &doc["components"]["schemas"]["dev.drydock.v1.LogicalContainer"]["properties"]["spec"]["properties"]["mode"];
    assert!(mode["description"].as_str().unwrap().contains("`existing` (never created"), "{mode}");
    let meta = &doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
    assert!(meta["properties"]["ownerReferences"]["items"]["properties"]["uid"]["description"].is_string(), "{meta}");
}

#[tokio::test]
async fn unknown_fields_are_refused_warned_about_or_ignored_as_asked() {
    let app = app();
    app.namespace().await;
    let typo = lc("strict", json!({"image": "busybox", "foo": 1}));
    let (code, body) = app.post(&format!("{LCS}?fieldValidation=Strict"), typo).await;
    assert_status(code, &body, 400, "BadRequest");
    assert_eq!(body["message"], "strict decoding error: unknown field \"spec.foo\"", "{body}");
    assert_eq!(app.get(&format!("{LCS}/strict")).await.0, StatusCode::NOT_FOUND, "a refused create created nothing");

    for (where_, body) in [
        (
            "top level",
            json!({"kind": "LogicalContainer", "metadata": {"name": "x"}, "spec": {"image": "busybox"}, "extra": 1}),
        ),
        (
            "metadata",
            json!({"kind": "LogicalContainer", "metadata": {"name": "x", "colour": "red"}, "spec": {"image": "busybox"}}),
        ),
        ("nested spec", lc("x", json!({"image": "busybox", "env": [{"name": "A", "vaule": "1"}]}))),
        (
            "status",
            json!({"kind": "LogicalContainer", "metadata": {"name": "x"}, "spec": {"image": "busybox"}, "status": {"phase": "Pending", "bogus": 1}}),
        ),
    ] {
        let (code, refused) = app.post(&format!("{LCS}?fieldValidation=Strict"), body).await;
        assert_status(code, &refused, 400, "BadRequest");
        assert!(
            refused["message"].as_str().unwrap().starts_with("strict decoding error: unknown field"),
            "{where_}: {refused}"
        );
    }

    let warn = lc("warned", json!({"image": "busybox", "foo": 1}));
    let (code, warned) = warnings(&app, Call::new("POST", &format!("{LCS}?fieldValidation=Warn")).json(&warn)).await;
    assert_eq!(code, StatusCode::CREATED);
    assert_eq!(warned, [r#"299 - "unknown field \"spec.foo\"""#]);
    let (_, stored) = app.get(&format!("{LCS}/warned")).await;
    assert_eq!(stored["spec"].get("foo"), None, "the unknown field is dropped: {stored}");

    let ignore = lc("ignored", json!({"image": "busybox", "foo": 1}));
    let (code, ignored) =
        warnings(&app, Call::new("POST", &format!("{LCS}?fieldValidation=Ignore")).json(&ignore)).await;
    assert_eq!((code, ignored.len()), (StatusCode::CREATED, 0));

    // A merge patch of the status subresource with an unknown field, as kubectl sends it.
    let status_uri = format!("{LCS}/warned/status?fieldValidation=Strict");
    let (code, body) = app
        .send(
            Call::new("PATCH", &status_uri)
                .json(&json!({"status": {"phase": "Running", "colour": "red"}}))
                .content_type("application/merge-patch+json"),
        )
        .await;
    assert_status(code, &body, 400, "BadRequest");
    assert_eq!(body["message"], "strict decoding error: unknown field \"status.colour\"", "{body}");
}
