//! Networks and volumes: one runtime object per drydock object, created by name (or tracked by
//! id), labelled with the object's uid, removed on delete unless retained. One controller, two
//! [`Flavor`]s: [`ContainerNetworkController`] and [`ContainerVolumeController`].
//!
//! *Guarantees*
//! - One runtime operation per object at a time; a delete waits for it to finish.
//! - Every object created carries the object's uid label. After a create whose outcome is
//!   unknown (lost reply, error) the runtime is listed by that label *before* any retry, and so
//!   it is before the first create of an object an earlier life of the engine may have been
//!   creating: ours is adopted, never created twice.
//! - A name held by an object without our label (a stranger) is terminal (`Failed`,
//!   `NameTaken`) unless `replaceExisting`: then exactly the object resolved by name is removed
//!   (a volume only once unused: never forced) and ours created. Docker's volume create answers
//!   an existing volume of the name instead of refusing it: its labels tell ours from a
//!   stranger's. Built-in networks are refused at admission and never removed.
//! - One removed behind our back is `Missing`, never recreated; one to track that does not exist
//!   is `Missing` too.
//! - Delete: tracked and retained objects are left alone. A network's running containers that
//!   drydock attached (physical containers naming it) are disconnected first; others are waited
//!   for (Docker refuses to remove a network they use). A volume in use is waited for, never
//!   force-removed; while its namespace is being deleted, only for [`IN_USE_GRACE`], then it is
//!   abandoned (left in the runtime, the status says so) so the namespace deletion completes.
//!   The finalizer goes only after a list by uid label finds nothing of ours left (or only the
//!   abandoned volume).
//! - Every failure of the runtime backs off per operation kind to a cap ([`RETRY`]); a refused
//!   create is `Failed` at once with the runtime's message.

pub mod flavor;

use crate::api::{Object, ObjectKey, PhysicalContainer, Resource, ResourcePhase, RuntimeResourceStatus};
use crate::api::{Uid, names, reasons};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::runtime::{RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use crate::store::{StoreReply, StoreRequest, StoreResult};
use crate::time::{MonoTime, Now};
use crate::toolkit::{self, Cleanup, Finalizer, OpTracker, Retry, RetryPolicy, write_status};
use flavor::{Flavor, Found, Network, Shape, Users, Volume, attached_by_drydock, mounted_by_drydock};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

/// How long a volume in use is waited for while its namespace is being deleted (DCP's 30 s).
pub const IN_USE_GRACE: Duration = Duration::from_secs(30);
/// After failed runtime operations, per operation kind: 200 ms, doubling to 30 s, for ever.
const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(30));
/// Held until the runtime object is removed (or kept: retained, or tracked).
const RUNTIME_FINALIZER: Finalizer<'static> = Finalizer::new(names::FINALIZER_RUNTIME);

/// The network controller.
pub type ContainerNetworkController = RuntimeResourceController<Network>;
/// The volume controller.
pub type ContainerVolumeController = RuntimeResourceController<Volume>;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Op {
    Create,
    /// List by uid label: after an uncertain create, before a first create an earlier life may
    /// have sent, after a name conflict.
    Verify,
    /// Inspect the name after a conflict: who holds it?
    ResolveName,
    /// replaceExisting: remove exactly the stranger resolved by name.
    RemoveStranger,
    /// Inspect ours (monitoring, a tracked one, before removing a network).
    Inspect,
    Disconnect,
    /// List the containers drydock made in the object's namespace (by namespace label): a
    /// network's delete disconnects those attached even once their objects are gone (a
    /// persistent container is retained when its object goes, still attached).
    ListUsers,
    Remove,
    /// List by uid label before releasing the finalizer.
    CleanupCheck,
    /// Read the object itself, uncached, before its first create.
    ConfirmSelf,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verify {
    /// If nothing carries our label, create (again).
    AfterUncertain,
    /// The name was taken: if nothing carries our label, look at who holds it.
    AfterConflict,
    /// Inspect the name.
    Holder,
}

/// What this engine knows about one object's runtime resource.
#[derive(Debug, Default)]
struct State {
    runtime_id: Option<String>,
    /// The last inspection found it gone.
    missing: bool,
    /// Whether what the last inspection found carries our uid label: a volume is known by its
    /// name, which someone else may take once ours is removed behind our back.
    found_ours: Option<bool>,
    inspected_at: Option<MonoTime>,
    /// Running containers attached, as an inspection since the last change found them
    /// (networks); `None`: look again.
    attached: Option<Vec<String>>,
    /// Containers drydock made in the object's namespace, as a list by namespace label found
    /// them (networks, while deleting); `None`: list again if need be.
    namespace_containers: Option<Vec<String>>,
    verify: Option<Verify>,
    /// replaceExisting: the stranger holding our name.
    stranger: Option<String>,
    failure: Option<(&'static str, String)>,
    /// What the object waits for, in words, for status.
    waiting: Option<String>,
    removed: bool,
    cleanup_verified: bool,
    /// Listed by uid label before the first create (an earlier life's may have landed).
    label_checked: bool,
    seen_unstarted: bool,
    /// `Some(live)` once an uncached read of the object answered.
    confirmed: Option<bool>,
    /// Its namespace is being deleted (as of the last removal sent).
    namespace_deleting: bool,
    /// When a removal during its namespace's deletion first found it in use.
    in_use_since: Option<MonoTime>,
    /// Left in the runtime, in use, after [`IN_USE_GRACE`] of a namespace deletion.
    abandoned: bool,
    cleanup_began: bool,
}

type Tracked = toolkit::Tracked<Op, State>;

#[derive(Debug)]
pub struct RuntimeResourceController<F: Flavor> {
    monitor_interval: Duration,
    ops: OpTracker<Op, State>,
    flavor: PhantomData<F>,
}

impl<F: Flavor> RuntimeResourceController<F> {
    pub fn new(monitor_interval: Duration) -> Self {
        RuntimeResourceController { monitor_interval, ops: OpTracker::new(), flavor: PhantomData }
    }

    fn start_op(&mut self, ctx: &mut Context<'_>, uid: &Uid, op: Op, request: RuntimeRequest) -> ReconcileResult {
        self.ops.start_runtime(ctx, uid, op, request);
        Ok(Action::done())
    }

    fn uid_filter(uid: &Uid) -> BTreeMap<String, String> {
        BTreeMap::from([(names::LABEL_OWNER_UID.to_string(), uid.0.clone())])
    }

    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let Some(ns) = ctx.cache().namespace(namespace) else {
            return Ok(Action::done());
        };
        if ns.metadata.is_deleting() {
            return Ok(Action::done());
        }
        let shape = F::shape(obj).map_err(ReconcileError)?;
        let status = obj.status::<F::Kind>().map_err(|e| ReconcileError(e.to_string()))?;
        let uid = obj.metadata.uid.clone();
        let t = &mut self.ops.entry(obj).state;
        if t.runtime_id.is_none() {
            t.runtime_id = status.runtime_id.clone();
        }
        if let Some((reason, message)) = t.failure.clone() {
            let next = RuntimeResourceStatus {
                phase: ResourcePhase::Failed,
                reason: Some(reason.into()),
                message: Some(message),
                ..status.clone()
            };
            write_status::<F::Kind>(ctx, obj, &status, next);
            return Ok(Action::done());
        }
        if t.missing && shape.tracked.is_none() && crate::bugs::on(crate::bugs::Bug::RemovedResourceRecreated) {
            // The policy before DCP's: make it again, under the record of the one removed.
            (t.missing, t.runtime_id, t.found_ours, t.inspected_at) = (false, None, None, None);
        }
        if matches!(status.phase, ResourcePhase::Failed | ResourcePhase::Missing) || t.confirmed == Some(false) {
            return Ok(Action::done());
        }
        if let Some(id) = t.runtime_id.clone().or_else(|| shape.tracked.clone()) {
            return self.monitor(ctx, obj, &shape, &status, id);
        }
        self.create(ctx, obj, ns, &shape, &status, &uid)
    }

    /// It exists (or is to be tracked): look at it when the last look is stale, report it.
    fn monitor(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        shape: &Shape,
        status: &RuntimeResourceStatus,
        id: String,
    ) -> ReconcileResult {
        let now = ctx.now().mono;
        let monitor = self.monitor_interval;
        let t = &mut self.ops.entry(obj).state;
        if shape.tracked.is_none() && t.found_ours == Some(false) {
            // Ours was removed and the name taken by another: ours is gone.
            t.missing = true;
        }
        let stale = t.inspected_at.is_none_or(|at| now.since(at) >= monitor);
        if stale && !t.missing {
            return self.start_op(ctx, &obj.metadata.uid, Op::Inspect, F::inspect(id));
        }
        let next = if t.missing {
            let message = match &shape.tracked {
                Some(tracked) if t.runtime_id.is_none() => {
                    format!("there is no {} {tracked} in the runtime to track", F::WHAT)
                }
                _ => format!("the runtime {} was removed outside drydock; it is not recreated", F::WHAT),
            };
            RuntimeResourceStatus {
                phase: ResourcePhase::Missing,
                reason: Some(reasons::REMOVED_EXTERNALLY.into()),
                message: Some(message),
                ..status.clone()
            }
        } else {
            RuntimeResourceStatus {
                phase: ResourcePhase::Ready,
                runtime_id: t.runtime_id.clone(),
                reason: None,
                message: None,
            }
        };
        let missing = next.phase == ResourcePhase::Missing;
        write_status::<F::Kind>(ctx, obj, status, next);
        Ok(if missing { Action::done() } else { Action::requeue(monitor) })
    }

    /// None is known: verify what an earlier or uncertain create did, resolve or replace a
    /// stranger, or create.
    fn create(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        ns: &Object,
        shape: &Shape,
        status: &RuntimeResourceStatus,
        uid: &Uid,
    ) -> ReconcileResult {
        let t = &mut self.ops.entry(obj).state;
        if !(t.seen_unstarted || ctx.saw_created(uid) || t.label_checked) {
            if let Some(settled) = ctx.earlier_lives_pending() {
                return Ok(Action::retry_after(settled - ctx.now().mono));
            }
            t.label_checked = true;
            t.verify.get_or_insert(Verify::AfterUncertain);
        }
        if let Some(waiting) = t.waiting.clone() {
            let next =
                RuntimeResourceStatus { phase: ResourcePhase::Pending, message: Some(waiting), ..status.clone() };
            write_status::<F::Kind>(ctx, obj, status, next);
        }
        let t = &mut self.ops.entry(obj).state;
        match (t.verify, t.stranger.clone()) {
            (_, Some(stranger)) => self.start_op(ctx, uid, Op::RemoveStranger, F::remove(stranger)),
            (Some(Verify::Holder), None) => self.start_op(ctx, uid, Op::ResolveName, F::inspect(shape.name.clone())),
            (Some(_), None) => self.start_op(ctx, uid, Op::Verify, F::list(Self::uid_filter(uid))),
            (None, None) if t.confirmed.is_none() => {
                self.ops.start_store(ctx, uid, Op::ConfirmSelf, StoreRequest::Get { key: obj.key() });
                Ok(Action::done())
            }
            (None, None) => {
                let request =
                    F::create(shape.name.clone(), super::system_labels(ctx, obj, ns, &shape.labels, shape.retain));
                self.start_op(ctx, uid, Op::Create, request)
            }
        }
    }

    /// Remove ours (networks: after disconnecting what drydock attached), then make sure nothing
    /// carries our label any more.
    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let uid = obj.metadata.uid.clone();
        let shape = F::shape(obj).map_err(ReconcileError)?;
        if shape.tracked.is_some() || shape.retain {
            return Ok(Cleanup::Done);
        }
        let status = obj.status::<F::Kind>().unwrap_or_default();
        let namespace_deleting = obj
            .metadata
            .namespace
            .as_deref()
            .and_then(|ns| ctx.cache().namespace(ns))
            .is_none_or(|ns| ns.metadata.is_deleting());
        let now = ctx.now().mono;
        let drydock_attached = attached_by_drydock(ctx.cache(), obj);
        let drydock_mounts = if F::USERS == Users::Mounted { mounted_by_drydock(ctx.cache(), obj) } else { Vec::new() };
        let t = &mut self.ops.entry(obj).state;
        if t.abandoned {
            let message = format!(
                "abandoned in the runtime: still in use {}s after its namespace began deleting",
                IN_USE_GRACE.as_secs()
            );
            let next = RuntimeResourceStatus { message: Some(message), ..status.clone() };
            write_status::<F::Kind>(ctx, obj, &status, next);
            return Ok(Cleanup::Done);
        }
        if !t.removed
            && let Some(id) = t.runtime_id.clone().or(status.runtime_id.clone())
        {
            // Look at it first: is it still ours, and (a network) who is attached?
            let Some(attached) = &t.attached else {
                return self.start_op(ctx, &uid, Op::Inspect, F::inspect(id)).map(Cleanup::Waiting);
            };
            if t.found_ours == Some(false) {
                // Ours is gone, its name taken by another since: nothing of ours to remove.
                t.removed = true;
                return self.cleanup(ctx, obj);
            }
            if F::USERS == Users::Attached {
                // Others attached may be drydock's too: containers whose objects are gone but
                // which were kept (persistent ones). A list by namespace label tells.
                let unknown = attached.iter().any(|c| !drydock_attached.contains(c));
                if unknown
                    && t.namespace_containers.is_none()
                    && !crate::bugs::on(crate::bugs::Bug::RetainedContainersKeepNetwork)
                {
                    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default().to_string();
                    let labels = BTreeMap::from([(names::LABEL_NAMESPACE.to_string(), namespace)]);
                    let list = RuntimeRequest::ListContainers { labels };
                    return self.start_op(ctx, &uid, Op::ListUsers, list).map(Cleanup::Waiting);
                }
                let made_here = t.namespace_containers.as_deref().unwrap_or_default();
                // Disconnect ours one by one.
                if let Some(ours) =
                    attached.iter().find(|c| drydock_attached.contains(c) || made_here.contains(c)).cloned()
                {
                    let disconnect = RuntimeRequest::DisconnectNetwork { network: id, container: ours };
                    return self.start_op(ctx, &uid, Op::Disconnect, disconnect).map(Cleanup::Waiting);
                }
            }
            if !drydock_mounts.is_empty() {
                // Drydock's own users go first (their deletion wakes us): no runtime request
                // meanwhile. Then look again: ours may have been removed and its name taken
                // while we waited (a volume is known by its name).
                t.attached = None;
                let message = format!("waiting for the containers that mount it: {}", drydock_mounts.join(", "));
                let next = RuntimeResourceStatus { message: Some(message), ..status.clone() };
                write_status::<F::Kind>(ctx, obj, &status, next);
                return Ok(Cleanup::Waiting(Action::done()));
            }
            let t = &mut self.ops.entry(obj).state;
            t.namespace_deleting = namespace_deleting;
            if let Some(waiting) = t.waiting.clone() {
                let next = RuntimeResourceStatus { message: Some(waiting), ..status.clone() };
                write_status::<F::Kind>(ctx, obj, &status, next);
            }
            return self.start_op(ctx, &uid, Op::Remove, F::remove(id)).map(Cleanup::Waiting);
        }
        let t = &mut self.ops.entry(obj).state;
        if !t.cleanup_verified {
            if !(t.seen_unstarted || ctx.saw_created(&uid))
                && let Some(settled) = ctx.earlier_lives_pending()
            {
                return Ok(Cleanup::Waiting(Action::requeue(settled - now)));
            }
            let check = F::list(Self::uid_filter(&uid));
            return self.start_op(ctx, &uid, Op::CleanupCheck, check).map(Cleanup::Waiting);
        }
        Ok(Cleanup::Done)
    }
}

/// What a runtime reply to `op` tells about the object's runtime resource.
fn handle_result<F: Flavor>(tracked: &mut Tracked, now: Now, op: Op, result: &RuntimeResult) {
    use RuntimeError as E;
    let uid = tracked.uid().clone();
    let ours = |found: &Found| found.labels.get(names::LABEL_OWNER_UID) == Some(&uid.0);
    let (t, retry) = (&mut tracked.state, &mut tracked.retry);
    match (op, result) {
        (Op::Create, Ok(reply)) => match F::found(reply) {
            Some(found) if !F::CREATE_MAY_ANSWER_A_STRANGER || ours(&found) => {
                t.runtime_id = Some(found.id);
                t.verify = None;
                t.waiting = None;
            }
            // The name is taken: the runtime answered the existing one.
            Some(found) => t.found_stranger(found.id),
            None => t.verify = Some(Verify::AfterUncertain),
        },
        (Op::Create, Err(E::Invalid(message) | E::NotFound(message))) => {
            t.failure =
                Some((reasons::CREATE_REFUSED, format!("the runtime refused to create the {}: {message}", F::WHAT)));
        }
        (Op::Create, Err(E::Conflict(_))) => t.verify = Some(Verify::AfterConflict),
        (Op::Create, Err(e)) => {
            t.verify = Some(Verify::AfterUncertain);
            t.waiting = Some(format!("creating the {} failed, retrying: {e}", F::WHAT));
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            return;
        }
        (Op::Verify, Ok(reply)) => {
            let listed = F::listed(reply);
            if let Some(found) = listed.into_iter().find(|f| ours(f)) {
                t.runtime_id = Some(found.id);
                t.verify = None;
            } else if t.verify == Some(Verify::AfterConflict) {
                t.verify = Some(Verify::Holder);
            } else {
                t.verify = None;
            }
        }
        (Op::ResolveName, Ok(reply)) => match F::found(reply) {
            Some(found) if ours(&found) => {
                t.runtime_id = Some(found.id);
                t.verify = None;
            }
            Some(found) => t.found_stranger(found.id),
            None => t.verify = None,
        },
        // Freed meanwhile: create again.
        (Op::ResolveName, Err(E::NotFound(_))) => t.verify = None,
        (Op::RemoveStranger, Ok(_) | Err(E::NotFound(_))) => {
            t.stranger = None;
            t.verify = None;
            t.waiting = None;
        }
        (Op::RemoveStranger, Err(E::Invalid(message))) => {
            t.failure =
                Some((reasons::NAME_TAKEN, format!("the {} holding our name cannot be removed: {message}", F::WHAT)));
        }
        (Op::Inspect, Ok(reply)) => {
            if let Some(found) = F::found(reply) {
                t.found_ours = Some(ours(&found));
                t.runtime_id = Some(found.id);
                t.attached = Some(found.attached);
            }
            t.inspected_at = Some(now.mono);
        }
        (Op::Inspect, Err(E::NotFound(_))) => {
            t.missing = true;
            t.removed = true;
            t.attached = Some(Vec::new());
            t.inspected_at = Some(now.mono);
        }
        (Op::Disconnect, Ok(_) | Err(E::NotFound(_))) => t.attached = None,
        (Op::ListUsers, Ok(RuntimeReply::Containers(listed))) => {
            // Only those drydock created (the namespace label alone a caller could set).
            let made = listed.iter().filter(|c| c.labels.contains_key(names::LABEL_CREATOR));
            t.namespace_containers = Some(made.map(|c| c.id.clone()).collect());
        }
        (Op::Remove, Ok(_) | Err(E::NotFound(_))) => {
            t.removed = true;
            t.waiting = None;
        }
        (Op::Remove, Err(E::Conflict(message))) => {
            // Judged on the answer: in use now, for the whole grace of its namespace's deletion
            // (a volume; a network's users are waited for).
            if t.namespace_deleting {
                let since = *t.in_use_since.get_or_insert(now.mono);
                if F::USERS == Users::Mounted && now.mono >= since + IN_USE_GRACE {
                    t.abandoned = true;
                    retry.succeed(op);
                    return;
                }
            }
            // Look again at who is attached before the next try.
            t.attached = None;
            t.namespace_containers = None;
            t.waiting = Some(format!("waiting for the {} to be unused: {message}", F::WHAT));
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            return;
        }
        (Op::Remove, Err(e)) => {
            // It may be gone all the same (a lost reply), and its name taken since (a volume is
            // known by its name): look at it again before the next try.
            if !crate::bugs::on(crate::bugs::Bug::RemoveRetriedWithoutLooking) {
                t.attached = None;
            }
            t.waiting = Some(format!("removing the {} failed, retrying: {e}", F::WHAT));
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            return;
        }
        (Op::CleanupCheck, Ok(reply)) => {
            match F::listed(reply).into_iter().find(|f| ours(f)) {
                // One more of ours (an uncertain create that landed): remove it too.
                Some(found) => {
                    t.runtime_id = Some(found.id);
                    t.removed = false;
                }
                None => t.cleanup_verified = true,
            }
        }
        (_, Err(e)) => {
            t.waiting = Some(format!("the runtime failed, retrying: {e}"));
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            return;
        }
        (_, Ok(_)) => {}
    }
    retry.succeed(op);
}

impl State {
    /// Our name is held by `id`, not ours: the next reconcile replaces it if the spec says so,
    /// else fails.
    fn found_stranger(&mut self, id: String) {
        self.verify = None;
        self.stranger = Some(id);
    }
}

impl<F: Flavor> Controller for RuntimeResourceController<F> {
    fn name(&self) -> &str {
        F::CONTROLLER
    }

    fn watches(&self) -> Vec<Watch> {
        // A container of ours changing (leaving, going) may unblock the removal of a network it
        // is attached to or a volume it mounts.
        // Read from the stored JSON rather than the typed spec: this runs for every event of
        // every physical container, and a typed decode is most of its cost.
        let uses = Watch::custom(PhysicalContainer::KIND, |pc, cache| {
            let ns = pc.metadata.namespace.as_deref().unwrap_or_default();
            let (list, field) = match F::USERS {
                Users::Attached => ("networks", "name"),
                Users::Mounted => ("mounts", "source"),
            };
            let items = pc.spec.get(list).and_then(serde_json::Value::as_array);
            let names = items.into_iter().flatten().filter_map(|item| item.get(field)?.as_str());
            names
                .filter(|name| F::USERS == Users::Attached || !name.starts_with('/'))
                .map(|name| ObjectKey::namespaced(F::Kind::KIND, ns, name))
                .filter(|key| cache.get(key).is_some_and(|o| o.metadata.is_deleting()))
                .collect()
        });
        vec![Watch::own(F::Kind::KIND), Watch::namespace_children(F::Kind::KIND), uses]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        let tracked = self.ops.entry(obj);
        if obj.metadata.is_deleting() && !std::mem::replace(&mut tracked.state.cleanup_began, true) {
            tracked.retry.clear_wait();
            // Who is attached is looked at afresh once the delete begins.
            tracked.state.attached = None;
        }
        if let Some(wait) = tracked.blocked(ctx.now().mono) {
            return Ok(wait);
        }
        tracked.state.seen_unstarted |= RUNTIME_FINALIZER.needs_adding(obj);
        // A stranger found holding our name: replace it only if the spec says so.
        if tracked.state.stranger.is_some() && !obj.metadata.is_deleting() {
            let replace = F::shape(obj).is_ok_and(|s| s.replace_existing);
            if !replace {
                let holder = tracked.state.stranger.take().unwrap_or_default();
                let name = F::shape(obj).map(|s| s.name).unwrap_or_default();
                tracked.state.failure = Some((
                    reasons::NAME_TAKEN,
                    format!(
                        "the {} name {name} is held by {} {holder}, which drydock did not create; set spec.replaceExisting to replace it",
                        F::WHAT,
                        F::WHAT
                    ),
                ));
            }
        }
        RUNTIME_FINALIZER.reconcile(ctx, obj, self, Self::apply, Self::cleanup)
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        handle_result::<F>(tracked, now, done.op, result);
    }

    fn on_store_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        if done.op != Op::ConfirmSelf {
            return;
        }
        let uid = tracked.uid().clone();
        match result {
            Ok(StoreReply::Object(found)) => {
                tracked.state.confirmed = Some(found.metadata.uid == uid && !found.metadata.is_deleting());
                tracked.retry.succeed(done.op);
            }
            Err(e) if e.is_not_found() => {
                tracked.state.confirmed = Some(false);
                tracked.retry.succeed(done.op);
            }
            _ => {
                let _: Retry = tracked.retry.fail(done.op, now.mono, &RETRY);
            }
        }
    }
}
