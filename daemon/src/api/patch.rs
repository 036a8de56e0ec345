//! `PATCH`: JSON merge patch, JSON patch, strategic merge patch (lists merged by their merge keys,
//! with its `$`-directives: [`strategic`](super::strategic)) and server-side apply
//! (`application/apply-patch+yaml`: create if absent, else a merge patch).
//!
//! *Guarantees*: the patch is applied to the object as clients see it (its wire JSON), and the
//! result goes through the same decoding and admission as a `PUT`. A patch that sets
//! `metadata.resourceVersion` makes it a precondition (409 when stale); otherwise a conflict with a
//! concurrent writer is retried on a fresh read (a few times), like the apiserver does. A patch
//! document that does not parse, or a JSON patch whose operations fail (a `test` that does not
//! hold, a path that does not exist), is a 400 / 422 and changes nothing. A JSON patch is applied
//! operation by operation within [`limits`]' bounds: more than 10,000 operations, or an operation
//! that would nest the object more than 100 levels deep, is a 422; an operation that would take
//! the object past 1.5 MiB of JSON, or copies and moves of more than 3 MiB in all, a 413 before
//! it is made. Every patch's result is a 413 past 1.5 MiB too.
//!
//! *Caveats*: strategic merge patch knows the lists of the built-in kinds only
//! ([`list_types`](super::list_types)): a user's kind takes it too (the apiserver refuses it for
//! custom resources with 415), its lists replaced whole. A strategic merge patch that cannot be
//! applied (an item without its merge key, a bad directive) is a 400 whatever went wrong.

use super::limits::{self, PatchError};
use super::managed::{self, ApplyError};
use super::negotiate;
use super::resource::{self, Call};
use super::respond::json_with_warnings;
use super::status::{ApiError, ApiResult};
use super::strategic;
use super::table::IncludeObject;
use super::wire::{self, FieldValidation, Target};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use drydock_adapters::clock::wall_now;
use drydock_engine::api::Object;
use drydock_engine::store::{FieldError, StoreRequest};
use serde_json::Value;
use std::sync::Arc;

/// A parsed patch document.
#[derive(Clone, Debug)]
pub enum PatchDoc {
    Merge(Value),
    Json(json_patch::Patch),
    Strategic(Value),
    Apply(Value),
}

const ACCEPTED: &str = "application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml";

impl PatchDoc {
    /// Parse a body by its content type.
    pub fn parse(content_type: &str, body: &[u8]) -> ApiResult<Self> {
        match content_type {
            "application/merge-patch+json" => Ok(PatchDoc::Merge(negotiate::parse_json(body)?)),
            "application/strategic-merge-patch+json" => Ok(PatchDoc::Strategic(negotiate::parse_json(body)?)),
            "application/json-patch+json" => {
                let invalid = "the body is not a valid JSON patch";
                let value = limits::decode_json(body).map_err(|e| negotiate::decode_error(e, invalid))?;
                serde_json::from_value(value)
                    .map(PatchDoc::Json)
                    .map_err(|e| ApiError::BadRequest(format!("{invalid}: {e}")))
            }
            "application/apply-patch+yaml" => Ok(PatchDoc::Apply(negotiate::parse_yaml(body)?)),
            _ => Err(ApiError::UnsupportedMediaType { accepted: ACCEPTED.into() }),
        }
    }

    /// Whether the patch names a resourceVersion, which then is a precondition.
    fn sets_resource_version(&self) -> bool {
        match self {
            PatchDoc::Merge(v) | PatchDoc::Strategic(v) | PatchDoc::Apply(v) => {
                v.pointer("/metadata/resourceVersion").is_some_and(|v| !v.is_null())
            }
            PatchDoc::Json(p) => p.0.iter().any(|op| op_path(op).starts_with("/metadata/resourceVersion")),
        }
    }

    /// `doc`, an object of `kind` as clients see it, patched: a 413 if the result is more than
    /// [`limits::MAX_OBJECT_BYTES`] of JSON (a JSON patch stops at the first operation that
    /// would make it so).
    pub fn apply(&self, kind: &str, mut doc: Value) -> ApiResult<Value> {
        match self {
            PatchDoc::Merge(patch) | PatchDoc::Apply(patch) => json_patch::merge(&mut doc, patch),
            PatchDoc::Strategic(patch) => {
                doc = strategic::patched(kind, doc, patch)
                    .map_err(|e| ApiError::BadRequest(format!("the strategic merge patch could not be applied: {e}")))?
            }
            PatchDoc::Json(patch) => doc = limits::apply_json_patch(doc, &patch.0).map_err(json_patch_error)?,
        }
        limits::check_object_size(&doc).map_err(|e| ApiError::EntityTooLarge(e.to_string()))?;
        Ok(doc)
    }
}

/// A JSON patch refused or failed: 413 for what grows too large, 422 else.
fn json_patch_error(error: PatchError) -> ApiError {
    let message = match &error {
        PatchError::TooLarge { .. } | PatchError::CopiesTooMuch { .. } => {
            return ApiError::EntityTooLarge(error.to_string());
        }
        PatchError::Failed { .. } => format!("the JSON patch could not be applied: {error}"),
        PatchError::TooManyOperations { .. } | PatchError::TooDeep { .. } => error.to_string(),
    };
    ApiError::Invalid { message, subject: Default::default(), causes: Vec::new() }
}

fn op_path(op: &json_patch::PatchOperation) -> String {
    use json_patch::PatchOperation as Op;
    match op {
        Op::Add(o) => o.path.to_string(),
        Op::Remove(o) => o.path.to_string(),
        Op::Replace(o) => o.path.to_string(),
        Op::Move(o) => o.path.to_string(),
        Op::Copy(o) => o.path.to_string(),
        Op::Test(o) => o.path.to_string(),
    }
}

const RETRIES: usize = 5;

/// Serve a `PATCH` of `name` (of its status if `status`).
pub(super) async fn serve(call: &Call, name: &str, body: Body, status: bool) -> ApiResult<Response> {
    let validation = FieldValidation::parse(call.query.get("fieldValidation"))?;
    let format = negotiate::accept(&call.headers)?;
    let bytes = negotiate::read_body(body, call.state.options.max_body_bytes).await?;
    let doc = PatchDoc::parse(&negotiate::content_type(&call.headers), &bytes)?;
    let (stored, warnings, code) = patch_with_retries(call, name, &doc, validation, status)?;
    let body = resource::render_object(&call.state, &call.path.desc, &stored, format, IncludeObject::Metadata);
    Ok(json_with_warnings(code, &body, &warnings))
}

fn patch_with_retries(
    call: &Call,
    name: &str,
    doc: &PatchDoc,
    validation: FieldValidation,
    status: bool,
) -> ApiResult<(Arc<Object>, Vec<String>, StatusCode)> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match patch_once(call, name, doc, validation, status) {
            Err(ApiError::Conflict { .. }) if attempt < RETRIES && !doc.sets_resource_version() => continue,
            result => return result,
        }
    }
}

fn patch_once(
    call: &Call,
    name: &str,
    doc: &PatchDoc,
    validation: FieldValidation,
    status: bool,
) -> ApiResult<(Arc<Object>, Vec<String>, StatusCode)> {
    let (state, path) = (&call.state, &call.path);
    let info = state.store.read(|s| s.registry().get(&path.desc.kind).cloned());
    let target =
        Target { desc: &path.desc, namespace: path.namespace.as_deref(), name: Some(name), info: info.as_ref() };
    let force = call.query.flag("force")?;
    if force && !matches!(doc, PatchDoc::Apply(_)) {
        return Err(ApiError::BadRequest("force may be given only with an apply patch".into()));
    }
    let current = match (resource::fetch(state, path, name), doc) {
        (Err(ApiError::NotFound { .. }), PatchDoc::Apply(body)) if !status => {
            let (applied, warnings) = wire::from_wire(body.clone(), &target, validation)?;
            let object = server_side_apply(call, name, None, &applied, force)?;
            call.guard_finalizers(name, None, &object)?;
            let created = resource::execute(state, &path.desc, name, StoreRequest::Create { object }, call.dry_run)?;
            return Ok((created, warnings, StatusCode::CREATED));
        }
        (current, _) => current?,
    };
    if let (PatchDoc::Apply(body), false) = (doc, status) {
        let (applied, warnings) = wire::from_wire(body.clone(), &target, validation)?;
        let object = server_side_apply(call, name, Some(&current), &applied, force)?;
        return Ok((resource::write(call, name, object, status)?, warnings, StatusCode::OK));
    }
    let registry = state.store.read(|s| s.registry().clone());
    let mut wire_doc = wire::to_wire(&current, &path.desc, &registry);
    if let Some(meta) = wire_doc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let patched = doc.apply(&path.desc.kind, wire_doc).map_err(|e| match e {
        ApiError::Invalid { message, causes, .. } => {
            ApiError::Invalid { message, subject: path.desc.subject(name), causes }
        }
        other => other,
    })?;
    let (mut object, warnings) = wire::from_wire(patched, &target, validation)?;
    if !status {
        call.record_update(Some(&current), &mut object)?;
    }
    let stored = resource::write(call, name, object, status)?;
    Ok((stored, warnings, StatusCode::OK))
}

/// `applied` applied over `live` (`None`: to be created) by the request's field manager.
fn server_side_apply(
    call: &Call,
    name: &str,
    live: Option<&Object>,
    applied: &Object,
    force: bool,
) -> ApiResult<Object> {
    let manager_name = call.field_manager(true)?;
    let api_version = call.path.desc.group_version();
    let manager = managed::Manager { name: &manager_name, api_version: &api_version, now: wall_now() };
    managed::apply(&call.path.desc.kind, live, applied, &manager, force).map_err(|error| match error {
        ApplyError::Conflicts(conflicts) => ApiError::ApplyConflict {
            message: ApplyError::Conflicts(conflicts.clone()).to_string(),
            subject: call.path.desc.subject(name),
            fields: conflicts
                .iter()
                .map(|c| FieldError::new(&c.field, format!("conflict with \"{}\" using {}", c.manager, c.api_version)))
                .collect(),
        },
        ApplyError::Decode(message) => ApiError::BadRequest(message),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strategic(body: &[u8]) -> PatchDoc {
        PatchDoc::parse("application/strategic-merge-patch+json", body).unwrap()
    }

    #[test]
    fn strategic_merge_patch_merges_lists_by_key_and_drops_directives() {
        let doc = strategic(
            br#"{"metadata":{"labels":{"a":"b"},"$setElementOrder/finalizers":[]},"$patch":"merge",
                "spec":{"env":[{"name":"B","value":"3"},{"name":"A","$patch":"delete"}]}}"#,
        );
        let live = json!({"metadata": {"name": "x"},
            "spec": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], "command": ["a"]}});
        let out = doc.apply("LogicalContainer", live.clone()).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "x", "labels": {"a": "b"}},
                "spec": {"env": [{"name": "B", "value": "3"}], "command": ["a"]}})
        );
        // A user's kind has no keyed lists: the patch's list replaces the live one.
        let out = doc.apply("MyKind", live).unwrap();
        assert_eq!(out["spec"]["env"], json!([{"name": "B", "value": "3"}]));
        assert!(!doc.sets_resource_version());
        assert!(strategic(br#"{"metadata":{"resourceVersion":"3"}}"#).sets_resource_version());
    }

    #[test]
    fn strategic_merge_patch_failures_are_bad_requests() {
        let live = json!({"metadata": {"name": "x", "finalizers": ["a"]}, "spec": {"finalizers": ["kubernetes"]}});
        for body in [
            &br#"{"spec":{"env":[{"value":"no name"}]}}"#[..],
            br#"{"metadata":{"$patch":"unknown"}}"#,
            br#"{"$patch":"delete"}"#,
            br#"[1]"#,
        ] {
            let error = strategic(body).apply("LogicalContainer", live.clone()).unwrap_err();
            assert_eq!(error.code(), StatusCode::BAD_REQUEST, "{error}");
        }
        assert!(PatchDoc::parse("application/strategic-merge-patch+json", b"{").is_err());
        // A Namespace: `metadata.finalizers` is a set, `spec.finalizers` atomic.
        let doc = strategic(br#"{"metadata":{"finalizers":["b"]},"spec":{"finalizers":["x"]}}"#);
        let out = doc.apply("Namespace", live).unwrap();
        assert_eq!((&out["metadata"]["finalizers"], &out["spec"]["finalizers"]), (&json!(["b", "a"]), &json!(["x"])));
    }

    #[test]
    fn json_patch_failures_are_errors() {
        let doc = PatchDoc::parse("application/json-patch+json", br#"[{"op":"test","path":"/a","value":1}]"#).unwrap();
        assert!(doc.apply("PhysicalContainer", json!({"a": 2})).is_err());
        assert!(PatchDoc::parse("application/json-patch+json", br#"{"op":"add"}"#).is_err());
        assert!(PatchDoc::parse("text/plain", b"{}").is_err());
        let rv = PatchDoc::parse(
            "application/json-patch+json",
            br#"[{"op":"replace","path":"/metadata/resourceVersion","value":"3"}]"#,
        )
        .unwrap();
        assert!(rv.sets_resource_version());
    }
}
