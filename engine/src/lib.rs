//! drydock-engine: a sans-IO container-lifecycle controller engine.
//!
//! Kubernetes-style controllers over an API [`store`] drive a container runtime through the
//! [`runtime`] contract. The [`Engine`] performs no I/O, reads no clock, spawns nothing and draws
//! no OS randomness: a driver feeds it [`Input`]s and performs its [`Output`]s. The simulator
//! (drydock-sim) and the production driver run this same code.

pub mod api;
pub mod backoff;
pub mod cache;
pub mod controller;
pub mod controllers;
mod engine;
pub mod lease;
pub mod lifecycle_key;
pub mod queue;
pub mod runtime;
pub mod store;
pub mod time;

pub use controller::{Action, Context, Controller, Mapper, OpId, ReconcileError, ReconcileResult, Watch};
pub use engine::{Engine, EngineConfig, EngineStats, Input, Origin, Output};
pub use time::{MonoTime, Now, WallTime};
