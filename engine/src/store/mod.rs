//! The API store: Kubernetes-like object semantics over a persistence [`Backend`].
//!
//! The store is sans-IO like the rest of the engine: every call is synchronous and takes the
//! wall time it should stamp. The simulator and the production driver (drydock-adapters'
//! `SharedStore`) run this same code.
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
//! - Updates carry their resource version as a precondition: a stale one is a `Conflict`.
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
mod error;
mod registry;

/// The API's field error, re-exported because [`StoreError::Invalid`] carries it.
pub use crate::api::validation::FieldError;
pub use admission::AdmissionConfig;
pub use backend::{Backend, MemoryBackend};
pub use error::StoreError;
pub use registry::{DRYDOCK_GROUP_VERSION, KindInfo, Registry};

use crate::api::{Object, ObjectKey, Uid};
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
    /// Status only; `object.metadata.resource_version` is the precondition.
    UpdateStatus {
        object: Object,
    },
    Delete {
        key: ObjectKey,
        options: DeleteOptions,
    },
}

impl StoreRequest {
    pub fn is_read(&self) -> bool {
        matches!(self, StoreRequest::Get { .. } | StoreRequest::List { .. })
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
    /// Watch events kept for watchers to resume from; older versions answer `Gone`.
    pub log_capacity: usize,
    pub admission: AdmissionConfig,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig { uid_seed: 0, log_capacity: 100_000, admission: AdmissionConfig::default() }
    }
}

/// The store. See the module documentation for its guarantees.
pub struct Store<B: Backend = MemoryBackend> {
    backend: B,
    registry: Registry,
    config: StoreConfig,
    revision: u64,
    log: VecDeque<WatchEvent>,
    uids: ChaCha8Rng,
    claims: claims::ClaimIndex,
}

impl Store<MemoryBackend> {
    pub fn in_memory(registry: Registry, config: StoreConfig) -> Self {
        Store::new(MemoryBackend::default(), registry, config)
    }
}

impl<B: Backend> Store<B> {
    pub fn new(backend: B, registry: Registry, config: StoreConfig) -> Self {
        let uids = ChaCha8Rng::seed_from_u64(config.uid_seed);
        let claims = claims::ClaimIndex::build(&registry, &backend);
        Store { backend, registry, config, revision: 0, log: VecDeque::new(), uids, claims }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The version of the latest change.
    pub fn resource_version(&self) -> u64 {
        self.revision
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<Object>> {
        self.backend.get(key)
    }

    pub fn get_by_uid(&self, uid: &Uid) -> Option<&Arc<Object>> {
        self.backend.get_by_uid(uid)
    }

    pub fn list(&self, kind: Option<&str>, namespace: Option<&str>) -> Vec<Arc<Object>> {
        self.backend.list(kind, namespace)
    }

    pub fn len(&self) -> usize {
        self.backend.len()
    }

    pub fn is_empty(&self) -> bool {
        self.backend.is_empty()
    }

    /// Events after `resource_version`, in order. `Gone` if the log no longer reaches back there.
    pub fn events_since(&self, resource_version: u64) -> Result<impl Iterator<Item = &WatchEvent>, StoreError> {
        let oldest = self.log.front().map_or(self.revision + 1, WatchEvent::resource_version);
        if resource_version < oldest.saturating_sub(1) && resource_version < self.revision {
            return Err(StoreError::Gone { requested: resource_version, oldest });
        }
        let start = self.log.partition_point(|e| e.resource_version() <= resource_version);
        Ok(self.log.range(start..))
    }

    /// Carry out one request.
    pub fn execute(&mut self, now: WallTime, request: StoreRequest) -> StoreResult {
        match request {
            StoreRequest::Get { key } => {
                self.get(&key).cloned().map(StoreReply::Object).ok_or(StoreError::NotFound { key: key.to_string() })
            }
            StoreRequest::List { kind, namespace } => {
                Ok(StoreReply::Objects(self.list(kind.as_deref(), namespace.as_deref())))
            }
            StoreRequest::Create { object } => self.create(now, object).map(StoreReply::Object),
            StoreRequest::Update { object } => self.update(object).map(StoreReply::Object),
            StoreRequest::UpdateStatus { object } => self.update_status(object).map(StoreReply::Object),
            StoreRequest::Delete { key, options } => self.delete(now, &key, &options).map(StoreReply::Object),
        }
    }

    /// Admit and store a new object: assigns uid, resource version, generation 1, creation time
    /// and the kind's default finalizers; drops any status the client sent.
    pub fn create(&mut self, now: WallTime, mut object: Object) -> Result<Arc<Object>, StoreError> {
        object.metadata.uid = Uid::default();
        admission::validate(&self.registry, &self.backend, &self.config.admission, &object)?;
        admission::check_namespace_active(&self.backend, &object)?;
        if self.backend.get(&object.key()).is_some() {
            return Err(StoreError::AlreadyExists { key: object.key().to_string() });
        }
        admission::check_claims(&self.registry, &self.backend, &self.claims, &object, None)?;
        let info = self.registry.get(&object.kind).cloned();
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
        let stored = self.commit(EventType::Added, object);
        self.claims.add(&self.registry, &stored);
        Ok(stored)
    }

    /// Replace spec and metadata (labels, annotations, ownerReferences, finalizers).
    pub fn update(&mut self, object: Object) -> Result<Arc<Object>, StoreError> {
        let stored = self.precondition(&object)?;
        admission::validate(&self.registry, &self.backend, &self.config.admission, &object)?;
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
        admission::check_claims(&self.registry, &self.backend, &self.claims, &object, Some(&stored))?;
        let mut next = (*stored).clone();
        let spec_changed = next.spec != object.spec;
        next.spec = object.spec;
        next.metadata.labels = object.metadata.labels;
        next.metadata.annotations = object.metadata.annotations;
        next.metadata.owner_references = object.metadata.owner_references;
        next.metadata.finalizers = object.metadata.finalizers;
        if next == *stored {
            return Ok(stored);
        }
        if spec_changed {
            next.metadata.generation += 1;
        }
        if next.metadata.is_deleting() && next.metadata.finalizers.is_empty() {
            return Ok(self.remove(next));
        }
        let updated = self.commit(EventType::Modified, next);
        if spec_changed {
            self.claims.remove(&self.registry, &stored);
            self.claims.add(&self.registry, &updated);
        }
        Ok(updated)
    }

    /// Replace status only.
    pub fn update_status(&mut self, object: Object) -> Result<Arc<Object>, StoreError> {
        let stored = self.precondition(&object)?;
        if stored.status == object.status {
            return Ok(stored);
        }
        let mut next = (*stored).clone();
        next.status = object.status;
        Ok(self.commit(EventType::Modified, next))
    }

    /// Delete: remove at once if no finalizers remain (counting the one the propagation adds),
    /// else mark with `deletionTimestamp`.
    pub fn delete(
        &mut self,
        now: WallTime,
        key: &ObjectKey,
        options: &DeleteOptions,
    ) -> Result<Arc<Object>, StoreError> {
        let stored = self.backend.get(key).cloned().ok_or(StoreError::NotFound { key: key.to_string() })?;
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
            return Ok(self.remove(next));
        }
        Ok(self.commit(EventType::Modified, next))
    }

    fn precondition(&self, object: &Object) -> Result<Arc<Object>, StoreError> {
        let key = object.key();
        let stored = self.backend.get(&key).cloned().ok_or(StoreError::NotFound { key: key.to_string() })?;
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

    fn commit(&mut self, event: EventType, mut object: Object) -> Arc<Object> {
        self.revision += 1;
        object.metadata.resource_version = self.revision;
        let object = Arc::new(object);
        self.backend.put(object.clone());
        self.append(event, object.clone());
        object
    }

    fn remove(&mut self, mut object: Object) -> Arc<Object> {
        self.revision += 1;
        object.metadata.resource_version = self.revision;
        let object = Arc::new(object);
        if let Some(removed) = self.backend.remove(&object.key()) {
            // The stored version's claims: the one indexed.
            self.claims.remove(&self.registry, &removed);
        }
        self.append(EventType::Deleted, object.clone());
        object
    }

    fn append(&mut self, event: EventType, object: Arc<Object>) {
        self.log.push_back(WatchEvent { event, object });
        while self.log.len() > self.config.log_capacity {
            self.log.pop_front();
        }
    }

    fn next_uid(&mut self) -> Uid {
        let (a, b) = (self.uids.next_u64(), self.uids.next_u64());
        let hex = format!("{a:016x}{b:016x}");
        Uid(format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]))
    }
}

#[cfg(test)]
mod tests;
