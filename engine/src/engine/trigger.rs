//! Why a reconcile ran: the first thing that queued its key for the time it ran at.
//!
//! Recorded only when [`EngineConfig::explain`](super::EngineConfig::explain) is set (a driver
//! that explains a run: `drydock sim repro --trace`, `sim report`): it costs a map insert per
//! queued key, which a sweep of thousands of seeds has no use for. The engine never reads a
//! trigger back; it changes nothing the engine does.

use crate::api::ObjectKey;
use crate::controller::OpId;
use crate::fixed::FixedMap;
use crate::queue::WorkQueue;
use crate::store::EventType;
use crate::time::MonoTime;
use std::fmt;
use std::sync::Arc;

/// What queued a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The engine's first input: every controller's boot keys.
    Boot,
    /// An object the controller watches changed (it is the key's own object, or one the
    /// controller maps to the key: a child, an owner, a user).
    Object { via: Via, object: ObjectKey, resource_version: u64 },
    /// A runtime event about the key's container.
    RuntimeEvent { container_id: String, action: String },
    /// The runtime's event stream was lost and is back.
    RuntimeResync,
    /// The reply to one of the key's runtime requests.
    RuntimeReply { id: OpId },
    /// One of the key's runtime requests got no answer in time.
    RuntimeTimeout { id: OpId },
    /// The last reconcile asked to run again after a delay.
    RequeueAfter,
    /// The last reconcile failed; this is its retry after backing off.
    Retry { error: String },
    /// The last reconcile read the store; it runs again with what it read.
    AfterReads,
    /// A request of the last reconcile whose failure its controller handles itself failed
    /// (a lease write met a conflict); it runs again to act on it.
    AfterHandledFailure { error: String },
}

/// How a changed object reached the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A watch event.
    Watch(EventType),
    /// A full list (boot, or after the watch broke).
    Resync,
    /// The reply to the engine's own write (read your own writes).
    OwnWrite,
    /// Another object took its place in the cache (same name, new uid): it is gone.
    Replaced,
    /// Its namespace became this engine's.
    NamespaceNowOurs,
    /// A write to it was answered NotFound: it is gone, before the watch says so.
    FoundGone,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::Boot => f.write_str("boot"),
            Trigger::Object { via, object, resource_version } => match via {
                Via::Watch(event) => write!(f, "watch {event:?} {object} rv={resource_version}"),
                Via::Resync => write!(f, "list {object} rv={resource_version}"),
                Via::OwnWrite => write!(f, "own write {object} rv={resource_version}"),
                Via::Replaced => write!(f, "replaced {object} rv={resource_version}"),
                Via::NamespaceNowOurs => write!(f, "namespace now ours: {object} rv={resource_version}"),
                Via::FoundGone => write!(f, "found gone by a write {object} rv={resource_version}"),
            },
            Trigger::RuntimeEvent { container_id, action } => {
                write!(f, "runtime event {action} {}", crate::runtime::short(container_id))
            }
            Trigger::RuntimeResync => f.write_str("runtime resync"),
            Trigger::RuntimeReply { id } => write!(f, "runtime reply {id}"),
            Trigger::RuntimeTimeout { id } => write!(f, "runtime timeout {id}"),
            Trigger::RequeueAfter => f.write_str("requeue after a delay"),
            Trigger::Retry { error } => write!(f, "retry after: {error}"),
            Trigger::AfterReads => f.write_str("its own reads"),
            Trigger::AfterHandledFailure { error } => write!(f, "its own request failed: {error}"),
        }
    }
}

/// The triggers of queued keys, if the engine explains itself.
#[derive(Debug)]
pub(super) struct Triggers<K>(Option<FixedMap<K, Arc<Trigger>>>);

impl<K: Ord + Clone + std::hash::Hash> Triggers<K> {
    pub(super) fn new(explain: bool) -> Self {
        Triggers(explain.then(FixedMap::default))
    }

    /// Queue `key` at `at` in `queue`; if that set when it runs, remember `why`.
    pub(super) fn add(&mut self, queue: &mut WorkQueue<K>, key: K, at: MonoTime, why: impl FnOnce() -> Trigger) {
        match &mut self.0 {
            None => {
                queue.add(key, at);
            }
            Some(triggers) => {
                if queue.add(key.clone(), at) {
                    triggers.insert(key, Arc::new(why()));
                }
            }
        }
    }

    /// The trigger of the reconcile of `key` starting now.
    pub(super) fn take(&mut self, key: &K) -> Option<Arc<Trigger>> {
        self.0.as_mut()?.swap_remove(key)
    }
}
