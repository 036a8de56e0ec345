//! Watches: `?watch=1` on a collection, as newline-delimited JSON events.
//!
//! *Guarantees*
//! - Each line is `{"type":"ADDED|MODIFIED|DELETED","object":...}` for the objects of the kind,
//!   namespace and selectors of the request, in the store's order, each with its own
//!   resourceVersion.
//! - `resourceVersion` absent, `""` or `"0"`: the current objects first, as `ADDED`, then every
//!   later change. Any other version: the changes after it.
//! - If that version is no longer in the store's log, a single `ERROR` event carrying a 410
//!   `Expired` `Status`, then the end of the stream, so the client relists.
//! - `allowWatchBookmarks=true`: a `BOOKMARK` (an object with only `metadata.resourceVersion`)
//!   when the store moved on with changes the watch filtered out, and after a quiet interval.
//! - `timeoutSeconds` ends the stream after that long; a dropped client ends it at once.
//!
//! *Caveats*: an object modified so that it no longer matches a label selector is sent as
//! `MODIFIED` (Kubernetes sends `DELETED`) only if it still matches; otherwise it just stops
//! appearing.

use super::AppState;
use super::negotiate::{self, Format};
use super::resource::{self, Query, ResourcePath};
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{ApiError, ApiResult};
use super::table::{self, IncludeObject};
use super::wire;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use drydock_engine::api::Object;
use drydock_engine::store::{EventType, StoreError, WatchEvent};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;

/// What a watch sends.
#[derive(Clone)]
struct Plan {
    state: AppState,
    path: ResourcePath,
    labels: LabelSelector,
    fields: FieldSelector,
    format: Format,
    include: IncludeObject,
    bookmarks: bool,
    timeout: Option<Duration>,
    /// `None`: start with the current objects.
    since: Option<u64>,
}

impl Plan {
    fn from_request(
        state: &AppState,
        path: &ResourcePath,
        query: &Query,
        headers: &axum::http::HeaderMap,
    ) -> ApiResult<Plan> {
        let since = match query.get("resourceVersion") {
            None | Some("" | "0") => None,
            Some(rv) => Some(wire::parse_resource_version(rv)?),
        };
        let timeout = match query.get("timeoutSeconds") {
            None | Some("") => None,
            Some(t) => Some(Duration::from_secs(
                t.parse().map_err(|_| ApiError::BadRequest(format!("invalid timeoutSeconds {t:?}")))?,
            )),
        };
        Ok(Plan {
            state: state.clone(),
            path: path.clone(),
            labels: LabelSelector::parse(query.get("labelSelector").unwrap_or(""))?,
            fields: FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))?,
            format: negotiate::accept(headers)?,
            include: IncludeObject::parse(query.get("includeObject"))?,
            bookmarks: query.flag("allowWatchBookmarks")?,
            timeout,
            since,
        })
    }

    fn matches(&self, object: &Object) -> bool {
        object.kind == self.path.desc.kind
            && (!self.path.desc.namespaced
                || self.path.namespace.is_none()
                || object.metadata.namespace == self.path.namespace)
            && self.labels.matches(&object.metadata.labels)
            && self.fields.matches(object)
    }

    fn render(&self, object: &Object, first: bool) -> Value {
        match self.format {
            Format::Table => {
                let row = resource::table_row(&self.state, &self.path.desc, object, self.include);
                table::table(&self.path.desc.kind, vec![row], object.metadata.resource_version, first)
            }
            format => resource::render_object(&self.state, &self.path.desc, object, format, self.include),
        }
    }

    fn bookmark(&self, revision: u64) -> Bytes {
        let object = json!({"kind": self.path.desc.kind, "apiVersion": self.path.desc.group_version(),
            "metadata": {"resourceVersion": revision.to_string()}});
        line("BOOKMARK", object)
    }
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut text = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    text.push(b'\n');
    Bytes::from(text)
}

fn event_type(event: EventType) -> &'static str {
    match event {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

/// Answer a watch request with a streaming body.
pub fn serve(
    state: &AppState,
    path: &ResourcePath,
    query: &Query,
    headers: &axum::http::HeaderMap,
) -> ApiResult<Response> {
    let plan = Plan::from_request(state, path, query, headers)?;
    let body = Body::from_stream(stream(plan));
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

fn stream(plan: Plan) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> {
    async_stream::stream! {
        let mut revisions = plan.state.store.subscribe();
        revisions.borrow_and_update();
        let deadline = plan.timeout.map(|t| tokio::time::Instant::now() + t);
        let mut first = true;
        let mut revision = match plan.since {
            Some(rv) => rv,
            None => {
                let (revision, objects) = plan.state.store.read(|s| (s.resource_version(), s.list(Some(&plan.path.desc.kind), None)));
                for object in objects.iter().filter(|o| plan.matches(o)) {
                    yield Ok(line("ADDED", plan.render(object, first)));
                    first = false;
                }
                revision
            }
        };
        loop {
            match next_events(&plan, revision) {
                Err(status) => {
                    yield Ok(line("ERROR", status));
                    break;
                }
                Ok((events, latest)) => {
                    let sent = !events.is_empty();
                    for event in &events {
                        yield Ok(line(event_type(event.event), plan.render(&event.object, first)));
                        first = false;
                    }
                    if plan.bookmarks && !sent && latest > revision {
                        yield Ok(plan.bookmark(latest));
                    }
                    revision = latest;
                }
            }
            match wait(&plan, &mut revisions, deadline).await {
                Wake::Changed => {}
                Wake::Quiet if plan.bookmarks => yield Ok(plan.bookmark(revision)),
                Wake::Quiet => {}
                Wake::End => break,
            }
        }
    }
}

/// The matching events after `revision`, and the revision they bring the watch to.
fn next_events(plan: &Plan, revision: u64) -> Result<(Vec<WatchEvent>, u64), Value> {
    plan.state.store.read(|s| match s.events_since(revision) {
        Ok(events) => {
            let mut latest = revision;
            let matching = events
                .inspect(|e| latest = latest.max(e.resource_version()))
                .filter(|e| plan.matches(&e.object))
                .cloned()
                .collect();
            Ok((matching, latest.max(revision)))
        }
        Err(error @ StoreError::Gone { .. }) => {
            Err(ApiError::from_store(error, plan.path.desc.subject("")).to_status())
        }
        Err(error) => Err(ApiError::from_store(error, plan.path.desc.subject("")).to_status()),
    })
}

enum Wake {
    Changed,
    Quiet,
    End,
}

async fn wait(
    plan: &Plan,
    revisions: &mut tokio::sync::watch::Receiver<u64>,
    deadline: Option<tokio::time::Instant>,
) -> Wake {
    let until_deadline = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        changed = revisions.changed() => match changed {
            Ok(()) => { revisions.borrow_and_update(); Wake::Changed }
            Err(_) => Wake::End,
        },
        () = until_deadline => Wake::End,
        () = tokio::time::sleep(plan.state.bookmark_interval) => Wake::Quiet,
    }
}
