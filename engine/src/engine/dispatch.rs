//! Which work a change queues: the keys an object's watchers map it to, held back while a key
//! backs off, and only for objects this engine is responsible for (its namespace cached and not
//! assigned to another engine); the objects of a namespace that has just become ours.

use super::{Engine, Trigger, Via, WorkKey};
use crate::api::{ObjectKey, Resource as _};
use crate::store::{EventType, WatchEvent};
use crate::time::{MonoTime, Now};
use std::sync::Arc;

/// Namespaces not ours before a change (see `Engine::namespaces_not_ours`).
pub(super) enum NotOurs {
    /// At most this one could become ours.
    One(Option<String>),
    /// Every cached namespace but these (the ones ours before) could.
    AllBut(std::collections::BTreeSet<String>),
}

impl Engine {
    /// A watch event: into the cache, then to the keys that watch it.
    pub(super) fn watched(&mut self, now: Now, event: &WatchEvent) {
        match event.event {
            EventType::Added => {
                self.seen_created.insert(event.object.metadata.uid.clone());
            }
            EventType::Deleted => {
                self.seen_created.swap_remove(&event.object.metadata.uid);
            }
            EventType::Modified => {}
        }
        let others = self.namespaces_not_ours(Some(&event.object));
        if let Some(change) = self.cache.apply_watched(event) {
            self.note_gone_namespaces(event);
            self.dispatch_change(now.mono, Via::Watch(event.event), change, &event.object);
            self.dispatch_newly_ours(now.mono, others);
        }
    }

    /// A fresh list of every kind at `resource_version` replaces the cache: what changed is
    /// dispatched.
    pub(super) fn resynced(&mut self, now: Now, objects: Vec<Arc<crate::api::Object>>, resource_version: u64) {
        let others = self.namespaces_not_ours(None);
        let changed = self.cache.resync(objects, resource_version);
        self.gone_namespaces = self.namespaces_gone_with_objects_left();
        for object in changed {
            self.dispatch(now.mono, Via::Resync, &object);
        }
        self.dispatch_newly_ours(now.mono, others);
    }

    /// Dispatch an object state the cache took, and the object it displaced, if any: that one is
    /// gone, and whoever watched it (its dependents' garbage collection) must hear so.
    pub(super) fn dispatch_change(
        &mut self,
        at: MonoTime,
        via: Via,
        change: crate::cache::Change,
        object: &crate::api::Object,
    ) {
        if let Some(replaced) = change.replaced {
            self.seen_created.swap_remove(&replaced.metadata.uid);
            self.dispatch(at, Via::Replaced, &replaced);
        }
        self.dispatch(at, via, object);
    }

    /// The namespaces a change to `changing` could make ours, that are not ours yet (not seen, or
    /// another engine's): that namespace if it is one, every cached one if `None` (a resync, where
    /// the rest are checked once the new list is in).
    pub(super) fn namespaces_not_ours(&self, changing: Option<&crate::api::Object>) -> NotOurs {
        match changing {
            Some(object) if object.kind == crate::api::Namespace::KIND => {
                NotOurs::One((!self.namespace_is_ours(&object.metadata.name)).then(|| object.metadata.name.to_string()))
            }
            Some(_) => NotOurs::One(None),
            None => NotOurs::AllBut(
                self.cache
                    .list(crate::api::Namespace::KIND, None)
                    .filter(|ns| self.namespace_is_ours(&ns.metadata.name))
                    .map(|ns| ns.metadata.name.to_string())
                    .collect(),
            ),
        }
    }

    /// Dispatch everything cached in the namespaces that were not ours and now are: their objects
    /// were skipped meanwhile, and kinds are not ordered among themselves, so they may have
    /// arrived before the namespace that makes them ours.
    pub(super) fn dispatch_newly_ours(&mut self, at: MonoTime, before: NotOurs) {
        let candidates: Vec<String> = match before {
            NotOurs::One(name) => name.into_iter().collect(),
            NotOurs::AllBut(ours) => self
                .cache
                .list(crate::api::Namespace::KIND, None)
                .map(|ns| ns.metadata.name.to_string())
                .filter(|name| !ours.contains(name))
                .collect(),
        };
        for name in candidates {
            if !self.namespace_is_ours(&name) {
                continue;
            }
            let children: Vec<Arc<crate::api::Object>> = self.cache.list("*", Some(&name)).cloned().collect();
            for child in children {
                self.dispatch(at, Via::NamespaceNowOurs, &child);
            }
        }
    }

    pub(super) fn dispatch(&mut self, at: MonoTime, via: Via, object: &crate::api::Object) {
        for (controller, watch) in &self.watches {
            if watch.matches(&object.kind) {
                for key in watch.keys(object, &self.cache) {
                    let work = (*controller, key);
                    if self.idle_elsewhere(&work) {
                        continue;
                    }
                    let due = match self.holding.get(&work) {
                        Some(until) if work.1 != object.key() => (*until).max(at),
                        _ => at,
                    };
                    let why = || Trigger::Object {
                        via,
                        object: object.key(),
                        resource_version: object.metadata.resource_version,
                    };
                    self.triggers.add(&mut self.queue, work, due, why);
                }
            }
        }
    }

    /// Whether `work` belongs to another engine (see [`Engine::responsible_for`]) and this one
    /// has nothing of it to forget: its reconcile would only find that out. Queueing it is
    /// skipped; should its namespace become ours, its arrival dispatches it
    /// (`dispatch_newly_ours`). With two engines, half of every delivery was such work.
    pub(super) fn idle_elsewhere(&self, work: &WorkKey) -> bool {
        !self.queue.contains(work)
            && !self.holding.contains_key(work)
            && !self.retries.contains(work)
            && !self.backoff.knows(work)
            && !self.responsible_for(&work.1)
    }

    /// Whether this engine is responsible for `key`: a cluster-scoped object always (a namespace
    /// as its own assignment says); a namespaced one only once its namespace is in the cache and
    /// not assigned to another engine with the `drydock.dev/engine` annotation. Kinds are not
    /// ordered among themselves, so an object may arrive before its namespace: nothing is done for
    /// it until the namespace is seen, as it may be another engine's (its arrival dispatches it).
    ///
    /// An object being deleted whose namespace was seen gone while objects of it were left (their
    /// orphans the namespace controller deletes) is every engine's, as an unassigned namespace's
    /// objects are: the assignment went with the namespace, and the cleanup must still run.
    pub(super) fn responsible_for(&self, key: &ObjectKey) -> bool {
        match (&key.namespace, key.kind.as_str()) {
            (Some(ns), _) => self.namespace_is_ours(ns) || self.orphan_being_deleted(key, ns),
            // A namespace gone from the cache: ours to forget.
            (None, crate::api::Namespace::KIND) => self.cache.get(key).is_none() || self.namespace_is_ours(&key.name),
            (None, _) => true,
        }
    }

    /// Whether the object at `key` is being deleted and its namespace `ns` was seen gone with
    /// objects left in it.
    fn orphan_being_deleted(&self, key: &ObjectKey, ns: &str) -> bool {
        self.gone_namespaces.contains(ns)
            && self.cache.namespace(ns).is_none()
            && self.cache.get(key).is_some_and(|object| object.metadata.is_deleting())
    }

    /// Keep `gone_namespaces` after a watch event the cache applied: a namespace deleted while
    /// objects of it are cached joins it; one created again leaves it, and so does one whose last
    /// cached object went.
    pub(super) fn note_gone_namespaces(&mut self, event: &WatchEvent) {
        let object = &event.object;
        let deleted = event.event == EventType::Deleted;
        if object.kind == crate::api::Namespace::KIND {
            let name = &object.metadata.name;
            if !deleted {
                self.gone_namespaces.swap_remove(name.as_str());
            } else if self.cache.list("*", Some(name)).next().is_some() {
                self.gone_namespaces.insert(name.clone());
            }
        } else if deleted
            && let Some(ns) = &object.metadata.namespace
            && self.gone_namespaces.contains(ns.as_str())
            && self.cache.list("*", Some(ns)).next().is_none()
        {
            self.gone_namespaces.swap_remove(ns.as_str());
        }
    }

    /// The namespaces of cached objects that the cache does not hold: after a resync, which lists
    /// every kind at one version, they are gone.
    pub(super) fn namespaces_gone_with_objects_left(&self) -> crate::fixed::FixedSet<smol_str::SmolStr> {
        self.cache
            .list("*", None)
            .filter_map(|o| o.metadata.namespace.as_ref())
            .filter(|ns| self.cache.namespace(ns).is_none())
            .cloned()
            .collect()
    }

    /// Whether namespace `name` is in the cache and not assigned to another engine.
    pub(super) fn namespace_is_ours(&self, name: &str) -> bool {
        self.cache.namespace(name).is_some_and(|ns| {
            ns.metadata.annotations.get(crate::api::names::ANNOTATION_ENGINE).is_none_or(|e| *e == self.config.identity)
        })
    }
}
