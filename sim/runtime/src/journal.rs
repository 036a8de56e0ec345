//! The journal: what changed in the runtime since the world last looked (the ids of containers,
//! and of each other runtime resource the id a checker names it by), so that checkers which
//! look only at what changed need not read every object after every event. Docker has no such
//! thing; it stands in for the events a watcher of the daemon would have to read.

use drydock_engine::runtime::RuntimeObject;
use std::collections::{BTreeMap, BTreeSet};

/// What changed in a runtime since its journal was last taken: the ids of containers, and of
/// the runtime resources ([`SimRuntime::resources`](crate::SimRuntime::resources): networks by
/// id, volumes by name) created, changed or removed. Checkers that look only at what changed
/// read it (see [`SimRuntime::take_journal`](crate::SimRuntime::take_journal)).
///
/// *Guarantees*: every change of a container (created, started, ended, being removed, removed,
/// its start failing, its networks, its files, inserted from outside), of a network (created,
/// inserted, removed) and of a volume (created, also by a mount, removed) is in it. A network's
/// endpoints follow from its containers: a change of them is journalled as the container's.
/// (Kept by the runtime's operations, which note each change here as they make it; checked by
/// the runtime's consistency tests, which compare the runtime before and after each request.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    pub containers: BTreeSet<String>,
    /// The ids of the resources of each kind that changed; a kind with none is absent.
    resources: BTreeMap<RuntimeObject, BTreeSet<String>>,
}

impl Journal {
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.resources.is_empty()
    }

    /// The ids of the runtime resources of kind `object` that changed.
    pub fn resources(&self, object: RuntimeObject) -> impl Iterator<Item = &str> {
        self.resources.get(&object).into_iter().flatten().map(String::as_str)
    }

    /// Whether resource `id` of kind `object` changed.
    pub fn resource_changed(&self, object: RuntimeObject, id: &str) -> bool {
        self.resources.get(&object).is_some_and(|ids| ids.contains(id))
    }

    /// Whether any runtime resource (a network, a volume) changed.
    pub fn any_resource_changed(&self) -> bool {
        !self.resources.is_empty()
    }

    /// Container `id` changed.
    pub(crate) fn container(&mut self, id: &str) {
        // Looked up first: most changes are of a container already journalled since the last
        // take, and the lookup spares the id's copy.
        if !self.containers.contains(id) {
            self.containers.insert(id.to_string());
        }
    }

    /// Resource `id` of kind `object` changed (a network created, inserted or removed, by id; a
    /// volume created, also by a mount, or removed, by name).
    pub(crate) fn resource(&mut self, object: RuntimeObject, id: &str) {
        self.resources.entry(object).or_default().insert(id.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_kept_apart_and_once() {
        let mut journal = Journal::default();
        assert!(journal.is_empty());
        journal.container("c1");
        journal.container("c1");
        journal.resource(RuntimeObject::Network, "c1");
        journal.resource(RuntimeObject::Volume, "v1");
        assert_eq!(journal.containers.iter().collect::<Vec<_>>(), ["c1"]);
        assert_eq!(journal.resources(RuntimeObject::Network).collect::<Vec<_>>(), ["c1"]);
        assert_eq!(journal.resources(RuntimeObject::Volume).collect::<Vec<_>>(), ["v1"]);
        assert!(journal.resource_changed(RuntimeObject::Volume, "v1"));
        assert!(!journal.resource_changed(RuntimeObject::Network, "v1"));
        assert!(journal.any_resource_changed());
        assert!(!std::mem::take(&mut journal).is_empty());
        assert!(journal.is_empty(), "taken: empty again");
        assert!(!journal.any_resource_changed());
    }
}
