//! Bug switches: bugs the simulator once caught, kept in the code so they can be put back.
//!
//! A regression schedule pins one run, not its bug: after the engine changes it may no longer
//! reach the state it was made for, and then it passes whether the bug is back or not. A switch
//! pins the bug itself. Each [`Bug`] names a fix; where the fix is, the engine asks [`on`] and,
//! when the switch is on, does what it did before the fix. The scenarios' `bug_switches` test
//! turns each on in turn and requires a short sweep to catch it by the invariant that first
//! caught it, so a bug the simulator can no longer find fails CI loudly.
//!
//! *Guarantees*
//! - Without the `bug-switches` feature, [`on`] is a constant `false`: the switched code is
//!   compiled out, and release builds never enable the feature (CI checks the `drydock` binary's
//!   dependency tree).
//! - With it, a switch is off unless turned on: for the calling thread ([`with`]) or, for a
//!   command-line sweep whose worker threads share one setting, for the process ([`set_for_process`]).
//!   The thread's setting wins.
//!
//! *Caveats*: the switches are global state, against the sans-IO core's rule; they exist only in
//! test builds, and a run reads them, never writes them.

/// One bug that was fixed, by what it did.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bug {
    /// A deleting logical container whose cleanup list showed an owned child its cache did not
    /// listed again at once, in a loop, until the lagging watch caught up.
    LogicalCleanupRelistsAtOnce,
    /// A network or volume remove that failed (or lost its reply) was tried again by name
    /// without looking first: a volume whose name a stranger took meanwhile was removed as ours.
    RemoveRetriedWithoutLooking,
    /// The harvester removed containers only: a volume abandoned by its namespace's deletion
    /// stayed for ever once its last user went.
    AbandonedVolumesKept,
    /// The garbage collector deleted a dependent with its uid as the only precondition: one an
    /// orphaning owner had just unlinked (a write its cache had not seen) was deleted all the same.
    GcDeletesWithoutVersion,
    /// A lease was judged expired by its holder's wall-clock timestamps against our own clock:
    /// a holder whose clock runs behind lost a live lease.
    LeaseExpiryByTimestamps,
    /// An image resource pulled without holding the reference's pull lease: two processes pulled
    /// one reference at once.
    PullWithoutLease,
    /// A pull's lease renewal that did not go through waited a quarter of the lease before
    /// trying again: two such waits outlasted the lease, and another process pulled beside it.
    RenewalRetriedLate,
    /// A pull was sent in the same breath as the status write counting its attempt: when that
    /// write failed and the process crashed, the next life pulled beyond the retry limit.
    PullBeforeAttemptCounted,
    /// A terminating namespace's cleanup chose what to delete from its cache alone, where one
    /// kind's watch lagged behind another's: an image deleted while a container was left.
    CleanupDeletesFromCache,
    /// A network's delete disconnected only the containers of objects its cache showed: a
    /// persistent container, kept when its object went, stayed attached, and the network (and
    /// its namespace) waited for it for ever.
    RetainedContainersKeepNetwork,
    /// A lease write's failure (a renewal's conflict) failed its reconcile like any write: the
    /// key backed off on top of the backoff its conflicting status writes had built, the renewal
    /// was retried seconds late, and another process took the lease under a running pull.
    LeaseFailureBacksOffKey,
    /// A `Failed` container's object kept naming its runtime container after it was removed
    /// behind drydock's back: a volume it mounted waited for it for ever when deleted.
    FailedContainerNamedForEver,
    /// A planted bug, not one found: a network or volume removed behind drydock's back was made
    /// again (under the record of the one removed) instead of reported `Missing`. Nothing but
    /// `no-stray-runtime-objects` sees it: the object ends `Ready`, as convergence wants.
    RemovedResourceRecreated,
    /// A planted bug, not one found: a logical container adopted the physical container holding
    /// its backing's name without checking that it made it (its ownerReference and hold).
    BackingAdoptedByName,
    /// A write answered NotFound left its object in the cache until the watch said it was gone:
    /// every controller of it wrote again and was told the same, retrying with backoff, while a
    /// lagging watch kept the ghost (session 890: 181 reconciles in 1.4 s after the heal).
    WriteNotFoundKeptCached,
    /// A planted bug, not one found: a relist merged the list into the cache instead of
    /// replacing it, so an object deleted while the watch was broken stayed cached for good.
    RelistKeepsTheUnlisted,
    /// A planted bug, not one found: the garbage collector took an owner its cache did not hold
    /// for one it had not seen yet, and left the dependent to that owner's next event, which a
    /// gone owner never has.
    GcWaitsForUnseenOwners,
    /// A planted bug, not one found: a remove answered NotFound was taken for a failed remove and
    /// retried, for ever; the object waiting for it never went.
    RemoveNotFoundRetried,
    /// A planted bug, not one found: the engine sent every runtime request at once, whatever
    /// its bound on requests inside the runtime.
    RuntimeBoundIgnored,
    /// A planted bug, not one found: a change went while an earlier change of the same runtime
    /// object was still inside the runtime (given up on or not).
    ChangeSentBesideItsCopy,
    /// A planted bug, not one found: an object's cleanup ran while a change given up on could
    /// still land: a create the stalled runtime made afterwards outlived its object.
    CleanupBesideDetachedChange,
    /// A planted bug, the mutant `delete field message` in the image controller's `advance` that
    /// mutation testing found surviving (issue 49): a failed image kept its earlier message (a
    /// wait, or none) instead of the runtime's words for why it failed.
    FailedImageKeepsOldMessage,
    /// A planted bug, the mutant `delete field reason` in `Failure::status` that mutation testing
    /// found surviving: a failed physical container kept its earlier reason (usually none).
    FailedWithoutReason,
}

impl Bug {
    /// Every switch.
    pub const ALL: &'static [Bug] = &[
        Bug::LogicalCleanupRelistsAtOnce,
        Bug::RemoveRetriedWithoutLooking,
        Bug::AbandonedVolumesKept,
        Bug::GcDeletesWithoutVersion,
        Bug::LeaseExpiryByTimestamps,
        Bug::PullWithoutLease,
        Bug::RenewalRetriedLate,
        Bug::PullBeforeAttemptCounted,
        Bug::CleanupDeletesFromCache,
        Bug::RetainedContainersKeepNetwork,
        Bug::LeaseFailureBacksOffKey,
        Bug::FailedContainerNamedForEver,
        Bug::RemovedResourceRecreated,
        Bug::BackingAdoptedByName,
        Bug::WriteNotFoundKeptCached,
        Bug::RelistKeepsTheUnlisted,
        Bug::GcWaitsForUnseenOwners,
        Bug::RemoveNotFoundRetried,
        Bug::RuntimeBoundIgnored,
        Bug::ChangeSentBesideItsCopy,
        Bug::CleanupBesideDetachedChange,
        Bug::FailedImageKeepsOldMessage,
        Bug::FailedWithoutReason,
    ];

    /// Its name on the command line: kebab case.
    pub fn name(self) -> &'static str {
        match self {
            Bug::LogicalCleanupRelistsAtOnce => "logical-cleanup-relists-at-once",
            Bug::RemoveRetriedWithoutLooking => "remove-retried-without-looking",
            Bug::AbandonedVolumesKept => "abandoned-volumes-kept",
            Bug::GcDeletesWithoutVersion => "gc-deletes-without-version",
            Bug::LeaseExpiryByTimestamps => "lease-expiry-by-timestamps",
            Bug::PullWithoutLease => "pull-without-lease",
            Bug::RenewalRetriedLate => "renewal-retried-late",
            Bug::PullBeforeAttemptCounted => "pull-before-attempt-counted",
            Bug::CleanupDeletesFromCache => "cleanup-deletes-from-cache",
            Bug::RetainedContainersKeepNetwork => "retained-containers-keep-network",
            Bug::LeaseFailureBacksOffKey => "lease-failure-backs-off-key",
            Bug::FailedContainerNamedForEver => "failed-container-named-for-ever",
            Bug::RemovedResourceRecreated => "removed-resource-recreated",
            Bug::BackingAdoptedByName => "backing-adopted-by-name",
            Bug::WriteNotFoundKeptCached => "write-notfound-kept-cached",
            Bug::RelistKeepsTheUnlisted => "relist-keeps-the-unlisted",
            Bug::GcWaitsForUnseenOwners => "gc-waits-for-unseen-owners",
            Bug::RemoveNotFoundRetried => "remove-notfound-retried",
            Bug::RuntimeBoundIgnored => "runtime-bound-ignored",
            Bug::ChangeSentBesideItsCopy => "change-sent-beside-its-copy",
            Bug::CleanupBesideDetachedChange => "cleanup-beside-detached-change",
            Bug::FailedImageKeepsOldMessage => "failed-image-keeps-old-message",
            Bug::FailedWithoutReason => "failed-without-reason",
        }
    }

    /// The switch named `name`.
    pub fn named(name: &str) -> Option<Bug> {
        Bug::ALL.iter().copied().find(|b| b.name() == name)
    }
}

impl std::fmt::Display for Bug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `bug` is switched on (always `false` without the `bug-switches` feature).
#[inline(always)]
pub fn on(bug: Bug) -> bool {
    #[cfg(feature = "bug-switches")]
    {
        switches::current() == Some(bug)
    }
    #[cfg(not(feature = "bug-switches"))]
    {
        let _ = bug;
        false
    }
}

/// Whether this build has the switches (the `bug-switches` feature).
pub const AVAILABLE: bool = cfg!(feature = "bug-switches");

#[cfg(feature = "bug-switches")]
pub use switches::{set_for_process, with};

/// Without the `bug-switches` feature there is nothing to switch on: `false`.
#[cfg(not(feature = "bug-switches"))]
pub fn set_for_process(bug: Option<Bug>) -> bool {
    bug.is_none()
}

#[cfg(feature = "bug-switches")]
mod switches {
    use super::Bug;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The process's switch: 0 for none, else its index in [`Bug::ALL`] plus one.
    static PROCESS: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        static THREAD: Cell<Option<Bug>> = const { Cell::new(None) };
    }

    pub(super) fn current() -> Option<Bug> {
        THREAD.with(Cell::get).or_else(|| Bug::ALL.get(PROCESS.load(Ordering::Relaxed).checked_sub(1)?).copied())
    }

    /// Switch `bug` on (or, `None`, every switch off) for the whole process: `true`.
    pub fn set_for_process(bug: Option<Bug>) -> bool {
        let index = bug.and_then(|b| Bug::ALL.iter().position(|x| *x == b)).map_or(0, |i| i + 1);
        PROCESS.store(index, Ordering::Relaxed);
        true
    }

    /// Run `f` with `bug` switched on for this thread, and off again after (even if `f` panics).
    pub fn with<T>(bug: Bug, f: impl FnOnce() -> T) -> T {
        struct Reset(Option<Bug>);
        impl Drop for Reset {
            fn drop(&mut self) {
                THREAD.with(|t| t.set(self.0));
            }
        }
        let _reset = Reset(THREAD.with(|t| t.replace(Some(bug))));
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_again() {
        for bug in Bug::ALL {
            assert_eq!(Bug::named(bug.name()), Some(*bug));
        }
        let names: std::collections::BTreeSet<_> = Bug::ALL.iter().map(|b| b.name()).collect();
        assert_eq!(names.len(), Bug::ALL.len());
    }

    #[cfg(feature = "bug-switches")]
    #[test]
    fn a_switch_is_on_only_inside_with() {
        assert!(!on(Bug::AbandonedVolumesKept));
        with(Bug::AbandonedVolumesKept, || {
            assert!(on(Bug::AbandonedVolumesKept));
            assert!(!on(Bug::GcDeletesWithoutVersion));
        });
        assert!(!on(Bug::AbandonedVolumesKept));
    }
}
