//! Safety invariants: each must hold in every state of every run.

use super::View;
use drydock_engine::api::{Namespace, PhysicalContainer, Resource, Uid, names};
use std::collections::{BTreeMap, BTreeSet};

pub struct Invariant {
    pub name: &'static str,
    pub description: &'static str,
    pub check: fn(&View<'_>) -> Result<(), String>,
}

pub const INVARIANTS: &[Invariant] = &[
    Invariant {
        name: "unique-owner-uid",
        description: "no two runtime containers carry the same owner uid label",
        check: unique_owner_uid,
    },
    Invariant {
        name: "no-owner-cycles",
        description: "no object has an ownerReference to itself or a cycle of ownerReferences",
        check: no_owner_cycles,
    },
    Invariant {
        name: "no-leak-after-namespace-delete",
        description: "when a namespace is gone, no runtime container created for it remains",
        check: no_leak_after_namespace_delete,
    },
    Invariant {
        name: "finalizer-after-runtime-cleanup",
        description: "a physical container leaves the store only after its runtime container is gone",
        check: finalizer_after_runtime_cleanup,
    },
];

fn unique_owner_uid(view: &View<'_>) -> Result<(), String> {
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

fn no_owner_cycles(view: &View<'_>) -> Result<(), String> {
    let objects = view.store.list(None, None);
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

fn no_leak_after_namespace_delete(view: &View<'_>) -> Result<(), String> {
    let namespaces: BTreeSet<String> =
        view.store.list(Some(Namespace::KIND), None).iter().map(|ns| ns.metadata.uid.0.clone()).collect();
    for c in view.runtime.containers() {
        if let Some(ns_uid) = c.labels.get(names::LABEL_NAMESPACE_UID)
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

fn finalizer_after_runtime_cleanup(view: &View<'_>) -> Result<(), String> {
    for c in view.runtime.containers() {
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
