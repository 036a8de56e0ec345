//! Discovery (`/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`), `/version`
//! and the health endpoints.
//!
//! *Guarantees*: the legacy (unaggregated) discovery documents, as `application/json`, so clients
//! that first ask for aggregated discovery (`as=APIGroupDiscoveryList`) fall back to them. Every
//! registered kind is listed with its plural, singular, short names, scope, verbs and `status`
//! subresource; unknown groups and versions are 404 `Status`es.

use super::AppState;
use super::kinds::{self, KindDesc, VERBS};
use super::respond::json_response;
use super::status::{ApiError, ApiResult, Subject};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The Kubernetes version we speak, for kubectl's skew check.
pub const KUBE_MINOR: &str = "32";

pub async fn version() -> Response {
    json_response(
        StatusCode::OK,
        &json!({
            "major": "1", "minor": KUBE_MINOR, "gitVersion": format!("v1.{KUBE_MINOR}.0-drydock-{}", env!("CARGO_PKG_VERSION")),
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "", "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        }),
    )
}

pub async fn healthy() -> &'static str {
    "ok"
}

/// `/readyz`: `ok`, or 503 naming why while the engine's runtime holds a request longer than
/// the options' `runtime_patience` (the API still answers, but what it is asked to do does not
/// happen). Reads no store: it answers while the store is busy.
pub async fn ready(State(state): State<AppState>) -> Response {
    let degraded = state.options.runtime_health.as_ref().and_then(|h| h.degraded(state.options.runtime_patience));
    match degraded {
        None => (StatusCode::OK, "ok").into_response(),
        Some(reason) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("[-]runtime failed: {reason}\nreadyz check failed\n"))
                .into_response()
        }
    }
}

/// drydock records no Kubernetes `Event`s; `kubectl describe` asks for them, and gets an empty
/// list rather than a 404. (`events` is not in discovery.)
pub async fn no_events() -> Response {
    json_response(StatusCode::OK, &json!({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": []}))
}

pub async fn core_versions() -> Response {
    json_response(
        StatusCode::OK,
        &json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}),
    )
}

pub async fn core_resources(State(state): State<AppState>) -> Response {
    json_response(StatusCode::OK, &resource_list(&state, "v1"))
}

pub async fn groups(State(state): State<AppState>) -> Response {
    let groups: Vec<Value> = state.store.read(|s| kinds::groups(s.registry())).iter().map(group_json).collect();
    json_response(StatusCode::OK, &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

pub async fn group(State(state): State<AppState>, Path(group): Path<String>) -> ApiResult<Response> {
    let groups = state.store.read(|s| kinds::groups(s.registry()));
    let found = groups.iter().find(|(g, _)| *g == group).ok_or_else(|| not_found(&group))?;
    let mut value = group_json(found);
    value["kind"] = json!("APIGroup");
    value["apiVersion"] = json!("v1");
    Ok(json_response(StatusCode::OK, &value))
}

pub async fn group_resources(
    State(state): State<AppState>,
    Path((group, version)): Path<(String, String)>,
) -> ApiResult<Response> {
    let group_version = format!("{group}/{version}");
    let list = resource_list(&state, &group_version);
    if list["resources"].as_array().is_none_or(Vec::is_empty) {
        return Err(not_found(&group_version));
    }
    Ok(json_response(StatusCode::OK, &list))
}

fn not_found(what: &str) -> ApiError {
    ApiError::not_found(Subject { name: String::new(), group: String::new(), kind: what.to_string() })
}

fn group_json((group, versions): &(String, Vec<String>)) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "preferredVersion": versions.first().cloned().unwrap_or(Value::Null), "versions": versions})
}

fn resource_list(state: &AppState, group_version: &str) -> Value {
    let kinds = state.store.read(|s| kinds::in_group_version(s.registry(), group_version));
    let resources: Vec<Value> = kinds.iter().flat_map(resource_entries).collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn resource_entries(kind: &KindDesc) -> Vec<Value> {
    let mut entries = vec![json!({
        "name": kind.plural, "singularName": kind.singular, "namespaced": kind.namespaced, "kind": kind.kind,
        "verbs": VERBS, "shortNames": kind.short_names, "categories": ["drydock"],
    })];
    if kind.has_status {
        entries.push(json!({
            "name": format!("{}/status", kind.plural), "singularName": "", "namespaced": kind.namespaced,
            "kind": kind.kind, "verbs": ["get", "patch", "update"],
        }));
    }
    entries.push(json!({
        "name": format!("{}/log", kind.plural), "singularName": "", "namespaced": kind.namespaced,
        "kind": kind.kind, "verbs": ["get"],
    }));
    entries
}
