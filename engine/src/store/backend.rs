//! Where the store's data lasts. The semantics live in [`super::Store`]; a backend only persists
//! what the store decided and hands it back when a store is opened over it.
//!
//! The store keeps its objects and its change log in memory (they are its read path: objects are
//! few); a backend is the durable copy. [`MemoryBackend`] keeps nothing beyond the store itself
//! (the simulator, tests, a throwaway daemon); drydock-store-sqlite has a durable one.

use super::{EventType, WatchEvent};
use crate::api::{Object, ObjectKey};
use std::sync::Arc;

/// One mutation of the store, handed to [`Backend::apply`] before the store changes anything.
///
/// *Guarantees* (from the store): `event.object.metadata.resource_version` is the new revision,
/// exactly one more than the previous change's; log entries are contiguous revisions, so the
/// persisted log after the change is the revisions in `compacted_through + 1..=revision()`.
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    /// The event appended to the change log; its object is the object as stored (or, for
    /// `Deleted`, as last stored with the deleting revision).
    pub event: &'a WatchEvent,
    /// Log entries at or below this revision are compacted away (0: keep everything).
    pub compacted_through: u64,
}

/// What a change does to the objects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ObjectWrite<'a> {
    /// Store this object (insert or replace by key).
    Put(&'a Arc<Object>),
    /// Remove the object of this key (the event's object).
    Remove(&'a Arc<Object>),
}

impl<'a> Change<'a> {
    /// The store's revision after the change.
    pub fn revision(&self) -> u64 {
        self.event.resource_version()
    }

    /// The put or remove this change makes: `Deleted` removes, anything else puts.
    pub fn write(&self) -> ObjectWrite<'a> {
        match self.event.event {
            EventType::Deleted => ObjectWrite::Remove(&self.event.object),
            EventType::Added | EventType::Modified => ObjectWrite::Put(&self.event.object),
        }
    }
}

/// What a backend holds, as a store opened over it starts from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// The revision of the last committed change (0: none).
    pub revision: u64,
    /// Every stored object, in any order.
    pub objects: Vec<Arc<Object>>,
    /// The kept change log, oldest first: contiguous revisions ending at `revision` (or empty).
    pub log: Vec<WatchEvent>,
}

/// Why a backend could not load or commit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The change was not committed; the backend holds what it held before.
    #[error("could not commit revision {revision}: {reason}")]
    Commit { revision: u64, reason: String },
    /// The stored data could not be read back, or does not hold together.
    #[error("could not load the stored data: {reason}")]
    Load { reason: String },
}

/// Persistence for the store: objects, the change log that feeds watches, and the revision.
///
/// *Guarantees* (from the store): `load` is called once, when a store is opened, before any
/// `apply`; `apply` is called once per mutation, in revision order, and the store changes its own
/// state only after `apply` returned `Ok`.
///
/// *Assumptions* (of the store): `apply` is all-or-nothing and durable once it returns `Ok` (a
/// write is acknowledged only after it is committed); after an `Err` the backend holds exactly
/// what it held before.
pub trait Backend: Send {
    /// Everything committed so far.
    fn load(&mut self) -> Result<Snapshot, BackendError>;
    /// Commit one change: the object write, the log entry, the log compaction and the revision,
    /// all or nothing.
    fn apply(&mut self, change: &Change<'_>) -> Result<(), BackendError>;
}

impl<B: Backend + ?Sized> Backend for Box<B> {
    fn load(&mut self) -> Result<Snapshot, BackendError> {
        (**self).load()
    }

    fn apply(&mut self, change: &Change<'_>) -> Result<(), BackendError> {
        (**self).apply(change)
    }
}

/// No persistence: the store's own memory is all there is. Never fails.
///
/// *Caveats*: nothing survives the store. [`MemoryBackend::holding`] seeds a store opened over it
/// with existing data (tests of a store that starts non-empty).
#[derive(Clone, Debug, Default)]
pub struct MemoryBackend {
    initial: Snapshot,
}

impl MemoryBackend {
    /// A backend whose `load` hands over `snapshot` (once).
    pub fn holding(snapshot: Snapshot) -> Self {
        MemoryBackend { initial: snapshot }
    }
}

impl Backend for MemoryBackend {
    fn load(&mut self) -> Result<Snapshot, BackendError> {
        Ok(std::mem::take(&mut self.initial))
    }

    #[inline]
    fn apply(&mut self, _change: &Change<'_>) -> Result<(), BackendError> {
        Ok(())
    }
}

/// The objects, indexed by key and by uid: the store's read path.
///
/// *Assumptions*: the store never holds two objects with one uid.
#[derive(Clone, Debug, Default)]
pub(super) struct Objects {
    by_key: crate::fixed::SortedMap<ObjectKey, Arc<Object>>,
    /// uid -> key (hashed: looked up, never iterated).
    uids: crate::fixed::FixedMap<crate::api::Uid, ObjectKey>,
}

impl Objects {
    #[inline]
    pub(super) fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        self.by_key.get(key)
    }

    #[inline]
    pub(super) fn get_by_uid(&self, uid: &crate::api::Uid) -> Option<&Arc<Object>> {
        self.uids.get(uid).and_then(|key| self.by_key.get(key))
    }

    pub(super) fn put(&mut self, object: Arc<Object>) {
        self.uids.insert(object.metadata.uid.clone(), object.key());
        self.by_key.insert(object.key(), object);
    }

    pub(super) fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Object>> {
        let removed = self.by_key.remove(key)?;
        self.uids.swap_remove(&removed.metadata.uid);
        Some(removed)
    }

    /// Objects of `kind` (all kinds if `None`) in `namespace` (all if `None`), in key order. One
    /// kind, or one kind in one namespace, is a range of the keys, not a scan.
    #[inline]
    pub(super) fn list(&self, kind: Option<&str>, namespace: Option<&str>) -> Vec<Arc<Object>> {
        match kind {
            Some(kind) => {
                let start = ObjectKey::new(kind, namespace, "");
                self.by_key
                    .range(start..)
                    .take_while(|(k, _)| k.kind == kind && (namespace.is_none() || k.namespace.as_deref() == namespace))
                    .map(|(_, o)| o)
                    .cloned()
                    .collect()
            }
            None => match namespace {
                None => self.by_key.values().cloned().collect(),
                Some(namespace) => self.in_namespace(namespace),
            },
        }
    }

    /// Every object of `namespace`, in key order, without reading the other namespaces' objects:
    /// keys order by kind, then namespace, then name, so each kind holds the namespace's objects
    /// in one range, and the next kind starts at the first key after `kind` + NUL (the least
    /// string greater than `kind`). A namespace's cleanup lists it; with a hundred namespaces, a
    /// filter over every object read a hundred times what it returned.
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<Object>> {
        let mut found = Vec::new();
        let mut kind = self.by_key.keys_range(..).next().map(|k| k.kind.clone());
        while let Some(current) = kind {
            let first = ObjectKey::new(&current, Some(namespace), "");
            let in_kind = |k: &&ObjectKey| k.kind == current && k.namespace.as_deref() == Some(namespace);
            found.extend(self.by_key.range(first..).take_while(|(k, _)| in_kind(k)).map(|(_, o)| o.clone()));
            let next_kind = ObjectKey::new(&format!("{current}\0"), None, "");
            kind = self.by_key.keys_range(next_kind..).next().map(|k| k.kind.clone());
        }
        found
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectMeta;
    use proptest::prelude::*;

    fn object(kind: &str, namespace: Option<&str>, name: &str) -> Arc<Object> {
        let meta = ObjectMeta {
            name: name.into(),
            namespace: namespace.map(Into::into),
            uid: crate::api::Uid(format!("{kind}/{namespace:?}/{name}")),
            ..Default::default()
        };
        Arc::new(Object::new(kind, meta, serde_json::json!({})))
    }

    proptest! {
        /// Kinds and namespaces that prefix one another (`Pod`, `PodSet`; `a`, `a-b`) and
        /// cluster-scoped objects among them: a namespace's list is exactly the filter over
        /// every object, in the same order.
        #[test]
        fn a_namespace_lists_exactly_its_objects_in_key_order(
            keys in proptest::collection::vec((0..4usize, 0..4usize, 0..5usize), 0..40),
        ) {
            const KINDS: [&str; 4] = ["Pod", "PodSet", "P", "Volume"];
            const NAMESPACES: [Option<&str>; 4] = [None, Some("a"), Some("a-b"), Some("b")];
            let mut objects = Objects::default();
            for (kind, namespace, name) in keys {
                objects.put(object(KINDS[kind], NAMESPACES[namespace], &format!("n{name}")));
            }
            for namespace in NAMESPACES.iter().flatten().chain(&["absent"]) {
                let listed: Vec<ObjectKey> = objects.list(None, Some(namespace)).iter().map(|o| o.key()).collect();
                let filtered: Vec<ObjectKey> = objects
                    .by_key
                    .values()
                    .filter(|o| o.metadata.namespace.as_deref() == Some(*namespace))
                    .map(|o| o.key())
                    .collect();
                prop_assert_eq!(listed, filtered, "namespace {}", namespace);
            }
        }
    }
}
