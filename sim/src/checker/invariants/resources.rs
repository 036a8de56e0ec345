//! Invariants about runtime networks and volumes: one per object, none left of a deleted
//! namespace, built-in networks untouched, and nothing removed that drydock did not create for
//! the object removing it; and about copied files: no container starts without them.
//!
//! A volume is never force-removed by construction: the runtime contract's `RemoveVolume` has no
//! force to ask for (on Podman a forced removal takes the containers using it with it).

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::api::{
    ContainerNetwork, ContainerVolume, Namespace, Object, PhysicalContainer, Resource, Uid, names,
};
use drydock_engine::runtime::{BUILTIN_NETWORKS, RuntimeRequest, is_builtin_network};
use std::collections::{BTreeMap, BTreeSet};

/// A runtime network or volume as the checks see it.
struct Held {
    what: &'static str,
    id: String,
    name: String,
    labels: BTreeMap<String, String>,
}

fn held(view: &View<'_>) -> Vec<Held> {
    held_where(view, |_, _| true)
}

/// The runtime networks and volumes `wanted(what, id)` picks.
fn held_where(view: &View<'_>, wanted: impl Fn(&str, &str) -> bool) -> Vec<Held> {
    let label = |labels: &BTreeMap<String, String>| labels.clone();
    let networks =
        view.runtime.network_labels().filter(|(id, _, _)| wanted("network", id)).map(|(id, name, labels)| Held {
            what: "network",
            id: id.to_string(),
            name: name.to_string(),
            labels: label(labels),
        });
    let volumes = view.runtime.volume_labels().filter(|(name, _)| wanted("volume", name)).map(|(name, labels)| Held {
        what: "volume",
        id: name.to_string(),
        name: name.to_string(),
        labels: label(labels),
    });
    networks.chain(volumes).collect()
}

/// The networks and volumes that changed since the last check.
fn changed(view: &View<'_>, changes: &Changes<'_>) -> Vec<Held> {
    let journal = changes.runtime;
    if journal.networks.is_empty() && journal.volumes.is_empty() {
        return Vec::new();
    }
    held_where(view, |what, id| match what {
        "network" => journal.networks.contains(id),
        _ => journal.volumes.contains(id),
    })
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
        let mut seen: BTreeMap<(&str, &str), &str> = BTreeMap::new();
        for h in &held {
            if let Some(uid) = h.labels.get(names::LABEL_OWNER_UID)
                && let Some(other) = seen.insert((h.what, uid), &h.id)
            {
                return Err(format!("runtime {}s {other} and {} both carry owner uid {uid}", h.what, h.id));
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
/// (a volume) abandoned because a container that is not the namespace's still uses it.
#[derive(Default)]
pub(super) struct NoResourceLeakAfterNamespaceDelete;

impl Invariant for NoResourceLeakAfterNamespaceDelete {
    named!(NoResourceLeakAfterNamespaceDelete);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let namespaces: BTreeSet<String> =
            view.store.list(Some(Namespace::KIND), None).iter().map(|ns| ns.metadata.uid.0.clone()).collect();
        leak_among(view, held(view), |uid| namespaces.contains(uid))
    }

    /// A leak starts when a namespace goes, when a network or volume of one gone appears, or
    /// (a volume) when the last stranger's container using it goes.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        let namespace_gone = changes.deleted(Namespace::KIND).next().is_some();
        let is_namespace = |uid: &str| {
            view.store.get_by_uid(&drydock_engine::api::Uid(uid.to_string())).is_some_and(|o| o.kind == Namespace::KIND)
        };
        if namespace_gone {
            return leak_among(view, held(view), is_namespace);
        }
        let mut suspects = changed(view, changes);
        if changes.container_removed(view.runtime) {
            suspects.extend(held_where(view, |what, _| what == "volume"));
        }
        leak_among(view, suspects, is_namespace)
    }
}

/// `Err` if one of `held` belongs to a namespace that is gone (`is_namespace` says which uids
/// still are one), unless retained or (a volume) still used by another namespace's container.
fn leak_among(view: &View<'_>, held: Vec<Held>, is_namespace: impl Fn(&str) -> bool) -> Result<(), String> {
    for h in held {
        let Some(ns_uid) = h.labels.get(names::LABEL_NAMESPACE_UID) else { continue };
        if retained(&h.labels) || is_namespace(ns_uid) {
            continue;
        }
        let used_by_stranger = h.what == "volume"
            && view.runtime.containers().any(|c| {
                c.labels.get(names::LABEL_NAMESPACE_UID) != Some(ns_uid)
                    && view.runtime.mounts_of(&c.id).any(|source| source == h.name.as_str())
            });
        if !used_by_stranger {
            let ns = h.labels.get(names::LABEL_NAMESPACE).map_or("?", String::as_str);
            return Err(format!("namespace {ns} (uid {ns_uid}) is gone but runtime {} {} remains", h.what, h.name));
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
        if changes.everything || !changes.runtime.networks.is_empty() {
            return self.check(view);
        }
        self.seen.check()
    }
}

/// An object removes only a network or volume created for it, or, with `replaceExisting`, the
/// stranger holding its runtime name; never a tracked one, never another object's.
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
        let (what, target) = match request {
            RuntimeRequest::RemoveNetwork { id } => ("network", id),
            RuntimeRequest::RemoveVolume { name } => ("volume", name),
            _ => return,
        };
        let Some(h) = held_where(view, |w, _| w == what).into_iter().find(|h| h.id == *target || h.name == *target)
        else {
            return; // gone already: the runtime answers NotFound
        };
        let Some(object) = view.store.get(issuer) else { return };
        if h.labels.get(names::LABEL_OWNER_UID) == Some(&object.metadata.uid.0) {
            return;
        }
        let (replace, runtime_name) = replace_and_name(object);
        if !(replace && runtime_name.as_deref() == Some(h.name.as_str())) {
            self.seen.flag(format!(
                "p{process} removed {what} {} for {issuer}, which it did not create (replaceExisting {replace}, runtime name {})",
                h.name,
                runtime_name.as_deref().unwrap_or("-")
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// `spec.replaceExisting` and the runtime name an object creates under (the checker's own
/// reading of the spec: `<namespace>-<name>` unless named; none when tracking).
fn replace_and_name(object: &Object) -> (bool, Option<String>) {
    let spec = &object.spec;
    let (name_field, id_field) = match object.kind.as_str() {
        k if k == ContainerNetwork::KIND => ("networkName", "networkId"),
        k if k == ContainerVolume::KIND => ("volumeName", "volumeId"),
        _ => return (false, None),
    };
    let replace = spec.get("replaceExisting").and_then(|v| v.as_bool()).unwrap_or(false);
    if spec.get(id_field).is_some_and(|v| !v.is_null()) {
        return (replace, None);
    }
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    let name = spec
        .get(name_field)
        .and_then(|v| v.as_str())
        .map_or_else(|| format!("{namespace}-{}", object.metadata.name), str::to_string);
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
