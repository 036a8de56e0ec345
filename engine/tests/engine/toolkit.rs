//! The public toolkit from a user's side: a controller written with `OpTracker`, `Finalizer` and
//! `write_status`, run by the real engine against the in-memory store and a scripted runtime.

use drydock_engine::api::{Object, ObjectKey, ObjectMeta, Resource};
use drydock_engine::runtime::{ContainerCreate, RuntimeError, RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{DeleteOptions, KindInfo, Registry, Store, StoreConfig};
use drydock_engine::toolkit::{Cleanup, Finalizer, OpTracker, RetryPolicy, write_status};
use drydock_engine::{
    Action, Context, Controller, Engine, EngineConfig, Input, MonoTime, Now, OpId, Output, ReconcileError,
    ReconcileResult, WallTime, Watch,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

const FINALIZER: &str = "test.dev/sandbox";
const NAME: &str = "b";

/// A cluster-scoped kind that wants one runtime container; its id goes to status.
struct Sandbox;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct SandboxStatus {
    container: Option<String>,
}

impl Resource for Sandbox {
    const KIND: &'static str = "Sandbox";
    const NAMESPACED: bool = false;
    type Spec = serde_json::Value;
    type Status = SandboxStatus;
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Op {
    Create,
    Remove,
}

#[derive(Debug, Default)]
struct Container {
    id: Option<String>,
    removed: bool,
}

const RETRY: RetryPolicy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(10));

#[derive(Default)]
struct SandboxController {
    ops: OpTracker<Op, Container>,
}

impl SandboxController {
    fn apply(&mut self, ctx: &mut Context<'_>, obj: &Object) -> ReconcileResult {
        let status = obj.status::<Sandbox>().map_err(|e| ReconcileError(e.to_string()))?;
        match self.ops.entry(obj).state.id.clone() {
            None => {
                let create = ContainerCreate { name: obj.metadata.name.to_string(), ..Default::default() };
                self.ops.start_runtime(ctx, &obj.metadata.uid, Op::Create, RuntimeRequest::CreateContainer(create));
            }
            Some(id) => {
                write_status::<Sandbox>(ctx, obj, &status, SandboxStatus { container: Some(id) });
            }
        }
        Ok(Action::done())
    }

    fn cleanup(&mut self, ctx: &mut Context<'_>, obj: &Object) -> Result<Cleanup, ReconcileError> {
        let container = &self.ops.entry(obj).state;
        match (container.id.clone(), container.removed) {
            (Some(id), false) => {
                let remove = RuntimeRequest::RemoveContainer { id, force: true };
                self.ops.start_runtime(ctx, &obj.metadata.uid, Op::Remove, remove);
                Ok(Cleanup::Waiting(Action::done()))
            }
            _ => Ok(Cleanup::Done),
        }
    }
}

impl Controller for SandboxController {
    fn name(&self) -> &str {
        "sandbox"
    }

    fn watches(&self) -> Vec<Watch> {
        vec![Watch::own(Sandbox::KIND)]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        let Some(obj) = ctx.get(key) else {
            self.ops.forget(key);
            return Ok(Action::done());
        };
        if let Some(wait) = self.ops.entry(obj).blocked(ctx.now().mono) {
            return Ok(wait);
        }
        Finalizer::new(FINALIZER).reconcile(ctx, obj, self, Self::apply, Self::cleanup)
    }

    fn on_runtime_result(&mut self, now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        let Some((done, tracked)) = self.ops.claim(op) else { return };
        match (done.op, result) {
            (Op::Create, Ok(RuntimeReply::Created { id })) => tracked.state.id = Some(id.clone()),
            (Op::Remove, Ok(_)) => tracked.state.removed = true,
            (op, _) => {
                let _ = tracked.retry.fail(op, now.mono, &RETRY);
                return;
            }
        }
        tracked.retry.succeed(done.op);
    }
}

/// A runtime request as the driver saw it.
struct Seen {
    at_ms: u64,
    request: RuntimeRequest,
    /// Whether the store held the object with its finalizer at that moment.
    finalized: bool,
}

type Script = Box<dyn FnMut(&RuntimeRequest) -> Option<RuntimeResult>>;

struct World {
    store: Store,
    engine: Engine,
    ms: u64,
    watched: u64,
    /// Answers a runtime request at once, or holds it (`None`) until `answer_held`.
    script: Script,
    held: Vec<OpId>,
    seen: Vec<Seen>,
}

impl World {
    fn new(script: impl FnMut(&RuntimeRequest) -> Option<RuntimeResult> + 'static) -> Self {
        let mut registry = Registry::builtin();
        registry.register(KindInfo::untyped(Sandbox::KIND, false));
        let controllers: Vec<Box<dyn Controller>> = vec![Box::new(SandboxController::default())];
        World {
            store: Store::in_memory(registry.clone(), StoreConfig::default()),
            engine: Engine::new(EngineConfig::default(), registry, controllers),
            ms: 1_000,
            watched: 0,
            script: Box::new(script),
            held: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn now(&self) -> Now {
        Now::new(MonoTime(self.ms * 1_000_000), WallTime(self.ms))
    }

    fn key() -> ObjectKey {
        ObjectKey::cluster(Sandbox::KIND, NAME)
    }

    fn object(&self) -> Option<&Object> {
        self.store.get(&Self::key()).map(|o| &**o)
    }

    fn create(&mut self) {
        let object = Object::new(Sandbox::KIND, ObjectMeta::named(None, NAME), serde_json::json!({}));
        self.store.create(WallTime(self.ms), object).unwrap();
    }

    fn delete(&mut self) {
        self.store.delete(WallTime(self.ms), &Self::key(), &DeleteOptions::default()).unwrap();
    }

    /// Drive the engine for `ms` of simulated time.
    fn run_for(&mut self, ms: u64) {
        let end = self.ms + ms;
        loop {
            let events: Vec<_> = self.store.events_since(self.watched).unwrap().cloned().collect();
            for event in events {
                self.watched = event.resource_version();
                self.engine.handle(self.now(), Input::Watch(event));
            }
            if let Some(output) = self.engine.poll(self.now()) {
                self.perform(output);
                continue;
            }
            match self.engine.next_wakeup() {
                Some(due) if due.0.div_ceil(1_000_000) <= end => self.ms = due.0.div_ceil(1_000_000).max(self.ms + 1),
                _ => {
                    self.ms = end;
                    return;
                }
            }
        }
    }

    fn perform(&mut self, output: Output) {
        let now = self.now();
        match output {
            Output::Store { id, request, .. } => {
                let result = self.store.execute(now.wall, request);
                self.engine.handle(now, Input::StoreDone { id, result });
            }
            Output::Runtime { id, request, .. } => {
                let finalized = self.object().is_some_and(|o| o.metadata.has_finalizer(FINALIZER));
                let answer = (self.script)(&request);
                self.seen.push(Seen { at_ms: self.ms, request, finalized });
                match answer {
                    Some(result) => self.engine.handle(now, Input::RuntimeDone { id, result }),
                    None => self.held.push(id),
                }
            }
            Output::Cancel { id } => self.held.retain(|h| *h != id),
            // Still inside the runtime: its reply comes when the test answers it.
            Output::Detach { .. } => {}
            Output::Log(_) => {}
        }
    }

    fn answer_held(&mut self, result: RuntimeResult) {
        let id = self.held.remove(0);
        self.engine.handle(self.now(), Input::RuntimeDone { id, result });
    }

    fn creates(&self) -> Vec<u64> {
        let creates = self.seen.iter().filter(|s| matches!(s.request, RuntimeRequest::CreateContainer(_)));
        creates.map(|s| s.at_ms).collect()
    }
}

fn created() -> Option<RuntimeResult> {
    Some(Ok(RuntimeReply::Created { id: "c1".into() }))
}

#[test]
fn the_finalizer_is_stored_before_any_runtime_request_and_goes_after_cleanup() {
    let mut w = World::new(|request| match request {
        RuntimeRequest::CreateContainer(_) => created(),
        _ => Some(Ok(RuntimeReply::Done)),
    });
    w.create();
    w.run_for(1_000);
    assert_eq!(w.creates().len(), 1);
    assert!(w.seen.iter().all(|s| s.finalized), "no runtime request before the finalizer is stored");
    let status = w.object().unwrap().status::<Sandbox>().unwrap();
    assert_eq!(status.container.as_deref(), Some("c1"));

    w.delete();
    w.run_for(1_000);
    assert!(matches!(w.seen.last().unwrap().request, RuntimeRequest::RemoveContainer { .. }));
    assert!(w.object().is_none(), "the finalizer went once the container was removed");
}

#[test]
fn a_failed_operation_waits_out_the_policy_before_it_is_retried() {
    let mut failures = 2;
    let mut w = World::new(move |_| {
        if failures == 0 {
            return created();
        }
        failures -= 1;
        Some(Err(RuntimeError::Transient("busy".into())))
    });
    w.create();
    w.run_for(5_000);
    let creates = w.creates();
    assert_eq!(creates.len(), 3, "{creates:?}");
    assert_eq!((creates[1] - creates[0], creates[2] - creates[1]), (200, 400), "100 ms doubled per failure");
}

#[test]
fn a_delete_waits_for_the_operation_in_flight() {
    let mut w = World::new(|_| None);
    w.create();
    w.run_for(1_000);
    assert_eq!(w.held.len(), 1, "the create is in flight");

    w.delete();
    w.run_for(1_000);
    assert_eq!(w.seen.len(), 1, "no cleanup while the create is in flight");
    assert!(w.object().unwrap().metadata.has_finalizer(FINALIZER));

    w.answer_held(Ok(RuntimeReply::Created { id: "c1".into() }));
    w.run_for(1_000);
    assert!(matches!(&w.seen[1].request, RuntimeRequest::RemoveContainer { id, .. } if id == "c1"));
    assert!(w.object().is_some(), "kept until the remove is answered");

    w.answer_held(Ok(RuntimeReply::Done));
    w.run_for(1_000);
    assert!(w.object().is_none());
}
