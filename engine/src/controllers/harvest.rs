//! The harvester: removes runtime containers and volumes this engine's identity created whose
//! object is gone.
//!
//! A container outlives its object when an engine dies between creating it and recording it and
//! the object is deleted meanwhile, or when the store lost the object (restored from an older
//! copy, wiped by hand). Nothing else would ever remove it: every other controller starts from an
//! object. DCP's harvester is the model: at start, and then periodically, list what we created and
//! remove what nobody wants.
//!
//! A pass lists the runtime by our creator label first and the store (uncached, every kind)
//! second, so an object that exists when its container is listed is in the store list: objects are
//! never recreated under the same uid, so "not in the later list" means gone for good.
//!
//! *Guarantees*
//! - Only containers carrying this engine's identity as creator are ever removed: another engine's
//!   and a stranger's are never touched.
//! - A container whose object still exists (its owner-uid label names any object in the store) is
//!   left to that object's controller, which adopts it by that label.
//! - Retained containers (persistent ones) and containers whose id any object records
//!   (`spec.containerId`, `status.runtimeId`, `status.containerId`) are never removed.
//! - Passes run at start, once more when requests an earlier life of the engine left in flight have
//!   settled (a create of a dead life may land after the first pass), then every
//!   [`ControllerConfig::harvest_interval`](super::ControllerConfig). A failed pass is retried after
//!   1 s, doubling up to the interval.
//!
//! - A volume is removed only once unused, never forced: one left in the runtime while still in
//!   use (abandoned by its namespace's deletion, see [`runtime_resource`](super::runtime_resource))
//!   is removed by the first pass after its last user went. One still in use is looked at again
//!   as after a failed pass (1 s, doubling up to the interval). A pass removes its leftover volumes only once its leftover
//!   containers are removed, as those may be what still uses them.
//!
//! *Caveats*: a container removed by the harvester is removed with force, as the physical
//! controller's own cleanup would. Networks are not harvested: their controller never lets one
//! go while it exists.

use crate::api::{Object, ObjectKey, names};
use crate::controller::{Action, Context, Controller, OpId, ReconcileResult, Watch};

use crate::runtime::{ContainerInfo, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult, VolumeInfo};
use crate::store::{StoreReply, StoreRequest, StoreResult};
use crate::time::{MonoTime, Now};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// The kind of the harvester's one key. No object of this kind exists: the key names the
/// harvester's work in queues, traces and request origins.
pub const HARVEST_KIND: &str = "Harvest";

/// The first retry of a failed pass; it doubles up to the harvest interval.
const RETRY_FIRST: Duration = Duration::from_secs(1);

/// The harvester's one work key.
pub fn harvest_key() -> ObjectKey {
    ObjectKey::cluster(HARVEST_KIND, "runtime")
}

/// The containers of `listed` (all carrying our creator label) that nobody wants: created by
/// `identity` for an object (an owner uid label), not retained, whose owner uid no object in
/// `objects` has and whose id no object records. Sorted by id.
///
/// The candidates come first (ours, not retained, made for an object), then one read of the
/// objects' uids strikes those whose owner lives; only if some are left are the objects' specs and
/// statuses read for recorded ids. Usually none is left, and a big world's objects are read once,
/// uid only, rather than sorted into sets.
pub fn leftovers<'a>(identity: &str, listed: &'a [ContainerInfo], objects: &[Arc<Object>]) -> Vec<&'a ContainerInfo> {
    let mut found = ownerless(identity, listed, |c| &*c.labels, objects);
    if !found.is_empty() {
        let recorded: BTreeSet<&str> = objects.iter().flat_map(|o| recorded_ids(o)).collect();
        found.retain(|c| !recorded.contains(c.id.as_str()));
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// The volumes of `listed` (all carrying our creator label) that nobody wants: created by
/// `identity` for an object, not retained, whose owner uid no object in `objects` has. Sorted by
/// name. (A volume is tracked by name only while its object lives: no object records one it did
/// not create.)
pub fn volume_leftovers<'a>(identity: &str, listed: &'a [VolumeInfo], objects: &[Arc<Object>]) -> Vec<&'a VolumeInfo> {
    let mut found = ownerless(identity, listed, |v| &v.labels, objects);
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The items of `listed` created by `identity` for an object (an owner uid label), not retained,
/// whose owner uid no object in `objects` has.
fn ownerless<'a, T>(
    identity: &str,
    listed: &'a [T],
    labels: impl Fn(&T) -> &BTreeMap<String, String>,
    objects: &[Arc<Object>],
) -> Vec<&'a T> {
    let mut by_owner: BTreeMap<&str, Vec<&T>> = BTreeMap::new();
    for item in listed {
        let labels = labels(item);
        if labels.get(names::LABEL_CREATOR).map(String::as_str) != Some(identity)
            || labels.get(names::LABEL_RETAIN).map(String::as_str) == Some("true")
        {
            continue;
        }
        // Without an owner uid it was not made for an object: not ours to judge.
        if let Some(uid) = labels.get(names::LABEL_OWNER_UID) {
            by_owner.entry(uid.as_str()).or_default().push(item);
        }
    }
    for object in objects {
        if by_owner.is_empty() {
            return Vec::new();
        }
        by_owner.remove(object.metadata.uid.0.as_str());
    }
    by_owner.into_values().flatten().collect()
}

/// Runtime container ids an object records as its own or as one it tracks.
fn recorded_ids(object: &Object) -> impl Iterator<Item = &str> {
    let spec = object.spec.get("containerId");
    let status = ["runtimeId", "containerId"].into_iter().filter_map(|f| object.status.get(f));
    spec.into_iter().chain(status).filter_map(|v| v.as_str())
}

/// What a pass found in the runtime: ours, by creator label.
#[derive(Debug, Default)]
struct Found {
    containers: Vec<ContainerInfo>,
    volumes: Vec<VolumeInfo>,
}

impl Found {
    fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.volumes.is_empty()
    }
}

#[derive(Debug)]
enum Phase {
    /// Waiting for the next pass, due at this time.
    Idle { due: MonoTime },
    /// Listing the runtime's containers by our creator label.
    ListingContainers(OpId),
    /// The containers are in; the volumes come next.
    ContainersListed(Vec<ContainerInfo>),
    /// Listing the runtime's volumes by our creator label.
    ListingVolumes(OpId, Vec<ContainerInfo>),
    /// The runtime listed these; the store list comes next.
    Listed(Found),
    /// Listing the store.
    ListingStore(OpId, Found),
    /// Both lists are in: the leftovers they show, to remove.
    Fetched(Found),
    /// Removing leftovers: the removes still in flight, whether one failed, and the volumes to
    /// remove once they are done (a leftover container may be what still uses one).
    Removing { pending: BTreeSet<OpId>, failed: bool, then: Vec<VolumeInfo> },
}

#[derive(Debug)]
pub struct Harvester {
    interval: Duration,
    phase: Phase,
    /// Failed passes in a row.
    failures: u32,
    /// When the pass in progress began.
    pass_began: MonoTime,
    /// This engine's identity, as the pass in progress began (what our creator label says).
    identity: String,
}

impl Harvester {
    pub fn new(interval: Duration) -> Self {
        Harvester {
            interval,
            phase: Phase::Idle { due: MonoTime(0) },
            failures: 0,
            pass_began: MonoTime(0),
            identity: String::new(),
        }
    }

    /// The pass ended: when is the next one due?
    fn end_pass(&mut self, ctx: &Context<'_>, ok: bool) -> Action {
        let now = ctx.now().mono;
        let due = if !ok {
            self.retry_due(now)
        } else if self.pass_began < ctx.earlier_lives_settle_at {
            // A create sent by an earlier life may still land after this pass: look again once
            // such requests have settled.
            self.failures = 0;
            ctx.earlier_lives_settle_at
        } else {
            self.failures = 0;
            now + self.interval
        };
        self.phase = Phase::Idle { due };
        Action::requeue(due.since(now))
    }

    /// After a failed pass: 1 s, doubling up to the interval.
    fn retry_due(&mut self, now: MonoTime) -> MonoTime {
        self.failures += 1;
        let doublings = self.failures.saturating_sub(1).min(16);
        now + RETRY_FIRST.saturating_mul(1 << doublings).min(self.interval)
    }

    /// Carry a failure of the pass's container removes over to its volume removes.
    fn mark_failed(&mut self, failed: bool) {
        if let Phase::Removing { failed: now_failed, .. } = &mut self.phase {
            *now_failed |= failed;
        }
    }

    fn fail(&mut self, now: Now, what: &str, error: &dyn std::fmt::Display) {
        tracing::warn!(%error, "harvest pass failed: {what}");
        self.phase = Phase::Idle { due: self.retry_due(now.mono) };
    }

    /// Remove every leftover container of the pass, then (once those removes are answered) every
    /// leftover volume: a leftover container may be what still uses a leftover volume. None: the
    /// pass is done.
    fn remove_leftovers(&mut self, ctx: &mut Context<'_>, leftovers: Found) -> ReconcileResult {
        let mut pending = BTreeSet::new();
        for leftover in &leftovers.containers {
            tracing::info!(container = %leftover.id, name = %leftover.name, "harvesting a container whose object is gone");
            pending.insert(ctx.runtime(RuntimeRequest::RemoveContainer { id: leftover.id.clone(), force: true }));
        }
        let mut then = leftovers.volumes;
        if pending.is_empty() {
            for leftover in std::mem::take(&mut then) {
                tracing::info!(volume = %leftover.name, "harvesting a volume whose object is gone");
                pending.insert(ctx.runtime(RuntimeRequest::RemoveVolume { name: leftover.name }));
            }
        }
        if pending.is_empty() {
            return Ok(self.end_pass(ctx, true));
        }
        self.phase = Phase::Removing { pending, failed: false, then };
        Ok(Action::done())
    }
}

impl Controller for Harvester {
    fn name(&self) -> &str {
        "harvester"
    }

    fn watches(&self) -> Vec<Watch> {
        Vec::new()
    }

    fn boot_keys(&self) -> Vec<ObjectKey> {
        vec![harvest_key()]
    }

    fn on_runtime_resync(&mut self, now: Now) -> Vec<ObjectKey> {
        // Events were missed: containers may have come and gone. Look now unless a pass runs.
        if let Phase::Idle { due } = &mut self.phase {
            *due = (*due).min(now.mono);
        }
        vec![harvest_key()]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        if *key != harvest_key() {
            return Ok(Action::done());
        }
        let now = ctx.now().mono;
        match std::mem::replace(&mut self.phase, Phase::Idle { due: now }) {
            Phase::Idle { due } if due > now => {
                self.phase = Phase::Idle { due };
                Ok(Action::requeue(due.since(now)))
            }
            Phase::Idle { .. } => {
                self.pass_began = now;
                self.identity = ctx.identity().to_string();
                let labels = BTreeMap::from([(names::LABEL_CREATOR.to_string(), ctx.identity().to_string())]);
                let op = ctx.runtime(RuntimeRequest::ListContainers { labels });
                self.phase = Phase::ListingContainers(op);
                Ok(Action::done())
            }
            Phase::ContainersListed(containers) => {
                let labels = BTreeMap::from([(names::LABEL_CREATOR.to_string(), self.identity.clone())]);
                let op = ctx.runtime(RuntimeRequest::ListVolumes { labels });
                self.phase = Phase::ListingVolumes(op, containers);
                Ok(Action::done())
            }
            Phase::Listed(listed) if listed.is_empty() => Ok(self.end_pass(ctx, true)),
            Phase::Listed(listed) => {
                let op = ctx.store(StoreRequest::List { kind: None, namespace: None });
                self.phase = Phase::ListingStore(op, listed);
                Ok(Action::done())
            }
            Phase::Fetched(found) => self.remove_leftovers(ctx, found),
            Phase::Removing { pending, failed, then } if pending.is_empty() && !then.is_empty() => self
                .remove_leftovers(ctx, Found { containers: Vec::new(), volumes: then })
                .inspect(|_| self.mark_failed(failed)),
            Phase::Removing { pending, failed, .. } if pending.is_empty() => Ok(self.end_pass(ctx, !failed)),
            busy => {
                // A request of the pass is in flight; its reply brings us back.
                self.phase = busy;
                Ok(Action::done())
            }
        }
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        match &mut self.phase {
            Phase::ListingContainers(listing) if *listing == op => match result {
                Ok(RuntimeReply::Containers(found)) => self.phase = Phase::ContainersListed(found.clone()),
                Ok(other) => self.fail(now, "unexpected reply to a list", &format!("{other:?}")),
                Err(e) => self.fail(now, "cannot list the runtime's containers", e),
            },
            Phase::ListingVolumes(listing, containers) if *listing == op => match result {
                Ok(RuntimeReply::Volumes(volumes)) => {
                    let containers = std::mem::take(containers);
                    self.phase = Phase::Listed(Found { containers, volumes: volumes.clone() });
                }
                Ok(other) => self.fail(now, "unexpected reply to a list", &format!("{other:?}")),
                Err(e) => self.fail(now, "cannot list the runtime's volumes", e),
            },
            Phase::Removing { pending, failed, .. } if pending.contains(&op) => {
                pending.remove(&op);
                match result {
                    Ok(_) | Err(RuntimeError::NotFound(_)) => {}
                    // A volume still in use (abandoned while its namespace was deleted, or its
                    // last user being removed right now): looked at again as after a failed
                    // pass, from 1 s doubling up to the interval, so it goes soon after its user.
                    Err(RuntimeError::Conflict(e)) => {
                        tracing::debug!(error = %e, "a leftover is still in use");
                        *failed = true;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot remove a leftover; the next pass retries");
                        *failed = true;
                    }
                }
            }
            _ => {}
        }
    }

    fn on_store_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &StoreResult) {
        if !matches!(&self.phase, Phase::ListingStore(listing, _) if *listing == op) {
            return;
        }
        let Phase::ListingStore(_, listed) = std::mem::replace(&mut self.phase, Phase::Idle { due: now.mono }) else {
            return;
        };
        match result {
            Ok(StoreReply::Objects(objects)) => {
                let containers = leftovers(&self.identity, &listed.containers, objects).into_iter().cloned().collect();
                let volumes = if crate::bugs::on(crate::bugs::Bug::AbandonedVolumesKept) {
                    Vec::new()
                } else {
                    volume_leftovers(&self.identity, &listed.volumes, objects).into_iter().cloned().collect()
                };
                self.phase = Phase::Fetched(Found { containers, volumes });
            }
            Ok(StoreReply::Object(_)) => self.fail(now, "unexpected reply to a list", &"one object"),
            Err(e) => self.fail(now, "cannot list the store", e),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::api::{ObjectMeta, Uid};
    use crate::runtime::ContainerState;

    fn container(id: &str, labels: &[(&str, &str)]) -> ContainerInfo {
        ContainerInfo {
            id: id.into(),
            name: format!("name-{id}"),
            image: "busybox".into(),
            labels: std::sync::Arc::new(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            state: ContainerState::Running,
            exit_code: None,
            error: None,
            ports: Vec::new(),
        }
    }

    fn object(uid: &str, spec: serde_json::Value, status: serde_json::Value) -> Arc<Object> {
        let metadata = ObjectMeta { name: uid.into(), uid: Uid(uid.into()), ..Default::default() };
        Arc::new(Object { api_version: None, kind: "PhysicalContainer".into(), metadata, spec: Arc::new(spec), status })
    }

    #[test]
    fn only_our_unwanted_unretained_containers_are_leftovers() {
        let me = names::LABEL_CREATOR;
        let owner = names::LABEL_OWNER_UID;
        let listed = vec![
            container("gone", &[(me, "d1"), (owner, "u-gone")]),
            container("alive", &[(me, "d1"), (owner, "u-alive")]),
            container("kept", &[(me, "d1"), (owner, "u-gone"), (names::LABEL_RETAIN, "true")]),
            container("theirs", &[(me, "d2"), (owner, "u-gone")]),
            container("tracked", &[(me, "d1"), (owner, "u-gone-too")]),
            container("recorded", &[(me, "d1"), (owner, "u-old")]),
            container("orphan", &[(me, "d1")]),
        ];
        let objects = vec![
            object("u-alive", serde_json::json!({}), serde_json::json!({})),
            object("u-t", serde_json::json!({"containerId": "tracked"}), serde_json::json!({})),
            object("u-r", serde_json::json!({}), serde_json::json!({"runtimeId": "recorded"})),
        ];
        let found: Vec<&str> = leftovers("d1", &listed, &objects).iter().map(|c| c.id.as_str()).collect();
        assert_eq!(found, ["gone"], "an unlabelled container of ours was made for no object: not judged");
    }

    #[test]
    fn only_our_unretained_volumes_of_gone_objects_are_leftovers() {
        let me = names::LABEL_CREATOR;
        let owner = names::LABEL_OWNER_UID;
        let volume = |name: &str, labels: &[(&str, &str)]| VolumeInfo {
            name: name.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        let listed = vec![
            volume("gone-b", &[(me, "d1"), (owner, "u-gone")]),
            volume("gone-a", &[(me, "d1"), (owner, "u-gone-too")]),
            volume("alive", &[(me, "d1"), (owner, "u-alive")]),
            volume("kept", &[(me, "d1"), (owner, "u-gone"), (names::LABEL_RETAIN, "true")]),
            volume("theirs", &[(me, "d2"), (owner, "u-gone")]),
            volume("orphan", &[(me, "d1")]),
        ];
        let objects = vec![object("u-alive", serde_json::json!({}), serde_json::json!({}))];
        let found: Vec<&str> = volume_leftovers("d1", &listed, &objects).iter().map(|v| v.name.as_str()).collect();
        assert_eq!(found, ["gone-a", "gone-b"]);
    }
}
