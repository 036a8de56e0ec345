//! Invariants about logical containers and their backing resources.

use super::containers::recorded_owner;
use super::content::Content;
use super::named;
use crate::checker::naming::{holder_uid, startup_lease_name};
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::OpId;
use drydock_engine::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalMode};
use drydock_engine::api::{ContainerImage, Lease, Object, ObjectKey, PhysicalContainer, Resource, Uid, names};
use drydock_engine::runtime::{ContainerCreate, ContainerInfo, RuntimeRequest};
use drydock_engine::store::StoreRequest;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The live logical container with `uid`, if any.
fn logical(view: &View<'_>, uid: &str) -> Option<Arc<Object>> {
    view.store.get_by_uid(&Uid(uid.to_string())).filter(|o| o.kind == LogicalContainer::KIND).cloned()
}

fn mode(view: &View<'_>, uid: &str) -> Option<LogicalMode> {
    logical(view, uid).and_then(|lc| lc.spec::<LogicalContainer>().ok()).map(|s| s.mode)
}

/// A create the runtime applied, with the container it created.
fn applied_create<'a>(happening: &Happening<'a>) -> Option<(usize, &'a ContainerCreate)> {
    match happening {
        Happening::RuntimeApplied { process, request: RuntimeRequest::CreateContainer(c), result: Ok(_), .. } => {
            Some((*process, c))
        }
        _ => None,
    }
}

/// A remove the runtime applied, with the container it removed.
fn applied_remove<'a>(happening: &Happening<'a>) -> Option<(usize, &'a ContainerInfo)> {
    match happening {
        Happening::RuntimeApplied {
            process,
            request: RuntimeRequest::RemoveContainer { .. },
            result: Ok(_),
            removed: Some(removed),
            ..
        } => Some((*process, removed)),
        _ => None,
    }
}

fn retained(c: &ContainerInfo) -> bool {
    c.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
}

/// Never two runtime containers for one logical container.
#[derive(Default)]
pub(super) struct SingleBacking;

impl Invariant for SingleBacking {
    named!(SingleBacking);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
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

    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for c in changes.containers(view.runtime) {
            let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID) else { continue };
            let mut same = view.runtime.containers_labelled(names::LABEL_LOGICAL_UID, uid);
            if let (Some(a), Some(b)) = (same.next(), same.next()) {
                return Err(format!(
                    "runtime containers {} and {} both realise logical container {uid}",
                    a.name, b.name
                ));
            }
        }
        Ok(())
    }
}

/// A matching, drydock-created persistent container is reused, never removed and created again.
#[derive(Default)]
pub(super) struct PersistentReuse {
    /// Removes in flight that replace a container -> the lifecycle key the remover wants.
    replacing: BTreeMap<(usize, OpId), Option<String>>,
    /// Drydock-created containers removed to be replaced: name -> the lifecycle key they carried.
    removed_to_replace: BTreeMap<String, Option<String>>,
    seen: Seen,
}

impl PersistentReuse {
    /// For a remove issued by a live physical container (one replacing what holds its name, not
    /// one being deleted): the lifecycle key it wants its runtime container to have.
    fn wanted_key(view: &View<'_>, issuer: &ObjectKey) -> Option<String> {
        let object = view.store.get(issuer).filter(|o| o.kind == PhysicalContainer::KIND)?;
        if object.metadata.is_deleting() {
            return None;
        }
        object.spec::<PhysicalContainer>().ok()?.labels.get(names::LABEL_LIFECYCLE_KEY).cloned()
    }
}

impl Invariant for PersistentReuse {
    named!(PersistentReuse);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent, HappeningKind::RuntimeApplied, HappeningKind::RuntimeSettled]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, id, request: RuntimeRequest::RemoveContainer { .. }, issuer } => {
                self.replacing.insert((*process, *id), Self::wanted_key(view, issuer));
            }
            Happening::RuntimeSettled { process, id } => {
                self.replacing.remove(&(*process, *id));
            }
            Happening::RuntimeApplied { process, id, .. } => {
                let wanted = self.replacing.remove(&(*process, *id)).flatten();
                if let Some((_, c)) = applied_create(happening) {
                    let key = c.labels.get(names::LABEL_LIFECYCLE_KEY);
                    if key.is_some() && self.removed_to_replace.get(&c.name).map(Option::as_ref) == Some(key) {
                        self.seen.flag(format!(
                            "{} was removed and created again with the same lifecycle key instead of being reused",
                            c.name
                        ));
                    }
                }
                if let Some((_, removed)) = applied_remove(happening) {
                    // A drydock-created container removed to be replaced by one with the same key
                    // should have been reused. (A replacement with another key, or a removal of a
                    // container being deleted, is no such waste, even if the same key comes back.)
                    let key = removed.labels.get(names::LABEL_LIFECYCLE_KEY);
                    if removed.labels.contains_key(names::LABEL_CREATOR) && key.is_some() && key == wanted.as_ref() {
                        self.removed_to_replace.insert(removed.name.clone(), key.cloned());
                    } else {
                        self.removed_to_replace.remove(&removed.name);
                    }
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A persistent logical container creates its runtime container at most once.
#[derive(Default)]
pub(super) struct PersistentReplaceOnce {
    /// Runtime creates applied per logical container uid.
    creates: BTreeMap<String, u32>,
    seen: Seen,
}

impl Invariant for PersistentReplaceOnce {
    named!(PersistentReplaceOnce);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeApplied, HappeningKind::ExternallyRemoved]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::ExternallyRemoved { container } = happening {
            // A container drydock never recorded, removed: creating it again is a first create.
            if recorded_owner(view, container).is_none()
                && let Some(logical) = container.labels.get(names::LABEL_LOGICAL_UID)
            {
                self.creates.remove(logical);
            }
            return;
        }
        let Some((process, c)) = applied_create(happening) else { return };
        let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID) else { return };
        let creates = self.creates.entry(uid.clone()).or_default();
        *creates += 1;
        if *creates > 1 && mode(view, uid) == Some(LogicalMode::Persistent) {
            self.seen.flag(format!("p{process} created {} a second time for one persistent logical container", c.name));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// An existing-mode logical container never creates a runtime container.
#[derive(Default)]
pub(super) struct ExistingNeverCreates {
    seen: Seen,
}

impl Invariant for ExistingNeverCreates {
    named!(ExistingNeverCreates);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Some((process, c)) = applied_create(happening) else { return };
        if let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID)
            && mode(view, uid) == Some(LogicalMode::Existing)
        {
            self.seen.flag(format!("p{process} created {} for an existing-mode logical container", c.name));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A session container never outlives its logical container.
#[derive(Default)]
pub(super) struct SessionNeverOutlivesOwner;

impl Invariant for SessionNeverOutlivesOwner {
    named!(SessionNeverOutlivesOwner);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for c in view.runtime.containers() {
            outlives(view, c)?;
        }
        Ok(())
    }

    /// A container outlives its logical container when that goes, or when it appears after.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for c in changes.containers(view.runtime) {
            outlives(view, c)?;
        }
        for lc in changes.deleted(LogicalContainer::KIND) {
            for c in view.runtime.containers_labelled(names::LABEL_LOGICAL_UID, &lc.metadata.uid.0) {
                outlives(view, c)?;
            }
        }
        Ok(())
    }
}

/// `Err` if runtime container `c`, made for a logical container, outlived it (unless retained).
fn outlives(view: &View<'_>, c: &ContainerInfo) -> Result<(), String> {
    if let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID)
        && !retained(c)
        && view.store.get_by_uid(&Uid(uid.clone())).is_none_or(|o| o.kind != LogicalContainer::KIND)
    {
        return Err(format!("session container {} outlived its logical container {uid}", c.name));
    }
    Ok(())
}

/// Deleting a persistent logical container never removes its runtime container.
#[derive(Default)]
pub(super) struct PersistentSurvivesDelete {
    seen: Seen,
}

impl Invariant for PersistentSurvivesDelete {
    named!(PersistentSurvivesDelete);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Some((process, removed)) = applied_remove(happening) else { return };
        if retained(removed)
            && let Some(uid) = removed.labels.get(names::LABEL_LOGICAL_UID)
            && logical(view, uid).is_some()
        {
            self.seen.flag(format!(
                "p{process} removed {}, the persistent container of a live logical container",
                removed.name
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// No backing resource loses its hold while its logical container still needs it.
#[derive(Default)]
pub(super) struct HoldBeforeRelease {
    seen: Seen,
}

impl Invariant for HoldBeforeRelease {
    named!(HoldBeforeRelease);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplied { request: StoreRequest::Update { .. }, .. } = happening else { return };
        let Some(object) = happening.written_object() else { return };
        if object.metadata.has_finalizer(names::FINALIZER_HOLD) {
            return;
        }
        for owner in object.metadata.owner_references.iter().filter(|r| r.kind == LogicalContainer::KIND) {
            if let Some(lc) = logical(view, &owner.uid.0)
                && !lc.metadata.is_deleting()
            {
                self.seen.flag(format!("{} lost its hold while {} still needs it", object.key(), lc.key()));
            }
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        self.seen.check()?;
        // And in every state: an owned backing of a live logical container holds.
        for kind in [PhysicalContainer::KIND, ContainerImage::KIND] {
            for child in view.store.list(Some(kind), None) {
                holds(view, &child)?;
            }
        }
        Ok(())
    }

    /// A backing loses its hold by a write of its own (a logical container never comes back
    /// from being deleted).
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        self.seen.check()?;
        for kind in [PhysicalContainer::KIND, ContainerImage::KIND] {
            for child in changes.live(kind) {
                holds(view, child)?;
            }
        }
        Ok(())
    }
}

/// `Err` if `child`, owned by a live logical container, has no hold.
fn holds(view: &View<'_>, child: &Object) -> Result<(), String> {
    for owner in child.metadata.owner_references.iter().filter(|r| r.kind == LogicalContainer::KIND) {
        let live = view.store.get_by_uid(&owner.uid).is_some_and(|lc| !lc.metadata.is_deleting());
        if live && !child.metadata.has_finalizer(names::FINALIZER_HOLD) {
            return Err(format!("{} has no hold while its logical container is live", child.key()));
        }
    }
    Ok(())
}

/// A persistent logical container records its workload before releasing its startup lease; and
/// the only lease a logical container holds is that startup lease, keyed by its runtime name.
#[derive(Default)]
pub(super) struct WorkloadRecordedBeforeLeaseRelease {
    seen: Seen,
}

impl Invariant for WorkloadRecordedBeforeLeaseRelease {
    named!(WorkloadRecordedBeforeLeaseRelease);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplied]
    }

    /// A startup lease released (no holder) by this write: every holder that claimed it must have
    /// recorded its workload. The claims are the world's as they were before this write.
    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Some(lease) = happening.written_object() else { return };
        let Some(spec) = (lease.kind == Lease::KIND).then(|| lease.spec::<Lease>().ok()).flatten() else { return };
        let startup = lease.metadata.name == startup_lease_name(&spec.key);
        if let Some(holder) = &spec.holder {
            self.held_as_its_startup_lease(view, lease, &spec.key, holder);
            return;
        }
        if !startup {
            return;
        }
        let Some(claims) = view.facts.leases.of(&lease.metadata.name) else { return };
        for holder in claims.keys() {
            let Some(lc) = holder_uid(holder).and_then(|uid| logical(view, uid)) else { continue };
            let persistent = lc.spec::<LogicalContainer>().is_ok_and(|s| s.mode == LogicalMode::Persistent);
            let recorded = lc.status::<LogicalContainer>().is_ok_and(|s| s.workload.is_some());
            if persistent && !lc.metadata.is_deleting() && !recorded {
                self.seen
                    .flag(format!("{holder} released the startup lease of {} before recording the workload", lc.key()));
            }
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

impl WorkloadRecordedBeforeLeaseRelease {
    /// A lease a logical container holds is its startup lease: keyed by its runtime name, and
    /// named for that key (so that two engines starting one container contend for one lease).
    fn held_as_its_startup_lease(&mut self, view: &View<'_>, lease: &Object, key: &str, holder: &str) {
        let Some(lc) = holder_uid(holder).and_then(|uid| logical(view, uid)) else { return };
        let Ok(spec) = lc.spec::<LogicalContainer>() else { return };
        let runtime_name = spec.runtime_name(lc.metadata.namespace.as_deref().unwrap_or_default(), &lc.metadata.name);
        if key != runtime_name || lease.metadata.name != startup_lease_name(&runtime_name) {
            self.seen.flag(format!(
                "{holder} holds lease {} keyed {key:?} for {}, whose runtime name is {runtime_name:?}",
                lease.metadata.name,
                lc.key()
            ));
        }
    }
}

/// A persistent container is replaced only when the client's edit changed what it is made of, by
/// the checker's own reading of the specs ([`Content`]), never the engine's lifecycle key; and a
/// container made for other content is never reused.
#[derive(Default)]
pub(super) struct ReplaceOnlyOnContentChange {
    /// The spec a client last wrote for each logical container, by uid.
    written: BTreeMap<String, LogicalContainerSpec>,
    /// A client wrote a spec since the last check.
    written_since: bool,
    /// The physical containers that track a runtime container by id (reuses), as last seen.
    reusing: BTreeMap<ObjectKey, Arc<Object>>,
    /// Removes in flight issued by the live backing of a persistent logical container -> its uid.
    replacing: BTreeMap<(usize, OpId), String>,
    seen: Seen,
}

impl ReplaceOnlyOnContentChange {
    /// The persistent logical container whose live backing `issuer` is, if it is one.
    fn persistent_owner(&self, view: &View<'_>, issuer: &ObjectKey) -> Option<String> {
        let object = view.store.get(issuer).filter(|o| o.kind == PhysicalContainer::KIND)?;
        if object.metadata.is_deleting() {
            return None;
        }
        object
            .metadata
            .owner_references
            .iter()
            .filter(|r| r.kind == LogicalContainer::KIND)
            .map(|r| r.uid.0.clone())
            .find(|uid| self.written.get(uid).is_some_and(|s| s.mode == LogicalMode::Persistent))
    }

    /// Whether the specs of logical containers `a` and `b` (both written by clients) differ in
    /// content; `None` if either is unknown.
    fn differ(&self, a: &str, b: &str) -> Option<bool> {
        Some(Content::of(self.written.get(a)?) != Content::of(self.written.get(b)?))
    }
}

impl Invariant for ReplaceOnlyOnContentChange {
    named!(ReplaceOnlyOnContentChange);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::ClientWrote,
            HappeningKind::RuntimeSent,
            HappeningKind::RuntimeApplied,
            HappeningKind::RuntimeSettled,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::ClientWrote { object } if object.kind == LogicalContainer::KIND => {
                if let Ok(spec) = object.spec::<LogicalContainer>() {
                    self.written.insert(object.metadata.uid.0.clone(), spec);
                    self.written_since = true;
                }
            }
            Happening::RuntimeSent { process, id, request: RuntimeRequest::RemoveContainer { .. }, issuer } => {
                if let Some(owner) = self.persistent_owner(view, issuer) {
                    self.replacing.insert((*process, *id), owner);
                }
            }
            Happening::RuntimeSettled { process, id } => {
                self.replacing.remove(&(*process, *id));
            }
            Happening::RuntimeApplied { process, id, .. } => {
                let Some(replacer) = self.replacing.remove(&(*process, *id)) else { return };
                let Some((_, removed)) = applied_remove(happening) else { return };
                let Some(made_for) = removed.labels.get(names::LABEL_LOGICAL_UID) else { return };
                if removed.labels.contains_key(names::LABEL_CREATOR) && self.differ(made_for, &replacer) == Some(false)
                {
                    self.seen.flag(format!(
                        "p{process} replaced {} for logical container {replacer}, whose spec differs from the one \
                         it was made for ({made_for}) only in fields outside the lifecycle key or in order",
                        removed.name
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        self.seen.check()?;
        // A backing tracking an existing runtime container (a reuse) tracks one made for the same
        // content as its logical container.
        for pc in view.store.list(Some(PhysicalContainer::KIND), None) {
            self.reuses_same_content(view, &pc)?;
        }
        Ok(())
    }

    /// A wrong reuse shows when a backing starts tracking a container, or when a client's write
    /// changes what a logical container is made of: then every reuse is judged again (there
    /// are few: only persistent containers reuse).
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            self.reusing = view
                .store
                .list(Some(PhysicalContainer::KIND), None)
                .into_iter()
                .filter(|pc| tracked_container(pc).is_some())
                .map(|pc| (pc.key(), pc))
                .collect();
            self.written_since = false;
            return self.check(view);
        }
        self.seen.check()?;
        for (pc, deleted) in changes.written(PhysicalContainer::KIND) {
            if deleted || tracked_container(pc).is_none() {
                self.reusing.remove(&pc.key());
            } else {
                self.reusing.insert(pc.key(), pc.clone());
                self.reuses_same_content(view, pc)?;
            }
        }
        if std::mem::take(&mut self.written_since) {
            for pc in self.reusing.values() {
                self.reuses_same_content(view, pc)?;
            }
        }
        Ok(())
    }
}

/// `spec.containerId` of a physical container (a reuse tracks the container it found).
fn tracked_container(pc: &Object) -> Option<&str> {
    pc.spec.get("containerId").and_then(serde_json::Value::as_str)
}

impl ReplaceOnlyOnContentChange {
    /// `Err` if backing `pc` tracks a runtime container made for a logical container whose
    /// content differs from its own logical container's.
    fn reuses_same_content(&self, view: &View<'_>, pc: &Object) -> Result<(), String> {
        let Some(id) = tracked_container(pc) else { return Ok(()) };
        let Some(made_for) = view.runtime.container(id).and_then(|c| c.labels.get(names::LABEL_LOGICAL_UID)) else {
            return Ok(());
        };
        for owner in pc.metadata.owner_references.iter().filter(|r| r.kind == LogicalContainer::KIND) {
            let persistent = self.written.get(&owner.uid.0).is_some_and(|s| s.mode == LogicalMode::Persistent);
            if persistent && *made_for != owner.uid.0 && self.differ(made_for, &owner.uid.0) == Some(true) {
                return Err(format!(
                    "{} reuses runtime container {id}, made for logical container {made_for} whose spec \
                     differs in content from that of {}",
                    pc.key(),
                    owner.uid
                ));
            }
        }
        Ok(())
    }
}
