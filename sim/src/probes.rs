//! "Sometimes" probes: interesting states a sweep should reach. A probe that no seed of a sweep
//! reaches means the workload or the faults never exercise that path (or it is impossible): the
//! sweep lists it, as Antithesis' sometimes-assertions and FoundationDB's code probes do.

/// Every probe, with what it means.
pub const PROBES: &[(&str, &str)] = &[
    ("uncertain-create-adopted", "a create whose reply was lost was found by its uid label and adopted"),
    ("conflict-retried", "a store write that hit a Conflict later succeeded for the same object"),
    ("lease-contended", "an engine found a pull lease held by someone else"),
    ("lease-taken-over", "an expired lease of a holder that stopped renewing was taken over"),
    ("pull-avoided-under-lease", "a pull was re-evaluated under the lease and found the image already present"),
    ("pull-cancelled", "a pull in flight was cancelled because its resource was deleted"),
    ("namespace-deleted-during-pull", "a namespace was deleted while a pull was in flight"),
    ("stranger-replaced", "replaceExisting removed a container drydock did not create"),
    ("persistent-reused", "a persistent logical container reused a container from an earlier run"),
    ("persistent-replaced", "a persistent container with another lifecycle key was removed to be replaced"),
    ("existing-adopted-after-wait", "an existing-mode logical container reported NotFound, then adopted"),
    ("missing-after-external-removal", "a container removed outside drydock was reported Missing"),
    (
        "notfound-after-create-retried",
        "an inspection right after a create answered NotFound and the container was not given up",
    ),
    ("relist-after-gone", "a watch resumed from a compacted version and relisted (needs the Gone fault)"),
    ("crash-during-create", "an engine crashed with a create in flight (needs the crash fault)"),
    ("hung-request-timed-out", "a runtime request that never answered was cancelled at its deadline"),
];
