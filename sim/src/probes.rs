//! "Sometimes" probes: interesting states a sweep should reach. A probe that no seed of a sweep
//! reaches means the workload or the faults never exercise that path (or it is impossible): the
//! sweep lists it, as Antithesis' sometimes-assertions and FoundationDB's code probes do.

use crate::catalog::catalog;

catalog! {
    /// Every probe, with what it means.
    pub enum Probe {
        UncertainCreateAdopted = ("uncertain-create-adopted", "a create whose reply was lost was found by its uid label and adopted"),
        ConflictRetried = ("conflict-retried", "a store write that hit a Conflict later succeeded for the same object"),
        LeaseContended = ("lease-contended", "an engine found a pull lease held by someone else"),
        LeaseTakenOver = ("lease-taken-over", "an expired lease of a holder that stopped renewing was taken over"),
        PullAvoidedUnderLease = ("pull-avoided-under-lease", "a pull was re-evaluated under the lease and found the image already present"),
        PullCancelled = ("pull-cancelled", "a pull in flight was cancelled because its resource was deleted"),
        NamespaceDeletedDuringPull = ("namespace-deleted-during-pull", "a namespace was deleted while a pull was in flight"),
        StrangerReplaced = ("stranger-replaced", "replaceExisting removed a container drydock did not create"),
        PersistentReused = ("persistent-reused", "a persistent logical container reused a container from an earlier run"),
        PersistentReplaced = ("persistent-replaced", "a persistent container with another lifecycle key was removed to be replaced"),
        ExistingAdoptedAfterWait = ("existing-adopted-after-wait", "an existing-mode logical container reported NotFound, then adopted"),
        MissingAfterExternalRemoval = ("missing-after-external-removal", "a container removed outside drydock was reported Missing"),
        NotFoundAfterCreateRetried = ("notfound-after-create-retried", "an inspection right after a create answered NotFound and the container was not given up"),
        RelistAfterGone = ("relist-after-gone", "a watch resumed from a compacted version and relisted (needs the Gone fault)"),
        CrashDuringCreate = ("crash-during-create", "an engine crashed with a create in flight (needs the crash fault)"),
        HungRequestTimedOut = ("hung-request-timed-out", "a runtime request that never answered was cancelled at its deadline"),
    }
}
