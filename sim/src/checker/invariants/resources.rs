//! Invariants about runtime networks and volumes: one per object, none left of a deleted
//! namespace, built-in networks untouched, and nothing removed that drydock did not create for
//! the object removing it; and about copied files: no container starts without them.
//!
//! A volume is never force-removed by construction: the runtime contract's `RemoveVolume` has no
//! force to ask for (on Podman a forced removal takes the containers using it with it).

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use crate::runtime::Resource as Held;
use drydock_engine::OpId;
use drydock_engine::api::{Namespace, Object, ObjectKey, PhysicalContainer, Resource, Uid, names, reasons};
use drydock_engine::runtime::{BUILTIN_NETWORKS, RuntimeObject, RuntimeRequest, Verb, is_builtin_network};
use drydock_engine::store::StoreRequest;
use std::collections::{BTreeMap, BTreeSet};

// The checks below cover every kind of runtime resource the simulated runtime holds
// (`SimRuntime::resources`) and every kind that declares it stands for one
// (`KindInfo::with_runtime_object`), with no list of them: a new kind is covered as it is added.

fn held<'a>(view: &View<'a>) -> Vec<Held<'a>> {
    view.runtime.resources().collect()
}

/// The runtime resources `wanted(object, id)` picks.
fn held_where<'a>(view: &View<'a>, wanted: impl Fn(RuntimeObject, &str) -> bool) -> Vec<Held<'a>> {
    view.runtime.resources().filter(|h| wanted(h.object, h.id)).collect()
}

/// The runtime resources that changed since the last check.
fn changed<'a>(view: &View<'a>, changes: &Changes<'_>) -> Vec<Held<'a>> {
    let journal = changes.runtime;
    if !journal.any_resource_changed() {
        return Vec::new();
    }
    held_where(view, |object, id| journal.resource_changed(object, id))
}

fn retained(labels: &BTreeMap<String, String>) -> bool {
    labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
}

/// No two runtime networks, and no two runtime volumes, carry the same owner uid label.
#[derive(Default)]
pub(super) struct UniqueResourceOwner;

impl Invariant for UniqueResourceOwner {
    named!(UniqueResourceOwner);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let held = held(view);
        let mut seen: BTreeMap<(RuntimeObject, &str), &str> = BTreeMap::new();
        for h in &held {
            if let Some(uid) = h.labels.get(names::LABEL_OWNER_UID)
                && let Some(other) = seen.insert((h.object, uid), h.id)
            {
                return Err(format!("runtime {}s {other} and {} both carry owner uid {uid}", h.object, h.id));
            }
        }
        Ok(())
    }

    /// Only a network or volume that appeared can make a second one of an owner.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        let changed = changed(view, changes);
        if changed.iter().all(|h| !h.labels.contains_key(names::LABEL_OWNER_UID)) {
            return Ok(());
        }
        self.check(view)
    }
}

/// When a namespace is gone, no network or volume created for it remains, unless retained, or
/// (a volume) shared: used by a container that is not the namespace's (a stranger's) at some
/// time. The engine abandons a volume still in use late in its namespace's deletion, and its
/// last user may go the moment after: such a volume outlives it for a while (the harvester
/// removes it on its next pass), which convergence judges: it requires it gone once unused.
#[derive(Default)]
pub(super) struct NoResourceLeakAfterNamespaceDelete {
    /// Volumes (name, owner uid) a stranger's container has used, while they exist.
    abandoned: BTreeSet<(String, String)>,
}

impl Invariant for NoResourceLeakAfterNamespaceDelete {
    named!(NoResourceLeakAfterNamespaceDelete);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let namespaces = namespace_uids(view);
        let mut abandoned = self.abandoned.clone();
        leak_among(view, held(view), |uid| namespaces.contains(uid), &mut abandoned)
    }

    /// A leak starts when a namespace goes, when a network or volume of one gone appears, or
    /// (a volume) when the last stranger's container using it goes.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        for c in changes.containers(view.runtime) {
            let ns_uid = c.labels.get(names::LABEL_NAMESPACE_UID);
            for source in view.runtime.mounts_of(&c.id) {
                let shared = view.runtime.resources().find(|h| {
                    h.object == RuntimeObject::Volume
                        && h.name == source
                        && h.labels.get(names::LABEL_NAMESPACE_UID).is_some_and(|ns| Some(ns) != ns_uid)
                });
                if let Some(h) = shared {
                    let owner = h.labels.get(names::LABEL_OWNER_UID).cloned().unwrap_or_default();
                    self.abandoned.insert((h.name.to_string(), owner));
                }
            }
        }
        if changes.runtime.any_resource_changed() || changes.everything {
            self.abandoned.retain(|(name, uid)| {
                view.runtime.resources().any(|h| {
                    h.object == RuntimeObject::Volume
                        && h.name == name
                        && h.labels.get(names::LABEL_OWNER_UID) == Some(uid)
                })
            });
        }
        if changes.everything {
            let namespaces = namespace_uids(view);
            return leak_among(view, held(view), |uid| namespaces.contains(uid), &mut self.abandoned);
        }
        let namespace_gone = changes.deleted(Namespace::KIND).next().is_some();
        let is_namespace = |uid: &str| {
            view.store.get_by_uid(&drydock_engine::api::Uid(uid.to_string())).is_some_and(|o| o.kind == Namespace::KIND)
        };
        if namespace_gone {
            return leak_among(view, held(view), is_namespace, &mut self.abandoned);
        }
        let mut suspects = changed(view, changes);
        if changes.container_removed(view.runtime) {
            suspects.extend(held_where(view, |object, _| object == RuntimeObject::Volume));
        }
        leak_among(view, suspects, is_namespace, &mut self.abandoned)
    }
}

fn namespace_uids(view: &View<'_>) -> BTreeSet<String> {
    view.store.list(Some(Namespace::KIND), None).iter().map(|ns| ns.metadata.uid.0.clone()).collect()
}

/// `Err` if one of `held` belongs to a namespace that is gone (`is_namespace` says which uids
/// still are one), unless retained or (a volume) `abandoned`, or found so now: still used by
/// another namespace's container.
fn leak_among(
    view: &View<'_>,
    held: Vec<Held<'_>>,
    is_namespace: impl Fn(&str) -> bool,
    abandoned: &mut BTreeSet<(String, String)>,
) -> Result<(), String> {
    for h in held {
        let Some(ns_uid) = h.labels.get(names::LABEL_NAMESPACE_UID) else { continue };
        if retained(h.labels) || is_namespace(ns_uid) {
            continue;
        }
        let owner = h.labels.get(names::LABEL_OWNER_UID).cloned().unwrap_or_default();
        let abandonment = (h.name.to_string(), owner);
        if h.object == RuntimeObject::Volume && abandoned.contains(&abandonment) {
            continue;
        }
        let used_by_stranger = h.object == RuntimeObject::Volume
            && view.runtime.containers().any(|c| {
                c.labels.get(names::LABEL_NAMESPACE_UID) != Some(ns_uid)
                    && view.runtime.mounts_of(&c.id).any(|source| source == h.name)
            });
        if used_by_stranger {
            abandoned.insert(abandonment);
        } else {
            let ns = h.labels.get(names::LABEL_NAMESPACE).map_or("?", String::as_str);
            return Err(format!("namespace {ns} (uid {ns_uid}) is gone but runtime {} {} remains", h.object, h.name));
        }
    }
    Ok(())
}

/// The built-in networks are never created, removed or replaced by drydock, and stay.
#[derive(Default)]
pub(super) struct BuiltinNetworksUntouched {
    seen: Seen,
}

impl Invariant for BuiltinNetworksUntouched {
    named!(BuiltinNetworksUntouched);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, request, issuer, .. } = happening else { return };
        let touched = match request {
            RuntimeRequest::CreateNetwork(create) => is_builtin_network(&create.name).then(|| create.name.clone()),
            RuntimeRequest::RemoveNetwork { id } | RuntimeRequest::DisconnectNetwork { network: id, .. } => view
                .runtime
                .networks()
                .find(|n| (n.id == *id || n.name == *id) && is_builtin_network(&n.name))
                .map(|n| n.name.clone()),
            _ => None,
        };
        if let Some(name) = touched {
            self.seen
                .flag(format!("p{process} sent {} for {issuer}: {name} is a built-in network", request.describe()));
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        self.seen.check()?;
        for builtin in BUILTIN_NETWORKS {
            if !view.runtime.has_network_named(builtin) {
                return Err(format!("the built-in network {builtin} is gone"));
            }
        }
        Ok(())
    }

    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything || changes.runtime.resources(RuntimeObject::Network).next().is_some() {
            return self.check(view);
        }
        self.seen.check()
    }
}

/// An object removes only a network or volume created for it, or, with `replaceExisting`, the
/// stranger holding its runtime name; never a tracked one, never another object's, and never its
/// own once it was asked to retain it (the runtime object's `drydock.dev/retain` label).
#[derive(Default)]
pub(super) struct RemovesOnlyItsOwn {
    seen: Seen,
}

impl Invariant for RemovesOnlyItsOwn {
    named!(RemovesOnlyItsOwn);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, request, issuer, .. } = happening else { return };
        let (object, verb) = request.class();
        let (Verb::Remove, Some(target)) = (verb, request.target()) else { return };
        let Some(h) = view.runtime.resources().find(|h| h.object == object && (h.id == target || h.name == target))
        else {
            return; // gone already (the runtime answers NotFound), or not a runtime resource
        };
        let Some(issuer_object) = view.store.get(issuer) else { return };
        if h.labels.get(names::LABEL_OWNER_UID) == Some(&issuer_object.metadata.uid.0) {
            if h.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true") {
                self.seen.flag(format!("p{process} removed {object} {} for {issuer}, which retains it", h.name));
            }
            return;
        }
        let stands_for = view.store.registry().get(&issuer_object.kind).and_then(|k| k.runtime_object());
        let (replace, runtime_name) =
            if stands_for == Some(object) { replace_and_name(issuer_object, object) } else { (false, None) };
        if !(replace && runtime_name.as_deref() == Some(h.name)) {
            self.seen.flag(format!(
                "p{process} removed {object} {} for {issuer}, which it did not create (replaceExisting {replace}, runtime name {})",
                h.name,
                runtime_name.as_deref().unwrap_or("-")
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A network or volume object turning `Failed` with `NameTaken` has a stranger to blame: a
/// runtime object of its kind holds its runtime name without its uid label, and either its spec
/// does not ask to replace one, or the runtime refused to remove it (an answer the checker heard
/// given to that object's remove). A physical container turning `NameTaken` does not ask to
/// replace (it removes a stranger it may replace, whatever the answer).
#[derive(Default)]
pub(super) struct NameTakenJustified {
    /// Objects (by key) whose remove of a runtime network or volume the runtime refused.
    refused_removal: BTreeSet<ObjectKey>,
    /// Runtime requests sent and not yet applied: whose reconcile sent them.
    issuers: BTreeMap<(usize, OpId), ObjectKey>,
    seen: Seen,
}

impl Invariant for NameTakenJustified {
    named!(NameTakenJustified);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent, HappeningKind::RuntimeApplied, HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, id, request, issuer } if request.class().1 == Verb::Remove => {
                self.issuers.insert((*process, *id), (*issuer).clone());
            }
            Happening::RuntimeApplied { process, id, result, .. } => {
                if let Some(issuer) = self.issuers.remove(&(*process, *id))
                    && result.is_err()
                {
                    self.refused_removal.insert(issuer);
                }
            }
            Happening::StoreApplying { request: StoreRequest::UpdateStatus { object }, .. } => {
                let text = |name: &str| object.status.get(name).and_then(serde_json::Value::as_str).unwrap_or_default();
                if text("phase") != "Failed" || text("reason") != reasons::NAME_TAKEN {
                    return;
                }
                if let Some(why) = self.unjustified(view, object) {
                    self.seen.flag(format!("{} is about to be stored Failed (NameTaken), but {why}", object.key()));
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

impl NameTakenJustified {
    fn unjustified(&self, view: &View<'_>, object: &Object) -> Option<String> {
        let stored = view.store.get(&object.key()).filter(|o| o.metadata.uid == object.metadata.uid)?;
        if stored.kind == PhysicalContainer::KIND {
            let replace = stored.spec.get("replaceExisting").and_then(serde_json::Value::as_bool).unwrap_or(false);
            return replace.then(|| "its spec asks to replace the container holding its name".to_string());
        }
        let runtime_object = view.store.registry().get(&stored.kind)?.runtime_object()?;
        let (replace, name) = replace_and_name(stored, runtime_object);
        let name = name?;
        let stranger = view.runtime.resources().any(|r| {
            r.object == runtime_object
                && r.name == name
                && r.labels.get(names::LABEL_OWNER_UID) != Some(&stored.metadata.uid.0)
        });
        if !stranger {
            return Some(format!("no {runtime_object} but its own holds its runtime name {name}"));
        }
        (replace && !self.refused_removal.contains(&stored.key())).then(|| {
            format!("its spec asks to replace the {runtime_object} holding {name}, and no removal was refused")
        })
    }
}

/// `spec.replaceExisting` and the runtime name an object standing for a runtime `object`
/// creates under (the checker's own reading of the spec, as `KindInfo::with_runtime_object`
/// documents it: `<object>Name`, else `<namespace>-<name>`; none when tracking by `<object>Id`).
fn replace_and_name(issuer: &Object, object: RuntimeObject) -> (bool, Option<String>) {
    let spec = &issuer.spec;
    let replace = spec.get("replaceExisting").and_then(|v| v.as_bool()).unwrap_or(false);
    if spec.get(format!("{object}Id")).is_some_and(|v| !v.is_null()) {
        return (replace, None);
    }
    let namespace = issuer.metadata.namespace.as_deref().unwrap_or_default();
    let name = spec
        .get(format!("{object}Name"))
        .and_then(|v| v.as_str())
        .map_or_else(|| format!("{namespace}-{}", issuer.metadata.name), str::to_string);
    (replace, Some(name))
}

/// A runtime container drydock created for an object with `spec.files` is started only while it
/// holds every one of them, as the spec says (the runtime's model of its file system, read by
/// the checker: a copy refused partway leaves some, and must stop the start).
#[derive(Default)]
pub(super) struct FilesBeforeStart {
    seen: Seen,
}

impl Invariant for FilesBeforeStart {
    named!(FilesBeforeStart);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeApplied {
            process, request: RuntimeRequest::StartContainer { id }, result: Ok(_), ..
        } = happening
        else {
            return;
        };
        let Some(container) = view.runtime.container(id) else { return };
        let Some(uid) = container.labels.get(names::LABEL_OWNER_UID) else { return };
        let owner = view.store.get_by_uid(&Uid(uid.clone())).filter(|o| o.kind == PhysicalContainer::KIND);
        let Some(owner) = owner else { return };
        let files = owner.spec.get("files").and_then(|f| f.as_array()).cloned().unwrap_or_default();
        for file in &files {
            let destination = file.get("destination").and_then(|d| d.as_str()).unwrap_or_default();
            let contents = file.get("contents").and_then(|c| c.as_str()).unwrap_or_default();
            if view.runtime.container_file(&container.id, destination) != Some(contents) {
                self.seen.flag(format!(
                    "p{process} started {} for {} without its file {destination}",
                    &container.id[..12.min(container.id.len())],
                    owner.key()
                ));
                return;
            }
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// An object standing for a runtime network or volume that said `Failed` or `Missing` says so for
/// the rest of its life (its uid), across its engine's crashes: the runtime refused it for good,
/// or removed it behind drydock's back, and making it again would make it under a record that
/// says otherwise (DCP's policy). A client re-creating the object gets a new uid, a new life.
#[derive(Default)]
pub(super) struct ResourceEndIsFinal {
    /// The terminal phase each object (by uid) reached.
    ended: BTreeMap<Uid, String>,
    seen: Seen,
}

impl Invariant for ResourceEndIsFinal {
    named!(ResourceEndIsFinal);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Some(object) = happening.written_object() else { return };
        let stands_for_a_resource =
            view.store.registry().get(&object.kind).is_some_and(|k| k.runtime_object().is_some());
        if !stands_for_a_resource {
            return;
        }
        let phase = object.status.get("phase").and_then(serde_json::Value::as_str).unwrap_or_default();
        match self.ended.get(&object.metadata.uid) {
            Some(ended) if ended != phase => self.seen.flag(format!(
                "{} (uid {}) said {ended}, and now says {phase:?}",
                object.key(),
                object.metadata.uid.0
            )),
            Some(_) => {}
            None if matches!(phase, "Failed" | "Missing") => {
                self.ended.insert(object.metadata.uid.clone(), phase.to_string());
            }
            None => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
