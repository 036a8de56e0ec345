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
//!
//! Each document also lists, under `components.schemas`, every kind's schema (named as Kubernetes
//! names them, `dev.drydock.v1.LogicalContainer`, with `x-kubernetes-group-version-kind`):
//! `apiVersion`, `kind`, `metadata` (a reference to the `ObjectMeta` schema in the same document,
//! [`OBJECT_META`]) and the kind's own `spec` and `status` schemas, generated from its Rust types
//! with their doc comments as descriptions ([`KindInfo::schema`]), every subschema inline. That
//! is what `kubectl explain lc.spec.mode` prints, and what the API checks a body's fields
//! against ([`wire`](super::wire)): a field a schema does not list is unknown.
//!
//! *Caveats*: an untyped kind ([`KindInfo::untyped`]) has no schema of its own: its `spec` and
//! `status` preserve unknown fields. Admission is where values are checked; the schemas say only
//! which fields exist and their types.

use super::AppState;
use super::kinds::{self, KindDesc};
use super::respond::json_response;
use super::status::{ApiError, ApiResult, Subject};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use drydock_engine::api::KindSchema;
use drydock_engine::store::{KindInfo, Registry};
use serde_json::{Map, Value, json};

/// The name of the `ObjectMeta` schema every kind's `metadata` refers to, as Kubernetes names it.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// One kind as the documents describe it: its names, what it is, and its schemas.
#[derive(Clone, Debug)]
pub struct Served {
    pub desc: KindDesc,
    pub description: String,
    /// `None`: an untyped kind.
    pub schema: Option<KindSchema>,
}

/// Every kind of `registry`, with its schemas (generated on first use, then kept by the kind).
pub fn served(registry: &Registry) -> Vec<Served> {
    let infos: Vec<&KindInfo> = registry.kinds().collect();
    kinds::all(registry)
        .into_iter()
        .map(|desc| {
            let info = infos.iter().find(|i| i.kind == desc.kind);
            Served {
                description: info.map(|i| i.description.clone()).unwrap_or_default(),
                schema: info.and_then(|i| i.schema().cloned()),
                desc,
            }
        })
        .collect()
}

fn gv_path(group_version: &str) -> String {
    if group_version.contains('/') { format!("apis/{group_version}") } else { format!("api/{group_version}") }
}

pub async fn v3_root(State(state): State<AppState>) -> Response {
    let kinds = state.store.read(|s| served(s.registry()));
    let mut paths = Map::new();
    for kind in &kinds {
        let group_version = kind.desc.group_version();
        let path = gv_path(&group_version);
        if paths.contains_key(&path) {
            continue;
        }
        let url = format!("/openapi/v3/{path}?hash={}", hash(&document(&kinds, &group_version)));
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json_response(StatusCode::OK, &json!({"paths": paths}))
}

pub async fn v3_group_version(State(state): State<AppState>, Path(path): Path<String>) -> ApiResult<Response> {
    let group_version = path
        .strip_prefix("apis/")
        .or_else(|| path.strip_prefix("api/"))
        .ok_or_else(|| ApiError::not_found(Subject::default()))?;
    let kinds = state.store.read(|s| served(s.registry()));
    if !kinds.iter().any(|k| k.desc.group_version() == group_version) {
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
pub fn document(kinds: &[Served], group_version: &str) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert(OBJECT_META.to_string(), object_meta_schema());
    for served in kinds.iter().filter(|k| k.desc.group_version() == group_version) {
        let kind = &served.desc;
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
        schemas.insert(schema_name(kind), kind_schema(served));
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

/// The schema of a kind: `apiVersion`, `kind`, `metadata` (by reference) and its own `spec` and
/// `status`.
fn kind_schema(served: &Served) -> Value {
    let kind = &served.desc;
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let part = |schema: Option<&Value>, description: &str| {
        let mut schema = schema.cloned().unwrap_or_else(|| open.clone());
        if let Value::Object(map) = &mut schema {
            map.entry("description").or_insert_with(|| Value::String(description.to_string()));
        }
        schema
    };
    let spec = part(served.schema.as_ref().map(|s| &s.spec), "What the client wants of the object.");
    let status = part(served.schema.as_ref().map(|s| &s.status), "What the controllers observed; written by drydock.");
    let description =
        if served.description.is_empty() { format!("A {} (drydock).", kind.kind) } else { served.description.clone() };
    json!({
        "type": "object",
        "description": description,
        "x-kubernetes-group-version-kind": [gvk(kind)],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object: the kind's group and version."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
            "metadata": {
                "description": "Standard object's metadata: name, namespace, labels, annotations, owners, finalizers and the fields the server sets.",
                "default": {},
                "allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}],
            },
            "spec": spec,
            "status": status,
        },
    })
}

/// `ObjectMeta`, as much of it as drydock serves: what a client may set and what the server sets.
fn object_meta_schema() -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    let time = |description: &str| json!({"type": "string", "format": "date-time", "description": description});
    let map = |description: &str| json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": description});
    json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "properties": {
            "name": string("Name must be unique within a namespace (for a cluster-scoped kind, within the kind). A lowercase DNS label; cannot be updated."),
            "generateName": string("An optional prefix the server uses to generate a unique name, if no name is provided."),
            "namespace": string("The namespace the object lives in: the unit of cleanup. Empty for a cluster-scoped kind (Namespace, Lease)."),
            "uid": string("UID is the unique in time and space value for this object, set by the server on create; never reused. Read-only."),
            "resourceVersion": string("An opaque value that changes whenever the object does, for optimistic concurrency (a stale one on update is a 409 Conflict), watches and lists. Set by the server."),
            "generation": {"type": "integer", "format": "int64", "description": "A sequence number of the object's spec, set by the server. Read-only."},
            "creationTimestamp": time("When the server created the object (RFC 3339, UTC). Read-only."),
            "deletionTimestamp": time("When deletion was requested: the object is going, and is removed once its finalizers are gone. Set by the server. Read-only."),
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64", "description": "Always 0 while deleting: drydock has no grace period. Read-only."},
            "labels": map("Map of string keys and values that can be used to organize and categorize (scope and select) objects: label selectors (-l) match them."),
            "annotations": map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. `drydock.dev/request-id` makes a create idempotent."),
            "finalizers": {
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "set",
                "description": "Must be empty before the object is deleted from the store. drydock's own (`drydock.dev/...`) are added and removed only by drydock.",
            },
            "ownerReferences": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
                "description": "Objects this one depends on: once all of them are gone, the garbage collector deletes it. At most one is its controller.",
                "items": {
                    "type": "object",
                    "required": ["apiVersion", "kind", "name", "uid"],
                    "description": "OwnerReference contains enough information to let you identify an owning object, in the same namespace or cluster-scoped.",
                    "properties": {
                        "apiVersion": string("API version of the owner."),
                        "kind": string("Kind of the owner."),
                        "name": string("Name of the owner."),
                        "uid": string("UID of the owner: an owner of the same name but another uid is another object."),
                        "controller": {"type": "boolean", "description": "If true, this reference points to the managing controller."},
                        "blockOwnerDeletion": {"type": "boolean", "description": "If true, a foreground deletion of the owner waits for this object to be gone."},
                    },
                },
            },
            "managedFields": {
                "type": "array",
                "description": "Which field manager set which fields (server-side apply). Maintained by the server.",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use drydock_engine::api::Resource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A user's kind, as examples/user-controller registers one.
    struct Widget;

    /// What a widget is made of.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct WidgetSpec {
        /// How many sprockets the widget turns.
        sprockets: u32,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct WidgetStatus {
        /// Turning or not.
        #[serde(default)]
        turning: bool,
    }

    impl Resource for Widget {
        const KIND: &'static str = "Widget";
        const NAMESPACED: bool = true;
        type Spec = WidgetSpec;
        type Status = WidgetStatus;
    }

    fn registry() -> Registry {
        let mut registry = Registry::builtin();
        registry.register(KindInfo::typed::<Widget>(|_| Vec::new()).with_group_version("example.dev/v1"));
        registry.register(KindInfo::untyped("Gadget", true));
        registry
    }

    /// The schema `reference` (`#/components/schemas/<name>`) names in `doc`.
    fn resolve<'a>(doc: &'a Value, reference: &Value) -> &'a Value {
        let name = reference.as_str().unwrap().strip_prefix("#/components/schemas/").unwrap();
        &doc["components"]["schemas"][name]
    }

    #[test]
    fn every_kind_has_its_schema_with_group_version_kind_metadata_spec_and_status() {
        let registry = registry();
        let kinds = served(&registry);
        for served in &kinds {
            let group_version = served.desc.group_version();
            let doc = document(&kinds, &group_version);
            let schema = &doc["components"]["schemas"][schema_name(&served.desc)];
            let gvk = &schema["x-kubernetes-group-version-kind"][0];
            assert_eq!(gvk["kind"], served.desc.kind.as_str(), "{schema}");
            assert_eq!(gvk["version"], served.desc.version.as_str());
            assert_eq!(gvk["group"], served.desc.group.as_str());
            for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
                assert!(schema["properties"][field].is_object(), "{} lacks {field}: {schema}", served.desc.kind);
            }
            let meta = resolve(&doc, &schema["properties"]["metadata"]["allOf"][0]["$ref"]);
            for field in [
                "name",
                "namespace",
                "labels",
                "annotations",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "finalizers",
                "ownerReferences",
            ] {
                let description = meta["properties"][field]["description"].as_str().unwrap_or_default();
                assert!(!description.is_empty(), "ObjectMeta.{field} has no description: {meta}");
            }
            // The spec and status are inline: nothing in them for a client to resolve.
            let inline = format!("{}{}", schema["properties"]["spec"], schema["properties"]["status"]);
            assert!(!inline.contains("$ref"), "{inline}");
        }
        let doc = document(&kinds, "drydock.dev/v1");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert_eq!(schemas.len(), 1 + 6 + 1, "ObjectMeta, drydock.dev's six kinds and Gadget: {:?}", schemas.keys());
        assert!(schemas.contains_key("dev.drydock.v1.LogicalContainer"));
        assert!(document(&kinds, "v1")["components"]["schemas"]["io.k8s.api.core.v1.Namespace"].is_object());
    }

    #[test]
    fn kubectl_explain_finds_each_fields_description() {
        let kinds = served(&registry());
        let doc = document(&kinds, "drydock.dev/v1");
        let lc = &doc["components"]["schemas"]["dev.drydock.v1.LogicalContainer"];
        assert!(lc["description"].as_str().unwrap().starts_with("A logical container"), "{lc}");
        let mode = &lc["properties"]["spec"]["properties"]["mode"];
        let description = mode["description"].as_str().unwrap();
        assert!(description.starts_with("How the container relates to runtime containers"), "{mode}");
        assert!(description.contains("`persistent` (reused across runs"), "{mode}");
        assert_eq!(mode["enum"], json!(["session", "persistent", "existing"]));
        let env_name = &lc["properties"]["spec"]["properties"]["env"]["items"]["properties"]["name"];
        assert!(env_name["description"].is_string(), "{env_name}");
        let phase = &lc["properties"]["status"]["properties"]["phase"];
        assert!(phase["enum"].as_array().unwrap().contains(&json!("Running")), "{phase}");
    }

    #[test]
    fn a_users_kind_gets_its_schema_from_its_types_and_an_untyped_one_stays_open() {
        let kinds = served(&registry());
        let doc = document(&kinds, "example.dev/v1");
        let widget = &doc["components"]["schemas"]["dev.example.v1.Widget"];
        let spec = &widget["properties"]["spec"];
        assert_eq!(spec["description"], "What a widget is made of.", "{widget}");
        assert_eq!(spec["properties"]["sprockets"]["description"], "How many sprockets the widget turns.");
        assert_eq!(spec["properties"]["sprockets"]["type"], "integer");
        assert_eq!(widget["properties"]["status"]["properties"]["turning"]["type"], "boolean");
        assert!(doc["paths"]["/apis/example.dev/v1/namespaces/{namespace}/widgets/{name}"]["patch"].is_object());
        let doc = document(&kinds, "drydock.dev/v1");
        let gadget = &doc["components"]["schemas"]["dev.drydock.v1.Gadget"];
        assert_eq!(gadget["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"], true, "{gadget}");
    }
}
