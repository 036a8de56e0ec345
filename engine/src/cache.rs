//! The engine's view of the store, fed by watch events and by the replies to its own writes.
//!
//! *Caveats*: the cache may be stale. Deleted objects may still be here and new objects may not
//! be here yet. Controllers that must not act on a stale view (dropping a finalizer, deleting a
//! dependent) confirm with an uncached read first.
//!
//! *Assumptions*: watch events of one kind arrive in resource-version order, as on one Kubernetes
//! watch (or informer) per kind. Kinds are not ordered among themselves: one kind's stream may lag
//! behind another's, so how far the watch has come is known per kind.
//!
//! *Guarantees*: an object never goes back to an older resource version, and a deleted object
//! never reappears from an older event (tombstones are kept until the watch stream of their kind
//! has passed them). An object the store answered a write of NotFound leaves at once, and no
//! event of it brings it back ([`Cache::forget_gone`]): it is gone before the watch says so.

use crate::api::{Namespace, Object, ObjectKey, Resource, SmolStr, TypedError, Uid};
use crate::store::{EventType, WatchEvent};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct Cache {
    objects: crate::fixed::SortedMap<ObjectKey, Arc<Object>>,
    /// The indexes kept (see [`Index`]), and what they hold: (index, value) -> keys.
    indexes: Vec<Index>,
    /// (Hashed: looked up, never iterated; the keys of one value are in key order.)
    indexed: crate::fixed::FixedMap<(&'static str, String), BTreeSet<ObjectKey>>,
    /// uid -> key (hashed: looked up, never iterated).
    uids: crate::fixed::FixedMap<Uid, ObjectKey>,
    /// The cached namespaces by name: looked up for nearly every event, without making a key.
    namespaces: crate::fixed::FixedMap<SmolStr, Arc<Object>>,
    /// owner uid -> dependents that reference it.
    dependents: crate::fixed::FixedMap<Uid, BTreeSet<ObjectKey>>,
    tombstones: BTreeMap<ObjectKey, u64>,
    /// Objects a write's NotFound showed gone before the watch did: events of theirs still on
    /// their way are old news, and are ignored until their deletion's comes (or a relist).
    found_gone: BTreeSet<Uid>,
    /// Every watch event of every kind up to this version has been applied (the last resync's).
    synced_rv: u64,
    /// Per kind: every watch event of that kind up to this version has been applied.
    kind_rv: BTreeMap<String, u64>,
    /// Typed specs and statuses of cached objects, decoded once (see [`Cache::spec`]).
    typed: RefCell<TypedMemo>,
}

/// Decoded parts of cached objects, by the part's type and address: a status by the address of
/// the cached object, a spec by the address of the spec, which the versions of an object share
/// until one edits it (see [`Object::spec_mut`]), so that a spec is decoded once however often
/// its object's status changes.
///
/// *Guarantees*: an entry lives no longer than the cache holds what it was decoded from. While
/// the cache holds an object's `Arc`, nobody can change the object or its spec (`Arc::get_mut`
/// fails, `make_mut` copies), so what was decoded from them stays true; an entry goes when the
/// cache lets go of its object (a status) or of the spec (a spec: a new version with another
/// spec, or the object's removal), before the address can be reused.
#[derive(Default)]
struct TypedMemo(crate::fixed::FixedMap<usize, Vec<DecodedPart>>);

/// One decoded part of a cached object: its type, whether it is the status (else the spec), and
/// the decoded value.
type DecodedPart = (TypeId, bool, Arc<dyn Any + Send + Sync>);

impl std::fmt::Debug for TypedMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TypedMemo({} objects)", self.0.len())
    }
}

fn address(object: &Object) -> usize {
    std::ptr::from_ref(object) as usize
}

fn spec_address(object: &Object) -> usize {
    Arc::as_ptr(&object.spec) as usize
}

/// A secondary index over the cached objects of one kind, as an informer's indexer: `values`
/// says what an object is found by, and [`Cache::indexed`] finds the objects by it without a
/// scan. `values` must be a pure function of the object's key and spec (read it from the stored
/// JSON: it runs on every change of an object of `kind` but for those that keep its spec).
#[derive(Clone, Copy)]
pub struct Index {
    pub name: &'static str,
    pub kind: &'static str,
    pub values: fn(&Object) -> Vec<String>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("name", &self.name).field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// A change the cache took.
#[derive(Debug, Default)]
#[must_use]
pub struct Change {
    /// An object of the same name but another uid that this state displaced from the cache. Its
    /// deletion was never seen here (its events were coalesced with the new object's, or fell in a
    /// relist's gap), so whoever cared about it must now hear of it as gone.
    pub replaced: Option<Arc<Object>>,
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

    /// The cached `Namespace` named `name` (as `get` of its key, without making one).
    pub fn namespace(&self, name: &str) -> Option<&Arc<Object>> {
        self.namespaces.get(name)
    }

    pub fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>> {
        self.uids.get(uid).and_then(|k| self.objects.get(k))
    }

    /// Objects of `kind` (all kinds if `"*"`) in `namespace` (all if `None`), in key order. One
    /// kind in one namespace is a range of the cache, not a scan.
    pub fn list<'a>(&'a self, kind: &'a str, namespace: Option<&'a str>) -> impl Iterator<Item = &'a Arc<Object>> + 'a {
        let all = kind == "*";
        let start = ObjectKey::new(if all { "" } else { kind }, namespace.filter(|_| !all), "");
        self.objects
            .range(start..)
            .take_while(move |(k, _)| {
                all || (k.kind == kind && (namespace.is_none() || k.namespace.as_deref() == namespace))
            })
            .map(|(_, o)| o)
            .filter(move |o| namespace.is_none_or(|ns| o.metadata.namespace.as_deref() == Some(ns)))
    }

    /// The typed spec of `object`, decoded once while the cached state of its key holds that spec:
    /// versions share their spec until one edits it, so status changes keep the decoded spec (a
    /// spec no cached object holds is decoded afresh every time). Reconciles, mappers and
    /// indexes read the same objects many times between changes.
    pub fn spec<R: Resource>(&self, object: &Object) -> Result<Arc<R::Spec>, TypedError>
    where
        R::Spec: Send + Sync,
    {
        self.typed(object, true, || object.spec::<R>())
    }

    /// The typed status of `object`, decoded once while `object` is the cached state of its key
    /// (any other object, say an older state or a copy, is decoded afresh every time).
    pub fn status<R: Resource>(&self, object: &Object) -> Result<Arc<R::Status>, TypedError>
    where
        R::Status: Send + Sync,
    {
        self.typed(object, false, || object.status::<R>())
    }

    fn typed<T: Any + Send + Sync>(
        &self,
        object: &Object,
        spec: bool,
        decode: impl FnOnce() -> Result<T, TypedError>,
    ) -> Result<Arc<T>, TypedError> {
        let addr = if spec { spec_address(object) } else { address(object) };
        let type_id = TypeId::of::<T>();
        let known = self.typed.borrow().0.get(&addr).and_then(|parts| {
            parts.iter().find(|(t, s, _)| *t == type_id && *s == spec).map(|(_, _, value)| value.clone())
        });
        if let Some(value) = known.and_then(|v| v.downcast::<T>().ok()) {
            return Ok(value);
        }
        let value = Arc::new(decode()?);
        if self.is_cached(object) {
            let erased: Arc<dyn Any + Send + Sync> = value.clone();
            self.typed.borrow_mut().0.entry(addr).or_default().push((type_id, spec, erased));
        }
        Ok(value)
    }

    /// Whether `object` is the very object the cache holds for its key.
    fn is_cached(&self, object: &Object) -> bool {
        let cached = self.uids.get(&object.metadata.uid).and_then(|key| self.objects.get(key));
        cached.is_some_and(|c| std::ptr::eq(&**c, object))
    }

    /// Keep `index` from now on (over what is cached already too).
    pub fn add_index(&mut self, index: Index) {
        let objects: Vec<Arc<Object>> = self.list(index.kind, None).cloned().collect();
        self.indexes.push(index);
        for object in objects {
            self.index(&object, true);
        }
    }

    /// The keys of the cached objects `index` finds by `value`, in key order.
    pub fn indexed<'a>(&'a self, index: &'static str, value: &str) -> impl Iterator<Item = &'a ObjectKey> + 'a {
        self.indexed.get(&(index, value.to_string())).into_iter().flatten()
    }

    /// Drop what was decoded from `old`, which the cache lets go of for `new` (or for nothing):
    /// its status, and its spec unless `new` shares it.
    fn forget_decoded(&mut self, old: &Object, new: Option<&Object>) {
        let memo = &mut self.typed.get_mut().0;
        memo.swap_remove(&address(old));
        if !new.is_some_and(|new| Arc::ptr_eq(&old.spec, &new.spec)) {
            memo.swap_remove(&spec_address(old));
        }
    }

    /// Move `new`, a new version of `old`, to where it belongs in the indexes of its kind: most
    /// changes (a status) change no index value, and then nothing is touched. A version that
    /// shares its spec with `old` is not even read: index values come from the key and the spec.
    fn reindex(&mut self, old: &Object, new: &Object) {
        if Arc::ptr_eq(&old.spec, &new.spec) || !self.indexes.iter().any(|i| i.kind == new.kind) {
            return;
        }
        let unchanged = self.indexes.iter().filter(|i| i.kind == new.kind).all(|i| (i.values)(old) == (i.values)(new));
        if !unchanged {
            self.index(old, false);
            self.index(new, true);
        }
    }

    /// Put `object` into (`add`) or take it out of the indexes of its kind.
    fn index(&mut self, object: &Object, add: bool) {
        if !self.indexes.iter().any(|i| i.kind == object.kind) {
            return;
        }
        let key = object.key();
        for index in self.indexes.iter().filter(|i| i.kind == object.kind) {
            for value in (index.values)(object) {
                let slot = (index.name, value);
                if add {
                    self.indexed.entry(slot).or_default().insert(key.clone());
                } else if let Some(keys) = self.indexed.get_mut(&slot) {
                    keys.remove(&key);
                    if keys.is_empty() {
                        self.indexed.swap_remove(&slot);
                    }
                }
            }
        }
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

    /// The version up to which the watch stream of `kind` has been applied: an object of that kind
    /// changed at or below it is in the cache at that version or later, unless deleted since.
    pub fn watch_resource_version(&self, kind: &str) -> u64 {
        self.kind_rv.get(kind).copied().unwrap_or(0).max(self.synced_rv)
    }

    /// Whether the object at `key`, known at version `rv`, is gone since: not cached, and either
    /// the watch of its kind has passed `rv` without it, or its removal at `rv` or later is
    /// known (a tombstone, also from our own write's reply, while that watch lags behind).
    /// Kinds lag independently, so the progress of another kind's watch proves nothing here.
    pub fn gone_since(&self, key: &ObjectKey, rv: u64) -> bool {
        !self.objects.contains_key(key)
            && (self.watch_resource_version(&key.kind) >= rv || self.tombstones.get(key).is_some_and(|t| *t >= rv))
    }

    /// The store answered a write to `uid` (at `key`) NotFound: the object is gone, whatever the
    /// watch says yet. Forget it now, and ignore the events of it still to come, so that no
    /// controller acts on it again only to be told the same (a write retried until the watch
    /// catches up). Returns the object as it was cached, if it was.
    ///
    /// *Assumptions*: uids are never reused, and the store answers NotFound to a write of `uid`
    /// only if no object with `uid` exists (a name taken by a new object is a conflict, or a
    /// NotFound of the old uid: it is gone either way).
    /// (Also when the cache does not hold it yet: a lagging watch may still bring its creation.)
    pub fn forget_gone(&mut self, key: &ObjectKey, uid: &Uid) -> Option<Arc<Object>> {
        self.found_gone.insert(uid.clone());
        let cached = self.objects.get(key).filter(|o| o.metadata.uid == *uid)?.clone();
        self.remove(key);
        let tomb = self.tombstones.entry(key.clone()).or_insert(0);
        *tomb = (*tomb).max(cached.metadata.resource_version);
        Some(cached)
    }

    /// Apply an object state seen on the watch stream. Returns `None` if it was older than what
    /// the cache holds (and so ignored).
    pub fn apply_watched(&mut self, event: &WatchEvent) -> Option<Change> {
        let rv = event.resource_version();
        let kind = &event.object.kind;
        let reached = self.watch_resource_version(kind).max(rv);
        match self.kind_rv.get_mut(kind.as_str()) {
            Some(at) => *at = reached,
            None => {
                self.kind_rv.insert(kind.to_string(), reached);
            }
        }
        let applied = self.apply(&event.object, event.event == EventType::Deleted);
        self.prune_tombstones(kind, reached);
        applied
    }

    /// Apply an object state the engine learned from its own write's reply. A reply at or below
    /// the version the watch stream of its kind has reached carries no news (the cache already
    /// shows that version or a later one) and is ignored: applying it could bring back an object
    /// whose deletion the watch delivered before the reply came.
    pub fn apply_own_write(&mut self, object: &Arc<Object>) -> Option<Change> {
        if object.metadata.resource_version <= self.watch_resource_version(&object.kind) {
            return None;
        }
        self.apply(object, is_removed(object))
    }

    /// Tombstones of `kind` the watch of that kind has passed: no older event of them can come.
    fn prune_tombstones(&mut self, kind: &str, reached: u64) {
        let start = ObjectKey::new(kind, None, "");
        let passed: Vec<ObjectKey> = self
            .tombstones
            .range(start..)
            .take_while(|(k, _)| k.kind == kind)
            .filter(|(_, tomb)| **tomb <= reached)
            .map(|(k, _)| k.clone())
            .collect();
        for key in passed {
            self.tombstones.remove(&key);
        }
    }

    /// Replace everything with a fresh list taken at `resource_version`. Returns the objects that
    /// changed, appeared or disappeared (the disappeared ones as last cached, and so is an object
    /// replaced by a new one of the same name).
    pub fn resync(&mut self, objects: Vec<Arc<Object>>, resource_version: u64) -> Vec<Arc<Object>> {
        let mut changed = Vec::new();
        let fresh: BTreeMap<ObjectKey, Arc<Object>> = objects.into_iter().map(|o| (o.key(), o)).collect();
        for (key, old) in self.objects.iter() {
            if !fresh.contains_key(key) {
                changed.push(old.clone());
            }
        }
        for (key, new) in &fresh {
            match self.objects.get(key) {
                Some(old) if old.metadata.uid != new.metadata.uid => {
                    changed.push(old.clone());
                    changed.push(new.clone());
                }
                Some(old) if old.metadata.resource_version == new.metadata.resource_version => {}
                _ => changed.push(new.clone()),
            }
        }
        let indexes = std::mem::take(&mut self.indexes);
        let kept: Vec<Arc<Object>> = if crate::bugs::on(crate::bugs::Bug::RelistKeepsTheUnlisted) {
            self.objects.iter().filter(|(key, _)| !fresh.contains_key(*key)).map(|(_, o)| o.clone()).collect()
        } else {
            Vec::new()
        };
        *self = Cache { indexes, ..Cache::default() };
        for object in kept {
            self.insert(object);
        }
        for object in fresh.into_values() {
            self.insert(object);
        }
        self.synced_rv = resource_version;
        changed
    }

    fn apply(&mut self, object: &Arc<Object>, removed: bool) -> Option<Change> {
        if !self.found_gone.is_empty() && self.found_gone.contains(&object.metadata.uid) {
            if removed {
                self.found_gone.remove(&object.metadata.uid);
            }
            return None;
        }
        let key = object.key();
        let rv = object.metadata.resource_version;
        let current = self.objects.get(&key);
        if current.is_some_and(|c| c.metadata.resource_version >= rv)
            || self.tombstones.get(&key).is_some_and(|t| *t >= rv)
        {
            return None;
        }
        let replaced = current.filter(|c| c.metadata.uid != object.metadata.uid).cloned();
        if removed {
            self.remove(&key);
            self.tombstones.insert(key, rv);
        } else {
            self.insert(object.clone());
        }
        Some(Change { replaced })
    }

    fn insert(&mut self, object: Arc<Object>) {
        let key = object.key();
        if let Some(slot) = self.objects.get_mut(&key)
            && slot.metadata.uid == object.metadata.uid
        {
            // A new version of the same object (most changes): touch only what it changes.
            let old = std::mem::replace(slot, object.clone());
            self.forget_decoded(&old, Some(&object));
            if old.metadata.owner_references != object.metadata.owner_references {
                self.unlink_dependent(&key, &old);
                self.link_dependent(&key, &object);
            }
            self.reindex(&old, &object);
            if object.kind == Namespace::KIND {
                self.namespaces.insert(object.metadata.name.clone(), object);
            }
            return;
        }
        self.remove(&key);
        self.uids.insert(object.metadata.uid.clone(), key.clone());
        self.link_dependent(&key, &object);
        self.index(&object, true);
        if object.kind == Namespace::KIND {
            self.namespaces.insert(object.metadata.name.clone(), object.clone());
        }
        self.objects.insert(key, object);
    }

    fn remove(&mut self, key: &ObjectKey) {
        let Some(old) = self.objects.remove(key) else { return };
        self.forget_decoded(&old, None);
        if old.kind == Namespace::KIND {
            self.namespaces.swap_remove(old.metadata.name.as_str());
        }
        self.index(&old, false);
        self.uids.swap_remove(&old.metadata.uid);
        self.unlink_dependent(key, &old);
    }

    /// `object` (at `key`) is a dependent of each of its owners.
    fn link_dependent(&mut self, key: &ObjectKey, object: &Object) {
        for owner in &object.metadata.owner_references {
            self.dependents.entry(owner.uid.clone()).or_default().insert(key.clone());
        }
    }

    /// `object` (at `key`) is no longer a dependent of its owners.
    fn unlink_dependent(&mut self, key: &ObjectKey, object: &Object) {
        for owner in &object.metadata.owner_references {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.swap_remove(&owner.uid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
        assert!(cache.apply_own_write_some(&obj("a", 5, false)));
        assert!(!cache.apply_watched_some(&ev(obj("a", 3, false))), "older event ignored");
        assert_eq!(cache.get(&obj("a", 0, false).key()).map(|o| o.metadata.resource_version), Some(5));
        assert!(cache.apply_own_write_some(&obj("a", 7, true)), "removal");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
        assert!(!cache.apply_watched_some(&ev(obj("a", 6, false))), "tombstone holds");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
        assert!(cache.apply_watched_some(&ev(obj("a", 9, false))), "a newer object of that name");
        let gone = WatchEvent { event: EventType::Deleted, object: obj("a", 10, false) };
        assert!(cache.apply_watched_some(&gone), "a Deleted event removes even without a deletionTimestamp");
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
    }

    /// The reply to a write can arrive after the watch delivered the object's deletion (its last
    /// finalizer removed by a later write): the object must not come back from the reply.
    #[test]
    fn a_late_reply_does_not_bring_back_an_object_the_watch_deleted() {
        let mut cache = Cache::default();
        assert!(cache.apply_watched_some(&ev(obj("a", 161, false))));
        assert!(cache.apply_watched_some(&ev(obj("a", 162, false))), "the reply's version, seen first on the watch");
        let gone = WatchEvent { event: EventType::Deleted, object: obj("a", 163, true) };
        assert!(cache.apply_watched_some(&gone));
        assert!(!cache.apply_own_write_some(&obj("a", 162, false)), "the reply of the write at 162 is old news");
        assert!(cache.get(&obj("a", 0, false).key()).is_none(), "resurrected");
    }

    /// Kinds lag independently: how far one kind's watch has come says nothing about another's.
    #[test]
    fn watch_progress_is_per_kind() {
        let mut cache = Cache::default();
        let mut image = (*obj("img", 10, false)).clone();
        image.kind = "ContainerImage".into();
        assert!(cache.apply_watched_some(&ev(Arc::new(image))));
        assert_eq!(cache.watch_resource_version("ContainerImage"), 10);
        assert_eq!(cache.watch_resource_version("PhysicalContainer"), 0, "no container event seen yet");
        // A container write at 7, answered after the image watch reached 10: still news to the
        // container watch, which may lag behind at 0.
        assert!(cache.apply_own_write_some(&obj("a", 7, false)), "the reply is not old news for its own kind");
        assert_eq!(cache.get(&obj("a", 0, false).key()).map(|o| o.metadata.resource_version), Some(7));
        // A tombstone of one kind survives another kind's progress.
        assert!(cache.apply_own_write_some(&obj("a", 8, true)));
        let mut later = (*obj("img", 20, false)).clone();
        later.kind = "ContainerImage".into();
        assert!(cache.apply_watched_some(&ev(Arc::new(later))));
        assert!(
            !cache.apply_watched_some(&ev(obj("a", 7, false))),
            "the container watch catching up does not resurrect it"
        );
        assert!(cache.get(&obj("a", 0, false).key()).is_none());
        // A resync covers every kind.
        cache.resync(Vec::new(), 30);
        assert_eq!(cache.watch_resource_version("PhysicalContainer"), 30);
    }

    /// A removal the cache learned from our own write's reply counts as gone for a list taken
    /// before it, while the watch of that kind still lags behind the list.
    #[test]
    fn a_removal_from_our_own_write_is_gone_since_an_older_list() {
        let mut cache = Cache::default();
        assert!(cache.apply_watched_some(&ev(obj("a", 48, false))));
        let key = obj("a", 0, false).key();
        assert!(!cache.gone_since(&key, 53), "cached");
        assert!(cache.apply_own_write_some(&obj("a", 58, true)), "our write removed it at 58");
        assert_eq!(cache.watch_resource_version("PhysicalContainer"), 48, "the watch of the kind lags");
        assert!(cache.gone_since(&key, 53), "listed at 53, removed at 58");
        assert!(!cache.gone_since(&key, 60), "listed after the removal: another object of that name");
        let gone = WatchEvent { event: EventType::Deleted, object: obj("a", 58, true) };
        assert!(!cache.apply_watched_some(&gone), "the watch catching up is old news");
        assert!(cache.gone_since(&key, 53));
    }

    /// A write answered NotFound tells the object is gone before the watch does: it leaves the
    /// cache at once, the watch's late news of it (even its creation) does not bring it back,
    /// and its deletion's event ends the watch for it; another object of that name is news.
    #[test]
    fn an_object_a_write_found_gone_leaves_and_its_late_events_do_not_bring_it_back() {
        let mut cache = Cache::default();
        let key = obj("a", 0, false).key();
        assert!(cache.apply_watched_some(&ev(obj("a", 5, false))));
        let gone = cache.forget_gone(&key, &Uid("uid-a".into()));
        assert_eq!(gone.map(|o| o.metadata.resource_version), Some(5), "reported as it was cached");
        assert!(cache.get(&key).is_none());
        assert!(!cache.apply_watched_some(&ev(obj("a", 7, false))), "a change made before its deletion");
        assert!(cache.get(&key).is_none(), "resurrected by a late change");
        let deleted = WatchEvent { event: EventType::Deleted, object: obj("a", 9, true) };
        assert!(!cache.apply_watched_some(&deleted), "its deletion is old news");
        assert!(cache.found_gone.is_empty(), "its deletion's event ends the watch for it");
        let mut other = (*obj("a", 11, false)).clone();
        other.metadata.uid = Uid("uid-a2".into());
        assert!(cache.apply_watched_some(&ev(Arc::new(other))), "another object of that name");
        // Not cached yet (its creation still on the way): its creation does not bring it in.
        let mut cache = Cache::default();
        assert!(cache.forget_gone(&key, &Uid("uid-a".into())).is_none());
        assert!(!cache.apply_watched_some(&ev(obj("a", 5, false))));
        assert!(cache.get(&key).is_none());
        // A relist is the truth: it forgets what it forgot.
        cache.resync(vec![obj("b", 12, false)], 12);
        assert!(cache.found_gone.is_empty());
    }

    impl Cache {
        fn apply_watched_some(&mut self, event: &WatchEvent) -> bool {
            self.apply_watched(event).is_some()
        }
        fn apply_own_write_some(&mut self, object: &Arc<Object>) -> bool {
            self.apply_own_write(object).is_some()
        }
    }

    /// A new object under an old name, seen without the old one's deletion: the old one is
    /// reported as replaced, so its dependents can be told their owner is gone.
    #[test]
    fn an_object_replaced_under_its_name_is_reported() {
        let mut cache = Cache::default();
        assert!(cache.apply_watched(&ev(obj("a", 3, false))).is_some_and(|c| c.replaced.is_none()));
        let mut again = (*obj("a", 10, false)).clone();
        again.metadata.uid = Uid("uid-a-again".into());
        let change = cache.apply_watched(&ev(Arc::new(again.clone()))).expect("newer state applied");
        assert_eq!(change.replaced.map(|o| o.metadata.uid.clone()), Some(Uid("uid-a".into())));
        // A relist that finds another object under a cached name reports both.
        again.metadata.uid = Uid("uid-a-third".into());
        again.metadata.resource_version = 12;
        let changed = cache.resync(vec![Arc::new(again)], 12);
        let uids: Vec<&str> = changed.iter().map(|o| o.metadata.uid.0.as_str()).collect();
        assert_eq!(uids, ["uid-a-again", "uid-a-third"]);
    }

    fn ev(object: Arc<Object>) -> WatchEvent {
        WatchEvent { event: EventType::Modified, object }
    }

    /// A version that keeps the spec (a status write) keeps its decoded spec and its index
    /// entries; a version with another spec is decoded and indexed afresh; a removal forgets.
    #[test]
    fn a_decoded_spec_outlives_status_changes_but_not_its_spec() {
        use crate::api::physical::{PhysicalContainer, PhysicalContainerSpec};
        fn image(o: &Object) -> Vec<String> {
            o.spec.get("image").and_then(|v| v.as_str()).map(str::to_string).into_iter().collect()
        }
        let mut cache = Cache::default();
        cache.add_index(Index { name: "image", kind: "PhysicalContainer", values: image });
        let mut first = (*obj("a", 1, false)).clone();
        first.spec = Arc::new(serde_json::json!({ "image": "one" }));
        let first = Arc::new(first);
        assert!(cache.apply_watched_some(&ev(first.clone())));
        let decoded = cache.spec::<PhysicalContainer>(cache.get(&first.key()).unwrap()).unwrap();

        let mut status_write = (*first).clone();
        status_write.metadata.resource_version = 2;
        status_write.status = serde_json::json!({ "phase": "Running" });
        assert!(cache.apply_watched_some(&ev(Arc::new(status_write))));
        let cached = cache.get(&first.key()).unwrap().clone();
        let again: Arc<PhysicalContainerSpec> = cache.spec::<PhysicalContainer>(&cached).unwrap();
        assert!(Arc::ptr_eq(&decoded, &again), "the shared spec was decoded again");
        assert!(cache.status::<PhysicalContainer>(&cached).is_ok());
        assert_eq!(cache.indexed("image", "one").collect::<Vec<_>>(), [&first.key()]);

        let mut edited = (*cached).clone();
        edited.metadata.resource_version = 3;
        edited.spec_mut()["image"] = serde_json::json!("two");
        assert!(cache.apply_watched_some(&ev(Arc::new(edited))));
        let cached = cache.get(&first.key()).unwrap().clone();
        let fresh = cache.spec::<PhysicalContainer>(&cached).unwrap();
        assert_eq!(fresh.image.as_deref(), Some("two"), "a stale decode of the old spec");
        assert_eq!(cache.indexed("image", "one").count(), 0);
        assert_eq!(cache.indexed("image", "two").collect::<Vec<_>>(), [&first.key()]);

        let mut gone = (*cached).clone();
        gone.metadata.resource_version = 4;
        assert!(cache.apply_watched_some(&WatchEvent { event: EventType::Deleted, object: Arc::new(gone) }));
        assert!(cache.typed.borrow().0.is_empty(), "a removed object's decoded parts linger");
        assert_eq!(cache.indexed("image", "two").count(), 0);
    }
}
