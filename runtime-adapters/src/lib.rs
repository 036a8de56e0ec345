//! drydock-adapters: what the sans-IO engine needs to run for real.
//!
//! - [`runtime::Runtime`]: the runtime contract as an async trait; [`docker::DockerRuntime`]
//!   carries it out over Docker's API, through bollard.
//! - [`store::SharedStore`]: the API store behind a lock, with change notification.
//! - [`clock::SystemClock`]: the system clock, read only here, at the edge.
//! - [`logs::SharedLogs`]: the log hub behind a lock, which the driver fills (the engine's
//!   diagnostics and pull output, every container's captured output) and readers follow.
//! - [`driver::Driver`]: a tokio loop that feeds the engine watch events and replies and performs
//!   its requests against the store, the runtime and the system clock (the engine bounds the
//!   requests inside the runtime: `EngineConfig::max_runtime_in_flight`);
//! - [`health::RuntimeHealth`]: what the driver sees of the runtime, for a readiness probe.
//!
//! The `testing` feature adds `testing`: helpers for tests against a real Docker daemon (an
//! offline test image, a local registry). Only tests enable it (as a dev-dependency), so
//! production builds do not compile it.

pub mod clock;
pub mod docker;
pub mod driver;
pub mod health;
pub mod logs;
pub mod runtime;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use docker::{DockerError, DockerRuntime};
pub use driver::{Driver, Predecessor};
/// The kinds and controllers an engine runs: the engine's own builder, shared with scenarios.
pub use drydock_engine::Components;
pub use health::RuntimeHealth;
pub use logs::SharedLogs;
pub use runtime::{Runtime, RuntimeNotice};
pub use store::SharedStore;
