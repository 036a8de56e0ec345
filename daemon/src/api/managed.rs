//! Managed fields: which manager set which field of an object (Kubernetes'
//! `metadata.managedFields`), and server-side apply over them.
//!
//! *Guarantees*
//! - A create or an update through the API gives its manager (see [`field_manager`]) the fields
//!   it set or changed, in the manager's `Update` entry, and takes them from every other entry.
//!   A field that a write removes is no one's any more.
//! - [`apply`] (server-side apply): the applied configuration's fields become the applier's
//!   `Apply` entry. A field that another manager owns and the configuration gives another value
//!   is a conflict: the apply is refused with every conflict named, unless it is forced, which
//!   takes the field from its other owners. A field the applier applied before and now leaves
//!   out is removed from the object, unless another manager owns it too. Managers that apply
//!   the same value share the field.
//! - Lists follow [`list_types`]: an item of a keyed list and a member of a set are fields of
//!   their own (`k:{"name":"a"}`, `v:"x"`), an atomic list is one field.
//! - Tracked are `metadata` labels, annotations, finalizers and owner references, and `spec`.
//!   `fieldsV1` on the wire is the Kubernetes encoding, so clients (kubectl's
//!   `--show-managed-fields`, `kubectl apply`'s conflict messages) read it as they would there.
//!
//! *Caveats*
//! - The engine's own writes (its controllers, through the store) are not recorded, and neither
//!   are status writes: status belongs to the engine.
//! - A manager's `Update` entry and its `Apply` entry are separate owners, as in Kubernetes.

use super::list_types::{ListType, list_type};
use drydock_engine::WallTime;
use drydock_engine::api::{ManagedFieldsEntry, Object};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One field: its steps in the `fieldsV1` encoding (`f:spec`, `k:{"name":"a"}`, `v:"x"`).
type Path = Vec<String>;
type FieldSet = BTreeSet<Path>;

pub const APPLY: &str = "Apply";
pub const UPDATE: &str = "Update";

/// Who writes, and when.
#[derive(Clone, Debug)]
pub struct Manager<'a> {
    pub name: &'a str,
    /// The group/version the write was made in.
    pub api_version: &'a str,
    pub now: WallTime,
}

/// A field that another manager owns with another value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    pub api_version: String,
    /// The field as Kubernetes writes it: `.spec.image`, `.spec.env[name="a"].value`.
    pub field: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    #[error("the applied object could not be merged: {0}")]
    Decode(String),
}

/// The manager of a write: `?fieldManager=`, else the client's User-Agent up to its first `/`
/// (`kubectl`, `OpenAPI-Generator`), as the API server names it. An apply must name one.
pub fn field_manager(query: Option<&str>, user_agent: Option<&str>, applying: bool) -> Result<String, String> {
    match query.filter(|q| !q.is_empty()) {
        Some(name) if name.chars().count() > 128 => {
            Err(format!("fieldManager must be at most 128 characters, not {} (\"{name}\")", name.chars().count()))
        }
        Some(name) if name.chars().any(char::is_control) => {
            Err("fieldManager must be printable characters only".into())
        }
        Some(name) => Ok(name.to_string()),
        None if applying => Err("fieldManager is required for apply patch: name it with ?fieldManager=".into()),
        None => {
            let agent = user_agent.unwrap_or_default().split('/').next().unwrap_or_default();
            let agent: String = agent.chars().filter(|c| !c.is_control()).take(128).collect();
            Ok(if agent.is_empty() { "unknown".into() } else { agent })
        }
    }
}

/// Server-side apply of `applied` (its metadata and spec as the configuration gives them) over
/// `live` (`None`: the object does not exist yet), by `manager`. The result carries `live`'s
/// identity and status, the merged labels, annotations, finalizers, owners and spec, and the
/// updated managed fields; its resourceVersion is `applied`'s if it names one (a precondition),
/// else `live`'s.
pub fn apply(
    kind: &str,
    live: Option<&Object>,
    applied: &Object,
    manager: &Manager,
    force: bool,
) -> Result<Object, ApplyError> {
    let config = tracked(&to_value(applied)?);
    let fields = fields_of(kind, &config);
    let (mut whole, mut entries) = match live {
        Some(live) => (to_value(live)?, live.metadata.managed_fields.clone()),
        None => (to_value(applied)?, Vec::new()),
    };
    let before = tracked(&whole);
    let mut owners: Vec<FieldSet> = entries.iter().map(|e| decode(&e.fields_v1)).collect();
    let mine = entries.iter().position(|e| is_entry(e, manager.name, APPLY));
    let conflicting = conflicting(&fields, &config, &before, &owners, mine);
    if !conflicting.is_empty() && !force {
        let conflicts = conflicting
            .iter()
            .map(|(i, path)| Conflict {
                manager: entries[*i].manager.clone(),
                api_version: entries[*i].api_version.clone(),
                field: display(path),
            })
            .collect();
        return Err(ApplyError::Conflicts(conflicts));
    }
    for (i, path) in &conflicting {
        owners[*i].remove(path);
        entries[*i].fields_v1 = encode(&owners[*i]);
    }
    let previous = mine.map(|i| owners[i].clone()).unwrap_or_default();
    let others: FieldSet =
        owners.iter().enumerate().filter(|(i, _)| Some(*i) != mine).flat_map(|(_, s)| s).cloned().collect();
    let mut merged = before;
    // Shallowest first: a removed item takes its fields with it, while they still name it.
    for dropped in previous.difference(&fields) {
        if !owned_at_or_below(&others, dropped) {
            remove(&mut merged, dropped);
        }
    }
    merge(kind, &mut Vec::new(), &mut merged, &config);
    set_entry(&mut entries, manager, APPLY, &fields);
    entries.retain(owns_something);
    put_tracked(&mut whole, merged);
    let mut object: Object = serde_json::from_value(whole).map_err(|e| ApplyError::Decode(e.to_string()))?;
    object.metadata.managed_fields = entries;
    if applied.metadata.resource_version != 0 {
        object.metadata.resource_version = applied.metadata.resource_version;
    }
    Ok(object)
}

/// Record a create (`old` is `None`) or an update from `old` to `new` by `manager` in `new`'s
/// managed fields, which start from `old`'s.
pub fn record_update(kind: &str, old: Option<&Object>, new: &mut Object, manager: &Manager) {
    let (Ok(old_value), Ok(new_value)) = (old.map_or(Ok(Value::Null), to_value), to_value(new)) else { return };
    let (before, after) = (tracked(&old_value), tracked(&new_value));
    let (old_fields, new_fields) = (fields_of(kind, &before), fields_of(kind, &after));
    let changed: FieldSet = new_fields.iter().filter(|p| get(&before, p) != get(&after, p)).cloned().collect();
    let removed: FieldSet = old_fields.difference(&new_fields).cloned().collect();
    let mut entries = old.map(|o| o.metadata.managed_fields.clone()).unwrap_or_default();
    for entry in &mut entries {
        let mut owned = decode(&entry.fields_v1);
        let before = owned.len();
        owned.retain(|p| !removed.iter().any(|r| p.starts_with(r)));
        if !is_entry(entry, manager.name, UPDATE) {
            owned.retain(|p| !changed.contains(p));
        }
        if owned.len() != before {
            entry.fields_v1 = encode(&owned);
        }
    }
    let mine = entries.iter().find(|e| is_entry(e, manager.name, UPDATE)).map(|e| decode(&e.fields_v1));
    let mut owned: FieldSet = mine.unwrap_or_default();
    owned.extend(changed);
    set_entry(&mut entries, manager, UPDATE, &owned);
    entries.retain(owns_something);
    new.metadata.managed_fields = entries;
}

/// Whether an entry owns any field: its `fieldsV1` is not the empty set's `{}`.
fn owns_something(entry: &ManagedFieldsEntry) -> bool {
    entry.fields_v1.as_object().is_some_and(|fields| !fields.is_empty())
}

fn to_value(object: &Object) -> Result<Value, ApplyError> {
    serde_json::to_value(object).map_err(|e| ApplyError::Decode(e.to_string()))
}

fn is_entry(entry: &ManagedFieldsEntry, manager: &str, operation: &str) -> bool {
    entry.manager == manager && entry.operation == operation && entry.subresource.is_empty()
}

/// Give `manager`'s `operation` entry exactly `fields`; its time moves only when they change.
fn set_entry(entries: &mut Vec<ManagedFieldsEntry>, manager: &Manager, operation: &str, fields: &FieldSet) {
    let fields_v1 = encode(fields);
    match entries.iter_mut().find(|e| is_entry(e, manager.name, operation)) {
        Some(entry) if entry.fields_v1 == fields_v1 && entry.api_version == manager.api_version => {}
        Some(entry) => {
            entry.fields_v1 = fields_v1;
            entry.api_version = manager.api_version.to_string();
            entry.time = Some(manager.now);
        }
        None => entries.push(ManagedFieldsEntry {
            manager: manager.name.to_string(),
            operation: operation.to_string(),
            api_version: manager.api_version.to_string(),
            time: Some(manager.now),
            fields_type: "FieldsV1".into(),
            fields_v1,
            subresource: String::new(),
        }),
    }
}

/// The conflicts of applying `fields` (with values in `config`) over `live`: each leaf field
/// that another entry owns and whose live value differs, with the entry's index.
fn conflicting(
    fields: &FieldSet,
    config: &Value,
    live: &Value,
    owners: &[FieldSet],
    mine: Option<usize>,
) -> Vec<(usize, Path)> {
    let mut found = Vec::new();
    for path in fields.iter().filter(|p| is_leaf(fields, p)) {
        if get(config, path) == get(live, path) {
            continue;
        }
        let owning = owners.iter().enumerate().filter(|(i, owned)| Some(*i) != mine && owned.contains(path));
        found.extend(owning.map(|(i, _)| (i, path.clone())));
    }
    found
}

fn conflict_message(conflicts: &[Conflict]) -> String {
    let count = conflicts.len();
    let plural = if count == 1 { "" } else { "s" };
    let lines: Vec<String> = conflicts
        .iter()
        .map(|c| format!("conflict with \"{}\" using {}: {}", c.manager, c.api_version, c.field))
        .collect();
    format!("Apply failed with {count} conflict{plural}: {}", lines.join("\n"))
}

/// Whether no other field of `fields` is below `path`.
fn is_leaf(fields: &FieldSet, path: &Path) -> bool {
    fields.range(path.clone()..).nth(1).is_none_or(|next| !next.starts_with(path))
}

fn owned_at_or_below(owned: &FieldSet, path: &Path) -> bool {
    owned.range(path.clone()..).next().is_some_and(|next| next.starts_with(path))
}

/// The tracked part of an object's JSON: `metadata`'s labels, annotations, finalizers and owner
/// references, and `spec`.
fn tracked(object: &Value) -> Value {
    let mut out = Map::new();
    if let Some(meta) = object.get("metadata").and_then(Value::as_object) {
        let kept: Map<String, Value> = ["labels", "annotations", "finalizers", "ownerReferences"]
            .iter()
            .filter_map(|f| meta.get(*f).map(|v| (f.to_string(), v.clone())))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    if let Some(spec) = object.get("spec") {
        out.insert("spec".into(), spec.clone());
    }
    Value::Object(out)
}

/// Put the tracked part back into an object's JSON.
fn put_tracked(object: &mut Value, tracked: Value) {
    let Value::Object(mut parts) = tracked else { return };
    let Some(whole) = object.as_object_mut() else { return };
    if let Some(Value::Object(meta)) = parts.remove("metadata") {
        let target = whole.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Some(target) = target.as_object_mut() {
            for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
                match meta.get(field) {
                    Some(value) => target.insert(field.into(), value.clone()),
                    None => target.remove(field),
                };
            }
        }
    }
    whole.insert("spec".into(), parts.remove("spec").unwrap_or_else(|| Value::Object(Map::new())));
}

/// Every field of `value`, as paths. Empty maps and nulls are no field.
fn fields_of(kind: &str, value: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    collect(kind, &mut Vec::new(), &mut Vec::new(), value, &mut out);
    out
}

/// `schema`: the field names so far, without list items, as [`list_type`] names a list.
fn collect(kind: &str, schema: &mut Vec<String>, path: &mut Path, value: &Value, out: &mut FieldSet) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                schema.push(key.clone());
                path.push(format!("f:{key}"));
                collect_child(kind, schema, path, child, out);
                path.pop();
                schema.pop();
            }
        }
        Value::Null => {}
        _ => {
            out.insert(path.clone());
        }
    }
}

fn collect_child(kind: &str, schema: &mut Vec<String>, path: &mut Path, child: &Value, out: &mut FieldSet) {
    let Value::Array(items) = child else { return collect(kind, schema, path, child, out) };
    let list = list_type(kind, &schema.iter().map(String::as_str).collect::<Vec<_>>());
    if items.is_empty() || list == ListType::Atomic {
        out.insert(path.clone());
        return;
    }
    for item in items {
        path.push(item_step(list, item));
        out.insert(path.clone());
        if matches!(list, ListType::Map(_)) {
            collect(kind, schema, path, item, out);
        }
        path.pop();
    }
}

/// The step naming `item` of a keyed list or a set.
fn item_step(list: ListType, item: &Value) -> String {
    match list {
        ListType::Map(keys) => {
            let key: Map<String, Value> =
                keys.iter().map(|k| (k.to_string(), item.get(*k).cloned().unwrap_or(Value::Null))).collect();
            format!("k:{}", Value::Object(key))
        }
        _ => format!("v:{item}"),
    }
}

/// The value at `path`, if there is one.
fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |here, step| child(here, step))
}

fn child<'a>(here: &'a Value, step: &str) -> Option<&'a Value> {
    if let Some(field) = step.strip_prefix("f:") {
        return here.as_object()?.get(field);
    }
    let items = here.as_array()?;
    items.iter().find(|item| matches_step(item, step))
}

fn matches_step(item: &Value, step: &str) -> bool {
    if let Some(key) = step.strip_prefix("k:") {
        let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else { return false };
        return key.iter().all(|(k, v)| item.get(k).unwrap_or(&Value::Null) == v);
    }
    step.strip_prefix("v:").and_then(|v| serde_json::from_str::<Value>(v).ok()).is_some_and(|v| &v == item)
}

/// Remove the field at `path` (a map key, a list item, a set member), if it is there.
fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut here = value;
    for step in parents {
        let next = match here {
            Value::Object(map) => step.strip_prefix("f:").and_then(|f| map.get_mut(f)),
            Value::Array(items) => items.iter_mut().find(|item| matches_step(item, step)),
            _ => None,
        };
        let Some(next) = next else { return };
        here = next;
    }
    match here {
        Value::Object(map) => {
            if let Some(field) = last.strip_prefix("f:") {
                map.remove(field);
            }
        }
        Value::Array(items) => items.retain(|item| !matches_step(item, last)),
        _ => {}
    }
}

/// Merge the applied configuration into the live object: maps by key, keyed lists by item,
/// sets by member, anything else replaced. A null in the configuration is no value.
fn merge(kind: &str, schema: &mut Vec<String>, live: &mut Value, config: &Value) {
    let (Value::Object(target), Value::Object(source)) = (&mut *live, config) else {
        *live = config.clone();
        return;
    };
    for (key, value) in source.iter().filter(|(_, v)| !v.is_null()) {
        schema.push(key.clone());
        match target.get_mut(key) {
            Some(existing) => merge_child(kind, schema, existing, value),
            None => {
                target.insert(key.clone(), value.clone());
            }
        }
        schema.pop();
    }
}

fn merge_child(kind: &str, schema: &mut Vec<String>, existing: &mut Value, value: &Value) {
    let (Value::Array(have), Value::Array(want)) = (&mut *existing, value) else {
        return merge(kind, schema, existing, value);
    };
    let list = list_type(kind, &schema.iter().map(String::as_str).collect::<Vec<_>>());
    if list == ListType::Atomic {
        *existing = value.clone();
        return;
    }
    for item in want {
        let step = item_step(list, item);
        match have.iter_mut().find(|h| matches_step(h, &step)) {
            Some(current) if matches!(list, ListType::Map(_)) => merge(kind, schema, current, item),
            Some(_) => {}
            None => have.push(item.clone()),
        }
    }
}

/// `fieldsV1`: a tree of steps, `{}` at a leaf, and `"."` for a field that has fields below it
/// and is a field itself (a keyed list's item).
fn encode(fields: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in fields {
        mark(&mut root, path);
    }
    tidy(&mut root);
    Value::Object(root)
}

fn mark(node: &mut Map<String, Value>, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        node.insert(".".into(), Value::Object(Map::new()));
        return;
    };
    if let Value::Object(next) = node.entry(first.clone()).or_insert_with(|| Value::Object(Map::new())) {
        mark(next, rest);
    }
}

/// Drop the `"."` of fields that have nothing below them: a leaf is `{}`.
fn tidy(node: &mut Map<String, Value>) {
    if node.len() == 1 && node.contains_key(".") {
        node.clear();
        return;
    }
    for (key, child) in node.iter_mut() {
        if let (false, Value::Object(child)) = (key == ".", child) {
            tidy(child);
        }
    }
}

fn decode(fields_v1: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    if let Value::Object(root) = fields_v1 {
        decode_into(root, &mut Vec::new(), &mut out);
    }
    out
}

fn decode_into(node: &Map<String, Value>, path: &mut Path, out: &mut FieldSet) {
    if (node.is_empty() || node.contains_key(".")) && !path.is_empty() {
        out.insert(path.clone());
    }
    for (step, child) in node.iter().filter(|(k, _)| k.as_str() != ".") {
        if let Value::Object(child) = child {
            path.push(step.clone());
            decode_into(child, path, out);
            path.pop();
        }
    }
}

/// `.spec.env[name="a"].value`, as Kubernetes names a field in a conflict.
fn display(path: &Path) -> String {
    let mut out = String::new();
    for step in path {
        if let Some(field) = step.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(key) = step.strip_prefix("k:") {
            let pairs: Vec<String> = match serde_json::from_str::<Value>(key) {
                Ok(Value::Object(key)) => key.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                _ => vec![key.to_string()],
            };
            out.push_str(&format!("[{}]", pairs.join(",")));
        } else if let Some(member) = step.strip_prefix("v:") {
            out.push_str(&format!("[={member}]"));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(kind: &str, body: Value) -> Object {
        let mut value = json!({"kind": kind, "metadata": {"name": "a", "namespace": "n"}});
        if let (Value::Object(value), Value::Object(body)) = (&mut value, body) {
            for (k, v) in body {
                if k == "metadata" {
                    let meta = value["metadata"].as_object_mut().unwrap();
                    meta.extend(v.as_object().unwrap().clone());
                } else {
                    value.insert(k, v);
                }
            }
        }
        serde_json::from_value(value).unwrap()
    }

    fn manager(name: &str) -> Manager<'_> {
        Manager { name, api_version: "drydock.dev/v1", now: WallTime(1_000) }
    }

    const KIND: &str = "LogicalContainer";

    #[test]
    fn fields_v1_round_trips_in_the_kubernetes_encoding() {
        let value = json!({"metadata": {"labels": {"app": "web"}, "finalizers": ["x"]},
            "spec": {"image": "i", "env": [{"name": "A", "value": "1"}], "command": ["sh"]}});
        let fields = fields_of(KIND, &value);
        let encoded = encode(&fields);
        assert_eq!(
            encoded,
            json!({"f:metadata": {"f:labels": {"f:app": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {"f:image": {}, "f:command": {},
                    "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}})
        );
        assert_eq!(decode(&encoded), fields);
    }

    #[test]
    fn a_field_another_manager_set_differently_is_a_conflict_unless_forced() {
        let mut live = object(KIND, json!({"spec": {"image": "one"}}));
        record_update(KIND, None, &mut live, &manager("kubectl-edit"));
        let applied = object(KIND, json!({"spec": {"image": "two"}}));
        let Err(ApplyError::Conflicts(conflicts)) = apply(KIND, Some(&live), &applied, &manager("ci"), false) else {
            panic!("expected a conflict")
        };
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].field, ".spec.image");
        assert_eq!(conflicts[0].manager, "kubectl-edit");
        let forced = apply(KIND, Some(&live), &applied, &manager("ci"), true).unwrap();
        assert_eq!(forced.spec["image"], "two");
        assert_eq!(forced.metadata.managed_fields.len(), 1, "the edit's only field was taken");
        assert_eq!(forced.metadata.managed_fields[0].manager, "ci");
        let same = object(KIND, json!({"spec": {"image": "one"}}));
        let shared = apply(KIND, Some(&live), &same, &manager("ci"), false).unwrap();
        assert_eq!(shared.metadata.managed_fields.len(), 2, "the same value is shared, not a conflict");
    }

    #[test]
    fn a_field_the_applier_drops_is_removed_unless_someone_else_owns_it() {
        let first = object(
            KIND,
            json!({"metadata": {"labels": {"a": "1", "b": "2"}},
                "spec": {"image": "i", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}}),
        );
        let live = apply(KIND, None, &first, &manager("ci"), false).unwrap();
        let mut edited = live.clone();
        edited.metadata.labels.insert("c".into(), "3".into());
        record_update(KIND, Some(&live), &mut edited, &manager("kubectl-label"));
        let second = object(
            KIND,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"image": "i", "env": [{"name": "X", "value": "1"}]}}),
        );
        let out = apply(KIND, Some(&edited), &second, &manager("ci"), false).unwrap();
        assert_eq!(out.metadata.labels.keys().collect::<Vec<_>>(), ["a", "c"], "b dropped, c kept: another owner");
        assert_eq!(out.spec["env"], json!([{"name": "X", "value": "1"}]), "the dropped item is removed");
    }

    #[test]
    fn keyed_items_merge_and_other_managers_items_stay() {
        let live = apply(
            KIND,
            None,
            &object(KIND, json!({"spec": {"env": [{"name": "X", "value": "1"}]}})),
            &manager("a"),
            false,
        )
        .unwrap();
        let out = apply(
            KIND,
            Some(&live),
            &object(KIND, json!({"spec": {"env": [{"name": "Y", "value": "2"}]}})),
            &manager("b"),
            false,
        )
        .unwrap();
        assert_eq!(out.spec["env"], json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]));
        let conflict = apply(
            KIND,
            Some(&out),
            &object(KIND, json!({"spec": {"env": [{"name": "X", "value": "9"}]}})),
            &manager("b"),
            false,
        );
        let Err(ApplyError::Conflicts(c)) = conflict else { panic!("expected a conflict") };
        assert_eq!(c[0].field, ".spec.env[name=\"X\"].value");
        assert!(ApplyError::Conflicts(c).to_string().starts_with("Apply failed with 1 conflict: conflict with \"a\""));
    }

    #[test]
    fn an_update_takes_what_it_changes_and_frees_what_it_removes() {
        let live =
            apply(KIND, None, &object(KIND, json!({"spec": {"image": "i", "stop": false}})), &manager("ci"), false)
                .unwrap();
        let mut edited = live.clone();
        let spec = edited.spec_mut().as_object_mut().unwrap();
        spec.insert("image".into(), json!("j"));
        spec.remove("stop");
        record_update(KIND, Some(&live), &mut edited, &manager("kubectl-edit"));
        let owners: Vec<(String, FieldSet)> =
            edited.metadata.managed_fields.iter().map(|e| (e.manager.clone(), decode(&e.fields_v1))).collect();
        assert_eq!(owners.len(), 1, "ci's fields were all taken or freed: {owners:?}");
        assert_eq!(owners[0].0, "kubectl-edit");
        assert_eq!(owners[0].1, FieldSet::from([vec!["f:spec".to_string(), "f:image".to_string()]]));
    }

    #[test]
    fn an_unchanged_apply_keeps_its_time() {
        let config = object(KIND, json!({"spec": {"image": "i"}}));
        let live = apply(KIND, None, &config, &manager("ci"), false).unwrap();
        let later = Manager { now: WallTime(9_000), ..manager("ci") };
        let again = apply(KIND, Some(&live), &config, &later, false).unwrap();
        assert_eq!(again.metadata.managed_fields, live.metadata.managed_fields);
    }

    #[test]
    fn the_manager_is_named_by_the_query_or_the_user_agent() {
        assert_eq!(field_manager(Some("ci"), Some("kubectl/v1.32"), true).unwrap(), "ci");
        assert_eq!(field_manager(None, Some("kubectl/v1.32 (linux)"), false).unwrap(), "kubectl");
        assert_eq!(field_manager(None, None, false).unwrap(), "unknown");
        assert!(field_manager(None, Some("kubectl/v1"), true).is_err());
        assert!(field_manager(Some(&"m".repeat(129)), None, false).is_err());
    }
}
