//! The runtime contract as an async trait: what a production driver calls.

use drydock_engine::runtime::{RuntimeEvent, RuntimeRequest, RuntimeResult};
use std::future::Future;
use tokio::sync::mpsc::UnboundedReceiver;

/// A container runtime that carries out the engine's requests.
///
/// *Guarantees* expected of an implementation: the error kinds of `drydock_engine::runtime`
/// (`NotFound`, `Conflict`, `Uncertain` when the request may have been applied, `Transient`
/// otherwise), and Docker's observable semantics as pinned by the conformance suite.
pub trait Runtime: Send + Sync + 'static {
    fn execute(&self, request: RuntimeRequest) -> impl Future<Output = RuntimeResult> + Send;

    /// A stream of container events, if the runtime has one. Events are hints that let the
    /// engine notice changes (a container exiting by itself) before its next monitoring pass.
    fn events(&self) -> Option<UnboundedReceiver<RuntimeNotice>> {
        None
    }
}

/// What a runtime's event stream carries.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeNotice {
    /// Something happened to a container.
    Event(RuntimeEvent),
    /// The stream broke and is connected again: events in between may be missing (a daemon
    /// restart stops containers without a `die` reaching anyone), so the engine looks again.
    Resynced,
}
