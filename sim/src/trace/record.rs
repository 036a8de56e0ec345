//! The records an event's trace is made of: each says what happened (a request met the store,
//! a reply came back, a fault fired with its magnitudes, a process restarted...) in typed fields,
//! not in words. An event's trace is its time and the sequence of records its components wrote.
//!
//! Their `Display` is the trace's text: an event's line is its time, then its records rendered
//! one after another (a record that continues the line, such as a result or a fault, carries its
//! own leading space). Their [`Encode`] is what the digest hashes; it never reads the text.

use super::acts::{ClientAct, ExternalAct, ReaderStep};
use super::encode::{Encode, Encoder};
use super::key::Key;
use super::runtime::{RuntimeOp, RuntimeOutcome};
use super::store::{StoreOp, StoreOutcome};
use crate::workload::ExternalOp;
use drydock_engine::runtime::{EventAction, short};
use drydock_engine::store::EventType;
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, FaultPlan};
use std::fmt;
use std::time::Duration;

/// One thing that happened during an event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record<'a> {
    /// A store request of `process` met the store (its result follows as a
    /// [`Record::StoreResult`], unless a fault came first).
    StoreApply { process: usize, id: OpId, op: StoreOp<'a> },
    /// What the store answered a request (or a client).
    StoreResult(StoreOutcome),
    /// The store's reply to request `id` reached `process`.
    StoreReply { process: usize, id: OpId },
    /// A runtime request of `process` met the runtime daemon.
    RuntimeApply { process: usize, id: OpId, op: RuntimeOp<'a> },
    /// A runtime request reached the daemon after its process cancelled it: it never applies.
    RuntimeCancelled { process: usize, id: OpId, op: RuntimeOp<'a> },
    /// `process` gave up on runtime request `id` but left it to finish inside the daemon (a
    /// change): its reply still comes back.
    RuntimeDetached { process: usize, id: OpId },
    /// What the runtime did with a request.
    RuntimeResult(RuntimeOutcome<'a>),
    /// The runtime's reply to request `id` reached `process`.
    RuntimeReply { process: usize, id: OpId },
    /// A runtime event about `container` reached `process`.
    RuntimeEvent { process: usize, action: &'a EventAction, container: &'a str },
    /// A runtime event queued for `process` was lost with its stream.
    RuntimeEventLost { process: usize },
    /// `process`'s runtime event stream is back after a daemon restart.
    RuntimeResync { process: usize },
    /// A runtime resync queued for `process` was lost with its stream.
    RuntimeResyncLost { process: usize },
    /// A removal in progress completed (`done`), or found the container already gone.
    RemovalDone { container: &'a str, done: bool },
    /// A network create in progress completed: the network exists.
    NetworkCreateDone { network: &'a str },
    /// The runtime's clock reached the end of main processes that end by themselves.
    RuntimeClock { ended: usize },
    /// A store watch event reached `process`.
    Deliver { process: usize, event: EventType, key: Key<'a>, resource_version: u64 },
    /// A store watch event queued for `process` was lost with its stream.
    DeliveryLost { process: usize, key: Key<'a> },
    /// A store watch event for `process` was merged into the next one (`coalesced-watch`).
    Coalesced { process: usize, key: Key<'a>, resource_version: u64 },
    /// `process` woke for its timers.
    Wake { process: usize },
    /// A crashed `process` is back, in its `life`th incarnation, and lists the store.
    Restart { process: usize, life: u32 },
    /// `process`, whose watch broke with Gone, lists the store and watches again.
    Relist { process: usize },
    /// A relist of `process` was dropped: the process restarted meanwhile.
    RelistDropped { process: usize },
    /// The list a process took: how many objects, at which store version.
    Listed { objects: usize, resource_version: u64 },
    /// A client (the workload) acted on the store.
    Client(ClientAct<'a>),
    /// Someone outside drydock acted on the runtime, the registry or the store.
    External(ExternalAct<'a>),
    /// An outside act that is a fault did not happen: its fault is off.
    ExternalSkipped { op: &'a ExternalOp, fault: FaultKind },
    /// Log reader `reader` read, waited, or gave up.
    Reader { reader: usize, step: ReaderStep<'a> },
    /// A fault fired, with what it did.
    Fault(Fault<'a>),
    /// The faults healed; `faults` is the plan they had.
    Heal { faults: &'a FaultPlan },
    /// The liveness judge looked at the world.
    Judge,
}

/// A fault that fired, with its magnitudes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault<'a> {
    /// `store-conflict`: a competing writer got there first; the write did not apply.
    StoreConflict,
    /// `uncertain-store-write`: the write applied and its reply was lost.
    StoreReplyLost,
    /// `slow-runtime`: runtime request `id` takes `takes` to reach the daemon.
    SlowRuntime { id: OpId, takes: Duration },
    /// The daemon is restarting (after `runtime-restart`): the request did not apply.
    DaemonRestarting,
    /// `hung-runtime`: the request never applies and is never answered.
    HungUnapplied,
    /// `hung-runtime`: the request applied and is never answered.
    HungApplied,
    /// `transient-runtime-error`: a 500; the request did not apply.
    TransientRuntimeError,
    /// `notfound-after-create`: an inspection did not see a fresh container.
    NotFoundAfterCreate,
    /// `build-interrupted`: the build's stream broke; `applied` says whether the build had
    /// finished (and whether it succeeded), `None` that it was broken off halfway.
    BuildInterrupted { applied: Option<bool> },
    /// `copy-refused`: the disk filled up after `written` of `files` files.
    CopyRefused { written: usize, files: usize },
    /// `uncertain-create`: the create applied and its reply was lost.
    UncertainCreate,
    /// With a lost create reply, `notfound-after-create`: the create completes later (its name
    /// held, the container not listed yet).
    CreateCompletesLater,
    /// `uncertain-remove`: the removal applied and its reply was lost.
    UncertainRemove,
    /// `disrupt-while-uncertain`: an outside act on an uncertain create, scheduled for `at`.
    DisruptScheduled { disruption: Disruption<'a>, at: MonoTime },
    /// `disrupt-while-uncertain`: the scheduled act happens now.
    Disrupts,
    /// `runtime-restart`: the daemon restarts, `stopped` containers stop, it is back at `back_at`.
    RuntimeRestart { stopped: usize, back_at: MonoTime },
    /// `engine-crash` or `crash-between-writes` (`kind`): `process` crashed; it restarts at
    /// `restarts_at`.
    Crash { kind: FaultKind, process: usize, restarts_at: MonoTime },
    /// `watch-gone`: `process`'s store watch answered 410 Gone.
    WatchGone { process: usize },
    /// `reader-stall`: log reader `reader` stops reading for `stall`.
    ReaderStall { reader: usize, stall: Duration },
    /// `runtime-overload`: the daemon stalls until `until`, with `queued` requests inside it.
    RuntimeStalls { until: MonoTime, queued: u32 },
    /// `runtime-overload`: the daemon is stalled; the request waits until `until`.
    RuntimeStalled { until: MonoTime },
}

/// What `disrupt-while-uncertain` does to a create whose outcome is unknown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Disruption<'a> {
    /// `docker rm -f` of the container, by name.
    RemoveContainer(&'a str),
    /// `docker rmi -f` of the image, as the create named it.
    RemoveImage(&'a str),
    /// The runtime daemon restarts.
    RestartDaemon,
}

impl fmt::Display for Record<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Record::StoreApply { process, id, op } => write!(f, "p{process} store {id} {op}"),
            Record::StoreResult(outcome) => write!(f, " -> {outcome}"),
            Record::StoreReply { process, id } => write!(f, "p{process} store-reply {id}"),
            Record::RuntimeApply { process, id, op } => write!(f, "p{process} runtime {id} {op}"),
            Record::RuntimeCancelled { process, id, op } => {
                write!(f, "p{process} runtime {id} cancelled before it applied: {op}")
            }
            Record::RuntimeDetached { process, id } => {
                write!(f, "p{process} runtime {id} given up on, left to finish inside the daemon")
            }
            Record::RuntimeResult(outcome) => write!(f, " -> {outcome}"),
            Record::RuntimeReply { process, id } => write!(f, "p{process} runtime-reply {id}"),
            Record::RuntimeEvent { process, action, container } => {
                write!(f, "p{process} runtime-event {action:?} {}", short(container))
            }
            Record::RuntimeEventLost { process } => write!(f, "p{process} runtime event lost with its stream"),
            Record::RuntimeResync { process } => write!(f, "p{process} runtime-resync"),
            Record::RuntimeResyncLost { process } => write!(f, "p{process} runtime resync lost with its stream"),
            Record::RemovalDone { container, done } => {
                write!(f, "runtime removal of {} {}", short(container), if *done { "done" } else { "was over" })
            }
            Record::NetworkCreateDone { network } => write!(f, "runtime network {} created", short(network)),
            Record::RuntimeClock { ended } => write!(f, "runtime clock: {ended} main processes ended by themselves"),
            Record::Deliver { process, event, key, resource_version } => {
                write!(f, "p{process} deliver {event:?} {key} rv={resource_version}")
            }
            Record::DeliveryLost { process, key } => write!(f, "p{process} delivery lost with its watch stream: {key}"),
            Record::Coalesced { process, key, resource_version } => {
                write!(f, "p{process} [fault coalesced-watch] {key} rv={resource_version} merged into the next event")
            }
            Record::Wake { process } => write!(f, "p{process} wake"),
            Record::Restart { process, life } => write!(f, "p{process} restarts (life {life}) and lists the store"),
            Record::Relist { process } => write!(f, "p{process} relists after Gone"),
            Record::RelistDropped { process } => {
                write!(f, "p{process} relist dropped (the process restarted meanwhile)")
            }
            Record::Listed { objects, resource_version } => write!(f, " ({objects} objects at rv={resource_version})"),
            Record::Client(act) => write!(f, "client {act}"),
            Record::External(act) => fmt::Display::fmt(act, f),
            Record::ExternalSkipped { op, fault } => write!(f, "external {op:?} skipped: fault {fault} is off"),
            Record::Reader { reader, step } => step.render(*reader, f),
            Record::Fault(fault) => fmt::Display::fmt(fault, f),
            Record::Heal { faults } => write!(f, "heal faults={}", faults.describe()),
            Record::Judge => f.write_str("liveness judge"),
        }
    }
}

impl fmt::Display for Fault<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::StoreConflict => f.write_str(" [fault store-conflict]"),
            Fault::StoreReplyLost => f.write_str(" [fault uncertain-store-write: reply lost]"),
            Fault::SlowRuntime { id, takes } => write!(f, " [fault slow-runtime: {id} takes {takes:?}]"),
            Fault::DaemonRestarting => f.write_str(" [daemon restarting: not applied]"),
            Fault::HungUnapplied => f.write_str(" [fault hung-runtime: never applied, never answered]"),
            Fault::HungApplied => f.write_str(" [fault hung-runtime: applied, never answered]"),
            Fault::TransientRuntimeError => f.write_str(" [fault transient-runtime-error: not applied]"),
            Fault::NotFoundAfterCreate => f.write_str(" [fault notfound-after-create]"),
            Fault::BuildInterrupted { applied: Some(ok) } => {
                write!(f, " [fault build-interrupted: applied ({ok}), stream broken]")
            }
            Fault::BuildInterrupted { applied: None } => {
                f.write_str(" [fault build-interrupted: broken off halfway, nothing tagged]")
            }
            Fault::CopyRefused { written, files } => {
                write!(f, " [fault copy-refused: {written} of {files} file(s) written]")
            }
            Fault::UncertainCreate => f.write_str(" [fault uncertain-create: reply lost]"),
            Fault::CreateCompletesLater => f.write_str(" [the create completes later: name held, container unlisted]"),
            Fault::UncertainRemove => f.write_str(" [fault uncertain-remove: reply lost]"),
            Fault::DisruptScheduled { disruption, at } => {
                write!(f, " [fault disrupt-while-uncertain: {disruption} at {at}]")
            }
            Fault::Disrupts => f.write_str("[fault disrupt-while-uncertain] "),
            Fault::RuntimeRestart { stopped, back_at } => {
                write!(f, "[fault runtime-restart: {stopped} containers stopped, daemon back at {back_at}] ")
            }
            Fault::Crash { kind, process, restarts_at } => {
                write!(f, " [fault {kind}: p{process} crashed, restarts at {restarts_at}]")
            }
            Fault::WatchGone { process } => write!(f, " [fault watch-gone: p{process}'s watch answered 410 Gone]"),
            Fault::ReaderStall { reader, stall } => {
                write!(f, "[fault reader-stall] reader {reader} stops reading for {stall:?}")
            }
            Fault::RuntimeStalls { until, queued } => {
                write!(f, " [fault runtime-overload: the daemon stalls until {until}, {queued} request(s) inside]")
            }
            Fault::RuntimeStalled { until } => write!(f, "[runtime stalled: waits until {until}] "),
        }
    }
}

impl fmt::Display for Disruption<'_> {
    /// As the world's disruption prints in Rust's debug form: `RemoveContainer("web")`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disruption::RemoveContainer(name) => write!(f, "RemoveContainer({name:?})"),
            Disruption::RemoveImage(reference) => write!(f, "RemoveImage({reference:?})"),
            Disruption::RestartDaemon => f.write_str("RestartDaemon"),
        }
    }
}

/// The tags of records, of faults and of disruptions, and the end of an event: explicit numbers, never changed
/// (renumbering one changes every golden digest; a new kind takes a new number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub(super) enum Tag {
    /// Ends an event's records.
    EventEnd = 1,
    StoreApply = 16,
    StoreResult = 17,
    StoreReply = 18,
    RuntimeApply = 19,
    RuntimeCancelled = 20,
    RuntimeResult = 21,
    RuntimeReply = 22,
    RuntimeEvent = 23,
    RuntimeEventLost = 24,
    RuntimeResync = 25,
    RuntimeResyncLost = 26,
    RemovalDone = 27,
    RuntimeClock = 28,
    Deliver = 29,
    DeliveryLost = 30,
    Coalesced = 31,
    Wake = 32,
    Restart = 33,
    Relist = 34,
    RelistDropped = 35,
    Listed = 36,
    Client = 37,
    External = 38,
    ExternalSkipped = 39,
    Reader = 40,
    Fault = 41,
    Heal = 42,
    Judge = 43,
    NetworkCreateDone = 44,
    RuntimeDetached = 45,
    StoreConflict = 64,
    StoreReplyLost = 65,
    SlowRuntime = 66,
    DaemonRestarting = 67,
    HungUnapplied = 68,
    HungApplied = 69,
    TransientRuntimeError = 70,
    NotFoundAfterCreate = 71,
    BuildInterrupted = 72,
    CopyRefused = 73,
    UncertainCreate = 74,
    CreateCompletesLater = 75,
    UncertainRemove = 76,
    DisruptScheduled = 77,
    Disrupts = 78,
    RuntimeRestart = 79,
    Crash = 80,
    WatchGone = 81,
    ReaderStall = 82,
    RuntimeStalls = 83,
    RuntimeStalled = 84,
    DisruptRemoveContainer = 96,
    DisruptRemoveImage = 97,
    DisruptRestartDaemon = 98,
}

impl From<Tag> for u16 {
    fn from(tag: Tag) -> u16 {
        tag as u16
    }
}

impl Encode for Record<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            Record::StoreApply { process, id, op } => {
                out.tag(Tag::StoreApply);
                out.usize(*process);
                id.encode(out);
                op.encode(out);
            }
            Record::StoreResult(outcome) => {
                out.tag(Tag::StoreResult);
                outcome.encode(out);
            }
            Record::StoreReply { process, id } => {
                out.tag(Tag::StoreReply);
                out.usize(*process);
                id.encode(out);
            }
            Record::RuntimeApply { process, id, op } => {
                out.tag(Tag::RuntimeApply);
                out.usize(*process);
                id.encode(out);
                op.encode(out);
            }
            Record::RuntimeCancelled { process, id, op } => {
                out.tag(Tag::RuntimeCancelled);
                out.usize(*process);
                id.encode(out);
                op.encode(out);
            }
            Record::RuntimeDetached { process, id } => {
                out.tag(Tag::RuntimeDetached);
                out.usize(*process);
                id.encode(out);
            }
            Record::RuntimeResult(outcome) => {
                out.tag(Tag::RuntimeResult);
                outcome.encode(out);
            }
            Record::RuntimeReply { process, id } => {
                out.tag(Tag::RuntimeReply);
                out.usize(*process);
                id.encode(out);
            }
            Record::RuntimeEvent { process, action, container } => {
                out.tag(Tag::RuntimeEvent);
                out.usize(*process);
                action.encode(out);
                out.str(container);
            }
            Record::RuntimeEventLost { process } => process_only(out, Tag::RuntimeEventLost, *process),
            Record::RuntimeResync { process } => process_only(out, Tag::RuntimeResync, *process),
            Record::RuntimeResyncLost { process } => process_only(out, Tag::RuntimeResyncLost, *process),
            Record::RemovalDone { container, done } => {
                out.tag(Tag::RemovalDone);
                out.str(container);
                out.bool(*done);
            }
            Record::NetworkCreateDone { network } => {
                out.tag(Tag::NetworkCreateDone);
                out.str(network);
            }
            Record::RuntimeClock { ended } => {
                out.tag(Tag::RuntimeClock);
                out.usize(*ended);
            }
            Record::Deliver { process, event, key, resource_version } => {
                out.tag(Tag::Deliver);
                out.usize(*process);
                event.encode(out);
                key.encode(out);
                out.u64(*resource_version);
            }
            Record::DeliveryLost { process, key } => {
                out.tag(Tag::DeliveryLost);
                out.usize(*process);
                key.encode(out);
            }
            Record::Coalesced { process, key, resource_version } => {
                out.tag(Tag::Coalesced);
                out.usize(*process);
                key.encode(out);
                out.u64(*resource_version);
            }
            Record::Wake { process } => process_only(out, Tag::Wake, *process),
            Record::Restart { process, life } => {
                out.tag(Tag::Restart);
                out.usize(*process);
                out.u64(u64::from(*life));
            }
            Record::Relist { process } => process_only(out, Tag::Relist, *process),
            Record::RelistDropped { process } => process_only(out, Tag::RelistDropped, *process),
            Record::Listed { objects, resource_version } => {
                out.tag(Tag::Listed);
                out.usize(*objects);
                out.u64(*resource_version);
            }
            Record::Client(act) => {
                out.tag(Tag::Client);
                act.encode(out);
            }
            Record::External(act) => {
                out.tag(Tag::External);
                act.encode(out);
            }
            Record::ExternalSkipped { op, fault } => {
                out.tag(Tag::ExternalSkipped);
                op.encode(out);
                fault.encode(out);
            }
            Record::Reader { reader, step } => {
                out.tag(Tag::Reader);
                out.usize(*reader);
                step.encode(out);
            }
            Record::Fault(fault) => {
                out.tag(Tag::Fault);
                fault.encode(out);
            }
            Record::Heal { faults } => {
                out.tag(Tag::Heal);
                faults.encode(out);
            }
            Record::Judge => out.tag(Tag::Judge),
        }
    }
}

/// A record that names only its process.
fn process_only(out: &mut Encoder, tag: Tag, process: usize) {
    out.tag(tag);
    out.usize(process);
}

impl Encode for Fault<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            Fault::StoreConflict => out.tag(Tag::StoreConflict),
            Fault::StoreReplyLost => out.tag(Tag::StoreReplyLost),
            Fault::SlowRuntime { id, takes } => {
                out.tag(Tag::SlowRuntime);
                id.encode(out);
                takes.encode(out);
            }
            Fault::DaemonRestarting => out.tag(Tag::DaemonRestarting),
            Fault::HungUnapplied => out.tag(Tag::HungUnapplied),
            Fault::HungApplied => out.tag(Tag::HungApplied),
            Fault::TransientRuntimeError => out.tag(Tag::TransientRuntimeError),
            Fault::NotFoundAfterCreate => out.tag(Tag::NotFoundAfterCreate),
            Fault::BuildInterrupted { applied } => {
                out.tag(Tag::BuildInterrupted);
                out.option(*applied, Encoder::bool);
            }
            Fault::CopyRefused { written, files } => {
                out.tag(Tag::CopyRefused);
                out.usize(*written);
                out.usize(*files);
            }
            Fault::UncertainCreate => out.tag(Tag::UncertainCreate),
            Fault::CreateCompletesLater => out.tag(Tag::CreateCompletesLater),
            Fault::UncertainRemove => out.tag(Tag::UncertainRemove),
            Fault::DisruptScheduled { disruption, at } => {
                out.tag(Tag::DisruptScheduled);
                disruption.encode(out);
                at.encode(out);
            }
            Fault::Disrupts => out.tag(Tag::Disrupts),
            Fault::RuntimeRestart { stopped, back_at } => {
                out.tag(Tag::RuntimeRestart);
                out.usize(*stopped);
                back_at.encode(out);
            }
            Fault::Crash { kind, process, restarts_at } => {
                out.tag(Tag::Crash);
                kind.encode(out);
                out.usize(*process);
                restarts_at.encode(out);
            }
            Fault::WatchGone { process } => process_only(out, Tag::WatchGone, *process),
            Fault::ReaderStall { reader, stall } => {
                out.tag(Tag::ReaderStall);
                out.usize(*reader);
                stall.encode(out);
            }
            Fault::RuntimeStalls { until, queued } => {
                out.tag(Tag::RuntimeStalls);
                until.encode(out);
                out.u64(u64::from(*queued));
            }
            Fault::RuntimeStalled { until } => {
                out.tag(Tag::RuntimeStalled);
                until.encode(out);
            }
        }
    }
}

impl Encode for Disruption<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            Disruption::RemoveContainer(name) => {
                out.tag(Tag::DisruptRemoveContainer);
                out.str(name);
            }
            Disruption::RemoveImage(reference) => {
                out.tag(Tag::DisruptRemoveImage);
                out.str(reference);
            }
            Disruption::RestartDaemon => out.tag(Tag::DisruptRestartDaemon),
        }
    }
}
