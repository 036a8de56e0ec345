//! The handlers of `/api/v1/...` and `/apis/{group}/{version}/...`: get, list, watch, create,
//! update, patch, delete and the `status` subresource.
//!
//! *Guarantees*
//! - Paths resolve against the store's registry: an unknown group, version, plural or
//!   subresource is a 404 `Status`; a method a path does not serve is a 405.
//! - Writes go through the store only after the body was read (within the size limit), parsed
//!   and checked against the URL, so a refused request changes nothing.
//! - `PUT` without a resourceVersion is unconditional (like Kubernetes); with one, a stale one is
//!   a 409 Conflict.
//! - Lists carry the store's revision as `metadata.resourceVersion`.
//! - A create carrying the `drydock.dev/request-id` annotation is idempotent: repeated, it is
//!   answered `200 OK` with the object the first copy made (see
//!   [`REQUEST_ID_ANNOTATION`](super::REQUEST_ID_ANNOTATION)).
//!
//! - `?dryRun=All` on any write (or `dryRun: [All]` in a delete's options): the request is
//!   checked and answered exactly as it would be, and nothing changes.
//! - Lists page with `limit` and `continue` (see [`paging`](super::paging)).
//! - `DELETE` on a collection deletes what its selectors match, each as its own `DELETE`.
//!
//! *Caveats*: a list's `resourceVersion` parameter is checked but not honoured: every first page
//! is the current state.

use super::kinds::KindDesc;
use super::limits;
use super::managed;
use super::negotiate::{self, Format};
use super::respond::{json_response, json_with_warnings};
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{ApiError, ApiResult};
use super::system_finalizers;
use super::table::{self, Context, IncludeObject};
use super::wire::{self, FieldValidation, Target};
use super::{AppState, REQUEST_ID_ANNOTATION};
use axum::body::Body;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use drydock_adapters::clock::wall_now;
use drydock_engine::api::{Object, ObjectKey, Uid};
use drydock_engine::store::{DeleteOptions, Propagation, StoreReply, StoreRequest};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// Where a request goes.
#[derive(Clone, Debug)]
pub struct ResourcePath {
    pub desc: KindDesc,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl ResourcePath {
    pub fn key(&self, name: &str) -> ObjectKey {
        let namespace = if self.desc.namespaced { self.namespace.as_deref() } else { None };
        ObjectKey::new(&self.desc.kind, namespace, name)
    }
}

/// The query string, decoded.
#[derive(Clone, Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        Query(form_urlencoded::parse(raw.unwrap_or("").as_bytes()).into_owned().collect())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn flag(&self, name: &str) -> ApiResult<bool> {
        match self.get(name) {
            None | Some("" | "0" | "false" | "False") => Ok(false),
            Some("1" | "true" | "True") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!("{name} must be true or false, not {other:?}"))),
        }
    }
}

/// Everything a handler needs about one request.
pub(super) struct Call {
    pub(super) state: AppState,
    pub(super) path: ResourcePath,
    pub(super) query: Query,
    pub(super) headers: HeaderMap,
    /// `?dryRun=All`: writes are checked and answered, not made.
    pub(super) dry_run: bool,
}

impl Call {
    /// The field manager of this write (see [`managed::field_manager`]): a 400 if it is invalid,
    /// or missing from an apply.
    pub(super) fn field_manager(&self, applying: bool) -> ApiResult<String> {
        let agent = self.headers.get(axum::http::header::USER_AGENT).and_then(|v| v.to_str().ok());
        managed::field_manager(self.query.get("fieldManager"), agent, applying).map_err(ApiError::BadRequest)
    }

    /// Refuse a write of `new` over `old` (`None`: a create) of `name` that adds or removes one
    /// of drydock's own finalizers (see [`system_finalizers`]).
    pub(super) fn guard_finalizers(&self, name: &str, old: Option<&Object>, new: &Object) -> ApiResult<()> {
        let found = self.state.store.read(|s| system_finalizers::changes(s.registry().get(&new.kind), old, new));
        if found.is_empty() {
            return Ok(());
        }
        Err(system_finalizers::refusal(&self.path.desc, self.path.namespace.as_deref(), name, &found))
    }

    /// Record this write's changes from `old` (`None`: a create) in `new`'s managed fields.
    pub(super) fn record_update(&self, old: Option<&Object>, new: &mut Object) -> ApiResult<()> {
        let name = self.field_manager(false)?;
        let api_version = self.path.desc.group_version();
        let manager = managed::Manager { name: &name, api_version: &api_version, now: wall_now() };
        managed::record_update(&self.path.desc.kind, old, new, &manager);
        Ok(())
    }
}

/// `?dryRun=`: `All` (Kubernetes' only value) or nothing.
pub fn dry_run(query: &Query) -> ApiResult<bool> {
    match query.get("dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!("invalid dryRun value {other:?}: the only value is All"))),
    }
}

/// Resolve `/api/v1/...` or `/apis/{g}/{v}/...`.
pub fn resolve(path: &str, kinds_of: impl Fn(&str) -> Vec<KindDesc>) -> ApiResult<ResourcePath> {
    let not_found = || ApiError::not_found(super::status::Subject::default());
    let trimmed = path.strip_prefix('/').unwrap_or(path);
    let segments: Vec<&str> = trimmed.strip_suffix('/').unwrap_or(trimmed).split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(not_found());
    }
    let (group_version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => (version.to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("{group}/{version}"), rest),
        _ => return Err(not_found()),
    };
    let kinds = kinds_of(&group_version);
    let find = |plural: &str| kinds.iter().find(|k| k.plural == plural).cloned();
    let (desc, namespace, rest) = match rest {
        ["namespaces", ns, plural, rest @ ..] if find(plural).is_some_and(|k| k.namespaced) => {
            (find(plural).ok_or_else(not_found)?, Some(ns.to_string()), rest)
        }
        [plural, rest @ ..] => (find(plural).ok_or_else(not_found)?, None, rest),
        [] => return Err(not_found()),
    };
    let (name, subresource) = match rest {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, "status"] if desc.has_status => (Some(name.to_string()), Some("status".to_string())),
        [name, "log"] => (Some(name.to_string()), Some("log".to_string())),
        _ => return Err(not_found()),
    };
    if name.as_deref() == Some("") {
        return Err(not_found());
    }
    Ok(ResourcePath { desc, namespace, name, subresource })
}

fn include_object(query: &Query) -> ApiResult<IncludeObject> {
    IncludeObject::parse(query.get("includeObject"))
}

pub(super) fn list(call: &Call) -> ApiResult<Response> {
    let format = negotiate::accept(&call.headers)?;
    let include = include_object(&call.query)?;
    let limit = list_limit(&call.query)?;
    if let Some(rv) = call.query.get("resourceVersion") {
        wire::parse_resource_version(rv)?; // lists are always current: any valid version is served
    }
    let identity = list_identity(call);
    let (ttl, snapshots) = (call.state.options.continue_ttl, &call.state.snapshots);
    let page = match call.query.get("continue").filter(|t| !t.is_empty()) {
        Some(token) => snapshots.next(token, &identity, limit, Instant::now(), ttl)?,
        None => {
            let (revision, objects) = matching(call)?;
            snapshots.first(identity, revision, objects, limit, Instant::now(), ttl)
        }
    };
    let mut body = render_list(&call.state, &call.path.desc, &page.items, page.revision, format, include);
    if let (Some(next), Some(meta)) = (page.next, body.get_mut("metadata").and_then(Value::as_object_mut)) {
        meta.insert("continue".into(), Value::String(next));
        meta.insert("remainingItemCount".into(), Value::from(page.remaining));
    }
    Ok(json_response(StatusCode::OK, &body))
}

/// `?limit=`: the most items a page may hold; absent or 0, all of them.
fn list_limit(query: &Query) -> ApiResult<usize> {
    match query.get("limit").filter(|l| !l.is_empty()) {
        None => Ok(usize::MAX),
        Some(limit) => match limit.parse::<u64>() {
            Ok(0) => Ok(usize::MAX),
            Ok(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            Err(_) => Err(ApiError::BadRequest(format!("invalid limit {limit:?}: a number of items"))),
        },
    }
}

/// Which list a request asks for: a continue token is good only for the list it was given for.
fn list_identity(call: &Call) -> String {
    let q = |name| call.query.get(name).unwrap_or("");
    let namespace = call.path.namespace.as_deref().filter(|_| call.path.desc.namespaced).unwrap_or("");
    format!("{}\n{namespace}\n{}\n{}", call.path.desc.kind, q("labelSelector"), q("fieldSelector"))
}

/// The store's revision and the objects of the request's kind, namespace and selectors.
fn matching(call: &Call) -> ApiResult<(u64, Vec<Arc<Object>>)> {
    let labels = LabelSelector::parse(call.query.get("labelSelector").unwrap_or(""))?;
    let fields = FieldSelector::parse(call.query.get("fieldSelector").unwrap_or(""))?;
    let desc = &call.path.desc;
    let namespace = call.path.namespace.as_deref().filter(|_| desc.namespaced);
    let (revision, objects) = call.state.store.read(|s| (s.resource_version(), s.list(Some(&desc.kind), namespace)));
    let objects = objects.into_iter().filter(|o| labels.matches(&o.metadata.labels) && fields.matches(o)).collect();
    Ok((revision, objects))
}

/// `DELETE` of a collection: each object of the kind, namespace and selectors deleted as a
/// `DELETE` of it would be (the same options, dry run too), answered with the list of what was
/// deleted or marked. An object that went away meanwhile is left out; any other refusal stops
/// the request with its error (the objects deleted before it stay deleted, as in Kubernetes).
pub(super) async fn delete_collection(call: &Call, body: Body) -> ApiResult<Response> {
    let bytes = negotiate::read_body(body, call.state.options.max_body_bytes).await?;
    let (options, dry_run) = delete_options(call, &bytes)?;
    let (_, objects) = matching(call)?;
    let mut deleted = Vec::with_capacity(objects.len());
    for object in objects {
        let key = object.key();
        let request = StoreRequest::Delete { key, options: options.clone() };
        match execute(&call.state, &call.path.desc, &object.metadata.name, request, dry_run) {
            Ok(gone) => deleted.push(gone),
            Err(ApiError::NotFound { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    let revision = call.state.store.read(|s| s.resource_version());
    let body = render_list(&call.state, &call.path.desc, &deleted, revision, Format::Json, IncludeObject::Metadata);
    Ok(json_response(StatusCode::OK, &body))
}

/// A list in the asked form.
pub fn render_list(
    state: &AppState,
    desc: &KindDesc,
    objects: &[Arc<Object>],
    revision: u64,
    format: Format,
    include: IncludeObject,
) -> Value {
    let registry = state.store.read(|s| s.registry().clone());
    let wires = objects.iter().map(|o| wire::to_wire(o, desc, &registry));
    match format {
        Format::Json => json!({"kind": format!("{}List", desc.kind), "apiVersion": desc.group_version(),
            "metadata": {"resourceVersion": revision.to_string()}, "items": wires.collect::<Vec<_>>()}),
        Format::Metadata => json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": revision.to_string()},
            "items": wires.map(|w| partial_metadata(&w)).collect::<Vec<_>>()}),
        Format::Table => {
            let rows = objects.iter().map(|o| table_row(state, desc, o, include)).collect();
            table::table(&desc.kind, rows, revision, true)
        }
    }
}

/// One object as a table row.
pub fn table_row(state: &AppState, desc: &KindDesc, object: &Object, include: IncludeObject) -> Value {
    let registry = state.store.read(|s| s.registry().clone());
    let engine_json = serde_json::to_value(object).unwrap_or(Value::Null);
    let wire = wire::to_wire(object, desc, &registry);
    let name_of_uid =
        |uid: &str| state.store.read(|s| s.get_by_uid(&Uid(uid.to_string())).map(|o| o.metadata.name.to_string()));
    let ctx = Context { now: drydock_adapters::clock::wall_now(), name_of_uid: &name_of_uid };
    table::row(&desc.kind, &engine_json, &wire, include, &ctx)
}

pub fn partial_metadata(wire: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": wire.get("metadata").cloned().unwrap_or(Value::Null)})
}

/// One object in the asked form.
pub fn render_object(
    state: &AppState,
    desc: &KindDesc,
    object: &Object,
    format: Format,
    include: IncludeObject,
) -> Value {
    let registry = state.store.read(|s| s.registry().clone());
    let wire = wire::to_wire(object, desc, &registry);
    match format {
        Format::Json => wire,
        Format::Metadata => partial_metadata(&wire),
        Format::Table => {
            let row = table_row(state, desc, object, include);
            table::table(&desc.kind, vec![row], object.metadata.resource_version, true)
        }
    }
}

pub(super) fn get(call: &Call, name: &str) -> ApiResult<Response> {
    let format = negotiate::accept(&call.headers)?;
    let include = include_object(&call.query)?;
    let object = fetch(&call.state, &call.path, name)?;
    Ok(json_response(StatusCode::OK, &render_object(&call.state, &call.path.desc, &object, format, include)))
}

/// The stored object, or 404.
pub fn fetch(state: &AppState, path: &ResourcePath, name: &str) -> ApiResult<Arc<Object>> {
    if path.desc.namespaced && path.namespace.is_none() {
        return Err(ApiError::not_found(path.desc.subject(name)));
    }
    state.store.get(&path.key(name)).ok_or_else(|| ApiError::not_found(path.desc.subject(name)))
}

/// Run a write and return the stored object; with `dry_run`, the object it would store.
pub fn execute(
    state: &AppState,
    desc: &KindDesc,
    name: &str,
    request: StoreRequest,
    dry_run: bool,
) -> ApiResult<Arc<Object>> {
    check_stored_size(state, &request)?;
    let reply = if dry_run { state.store.dry_run(request) } else { state.store.execute(request) };
    match reply {
        Ok(StoreReply::Object(object)) => Ok(object),
        Ok(StoreReply::Objects(_)) => Err(ApiError::Internal("the store answered a write with a list".into())),
        Err(error) => Err(ApiError::from_store(error, desc.subject(name))),
    }
}

/// Refuse a create or an update whose stored object would be more than
/// [`limits::MAX_OBJECT_BYTES`] of JSON (what the store keeps): a 413, before the store sees it.
/// A status update is measured as the current object with the new status (what the store keeps).
fn check_stored_size(state: &AppState, request: &StoreRequest) -> ApiResult<()> {
    let size = match request {
        StoreRequest::Create { object } | StoreRequest::Update { object } => limits::json_len(object),
        StoreRequest::UpdateStatus { object } => match state.store.get(&object.key()) {
            Some(current) => (limits::json_len(&*current).saturating_sub(limits::json_len(&current.status)))
                .saturating_add(limits::json_len(&object.status)),
            None => return Ok(()), // the store answers NotFound
        },
        StoreRequest::Get { .. } | StoreRequest::List { .. } | StoreRequest::Delete { .. } => return Ok(()),
    };
    match size {
        size if size > limits::MAX_OBJECT_BYTES => {
            Err(ApiError::EntityTooLarge(limits::ObjectTooLarge { size }.to_string()))
        }
        _ => Ok(()),
    }
}

/// The request's kind as the store admits it.
fn kind_info(call: &Call) -> Option<drydock_engine::store::KindInfo> {
    call.state.store.read(|s| s.registry().get(&call.path.desc.kind).cloned())
}

fn validation(query: &Query) -> ApiResult<FieldValidation> {
    FieldValidation::parse(query.get("fieldValidation"))
}

pub(super) async fn create(call: &Call, body: Body) -> ApiResult<Response> {
    let validation = validation(&call.query)?;
    let format = negotiate::accept(&call.headers)?;
    let bytes = negotiate::read_body(body, call.state.options.max_body_bytes).await?;
    let value = negotiate::parse_object_body(&call.headers, &bytes)?;
    let info = kind_info(call);
    let target =
        Target { desc: &call.path.desc, namespace: call.path.namespace.as_deref(), name: None, info: info.as_ref() };
    let (mut object, warnings) = wire::from_wire(value, &target, validation)?;
    call.record_update(None, &mut object)?;
    let name = object.metadata.name.clone();
    call.guard_finalizers(&name, None, &object)?;
    let (code, created) = create_once(call, &name, object)?;
    let body = render_object(&call.state, &call.path.desc, &created, format, IncludeObject::Metadata);
    Ok(json_with_warnings(code, &body, &warnings))
}

/// Create `object`, or, if it carries a [`REQUEST_ID_ANNOTATION`] that an object of its kind and
/// namespace already carries, answer that object with `200 OK` (a retried create whose first
/// reply was lost). Otherwise `201 Created`.
///
/// *Guarantees*: the look-up and the create happen under the API's create lock, so two copies of
/// one create (the original delayed, the retry on time) create one object. Writes that do not
/// go through the API (the engine's) never carry a client's request id.
fn create_once(call: &Call, name: &str, object: Object) -> ApiResult<(StatusCode, Arc<Object>)> {
    let (state, desc) = (&call.state, &call.path.desc);
    let create = |object| execute(state, desc, name, StoreRequest::Create { object }, call.dry_run);
    let Some(request_id) = object.metadata.annotations.get(REQUEST_ID_ANNOTATION).cloned() else {
        return Ok((StatusCode::CREATED, create(object)?));
    };
    let _held = state.create_lock.lock();
    let namespace = object.metadata.namespace.clone();
    let earlier = state.store.read(|s| {
        s.list(Some(&object.kind), namespace.as_deref())
            .into_iter()
            .find(|o| o.metadata.annotations.get(REQUEST_ID_ANNOTATION) == Some(&request_id))
    });
    if let Some(earlier) = earlier {
        tracing::debug!(request_id, name = %earlier.metadata.name, "a repeated create: answering the object it made");
        return Ok((StatusCode::OK, earlier));
    }
    Ok((StatusCode::CREATED, create(object)?))
}

pub(super) async fn update(call: &Call, name: &str, body: Body, status: bool) -> ApiResult<Response> {
    let validation = validation(&call.query)?;
    let format = negotiate::accept(&call.headers)?;
    let bytes = negotiate::read_body(body, call.state.options.max_body_bytes).await?;
    let value = negotiate::parse_object_body(&call.headers, &bytes)?;
    let info = kind_info(call);
    let target = Target {
        desc: &call.path.desc,
        namespace: call.path.namespace.as_deref(),
        name: Some(name),
        info: info.as_ref(),
    };
    let (mut object, warnings) = wire::from_wire(value, &target, validation)?;
    if !status {
        call.record_update(Some(&*fetch(&call.state, &call.path, name)?), &mut object)?;
    }
    let stored = write(call, name, object, status)?;
    let body = render_object(&call.state, &call.path.desc, &stored, format, IncludeObject::Metadata);
    Ok(json_with_warnings(StatusCode::OK, &body, &warnings))
}

/// Update spec/metadata or status. A resourceVersion of 0 (none sent) means "the current one".
///
/// *Guarantees*: a spec/metadata write that changes drydock's finalizers is refused (422), but
/// only when it is made over the stored version: a stale write is left to the store's 409
/// Conflict, which tells the client to read again, rather than a 422 about a change it did not
/// make. A status write cannot change finalizers.
pub(super) fn write(call: &Call, name: &str, mut object: Object, status: bool) -> ApiResult<Arc<Object>> {
    if object.metadata.resource_version == 0 || !status {
        let current = fetch(&call.state, &call.path, name)?;
        if object.metadata.resource_version == 0 {
            object.metadata.resource_version = current.metadata.resource_version;
        }
        if !status && object.metadata.resource_version == current.metadata.resource_version {
            call.guard_finalizers(name, Some(&current), &object)?;
        }
    }
    let request = if status { StoreRequest::UpdateStatus { object } } else { StoreRequest::Update { object } };
    execute(&call.state, &call.path.desc, name, request, call.dry_run)
}

pub(super) async fn delete(call: &Call, name: &str, body: Body) -> ApiResult<Response> {
    let bytes = negotiate::read_body(body, call.state.options.max_body_bytes).await?;
    let (options, dry_run) = delete_options(call, &bytes)?;
    if call.path.desc.namespaced && call.path.namespace.is_none() {
        return Err(ApiError::not_found(call.path.desc.subject(name)));
    }
    let request = StoreRequest::Delete { key: call.path.key(name), options };
    let deleted = execute(&call.state, &call.path.desc, name, request, dry_run)?;
    Ok(json_response(
        StatusCode::OK,
        &render_object(&call.state, &call.path.desc, &deleted, Format::Json, IncludeObject::Metadata),
    ))
}

/// The options of a delete, from its query and its body (a `DeleteOptions`), and whether it is a
/// dry run (either may say so).
fn delete_options(call: &Call, body: &[u8]) -> ApiResult<(DeleteOptions, bool)> {
    let options = delete_options_from_query(&call.query)?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((options, call.dry_run));
    }
    let value = match negotiate::content_type(&call.headers).as_str() {
        "application/yaml" => negotiate::parse_yaml(body)?,
        "application/json" | "" => negotiate::parse_json(body)?,
        _ => return Err(ApiError::UnsupportedMediaType { accepted: "application/json, application/yaml".into() }),
    };
    let body_dry_run = match value.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Array(values)) if values.iter().all(|v| v == "All") => !values.is_empty(),
        Some(other) => {
            return Err(ApiError::BadRequest(format!("invalid dryRun {other}: the only value is [\"All\"]")));
        }
    };
    Ok((delete_options_from_body(&value, options)?, call.dry_run || body_dry_run))
}

fn propagation(value: &str) -> ApiResult<Propagation> {
    match value {
        "Background" => Ok(Propagation::Background),
        "Foreground" => Ok(Propagation::Foreground),
        "Orphan" => Ok(Propagation::Orphan),
        other => Err(ApiError::BadRequest(format!(
            "propagationPolicy must be Background, Foreground or Orphan, not {other:?}"
        ))),
    }
}

fn delete_options_from_query(query: &Query) -> ApiResult<DeleteOptions> {
    let mut options = DeleteOptions::default();
    if let Some(policy) = query.get("propagationPolicy") {
        options.propagation = propagation(policy)?;
    }
    if query.flag("orphanDependents")? {
        options.propagation = Propagation::Orphan;
    }
    if let Some(grace) = query.get("gracePeriodSeconds") {
        grace.parse::<i64>().map_err(|_| ApiError::BadRequest(format!("invalid gracePeriodSeconds {grace:?}")))?;
    }
    Ok(options)
}

fn delete_options_from_body(value: &Value, mut options: DeleteOptions) -> ApiResult<DeleteOptions> {
    let Value::Object(map) = value else {
        return Err(ApiError::BadRequest("DeleteOptions must be a JSON object".into()));
    };
    if let Some(kind) = map.get("kind").filter(|k| !k.is_null())
        && kind != "DeleteOptions"
    {
        return Err(ApiError::BadRequest(format!("expected kind DeleteOptions, not {kind}")));
    }
    match map.get("propagationPolicy") {
        None | Some(Value::Null) => {}
        Some(Value::String(policy)) => options.propagation = propagation(policy)?,
        Some(other) => return Err(ApiError::BadRequest(format!("invalid propagationPolicy {other}"))),
    }
    if map.get("orphanDependents") == Some(&Value::Bool(true)) {
        options.propagation = Propagation::Orphan;
    }
    match map.get("preconditions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(pre)) => {
            if let Some(uid) = pre.get("uid").and_then(Value::as_str) {
                options.precondition_uid = Some(Uid(uid.to_string()));
            }
            match pre.get("resourceVersion") {
                None | Some(Value::Null) => {}
                Some(Value::String(rv)) => {
                    options.precondition_resource_version = Some(wire::parse_resource_version(rv)?)
                }
                Some(other) => {
                    return Err(ApiError::BadRequest(format!("invalid preconditions.resourceVersion {other}")));
                }
            }
        }
        Some(other) => return Err(ApiError::BadRequest(format!("invalid preconditions {other}"))),
    }
    Ok(options)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::api::kinds;
    use drydock_engine::store::Registry;

    fn kinds_of(gv: &str) -> Vec<KindDesc> {
        kinds::in_group_version(&Registry::builtin(), gv)
    }

    #[test]
    fn paths_resolve() {
        let p = resolve("/apis/drydock.dev/v1/namespaces/n/physicalcontainers/a/status", kinds_of).unwrap();
        assert_eq!(
            (p.desc.kind.as_str(), p.namespace.as_deref(), p.name.as_deref()),
            ("PhysicalContainer", Some("n"), Some("a"))
        );
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let p = resolve("/api/v1/namespaces/n/status", kinds_of).unwrap();
        assert_eq!(
            (p.desc.kind.as_str(), p.name.as_deref(), p.subresource.as_deref()),
            ("Namespace", Some("n"), Some("status"))
        );
        let p = resolve("/apis/drydock.dev/v1/physicalcontainers", kinds_of).unwrap();
        assert_eq!(p.namespace, None);
        for bad in [
            "/api/v2/namespaces",
            "/apis/drydock.dev/v1/pods",
            "/apis/drydock.dev/v1/leases/a/status",
            "/x",
            "/apis/drydock.dev/v1/namespaces/n/physicalcontainers/a/b/c",
        ] {
            assert!(resolve(bad, kinds_of).is_err(), "{bad}");
        }
    }

    #[test]
    fn delete_options_parse() {
        let o = delete_options_from_body(
            &json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
                "preconditions": {"uid": "u", "resourceVersion": "4"}}),
            DeleteOptions::default(),
        )
        .unwrap();
        assert_eq!((o.propagation, o.precondition_resource_version), (Propagation::Foreground, Some(4)));
        assert!(delete_options_from_body(&json!({"propagationPolicy": "Sideways"}), DeleteOptions::default()).is_err());
    }
}
