//! Explaining a run as it happens (only when its trace is kept): what each event is, which
//! reconcile issued each request and what queued that reconcile, and what each store write
//! changed. See [`crate::trace`].
//!
//! *Guarantees*: nothing here draws from the run's PRNG, schedules an event or records to the
//! trace; a run explains itself with the same digest as it runs without.

use crate::runtime::SimRuntime;
use crate::trace::{Cause, EventKind, FieldChange, TraceEvent};
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::runtime::{RuntimeRequest, short};
use drydock_engine::store::StoreRequest;
use drydock_engine::{OpId, Origin, Trigger, Via};
use serde_json::Value;
use std::collections::BTreeMap;

/// The explanation of the run so far and of its current event.
#[derive(Default)]
pub(super) struct Explainer {
    /// The current event, as far as it is explained.
    pub current: TraceEvent,
    /// The number the current event will have in the trace.
    seq: u64,
    /// Requests issued and not forgotten: what issued them.
    requests: BTreeMap<(usize, OpId), Cause>,
    /// Where each process learned of each object version: (process, key, resource version) to
    /// the event's seq (a delivery, or the reply to its own write).
    learned: BTreeMap<(usize, String, u64), u64>,
    /// The last full list each process took.
    listed: BTreeMap<usize, u64>,
    /// Replies to runtime requests, by process and id.
    runtime_replies: BTreeMap<(usize, OpId), u64>,
    /// The last runtime event about each container each process was told of.
    runtime_events: BTreeMap<(usize, String), u64>,
}

impl Explainer {
    /// A new event begins: it will be number `seq`.
    pub fn begin(&mut self, seq: u64) {
        self.seq = seq;
        self.current = TraceEvent::default();
    }

    /// The current event, explained; the next begins empty.
    pub fn finish(&mut self) -> TraceEvent {
        std::mem::take(&mut self.current)
    }

    /// Say what the current event is, if nothing said so yet.
    pub fn kind(&mut self, kind: EventKind, process: Option<usize>) {
        if self.current.kind == EventKind::Other {
            self.current.kind = kind;
        }
        if self.current.process.is_none() {
            self.current.process = process;
        }
    }

    pub fn object(&mut self, key: &ObjectKey) {
        self.current.object.get_or_insert_with(|| key.to_string());
    }

    pub fn fault(&mut self, name: &str) {
        self.current.faults.push(name.to_string());
    }

    /// A process issued a request.
    pub fn issued(&mut self, process: usize, id: OpId, origin: &Origin) {
        let trigger_seq = origin.trigger.as_deref().and_then(|t| self.trigger_seq(process, t));
        let cause = Cause {
            process,
            controller: origin.controller.to_string(),
            key: origin.key.to_string(),
            reconcile: origin.reconcile,
            trigger: origin.trigger.as_ref().map(|t| t.to_string()),
            trigger_seq,
            issued_seq: Some(self.seq),
        };
        self.requests.insert((process, id), cause);
    }

    /// The event where `process` was told of what `trigger` names, if it is in the trace.
    fn trigger_seq(&self, process: usize, trigger: &Trigger) -> Option<u64> {
        match trigger {
            Trigger::Object { via: Via::Resync | Via::NamespaceNowOurs, .. } => self.listed.get(&process).copied(),
            Trigger::Object { object, resource_version, .. } => {
                self.learned.get(&(process, object.to_string(), *resource_version)).copied()
            }
            Trigger::RuntimeReply { id } => self.runtime_replies.get(&(process, *id)).copied(),
            Trigger::RuntimeEvent { container_id, .. } => {
                self.runtime_events.get(&(process, container_id.clone())).copied()
            }
            _ => None,
        }
    }

    /// The current event concerns request `id` of `process`: carry its cause.
    pub fn request(&mut self, process: usize, id: OpId) {
        self.current.cause = self.requests.get(&(process, id)).cloned();
    }

    /// A store request is applied.
    pub fn store_applied(&mut self, process: usize, id: OpId, request: &StoreRequest) {
        let kind = if request.is_read() { EventKind::StoreRead } else { EventKind::StoreWrite };
        self.kind(kind, Some(process));
        self.request(process, id);
        if let Some(key) = request_key(request) {
            self.object(&key);
        }
    }

    /// A store write succeeded: what it changed, from the object before it to the one stored.
    pub fn stored(&mut self, before: Option<&Object>, after: &Object) {
        if self.current.kind == EventKind::StoreWrite {
            self.current.diff = diff(before, Some(after));
        }
    }

    /// A reply reached `process`; for a store write, `learned` is the object version it stored.
    pub fn replied(&mut self, process: usize, id: OpId, runtime: bool, learned: Option<&Object>) {
        self.kind(EventKind::Reply, Some(process));
        self.request(process, id);
        if runtime {
            self.runtime_replies.insert((process, id), self.seq);
        }
        if let Some(object) = learned {
            self.object(&object.key());
            self.learned.insert((process, object.key().to_string(), object.metadata.resource_version), self.seq);
        }
        if let Some(cause) = &self.current.cause
            && let Some(key) = parse_key(&cause.key)
        {
            self.object(&key);
        }
    }

    /// A watch event reached `process`.
    pub fn delivered(&mut self, process: usize, object: &Object) {
        self.kind(EventKind::Deliver, Some(process));
        self.object(&object.key());
        self.learned.insert((process, object.key().to_string(), object.metadata.resource_version), self.seq);
    }

    /// `process` took a full list of the store.
    pub fn listed(&mut self, process: usize) {
        self.kind(EventKind::Process, Some(process));
        self.listed.insert(process, self.seq);
    }

    /// A runtime event about `container_id` reached `process`.
    pub fn runtime_event(&mut self, process: usize, container_id: &str, runtime: &SimRuntime) {
        self.kind(EventKind::RuntimeEvent, Some(process));
        self.current.container.get_or_insert_with(|| container_name(container_id, runtime));
        self.runtime_events.insert((process, container_id.to_string()), self.seq);
    }

    /// A runtime request meets the runtime.
    pub fn runtime_applied(&mut self, process: usize, id: OpId, request: &RuntimeRequest, runtime: &SimRuntime) {
        self.kind(EventKind::Runtime, Some(process));
        self.request(process, id);
        if let Some(container) = request_container(request, runtime) {
            self.current.container.get_or_insert(container);
        }
        if let Some(cause) = &self.current.cause
            && let Some(key) = parse_key(&cause.key)
        {
            self.object(&key);
        }
    }
}

/// The object a store request names.
fn request_key(request: &StoreRequest) -> Option<ObjectKey> {
    match request {
        StoreRequest::Get { key } | StoreRequest::Delete { key, .. } => Some(key.clone()),
        StoreRequest::Create { object } | StoreRequest::Update { object } | StoreRequest::UpdateStatus { object } => {
            Some(object.key())
        }
        StoreRequest::List { .. } => None,
    }
}

/// `Kind/name` or `Kind/namespace/name` back into a key.
fn parse_key(text: &str) -> Option<ObjectKey> {
    let mut parts = text.splitn(3, '/');
    let (kind, a, b) = (parts.next()?, parts.next()?, parts.next());
    Some(match b {
        Some(name) => ObjectKey::namespaced(kind, a, name),
        None => ObjectKey::cluster(kind, a),
    })
}

/// The container a runtime request is about, by name where the runtime knows it.
fn request_container(request: &RuntimeRequest, runtime: &SimRuntime) -> Option<String> {
    match request {
        RuntimeRequest::CreateContainer(create) => Some(create.name.clone()),
        RuntimeRequest::StartContainer { id }
        | RuntimeRequest::StopContainer { id, .. }
        | RuntimeRequest::RemoveContainer { id, .. }
        | RuntimeRequest::InspectContainer { id }
        | RuntimeRequest::ContainerEvents { id, .. }
        | RuntimeRequest::CopyFiles { id, .. } => Some(container_name(id, runtime)),
        RuntimeRequest::ConnectNetwork { container, .. } | RuntimeRequest::DisconnectNetwork { container, .. } => {
            Some(container_name(container, runtime))
        }
        _ => None,
    }
}

fn container_name(id: &str, runtime: &SimRuntime) -> String {
    runtime.container(id).map_or_else(|| short(id).to_string(), |c| c.name.clone())
}

/// Most changes a write lists before saying how many more there were.
const MAX_CHANGES: usize = 24;
/// Longest value shown, in characters.
const MAX_VALUE: usize = 160;

/// What changed from `before` to `after`, field by field (objects recursed into, lists and
/// scalars compared whole). Fields every write changes (`resourceVersion`) or that only say
/// when and which (`uid`, `creationTimestamp`) are left out.
pub(super) fn diff(before: Option<&Object>, after: Option<&Object>) -> Vec<FieldChange> {
    let parts = |o: Option<&Object>| -> Value {
        let Some(o) = o else { return Value::Null };
        let mut metadata = serde_json::to_value(&o.metadata).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut metadata {
            for noise in ["resourceVersion", "uid", "creationTimestamp"] {
                m.remove(noise);
            }
        }
        let (mut spec, mut status) = (Value::clone(&o.spec), o.status.clone());
        // Times as a user reads them everywhere else (kubectl, `drydock get`): RFC 3339, not the
        // store's milliseconds since the epoch.
        as_rfc3339(metadata.get_mut("deletionTimestamp"));
        if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
            for condition in conditions {
                as_rfc3339(condition.get_mut("lastTransitionTime"));
            }
        }
        if o.kind == "Lease" {
            as_rfc3339(spec.get_mut("acquireTime"));
            as_rfc3339(spec.get_mut("renewTime"));
        }
        serde_json::json!({ "metadata": metadata, "spec": spec, "status": status })
    };
    let mut changes = Vec::new();
    walk("", &parts(before), &parts(after), &mut changes);
    if changes.len() > MAX_CHANGES {
        let more = changes.len() - MAX_CHANGES;
        changes.truncate(MAX_CHANGES);
        changes.push(FieldChange { path: format!("… {more} more"), before: None, after: None });
    }
    changes
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<FieldChange>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                walk(&child, x.get(key).unwrap_or(&Value::Null), y.get(key).unwrap_or(&Value::Null), out);
            }
        }
        _ => {
            let (before, after) = (render(path, a), render(path, b));
            // An empty list or map and none at all read the same.
            if before.is_some() || after.is_some() {
                out.push(FieldChange { path: path.to_string(), before, after });
            }
        }
    }
}

/// A value, compact; `None` for an absent (null) or empty one.
fn render(path: &str, value: &Value) -> Option<String> {
    let empty = match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if empty {
        return None;
    }
    let text = match value {
        // An owner reference reads as the object it names.
        Value::Array(refs) if path.ends_with("ownerReferences") => {
            let names: Vec<String> = refs
                .iter()
                .map(|r| {
                    let field = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("?").to_string();
                    let controller = if r.get("controller") == Some(&Value::Bool(true)) { " (controller)" } else { "" };
                    format!("{}/{}{controller}", field("kind"), field("name"))
                })
                .collect();
            format!("[{}]", names.join(", "))
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(truncate(text))
}

/// A time the store keeps as milliseconds since the epoch, as RFC 3339 in UTC
/// (`2026-01-01T00:00:31.541Z`; no fraction when it is whole seconds), in place.
fn as_rfc3339(value: Option<&mut Value>) {
    if let Some(value) = value
        && let Some(millis) = value.as_u64()
    {
        *value = Value::String(rfc3339(millis));
    }
}

fn rfc3339(millis: u64) -> String {
    let (secs, ms) = (millis / 1000, millis % 1000);
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    // The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
    // civil_from_days), for days >= 0.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let (hour, minute, second) = (day_secs / 3600, day_secs % 3600 / 60, day_secs % 60);
    let fraction = if ms == 0 { String::new() } else { format!(".{ms:03}") };
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}Z")
}

fn truncate(mut text: String) -> String {
    if text.chars().count() > MAX_VALUE {
        text = text.chars().take(MAX_VALUE).collect::<String>() + "…";
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use drydock_engine::api::{ObjectMeta, OwnerReference, Uid};

    fn namespace(owners: Vec<OwnerReference>) -> Object {
        let mut meta = ObjectMeta::named(None, "rancher-desktop");
        meta.owner_references = owners;
        meta.resource_version = 3;
        Object::new("Namespace", meta, serde_json::json!({}))
    }

    #[test]
    fn an_owner_reference_set_reads_as_the_object_it_names() {
        let before = namespace(vec![]);
        let owner = OwnerReference {
            kind: "Namespace".into(),
            name: "rancher-desktop".into(),
            uid: Uid("u1".into()),
            controller: true,
            block_owner_deletion: false,
        };
        let mut after = namespace(vec![owner]);
        after.metadata.resource_version = 4;
        let changes = diff(Some(&before), Some(&after));
        assert_eq!(
            changes,
            vec![FieldChange {
                path: "metadata.ownerReferences".into(),
                before: None,
                after: Some("[Namespace/rancher-desktop (controller)]".into()),
            }],
            "the resource version is left out; the reference reads as Kind/name"
        );
    }

    #[test]
    fn times_read_as_rfc3339_not_epoch_milliseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_631_541), "2026-01-01T00:00:31.541Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        let before = namespace(vec![]);
        let mut after = before.clone();
        after.metadata.deletion_timestamp = Some(drydock_engine::WallTime(1_767_225_631_555));
        after.status = serde_json::json!({"conditions": [{"type": "CleanupComplete", "status": "False",
            "lastTransitionTime": 1_767_225_631_541_u64}]});
        let text: Vec<String> = diff(Some(&before), Some(&after)).iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "set metadata.deletionTimestamp to 2026-01-01T00:00:31.555Z",
                r#"set status.conditions to [{"lastTransitionTime":"2026-01-01T00:00:31.541Z","status":"False","type":"CleanupComplete"}]"#,
            ]
        );
    }

    #[test]
    fn nested_fields_are_listed_one_by_one_and_long_values_cut() {
        let mut before = namespace(vec![]);
        before.status = serde_json::json!({ "phase": "Active", "conditions": [] });
        let mut after = before.clone();
        after.status = serde_json::json!({ "phase": "Terminating", "message": "x".repeat(500) });
        let changes = diff(Some(&before), Some(&after));
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["status.message", "status.phase"]);
        assert_eq!(changes[1].before.as_deref(), Some("Active"));
        assert_eq!(changes[1].after.as_deref(), Some("Terminating"));
        assert!(changes[0].after.as_ref().is_some_and(|v| v.ends_with('…') && v.chars().count() == MAX_VALUE + 1));
    }

    #[test]
    fn keys_parse_back() {
        assert_eq!(parse_key("Namespace/a"), Some(ObjectKey::cluster("Namespace", "a")));
        assert_eq!(
            parse_key("PhysicalContainer/ns/web"),
            Some(ObjectKey::namespaced("PhysicalContainer", "ns", "web"))
        );
        assert_eq!(parse_key("nothing"), None);
    }
}
