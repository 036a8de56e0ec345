//! Invariants about images, pulls and leases.

use super::named;
use crate::checker::{Changes, Happening, HappeningKind, Invariant, Seen, View};
use crate::runtime::reference_key;
use drydock_engine::api::{
    ContainerImage, ImagePhase, Lease, ObjectKey, PhysicalContainer, PullPolicy, Resource, Uid, names,
};
use drydock_engine::runtime::{RuntimeError, RuntimeRequest};
use drydock_engine::store::StoreRequest;
use drydock_engine::{OpId, WallTime};
use std::collections::{BTreeMap, BTreeSet};

/// Never two pulls of one normalized reference in flight, across processes.
#[derive(Default)]
pub(super) struct SinglePullPerRef;

impl Invariant for SinglePullPerRef {
    named!(SinglePullPerRef);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for (reference, pulls) in view.facts.in_flight.pulls() {
            if pulls.len() > 1 {
                let who: Vec<String> = pulls.iter().map(|(p, op)| format!("p{p} {op}")).collect();
                return Err(format!("{} pulls of {reference} in flight at once: {}", pulls.len(), who.join(", ")));
            }
        }
        Ok(())
    }
}

/// Never two live holders of one lease (in true time).
#[derive(Default)]
pub(super) struct LeaseExclusive;

impl Invariant for LeaseExclusive {
    named!(LeaseExclusive);

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        view.facts.leases.iter().try_for_each(|(lease, claims)| exclusive(lease, claims, view.now))
    }

    /// Time only ends claims, so a second live holder can appear only with a claim, and every
    /// claim is a write of its lease: only the leases written since the last check are judged.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        changes.written(Lease::KIND).try_for_each(|(lease, _)| {
            let name = lease.metadata.name.as_str();
            view.facts.leases.of(name).map_or(Ok(()), |claims| exclusive(name, claims, view.now))
        })
    }
}

/// At most one of `claims` on `lease` is live at `now`.
fn exclusive(lease: &str, claims: &BTreeMap<String, WallTime>, now: WallTime) -> Result<(), String> {
    let live: Vec<&str> = claims.iter().filter(|(_, until)| **until > now).map(|(h, _)| h.as_str()).collect();
    if live.len() > 1 {
        return Err(format!("lease {lease} has {} live holders: {}", live.len(), live.join(", ")));
    }
    Ok(())
}

/// The image id a ContainerImage pinned never changes.
#[derive(Default)]
pub(super) struct PinnedImageStable {
    /// The first image id each ContainerImage pinned.
    pinned: BTreeMap<Uid, String>,
}

impl Invariant for PinnedImageStable {
    named!(PinnedImageStable);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplied]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        let Some(object) = happening.written_object() else { return };
        if object.kind == ContainerImage::KIND
            && object.spec::<ContainerImage>().is_ok()
            && let Some(id) = object.status::<ContainerImage>().ok().and_then(|s| s.image_id)
        {
            self.pinned.entry(object.metadata.uid.clone()).or_insert(id);
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for image in view.store.list(Some(ContainerImage::KIND), None) {
            self.same_pin(&image)?;
        }
        Ok(())
    }

    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            return self.check(view);
        }
        for image in changes.live(ContainerImage::KIND) {
            self.same_pin(image)?;
        }
        Ok(())
    }
}

impl PinnedImageStable {
    fn same_pin(&self, image: &drydock_engine::api::Object) -> Result<(), String> {
        // Single fields of the stored JSON: decoding every status after every event was slow.
        let Some(now) = image.status.get("imageId").and_then(serde_json::Value::as_str) else { return Ok(()) };
        if let Some(first) = self.pinned.get(&image.metadata.uid)
            && first != now
        {
            return Err(format!("{} pinned {first} and now says {now}", image.key()));
        }
        Ok(())
    }
}

/// At most `pullRetryLimit + 1` pulls per resource: per resource in status, and in total per
/// reference against the budgets of every resource that ever asked for it.
#[derive(Default)]
pub(super) struct PullAttemptsWithinLimit {
    /// Every ContainerImage ever seen: uid -> (normalized reference, pull retry limit).
    budgets: BTreeMap<Uid, (String, u32)>,
    /// Pulls ever sent, per normalized reference.
    issued: BTreeMap<String, u64>,
    /// References whose pulls or budgets changed since the last check.
    touched: BTreeSet<String>,
}

impl Invariant for PullAttemptsWithinLimit {
    named!(PullAttemptsWithinLimit);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplied, HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::RuntimeSent { request: RuntimeRequest::PullImage { reference }, .. } = happening {
            let key = reference_key(reference);
            *self.issued.entry(key.clone()).or_default() += 1;
            self.touched.insert(key);
        }
        let Some(object) = happening.written_object() else { return };
        if object.kind == ContainerImage::KIND
            && !self.budgets.contains_key(&object.metadata.uid)
            && let Ok(spec) = object.spec::<ContainerImage>()
        {
            let budget = (reference_key(&spec.image), spec.pull_retry_limit);
            self.touched.insert(budget.0.clone());
            self.budgets.insert(object.metadata.uid.clone(), budget);
        }
    }

    /// Attempts show in a resource's status, written; pulls against budgets change as observed.
    fn check_changes(&mut self, view: &View<'_>, changes: &Changes<'_>) -> Result<(), String> {
        if changes.everything {
            self.touched.clear();
            return self.check(view);
        }
        for image in changes.live(ContainerImage::KIND) {
            within_limit(image)?;
        }
        for reference in std::mem::take(&mut self.touched) {
            let issued = self.issued.get(&reference).copied().unwrap_or(0);
            let budget: u64 =
                self.budgets.values().filter(|(r, _)| *r == reference).map(|(_, limit)| u64::from(*limit) + 1).sum();
            if issued > budget {
                return Err(format!(
                    "{issued} pulls of {reference} issued, but the resources asking for it allow {budget}"
                ));
            }
        }
        Ok(())
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for image in view.store.list(Some(ContainerImage::KIND), None) {
            within_limit(&image)?;
        }
        let mut budgets: BTreeMap<&str, u64> = BTreeMap::new();
        for (reference, limit) in self.budgets.values() {
            *budgets.entry(reference).or_default() += u64::from(*limit) + 1;
        }
        for (reference, issued) in &self.issued {
            let budget = budgets.get(reference.as_str()).copied().unwrap_or(0);
            if *issued > budget {
                return Err(format!(
                    "{issued} pulls of {reference} issued, but the resources asking for it allow {budget}"
                ));
            }
        }
        Ok(())
    }
}

/// `Err` if `image` made more pull attempts than its limit allows.
fn within_limit(image: &drydock_engine::api::Object) -> Result<(), String> {
    let field = |value: &serde_json::Value, name: &str| value.get(name).and_then(serde_json::Value::as_u64);
    let attempts = field(&image.status, "pullAttempts").unwrap_or(0);
    let limit = field(&image.spec, "pullRetryLimit")
        .or_else(|| image.spec::<ContainerImage>().ok().map(|s| u64::from(s.pull_retry_limit)))
        .unwrap_or(0);
    if attempts > limit + 1 {
        return Err(format!("{} made {attempts} pull attempts with pullRetryLimit {limit}", image.key()));
    }
    Ok(())
}

/// A ContainerImage that pinned an image id never asks for a pull again, and a physical container
/// made from a ContainerImage is created from the id it pinned, never from a reference (which a
/// push or a pull may have moved). Judged when the request is sent, against the store of that
/// moment; the references are compared exactly as written, never normalized.
#[derive(Default)]
pub(super) struct PinnedImageHonoured {
    seen: Seen,
}

impl Invariant for PinnedImageHonoured {
    named!(PinnedImageHonoured);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        let Happening::RuntimeSent { process, id, request, issuer } = happening else { return };
        match request {
            RuntimeRequest::PullImage { reference } if issuer.kind == ContainerImage::KIND => {
                let Some(image) = view.store.get(issuer) else { return };
                if let Some(pinned) = pinned_id(image) {
                    self.seen.flag(format!("p{process} pulls {reference} ({id}) for {issuer}, which pinned {pinned}"));
                }
            }
            RuntimeRequest::CreateContainer(create) => {
                let Some(pc) = create
                    .labels
                    .get(names::LABEL_OWNER_UID)
                    .and_then(|uid| view.store.get_by_uid(&Uid(uid.clone())))
                    .filter(|pc| pc.kind == PhysicalContainer::KIND)
                else {
                    return;
                };
                let Some(name) = pc.spec.get("imageRef").and_then(serde_json::Value::as_str) else { return };
                let namespace = pc.metadata.namespace.as_deref().unwrap_or_default();
                let key = ObjectKey::namespaced(ContainerImage::KIND, namespace, name);
                let Some(pinned) = view.store.get(&key).and_then(|image| pinned_id(image).map(str::to_string)) else {
                    return;
                };
                if create.image != pinned {
                    self.seen.flag(format!(
                        "p{process} creates {} for {} from {}, but {key} pinned {pinned}",
                        create.name,
                        pc.key(),
                        create.image
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// A `ContainerImage` with pull policy `always` (not a build) first says Ready only after its
/// reference was pulled in this object's life: a local image of that name may be stale (a push
/// moved the tag in the registry), which is what the policy is for. By the simulator's own
/// reading of references (normalized), counting any pull of the reference the runtime applied.
#[derive(Default)]
pub(super) struct AlwaysPullsBeforeReady {
    /// Per `always` image object (by uid): its normalized reference, and whether it has been
    /// pulled since the object was created.
    objects: BTreeMap<Uid, (String, bool)>,
    seen: Seen,
}

impl Invariant for AlwaysPullsBeforeReady {
    named!(AlwaysPullsBeforeReady);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::ClientWrote,
            HappeningKind::StoreApplied,
            HappeningKind::StoreApplying,
            HappeningKind::RuntimeApplied,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        if let Some(object) = happening.written_object().filter(|o| o.kind == ContainerImage::KIND)
            && let Ok(spec) = object.spec::<ContainerImage>()
            && spec.pull_policy == PullPolicy::Always
            && spec.build.is_none()
        {
            // Known from its first write, its create: a pull after that counts.
            let entry = self.objects.entry(object.metadata.uid.clone()).or_insert((String::new(), false));
            entry.0 = reference_key(&spec.image);
            return;
        }
        match happening {
            Happening::RuntimeApplied { request: RuntimeRequest::PullImage { reference }, result: Ok(_), .. } => {
                let pulled = reference_key(reference);
                for (key, done) in self.objects.values_mut() {
                    *done |= *key == pulled;
                }
            }
            Happening::StoreApplying { request, .. } => {
                let StoreRequest::UpdateStatus { object } = request else { return };
                // A status write's object carries the status; the reference is the one recorded.
                let Some((reference, pulled)) = self.objects.get(&object.metadata.uid) else { return };
                let ready = object.status::<ContainerImage>().is_ok_and(|s| s.phase == ImagePhase::Ready);
                let stored = view.store.get(&object.key()).filter(|o| o.metadata.uid == object.metadata.uid);
                let was_ready =
                    stored.is_some_and(|o| o.status::<ContainerImage>().is_ok_and(|s| s.phase == ImagePhase::Ready));
                if ready && !was_ready && !pulled {
                    self.seen.flag(format!(
                        "{} (pull policy always) is about to say Ready without a pull of {reference} since it was created",
                        object.key(),
                    ));
                }
            }
            _ => {}
        }
    }

    fn check(&self, _view: &View<'_>) -> Result<(), String> {
        self.seen.check()
    }
}

/// How long a ContainerImage may go on saying Ready after its engine was told its pinned image
/// is gone: the status write the answer leads to, retried through conflicts and lost replies.
pub(super) const READY_AFTER_GONE: std::time::Duration = std::time::Duration::from_secs(35);

/// A ContainerImage reports Ready only while its pinned image exists in the runtime, with the lag
/// the engine's design implies. The engine cannot know of a removal before it looks (Docker's
/// event stream, as the engine follows it, carries container events only): it inspects the
/// pinned id every monitoring period, and a hung or failing inspection delays that further. So
/// the lag is counted from the moment a process was *handed* a NotFound answer to an inspection
/// of the pinned id it sent for that ContainerImage: from then on it has
/// [`READY_AFTER_GONE`] to stop saying Ready (a crash of that process resets the clock: its next
/// life must look again; so does a status write of that process for that object that failed, a
/// conflict under `store-conflict`: its retry backs off, and a run of such failures may outlast
/// any fixed bound while faults last; convergence judges the end). The image coming back (an
/// inspection finding it) ends the count.
#[derive(Default)]
pub(super) struct ReadyWhilePinnedPresent {
    /// Inspections of an image sent by a ContainerImage's reconcile: (process, op) -> (issuer,
    /// reference inspected).
    inspections: BTreeMap<(usize, OpId), (ObjectKey, String)>,
    /// Of those, the ones the runtime answered NotFound.
    said_gone: BTreeSet<(usize, OpId)>,
    /// Per ContainerImage: the pinned id a process was told is gone, which process, and when;
    /// with the uid of the object it was told for (a ContainerImage deleted and created again
    /// under its name is another object, whose engine was told nothing yet).
    told: BTreeMap<ObjectKey, (Uid, String, usize, WallTime)>,
}

impl Invariant for ReadyWhilePinnedPresent {
    named!(ReadyWhilePinnedPresent);

    fn observes(&self) -> &'static [HappeningKind] {
        &[
            HappeningKind::RuntimeSent,
            HappeningKind::RuntimeApplied,
            HappeningKind::Answered,
            HappeningKind::Crashed,
            HappeningKind::StoreApplied,
        ]
    }

    fn observe(&mut self, view: &View<'_>, happening: &Happening<'_>) {
        match happening {
            Happening::RuntimeSent { process, id, request: RuntimeRequest::InspectImage { reference }, issuer }
                if issuer.kind == ContainerImage::KIND =>
            {
                self.inspections.insert((*process, *id), ((*issuer).clone(), reference.clone()));
            }
            Happening::RuntimeApplied { process, id, result, .. }
                if self.inspections.contains_key(&(*process, *id)) =>
            {
                if matches!(result, Err(RuntimeError::NotFound(_))) {
                    self.said_gone.insert((*process, *id));
                } else if result.is_ok()
                    && let Some((issuer, reference)) = self.inspections.get(&(*process, *id))
                    && self.told.get(issuer).is_some_and(|(_, gone, _, _)| gone == reference)
                {
                    // It is back (pulled again by another resource of the same reference).
                    self.told.remove(issuer);
                }
            }
            Happening::Answered { process, id } => {
                let Some((issuer, reference)) = self.inspections.remove(&(*process, *id)) else { return };
                if self.said_gone.remove(&(*process, *id))
                    && let Some(image) = view.store.get(&issuer)
                    && pinned_id(image) == Some(reference.as_str())
                {
                    let uid = image.metadata.uid.clone();
                    let told = self.told.entry(issuer).or_insert((uid.clone(), reference.clone(), *process, view.now));
                    if told.0 != uid {
                        *told = (uid, reference, *process, view.now);
                    }
                }
            }
            Happening::StoreApplied {
                process,
                request: drydock_engine::store::StoreRequest::UpdateStatus { object },
                result: Err(_),
            } if object.kind == ContainerImage::KIND => {
                if let Some(told) = self.told.get_mut(&object.key())
                    && told.0 == object.metadata.uid
                    && told.2 == *process
                {
                    told.3 = view.now;
                }
            }
            Happening::Crashed { process } => {
                self.told.retain(|_, (_, _, p, _)| p != process);
                self.inspections.retain(|(p, _), _| p != process);
                self.said_gone.retain(|(p, _)| p != process);
            }
            _ => {}
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for (key, (uid, gone, process, since)) in &self.told {
            let Some(image) = view.store.get(key).filter(|image| image.metadata.uid == *uid) else { continue };
            let ready = image.status.get("phase").and_then(serde_json::Value::as_str) == Some("Ready");
            if ready
                && pinned_id(image) == Some(gone.as_str())
                && !view.runtime.has_image(gone)
                && view.now.0.saturating_sub(since.0) > READY_AFTER_GONE.as_millis() as u64
            {
                return Err(format!(
                    "{key} still says Ready with {gone}, {}s after p{process} was told the image is gone",
                    (view.now.0 - since.0) / 1000
                ));
            }
        }
        Ok(())
    }
}

/// `status.imageId` of a ContainerImage.
fn pinned_id(image: &drydock_engine::api::Object) -> Option<&str> {
    image.status.get("imageId")?.as_str()
}
