//! Strategic merge patch (`application/strategic-merge-patch+json`), as Kubernetes'
//! `apimachinery/pkg/util/strategicpatch` applies it on the server, with the lists of
//! [`list_types`](super::list_types) standing in for the Go structs' `patchStrategy` and
//! `patchMergeKey` tags.
//!
//! - Maps merge recursively; `null` deletes a key; a scalar, or a value of another type than the
//!   original's, replaces it.
//! - In a map, `$patch: replace` replaces the map by the patch's (other) keys, `$patch: delete`
//!   deletes it, `$patch: merge` is the default; `$retainKeys: [..]` first drops every original key
//!   it does not list (and refuses a patch that sets a key it does not list).
//! - A keyed list ([`ListType::Map`]) matches items by its merge key (the first key): a patch item
//!   is merged into the original item with the same key, or added; `{<key>: v, "$patch":
//!   "delete"}` deletes the items with that key; an item `{"$patch": "replace"}` makes the list
//!   the patch's other items.
//! - A set ([`ListType::Set`]) is the union of both lists, without duplicates (a set the patch
//!   only orders keeps its own);
//!   `$deleteFromPrimitiveList/<field>: [..]` (beside the list) removes values, from a list of any
//!   type.
//! - An atomic list ([`ListType::Atomic`]) is replaced.
//! - `$setElementOrder/<field>: [..]` (beside the list; `{<key>: v}` items for a keyed list)
//!   orders a keyed list or a set; it is ignored for an atomic list.
//!
//! Order, as Kubernetes keeps it: the items the patch names (its list, or its
//! `$setElementOrder` list when there is one) come in the patch's order; the items only the
//! original has keep their original order and are interleaved with those: one goes before a
//! named item when both were in the original list and it was before it there. So an added item
//! the order does not place comes before the original items (Kubernetes prepends), and
//! `$setElementOrder` must name every item of the patch's list, in the same order. Under a
//! `$setElementOrder`, an added item counts as being in the place a deleted item freed (see
//! `Places`), as apimachinery's own tests expect.
//!
//! *Guarantees*: pure; the result holds no `$` key (unknown directives are dropped, also from
//! values added whole, and nulls there are dropped as Kubernetes drops them); on an error the
//! original is left as it was.
//!
//! *Assumptions*: the original is an object as served (its keyed lists' items are objects that
//! carry their merge key).
//!
//! *Caveats*: `$patch: delete` on a map deletes the key (Kubernetes leaves `{}` for a map the
//! original has); items are matched by the first merge key only (as strategic merge patch does,
//! unlike server-side apply); equal numbers match only when written alike (`80` is not `80.0`);
//! `$patch: replace` on a map that the original lacks sets it (Kubernetes drops it).

use super::list_types::{ListType, list_type};
use serde_json::{Map, Value};
use std::fmt;

/// The key of the map and list-item directive.
const PATCH: &str = "$patch";
/// The key of the directive that keeps only the keys it lists.
const RETAIN_KEYS: &str = "$retainKeys";
/// The prefix of the directive that orders the list it names.
const SET_ORDER: &str = "$setElementOrder/";
/// The prefix of the directive that removes values from the list it names.
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Why a strategic merge patch could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StrategicError {
    #[error("a strategic merge patch must be a JSON object")]
    NotAnObject,
    #[error("`$patch: delete` at the top of the patch would delete the whole object (send a DELETE instead)")]
    DeletesObject,
    #[error("{path}: `$patch` must be \"replace\", \"delete\" or \"merge\", not {value}")]
    UnknownPatch { path: String, value: String },
    #[error("{path}: `{directive}` must be a list")]
    NotAList { path: String, directive: String },
    #[error("{path}: `$retainKeys` must list field names (strings), not {value}")]
    NotAName { path: String, value: String },
    #[error("{path}: the patch sets `{field}`, which `$retainKeys` does not list")]
    NotRetained { path: String, field: String },
    #[error("{path}: the list is merged by `{key}`, so its items must be objects, not {item}")]
    NotAnItem { path: String, key: &'static str, item: String },
    #[error("{path}: the list is merged by `{key}`, and this item has none: {item}")]
    NoMergeKey { path: String, key: &'static str, item: String },
    #[error("{path}: the list is a set of scalars, not of {item}")]
    NotAScalar { path: String, item: String },
    #[error("{path}: `$setElementOrder` must name every item of the patch's list, in the patch's order")]
    OrderMismatch { path: String },
}

type Result<T> = std::result::Result<T, StrategicError>;

/// Patch `original` (an object of `kind`, as clients see it) with `patch`.
///
/// *Guarantees*: on an error `original` is unchanged.
pub fn apply(kind: &str, original: &mut Value, patch: &Value) -> Result<()> {
    *original = patched(kind, original.clone(), patch)?;
    Ok(())
}

/// `original` (an object of `kind`) patched with `patch`; a non-object original counts as `{}`.
pub fn patched(kind: &str, original: Value, patch: &Value) -> Result<Value> {
    patched_with(list_type, kind, original, patch)
}

/// How the list at a path of an object of a kind merges: [`list_type`], or a test's table.
type ListTypes = fn(&str, &[&str]) -> ListType;

/// [`patched`], with `lists` telling how each list merges.
fn patched_with(lists: ListTypes, kind: &str, original: Value, patch: &Value) -> Result<Value> {
    let Value::Object(patch) = patch else { return Err(StrategicError::NotAnObject) };
    let original = match original {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let merged = Merger { kind, lists }.map(&FieldPath::default(), original, patch)?;
    merged.map(Value::Object).ok_or(StrategicError::DeletesObject)
}

/// Field names from the object's root, without list indices (a keyed item's fields are named
/// through its list), as [`list_type`] takes them.
#[derive(Clone, Debug, Default)]
struct FieldPath(Vec<String>);

impl FieldPath {
    fn child(&self, name: &str) -> FieldPath {
        let mut names = self.0.clone();
        names.push(name.to_string());
        FieldPath(names)
    }

    fn list_type(&self, lists: ListTypes, kind: &str) -> ListType {
        let names: Vec<&str> = self.0.iter().map(String::as_str).collect();
        lists(kind, &names)
    }

    fn shown(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("the object") } else { f.write_str(&self.0.join(".")) }
    }
}

/// What a `$patch` directive asks of the map or list item it is in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

/// The `$patch` directive of `map` (`Merge` when it has none).
fn directive(path: &FieldPath, map: &Map<String, Value>) -> Result<Directive> {
    match map.get(PATCH) {
        None => Ok(Directive::Merge),
        Some(Value::String(s)) if s == "merge" => Ok(Directive::Merge),
        Some(Value::String(s)) if s == "replace" => Ok(Directive::Replace),
        Some(Value::String(s)) if s == "delete" => Ok(Directive::Delete),
        Some(other) => Err(StrategicError::UnknownPatch { path: path.shown(), value: other.to_string() }),
    }
}

/// The list a directive's value must be.
fn directive_list<'v>(path: &FieldPath, directive: &str, value: &'v Value) -> Result<&'v [Value]> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| StrategicError::NotAList { path: path.shown(), directive: directive.to_string() })
}

/// The fields a patch map touches: its own keys and those its list directives name.
fn fields(patch: &Map<String, Value>) -> Vec<&str> {
    let mut names: Vec<&str> = patch
        .keys()
        .filter_map(|k| match k.strip_prefix('$') {
            None => Some(k.as_str()),
            Some(_) => k.strip_prefix(SET_ORDER).or_else(|| k.strip_prefix(DELETE_FROM)),
        })
        .filter(|name| !name.starts_with('$'))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The merges, for objects of one kind.
struct Merger<'k> {
    kind: &'k str,
    lists: ListTypes,
}

impl Merger<'_> {
    /// `original` with `patch` merged in; `None` when the patch deletes the map.
    fn map(
        &self,
        path: &FieldPath,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>> {
        match directive(path, patch)? {
            Directive::Delete => return Ok(None),
            Directive::Replace => original.clear(),
            Directive::Merge => {}
        }
        retain_keys(path, &mut original, patch)?;
        for name in fields(patch) {
            self.field(path, &mut original, patch, name)?;
        }
        Ok(Some(original))
    }

    /// Merge the patch's `name` (and the directives beside it that name it) into `original`.
    fn field(
        &self,
        path: &FieldPath,
        original: &mut Map<String, Value>,
        patch: &Map<String, Value>,
        name: &str,
    ) -> Result<()> {
        let at = path.child(name);
        let order = patch.get(&format!("{SET_ORDER}{name}"));
        let current = original.remove(name);
        let merged = match (patch.get(name), current) {
            (Some(Value::Null), _) => None,
            (Some(value), current) => self.value(&at, current, value, order)?,
            (None, Some(Value::Array(items))) => Some(Value::Array(self.list(&at, items, None, order)?)),
            (None, current) => current,
        };
        let merged = match (merged, patch.get(&format!("{DELETE_FROM}{name}"))) {
            (Some(Value::Array(items)), Some(deletions)) => Some(Value::Array(delete_values(&at, items, deletions)?)),
            (merged, Some(deletions)) => directive_list(&at, DELETE_FROM, deletions).map(|_| merged)?,
            (merged, None) => merged,
        };
        if let Some(value) = merged {
            original.insert(name.to_string(), value);
        }
        Ok(())
    }

    /// `original` (absent, or of any type) patched with `patch` (not `null`), ordered by `order`
    /// if a list; `None` when the patch deletes it.
    fn value(
        &self,
        at: &FieldPath,
        original: Option<Value>,
        patch: &Value,
        order: Option<&Value>,
    ) -> Result<Option<Value>> {
        match patch {
            Value::Object(patch) => {
                let base = match original {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                Ok(self.map(at, base, patch)?.map(Value::Object))
            }
            Value::Array(patch) => {
                let base = match original {
                    Some(Value::Array(items)) => items,
                    _ => Vec::new(),
                };
                Ok(Some(Value::Array(self.list(at, base, Some(patch.as_slice()), order)?)))
            }
            scalar => Ok(Some(scalar.clone())),
        }
    }

    /// The list `original` patched with `patch` (absent: only ordered) as its type says.
    fn list(
        &self,
        at: &FieldPath,
        original: Vec<Value>,
        patch: Option<&[Value]>,
        order: Option<&Value>,
    ) -> Result<Vec<Value>> {
        let order = order.map(|o| directive_list(at, SET_ORDER, o)).transpose()?;
        let list_type = at.list_type(self.lists, self.kind);
        match (list_type, list_type.merge_key(), patch) {
            (ListType::Atomic, _, Some(patch)) => self.fresh_items(at, patch),
            (ListType::Atomic, _, None) => Ok(original),
            (_, Some(key), patch) => self.keyed(at, key, original, patch.unwrap_or_default(), order),
            (_, None, patch) => set(at, original, patch, order),
        }
    }

    /// Items added whole: their directives and nulls dropped, a deleted item left out.
    fn fresh_items(&self, at: &FieldPath, items: &[Value]) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.extend(self.value(at, None, item, None)?);
        }
        Ok(out)
    }

    /// A keyed list merged: deletions, then merges and additions, then the order.
    fn keyed(
        &self,
        at: &FieldPath,
        key: &'static str,
        original: Vec<Value>,
        patch: &[Value],
        order: Option<&[Value]>,
    ) -> Result<Vec<Value>> {
        let patch = KeyedPatch::split(at, key, patch)?;
        let mut merged = original;
        let ids = merged.iter().map(|item| key_of(at, key, item).cloned()).collect::<Result<Vec<_>>>()?;
        let mut places = Places::new(ids);
        for id in &patch.deleted {
            merged.retain(|o| o.get(key) != Some(*id));
            places.delete(id);
        }
        if patch.replace {
            merged.clear();
        }
        let kept = places.kept();
        for (id, map) in &patch.items {
            if self.merge_item(at, key, &mut merged, id, map)? && !patch.replace {
                places.add(id);
            }
        }
        let named: Vec<&Value> = patch.items.iter().map(|(id, _)| *id).collect();
        let (order, server) = match order {
            Some(order) => {
                let order = order.iter().map(|o| key_of(at, key, o)).collect::<Result<Vec<_>>>()?;
                (Some(order), places.ids.iter().collect::<Vec<_>>())
            }
            None => (None, kept.iter().collect()),
        };
        ordered(at, merged, &named, order.as_deref(), &server, Some(key))
    }

    /// Merge `patch` into the item of `list` whose key is `id`, or add it (then `true`).
    fn merge_item(
        &self,
        at: &FieldPath,
        key: &str,
        list: &mut Vec<Value>,
        id: &Value,
        patch: &Map<String, Value>,
    ) -> Result<bool> {
        match list.iter().position(|o| o.get(key) == Some(id)) {
            Some(i) => {
                let base = match std::mem::take(&mut list[i]) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                list[i] = Value::Object(self.map(at, base, patch)?.unwrap_or_default());
                Ok(false)
            }
            None => {
                list.push(Value::Object(self.map(at, Map::new(), patch)?.unwrap_or_default()));
                Ok(true)
            }
        }
    }
}

/// A keyed list's patch, by what it asks.
struct KeyedPatch<'p> {
    /// The items to merge in or add, with their keys.
    items: Vec<(&'p Value, &'p Map<String, Value>)>,
    /// The keys of the items to delete (`$patch: delete`).
    deleted: Vec<&'p Value>,
    /// Whether the list is the patch's items only (`$patch: replace`).
    replace: bool,
}

impl<'p> KeyedPatch<'p> {
    fn split(at: &FieldPath, key: &'static str, patch: &'p [Value]) -> Result<Self> {
        let mut parts = KeyedPatch { items: Vec::with_capacity(patch.len()), deleted: Vec::new(), replace: false };
        for item in patch {
            let id = || key_of(at, key, item);
            let map = item.as_object().ok_or_else(|| StrategicError::NotAnItem {
                path: at.shown(),
                key,
                item: item.to_string(),
            })?;
            match directive(at, map)? {
                Directive::Delete => parts.deleted.push(id()?),
                Directive::Replace => parts.replace = true,
                Directive::Merge => parts.items.push((id()?, map)),
            }
        }
        Ok(parts)
    }
}

/// The places of a keyed list's original items (by their keys), as apimachinery compares them
/// when it orders by `$setElementOrder`: it deletes items in place, and the items it adds then
/// take the places the deletions freed (its slices share one array), so an added item can be
/// placed after an item only the original has.
struct Places {
    ids: Vec<Value>,
    len: usize,
}

impl Places {
    fn new(ids: Vec<Value>) -> Self {
        let len = ids.len();
        Places { ids, len }
    }

    /// Delete the items with key `id`, moving the later ones up (the last place keeps its item).
    fn delete(&mut self, id: &Value) {
        while let Some(i) = self.ids[..self.len].iter().position(|o| o == id) {
            let last = self.ids[self.len - 1].clone();
            self.ids.remove(i);
            self.ids.insert(self.len - 1, last);
            self.len -= 1;
        }
    }

    /// The items left after the deletions.
    fn kept(&self) -> Vec<Value> {
        self.ids[..self.len].to_vec()
    }

    /// An added item, in the first place a deletion freed if any is left.
    fn add(&mut self, id: &Value) {
        if self.len < self.ids.len() {
            self.ids[self.len] = id.clone();
            self.len += 1;
        }
    }
}

/// The value of `item`'s merge key.
fn key_of<'v>(at: &FieldPath, key: &'static str, item: &'v Value) -> Result<&'v Value> {
    let map =
        item.as_object().ok_or_else(|| StrategicError::NotAnItem { path: at.shown(), key, item: item.to_string() })?;
    map.get(key).ok_or_else(|| StrategicError::NoMergeKey { path: at.shown(), key, item: item.to_string() })
}

/// Drop from `original` the keys `$retainKeys` does not list.
fn retain_keys(path: &FieldPath, original: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<()> {
    let Some(list) = patch.get(RETAIN_KEYS) else { return Ok(()) };
    let mut keep = Vec::new();
    for name in directive_list(path, RETAIN_KEYS, list)? {
        let name =
            name.as_str().ok_or_else(|| StrategicError::NotAName { path: path.shown(), value: name.to_string() })?;
        keep.push(name);
    }
    let unlisted = patch.iter().find(|(k, v)| !k.starts_with('$') && !v.is_null() && !keep.contains(&k.as_str()));
    if let Some((field, _)) = unlisted {
        return Err(StrategicError::NotRetained { path: path.shown(), field: field.clone() });
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// A set merged: the union without duplicates (none removed when the patch has no list), then
/// the order.
fn set(at: &FieldPath, original: Vec<Value>, patch: Option<&[Value]>, order: Option<&[Value]>) -> Result<Vec<Value>> {
    let server = original.clone();
    let merged = match patch {
        Some(patch) => union(at, original, patch)?,
        None => original,
    };
    let patch = patch.unwrap_or_default();
    let named: Vec<&Value> = patch.iter().collect();
    let order: Option<Vec<&Value>> = order.map(|o| o.iter().collect());
    ordered(at, merged, &named, order.as_deref(), &server.iter().collect::<Vec<_>>(), None)
}

/// `original` and then `patch`'s new values, without duplicates.
fn union(at: &FieldPath, original: Vec<Value>, patch: &[Value]) -> Result<Vec<Value>> {
    if let Some(item) = original.iter().chain(patch).find(|v| v.is_object() || v.is_array()) {
        return Err(StrategicError::NotAScalar { path: at.shown(), item: item.to_string() });
    }
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    for value in original.into_iter().chain(patch.iter().cloned()) {
        if !merged.contains(&value) {
            merged.push(value);
        }
    }
    Ok(merged)
}

/// `items` without the values `deletions` lists.
fn delete_values(at: &FieldPath, mut items: Vec<Value>, deletions: &Value) -> Result<Vec<Value>> {
    let deletions = directive_list(at, DELETE_FROM, deletions)?;
    items.retain(|v| !deletions.contains(v));
    Ok(items)
}

/// An item's identity: its merge key's value, or the item itself in a set.
fn identity<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

/// `merged` in the order the patch gives: by `order` (checked against the patch's items
/// `named`) when the patch has one, else by `named`; the rest interleaved by `server`.
fn ordered(
    at: &FieldPath,
    merged: Vec<Value>,
    named: &[&Value],
    order: Option<&[&Value]>,
    server: &[&Value],
    key: Option<&str>,
) -> Result<Vec<Value>> {
    let Some(order) = order else { return Ok(reorder(merged, named, server, key)) };
    if !order.is_empty() && !is_subsequence(named, order) {
        return Err(StrategicError::OrderMismatch { path: at.shown() });
    }
    Ok(reorder(merged, order, server, key))
}

/// Whether `items` appear in `order` in the same order.
fn is_subsequence(items: &[&Value], order: &[&Value]) -> bool {
    let mut rest = order.iter();
    items.iter().all(|item| rest.any(|o| o == item))
}

/// The items `order` names, in its order, interleaved with the others, in `server`'s order: an
/// other item goes first when it was before the named one in `server`.
fn reorder(items: Vec<Value>, order: &[&Value], server: &[&Value], key: Option<&str>) -> Vec<Value> {
    let index = |list: &[&Value], item: &Value| identity(item, key).and_then(|id| list.iter().position(|o| *o == id));
    let (mut named, mut others): (Vec<Value>, Vec<Value>) = items.into_iter().partition(|i| index(order, i).is_some());
    named.sort_by_key(|i| index(order, i));
    others.sort_by_key(|i| index(server, i).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(named.len() + others.len());
    let (mut others, mut named) = (others.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let other_first = match (others.peek(), named.peek()) {
            (Some(o), Some(n)) => matches!((index(server, o), index(server, n)), (Some(a), Some(b)) if a < b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if other_first { others.next() } else { named.next() });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const LC: &str = "LogicalContainer";

    fn patch(kind: &str, original: Value, patch: Value) -> Value {
        patched(kind, original, &patch).unwrap()
    }

    fn env(pairs: &[(&str, &str)]) -> Value {
        Value::Array(pairs.iter().map(|(n, v)| json!({"name": n, "value": v})).collect())
    }

    fn no_dollar_keys(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.iter().all(|(k, v)| !k.starts_with('$') && no_dollar_keys(v)),
            Value::Array(items) => items.iter().all(no_dollar_keys),
            _ => true,
        }
    }

    #[test]
    fn maps_merge_recursively_null_deletes_and_scalars_replace() {
        let original = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"image": "old"}});
        let out = patch(
            LC,
            original,
            json!({"metadata": {"labels": {"x": null, "z": "3"}}, "spec": {"image": "new", "stop": true}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "labels": {"y": "2", "z": "3"}}, "spec": {"image": "new", "stop": true}})
        );
        // A value of another type replaces; a null for an absent key is dropped.
        let out = patch(LC, json!({"spec": {"image": {"a": 1}}}), json!({"spec": {"image": "x", "gone": null}}));
        assert_eq!(out, json!({"spec": {"image": "x"}}));
    }

    #[test]
    fn patch_replace_in_a_map_replaces_it() {
        let original = json!({"metadata": {"labels": {"x": "1", "y": "2"}}});
        let out = patch(LC, original, json!({"metadata": {"labels": {"$patch": "replace", "z": "3"}}}));
        assert_eq!(out, json!({"metadata": {"labels": {"z": "3"}}}));
    }

    #[test]
    fn patch_delete_in_a_map_deletes_it() {
        let original = json!({"metadata": {"name": "a", "labels": {"x": "1"}}});
        let out = patch(LC, original.clone(), json!({"metadata": {"labels": {"$patch": "delete"}}}));
        assert_eq!(out, json!({"metadata": {"name": "a"}}));
        let out = patch(LC, original.clone(), json!({"metadata": {"annotations": {"$patch": "delete", "a": "b"}}}));
        assert_eq!(out, original);
        assert_eq!(patched(LC, original, &json!({"$patch": "delete"})), Err(StrategicError::DeletesObject));
    }

    #[test]
    fn retain_keys_keeps_only_the_listed_keys_then_merges() {
        let original = json!({"spec": {"image": "a", "imageRef": "b", "mode": "session"}});
        let out = patch(LC, original.clone(), json!({"spec": {"$retainKeys": ["imageRef", "mode"], "imageRef": "c"}}));
        assert_eq!(out, json!({"spec": {"imageRef": "c", "mode": "session"}}));
        let error = patched(LC, original, &json!({"spec": {"$retainKeys": ["mode"], "image": "x"}})).unwrap_err();
        assert!(matches!(error, StrategicError::NotRetained { ref field, .. } if field == "image"), "{error}");
    }

    #[test]
    fn keyed_items_merge_by_key_and_new_ones_are_added() {
        let original = json!({"spec": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}});
        let out = patch(LC, original, json!({"spec": {"env": [{"name": "B", "value": "3"}, {"name": "C"}]}}));
        assert_eq!(
            out["spec"]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C"}])
        );
    }

    #[test]
    fn an_added_item_that_nothing_orders_comes_first_as_in_kubernetes() {
        let original = json!({"spec": {"env": env(&[("A", "1"), ("B", "2")])}});
        let out = patch(LC, original, json!({"spec": {"env": [{"name": "C", "value": "3"}]}}));
        assert_eq!(out["spec"]["env"], env(&[("C", "3"), ("A", "1"), ("B", "2")]));
    }

    #[test]
    fn an_item_without_the_merge_key_is_an_error() {
        let original = json!({"spec": {"env": env(&[("A", "1")])}});
        let error = patched(LC, original.clone(), &json!({"spec": {"env": [{"value": "2"}]}})).unwrap_err();
        assert!(matches!(error, StrategicError::NoMergeKey { key: "name", .. }), "{error}");
        assert!(error.to_string().contains("spec.env"), "{error}");
        let error = patched(LC, original.clone(), &json!({"spec": {"env": [{"$patch": "delete"}]}})).unwrap_err();
        assert!(matches!(error, StrategicError::NoMergeKey { .. }), "{error}");
        let error = patched(LC, original, &json!({"spec": {"env": ["A"]}})).unwrap_err();
        assert!(matches!(error, StrategicError::NotAnItem { .. }), "{error}");
    }

    #[test]
    fn a_delete_item_deletes_the_matching_item() {
        let original = json!({"spec": {"env": env(&[("A", "1"), ("B", "2"), ("C", "3")])}});
        let out = patch(
            LC,
            original,
            json!({"spec": {"env": [{"name": "B", "$patch": "delete"}, {"name": "X", "$patch": "delete"}]}}),
        );
        assert_eq!(out["spec"]["env"], env(&[("A", "1"), ("C", "3")]));
    }

    #[test]
    fn a_replace_item_replaces_the_whole_list() {
        let original = json!({"spec": {"env": env(&[("A", "1"), ("B", "2")])}});
        let out = patch(LC, original, json!({"spec": {"env": [{"name": "C", "value": "3"}, {"$patch": "replace"}]}}));
        assert_eq!(out["spec"]["env"], env(&[("C", "3")]));
    }

    #[test]
    fn lists_inside_keyed_items_merge_by_their_own_path() {
        let original = json!({"spec": {"networks": [{"name": "n", "aliases": ["a"]}]}});
        // `spec.networks.aliases` is not in the table: it is atomic and replaced.
        let out = patch(LC, original, json!({"spec": {"networks": [{"name": "n", "aliases": ["b"]}]}}));
        assert_eq!(out["spec"]["networks"], json!([{"name": "n", "aliases": ["b"]}]));
        // `metadata.ownerReferences` items are objects merged into by `uid`.
        let original = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}});
        let out = patch(LC, original, json!({"metadata": {"ownerReferences": [{"uid": "2", "controller": true}]}}));
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid": "1", "name": "a"}, {"uid": "2", "name": "b", "controller": true}])
        );
    }

    #[test]
    fn set_element_order_orders_a_keyed_list() {
        let original = json!({"spec": {"env": env(&[("A", "1"), ("B", "2"), ("C", "3")])}});
        let order = json!({"spec": {"$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "B"}]}});
        assert_eq!(patch(LC, original, order)["spec"]["env"], env(&[("C", "3"), ("A", "1"), ("B", "2")]));
    }

    #[test]
    fn set_element_order_interleaves_server_only_items_as_kubernetes_does() {
        // apimachinery's "set elements order in a list with server-only items 2".
        let ids = |names: &[&str]| Value::Array(names.iter().map(|n| json!({"name": n})).collect());
        let original = json!({"spec": {"env": ids(&["1", "2", "9", "3", "4"])}});
        let order = json!({"spec": {"$setElementOrder/env": ids(&["2", "1", "4", "3"])}});
        assert_eq!(patch(LC, original, order)["spec"]["env"], ids(&["2", "1", "9", "4", "3"]));
    }

    #[test]
    fn set_element_order_must_name_the_patch_items_in_order() {
        let original = json!({"spec": {"env": env(&[("A", "1"), ("B", "2")])}});
        let bad = json!({"spec": {"$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
            "env": [{"name": "B", "value": "3"}, {"name": "A", "value": "4"}]}});
        assert!(matches!(patched(LC, original.clone(), &bad), Err(StrategicError::OrderMismatch { .. })));
        let bad = json!({"spec": {"$setElementOrder/env": [{"value": "A"}]}});
        assert!(matches!(patched(LC, original.clone(), &bad), Err(StrategicError::NoMergeKey { .. })));
        let bad = json!({"spec": {"$setElementOrder/env": "A"}});
        assert!(matches!(patched(LC, original, &bad), Err(StrategicError::NotAList { .. })));
    }

    #[test]
    fn a_set_is_a_union_without_duplicates() {
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = patch(LC, original.clone(), json!({"metadata": {"finalizers": ["b", "c"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let order = json!({"metadata": {"finalizers": ["c"], "$setElementOrder/finalizers": ["a", "b", "c"]}});
        assert_eq!(patch(LC, original.clone(), order)["metadata"]["finalizers"], json!(["a", "b", "c"]));
        // Without an order, Kubernetes puts what it adds first.
        let out = patch(LC, original.clone(), json!({"metadata": {"finalizers": ["c"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let error = patched(LC, original, &json!({"metadata": {"finalizers": [{"a": 1}]}})).unwrap_err();
        assert!(matches!(error, StrategicError::NotAScalar { .. }), "{error}");
    }

    #[test]
    fn delete_from_primitive_list_removes_values() {
        let original = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
        let out = patch(LC, original.clone(), json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "x"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
        // Also from an atomic list; never adding a list that is not there.
        let out = patch(
            LC,
            json!({"spec": {"command": ["a", "b"]}}),
            json!({"spec": {"$deleteFromPrimitiveList/command": ["a"]}}),
        );
        assert_eq!(out, json!({"spec": {"command": ["b"]}}));
        let out = patch(LC, json!({"spec": {}}), json!({"spec": {"$deleteFromPrimitiveList/args": ["a"]}}));
        assert_eq!(out, json!({"spec": {}}));
        // With an order and additions, as kubectl sends them.
        let both = json!({"metadata": {"$setElementOrder/finalizers": ["c", "d", "a"], "finalizers": ["d"],
            "$deleteFromPrimitiveList/finalizers": ["b"]}});
        assert_eq!(patch(LC, original, both)["metadata"]["finalizers"], json!(["c", "d", "a"]));
    }

    #[test]
    fn atomic_lists_are_replaced_and_ignore_set_element_order() {
        let original = json!({"spec": {"command": ["a", "b"], "args": ["x", "y"]}});
        let out = patch(
            LC,
            original,
            json!({"spec": {"command": ["c"], "$setElementOrder/command": ["c"], "$setElementOrder/args": ["y", "x"]}}),
        );
        assert_eq!(out, json!({"spec": {"command": ["c"], "args": ["x", "y"]}}));
        // A user's kind has no keyed lists: its env is replaced.
        let out =
            patch("MyKind", json!({"spec": {"env": env(&[("A", "1")])}}), json!({"spec": {"env": env(&[("B", "2")])}}));
        assert_eq!(out["spec"]["env"], env(&[("B", "2")]));
        // Namespace: spec.finalizers is atomic, metadata.finalizers a set.
        let ns = json!({"metadata": {"finalizers": ["a"]}, "spec": {"finalizers": ["kubernetes"]}});
        let out = patch("Namespace", ns, json!({"metadata": {"finalizers": ["b"]}, "spec": {"finalizers": ["x"]}}));
        assert_eq!(out, json!({"metadata": {"finalizers": ["b", "a"]}, "spec": {"finalizers": ["x"]}}));
    }

    #[test]
    fn unknown_directives_are_dropped_everywhere() {
        let original = json!({"metadata": {"name": "a"}});
        let out = patch(
            LC,
            original,
            json!({"$unknown": 1, "$patch": "merge", "metadata": {"$foo": "x", "labels": {"$bar": 1, "a": "b"}},
                "spec": {"env": [{"name": "A", "$what": 2, "nested": {"$patch": "delete"}}],
                    "command": [{"$x": 1, "y": null}, {"$patch": "delete"}], "$setElementOrder/$weird": []}}),
        );
        assert!(no_dollar_keys(&out), "{out}");
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "labels": {"a": "b"}}, "spec": {"env": [{"name": "A"}], "command": [{}]}})
        );
        let error = patched(LC, json!({}), &json!({"spec": {"$patch": "remove"}})).unwrap_err();
        assert!(matches!(error, StrategicError::UnknownPatch { .. }), "{error}");
        assert_eq!(patched(LC, json!({}), &json!([1])), Err(StrategicError::NotAnObject));
    }

    #[test]
    fn an_error_leaves_the_original_as_it_was() {
        let mut original = json!({"spec": {"image": "a", "env": env(&[("A", "1")])}});
        let before = original.clone();
        assert!(apply(LC, &mut original, &json!({"spec": {"image": "b", "env": [{"value": "x"}]}})).is_err());
        assert_eq!(original, before);
        apply(LC, &mut original, &json!({"spec": {"image": "b"}})).unwrap();
        assert_eq!(original["spec"]["image"], "b");
    }

    #[test]
    fn a_kubectl_apply_patch_for_a_built_in_type() {
        // What `kubectl apply` (client side) computes when the manifest changes a label, changes
        // env B, drops env C and adds env D after A (last-applied and live had A, B, C).
        let live = json!({
            "apiVersion": "drydock.dev/v1", "kind": "LogicalContainer",
            "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web", "tier": "front"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"image": "busybox", "env": env(&[("A", "1"), ("B", "2"), ("C", "3")])}
        });
        let kubectl = json!({
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}"},
                "labels": {"tier": "back"}},
            "spec": {
                "$setElementOrder/env": [{"name": "A"}, {"name": "D"}, {"name": "B"}],
                "env": [{"name": "D", "value": "4"}, {"name": "B", "value": "20"}, {"$patch": "delete", "name": "C"}]
            }
        });
        let out = patch(LC, live.clone(), kubectl.clone());
        assert_eq!(out["metadata"]["labels"], json!({"app": "web", "tier": "back"}));
        assert_eq!(out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"], "{\"new\":1}");
        assert_eq!(out["spec"]["env"], env(&[("A", "1"), ("D", "4"), ("B", "20")]));
        assert_eq!(out["spec"]["image"], "busybox");
        assert!(no_dollar_keys(&out), "{out}");

        // Had someone else added env Z after C, Z would take C's place when compared with D (as
        // in apimachinery's "add map and delete map from merging list"): Z comes before D.
        let mut live = live;
        live["spec"]["env"] = env(&[("A", "1"), ("B", "2"), ("C", "3"), ("Z", "9")]);
        let out = patch(LC, live, kubectl);
        assert_eq!(out["spec"]["env"], env(&[("A", "1"), ("Z", "9"), ("D", "4"), ("B", "20")]));
    }
}
