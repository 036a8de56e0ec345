//! The controller contract. Built-in controllers and user-written ones implement the same trait.
//!
//! A controller is level-based: `reconcile` looks at the (possibly stale) cache and the
//! controller's own in-memory operation state, and asks for store writes and runtime calls
//! through the [`Context`]. It never waits: results come back later through `on_store_result`
//! and `on_runtime_result`, and the key is reconciled again.
//!
//! *Guarantees* (from the engine)
//! - At most one reconcile of a key runs at a time. A reconcile lasts until every store request
//!   it made has replied; events for the key meanwhile cause one more reconcile afterwards.
//! - If any store write of a reconcile fails, or `reconcile` returns an error, the key is retried
//!   with per-key exponential backoff; a clean reconcile resets the backoff.
//! - A reconcile that made store reads is rerun as soon as they replied; a runtime result always
//!   triggers a reconcile of its key.
//!
//! *Assumptions*: in-memory state may be lost at any time (a crash). A controller must be able to
//! recover from the store and runtime inspection alone.

use crate::api::{Object, ObjectKey};
use crate::cache::Cache;
use crate::runtime::{RuntimeEvent, RuntimeRequest, RuntimeResult};
use crate::store::{Registry, StoreRequest, StoreResult};
use crate::time::Now;
use std::sync::Arc;
use std::time::Duration;

/// Identifies one store or runtime request of an engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct OpId(pub u64);

impl std::fmt::Display for OpId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What to do after a successful reconcile.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "an Action says when to reconcile again: return it from the reconcile"]
pub struct Action {
    pub requeue_after: Option<Duration>,
    /// The requeue retries unfinished work (a failed runtime operation, with the controller's own
    /// backoff): until a reconcile of the key ends without one, the engine counts the key as
    /// retrying, so a driver does not take it for settled.
    pub retry: bool,
}

impl Action {
    /// Nothing more until an event arrives.
    pub fn done() -> Self {
        Action { requeue_after: None, retry: false }
    }

    /// Reconcile again after `delay` even if nothing happens (monitoring, waiting).
    pub fn requeue(delay: Duration) -> Self {
        Action { requeue_after: Some(delay), retry: false }
    }

    /// Reconcile again after `delay` to retry something that failed.
    pub fn retry_after(delay: Duration) -> Self {
        Action { requeue_after: Some(delay), retry: true }
    }
}

/// A reconcile that failed; the key is retried with backoff.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReconcileError(pub String);

pub type ReconcileResult = Result<Action, ReconcileError>;

pub type MapFn = Box<dyn Fn(&Object, &Cache) -> Vec<ObjectKey> + Send>;

/// How an event on a watched kind turns into keys to reconcile.
pub enum Mapper {
    /// The object itself.
    Own,
    /// The owners of the object that are of this kind (in the object's namespace, or
    /// cluster-scoped if the owner kind is).
    Owners { owner_kind: String, owner_namespaced: bool },
    /// Anything else.
    Custom(MapFn),
}

/// One watched kind and its mapping. The kind `"*"` watches every kind.
pub struct Watch {
    pub kind: String,
    pub mapper: Mapper,
}

impl Watch {
    pub fn own(kind: &str) -> Self {
        Watch { kind: kind.to_string(), mapper: Mapper::Own }
    }

    pub fn owners(kind: &str, owner_kind: &str, owner_namespaced: bool) -> Self {
        Watch {
            kind: kind.to_string(),
            mapper: Mapper::Owners { owner_kind: owner_kind.to_string(), owner_namespaced },
        }
    }

    pub fn custom(kind: &str, map: impl Fn(&Object, &Cache) -> Vec<ObjectKey> + Send + 'static) -> Self {
        Watch { kind: kind.to_string(), mapper: Mapper::Custom(Box::new(map)) }
    }

    /// Objects of `kind` in a namespace that is there and not being deleted, on each change of it.
    /// For controllers that wait for their namespace (do nothing in one not yet seen or being
    /// deleted): kinds are not ordered among themselves, so an object can arrive before the
    /// namespace it waits for, or while the cache still shows an earlier namespace of that name
    /// being deleted.
    pub fn namespace_children(kind: &str) -> Self {
        let kind = kind.to_string();
        Watch::custom(<crate::api::Namespace as crate::api::Resource>::KIND, move |ns, cache| {
            if ns.metadata.is_deleting() {
                return Vec::new();
            }
            cache.list(&kind, Some(&ns.metadata.name)).map(|o| o.key()).collect()
        })
    }

    pub fn matches(&self, kind: &str) -> bool {
        self.kind == "*" || self.kind == kind
    }

    pub fn keys(&self, object: &Object, cache: &Cache) -> Vec<ObjectKey> {
        match &self.mapper {
            Mapper::Own => vec![object.key()],
            Mapper::Owners { owner_kind, owner_namespaced } => object
                .metadata
                .owner_references
                .iter()
                .filter(|r| &r.kind == owner_kind)
                .map(|r| {
                    let ns = if *owner_namespaced { object.metadata.namespace.as_deref() } else { None };
                    ObjectKey::new(owner_kind, ns, &r.name)
                })
                .collect(),
            Mapper::Custom(map) => map(object, cache),
        }
    }
}

/// A reconciler.
pub trait Controller: Send {
    /// A stable name, used in logs and traces.
    fn name(&self) -> &str;

    /// The kinds this controller watches and how their events map to keys.
    fn watches(&self) -> Vec<Watch>;

    /// Secondary indexes of the cache this controller looks objects up by (in `watches`'
    /// mappers or in `reconcile`, through [`Cache::indexed`]), so that an event finds the
    /// objects it concerns without a scan of the cache. Names must be unique across controllers.
    fn indexes(&self) -> Vec<crate::cache::Index> {
        Vec::new()
    }

    /// One step towards the desired state of `key`. The object may be absent from the cache
    /// (deleted, or not seen yet).
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult;

    /// A store request made by a reconcile of `key` has replied.
    fn on_store_result(&mut self, _now: Now, _key: &ObjectKey, _op: OpId, _result: &StoreResult) {}

    /// A runtime event about the container created for `key`. Return true to have `key`
    /// reconciled. Events are hints: they may be late, duplicated or missing.
    fn on_runtime_event(&mut self, _now: Now, _key: &ObjectKey, _event: &RuntimeEvent) -> bool {
        false
    }

    /// A runtime request made by a reconcile of `key` has replied.
    fn on_runtime_result(&mut self, _now: Now, _key: &ObjectKey, _op: OpId, _result: &RuntimeResult) {}

    /// Keys to reconcile once when the engine starts, whatever the store holds (a start-up pass
    /// over the runtime, like the harvester's).
    fn boot_keys(&self) -> Vec<ObjectKey> {
        Vec::new()
    }

    /// The runtime's event stream broke and was re-established: events may have been missed.
    /// Return the keys to reconcile (what the controller tracks must be looked at again).
    fn on_runtime_resync(&mut self, _now: Now) -> Vec<ObjectKey> {
        Vec::new()
    }
}

/// A request made during one reconcile, not yet handed to the driver.
#[derive(Debug)]
pub(crate) enum Issued {
    Store(OpId, StoreRequest),
    Runtime(OpId, RuntimeRequest),
    Cancel(OpId),
}

/// What a reconcile can see and do.
pub struct Context<'a> {
    pub(crate) now: Now,
    pub(crate) identity: &'a str,
    pub(crate) cache: &'a Cache,
    pub(crate) registry: &'a Registry,
    pub(crate) next_op: &'a mut u64,
    pub(crate) issued: Vec<Issued>,
    /// From then on, requests an earlier incarnation of this engine left in flight have landed
    /// or been abandoned.
    pub(crate) earlier_lives_settle_at: crate::time::MonoTime,
    pub(crate) seen_created: &'a crate::fixed::FixedSet<crate::api::Uid>,
    /// Store requests whose failure the controller handles itself (see [`Context::store_handling_failure`]).
    pub(crate) failure_handled: Vec<OpId>,
    /// Changes this controller sent for the key being reconciled that it gave up on and that may
    /// still run inside the runtime.
    pub(crate) detached_changes: u32,
    /// When the last of them left the runtime (was answered, or given up for good), if any did.
    pub(crate) detached_left_at: Option<crate::time::MonoTime>,
}

impl<'a> Context<'a> {
    pub fn now(&self) -> Now {
        self.now
    }

    /// `Some(t)` until time `t`: before then, a runtime request made by an earlier incarnation of
    /// this engine (before a crash) may still land, so "the runtime has nothing for this object"
    /// is not yet final. The engine cannot tell a first start from a restart, so this holds for
    /// `EngineConfig::earlier_lives_patience` after every start (unless the driver knows the
    /// earlier life stopped cleanly).
    pub fn earlier_lives_pending(&self) -> Option<crate::time::MonoTime> {
        (self.now.mono < self.earlier_lives_settle_at).then_some(self.earlier_lives_settle_at)
    }

    /// How many changes this controller sent for the key being reconciled that the engine gave up
    /// waiting for (their timeout) and that may still be running inside the runtime (see
    /// [`Output::Detach`](crate::Output::Detach)). Until each has left it, what a list of the
    /// runtime shows is not final: a create may still land. The key is reconciled again when each
    /// leaves (or the engine stops waiting for it). [`Finalizer`](crate::toolkit::Finalizer)
    /// releases no finalizer meanwhile.
    pub fn detached_changes(&self) -> u32 {
        self.detached_changes
    }

    /// When the last change of [`Context::detached_changes`] left the runtime (its late answer
    /// came, or the engine stopped waiting for it), if one did: an answer lost on its way (a
    /// create whose reply never came) may mean the runtime is still completing it, so a list
    /// right after may not show it yet.
    pub fn detached_left_at(&self) -> Option<crate::time::MonoTime> {
        self.detached_left_at
    }

    /// Whether this engine saw the object with `uid` being created (its `Added` event), so nothing
    /// an earlier incarnation of the engine did can concern it.
    pub fn saw_created(&self, uid: &crate::api::Uid) -> bool {
        self.seen_created.contains(uid)
    }

    /// The identity of this engine process (labels, lease holders).
    pub fn identity(&self) -> &str {
        self.identity
    }

    pub fn cache(&self) -> &'a Cache {
        self.cache
    }

    pub fn registry(&self) -> &'a Registry {
        self.registry
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&'a Arc<Object>> {
        self.cache.get(key)
    }

    /// Ask the store for something; the reply arrives through `on_store_result`.
    pub fn store(&mut self, request: StoreRequest) -> OpId {
        let id = self.op_id();
        self.issued.push(Issued::Store(id, request));
        id
    }

    /// Ask the store for something whose failure the controller handles itself, as a lease client
    /// handles a conflict on its lease: the request is not the reconcile's, so a failure neither
    /// fails the reconcile (and backs the key off, on top of whatever backoff its other writes
    /// built) nor does a success end a run of the key's failed writes. A failure reruns the
    /// reconcile at once, since the action it returned was chosen before the failure was known.
    pub fn store_handling_failure(&mut self, request: StoreRequest) -> OpId {
        let id = self.store(request);
        if !crate::bugs::on(crate::bugs::Bug::LeaseFailureBacksOffKey) {
            self.failure_handled.push(id);
        }
        id
    }

    /// Ask the runtime for something; the reply arrives through `on_runtime_result`.
    pub fn runtime(&mut self, request: RuntimeRequest) -> OpId {
        let id = self.op_id();
        self.issued.push(Issued::Runtime(id, request));
        id
    }

    /// Cancel a runtime request this controller made. No result will be delivered for it.
    pub fn cancel(&mut self, op: OpId) {
        self.issued.push(Issued::Cancel(op));
    }

    fn op_id(&mut self) -> OpId {
        *self.next_op += 1;
        OpId(*self.next_op)
    }
}
