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
//! - With selectors, an object that starts matching is `ADDED` and one that stops matching is
//!   `DELETED`, like Kubernetes.
//! - `sendInitialEvents=true`: the current objects, then a `BOOKMARK` annotated
//!   `k8s.io/initial-events-end: "true"`, then the changes (the streaming-list protocol).
//!
//! *Caveats*: a watch from a given version does not know which objects matched at that version:
//! until it sees an object again, a change that makes it stop matching is not sent, and one that
//! makes it match is sent as `MODIFIED`.

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
use drydock_engine::store::{EventType, WatchEvent};
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
    /// `sendInitialEvents=true`: end the initial events with an `initial-events-end` bookmark.
    initial_events_end: bool,
}

impl Plan {
    fn from_request(
        state: &AppState,
        path: &ResourcePath,
        query: &Query,
        headers: &axum::http::HeaderMap,
    ) -> ApiResult<Plan> {
        let initial_events_end = query.flag("sendInitialEvents")?;
        let since = match query.get("resourceVersion") {
            None | Some("" | "0") => None,
            Some(_) if initial_events_end => None,
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
            initial_events_end,
        })
    }

    fn matches(&self, object: &Object) -> bool {
        object.kind == self.path.desc.kind
            && (!self.path.desc.namespaced
                || self.path.namespace.is_none()
                || object.metadata.namespace.as_deref() == self.path.namespace.as_deref())
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

    fn initial_events_end(&self, revision: u64) -> Bytes {
        let object = json!({"kind": self.path.desc.kind, "apiVersion": self.path.desc.group_version(),
            "metadata": {"resourceVersion": revision.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"}}});
        line("BOOKMARK", object)
    }
}

/// Which objects (by uid) the watch last saw matching its selectors, so that an object that
/// starts matching is `ADDED` and one that stops matching is `DELETED`, like Kubernetes.
/// `complete`: the set started from the watch's own initial list, so an object missing from it
/// did not match before.
#[derive(Default)]
struct Matching {
    uids: std::collections::HashSet<String>,
    complete: bool,
}

impl Matching {
    /// The event type to send for `event`, if any.
    fn classify(&mut self, plan: &Plan, event: &WatchEvent) -> Option<&'static str> {
        let object = &event.object;
        if object.kind != plan.path.desc.kind {
            return None;
        }
        let uid = object.metadata.uid.0.clone();
        let was = self.uids.remove(&uid);
        let now = plan.matches(object);
        match event.event {
            EventType::Deleted => (was || (now && !self.complete)).then_some("DELETED"),
            _ if now => {
                self.uids.insert(uid);
                let newly = event.event == EventType::Added || (!was && self.complete);
                Some(if newly { "ADDED" } else { "MODIFIED" })
            }
            _ => was.then_some("DELETED"),
        }
    }
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut text = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    text.push(b'\n');
    Bytes::from(text)
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
        let deadline = plan.timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
        let mut first = true;
        let mut matching = Matching { complete: plan.since.is_none(), ..Matching::default() };
        let mut revision = match plan.since {
            Some(rv) => rv,
            None => {
                let (revision, objects) = plan.state.store.read(|s| (s.resource_version(), s.list(Some(&plan.path.desc.kind), None)));
                for object in objects.iter().filter(|o| plan.matches(o)) {
                    matching.uids.insert(object.metadata.uid.0.clone());
                    yield Ok(line("ADDED", plan.render(object, first)));
                    first = false;
                }
                if plan.initial_events_end {
                    yield Ok(plan.initial_events_end(revision));
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
                    let mut sent = false;
                    for event in &events {
                        if let Some(kind) = matching.classify(&plan, event) {
                            yield Ok(line(kind, plan.render(&event.object, first)));
                            (first, sent) = (false, true);
                        }
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

/// The events of the watch's kind after `revision`, and the revision they bring the watch to.
fn next_events(plan: &Plan, revision: u64) -> Result<(Vec<WatchEvent>, u64), Value> {
    plan.state.store.read(|s| match s.events_since(revision) {
        Ok(events) => {
            let mut latest = revision;
            let of_kind = events
                .inspect(|e| latest = latest.max(e.resource_version()))
                .filter(|e| e.object.kind == plan.path.desc.kind)
                .cloned()
                .collect();
            Ok((of_kind, latest))
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
