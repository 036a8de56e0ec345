//! OpenAPI for clients that look before they write: `/openapi/v3` (a root listing one document
//! per group/version) and `/openapi/v3/{api/v1 | apis/{group}/{version}}`, plus a small
//! `/openapi/v2`.
//!
//! *Guarantees*: each document lists, for every kind of its group/version, the collection, item
//! and `status` paths; `PATCH` operations carry `x-kubernetes-group-version-kind` and the
//! `fieldValidation` query parameter, which is what kubectl checks to validate on the server
//! (so `kubectl apply` needs no `--validate=false`). Their request bodies list merge, JSON and
//! apply patches only, so kubectl's client-side apply computes a JSON merge patch. `/openapi/v2`
//! answers JSON when JSON is acceptable and 406 otherwise (kubectl asks protobuf first).
//!
//! *Caveats*: the schemas are loose: `spec` and `status` preserve unknown fields; admission is
//! where specs are checked.

use super::AppState;
use super::kinds::{self, KindDesc};
use super::respond::json_response;
use super::status::{ApiError, ApiResult, Subject};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

fn gv_path(group_version: &str) -> String {
    if group_version.contains('/') { format!("apis/{group_version}") } else { format!("api/{group_version}") }
}

pub async fn v3_root(State(state): State<AppState>) -> Response {
    let kinds = state.store.read(|s| kinds::all(s.registry()));
    let mut paths = Map::new();
    for kind in &kinds {
        let path = gv_path(&kind.group_version());
        let url = format!("/openapi/v3/{path}?hash={}", hash(&document(&kinds, &kind.group_version())));
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json_response(StatusCode::OK, &json!({"paths": paths}))
}

pub async fn v3_group_version(State(state): State<AppState>, Path(path): Path<String>) -> ApiResult<Response> {
    let group_version = path
        .strip_prefix("apis/")
        .or_else(|| path.strip_prefix("api/"))
        .ok_or_else(|| ApiError::not_found(Subject::default()))?;
    let kinds = state.store.read(|s| kinds::all(s.registry()));
    if !kinds.iter().any(|k| k.group_version() == group_version) {
        return Err(ApiError::not_found(Subject::default()));
    }
    Ok(json_response(StatusCode::OK, &document(&kinds, group_version)))
}

pub async fn v2(headers: HeaderMap) -> ApiResult<Response> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !(accept.is_empty() || accept.contains("json") || accept.contains("*/*")) {
        return Err(ApiError::NotAcceptable { accepted: "application/json".into() });
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({"swagger": "2.0", "info": {"title": "drydock", "version": "v1"}, "paths": {}, "definitions": {}}),
    ))
}

fn hash(value: &Value) -> String {
    // FNV-1a: a cache key, not a security property.
    let text = value.to_string();
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{h:016X}")
}

fn schema_name(kind: &KindDesc) -> String {
    let group = if kind.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        kind.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{group}.{}.{}", kind.version, kind.kind)
}

/// The document of one group/version.
fn document(kinds: &[KindDesc], group_version: &str) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for kind in kinds.iter().filter(|k| k.group_version() == group_version) {
        let base = if kind.namespaced {
            format!("/{}/namespaces/{{namespace}}/{}", gv_path(group_version), kind.plural)
        } else {
            format!("/{}/{}", gv_path(group_version), kind.plural)
        };
        paths.insert(base.clone(), collection_ops(kind));
        paths.insert(format!("{base}/{{name}}"), item_ops(kind));
        if kind.has_status {
            paths.insert(format!("{base}/{{name}}/status"), item_ops(kind));
        }
        schemas.insert(schema_name(kind), kind_schema(kind));
    }
    json!({"openapi": "3.0.0", "info": {"title": "drydock", "version": group_version},
        "paths": paths, "components": {"schemas": schemas}})
}

fn gvk(kind: &KindDesc) -> Value {
    json!({"group": kind.group, "version": kind.version, "kind": kind.kind})
}

fn schema_ref(kind: &KindDesc) -> Value {
    json!({"$ref": format!("#/components/schemas/{}", schema_name(kind))})
}

fn query_params(names: &[&str]) -> Value {
    names.iter().map(|n| json!({"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": true})).collect()
}

fn op(kind: &KindDesc, action: &str, params: &[&str], body_types: &[&str]) -> Value {
    let mut op = json!({
        "operationId": format!("{action}{}", kind.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(kind),
        "parameters": query_params(params),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": schema_ref(kind)}}}},
    });
    if !body_types.is_empty() {
        let content: Map<String, Value> =
            body_types.iter().map(|t| (t.to_string(), json!({"schema": schema_ref(kind)}))).collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn collection_ops(kind: &KindDesc) -> Value {
    json!({
        "get": op(kind, "list", &["labelSelector", "fieldSelector", "resourceVersion", "limit", "continue", "watch", "allowWatchBookmarks", "timeoutSeconds"], &[]),
        "post": op(kind, "post", &["fieldValidation", "fieldManager", "dryRun"], &["application/json", "application/yaml"]),
        "delete": op(kind, "deletecollection", &["labelSelector", "fieldSelector", "propagationPolicy", "dryRun"], &["application/json"]),
    })
}

fn item_ops(kind: &KindDesc) -> Value {
    json!({
        "get": op(kind, "get", &[], &[]),
        "put": op(kind, "put", &["fieldValidation", "fieldManager", "dryRun"], &["application/json", "application/yaml"]),
        "patch": op(kind, "patch", &["fieldValidation", "fieldManager", "dryRun", "force"],
            &["application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"]),
        "delete": op(kind, "delete", &["propagationPolicy", "gracePeriodSeconds", "dryRun"], &["application/json"]),
    })
}

fn kind_schema(kind: &KindDesc) -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    json!({
        "type": "object",
        "description": format!("{}: see drydock's documentation", kind.kind),
        "x-kubernetes-group-version-kind": [gvk(kind)],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "spec": open.clone(),
            "status": open,
        },
    })
}
