//! Invariants about images, pulls and leases.

use crate::checker::View;
use drydock_engine::api::{ContainerImage, Resource};
use std::collections::BTreeMap;

/// Never two pulls of one normalized reference in flight, across processes.
pub(super) fn single_pull_per_ref(view: &View<'_>) -> Result<(), String> {
    for (reference, pulls) in &view.history.pulls_in_flight {
        if pulls.len() > 1 {
            let who: Vec<String> = pulls.iter().map(|(p, op)| format!("p{p} {op}")).collect();
            return Err(format!("{} pulls of {reference} in flight at once: {}", pulls.len(), who.join(", ")));
        }
    }
    Ok(())
}

/// Never two live holders of one lease.
pub(super) fn lease_exclusive(view: &View<'_>) -> Result<(), String> {
    for (lease, claims) in &view.history.lease_claims {
        let live: Vec<&String> = claims.iter().filter(|(_, until)| **until > view.now).map(|(h, _)| h).collect();
        if live.len() > 1 {
            let holders: Vec<&str> = live.iter().map(|h| h.as_str()).collect();
            return Err(format!("lease {lease} has {} live holders: {}", live.len(), holders.join(", ")));
        }
    }
    Ok(())
}

/// A ContainerImage's pinned id never changes.
pub(super) fn pinned_image_stable(view: &View<'_>) -> Result<(), String> {
    for image in view.store.list(Some(ContainerImage::KIND), None) {
        // Single fields of the stored JSON: decoding every status after every event was slow.
        let Some(now) = image.status.get("imageId").and_then(serde_json::Value::as_str) else { continue };
        if let Some(first) = view.history.pinned.get(&image.metadata.uid)
            && first != now
        {
            return Err(format!("{} pinned {first} and now says {now}", image.key()));
        }
    }
    Ok(())
}

/// At most `pullRetryLimit + 1` pulls per resource: per resource in status, and in total per
/// reference against the budgets of every resource that ever asked for it.
pub(super) fn pull_attempts_within_limit(view: &View<'_>) -> Result<(), String> {
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
    for (reference, limit) in view.history.image_budgets.values() {
        *budgets.entry(reference).or_default() += u64::from(*limit) + 1;
    }
    for (reference, issued) in &view.history.pulls_issued {
        let budget = budgets.get(reference.as_str()).copied().unwrap_or(0);
        if *issued > budget {
            return Err(format!(
                "{issued} pulls of {reference} issued, but the resources asking for it allow {budget}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::checker::{History, check_all};
    use crate::runtime::SimRuntime;
    use drydock_engine::api::{
        ContainerImageSpec, ContainerImageStatus, ImagePhase, Namespace, NamespaceSpec, Object, ObjectMeta, Uid,
    };
    use drydock_engine::store::{Registry, Store, StoreConfig};
    use drydock_engine::{OpId, WallTime};

    fn store() -> Store {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        store
            .create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {}))
            .unwrap();
        store
    }

    fn view<'a>(store: &'a Store, runtime: &'a SimRuntime, history: &'a History, now: u64) -> View<'a> {
        View { store, runtime, history, now: WallTime(now) }
    }

    fn image(store: &mut Store, name: &str, limit: u32, status: ContainerImageStatus) -> Uid {
        let spec = ContainerImageSpec { image: "busybox".into(), pull_retry_limit: limit, ..Default::default() };
        let created = store
            .create(WallTime(1), Object::from_spec::<ContainerImage>(ObjectMeta::named(Some("ns"), name), &spec))
            .unwrap();
        let mut next = (*created).clone();
        next.set_status::<ContainerImage>(&status);
        store.update_status(next).unwrap();
        created.metadata.uid.clone()
    }

    #[test]
    fn two_pulls_of_one_reference_in_flight_are_caught() {
        let (store, runtime) = (store(), SimRuntime::new(1));
        let mut history = History::default();
        let reference = "docker.io/library/busybox:latest".to_string();
        history.pulls_in_flight.entry(reference.clone()).or_default().insert((0, OpId(1)));
        assert!(single_pull_per_ref(&view(&store, &runtime, &history, 0)).is_ok(), "one is fine");
        history.pulls_in_flight.entry(reference).or_default().insert((1, OpId(7)));
        let v = view(&store, &runtime, &history, 0);
        assert!(single_pull_per_ref(&v).unwrap_err().contains("2 pulls"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("single-pull-per-ref"));
    }

    #[test]
    fn two_live_lease_holders_are_caught_but_an_expired_one_is_not() {
        let (store, runtime) = (store(), SimRuntime::new(1));
        let mut history = History::default();
        let claims = history.lease_claims.entry("pull-abc".into()).or_default();
        claims.insert("engine-0/a".into(), WallTime(1_000));
        claims.insert("engine-1/b".into(), WallTime(5_000));
        assert!(lease_exclusive(&view(&store, &runtime, &history, 1_000)).is_ok(), "the first expired at 1000");
        let v = view(&store, &runtime, &history, 999);
        assert!(lease_exclusive(&v).unwrap_err().contains("2 live holders"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("lease-exclusive"));
    }

    #[test]
    fn a_pinned_id_that_changes_is_caught() {
        let mut store = store();
        let runtime = SimRuntime::new(1);
        let status = ContainerImageStatus {
            phase: ImagePhase::Ready,
            image_id: Some("sha256:bbb".into()),
            ..Default::default()
        };
        let uid = image(&mut store, "img", 3, status);
        let mut history = History::default();
        history.pinned.insert(uid.clone(), "sha256:bbb".into());
        assert!(pinned_image_stable(&view(&store, &runtime, &history, 0)).is_ok());
        history.pinned.insert(uid, "sha256:aaa".into());
        let v = view(&store, &runtime, &history, 0);
        assert!(pinned_image_stable(&v).unwrap_err().contains("pinned sha256:aaa"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("pinned-image-stable"));
    }

    #[test]
    fn pull_attempts_over_the_limit_are_caught_in_status_and_in_total() {
        let mut store = store();
        let runtime = SimRuntime::new(1);
        let uid = image(&mut store, "img", 0, ContainerImageStatus { pull_attempts: 1, ..Default::default() });
        let mut history = History::default();
        let reference = "docker.io/library/busybox:latest".to_string();
        history.image_budgets.insert(uid, (reference.clone(), 0));
        history.pulls_issued.insert(reference.clone(), 1);
        assert!(pull_attempts_within_limit(&view(&store, &runtime, &history, 0)).is_ok(), "limit 0 allows exactly one");
        history.pulls_issued.insert(reference, 2);
        let v = view(&store, &runtime, &history, 0);
        assert!(pull_attempts_within_limit(&v).unwrap_err().contains("2 pulls"));
        assert_eq!(check_all(&v).map(|(n, _)| n), Some("pull-attempts-within-limit"));

        let mut store2 = self::store();
        image(&mut store2, "img", 1, ContainerImageStatus { pull_attempts: 3, ..Default::default() });
        let empty = History::default();
        assert!(
            pull_attempts_within_limit(&view(&store2, &runtime, &empty, 0)).unwrap_err().contains("3 pull attempts")
        );
    }
}
