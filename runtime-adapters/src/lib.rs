//! drydock-adapters: what the sans-IO engine needs to run for real.
//!
//! - [`docker::DockerRuntime`]: the runtime contract over Docker's API, through bollard.
//! - [`store::SharedStore`]: the API store behind a lock, with change notification.
//! - [`driver::Driver`]: a tokio loop that feeds the engine watch events and replies and performs
//!   its requests against the store, the runtime and the system clock.

pub mod clock;
pub mod docker;
pub mod driver;
pub mod runtime;
pub mod store;
pub mod testing;

pub use docker::{DockerError, DockerRuntime};
pub use driver::Driver;
pub use runtime::Runtime;
pub use store::SharedStore;
