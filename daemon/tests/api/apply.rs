//! Server-side apply with managed fields, as the API server does it: dropped fields removed,
//! conflicts with other managers reported field by field, `force=true` taking them, and every
//! write recorded in `metadata.managedFields`.

use super::common::*;
use axum::http::StatusCode;
use serde_json::{Value, json};

const LCS: &str = "/apis/drydock.dev/v1/namespaces/demo/logicalcontainers";

fn apply<'a>(uri: &'a str, yaml: &str) -> Call<'a> {
    Call { body: yaml.as_bytes().to_vec(), ..Call::new("PATCH", uri).content_type("application/apply-patch+yaml") }
}

fn config(labels: &str, env: &str) -> String {
    format!(
        "apiVersion: drydock.dev/v1\nkind: LogicalContainer\nmetadata:\n  name: api\n  labels: {{{labels}}}\nspec:\n  image: busybox:1.36\n  env: [{env}]\n"
    )
}

fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| (e["manager"].as_str().unwrap().to_string(), e["operation"].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_apply_removes_what_its_manager_dropped_and_keeps_what_others_set() {
    let app = app();
    app.namespace().await;
    let uri = format!("{LCS}/api?fieldManager=ci");
    let first = config("app: web, tier: front", "{name: A, value: '1'}, {name: B, value: '2'}");
    let (code, body) = app.send(apply(&uri, &first)).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(managers(&body), [("ci".to_string(), "Apply".to_string())]);
    let entry = &body["metadata"]["managedFields"][0];
    assert_eq!(entry["fieldsType"], "FieldsV1", "{entry}");
    assert_eq!(entry["apiVersion"], "drydock.dev/v1", "{entry}");
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')), "an RFC 3339 time: {entry}");
    assert_eq!(entry["fieldsV1"]["f:spec"]["f:env"]["k:{\"name\":\"B\"}"]["f:value"], json!({}), "{entry}");

    // Another manager adds a label with a merge patch: it owns that label.
    let (code, body) = app
        .send(
            Call::new("PATCH", &format!("{LCS}/api?fieldManager=kubectl-label"))
                .json(&json!({"metadata": {"labels": {"owner": "ops"}}}))
                .content_type("application/merge-patch+json"),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(managers(&body).contains(&("kubectl-label".to_string(), "Update".to_string())), "{body}");

    // ci applies again without `tier`: it goes; `owner` is not ci's and stays. (The spec of the
    // built-in kinds is immutable: dropping spec fields is in the unit tests.)
    let second = config("app: web", "{name: A, value: '1'}, {name: B, value: '2'}");
    let (code, body) = app.send(apply(&uri, &second)).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["labels"], json!({"app": "web", "owner": "ops"}), "{body}");

    // The same apply again changes nothing, not even the resourceVersion.
    let (code, again) = app.send(apply(&uri, &second)).await;
    assert_eq!(code, StatusCode::OK, "{again}");
    assert_eq!(again["metadata"]["resourceVersion"], body["metadata"]["resourceVersion"], "{again}");
}

#[tokio::test]
async fn a_conflicting_apply_is_refused_field_by_field_unless_forced() {
    let app = app();
    app.namespace().await;
    let (code, body) =
        app.send(apply(&format!("{LCS}/api?fieldManager=ci"), &config("app: web", "{name: A, value: '1'}"))).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");

    // Another applier sets ci's fields to other values: a 409 naming each field and its owner.
    let other = config("app: db", "{name: A, value: '9'}");
    let (code, body) = app.send(apply(&format!("{LCS}/api?fieldManager=ops"), &other)).await;
    assert_status(code, &body, 409, "Conflict");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("Apply failed with 2 conflicts: conflict with \"ci\" using drydock.dev/v1:"),
        "{message}"
    );
    let mut fields: Vec<&str> =
        body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    fields.sort();
    assert_eq!(fields, [".metadata.labels.app", ".spec.env[name=\"A\"].value"], "{body}");
    assert!(body["details"]["causes"].as_array().unwrap().iter().all(|c| c["reason"] == "FieldManagerConflict"));
    let (_, unchanged) = app.get(&format!("{LCS}/api")).await;
    assert_eq!(unchanged["metadata"]["labels"]["app"], "web", "a refused apply changed the object");

    // Forced: the field is taken, and ci no longer owns it. (Only the label: the spec of the
    // built-in kinds is immutable.)
    let forced = config("app: db", "{name: A, value: '1'}");
    let (code, body) = app.send(apply(&format!("{LCS}/api?fieldManager=ops&force=true"), &forced)).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["labels"]["app"], "db", "{body}");
    let ci = body["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "ci").unwrap();
    assert!(ci["fieldsV1"]["f:metadata"]["f:labels"].get("f:app").is_none(), "ci still owns app: {ci}");

    // ci, no longer the owner, can apply without `app` and the label stays (ops owns it).
    let (code, body) =
        app.send(apply(&format!("{LCS}/api?fieldManager=ci"), &config("", "{name: A, value: '1'}"))).await;
    assert_eq!((code, body["metadata"]["labels"]["app"].clone()), (StatusCode::OK, json!("db")), "{body}");
}

#[tokio::test]
async fn apply_needs_a_field_manager_and_force_needs_an_apply() {
    let app = app();
    app.namespace().await;
    let (code, body) = app.send(apply(&format!("{LCS}/api"), &config("", ""))).await;
    assert_status(code, &body, 400, "BadRequest");
    assert!(body["message"].as_str().unwrap().contains("fieldManager is required"), "{body}");
    app.container("a", json!({})).await;
    let (code, body) = app
        .send(
            Call::new("PATCH", &format!("{PCS}/a?force=true"))
                .json(&json!({"metadata": {"labels": {"x": "y"}}}))
                .content_type("application/merge-patch+json"),
        )
        .await;
    assert_status(code, &body, 400, "BadRequest");
}

#[tokio::test]
async fn creates_and_updates_are_recorded_under_the_user_agent() {
    let app = app();
    app.namespace().await;
    let created = app.container("a", json!({"app": "web"})).await;
    // The test client sends no User-Agent.
    assert_eq!(managers(&created), [("unknown".to_string(), "Update".to_string())], "{created}");
    let mut replaced = created.clone();
    replaced["metadata"]["labels"]["app"] = json!("db");
    let call = Call {
        headers: vec![("user-agent".into(), "kubectl-edit/v1.32.0 (linux/amd64)".into())],
        ..Call::new("PUT", "")
    };
    let uri = format!("{PCS}/a");
    let (code, body) = app.send(Call { uri: &uri, ..call.json(&replaced) }).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let edit = body["metadata"]["managedFields"].as_array().unwrap().iter().find(|e| e["manager"] == "kubectl-edit");
    let edit = edit.unwrap_or_else(|| panic!("no kubectl-edit entry: {body}"));
    assert_eq!(edit["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:app": {}}}}), "{body}");
}
