//! The controller toolkit: the pieces every runtime-facing [`Controller`](crate::Controller)
//! needs, which the built-in controllers use too.
//!
//! - [`OpTracker`]: one operation in flight per object, routing of its reply, a per-object
//!   [`RetryGate`] that counts failures per operation kind against a [`RetryPolicy`] of the
//!   controller's choosing (backoff to a cap, optionally a budget), and the controller's own
//!   per-object state.
//! - [`Finalizer`]: add a finalizer before any apply work, run apply or cleanup, and remove the
//!   finalizer once cleanup is [`Cleanup::Done`].
//! - [`write_status`], [`update_if_changed`] and [`without_finalizer`]: writes that do not loop.
//!
//! Everything here is sans-IO like the engine: requests go out through the [`Context`], replies
//! come back through the controller's `on_store_result` / `on_runtime_result`, nothing waits.
//!
//! # A controller written with the toolkit
//!
//! `Sleeper` objects each want one runtime container. The controller creates it (once: a failed
//! create backs off), records its id in status, and removes it before the object may go.
//!
//! ```
//! use drydock_engine::api::{Object, ObjectKey, ObjectMeta, Resource};
//! use drydock_engine::controller::{Action, Context, Controller, OpId, ReconcileError, ReconcileResult, Watch};
//! use drydock_engine::runtime::{ContainerCreate, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
//! use drydock_engine::toolkit::{Cleanup, Finalizer, OpTracker, RetryPolicy, write_status};
//! use drydock_engine::Now;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use std::time::Duration;
//!
//! /// A cluster-scoped kind: spec `{"image": ...}`, status `{"containerId": ...}`. Its types
//! /// derive `JsonSchema` too: the schema the daemon serves (`kubectl explain`).
//! struct Sleeper;
//! #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
//! struct SleeperSpec {
//!     /// The image to sleep in.
//!     image: String,
//! }
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! struct SleeperStatus {
//!     container_id: Option<String>,
//! }
//! impl Resource for Sleeper {
//!     const KIND: &'static str = "Sleeper";
//!     const NAMESPACED: bool = false;
//!     type Spec = SleeperSpec;
//!     type Status = SleeperStatus;
//! }
//!
//! /// The controller's operations.
//! #[derive(Copy, Clone, Debug, PartialEq, Eq)]
//! enum Op {
//!     Create,
//!     Remove,
//! }
//!
//! /// What the controller knows about one Sleeper's container.
//! #[derive(Debug, Default)]
//! struct Container {
//!     id: Option<String>,
//!     removed: bool,
//! }
//!
//! const FINALIZER: Finalizer<'static> = Finalizer::new("example.dev/sleeper");
//! /// 200 ms after the first failure, doubling up to 10 s.
//! const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(10));
//!
//! #[derive(Default)]
//! struct SleeperController {
//!     ops: OpTracker<Op, Container>,
//! }
//!
//! fn invalid(e: impl ToString) -> ReconcileError {
//!     ReconcileError(e.to_string())
//! }
//!
//! impl SleeperController {
//!     /// The finalizer is in place: create the container, then record it.
//!     fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
//!         let spec = obj.spec::<Sleeper>().map_err(invalid)?;
//!         let status = obj.status::<Sleeper>().map_err(invalid)?;
//!         let container = &mut self.ops.entry(obj).state;
//!         // After a crash, memory is empty: the store remembers the container.
//!         if container.id.is_none() {
//!             container.id.clone_from(&status.container_id);
//!         }
//!         let Some(id) = container.id.clone() else {
//!             let create = ContainerCreate {
//!                 name: format!("sleeper-{}", obj.metadata.name),
//!                 image: spec.image,
//!                 command: vec!["sleep".into(), "infinity".into()],
//!                 ..Default::default()
//!             };
//!             let request = RuntimeRequest::CreateContainer(create);
//!             self.ops.start_runtime(ctx, &obj.metadata.uid, Op::Create, request);
//!             return Ok(Action::done());
//!         };
//!         write_status::<Sleeper>(ctx, obj, &status, SleeperStatus { container_id: Some(id) });
//!         Ok(Action::done())
//!     }
//!
//!     /// The object is being deleted: remove the container, then let the finalizer go.
//!     fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
//!         let status = obj.status::<Sleeper>().unwrap_or_default();
//!         let container = &self.ops.entry(obj).state;
//!         match container.id.clone().or(status.container_id) {
//!             Some(id) if !container.removed => {
//!                 let request = RuntimeRequest::RemoveContainer { id, force: true };
//!                 self.ops.start_runtime(ctx, &obj.metadata.uid, Op::Remove, request);
//!                 Ok(Cleanup::Waiting(Action::done()))
//!             }
//!             _ => Ok(Cleanup::Done),
//!         }
//!     }
//! }
//!
//! impl Controller for SleeperController {
//!     fn name(&self) -> &str {
//!         "sleeper"
//!     }
//!
//!     fn watches(&self) -> Vec<Watch> {
//!         vec![Watch::own(Sleeper::KIND)]
//!     }
//!
//!     fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
//!         let Some(obj) = ctx.get(key) else {
//!             self.ops.forget(key);
//!             return Ok(Action::done());
//!         };
//!         // One operation at a time, and none while backing off.
//!         if let Some(wait) = self.ops.entry(obj).blocked(ctx.now().mono) {
//!             return Ok(wait);
//!         }
//!         FINALIZER.reconcile(ctx, obj, self, Self::apply, Self::cleanup)
//!     }
//!
//!     fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
//!         // Only the reply to the object's current operation counts.
//!         let Some((done, tracked)) = self.ops.claim(op) else { return };
//!         match (done.op, result) {
//!             (Op::Create, Ok(RuntimeReply::Created { id })) => tracked.state.id = Some(id.clone()),
//!             (Op::Remove, Ok(_) | Err(RuntimeError::NotFound(_))) => tracked.state.removed = true,
//!             // A real controller verifies an uncertain create by its labels before retrying.
//!             (op, _) => {
//!                 // Back off; this example never gives up (RETRY has no budget).
//!                 let _ = tracked.retry.fail(op, now.mono, &RETRY);
//!                 return;
//!             }
//!         }
//!         tracked.retry.succeed(done.op);
//!     }
//! }
//!
//! // Drive it: an in-memory store, a runtime stub, and the engine.
//! # use drydock_engine::store::{DeleteOptions, KindInfo, Registry, Store, StoreConfig};
//! # use drydock_engine::{Engine, EngineConfig, Input, MonoTime, Output, WallTime};
//! # fn runtime(request: RuntimeRequest) -> RuntimeResult {
//! #     match request {
//! #         RuntimeRequest::CreateContainer(c) => Ok(RuntimeReply::Created { id: format!("id-{}", c.name) }),
//! #         RuntimeRequest::RemoveContainer { .. } => Ok(RuntimeReply::Done),
//! #         other => Err(RuntimeError::Transient(format!("{} is not in this example", other.describe()))),
//! #     }
//! # }
//! # /// Feed events and perform requests until the engine has nothing more to do.
//! # fn settle(engine: &mut Engine, store: &mut Store, watched: &mut u64) {
//! #     let now = Now::new(MonoTime(0), WallTime(0));
//! #     loop {
//! #         for event in store.events_since(*watched).expect("no compaction in this example") {
//! #             *watched = event.resource_version();
//! #             engine.handle(now, Input::Watch(event.clone()));
//! #         }
//! #         let Some(output) = engine.poll(now) else { break };
//! #         match output {
//! #             Output::Store { id, request, .. } => {
//! #                 let result = store.execute(now.wall, request);
//! #                 engine.handle(now, Input::StoreDone { id, result });
//! #             }
//! #             Output::Runtime { id, request, .. } => engine.handle(now, Input::RuntimeDone { id, result: runtime(request) }),
//! #             Output::Cancel { .. } | Output::Detach { .. } | Output::Log(_) => {}
//! #         }
//! #     }
//! # }
//! let mut registry = Registry::builtin();
//! registry.register(KindInfo::typed::<Sleeper>(|_| Vec::new()));
//! let mut store = Store::in_memory(registry.clone(), StoreConfig::default());
//! let controllers: Vec<Box<dyn Controller>> = vec![Box::new(SleeperController::default())];
//! let mut engine = Engine::new(EngineConfig::default(), registry, controllers);
//! let mut watched = 0;
//!
//! let spec = SleeperSpec { image: "busybox".into() };
//! store.create(WallTime(0), Object::from_spec::<Sleeper>(ObjectMeta::named(None, "nap"), &spec))?;
//! settle(&mut engine, &mut store, &mut watched);
//! let key = ObjectKey::cluster(Sleeper::KIND, "nap");
//! let nap = store.get(&key).ok_or("nap is gone")?;
//! assert_eq!(nap.metadata.finalizers, ["example.dev/sleeper"]);
//! assert_eq!(nap.status::<Sleeper>()?.container_id.as_deref(), Some("id-sleeper-nap"));
//!
//! store.delete(WallTime(0), &key, &DeleteOptions::default())?;
//! settle(&mut engine, &mut store, &mut watched);
//! assert!(store.get(&key).is_none(), "removed once its container was");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod finalizer;
mod retry;
mod tracker;

pub use finalizer::{Cleanup, DETACHED_SETTLE, Finalizer};
pub use retry::{Retry, RetryGate, RetryPolicy};
pub use tracker::{InFlight, OpTracker, RequestKind, Tracked};

use crate::api::{Object, Resource};
use crate::controller::Context;
use crate::store::StoreRequest;

/// A copy of `object` without `finalizer`.
pub fn without_finalizer(object: &Object, finalizer: &str) -> Object {
    let mut next = object.clone();
    next.metadata.finalizers.retain(|f| f != finalizer);
    next
}

/// Write `next` as the status of `obj` unless it equals `current` (a write triggers another
/// reconcile, so writing an unchanged status would loop). Returns whether a write was issued.
/// The write's precondition is `obj`'s resource version.
pub fn write_status<R: Resource>(ctx: &mut Context<'_>, obj: &Object, current: &R::Status, next: R::Status) -> bool {
    if *current == next {
        return false;
    }
    ctx.store(StoreRequest::UpdateStatus { object: obj.status_write::<R>(&next) });
    true
}

/// Update `obj` (spec and metadata) with `edit` applied, unless `edit` changes nothing (which
/// would loop, as for [`write_status`]). Returns whether a write was issued. The write's
/// precondition is `obj`'s resource version.
pub fn update_if_changed(ctx: &mut Context<'_>, obj: &Object, edit: impl FnOnce(&mut Object)) -> bool {
    let mut next = obj.clone();
    edit(&mut next);
    if next == *obj {
        return false;
    }
    ctx.store(StoreRequest::Update { object: next });
    true
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::api::Namespace;
    use crate::api::{NamespacePhase, NamespaceStatus};
    use crate::controller::Issued;
    use crate::toolkit::testing::{Harness, updates, widget};

    #[test]
    fn without_finalizer_removes_only_that_one() {
        let mut object = widget("w");
        object.metadata.finalizers = vec!["a".into(), "b".into(), "a".into()];
        assert_eq!(without_finalizer(&object, "a").metadata.finalizers, ["b"]);
        assert_eq!(without_finalizer(&object, "c").metadata.finalizers, object.metadata.finalizers);
    }

    #[test]
    fn an_unchanged_status_is_not_written() {
        let object = widget("w");
        let current = NamespaceStatus::default();
        let (wrote, issued) =
            Harness::default().run(1, |ctx| write_status::<Namespace>(ctx, &object, &current, current.clone()));
        assert!(!wrote && issued.is_empty());

        let next = NamespaceStatus { phase: Some(NamespacePhase::Active), ..current.clone() };
        let (wrote, issued) =
            Harness::default().run(1, |ctx| write_status::<Namespace>(ctx, &object, &current, next.clone()));
        assert!(wrote);
        let [Issued::Store(_, StoreRequest::UpdateStatus { object: written })] = &issued[..] else {
            panic!("one status write expected: {issued:?}")
        };
        assert_eq!(written.status::<Namespace>().unwrap(), next);
        assert_eq!(written.metadata.resource_version, object.metadata.resource_version);
        assert_eq!((written.key(), &written.metadata.uid), (object.key(), &object.metadata.uid));
    }

    #[test]
    fn an_edit_that_changes_nothing_is_not_written() {
        let object = widget("w");
        let (wrote, issued) =
            Harness::default().run(1, |ctx| update_if_changed(ctx, &object, |o| o.metadata.labels.clear()));
        assert!(!wrote && issued.is_empty());

        let (wrote, issued) = Harness::default().run(1, |ctx| {
            update_if_changed(ctx, &object, |o| {
                o.metadata.labels.insert("k".into(), "v".into());
            })
        });
        assert!(wrote);
        assert_eq!(updates(&issued)[0].metadata.labels["k"], "v");
    }
}
