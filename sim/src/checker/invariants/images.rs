//! Invariants about images, pulls and leases.

use super::named;
use crate::checker::{Happening, HappeningKind, Invariant, View};
use crate::runtime::reference_key;
use drydock_engine::api::{ContainerImage, Resource, Uid};
use drydock_engine::runtime::RuntimeRequest;
use std::collections::BTreeMap;

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
        for (lease, claims) in view.facts.leases.iter() {
            let live: Vec<&str> =
                claims.iter().filter(|(_, until)| **until > view.now).map(|(h, _)| h.as_str()).collect();
            if live.len() > 1 {
                return Err(format!("lease {lease} has {} live holders: {}", live.len(), live.join(", ")));
            }
        }
        Ok(())
    }
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
            // Single fields of the stored JSON: decoding every status after every event was slow.
            let Some(now) = image.status.get("imageId").and_then(serde_json::Value::as_str) else { continue };
            if let Some(first) = self.pinned.get(&image.metadata.uid)
                && first != now
            {
                return Err(format!("{} pinned {first} and now says {now}", image.key()));
            }
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
}

impl Invariant for PullAttemptsWithinLimit {
    named!(PullAttemptsWithinLimit);

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote, HappeningKind::StoreApplied, HappeningKind::RuntimeSent]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::RuntimeSent { request: RuntimeRequest::PullImage { reference }, .. } = happening {
            *self.issued.entry(reference_key(reference)).or_default() += 1;
        }
        let Some(object) = happening.written_object() else { return };
        if object.kind == ContainerImage::KIND
            && let Ok(spec) = object.spec::<ContainerImage>()
        {
            let budget = (reference_key(&spec.image), spec.pull_retry_limit);
            self.budgets.entry(object.metadata.uid.clone()).or_insert(budget);
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        for image in view.store.list(Some(ContainerImage::KIND), None) {
            let field = |value: &serde_json::Value, name: &str| value.get(name).and_then(serde_json::Value::as_u64);
            let attempts = field(&image.status, "pullAttempts").unwrap_or(0);
            let limit = field(&image.spec, "pullRetryLimit")
                .or_else(|| image.spec::<ContainerImage>().ok().map(|s| u64::from(s.pull_retry_limit)))
                .unwrap_or(0);
            if attempts > limit + 1 {
                return Err(format!("{} made {attempts} pull attempts with pullRetryLimit {limit}", image.key()));
            }
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
