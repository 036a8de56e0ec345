//! The built-in safety invariants, listed in one table: name, description, and the type that
//! checks it. Each must hold in every state of every run. Some read only the current state; some
//! observe what happens and keep the history they need (see [`Invariant`](super::Invariant)).
//!
//! Adding one: write its type next to its kin (`containers`: runtime containers and whom they
//! were created for; `cleanup`: what must be gone before an object leaves; `ownership`;
//! `deletion`: what the engine deletes; `images`; `logical`; `resources`: networks, volumes,
//! files; `logs`; `failures`: what a terminal failure says; `reconciles`; `backpressure`: what the runtime is sent under load; `caches`: what a process knows) and add a line here. The table's order is the order they are checked in, so it decides which one a
//! state violating two of them is reported under.

mod backpressure;
mod caches;
mod cleanup;
mod containers;
mod content;
mod deletion;
mod failures;
mod images;
mod logical;
mod logs;
mod ownership;
mod reconciles;
mod resources;

use super::Invariant;
use crate::catalog::catalog;

/// Declares [`InvariantId`] and [`builtin`] from one table.
macro_rules! invariants {
    ($( $id:ident = ($name:literal, $description:literal, $check:ty), )+) => {
        catalog! {
            /// A built-in invariant.
            pub enum InvariantId {
                $( $id = ($name, $description), )+
            }
        }

        /// A fresh instance of every built-in invariant, in table order.
        pub fn builtin() -> Vec<Box<dyn Invariant>> {
            vec![$( Box::new(<$check>::default()), )+]
        }
    };
}

/// `name()` and `description()` of a built-in invariant, from its table entry.
macro_rules! named {
    ($id:ident) => {
        fn name(&self) -> &str {
            crate::checker::InvariantId::$id.name()
        }

        fn description(&self) -> &str {
            crate::checker::InvariantId::$id.description()
        }
    };
}
pub(crate) use named;

invariants! {
    UniqueOwnerUid = ("unique-owner-uid", "no two runtime containers carry the same owner uid label", containers::UniqueOwnerUid),
    NoOwnerCycles = ("no-owner-cycles", "no object has an ownerReference to itself or a cycle of ownerReferences", ownership::NoOwnerCycles),
    NoLeakAfterNamespaceDelete = ("no-leak-after-namespace-delete", "when a namespace is gone, no runtime container created for it remains (unless retained)", cleanup::NoLeakAfterNamespaceDelete),
    FinalizerAfterRuntimeCleanup = ("finalizer-after-runtime-cleanup", "no finalizer is released while a runtime operation the releasing process sent for its resource is in flight, or while its runtime container still exists", cleanup::FinalizerAfterRuntimeCleanup),
    NoForeignAdoption = ("no-foreign-adoption", "a physical container never records a runtime container that was not created for it", containers::NoForeignAdoption),
    SystemLabelsWin = ("system-labels-win", "system labels (owner uid, namespace, creator, retain) are drydock's, whatever the caller's labels say", containers::SystemLabelsWin),
    NoRecreateAfterExternalRemoval = ("no-recreate-after-external-removal", "a runtime container removed outside drydock is never created again for the same object", containers::NoRecreateAfterExternalRemoval),
    AdoptsOnlyItsOwn = ("adopts-only-its-own", "the engine never makes itself the owner of an object a client created: it adds no ownerReference to one, and no logical container records one as its backing", ownership::AdoptsOnlyItsOwn),
    OwnershipStable = ("ownership-stable", "an object's ownerReferences never change once set unless a client changed them", ownership::OwnershipStable),
    AdmissionBeforeRuntime = ("admission-before-runtime", "the runtime never refuses a request drydock sent as invalid: admission refuses it first, with a field path", containers::AdmissionBeforeRuntime),
    FailedHasNoStrayContainer = ("failed-has-no-stray-container", "a physical container reported Failed has no live runtime container carrying its uid other than the one it records", containers::FailedHasNoStrayContainer),
    NoStrayRuntimeObjects = ("no-stray-runtime-objects", "once a container, network or volume object records its runtime object, no other live one of that kind carries its uid, in any phase", containers::NoStrayRuntimeObjects),
    HarvestOnlyLeftovers = ("harvest-only-leftovers", "the harvester removes only containers and volumes its engine created, not retained, whose object is gone and (a container) whose id no object records", containers::HarvestOnlyLeftovers),
    HarvestVolumesAfterContainers = ("harvest-volumes-after-containers", "the harvester removes a pass's leftover volumes only after that pass's container removes were answered or given up on", containers::HarvestVolumesAfterContainers),
    NamespaceCleanupOrder = ("namespace-cleanup-order", "a terminating namespace deletes its children kind by kind in cleanup order: no network, volume or image while containers remain in it", cleanup::NamespaceCleanupOrder),
    DeletesOnlyGarbage = ("deletes-only-garbage", "the engine deletes an object only if its namespace is terminating or it has owners and none of them is live (never one found by a reused name)", deletion::DeletesOnlyGarbage),
    OrphansSurvive = ("orphans-survive", "a dependent of an owner a client deleted with orphan is never deleted for it, and no longer refers to it once it is gone", deletion::OrphansSurvive),
    GarbageCollected = ("garbage-collected", "a dependent whose owners are all gone is marked deleted within 60 s (counted anew after a crash, a relist or a failed write to it)", deletion::GarbageCollected),
    ForegroundAfterDependents = ("foreground-after-dependents", "an owner a client deleted in the foreground is gone only after its blocking dependents are gone", deletion::ForegroundAfterDependents),
    NamespaceReleasedEmpty = ("namespace-released-empty", "a namespace's finalizer is released only once the store holds no object in it", cleanup::NamespaceReleasedEmpty),
    SinglePullPerRef = ("single-pull-per-ref", "never two pulls of one normalized image reference in flight, across processes", images::SinglePullPerRef),
    LeaseExclusive = ("lease-exclusive", "never two live holders of one lease", images::LeaseExclusive),
    PinnedImageStable = ("pinned-image-stable", "the image id a ContainerImage pinned never changes", images::PinnedImageStable),
    PinnedImageHonoured = ("pinned-image-honoured", "a ContainerImage that pinned an image id never pulls again, and containers made from it are created from the pinned id", images::PinnedImageHonoured),
    ReadyWhilePinnedPresent = ("ready-while-pinned-present", "a ContainerImage says Ready only while its pinned image exists (at most 35 s after its engine was told it is gone)", images::ReadyWhilePinnedPresent),
    AlwaysPullsBeforeReady = ("always-pulls-before-ready", "a ContainerImage with pull policy always (not a build) first says Ready only after its reference was pulled in that object's life", images::AlwaysPullsBeforeReady),
    PullAttemptsWithinLimit = ("pull-attempts-within-limit", "at most pullRetryLimit + 1 pulls per image resource", images::PullAttemptsWithinLimit),
    SingleBacking = ("single-backing", "never two runtime containers for one logical container", logical::SingleBacking),
    PersistentReuse = ("persistent-reuse", "a matching, drydock-created persistent container is reused, never removed and created again", logical::PersistentReuse),
    PersistentReplaceOnce = ("persistent-replace-once", "a persistent logical container creates its runtime container at most once (a key mismatch: one remove, one create)", logical::PersistentReplaceOnce),
    ReplaceOnlyOnContentChange = ("persistent-replace-justified", "a persistent container is replaced only when the client's edit changed its content (the checker's own reading: image, env, ports, mounts, files, labels as sets), and never reused for other content", logical::ReplaceOnlyOnContentChange),
    ExistingNeverCreates = ("existing-never-creates", "an existing-mode logical container never creates a runtime container", logical::ExistingNeverCreates),
    SessionNeverOutlivesOwner = ("session-never-outlives-owner", "a session runtime container never outlives its logical container", logical::SessionNeverOutlivesOwner),
    PersistentSurvivesDelete = ("persistent-survives-delete", "deleting a persistent logical container never removes its runtime container", logical::PersistentSurvivesDelete),
    HoldBeforeRelease = ("hold-before-release", "no backing resource loses its hold while its logical container still needs it", logical::HoldBeforeRelease),
    WorkloadRecordedBeforeLeaseRelease = ("workload-recorded-before-lease-release", "a persistent logical container records its workload before releasing its startup lease", logical::WorkloadRecordedBeforeLeaseRelease),
    LogFollowersEnd = ("log-followers-end", "a log follower never waits once its source is complete (the container's output drained, the pull settled) or its object is deleted: it ends at its reader's next read", logs::LogFollowersEnd),
    LogLinesInOrderOnce = ("log-lines-in-order-once", "a log reader sees each line in order, once, as the container printed it; one that keeps up reads all of a backing's lines before moving to the next, and never comes back", logs::LogLinesInOrderOnce),
    FailureQuotesTheRuntime = ("failure-quotes-the-runtime", "a status turning Failed because the runtime refused something (CreateRefused, ImageNotFound, ReferenceRefused, BuildFailed, FileCopyFailed, StartFailed) quotes the runtime's own words: its message contains an answer the runtime gave that object's requests", failures::FailureQuotesTheRuntime),
    NetworksRefusedAsDockerWould = ("networks-refused-as-docker-would", "a physical container turning Failed with NetworksRefused has networks Docker would refuse, by the checker's own reading: aliases on a built-in network, or host or none beside another network", failures::NetworksRefusedAsDockerWould),
    TerminalStatusHasReason = ("terminal-status-has-reason", "a status turning Failed or Missing names its reason (the machine-readable word) and has a message; an image turning Unavailable says why", failures::TerminalStatusHasReason),
    SystemRecordsTerminalFailures = ("system-records-terminal-failures", "every terminal failure (a status turning Failed) is in its object's system stream, with its message, before the status is stored", logs::SystemRecordsTerminalFailures),
    UniqueResourceOwner = ("unique-resource-owner", "no two runtime networks, and no two runtime volumes, carry the same owner uid label", resources::UniqueResourceOwner),
    NoResourceLeakAfterNamespaceDelete = ("no-resource-leak-after-namespace-delete", "when a namespace is gone, no network or volume created for it remains, unless retained or (a volume) used by a container of another namespace or none at some time (convergence requires it gone once unused)", resources::NoResourceLeakAfterNamespaceDelete),
    BuiltinNetworksUntouched = ("builtin-networks-untouched", "drydock never creates, removes or disconnects from a built-in network (bridge, host, none), and they stay", resources::BuiltinNetworksUntouched),
    RemovesOnlyItsOwn = ("removes-only-its-own", "an object removes only the network or volume created for it, or with replaceExisting the stranger holding its runtime name; never a tracked one, and never its own once asked to retain it", resources::RemovesOnlyItsOwn),
    NameTakenJustified = ("name-taken-justified", "a network or volume turning Failed with NameTaken has a stranger holding its runtime name, and does not ask to replace it unless the runtime refused the removal; a physical container turning NameTaken does not ask to replace", resources::NameTakenJustified),
    ResourceEndIsFinal = ("resource-end-is-final", "a network or volume object that said Failed or Missing says so for the rest of its life (its uid), across its engine's crashes", resources::ResourceEndIsFinal),
    FilesBeforeStart = ("files-before-start", "a container drydock created for an object with copied files is started only while it holds every one of them, as the spec says", resources::FilesBeforeStart),
    ReconcilesNeverOverlap = ("reconciles-never-overlap", "in one process, no reconcile of a controller and key sends a request while an earlier reconcile of them still waits for store replies", reconciles::ReconcilesNeverOverlap),
    RuntimeRequestsPaced = ("runtime-requests-paced", "no object's reconciles (nor the harvester's passes) send more than 50 runtime requests in one process within 10 simulated seconds, faults or not: a retry that does not back off is a hot loop", reconciles::RuntimeRequestsPaced),
    ListsPaced = ("lists-paced", "no controller sends more than 20 uncached store lists for one key in one process within 10 simulated seconds: a list repeated until the watch catches up is a hot loop", reconciles::ListsPaced),
    NotFoundIsFinal = ("notfound-is-final", "a process told that something does not exist never acts on it again in that life: no start, stop or remove of a container by the object whose remove found it gone, no write to an object (a uid) a write found gone", reconciles::NotFoundIsFinal),
    RuntimeRequestsBounded = ("runtime-requests-bounded", "no engine process has more runtime requests inside the runtime than its bound, counting those it gave up on that may still run there", backpressure::RuntimeRequestsBounded),
    ChangeNotResentWhileRunning = ("change-not-resent-while-running", "no process sends a change of a runtime object (the same verb on the same object) while its earlier copy may still be running inside the daemon, given up on or not", backpressure::ChangeNotResentWhileRunning),
    RelistForgetsTheUnlisted = ("relist-forgets-the-unlisted", "right after a process lists the whole store (a relist, a start), its cache holds no object the list did not hold, by name and uid", caches::RelistForgetsTheUnlisted),
}

#[cfg(test)]
mod tests;
