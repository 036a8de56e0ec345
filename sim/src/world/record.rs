//! Recording what the checkers need to know beyond the current state (see `checker::History`).

use super::World;
use crate::probes::Probe;
use drydock_engine::api::logical::{LogicalContainer, LogicalMode};
use drydock_engine::api::{
    ContainerImage, Lease, Namespace, Object, ObjectKey, PhysicalContainer, Resource, names, normalize_image_reference,
};
use drydock_engine::runtime::{RuntimeRequest, RuntimeResult};
use drydock_engine::store::{StoreReply, StoreRequest, StoreResult};
use drydock_engine::{OpId, WallTime};
use std::time::Duration;

impl World<'_> {
    /// A client created or changed `object`.
    pub(super) fn record_client_write(&mut self, object: &Object) {
        self.record_object(object);
    }

    fn record_object(&mut self, object: &Object) {
        if object.kind == ContainerImage::KIND
            && let Ok(spec) = object.spec::<ContainerImage>()
        {
            let budget = (normalize_image_reference(&spec.image), spec.pull_retry_limit);
            self.history.image_budgets.entry(object.metadata.uid.clone()).or_insert(budget);
            if let Some(id) = object.status::<ContainerImage>().ok().and_then(|s| s.image_id) {
                self.history.pinned.entry(object.metadata.uid.clone()).or_insert(id);
            }
        }
    }

    /// An engine handed the world a runtime request.
    pub(super) fn record_runtime_issue(
        &mut self,
        process: usize,
        id: OpId,
        request: &RuntimeRequest,
        issuer: &ObjectKey,
    ) {
        if let RuntimeRequest::PullImage { reference } = request {
            let normalized = normalize_image_reference(reference);
            *self.history.pulls_issued.entry(normalized.clone()).or_default() += 1;
            self.history.pulls_in_flight.entry(normalized).or_default().insert((process, id));
        }
        if let RuntimeRequest::CreateContainer(_) = request {
            self.creates_in_flight.insert((process, id));
        }
        if let RuntimeRequest::RemoveContainer { .. } = request {
            let wanted = self.replacement_key(issuer);
            self.replacing.insert((process, id), wanted);
        }
        let owner = match request {
            RuntimeRequest::CreateContainer(c) => c.labels.get(names::LABEL_OWNER_UID).cloned(),
            RuntimeRequest::StartContainer { id }
            | RuntimeRequest::StopContainer { id, .. }
            | RuntimeRequest::RemoveContainer { id, .. } => {
                self.runtime.container(id).and_then(|c| c.labels.get(names::LABEL_OWNER_UID).cloned())
            }
            _ => None,
        };
        if let Some(uid) = owner {
            *self.history.mutations_in_flight.entry(uid.clone()).or_default() += 1;
            self.mutation_owner.insert((process, id), uid);
        }
    }

    /// For a remove issued by a live physical container (one replacing what holds its name, not
    /// one being deleted): the lifecycle key it wants its runtime container to have.
    fn replacement_key(&self, issuer: &ObjectKey) -> Option<String> {
        let object = self.store.get(issuer).filter(|o| o.kind == PhysicalContainer::KIND)?;
        if object.metadata.is_deleting() {
            return None;
        }
        object.spec::<PhysicalContainer>().ok()?.labels.get(names::LABEL_LIFECYCLE_KEY).cloned()
    }

    /// A pull is no longer in flight (applied, cancelled or dropped).
    fn end_pull(&mut self, process: usize, id: OpId) {
        for pulls in self.history.pulls_in_flight.values_mut() {
            pulls.remove(&(process, id));
        }
        self.history.pulls_in_flight.retain(|_, pulls| !pulls.is_empty());
    }

    /// The request will never be answered (cancelled, or its reply dropped).
    pub(super) fn record_runtime_settled(&mut self, process: usize, id: OpId) {
        self.end_pull(process, id);
        self.creates_in_flight.remove(&(process, id));
        self.replacing.remove(&(process, id));
        if let Some(uid) = self.mutation_owner.remove(&(process, id))
            && let Some(n) = self.history.mutations_in_flight.get_mut(&uid)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.history.mutations_in_flight.remove(&uid);
            }
        }
    }

    /// The runtime applied a request.
    pub(super) fn record_runtime_apply(
        &mut self,
        process: usize,
        id: OpId,
        request: &RuntimeRequest,
        result: &RuntimeResult,
    ) {
        if let RuntimeRequest::PullImage { .. } = request {
            self.end_pull(process, id);
        }
        if let (RuntimeRequest::CreateContainer(c), Ok(_)) = (request, result) {
            self.record_logical_create(process, c);
        }
        let wanted = self.replacing.remove(&(process, id)).flatten();
        if let (RuntimeRequest::RemoveContainer { .. }, Ok(_), Some(removed)) = (request, result, &self.removing) {
            let removed = removed.clone();
            self.record_logical_remove(process, &removed, wanted);
        }
        if let (RuntimeRequest::CreateContainer(c), Ok(_)) = (request, result)
            && let Some(uid) = c.labels.get(names::LABEL_OWNER_UID)
            && self.history.externally_removed.contains(uid)
        {
            let message =
                format!("p{process} created {} again for uid {uid} after it was removed outside drydock", c.name);
            self.history.flag("no-recreate-after-external-removal", message);
        }
    }

    /// Before a store request applies: what it is about to do, against the state it finds.
    pub(super) fn record_store_before(&mut self, process: usize, request: &StoreRequest) {
        if let StoreRequest::Update { object } = request
            && let Some(stored) = self.store.get(&object.key())
            && stored.metadata.uid == object.metadata.uid
        {
            let before: Vec<&drydock_engine::api::Uid> =
                stored.metadata.owner_references.iter().map(|r| &r.uid).collect();
            let added: Vec<String> = object
                .metadata
                .owner_references
                .iter()
                .filter(|r| !before.contains(&&r.uid))
                .map(|r| format!("{}/{}", r.kind, r.name))
                .collect();
            if !before.is_empty() && !added.is_empty() {
                let message =
                    format!("p{process} changed the ownerReferences of {} (added {})", object.key(), added.join(", "));
                self.history.flag("ownership-stable", message);
            }
        }
        let StoreRequest::Delete { key, .. } = request else { return };
        let Some(namespace) = &key.namespace else { return };
        let ns_terminating =
            self.store.get(&ObjectKey::cluster(Namespace::KIND, namespace)).is_some_and(|ns| ns.metadata.is_deleting());
        let rank = |kind: &str| self.store.registry().get(kind).map(|k| k.cleanup_rank);
        let deleting = rank(&key.kind);
        // An owner cleaning up what it owns (a logical container deleting its backing, the garbage
        // collector) is not the namespace's ordered cleanup.
        let owner_driven = self.store.get(key).is_some_and(|o| {
            o.metadata
                .owner_references
                .iter()
                .any(|r| self.store.get_by_uid(&r.uid).is_none_or(|owner| owner.metadata.is_deleting()))
        });
        if ns_terminating
            && !owner_driven
            && self.store.get(key).is_some_and(|o| !o.metadata.is_deleting())
            && let Some(earlier) = self.store.list(None, Some(namespace)).iter().find(|o| rank(&o.kind) < deleting)
        {
            let message = format!(
                "p{process} deleted {key} while {} remained in terminating namespace {namespace}",
                earlier.key()
            );
            self.history.flag("namespace-cleanup-order", message);
        }
    }

    /// A store request applied.
    pub(super) fn record_store_after(&mut self, process: usize, request: &StoreRequest, result: &StoreResult) {
        let Ok(StoreReply::Object(object)) = result else { return };
        if matches!(request, StoreRequest::Get { .. }) {
            return;
        }
        self.record_object(object);
        let skew_ms = self.processes[process].skew_ms;
        self.record_lease(object, skew_ms);
        self.check_hold(request, object);
        let removed = object.metadata.is_deleting() && object.metadata.finalizers.is_empty();
        if removed
            && object.kind == PhysicalContainer::KIND
            && self.history.mutations_in_flight.get(&object.metadata.uid.0).is_some_and(|n| *n > 0)
        {
            let message =
                format!("{} left the store while a runtime operation on its container was in flight", object.key());
            self.history.flag("finalizer-after-runtime-cleanup", message);
        }
    }

    /// A lease was written by a writer whose clock is `skew_ms` ahead: record who claims it until
    /// when, in true (world) time.
    pub(super) fn record_lease(&mut self, object: &Object, skew_ms: i64) {
        let true_time = |t: WallTime| WallTime((t.0 as i64 - skew_ms).max(0) as u64);
        if object.kind == Lease::KIND
            && let Ok(spec) = object.spec::<Lease>()
        {
            if spec.holder.is_none() {
                self.check_workload_recorded(object);
            }
            let claims = self.history.lease_claims.entry(object.metadata.name.clone()).or_default();
            match (&spec.holder, spec.renew_time) {
                (Some(holder), Some(renewed)) if claims.keys().any(|h| h != holder) && !claims.contains_key(holder) => {
                    let until = WallTime(true_time(renewed).0.saturating_add(spec.duration_ms));
                    claims.insert(holder.clone(), until);
                    *self.probes.entry(Probe::LeaseTakenOver).or_default() += 1;
                }
                (Some(holder), Some(renewed)) => {
                    // A new holder's claim ends every other claim (they had expired: that is the
                    // only way the store let this write through; lease-exclusive checks it).
                    let until = WallTime(true_time(renewed).0.saturating_add(spec.duration_ms));
                    claims.insert(holder.clone(), until);
                }
                _ => claims.clear(),
            }
        }
    }

    /// Drop lease claims that expired long ago, so the history stays small.
    pub(super) fn prune_claims(&mut self, now: WallTime) {
        let horizon = WallTime(now.0.saturating_sub(Duration::from_secs(60).as_millis() as u64));
        for claims in self.history.lease_claims.values_mut() {
            claims.retain(|_, until| *until > horizon);
        }
    }
}

impl World<'_> {
    fn logical(&self, uid: &str) -> Option<std::sync::Arc<Object>> {
        self.store
            .get_by_uid(&drydock_engine::api::Uid(uid.to_string()))
            .filter(|o| o.kind == LogicalContainer::KIND)
            .cloned()
    }

    fn record_logical_create(&mut self, process: usize, c: &drydock_engine::runtime::ContainerCreate) {
        if let Some(uid) = c.labels.get(names::LABEL_LOGICAL_UID) {
            let creates = self.history.logical_creates.entry(uid.clone()).or_default();
            *creates += 1;
            let creates = *creates;
            let mode = self.logical(uid).and_then(|lc| lc.spec::<LogicalContainer>().ok()).map(|s| s.mode);
            if mode == Some(LogicalMode::Existing) {
                self.history.flag(
                    "existing-never-creates",
                    format!("p{process} created {} for an existing-mode logical container", c.name),
                );
            }
            if mode == Some(LogicalMode::Persistent) && creates > 1 {
                self.history.flag(
                    "persistent-replace-once",
                    format!("p{process} created {} a second time for one persistent logical container", c.name),
                );
            }
        }
        let key = c.labels.get(names::LABEL_LIFECYCLE_KEY);
        if key.is_some() && self.history.removed_by_engine.get(&c.name).map(Option::as_ref) == Some(key) {
            let message =
                format!("{} was removed and created again with the same lifecycle key instead of being reused", c.name);
            self.history.flag("persistent-reuse", message);
        }
    }

    /// `wanted`: the lifecycle key the remover wants in its place, if it is replacing.
    fn record_logical_remove(
        &mut self,
        process: usize,
        removed: &drydock_engine::runtime::ContainerInfo,
        wanted: Option<String>,
    ) {
        if !removed.labels.contains_key(names::LABEL_CREATOR) {
            self.probe(Probe::StrangerReplaced);
        } else if removed.labels.contains_key(names::LABEL_LIFECYCLE_KEY)
            && removed.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true")
        {
            self.probe(Probe::PersistentReplaced);
        }
        // A drydock-created container removed to be replaced by one with the same key should have
        // been reused. (A replacement with another key, or a removal of a container being deleted,
        // is no such waste, even if the same key comes back later.)
        let key = removed.labels.get(names::LABEL_LIFECYCLE_KEY);
        if removed.labels.contains_key(names::LABEL_CREATOR) && key.is_some() && key == wanted.as_ref() {
            self.history.removed_by_engine.insert(removed.name.clone(), key.cloned());
        } else {
            self.history.removed_by_engine.remove(&removed.name);
        }
        let retained = removed.labels.get(names::LABEL_RETAIN).is_some_and(|v| v == "true");
        if retained
            && let Some(uid) = removed.labels.get(names::LABEL_LOGICAL_UID)
            && self.logical(uid).is_some()
        {
            let message =
                format!("p{process} removed {}, the persistent container of a live logical container", removed.name);
            self.history.flag("persistent-survives-delete", message);
        }
    }

    /// A backing resource lost its logical hold: only while its logical owner is going away.
    pub(super) fn check_hold(&mut self, request: &StoreRequest, object: &Object) {
        if !matches!(request, StoreRequest::Update { .. }) || object.metadata.has_finalizer(names::FINALIZER_HOLD) {
            return;
        }
        for owner in object.metadata.owner_references.iter().filter(|r| r.kind == LogicalContainer::KIND) {
            if let Some(lc) = self.logical(&owner.uid.0)
                && !lc.metadata.is_deleting()
            {
                let message = format!("{} lost its hold while {} still needs it", object.key(), lc.key());
                self.history.flag("hold-before-release", message);
            }
        }
    }

    /// A container startup lease was released: the workload must be on record first.
    fn check_workload_recorded(&mut self, lease: &Object) {
        if !lease.metadata.name.starts_with("container-") {
            return;
        }
        let Some(claims) = self.history.lease_claims.get(&lease.metadata.name) else { return };
        let holders: Vec<String> = claims.keys().cloned().collect();
        for holder in &holders {
            let Some((_, uid)) = holder.rsplit_once('/') else { continue };
            let Some(lc) = self.logical(uid) else { continue };
            let persistent = lc.spec::<LogicalContainer>().is_ok_and(|s| s.mode == LogicalMode::Persistent);
            let recorded = lc.status::<LogicalContainer>().is_ok_and(|s| s.workload.is_some());
            if persistent && !lc.metadata.is_deleting() && !recorded {
                let message =
                    format!("{holder} released the startup lease of {} before recording the workload", lc.key());
                self.history.flag("workload-recorded-before-lease-release", message);
            }
        }
    }
}

impl World<'_> {
    pub(super) fn probe(&mut self, probe: Probe) {
        *self.probes.entry(probe).or_default() += 1;
    }

    /// Probes visible in a runtime request as it applies.
    pub(super) fn probe_runtime(&mut self, process: usize, request: &RuntimeRequest, result: &RuntimeResult) {
        use drydock_engine::runtime::RuntimeReply;
        match (request, result) {
            (RuntimeRequest::ListContainers { labels }, Ok(RuntimeReply::Containers(found)))
                if labels.get(names::LABEL_OWNER_UID).is_some_and(|uid| self.uncertain_uids.contains(uid))
                    && !found.is_empty() =>
            {
                self.probe(Probe::UncertainCreateAdopted);
            }
            (RuntimeRequest::InspectImage { reference }, Ok(_)) => {
                let lease = drydock_engine::controllers::image::pull_lease_name(reference);
                let now = self.now(self.scheduler.now()).wall;
                let ours = super::processes::identity(process);
                let holds = self.history.lease_claims.get(&lease).is_some_and(|claims| {
                    claims.iter().any(|(h, until)| drydock_engine::lease::holder_identity(h) == ours && *until > now)
                });
                if holds {
                    self.probe(Probe::PullAvoidedUnderLease);
                }
            }
            (RuntimeRequest::InspectContainer { id }, Ok(_)) => {
                let id = self.runtime.container(id).map(|c| c.id.clone()).unwrap_or_default();
                if self.was_hidden.remove(&id) {
                    self.probe(Probe::NotFoundAfterCreateRetried);
                }
            }
            _ => {}
        }
    }

    /// Probes visible in a store request as it applies.
    pub(super) fn probe_store(&mut self, process: usize, request: &StoreRequest, result: &StoreResult) {
        let key = match request {
            StoreRequest::Create { object }
            | StoreRequest::Update { object }
            | StoreRequest::UpdateStatus { object } => object.key().to_string(),
            StoreRequest::Delete { key, .. } | StoreRequest::Get { key } => key.to_string(),
            StoreRequest::List { .. } => return,
        };
        let now = self.now(self.scheduler.now()).wall;
        match (request, result) {
            (StoreRequest::Get { key }, Ok(StoreReply::Object(lease)))
                if key.kind == Lease::KIND && lease.spec::<Lease>().is_ok_and(|s| s.live_holder(now).is_some()) =>
            {
                self.probe(Probe::LeaseContended);
            }
            (_, Err(e)) if e.is_conflict() => {
                self.conflicted.insert((process, key));
            }
            (_, Ok(StoreReply::Object(object))) => {
                if self.conflicted.remove(&(process, key)) {
                    self.probe(Probe::ConflictRetried);
                }
                self.probe_object(request, object);
            }
            _ => {}
        }
    }

    fn probe_object(&mut self, request: &StoreRequest, object: &Object) {
        use drydock_engine::api::logical::LogicalPhase;
        use drydock_engine::api::{ContainerPhase, Namespace};
        match (request, object.kind.as_str()) {
            (StoreRequest::Delete { .. }, Namespace::KIND) if !self.history.pulls_in_flight.is_empty() => {
                self.probe(Probe::NamespaceDeletedDuringPull);
            }
            (StoreRequest::Create { .. }, PhysicalContainer::KIND) => {
                let tracked = object.spec::<PhysicalContainer>().is_ok_and(|s| s.container_id.is_some());
                let persistent_owner = object.metadata.owner_references.iter().any(|r| {
                    self.logical(&r.uid.0)
                        .and_then(|lc| lc.spec::<LogicalContainer>().ok())
                        .is_some_and(|s| s.mode == LogicalMode::Persistent)
                });
                if tracked && persistent_owner {
                    self.probe(Probe::PersistentReused);
                }
            }
            (StoreRequest::UpdateStatus { .. }, PhysicalContainer::KIND)
                if object.status::<PhysicalContainer>().is_ok_and(|s| s.phase == ContainerPhase::Missing) =>
            {
                self.probe(Probe::MissingAfterExternalRemoval);
            }
            (StoreRequest::UpdateStatus { .. }, LogicalContainer::KIND) => {
                let phase = object.status::<LogicalContainer>().map(|s| s.phase).unwrap_or_default();
                let uid = object.metadata.uid.0.clone();
                if phase == LogicalPhase::NotFound {
                    self.waited_existing.insert(uid);
                } else if phase == LogicalPhase::Running && self.waited_existing.remove(&uid) {
                    self.probe(Probe::ExistingAdoptedAfterWait);
                }
            }
            _ => {}
        }
    }
}
