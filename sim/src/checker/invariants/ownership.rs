//! Invariants about ownerReferences: no object owns itself, directly or through a cycle, and an
//! object's owners never change once set unless a client changes them.

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::api::Uid;
use drydock_engine::store::StoreRequest;
use std::collections::{BTreeMap, BTreeSet};

/// No object owns itself, directly or through a cycle.
#[derive(Default)]
pub(super) struct NoOwnerCycles;

impl Invariant for NoOwnerCycles {
    named!(NoOwnerCycles);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
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

    /// A new cycle goes through an object whose references changed: walk up from those.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for object in changes.live_any().filter(|o| !o.metadata.owner_references.is_empty()) {
            let start = &object.metadata.uid;
            if object.metadata.owner_references.iter().any(|r| r.uid == *start) {
                return Err(format!("{} has an ownerReference to itself", object.key()));
            }
            let mut stack: Vec<&Uid> = object.metadata.owner_references.iter().map(|r| &r.uid).collect();
            let mut visited: BTreeSet<&Uid> = BTreeSet::new();
            while let Some(uid) = stack.pop() {
                if uid == start {
                    return Err(format!("{} is its own owner through a cycle of ownerReferences", object.key()));
                }
                if visited.insert(uid)
                    && let Some(owner) = view.store.get_by_uid(uid)
                {
                    stack.extend(owner.metadata.owner_references.iter().map(|r| &r.uid));
                }
            }
        }
        Ok(())
    }
}

/// An object's ownerReferences never change once set, except by a client (removing a reference,
/// as orphaning does, is allowed).
#[derive(Default)]
pub(super) struct OwnershipStable {
    seen: Seen,
}

impl Invariant for OwnershipStable {
    named!(OwnershipStable);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::StoreApplying { process, request: StoreRequest::Update { object }, .. } = happening else {
            return;
        };
        let Some(stored) = view.store.get(&object.key()).filter(|s| s.metadata.uid == object.metadata.uid) else {
            return;
        };
        let before: Vec<&Uid> = stored.metadata.owner_references.iter().map(|r| &r.uid).collect();
        let added: Vec<String> = object
            .metadata
            .owner_references
            .iter()
            .filter(|r| !before.contains(&&r.uid))
            .map(|r| format!("{}/{}", r.kind, r.name))
            .collect();
        if !before.is_empty() && !added.is_empty() {
            self.seen.flag(format!(
                "p{process} changed the ownerReferences of {} (added {})",
                object.key(),
                added.join(", ")
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
