//! What changed since the invariants were last checked, so that an invariant can look at what
//! changed (and what that touches) instead of at every object after every event: the cost of a
//! check then follows the size of the change, not the size of the world.

use crate::runtime::{Journal, SimRuntime};
use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::fixed::FixedMap;
use drydock_engine::runtime::ContainerInfo;
use drydock_engine::store::{EventType, Store, WatchEvent};
use std::sync::Arc;

/// What may have changed since the last check.
///
/// *Guarantees*: every store write since the last check is in `objects` (in order, one entry per
/// write), and every runtime container, network and volume that changed is in `runtime`; unless
/// `everything` is set (the first check, or one the store's log no longer reaches back to), in
/// which case an invariant must judge the whole state.
pub struct Changes<'a> {
    pub everything: bool,
    /// The store's events since the last check: the object as written (a deleted one as it was
    /// last).
    pub objects: Vec<&'a WatchEvent>,
    pub runtime: &'a Journal,
    /// Which objects record which runtime containers.
    pub recorded: &'a Recorded,
}

impl<'a> Changes<'a> {
    /// The objects of `kind` written since the last check, with whether the write deleted them
    /// (the latest write of each, once).
    pub fn written<'s>(&'s self, kind: &'s str) -> impl Iterator<Item = (&'a Arc<Object>, bool)> + 's {
        self.objects.iter().enumerate().filter_map(move |(i, event)| {
            let latest = !self.objects[i + 1..].iter().any(|later| same(&later.object, &event.object));
            (latest && event.object.kind == kind).then_some((&event.object, event.event == EventType::Deleted))
        })
    }

    /// The objects of any kind changed since the last check and still there (the latest write of
    /// each, once).
    pub fn live_any(&self) -> impl Iterator<Item = &'a Arc<Object>> + '_ {
        self.objects.iter().enumerate().filter_map(move |(i, event)| {
            let latest = !self.objects[i + 1..].iter().any(|later| same(&later.object, &event.object));
            (latest && event.event != EventType::Deleted).then_some(&event.object)
        })
    }

    /// The runtime containers that changed since the last check and are still there, in id order.
    pub fn containers<'r>(&'r self, runtime: &'r SimRuntime) -> impl Iterator<Item = &'r ContainerInfo> + 'r {
        self.runtime.containers.iter().filter_map(|id| runtime.container_by_id(id))
    }

    /// Whether a runtime container that changed since the last check is gone.
    pub fn container_removed(&self, runtime: &SimRuntime) -> bool {
        self.runtime.containers.iter().any(|id| runtime.container_by_id(id).is_none())
    }

    /// The objects of `kind` the store held before and holds no more (deleted since the last check).
    pub fn deleted<'s>(&'s self, kind: &'s str) -> impl Iterator<Item = &'a Arc<Object>> + 's {
        self.written(kind).filter(|(_, deleted)| *deleted).map(|(object, _)| object)
    }

    /// The objects of `kind` changed (created or written) since the last check and still there.
    pub fn live<'s>(&'s self, kind: &'s str) -> impl Iterator<Item = &'a Arc<Object>> + 's {
        self.written(kind).filter(|(_, deleted)| !*deleted).map(|(object, _)| object)
    }
}

fn same(a: &Object, b: &Object) -> bool {
    a.metadata.uid == b.metadata.uid
}

/// An index the checker keeps over the store: the physical containers that record each runtime
/// container (`status.runtimeId`) or track one (`spec.containerId`), kept up to date from the
/// store's events.
#[derive(Default)]
pub struct Recorded {
    by_object: FixedMap<ObjectKey, Vec<String>>,
    by_container: FixedMap<String, Vec<ObjectKey>>,
}

impl Recorded {
    /// The objects that record or track runtime container `id`.
    pub fn objects_recording(&self, id: &str) -> &[ObjectKey] {
        self.by_container.get(id).map_or(&[], Vec::as_slice)
    }

    /// Rebuild from the whole store.
    pub fn rebuild(&mut self, store: &Store) {
        *self = Recorded::default();
        for object in store.list(Some(drydock_engine::api::PhysicalContainer::KIND), None) {
            self.set(&object, false);
        }
    }

    /// Follow one store event.
    pub fn follow(&mut self, event: &WatchEvent) {
        if event.object.kind == drydock_engine::api::PhysicalContainer::KIND {
            self.set(&event.object, event.event == EventType::Deleted);
        }
    }

    fn set(&mut self, object: &Object, deleted: bool) {
        let key = object.key();
        if let Some(old) = self.by_object.swap_remove(&key) {
            for id in old {
                if let Some(keys) = self.by_container.get_mut(&id) {
                    keys.retain(|k| *k != key);
                    if keys.is_empty() {
                        self.by_container.swap_remove(&id);
                    }
                }
            }
        }
        if deleted {
            return;
        }
        let field =
            |value: &serde_json::Value, name: &str| value.get(name).and_then(|v| v.as_str()).map(str::to_string);
        let ids: Vec<String> =
            [field(&object.status, "runtimeId"), field(&object.spec, "containerId")].into_iter().flatten().collect();
        for id in &ids {
            self.by_container.entry(id.clone()).or_default().push(key.clone());
        }
        if !ids.is_empty() {
            self.by_object.insert(key, ids);
        }
    }
}

use drydock_engine::api::Resource as _;
