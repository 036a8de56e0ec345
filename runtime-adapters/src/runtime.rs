//! The runtime contract as an async trait: what a production driver calls.

use drydock_engine::runtime::{RuntimeRequest, RuntimeResult};
use std::future::Future;

/// A container runtime that carries out the engine's requests.
///
/// *Guarantees* expected of an implementation: the error kinds of `drydock_engine::runtime`
/// (`NotFound`, `Conflict`, `Uncertain` when the request may have been applied, `Transient`
/// otherwise), and Docker's observable semantics as pinned by the conformance suite.
pub trait Runtime: Send + Sync + 'static {
    fn execute(&self, request: RuntimeRequest) -> impl Future<Output = RuntimeResult> + Send;
}
