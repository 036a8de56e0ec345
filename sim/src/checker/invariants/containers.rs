//! Invariants about runtime containers: which object each was created for (one container per
//! owner uid, no stranger adopted, system labels as drydock set them), never created again after
//! an external removal, no stray beside a failed object, the harvester removing only leftovers,
//! and admission refusing what the runtime would.

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use crate::facts::is_process_identity;
use drydock_engine::OpId;
use drydock_engine::api::{
    ContainerNetwork, ContainerVolume, Namespace, Object, ObjectKey, PhysicalContainer, Resource, Uid, names,
};
use drydock_engine::runtime::{ContainerInfo, ContainerState, RuntimeError, RuntimeObject, RuntimeRequest};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// No two runtime containers carry the same owner uid label.
#[derive(Default)]
pub(super) struct UniqueOwnerUid;

impl Invariant for UniqueOwnerUid {
    named!(UniqueOwnerUid);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        for c in view.runtime.containers() {
            if let Some(uid) = c.labels.get(names::LABEL_OWNER_UID)
                && let Some(other) = seen.insert(uid, &c.id)
            {
                return Err(format!(
                    "runtime containers {} and {} both carry owner uid {uid}",
                    short(other),
                    short(&c.id)
                ));
            }
        }
        Ok(())
    }

    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for c in changes.containers(view.runtime) {
            let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
            let mut same = view.runtime.containers_labelled(names::LABEL_OWNER_UID, uid);
            if let (Some(a), Some(b)) = (same.next(), same.next()) {
                return Err(format!(
                    "runtime containers {} and {} both carry owner uid {uid}",
                    short(&a.id),
                    short(&b.id)
                ));
            }
        }
        Ok(())
    }
}

/// A physical container reported `Failed` has no live runtime container carrying its uid, other
/// than the one it records (a container whose start failed stays, for its error and exit code).
/// `Failed` is final: a container it does not know of would run on, unowned, for as long as the
/// object lives. (An object gone from the store is the same question: see
/// finalizer-after-runtime-cleanup for physical containers and session-never-outlives-owner for
/// logical ones, which allow for retained containers.) A container being removed is not live.
#[derive(Default)]
pub(super) struct FailedHasNoStrayContainer;

impl Invariant for FailedHasNoStrayContainer {
    named!(FailedHasNoStrayContainer);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let mut failed: BTreeMap<String, (ObjectKey, Option<String>)> = BTreeMap::new();
        for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
            if pc.status.get("phase").and_then(serde_json::Value::as_str) == Some("Failed") {
                let recorded = recorded_runtime_id(&pc).map(str::to_string);
                failed.insert(pc.metadata.uid.0.clone(), (pc.key(), recorded));
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        for c in view.runtime.containers().filter(|c| c.state != ContainerState::Removing) {
            let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
            if let Some((key, recorded)) = failed.get(uid) {
                stray(key, recorded.as_deref(), c)?;
            }
        }
        Ok(())
    }

    /// A stray appears when an object turns Failed, or when a container of a Failed one appears.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        let failed = |pc: &Object| pc.status.get("phase").and_then(serde_json::Value::as_str) == Some("Failed");
        for pc in changes.live(PhysicalContainer::KIND).filter(|pc| failed(pc)) {
            let live = view.runtime.containers_labelled(names::LABEL_OWNER_UID, &pc.metadata.uid.0);
            for c in live.filter(|c| c.state != ContainerState::Removing) {
                stray(&pc.key(), recorded_runtime_id(pc), c)?;
            }
        }
        for c in changes.containers(view.runtime).filter(|c| c.state != ContainerState::Removing) {
            let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) else { continue };
            if let Some(pc) = view.store.get_by_uid(&Uid(uid.clone())).filter(|o| o.kind == PhysicalContainer::KIND)
                && failed(pc)
            {
                stray(&pc.key(), recorded_runtime_id(pc), c)?;
            }
        }
        Ok(())
    }
}

/// `Err` if `c`, carrying the uid of Failed object `key` that records `recorded`, is a stray.
fn stray(key: &ObjectKey, recorded: Option<&str>, c: &ContainerInfo) -> Result<(), String> {
    if recorded == Some(c.id.as_str()) {
        return Ok(());
    }
    Err(format!(
        "{key} is Failed, but runtime container {} ({}) carrying its uid lives on{}",
        c.name,
        short(&c.id),
        match recorded {
            Some(id) => format!(" (it records {})", short(id)),
            None => " (it records none)".to_string(),
        }
    ))
}

/// The harvester removes a pass's leftover volumes only after that pass's container removes have
/// been answered (or given up on): a volume is in use until the container mounting it is gone,
/// and removing it beside the container's remove races it.
#[derive(Default)]
pub(super) struct HarvestVolumesAfterContainers {
    /// Per process: the harvester's container removes not answered yet.
    removing: BTreeMap<usize, BTreeSet<OpId>>,
    seen: Seen,
}

impl Invariant for HarvestVolumesAfterContainers {
    named!(HarvestVolumesAfterContainers);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::RuntimeSent,
            HappeningKind::Answered,
            HappeningKind::RuntimeDetached,
            HappeningKind::RuntimeSettled,
            HappeningKind::Crashed,
        ]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, id, request, issuer }
                if issuer.kind == crate::checker::naming::HARVEST_KIND =>
            {
                match request {
                    RuntimeRequest::RemoveContainer { .. } => {
                        self.removing.entry(*process).or_default().insert(*id);
                    }
                    RuntimeRequest::RemoveVolume { name } => {
                        let waiting = self.removing.get(process).map_or(0, BTreeSet::len);
                        if waiting > 0 {
                            self.seen.flag(format!(
                                "p{process}'s harvester removes volume {name} while {waiting} of its container removes are unanswered"
                            ));
                        }
                    }
                    _ => {}
                }
            }
            Happening::Answered { process, id }
            | Happening::RuntimeDetached { process, id }
            | Happening::RuntimeSettled { process, id } => {
                if let Some(ids) = self.removing.get_mut(process) {
                    ids.remove(id);
                }
            }
            Happening::Crashed { process } => {
                self.removing.remove(process);
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// The harvester removes only leftovers: a container or volume its own engine created, not
/// retained, whose owner object is gone and (a container) whose id no object records. Judged when the remove is sent, against
/// the store and runtime of that moment.
#[derive(Default)]
pub(super) struct HarvestOnlyLeftovers {
    seen: Seen,
}

impl Invariant for HarvestOnlyLeftovers {
    named!(HarvestOnlyLeftovers);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, request, issuer, .. } = happening else { return };
        if issuer.kind != crate::checker::naming::HARVEST_KIND {
            return;
        }
        let identity = crate::facts::process_identity(*process);
        let flagged = match request {
            RuntimeRequest::RemoveContainer { id, .. } => harvested_container(view, &identity, id),
            RuntimeRequest::RemoveVolume { name } => harvested_volume(view, &identity, name),
            _ => None,
        };
        if let Some(message) = flagged {
            self.seen.flag(format!("the harvester of {identity} removes {message}"));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// Why the harvester of `identity` must not remove container `id`, if it must not.
fn harvested_container(view: &View<'_>, identity: &str, id: &str) -> Option<String> {
    let c = view.runtime.container(id)?;
    let why = if c.labels.get(names::LABEL_CREATOR).map(String::as_str) != Some(identity) {
        Some(format!("it was not created by {identity}"))
    } else if retained(c) {
        Some("it is retained".to_string())
    } else if let Some(owner) =
        c.labels.get(names::LABEL_OWNER_UID).and_then(|uid| view.store.get_by_uid(&Uid(uid.clone())))
    {
        Some(format!("its object {} still exists", owner.key()))
    } else {
        view.store
            .list(Some(PhysicalContainer::KIND), None)
            .iter()
            .find(|pc| recorded_runtime_id(pc) == Some(c.id.as_str()) || tracked_id(pc) == Some(c.id.as_str()))
            .map(|pc| format!("{} records it", pc.key()))
    };
    why.map(|why| format!("runtime container {} ({}), but {why}", c.name, short(&c.id)))
}

/// Why the harvester of `identity` must not remove volume `name`, if it must not: the same rules
/// as for a container (a volume is recorded only by an object it was created for).
fn harvested_volume(view: &View<'_>, identity: &str, name: &str) -> Option<String> {
    let v = view.runtime.resources().find(|r| r.object == RuntimeObject::Volume && r.name == name)?;
    let why = if v.labels.get(names::LABEL_CREATOR).map(String::as_str) != Some(identity) {
        Some(format!("it was not created by {identity}"))
    } else if v.labels.get(names::LABEL_RETAIN).is_some_and(|r| r == "true") {
        Some("it is retained".to_string())
    } else {
        match v.labels.get(names::LABEL_OWNER_UID) {
            None => Some("it was made for no object (no owner uid label)".to_string()),
            Some(uid) => {
                view.store.get_by_uid(&Uid(uid.clone())).map(|o| format!("its object {} still exists", o.key()))
            }
        }
    };
    why.map(|why| format!("runtime volume {name}, but {why}"))
}

/// A recorded runtime container was created for its object: no stranger is adopted by name.
#[derive(Default)]
pub(super) struct NoForeignAdoption;

impl Invariant for NoForeignAdoption {
    named!(NoForeignAdoption);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
            adopted(view, &pc)?;
        }
        Ok(())
    }

    /// An adoption shows when an object records a container, or when the container it records
    /// appears.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for pc in changes.live(PhysicalContainer::KIND) {
            adopted(view, pc)?;
        }
        for pc in recording_changed(view, changes) {
            adopted(view, pc)?;
        }
        Ok(())
    }
}

/// `Err` if `pc` records a runtime container that was not created for it.
fn adopted(view: &View<'_>, pc: &Object) -> Result<(), String> {
    if tracked_by_id(pc) {
        return Ok(()); // tracked by id on purpose
    }
    let Some(id) = recorded_runtime_id(pc) else { return Ok(()) };
    let Some(c) = view.runtime.container(id) else { return Ok(()) };
    if c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0) {
        return Err(format!(
            "{} adopted runtime container {} ({}), which was not created for it",
            pc.key(),
            c.name,
            short(&c.id)
        ));
    }
    Ok(())
}

/// The physical containers that record or track a runtime container that changed.
fn recording_changed<'v>(view: &'v View<'_>, changes: &'v Changes<'_>) -> impl Iterator<Item = &'v Arc<Object>> + 'v {
    changes
        .runtime
        .containers
        .iter()
        .flat_map(|id| changes.recorded.objects_recording(id))
        .filter_map(|key| view.store.get(key))
}

/// System labels on a container say what drydock set, whatever the caller's labels said.
#[derive(Default)]
pub(super) struct SystemLabelsWin;

impl Invariant for SystemLabelsWin {
    named!(SystemLabelsWin);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
            labelled_right(view, &pc)?;
        }
        Ok(())
    }

    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for pc in changes.live(PhysicalContainer::KIND) {
            labelled_right(view, pc)?;
        }
        for pc in recording_changed(view, changes) {
            labelled_right(view, pc)?;
        }
        Ok(())
    }
}

/// `Err` if the runtime container `pc` records, made for it, carries wrong system labels.
fn labelled_right(view: &View<'_>, pc: &Object) -> Result<(), String> {
    let Some(id) = recorded_runtime_id(pc) else { return Ok(()) };
    let Some(c) = view.runtime.container(id) else { return Ok(()) };
    if tracked_by_id(pc) || c.labels.get(names::LABEL_OWNER_UID) != Some(&pc.metadata.uid.0) {
        return Ok(()); // not ours to label (see no-foreign-adoption)
    }
    let namespace = pc.metadata.namespace.clone().unwrap_or_default();
    let ns_uid = view.store.get(&ObjectKey::cluster(Namespace::KIND, &namespace)).map(|ns| ns.metadata.uid.0.clone());
    let wrong = |label: &str, want: Option<&str>| c.labels.get(label).map(String::as_str) != want;
    if wrong(names::LABEL_NAMESPACE, Some(&namespace))
        || (ns_uid.is_some() && wrong(names::LABEL_NAMESPACE_UID, ns_uid.as_deref()))
        || !c.labels.get(names::LABEL_CREATOR).is_some_and(|v| is_process_identity(v))
        || wrong(names::LABEL_RETAIN, spec_retains(pc).then_some("true"))
    {
        return Err(format!(
            "runtime container {} of {} carries wrong system labels: {:?}",
            c.name,
            pc.key(),
            c.labels
        ));
    }
    Ok(())
}

/// Once a container drydock recorded was removed behind its back, drydock never creates one for
/// that object again.
#[derive(Default)]
pub(super) struct NoRecreateAfterExternalRemoval {
    /// Owner uids whose recorded runtime container someone removed outside drydock.
    externally_removed: BTreeSet<String>,
    seen: Seen,
}

impl Invariant for NoRecreateAfterExternalRemoval {
    named!(NoRecreateAfterExternalRemoval);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ExternallyRemoved, HappeningKind::RuntimeApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::ExternallyRemoved { container } => {
                // Only a container drydock knew (its object recorded it) counts: one removed
                // before drydock ever saw it (its create's reply lost) is indistinguishable from one
                // never created, and creating it then is right.
                if let Some(uid) = recorded_owner(view, container) {
                    self.externally_removed.insert(uid.to_string());
                }
            }
            Happening::RuntimeApplied {
                process, request: RuntimeRequest::CreateContainer(c), result: Ok(_), ..
            } => {
                if let Some(uid) = c.labels.get(names::LABEL_OWNER_UID)
                    && self.externally_removed.contains(uid)
                {
                    self.seen.flag(format!(
                        "p{process} created {} again for uid {uid} after it was removed outside drydock",
                        c.name
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// What Docker would refuse as invalid in a spec never reaches the runtime: admission refuses it
/// first, with a field path the user can act on, instead of an object failing later with a runtime
/// message. (A start refused because the command is not in the image is not a spec's fault that
/// admission could see: the engine ends it in `Failed`.)
#[derive(Default)]
pub(super) struct AdmissionBeforeRuntime {
    seen: Seen,
}

impl Invariant for AdmissionBeforeRuntime {
    named!(AdmissionBeforeRuntime);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeApplied]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeApplied { process, request, result: Err(RuntimeError::Invalid(message)), .. } = happening
        else {
            return;
        };
        let from_spec = matches!(
            request,
            RuntimeRequest::CreateContainer(_) | RuntimeRequest::PullImage { .. } | RuntimeRequest::InspectImage { .. }
        );
        if from_spec {
            self.seen.flag(format!(
                "p{process} sent `{}`, which the runtime refused as invalid ({message}): admission let it through",
                request.describe()
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// The uid of the object that records `container` as its runtime container, if one does.
pub(super) fn recorded_owner<'c>(view: &View<'_>, container: &'c ContainerInfo) -> Option<&'c str> {
    let uid = container.labels.get(names::LABEL_OWNER_UID)?;
    let owner = view.store.get_by_uid(&Uid(uid.clone()))?;
    let recorded = owner.status::<PhysicalContainer>().ok()?.runtime_id?;
    (recorded == container.id).then_some(uid.as_str())
}

pub(super) fn short(id: &str) -> &str {
    drydock_engine::runtime::short(id)
}

/// Containers created with `retain` outlive their object on purpose.
pub(super) fn retained(c: &ContainerInfo) -> bool {
    c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
}

// These read single fields of the stored JSON: decoding whole specs and statuses for every
// container after every event was most of a sweep's time.

/// `status.runtimeId` of a physical container.
fn recorded_runtime_id(pc: &Object) -> Option<&str> {
    pc.status.get("runtimeId")?.as_str()
}

/// `spec.containerId` of a physical container tracking a container by id.
fn tracked_id(pc: &Object) -> Option<&str> {
    pc.spec.get("containerId")?.as_str()
}

/// `spec.containerId` is set: the container is tracked by id, not created for the object.
fn tracked_by_id(pc: &Object) -> bool {
    pc.spec.get("containerId").is_some_and(|v| !v.is_null())
}

/// `spec.retain`.
fn spec_retains(pc: &Object) -> bool {
    pc.spec.get("retain").and_then(serde_json::Value::as_bool).unwrap_or(false)
}

/// Once a container, network or volume object records its runtime object (`status.runtimeId`),
/// no other live runtime object of that kind carries its uid, at any time and in any phase. The
/// engine creates only while nothing is recorded (after an uncertain create it lists by the uid
/// label before trying again), and one removed behind its back is never made again: another one
/// carrying the uid is a stray that nothing will ever account for, while the object says
/// something else is its own. (`failed-has-no-stray-container` also covers a `Failed` container
/// that records none; `unique-owner-uid` and `unique-resource-owner` two at once.) A container
/// being removed is not live.
#[derive(Default)]
pub(super) struct NoStrayRuntimeObjects;

/// `Err` if runtime `object` `id` (`name`), carrying the uid of `owner` that records `own`, is
/// not the one it records.
fn stray_of(owner: &Object, own: &str, object: RuntimeObject, id: &str, name: &str) -> Result<(), String> {
    if own == id || own == name {
        return Ok(());
    }
    Err(format!(
        "{} records {object} {} but runtime {object} {name} ({}) carrying its uid lives too",
        owner.key(),
        short(own),
        short(id)
    ))
}

/// The store kind a runtime object of `object`'s kind stands for.
fn kind_of(object: RuntimeObject) -> Option<&'static str> {
    match object {
        RuntimeObject::Container => Some(PhysicalContainer::KIND),
        RuntimeObject::Network => Some(ContainerNetwork::KIND),
        RuntimeObject::Volume => Some(ContainerVolume::KIND),
        RuntimeObject::Image => None,
    }
}

impl Invariant for NoStrayRuntimeObjects {
    named!(NoStrayRuntimeObjects);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let mut recorded: BTreeMap<(&str, String), (ObjectKey, String)> = BTreeMap::new();
        for kind in [PhysicalContainer::KIND, ContainerNetwork::KIND, ContainerVolume::KIND] {
            for object in view.store.list(Some(kind), None) {
                if let Some(id) = recorded_runtime_id(&object) {
                    recorded.insert((kind, object.metadata.uid.0.clone()), (object.key(), id.to_string()));
                }
            }
        }
        if recorded.is_empty() {
            return Ok(());
        }
        let containers = view
            .runtime
            .containers()
            .filter(|c| c.state != ContainerState::Removing)
            .map(|c| (RuntimeObject::Container, c.id.as_str(), c.name.as_str(), &*c.labels));
        let resources = view.runtime.resources().map(|h| (h.object, h.id, h.name, h.labels));
        for (object, id, name, labels) in containers.chain(resources) {
            let (Some(kind), Some(uid)) = (kind_of(object), labels.get(names::LABEL_OWNER_UID)) else { continue };
            if let Some((key, own)) = recorded.get(&(kind, uid.clone()))
                && own != id
                && own != name
            {
                return Err(format!(
                    "{key} records {object} {} but runtime {object} {name} ({}) carrying its uid lives too",
                    short(own),
                    short(id)
                ));
            }
        }
        Ok(())
    }

    /// A stray appears when an object records its runtime object, or when a runtime object
    /// carrying a recording object's uid appears: only those are looked at.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for kind in [PhysicalContainer::KIND, ContainerNetwork::KIND, ContainerVolume::KIND] {
            for object in changes.live(kind) {
                let Some(own) = recorded_runtime_id(object) else { continue };
                let uid = &object.metadata.uid.0;
                if kind == PhysicalContainer::KIND {
                    for c in view.runtime.containers_labelled(names::LABEL_OWNER_UID, uid) {
                        if c.state != ContainerState::Removing {
                            stray_of(object, own, RuntimeObject::Container, &c.id, &c.name)?;
                        }
                    }
                } else {
                    for h in view.runtime.resources().filter(|h| h.labels.get(names::LABEL_OWNER_UID) == Some(uid)) {
                        if kind_of(h.object) == Some(kind) {
                            stray_of(object, own, h.object, h.id, h.name)?;
                        }
                    }
                }
            }
        }
        let containers = changes
            .containers(view.runtime)
            .filter(|c| c.state != ContainerState::Removing)
            .map(|c| (RuntimeObject::Container, c.id.as_str(), c.name.as_str(), &*c.labels));
        let resources: Vec<_> = if changes.runtime.any_resource_changed() {
            view.runtime
                .resources()
                .filter(|h| changes.runtime.resource_changed(h.object, h.id))
                .map(|h| (h.object, h.id, h.name, h.labels))
                .collect()
        } else {
            Vec::new()
        };
        for (object, id, name, labels) in containers.chain(resources) {
            let (Some(kind), Some(uid)) = (kind_of(object), labels.get(names::LABEL_OWNER_UID)) else { continue };
            if let Some(owner) = view.store.get_by_uid(&Uid(uid.clone())).filter(|o| o.kind == kind)
                && let Some(own) = recorded_runtime_id(owner)
            {
                stray_of(owner, own, object, id, name)?;
            }
        }
        Ok(())
    }
}
