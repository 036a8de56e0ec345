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
//! - The server's shutdown ([`super::ApiOptions::stopping`]) ends the stream at once, cleanly, as
//!   `timeoutSeconds` does: the client sees the end of the watch, not a broken connection.
//!
//! - With selectors, an object that starts matching is `ADDED` and one that stops matching is
//!   `DELETED`, like Kubernetes, from any version: a watch from a version first works out which
//!   objects matched at that version (`matched_at`), so the first change of each object after
//!   it is sent exactly as Kubernetes' watch cache would send it.
//! - `sendInitialEvents=true`: the current objects, then a `BOOKMARK` annotated
//!   `k8s.io/initial-events-end: "true"`, then the changes (the streaming-list protocol).
//!
//! *Caveats*: Kubernetes keeps each event's previous object; the store's log keeps only the new
//! one, so a watch with a label selector from a version finds the state at that version of each
//! object changed since in the log, before the version. If the log no longer holds it (the
//! object's last change before the version was compacted away), the watch cannot be exact and
//! answers as for an expired version (the 410 `Expired` event, then the end), though the version
//! itself is still in the log: the client relists, as with Kubernetes when it cannot serve a
//! version. Without a label selector this never happens: the kind, the namespace and the field
//! selectors (on name and namespace) never change for an object. Starting such a watch reads the
//! log, under the store's lock, back from the version to about the oldest of those last changes.

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
use drydock_engine::store::{EventType, Store, WatchEvent};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
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

    /// Whether [`Plan::matches`] answers the same for every version of an object: no label
    /// selector. The kind, the namespace, and the fields a field selector may name (name and
    /// namespace) never change for an object.
    fn stable(&self) -> bool {
        self.labels == LabelSelector::default()
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

/// Which objects (by uid) match the watch's selectors as of the last event it handled, so that
/// an object that starts matching is `ADDED` and one that stops matching is `DELETED`, like
/// Kubernetes. Complete from the start: the watch's own initial list, or the objects that
/// matched at the version it starts from ([`matched_at`]).
#[derive(Default)]
struct Matching {
    uids: BTreeSet<String>,
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
        match event.event {
            EventType::Deleted => was.then_some("DELETED"),
            _ if plan.matches(object) => {
                self.uids.insert(uid);
                Some(if was { "MODIFIED" } else { "ADDED" })
            }
            _ => was.then_some("DELETED"),
        }
    }
}

/// The uids of the objects of `kind` that matched `matches` at revision `since`, from what the
/// store holds after it: `after`, the log's events after `since`, oldest first; `current`, the
/// objects now; `before`, the log's events at or before `since`, newest first.
///
/// An object with no event after `since` was then as it is now; one whose first event after it
/// is `Added` did not exist; any other was as its last event at or before `since` left it. That
/// last event is searched for in one pass over `before`, for all such objects at once, and
/// `before` is read no further than the oldest of them. `stable`: `matches` answers the same
/// for every version of an object, so its first event after `since` answers for it and
/// `before` is not read at all.
///
/// `Err(uid)`: `before` ends before the last event of that object, which was compacted away.
fn matched_at<'a, 'b, 'c>(
    kind: &str,
    after: impl IntoIterator<Item = &'a WatchEvent>,
    current: impl IntoIterator<Item = &'c Object>,
    before: impl IntoIterator<Item = &'b WatchEvent>,
    matches: impl Fn(&Object) -> bool,
    stable: bool,
) -> Result<BTreeSet<String>, String> {
    let first = first_events(kind, after);
    let unchanged = current.into_iter().filter(|o| o.kind == kind && !first.contains_key(uid(o)));
    let mut uids: BTreeSet<String> = unchanged.filter(|o| matches(o)).map(|o| uid(o).to_string()).collect();
    let mut needed = BTreeSet::new();
    for (&id, event) in &first {
        match event.event {
            EventType::Added => {}
            _ if stable => {
                if matches(&event.object) {
                    uids.insert(id.to_string());
                }
            }
            _ => {
                needed.insert(id);
            }
        }
    }
    let earlier = last_events(kind, before, needed)?;
    uids.extend(earlier.into_iter().filter(|o| matches(o)).map(|o| uid(o).to_string()));
    Ok(uids)
}

fn uid(object: &Object) -> &str {
    &object.metadata.uid.0
}

/// Each object's first event of `events` (oldest first), by uid.
fn first_events<'a>(kind: &str, events: impl IntoIterator<Item = &'a WatchEvent>) -> BTreeMap<&'a str, &'a WatchEvent> {
    let mut first = BTreeMap::new();
    for event in events.into_iter().filter(|e| e.object.kind == kind) {
        first.entry(uid(&event.object)).or_insert(event);
    }
    first
}

/// The objects the last events of `needed` in `events` (newest first) left, read only until
/// all are found; an object that event deleted is left out. `Err(uid)`: one not found.
fn last_events<'a>(
    kind: &str,
    events: impl IntoIterator<Item = &'a WatchEvent>,
    mut needed: BTreeSet<&str>,
) -> Result<Vec<&'a Object>, String> {
    let mut found = Vec::new();
    let mut events = events.into_iter();
    while let Some(&missing) = needed.first() {
        let Some(event) = events.next() else {
            return Err(missing.to_string());
        };
        if event.object.kind == kind && needed.remove(uid(&event.object)) && event.event != EventType::Deleted {
            found.push(&*event.object);
        }
    }
    Ok(found)
}

/// Which objects matched the plan at `since` ([`matched_at`]), read under one lock of the store
/// so that its log and its objects agree. `Err`: the 410 `Expired` status to send, if `since`
/// is compacted or the state at `since` of an object changed since is.
fn matched_since(plan: &Plan, since: u64) -> Result<BTreeSet<String>, Value> {
    let kind = plan.path.desc.kind.as_str();
    let namespace = plan.path.namespace.as_deref().filter(|_| plan.path.desc.namespaced);
    plan.state.store.read(|s| {
        let after =
            s.events_since(since).map_err(|e| ApiError::from_store(e, plan.path.desc.subject("")).to_status())?;
        let current = s.list(Some(kind), namespace);
        let before = log_backwards(s, since);
        let objects = current.iter().map(|o| &**o);
        matched_at(kind, after, objects, before, |o| plan.matches(o), plan.stable()).map_err(|uid| {
            ApiError::Expired(format!(
                "resource version {since} is too old to watch with a label selector: the log (oldest kept: {}) no \
                 longer holds the state then of object {uid}; relist and watch from the list's version",
                oldest_kept(s)
            ))
            .to_status()
        })
    })
}

/// The store's log at and before `since`, newest first.
fn log_backwards(s: &Store, since: u64) -> impl Iterator<Item = &WatchEvent> {
    let whole = s.events_since(oldest_kept(s).saturating_sub(1)).into_iter().flatten();
    whole.rev().skip_while(move |e| e.resource_version() > since)
}

/// The oldest revision the store's log holds (the next one if it holds none).
fn oldest_kept(s: &Store) -> u64 {
    let next = s.resource_version().saturating_add(1);
    match s.events_since(0) {
        Ok(mut events) => events.next().map_or(next, WatchEvent::resource_version),
        Err(drydock_engine::store::StoreError::Gone { oldest, .. }) => oldest,
        Err(_) => next,
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
        let mut matching = Matching::default();
        let mut revision = match plan.since {
            Some(rv) => match matched_since(&plan, rv) {
                Ok(uids) => {
                    matching.uids = uids;
                    rv
                }
                Err(status) => {
                    yield Ok(line("ERROR", status));
                    return;
                }
            },
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
        () = plan.state.options.stopping.stopped() => Wake::End,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use drydock_engine::WallTime;
    use drydock_engine::api::{Namespace, NamespaceSpec, ObjectMeta, Uid};
    use drydock_engine::store::{Registry, StoreConfig};
    use std::cell::Cell;
    use std::sync::Arc;

    const KIND: &str = "PhysicalContainer";

    fn object(kind: &str, uid: &str, rv: u64, app: &str) -> Object {
        let mut metadata = ObjectMeta::named(Some("demo"), uid);
        metadata.uid = Uid(uid.to_string());
        metadata.resource_version = rv;
        metadata.labels.insert("app".into(), app.into());
        Object::new(kind, metadata, json!({}))
    }

    fn event(event: EventType, uid: &str, rv: u64, app: &str) -> WatchEvent {
        WatchEvent { event, object: Arc::new(object(KIND, uid, rv, app)) }
    }

    fn web(object: &Object) -> bool {
        object.metadata.labels.get("app").map(String::as_str) == Some("web")
    }

    /// Revisions 1 to 5 before the watch's version 5, 6 to 10 after it; and the objects now.
    fn history() -> (Vec<WatchEvent>, Vec<WatchEvent>, Vec<Object>) {
        use EventType::{Added, Deleted, Modified};
        let before = vec![
            event(Added, "e", 1, "web"),
            event(Added, "a", 2, "web"),
            event(Added, "b", 3, "db"),
            event(Added, "f", 4, "db"),
            event(Modified, "f", 5, "web"),
        ];
        let other = WatchEvent { event: Modified, object: Arc::new(object("Other", "g", 10, "web")) };
        let after = vec![
            event(Modified, "a", 6, "db"),
            event(Modified, "b", 7, "web"),
            event(Added, "c", 8, "web"),
            event(Deleted, "f", 9, "web"),
            other,
        ];
        let current = vec![object(KIND, "e", 1, "web"), object(KIND, "a", 6, "db"), object(KIND, "b", 7, "web")];
        let current = [current, vec![object(KIND, "c", 8, "web"), object("Other", "g", 10, "web")]].concat();
        (before, after, current)
    }

    fn set(uids: &[&str]) -> BTreeSet<String> {
        uids.iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn the_objects_that_matched_at_the_version_are_rebuilt_from_the_log() {
        let (before, after, current) = history();
        let matched = matched_at(KIND, &after, &current, before.iter().rev(), web, false);
        // a: matched then, not now; b: the reverse; c: created after; e: unchanged; f: modified
        // to match just before the version, deleted after; g: another kind.
        assert_eq!(matched.unwrap(), set(&["a", "e", "f"]));
    }

    #[test]
    fn the_log_is_read_back_only_to_the_oldest_needed_event() {
        let (before, after, current) = history();
        let read = Cell::new(0);
        let newest_first = before.iter().rev().inspect(|_| read.set(read.get() + 1));
        matched_at(KIND, &after, &current, newest_first, web, false).unwrap();
        assert_eq!(read.get(), 4, "f@5, f@4, b@3, a@2: not e@1");
        let untouched = after.iter().filter(|e| e.object.metadata.uid.0 == "c");
        let read = Cell::new(0);
        let newest_first = before.iter().rev().inspect(|_| read.set(read.get() + 1));
        matched_at(KIND, untouched, &current, newest_first, web, false).unwrap();
        assert_eq!(read.get(), 0, "only objects created since changed: no search");
    }

    #[test]
    fn a_compacted_last_change_cannot_be_rebuilt() {
        let (before, after, current) = history();
        let matched = matched_at(KIND, &after, &current, before[2..].iter().rev(), web, false);
        assert_eq!(matched, Err("a".to_string()));
    }

    #[test]
    fn a_stable_predicate_needs_no_history() {
        let (_, after, current) = history();
        let all = |o: &Object| o.kind == KIND;
        let matched = matched_at(KIND, &after, &current, std::iter::empty(), all, true);
        assert_eq!(matched.unwrap(), set(&["a", "b", "e", "f"]));
    }

    fn store(log_capacity: usize, namespaces: usize) -> Store {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig { log_capacity, ..StoreConfig::default() });
        for i in 0..namespaces {
            let namespace =
                Object::from_spec::<Namespace>(ObjectMeta::named(None, &format!("n{i}")), &NamespaceSpec {});
            store.create(WallTime(1), namespace).unwrap();
        }
        store
    }

    fn revisions<'a>(events: impl Iterator<Item = &'a WatchEvent>) -> Vec<u64> {
        events.map(WatchEvent::resource_version).collect()
    }

    #[test]
    fn the_log_reads_backwards_down_to_the_oldest_kept() {
        let log = store(70, 100);
        assert_eq!(oldest_kept(&log), 31);
        assert_eq!(revisions(log_backwards(&log, 90)), (31..=90).rev().collect::<Vec<_>>());
        assert_eq!(revisions(log_backwards(&log, 500)), (31..=100).rev().collect::<Vec<_>>());
        assert_eq!(revisions(log_backwards(&log, 31)), [31]);
        assert!(log_backwards(&log, 30).next().is_none());
        let whole = store(1000, 5);
        assert_eq!((oldest_kept(&whole), revisions(log_backwards(&whole, 3))), (1, vec![3, 2, 1]));
        assert_eq!(oldest_kept(&store(10, 0)), 1);
    }
}
