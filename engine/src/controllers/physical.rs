//! Physical containers: one runtime container per object, created from an image present in the
//! runtime, started, stopped when `spec.stop` is set, removed on delete.
//!
//! *Guarantees*
//! - One runtime operation per object at a time; a delete waits for it to finish.
//! - Every container created carries the object's uid as a label. After a create whose outcome is
//!   unknown (lost reply, error, name conflict) the runtime is listed by that label *before* any
//!   retry: our container is adopted, a stranger holding the name is never adopted.
//! - The runtime-cleanup finalizer is released only after the runtime container was removed and
//!   a list by uid label found nothing left.
//! - A container removed behind our back is reported `Missing` and never recreated.
//!
//! *Assumptions*: names are unique in the runtime, so two creates for one object cannot both
//! succeed. In-memory state (what is in flight, what was observed) is a cache of the runtime:
//! after a crash it is rebuilt from `status.runtimeId`, inspection and the uid label.

use crate::api::{
    ContainerImage, ContainerPhase, ImagePhase, Namespace, Object, ObjectKey, PhysicalContainer, PhysicalContainerSpec,
    PhysicalContainerStatus, Resource, Uid, names,
};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, RuntimeError, RuntimeEvent, RuntimeReply, RuntimeRequest,
    RuntimeResult,
};
use crate::time::{MonoTime, Now};
use crate::toolkit::{self, Cleanup, Finalizer, OpTracker, RetryPolicy, write_status};
use std::collections::BTreeMap;
use std::time::Duration;

/// Inspection errors in a row before they are reported in status (retrying continues, slower).
pub const INSPECT_BUDGET: u32 = 5;
/// How long NotFound answers may be the runtime lagging (a container just created, a daemon or
/// an engine just restarted) rather than the container being gone.
pub const NOTFOUND_SETTLE: Duration = Duration::from_secs(10);
/// NotFound answers in a row, within that window, before the container counts as Missing.
pub const NOTFOUND_BUDGET: u32 = 4;

/// Held until the runtime container is removed (or kept: `retain`, or not ours: tracked by id).
const RUNTIME_FINALIZER: Finalizer<'static> = Finalizer::new(names::FINALIZER_RUNTIME);
/// After failed runtime operations, per operation kind: 200 ms, 400 ms, ... up to 30 s, for ever
/// (they are retryable: a daemon that answers 500 or not at all may be back soon). A success of
/// one kind (an inspect) never shortens the wait of another (a create).
const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(30));

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Op {
    Create,
    /// replaceExisting: find which container holds our name.
    ResolveName,
    /// replaceExisting: remove exactly the container resolved by name.
    RemoveStranger,
    /// List by uid label after an uncertain create.
    Verify,
    Start,
    Stop,
    Inspect,
    Remove,
    /// List by uid label before releasing the finalizer.
    CleanupCheck,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Observed {
    State(ContainerState, Option<i64>),
    Missing,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Verify {
    /// The create's outcome is unknown: if nothing carries our label, create again.
    AfterUncertain,
    /// The name was taken: if nothing carries our label, the name belongs to a stranger.
    AfterConflict,
    /// The name belongs to a stranger and `replaceExisting` is set: remove it, then create.
    Replace,
}

/// What this engine knows about one object's runtime container.
#[derive(Debug, Default)]
struct Container {
    runtime_id: Option<String>,
    observed: Option<Observed>,
    inspected_at: Option<MonoTime>,
    verify: Option<Verify>,
    failure: Option<String>,
    removed: bool,
    cleanup_verified: bool,
    /// replaceExisting: the stranger holding our name, once resolved.
    stranger: Option<String>,
    /// Inspection failures in a row, and the last one.
    inspect_errors: u32,
    inspect_message: Option<String>,
    replace_existing: bool,
    started_tracked: bool,
    /// When the current run of NotFound answers began.
    notfound_since: Option<MonoTime>,
    /// NotFound answers in a row.
    notfound_retries: u32,
    /// This engine saw the object before its runtime finalizer was added, so no earlier life of
    /// the engine can have a create for it in flight.
    seen_unstarted: bool,
    /// This engine listed the runtime by the object's uid label before its first create.
    label_checked: bool,
}

/// Whether nothing an earlier life of this engine did can concern the object: this life saw it
/// created, or saw it before its runtime finalizer (which precedes any create) was added.
fn unknown_to_earlier_lives(t: &Container, ctx: &Context<'_>, uid: &Uid) -> bool {
    t.seen_unstarted || ctx.saw_created(uid)
}

type Tracked = toolkit::Tracked<Op, Container>;

impl Container {
    fn observe(&mut self, now: Now, info: &ContainerInfo) {
        self.runtime_id = Some(info.id.clone());
        self.observed = Some(Observed::State(info.state, info.exit_code));
        self.inspected_at = Some(now.mono);
    }
}

#[derive(Debug)]
pub struct PhysicalContainerController {
    monitor_interval: Duration,
    ops: OpTracker<Op, Container>,
}

impl PhysicalContainerController {
    pub fn new(monitor_interval: Duration) -> Self {
        PhysicalContainerController { monitor_interval, ops: OpTracker::new() }
    }

    /// Start `op`; its reply reconciles the object again.
    fn start_op(&mut self, ctx: &mut Context<'_>, uid: &Uid, op: Op, request: RuntimeRequest) -> ReconcileResult {
        self.ops.start_runtime(ctx, uid, op, request);
        Ok(Action::done())
    }

    fn uid_filter(uid: &Uid) -> BTreeMap<String, String> {
        BTreeMap::from([(names::LABEL_OWNER_UID.to_string(), uid.0.clone())])
    }

    fn create_request(
        ctx: &Context<'_>,
        obj: &Object,
        ns: &Object,
        spec: &PhysicalContainerSpec,
        image: String,
    ) -> RuntimeRequest {
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        let mut labels = spec.labels.clone();
        // System labels last, so a caller can never override them.
        labels.insert(names::LABEL_OWNER_UID.into(), obj.metadata.uid.0.clone());
        labels.insert(names::LABEL_NAMESPACE.into(), namespace.clone());
        labels.insert(names::LABEL_NAMESPACE_UID.into(), ns.metadata.uid.0.clone());
        labels.insert(names::LABEL_CREATOR.into(), ctx.identity().to_string());
        if spec.retain {
            labels.insert(names::LABEL_RETAIN.into(), "true".into());
        } else {
            labels.remove(names::LABEL_RETAIN);
        }
        RuntimeRequest::CreateContainer(ContainerCreate {
            name: spec.runtime_name(&namespace, &obj.metadata.name),
            image,
            command: spec.command.clone(),
            env: spec.env.clone(),
            labels,
            ports: spec.ports.clone(),
            mounts: spec.mounts.clone(),
        })
    }

    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let uid = &obj.metadata.uid;
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let Some(ns) = ctx.get(&ObjectKey::cluster(Namespace::KIND, namespace)) else {
            // Not seen yet (stale cache): no side effects outside a known, active namespace.
            return Ok(Action::requeue(Duration::from_secs(1)));
        };
        if ns.metadata.is_deleting() {
            return Ok(Action::done());
        }
        let spec = obj.spec::<PhysicalContainer>().map_err(|e| ReconcileError(e.to_string()))?;
        let status = obj.status::<PhysicalContainer>().map_err(|e| ReconcileError(e.to_string()))?;
        let now = ctx.now();
        let monitor = self.monitor_interval;
        let t = &mut self.ops.entry(obj).state;
        if t.runtime_id.is_none() {
            t.runtime_id = spec.container_id.clone().or_else(|| status.runtime_id.clone());
        }
        if let Some(message) = &t.failure {
            let failed = PhysicalContainerStatus {
                phase: ContainerPhase::Failed,
                message: Some(message.clone()),
                ..status.clone()
            };
            write_status::<PhysicalContainer>(ctx, obj, &status, failed);
            return Ok(Action::done());
        }
        let Some(runtime_id) = t.runtime_id.clone() else {
            if status.phase == ContainerPhase::Failed {
                return Ok(Action::done());
            }
            // An earlier life of this engine may have created the container without recording
            // it (a crash, a lost reply): look for our label before creating, as after an
            // uncertain create. (Waiting for a name conflict is not enough: with the image gone
            // the runtime answers NotFound first.)
            if !unknown_to_earlier_lives(t, ctx, uid) && !std::mem::replace(&mut t.label_checked, true) {
                t.verify.get_or_insert(Verify::AfterUncertain);
            }
            let name = spec.runtime_name(namespace, &obj.metadata.name);
            return match (t.verify, t.stranger.clone()) {
                (Some(Verify::Replace), Some(stranger)) => self.start_op(
                    ctx,
                    uid,
                    Op::RemoveStranger,
                    RuntimeRequest::RemoveContainer { id: stranger, force: true },
                ),
                (Some(Verify::Replace), None) => {
                    self.start_op(ctx, uid, Op::ResolveName, RuntimeRequest::InspectContainer { id: name })
                }
                (Some(_), _) => self.start_op(
                    ctx,
                    uid,
                    Op::Verify,
                    RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) },
                ),
                (None, _) => match resolve_image(ctx, obj, &spec) {
                    Ok(image) => {
                        let request = Self::create_request(ctx, obj, ns, &spec, image);
                        self.start_op(ctx, uid, Op::Create, request)
                    }
                    // Only a create waits for the image: verification and cleanup never do.
                    Err(waiting) => {
                        let next = PhysicalContainerStatus {
                            phase: ContainerPhase::Pending,
                            message: Some(waiting),
                            ..status.clone()
                        };
                        write_status::<PhysicalContainer>(ctx, obj, &status, next);
                        Ok(Action::done())
                    }
                },
            };
        };
        if status.runtime_id.as_deref() != Some(runtime_id.as_str()) {
            let next = PhysicalContainerStatus { runtime_id: Some(runtime_id), ..status.clone() };
            write_status::<PhysicalContainer>(ctx, obj, &status, next);
            return Ok(Action::done());
        }
        let stale = t.inspected_at.is_none_or(|at| now.mono.since(at) >= monitor);
        let observed = match &t.observed {
            Some(Observed::Missing) => None,
            Some(Observed::State(state, code)) if !stale => Some((*state, *code)),
            _ => return self.start_op(ctx, uid, Op::Inspect, RuntimeRequest::InspectContainer { id: runtime_id }),
        };
        let inspect_message = t.inspect_message.clone();
        // A tracked container (reused or adopted) that is not running is started once; after that
        // its exits are its own business, as for any container.
        let start_tracked = spec.container_id.is_some() && !t.started_tracked;
        t.started_tracked |= spec.container_id.is_some();
        let next = match observed {
            None => PhysicalContainerStatus {
                phase: ContainerPhase::Missing,
                message: Some("the runtime container was removed outside drydock; it is not recreated".into()),
                ..status.clone()
            },
            Some((ContainerState::Running, _)) if spec.stop => {
                return self.start_op(
                    ctx,
                    uid,
                    Op::Stop,
                    RuntimeRequest::StopContainer { id: runtime_id, timeout_secs: 10 },
                );
            }
            Some((ContainerState::Created, _)) if !spec.stop => {
                return self.start_op(ctx, uid, Op::Start, RuntimeRequest::StartContainer { id: runtime_id });
            }
            Some((ContainerState::Exited, _)) if !spec.stop && start_tracked => {
                return self.start_op(ctx, uid, Op::Start, RuntimeRequest::StartContainer { id: runtime_id });
            }
            Some((state, exit_code)) => PhysicalContainerStatus {
                phase: match state {
                    ContainerState::Running => ContainerPhase::Running,
                    ContainerState::Exited => ContainerPhase::Exited,
                    ContainerState::Created => ContainerPhase::Exited, // stopped before it ever ran
                    ContainerState::Removing => ContainerPhase::Exited,
                },
                exit_code,
                message: inspect_message,
                ..status.clone()
            },
        };
        let missing = next.phase == ContainerPhase::Missing;
        write_status::<PhysicalContainer>(ctx, obj, &status, next);
        Ok(if missing { Action::done() } else { Action::requeue(monitor) })
    }

    /// Remove the runtime container, then make sure nothing carries our label any more.
    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let uid = &obj.metadata.uid;
        let status = obj.status::<PhysicalContainer>().unwrap_or_default();
        let spec = obj.spec::<PhysicalContainer>().unwrap_or_default();
        if spec.retain || spec.container_id.is_some() {
            // Kept (retain) or never ours (tracked by id): nothing to remove.
            return Ok(Cleanup::Done);
        }
        let t = &mut self.ops.entry(obj).state;
        if !t.removed
            && let Some(id) = t.runtime_id.clone().or(status.runtime_id)
        {
            let remove = RuntimeRequest::RemoveContainer { id, force: true };
            return self.start_op(ctx, uid, Op::Remove, remove).map(Cleanup::Waiting);
        }
        if !t.cleanup_verified {
            // A create sent by an earlier life of this engine (before a crash) may still land:
            // "nothing carries our label" is final only once such requests have settled.
            if !unknown_to_earlier_lives(t, ctx, uid)
                && let Some(settled) = ctx.earlier_lives_pending()
            {
                return Ok(Cleanup::Waiting(Action::requeue(settled - ctx.now().mono)));
            }
            let check = RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) };
            return self.start_op(ctx, uid, Op::CleanupCheck, check).map(Cleanup::Waiting);
        }
        Ok(Cleanup::Done)
    }

    fn handle_result(tracked: &mut Tracked, now: Now, op: Op, result: &RuntimeResult) {
        use RuntimeError as E;
        use RuntimeReply as R;
        let (t, retry) = (&mut tracked.state, &mut tracked.retry);
        match (op, result) {
            (Op::Create, Ok(R::Created { id })) => {
                t.runtime_id = Some(id.clone());
                t.observed = Some(Observed::State(ContainerState::Created, None));
                t.inspected_at = Some(now.mono);
                t.verify = None;
            }
            (Op::Create, Err(E::NotFound(message))) => t.failure = Some(format!("cannot create: {message}")),
            (Op::Create, Err(E::Conflict(_))) => t.verify = Some(Verify::AfterConflict),
            (Op::Create, _) => {
                t.verify = Some(Verify::AfterUncertain);
                let _ = retry.fail(op, now.mono, &RETRY);
            }
            (Op::Verify, Ok(R::Containers(found))) => match (found.first(), t.verify) {
                (Some(ours), _) => {
                    t.observe(now, ours);
                    t.verify = None;
                }
                (None, Some(Verify::AfterConflict)) if t.replace_existing => t.verify = Some(Verify::Replace),
                (None, Some(Verify::AfterConflict)) => {
                    t.failure = Some(
                        "the container name is taken by a container drydock did not create for this object (set replaceExisting to replace it)".into(),
                    );
                }
                (None, _) => t.verify = None,
            },
            (Op::Start, Ok(_)) => t.observed = Some(Observed::State(ContainerState::Running, None)),
            // Stopped: inspect to learn the exit code.
            (Op::Stop, Ok(_)) => t.inspected_at = None,
            (Op::Inspect, Ok(R::Container(info))) => {
                t.observe(now, info);
                t.inspect_errors = 0;
                t.notfound_retries = 0;
                t.notfound_since = None;
                t.inspect_message = None;
            }
            (Op::ResolveName, Ok(R::Container(holder))) => t.stranger = Some(holder.id.clone()),
            (Op::ResolveName, Err(E::NotFound(_))) => t.verify = None, // gone meanwhile: create
            (Op::RemoveStranger, Ok(_) | Err(E::NotFound(_))) => {
                t.stranger = None;
                t.verify = None;
            }
            (Op::Inspect, Err(e)) if !matches!(e, E::NotFound(_)) => {
                t.inspect_errors += 1;
                if t.inspect_errors >= INSPECT_BUDGET {
                    t.inspect_message =
                        Some(format!("cannot inspect the runtime container ({} attempts): {e}", t.inspect_errors));
                }
                let _ = retry.fail(op, now.mono, &RETRY);
            }
            // Right after a create, or after a restart of the daemon or of this engine (which
            // then cannot know the container is fresh), the runtime may not show the container
            // yet: look again a few times before calling it Missing, which is final.
            (Op::Start | Op::Stop | Op::Inspect, Err(E::NotFound(_)))
                if now.mono.since(*t.notfound_since.get_or_insert(now.mono)) < NOTFOUND_SETTLE
                    && t.notfound_retries < NOTFOUND_BUDGET =>
            {
                t.notfound_retries += 1;
                t.inspected_at = None;
                retry.wait_until(now.mono + Duration::from_millis(200) * (1 << t.notfound_retries));
            }
            (Op::Start | Op::Stop | Op::Inspect, Err(E::NotFound(_))) => t.observed = Some(Observed::Missing),
            (Op::Remove, Ok(_) | Err(E::NotFound(_))) => {
                t.removed = true;
                t.cleanup_verified = false;
            }
            (Op::CleanupCheck, Ok(R::Containers(found))) => match found.first() {
                Some(leftover) => {
                    t.runtime_id = Some(leftover.id.clone());
                    t.removed = false;
                }
                None => t.cleanup_verified = true,
            },
            (_, Ok(other)) => tracing::warn!(?op, ?other, "unexpected runtime reply"),
            (_, Err(_)) => {
                if op == Op::Start || op == Op::Stop {
                    t.inspected_at = None;
                }
                let _ = retry.fail(op, now.mono, &RETRY);
            }
        }
        if result.is_ok() {
            retry.succeed(op);
        }
    }
}

/// The image to create from: the spec's reference, or the pinned id of the referenced
/// ContainerImage once it is Ready. `Err` says what we are waiting for.
fn resolve_image(ctx: &Context<'_>, obj: &Object, spec: &PhysicalContainerSpec) -> Result<String, String> {
    if let Some(image) = &spec.image {
        return Ok(image.clone());
    }
    let Some(name) = &spec.image_ref else {
        return Ok(String::new()); // tracking an existing container: nothing to create from
    };
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    let Some(image) = ctx.get(&ObjectKey::namespaced(ContainerImage::KIND, namespace, name)) else {
        return Err(format!("waiting for ContainerImage {name}"));
    };
    let status = image.status::<ContainerImage>().unwrap_or_default();
    match (status.phase, status.image_id) {
        (ImagePhase::Ready, Some(id)) if !image.metadata.is_deleting() => Ok(id),
        (phase, _) => Err(format!("waiting for ContainerImage {name} (phase {phase:?})")),
    }
}

impl Controller for PhysicalContainerController {
    fn name(&self) -> &str {
        "physical-container"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(PhysicalContainer::KIND),
            // An image becoming Ready unblocks the containers that reference it.
            Watch::custom(ContainerImage::KIND, |image, cache| {
                let ns = image.metadata.namespace.as_deref();
                cache
                    .list(PhysicalContainer::KIND, ns)
                    .filter(|pc| pc.spec.get("imageRef").and_then(|r| r.as_str()) == Some(image.metadata.name.as_str()))
                    .map(|pc| pc.key())
                    .collect()
            }),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        let tracked = self.ops.entry(obj);
        tracked.state.replace_existing = obj.spec::<PhysicalContainer>().is_ok_and(|s| s.replace_existing);
        // One runtime operation at a time; a delete waits for it too.
        if let Some(wait) = tracked.blocked(ctx.now().mono) {
            return Ok(wait);
        }
        // Seen live before its finalizer, which precedes any create: no earlier life of this
        // engine can have a create in flight for it.
        tracked.state.seen_unstarted |= RUNTIME_FINALIZER.needs_adding(obj);
        RUNTIME_FINALIZER.reconcile(ctx, obj, self, Self::apply, Self::cleanup)
    }

    fn on_runtime_event(&mut self, _now: Now, key: &ObjectKey, _event: &RuntimeEvent) -> bool {
        if key.kind != PhysicalContainer::KIND {
            return false;
        }
        // Something changed: look again instead of waiting for the monitoring pass.
        for t in self.ops.for_key_mut(key) {
            t.state.inspected_at = None;
        }
        true
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        Self::handle_result(tracked, now, done.op, result);
    }
}
