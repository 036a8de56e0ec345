//! Namespaces: keep Active ones marked Active; on delete, turn Terminating, delete the children
//! rank by rank in cleanup order, report progress in the `CleanupComplete` condition, and release
//! the finalizer only when an uncached list confirms that no child is left.
//!
//! While Terminating, the status carries `CleanupComplete`: False with reason `Pending` and the
//! children left per kind in cleanup order (`waiting for 2 PhysicalContainer, 1 ContainerImage`),
//! then True with reason `Complete` once an uncached list found the namespace empty.
//!
//! *Guarantees*
//! - The namespace finalizer is never removed while the store holds a child of the namespace:
//!   it is removed only after an uncached list, issued while the namespace was terminating, came
//!   back empty (the store rejects creates in a terminating namespace, so it stays empty).
//! - The finalizer is removed only after the store has confirmed writing `CleanupComplete=True`:
//!   the removal is computed from a cached state that holds it (a write's reply, or the watch),
//!   with that state's resource version as precondition.
//! - Only children of this namespace object (this uid) are deleted, never those of a namespace
//!   re-created under its name: a child is deleted only if the last certified uncached list holds
//!   it (by uid). A list is certified by a get, issued after the list answered, that finds the
//!   namespace of our uid still there: it was there (terminating, so no child could be created)
//!   for the whole list, so the list holds every child it has left and none of another namespace.
//!   A child only in the cache is either deleted since or another namespace's (the cache's watch
//!   of namespaces may lag behind that of the child's kind past a delete and a re-create).
//! - Nothing is deleted before a certified list has answered; then no child of a cleanup rank is
//!   deleted while a child of a lower rank remains in the cache or in the last uncached list. A
//!   listed child counts as remaining until the cache has applied the
//!   watch past its version without it, our own delete removed it, or a newer list leaves it out.
//!   Children already being deleted are waited for, not deleted again. At most `max_deletes`
//!   deletes per reconcile, each with the child's uid as precondition.
//! - The status is written only when its content changes (`lastTransitionTime` only moves when
//!   the condition's status does), so a steady namespace causes no writes.
//!
//! - **Orphans**: if a namespace is gone while objects of it are left (its finalizer removed by
//!   hand, a store edited or restored), they are deleted, rank by rank, with their uids as
//!   preconditions, so their own cleanup removes what they made in the runtime. An object is
//!   taken for an orphan only when the cache's watch of namespaces has passed the object's
//!   version without the namespace (it was created while its namespace existed, as the store
//!   requires, so that namespace is gone; one of that name the watch has not shown yet was
//!   created after it), and an uncached list of the namespace still holds it (the cache may not
//!   have heard yet of the deletion of a cleaned-up namespace's children).
//!
//! *Assumptions*: children are only created through the store (so its terminating check
//! applies). Watch events of one kind reach the cache in resource-version order, but kinds are not
//! ordered among themselves (the engine's contract): a cache that knows the namespace is
//! terminating may not yet have seen a child of another kind created before. So "empty" is never
//! concluded from the cache: only an uncached list that finds nothing releases the namespace.

use crate::api::{
    Condition, ConditionStatus, Namespace, NamespacePhase, NamespaceStatus, Object, ObjectKey, Resource, Uid, names,
};
use crate::cache::is_removed;
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::store::{DeleteOptions, StoreReply, StoreRequest, StoreResult};
use crate::time::{MonoTime, Now};
use crate::toolkit::without_finalizer;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// The condition a terminating namespace reports its cleanup in.
pub const CONDITION_CLEANUP_COMPLETE: &str = "CleanupComplete";
/// `CleanupComplete=False`: children are left, or the namespace is not confirmed empty yet.
pub const REASON_PENDING: &str = "Pending";
/// `CleanupComplete=True`: an uncached list found no child.
pub const REASON_COMPLETE: &str = "Complete";

/// How long to wait before listing again when the last list showed children the cache has not
/// caught up with.
const RELIST_DELAY: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct Listed {
    objects: Vec<Arc<Object>>,
    at: MonoTime,
}

/// What the controller knows about the cleanup of one terminating namespace.
#[derive(Debug)]
struct Cleanup {
    uid: Uid,
    /// An uncached list in flight.
    list: Option<OpId>,
    /// A list that answered, waiting for the get of the namespace that certifies it.
    unconfirmed: Option<Listed>,
    /// That get, in flight.
    check: Option<OpId>,
    /// The result of the last certified uncached list.
    listed: Option<Listed>,
    /// A get found the namespace gone or of another uid: this namespace is gone, whatever the
    /// cache still shows; nothing more is done for it.
    ended: bool,
    list_error: Option<String>,
    /// Our deletes in flight: op -> child uid.
    deletes: BTreeMap<OpId, Uid>,
    /// Children our own deletes removed (or found gone).
    gone: BTreeSet<Uid>,
}

impl Cleanup {
    fn new(uid: &Uid) -> Self {
        Cleanup {
            uid: uid.clone(),
            list: None,
            unconfirmed: None,
            check: None,
            listed: None,
            ended: false,
            list_error: None,
            deletes: BTreeMap::new(),
            gone: BTreeSet::new(),
        }
    }
}

/// The orphans of a gone namespace being deleted: the uncached list that confirms them, our
/// deletes in flight, and the last error.
#[derive(Debug, Default)]
struct Orphans {
    list: Option<OpId>,
    listed: Option<Vec<Arc<Object>>>,
    deletes: BTreeSet<OpId>,
    error: Option<String>,
}

#[derive(Debug)]
pub struct NamespaceController {
    max_deletes: usize,
    cleanups: BTreeMap<ObjectKey, Cleanup>,
    orphans: BTreeMap<ObjectKey, Orphans>,
}

impl NamespaceController {
    pub fn new(max_deletes: usize) -> Self {
        NamespaceController { max_deletes: max_deletes.max(1), cleanups: BTreeMap::new(), orphans: BTreeMap::new() }
    }

    /// The namespace at `key` is not in the cache: delete the objects it left behind, if any (see
    /// the module's *Orphans*).
    fn collect_orphans(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let cache = ctx.cache();
        let registry = ctx.registry();
        let orphaned = |o: &Object| cache.gone_since(key, o.metadata.resource_version);
        let children: Vec<&Arc<Object>> = cache.list("*", Some(key.name.as_str())).collect();
        if !children.iter().any(|c| orphaned(c)) {
            // None, or the namespace is only not seen yet (its arrival reconciles this key).
            self.orphans.remove(key);
            return Ok(Action::done());
        }
        let orphans = self.orphans.entry(key.clone()).or_default();
        if let Some(error) = orphans.error.take() {
            return Err(ReconcileError(format!("{key} is gone; deleting an object it left failed: {error}")));
        }
        if orphans.list.is_some() || !orphans.deletes.is_empty() {
            return Ok(Action::done());
        }
        let rank = |o: &Object| registry.get(&o.kind).map_or(u8::MAX, |k| k.cleanup_rank);
        // The lowest rank left goes first; those of it already being deleted are waited for.
        let victims = |objects: &[&Arc<Object>]| -> Vec<Arc<Object>> {
            let Some(lowest) = objects.iter().map(|o| rank(o)).min() else { return Vec::new() };
            let deletable = |o: &&&Arc<Object>| rank(o) == lowest && !o.metadata.is_deleting() && orphaned(o);
            objects.iter().filter(deletable).map(|o| Arc::clone(o)).collect()
        };
        let Some(listed) = orphans.listed.take() else {
            // Confirm with an uncached list what the cache shows: a child it holds may be gone
            // already, its deletion not seen yet.
            if !victims(&children).is_empty() {
                orphans.list =
                    Some(ctx.store(StoreRequest::List { kind: None, namespace: Some(key.name.to_string()) }));
            }
            return Ok(Action::done());
        };
        let listed: Vec<&Arc<Object>> = listed.iter().collect();
        for child in victims(&listed).into_iter().take(self.max_deletes) {
            tracing::warn!(key = %child.key(), "its namespace is gone: deleting it");
            let op = ctx.store(StoreRequest::Delete {
                key: child.key(),
                options: DeleteOptions { precondition_uid: Some(child.metadata.uid.clone()), ..Default::default() },
            });
            orphans.deletes.insert(op);
        }
        // Each child's deletion (its finalizers' cleanup done) reconciles this key again.
        Ok(Action::done())
    }

    fn write_status(ctx: &mut Context<'_>, ns: &Object, status: &NamespaceStatus) -> bool {
        let Ok(current) = ns.status::<Namespace>() else { return false };
        crate::toolkit::write_status::<Namespace>(ctx, ns, &current, status.clone())
    }

    fn terminate(&mut self, ctx: &mut Context<'_>, key: &ObjectKey, ns: &Object) -> ReconcileResult {
        let name = ns.metadata.name.as_str();
        let now = ctx.now();
        let cache = ctx.cache();
        let registry = ctx.registry();
        let cleanup = self.cleanups.entry(key.clone()).or_insert_with(|| Cleanup::new(&ns.metadata.uid));
        if cleanup.uid != ns.metadata.uid {
            *cleanup = Cleanup::new(&ns.metadata.uid);
        }
        if cleanup.ended {
            return Ok(Action::done());
        }
        if let Some(error) = cleanup.list_error.take() {
            return Err(ReconcileError(format!("{key}: listing the namespace failed: {error}")));
        }

        // What is left: the cache's children, and those of the last uncached list that the cache
        // has not seen (or has seen at an older version), unless known to be gone.
        let mut remaining: BTreeMap<ObjectKey, Arc<Object>> =
            cache.list("*", Some(name)).map(|o| (o.key(), o.clone())).collect();
        let cached_any = !remaining.is_empty();
        let mut listed_any = false;
        for child in cleanup.listed.iter().flat_map(|l| &l.objects) {
            if cleanup.gone.contains(&child.metadata.uid) {
                continue;
            }
            let rv = child.metadata.resource_version;
            match remaining.get(&child.key()) {
                Some(cached) if cached.metadata.resource_version >= rv => {}
                // Deleted since: the watch of its kind has passed this version without it, or
                // the cache applied its removal (our own write's reply) while that watch lags.
                None if cache.gone_since(&child.key(), rv) => {}
                _ => {
                    listed_any = true;
                    remaining.insert(child.key(), child.clone());
                }
            }
        }
        let confirmed_empty = remaining.is_empty() && cleanup.listed.as_ref().is_some_and(|l| l.objects.is_empty());

        let rank = |o: &Object| registry.get(&o.kind).map_or(u8::MAX, |k| k.cleanup_rank);
        let mut pending: BTreeMap<(u8, &str), usize> = BTreeMap::new();
        for child in remaining.values() {
            *pending.entry((rank(child), child.kind.as_str())).or_default() += 1;
        }
        let condition = if confirmed_empty {
            Condition::new(
                CONDITION_CLEANUP_COMPLETE,
                ConditionStatus::True,
                REASON_COMPLETE,
                "all objects of the namespace are deleted",
            )
        } else if pending.is_empty() {
            Condition::new(
                CONDITION_CLEANUP_COMPLETE,
                ConditionStatus::False,
                REASON_PENDING,
                "no object left as far as the cache knows; confirming with an uncached list",
            )
        } else {
            let counts: Vec<String> = pending.iter().map(|((_, kind), n)| format!("{n} {kind}")).collect();
            Condition::new(
                CONDITION_CLEANUP_COMPLETE,
                ConditionStatus::False,
                REASON_PENDING,
                format!("waiting for {}", counts.join(", ")),
            )
        };
        let mut status = ns.status::<Namespace>().unwrap_or_default();
        status.phase = Some(NamespacePhase::Terminating);
        status.message =
            (!remaining.is_empty()).then(|| format!("waiting for {} objects to be deleted", remaining.len()));
        condition.set(&mut status.conditions, now.wall);
        let wrote = Self::write_status(ctx, ns, &status);

        if confirmed_empty {
            if !wrote {
                // The cached namespace carries CleanupComplete=True: the store has it.
                tracing::debug!(namespace = name, "cleanup complete: releasing finalizer");
                ctx.store(StoreRequest::Update { object: without_finalizer(ns, names::FINALIZER_NAMESPACE) });
            }
            return Ok(Action::done());
        }

        // Delete the lowest rank that has children left; never a higher one while it has. Not
        // before an uncached list has answered: the cache may lag behind on one kind (a child of a
        // lower rank not seen yet) while it shows another.
        let from_cache = crate::bugs::on(crate::bugs::Bug::CleanupDeletesFromCache);
        if (cleanup.listed.is_some() || from_cache)
            && let Some(lowest) = remaining.values().map(|o| rank(o)).min()
        {
            let ours: BTreeSet<&Uid> =
                cleanup.listed.iter().flat_map(|listed| listed.objects.iter().map(|o| &o.metadata.uid)).collect();
            let victims = remaining
                .values()
                .filter(|c| {
                    rank(c) == lowest && !c.metadata.is_deleting() && (from_cache || ours.contains(&c.metadata.uid))
                })
                .take(self.max_deletes);
            for child in victims {
                let op = ctx.store(StoreRequest::Delete {
                    key: child.key(),
                    options: DeleteOptions { precondition_uid: Some(child.metadata.uid.clone()), ..Default::default() },
                });
                cleanup.deletes.insert(op, child.metadata.uid.clone());
            }
        }

        // List once before deleting anything, then again to confirm once the cache shows no
        // child. A list whose children the cache has not caught up with is repeated after a while,
        // not in a loop.
        if cleanup.list.is_some() || cleanup.check.is_some() {
            return Ok(Action::done());
        }
        if cleanup.unconfirmed.is_some() {
            cleanup.check = Some(ctx.store(StoreRequest::Get { key: key.clone() }));
            return Ok(Action::done());
        }
        let due = match &cleanup.listed {
            None => now.mono,
            // Children known only from the list: the watch passing them without them, or a newer
            // list, says they are gone. The watch may pass them with events the cache had
            // already taken from our own writes' replies, which wake nobody: list again.
            Some(listed) if listed_any => listed.at + RELIST_DELAY,
            Some(_) if cached_any => return Ok(Action::done()),
            Some(_) => now.mono,
        };
        if due > now.mono {
            return Ok(Action::requeue(due - now.mono));
        }
        cleanup.list = Some(ctx.store(StoreRequest::List { kind: None, namespace: Some(name.to_string()) }));
        Ok(Action::done())
    }
}

impl Controller for NamespaceController {
    fn name(&self) -> &str {
        "namespace"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(Namespace::KIND),
            Watch::custom("*", |object, _| match &object.metadata.namespace {
                Some(ns) => vec![ObjectKey::cluster(Namespace::KIND, ns)],
                None => Vec::new(),
            }),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(ns) = ctx.get(key) else {
            self.cleanups.remove(key);
            return self.collect_orphans(ctx, key);
        };
        self.orphans.remove(key);
        let Ok(mut status) = ns.status::<Namespace>() else {
            return Err(ReconcileError(format!("{key}: status does not decode")));
        };
        if !ns.metadata.is_deleting() {
            self.cleanups.remove(key);
            status.phase = Some(NamespacePhase::Active);
            status.message = None;
            Condition::remove(&mut status.conditions, CONDITION_CLEANUP_COMPLETE);
            Self::write_status(ctx, ns, &status);
            return Ok(Action::done());
        }
        if !ns.metadata.has_finalizer(names::FINALIZER_NAMESPACE) {
            self.cleanups.remove(key);
            return Ok(Action::done());
        }
        self.terminate(ctx, key, ns)
    }

    fn on_store_result(&mut self, now: Now, key: &ObjectKey, op: OpId, result: &StoreResult) {
        if let Some(orphans) = self.orphans.get_mut(key)
            && (orphans.list == Some(op) || orphans.deletes.contains(&op))
        {
            let listing = orphans.list.take_if(|list| *list == op).is_some();
            orphans.deletes.remove(&op);
            match result {
                Ok(StoreReply::Objects(objects)) if listing => orphans.listed = Some(objects.clone()),
                Err(e) if !e.is_not_found() => orphans.error = Some(e.to_string()),
                _ => {}
            }
            return;
        }
        let Some(cleanup) = self.cleanups.get_mut(key) else { return };
        if cleanup.list == Some(op) {
            cleanup.list = None;
            match result {
                Ok(StoreReply::Objects(objects)) => {
                    cleanup.unconfirmed = Some(Listed { objects: objects.clone(), at: now.mono });
                }
                Ok(StoreReply::Object(_)) => cleanup.list_error = Some("a list answered with one object".into()),
                Err(e) => cleanup.list_error = Some(e.to_string()),
            }
        } else if cleanup.check == Some(op) {
            cleanup.check = None;
            let unconfirmed = cleanup.unconfirmed.take();
            match result {
                Ok(StoreReply::Object(ns)) if ns.metadata.uid == cleanup.uid => cleanup.listed = unconfirmed,
                Ok(StoreReply::Object(_)) => cleanup.ended = true,
                Err(e) if e.is_not_found() => cleanup.ended = true,
                Ok(StoreReply::Objects(_)) => cleanup.list_error = Some("a get answered with a list".into()),
                Err(e) => cleanup.list_error = Some(e.to_string()),
            }
        } else if let Some(uid) = cleanup.deletes.remove(&op) {
            let removed = match result {
                Ok(StoreReply::Object(object)) => is_removed(object),
                Err(e) => e.is_not_found(),
                Ok(StoreReply::Objects(_)) => false,
            };
            if removed {
                cleanup.gone.insert(uid);
            }
        }
    }
}
