//! Desired state equals actual state: the predicate the liveness phase waits for.

use super::View;
use drydock_engine::api::container::is_volume_source;
use drydock_engine::api::logical::{LogicalContainer, LogicalMode, LogicalPhase};
use drydock_engine::api::{
    ContainerImage, ContainerNetwork, ContainerPhase, ContainerVolume, ImagePhase, Lease, Namespace, NamespacePhase,
    Object, ObjectKey, PhysicalContainer, PullPolicy, Resource, ResourcePhase, RuntimeResourceStatus, Uid, names,
};
use drydock_engine::runtime::{ContainerState, RuntimeObject};

/// `Ok` when every object is settled and agrees with the runtime; otherwise the first thing that
/// does not, in words.
pub fn desired_equals_actual(view: &View<'_>) -> Result<(), String> {
    namespaces_settled(view)?;
    images_settled(view)?;
    runtime_resources_settled(view)?;
    containers_settled(view)?;
    logicals_settled(view)?;
    super::runs_as_specified::containers_run_their_specs(view)?;
    leases_released(view)?;
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

/// Why an image resource is settled without being Ready, if it is; `None` if it is not settled.
fn image_settled(view: &View<'_>, image: &Object) -> Option<bool> {
    let spec = image.spec::<ContainerImage>().ok()?;
    let status = image.status::<ContainerImage>().ok()?;
    if image.metadata.is_deleting() {
        return None;
    }
    let present = |id: &str| view.runtime.has_image(id);
    match status.phase {
        ImagePhase::Ready => status.image_id.as_deref().is_some_and(present).then_some(true),
        ImagePhase::Unavailable => status.image_id.as_deref().is_some_and(|id| !present(id)).then_some(false),
        ImagePhase::Failed => Some(false),
        // Policy `never` and absent: settled once the controller has said it is waiting.
        ImagePhase::Pending if spec.pull_policy == PullPolicy::Never => {
            (!present(&spec.image) && status.message.is_some()).then_some(false)
        }
        ImagePhase::Pending | ImagePhase::Pulling => None,
    }
}

fn images_settled(view: &View<'_>) -> Result<(), String> {
    for image in view.store.list(Some(ContainerImage::KIND), None) {
        if image_settled(view, &image).is_none() {
            let status = image.status::<ContainerImage>().unwrap_or_default();
            return Err(format!(
                "{} is not settled: phase {:?}, image {:?}",
                image.key(),
                status.phase,
                status.image_id
            ));
        }
    }
    Ok(())
}

fn logicals_settled(view: &View<'_>) -> Result<(), String> {
    for lc in view.store.list(Some(LogicalContainer::KIND), None) {
        let key = lc.key();
        if lc.metadata.is_deleting() {
            return Err(format!("{key} is still being deleted"));
        }
        let spec = lc.spec::<LogicalContainer>().map_err(|e| e.to_string())?;
        let status = lc.status::<LogicalContainer>().map_err(|e| e.to_string())?;
        let ns = lc.metadata.namespace.as_deref().unwrap_or_default();
        let backing = view.store.get(&ObjectKey::namespaced(
            PhysicalContainer::KIND,
            ns,
            &super::naming::backing_name(&lc.metadata.name),
        ));
        let backing_phase = backing.and_then(|b| b.status::<PhysicalContainer>().ok()).map(|s| s.phase);
        let ok = match status.phase {
            LogicalPhase::Pending => false,
            LogicalPhase::Starting => {
                let waits = backing
                    .is_some_and(|b| b.spec::<PhysicalContainer>().is_ok_and(|s| waits_for_unready_image(view, b, &s)));
                backing_phase == Some(ContainerPhase::Pending) && waits
            }
            LogicalPhase::Running => backing_phase == Some(ContainerPhase::Running),
            LogicalPhase::Exited => backing_phase == Some(ContainerPhase::Exited),
            LogicalPhase::Failed => true,
            LogicalPhase::NotFound => {
                let name = spec.runtime_name(ns, &lc.metadata.name);
                spec.mode == LogicalMode::Existing && view.runtime.container(&name).is_none()
            }
        };
        if !ok {
            return Err(format!("{key}: phase {:?} but its backing is {backing_phase:?}", status.phase));
        }
        if spec.mode == LogicalMode::Persistent && status.runtime_id.is_some() && status.workload.is_none() {
            return Err(format!("{key}: persistent and running, but no workload recorded"));
        }
        // The workload is what keeps a persistent container across sessions: nothing else has one.
        if spec.mode != LogicalMode::Persistent && status.workload.is_some() {
            return Err(format!("{key}: mode {:?}, but a workload is recorded", spec.mode));
        }
    }
    Ok(())
}

fn leases_released(view: &View<'_>) -> Result<(), String> {
    for lease in view.store.list(Some(Lease::KIND), None) {
        if let Some(holder) = lease.spec::<Lease>().ok().and_then(|s| s.live_holder(view.now).map(str::to_string)) {
            return Err(format!("{} is still held by {holder}", lease.key()));
        }
    }
    Ok(())
}

/// A container waiting for an image that will never be Ready, or for a network or volume object
/// that does not exist or is being deleted, is settled.
fn waits_for_unready_image(view: &View<'_>, pc: &Object, spec: &drydock_engine::api::PhysicalContainerSpec) -> bool {
    let ns = pc.metadata.namespace.as_deref().unwrap_or_default();
    // Absent, or on its way out (what it waits for will never be Ready).
    let absent = |kind: &str, name: &str| {
        view.store.get(&ObjectKey::namespaced(kind, ns, name)).is_none_or(|o| o.metadata.is_deleting())
    };
    if spec.networks.iter().any(|n| absent(ContainerNetwork::KIND, &n.name))
        || spec.mounts.iter().any(|m| is_volume_source(&m.source) && absent(ContainerVolume::KIND, &m.source))
    {
        return true;
    }
    let Some(name) = &spec.image_ref else { return false };
    match view.store.get(&ObjectKey::namespaced(ContainerImage::KIND, ns, name)) {
        None => true,
        // A Failed image fails its containers (ImageFailed): waiting on it is not settled.
        Some(image) => {
            let failed = image.status::<ContainerImage>().is_ok_and(|s| s.phase == ImagePhase::Failed);
            !failed && image_settled(view, image) == Some(false)
        }
    }
}

/// Objects standing for a runtime resource (networks, volumes: every kind that says so with
/// `KindInfo::with_runtime_object`): Ready ones exist in the runtime, Missing ones do not, none
/// is Pending.
fn runtime_resources_settled(view: &View<'_>) -> Result<(), String> {
    let kinds = view.store.registry().kinds().filter_map(|k| Some((k.kind.as_str(), k.runtime_object()?)));
    for (kind, runtime_object) in kinds {
        for object in view.store.list(Some(kind), None) {
            let key = object.key();
            let status: RuntimeResourceStatus =
                serde_json::from_value(object.status.clone()).map_err(|e| format!("{key}: {e}"))?;
            if object.metadata.is_deleting() {
                // A volume of its own a container still mounts is waited for (never forced),
                // like a Kubernetes claim in use. A stranger's volume that took the name after
                // ours was removed is nothing the object waits for.
                let own = |name: &str| {
                    view.runtime.resources().any(|r| {
                        r.object == RuntimeObject::Volume
                            && r.name == name
                            && r.labels.get(names::LABEL_OWNER_UID) == Some(&object.metadata.uid.0)
                    })
                };
                let in_use = runtime_object == RuntimeObject::Volume
                    && status.runtime_id.as_deref().is_some_and(|name| {
                        own(name) && view.runtime.containers().any(|c| view.runtime.mounts_of(&c.id).any(|m| m == name))
                    });
                if in_use {
                    continue;
                }
                return Err(format!("{key} is still being deleted"));
            }
            // Its own: created for it (its uid label), or the one it tracks. A volume is known by
            // its name, which another may hold once the object's was removed.
            let tracked = object.spec.get(format!("{runtime_object}Id")).is_some_and(|v| !v.is_null());
            let ours = |labels: &std::collections::BTreeMap<String, String>| {
                tracked || labels.get(names::LABEL_OWNER_UID) == Some(&object.metadata.uid.0)
            };
            let exists = status.runtime_id.as_deref().is_some_and(|id| {
                view.runtime.resources().any(|r| r.object == runtime_object && r.id == id && ours(r.labels))
            });
            let ok = match status.phase {
                ResourcePhase::Pending => false,
                ResourcePhase::Ready => exists,
                ResourcePhase::Missing => !exists,
                ResourcePhase::Failed => true,
            };
            if !ok {
                return Err(format!("{key}: phase {:?} but its runtime object exists: {exists}", status.phase));
            }
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
            // Waiting for an image that will never be Ready, with nothing created yet.
            ContainerPhase::Pending => status.runtime_id.is_none() && waits_for_unready_image(view, &pc, &spec),
            ContainerPhase::Running => state == Some(ContainerState::Running) && !spec.stop,
            // Exited once started: a container never started is Exited only if asked to stop.
            ContainerPhase::Exited => {
                state.is_some_and(|s| s != ContainerState::Running && (s != ContainerState::Created || spec.stop))
            }
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
            && spec.container_id.is_none()
            && c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0)
        {
            return Err(format!("{key} records runtime container {}, which was not created for it", c.name));
        }
        // The exit code a stopped or failed container reports is the one its runtime container
        // recorded.
        if let Some(c) = runtime
            && matches!(status.phase, ContainerPhase::Exited | ContainerPhase::Failed)
            && c.exit_code.is_some()
            && status.exit_code != c.exit_code
        {
            return Err(format!(
                "{key}: phase {:?} with exit code {:?}, but its runtime container exited {:?}",
                status.phase, status.exit_code, c.exit_code
            ));
        }
        if spec.stop && state == Some(ContainerState::Running) {
            return Err(format!("{key}: stop requested but the runtime container is running"));
        }
    }
    Ok(())
}

fn runtime_accounted_for(view: &View<'_>) -> Result<(), String> {
    runtime_resources_accounted_for(view)?;
    for c in view.runtime.containers() {
        let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
        let retained = c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true");
        let owner = view.store.get_by_uid(&Uid(uid.clone()));
        if retained && owner.is_none() {
            continue; // kept on purpose after its object went
        }
        let Some(owner) = owner else {
            return Err(format!("runtime container {} has no owner object (uid {uid})", c.name));
        };
        let recorded = owner.status::<PhysicalContainer>().ok().and_then(|s| s.runtime_id);
        if recorded.as_deref() != Some(c.id.as_str()) {
            return Err(format!("runtime container {} is not the one {} records ({recorded:?})", c.name, owner.key()));
        }
    }
    Ok(())
}

/// Every network and volume created for an object whose object is gone is retained or (a volume)
/// still used by a container: an abandoned volume goes once its last user went.
fn runtime_resources_accounted_for(view: &View<'_>) -> Result<(), String> {
    for r in view.runtime.resources() {
        let Some(uid) = r.labels.get(names::LABEL_OWNER_UID) else { continue };
        if r.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
            || view.store.get_by_uid(&Uid(uid.clone())).is_some()
        {
            continue;
        }
        let used = r.object == RuntimeObject::Volume
            && view.runtime.containers().any(|c| view.runtime.mounts_of(&c.id).any(|m| m == r.name));
        if !used {
            return Err(format!("runtime {} {} has no owner object (uid {uid}) and nothing uses it", r.object, r.name));
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
