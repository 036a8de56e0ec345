//! What the world's actors do, as the trace records it: a client's act on the store, an outside
//! act on the runtime, the registry or the store (someone's `docker rm -f`, a push, a lease
//! held by a process that died), and a log reader's steps.

use super::record::Key;
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
