//! Invariants about logical containers and their backing resources.

use crate::checker::View;
use drydock_engine::api::logical::LogicalContainer;
use drydock_engine::api::{Resource, Uid, names};
use std::collections::BTreeMap;

/// Never two runtime containers for one logical container.
pub(super) fn single_backing(view: &View<'_>) -> Result<(), String> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for c in view.runtime.containers() {
        if let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID)
            && let Some(other) = seen.insert(uid, &c.name)
        {
            return Err(format!("runtime containers {other} and {} both realise logical container {uid}", c.name));
        }
    }
    Ok(())
}

/// A session container never outlives its logical container.
pub(super) fn session_never_outlives_owner(view: &View<'_>) -> Result<(), String> {
    for c in view.runtime.containers() {
        let retained = c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true");
        if let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID)
            && !retained
            && view.store.get_by_uid(&Uid(uid.clone())).is_none_or(|o| o.kind != LogicalContainer::KIND)
        {
            return Err(format!("session container {} outlived its logical container {uid}", c.name));
        }
    }
    Ok(())
}

fn flagged(view: &View<'_>, invariant: &str) -> Result<(), String> {
    view.history.flagged(invariant).map_or(Ok(()), |m| Err(m.to_string()))
}

pub(super) fn persistent_reuse(view: &View<'_>) -> Result<(), String> {
    flagged(view, "persistent-reuse")
}

pub(super) fn persistent_replace_once(view: &View<'_>) -> Result<(), String> {
    flagged(view, "persistent-replace-once")
}

pub(super) fn existing_never_creates(view: &View<'_>) -> Result<(), String> {
    flagged(view, "existing-never-creates")
}

pub(super) fn persistent_survives_delete(view: &View<'_>) -> Result<(), String> {
    flagged(view, "persistent-survives-delete")
}

pub(super) fn hold_before_release(view: &View<'_>) -> Result<(), String> {
    flagged(view, "hold-before-release")?;
    // And in every state: an owned backing of a live logical container holds.
    for kind in [drydock_engine::api::PhysicalContainer::KIND, drydock_engine::api::ContainerImage::KIND] {
        for child in view.store.list(Some(kind), None) {
            for owner in child.metadata.owner_references.iter().filter(|r| r.kind == LogicalContainer::KIND) {
                let live = view.store.get_by_uid(&owner.uid).is_some_and(|lc| !lc.metadata.is_deleting());
                if live && !child.metadata.has_finalizer(names::FINALIZER_HOLD) {
                    return Err(format!("{} has no hold while its logical container is live", child.key()));
                }
            }
        }
    }
    Ok(())
}

pub(super) fn workload_recorded_before_lease_release(view: &View<'_>) -> Result<(), String> {
    flagged(view, "workload-recorded-before-lease-release")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::checker::{History, check_all};
    use crate::runtime::SimRuntime;
    use drydock_engine::WallTime;
    use drydock_engine::api::logical::{LogicalContainerSpec, LogicalMode};
    use drydock_engine::api::{Namespace, NamespaceSpec, Object, ObjectMeta, PhysicalContainer, PhysicalContainerSpec};
    use drydock_engine::runtime::{ContainerInfo, ContainerState};
    use drydock_engine::store::{Registry, Store, StoreConfig};

    fn store() -> Store {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        store
            .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
            .unwrap();
        store
    }

    fn logical(store: &mut Store, name: &str, mode: LogicalMode) -> Uid {
        let spec = LogicalContainerSpec { mode, image: Some("busybox".into()), ..Default::default() };
        store
            .create(WallTime(1), Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap()
            .metadata
            .uid
            .clone()
    }

    fn container(runtime: &mut SimRuntime, name: &str, labels: &[(&str, &str)]) {
        runtime.insert(ContainerInfo {
            ports: Vec::new(),
            id: format!("{name}-id"),
            name: name.into(),
            image: "busybox".into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            state: ContainerState::Running,
            exit_code: None,
        });
    }

    fn view<'a>(store: &'a Store, runtime: &'a SimRuntime, history: &'a History) -> View<'a> {
        View { store, runtime, history, now: WallTime(0) }
    }

    #[test]
    fn two_runtime_containers_for_one_logical_container_are_caught() {
        let mut store = store();
        let uid = logical(&mut store, "web", LogicalMode::Session);
        let mut runtime = SimRuntime::new(1);
        container(&mut runtime, "a", &[(names::LABEL_LOGICAL_UID, &uid.0)]);
        let history = History::default();
        assert!(single_backing(&view(&store, &runtime, &history)).is_ok());
        container(&mut runtime, "b", &[(names::LABEL_LOGICAL_UID, &uid.0)]);
        let v = view(&store, &runtime, &history);
        assert!(single_backing(&v).unwrap_err().contains("both realise"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("single-backing"));
    }

    #[test]
    fn a_session_container_without_its_logical_container_is_caught_a_retained_one_is_not() {
        let store = store();
        let mut runtime = SimRuntime::new(1);
        let history = History::default();
        container(&mut runtime, "kept", &[(names::LABEL_LOGICAL_UID, "gone"), (names::LABEL_RETAIN, "true")]);
        assert!(session_never_outlives_owner(&view(&store, &runtime, &history)).is_ok());
        container(&mut runtime, "leaked", &[(names::LABEL_LOGICAL_UID, "gone-too")]);
        let v = view(&store, &runtime, &history);
        assert!(session_never_outlives_owner(&v).unwrap_err().contains("outlived"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("session-never-outlives-owner"));
    }

    #[test]
    fn a_live_logical_containers_backing_without_hold_is_caught() {
        let mut store = store();
        let uid = logical(&mut store, "web", LogicalMode::Session);
        let owner = store.get_by_uid(&uid).unwrap().owner_reference(true);
        let mut meta = ObjectMeta::named(Some("ns"), "web-backing");
        meta.owner_references.push(owner);
        meta.finalizers.push(names::FINALIZER_HOLD.into());
        let spec = PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() };
        let pc = store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &spec)).unwrap();
        let (runtime, history) = (SimRuntime::new(1), History::default());
        assert!(hold_before_release(&view(&store, &runtime, &history)).is_ok());
        let mut next = (*pc).clone();
        next.metadata.finalizers.clear();
        store.update(next).unwrap();
        let v = view(&store, &runtime, &history);
        assert!(hold_before_release(&v).unwrap_err().contains("no hold"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("hold-before-release"));
    }

    #[test]
    fn flagged_logical_events_are_reported_by_their_invariant() {
        for invariant in [
            "persistent-reuse",
            "persistent-replace-once",
            "existing-never-creates",
            "persistent-survives-delete",
            "hold-before-release",
            "workload-recorded-before-lease-release",
        ] {
            let (store, runtime) = (store(), SimRuntime::new(1));
            let mut history = History::default();
            assert_eq!(check_all(&view(&store, &runtime, &history)), None);
            history.flag(invariant, "it happened".into());
            assert_eq!(check_all(&view(&store, &runtime, &history)), Some((invariant, "it happened".to_string())));
        }
    }
}
