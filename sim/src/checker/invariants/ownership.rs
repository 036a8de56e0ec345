//! Invariants about ownerReferences: no object owns itself, directly or through a cycle, and an
//! object's owners never change once set unless a client changes them.

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::api::logical::LogicalContainer;
use drydock_engine::api::{Object, Resource, Uid};
use drydock_engine::controller::OpId;
use drydock_engine::store::{StoreReply, StoreRequest};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

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

/// Provenance: the engine takes over nothing a client made. The history records who created
/// each object (a client, or an engine process); an engine's write that adds an ownerReference to
/// an object a client created, or a logical container recording as its backing a physical
/// container a client created (a same-named object adopted), is flagged once it has applied.
/// What the engine deletes is judged by `deletes-only-garbage`. Only drydock's own controllers
/// are judged: a user's controller may own what clients made (the `rdd-namespaces` example
/// makes one namespace own others).
#[derive(Default)]
pub(super) struct AdoptsOnlyItsOwn {
    /// Store requests handed out by a built-in controller, until they apply.
    builtin_requests: BTreeSet<(usize, OpId)>,
    /// The request applying now was handed out by a built-in controller.
    applying_builtin: bool,
    /// The objects a client created, with the owners they were last written with.
    made_by_client: BTreeMap<Uid, BTreeSet<Uid>>,
    /// The uids of the objects an engine process created.
    made_by_engine: BTreeSet<Uid>,
    /// Each logical container's backing as last written.
    backings: BTreeMap<Uid, Uid>,
    seen: Seen,
}

fn owner_uids(object: &Object) -> BTreeSet<Uid> {
    object.metadata.owner_references.iter().map(|r| r.uid.clone()).collect()
}

fn backing_uid(object: &Object) -> Option<Uid> {
    object.status.get("backingUid").and_then(serde_json::Value::as_str).map(|u| Uid(u.to_string()))
}

/// The names of drydock's built-in controllers.
fn builtin_controllers() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        drydock_engine::controllers::builtin(&drydock_engine::controllers::ControllerConfig::default())
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    })
}

impl AdoptsOnlyItsOwn {
    /// An engine's write of `written` (process `process`) applied: judged if a built-in
    /// controller sent it, remembered either way.
    fn engine_wrote(&mut self, view: &View<'_>, process: usize, written: &Object) {
        let judged = std::mem::take(&mut self.applying_builtin);
        let uid = &written.metadata.uid;
        if let Some(owners) = self.made_by_client.get_mut(uid) {
            let now = owner_uids(written);
            if let Some(added) = written.metadata.owner_references.iter().find(|r| !owners.contains(&r.uid))
                && judged
            {
                self.seen.flag(format!(
                    "p{process} made {}/{} an owner of {}, which a client created",
                    added.kind,
                    added.name,
                    written.key()
                ));
            }
            *owners = now;
        }
        if written.kind == LogicalContainer::KIND
            && let Some(backing) = backing_uid(written)
            && self.backings.insert(uid.clone(), backing.clone()).as_ref() != Some(&backing)
            && judged
            && self.made_by_client.contains_key(&backing)
        {
            let what = view.store.get_by_uid(&backing).map_or_else(|| backing.0.clone(), |o| o.key().to_string());
            self.seen.flag(format!(
                "p{process} recorded {what} as the backing of {}, but a client created it",
                written.key()
            ));
        }
    }
}

impl Invariant for AdoptsOnlyItsOwn {
    named!(AdoptsOnlyItsOwn);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::ClientWrote,
            HappeningKind::Requested,
            HappeningKind::StoreApplying,
            HappeningKind::StoreApplied,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::Requested { process, id, origin, store: true }
                if builtin_controllers().contains(&*origin.controller) =>
            {
                self.builtin_requests.insert((*process, *id));
            }
            Happening::StoreApplying { process, id, .. } => {
                self.applying_builtin = self.builtin_requests.remove(&(*process, *id));
            }
            Happening::StoreApplied {
                request: StoreRequest::Create { .. }, result: Ok(StoreReply::Object(o)), ..
            } => {
                self.made_by_engine.insert(o.metadata.uid.clone());
            }
            Happening::StoreApplied {
                process,
                request: StoreRequest::Update { .. } | StoreRequest::UpdateStatus { .. },
                result: Ok(StoreReply::Object(written)),
            } => self.engine_wrote(view, *process, written),
            // A client's write of a uid no engine created: the client created it (uids are never
            // reused).
            Happening::ClientWrote { object } => {
                let uid = &object.metadata.uid;
                if !self.made_by_engine.contains(uid) {
                    self.made_by_client.insert(uid.clone(), owner_uids(object));
                }
                if let Some(backing) = backing_uid(object) {
                    self.backings.insert(uid.clone(), backing);
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}
