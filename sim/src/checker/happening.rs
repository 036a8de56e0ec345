//! What happens in a world, as checkers and probes see it: events the final state no longer shows.

use drydock_engine::api::{Object, ObjectKey};
use drydock_engine::runtime::{ContainerInfo, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{StoreRequest, StoreResult};
use drydock_engine::{OpId, Origin};

/// One thing that happened.
#[derive(Debug)]
pub enum Happening<'a> {
    /// A client created, changed or deleted `object` (the object as the store returned it).
    ClientWrote { object: &'a Object },
    /// Store request `id` of `process` is about to apply: the view shows the state before it.
    StoreApplying { process: usize, id: OpId, request: &'a StoreRequest },
    /// A store request of `process` applied (or failed) with `result`.
    StoreApplied { process: usize, request: &'a StoreRequest, result: &'a StoreResult },
    /// A process sent a runtime request, issued by a reconcile of `issuer`.
    RuntimeSent { process: usize, id: OpId, request: &'a RuntimeRequest, issuer: &'a ObjectKey },
    /// The runtime applied a request (or refused it) with `result`; `removed` is the container a
    /// remove took away, as it was.
    RuntimeApplied {
        process: usize,
        id: OpId,
        request: &'a RuntimeRequest,
        result: &'a RuntimeResult,
        removed: Option<&'a ContainerInfo>,
    },
    /// A runtime request will never be answered any more: its reply arrived, it was cancelled, or
    /// its process died.
    RuntimeSettled { process: usize, id: OpId },
    /// `process` gave up on runtime request `id` (its timeout) but lets it finish: the request may
    /// still apply, and its reply, when it comes, only tells the engine it has left the runtime
    /// (no controller hears of it).
    RuntimeDetached { process: usize, id: OpId },
    /// The runtime applied a request but its reply was lost (uncertain-create, uncertain-remove).
    ReplyLost { process: usize, id: OpId, request: &'a RuntimeRequest },
    /// An inspection of a just-created container was answered NotFound (notfound-after-create).
    InspectHidden { container_id: &'a str },
    /// Someone outside drydock removed `container` (`docker rm -f`).
    ExternallyRemoved { container: &'a ContainerInfo },
    /// A process handed out a request (`store`: a store request, else a runtime request), issued
    /// by the reconcile `origin` names.
    Requested { process: usize, id: OpId, origin: &'a Origin, store: bool },
    /// The reply to store or runtime request `id` was handed to `process` (it was up to take it).
    Answered { process: usize, id: OpId },
    /// `process` crashed: what it had in flight is no longer its business; a new life follows.
    Crashed { process: usize },
    /// Log reader `reader` (an index into `View::logs.readers`) read, and got `step`; the
    /// reader's state in the view includes what it got.
    LogRead { reader: usize, step: &'a drydock_engine::logs::Step },
    /// `process` took a full list of the store (a relist after its watch broke, or its start
    /// after a crash): `cache` is its cache right after the list, before it sent anything, and
    /// the store in the view is the state it listed.
    Relisted { process: usize, cache: &'a drydock_engine::cache::Cache },
}

/// The kinds of [`Happening`], for routing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HappeningKind {
    ClientWrote,
    StoreApplying,
    StoreApplied,
    RuntimeSent,
    RuntimeApplied,
    RuntimeSettled,
    RuntimeDetached,
    ReplyLost,
    InspectHidden,
    ExternallyRemoved,
    Requested,
    Answered,
    Crashed,
    LogRead,
    Relisted,
}

impl HappeningKind {
    pub const ALL: [HappeningKind; 15] = [
        HappeningKind::ClientWrote,
        HappeningKind::StoreApplying,
        HappeningKind::StoreApplied,
        HappeningKind::RuntimeSent,
        HappeningKind::RuntimeApplied,
        HappeningKind::RuntimeSettled,
        HappeningKind::RuntimeDetached,
        HappeningKind::ReplyLost,
        HappeningKind::InspectHidden,
        HappeningKind::ExternallyRemoved,
        HappeningKind::Requested,
        HappeningKind::Answered,
        HappeningKind::Crashed,
        HappeningKind::LogRead,
        HappeningKind::Relisted,
    ];
}

impl Happening<'_> {
    pub fn kind(&self) -> HappeningKind {
        match self {
            Happening::ClientWrote { .. } => HappeningKind::ClientWrote,
            Happening::StoreApplying { .. } => HappeningKind::StoreApplying,
            Happening::StoreApplied { .. } => HappeningKind::StoreApplied,
            Happening::RuntimeSent { .. } => HappeningKind::RuntimeSent,
            Happening::RuntimeApplied { .. } => HappeningKind::RuntimeApplied,
            Happening::RuntimeSettled { .. } => HappeningKind::RuntimeSettled,
            Happening::RuntimeDetached { .. } => HappeningKind::RuntimeDetached,
            Happening::ReplyLost { .. } => HappeningKind::ReplyLost,
            Happening::InspectHidden { .. } => HappeningKind::InspectHidden,
            Happening::ExternallyRemoved { .. } => HappeningKind::ExternallyRemoved,
            Happening::Requested { .. } => HappeningKind::Requested,
            Happening::Answered { .. } => HappeningKind::Answered,
            Happening::Crashed { .. } => HappeningKind::Crashed,
            Happening::LogRead { .. } => HappeningKind::LogRead,
            Happening::Relisted { .. } => HappeningKind::Relisted,
        }
    }

    /// The object a client wrote or a store write of an engine stored (not reads, not failures).
    pub fn written_object(&self) -> Option<&Object> {
        match self {
            Happening::ClientWrote { object } => Some(object),
            Happening::StoreApplied {
                request, result: Ok(drydock_engine::store::StoreReply::Object(object)), ..
            } if request.changes_world() => Some(object),
            _ => None,
        }
    }
}
