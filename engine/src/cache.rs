//! The engine's view of the store, fed by watch events and by the replies to its own writes.
//!
//! *Caveats*: the cache may be stale. Deleted objects may still be here and new objects may not
//! be here yet. Controllers that must not act on a stale view (dropping a finalizer, deleting a
//! dependent) confirm with an uncached read first.
//!
//! *Guarantees*: an object never goes back to an older resource version, and a deleted object
//! never reappears from an older event (tombstones are kept until the watch stream has passed
//! them).

use crate::api::{Object, ObjectKey, Uid};
use crate::store::{EventType, WatchEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct Cache {
    objects: BTreeMap<ObjectKey, Arc<Object>>,
    uids: BTreeMap<Uid, ObjectKey>,
    /// owner uid -> dependents that reference it.
    dependents: BTreeMap<Uid, BTreeSet<ObjectKey>>,
    tombstones: BTreeMap<ObjectKey, u64>,
    /// Every watch event up to this version has been applied.
    watch_rv: u64,
}

/// Whether an object state is its final one: deleted and no finalizer left. (The store stamps a
/// `deletionTimestamp` on every object it removes.)
pub fn is_removed(object: &Object) -> bool {
    object.metadata.is_deleting() && object.metadata.finalizers.is_empty()
}

impl Cache {
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        self.objects.get(key)
    }

    pub fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>> {
        self.uids.get(uid).and_then(|k| self.objects.get(k))
    }

    /// Objects of `kind` (all kinds if `"*"`) in `namespace` (all if `None`), in key order.
    pub fn list<'a>(&'a self, kind: &'a str, namespace: Option<&'a str>) -> impl Iterator<Item = &'a Arc<Object>> + 'a {
        let start = ObjectKey {
            kind: if kind == "*" { String::new() } else { kind.to_string() },
            namespace: None,
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(move |(k, _)| kind == "*" || k.kind == kind)
            .map(|(_, o)| o)
            .filter(move |o| namespace.is_none_or(|ns| o.metadata.namespace.as_deref() == Some(ns)))
    }

    /// Keys of objects that list `owner` among their ownerReferences.
    pub fn dependents_of(&self, owner: &Uid) -> impl Iterator<Item = &ObjectKey> {
        self.dependents.get(owner).into_iter().flatten()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The version up to which the watch stream has been applied.
    pub fn watch_resource_version(&self) -> u64 {
        self.watch_rv
    }

    /// Apply an object state seen on the watch stream. Returns false if it was older than what
    /// the cache holds (and so ignored).
    pub fn apply_watched(&mut self, event: &WatchEvent) -> bool {
        let rv = event.resource_version();
        self.watch_rv = self.watch_rv.max(rv);
        let applied = self.apply(&event.object, event.event == EventType::Deleted);
        self.tombstones.retain(|_, tomb| *tomb > self.watch_rv);
        applied
    }

    /// Apply an object state the engine learned from its own write's reply. A reply at or below
    /// the version the watch stream has reached carries no news (the cache already shows that
    /// version or a later one) and is ignored: applying it could bring back an object whose
    /// deletion the watch delivered before the reply came.
    pub fn apply_own_write(&mut self, object: &Arc<Object>) -> bool {
        if object.metadata.resource_version <= self.watch_rv {
            return false;
        }
        self.apply(object, is_removed(object))
    }

    /// Replace everything with a fresh list taken at `resource_version`. Returns the objects that
    /// changed, appeared or disappeared (the disappeared ones as last cached).
    pub fn resync(&mut self, objects: Vec<Arc<Object>>, resource_version: u64) -> Vec<Arc<Object>> {
        let mut changed = Vec::new();
        let fresh: BTreeMap<ObjectKey, Arc<Object>> = objects.into_iter().map(|o| (o.key(), o)).collect();
        for (key, old) in &self.objects {
            if !fresh.contains_key(key) {
                changed.push(old.clone());
            }
        }
        for (key, new) in &fresh {
            if self.objects.get(key).is_none_or(|old| old.metadata.resource_version != new.metadata.resource_version) {
                changed.push(new.clone());
            }
        }
        *self = Cache::default();
        for object in fresh.into_values() {
            self.insert(object);
        }
        self.watch_rv = resource_version;
        changed
    }

    fn apply(&mut self, object: &Arc<Object>, removed: bool) -> bool {
        let key = object.key();
        let rv = object.metadata.resource_version;
        let current = self.objects.get(&key).map(|o| o.metadata.resource_version);
        if current.is_some_and(|c| c >= rv) || self.tombstones.get(&key).is_some_and(|t| *t >= rv) {
            return false;
        }
        if removed {
            self.remove(&key);
            self.tombstones.insert(key, rv);
        } else {
            self.insert(object.clone());
        }
        true
    }

    fn insert(&mut self, object: Arc<Object>) {
        let key = object.key();
        self.remove(&key);
        self.uids.insert(object.metadata.uid.clone(), key.clone());
        for owner in &object.metadata.owner_references {
            self.dependents.entry(owner.uid.clone()).or_default().insert(key.clone());
        }
        self.objects.insert(key, object);
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(old) = self.objects.remove(key) else { return };
        self.uids.remove(&old.metadata.uid);
        for owner in &old.metadata.owner_references {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectMeta;
    use crate::time::WallTime;

    fn obj(name: &str, rv: u64, deleted: bool) -> Arc<Object> {
        let mut meta = ObjectMeta::named(Some("ns"), name);
        meta.uid = Uid(format!("uid-{name}"));
        meta.resource_version = rv;
        if deleted {
            meta.deletion_timestamp = Some(WallTime(1));
        }
        Arc::new(Object::new("PhysicalContainer", meta, serde_json::json!({})))
    }

    #[test]
    fn never_goes_back_and_deleted_objects_do_not_reappear() {
        let mut cache = Cache::default();
        assert!(cache.apply_own_write(&obj("a", 5, false)));
        assert!(!cache.apply_watched(&ev(obj("a", 3, false))), "older event ignored");
        assert_eq!(cache.get(&obj("a", 0, false).key()).map(|o| o.metadata.resource_version), Some(5));
        assert!(cache.apply_own_write(&obj("a", 7, true)), "removal");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
        assert!(!cache.apply_watched(&ev(obj("a", 6, false))), "tombstone holds");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
        assert!(cache.apply_watched(&ev(obj("a", 9, false))), "a newer object of that name");
        let gone = WatchEvent { event: EventType::Deleted, object: obj("a", 10, false) };
        assert!(cache.apply_watched(&gone), "a Deleted event removes even without a deletionTimestamp");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
    }

    /// The reply to a write can arrive after the watch delivered the object's deletion (its last
    /// finalizer removed by a later write): the object must not come back from the reply.
    #[test]
    fn a_late_reply_does_not_bring_back_an_object_the_watch_deleted() {
        let mut cache = Cache::default();
        assert!(cache.apply_watched(&ev(obj("a", 161, false))));
        assert!(cache.apply_watched(&ev(obj("a", 162, false))), "the reply's version, seen first on the watch");
        let gone = WatchEvent { event: EventType::Deleted, object: obj("a", 163, true) };
        assert!(cache.apply_watched(&gone));
        assert!(!cache.apply_own_write(&obj("a", 162, false)), "the reply of the write at 162 is old news");
        assert!(cache.get(&obj("a", 0, false).key()).is_none(), "resurrected");
    }

    fn ev(object: Arc<Object>) -> WatchEvent {
        WatchEvent { event: EventType::Modified, object }
    }
}
