//! Where the store keeps its objects. The semantics live in [`super::Store`]; a backend only
//! persists. The simulator uses [`MemoryBackend`]; the daemon will add a durable one.

use crate::api::{Object, ObjectKey, Uid};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Persistence for objects, indexed by key and by uid.
///
/// *Assumptions*: the store calls `put` and `remove` only for objects it has admitted, and never
/// holds two objects with one uid.
pub trait Backend {
    fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>>;
    fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>>;
    fn put(&mut self, object: Arc<Object>);
    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Object>>;
    /// Objects of `kind` (all kinds if `None`) in `namespace` (all if `None`), in key order.
    fn list(&self, kind: Option<&str>, namespace: Option<&str>) -> Vec<Arc<Object>>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Objects in two ordered maps.
#[derive(Clone, Debug, Default)]
pub struct MemoryBackend {
    objects: BTreeMap<ObjectKey, Arc<Object>>,
    uids: BTreeMap<Uid, ObjectKey>,
}

impl Backend for MemoryBackend {
    fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        self.objects.get(key)
    }

    fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>> {
        self.uids.get(uid).and_then(|key| self.objects.get(key))
    }

    fn put(&mut self, object: Arc<Object>) {
        self.uids.insert(object.metadata.uid.clone(), object.key());
        self.objects.insert(object.key(), object);
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Arc<Object>> {
        let removed = self.objects.remove(key)?;
        self.uids.remove(&removed.metadata.uid);
        Some(removed)
    }

    fn list(&self, kind: Option<&str>, namespace: Option<&str>) -> Vec<Arc<Object>> {
        let matches = |o: &&Arc<Object>| namespace.is_none_or(|ns| o.metadata.namespace.as_deref() == Some(ns));
        match kind {
            Some(kind) => {
                let start = ObjectKey { kind: kind.to_string(), namespace: None, name: String::new() };
                self.objects
                    .range(start..)
                    .take_while(|(k, _)| k.kind == kind)
                    .map(|(_, o)| o)
                    .filter(matches)
                    .cloned()
                    .collect()
            }
            None => self.objects.values().filter(matches).cloned().collect(),
        }
    }

    fn len(&self) -> usize {
        self.objects.len()
    }
}
