//! What the physical-container controller knows about one object's runtime container: the
//! operations it sends, what it has observed, what it verifies, and why it failed. Nothing here
//! issues requests: the controller's reconcile (in the parent module) decides from this state
//! what to do next; how each reply changes the state is in `replies`.

mod replies;

pub(in crate::controllers::physical) use replies::{handle_confirmation, handle_result};

use crate::api::{ContainerPhase, PhysicalContainerStatus};
use crate::runtime::ContainerState;
use crate::time::MonoTime;
use crate::toolkit::{self, RetryPolicy};
use std::time::Duration;

/// Inspection errors in a row before they are reported in status (retrying continues, slower).
pub const INSPECT_BUDGET: u32 = 5;
/// How long NotFound answers may be the runtime lagging (a container just created, a daemon or
/// an engine just restarted) rather than the container being gone.
pub const NOTFOUND_SETTLE: Duration = Duration::from_secs(10);
/// NotFound answers in a row, within that window, before the container counts as Missing.
pub const NOTFOUND_BUDGET: u32 = 4;
/// Creates failing in a row before the failure is reported in status (retrying continues).
pub const CREATE_REPORT_AFTER: u32 = 3;

/// After failed runtime operations, per operation kind: 200 ms, 400 ms, ... up to 30 s, for ever
/// (they are retryable: a daemon that answers 500 or not at all may be back soon). A success of
/// one kind (an inspect) never shortens the wait of another (a create).
pub(super) const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(30));
/// After a failed start: 1 s, then 2 s; the third failure in a row that the container records
/// ends the object `Failed`. Starts the daemon fails without a record go on at 30 s.
pub(super) const START_RETRY: RetryPolicy =
    RetryPolicy::exponential(Duration::from_millis(500), Duration::from_secs(30)).with_budget(3);
/// A container seen `removing` is looked at again after 1 s, 2 s, ... up to 30 s, until it is
/// gone (then it is Missing) or back.
pub(super) const REMOVING_RECHECK: RetryPolicy =
    RetryPolicy::exponential(Duration::from_millis(500), Duration::from_secs(30));

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Create,
    /// After a name conflict nothing carries our label: find which container holds the name.
    ResolveName,
    /// replaceExisting: remove exactly the container resolved by name.
    RemoveStranger,
    /// List by uid label after an uncertain create.
    Verify,
    /// Copy `spec.files` into the created container, before its first start.
    CopyFiles,
    Start,
    Stop,
    Inspect,
    Remove,
    /// List by uid label before releasing the finalizer.
    CleanupCheck,
    /// List by uid label before reporting `Failed` while a create of ours may have landed unseen.
    FailureCheck,
    /// Read the object itself, uncached, before its first create (see [`Confirmation`]).
    ConfirmSelf,
}

/// Whether an uncached read showed the object live before this engine made a container for it.
/// The cache may show one already gone: its kind's watch lagging behind its deletion while the
/// namespace's has moved on to a namespace re-created under the same name, whose arrival
/// dispatches what is cached in it. A container made for it would outlive it, unowned.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Confirmation {
    #[default]
    Unread,
    /// Read live, with the uid cached: it may be given a container.
    Live,
    /// Gone, or deleting, or another object under its name: nothing is made for it, ever.
    Stale,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Observed {
    State(ContainerState, Option<i64>),
    Missing,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Verify {
    /// The create's outcome is unknown: if nothing carries our label, create again.
    AfterUncertain,
    /// The name was taken: if nothing carries our label, look at who holds the name.
    AfterConflict,
    /// The name was taken and nothing carries our label: inspect the name. A holder with our uid
    /// label is ours (it did not list yet); another is a stranger; none means a create still in
    /// progress holds the name (Docker reserves it before the container shows) or it was freed.
    Holder,
    /// The name belongs to a stranger and `replaceExisting` is set: remove it, then create.
    Replace,
}

/// Why the object is `Failed`, for good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Failure {
    reason: &'static str,
    message: String,
    exit_code: Option<i64>,
}

impl Failure {
    pub(super) fn new(reason: &'static str, message: String) -> Self {
        Failure { reason, message, exit_code: None }
    }

    /// `status` as it reads once the object has failed.
    pub(super) fn status(&self, status: &PhysicalContainerStatus) -> PhysicalContainerStatus {
        PhysicalContainerStatus {
            phase: ContainerPhase::Failed,
            reason: if crate::bugs::on(crate::bugs::Bug::FailedWithoutReason) {
                status.reason.clone()
            } else {
                Some(self.reason.to_string())
            },
            message: Some(self.message.clone()),
            exit_code: self.exit_code.or(status.exit_code),
            ..status.clone()
        }
    }
}

/// A start that failed, waiting for the inspection that shows what the runtime recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FailedStart {
    /// The runtime's answer to the start.
    message: String,
    /// The runtime said the start can never succeed (Docker's 400).
    refused: bool,
}

/// What this engine knows about one object's runtime container.
#[derive(Debug, Default)]
pub(super) struct Container {
    pub(super) runtime_id: Option<String>,
    pub(super) observed: Option<Observed>,
    pub(super) inspected_at: Option<MonoTime>,
    pub(super) verify: Option<Verify>,
    pub(super) failure: Option<Failure>,
    pub(super) removed: bool,
    /// The object was seen being deleted (its cleanup began).
    pub(super) cleanup_began: bool,
    pub(super) cleanup_verified: bool,
    /// replaceExisting: the stranger holding our name, once resolved.
    pub(super) stranger: Option<String>,
    /// The last inspection error, once they have lasted [`INSPECT_BUDGET`] attempts.
    pub(super) inspect_message: Option<String>,
    /// A retryable create or start failure that has lasted, in words, for status while the
    /// object waits to try again.
    pub(super) retrying: Option<String>,
    pub(super) replace_existing: bool,
    pub(super) started_tracked: bool,
    /// `spec.files` are in the created container.
    pub(super) files_copied: bool,
    /// When the current run of NotFound answers began.
    notfound_since: Option<MonoTime>,
    /// NotFound answers in a row.
    notfound_retries: u32,
    /// Inspections in a row that found the container `removing`.
    pub(super) removing_checks: u32,
    /// The last start failed; the next inspection judges it.
    failed_start: Option<FailedStart>,
    /// This engine saw the object before its runtime finalizer was added, so no earlier life of
    /// the engine can have a create for it in flight.
    pub(super) seen_unstarted: bool,
    /// This engine listed the runtime by the object's uid label before its first create, once
    /// the requests of its earlier lives had settled.
    pub(super) label_checked: bool,
    /// The last create whose outcome this engine does not know was sent then: the runtime may
    /// still be completing it, holding the name without listing the container.
    pub(super) uncertain_create_at: Option<MonoTime>,
    /// A failure was about to be reported while a create of ours may have landed unseen, and a
    /// list by uid label found nothing carrying our label.
    pub(super) failure_checked: bool,
    /// While waiting for its image, this engine listed by uid label again once the last uncertain
    /// create had settled.
    pub(super) late_create_checked: bool,
    /// What an uncached read of the object said before its first create.
    pub(super) confirmation: Confirmation,
}

pub(super) type Tracked = toolkit::Tracked<Op, Container>;

impl Container {
    /// How long an observation stays fresh: the monitoring period, or less while the container
    /// is being removed (it will be gone, or back, soon).
    pub(super) fn freshness(&self, monitor: Duration) -> Duration {
        match self.observed {
            Some(Observed::State(ContainerState::Removing, _)) => {
                REMOVING_RECHECK.delay(self.removing_checks).min(monitor)
            }
            _ => monitor,
        }
    }
}
