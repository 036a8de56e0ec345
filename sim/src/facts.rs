//! What the world knows that no single state of the store or the runtime shows: which runtime
//! requests are in flight, and who claims which lease until when in true time. The world records
//! these facts as it moves requests; checkers, probes and external actors read them.
//!
//! *Guarantees*: a request is in flight from the moment its process hands it to the world until it
//! is settled (its reply is delivered, it is cancelled, or its process dies). Lease claims are in
//! the world's true time, whatever the writer's clock says.

use crate::runtime::reference_key;
use drydock_engine::api::{Lease, Object, Resource, names};
use drydock_engine::runtime::RuntimeRequest;
use drydock_engine::{OpId, WallTime, lease};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The identity of the world's engine process `index` (its lease holders and the creator label of
/// what it creates carry it).
pub fn process_identity(index: usize) -> String {
    format!("{PROCESS_PREFIX}{index}")
}

/// Whether `identity` names one of the world's engine processes.
pub fn is_process_identity(identity: &str) -> bool {
    identity.strip_prefix(PROCESS_PREFIX).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

const PROCESS_PREFIX: &str = "engine-";

/// A runtime request between its process and its settlement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentRequest {
    /// For a pull: the normalized reference.
    pub pull: Option<String>,
    pub create: bool,
    /// For a create, start, stop or remove: the owner uid label of the container it acts on (as
    /// the runtime showed it when the request was sent), unless it was sent for another object
    /// (a stranger's container replaced).
    pub owner: Option<String>,
    /// The runtime has applied it (or failed to); its reply may still be on its way.
    pub applied: bool,
    /// Once applied, it still runs inside the daemon until then (a stop waiting for its process
    /// to end, a removal in progress, a network being created), in true time.
    pub runs_until: Option<WallTime>,
    /// The change it makes, as the runtime sees it (see [`change_of`]).
    pub change: Option<Change>,
    /// Its process gave up on it but let it finish: its reply still comes.
    pub detached: bool,
}

impl SentRequest {
    /// Whether the request may still be running inside the daemon at `now` (true time).
    pub fn may_run_at(&self, now: WallTime) -> bool {
        !self.applied || self.runs_until.is_some_and(|until| until > now)
    }
}

/// A change a runtime request makes: what it does, and to which runtime object (a container by
/// its id where the runtime knows it, else by the name or id it was asked by).
pub type Change = (&'static str, String);

/// The change `request` makes, as `runtime` sees it when it is sent; `None` for reads, pulls and
/// builds (pulls have invariants of their own).
pub fn change_of(request: &RuntimeRequest, runtime: &crate::runtime::SimRuntime) -> Option<Change> {
    let container = |id: &str| runtime.container(id).map_or_else(|| id.to_string(), |c| c.id.clone());
    let change = match request {
        RuntimeRequest::CreateContainer(create) => ("create container", create.name.clone()),
        RuntimeRequest::StartContainer { id } => ("start container", container(id)),
        RuntimeRequest::StopContainer { id, .. } => ("stop container", container(id)),
        RuntimeRequest::RemoveContainer { id, .. } => ("remove container", container(id)),
        RuntimeRequest::CopyFiles { id, .. } => ("copy into container", container(id)),
        RuntimeRequest::CreateNetwork(create) => ("create network", create.name.clone()),
        RuntimeRequest::RemoveNetwork { id } => ("remove network", id.clone()),
        RuntimeRequest::ConnectNetwork { network, container: c, .. } => {
            ("connect to network", format!("{network} {}", container(c)))
        }
        RuntimeRequest::DisconnectNetwork { network, container: c } => {
            ("disconnect from network", format!("{network} {}", container(c)))
        }
        RuntimeRequest::CreateVolume(create) => ("create volume", create.name.clone()),
        RuntimeRequest::RemoveVolume { name } => ("remove volume", name.clone()),
        RuntimeRequest::RemoveImage { reference, .. } => ("remove image", reference.clone()),
        RuntimeRequest::PullImage { .. }
        | RuntimeRequest::BuildImage(_)
        | RuntimeRequest::InspectContainer { .. }
        | RuntimeRequest::ListContainers { .. }
        | RuntimeRequest::ContainerEvents { .. }
        | RuntimeRequest::InspectImage { .. }
        | RuntimeRequest::InspectNetwork { .. }
        | RuntimeRequest::ListNetworks { .. }
        | RuntimeRequest::InspectVolume { .. }
        | RuntimeRequest::ListVolumes { .. } => return None,
    };
    Some(change)
}

/// Runtime requests in flight, by (process, op id), with indexes for the questions asked after
/// every event (pulls in flight per reference, mutations in flight per owner).
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    requests: BTreeMap<(usize, OpId), SentRequest>,
    /// Pulls sent and not yet applied, per normalized reference.
    pulls: BTreeMap<String, BTreeSet<(usize, OpId)>>,
    /// Creates, starts, stops and removes in flight, per (process, owner uid).
    mutations: BTreeMap<(usize, String), u32>,
    /// Requests in flight per process.
    per_process: BTreeMap<usize, usize>,
    /// Changes in flight, per (process, change).
    changes: BTreeMap<(usize, Change), BTreeSet<OpId>>,
}

impl InFlight {
    /// `owner`: the owner uid label of the container the request acts on, if any; `change`: the
    /// change it makes ([`change_of`]).
    pub fn send(
        &mut self,
        process: usize,
        id: OpId,
        request: &RuntimeRequest,
        owner: Option<String>,
        change: Option<Change>,
    ) {
        let pull = match request {
            RuntimeRequest::PullImage { reference } => Some(reference_key(reference)),
            _ => None,
        };
        if let Some(reference) = &pull {
            self.pulls.entry(reference.clone()).or_default().insert((process, id));
        }
        if let Some(uid) = &owner {
            *self.mutations.entry((process, uid.clone())).or_default() += 1;
        }
        let create = matches!(request, RuntimeRequest::CreateContainer(_));
        if let Some(change) = &change {
            self.changes.entry((process, change.clone())).or_default().insert(id);
        }
        *self.per_process.entry(process).or_default() += 1;
        let sent = SentRequest { pull, create, owner, applied: false, runs_until: None, change, detached: false };
        if let Some(replaced) = self.requests.insert((process, id), sent) {
            self.unindex(process, id, &replaced);
        }
    }

    /// The process gave up on the request but lets it finish.
    pub fn detach(&mut self, process: usize, id: OpId) {
        if let Some(sent) = self.requests.get_mut(&(process, id)) {
            sent.detached = true;
        }
    }

    /// The request applied; it runs on inside the daemon until `runs_until`, if given.
    pub fn applied(&mut self, process: usize, id: OpId, runs_until: Option<WallTime>) {
        let Some(sent) = self.requests.get_mut(&(process, id)) else { return };
        sent.runs_until = runs_until;
        if !std::mem::replace(&mut sent.applied, true) {
            let reference = sent.pull.clone();
            self.end_pull(process, id, reference.as_deref());
        }
    }

    /// The request will never be answered; whether it was in flight.
    pub fn settle(&mut self, process: usize, id: OpId) -> bool {
        let Some(sent) = self.requests.remove(&(process, id)) else { return false };
        self.unindex(process, id, &sent);
        true
    }

    fn unindex(&mut self, process: usize, id: OpId, sent: &SentRequest) {
        if !sent.applied {
            self.end_pull(process, id, sent.pull.as_deref());
        }
        count_down(&mut self.per_process, &process);
        if let Some(change) = &sent.change {
            let key = (process, change.clone());
            if let Some(ids) = self.changes.get_mut(&key) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.changes.remove(&key);
                }
            }
        }
        if let Some(uid) = &sent.owner {
            count_down(&mut self.mutations, &(process, uid.clone()));
        }
    }

    fn end_pull(&mut self, process: usize, id: OpId, reference: Option<&str>) {
        let Some(reference) = reference else { return };
        if let Some(pulls) = self.pulls.get_mut(reference) {
            pulls.remove(&(process, id));
            if pulls.is_empty() {
                self.pulls.remove(reference);
            }
        }
    }

    pub fn get(&self, process: usize, id: OpId) -> Option<&SentRequest> {
        self.requests.get(&(process, id))
    }

    /// Every request of `process` still in flight, in op order.
    pub fn of_process(&self, process: usize) -> Vec<OpId> {
        self.requests.keys().filter(|(p, _)| *p == process).map(|(_, id)| *id).collect()
    }

    /// Pulls sent and not yet applied, per normalized reference, in (process, op) order.
    pub fn pulls(&self) -> impl Iterator<Item = (&String, &BTreeSet<(usize, OpId)>)> {
        self.pulls.iter()
    }

    pub fn any_pull(&self) -> bool {
        !self.pulls.is_empty()
    }

    /// A create, start, stop or remove that `process` sent (in this life or an earlier one) for
    /// the object `uid`, of a container labelled with that uid, is in flight.
    pub fn mutates(&self, process: usize, uid: &str) -> bool {
        self.mutations.contains_key(&(process, uid.to_string()))
    }

    /// How many requests of `process` are in flight.
    pub fn count(&self, process: usize) -> usize {
        self.per_process.get(&process).copied().unwrap_or(0)
    }

    /// The requests of `process` in flight that make `change`, in op order.
    pub fn making(&self, process: usize, change: &Change) -> impl Iterator<Item = (OpId, &SentRequest)> + '_ {
        let ids = self.changes.get(&(process, change.clone()));
        ids.into_iter().flatten().filter_map(move |id| self.requests.get(&(process, *id)).map(|s| (*id, s)))
    }

    pub fn creating(&self, process: usize) -> bool {
        self.requests.iter().any(|((p, _), s)| *p == process && s.create)
    }
}

/// One less of `key` in a count: a count that reaches zero leaves the map.
fn count_down<K: Ord, N: Copy + PartialEq + std::ops::SubAssign + From<u8>>(counts: &mut BTreeMap<K, N>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= N::from(1);
        if *n == N::from(0) {
            counts.remove(key);
        }
    }
}

/// The owner uid label of the container `request` creates or acts on, as the runtime shows it.
pub fn owner_of(request: &RuntimeRequest, runtime: &crate::runtime::SimRuntime) -> Option<String> {
    match request {
        RuntimeRequest::CreateContainer(c) => c.labels.get(names::LABEL_OWNER_UID).cloned(),
        RuntimeRequest::StartContainer { id }
        | RuntimeRequest::StopContainer { id, .. }
        | RuntimeRequest::RemoveContainer { id, .. } => {
            runtime.container(id).and_then(|c| c.labels.get(names::LABEL_OWNER_UID).cloned())
        }
        _ => None,
    }
}

/// Lease claims made by successful writes: lease name -> holder -> held until (true time).
#[derive(Clone, Debug, Default)]
pub struct LeaseClaims {
    claims: BTreeMap<String, BTreeMap<String, WallTime>>,
    /// No claim ends before this: until it is past the memory's horizon, pruning finds nothing
    /// (so the world's check after every event costs nothing here).
    earliest_until: Option<WallTime>,
}

/// Claims that expired this long ago are forgotten.
const CLAIM_MEMORY: Duration = Duration::from_secs(60);

impl LeaseClaims {
    /// A lease object was written by a writer whose clock is `skew_ms` ahead: record who claims it
    /// until when, in true time. Returns true if the write took the lease over from another claim.
    pub fn record(&mut self, object: &Object, skew_ms: i64) -> bool {
        if object.kind != Lease::KIND {
            return false;
        }
        let Ok(spec) = object.spec::<Lease>() else { return false };
        let true_time = |t: WallTime| WallTime((t.0 as i64 - skew_ms).max(0) as u64);
        let claims = self.claims.entry(object.metadata.name.to_string()).or_default();
        match (&spec.holder, spec.renew_time) {
            (Some(holder), Some(renewed)) => {
                let taken_over = claims.keys().any(|h| h != holder) && !claims.contains_key(holder);
                // A new holder's claim ends no other claim here: they had expired (that is the only
                // way the store let this write through); lease-exclusive checks it.
                let until = WallTime(true_time(renewed).0.saturating_add(spec.duration_ms));
                claims.insert(holder.clone(), until);
                self.earliest_until = Some(self.earliest_until.map_or(until, |earliest| earliest.min(until)));
                taken_over
            }
            _ => {
                claims.clear();
                false
            }
        }
    }

    /// Drop claims that expired long ago, so the record stays small.
    pub fn prune(&mut self, now: WallTime) {
        let horizon = WallTime(now.0.saturating_sub(CLAIM_MEMORY.as_millis() as u64));
        if self.earliest_until.is_none_or(|earliest| earliest > horizon) {
            return;
        }
        for claims in self.claims.values_mut() {
            claims.retain(|_, until| *until > horizon);
        }
        self.earliest_until = self.claims.values().flat_map(|claims| claims.values()).min().copied();
    }

    /// A dead engine process holds nothing: its claims end with it (the lease object stays until
    /// it expires, which is what the survivors wait for).
    pub fn drop_identity(&mut self, identity: &str) {
        for claims in self.claims.values_mut() {
            claims.retain(|holder, _| lease::holder_identity(holder) != identity);
        }
    }

    /// Holder -> held until, of lease `name`.
    pub fn of(&self, name: &str) -> Option<&BTreeMap<String, WallTime>> {
        self.claims.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &BTreeMap<String, WallTime>)> {
        self.claims.iter()
    }

    /// Whether a holder of engine `identity` has a live claim on lease `name` at `now`.
    pub fn held_by(&self, name: &str, identity: &str, now: WallTime) -> bool {
        self.of(name).is_some_and(|claims| {
            claims.iter().any(|(holder, until)| lease::holder_identity(holder) == identity && *until > now)
        })
    }

    #[cfg(test)]
    pub fn insert(&mut self, name: &str, holder: &str, until: WallTime) {
        self.claims.entry(name.to_string()).or_default().insert(holder.to_string(), until);
        self.earliest_until = Some(self.earliest_until.map_or(until, |earliest| earliest.min(until)));
    }
}

/// Everything the world records beyond the current state.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub in_flight: InFlight,
    pub leases: LeaseClaims,
    /// Owner uids of the leftovers the workload planted: containers made for objects the store
    /// lost (never held), which only the harvester answers for.
    pub lost_owners: BTreeSet<String>,
    /// The most runtime requests each engine process may have inside the runtime at once (its
    /// engine's configured bound), if the world bounds them.
    pub runtime_bound: Option<usize>,
}

impl Facts {
    pub const fn new() -> Self {
        let in_flight = InFlight {
            requests: BTreeMap::new(),
            pulls: BTreeMap::new(),
            mutations: BTreeMap::new(),
            per_process: BTreeMap::new(),
            changes: BTreeMap::new(),
        };
        let leases = LeaseClaims { claims: BTreeMap::new(), earliest_until: None };
        Facts { in_flight, leases, lost_owners: BTreeSet::new(), runtime_bound: None }
    }
}

/// No facts: for checking a state on its own.
pub static NONE: Facts = Facts::new();
