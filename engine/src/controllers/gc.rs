//! The garbage collector: deletion propagation from owners to their dependents, as in Kubernetes.
//!
//! - *Background*: a dependent whose owners are all gone is deleted.
//! - *Foreground*: the dependents of an owner marked deleted with the `foregroundDeletion`
//!   finalizer are deleted (in the background), and the finalizer is removed once no dependent
//!   with `blockOwnerDeletion` references the owner any more. A dependent that also has a live
//!   owner is not deleted: only its reference to the owner being deleted is removed.
//! - *Orphan*: the references to an owner marked deleted with the `orphan` finalizer are removed
//!   from its dependents, which stay, and then the finalizer is removed.
//!
//! - *Dangling holds*: an object being deleted that still carries `drydock.dev/logical-hold`
//!   while every owner is confirmed gone loses the hold (an owner created it from a stale view
//!   of itself, after it was gone, and so never released it).
//!
//! Each object is reconciled in both roles: as a dependent (is it garbage?) and, while it is
//! marked deleted with one of the two finalizers, as an owner (may the finalizer go?). Owners
//! waiting on their dependents are reconciled on every change of one of them, and a foreground
//! owner also every second while blocking dependents are left (as Kubernetes requeues it).
//!
//! *Guarantees*
//! - A dependent is deleted only if each of its owners is either confirmed gone by an uncached
//!   read (the referenced uid does not exist) or is being deleted in the foreground (marked with
//!   `foregroundDeletion`: final, the owner never becomes live again). A stale cache (an owner
//!   created but not seen yet) never costs a live object. The delete carries the dependent's uid
//!   and resource version as preconditions: a dependent whose references changed since the
//!   state judged (unlinked by an orphaning owner in a write the cache has not seen) is not deleted.
//! - `foregroundDeletion` is removed only when neither the cache nor an uncached list of the
//!   owner's namespace (of all namespaces for a cluster-scoped owner), issued after the cache
//!   showed none, holds an object with a `blockOwnerDeletion` reference to the owner's uid.
//! - `orphan` is removed only when neither the cache nor such an uncached list holds an object
//!   with any reference to the owner's uid. Dependents of an orphaned owner are never deleted for
//!   its sake.
//! - Every update (a reference removed, a finalizer removed) carries the resource version of the
//!   state it was computed from: a conflict fails the reconcile, which is retried with backoff
//!   from a fresher view.
//!
//! *Assumptions*
//! - No dependent is created with a reference to an owner that is already marked deleted (the
//!   store does not forbid it). One created after the confirming list may outlive the owner's
//!   finalizer; it is then an ordinary dependent of a gone owner and is collected in the
//!   background, even under `orphan` (as in Kubernetes).
//! - An owner with both finalizers (only a client can put both there) is orphaned first: while
//!   it holds `orphan` its dependents count it as live; afterwards nothing blocks its
//!   `foregroundDeletion`.

use crate::api::{Object, ObjectKey, OwnerReference, Uid, names};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::store::{
    DeleteOptions, FINALIZER_FOREGROUND_DELETION, FINALIZER_ORPHAN, Propagation, StoreReply, StoreRequest, StoreResult,
};
use crate::time::Now;
use crate::toolkit::without_finalizer;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// How often an owner deleted in the foreground looks at its blocking dependents again while
/// some are left (in the cache, or only in the uncached list because the cache is behind).
const RECHECK_DELAY: Duration = Duration::from_secs(1);

/// How often a held object whose owner could not be confirmed gone is looked at again.
const HOLD_RECHECK_DELAY: Duration = Duration::from_secs(5);

/// An owner as seen from one of its dependents.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum OwnerState {
    /// The referenced uid does not exist.
    Gone,
    /// Marked deleted with `foregroundDeletion`: waiting for its dependents to go.
    Waiting,
    /// Exists (or could not be checked): the dependent stays.
    Live,
}

/// Uncached reads of a dependent's owners that the cache does not hold.
#[derive(Debug, Default)]
struct OwnerCheck {
    /// Which owners the reads are about: op -> owner uid.
    outstanding: BTreeMap<OpId, Uid>,
    seen: BTreeMap<Uid, OwnerState>,
}

/// The uncached list confirming that an owner's finalizer may go.
#[derive(Debug)]
struct Release {
    uid: Uid,
    list: Option<OpId>,
    listed: Option<Result<Vec<Arc<Object>>, String>>,
}

#[derive(Debug, Default)]
pub struct GarbageCollector {
    checks: BTreeMap<ObjectKey, OwnerCheck>,
    releases: BTreeMap<ObjectKey, Release>,
}

/// Marked deleted and holding its deletion for its dependents.
fn holds_for_dependents(object: &Object) -> bool {
    let meta = &object.metadata;
    meta.is_deleting() && (meta.has_finalizer(FINALIZER_FOREGROUND_DELETION) || meta.has_finalizer(FINALIZER_ORPHAN))
}

/// Marked deleted in the foreground (and not orphaning, which comes first).
fn waits_for_dependents(owner: &Object) -> bool {
    let meta = &owner.metadata;
    meta.is_deleting() && meta.has_finalizer(FINALIZER_FOREGROUND_DELETION) && !meta.has_finalizer(FINALIZER_ORPHAN)
}

fn references(dependent: &Object, owner: &Uid) -> bool {
    dependent.metadata.owner_references.iter().any(|r| r.uid == *owner)
}

fn blocks(dependent: &Object, owner: &Uid) -> bool {
    dependent.metadata.owner_references.iter().any(|r| r.uid == *owner && r.block_owner_deletion)
}

/// The newest copy of `owner` known: the cache's or the confirming list's, whichever has the
/// higher resource version; `None` if the list no longer holds it (it is gone).
///
/// The finalizer is removed from this copy, not from the cache's alone: while the watch lags
/// (the owner was written since), an update from the cache's copy conflicts on every retry,
/// and each retry costs another uncached list, until the watch catches up.
fn freshest<'a>(owner: &'a Object, listed: &'a [Arc<Object>]) -> Option<&'a Object> {
    let in_list = listed.iter().find(|o| o.metadata.uid == owner.metadata.uid)?;
    Some(if in_list.metadata.resource_version > owner.metadata.resource_version { in_list } else { owner })
}

/// Remove the references to `owners` from `dependent`, with its resource version as precondition.
fn unlink(ctx: &mut Context<'_>, dependent: &Object, owners: &BTreeSet<Uid>) {
    if !dependent.metadata.owner_references.iter().any(|r| owners.contains(&r.uid)) {
        return;
    }
    let mut next = dependent.clone();
    next.metadata.owner_references.retain(|r| !owners.contains(&r.uid));
    tracing::debug!(key = %dependent.key(), "removing owner references");
    ctx.store(StoreRequest::Update { object: next });
}

/// Uncached reads of `owners` of `dependent` (in its namespace if their kind is namespaced),
/// recorded in `check` as outstanding.
fn read_owners<'a>(
    ctx: &mut Context<'_>,
    dependent: &Object,
    owners: impl Iterator<Item = &'a OwnerReference>,
    check: &mut OwnerCheck,
) {
    for owner in owners {
        let namespaced = ctx.registry().get(&owner.kind).is_some_and(|k| k.namespaced);
        let ns = if namespaced { dependent.metadata.namespace.as_deref() } else { None };
        let id = ctx.store(StoreRequest::Get { key: ObjectKey::new(&owner.kind, ns, &owner.name) });
        check.outstanding.insert(id, owner.uid.clone());
    }
}

fn delete(ctx: &mut Context<'_>, dependent: &Object) {
    tracing::debug!(key = %dependent.key(), "owners gone or deleting in the foreground: deleting dependent");
    ctx.store(StoreRequest::Delete {
        key: dependent.key(),
        options: DeleteOptions {
            precondition_uid: Some(dependent.metadata.uid.clone()),
            // The owner references judged are those of this state: if they changed since (an
            // orphaning owner unlinked it, a write our cache has not seen), it is judged again.
            precondition_resource_version: (!crate::bugs::on(crate::bugs::Bug::GcDeletesWithoutVersion))
                .then_some(dependent.metadata.resource_version),
            propagation: Propagation::Background,
        },
    });
}

impl GarbageCollector {
    /// The object as a dependent: delete it if its owners are gone or all waiting for it.
    fn dependent(&mut self, ctx: &mut Context<'_>, key: &ObjectKey, object: &Object) -> ReconcileResult {
        let refs = &object.metadata.owner_references;
        let mut waiting = BTreeSet::new();
        let mut live = false;
        let mut unknown = Vec::new();
        for owner in refs {
            match ctx.cache().get_by_uid(&owner.uid) {
                Some(o) if waits_for_dependents(o) => {
                    waiting.insert(owner.uid.clone());
                }
                Some(_) => live = true,
                None => unknown.push(owner),
            }
        }
        if refs.is_empty() || live {
            self.checks.remove(key);
            unlink(ctx, object, &waiting);
            return Ok(Action::done());
        }
        if !unknown.is_empty() && crate::bugs::on(crate::bugs::Bug::GcWaitsForUnseenOwners) {
            return Ok(Action::done());
        }
        if unknown.is_empty() {
            self.checks.remove(key);
            delete(ctx, object);
            return Ok(Action::done());
        }
        match self.checks.get(key) {
            Some(check) if !check.outstanding.is_empty() => {}
            Some(check) if unknown.iter().all(|r| check.seen.contains_key(&r.uid)) => {
                for owner in &unknown {
                    match check.seen.get(&owner.uid) {
                        Some(OwnerState::Gone) => {}
                        Some(OwnerState::Waiting) => {
                            waiting.insert(owner.uid.clone());
                        }
                        _ => live = true,
                    }
                }
                self.checks.remove(key);
                if live {
                    unlink(ctx, object, &waiting);
                } else {
                    delete(ctx, object);
                }
            }
            _ => {
                let mut check = OwnerCheck::default();
                read_owners(ctx, object, unknown.into_iter(), &mut check);
                self.checks.insert(key.clone(), check);
            }
        }
        Ok(Action::done())
    }

    /// A deleted object still held for its owners (`drydock.dev/logical-hold`). An owner releases
    /// its hold as it cleans up; but an owner that acted on a stale view of itself (its kind's
    /// watch lagging behind its deletion) may create a child after it is gone, and nobody is left
    /// to release that child's hold. Once every owner is confirmed gone by an uncached read, the
    /// hold goes.
    fn dangling_hold(&mut self, ctx: &mut Context<'_>, key: &ObjectKey, object: &Object) -> ReconcileResult {
        let refs = &object.metadata.owner_references;
        if refs.iter().any(|r| ctx.cache().get_by_uid(&r.uid).is_some()) {
            // Its owner's own cleanup releases it (each change of the owner reconciles this).
            self.checks.remove(key);
            return Ok(Action::done());
        }
        let check = self.checks.entry(key.clone()).or_default();
        if !check.outstanding.is_empty() {
            return Ok(Action::done());
        }
        if refs.iter().all(|r| check.seen.get(&r.uid) == Some(&OwnerState::Gone)) {
            self.checks.remove(key);
            tracing::debug!(%key, "owners gone: releasing their hold");
            ctx.store(StoreRequest::Update { object: without_finalizer(object, names::FINALIZER_HOLD) });
            return Ok(Action::done());
        }
        if refs.iter().all(|r| check.seen.contains_key(&r.uid)) {
            // An owner exists that the cache has not seen yet (its arrival reconciles this), or
            // the read failed: look again later.
            self.checks.remove(key);
            return Ok(Action::requeue(HOLD_RECHECK_DELAY));
        }
        let unread: Vec<&OwnerReference> = refs.iter().filter(|r| !check.seen.contains_key(&r.uid)).collect();
        read_owners(ctx, object, unread.into_iter(), check);
        Ok(Action::done())
    }

    /// The objects of an uncached list of the owner's scope issued by an earlier reconcile, once;
    /// `None` while there is none (one is issued) or it is in flight.
    fn listed(
        &mut self,
        ctx: &mut Context<'_>,
        key: &ObjectKey,
        owner: &Object,
    ) -> Result<Option<Vec<Arc<Object>>>, ReconcileError> {
        let uid = &owner.metadata.uid;
        let release =
            self.releases.entry(key.clone()).or_insert_with(|| Release { uid: uid.clone(), list: None, listed: None });
        if release.uid != *uid {
            *release = Release { uid: uid.clone(), list: None, listed: None };
        }
        if release.list.is_some() {
            return Ok(None);
        }
        match release.listed.take() {
            Some(Ok(objects)) => Ok(Some(objects)),
            Some(Err(e)) => Err(ReconcileError(format!("{key}: listing dependents failed: {e}"))),
            None => {
                // A namespaced owner's dependents are in its namespace; a cluster-scoped owner's
                // anywhere (namespace `None` lists everything).
                let namespace = owner.metadata.namespace.as_deref().map(str::to_string);
                release.list = Some(ctx.store(StoreRequest::List { kind: None, namespace }));
                Ok(None)
            }
        }
    }

    /// An owner deleted in the foreground: its dependents delete themselves (see `dependent`);
    /// release `foregroundDeletion` once no blocking one is left.
    fn foreground(&mut self, ctx: &mut Context<'_>, key: &ObjectKey, owner: &Object) -> ReconcileResult {
        let uid = &owner.metadata.uid;
        let cache = ctx.cache();
        if cache.dependents_of(uid).filter_map(|k| cache.get(k)).any(|d| blocks(d, uid)) {
            // Their changes reconcile this owner again, except one: a dependent that drops its
            // reference to this owner (it has a live owner too) no longer maps here. Look again.
            self.releases.remove(key);
            return Ok(Action::requeue(RECHECK_DELAY));
        }
        let Some(listed) = self.listed(ctx, key, owner)? else { return Ok(Action::done()) };
        if listed.iter().any(|d| blocks(d, uid)) {
            // The cache has not seen them yet; once it has, they are deleted like the others.
            return Ok(Action::requeue(RECHECK_DELAY));
        }
        let Some(owner) = freshest(owner, &listed) else { return Ok(Action::done()) };
        if !waits_for_dependents(owner) {
            return Ok(Action::done());
        }
        tracing::debug!(%key, "no blocking dependent left: removing the foregroundDeletion finalizer");
        ctx.store(StoreRequest::Update { object: without_finalizer(owner, FINALIZER_FOREGROUND_DELETION) });
        Ok(Action::done())
    }

    /// An owner deleted with `orphan`: remove the references to it, then the finalizer.
    fn orphan(&mut self, ctx: &mut Context<'_>, key: &ObjectKey, owner: &Object) -> ReconcileResult {
        let uid = &owner.metadata.uid;
        let owners = BTreeSet::from([uid.clone()]);
        let cache = ctx.cache();
        let dependents: Vec<&Arc<Object>> =
            cache.dependents_of(uid).filter_map(|k| cache.get(k)).filter(|d| references(d, uid)).collect();
        if !dependents.is_empty() {
            self.releases.remove(key);
            for dependent in dependents {
                unlink(ctx, dependent, &owners);
            }
            // Their new state no longer maps to this owner: look again once the writes are done.
            return Ok(Action::requeue(Duration::ZERO));
        }
        let Some(listed) = self.listed(ctx, key, owner)? else { return Ok(Action::done()) };
        let unseen: Vec<&Arc<Object>> = listed.iter().filter(|d| references(d, uid)).collect();
        if !unseen.is_empty() {
            // Dependents the cache has not seen yet: unlink them as listed, then list again.
            for dependent in unseen {
                unlink(ctx, dependent, &owners);
            }
            return Ok(Action::requeue(Duration::ZERO));
        }
        let Some(owner) = freshest(owner, &listed) else { return Ok(Action::done()) };
        if !(owner.metadata.is_deleting() && owner.metadata.has_finalizer(FINALIZER_ORPHAN)) {
            return Ok(Action::done());
        }
        tracing::debug!(%key, "dependents orphaned: removing the orphan finalizer");
        ctx.store(StoreRequest::Update { object: without_finalizer(owner, FINALIZER_ORPHAN) });
        Ok(Action::done())
    }
}

impl Controller for GarbageCollector {
    fn name(&self) -> &str {
        "garbage-collector"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![Watch::custom("*", |object, cache| {
            let mut keys = vec![object.key()];
            keys.extend(cache.dependents_of(&object.metadata.uid).cloned());
            // An owner holding its deletion for its dependents hears of each change of one.
            keys.extend(
                object
                    .metadata
                    .owner_references
                    .iter()
                    .filter_map(|r| cache.get_by_uid(&r.uid))
                    .filter(|owner| holds_for_dependents(owner))
                    .map(|owner| owner.key()),
            );
            keys
        })]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(object) = ctx.get(key) else {
            self.checks.remove(key);
            self.releases.remove(key);
            return Ok(Action::done());
        };
        if object.metadata.is_deleting() {
            if object.metadata.has_finalizer(FINALIZER_ORPHAN) {
                self.checks.remove(key);
                return self.orphan(ctx, key, object);
            }
            if object.metadata.has_finalizer(FINALIZER_FOREGROUND_DELETION) {
                self.checks.remove(key);
                return self.foreground(ctx, key, object);
            }
            self.releases.remove(key);
            if object.metadata.has_finalizer(names::FINALIZER_HOLD) {
                return self.dangling_hold(ctx, key, object);
            }
            self.checks.remove(key);
            return Ok(Action::done());
        }
        self.releases.remove(key);
        self.dependent(ctx, key, object)
    }

    fn on_store_result(&mut self, _now: Now, key: &ObjectKey, op: OpId, result: &StoreResult) {
        if let Some(check) = self.checks.get_mut(key)
            && let Some(owner_uid) = check.outstanding.remove(&op)
        {
            let state = match result {
                Ok(StoreReply::Object(owner)) if owner.metadata.uid == owner_uid => {
                    if waits_for_dependents(owner) {
                        OwnerState::Waiting
                    } else {
                        OwnerState::Live
                    }
                }
                Ok(_) => OwnerState::Gone,
                Err(e) if e.is_not_found() => OwnerState::Gone,
                // Unsure: keep the dependent.
                Err(_) => OwnerState::Live,
            };
            check.seen.insert(owner_uid, state);
            return;
        }
        if let Some(release) = self.releases.get_mut(key)
            && release.list == Some(op)
        {
            release.list = None;
            release.listed = Some(match result {
                Ok(StoreReply::Objects(objects)) => Ok(objects.clone()),
                Ok(StoreReply::Object(_)) => Err("a list answered with one object".into()),
                Err(e) => Err(e.to_string()),
            });
        }
    }
}
