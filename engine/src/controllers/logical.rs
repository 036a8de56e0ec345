//! Logical containers: session, persistent and existing lifecycles over physical containers.
//!
//! - `session`: an owned `PhysicalContainer` (and an owned `ContainerImage` for an inline image),
//!   removed with the logical container or its namespace.
//! - `persistent`: under a startup lease keyed by the runtime container name, inspect the runtime
//!   by name: a drydock-created container whose lifecycle-key label matches is reused (tracked by
//!   id: zero creates), one whose key differs is replaced (exactly one remove, one create, through
//!   `replaceExisting`), one drydock did not create is adopted. The runtime container is retained
//!   on delete. The owning workload is recorded in status before the startup lease is released.
//! - `existing`: never creates; `NotFound` until a container of that name appears, then adopted.
//!
//! *Guarantees*
//! - Owned resources are created with both their own cleanup finalizer and the logical hold, in
//!   the create itself. The hold is released only while this logical container is being deleted
//!   (or, once it is gone, by the garbage collector: a child created from a stale view of a logical
//!   container already gone would otherwise keep its hold for ever).
//! - Losing the backing (its identity or its hold) is terminal: never a silent recreate.
//! - A backing create whose outcome is unknown is verified with an uncached read of owner and hold
//!   before anything else happens.
//! - Nothing is made for a logical container (no backing, no image, no startup lease) before an
//!   uncached read in this life found it in the store and not being deleted: kinds are not
//!   ordered among themselves, so the cache may show one already gone whose namespace was
//!   deleted and created again, and children made for it would have no owner to clean them up.
//!   (A delete that lands between that read and the create is the ordinary race: the logical
//!   container's own cleanup lists and removes what it owns.)

use crate::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalContainerStatus, LogicalMode, LogicalPhase};
use crate::api::{
    Condition, ConditionStatus, ContainerImage, ContainerImageSpec, ContainerPhase, Object, ObjectKey, ObjectMeta,
    OwnerReference, PhysicalContainer, PhysicalContainerSpec, PullPolicy, Resource, Uid, names, reasons,
};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::lease::{Acquire, LeaseClient, lease_name};
use crate::lifecycle_key::lifecycle_key;
use crate::runtime::{ContainerState, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use crate::store::{DeleteOptions, StoreReply, StoreRequest, StoreResult};
use crate::time::Now;
use crate::toolkit::{Cleanup, Finalizer, OpTracker, RetryPolicy, write_status};
use std::time::Duration;

/// How long a persistent startup lease lasts without renewal.
pub const STARTUP_LEASE_DURATION: Duration = Duration::from_secs(30);

/// The store puts it on every new logical container; it goes once the owned children are gone.
/// Cleanup also runs without it, to let this engine's startup lease go.
const LOGICAL_FINALIZER: Finalizer<'static> =
    Finalizer::new(names::FINALIZER_LOGICAL).added_by_store().always_clean_up();
/// How long to wait before looking again at a container found being removed: 1 s, 2 s, ... up
/// to 30 s while it stays `removing`.
const REMOVING_RECHECK: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(500), Duration::from_secs(30));
/// After a failed inspection or verification, per operation kind: look again in 1 s, 2 s, ...
/// up to 30 s, for ever (both are reads: retrying them is always safe).
const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(500), Duration::from_secs(30));
/// After a cleanup list showed owned children the cache does not: list again in 500 ms, 1 s, ...
/// up to 5 s.
const RELIST: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(250), Duration::from_secs(5));

/// What an inspection of the runtime container name found.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Found {
    Absent,
    /// Created by drydock, with this lifecycle key label.
    Ours {
        id: String,
        key: Option<String>,
    },
    /// Not created by drydock.
    Stranger {
        id: String,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Op {
    InspectName,
    CreateBacking,
    VerifyBacking,
    CleanupCheck,
    /// An uncached read of the logical container itself, before anything is made for it.
    ConfirmSelf,
}

/// What this engine knows about one logical container.
#[derive(Debug, Default)]
struct Logical {
    found: Option<Found>,
    /// The backing's uid, learned from its create or its verification.
    backing: Option<Uid>,
    /// Terminal: the reason (one of [`reasons`]) and the message.
    failure: Option<(&'static str, String)>,
    /// The object was seen being deleted (its cleanup began).
    cleanup_began: bool,
    /// Inspections in a row that found the runtime container being removed.
    removing_checks: u32,
    /// The last cleanup list found no owned child: the cleanup may end.
    cleanup_clear: bool,
    /// Owned children the last cleanup list found, not yet acted on. The cache can lag behind a
    /// list (its kind's watch is late), so the cleanup acts on what the list shows and lists again
    /// after [`RELIST`], rather than list in a loop until the watch catches up.
    listed_children: Vec<std::sync::Arc<Object>>,
    /// A backing create failed or its outcome is unknown: read the store before anything else.
    verify: bool,
    /// The spec of the backing we last asked to create, to recognise it when verifying.
    expected_spec: Option<std::sync::Arc<serde_json::Value>>,
    /// An uncached read found this logical container in the store, not being deleted.
    confirmed: bool,
    /// An uncached read found it gone or being deleted while the cache shows it live: the
    /// cache is behind (its kind's watch lags), and catching up ends this.
    stale: bool,
    /// The lifecycle key of the spec at this generation: a hash over the spec, asked for on
    /// every reconcile, and the spec changes only with the generation.
    lifecycle_key: Option<(u64, String)>,
}

#[derive(Debug)]
pub struct LogicalContainerController {
    default_workload: Option<String>,
    ops: OpTracker<Op, Logical>,
    leases: LeaseClient,
}

/// The name of the lease that serializes the startup of persistent containers named
/// `runtime_name` (its holder records the workload before letting go).
pub fn startup_lease_name(runtime_name: &str) -> String {
    lease_name("container", runtime_name)
}

/// The name of the `PhysicalContainer` a logical container named `name` owns.
pub fn backing_name(name: &str) -> String {
    format!("{name}-backing")
}

/// The name of the `ContainerImage` a logical container named `name` owns for an inline image.
pub fn image_name(name: &str) -> String {
    format!("{name}-image")
}

fn owner_ref(obj: &Object) -> OwnerReference {
    OwnerReference { block_owner_deletion: true, ..obj.owner_reference(true) }
}

fn owned_by(child: &Object, owner: &Uid) -> bool {
    child.metadata.owner_references.iter().any(|r| &r.uid == owner)
}

impl LogicalContainerController {
    /// `default_workload`: the workload recorded for persistent containers when the namespace has
    /// no `drydock.dev/workload` annotation.
    pub fn new(default_workload: Option<String>) -> Self {
        LogicalContainerController { default_workload, ops: OpTracker::new(), leases: LeaseClient::default() }
    }

    fn lease_for(spec: &LogicalContainerSpec, obj: &Object) -> (String, String) {
        let runtime_name = spec.runtime_name(obj.metadata.namespace.as_deref().unwrap_or_default(), &obj.metadata.name);
        (startup_lease_name(&runtime_name), runtime_name)
    }

    /// The backing spec for the mode and what the runtime has.
    fn backing_spec(
        obj: &Object,
        spec: &LogicalContainerSpec,
        found: Option<&Found>,
        key: &str,
    ) -> PhysicalContainerSpec {
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let mut labels = spec.labels.clone();
        labels.insert(names::LABEL_LOGICAL_UID.into(), obj.metadata.uid.0.clone());
        labels.insert(names::LABEL_LIFECYCLE_KEY.into(), key.to_string());
        let env = spec.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect();
        let mut command = spec.command.clone();
        command.extend(spec.args.iter().cloned());
        let (image, image_ref) = match (&spec.image, &spec.image_ref) {
            (Some(_), _) => (None, Some(image_name(&obj.metadata.name))),
            (None, Some(reference)) => (None, Some(reference.clone())),
            (None, None) => (None, None),
        };
        let persistent = spec.mode == LogicalMode::Persistent;
        match found {
            Some(Found::Stranger { id }) => {
                PhysicalContainerSpec { container_id: Some(id.clone()), stop: spec.stop, ..Default::default() }
            }
            Some(Found::Ours { id, key: Some(k) }) if k == key => {
                PhysicalContainerSpec { container_id: Some(id.clone()), stop: spec.stop, ..Default::default() }
            }
            _ if spec.mode == LogicalMode::Existing => PhysicalContainerSpec::default(),
            other => PhysicalContainerSpec {
                image,
                image_ref,
                container_name: Some(spec.runtime_name(namespace, &obj.metadata.name)),
                command,
                env,
                labels,
                stop: spec.stop,
                retain: persistent,
                ports: spec.ports.clone(),
                mounts: spec.mounts.clone(),
                // Networks stay out of the lifecycle key, as aliases do: they are passed down,
                // never a reason to replace a persistent container.
                networks: spec.networks.clone(),
                files: spec.files.clone(),
                // A drydock container with another key is replaced; `replace` asks for it always.
                replace_existing: spec.replace || matches!(other, Some(Found::Ours { .. })),
                ..Default::default()
            },
        }
    }

    fn create_backing(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &LogicalContainerSpec,
        found: Option<&Found>,
        key: &str,
    ) {
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let hold = |meta: &mut ObjectMeta, finalizer: &str| {
            meta.owner_references.push(owner_ref(obj));
            meta.finalizers = vec![finalizer.to_string(), names::FINALIZER_HOLD.to_string()];
        };
        let backing = Self::backing_spec(obj, spec, found, key);
        if backing.container_id.is_none()
            && let Some(image) = &spec.image
        {
            let mut meta = ObjectMeta::named(Some(namespace), &image_name(&obj.metadata.name));
            hold(&mut meta, names::FINALIZER_IMAGE);
            let image_spec =
                ContainerImageSpec { image: image.clone(), pull_policy: PullPolicy::Missing, ..Default::default() };
            // If it exists already (a retry), the AlreadyExists is harmless: the backing refers to it by name.
            ctx.store(StoreRequest::Create { object: Object::from_spec::<ContainerImage>(meta, &image_spec) });
        }
        let mut meta = ObjectMeta::named(Some(namespace), &backing_name(&obj.metadata.name));
        hold(&mut meta, names::FINALIZER_RUNTIME);
        let object = Object::from_spec::<PhysicalContainer>(meta, &backing);
        if let Some(t) = self.ops.get_mut(&obj.metadata.uid) {
            t.state.expected_spec = Some(object.spec.clone());
        }
        self.ops.start_store(ctx, &obj.metadata.uid, Op::CreateBacking, StoreRequest::Create { object });
    }

    fn workload(&self, ctx: &Context<'_>, obj: &Object) -> String {
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        ctx.cache()
            .namespace(namespace)
            .and_then(|ns| ns.metadata.annotations.get(names::ANNOTATION_WORKLOAD).cloned())
            .or_else(|| self.default_workload.clone())
            .unwrap_or_default()
    }

    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let uid = obj.metadata.uid.clone();
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        match ctx.cache().namespace(&namespace) {
            // Not seen yet: its arrival wakes us (`Watch::namespace_children`).
            None => return Ok(Action::done()),
            Some(ns) if ns.metadata.is_deleting() => return Ok(Action::done()),
            Some(_) => {}
        }
        let spec = ctx.cache().spec::<LogicalContainer>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let status = ctx.cache().status::<LogicalContainer>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let backing_key = ObjectKey::namespaced(PhysicalContainer::KIND, &namespace, &backing_name(&obj.metadata.name));
        let backing = ctx.get(&backing_key).cloned();
        let t = &mut self.ops.entry(obj).state;
        let generation = obj.metadata.generation;
        let key = match &t.lifecycle_key {
            Some((at, key)) if *at == generation => key.clone(),
            _ => {
                let key = lifecycle_key(&spec);
                t.lifecycle_key = Some((generation, key.clone()));
                key
            }
        };
        if t.backing.is_none() {
            t.backing.clone_from(&status.backing_uid);
        }
        if let Some((reason, message)) = t.failure.clone() {
            let next = LogicalContainerStatus {
                phase: LogicalPhase::Failed,
                reason: Some(reason.into()),
                message: Some(message),
                ..(*status).clone()
            };
            write_status::<LogicalContainer>(ctx, obj, &status, next);
            return Ok(Action::done());
        }
        if let Some(expected) = t.backing.clone() {
            let lost = match &backing {
                None => Some("the backing PhysicalContainer disappeared".to_string()),
                Some(b) if b.metadata.uid != expected => {
                    Some("the backing PhysicalContainer was replaced by another object".to_string())
                }
                Some(b) if !b.metadata.has_finalizer(names::FINALIZER_HOLD) => {
                    Some("the backing PhysicalContainer lost its hold".to_string())
                }
                Some(_) => None,
            };
            if let Some(lost) = lost {
                t.failure = Some((reasons::BACKING_LOST, format!("{lost}; it is not recreated")));
                return self.apply(ctx, obj);
            }
            return self.project(ctx, obj, &spec, &status, &key, backing.as_deref());
        }
        // No backing yet.
        if t.verify {
            self.ops.start_store(ctx, &uid, Op::VerifyBacking, StoreRequest::Get { key: backing_key });
            return Ok(Action::done());
        }
        if let Some(b) = &backing {
            // We created it but did not get to record it: adopt it if it is ours and held.
            let ours = owned_by(b, &uid) && b.metadata.has_finalizer(names::FINALIZER_HOLD);
            return if ours || crate::bugs::on(crate::bugs::Bug::BackingAdoptedByName) {
                t.backing = Some(b.metadata.uid.clone());
                let next = LogicalContainerStatus {
                    backing_uid: Some(b.metadata.uid.clone()),
                    lifecycle_key: Some(key),
                    ..(*status).clone()
                };
                write_status::<LogicalContainer>(ctx, obj, &status, next);
                Ok(Action::done())
            } else {
                t.failure = Some((reasons::BACKING_NOT_OURS, format!("{backing_key} exists and is not ours")));
                self.apply(ctx, obj)
            };
        }
        if t.stale {
            return Ok(Action::done());
        }
        if spec.mode != LogicalMode::Existing && !t.confirmed {
            // Before making anything for it: the cache may show a logical container already gone
            // (its kind's watch lagging behind its deletion while its namespace's has moved on to
            // a namespace re-created under that name), whose children nobody would clean up.
            self.ops.start_store(ctx, &uid, Op::ConfirmSelf, StoreRequest::Get { key: obj.key() });
            return Ok(Action::done());
        }
        if spec.mode == LogicalMode::Session {
            self.create_backing(ctx, obj, &spec, None, &key);
            return Ok(Action::done());
        }
        if spec.mode == LogicalMode::Persistent {
            let (lease, runtime_name) = Self::lease_for(&spec, obj);
            let holder = crate::lease::holder(ctx.identity(), &uid);
            match self.leases.acquire(ctx, &lease, &runtime_name, &holder, STARTUP_LEASE_DURATION) {
                Acquire::Held => {}
                Acquire::Pending => return Ok(Action::requeue(Duration::from_millis(1))),
                Acquire::Contended { .. } => {
                    let next = LogicalContainerStatus {
                        message: Some(format!("waiting for the startup lease of {runtime_name}")),
                        ..(*status).clone()
                    };
                    write_status::<LogicalContainer>(ctx, obj, &status, next);
                    return Ok(Action::requeue(Duration::from_millis(500)));
                }
            }
        }
        let t = &mut self.ops.entry(obj).state;
        match t.found.clone() {
            None => {
                let runtime_name = spec.runtime_name(&namespace, &obj.metadata.name);
                self.ops.start_runtime(
                    ctx,
                    &uid,
                    Op::InspectName,
                    RuntimeRequest::InspectContainer { id: runtime_name },
                );
                Ok(Action::done())
            }
            Some(Found::Absent) if spec.mode == LogicalMode::Existing => {
                t.found = None;
                let next = LogicalContainerStatus {
                    phase: LogicalPhase::NotFound,
                    message: Some("no container of that name yet".into()),
                    ..(*status).clone()
                };
                write_status::<LogicalContainer>(ctx, obj, &status, next);
                Ok(Action::requeue(Duration::from_secs(2)))
            }
            Some(found) => {
                self.create_backing(ctx, obj, &spec, Some(&found), &key);
                Ok(Action::done())
            }
        }
    }

    /// Status from the backing; for persistent, record the workload, then release the lease.
    fn project(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &LogicalContainerSpec,
        status: &LogicalContainerStatus,
        key: &str,
        backing: Option<&Object>,
    ) -> ReconcileResult {
        let Some(backing) = backing else { return Ok(Action::done()) };
        // `stop` is one-way on both: pass it down.
        if spec.stop
            && !backing.metadata.is_deleting()
            && ctx.cache().spec::<PhysicalContainer>(backing).is_ok_and(|s| !s.stop)
        {
            let mut next = backing.clone();
            next.spec_mut()["stop"] = serde_json::Value::Bool(true);
            ctx.store(StoreRequest::Update { object: next });
            return Ok(Action::done());
        }
        let pc = ctx.cache().status::<PhysicalContainer>(backing).unwrap_or_default();
        // A backing that failed for good (its own image failing included) passes its reason and
        // the runtime's message up: the logical container is as final as its backing.
        let (phase, reason, message) = match pc.phase {
            ContainerPhase::Pending => (LogicalPhase::Starting, None, pc.message.clone()),
            ContainerPhase::Running => (LogicalPhase::Running, None, None),
            ContainerPhase::Exited => (LogicalPhase::Exited, None, None),
            ContainerPhase::Missing => (
                LogicalPhase::Failed,
                Some(reasons::REMOVED_EXTERNALLY.to_string()),
                Some("the runtime container was removed outside drydock".into()),
            ),
            ContainerPhase::Failed => (LogicalPhase::Failed, pc.reason.clone(), pc.message.clone()),
        };
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let startup_output = match &spec.image {
            Some(_) => ctx
                .get(&ObjectKey::namespaced(ContainerImage::KIND, namespace, &image_name(&obj.metadata.name)))
                .and_then(|i| i.status::<ContainerImage>().ok())
                .map(|s| s.progress)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let persistent = spec.mode == LogicalMode::Persistent;
        let workload = match (&status.workload, persistent && pc.runtime_id.is_some()) {
            (Some(w), _) => Some(w.clone()),
            (None, true) => Some(self.workload(ctx, obj)),
            (None, false) => None,
        };
        let next = LogicalContainerStatus {
            phase,
            reason,
            message,
            runtime_id: pc.runtime_id.clone(),
            lifecycle_key: Some(key.to_string()),
            backing_uid: Some(backing.metadata.uid.clone()),
            workload,
            startup_output,
            conditions: ready_condition(status, phase, ctx.now().wall),
        };
        write_status::<LogicalContainer>(ctx, obj, status, next);
        // Release the startup lease only once the workload is recorded (status as stored says so),
        // or for modes that never took it.
        if persistent && status.workload.is_some() {
            let (lease, _) = Self::lease_for(spec, obj);
            let holder = crate::lease::holder(ctx.identity(), &obj.metadata.uid);
            if self.leases.holds(&lease, &holder, ctx.now().wall) {
                self.leases.release(ctx, &lease, &holder);
            }
        }
        Ok(Action::done())
    }

    /// Delete the owned children and release their holds; done once an uncached list confirms
    /// that none is left.
    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let uid = obj.metadata.uid.clone();
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        if let Ok(spec) = ctx.cache().spec::<LogicalContainer>(obj) {
            let (lease, _) = Self::lease_for(&spec, obj);
            let holder = crate::lease::holder(ctx.identity(), &uid);
            self.leases.release(ctx, &lease, &holder);
        }
        let keys = [
            ObjectKey::namespaced(PhysicalContainer::KIND, &namespace, &backing_name(&obj.metadata.name)),
            ObjectKey::namespaced(ContainerImage::KIND, &namespace, &image_name(&obj.metadata.name)),
        ];
        let mut children: Vec<std::sync::Arc<Object>> = keys.iter().filter_map(|k| ctx.get(k).cloned()).collect();
        let cached = children.len();
        let listed = std::mem::take(&mut self.ops.entry(obj).state.listed_children);
        if !crate::bugs::on(crate::bugs::Bug::LogicalCleanupRelistsAtOnce) {
            children.extend(listed.into_iter().filter(|l| ctx.get(&l.key()).is_none()));
        }
        let (mut waiting, mut listed_only) = (false, false);
        for (i, child) in children.iter().enumerate() {
            if !owned_by(child, &uid) {
                continue;
            }
            waiting = true;
            listed_only |= i >= cached;
            Self::let_go_of_child(ctx, child);
        }
        let tracked = self.ops.entry(obj);
        if waiting {
            tracked.state.cleanup_clear = false;
            if listed_only {
                // The cache has not caught up with the list: look again after a while.
                let _ = tracked.retry.fail(Op::CleanupCheck, ctx.now().mono, &RELIST);
                return Ok(Cleanup::Waiting(tracked.retry.retry_action(ctx.now().mono).unwrap_or_else(Action::done)));
            }
            return Ok(Cleanup::Waiting(Action::done()));
        }
        if !tracked.state.cleanup_clear {
            // The cache shows nothing: confirm with the store before letting go.
            let list = StoreRequest::List { kind: None, namespace: Some(namespace.to_string()) };
            self.ops.start_store(ctx, &uid, Op::CleanupCheck, list);
            return Ok(Cleanup::Waiting(Action::done()));
        }
        Ok(Cleanup::Done)
    }

    /// Delete an owned child, or once its own cleanup is done, release our hold on it.
    fn let_go_of_child(ctx: &mut Context<'_>, child: &Object) {
        if !child.metadata.is_deleting() {
            let options = DeleteOptions { precondition_uid: Some(child.metadata.uid.clone()), ..Default::default() };
            ctx.store(StoreRequest::Delete { key: child.key(), options });
        } else if child.metadata.finalizers.iter().all(|f| f == names::FINALIZER_HOLD) {
            let mut next = child.clone();
            next.metadata.finalizers.retain(|f| f != names::FINALIZER_HOLD);
            ctx.store(StoreRequest::Update { object: next });
        }
    }
}

/// `Ready`: True while Running, with the phase as reason.
fn ready_condition(status: &LogicalContainerStatus, phase: LogicalPhase, now: crate::time::WallTime) -> Vec<Condition> {
    let mut conditions = status.conditions.clone();
    let ready = if phase == LogicalPhase::Running { ConditionStatus::True } else { ConditionStatus::False };
    Condition::new("Ready", ready, &format!("{phase:?}"), "").set(&mut conditions, now);
    conditions
}

impl Controller for LogicalContainerController {
    fn name(&self) -> &str {
        "logical-container"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(LogicalContainer::KIND),
            Watch::owners(PhysicalContainer::KIND, LogicalContainer::KIND, true),
            Watch::owners(ContainerImage::KIND, LogicalContainer::KIND, true),
            Watch::namespace_children(LogicalContainer::KIND),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        let tracked = self.ops.entry(obj);
        if obj.metadata.is_deleting() && !std::mem::replace(&mut tracked.state.cleanup_began, true) {
            // A delete makes a failed inspection or verification moot: no waiting out its backoff.
            tracked.retry.clear_wait();
        }
        if let Some(wait) = tracked.blocked(ctx.now().mono) {
            return Ok(wait);
        }
        LOGICAL_FINALIZER.reconcile(ctx, obj, self, Self::apply, Self::cleanup)
    }

    fn on_store_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        if self.leases.on_store_result(now, op, result) {
            return;
        }
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        let (uid, t) = (tracked.uid().clone(), &mut tracked.state);
        match (done.op, result) {
            (Op::CreateBacking, Ok(StoreReply::Object(created))) => t.backing = Some(created.metadata.uid.clone()),
            // Unknown outcome or a name collision: an uncached read decides, next reconcile.
            (Op::CreateBacking, Err(_)) => t.verify = true,
            (Op::VerifyBacking, Ok(StoreReply::Object(found))) => {
                tracked.retry.succeed(Op::VerifyBacking);
                t.verify = false;
                let same_spec = t.expected_spec.as_ref().is_none_or(|spec| *spec == found.spec);
                if owned_by(found, &uid) && found.metadata.has_finalizer(names::FINALIZER_HOLD) && same_spec {
                    t.backing = Some(found.metadata.uid.clone());
                } else {
                    let message = format!(
                        "{} exists but is not the backing we created (owner, hold or spec differ)",
                        found.key()
                    );
                    t.failure = Some((reasons::BACKING_NOT_OURS, message));
                }
            }
            (Op::VerifyBacking, Err(e)) if e.is_not_found() => {
                tracked.retry.succeed(Op::VerifyBacking);
                t.verify = false;
            }
            (Op::ConfirmSelf, Ok(StoreReply::Object(found))) => {
                tracked.retry.succeed(Op::ConfirmSelf);
                if found.metadata.uid == uid && !found.metadata.is_deleting() {
                    t.confirmed = true;
                } else {
                    t.stale = true;
                }
            }
            (Op::ConfirmSelf, Err(e)) if e.is_not_found() => {
                tracked.retry.succeed(Op::ConfirmSelf);
                t.stale = true;
            }
            (Op::ConfirmSelf, _) => {
                let _ = tracked.retry.fail(Op::ConfirmSelf, now.mono, &RETRY);
            }
            (Op::CleanupCheck, Ok(StoreReply::Objects(objects))) => {
                t.listed_children = objects.iter().filter(|o| owned_by(o, &uid)).cloned().collect();
                t.cleanup_clear = t.listed_children.is_empty();
                if t.cleanup_clear {
                    tracked.retry.succeed(Op::CleanupCheck);
                }
            }
            (Op::VerifyBacking, _) => {
                let _ = tracked.retry.fail(Op::VerifyBacking, now.mono, &RETRY);
            }
            (Op::CleanupCheck, _) | (Op::InspectName, _) | (Op::CreateBacking, Ok(_)) => {}
        }
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        if done.op != Op::InspectName {
            return;
        }
        if matches!(result, Ok(_) | Err(RuntimeError::NotFound(_))) {
            tracked.retry.succeed(Op::InspectName);
        }
        if !matches!(result, Ok(RuntimeReply::Container(c)) if c.state == ContainerState::Removing) {
            tracked.state.removing_checks = 0;
        }
        tracked.state.found = match result {
            // Being removed: neither reusable nor adoptable, and its name is not free yet. Look
            // again once it is gone.
            Ok(RuntimeReply::Container(c)) if c.state == ContainerState::Removing => {
                tracked.state.removing_checks += 1;
                tracked.retry.wait_until(now.mono + REMOVING_RECHECK.delay(tracked.state.removing_checks));
                None
            }
            Ok(RuntimeReply::Container(c)) if c.labels.contains_key(names::LABEL_CREATOR) => {
                Some(Found::Ours { id: c.id.clone(), key: c.labels.get(names::LABEL_LIFECYCLE_KEY).cloned() })
            }
            Ok(RuntimeReply::Container(c)) => Some(Found::Stranger { id: c.id.clone() }),
            Err(RuntimeError::NotFound(_)) => Some(Found::Absent),
            _ => {
                let _ = tracked.retry.fail(Op::InspectName, now.mono, &RETRY);
                None
            }
        };
    }
}
