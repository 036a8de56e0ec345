//! Invariants about runtime containers, ownership and cleanup.

use crate::checker::View;
use drydock_engine::api::{Namespace, PhysicalContainer, Resource, Uid, names};
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn unique_owner_uid(view: &View<'_>) -> Result<(), String> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for c in view.runtime.containers() {
        if let Some(uid) = c.labels.get(names::LABEL_OWNER_UID)
            && let Some(other) = seen.insert(uid, &c.id)
        {
            return Err(format!("runtime containers {} and {} both carry owner uid {uid}", short(other), short(&c.id)));
        }
    }
    Ok(())
}

pub(super) fn no_owner_cycles(view: &View<'_>) -> Result<(), String> {
    // Only objects with owners can be on a cycle.
    let objects: Vec<_> =
        view.store.list(None, None).into_iter().filter(|o| !o.metadata.owner_references.is_empty()).collect();
    let owners: BTreeMap<&Uid, Vec<&Uid>> = objects
        .iter()
        .map(|o| (&o.metadata.uid, o.metadata.owner_references.iter().map(|r| &r.uid).collect()))
        .collect();
    for object in &objects {
        let start = &object.metadata.uid;
        if owners.get(start).is_some_and(|refs| refs.contains(&start)) {
            return Err(format!("{} has an ownerReference to itself", object.key()));
        }
        // Depth-first walk up the owner graph; reaching `start` again is a cycle.
        let mut stack: Vec<&Uid> = owners.get(start).cloned().unwrap_or_default();
        let mut visited: BTreeSet<&Uid> = BTreeSet::new();
        while let Some(uid) = stack.pop() {
            if uid == start {
                return Err(format!("{} is its own owner through a cycle of ownerReferences", object.key()));
            }
            if visited.insert(uid) {
                stack.extend(owners.get(uid).into_iter().flatten());
            }
        }
    }
    Ok(())
}

pub(super) fn no_leak_after_namespace_delete(view: &View<'_>) -> Result<(), String> {
    let namespaces: BTreeSet<String> =
        view.store.list(Some(Namespace::KIND), None).iter().map(|ns| ns.metadata.uid.0.clone()).collect();
    for c in view.runtime.containers() {
        if let Some(ns_uid) = c.labels.get(names::LABEL_NAMESPACE_UID)
            && !retained(c)
            && !namespaces.contains(ns_uid)
        {
            let ns = c.labels.get(names::LABEL_NAMESPACE).map_or("?", String::as_str);
            return Err(format!(
                "namespace {ns} (uid {ns_uid}) is gone but runtime container {} ({}) remains",
                c.name,
                short(&c.id)
            ));
        }
    }
    Ok(())
}

pub(super) fn finalizer_after_runtime_cleanup(view: &View<'_>) -> Result<(), String> {
    if let Some(message) = view.history.flagged("finalizer-after-runtime-cleanup") {
        return Err(message.to_string());
    }
    for c in view.runtime.containers().filter(|c| !retained(c)) {
        let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
        let owner = view.store.get_by_uid(&Uid(uid.clone()));
        if owner.is_none_or(|o| o.kind != PhysicalContainer::KIND) {
            return Err(format!(
                "runtime container {} ({}) outlived the PhysicalContainer it was created for (uid {uid})",
                c.name,
                short(&c.id)
            ));
        }
    }
    Ok(())
}

fn short(id: &str) -> &str {
    drydock_engine::runtime::short(id)
}

/// Containers created with `retain` outlive their object on purpose.
pub(super) fn retained(c: &drydock_engine::runtime::ContainerInfo) -> bool {
    c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
}

/// A recorded runtime container was created for this object: no stranger adopted by name.
pub(super) fn no_foreign_adoption(view: &View<'_>) -> Result<(), String> {
    for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
        if tracked_by_id(&pc) {
            continue; // tracked by id on purpose
        }
        let Some(id) = recorded_runtime_id(&pc) else { continue };
        let Some(c) = view.runtime.container(id) else { continue };
        if c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0) {
            return Err(format!(
                "{} adopted runtime container {} ({}), which was not created for it",
                pc.key(),
                c.name,
                short(&c.id)
            ));
        }
    }
    Ok(())
}

// These read single fields of the stored JSON: decoding whole specs and statuses for every
// container after every event was most of a sweep's time.

/// `status.runtimeId` of a physical container.
fn recorded_runtime_id(pc: &drydock_engine::api::Object) -> Option<&str> {
    pc.status.get("runtimeId")?.as_str()
}

/// `spec.containerId` is set: the container is tracked by id, not created for the object.
fn tracked_by_id(pc: &drydock_engine::api::Object) -> bool {
    pc.spec.get("containerId").is_some_and(|v| !v.is_null())
}

/// `spec.retain`.
fn spec_retains(pc: &drydock_engine::api::Object) -> bool {
    pc.spec.get("retain").and_then(serde_json::Value::as_bool).unwrap_or(false)
}

/// System labels on a container say what drydock set, whatever the caller's labels said.
pub(super) fn system_labels_win(view: &View<'_>) -> Result<(), String> {
    for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
        let Some(id) = recorded_runtime_id(&pc) else { continue };
        let Some(c) = view.runtime.container(id) else { continue };
        if tracked_by_id(&pc) || c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0) {
            continue; // not ours to label (see no-foreign-adoption)
        }
        let namespace = pc.metadata.namespace.clone().unwrap_or_default();
        let ns_uid = view
            .store
            .get(&drydock_engine::api::ObjectKey::cluster(drydock_engine::api::Namespace::KIND, &namespace))
            .map(|ns| ns.metadata.uid.0.clone());
        let wrong = |label: &str, want: Option<&str>| c.labels.get(label).map(String::as_str) != want;
        if wrong(names::LABEL_NAMESPACE, Some(&namespace))
            || (ns_uid.is_some() && wrong(names::LABEL_NAMESPACE_UID, ns_uid.as_deref()))
            || !c.labels.get(names::LABEL_CREATOR).is_some_and(|v| v.starts_with("engine-"))
            || wrong(names::LABEL_RETAIN, spec_retains(&pc).then_some("true"))
        {
            return Err(format!(
                "runtime container {} of {} carries wrong system labels: {:?}",
                c.name,
                pc.key(),
                c.labels
            ));
        }
    }
    Ok(())
}

/// Once drydock saw a container removed behind its back, it never creates one for that object.
pub(super) fn no_recreate_after_external_removal(view: &View<'_>) -> Result<(), String> {
    view.history.flagged("no-recreate-after-external-removal").map_or(Ok(()), |m| Err(m.to_string()))
}

/// An object's ownerReferences never change once set, except by a client (removing a reference,
/// as orphaning does, is allowed).
pub(super) fn ownership_stable(view: &View<'_>) -> Result<(), String> {
    view.history.flagged("ownership-stable").map_or(Ok(()), |m| Err(m.to_string()))
}

/// A terminating namespace deletes kinds in cleanup order: no image while containers remain.
pub(super) fn namespace_cleanup_order(view: &View<'_>) -> Result<(), String> {
    view.history.flagged("namespace-cleanup-order").map_or(Ok(()), |m| Err(m.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::checker::{History, check_all};
    use crate::runtime::SimRuntime;
    use drydock_engine::WallTime;
    use drydock_engine::api::{NamespaceSpec, Object, ObjectMeta, PhysicalContainerSpec, PhysicalContainerStatus};
    use drydock_engine::runtime::{ContainerInfo, ContainerState};
    use drydock_engine::store::{Registry, Store, StoreConfig};
    use std::sync::Arc;

    struct World {
        store: Store,
        runtime: SimRuntime,
        history: History,
        ns_uid: String,
    }

    impl World {
        fn new() -> Self {
            let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
            let ns = store
                .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
                .unwrap();
            World { store, runtime: SimRuntime::new(1), history: History::default(), ns_uid: ns.metadata.uid.0.clone() }
        }

        fn view(&self) -> View<'_> {
            View { store: &self.store, runtime: &self.runtime, history: &self.history, now: WallTime(0) }
        }

        /// A physical container recording runtime container `id`.
        fn pc(&mut self, name: &str, spec: PhysicalContainerSpec, id: &str) -> Arc<Object> {
            let created = self
                .store
                .create(WallTime(1), Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
                .unwrap();
            let mut next = (*created).clone();
            next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
                runtime_id: Some(id.into()),
                ..Default::default()
            });
            self.store.update_status(next).unwrap()
        }

        fn container(&mut self, id: &str, labels: &[(&str, &str)]) {
            self.runtime.insert(ContainerInfo {
                ports: Vec::new(),
                id: id.into(),
                name: format!("name-{id}"),
                image: "busybox".into(),
                labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                state: ContainerState::Running,
                exit_code: None,
            });
        }

        fn ours(&mut self, id: &str, pc: &Object, extra: &[(&str, &str)]) {
            let uid = pc.metadata.uid.0.clone();
            let ns_uid = self.ns_uid.clone();
            let mut labels = vec![
                (names::LABEL_OWNER_UID, uid.as_str()),
                (names::LABEL_NAMESPACE, "ns"),
                (names::LABEL_NAMESPACE_UID, ns_uid.as_str()),
                (names::LABEL_CREATOR, "engine-0"),
            ];
            labels.extend_from_slice(extra);
            let labels: Vec<(&str, &str)> = labels;
            self.container(id, &labels);
        }
    }

    fn busybox() -> PhysicalContainerSpec {
        PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() }
    }

    #[test]
    fn recording_a_strangers_container_is_foreign_adoption() {
        let mut w = World::new();
        let pc = w.pc("a", busybox(), "c1");
        w.ours("c1", &pc, &[]);
        assert!(no_foreign_adoption(&w.view()).is_ok());
        let mut w = World::new();
        w.pc("a", busybox(), "stranger");
        w.container("stranger", &[]);
        assert!(no_foreign_adoption(&w.view()).unwrap_err().contains("not created for it"));
        assert_eq!(check_all(&w.view()).map(|(n, _)| n), Some("no-foreign-adoption"));
    }

    #[test]
    fn a_tracked_container_is_not_foreign_adoption() {
        let mut w = World::new();
        w.pc("a", PhysicalContainerSpec { container_id: Some("stranger".into()), ..Default::default() }, "stranger");
        w.container("stranger", &[]);
        assert!(no_foreign_adoption(&w.view()).is_ok());
    }

    #[test]
    fn caller_values_on_system_labels_are_caught() {
        let mut w = World::new();
        let pc = w.pc("a", busybox(), "c1");
        w.ours("c1", &pc, &[]);
        assert!(system_labels_win(&w.view()).is_ok());
        let mut w = World::new();
        let pc = w.pc("a", busybox(), "c1");
        w.ours("c1", &pc, &[(names::LABEL_CREATOR, "mallory")]);
        assert!(system_labels_win(&w.view()).unwrap_err().contains("wrong system labels"));
        assert_eq!(check_all(&w.view()).map(|(n, _)| n), Some("system-labels-win"));
        let mut w = World::new();
        let pc = w.pc("a", busybox(), "c1");
        w.ours("c1", &pc, &[(names::LABEL_RETAIN, "true")]);
        assert!(system_labels_win(&w.view()).is_err(), "retain label on a container whose spec does not retain");
    }

    #[test]
    fn flagged_events_are_reported_by_their_invariant() {
        for invariant in [
            "no-recreate-after-external-removal",
            "namespace-cleanup-order",
            "finalizer-after-runtime-cleanup",
            "ownership-stable",
        ] {
            let mut w = World::new();
            assert_eq!(check_all(&w.view()), None);
            w.history.flag(invariant, "it happened".into());
            assert_eq!(check_all(&w.view()), Some((invariant, "it happened".to_string())), "{invariant}");
        }
    }

    #[test]
    fn retained_containers_may_outlive_their_object_and_namespace() {
        let mut w = World::new();
        w.container(
            "kept",
            &[
                (names::LABEL_OWNER_UID, "gone-uid"),
                (names::LABEL_NAMESPACE_UID, "gone-ns"),
                (names::LABEL_RETAIN, "true"),
            ],
        );
        assert_eq!(check_all(&w.view()), None);
        w.container("leaked", &[(names::LABEL_OWNER_UID, "gone-uid-2")]);
        assert_eq!(check_all(&w.view()).map(|(n, _)| n), Some("finalizer-after-runtime-cleanup"));
    }
}
