//! Invariants about cleanup: what must be gone before a physical container or a namespace leaves
//! the store (its runtime container, every object in it), the order a terminating namespace
//! deletes its children in, and no runtime container left behind by a namespace that is gone.

use super::containers::{retained, short};
use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::api::{Namespace, ObjectKey, PhysicalContainer, Resource, Uid, names};
use drydock_engine::runtime::ContainerInfo;
use drydock_engine::store::StoreRequest;
use std::collections::BTreeSet;

/// When a namespace is gone, nothing created for it remains in the runtime (unless retained).
#[derive(Default)]
pub(super) struct NoLeakAfterNamespaceDelete;

impl Invariant for NoLeakAfterNamespaceDelete {
    named!(NoLeakAfterNamespaceDelete);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let namespaces: BTreeSet<String> =
            view.store.list(Some(Namespace::KIND), None).iter().map(|ns| ns.metadata.uid.0.clone()).collect();
        for c in view.runtime.containers() {
            if let Some(ns_uid) = c.labels.get(names::LABEL_NAMESPACE_UID)
                && !retained(c)
                && !namespaces.contains(ns_uid)
            {
                return Err(leaked(c, ns_uid));
            }
        }
        Ok(())
    }

    /// A leak starts when a namespace goes (its containers remain) or when a container of a
    /// namespace already gone appears.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        let is_namespace =
            |uid: &str| view.store.get_by_uid(&Uid(uid.to_string())).is_some_and(|o| o.kind == Namespace::KIND);
        for c in changes.containers(view.runtime).filter(|c| !retained(c)) {
            if let Some(ns_uid) = c.labels.get(names::LABEL_NAMESPACE_UID)
                && !is_namespace(ns_uid)
            {
                return Err(leaked(c, ns_uid));
            }
        }
        for ns in changes.deleted(Namespace::KIND) {
            let ns_uid = &ns.metadata.uid.0;
            if let Some(c) = view.runtime.containers_labelled(names::LABEL_NAMESPACE_UID, ns_uid).find(|c| !retained(c))
                && !is_namespace(ns_uid)
            {
                return Err(leaked(c, ns_uid));
            }
        }
        Ok(())
    }
}

fn leaked(c: &ContainerInfo, ns_uid: &str) -> String {
    let ns = c.labels.get(names::LABEL_NAMESPACE).map_or("?", String::as_str);
    format!("namespace {ns} (uid {ns_uid}) is gone but runtime container {} ({}) remains", c.name, short(&c.id))
}

/// A physical container leaves the store only once no runtime operation on its container is in
/// flight and its container is gone. A leftover the workload planted for an object the store
/// never held (one a restored store lost) is the harvester's to remove, not a finalizer's.
#[derive(Default)]
pub(super) struct FinalizerAfterRuntimeCleanup {
    seen: Seen,
}

impl Invariant for FinalizerAfterRuntimeCleanup {
    named!(FinalizerAfterRuntimeCleanup);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        // Only an engine's own requests count: a process cannot know what another process sent
        // (two may reconcile an object of a namespace assigned to neither); a container such a
        // request makes after the object is gone is caught by `check` as one that outlived it.
        let Happening::StoreApplied { process, .. } = happening else { return };
        let Some(object) = happening.written_object() else { return };
        let removed = object.metadata.is_deleting() && object.metadata.finalizers.is_empty();
        if removed
            && object.kind == PhysicalContainer::KIND
            && view.facts.in_flight.mutates(*process, &object.metadata.uid.0)
        {
            self.seen.flag(format!(
                "{} left the store while a runtime operation on its container was in flight",
                object.key()
            ));
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        self.seen.check()?;
        for c in view.runtime.containers().filter(|c| !retained(c)) {
            let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
            outlived(view, c, uid)?;
        }
        Ok(())
    }

    /// A container outlives its object when the object goes, or when it appears after.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        self.seen.check()?;
        for c in changes.containers(view.runtime).filter(|c| !retained(c)) {
            if let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) {
                outlived(view, c, uid)?;
            }
        }
        for pc in changes.deleted(PhysicalContainer::KIND) {
            let uid = &pc.metadata.uid.0;
            for c in view.runtime.containers_labelled(names::LABEL_OWNER_UID, uid).filter(|c| !retained(c)) {
                outlived(view, c, uid)?;
            }
        }
        Ok(())
    }
}

/// `Err` if runtime container `c`, created for object `uid`, has outlived it.
fn outlived(view: &View<'_>, c: &ContainerInfo, uid: &str) -> Result<(), String> {
    if view.facts.lost_owners.contains(uid) {
        return Ok(());
    }
    let owner = view.store.get_by_uid(&Uid(uid.to_string()));
    if owner.is_none_or(|o| o.kind != PhysicalContainer::KIND) {
        return Err(format!(
            "runtime container {} ({}) outlived the PhysicalContainer it was created for (uid {uid})",
            c.name,
            short(&c.id)
        ));
    }
    Ok(())
}

/// A terminating namespace deletes its children kind by kind in cleanup order (the kinds'
/// `cleanup_rank`): no network, volume or image while containers remain.
#[derive(Default)]
pub(super) struct NamespaceCleanupOrder {
    seen: Seen,
}

impl Invariant for NamespaceCleanupOrder {
    named!(NamespaceCleanupOrder);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { process, request: StoreRequest::Delete { key, .. }, .. } = happening else {
            return;
        };
        let Some(namespace) = &key.namespace else { return };
        let store = view.store;
        let ns_terminating =
            store.get(&ObjectKey::cluster(Namespace::KIND, namespace)).is_some_and(|ns| ns.metadata.is_deleting());
        let rank = |kind: &str| store.registry().get(kind).map(|k| k.cleanup_rank);
        let deleting = rank(&key.kind);
        // An owner cleaning up what it owns (a logical container deleting its backing, the garbage
        // collector) is not the namespace's ordered cleanup.
        let owner_driven = store.get(key).is_some_and(|o| {
            o.metadata
                .owner_references
                .iter()
                .any(|r| store.get_by_uid(&r.uid).is_none_or(|owner| owner.metadata.is_deleting()))
        });
        if ns_terminating
            && !owner_driven
            && store.get(key).is_some_and(|o| !o.metadata.is_deleting())
            && let Some(earlier) = store.list(None, Some(namespace)).iter().find(|o| rank(&o.kind) < deleting)
        {
            self.seen.flag(format!(
                "p{process} deleted {key} while {} remained in terminating namespace {namespace}",
                earlier.key()
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A namespace's finalizer is released only once the store holds no object in it: a controller
/// that trusts a cache lagging on some kind (and skips its uncached confirmation) would release it
/// while a child it has not seen yet is still there.
#[derive(Default)]
pub(super) struct NamespaceReleasedEmpty {
    seen: Seen,
}

impl Invariant for NamespaceReleasedEmpty {
    named!(NamespaceReleasedEmpty);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { process, request: StoreRequest::Update { object }, .. } = happening else {
            return;
        };
        if object.kind != Namespace::KIND || object.metadata.has_finalizer(names::FINALIZER_NAMESPACE) {
            return;
        }
        let key = object.key();
        let held = view.store.get(&key).is_some_and(|ns| {
            ns.metadata.uid == object.metadata.uid && ns.metadata.has_finalizer(names::FINALIZER_NAMESPACE)
        });
        let name = &object.metadata.name;
        if held && let Some(child) = view.store.list(None, Some(name)).first() {
            self.seen.flag(format!(
                "p{process} released the finalizer of namespace {name} while {} was still in it",
                child.key()
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
