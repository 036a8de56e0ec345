//! The runtime contract as an async trait: what a production driver calls.

use drydock_engine::WallTime;
use drydock_engine::logs::Channel;
use drydock_engine::runtime::{RuntimeError, RuntimeEvent, RuntimeRequest, RuntimeResult};
use futures_util::Stream;
use std::future::Future;
use std::pin::Pin;
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

    /// `execute`, telling `progress` each line of a pull's progress as soon as it is final (the
    /// reply still carries them all). Runtimes that cannot stream progress just execute.
    fn execute_reporting(
        &self,
        request: RuntimeRequest,
        _progress: ProgressSink,
    ) -> impl Future<Output = RuntimeResult> + Send {
        self.execute(request)
    }

    /// The output of container `id`, if the runtime can capture output: from its first line, or
    /// from the second of `since` (nanoseconds since the epoch) on; with `follow`, until the
    /// container stops or is removed (then the stream ends), else what there is now.
    fn capture(&self, _id: &str, _follow: bool, _since: Option<u128>) -> Option<CaptureStream> {
        None
    }
}

/// Where a pull's progress lines go as they come.
pub type ProgressSink = Box<dyn Fn(&str) + Send + Sync>;

/// A container's output, line by line.
pub type CaptureStream = Pin<Box<dyn Stream<Item = Result<CapturedLine, RuntimeError>> + Send>>;

/// One line a container printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedLine {
    pub channel: Channel,
    /// When the runtime stamped it.
    pub time: WallTime,
    /// The runtime's stamp in nanoseconds since the epoch, to tell lines apart across captures.
    pub stamp: u128,
    pub text: String,
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
