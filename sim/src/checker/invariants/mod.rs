//! Safety invariants: each must hold in every state of every run. Some read only the current
//! state; some read the run's [`History`](super::History) (what was in flight, what was claimed,
//! what happened and is no longer visible).

mod containers;
mod images;
mod logical;

use super::View;

pub struct Invariant {
    pub name: &'static str,
    pub description: &'static str,
    pub check: fn(&View<'_>) -> Result<(), String>,
}

pub const INVARIANTS: &[Invariant] = &[
    Invariant {
        name: "unique-owner-uid",
        description: "no two runtime containers carry the same owner uid label",
        check: containers::unique_owner_uid,
    },
    Invariant {
        name: "no-owner-cycles",
        description: "no object has an ownerReference to itself or a cycle of ownerReferences",
        check: containers::no_owner_cycles,
    },
    Invariant {
        name: "no-leak-after-namespace-delete",
        description: "when a namespace is gone, no runtime container created for it remains (unless retained)",
        check: containers::no_leak_after_namespace_delete,
    },
    Invariant {
        name: "finalizer-after-runtime-cleanup",
        description: "no finalizer is released while a runtime operation of its resource is in flight or its runtime container still exists",
        check: containers::finalizer_after_runtime_cleanup,
    },
    Invariant {
        name: "no-foreign-adoption",
        description: "a physical container never records a runtime container that was not created for it",
        check: containers::no_foreign_adoption,
    },
    Invariant {
        name: "system-labels-win",
        description: "system labels (owner uid, namespace, creator, retain) are drydock's, whatever the caller's labels say",
        check: containers::system_labels_win,
    },
    Invariant {
        name: "no-recreate-after-external-removal",
        description: "a runtime container removed outside drydock is never created again for the same object",
        check: containers::no_recreate_after_external_removal,
    },
    Invariant {
        name: "ownership-stable",
        description: "an object's ownerReferences never change once set unless a client changed them",
        check: containers::ownership_stable,
    },
    Invariant {
        name: "namespace-cleanup-order",
        description: "a terminating namespace deletes no image while containers remain in it",
        check: containers::namespace_cleanup_order,
    },
    Invariant {
        name: "single-pull-per-ref",
        description: "never two pulls of one normalized image reference in flight, across processes",
        check: images::single_pull_per_ref,
    },
    Invariant {
        name: "lease-exclusive",
        description: "never two live holders of one lease",
        check: images::lease_exclusive,
    },
    Invariant {
        name: "pinned-image-stable",
        description: "the image id a ContainerImage pinned never changes",
        check: images::pinned_image_stable,
    },
    Invariant {
        name: "pull-attempts-within-limit",
        description: "at most pullRetryLimit + 1 pulls per image resource",
        check: images::pull_attempts_within_limit,
    },
    Invariant {
        name: "single-backing",
        description: "never two runtime containers for one logical container",
        check: logical::single_backing,
    },
    Invariant {
        name: "persistent-reuse",
        description: "a matching, drydock-created persistent container is reused, never removed and created again",
        check: logical::persistent_reuse,
    },
    Invariant {
        name: "persistent-replace-once",
        description: "a persistent logical container creates its runtime container at most once (a key mismatch: one remove, one create)",
        check: logical::persistent_replace_once,
    },
    Invariant {
        name: "existing-never-creates",
        description: "an existing-mode logical container never creates a runtime container",
        check: logical::existing_never_creates,
    },
    Invariant {
        name: "session-never-outlives-owner",
        description: "a session runtime container never outlives its logical container",
        check: logical::session_never_outlives_owner,
    },
    Invariant {
        name: "persistent-survives-delete",
        description: "deleting a persistent logical container never removes its runtime container",
        check: logical::persistent_survives_delete,
    },
    Invariant {
        name: "hold-before-release",
        description: "no backing resource loses its hold while its logical container still needs it",
        check: logical::hold_before_release,
    },
    Invariant {
        name: "workload-recorded-before-lease-release",
        description: "a persistent logical container records its workload before releasing its startup lease",
        check: logical::workload_recorded_before_lease_release,
    },
];
