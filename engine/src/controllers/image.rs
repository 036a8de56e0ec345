//! Container images: make the image present per `pullPolicy`, pin the first verified id, watch
//! that it stays.
//!
//! *Guarantees*
//! - Pulls of one normalized reference are serialized across resources and processes by an
//!   exclusive lease; a contended pull stays Pending and is retried through reconciliation
//!   without consuming pull attempts. The policy is re-evaluated once the lease is held; under
//!   `missing` a waiter also looks for the image now and then while it waits (an inspection
//!   needs no lease), so N resources of one reference wait for one pull, not for N turns of
//!   the lease.
//! - Within one process the lease is not the only guard: a resource holding the lease does not
//!   start a pull of a reference while another resource of this process has one of it in
//!   flight (it waits as for a held lease, keeping the lease). A lease can expire under a
//!   running pull whose renewals keep failing; the process still knows its own pull runs.
//! - A failed pull waits out its retry without the lease, so the other resources of the
//!   reference pull in the meantime.
//! - At most `pullRetryLimit + 1` pulls per resource; then Failed (`PullFailed`), terminally,
//!   with the last pull's error. A pull or an inspection the runtime refuses as invalid (Docker's
//!   400) is Failed at once (`ReferenceRefused`): no attempt can succeed.
//! - An inspection the runtime cannot answer (a 500, no reply) is retried per operation kind,
//!   1 s doubling to 30 s, for ever, with the error in status; the resource is reported as
//!   retrying (not steady) meanwhile, also under policy `never`.
//! - The first verified image id is pinned in status and never changes. If that image
//!   disappears the resource becomes Unavailable; it is never pulled again.
//! - A NotFound on the inspection right after a pull is retried within a bounded budget (reset
//!   after a successful inspection) without pulling again.
//! - Deleting the resource cancels an in-flight pull; the runtime image is never removed.
//! - With `spec.build` the image is built instead of pulled, whatever the policy (a build is how
//!   it is made; a tag already present may be stale), under the same lease, the same attempt
//!   count and the same verification and pinning; a build the runtime fails as invalid (a step
//!   that fails, a bad Dockerfile) is `Failed` (`BuildFailed`) at once, with the builder's
//!   message. Its output is the image's `stdout`, as a pull's progress is.

use crate::api::{
    ContainerImage, ContainerImageSpec, ContainerImageStatus, ImagePhase, Object, ObjectKey, PullPolicy, Resource, Uid,
    names, normalize_image_reference, reasons,
};
use crate::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
use crate::lease::{Acquire, LeaseClient, lease_name};
use crate::runtime::{ImageBuild, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use crate::store::StoreResult;
use crate::time::{MonoTime, Now};
use crate::toolkit::{self, Cleanup, Finalizer, OpTracker, Retry, RetryPolicy, write_status};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often a resource waiting for another's pull lease looks whether the image is there.
const LOOK_WHILE_WAITING: Duration = Duration::from_secs(2);
/// How long a pull lease lasts without renewal.
pub const PULL_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How soon a pull's lease renewal that did not go through (a conflict, a read in between) is
/// tried again.
const RENEW_AGAIN: Duration = Duration::from_millis(100);
/// Inspections allowed to answer NotFound right after a pull before the image counts as failed.
pub const VERIFY_BUDGET: u32 = 5;
/// Progress lines kept in status.
const PROGRESS_LINES: usize = 20;
/// Held until an in-flight pull is cancelled and the pull lease released. Cleanup also runs once
/// it is gone: another engine may have removed it while this one still pulls or holds the lease.
const IMAGE_FINALIZER: Finalizer<'static> = Finalizer::new(names::FINALIZER_IMAGE).always_clean_up();
/// After failed pull attempt `n`: 2 s, 4 s, then 5 s. Pulls are bounded by `pullRetryLimit`,
/// counted in status, not by this policy.
const PULL_RETRY: RetryPolicy =
    RetryPolicy::exponential(Duration::from_secs(1), Duration::from_secs(5)).with_max_doublings(3);
/// After any other failed runtime operation (an inspection the runtime could not answer), per
/// operation kind: 1 s, 2 s, ... up to 30 s, for ever (a read is always safe to retry).
const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(500), Duration::from_secs(30));

/// The name of the lease that serializes pulls of `reference`: one per *normalized* reference, so
/// `busybox`, `busybox:latest` and `docker.io/library/busybox:latest` share it.
pub fn pull_lease_name(reference: &str) -> String {
    lease_name("pull", &normalize_image_reference(reference))
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Op {
    /// Is the image present? (policy `missing` / `never`, or re-evaluation under the lease)
    Check,
    Pull,
    /// Inspect right after a pull.
    Verify,
    /// Inspect the pinned id.
    Monitor,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// Decide from the policy whether to pull.
    Start,
    /// The image is not present (or policy `always`): pull under the lease.
    NeedPull,
    /// The lease is held: look once more before pulling (policy `missing`).
    Recheck,
    /// Attempt `attempt` is being written to status; the pull waits until the store has it.
    Counting { attempt: u32 },
    /// Pull under the lease.
    PullNow,
    /// Pulled: inspect until verified, within the budget.
    Verify { budget: u32 },
}

/// What this engine knows about one image resource.
#[derive(Debug)]
struct Image {
    policy: PullPolicy,
    /// Built, not pulled.
    build: bool,
    step: Step,
    /// A verified id not yet written to status.
    verified: Option<String>,
    pull_attempts: u32,
    progress: Vec<String>,
    /// Terminal: the reason (one of [`reasons`]) and the message.
    failure: Option<(&'static str, String)>,
    waiting: Option<String>,
    /// The last failed pull, in words: what giving up after the last attempt reports.
    pull_error: Option<String>,
    missing: bool,
    inspected_at: Option<MonoTime>,
    /// When it last looked for the image while waiting for the lease.
    looked_while_waiting: Option<MonoTime>,
}

type Tracked = toolkit::Tracked<Op, Image>;

impl Image {
    fn new(policy: PullPolicy, build: bool, status: &ContainerImageStatus) -> Self {
        Image {
            policy,
            build,
            step: Step::Start,
            verified: None,
            pull_attempts: status.pull_attempts,
            progress: status.progress.clone(),
            failure: None,
            waiting: None,
            pull_error: None,
            missing: false,
            inspected_at: None,
            looked_while_waiting: None,
        }
    }
}

#[derive(Debug)]
pub struct ContainerImageController {
    monitor_interval: Duration,
    ops: OpTracker<Op, Image>,
    leases: LeaseClient,
    /// The resource of this process pulling each normalized reference: set when a pull starts,
    /// dropped when its reply comes or it is cancelled (and, should a pull end another way,
    /// when [`Self::pulling_beside`] finds it no longer in flight).
    pulls: BTreeMap<String, Uid>,
}

impl ContainerImageController {
    pub fn new(monitor_interval: Duration) -> Self {
        ContainerImageController {
            monitor_interval,
            ops: OpTracker::new(),
            leases: LeaseClient::default(),
            pulls: BTreeMap::new(),
        }
    }

    /// Start `op`; its reply reconciles the object again.
    fn runtime(&mut self, ctx: &mut Context<'_>, uid: &Uid, op: Op, request: RuntimeRequest) -> ReconcileResult {
        self.ops.start_runtime(ctx, uid, op, request);
        Ok(Action::done())
    }

    /// Acquire (or keep) the pull lease; returns whether it is held.
    fn lease(&mut self, ctx: &mut Context<'_>, uid: &Uid, reference: &str) -> Acquire {
        let normalized = normalize_image_reference(reference);
        let holder = crate::lease::holder(ctx.identity(), uid);
        self.leases.acquire(ctx, &lease_name("pull", &normalized), &normalized, &holder, PULL_LEASE_DURATION)
    }

    /// Another resource of this process whose pull of `normalized` is in flight (forgetting a
    /// record whose pull has ended).
    fn pulling_beside(&mut self, uid: &Uid, normalized: &str) -> Option<Uid> {
        let puller = self.pulls.get(normalized)?.clone();
        if !pull_in_flight(&self.ops, &puller) {
            self.pulls.remove(normalized);
            return None;
        }
        (puller != *uid).then_some(puller)
    }

    fn release(&mut self, ctx: &mut Context<'_>, uid: &Uid, reference: &str) {
        let holder = crate::lease::holder(ctx.identity(), uid);
        self.leases.release(ctx, &pull_lease_name(reference), &holder);
    }

    /// One step of making the image present: check, pull under the lease, verify, monitor.
    fn advance(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let uid = obj.metadata.uid.clone();
        let spec = ctx.cache().spec::<ContainerImage>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let status = ctx.cache().status::<ContainerImage>(obj).map_err(|e| ReconcileError(e.to_string()))?;
        let now = ctx.now();
        let monitor = self.monitor_interval;
        let t = &mut self.ops.entry_with(obj, || Image::new(spec.pull_policy, spec.build.is_some(), &status)).state;
        // Pinned: only watch that it stays.
        if let Some(pinned) = status.image_id.clone().or_else(|| t.verified.clone()) {
            let stale = t.inspected_at.is_none_or(|at| now.mono.since(at) >= monitor);
            if status.image_id.is_some() && stale {
                return self.runtime(ctx, &uid, Op::Monitor, RuntimeRequest::InspectImage { reference: pinned });
            }
            let phase = if t.missing { ImagePhase::Unavailable } else { ImagePhase::Ready };
            let message =
                t.missing.then(|| format!("image {pinned} was removed from the runtime; it is not pulled again"));
            let next = ContainerImageStatus { phase, image_id: Some(pinned), message, ..(*status).clone() };
            write_status::<ContainerImage>(ctx, obj, &status, next);
            return Ok(Action::requeue(monitor));
        }
        if status.phase == ImagePhase::Failed || t.failure.is_some() {
            let (reason, message) = match t.failure.clone() {
                Some((reason, message)) => (Some(reason.to_string()), Some(message)),
                None => (status.reason.clone(), status.message.clone()),
            };
            let message = if crate::bugs::on(crate::bugs::Bug::FailedImageKeepsOldMessage) {
                status.message.clone()
            } else {
                message
            };
            let next = ContainerImageStatus { phase: ImagePhase::Failed, reason, message, ..(*status).clone() };
            write_status::<ContainerImage>(ctx, obj, &status, next);
            return Ok(Action::done());
        }
        if let Some(waiting) = t.waiting.as_ref().filter(|_| !matches!(t.step, Step::Counting { .. })) {
            let next = ContainerImageStatus {
                phase: ImagePhase::Pending,
                message: Some(waiting.clone()),
                ..(*status).clone()
            };
            write_status::<ContainerImage>(ctx, obj, &status, next);
        }
        let reference = spec.image.clone();
        match t.step.clone() {
            Step::Start => match spec.pull_policy {
                _ if spec.build.is_some() => {
                    t.step = Step::NeedPull;
                    self.advance(ctx, obj)
                }
                PullPolicy::Always => {
                    t.step = Step::NeedPull;
                    self.advance(ctx, obj)
                }
                PullPolicy::Missing | PullPolicy::Never => {
                    self.runtime(ctx, &uid, Op::Check, RuntimeRequest::InspectImage { reference })
                }
            },
            Step::NeedPull | Step::Counting { .. } | Step::PullNow | Step::Recheck => {
                self.pull_under_lease(ctx, obj, &spec, &status)
            }
            Step::Verify { .. } => self.runtime(ctx, &uid, Op::Verify, RuntimeRequest::InspectImage { reference }),
        }
    }

    fn pull_under_lease(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &ContainerImageSpec,
        status: &ContainerImageStatus,
    ) -> ReconcileResult {
        let uid = obj.metadata.uid.clone();
        let normalized = normalize_image_reference(&spec.image);
        let lease = if crate::bugs::on(crate::bugs::Bug::PullWithoutLease) {
            Acquire::Held
        } else {
            self.lease(ctx, &uid, &spec.image)
        };
        match lease {
            // The lease write's reply does not trigger a reconcile by itself (nothing watches
            // leases): ask for one as soon as it is in.
            Acquire::Pending => Ok(Action::requeue(Duration::from_millis(1))),
            Acquire::Contended { holder } => {
                let message = format!("waiting for the pull lease of {normalized} (held by {holder})");
                self.wait_for_pull(ctx, obj, spec, status, message)
            }
            // Ours, but the lease expired under this process's running pull of the reference
            // (its renewals kept failing) and this resource took it: wait for that pull too.
            Acquire::Held if let Some(puller) = self.pulling_beside(&uid, &normalized) => {
                let message = format!("waiting for this engine's pull of {normalized} (by resource {puller})");
                self.wait_for_pull(ctx, obj, spec, status, message)
            }
            Acquire::Held => {
                let Some(t) = self.ops.get_mut(&uid).map(|t| &mut t.state) else { return Ok(Action::done()) };
                match t.step.clone() {
                    // The image may have arrived while we waited for the lease.
                    Step::NeedPull if spec.pull_policy == PullPolicy::Missing && spec.build.is_none() => {
                        t.step = Step::Recheck;
                        self.runtime(
                            ctx,
                            &uid,
                            Op::Check,
                            RuntimeRequest::InspectImage { reference: spec.image.clone() },
                        )
                    }
                    Step::Recheck => self.runtime(
                        ctx,
                        &uid,
                        Op::Check,
                        RuntimeRequest::InspectImage { reference: spec.image.clone() },
                    ),
                    // The attempt is durably counted (our write is in the cache): pull.
                    Step::Counting { attempt } if status.pull_attempts >= attempt => {
                        t.step = Step::PullNow;
                        self.pulls.insert(normalized, uid.clone());
                        self.ops.start_runtime(ctx, &uid, Op::Pull, make_request(spec));
                        // Come back to renew the lease for as long as the pull takes.
                        Ok(Action::requeue(PULL_LEASE_DURATION / 4))
                    }
                    // Count the attempt in status first, and pull only once that write has landed:
                    // neither a crash nor a failed write can hand out pulls beyond the limit.
                    step => {
                        let attempt = match step {
                            Step::Counting { attempt } => attempt,
                            _ => t.pull_attempts.max(status.pull_attempts) + 1,
                        };
                        t.pull_attempts = attempt;
                        t.step = Step::Counting { attempt };
                        // No longer waiting: a second status write in this reconcile would race
                        // this one (and lose, and retry, and race again).
                        t.waiting = None;
                        let next = ContainerImageStatus {
                            phase: ImagePhase::Pulling,
                            pull_attempts: attempt,
                            message: None,
                            ..(*status).clone()
                        };
                        if !write_status::<ContainerImage>(ctx, obj, status, next) {
                            // Nothing to write, yet the cache does not show the count: look again soon.
                            return Ok(Action::requeue(Duration::from_millis(100)));
                        }
                        if crate::bugs::on(crate::bugs::Bug::PullBeforeAttemptCounted) {
                            t.step = Step::PullNow;
                            self.pulls.insert(normalized, uid.clone());
                            self.ops.start_runtime(ctx, &uid, Op::Pull, make_request(spec));
                            return Ok(Action::requeue(PULL_LEASE_DURATION / 4));
                        }
                        Ok(Action::done())
                    }
                }
            }
        }
    }

    /// Someone else pulls the reference (`message` says who): stay Pending and look now and then
    /// whether the image is there already.
    fn wait_for_pull(
        &mut self,
        ctx: &mut Context<'_>,
        obj: &Object,
        spec: &ContainerImageSpec,
        status: &ContainerImageStatus,
        message: String,
    ) -> ReconcileResult {
        let uid = obj.metadata.uid.clone();
        // What we wait for now is the other pull: the message of an earlier failed attempt must
        // not be written back over this one on the next reconcile (the two would alternate).
        if let Some(t) = self.ops.get_mut(&uid) {
            t.state.waiting = Some(message.clone());
        }
        let next = ContainerImageStatus { phase: ImagePhase::Pending, message: Some(message), ..(*status).clone() };
        write_status::<ContainerImage>(ctx, obj, status, next);
        // What the other pulls may be there already: look (no lease needed to look).
        let now = ctx.now().mono;
        if spec.pull_policy == PullPolicy::Missing
            && spec.build.is_none()
            && let Some(t) = self.ops.get_mut(&uid).map(|t| &mut t.state)
            && t.step == Step::NeedPull
            && t.looked_while_waiting.is_none_or(|at| now.since(at) >= LOOK_WHILE_WAITING)
        {
            t.looked_while_waiting = Some(now);
            let look = RuntimeRequest::InspectImage { reference: spec.image.clone() };
            return self.runtime(ctx, &uid, Op::Check, look);
        }
        Ok(Action::requeue(Duration::from_millis(500)))
    }

    /// Cancel an in-flight pull and let the lease go; the runtime image stays.
    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let uid = obj.metadata.uid.clone();
        let reference = obj.spec::<ContainerImage>().map(|s| s.image).unwrap_or_default();
        self.ops.cancel(ctx, &uid);
        self.pulls.retain(|_, puller| *puller != uid);
        self.release(ctx, &uid, &reference);
        Ok(Cleanup::Done)
    }

    fn handle(tracked: &mut Tracked, now: Now, op: Op, result: &RuntimeResult) {
        let (t, retry) = (&mut tracked.state, &mut tracked.retry);
        match (op, result) {
            (Op::Check, Ok(RuntimeReply::Image(image))) => {
                t.verified = Some(image.id.clone());
                t.inspected_at = Some(now.mono);
                t.waiting = None;
            }
            (Op::Check, Err(RuntimeError::NotFound(_))) if t.policy == PullPolicy::Never => {
                t.waiting = Some("the image is not present and pullPolicy is never: waiting for it to appear".into());
                retry.wait_until(now.mono + Duration::from_secs(5));
            }
            (Op::Check, Err(RuntimeError::NotFound(_))) => match t.step {
                Step::Recheck => t.step = Step::PullNow,
                _ => t.step = Step::NeedPull,
            },
            (Op::Pull, Ok(RuntimeReply::Pulled { progress } | RuntimeReply::Built { progress })) => {
                let skip = progress.len().saturating_sub(PROGRESS_LINES);
                t.progress = progress[skip..].to_vec();
                t.step = Step::Verify { budget: VERIFY_BUDGET };
                t.waiting = None;
            }
            // The builder failed on these inputs: they fail the same way every time.
            (Op::Pull, Err(RuntimeError::Invalid(message))) if t.build => {
                t.failure = Some((reasons::BUILD_FAILED, format!("the build failed: {message}")));
            }
            // The runtime says no pull of this reference can succeed: spend no more attempts.
            (Op::Pull, Err(RuntimeError::Invalid(message))) => {
                t.failure =
                    Some((reasons::REFERENCE_REFUSED, format!("the runtime refused to pull the image: {message}")));
            }
            (Op::Pull, Err(error)) => {
                t.step = Step::NeedPull;
                let what = if t.build { "build" } else { "pull" };
                let failed = format!("{what} attempt {} failed: {error}", t.pull_attempts);
                t.waiting = Some(failed.clone());
                t.pull_error = Some(failed);
                // Counted by attempts (kept in status), not by failures in a row.
                retry.wait_until(now.mono + PULL_RETRY.delay(t.pull_attempts));
            }
            (Op::Verify, Ok(RuntimeReply::Image(image))) => {
                t.verified = Some(image.id.clone());
                t.inspected_at = Some(now.mono);
            }
            (Op::Verify, Err(RuntimeError::NotFound(_))) => {
                if let Step::Verify { budget } = t.step {
                    let left = budget.saturating_sub(1);
                    if left == 0 {
                        let message = "the image was pulled but inspecting it kept answering NotFound".to_string();
                        t.failure = Some((reasons::NOT_VERIFIED, message));
                    } else {
                        t.step = Step::Verify { budget: left };
                        retry.wait_until(now.mono + Duration::from_millis(200) * (VERIFY_BUDGET - left));
                    }
                }
            }
            (Op::Monitor, Ok(RuntimeReply::Image(_))) => {
                t.missing = false;
                t.inspected_at = Some(now.mono);
            }
            (Op::Monitor, Err(RuntimeError::NotFound(_))) => {
                t.missing = true;
                t.inspected_at = Some(now.mono);
            }
            (Op::Check | Op::Verify, Err(RuntimeError::Invalid(message))) => {
                let message = format!("the runtime refused to inspect the image: {message}");
                t.failure = Some((reasons::REFERENCE_REFUSED, message));
            }
            // The runtime could not answer (a 500, no reply): retryable, visibly, slower each time.
            (_, Err(error)) => {
                let _: Retry = retry.fail(op, now.mono, &RETRY);
                let attempts = retry.failures(op);
                t.waiting = Some(format!("cannot inspect the image ({attempts} attempts): {error}; retrying"));
                return;
            }
            (_, Ok(other)) => {
                tracing::warn!(?op, ?other, "unexpected runtime reply");
                let _: Retry = retry.fail(op, now.mono, &RETRY);
                return;
            }
        }
        retry.succeed(op);
    }

    /// The finalizer is in place: keep the lease of a running pull alive, wait out a retry,
    /// give up past the pull limit, or take the next step.
    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        if let Some(in_flight) = self.ops.get(&obj.metadata.uid).and_then(|t| t.in_flight()) {
            if in_flight.op == Op::Pull {
                // Keep the lease alive for as long as the pull takes. A renewal that met a
                // conflict is read and written again soon, not a quarter of the lease later: two
                // conflicts in a row, each followed by that wait, outlasted the lease, and
                // another resource took it and pulled the same reference beside ours.
                let (uid, reference) =
                    (obj.metadata.uid.clone(), obj.spec::<ContainerImage>().map(|s| s.image).unwrap_or_default());
                let again = match self.lease(ctx, &uid, &reference) {
                    Acquire::Held => PULL_LEASE_DURATION / 4,
                    Acquire::Pending | Acquire::Contended { .. }
                        if crate::bugs::on(crate::bugs::Bug::RenewalRetriedLate) =>
                    {
                        PULL_LEASE_DURATION / 4
                    }
                    Acquire::Pending | Acquire::Contended { .. } => RENEW_AGAIN,
                };
                return Ok(Action::requeue(again));
            }
            return Ok(Action::done());
        }
        if let Some(tracked) = self.ops.get_mut(&obj.metadata.uid) {
            let t = &mut tracked.state;
            if let Some(delay) = tracked.retry.remaining(ctx.now().mono) {
                let waiting = t.waiting.clone();
                if let (Some(message), Ok(status)) = (waiting, obj.status::<ContainerImage>())
                    && status.image_id.is_none()
                    && status.phase != ImagePhase::Failed
                {
                    let next =
                        ContainerImageStatus { phase: ImagePhase::Pending, message: Some(message), ..status.clone() };
                    write_status::<ContainerImage>(ctx, obj, &status, next);
                }
                // Policy `never` waits for the image to appear, which is a steady state; anything
                // else waiting here (an inspection that failed, also under policy `never`) is a
                // failed step about to be retried.
                let steady = t.policy == PullPolicy::Never && !tracked.retry.any_failing();
                // A failed pull waits out its retry without the lease: the resources waiting
                // for it take their turns meanwhile, rather than one after another's whole
                // run of attempts and backoffs (which outlasted the convergence bound with six
                // resources of one reference that could not be pulled).
                if t.step == Step::NeedPull {
                    self.release_if_held(ctx, obj);
                }
                return Ok(if steady { Action::requeue(delay) } else { Action::retry_after(delay) });
            }
            // A failed pull with attempts left goes back to waiting for the lease; past the limit
            // it is terminal.
            let limit = obj.spec::<ContainerImage>().map(|s| s.pull_retry_limit).unwrap_or(0);
            if t.step == Step::NeedPull && t.failure.is_none() && t.pull_attempts > limit {
                let last = t.pull_error.clone().or_else(|| t.waiting.clone()).unwrap_or_default();
                t.failure =
                    Some((reasons::PULL_FAILED, format!("gave up after {} pull attempts: {last}", t.pull_attempts)));
            }
        }
        let uid = obj.metadata.uid.clone();
        let result = self.advance(ctx, obj);
        if let Some(t) = self.ops.get(&uid)
            && (t.state.verified.is_some() || t.state.failure.is_some())
            && !t.is_busy()
        {
            // Done with pulling either way: let others have the lease.
            self.release_if_held(ctx, obj);
        }
        result
    }

    /// Let the pull lease of `obj`'s reference go if this resource holds it.
    fn release_if_held(&mut self, ctx: &mut Context<'_>, obj: &Object) {
        let Ok(spec) = obj.spec::<ContainerImage>() else { return };
        let holder = crate::lease::holder(ctx.identity(), &obj.metadata.uid);
        if self.leases.holds(&pull_lease_name(&spec.image), &holder, ctx.now().wall) {
            self.release(ctx, &obj.metadata.uid, &spec.image);
        }
    }
}

/// Whether resource `uid` has a pull (or build) in flight.
fn pull_in_flight(ops: &OpTracker<Op, Image>, uid: &Uid) -> bool {
    ops.get(uid).and_then(|t| t.in_flight()).is_some_and(|f| f.op == Op::Pull)
}

/// The request that makes the image: a pull of the reference, or a build tagged with it.
fn make_request(spec: &ContainerImageSpec) -> RuntimeRequest {
    match &spec.build {
        None => RuntimeRequest::PullImage { reference: spec.image.clone() },
        Some(build) => RuntimeRequest::BuildImage(ImageBuild {
            context: build.context.clone(),
            dockerfile: build.dockerfile.clone().unwrap_or_else(|| "Dockerfile".into()),
            build_args: build.build_args.clone(),
            target: build.target.clone(),
            labels: build.labels.clone(),
            tag: spec.image.clone(),
        }),
    }
}

impl Controller for ContainerImageController {
    fn name(&self) -> &str {
        "container-image"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![Watch::own(ContainerImage::KIND)]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        IMAGE_FINALIZER.reconcile(ctx, obj, self, Self::apply, Self::cleanup)
    }

    fn on_store_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        self.leases.on_store_result(now, op, result);
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        Self::handle(tracked, now, done.op, result);
        if done.op == Op::Pull {
            // That pull is over: only pulls in flight stay on record.
            let ops = &self.ops;
            self.pulls.retain(|_, puller| pull_in_flight(ops, puller));
        }
    }
}
