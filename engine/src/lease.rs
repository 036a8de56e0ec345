//! Exclusive leases over the store, acquired and renewed with resourceVersion preconditions.
//!
//! A [`LeaseClient`] is a small state machine a controller embeds. `acquire` never waits: it
//! issues the next store request and answers `Pending` until a reply arrives, or `Contended` while
//! another holder's lease is live; the controller requeues and asks again. Holders are
//! `<engine identity>/<resource uid>`, so two resources of one process contend like two processes.
//!
//! *Guarantees*: a lease is taken only by a write whose precondition is the resourceVersion this
//! client read, and only if the lease was free, ours, or expired at that version. Two clients
//! therefore never both get a successful write for the same live lease.
//!
//! *Expiry is judged on our own clock*, as client-go's leader election does: another holder's
//! lease counts as expired once this client has seen the same record (holder and renew time)
//! unchanged for a whole lease duration on its monotonic clock. The holder's wall-clock
//! timestamps are never compared with ours, so clock skew between processes cannot make a live
//! lease look expired.
//!
//! *Caveats*: a lease abandoned long ago is still waited on for one full duration after this
//! client first sees it (a restarted process too waits that long for leases of others).
//! Our own lease's renewals use our own wall clock against our own timestamps.

use crate::api::{Lease, LeaseSpec, Object, ObjectKey, ObjectMeta, Resource};
use crate::controller::{Context, OpId};
use crate::store::{StoreError, StoreReply, StoreRequest, StoreResult};
use crate::time::{MonoTime, Now, WallTime};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// What `acquire` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// We hold it.
    Held,
    /// A request is in flight; ask again when the key is reconciled next.
    Pending,
    /// Someone else holds a live lease (as of our last read).
    Contended { holder: String },
}

#[derive(Clone, Debug)]
enum State {
    Reading(OpId),
    /// The lease does not exist: create it.
    Absent,
    /// Free, expired or ours at this version: take it with an update.
    Free(Arc<Object>),
    Writing(OpId),
    Held(Arc<Object>),
    /// Held, and a renewal is in flight.
    Renewing(OpId, Arc<Object>),
    Contended(String),
    /// Contention was reported; read again at the next attempt.
    Retry,
    Releasing,
}

/// The lease object name for a key: `<prefix>-<hash>`, a valid object name for any key.
pub fn lease_name(prefix: &str, key: &str) -> String {
    let digest = hex::encode(Sha256::digest(key.as_bytes()));
    format!("{prefix}-{}", &digest[..20])
}

/// The holder name of resource `uid` contending through engine `identity`: `<identity>/<uid>`, so
/// two resources of one process contend like two processes.
pub fn holder(identity: &str, uid: &crate::api::Uid) -> String {
    format!("{identity}/{uid}")
}

/// The engine identity a holder name (see [`holder`]) belongs to.
pub fn holder_identity(holder: &str) -> &str {
    holder.rsplit_once('/').map_or(holder, |(identity, _)| identity)
}

/// The uid of the resource a holder name (see [`holder`]) contends for, if it has one.
pub fn holder_uid(holder: &str) -> Option<&str> {
    holder.rsplit_once('/').map(|(_, uid)| uid)
}

#[derive(Debug, Default)]
pub struct LeaseClient {
    /// (lease name, holder) -> state. Keyed by holder too: several resources of one controller
    /// may want the same lease, and each is its own contender.
    leases: BTreeMap<Claim, State>,
    ops: BTreeMap<OpId, Claim>,
    /// Per lease name: the record (holder, renew time) last read, and since when (our clock) it
    /// has been seen unchanged.
    observed: BTreeMap<String, Observation>,
}

#[derive(Clone, Debug, PartialEq)]
struct Observation {
    holder: Option<String>,
    renewed: Option<WallTime>,
    since: MonoTime,
}

type Claim = (String, String);

impl LeaseClient {
    /// Try to hold lease `name` (serializing `key`) as `holder` for `duration`. Issues at most one
    /// store request; the reply is fed back through [`LeaseClient::on_store_result`].
    pub fn acquire(
        &mut self,
        ctx: &mut Context<'_>,
        name: &str,
        key: &str,
        holder: &str,
        duration: Duration,
    ) -> Acquire {
        let now = ctx.now().wall;
        let claim: Claim = (name.to_string(), holder.to_string());
        let state = self.leases.get(&claim).cloned();
        let (next, answer) = match state {
            Some(State::Held(object)) => {
                let spec = object.spec::<Lease>().unwrap_or_default();
                if spec.live_holder(now) != Some(holder) {
                    // Expired under us: start over.
                    (self.read(ctx, name), Acquire::Pending)
                } else if spec.renew_time.is_none_or(|t| now.0.saturating_sub(t.0) > spec.duration_ms / 3) {
                    let mut renewed = (*object).clone();
                    renewed.spec = lease_spec(key, holder, spec.acquire_time.unwrap_or(now), now, duration).into();
                    let id = ctx.store_handling_failure(StoreRequest::Update { object: renewed });
                    (State::Renewing(id, object), Acquire::Held)
                } else {
                    (State::Held(object), Acquire::Held)
                }
            }
            Some(State::Renewing(id, object)) => {
                let live = object.spec::<Lease>().is_ok_and(|s| s.live_holder(now) == Some(holder));
                (State::Renewing(id, object), if live { Acquire::Held } else { Acquire::Pending })
            }
            Some(s @ (State::Reading(_) | State::Writing(_) | State::Releasing)) => (s, Acquire::Pending),
            Some(State::Absent) => {
                let mut object = Object::new(Lease::KIND, ObjectMeta::named(None, name), serde_json::Value::Null);
                object.spec = lease_spec(key, holder, now, now, duration).into();
                (State::Writing(ctx.store_handling_failure(StoreRequest::Create { object })), Acquire::Pending)
            }
            Some(State::Free(object)) => {
                let spec = object.spec::<Lease>().unwrap_or_default();
                let acquired = if spec.live_holder(now) == Some(holder) { spec.acquire_time } else { None };
                let mut next = (*object).clone();
                next.spec = lease_spec(key, holder, acquired.unwrap_or(now), now, duration).into();
                (State::Writing(ctx.store_handling_failure(StoreRequest::Update { object: next })), Acquire::Pending)
            }
            // Report the contention now; read again only at the next attempt, which the caller
            // schedules (a read here would make the engine rerun the reconcile at once).
            Some(State::Contended(holder)) => (State::Retry, Acquire::Contended { holder }),
            Some(State::Retry) => (self.read(ctx, name), Acquire::Pending),
            None => (self.read(ctx, name), Acquire::Pending),
        };
        if let State::Reading(id) | State::Writing(id) | State::Renewing(id, _) = &next {
            self.ops.insert(*id, claim.clone());
        }
        self.leases.insert(claim, next);
        answer
    }

    /// Give lease `name` up. If we hold it, the lease is marked free; if a write that could make
    /// us holder is in flight, we forget it and the lease simply expires.
    pub fn release(&mut self, ctx: &mut Context<'_>, name: &str, holder: &str) {
        let claim: Claim = (name.to_string(), holder.to_string());
        match self.leases.remove(&claim) {
            Some(State::Held(object) | State::Renewing(_, object)) => {
                let mut spec = object.spec::<Lease>().unwrap_or_default();
                spec.holder = None;
                let mut next = (*object).clone();
                next.spec = Arc::new(serde_json::to_value(spec).unwrap_or_default());
                let id = ctx.store_handling_failure(StoreRequest::Update { object: next });
                self.ops.insert(id, claim.clone());
                self.leases.insert(claim, State::Releasing);
            }
            _ => self.ops.retain(|_, c| *c != claim),
        }
    }

    /// Whether we believe we hold `name` at `now`.
    pub fn holds(&self, name: &str, holder: &str, now: WallTime) -> bool {
        match self.leases.get(&(name.to_string(), holder.to_string())) {
            Some(State::Held(o) | State::Renewing(_, o)) => {
                o.spec::<Lease>().is_ok_and(|s| s.live_holder(now) == Some(holder))
            }
            _ => false,
        }
    }

    /// Feed a store reply. Returns false if the op was not a lease request of this client.
    pub fn on_store_result(&mut self, now: Now, op: OpId, result: &StoreResult) -> bool {
        let Some(claim) = self.ops.remove(&op) else { return false };
        let holder = claim.1.as_str();
        let Some(state) = self.leases.get(&claim).cloned() else { return true };
        let next = match (state, result) {
            (State::Reading(_), Err(StoreError::NotFound { .. })) => Some(State::Absent),
            (State::Reading(_), Ok(StoreReply::Object(object))) => match self.live_other_holder(now, object, holder) {
                Some(other) => Some(State::Contended(other)),
                None => Some(State::Free(object.clone())),
            },
            (State::Writing(_) | State::Renewing(..), Ok(StoreReply::Object(object))) => {
                Some(State::Held(object.clone()))
            }
            (State::Releasing, _) => None,
            // Conflict, AlreadyExists, a failed read: someone else got there; read again later.
            _ => Some(State::Contended(String::new())),
        };
        match next {
            Some(state) => self.leases.insert(claim, state),
            None => self.leases.remove(&claim),
        };
        true
    }

    /// The holder of `lease` if it is someone other than `holder` and its lease is live: it
    /// changed less than a lease duration ago on our clock.
    fn live_other_holder(&mut self, now: Now, lease: &Object, holder: &str) -> Option<String> {
        let spec = lease.spec::<Lease>().ok()?;
        let seen = Observation { holder: spec.holder.clone(), renewed: spec.renew_time, since: now.mono };
        let since = match self.observed.get(lease.metadata.name.as_str()) {
            Some(o) if (&o.holder, o.renewed) == (&seen.holder, seen.renewed) => o.since,
            _ => {
                self.observed.insert(lease.metadata.name.to_string(), seen);
                now.mono
            }
        };
        let other = spec.holder.clone().filter(|h| h != holder)?;
        if crate::bugs::on(crate::bugs::Bug::LeaseExpiryByTimestamps) {
            return spec.live_holder(now.wall).is_some().then_some(other);
        }
        (now.mono.since(since) < Duration::from_millis(spec.duration_ms)).then_some(other)
    }

    fn read(&mut self, ctx: &mut Context<'_>, name: &str) -> State {
        State::Reading(ctx.store(StoreRequest::Get { key: ObjectKey::cluster(Lease::KIND, name) }))
    }
}

fn lease_spec(key: &str, holder: &str, acquired: WallTime, renewed: WallTime, duration: Duration) -> serde_json::Value {
    let spec = LeaseSpec {
        key: key.to_string(),
        holder: Some(holder.to_string()),
        acquire_time: Some(acquired),
        renew_time: Some(renewed),
        duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
    };
    serde_json::to_value(spec).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cache::Cache;
    use crate::controller::Issued;
    use crate::store::{Registry, Store, StoreConfig};
    use crate::time::{MonoTime, Now};

    const D: Duration = Duration::from_secs(10);

    /// Call `f` with a context at time `t` (milliseconds; the client's wall clock `ahead_ms` ahead
    /// of the store's), then carry out the store requests it made and feed the replies back.
    fn drive<R>(
        client: &mut LeaseClient,
        store: &mut Store,
        t: u64,
        ahead_ms: u64,
        f: impl FnOnce(&mut LeaseClient, &mut Context<'_>) -> R,
    ) -> R {
        let (cache, registry) = (Cache::default(), Registry::builtin());
        let mut next_op = t; // distinct op ids per call
        let now = Now::new(MonoTime(t * 1_000_000), WallTime(t + ahead_ms));
        let mut ctx = Context {
            now,
            identity: "engine",
            cache: &cache,
            registry: &registry,
            next_op: &mut next_op,
            issued: Vec::new(),
            earlier_lives_settle_at: MonoTime::ZERO,
            seen_created: &Default::default(),
            failure_handled: Vec::new(),
            detached_changes: 0,
            detached_left_at: None,
        };
        let answer = f(client, &mut ctx);
        for request in std::mem::take(&mut ctx.issued) {
            if let Issued::Store(id, request) = request {
                let result = store.execute(WallTime(t), request);
                assert!(client.on_store_result(now, id, &result));
            }
        }
        answer
    }

    /// Run one `acquire` at time `t`.
    fn step(client: &mut LeaseClient, store: &mut Store, t: u64, holder: &str) -> Acquire {
        drive(client, store, t, 0, |client, ctx| client.acquire(ctx, "pull-x", "x", holder, D))
    }

    fn acquire_until_settled(client: &mut LeaseClient, store: &mut Store, t: u64, holder: &str) -> Acquire {
        acquire_skewed(client, store, t, 0, holder)
    }

    /// `acquire` at time `t` until it answers something other than Pending, with the client's wall
    /// clock `ahead_ms` ahead.
    fn acquire_skewed(client: &mut LeaseClient, store: &mut Store, t: u64, ahead_ms: u64, holder: &str) -> Acquire {
        let mut answer = Acquire::Pending;
        for _ in 0..4 {
            answer = drive(client, store, t, ahead_ms, |client, ctx| client.acquire(ctx, "pull-x", "x", holder, D));
            if answer != Acquire::Pending {
                break;
            }
        }
        answer
    }

    #[test]
    fn one_holder_at_a_time_and_takeover_only_after_expiry() {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let (mut a, mut b) = (LeaseClient::default(), LeaseClient::default());
        assert_eq!(acquire_until_settled(&mut a, &mut store, 1_000, "a"), Acquire::Held);
        assert_eq!(acquire_until_settled(&mut b, &mut store, 2_000, "b"), Acquire::Contended { holder: "a".into() });
        // a never renews (it died): b takes over once it has seen a's lease unchanged for a whole
        // duration (from 2000, when b first saw it), not before.
        assert_ne!(acquire_until_settled(&mut b, &mut store, 11_999, "b"), Acquire::Held);
        assert_eq!(acquire_until_settled(&mut b, &mut store, 12_001, "b"), Acquire::Held);
        let lease = store.get(&ObjectKey::cluster(Lease::KIND, "pull-x")).unwrap().spec::<Lease>().unwrap();
        assert_eq!(lease.holder.as_deref(), Some("b"));
    }

    #[test]
    fn a_holder_whose_clock_is_behind_cannot_be_taken_over_early() {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let (mut a, mut b) = (LeaseClient::default(), LeaseClient::default());
        // a's wall clock says 1000 while b's says 60000: by timestamps a's lease is long expired.
        assert_eq!(acquire_until_settled(&mut a, &mut store, 1_000, "a"), Acquire::Held);
        let mut attempt = |t: u64| acquire_skewed(&mut b, &mut store, t, 59_000, "b");
        assert_eq!(attempt(1_500), Acquire::Contended { holder: "a".into() }, "live by b's own observation");
        assert_ne!(attempt(11_000), Acquire::Held, "seen unchanged for less than a duration");
        assert_eq!(attempt(11_600), Acquire::Held);
    }

    #[test]
    fn holders_of_one_client_contend_with_each_other() {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let mut client = LeaseClient::default();
        assert_eq!(acquire_until_settled(&mut client, &mut store, 1_000, "engine/uid-1"), Acquire::Held);
        let other = acquire_until_settled(&mut client, &mut store, 1_500, "engine/uid-2");
        assert_eq!(other, Acquire::Contended { holder: "engine/uid-1".into() });
        assert!(client.holds("pull-x", "engine/uid-1", WallTime(1_500)));
        assert!(!client.holds("pull-x", "engine/uid-2", WallTime(1_500)));
    }

    #[test]
    fn renewal_extends_and_release_frees() {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let (mut a, mut b) = (LeaseClient::default(), LeaseClient::default());
        assert_eq!(acquire_until_settled(&mut a, &mut store, 1_000, "a"), Acquire::Held);
        // Past a third of the duration, acquiring renews.
        assert_eq!(step(&mut a, &mut store, 5_000, "a"), Acquire::Held);
        let renewed = store.get(&ObjectKey::cluster(Lease::KIND, "pull-x")).unwrap().spec::<Lease>().unwrap();
        assert_eq!(renewed.renew_time, Some(WallTime(5_000)));
        assert_eq!(renewed.acquire_time, Some(WallTime(1_000)));
        assert_ne!(acquire_until_settled(&mut b, &mut store, 12_000, "b"), Acquire::Held, "renewed until 15000");
        // Release marks it free: b gets it at once.
        drive(&mut a, &mut store, 12_500, 0, |client, ctx| client.release(ctx, "pull-x", "a"));
        assert_eq!(acquire_until_settled(&mut b, &mut store, 12_600, "b"), Acquire::Held);
    }
}
