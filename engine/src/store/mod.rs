//! The API store: Kubernetes-like object semantics over a persistence [`Backend`].
//!
//! The store is sans-IO like the rest of the engine: every call is synchronous and takes the
//! wall time it should stamp. The simulator and the production driver (drydock-adapters'
//! `SharedStore`) run this same code. Durability is a [`Backend`]'s job: the store hands it every
//! change before applying it, and keeps its objects and log in memory as its read path.
//!
//! *Guarantees*
//! - Creates and updates are admitted first (`admission`): the kind is registered ([`Registry`]),
//!   the name is an RFC 1123 label, the spec passes its kind's validation (kept with the kind's
//!   type in `api`), and owner references name a registered kind and a uid, never an owner in
//!   another namespace nor the object itself (unless [`AdmissionConfig`] allows that, for the
//!   simulator). A namespaced create also needs its namespace to exist and not be terminating.
//! - No two objects of one namespace hold one claim ([`KindInfo::with_claims`]: a runtime
//!   container name), unless one controls the other; see `claims`.
//! - Every successful mutation gets a fresh, strictly increasing resource version and appends
//!   exactly one [`WatchEvent`] to the log; a no-op update changes nothing and appends nothing.
//! - A mutation is acknowledged only after the backend committed it ([`Backend::apply`]); if it
//!   could not, the request fails with [`StoreError::Unavailable`] and the store is as before.
//! - Updates carry their resource version as a precondition: a stale one is a `Conflict`.
//! - [`Store::dry_run`] answers a write exactly as [`Store::execute`] would (the same admission,
//!   preconditions and errors, the object it would store) and changes nothing: no revision, no
//!   event, no backend call, no uid used up (Kubernetes' `dryRun=All`).
//! - An object with finalizers is only marked deleted (`deletionTimestamp`); it disappears when
//!   its last finalizer is removed. No finalizer can be added once it is marked.
//! - Spec changes bump `generation`; status is written only through [`Store::update_status`].
//! - A delete with [`Propagation::Foreground`] or [`Propagation::Orphan`] marks the object and
//!   adds the propagation's finalizer (`foregroundDeletion` or `orphan`), replacing the other one
//!   if a client had put it there, so the object is kept even if it had no finalizer before.
//!
//! *Caveats*: dependents of a deleted owner are not touched here. Garbage collection is a
//! controller (`controllers::gc`), as in Kubernetes. Unlike Kubernetes, deleting an object that is
//! already marked is a no-op whatever the propagation: its finalizers are not changed (no
//! finalizer can be added once it is marked). A `Background` delete leaves an `orphan` or
//! `foregroundDeletion` finalizer a client put on the object in place: the options cannot tell an
//! explicit `Background` from the default.

mod admission;
mod backend;
mod claims;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod error;

/// Kinds are registered where their types are, in `api`; the store admits what a registry holds.
pub use crate::api::registry::{DRYDOCK_GROUP_VERSION, KindInfo, Registry};
/// The API's field error, re-exported because [`StoreError::Invalid`] carries it.
pub use crate::api::validation::FieldError;
pub use admission::AdmissionConfig;
use backend::Objects;
pub use backend::{Backend, BackendError, Change, MemoryBackend, ObjectWrite, Snapshot};
pub use error::StoreError;

use crate::api::{Object, ObjectKey, ObjectMeta, Uid};
use crate::time::WallTime;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

/// What happened to an object.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One entry of the store's change log. `object.metadata.resource_version` is the event's version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchEvent {
    pub event: EventType,
    pub object: Arc<Object>,
}

impl WatchEvent {
    pub fn resource_version(&self) -> u64 {
        self.object.metadata.resource_version
    }
}

/// The finalizer [`Propagation::Foreground`] puts on the deleted owner. The garbage collector
/// removes it once no dependent with `blockOwnerDeletion` is left.
pub const FINALIZER_FOREGROUND_DELETION: &str = "foregroundDeletion";
/// The finalizer [`Propagation::Orphan`] puts on the deleted owner. The garbage collector removes
/// it once no dependent references the owner any more.
pub const FINALIZER_ORPHAN: &str = "orphan";

/// Deletion propagation, as in Kubernetes. The store only marks the owner; the garbage collector
/// (`controllers::gc`) acts on its dependents.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Propagation {
    /// Delete the owner now (or mark it, if it has finalizers) and let the garbage collector
    /// delete its dependents once it is gone.
    #[default]
    Background,
    /// Mark the owner with the `foregroundDeletion` finalizer: it stays until the garbage
    /// collector has deleted its dependents that have `blockOwnerDeletion`.
    Foreground,
    /// Mark the owner with the `orphan` finalizer: the garbage collector removes the owner
    /// references to it from its dependents, which stay, and then the finalizer.
    Orphan,
}

impl Propagation {
    /// The finalizer this propagation puts on the object it deletes.
    pub fn finalizer(self) -> Option<&'static str> {
        match self {
            Propagation::Background => None,
            Propagation::Foreground => Some(FINALIZER_FOREGROUND_DELETION),
            Propagation::Orphan => Some(FINALIZER_ORPHAN),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteOptions {
    /// Delete only if the object still has this uid (it was not deleted and recreated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition_uid: Option<Uid>,
    /// Delete only if the object is still at this resource version (nobody wrote it since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition_resource_version: Option<u64>,
    #[serde(default)]
    pub propagation: Propagation,
}

/// A request a client or the engine makes of the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StoreRequest {
    /// An uncached read of one object.
    Get {
        key: ObjectKey,
    },
    /// An uncached list.
    List {
        kind: Option<String>,
        namespace: Option<String>,
    },
    Create {
        object: Object,
    },
    /// Spec and metadata; `object.metadata.resource_version` is the precondition.
    Update {
        object: Object,
    },
    /// Status only; `object.metadata.resource_version` is the precondition. Only the object's
    /// key, uid, resource version and status are read (see [`Object::status_write`]).
    UpdateStatus {
        object: Object,
    },
    Delete {
        key: ObjectKey,
        options: DeleteOptions,
    },
}

impl StoreRequest {
    /// Whether the request only reads the store (get, list) and writes nothing. The one place
    /// store requests are classified: a reconcile's writes reset its backoff and reads do not,
    /// the simulator's crash and lost-reply faults strike writes. An exhaustive match, so a new
    /// request does not compile until it is classified here.
    pub fn is_read(&self) -> bool {
        match self {
            StoreRequest::Get { .. } | StoreRequest::List { .. } => true,
            StoreRequest::Create { .. }
            | StoreRequest::Update { .. }
            | StoreRequest::UpdateStatus { .. }
            | StoreRequest::Delete { .. } => false,
        }
    }

    /// Whether the request writes the store (create, update, status update, delete): the
    /// negation of [`StoreRequest::is_read`].
    pub fn changes_world(&self) -> bool {
        !self.is_read()
    }

    /// A short description for traces: `update PhysicalContainer/ns/a@12`.
    pub fn describe(&self) -> String {
        match self {
            StoreRequest::Get { key } => format!("get {key}"),
            StoreRequest::List { kind, namespace } => {
                format!("list {}/{}", kind.as_deref().unwrap_or("*"), namespace.as_deref().unwrap_or("*"))
            }
            StoreRequest::Create { object } => format!("create {}", object.key()),
            StoreRequest::Update { object } => format!("update {}@{}", object.key(), object.metadata.resource_version),
            StoreRequest::UpdateStatus { object } => {
                format!("update-status {}@{}", object.key(), object.metadata.resource_version)
            }
            StoreRequest::Delete { key, .. } => format!("delete {key}"),
        }
    }
}

/// A successful reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StoreReply {
    /// The object as stored after the request (for a delete: marked, or as last stored).
    Object(Arc<Object>),
    Objects(Vec<Arc<Object>>),
}

pub type StoreResult = Result<StoreReply, StoreError>;

#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Seed for uids. Deterministic in simulation; random in production.
    pub uid_seed: u64,
    /// Watch events kept for watchers to resume from; older versions answer `Gone`. Each holds a
    /// whole object version, so a long log is most of a busy store's memory: the default keeps
    /// the newest 10,000 (Kubernetes' watch cache keeps far fewer, etcd a few minutes).
    pub log_capacity: usize,
    pub admission: AdmissionConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig { uid_seed: 0, log_capacity: 10_000, admission: AdmissionConfig::default() }
    }
}

/// The store. See the module documentation for its guarantees.
///
/// Not generic over its backend: the backend is only called on writes (once per mutation), so a
/// boxed one costs nothing measurable, and every user (the simulator's checkers, the daemon's
/// `SharedStore`) names one type whatever keeps the data.
pub struct Store {
    objects: Objects,
    registry: Registry,
    config: StoreConfig,
    revision: u64,
    log: VecDeque<WatchEvent>,
    uids: ChaCha8Rng,
    claims: claims::ClaimIndex,
    backend: Box<dyn Backend>,
    /// Set only inside [`Store::dry_run`]: `commit` answers the object it would store and
    /// changes nothing.
    dry_run: bool,
}

impl Store {
    /// An empty store over a [`MemoryBackend`]: nothing outlives it.
    pub fn in_memory(registry: Registry, config: StoreConfig) -> Self {
        Store::build(Box::new(MemoryBackend::default()), registry, config)
    }

    /// A store over what `backend` holds: its objects, its change log (the newest
    /// `config.log_capacity` events of it) and its revision.
    ///
    /// *Caveats*: uids come from `config.uid_seed`, which is not persisted: give a reopened
    /// store a fresh random seed (production does) or its uids may repeat ones already used.
    pub fn open(
        backend: impl Backend + 'static,
        registry: Registry,
        config: StoreConfig,
    ) -> Result<Self, BackendError> {
        let mut backend: Box<dyn Backend> = Box::new(backend);
        let snapshot = backend.load()?;
        check_snapshot(&snapshot)?;
        let mut store = Store::build(backend, registry, config);
        store.revision = snapshot.revision;
        for object in snapshot.objects {
            store.objects.put(object);
        }
        let compacted_through = store.compacted_through(snapshot.revision);
        store.log = snapshot.log.into_iter().filter(|e| e.resource_version() > compacted_through).collect();
        store.claims = claims::ClaimIndex::build(&store.registry, &store.objects);
        Ok(store)
    }

    fn build(backend: Box<dyn Backend>, registry: Registry, config: StoreConfig) -> Self {
        let uids = ChaCha8Rng::seed_from_u64(config.uid_seed);
        let objects = Objects::default();
        let claims = claims::ClaimIndex::build(&registry, &objects);
        Store { objects, registry, config, revision: 0, log: VecDeque::new(), uids, claims, backend, dry_run: false }
    }

    #[inline]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The version of the latest change.
    #[inline]
    pub fn resource_version(&self) -> u64 {
        self.revision
    }

    #[inline]
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        self.objects.get(key)
    }

    #[inline]
    pub fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>> {
        self.objects.get_by_uid(uid)
    }

    /// Objects of `kind` (all kinds if `None`) in `namespace` (all if `None`), in key order.
    #[inline]
    pub fn list(&self, kind: Option<&str>, namespace: Option<&str>) -> Vec<Arc<Object>> {
        self.objects.list(kind, namespace)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.objects.len() == 0
    }

    /// Events after `resource_version`, in order. `Gone` if the log no longer reaches back there.
    #[inline]
    pub fn events_since(
        &self,
        resource_version: u64,
    ) -> Result<impl DoubleEndedIterator<Item = &WatchEvent>, StoreError> {
        let oldest = self.log.front().map_or(self.revision + 1, WatchEvent::resource_version);
        if resource_version < oldest.saturating_sub(1) && resource_version < self.revision {
            return Err(StoreError::Gone { requested: resource_version, oldest });
        }
        // The log holds one event per revision, contiguous, so the first event after
        // `resource_version` is found by arithmetic: a binary search would read a cold object
        // at every probe. The search stays as the fallback should the log ever have a gap.
        let next = resource_version.saturating_add(1);
        let start = usize::try_from(next.saturating_sub(oldest)).map_or(self.log.len(), |i| i.min(self.log.len()));
        let found = self.log.get(start).is_none_or(|e| e.resource_version() == next)
            && (start == 0 || self.log[start - 1].resource_version() == resource_version);
        let start = if found { start } else { self.log.partition_point(|e| e.resource_version() <= resource_version) };
        Ok(self.log.range(start..))
    }

    /// Carry out one request.
    pub fn execute(&mut self, now: WallTime, request: StoreRequest) -> StoreResult {
        match request {
            StoreRequest::Get { key } => self
                .get(&key)
                .cloned()
                .map(StoreReply::Object)
                .ok_or_else(|| StoreError::NotFound { key: key.to_string() }),
            StoreRequest::List { kind, namespace } => {
                Ok(StoreReply::Objects(self.list(kind.as_deref(), namespace.as_deref())))
            }
            StoreRequest::Create { object } => self.create(now, object).map(StoreReply::Object),
            StoreRequest::Update { object } => self.update(object).map(StoreReply::Object),
            StoreRequest::UpdateStatus { object } => self.update_status(object).map(StoreReply::Object),
            StoreRequest::Delete { key, options } => self.delete(now, &key, &options).map(StoreReply::Object),
        }
    }

    /// [`Store::execute`] without its effect: the answer (the object a write would store, or the
    /// error it would get) and nothing else. The stored objects, the revision, the log, the
    /// claims, the backend and the uid sequence are as before. A dry-run create answers resource
    /// version 0, an update the version it was checked against.
    pub fn dry_run(&mut self, now: WallTime, request: StoreRequest) -> StoreResult {
        let uid_position = self.uids.get_word_pos();
        self.dry_run = true;
        let result = self.execute(now, request);
        self.dry_run = false;
        self.uids.set_word_pos(uid_position);
        result
    }

    /// [`Store::execute`] of a borrowed request, for a caller that keeps it: copies only what
    /// the request stores (a status update, the most frequent write, copies only the status).
    pub fn execute_ref(&mut self, now: WallTime, request: &StoreRequest) -> StoreResult {
        match request {
            StoreRequest::UpdateStatus { object } => self.update_status_ref(object).map(StoreReply::Object),
            StoreRequest::Get { key } => self
                .get(key)
                .cloned()
                .map(StoreReply::Object)
                .ok_or_else(|| StoreError::NotFound { key: key.to_string() }),
            StoreRequest::Delete { key, options } => self.delete(now, key, options).map(StoreReply::Object),
            other => self.execute(now, other.clone()),
        }
    }

    /// Admit and store a new object: assigns uid, resource version, generation 1, creation time
    /// and the kind's default finalizers; drops any status the client sent.
    pub fn create(&mut self, now: WallTime, mut object: Object) -> Result<Arc<Object>, StoreError> {
        object.metadata.uid = Uid::default();
        admission::validate(&self.registry, &self.objects, &self.config.admission, &object)?;
        admission::check_namespace_active(&self.objects, &object)?;
        if self.objects.get(&object.key()).is_some() {
            return Err(StoreError::AlreadyExists { key: object.key().to_string() });
        }
        admission::check_claims(&self.registry, &self.objects, &self.claims, &object, None)?;
        let info = self.registry.get(&object.kind).cloned();
        let uid_position = self.uids.get_word_pos();
        let meta = &mut object.metadata;
        meta.uid = self.next_uid();
        meta.generation = 1;
        meta.creation_timestamp = Some(now);
        meta.deletion_timestamp = None;
        for finalizer in info.iter().flat_map(|i| &i.default_finalizers) {
            if !meta.has_finalizer(finalizer) {
                meta.finalizers.push(finalizer.clone());
            }
        }
        object.status = serde_json::Value::Object(serde_json::Map::new());
        object.api_version = None;
        let stored = self.commit(EventType::Added, object).inspect_err(|_| self.uids.set_word_pos(uid_position))?;
        if !self.dry_run {
            self.claims.add(&self.registry, &stored);
        }
        Ok(stored)
    }

    /// Replace spec and metadata (labels, annotations, ownerReferences, finalizers).
    pub fn update(&mut self, object: Object) -> Result<Arc<Object>, StoreError> {
        let stored = self.precondition(&object)?;
        admission::validate(&self.registry, &self.objects, &self.config.admission, &object)?;
        let key = object.key().to_string();
        if let Some(info) = self.registry.get(&object.kind) {
            let errors = info.validate_update(&stored, &object);
            if !errors.is_empty() {
                return Err(StoreError::Invalid { key, errors });
            }
        }
        if stored.metadata.is_deleting()
            && let Some(added) = object.metadata.finalizers.iter().find(|f| !stored.metadata.has_finalizer(f))
        {
            return Err(StoreError::Invalid {
                key,
                errors: vec![FieldError::new(
                    "metadata.finalizers",
                    format!("cannot add finalizer {added:?}: the object is being deleted"),
                )],
            });
        }
        admission::check_claims(&self.registry, &self.objects, &self.claims, &object, Some(&stored))?;
        let spec_changed = stored.spec != object.spec;
        // The client's spec and metadata over the stored identity and status: nothing the client
        // replaces is copied from the stored object first (cold in a big world, and dropped).
        let meta = &stored.metadata;
        let mut next = Object {
            api_version: stored.api_version.clone(),
            kind: stored.kind.clone(),
            metadata: ObjectMeta {
                name: meta.name.clone(),
                namespace: meta.namespace.clone(),
                uid: meta.uid.clone(),
                resource_version: meta.resource_version,
                generation: meta.generation,
                labels: object.metadata.labels,
                annotations: object.metadata.annotations,
                owner_references: object.metadata.owner_references,
                finalizers: object.metadata.finalizers,
                creation_timestamp: meta.creation_timestamp,
                deletion_timestamp: meta.deletion_timestamp,
                managed_fields: object.metadata.managed_fields,
            },
            spec: object.spec,
            status: stored.status.clone(),
        };
        if next == *stored {
            return Ok(stored);
        }
        if spec_changed {
            next.metadata.generation += 1;
        }
        if next.metadata.is_deleting() && next.metadata.finalizers.is_empty() {
            return self.commit(EventType::Deleted, next);
        }
        let updated = self.commit(EventType::Modified, next)?;
        if spec_changed && !self.dry_run {
            self.claims.remove(&self.registry, &stored);
            self.claims.add(&self.registry, &updated);
        }
        Ok(updated)
    }

    /// Replace status only.
    pub fn update_status(&mut self, object: Object) -> Result<Arc<Object>, StoreError> {
        self.update_status_ref(&object)
    }

    /// [`Store::update_status`] from a borrowed object: only its status is copied.
    fn update_status_ref(&mut self, object: &Object) -> Result<Arc<Object>, StoreError> {
        let stored = self.precondition(object)?;
        if stored.status == object.status {
            return Ok(stored);
        }
        // Built from the stored object's parts, not cloned whole: a whole clone would copy the
        // stored status (cold in a big world) only to drop it.
        let next = Object {
            api_version: stored.api_version.clone(),
            kind: stored.kind.clone(),
            metadata: stored.metadata.clone(),
            spec: stored.spec.clone(),
            status: object.status.clone(),
        };
        self.commit(EventType::Modified, next)
    }

    /// Delete: remove at once if no finalizers remain (counting the one the propagation adds),
    /// else mark with `deletionTimestamp`.
    pub fn delete(
        &mut self,
        now: WallTime,
        key: &ObjectKey,
        options: &DeleteOptions,
    ) -> Result<Arc<Object>, StoreError> {
        let stored = self.objects.get(key).cloned().ok_or_else(|| StoreError::NotFound { key: key.to_string() })?;
        if let Some(uid) = &options.precondition_uid
            && *uid != stored.metadata.uid
        {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                reason: format!("uid precondition {uid} does not match {}", stored.metadata.uid),
            });
        }
        if let Some(rv) = options.precondition_resource_version
            && rv != stored.metadata.resource_version
        {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                reason: format!("resource version {rv} is stale (current {})", stored.metadata.resource_version),
            });
        }
        if stored.metadata.is_deleting() {
            return Ok(stored);
        }
        let mut next = (*stored).clone();
        next.metadata.deletion_timestamp = Some(now);
        if let Some(finalizer) = options.propagation.finalizer() {
            next.metadata.finalizers.retain(|f| f != FINALIZER_FOREGROUND_DELETION && f != FINALIZER_ORPHAN);
            next.metadata.finalizers.push(finalizer.to_string());
        }
        if next.metadata.finalizers.is_empty() {
            return self.commit(EventType::Deleted, next);
        }
        self.commit(EventType::Modified, next)
    }

    fn precondition(&self, object: &Object) -> Result<Arc<Object>, StoreError> {
        let key = object.key();
        let stored = self.objects.get(&key).cloned().ok_or_else(|| StoreError::NotFound { key: key.to_string() })?;
        let meta = &object.metadata;
        if !meta.uid.0.is_empty() && meta.uid != stored.metadata.uid {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                reason: format!("uid {} was deleted; {} is a new object", meta.uid, stored.metadata.uid),
            });
        }
        if meta.resource_version != stored.metadata.resource_version {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                reason: format!(
                    "resource version {} is stale (current {})",
                    meta.resource_version, stored.metadata.resource_version
                ),
            });
        }
        Ok(stored)
    }

    /// Stamp `object` with the next revision, have the backend commit the change, then apply it
    /// here: store (or, for `Deleted`, remove) the object and append the event. Nothing changes
    /// if the backend refuses. The caller updates the claims of a put object.
    fn commit(&mut self, event: EventType, mut object: Object) -> Result<Arc<Object>, StoreError> {
        if self.dry_run {
            return Ok(Arc::new(object));
        }
        let revision = self.revision + 1;
        object.metadata.resource_version = revision;
        let event = WatchEvent { event, object: Arc::new(object) };
        let change = Change { event: &event, compacted_through: self.compacted_through(revision) };
        if let Err(error) = self.backend.apply(&change) {
            return Err(StoreError::Unavailable { key: event.object.key().to_string(), reason: error.to_string() });
        }
        self.revision = revision;
        let object = event.object.clone();
        if event.event == EventType::Deleted {
            if let Some(removed) = self.objects.remove(&object.key()) {
                // The stored version's claims: the one indexed.
                self.claims.remove(&self.registry, &removed);
            }
        } else {
            self.objects.put(object.clone());
        }
        self.log.push_back(event);
        while self.log.len() > self.config.log_capacity {
            self.log.pop_front();
        }
        Ok(object)
    }

    /// The newest revision the log no longer keeps once it reaches `revision`.
    fn compacted_through(&self, revision: u64) -> u64 {
        revision.saturating_sub(u64::try_from(self.config.log_capacity).unwrap_or(u64::MAX))
    }

    fn next_uid(&mut self) -> Uid {
        let (a, b) = (self.uids.next_u64(), self.uids.next_u64());
        let hex = format!("{a:016x}{b:016x}");
        Uid(format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]))
    }
}

/// A snapshot holds together: a contiguous log ending at its revision, no object newer than it,
/// no key or uid twice.
fn check_snapshot(snapshot: &Snapshot) -> Result<(), BackendError> {
    let fail = |reason: String| Err(BackendError::Load { reason });
    let revisions = snapshot.log.iter().map(WatchEvent::resource_version);
    if let Some((a, b)) = revisions.clone().zip(revisions.skip(1)).find(|(a, b)| a.checked_add(1) != Some(*b)) {
        return fail(format!("the change log jumps from revision {a} to {b}"));
    }
    if let Some(last) = snapshot.log.last().map(WatchEvent::resource_version)
        && last != snapshot.revision
    {
        return fail(format!("the change log ends at revision {last}, the store is at {}", snapshot.revision));
    }
    let mut keys = std::collections::BTreeSet::new();
    let mut uids = std::collections::BTreeSet::new();
    for object in &snapshot.objects {
        if object.metadata.resource_version > snapshot.revision {
            return fail(format!(
                "{} is at revision {}, after the store's {}",
                object.key(),
                object.metadata.resource_version,
                snapshot.revision
            ));
        }
        if !keys.insert(object.key()) || !uids.insert(&object.metadata.uid) {
            return fail(format!("{} (uid {}) is stored twice", object.key(), object.metadata.uid));
        }
    }
    Ok(())
}

#[cfg(test)]
mod commit_tests;
#[cfg(test)]
mod tests;
