//! Engine [`Object`] <-> Kubernetes JSON.
//!
//! *Guarantees*
//! - Out: `apiVersion` is always the kind's group/version; `metadata.resourceVersion` is a
//!   string; metadata timestamps are RFC 3339 (UTC, seconds), and so are the times in spec and
//!   status (conditions, leases: see [`times`](super::times)); owner references carry their owner kind's
//!   `apiVersion`.
//! - In: a body that is not a JSON object, names another `kind`/`apiVersion` than the URL, or
//!   whose `resourceVersion` is not a number is a 400. Fields the store sets
//!   (`uid`, timestamps, `generation`, `managedFields`, ...) are accepted and dropped; unknown
//!   fields, anywhere in the object (top level, `metadata` and its owner references, `spec`,
//!   `status`), are dropped and reported as warnings (Kubernetes' `Warn`, the default), dropped
//!   silently (`Ignore`), or refused with 400 (`Strict`: `strict decoding error: unknown field
//!   "spec.foo"`, as the API server words it). A `spec` or `status` field is unknown when the
//!   kind's schema ([`KindInfo::schema`]) does not list it, and a spec field also when the kind's
//!   typed spec does not decode it.
//! - `metadata.generateName` gives a name when the body has none.
//!
//! *Caveats*: metadata times are kept to the millisecond in the store but sent to the second.

use super::kinds::KindDesc;
use super::status::{ApiError, ApiResult};
use super::times;
use drydock_engine::api::Object;
use drydock_engine::store::{FieldError, KindInfo, Registry};
use serde_json::{Map, Value};

/// How to treat unknown fields, from `?fieldValidation=`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::BadRequest(format!(
                "fieldValidation must be one of Ignore, Warn or Strict, not {other:?}"
            ))),
        }
    }
}

const TOP_LEVEL: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];
const META_KEPT: [&str; 7] =
    ["name", "namespace", "uid", "resourceVersion", "labels", "annotations", "ownerReferences"];
const OWNER_FIELDS: [&str; 6] = ["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];
const META_DROPPED: [&str; 8] = [
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "generateName",
    "clusterName",
];

/// The Kubernetes JSON of `object`.
pub fn to_wire(object: &Object, desc: &KindDesc, registry: &Registry) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or_else(|_| Value::Object(Map::new()));
    let Some(map) = value.as_object_mut() else { return value };
    map.insert("apiVersion".into(), Value::String(desc.group_version()));
    if let Some(Value::Object(meta)) = map.get_mut("metadata") {
        meta.insert("resourceVersion".into(), Value::String(object.metadata.resource_version.to_string()));
        for (field, time) in [
            ("creationTimestamp", object.metadata.creation_timestamp),
            ("deletionTimestamp", object.metadata.deletion_timestamp),
        ] {
            if let Some(time) = time {
                meta.insert(field.into(), Value::String(times::seconds(time)));
            }
        }
        if let Some(Value::Array(entries)) = meta.get_mut("managedFields") {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(time) = entry.get("time").and_then(Value::as_u64) {
                    entry.insert("time".into(), Value::String(times::seconds(drydock_engine::WallTime(time))));
                }
            }
        }
        if object.metadata.deletion_timestamp.is_some() {
            meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
        }
        if let Some(Value::Array(owners)) = meta.get_mut("ownerReferences") {
            owners.iter_mut().for_each(|owner| add_owner_api_version(owner, registry));
        }
    }
    times::to_wire(&object.kind, &mut value);
    value
}

fn add_owner_api_version(owner: &mut Value, registry: &Registry) {
    let Some(owner) = owner.as_object_mut() else { return };
    let kind = owner.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = registry.get(kind).map(|k| k.group_version.clone()).unwrap_or_else(|| "v1".into());
    owner.insert("apiVersion".into(), Value::String(api_version));
}

/// Where a body is going: the kind and, from the URL, the namespace and name.
#[derive(Clone, Debug)]
pub struct Target<'a> {
    pub desc: &'a KindDesc,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    /// The kind as the store admits it: what its spec may hold. `None`: unknown fields of the
    /// spec are left to admission (a 422).
    pub info: Option<&'a KindInfo>,
}

/// At most this many unknown spec fields are pruned from one body; beyond, admission refuses it.
const MAX_PRUNED: usize = 64;

/// The fields of `object`'s spec that its kind does not know: removed, each with a warning
/// naming its path (`Warn`; for `Ignore` the caller drops the warnings), as the API server prunes
/// what a kind's schema does not know. They are found by the kind's own decoding of the spec,
/// the one admission runs, so the spec's type is the only schema.
fn prune_unknown_spec_fields(object: &mut Object, info: &KindInfo, warnings: &mut Vec<String>) {
    for _ in 0..MAX_PRUNED {
        let unknown = info.validate(object).into_iter().find(|e| e.message.starts_with("unknown field"));
        let Some(relative) = unknown.as_ref().and_then(|e| e.path.strip_prefix("spec.")) else { return };
        if !remove_path(object.spec_mut(), relative) {
            return; // a path we cannot follow: admission names it
        }
        warnings.push(format!("unknown field \"spec.{relative}\""));
    }
}

/// The fields of `value` that `schema` does not list, removed, each reported by its path from
/// `path` (`spec.env[0].vaule`), as the API server prunes what a structural schema does not
/// know. A schema that preserves unknown fields, has no `properties`, or combines subschemas
/// (`oneOf`, `anyOf`, `allOf`) is trusted as is: the kind's own decoding checks what is there.
fn prune_unknown(value: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else { return };
    let preserves = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserves || ["oneOf", "anyOf", "allOf"].iter().any(|k| schema.contains_key(*k)) {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_none() && additional.is_none() {
                return;
            }
            map.retain(|field, child| {
                let child_path = if path.is_empty() { field.clone() } else { format!("{path}.{field}") };
                match properties.and_then(|p| p.get(field)).or(additional) {
                    Some(child_schema) => {
                        prune_unknown(child, child_schema, &child_path, unknown);
                        true
                    }
                    None => {
                        unknown.push(format!("unknown field \"{child_path}\""));
                        false
                    }
                }
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_unknown(item, item_schema, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Remove the field at `path` (`a.b[2].c`, as serde_path_to_error writes it); whether it was there.
fn remove_path(value: &mut Value, path: &str) -> bool {
    let mut steps = Vec::new();
    for segment in path.split('.') {
        let mut parts = segment.split('[');
        steps.push(parts.next().unwrap_or_default().to_string());
        steps.extend(parts.map(|index| index.trim_end_matches(']').to_string()));
    }
    let Some(last) = steps.pop() else { return false };
    let mut here = value;
    for step in steps.iter().filter(|s| !s.is_empty()) {
        here = match here {
            Value::Object(map) => match map.get_mut(step) {
                Some(next) => next,
                None => return false,
            },
            Value::Array(items) => match step.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(next) => next,
                None => return false,
            },
            _ => return false,
        };
    }
    here.as_object_mut().and_then(|map| map.remove(&last)).is_some()
}

/// The object a request body describes, and the warnings about fields it ignored.
pub fn from_wire(body: Value, target: &Target, validation: FieldValidation) -> ApiResult<(Object, Vec<String>)> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    };
    check_type(&map, target.desc)?;
    let mut warnings = Vec::new();
    map.retain(|field, _| {
        let known = TOP_LEVEL.contains(&field.as_str());
        if !known {
            warnings.push(format!("unknown field \"{field}\""));
        }
        known
    });
    let meta = match map.remove("metadata") {
        Some(Value::Object(meta)) => meta,
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(ApiError::BadRequest("metadata must be an object".into())),
    };
    let meta = clean_metadata(meta, target, &mut warnings)?;
    map.insert("metadata".into(), Value::Object(meta));
    map.insert("kind".into(), Value::String(target.desc.kind.clone()));
    map.remove("apiVersion");
    for part in ["spec", "status"] {
        if map.get(part).is_some_and(Value::is_null) {
            map.remove(part);
        }
    }
    if let Some(schema) = target.info.and_then(KindInfo::schema) {
        for (part, part_schema) in [("spec", &schema.spec), ("status", &schema.status)] {
            if let Some(value) = map.get_mut(part) {
                prune_unknown(value, part_schema, part, &mut warnings);
            }
        }
    }
    let mut value = Value::Object(map);
    times::from_wire(&target.desc.kind, &mut value)?;
    if validation == FieldValidation::Strict && !warnings.is_empty() {
        return Err(ApiError::BadRequest(format!("strict decoding error: {}", warnings.join(", "))));
    }
    if validation == FieldValidation::Ignore {
        warnings.clear();
    }
    let mut object: Object = serde_json::from_value(value)
        .map_err(|e| ApiError::BadRequest(format!("the object could not be decoded: {e}")))?;
    if let Some(info) = target.info {
        let mut unknown = Vec::new();
        prune_unknown_spec_fields(&mut object, info, &mut unknown);
        if validation == FieldValidation::Strict && !unknown.is_empty() {
            return Err(ApiError::BadRequest(format!("strict decoding error: {}", unknown.join(", "))));
        }
        if validation == FieldValidation::Warn {
            warnings.extend(unknown);
        }
    }
    validate_metadata(&object, target.desc)?;
    Ok((object, warnings))
}

/// Label and annotation keys and label values, as the apiserver checks them (the store does not).
fn validate_metadata(object: &Object, desc: &KindDesc) -> ApiResult<()> {
    use super::selectors::{is_label_value, is_qualified_name};
    let meta = &object.metadata;
    let mut causes = Vec::new();
    for (key, value) in &meta.labels {
        if !is_qualified_name(key) {
            causes.push(FieldError::new("metadata.labels", format!("invalid label key {key:?}")));
        }
        if !is_label_value(value) {
            causes.push(FieldError::new("metadata.labels", format!("invalid label value {value:?} of {key:?}")));
        }
    }
    for key in meta.annotations.keys().filter(|k| !is_qualified_name(k)) {
        causes.push(FieldError::new("metadata.annotations", format!("invalid annotation key {key:?}")));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let list = causes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    Err(ApiError::Invalid {
        message: format!("{} \"{}\" is invalid: {list}", desc.plural, meta.name),
        subject: desc.subject(&meta.name),
        causes,
    })
}

fn check_type(map: &Map<String, Value>, desc: &KindDesc) -> ApiResult<()> {
    match map.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if *kind == desc.kind => {}
        Some(kind) => {
            return Err(ApiError::BadRequest(format!(
                "the body's kind {kind} does not match the URL's kind {:?}",
                desc.kind
            )));
        }
    }
    match map.get("apiVersion") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(v)) if *v == desc.group_version() => Ok(()),
        Some(v) => Err(ApiError::BadRequest(format!(
            "the body's apiVersion {v} does not match the URL's {:?}",
            desc.group_version()
        ))),
    }
}

fn clean_metadata(
    mut meta: Map<String, Value>,
    target: &Target,
    warnings: &mut Vec<String>,
) -> ApiResult<Map<String, Value>> {
    meta.retain(|_, v| !v.is_null());
    resolve_name(&mut meta, target)?;
    resolve_namespace(&mut meta, target)?;
    if let Some(rv) = meta.remove("resourceVersion") {
        meta.insert("resourceVersion".into(), Value::from(parse_resource_version_value(&rv)?));
    }
    if let Some(Value::Array(owners)) = meta.get_mut("ownerReferences") {
        for (i, owner) in owners.iter_mut().enumerate() {
            let Some(owner) = owner.as_object_mut() else { continue };
            owner.retain(|field, _| {
                let known = OWNER_FIELDS.contains(&field.as_str());
                if !known {
                    warnings.push(format!("unknown field \"metadata.ownerReferences[{i}].{field}\""));
                }
                known
            });
            owner.remove("apiVersion");
        }
    }
    let finalizers = meta.remove("finalizers");
    meta.retain(|field, _| {
        let kept = META_KEPT.contains(&field.as_str());
        if !kept && !META_DROPPED.contains(&field.as_str()) {
            warnings.push(format!("unknown field \"metadata.{field}\""));
        }
        kept
    });
    if let Some(finalizers) = finalizers {
        meta.insert("finalizers".into(), finalizers);
    }
    Ok(meta)
}

fn resolve_name(meta: &mut Map<String, Value>, target: &Target) -> ApiResult<()> {
    let name = match meta.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) | None => generated_name(meta).unwrap_or_default(),
        Some(_) => return Err(ApiError::BadRequest("metadata.name must be a string".into())),
    };
    if let Some(url_name) = target.name
        && url_name != name
    {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({name:?}) does not match the name on the URL ({url_name:?})"
        )));
    }
    meta.insert("name".into(), Value::String(name));
    Ok(())
}

fn generated_name(meta: &Map<String, Value>) -> Option<String> {
    let prefix = meta.get("generateName")?.as_str()?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.subsec_nanos();
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let mut seed = u64::from(nanos) ^ (prefix.len() as u64).rotate_left(17);
    let suffix: String = (0..5)
        .map(|_| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            char::from(alphabet[(seed >> 33) as usize % alphabet.len()])
        })
        .collect();
    Some(format!("{prefix}{suffix}"))
}

fn resolve_namespace(meta: &mut Map<String, Value>, target: &Target) -> ApiResult<()> {
    let body_ns = match meta.remove("namespace") {
        Some(Value::String(ns)) if !ns.is_empty() => Some(ns),
        Some(Value::String(_)) | None => None,
        Some(_) => return Err(ApiError::BadRequest("metadata.namespace must be a string".into())),
    };
    if !target.desc.namespaced {
        return Ok(()); // Kubernetes clears the namespace of cluster-scoped objects.
    }
    let Some(url_ns) = target.namespace else {
        return Err(ApiError::BadRequest(format!("{} is namespaced: use a namespaced URL", target.desc.plural)));
    };
    if body_ns.as_deref().is_some_and(|ns| ns != url_ns) {
        return Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request".into(),
        ));
    }
    meta.insert("namespace".into(), Value::String(url_ns.to_string()));
    Ok(())
}

/// A resourceVersion as clients send it: a decimal string (or a number); `""` is 0.
pub fn parse_resource_version(value: &str) -> ApiResult<u64> {
    if value.is_empty() {
        return Ok(0);
    }
    value.parse().map_err(|_| ApiError::BadRequest(format!("invalid resourceVersion {value:?}: not a number")))
}

fn parse_resource_version_value(value: &Value) -> ApiResult<u64> {
    match value {
        Value::String(s) => parse_resource_version(s),
        Value::Number(n) => n.as_u64().ok_or_else(|| ApiError::BadRequest(format!("invalid resourceVersion {n}"))),
        other => Err(ApiError::BadRequest(format!("invalid resourceVersion {other}"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::kinds;
    use serde_json::json;

    fn pc() -> KindDesc {
        kinds::by_plural(&Registry::builtin(), "drydock.dev/v1", "physicalcontainers").unwrap()
    }

    #[test]
    fn round_trip_keeps_what_the_store_keeps() {
        let desc = pc();
        let target = Target { desc: &desc, namespace: Some("ns"), name: None, info: None };
        let body = json!({"apiVersion": "drydock.dev/v1", "kind": "PhysicalContainer",
            "metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "y"}, "creationTimestamp": "2020-01-01T00:00:00Z",
                "managedFields": [], "bogus": 1},
            "spec": {"image": "busybox"}, "extra": true});
        let (object, warnings) = from_wire(body.clone(), &target, FieldValidation::Warn).unwrap();
        assert_eq!(object.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(object.metadata.resource_version, 7);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        let wire = to_wire(&object, &desc, &Registry::builtin());
        assert_eq!(wire["apiVersion"], "drydock.dev/v1");
        assert_eq!(wire["metadata"]["resourceVersion"], "7");
        assert!(from_wire(body, &target, FieldValidation::Strict).is_err());
    }

    #[test]
    fn mismatches_are_bad_requests() {
        let desc = pc();
        let target = Target { desc: &desc, namespace: Some("ns"), name: Some("a"), info: None };
        for body in [
            json!({"kind": "ContainerImage", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a"}}),
            json!({"metadata": {"name": "b"}}),
            json!({"metadata": {"name": "a", "namespace": "other"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "x"}}),
            json!([1]),
        ] {
            let error = from_wire(body.clone(), &target, FieldValidation::Warn).unwrap_err();
            assert_eq!(error.reason(), "BadRequest", "{body}");
        }
    }

    #[test]
    fn unknown_spec_fields_are_pruned_warned_or_refused_as_asked() {
        let registry = Registry::builtin();
        let desc = kinds::by_plural(&registry, "drydock.dev/v1", "logicalcontainers").unwrap();
        let target = Target { desc: &desc, namespace: Some("ns"), name: None, info: registry.get("LogicalContainer") };
        let body = json!({"metadata": {"name": "a"}, "spec": {"mode": "session", "image": "busybox",
            "imagee": "typo", "env": [{"name": "A", "value": "1", "vaule": "2"}]}});
        let (object, warnings) = from_wire(body.clone(), &target, FieldValidation::Warn).unwrap();
        assert_eq!(*object.spec, json!({"mode": "session", "image": "busybox", "env": [{"name": "A", "value": "1"}]}));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("spec.imagee")), "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("spec.env[0].vaule")), "{warnings:?}");
        let (object, warnings) = from_wire(body.clone(), &target, FieldValidation::Ignore).unwrap();
        assert_eq!((object.spec["image"].clone(), warnings.len()), (json!("busybox"), 0));
        let error = from_wire(body, &target, FieldValidation::Strict).unwrap_err();
        assert_eq!(error.reason(), "BadRequest");
        assert!(error.to_string().contains("spec.imagee"), "{error}");
        // A wrong type is not an unknown field: admission still refuses it.
        let wrong = json!({"metadata": {"name": "a"}, "spec": {"mode": "session", "image": 5}});
        let (object, _) = from_wire(wrong, &target, FieldValidation::Warn).unwrap();
        assert_eq!(object.spec["image"], 5);
    }

    #[test]
    fn unknown_status_and_owner_reference_fields_are_found_by_the_schema() {
        let registry = Registry::builtin();
        let desc = kinds::by_plural(&registry, "drydock.dev/v1", "logicalcontainers").unwrap();
        let target = Target { desc: &desc, namespace: Some("ns"), name: None, info: registry.get("LogicalContainer") };
        let body = json!({"metadata": {"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace",
                "name": "ns", "uid": "u1", "colour": "red"}]},
            "spec": {"image": "busybox", "ports": [{"containerPort": 80, "hostPrt": 8080}], "labels": {"any": "key"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime":
                "2026-01-01T00:00:00Z", "extra": 1}], "bogus": true}});
        let error = from_wire(body.clone(), &target, FieldValidation::Strict).unwrap_err();
        assert_eq!(error.reason(), "BadRequest");
        assert_eq!(
            error.to_string(),
            "strict decoding error: unknown field \"metadata.ownerReferences[0].colour\", \
             unknown field \"spec.ports[0].hostPrt\", unknown field \"status.bogus\", \
             unknown field \"status.conditions[0].extra\""
        );
        let (object, warnings) = from_wire(body.clone(), &target, FieldValidation::Warn).unwrap();
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert_eq!(object.spec["ports"], json!([{"containerPort": 80}]));
        assert_eq!(object.spec["labels"], json!({"any": "key"}), "a map's keys are not fields");
        assert_eq!(object.status.get("bogus"), None);
        assert_eq!(object.status["conditions"][0].get("extra"), None);
        assert_eq!(object.metadata.owner_references[0].uid.0, "u1");
        let (object, warnings) = from_wire(body, &target, FieldValidation::Ignore).unwrap();
        assert_eq!((warnings.len(), object.status.get("bogus")), (0, None));
    }

    #[test]
    fn a_kind_without_a_schema_keeps_what_its_spec_and_status_hold() {
        let registry = Registry::builtin();
        let info = KindInfo::untyped("Gadget", true);
        let desc = KindDesc { kind: "Gadget".into(), plural: "gadgets".into(), ..pc() };
        let target = Target { desc: &desc, namespace: Some("ns"), name: None, info: Some(&info) };
        let body = json!({"metadata": {"name": "a"}, "spec": {"anything": {"at": "all"}}, "status": {"free": 1}});
        let (object, warnings) = from_wire(body, &target, FieldValidation::Strict).unwrap();
        assert_eq!((object.spec["anything"]["at"].clone(), object.status["free"].clone()), (json!("all"), json!(1)));
        assert!(warnings.is_empty() && registry.get("Gadget").is_none());
    }

    #[test]
    fn paths_as_serde_writes_them_are_followed() {
        let mut value = json!({"a": {"b": [{"c": 1, "d": 2}]}, "e": 3});
        assert!(remove_path(&mut value, "a.b[0].c"));
        assert!(remove_path(&mut value, "e"));
        assert!(!remove_path(&mut value, "a.b[3].d"));
        assert!(!remove_path(&mut value, "x.y"));
        assert_eq!(value, json!({"a": {"b": [{"d": 2}]}}));
    }
}
