//! Desired state equals actual state: the predicate the liveness phase waits for.

use super::View;
use drydock_engine::api::{ContainerPhase, Namespace, NamespacePhase, PhysicalContainer, Resource, Uid, names};
use drydock_engine::runtime::ContainerState;

/// `Ok` when every object is settled and agrees with the runtime; otherwise the first thing that
/// does not, in words.
pub fn desired_equals_actual(view: &View<'_>) -> Result<(), String> {
    namespaces_settled(view)?;
    containers_settled(view)?;
    runtime_accounted_for(view)?;
    dependents_have_owners(view)?;
    namespaces_exist(view)
}

fn namespaces_exist(view: &View<'_>) -> Result<(), String> {
    for object in view.store.list(None, None) {
        if let Some(ns) = &object.metadata.namespace
            && view.store.get(&drydock_engine::api::ObjectKey::cluster(Namespace::KIND, ns)).is_none()
        {
            return Err(format!("{} outlived its namespace", object.key()));
        }
    }
    Ok(())
}

fn namespaces_settled(view: &View<'_>) -> Result<(), String> {
    for ns in view.store.list(Some(Namespace::KIND), None) {
        if ns.metadata.is_deleting() {
            return Err(format!("{} is still terminating", ns.key()));
        }
        let phase = ns.status::<Namespace>().ok().and_then(|s| s.phase);
        if phase != Some(NamespacePhase::Active) {
            return Err(format!("{} has phase {phase:?}, want Active", ns.key()));
        }
    }
    Ok(())
}

fn containers_settled(view: &View<'_>) -> Result<(), String> {
    for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
        let key = pc.key();
        if pc.metadata.is_deleting() {
            return Err(format!("{key} is still being deleted"));
        }
        let spec = pc.spec::<PhysicalContainer>().map_err(|e| e.to_string())?;
        let status = pc.status::<PhysicalContainer>().map_err(|e| e.to_string())?;
        let runtime = status.runtime_id.as_deref().and_then(|id| view.runtime.container(id));
        let state = runtime.map(|c| c.state);
        let ok = match status.phase {
            ContainerPhase::Pending => false,
            ContainerPhase::Running => state == Some(ContainerState::Running) && !spec.stop,
            ContainerPhase::Exited => state.is_some_and(|s| s != ContainerState::Running),
            ContainerPhase::Missing => status.runtime_id.is_some() && runtime.is_none(),
            ContainerPhase::Failed => true,
        };
        if !ok {
            return Err(format!(
                "{key}: phase {:?} (stop={}) but the runtime container is {state:?}",
                status.phase, spec.stop
            ));
        }
        if let Some(c) = runtime
            && c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0)
        {
            return Err(format!("{key} records runtime container {}, which was not created for it", c.name));
        }
        if spec.stop && state == Some(ContainerState::Running) {
            return Err(format!("{key}: stop requested but the runtime container is running"));
        }
    }
    Ok(())
}

fn runtime_accounted_for(view: &View<'_>) -> Result<(), String> {
    for c in view.runtime.containers() {
        let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
        let Some(owner) = view.store.get_by_uid(&Uid(uid.clone())) else {
            return Err(format!("runtime container {} has no owner object (uid {uid})", c.name));
        };
        let recorded = owner.status::<PhysicalContainer>().ok().and_then(|s| s.runtime_id);
        if recorded.as_deref() != Some(c.id.as_str()) {
            return Err(format!("runtime container {} is not the one {} records ({recorded:?})", c.name, owner.key()));
        }
    }
    Ok(())
}

fn dependents_have_owners(view: &View<'_>) -> Result<(), String> {
    for object in view.store.list(None, None) {
        let refs = &object.metadata.owner_references;
        if !refs.is_empty() && !refs.iter().any(|r| view.store.get_by_uid(&r.uid).is_some()) {
            return Err(format!("{} still exists but all its owners are gone", object.key()));
        }
    }
    Ok(())
}
