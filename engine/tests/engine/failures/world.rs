//! The failure tests' world: the built-in controllers in one engine over the in-memory store and
//! the scripted runtime, driven on a simulated clock in which the runtime answers at once (or
//! holds pulls back), and restarted with all its memory lost.

use super::NS;
use super::runtime::Runtime;
use drydock_engine::api::{Namespace, NamespaceSpec, Object, ObjectKey, ObjectMeta, Resource};
use drydock_engine::controller::OpId;
use drydock_engine::controllers::{ControllerConfig, builtin};
use drydock_engine::runtime::RuntimeRequest;
use drydock_engine::store::{Registry, Store, StoreConfig};
use drydock_engine::{Engine, EngineConfig, Input, MonoTime, Now, Output, WallTime};
use std::time::Duration;

pub(super) struct World {
    pub(super) store: Store,
    pub(super) engine: Engine,
    pub(super) runtime: Runtime,
    pub(super) now_ms: u64,
    pub(super) fed: u64,
    /// Pulls the runtime has not answered yet (`Runtime::hold_pulls`).
    pub(super) held: Vec<(OpId, RuntimeRequest)>,
}

impl World {
    pub(super) fn new(runtime: Runtime) -> Self {
        let registry = Registry::builtin();
        let mut world = World {
            store: Store::in_memory(registry.clone(), StoreConfig::default()),
            engine: Engine::new(EngineConfig::default(), registry, builtin(&ControllerConfig::default())),
            runtime,
            now_ms: 1_000,
            fed: 0,
            held: Vec::new(),
        };
        let ns = Object::from_spec::<Namespace>(ObjectMeta::named(None, NS), &NamespaceSpec {});
        world.store.create(WallTime(world.now_ms), ns).unwrap();
        world.run_for(Duration::from_secs(1));
        world
    }

    pub(super) fn now(&self) -> Now {
        Now::new(MonoTime(self.now_ms * 1_000_000), WallTime(self.now_ms))
    }

    /// A new engine process over the same store and runtime: all memory lost.
    pub(super) fn restart_engine(&mut self) {
        let config = EngineConfig { first_op: 1 << 40, ..EngineConfig::default() };
        self.engine = Engine::new(config, Registry::builtin(), builtin(&ControllerConfig::default()));
        self.fed = 0;
    }

    /// A new engine process over the same store and runtime that starts, as a driver does, from a
    /// full list of the store (so it never sees the objects of its earlier life being created).
    pub(super) fn restart_engine_from_a_list(&mut self) {
        self.restart_engine();
        let objects = self.store.list(None, None);
        let resource_version = self.store.resource_version();
        self.engine.handle(self.now(), Input::Resync { objects, resource_version });
        self.fed = resource_version;
    }

    /// Drive the engine for `duration` of simulated time; the runtime answers at once.
    pub(super) fn run_for(&mut self, duration: Duration) {
        let end = self.now_ms + u64::try_from(duration.as_millis()).unwrap();
        for _ in 0..1_000_000 {
            let now = self.now();
            let events: Vec<_> = self.store.events_since(self.fed).unwrap().cloned().collect();
            for event in events {
                self.fed = event.resource_version();
                self.engine.handle(now, Input::Watch(event));
            }
            if let Some(output) = self.engine.poll(now) {
                match output {
                    Output::Store { id, request, .. } => {
                        let result = self.store.execute(now.wall, request);
                        self.engine.handle(now, Input::StoreDone { id, result });
                    }
                    Output::Runtime { id, request, .. }
                        if self.runtime.hold_pulls && matches!(request, RuntimeRequest::PullImage { .. }) =>
                    {
                        self.runtime.requests.push((self.now_ms, request.clone()));
                        self.held.push((id, request));
                    }
                    Output::Runtime { id, request, origin } => {
                        let result = self.runtime.answer(self.now_ms, request);
                        if &*origin.controller == "harvester" {
                            // Its periodic lists are not what these tests count.
                            self.runtime.requests.pop();
                        }
                        self.engine.handle(now, Input::RuntimeDone { id, result });
                    }
                    Output::Cancel { .. } | Output::Detach { .. } | Output::Log(_) => {}
                }
                continue;
            }
            match self.engine.next_wakeup() {
                Some(due) if due.0.div_ceil(1_000_000) <= end => {
                    self.now_ms = due.0.div_ceil(1_000_000).max(self.now_ms + 1);
                }
                _ => {
                    self.now_ms = end;
                    return;
                }
            }
        }
        panic!("the engine never went quiet: a hot loop");
    }

    /// The runtime answers the pulls it held.
    pub(super) fn finish_pulls(&mut self) {
        self.runtime.hold_pulls = false;
        for (id, request) in std::mem::take(&mut self.held) {
            let result = self.runtime.answer(self.now_ms, request);
            // Recorded when it was held: count each pull once.
            self.runtime.requests.pop();
            self.engine.handle(self.now(), Input::RuntimeDone { id, result });
        }
    }

    pub(super) fn create<R: Resource>(&mut self, name: &str, spec: &R::Spec) -> ObjectKey {
        let object = Object::from_spec::<R>(ObjectMeta::named(Some(NS), name), spec);
        self.store.create(WallTime(self.now_ms), object).unwrap().key()
    }

    pub(super) fn status<R: Resource>(&self, key: &ObjectKey) -> R::Status {
        self.store.get(key).unwrap().status::<R>().unwrap()
    }

    /// Runtime requests made from now on, over `duration`.
    pub(super) fn requests_over(&mut self, duration: Duration) -> Vec<RuntimeRequest> {
        let before = self.runtime.requests.len();
        self.run_for(duration);
        self.runtime.requests[before..].iter().map(|(_, r)| r.clone()).collect()
    }
}
