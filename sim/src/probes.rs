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
        AdmissionRefused = ("admission-refused", "a client's object that Docker would refuse was refused by admission, with a field path"),
        StartFailedForGood = ("start-failed-for-good", "a container whose start can never succeed (missing command, port taken) ended Failed"),
        FileCopyFailedForGood = ("file-copy-failed-for-good", "a container whose files could not be copied in ended Failed, never started"),
        BuildFailedForGood = ("build-failed-for-good", "an image whose build failed on its inputs ended Failed"),
        ProcessEndedByItself = ("process-ended-by-itself", "a container's main process ended by itself after running for a while"),
        RemovalSeenInProgress = ("removal-seen-in-progress", "an inspection or list saw a container being removed"),
        FollowerWaitedForItsSource = ("follower-waited-for-its-source", "a log follower opened before its source had anything (no container yet, no image yet) waited for it"),
        FollowerEndedByDeletion = ("follower-ended-by-deletion", "a log follower ended because its object was deleted"),
        ReaderToldWhatItMissed = ("reader-told-what-it-missed", "a log reader that fell behind the hub's window was told how many lines it missed"),
        DeletedWhileReaderStalled = ("deleted-while-reader-stalled", "an object was deleted while a reader of its log was stalled, and its deletion completed"),
    }
}

use crate::checker::{Happening, View};
use crate::facts::process_identity;
use drydock_engine::api::logical::{LogicalContainer, LogicalMode, LogicalPhase};
use drydock_engine::api::{
    ContainerImage, ContainerPhase, ImagePhase, Lease, Namespace, Object, ObjectKey, PhysicalContainer, Resource, Uid,
    names, reasons,
};
use drydock_engine::controllers::image::pull_lease_name;
use drydock_engine::fixed::FixedSet;
use drydock_engine::runtime::{ContainerState, RuntimeReply, RuntimeRequest};
use drydock_engine::store::{StoreReply, StoreRequest};
use std::collections::{BTreeMap, BTreeSet};

/// Counts the probes a run reaches. Most are recognised in what happens; a few are hit by the
/// world directly where it makes them happen (a crash during a create, a relist).
#[derive(Debug, Default)]
pub struct Probes {
    hits: BTreeMap<Probe, u64>,
    /// Owner uids whose create reply was lost.
    uncertain_uids: FixedSet<String>,
    /// (process, object key) whose last store write hit a Conflict.
    conflicted: FixedSet<(usize, Option<ObjectKey>)>,
    /// Containers an inspection was told were not there (notfound-after-create).
    was_hidden: FixedSet<String>,
    /// Logical containers seen reporting NotFound.
    waited_existing: FixedSet<String>,
}

impl Probes {
    pub fn hit(&mut self, probe: Probe) {
        *self.hits.entry(probe).or_default() += 1;
    }

    /// Hits per probe; probes not hit are absent.
    pub fn into_hits(self) -> BTreeMap<Probe, u64> {
        self.hits
    }

    pub fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::ReplyLost { request: RuntimeRequest::CreateContainer(c), .. } => {
                if let Some(uid) = c.labels.get(names::LABEL_OWNER_UID) {
                    self.uncertain_uids.insert(uid.clone());
                }
            }
            Happening::InspectHidden { container_id } => {
                self.was_hidden.insert(container_id.to_string());
            }
            Happening::RuntimeApplied { process, request, result, removed, .. } => {
                if let (RuntimeRequest::RemoveContainer { .. }, Ok(_), Some(removed)) = (request, result, removed) {
                    self.removed(removed);
                }
                self.runtime_applied(view, *process, request, result);
            }
            Happening::StoreApplied { process, request, result } => self.store_applied(view, *process, request, result),
            _ => {}
        }
    }

    fn removed(&mut self, removed: &drydock_engine::runtime::ContainerInfo) {
        if !removed.labels.contains_key(names::LABEL_CREATOR) {
            self.hit(Probe::StrangerReplaced);
        } else if removed.labels.contains_key(names::LABEL_LIFECYCLE_KEY)
            && removed.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
        {
            self.hit(Probe::PersistentReplaced);
        }
    }

    fn runtime_applied(
        &mut self,
        view: &View<'_>,
        process: usize,
        request: &RuntimeRequest,
        result: &drydock_engine::runtime::RuntimeResult,
    ) {
        match (request, result) {
            (RuntimeRequest::ListContainers { labels }, Ok(RuntimeReply::Containers(found)))
                if labels.get(names::LABEL_OWNER_UID).is_some_and(|uid| self.uncertain_uids.contains(uid))
                    && !found.is_empty() =>
            {
                self.hit(Probe::UncertainCreateAdopted);
            }
            (RuntimeRequest::InspectImage { reference }, Ok(_))
                if view.facts.leases.held_by(&pull_lease_name(reference), &process_identity(process), view.now) =>
            {
                self.hit(Probe::PullAvoidedUnderLease);
            }
            (RuntimeRequest::InspectContainer { id }, Ok(RuntimeReply::Container(info))) => {
                if info.state == ContainerState::Removing {
                    self.hit(Probe::RemovalSeenInProgress);
                }
                let id = view.runtime.container(id).map(|c| c.id.clone()).unwrap_or_default();
                if self.was_hidden.swap_remove(&id) {
                    self.hit(Probe::NotFoundAfterCreateRetried);
                }
            }
            (RuntimeRequest::ListContainers { .. }, Ok(RuntimeReply::Containers(found)))
                if found.iter().any(|c| c.state == ContainerState::Removing) =>
            {
                self.hit(Probe::RemovalSeenInProgress);
            }
            _ => {}
        }
    }

    fn store_applied(
        &mut self,
        view: &View<'_>,
        process: usize,
        request: &StoreRequest,
        result: &drydock_engine::store::StoreResult,
    ) {
        if matches!(request, StoreRequest::List { .. }) {
            return;
        }
        match (request, result) {
            (StoreRequest::Get { key }, Ok(StoreReply::Object(lease)))
                if key.kind == Lease::KIND
                    && lease.spec::<Lease>().is_ok_and(|s| s.live_holder(view.now).is_some()) =>
            {
                self.hit(Probe::LeaseContended);
            }
            (_, Err(e)) if e.is_conflict() => {
                self.conflicted.insert((process, written_key(request)));
            }
            (_, Ok(StoreReply::Object(object))) => {
                // Most writes follow no conflict: name the key only when one is on record.
                if !self.conflicted.is_empty() && self.conflicted.swap_remove(&(process, written_key(request))) {
                    self.hit(Probe::ConflictRetried);
                }
                self.stored(view, request, object);
            }
            _ => {}
        }
    }

    fn stored(&mut self, view: &View<'_>, request: &StoreRequest, object: &Object) {
        match (request, object.kind.as_str()) {
            (StoreRequest::Delete { .. }, Namespace::KIND) if view.facts.in_flight.any_pull() => {
                self.hit(Probe::NamespaceDeletedDuringPull);
            }
            (StoreRequest::Create { .. }, PhysicalContainer::KIND) => {
                let tracked = object.spec::<PhysicalContainer>().is_ok_and(|s| s.container_id.is_some());
                let persistent_owner = object.metadata.owner_references.iter().any(|r| {
                    view.store
                        .get_by_uid(&Uid(r.uid.0.clone()))
                        .filter(|o| o.kind == LogicalContainer::KIND)
                        .and_then(|lc| lc.spec::<LogicalContainer>().ok())
                        .is_some_and(|s| s.mode == LogicalMode::Persistent)
                });
                if tracked && persistent_owner {
                    self.hit(Probe::PersistentReused);
                }
            }
            (StoreRequest::UpdateStatus { .. }, PhysicalContainer::KIND) => {
                let status = object.status::<PhysicalContainer>().unwrap_or_default();
                match (status.phase, status.reason.as_deref()) {
                    (ContainerPhase::Missing, _) => self.hit(Probe::MissingAfterExternalRemoval),
                    (ContainerPhase::Failed, Some(reasons::START_FAILED)) => self.hit(Probe::StartFailedForGood),
                    (ContainerPhase::Failed, Some(reasons::FILE_COPY_FAILED)) => self.hit(Probe::FileCopyFailedForGood),
                    _ => {}
                }
            }
            (StoreRequest::UpdateStatus { .. }, ContainerImage::KIND) => {
                let status = object.status::<ContainerImage>().unwrap_or_default();
                if status.phase == ImagePhase::Failed && status.reason.as_deref() == Some(reasons::BUILD_FAILED) {
                    self.hit(Probe::BuildFailedForGood);
                }
            }
            (StoreRequest::UpdateStatus { .. }, LogicalContainer::KIND) => {
                let phase = object.status::<LogicalContainer>().map(|s| s.phase).unwrap_or_default();
                let uid = object.metadata.uid.0.clone();
                if phase == LogicalPhase::NotFound {
                    self.waited_existing.insert(uid);
                } else if phase == LogicalPhase::Running && self.waited_existing.swap_remove(&uid) {
                    self.hit(Probe::ExistingAdoptedAfterWait);
                }
            }
            _ => {}
        }
    }
}

/// The key of the object a store request is about.
/// (The key itself, not its printed form: most writes look it up.)
fn written_key(request: &StoreRequest) -> Option<ObjectKey> {
    match request {
        StoreRequest::Create { object } | StoreRequest::Update { object } | StoreRequest::UpdateStatus { object } => {
            Some(object.key())
        }
        StoreRequest::Delete { key, .. } | StoreRequest::Get { key } => Some(key.clone()),
        StoreRequest::List { .. } => None,
    }
}

/// The probes a run can reach by construction, from what it is made of: its world (how many
/// engine processes), its workload (containers, images, namespace deletions, log readers,
/// external actors) and the fault kinds its plan enables. A probe outside the set cannot be hit
/// by the run (no pull can be cancelled where nothing is pulled, no watch relists without the
/// Gone fault), so a sweep does not call it unreached.
///
/// *Guarantees*: conservative: a probe is left out only when the run lacks something the probe
/// needs to happen (a test checks, for every built-in scenario, that no run hits a probe this
/// leaves out). Generic creates of the built-in kinds count as their typed operations.
///
/// *Caveats*: it reads the workload, not what a user's controllers do: a scenario whose own
/// controllers create containers, images or logical containers the workload does not name adds
/// the probes they lead to with `Extensions::reachable_probes` (`ScenarioBuilder::may_reach`).
pub fn reachable(
    config: &crate::WorldConfig,
    workload: &crate::workload::Workload,
    faults: &drydock_faults::FaultPlan,
) -> BTreeSet<Probe> {
    use crate::workload::{ClientOp, ExternalOp};
    use drydock_faults::FaultKind;
    let (mut physical, mut logical, mut images, mut namespace_deletes, mut logs) = (false, false, false, false, false);
    let (mut strangers, mut external, mut held_leases, mut generic) = (false, false, false, false);
    for op in &workload.ops {
        match &op.op {
            ClientOp::CreateContainer(_) => physical = true,
            ClientOp::CreateLogical { .. } => logical = true,
            ClientOp::CreateImage { .. } => images = true,
            ClientOp::DeleteNamespace { .. } => namespace_deletes = true,
            ClientOp::ReadLogs(_) => logs = true,
            ClientOp::Create { target, .. } => {
                generic = true;
                match target.kind.as_str() {
                    PhysicalContainer::KIND => physical = true,
                    LogicalContainer::KIND => logical = true,
                    ContainerImage::KIND => images = true,
                    _ => {}
                }
            }
            ClientOp::Update { .. } | ClientOp::Patch { .. } => generic = true,
            ClientOp::Delete { target, .. } if target.kind == Namespace::KIND => namespace_deletes = true,
            ClientOp::External(external_op) => {
                external = true;
                match external_op {
                    ExternalOp::CreateContainer { .. } | ExternalOp::RunUsing { .. } => strangers = true,
                    ExternalOp::HoldLease { .. } => held_leases = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let on: BTreeSet<FaultKind> = faults.enabled().filter(|(_, rate)| *rate > 0.0).map(|(kind, _)| kind).collect();
    let fault = |kind: FaultKind| on.contains(&kind);
    // A logical container makes its own physical container, and its own image for an inline one.
    let containers = physical || logical;
    let pulls = images || logical;
    let crashes = fault(FaultKind::EngineCrash) || fault(FaultKind::CrashBetweenWrites);
    // Someone else than the pulling engine holds a lease: another process, a foreign or a held
    // lease, or the process's own earlier life.
    let other_holders = config.processes.count > 1 || fault(FaultKind::ForeignLease) || held_leases || crashes;
    let mut reachable: BTreeSet<Probe> = Probe::ALL
        .iter()
        .copied()
        .filter(|probe| match probe {
            Probe::UncertainCreateAdopted => containers && !on.is_empty(),
            Probe::ConflictRetried => true,
            Probe::LeaseContended | Probe::LeaseTakenOver => pulls && other_holders,
            Probe::PullAvoidedUnderLease | Probe::PullCancelled | Probe::BuildFailedForGood => pulls,
            Probe::NamespaceDeletedDuringPull => pulls && namespace_deletes,
            Probe::StrangerReplaced => containers && (strangers || external),
            Probe::PersistentReused | Probe::PersistentReplaced | Probe::ExistingAdoptedAfterWait => logical,
            Probe::MissingAfterExternalRemoval => containers && (external || !on.is_empty()),
            Probe::NotFoundAfterCreateRetried => containers && !on.is_empty(),
            Probe::RelistAfterGone => fault(FaultKind::WatchGone),
            Probe::CrashDuringCreate => containers && crashes,
            Probe::HungRequestTimedOut => fault(FaultKind::HungRuntime),
            // What admission refuses as Docker would: container and image fields, or any spec a
            // generic create, update or patch writes.
            Probe::AdmissionRefused => containers || pulls || generic,
            Probe::StartFailedForGood
            | Probe::FileCopyFailedForGood
            | Probe::ProcessEndedByItself
            | Probe::RemovalSeenInProgress => containers,
            Probe::FollowerWaitedForItsSource
            | Probe::FollowerEndedByDeletion
            | Probe::ReaderToldWhatItMissed
            | Probe::DeletedWhileReaderStalled => logs,
        })
        .collect();
    reachable.extend(config.extensions.reachable_probes.iter().copied());
    reachable
}
