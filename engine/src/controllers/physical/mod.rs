//! Physical containers: one runtime container per object, created from an image present in the
//! runtime, started, stopped when `spec.stop` is set, removed on delete.
//!
//! *Guarantees*
//! - One runtime operation per object at a time; a delete waits for it to finish.
//! - Every container created carries the object's uid as a label. After a create whose outcome is
//!   unknown (lost reply, error, name conflict) the runtime is listed by that label *before* any
//!   retry: our container is adopted, a stranger holding the name is never adopted. A name the
//!   runtime holds for a create still in progress (Docker answers 409 before the container shows
//!   in a list or an inspection) is retried with the create's backoff until the holder shows.
//! - An object an earlier life of this engine may have been creating (a restart) is listed by
//!   that label before its first create too, and only once that life's requests have settled
//!   (the runtime timeout after start): its create, still in flight, may otherwise land unseen.
//! - The runtime-cleanup finalizer is released only after the runtime container was removed and
//!   a list by uid label found nothing left.
//! - A container removed behind our back is reported `Missing` and never recreated; one seen
//!   `removing` is neither started nor called `Exited` meanwhile.
//! - Every permanent failure ends in `Failed`, for good (also for a later life of the engine),
//!   with a [`reason`](crate::api::reasons) and the runtime's own message: a create the runtime
//!   refuses or cannot make (no image), a name held by a stranger, a start refused or failing on
//!   the container for the whole start budget, the `ContainerImage` it waits for failing. No
//!   operation is retried faster than its backoff, which a success of another operation never
//!   shortens (the policies and the judging of failed starts are in `state`).
//!
//! *Assumptions*: names are unique in the runtime, so two creates for one object cannot both
//! succeed. In-memory state (what is in flight, what was observed) is a cache of the runtime:
//! after a crash it is rebuilt from `status.runtimeId`, inspection and the uid label.

mod state;

pub use state::{INSPECT_BUDGET, NOTFOUND_BUDGET, NOTFOUND_SETTLE};

use crate::api::container::{Mount, NetworkAttachment, is_volume_source};
use crate::api::{
    ContainerImage, ContainerImageStatus, ContainerNetwork, ContainerPhase, ContainerVolume, ImagePhase, Object,
    ObjectKey, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus, Resource, ResourcePhase,
    RuntimeResourceStatus, Uid, names, reasons,
};
use crate::cache::Cache;
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::runtime::{
    ContainerCreate, ContainerState, RuntimeEvent, RuntimeRequest, RuntimeResult, is_builtin_network,
};
use crate::store::{StoreRequest, StoreResult};
use crate::time::Now;
use crate::toolkit::{Cleanup, Finalizer, OpTracker, write_status};
use state::{Confirmation, Container, Failure, Observed, Op, Verify};
use std::collections::BTreeMap;
use std::time::Duration;

/// Held until the runtime container is removed (or kept: `retain`, or not ours: tracked by id).
const RUNTIME_FINALIZER: Finalizer<'static> = Finalizer::new(names::FINALIZER_RUNTIME);

/// Whether nothing an earlier life of this engine did can concern the object: this life saw it
/// created, or saw it before its runtime finalizer (which precedes any create) was added.
fn unknown_to_earlier_lives(t: &Container, ctx: &Context<'_>, uid: &Uid) -> bool {
    t.seen_unstarted || ctx.saw_created(uid)
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
        inputs: Inputs,
    ) -> RuntimeRequest {
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        let labels = super::system_labels(ctx, obj, ns, &spec.labels, spec.retain);
        RuntimeRequest::CreateContainer(ContainerCreate {
            name: spec.runtime_name(&namespace, &obj.metadata.name),
            image: inputs.image,
            command: spec.command.clone(),
            env: spec.env.clone(),
            labels,
            ports: spec.ports.clone(),
            mounts: inputs.mounts,
            networks: inputs.networks,
        })
    }

    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let Some(ns) = ctx.cache().namespace(namespace) else {
            // Not seen yet (its kind's watch lags): no side effects outside a known, active
            // namespace. Its arrival wakes us (`Watch::namespace_children`).
            return Ok(Action::done());
        };
        if ns.metadata.is_deleting() {
            return Ok(Action::done());
        }
        let spec = ctx.cache().spec::<PhysicalContainer>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let status = ctx.cache().status::<PhysicalContainer>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let t = &mut self.ops.entry(obj).state;
        if t.runtime_id.is_none() {
            t.runtime_id = spec.container_id.clone().or_else(|| status.runtime_id.clone());
        }
        if t.failure.is_some() {
            if let Some(checking) = self.confirm_failure(ctx, obj) {
                return checking;
            }
            if let Some(failure) = &self.ops.entry(obj).state.failure {
                let failed = failure.status(&status);
                if failed != *status {
                    write_status::<PhysicalContainer>(ctx, obj, &status, failed);
                    return Ok(Action::done());
                }
            }
            return self.failed_container_gone(ctx, obj, &spec, &status);
        }
        if status.phase == ContainerPhase::Failed {
            // Terminal, also for a later life of this engine that never learnt why.
            return self.failed_container_gone(ctx, obj, &spec, &status);
        }
        if t.confirmation == Confirmation::Stale {
            // Its deletion is on its way.
            return Ok(Action::done());
        }
        match t.runtime_id.clone() {
            None => self.create(ctx, obj, ns, &spec, &status),
            Some(runtime_id) => self.run(ctx, obj, &spec, &status, runtime_id),
        }
    }

    /// A `Failed` object whose runtime container (one that failed to start) was removed behind
    /// our back stops naming it: a volume's delete waits for the containers drydock made that
    /// mount it, and would wait for this one for ever. Looked at once per life and after each
    /// runtime event about it, never polled; the phase and message stay.
    fn failed_container_gone(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &PhysicalContainerSpec,
        status: &PhysicalContainerStatus,
    ) -> ReconcileResult {
        let Some(runtime_id) = status.runtime_id.clone() else { return Ok(Action::done()) };
        if spec.container_id.is_some() || crate::bugs::on(crate::bugs::Bug::FailedContainerNamedForEver) {
            return Ok(Action::done());
        }
        let t = &mut self.ops.entry(obj).state;
        match &t.observed {
            Some(Observed::Missing) => {
                t.runtime_id = None;
                let next = PhysicalContainerStatus { runtime_id: None, ..status.clone() };
                write_status::<PhysicalContainer>(ctx, obj, status, next);
                Ok(Action::done())
            }
            Some(Observed::State(..)) if t.inspected_at.is_some() => Ok(Action::done()),
            _ => {
                let inspect = RuntimeRequest::InspectContainer { id: runtime_id };
                self.start_op(ctx, &obj.metadata.uid, Op::Inspect, inspect)
            }
        }
    }

    /// A failure is about to be reported while no container is known: a create of ours whose
    /// outcome we never learnt (its reply lost, or sent by an earlier life of this engine) may
    /// have made one all the same, and a retry that failed (the image removed meanwhile) says
    /// nothing about it. `Failed` is final, so first wait until such a create has landed and
    /// list by our label; `Some` while that is under way (the list adopts what it finds).
    fn confirm_failure(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Option<ReconcileResult> {
        let uid = &obj.metadata.uid;
        let now = ctx.now().mono;
        let t = &mut self.ops.entry(obj).state;
        let earlier_lives = !unknown_to_earlier_lives(t, ctx, uid);
        if t.runtime_id.is_some() || t.failure_checked || (t.uncertain_create_at.is_none() && !earlier_lives) {
            return None;
        }
        // Waiting to finish a step (not at rest): a retry, as drivers and the simulator count it.
        if earlier_lives && let Some(settled) = ctx.earlier_lives_pending() {
            return Some(Ok(Action::retry_after(settled - now)));
        }
        if let Some(sent) = t.uncertain_create_at
            && now < sent + NOTFOUND_SETTLE
        {
            return Some(Ok(Action::retry_after(sent + NOTFOUND_SETTLE - now)));
        }
        let list = RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) };
        Some(self.start_op(ctx, uid, Op::FailureCheck, list))
    }

    /// No runtime container is known: verify what an uncertain create did, replace a stranger,
    /// or create one.
    fn create(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        ns: &Object,
        spec: &PhysicalContainerSpec,
        status: &PhysicalContainerStatus,
    ) -> ReconcileResult {
        let uid = &obj.metadata.uid;
        let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
        let t = &mut self.ops.entry(obj).state;
        // An earlier life of this engine may have created the container without recording it (a
        // crash, a lost reply): look for our label before creating, as after an uncertain
        // create. (Waiting for a name conflict is not enough: with the image gone the runtime
        // answers NotFound first.) Its create may still be in flight, so look only once the
        // earlier lives' requests have settled: one that lands after a create of ours would go
        // unseen if ours were then removed behind our back, and make a container for an object
        // reported `Missing`.
        if !unknown_to_earlier_lives(t, ctx, uid) && !t.label_checked {
            let now = ctx.now().mono;
            if let Some(settled) = ctx.earlier_lives_pending() {
                return Ok(Action::retry_after(settled - now));
            }
            t.label_checked = true;
            t.verify.get_or_insert(Verify::AfterUncertain);
        }
        let name = spec.runtime_name(namespace, &obj.metadata.name);
        match (t.verify, t.stranger.clone()) {
            (Some(Verify::Replace), Some(stranger)) => {
                let remove = RuntimeRequest::RemoveContainer { id: stranger, force: true };
                self.start_op(ctx, uid, Op::RemoveStranger, remove)
            }
            (Some(Verify::Replace | Verify::Holder), _) => {
                self.start_op(ctx, uid, Op::ResolveName, RuntimeRequest::InspectContainer { id: name })
            }
            (Some(_), _) => {
                let list = RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) };
                self.start_op(ctx, uid, Op::Verify, list)
            }
            (None, _) => match resolve_inputs(ctx, obj, spec) {
                ImageSource::Ready(_) if t.confirmation == Confirmation::Unread => {
                    self.ops.start_store(ctx, uid, Op::ConfirmSelf, StoreRequest::Get { key: obj.key() });
                    Ok(Action::done())
                }
                ImageSource::Ready(inputs) => {
                    let request = Self::create_request(ctx, obj, ns, spec, inputs);
                    self.start_op(ctx, uid, Op::Create, request)
                }
                // Only a create waits for the image: verification and cleanup never do.
                ImageSource::Waiting(waiting) => {
                    let next = PhysicalContainerStatus {
                        phase: ContainerPhase::Pending,
                        message: Some(waiting),
                        ..status.clone()
                    };
                    write_status::<PhysicalContainer>(ctx, obj, status, next);
                    // A create of ours whose reply was lost may land after the list that
                    // verified it found nothing (the runtime holds the name before it lists the
                    // container). With no create to send there is no name conflict to reveal
                    // it: once it has settled, list by our label again. (An earlier life's
                    // create had settled before the label check above.)
                    let t = &mut self.ops.entry(obj).state;
                    let now = ctx.now().mono;
                    if t.late_create_checked || t.verify.is_some() {
                        return Ok(Action::done());
                    }
                    match t.uncertain_create_at {
                        None => Ok(Action::done()),
                        Some(sent) if now < sent + NOTFOUND_SETTLE => {
                            Ok(Action::retry_after(sent + NOTFOUND_SETTLE - now))
                        }
                        Some(_) => {
                            t.late_create_checked = true;
                            t.verify = Some(Verify::AfterUncertain);
                            let list = RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) };
                            self.start_op(ctx, uid, Op::Verify, list)
                        }
                    }
                }
                ImageSource::Failed(reason, message) => {
                    t.failure = Some(Failure::new(reason, message));
                    if let Some(checking) = self.confirm_failure(ctx, obj) {
                        return checking;
                    }
                    if let Some(failure) = &self.ops.entry(obj).state.failure {
                        write_status::<PhysicalContainer>(ctx, obj, status, failure.status(status));
                    }
                    Ok(Action::done())
                }
            },
        }
    }

    /// The runtime container is known: record it, look at it when the last look is stale, start
    /// or stop it as the spec says, and report what it is doing.
    fn run(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &PhysicalContainerSpec,
        status: &PhysicalContainerStatus,
        runtime_id: String,
    ) -> ReconcileResult {
        let uid = &obj.metadata.uid;
        let now = ctx.now();
        let monitor = self.monitor_interval;
        let t = &mut self.ops.entry(obj).state;
        if status.runtime_id.as_deref() != Some(runtime_id.as_str()) {
            let next = PhysicalContainerStatus { runtime_id: Some(runtime_id), ..status.clone() };
            write_status::<PhysicalContainer>(ctx, obj, status, next);
            return Ok(Action::done());
        }
        let freshness = t.freshness(monitor);
        let stale = t.inspected_at.is_none_or(|at| now.mono.since(at) >= freshness);
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
                reason: Some(reasons::REMOVED_EXTERNALLY.into()),
                message: Some("the runtime container was removed outside drydock; it is not recreated".into()),
                ..status.clone()
            },
            Some((ContainerState::Running, _)) if spec.stop => {
                let stop = RuntimeRequest::StopContainer { id: runtime_id, timeout_secs: 10 };
                return self.start_op(ctx, uid, Op::Stop, stop);
            }
            // Its files go in before its first start (a container seen created has never run).
            Some((ContainerState::Created, _))
                if !spec.stop && !spec.files.is_empty() && spec.container_id.is_none() && !t.files_copied =>
            {
                let copy = RuntimeRequest::CopyFiles { id: runtime_id, files: spec.files.clone() };
                return self.start_op(ctx, uid, Op::CopyFiles, copy);
            }
            Some((ContainerState::Created, _)) if !spec.stop => {
                return self.start_op(ctx, uid, Op::Start, RuntimeRequest::StartContainer { id: runtime_id });
            }
            Some((ContainerState::Exited, _)) if !spec.stop && start_tracked => {
                return self.start_op(ctx, uid, Op::Start, RuntimeRequest::StartContainer { id: runtime_id });
            }
            // Someone else is removing it (drydock removes only in cleanup, which does not look):
            // it is about to be gone, and then Missing. Nothing to start or stop meanwhile.
            Some((ContainerState::Removing, _)) => {
                let next = PhysicalContainerStatus {
                    message: Some("the runtime container is being removed outside drydock".into()),
                    ..status.clone()
                };
                write_status::<PhysicalContainer>(ctx, obj, status, next);
                return Ok(Action::requeue(freshness));
            }
            Some((state, exit_code)) => PhysicalContainerStatus {
                phase: match state {
                    ContainerState::Running => ContainerPhase::Running,
                    // Created: stopped (spec.stop) before it ever ran.
                    ContainerState::Exited | ContainerState::Created | ContainerState::Removing => {
                        ContainerPhase::Exited
                    }
                },
                exit_code,
                reason: None,
                message: inspect_message,
                ..status.clone()
            },
        };
        let missing = next.phase == ContainerPhase::Missing;
        write_status::<PhysicalContainer>(ctx, obj, status, next);
        Ok(if missing { Action::done() } else { Action::requeue(monitor) })
    }

    /// Remove the runtime container, then make sure nothing carries our label any more.
    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let uid = &obj.metadata.uid;
        let status = ctx.cache().status::<PhysicalContainer>(obj).unwrap_or_default();
        let spec = ctx.cache().spec::<PhysicalContainer>(obj).unwrap_or_default();
        if spec.retain || spec.container_id.is_some() {
            // Kept (retain) or never ours (tracked by id): nothing to remove.
            return Ok(Cleanup::Done);
        }
        let t = &mut self.ops.entry(obj).state;
        if !t.removed
            && let Some(id) = t.runtime_id.clone().or_else(|| status.runtime_id.clone())
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
            // The same for a create of this life whose reply was lost: the runtime may still be
            // completing it, and lists the container only once it has.
            if let Some(sent) = t.uncertain_create_at
                && ctx.now().mono < sent + NOTFOUND_SETTLE
            {
                return Ok(Cleanup::Waiting(Action::requeue(sent + NOTFOUND_SETTLE - ctx.now().mono)));
            }
            let check = RuntimeRequest::ListContainers { labels: Self::uid_filter(uid) };
            return self.start_op(ctx, uid, Op::CleanupCheck, check).map(Cleanup::Waiting);
        }
        Ok(Cleanup::Done)
    }
}

/// While a create or start that keeps failing waits to be retried, say so in status (once: an
/// unchanged status is not written again).
fn show_retrying(ctx: &mut Context<'_>, obj: &Object, t: &Container) {
    let Some(retrying) = &t.retrying else { return };
    let Ok(status) = obj.status::<PhysicalContainer>() else { return };
    let settled = matches!(status.phase, ContainerPhase::Failed | ContainerPhase::Missing);
    if obj.metadata.is_deleting() || settled || t.failure.is_some() {
        return;
    }
    let next = PhysicalContainerStatus { message: Some(retrying.clone()), ..status.clone() };
    write_status::<PhysicalContainer>(ctx, obj, &status, next);
}

/// What a create would be made from.
enum ImageSource {
    /// This image, these runtime networks and volumes.
    Ready(Inputs),
    /// Not yet: what we are waiting for, in words.
    Waiting(String),
    /// Never: the referenced `ContainerImage`, `ContainerNetwork` or `ContainerVolume` failed for
    /// good (the reason, and why in words).
    Failed(&'static str, String),
}

/// A create's inputs, resolved to the runtime's names.
struct Inputs {
    /// A reference or an image id.
    image: String,
    /// By runtime network id.
    networks: Vec<NetworkAttachment>,
    /// Volume sources by runtime volume name.
    mounts: Vec<Mount>,
}

/// The inputs to create from: the image (see `resolve_image`), and the runtime ids of the
/// networks and volumes the spec names, once each is Ready.
fn resolve_inputs(ctx: &Context<'_>, obj: &Object, spec: &PhysicalContainerSpec) -> ImageSource {
    let image = match resolve_image(ctx, obj, spec) {
        Ok(image) => image,
        Err(not_ready) => return not_ready,
    };
    let mut networks = Vec::with_capacity(spec.networks.len());
    for attachment in &spec.networks {
        match resolve_resource(ctx, obj, ContainerNetwork::KIND, &attachment.name) {
            Ok(id) => networks.push(NetworkAttachment { name: id, aliases: attachment.aliases.clone() }),
            Err(not_ready) => return not_ready,
        }
    }
    if let Some(refused) = refused_networks(ctx, obj, spec) {
        return ImageSource::Failed(reasons::NETWORKS_REFUSED, refused);
    }
    let mut mounts = Vec::with_capacity(spec.mounts.len());
    for mount in &spec.mounts {
        if !is_volume_source(&mount.source) {
            mounts.push(mount.clone());
            continue;
        }
        match resolve_resource(ctx, obj, ContainerVolume::KIND, &mount.source) {
            Ok(name) => mounts.push(Mount { source: name, ..mount.clone() }),
            Err(not_ready) => return not_ready,
        }
    }
    ImageSource::Ready(Inputs { image, networks, mounts })
}

/// Why Docker would refuse the spec's networks, if it would, once each `ContainerNetwork` is
/// known: aliases on a built-in network (Docker 20.10: "network-scoped alias is supported only
/// for containers in user defined networks"), or `host` or `none` beside another network ("cannot
/// be connected to multiple networks" / "to any other network"). Saying so here ends the object
/// in `Failed` with a field path instead of a create Docker refuses, or a start that fails.
fn refused_networks(ctx: &Context<'_>, obj: &Object, spec: &PhysicalContainerSpec) -> Option<String> {
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    let built_in = |name: &str| {
        let network = ctx.get(&ObjectKey::namespaced(ContainerNetwork::KIND, namespace, name))?;
        let tracked = network.spec.get("networkId").and_then(serde_json::Value::as_str)?;
        is_builtin_network(tracked).then(|| tracked.to_string())
    };
    for (i, attachment) in spec.networks.iter().enumerate() {
        let Some(builtin) = built_in(&attachment.name) else { continue };
        if !attachment.aliases.is_empty() {
            return Some(format!(
                "spec.networks[{i}].aliases: ContainerNetwork {} is Docker's built-in network {builtin}, which takes no aliases (Docker supports network-scoped aliases only on user-defined networks); remove the aliases or attach to a network drydock creates",
                attachment.name
            ));
        }
        if builtin != "bridge" && spec.networks.len() > 1 {
            return Some(format!(
                "spec.networks[{i}]: ContainerNetwork {} is Docker's built-in network {builtin}, which a container cannot share with any other network; attach to it alone",
                attachment.name
            ));
        }
    }
    None
}

/// The runtime id of the network or volume object `name` of `kind`, once it is Ready.
fn resolve_resource(ctx: &Context<'_>, obj: &Object, kind: &str, name: &str) -> Result<String, ImageSource> {
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    let Some(resource) = ctx.get(&ObjectKey::namespaced(kind, namespace, name)) else {
        return Err(ImageSource::Waiting(format!("waiting for {kind} {name}")));
    };
    let status: RuntimeResourceStatus = serde_json::from_value(resource.status.clone()).unwrap_or_default();
    match status {
        _ if resource.metadata.is_deleting() => {
            Err(ImageSource::Waiting(format!("waiting for {kind} {name} (deleting)")))
        }
        RuntimeResourceStatus { phase: ResourcePhase::Ready, runtime_id: Some(id), .. } => Ok(id),
        // Failed and Missing are terminal for it: waiting would be waiting for ever.
        RuntimeResourceStatus { phase: phase @ (ResourcePhase::Failed | ResourcePhase::Missing), message, .. } => {
            let why = message.unwrap_or_else(|| "no reason given".into());
            Err(ImageSource::Failed(reasons::DEPENDENCY_FAILED, format!("{kind} {name} is {phase:?}: {why}")))
        }
        RuntimeResourceStatus { phase, .. } => {
            Err(ImageSource::Waiting(format!("waiting for {kind} {name} (phase {phase:?})")))
        }
    }
}

/// The image to create from: the spec's reference, or the pinned id of the referenced
/// ContainerImage once it is Ready.
fn resolve_image(ctx: &Context<'_>, obj: &Object, spec: &PhysicalContainerSpec) -> Result<String, ImageSource> {
    if let Some(image) = &spec.image {
        return Ok(image.clone());
    }
    let Some(name) = &spec.image_ref else {
        return Ok(String::new()); // tracking an existing container: nothing to create from
    };
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    let Some(image) = ctx.get(&ObjectKey::namespaced(ContainerImage::KIND, namespace, name)) else {
        return Err(ImageSource::Waiting(format!("waiting for ContainerImage {name}")));
    };
    let status = image.status::<ContainerImage>().unwrap_or_default();
    match status {
        ContainerImageStatus { phase: ImagePhase::Ready, image_id: Some(id), .. } if !image.metadata.is_deleting() => {
            Ok(id)
        }
        // Failed is terminal for the image: waiting for it would be waiting for ever.
        ContainerImageStatus { phase: ImagePhase::Failed, message, .. } if !image.metadata.is_deleting() => {
            let why = message.unwrap_or_else(|| "no reason given".into());
            Err(ImageSource::Failed(reasons::IMAGE_FAILED, format!("ContainerImage {name} failed: {why}")))
        }
        ContainerImageStatus { phase, .. } => {
            Err(ImageSource::Waiting(format!("waiting for ContainerImage {name} (phase {phase:?})")))
        }
    }
}

/// The physical containers in `resource`'s namespace whose spec `uses` it.
/// The physical containers that use `resource` (a `ContainerImage` by `imageRef`, a network
/// they attach to, a volume they mount), from the cache's index.
fn users(cache: &Cache, resource: &Object) -> Vec<ObjectKey> {
    let ns = resource.metadata.namespace.as_deref().unwrap_or_default();
    cache.indexed(USES, &uses_value(ns, &resource.kind, &resource.metadata.name)).cloned().collect()
}

/// The index of what each physical container uses: `namespace/Kind/name` of its `imageRef`,
/// its networks and the volumes it mounts.
const USES: &str = "physical-container.uses";

fn uses_value(namespace: &str, kind: &str, name: &str) -> String {
    format!("{namespace}/{kind}/{name}")
}

/// What physical container `pc` uses, for [`USES`] (read from its stored spec, as admitted).
fn uses(pc: &Object) -> Vec<String> {
    let ns = pc.metadata.namespace.as_deref().unwrap_or_default();
    let spec = &pc.spec;
    let names = |field: &str, name: &str| -> Vec<String> {
        let items = spec.get(field).and_then(serde_json::Value::as_array);
        items.into_iter().flatten().filter_map(|item| item.get(name)?.as_str().map(str::to_string)).collect()
    };
    let mut values = Vec::new();
    if let Some(image) = spec.get("imageRef").and_then(serde_json::Value::as_str) {
        values.push(uses_value(ns, ContainerImage::KIND, image));
    }
    for network in names("networks", "name") {
        values.push(uses_value(ns, ContainerNetwork::KIND, &network));
    }
    for source in names("mounts", "source").into_iter().filter(|s| is_volume_source(s)) {
        values.push(uses_value(ns, ContainerVolume::KIND, &source));
    }
    values
}

impl Controller for PhysicalContainerController {
    fn name(&self) -> &str {
        "physical-container"
    }

    fn indexes(&self) -> Vec<crate::cache::Index> {
        vec![crate::cache::Index { name: USES, kind: PhysicalContainer::KIND, values: uses }]
    }

    fn watches(&self) -> Vec<Watch> {
        vec![
            Watch::own(PhysicalContainer::KIND),
            // An image becoming Ready unblocks the containers that reference it.
            Watch::custom(ContainerImage::KIND, |image, cache| users(cache, image)),
            // A network or volume becoming Ready (or failing) unblocks (or fails) the containers
            // that use it.
            Watch::custom(ContainerNetwork::KIND, |network, cache| users(cache, network)),
            Watch::custom(ContainerVolume::KIND, |volume, cache| users(cache, volume)),
            Watch::namespace_children(PhysicalContainer::KIND),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        let tracked = self.ops.entry(obj);
        tracked.state.replace_existing = ctx.cache().spec::<PhysicalContainer>(obj).is_ok_and(|s| s.replace_existing);
        if obj.metadata.is_deleting() && !std::mem::replace(&mut tracked.state.cleanup_began, true) {
            // A delete makes a create or start waiting to be retried moot: it does not wait out
            // their backoff (only an operation in flight, and then its own removal's backoff).
            tracked.retry.clear_wait();
        }
        // One runtime operation at a time; a delete waits for it too.
        if let Some(wait) = tracked.blocked(ctx.now().mono) {
            if !tracked.is_busy() {
                show_retrying(ctx, obj, &tracked.state);
            }
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
        self.ops.for_key_each(key, |t| t.state.inspected_at = None);
        true
    }

    fn on_runtime_resync(&mut self, _now: Now) -> Vec<ObjectKey> {
        // Events were missed: look at every container we know instead of waiting for monitoring.
        let mut keys = Vec::new();
        for t in self.ops.iter_mut() {
            t.state.inspected_at = None;
            keys.push(t.key().clone());
        }
        keys.dedup();
        keys
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        state::handle_result(tracked, now, done.op, result);
    }

    fn on_store_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        state::handle_confirmation(tracked, now, done.op, result);
    }
}
