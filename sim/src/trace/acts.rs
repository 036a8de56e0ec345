//! What the world's actors do, as the trace records it: a client's act on the store, an outside
//! act on the runtime, the registry or the store (someone's `docker rm -f`, a push, a lease
//! held by a process that died), and a log reader's steps.

use super::encode::{Encode, Encoder, encode_map};
use super::key::Key;
use crate::workload::ExternalOp;
use drydock_engine::api::logical::LogicalMode;
use drydock_engine::logs::{Channel, Subject, UnknownSource};
use drydock_engine::runtime::{RuntimeError, short};
use drydock_engine::store::Propagation;
use std::fmt;

/// A client's act on the store (its result follows as a `StoreResult` record).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClientAct<'a> {
    Create {
        key: Key<'a>,
    },
    /// A `ContainerImage` of `image`.
    CreateImage {
        key: Key<'a>,
        image: &'a str,
    },
    /// A `LogicalContainer` in `mode`.
    CreateLogical {
        key: Key<'a>,
        mode: LogicalMode,
    },
    Delete {
        key: Key<'a>,
        propagation: Propagation,
    },
    /// Sets the object's `spec.stop`.
    Stop {
        key: Key<'a>,
    },
    /// Replaces the object's spec.
    Update {
        key: Key<'a>,
    },
    /// Merges `patch` into the object's spec.
    Patch {
        key: Key<'a>,
        patch: &'a serde_json::Value,
    },
}

/// How an outside command ended: done, or refused with the runtime's error code.
pub type Outcome = Result<(), &'static str>;

/// The outcome of a runtime call an outside actor made.
pub fn outcome<T>(result: &Result<T, RuntimeError>) -> Outcome {
    result.as_ref().map(|_| ()).map_err(RuntimeError::code)
}

/// Someone outside drydock acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExternalAct<'a> {
    /// `docker rm -f NAME`: the container is being removed, or the daemon refused.
    RemoveContainer {
        name: &'a str,
        outcome: Outcome,
    },
    /// `docker create --name NAME IMAGE`.
    CreateContainer {
        name: &'a str,
        image: &'a str,
        outcome: Outcome,
    },
    /// `docker rmi -f REFERENCE`.
    RemoveImage {
        reference: &'a str,
        outcome: Outcome,
    },
    /// A process that then dies writes pull lease `name` for `seconds` (its result follows as a
    /// `StoreResult` record).
    HoldLease {
        name: &'a str,
        seconds: u64,
    },
    /// The lease is held by a live `holder`: not taken.
    LeaseHeld {
        name: &'a str,
        holder: &'a str,
    },
    CreateNetwork {
        name: &'a str,
        outcome: Outcome,
    },
    RemoveNetwork {
        name: &'a str,
        outcome: Outcome,
    },
    CreateVolume {
        name: &'a str,
        outcome: Outcome,
    },
    RemoveVolume {
        name: &'a str,
        outcome: Outcome,
    },
    /// A build context of `files` files written to `dir` on the runtime's host.
    WriteContext {
        dir: &'a str,
        files: usize,
    },
    /// `docker rm -f NAME` of a stranger's own container.
    RemoveOwn {
        name: &'a str,
        outcome: Outcome,
    },
    /// A stranger's running container, attached to `network` and mounting `volume`.
    RunUsing {
        name: &'a str,
        network: Option<&'a str>,
        volume: Option<&'a str>,
        outcome: Outcome,
    },
    /// New content pushed under `reference`, with its `digest`.
    Push {
        reference: &'a str,
        digest: &'a str,
    },
    /// A container an earlier life of `creator` made for an object the store lost.
    Leftover {
        creator: &'a str,
        retained: bool,
        container: &'a str,
        outcome: Outcome,
    },
    /// The leftover was not planted: its namespace does not exist.
    LeftoverSkipped {
        namespace: &'a str,
        name: &'a str,
    },
}

/// What a log reader does in one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReaderStep<'a> {
    /// A client opens a log stream of `key` (reading `source`, following it or not).
    Opens { key: Key<'a>, source: &'a str, follow: bool },
    /// It gives up: its time is over.
    Closes,
    /// Its object is not there.
    NotFound { key: Key<'a> },
    /// Its object's kind has no such source.
    Refused { error: &'a UnknownSource },
    /// It read lines `first..=last` of `subject`'s `channel`, having missed `missed` before them.
    Lines { first: u64, last: u64, subject: &'a Subject, channel: Channel, missed: u64 },
    /// Nothing to read yet.
    Waiting,
    /// The stream ended.
    End,
}

impl ReaderStep<'_> {
    /// The step of reader `reader`, in words.
    pub(super) fn render(&self, reader: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReaderStep::Opens { key, source, follow } => {
                write!(f, "client reads {key} {source}{} (reader {reader})", if *follow { " -f" } else { "" })
            }
            ReaderStep::Closes => write!(f, "reader {reader} closes its stream"),
            ReaderStep::NotFound { key } => write!(f, "reader {reader}: {key} not found"),
            ReaderStep::Refused { error } => write!(f, "reader {reader}: {error}"),
            ReaderStep::Lines { first, last, subject, channel, missed } => {
                write!(f, "reader {reader}: lines {first}..={last} of {subject} {channel:?}")?;
                if *missed > 0 {
                    write!(f, " ({missed} missed)")?;
                }
                Ok(())
            }
            ReaderStep::Waiting => write!(f, "reader {reader}: waiting"),
            ReaderStep::End => write!(f, "reader {reader}: end of stream"),
        }
    }
}

impl fmt::Display for ClientAct<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientAct::Create { key } => write!(f, "create {key}"),
            ClientAct::CreateImage { key, image } => write!(f, "create {key} {image}"),
            ClientAct::CreateLogical { key, mode } => write!(f, "create {key} mode={mode:?}"),
            ClientAct::Delete { key, propagation } => {
                let policy = match propagation {
                    Propagation::Background => "",
                    Propagation::Foreground => " (foreground)",
                    Propagation::Orphan => " (orphan)",
                };
                write!(f, "delete {key}{policy}")
            }
            ClientAct::Stop { key } => write!(f, "stop {key}"),
            ClientAct::Update { key } => write!(f, "update {key}"),
            ClientAct::Patch { key, patch } => write!(f, "patch {key} {patch}"),
        }
    }
}

/// `ok`, or `refused (Conflict)`.
struct Plain(Outcome);

impl fmt::Display for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Ok(()) => f.write_str("ok"),
            Err(code) => write!(f, "refused ({code})"),
        }
    }
}

/// `done` if it went through, else `refused`: the words of one command.
fn either(outcome: Outcome, done: &'static str, refused: &'static str) -> &'static str {
    if outcome.is_ok() { done } else { refused }
}

impl fmt::Display for ExternalAct<'_> {
    /// The whole act, from `external`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExternalAct::RemoveContainer { name, outcome } => {
                write!(f, "external docker rm -f {name} -> {}", either(outcome, "removing", "refused"))
            }
            ExternalAct::CreateContainer { name, image, outcome } => {
                write!(f, "external docker create --name {name} {image} -> {}", either(outcome, "created", "failed"))
            }
            ExternalAct::RemoveImage { reference, outcome } => {
                write!(f, "external docker rmi -f {reference} -> {}", either(outcome, "removed", "refused"))
            }
            ExternalAct::HoldLease { name, seconds } => write!(f, "external hold lease {name} for {seconds}s"),
            ExternalAct::LeaseHeld { name, holder } => {
                write!(f, "external hold lease {name}: held by {holder}, not taken")
            }
            ExternalAct::CreateNetwork { name, outcome } => {
                write!(f, "external docker network create {name} -> {}", Plain(outcome))
            }
            ExternalAct::RemoveNetwork { name, outcome } => {
                write!(f, "external docker network rm {name} -> {}", Plain(outcome))
            }
            ExternalAct::CreateVolume { name, outcome } => {
                write!(f, "external docker volume create {name} -> {}", Plain(outcome))
            }
            ExternalAct::RemoveVolume { name, outcome } => {
                write!(f, "external docker volume rm {name} -> {}", Plain(outcome))
            }
            ExternalAct::WriteContext { dir, files } => {
                write!(f, "external: build context {dir} written ({files} files)")
            }
            ExternalAct::RemoveOwn { name, outcome } => {
                write!(f, "external docker rm -f {name} (its own) -> {}", Plain(outcome))
            }
            ExternalAct::RunUsing { name, network, volume, outcome } => write!(
                f,
                "external docker run --name {name} network={} volume={} -> {}",
                network.unwrap_or("-"),
                volume.unwrap_or("-"),
                Plain(outcome)
            ),
            ExternalAct::Push { reference, digest } => {
                write!(f, "external push {reference} -> {}", short(digest.trim_start_matches("sha256:")))
            }
            ExternalAct::Leftover { creator, retained, container, outcome } => write!(
                f,
                "external leftover of {creator}{} {container} -> {}",
                if retained { " (retained)" } else { "" },
                either(outcome, "created", "failed")
            ),
            ExternalAct::LeftoverSkipped { namespace, name } => {
                write!(f, "external leftover {namespace}-{name} skipped: no namespace {namespace}")
            }
        }
    }
}

/// The tags of client acts, outside acts and their outcomes, readers' steps, and the
/// workload's outside acts: explicit numbers, never changed
/// (renumbering one changes every golden digest; a new kind takes a new number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
enum Tag {
    ClientCreate = 192,
    ClientCreateImage = 193,
    ClientCreateLogical = 194,
    ClientDelete = 195,
    ClientStop = 196,
    ClientUpdate = 197,
    ClientPatch = 198,
    ExternalRemoveContainer = 208,
    ExternalCreateContainer = 209,
    ExternalRemoveImage = 210,
    ExternalHoldLease = 211,
    ExternalLeaseHeld = 212,
    ExternalCreateNetwork = 213,
    ExternalRemoveNetwork = 214,
    ExternalCreateVolume = 215,
    ExternalRemoveVolume = 216,
    ExternalWriteContext = 217,
    ExternalRemoveOwn = 218,
    ExternalRunUsing = 219,
    ExternalPush = 220,
    ExternalLeftover = 221,
    ExternalLeftoverSkipped = 222,
    OutcomeOk = 224,
    OutcomeRefused = 225,
    ReaderOpens = 232,
    ReaderCloses = 233,
    ReaderNotFound = 234,
    ReaderRefused = 235,
    ReaderLines = 236,
    ReaderWaiting = 237,
    ReaderEnd = 238,
    OpRemoveContainer = 248,
    OpCreateContainer = 249,
    OpRemoveImage = 250,
    OpPush = 251,
    OpLeftover = 252,
    OpHoldLease = 253,
    OpCreateNetwork = 254,
    OpRemoveNetwork = 255,
    OpWriteContext = 256,
    OpRemoveOwn = 257,
    OpCreateVolume = 258,
    OpRemoveVolume = 259,
    OpRunUsing = 260,
}

impl From<Tag> for u16 {
    fn from(tag: Tag) -> u16 {
        tag as u16
    }
}

impl Encode for ClientAct<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            ClientAct::Create { key } => keyed(out, Tag::ClientCreate, key),
            ClientAct::CreateImage { key, image } => {
                keyed(out, Tag::ClientCreateImage, key);
                out.str(image);
            }
            ClientAct::CreateLogical { key, mode } => {
                keyed(out, Tag::ClientCreateLogical, key);
                mode.encode(out);
            }
            ClientAct::Delete { key, propagation } => {
                keyed(out, Tag::ClientDelete, key);
                propagation.encode(out);
            }
            ClientAct::Stop { key } => keyed(out, Tag::ClientStop, key),
            ClientAct::Update { key } => keyed(out, Tag::ClientUpdate, key),
            ClientAct::Patch { key, patch } => {
                keyed(out, Tag::ClientPatch, key);
                patch.encode(out);
            }
        }
    }
}

/// A tag and the object it is about.
fn keyed(out: &mut Encoder, tag: Tag, key: &Key<'_>) {
    out.tag(tag);
    key.encode(out);
}

/// A tag and the one name it is about.
fn named(out: &mut Encoder, tag: Tag, name: &str) {
    out.tag(tag);
    out.str(name);
}

impl Encode for Outcome {
    fn encode(&self, out: &mut Encoder) {
        match self {
            Ok(()) => out.tag(Tag::OutcomeOk),
            Err(code) => named(out, Tag::OutcomeRefused, code),
        }
    }
}

impl Encode for ExternalAct<'_> {
    fn encode(&self, out: &mut Encoder) {
        match *self {
            ExternalAct::RemoveContainer { name, outcome } => {
                named(out, Tag::ExternalRemoveContainer, name);
                outcome.encode(out);
            }
            ExternalAct::CreateContainer { name, image, outcome } => {
                named(out, Tag::ExternalCreateContainer, name);
                out.str(image);
                outcome.encode(out);
            }
            ExternalAct::RemoveImage { reference, outcome } => {
                named(out, Tag::ExternalRemoveImage, reference);
                outcome.encode(out);
            }
            ExternalAct::HoldLease { name, seconds } => {
                named(out, Tag::ExternalHoldLease, name);
                out.u64(seconds);
            }
            ExternalAct::LeaseHeld { name, holder } => {
                named(out, Tag::ExternalLeaseHeld, name);
                out.str(holder);
            }
            ExternalAct::CreateNetwork { name, outcome } => {
                named(out, Tag::ExternalCreateNetwork, name);
                outcome.encode(out);
            }
            ExternalAct::RemoveNetwork { name, outcome } => {
                named(out, Tag::ExternalRemoveNetwork, name);
                outcome.encode(out);
            }
            ExternalAct::CreateVolume { name, outcome } => {
                named(out, Tag::ExternalCreateVolume, name);
                outcome.encode(out);
            }
            ExternalAct::RemoveVolume { name, outcome } => {
                named(out, Tag::ExternalRemoveVolume, name);
                outcome.encode(out);
            }
            ExternalAct::WriteContext { dir, files } => {
                named(out, Tag::ExternalWriteContext, dir);
                out.usize(files);
            }
            ExternalAct::RemoveOwn { name, outcome } => {
                named(out, Tag::ExternalRemoveOwn, name);
                outcome.encode(out);
            }
            ExternalAct::RunUsing { name, network, volume, outcome } => {
                named(out, Tag::ExternalRunUsing, name);
                out.opt_str(network);
                out.opt_str(volume);
                outcome.encode(out);
            }
            ExternalAct::Push { reference, digest } => {
                named(out, Tag::ExternalPush, reference);
                out.str(digest);
            }
            ExternalAct::Leftover { creator, retained, container, outcome } => {
                named(out, Tag::ExternalLeftover, creator);
                out.bool(retained);
                out.str(container);
                outcome.encode(out);
            }
            ExternalAct::LeftoverSkipped { namespace, name } => {
                named(out, Tag::ExternalLeftoverSkipped, namespace);
                out.str(name);
            }
        }
    }
}

impl Encode for ReaderStep<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            ReaderStep::Opens { key, source, follow } => {
                keyed(out, Tag::ReaderOpens, key);
                out.str(source);
                out.bool(*follow);
            }
            ReaderStep::Closes => out.tag(Tag::ReaderCloses),
            ReaderStep::NotFound { key } => keyed(out, Tag::ReaderNotFound, key),
            ReaderStep::Refused { error } => {
                out.tag(Tag::ReaderRefused);
                error.encode(out);
            }
            ReaderStep::Lines { first, last, subject, channel, missed } => {
                out.tag(Tag::ReaderLines);
                out.u64(*first);
                out.u64(*last);
                subject.encode(out);
                channel.encode(out);
                out.u64(*missed);
            }
            ReaderStep::Waiting => out.tag(Tag::ReaderWaiting),
            ReaderStep::End => out.tag(Tag::ReaderEnd),
        }
    }
}

impl Encode for ExternalOp {
    /// Every field of the workload's act.
    fn encode(&self, out: &mut Encoder) {
        match self {
            ExternalOp::RemoveContainer { name } => named(out, Tag::OpRemoveContainer, name),
            ExternalOp::CreateContainer { name, image } => {
                named(out, Tag::OpCreateContainer, name);
                out.str(image);
            }
            ExternalOp::RemoveImage { reference } => named(out, Tag::OpRemoveImage, reference),
            ExternalOp::Push { reference } => named(out, Tag::OpPush, reference),
            ExternalOp::Leftover { namespace, name, image, creator, retained } => {
                named(out, Tag::OpLeftover, namespace);
                out.str(name);
                out.str(image);
                out.usize(*creator);
                out.bool(*retained);
            }
            ExternalOp::HoldLease { reference, seconds } => {
                named(out, Tag::OpHoldLease, reference);
                out.u64(*seconds);
            }
            ExternalOp::CreateNetwork { name } => named(out, Tag::OpCreateNetwork, name),
            ExternalOp::RemoveNetwork { name } => named(out, Tag::OpRemoveNetwork, name),
            ExternalOp::WriteContext { dir, files } => {
                named(out, Tag::OpWriteContext, dir);
                encode_map(files, out);
            }
            ExternalOp::RemoveOwn { name } => named(out, Tag::OpRemoveOwn, name),
            ExternalOp::CreateVolume { name } => named(out, Tag::OpCreateVolume, name),
            ExternalOp::RemoveVolume { name } => named(out, Tag::OpRemoveVolume, name),
            ExternalOp::RunUsing { name, seconds, network, volume } => {
                named(out, Tag::OpRunUsing, name);
                out.u64(*seconds);
                out.opt_str(network.as_deref());
                out.opt_str(volume.as_deref());
            }
        }
    }
}
