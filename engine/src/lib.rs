//! drydock-engine: a sans-IO container-lifecycle controller engine.
//!
//! Kubernetes-style controllers over an API [`store`] drive a container runtime through the
//! [`runtime`] contract. The [`Engine`] performs no I/O, reads no clock, spawns nothing and draws
//! no OS randomness: a driver feeds it [`Input`]s and performs its [`Output`]s. The simulator
//! (drydock-sim) and the production driver run this same code. Controllers implement
//! [`Controller`]; the [`toolkit`] has what the built-in ones share (operation tracking,
//! finalizers, status writes) for user-written ones too.
//!
//! # The driver loop
//!
//! Every driver is this loop: feed the engine the store's new watch events (or a relist, if the
//! store's history no longer reaches back), perform every request it has and hand back each
//! result with the request's id, then wait until something changes or the engine's next wakeup.
//! The production driver (drydock-adapters) runs it on tokio with the Docker runtime and the
//! system clock; here it is synchronous, with the in-memory store, a runtime stub and a clock
//! that jumps to the next wakeup.
//!
//! ```
//! use drydock_engine::api::{Namespace, NamespacePhase, NamespaceSpec, Object, ObjectKey, ObjectMeta, Resource};
//! use drydock_engine::controllers::{self, ControllerConfig};
//! use drydock_engine::runtime::{RuntimeError, RuntimeRequest, RuntimeResult};
//! use drydock_engine::store::{Registry, Store, StoreConfig};
//! use drydock_engine::{Engine, EngineConfig, Input, MonoTime, Now, Output, WallTime};
//!
//! /// The runtime: a stub that can do nothing.
//! fn runtime(request: RuntimeRequest) -> RuntimeResult {
//!     Err(RuntimeError::Transient(format!("{}: there is no runtime here", request.describe())))
//! }
//!
//! let registry = Registry::builtin();
//! let mut store = Store::in_memory(registry.clone(), StoreConfig::default());
//! let controllers = controllers::builtin(&ControllerConfig::default());
//! let mut engine = Engine::new(EngineConfig::default(), registry, controllers);
//! store.create(WallTime(0), Object::from_spec::<Namespace>(ObjectMeta::named(None, "demo"), &NamespaceSpec {}))?;
//!
//! let mut ms: u64 = 0; // the clock, in milliseconds
//! let now = |ms: u64| Now::new(MonoTime(ms * 1_000_000), WallTime(ms));
//! let mut watched = 0; // the resource version the engine has seen up to
//! while ms < 60_000 {
//!     // Feed the watch, in order; if the store compacted past `watched`, relist instead.
//!     match store.events_since(watched) {
//!         Ok(events) => {
//!             for event in events {
//!                 watched = event.resource_version();
//!                 engine.handle(now(ms), Input::Watch(event.clone()));
//!             }
//!         }
//!         Err(_) => {
//!             let (objects, resource_version) = (store.list(None, None), store.resource_version());
//!             watched = resource_version;
//!             engine.handle(now(ms), Input::Resync { objects, resource_version });
//!         }
//!     }
//!     // Perform everything the engine asks for now, handing back each result.
//!     while let Some(output) = engine.poll(now(ms)) {
//!         match output {
//!             Output::Store { id, request, .. } => {
//!                 let result = store.execute(now(ms).wall, request);
//!                 engine.handle(now(ms), Input::StoreDone { id, result });
//!             }
//!             Output::Runtime { id, request, .. } => {
//!                 engine.handle(now(ms), Input::RuntimeDone { id, result: runtime(request) });
//!             }
//!             // The stub answers at once: nothing is left to cancel or to let finish.
//!             Output::Cancel { .. } | Output::Detach { .. } => {}
//!             // Log lines for the objects' streams: nobody reads them here.
//!             Output::Log(_) => {}
//!         }
//!     }
//!     // Wait: for the store's new events (there are some: loop), or for the next wakeup.
//!     if store.resource_version() > watched {
//!         continue;
//!     }
//!     match engine.next_wakeup() {
//!         Some(due) => ms = due.0.div_ceil(1_000_000).max(ms + 1),
//!         None => break, // idle until something changes, and nothing else will here
//!     }
//! }
//!
//! let demo = store.get(&ObjectKey::cluster(Namespace::KIND, "demo")).ok_or("demo is gone")?;
//! assert_eq!(demo.status::<Namespace>()?.phase, Some(NamespacePhase::Active));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod api;
mod backoff;
pub mod bugs;
pub mod cache;
pub mod components;
pub mod controller;
pub mod controllers;
mod engine;
pub mod fixed;
pub mod lease;
pub mod lifecycle_key;
pub mod logs;
mod queue;
pub mod runtime;
pub mod store;
pub mod time;
pub mod toolkit;

pub use components::Components;
pub use controller::{Action, Context, Controller, Mapper, OpId, ReconcileError, ReconcileResult, Watch};
pub use engine::{Engine, EngineConfig, EngineStats, Input, Origin, Output, Trigger, Via};
pub use time::{MonoTime, Now, WallTime};
