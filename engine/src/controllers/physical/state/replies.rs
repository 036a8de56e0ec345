//! How each runtime reply (and the uncached read of the object itself) changes what the
//! controller knows about the object's container.
//!
//! *Failures, and when they end*
//! - Retryable ones (a 500, no reply, a 409 while something else happens) back off per operation
//!   kind with [`RETRY`], for ever: a success of another operation never shortens the wait.
//! - A create the runtime refuses as invalid (Docker's 400) or answers with NotFound (no such
//!   image) was not applied and cannot succeed as written: `Failed` at once, never verified.
//! - A failed start is judged on what the runtime recorded on the container: the inspection
//!   that follows it shows Docker's `State.Error` and exit code. A start refused as invalid, or
//!   one whose failure the container records for the whole [`START_RETRY`] budget, is `Failed`
//!   with that message. A start that fails without the container recording anything is the
//!   daemon failing, not the container: it is retried at the policy's cap, for ever.

use super::{
    CREATE_REPORT_AFTER, Confirmation, Container, FailedStart, Failure, INSPECT_BUDGET, NOTFOUND_BUDGET,
    NOTFOUND_SETTLE, Observed, Op, RETRY, START_RETRY, Tracked, Verify,
};
use crate::api::{names, reasons};
use crate::runtime::{ContainerInfo, ContainerState, RuntimeError, RuntimeReply, RuntimeResult};
use crate::store::{StoreReply, StoreResult};
use crate::time::Now;
use crate::toolkit::{Retry, RetryGate};
use std::time::Duration;

/// The text of a runtime error, without the kind's prefix.
fn runtime_message(error: &RuntimeError) -> &str {
    match error {
        RuntimeError::NotFound(m)
        | RuntimeError::Conflict(m)
        | RuntimeError::Uncertain(m)
        | RuntimeError::Invalid(m)
        | RuntimeError::Transient(m) => m,
    }
}

impl Container {
    fn observe(&mut self, now: Now, info: &ContainerInfo) {
        self.runtime_id = Some(info.id.clone());
        self.observed = Some(Observed::State(info.state, info.exit_code));
        self.inspected_at = Some(now.mono);
        self.removing_checks = if info.state == ContainerState::Removing { self.removing_checks + 1 } else { 0 };
    }

    /// A start failed: look at the container before deciding (what the runtime recorded on it
    /// tells a container that cannot start from a daemon that failed the request).
    fn start_failed(&mut self, now: Now, retry: &mut RetryGate<Op>, error: &RuntimeError) {
        self.inspected_at = None;
        let refused = matches!(error, RuntimeError::Invalid(_));
        if !refused {
            // Within the budget this sets the wait before the inspection and the next start;
            // past it no wait is set, so the inspection that judges it comes at once.
            let _: Retry = retry.fail(Op::Start, now.mono, &START_RETRY);
        }
        self.failed_start = Some(FailedStart { message: runtime_message(error).to_string(), refused });
    }

    /// The inspection after a failed start: is the failure the container's own, and for good?
    fn judge_failed_start(&mut self, now: Now, retry: &mut RetryGate<Op>, info: &ContainerInfo, failed: FailedStart) {
        // Running, or exited without a start failure on record: it did start (the reply was
        // lost or wrong), and what it does now is its own business.
        let started = match info.state {
            ContainerState::Running => true,
            ContainerState::Exited => info.error.is_none(),
            ContainerState::Created | ContainerState::Removing => false,
        };
        if started {
            retry.succeed(Op::Start);
            self.retrying = None;
            return;
        }
        let attempts = retry.failures(Op::Start);
        if !failed.refused && !START_RETRY.exhausted_by(attempts) {
            return; // the wait the failure set stands; then start again
        }
        let message = match (&info.error, failed.refused) {
            (Some(recorded), false) => format!("cannot start the container ({attempts} attempts): {recorded}"),
            (_, true) => format!("the runtime refused to start the container: {}", failed.message),
            (None, false) => {
                // The request failed but the container records no failed start: the daemon is
                // failing, not the container. Keep trying, slowly.
                tracing::warn!(attempts, last = %failed.message, "start keeps failing without a record on the container");
                retry.wait_until(now.mono + START_RETRY.cap());
                self.retrying =
                    Some(format!("cannot start the container ({attempts} attempts): {}; retrying", failed.message));
                return;
            }
        };
        self.failure = Some(Failure { reason: reasons::START_FAILED, message, exit_code: info.exit_code });
    }

    /// Right after a create, or after a restart of the daemon or of this engine (which then
    /// cannot know the container is fresh), the runtime may not show the container yet: look
    /// again a few times before calling it Missing, which is final.
    fn not_found(&mut self, now: Now, retry: &mut RetryGate<Op>) {
        let since = *self.notfound_since.get_or_insert(now.mono);
        if now.mono.since(since) < NOTFOUND_SETTLE && self.notfound_retries < NOTFOUND_BUDGET {
            self.notfound_retries += 1;
            self.inspected_at = None;
            retry.wait_until(now.mono + Duration::from_millis(200) * (1 << self.notfound_retries));
        } else {
            self.observed = Some(Observed::Missing);
        }
    }
}

/// What the uncached read of the object itself says: live with our uid, or stale. Any other
/// answer (no reply, a 500) is retried with [`RETRY`].
pub(in crate::controllers::physical) fn handle_confirmation(
    tracked: &mut Tracked,
    now: Now,
    op: Op,
    result: &StoreResult,
) {
    if op != Op::ConfirmSelf {
        return;
    }
    let uid = tracked.uid().clone();
    let t = &mut tracked.state;
    match result {
        Ok(StoreReply::Object(found)) => {
            let live = found.metadata.uid == uid && !found.metadata.is_deleting();
            t.confirmation = if live { Confirmation::Live } else { Confirmation::Stale };
            tracked.retry.succeed(op);
        }
        Err(e) if e.is_not_found() => {
            t.confirmation = Confirmation::Stale;
            tracked.retry.succeed(op);
        }
        _ => {
            let _: Retry = tracked.retry.fail(op, now.mono, &RETRY);
        }
    }
}

/// What a runtime reply to `op` tells about the object's container.
pub(in crate::controllers::physical) fn handle_result(tracked: &mut Tracked, now: Now, op: Op, result: &RuntimeResult) {
    use RuntimeError as E;
    use RuntimeReply as R;
    let uid = tracked.uid().clone();
    let (t, retry) = (&mut tracked.state, &mut tracked.retry);
    match (op, result) {
        (Op::Create, Ok(R::Created { id })) => {
            t.retrying = None;
            t.runtime_id = Some(id.clone());
            t.observed = Some(Observed::State(ContainerState::Created, None));
            t.inspected_at = Some(now.mono);
            t.verify = None;
        }
        // Nothing was created, and nothing will be: no verification, no retry.
        (Op::Create, Err(E::Invalid(message))) => {
            let message = format!("the runtime refused to create the container: {message}");
            t.failure = Some(Failure::new(reasons::CREATE_REFUSED, message));
        }
        (Op::Create, Err(E::NotFound(message))) => {
            t.failure = Some(Failure::new(reasons::IMAGE_NOT_FOUND, format!("cannot create the container: {message}")));
        }
        (Op::Create, Err(E::Conflict(_))) => t.verify = Some(Verify::AfterConflict),
        (Op::Create, Err(e)) => {
            t.verify = Some(Verify::AfterUncertain);
            t.uncertain_create_at = Some(now.mono);
            t.late_create_checked = false;
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            let attempts = retry.failures(op);
            if attempts >= CREATE_REPORT_AFTER {
                t.retrying = Some(format!("cannot create the container ({attempts} attempts): {e}; retrying"));
            }
        }
        (Op::Verify, Ok(R::Containers(found))) => match (found.first(), t.verify) {
            (Some(ours), _) => {
                t.observe(now, ours);
                t.verify = None;
                t.retrying = None;
            }
            (None, Some(Verify::AfterConflict)) => t.verify = Some(Verify::Holder),
            (None, _) => t.verify = None,
        },
        (Op::CopyFiles, Ok(_)) => t.files_copied = true,
        // Gone: what follows (the start, an inspection) finds out.
        (Op::CopyFiles, Err(E::NotFound(_))) => t.inspected_at = None,
        (Op::CopyFiles, Err(E::Invalid(message) | E::Conflict(message))) => {
            let message = format!("copying the files into the container failed: {message}");
            t.failure = Some(Failure::new(reasons::FILE_COPY_FAILED, message));
        }
        (Op::CopyFiles, Err(e)) => {
            t.retrying = Some(format!("copying the files into the container failed, retrying: {e}"));
            let _: Retry = retry.fail(Op::CopyFiles, now.mono, &RETRY);
            return;
        }
        (Op::Start, Ok(_)) => {
            t.observed = Some(Observed::State(ContainerState::Running, None));
            t.failed_start = None;
            t.retrying = None;
        }
        // A NotFound from a start is judged by the inspection that follows, as any failed start:
        // a container that is gone is not found again; one that is there and records why (a
        // network it is attached to was removed) failed to start, within the start budget.
        (Op::Start, Err(e)) => t.start_failed(now, retry, e),
        // Stopped: inspect to learn the exit code.
        (Op::Stop, Ok(_)) => t.inspected_at = None,
        (Op::Inspect, Ok(R::Container(info))) => {
            t.observe(now, info);
            t.notfound_retries = 0;
            t.notfound_since = None;
            t.inspect_message = None;
            if let Some(failed) = t.failed_start.take() {
                t.judge_failed_start(now, retry, info, failed);
            }
        }
        (Op::ResolveName, Ok(R::Container(holder)))
            if holder.labels.get(names::LABEL_OWNER_UID).map(String::as_str) == Some(uid.0.as_str()) =>
        {
            // Ours, created by a request whose reply we never had; it did not list yet.
            t.observe(now, holder);
            t.verify = None;
            t.retrying = None;
        }
        (Op::ResolveName, Ok(R::Container(holder))) if t.replace_existing => {
            t.stranger = Some(holder.id.clone());
            t.verify = Some(Verify::Replace);
        }
        (Op::ResolveName, Ok(R::Container(_))) => {
            t.failure = Some(Failure::new(
                reasons::NAME_TAKEN,
                "the container name is taken by a container drydock did not create for this object (set replaceExisting to replace it)".into(),
            ));
        }
        (Op::ResolveName, Err(E::NotFound(_))) => {
            // Nobody shows under the name: a create still in progress holds it (ours from an
            // earlier life, or anyone's), or it was freed meanwhile. Create again, with the
            // create's backoff: the container shows by then (a conflict we can resolve) or the
            // name is free.
            t.verify = None;
            let _: Retry = retry.fail(Op::Create, now.mono, &RETRY);
            let attempts = retry.failures(Op::Create);
            if attempts >= CREATE_REPORT_AFTER {
                t.retrying = Some(format!(
                    "cannot create the container ({attempts} attempts): its name is held by a create that has not completed; retrying"
                ));
            }
        }
        (Op::RemoveStranger, Ok(_) | Err(E::NotFound(_))) => {
            t.stranger = None;
            t.verify = None;
        }
        (Op::Inspect, Err(e)) if !matches!(e, E::NotFound(_)) => {
            let _: Retry = retry.fail(op, now.mono, &RETRY);
            let attempts = retry.failures(op);
            if attempts >= INSPECT_BUDGET {
                t.inspect_message = Some(format!("cannot inspect the runtime container ({attempts} attempts): {e}"));
            }
        }
        (Op::Stop | Op::Inspect, Err(E::NotFound(_))) => t.not_found(now, retry),
        (Op::Remove, Err(e @ E::NotFound(_))) if crate::bugs::on(crate::bugs::Bug::RemoveNotFoundRetried) => {
            t.retrying = Some(format!("removing the container failed, retrying: {e}"));
            let _: Retry = retry.fail(Op::Remove, now.mono, &RETRY);
        }
        (Op::Remove, Ok(_) | Err(E::NotFound(_))) => {
            t.removed = true;
            t.cleanup_verified = false;
        }
        // A create we never heard back from did make our container: it is ours, and the object
        // did not fail to get one (the failure was the retry meeting a changed world).
        (Op::FailureCheck, Ok(R::Containers(found))) => match found.first() {
            Some(ours) => {
                t.observe(now, ours);
                t.failure = None;
                t.verify = None;
                t.retrying = None;
            }
            None => t.failure_checked = true,
        },
        (Op::CleanupCheck, Ok(R::Containers(found))) => match found.first() {
            Some(leftover) => {
                t.runtime_id = Some(leftover.id.clone());
                t.removed = false;
            }
            None => t.cleanup_verified = true,
        },
        (_, Ok(other)) => tracing::warn!(?op, ?other, "unexpected runtime reply"),
        (_, Err(_)) => {
            if op == Op::Stop {
                t.inspected_at = None;
            }
            let _: Retry = retry.fail(op, now.mono, &RETRY);
        }
    }
    if result.is_ok() {
        retry.succeed(op);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::time::{MonoTime, WallTime};
    use crate::toolkit::OpTracker;
    use crate::toolkit::testing::widget;

    fn at(ms: u64) -> Now {
        Now::new(MonoTime(ms * 1_000_000), WallTime(ms))
    }

    fn container(state: ContainerState, exit_code: Option<i64>, error: Option<&str>) -> RuntimeResult {
        Ok(RuntimeReply::Container(ContainerInfo {
            id: "c1".into(),
            name: "ns-web".into(),
            image: "busybox".into(),
            labels: Default::default(),
            state,
            exit_code,
            error: error.map(str::to_string),
            ports: Vec::new(),
        }))
    }

    /// A start that fails with `error` at `ms`, then the inspection that follows it.
    fn fail_start(t: &mut Tracked, ms: u64, error: RuntimeError, inspected: RuntimeResult) {
        handle_result(t, at(ms), Op::Start, &Err(error));
        assert_eq!(t.state.inspected_at, None, "a failed start is always looked at");
        handle_result(t, at(ms + 1), Op::Inspect, &inspected);
    }

    fn port_taken() -> RuntimeError {
        RuntimeError::Transient("port is already allocated".into())
    }

    #[test]
    fn a_start_recorded_as_failed_three_times_is_failed_with_the_recorded_error() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let recorded = || {
            container(ContainerState::Created, Some(128), Some("Bind for 0.0.0.0:80 failed: port is already allocated"))
        };
        fail_start(t, 0, port_taken(), recorded());
        assert_eq!(t.state.failure, None);
        assert_eq!(t.retry.remaining(at(1).mono), Some(Duration::from_millis(999)), "1 s before the next start");
        fail_start(t, 1_000, port_taken(), recorded());
        assert_eq!(t.retry.remaining(at(1_001).mono), Some(Duration::from_millis(1_999)), "then 2 s");
        fail_start(t, 3_000, port_taken(), recorded());
        let failure = t.state.failure.clone().unwrap();
        assert_eq!(failure.reason, reasons::START_FAILED);
        assert_eq!(failure.exit_code, Some(128));
        assert_eq!(
            failure.message,
            "cannot start the container (3 attempts): Bind for 0.0.0.0:80 failed: port is already allocated"
        );
    }

    #[test]
    fn a_start_refused_as_invalid_is_failed_at_once() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let refused = RuntimeError::Invalid("exec: \"nope\": executable file not found in $PATH".into());
        handle_result(t, at(0), Op::Start, &Err(refused));
        assert_eq!(t.retry.remaining(at(0).mono), None, "no wait: the inspection that judges it comes at once");
        handle_result(t, at(1), Op::Inspect, &container(ContainerState::Created, Some(127), Some("exec failed")));
        let failure = t.state.failure.clone().unwrap();
        assert_eq!((failure.reason, failure.exit_code), (reasons::START_FAILED, Some(127)));
        assert!(failure.message.contains("executable file not found"), "{}", failure.message);
    }

    #[test]
    fn a_start_that_did_happen_after_all_is_not_a_failure() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let lost = RuntimeError::Uncertain("timed out".into());
        fail_start(t, 0, lost.clone(), container(ContainerState::Running, None, None));
        fail_start(t, 10, lost, container(ContainerState::Exited, Some(0), None));
        assert_eq!((t.state.failure.clone(), t.retry.failures(Op::Start)), (None, 0));
    }

    #[test]
    fn starts_the_daemon_fails_without_a_record_go_on_at_the_cap_visibly() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let busy = || RuntimeError::Transient("500: busy".into());
        for (i, ms) in [0, 1_000, 3_000, 33_000].into_iter().enumerate() {
            fail_start(t, ms, busy(), container(ContainerState::Created, None, None));
            assert_eq!(t.state.failure, None, "attempt {}", i + 1);
        }
        assert_eq!(t.retry.remaining(at(33_001).mono), Some(START_RETRY.cap()));
        assert_eq!(t.state.retrying.as_deref(), Some("cannot start the container (4 attempts): 500: busy; retrying"));
        handle_result(t, at(63_001), Op::Start, &Ok(RuntimeReply::Done));
        assert_eq!((t.state.retrying.clone(), t.retry.failures(Op::Start)), (None, 0));
    }

    #[test]
    fn a_failure_is_checked_against_our_label_and_a_create_that_landed_unseen_is_adopted() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let ours = t.uid().0.clone();
        // The first create's reply is lost; the retry finds the image removed meanwhile.
        handle_result(t, at(0), Op::Create, &Err(RuntimeError::Uncertain("connection reset".into())));
        handle_result(t, at(1), Op::Verify, &Ok(RuntimeReply::Containers(Vec::new())));
        handle_result(t, at(300), Op::Create, &Err(RuntimeError::NotFound("No such image: busybox".into())));
        assert!(t.state.failure.is_some() && t.state.uncertain_create_at.is_some());
        // The first create did complete: the check finds it, and it is ours, not a failure.
        let mut info = match container(ContainerState::Created, None, None) {
            Ok(RuntimeReply::Container(info)) => info,
            other => panic!("{other:?}"),
        };
        std::sync::Arc::make_mut(&mut info.labels).insert(names::LABEL_OWNER_UID.into(), ours);
        handle_result(t, at(10_001), Op::FailureCheck, &Ok(RuntimeReply::Containers(vec![info])));
        assert_eq!((t.state.failure.clone(), t.state.runtime_id.as_deref()), (None, Some("c1")));
        // Nothing found: the failure stands, checked.
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        handle_result(t, at(0), Op::Create, &Err(RuntimeError::NotFound("No such image: busybox".into())));
        handle_result(t, at(10_001), Op::FailureCheck, &Ok(RuntimeReply::Containers(Vec::new())));
        assert!(t.state.failure.is_some() && t.state.failure_checked);
    }

    #[test]
    fn an_invalid_create_is_failed_and_never_verified() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        handle_result(t, at(0), Op::Create, &Err(RuntimeError::Invalid("invalid mount config".into())));
        assert_eq!(t.state.verify, None);
        let failure = t.state.failure.clone().unwrap();
        assert_eq!(failure.reason, reasons::CREATE_REFUSED);
        assert!(failure.message.ends_with("invalid mount config"));
    }

    #[test]
    fn a_create_backs_off_however_many_verifications_succeed() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let mut waits = Vec::new();
        for n in 0..4u64 {
            let ms = n * 100_000;
            handle_result(t, at(ms), Op::Create, &Err(RuntimeError::Transient("500: busy".into())));
            assert_eq!(t.state.verify, Some(Verify::AfterUncertain), "outcome unknown: verify first");
            waits.push(t.retry.remaining(at(ms).mono).unwrap());
            handle_result(t, at(ms + 1), Op::Verify, &Ok(RuntimeReply::Containers(Vec::new())));
        }
        let ms = Duration::from_millis;
        assert_eq!(waits, [ms(200), ms(400), ms(800), ms(1_600)]);
        assert!(t.state.retrying.as_deref().is_some_and(|m| m.starts_with("cannot create the container (4 attempts)")));
        assert_eq!(t.state.failure, None, "retryable: never Failed");
    }

    #[test]
    fn a_name_held_by_a_create_in_progress_is_waited_for_then_adopted() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        let ours = t.uid().0.clone();
        let conflict = || RuntimeError::Conflict("Conflict. The container name \"/ns-web\" is already in use".into());
        let nothing = || Ok(RuntimeReply::Containers(Vec::new()));
        let absent = || Err(RuntimeError::NotFound("No such container: ns-web".into()));
        let mut waits = Vec::new();
        for n in 0..3u64 {
            let ms = n * 100_000;
            handle_result(t, at(ms), Op::Create, &Err(conflict()));
            handle_result(t, at(ms + 1), Op::Verify, &nothing());
            assert_eq!(t.state.verify, Some(Verify::Holder), "nothing listed: look at who holds the name");
            handle_result(t, at(ms + 2), Op::ResolveName, &absent());
            assert_eq!((t.state.verify, t.state.failure.clone()), (None, None), "held by a create in progress");
            waits.push(t.retry.remaining(at(ms + 2).mono).unwrap());
        }
        let ms = Duration::from_millis;
        assert_eq!(waits, [ms(200), ms(400), ms(800)], "the create backs off");
        assert!(t.state.retrying.as_deref().is_some_and(|m| m.contains("held by a create that has not completed")));
        // The holder shows: ours by its uid label.
        handle_result(t, at(400_000), Op::Create, &Err(conflict()));
        handle_result(t, at(400_001), Op::Verify, &nothing());
        let mut holder = container(ContainerState::Created, None, None);
        if let Ok(RuntimeReply::Container(info)) = &mut holder {
            std::sync::Arc::make_mut(&mut info.labels).insert(names::LABEL_OWNER_UID.into(), ours);
        }
        handle_result(t, at(400_002), Op::ResolveName, &holder);
        assert_eq!((t.state.runtime_id.as_deref(), t.state.failure.clone()), (Some("c1"), None));
        assert_eq!(t.state.retrying, None);
    }

    #[test]
    fn a_name_held_by_a_stranger_is_name_taken() {
        let mut ops = OpTracker::<Op, Container>::new();
        let t = ops.entry(&widget("web"));
        handle_result(t, at(0), Op::Create, &Err(RuntimeError::Conflict("in use".into())));
        handle_result(t, at(1), Op::Verify, &Ok(RuntimeReply::Containers(Vec::new())));
        handle_result(t, at(2), Op::ResolveName, &container(ContainerState::Running, None, None));
        assert_eq!(t.state.failure.clone().map(|f| f.reason), Some(reasons::NAME_TAKEN));
        assert_eq!(t.state.runtime_id, None, "a stranger is never adopted");
    }
}
