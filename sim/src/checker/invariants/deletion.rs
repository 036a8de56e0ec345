//! Invariants about deletion: what the engine may delete, and the two propagation policies a
//! client can ask for besides background (foreground, orphan), judged from the store's history.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, Seen, View};
use drydock_engine::OpId;
use drydock_engine::api::{Namespace, Object, ObjectKey, Resource, Uid};
use drydock_engine::store::{FINALIZER_FOREGROUND_DELETION, FINALIZER_ORPHAN, StoreRequest};
use std::collections::{BTreeMap, BTreeSet};

/// The object a delete request of an engine would mark or remove, as the store is before it
/// applies: `None` if the request would do nothing (gone, a uid or resource-version precondition
/// failing, already being deleted).
fn delete_target<'a>(view: &View<'a>, request: &StoreRequest) -> Option<&'a Object> {
    let StoreRequest::Delete { key, options } = request else { return None };
    let target: &'a Object = view.store.get(key)?;
    let meta = &target.metadata;
    if options.precondition_uid.as_ref().is_some_and(|uid| *uid != meta.uid)
        || options.precondition_resource_version.is_some_and(|rv| rv != meta.resource_version)
        || meta.is_deleting()
    {
        return None;
    }
    Some(target)
}

/// The object's namespace is being deleted (or gone): its controller may delete everything in it.
fn namespace_terminating(view: &View<'_>, object: &Object) -> bool {
    let Some(ns) = &object.metadata.namespace else { return false };
    view.store.get(&ObjectKey::cluster(Namespace::KIND, ns)).is_none_or(|ns| ns.metadata.is_deleting())
}

fn references(object: &Object, owner: &Uid) -> bool {
    object.metadata.owner_references.iter().any(|r| r.uid == *owner)
}

fn blocks(object: &Object, owner: &Uid) -> bool {
    object.metadata.owner_references.iter().any(|r| r.uid == *owner && r.block_owner_deletion)
}

/// drydock's own controllers, by name: what [`DeletesOnlyGarbage`] judges.
const DRYDOCK_CONTROLLERS: [&str; 6] =
    ["namespace", "logical-container", "container-image", "harvester", "physical-container", "garbage-collector"];

/// The engine deletes an object only when it is garbage: its namespace is terminating, or it has
/// owners and none of them is live (each is gone or being deleted). An object looked up by name
/// instead of by its owner's uid (a name reused, two parents wanting one name) is the bug this
/// names when it happens, rather than as a world that never settles.
///
/// It judges drydock's own controllers: a user's controller may delete what it made (a set
/// scaled down), and the user's invariants say when it may.
#[derive(Default)]
pub(super) struct DeletesOnlyGarbage {
    /// Store requests in flight issued by a controller that is not drydock's.
    foreign: BTreeSet<(usize, OpId)>,
    seen: Seen,
}

impl Invariant for DeletesOnlyGarbage {
    named!(DeletesOnlyGarbage);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::Requested, HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::Requested { process, id, origin, store: true } = happening
            && !DRYDOCK_CONTROLLERS.contains(&&*origin.controller)
        {
            self.foreign.insert((*process, *id));
        }
        let Happening::StoreApplying { process, id, request } = happening else { return };
        if self.foreign.remove(&(*process, *id)) {
            return;
        }
        let Some(target) = delete_target(view, request) else { return };
        if namespace_terminating(view, target) {
            return;
        }
        let refs = &target.metadata.owner_references;
        if refs.is_empty() {
            self.seen.flag(format!(
                "p{process} deleted {} ({}), which has no owner, in a namespace that is not terminating",
                target.key(),
                target.metadata.uid
            ));
            return;
        }
        let live =
            refs.iter().filter_map(|r| view.store.get_by_uid(&r.uid)).find(|owner| !owner.metadata.is_deleting());
        if let Some(owner) = live {
            self.seen.flag(format!(
                "p{process} deleted {} ({}) while its owner {} ({}) is live",
                target.key(),
                target.metadata.uid,
                owner.key(),
                owner.metadata.uid
            ));
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A dependent of an owner a client deleted with `orphan` survives: the engine never deletes it
/// while it refers to that owner, and once the owner is gone it refers to it no more.
#[derive(Default)]
pub(super) struct OrphansSurvive {
    /// Owners clients deleted with `orphan` -> their key and the dependents they had then.
    orphaned: BTreeMap<Uid, (ObjectKey, BTreeSet<Uid>)>,
    seen: Seen,
}

impl Invariant for OrphansSurvive {
    named!(OrphansSurvive);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplying]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::ClientWrote { object }
                if object.metadata.is_deleting() && object.metadata.has_finalizer(FINALIZER_ORPHAN) =>
            {
                let uid = &object.metadata.uid;
                let dependents = view
                    .store
                    .list(None, object.metadata.namespace.as_deref())
                    .iter()
                    .filter(|d| references(d, uid))
                    .map(|d| d.metadata.uid.clone())
                    .collect();
                self.orphaned.entry(uid.clone()).or_insert((object.key(), dependents));
            }
            Happening::StoreApplying { process, request, .. } => {
                let Some(target) = delete_target(view, request) else { return };
                if namespace_terminating(view, target) {
                    return;
                }
                // Only while the owner is there: a dependent created after the owner was marked
                // may outlive it referring to it, and is then ordinary garbage.
                let orphaning = target
                    .metadata
                    .owner_references
                    .iter()
                    .filter(|r| self.orphaned.contains_key(&r.uid))
                    .find_map(|r| view.store.get_by_uid(&r.uid));
                if let Some(owner) = orphaning {
                    self.seen.flag(format!(
                        "p{process} deleted {}, a dependent of {}, which a client deleted with orphan",
                        target.key(),
                        owner.key()
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        self.seen.check()?;
        for (owner, (key, dependents)) in &self.orphaned {
            if view.store.get_by_uid(owner).is_some() {
                continue;
            }
            for dependent in dependents.iter().filter_map(|d| view.store.get_by_uid(d)) {
                if references(dependent, owner) {
                    return Err(format!(
                        "{key} ({owner}), deleted with orphan, is gone but its dependent {} still refers to it",
                        dependent.key()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// An owner a client deleted in the foreground is gone only after its blocking dependents (those
/// with `blockOwnerDeletion` it had then, as long as they still block it) are gone.
#[derive(Default)]
pub(super) struct ForegroundAfterDependents {
    /// Owners clients deleted in the foreground, still in the store -> their key and blocking
    /// dependents then.
    waiting: BTreeMap<Uid, (ObjectKey, BTreeSet<Uid>)>,
    seen: Seen,
}

impl ForegroundAfterDependents {
    fn settle(&mut self, view: &View<'_>) {
        let gone: Vec<Uid> = self.waiting.keys().filter(|uid| view.store.get_by_uid(uid).is_none()).cloned().collect();
        for owner in gone {
            let Some((key, dependents)) = self.waiting.remove(&owner) else { continue };
            let left = dependents.iter().filter_map(|d| view.store.get_by_uid(d)).find(|d| blocks(d, &owner));
            if let Some(dependent) = left {
                self.seen.flag(format!(
                    "{key} ({owner}), deleted in the foreground, is gone while its blocking dependent {} remains",
                    dependent.key()
                ));
            }
        }
    }
}

impl Invariant for ForegroundAfterDependents {
    named!(ForegroundAfterDependents);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplied]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::ClientWrote { object } = happening
            && object.metadata.is_deleting()
            && object.metadata.has_finalizer(FINALIZER_FOREGROUND_DELETION)
            && !object.metadata.has_finalizer(FINALIZER_ORPHAN)
            && view.store.get_by_uid(&object.metadata.uid).is_some()
        {
            let uid = &object.metadata.uid;
            let dependents = view
                .store
                .list(None, object.metadata.namespace.as_deref())
                .iter()
                .filter(|d| blocks(d, uid))
                .map(|d| d.metadata.uid.clone())
                .collect();
            self.waiting.entry(uid.clone()).or_insert((object.key(), dependents));
        }
        if !self.waiting.is_empty() {
            self.settle(view);
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// How long a dependent whose owners are all gone may stay unmarked: a watch delivery held back
/// (seconds), the collector's confirming read, and one retry after the longest key backoff (30 s
/// and a quarter of jitter), with room to spare.
pub(super) const GARBAGE_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// Garbage is collected: a dependent whose owners are all gone from the store (every uid its
/// `ownerReferences` name no longer exists) is marked deleted within [`GARBAGE_BOUND`].
///
/// What it catches, as it happens: a garbage collector that misses an owner's deletion (it only
/// listens for one kind of news of it, say the owner's delete event, and the news came another
/// way: a relist, a coalesced event, a start after a crash) or takes the absence of an owner
/// from its cache for a view not caught up yet and waits for an event that never comes. The
/// garbage then stays for good, which only convergence would see, after the heal, as a world
/// that does not settle; this names the dependent and its gone owners when the bound passes.
///
/// The clock starts when the last owner goes (or the dependent is written with gone owners) and
/// starts again when something that the collector's design says may delay it happens: a process
/// crashes or relists (its next life reads afresh), or a write to the dependent fails (a
/// conflict: the collector backs off, and a run of such failures may outlast any fixed bound
/// while faults last; convergence judges the end).
#[derive(Default)]
pub(super) struct GarbageCollected {
    /// Owner uid -> the keys of objects written with a reference to it (a superset: links are
    /// only added; each is checked against the store before it counts).
    dependents: BTreeMap<Uid, BTreeSet<ObjectKey>>,
    /// Dependents whose owners are all gone -> their uid and since when the clock runs.
    garbage: BTreeMap<ObjectKey, (Uid, drydock_engine::WallTime)>,
}

/// Whether `object` is garbage in `view`: it has owners, none of which exists, and is not being
/// deleted.
fn is_garbage(view: &View<'_>, object: &Object) -> bool {
    let refs = &object.metadata.owner_references;
    !object.metadata.is_deleting() && !refs.is_empty() && refs.iter().all(|r| view.store.get_by_uid(&r.uid).is_none())
}

impl GarbageCollected {
    /// Start or stop the clock of `key`, as the store shows it now.
    fn judge(&mut self, view: &View<'_>, key: &ObjectKey) {
        match view.store.get(key) {
            Some(object) if is_garbage(view, object) => {
                let uid = &object.metadata.uid;
                let clock = self.garbage.entry(key.clone()).or_insert((uid.clone(), view.now));
                if clock.0 != *uid {
                    *clock = (uid.clone(), view.now);
                }
            }
            _ => {
                self.garbage.remove(key);
            }
        }
    }

    fn restart_clocks(&mut self, view: &View<'_>) {
        for clock in self.garbage.values_mut() {
            clock.1 = view.now;
        }
    }
}

impl Invariant for GarbageCollected {
    named!(GarbageCollected);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplied, HappeningKind::Crashed, HappeningKind::Relisted]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::Crashed { .. } | Happening::Relisted { .. } => self.restart_clocks(view),
            Happening::StoreApplied { request, result: Err(_), .. } => {
                let key = match request {
                    StoreRequest::Delete { key, .. } => key.clone(),
                    StoreRequest::Update { object } | StoreRequest::UpdateStatus { object } => object.key(),
                    _ => return,
                };
                if let Some(clock) = self.garbage.get_mut(&key) {
                    clock.1 = view.now;
                }
            }
            _ => {
                let Some(written) = happening.written_object() else { return };
                let key = written.key();
                for owner in &written.metadata.owner_references {
                    self.dependents.entry(owner.uid.clone()).or_default().insert(key.clone());
                }
                self.judge(view, &key);
                if view.store.get_by_uid(&written.metadata.uid).is_none()
                    && let Some(dependents) = self.dependents.remove(&written.metadata.uid)
                {
                    for dependent in &dependents {
                        self.judge(view, dependent);
                    }
                }
            }
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for (key, (uid, since)) in &self.garbage {
            let waited = std::time::Duration::from_millis(view.now.0.saturating_sub(since.0));
            if waited <= GARBAGE_BOUND {
                continue;
            }
            let Some(object) = view.store.get(key).filter(|o| o.metadata.uid == *uid && is_garbage(view, o)) else {
                continue;
            };
            let owners: Vec<String> =
                object.metadata.owner_references.iter().map(|r| format!("{} {} ({})", r.kind, r.name, r.uid)).collect();
            return Err(format!(
                "{key} (uid {uid}) has not been deleted {} s after its owners were all gone ({}): garbage not collected",
                waited.as_secs(),
                owners.join(", ")
            ));
        }
        Ok(())
    }
}
