//! Recording what the checkers need to know beyond the current state (see `checker::History`).

use super::World;
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
    pub(super) fn record_runtime_issue(&mut self, process: usize, id: OpId, request: &RuntimeRequest) {
        if let RuntimeRequest::PullImage { reference } = request {
            let normalized = normalize_image_reference(reference);
            *self.history.pulls_issued.entry(normalized.clone()).or_default() += 1;
            self.history.pulls_in_flight.entry(normalized).or_default().insert((process, id));
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

    /// The request will never be answered (cancelled, or its reply dropped).
    pub(super) fn record_runtime_settled(&mut self, process: usize, id: OpId) {
        for pulls in self.history.pulls_in_flight.values_mut() {
            pulls.remove(&(process, id));
        }
        self.history.pulls_in_flight.retain(|_, pulls| !pulls.is_empty());
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
            for pulls in self.history.pulls_in_flight.values_mut() {
                pulls.remove(&(process, id));
            }
            self.history.pulls_in_flight.retain(|_, pulls| !pulls.is_empty());
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
        let StoreRequest::Delete { key, .. } = request else { return };
        let Some(namespace) = &key.namespace else { return };
        let ns_terminating =
            self.store.get(&ObjectKey::cluster(Namespace::KIND, namespace)).is_some_and(|ns| ns.metadata.is_deleting());
        let rank = |kind: &str| self.store.registry().get(kind).map(|k| k.cleanup_rank);
        let deleting = rank(&key.kind);
        if ns_terminating
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
    pub(super) fn record_store_after(&mut self, request: &StoreRequest, result: &StoreResult) {
        let Ok(StoreReply::Object(object)) = result else { return };
        if matches!(request, StoreRequest::Get { .. }) {
            return;
        }
        self.record_object(object);
        self.record_lease(object);
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

    /// A lease was written: record who claims it until when.
    pub(super) fn record_lease(&mut self, object: &Object) {
        if object.kind == Lease::KIND
            && let Ok(spec) = object.spec::<Lease>()
        {
            let claims = self.history.lease_claims.entry(object.metadata.name.clone()).or_default();
            match (&spec.holder, spec.renew_time) {
                (Some(holder), Some(renewed)) => {
                    // A new holder's claim ends every other claim (they had expired: that is the
                    // only way the store let this write through; lease-exclusive checks it).
                    let until = WallTime(renewed.0.saturating_add(spec.duration_ms));
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
