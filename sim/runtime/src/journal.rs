//! The journal: what changed in the runtime since the world last looked (the ids of containers
//! and networks, the names of volumes), so that checkers which look only at what changed need not
//! read every object after every event. Docker has no such thing; it stands in for the events a
//! watcher of the daemon would have to read.

use std::collections::BTreeSet;

/// What changed in a runtime since its journal was last taken: the ids of containers and
/// networks and the names of volumes created, changed or removed. Checkers that look only at
/// what changed read it (see [`SimRuntime::take_journal`](crate::SimRuntime::take_journal)).
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
    pub networks: BTreeSet<String>,
    pub volumes: BTreeSet<String>,
}

impl Journal {
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty() && self.volumes.is_empty()
    }

    /// Container `id` changed.
    pub(crate) fn container(&mut self, id: &str) {
        // Looked up first: most changes are of a container already journalled since the last
        // take, and the lookup spares the id's copy.
        if !self.containers.contains(id) {
            self.containers.insert(id.to_string());
        }
    }

    /// Network `id` changed (created, inserted or removed).
    pub(crate) fn network(&mut self, id: &str) {
        self.networks.insert(id.to_string());
    }

    /// Volume `name` changed (created, also by a mount, or removed).
    pub(crate) fn volume(&mut self, name: &str) {
        self.volumes.insert(name.to_string());
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
        journal.network("c1");
        journal.volume("v1");
        assert_eq!(journal.containers.iter().collect::<Vec<_>>(), ["c1"]);
        assert_eq!(journal.networks.iter().collect::<Vec<_>>(), ["c1"]);
        assert_eq!(journal.volumes.iter().collect::<Vec<_>>(), ["v1"]);
        assert!(!std::mem::take(&mut journal).is_empty());
        assert!(journal.is_empty(), "taken: empty again");
    }
}
