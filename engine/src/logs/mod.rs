//! Log sources: what an object's `/log` endpoint serves, where its lines are kept, and when a
//! follower of it ends.
//!
//! Three pieces, all sans-IO, shared by the simulator and the daemon:
//! - the [`LogHub`] keeps every stream: a runtime container's output (`stdout`, `stderr`, by
//!   container id), an object's pull output and its `system` stream (drydock's own diagnostics
//!   about it, by uid, so a re-created object starts afresh). Lines are numbered from 1 per
//!   stream and stamped;
//! - a [`Source`] is what a client asks for by name (`stdout`, `startup_stdout`, ...); each kind
//!   names its own ([`sources_of`]) and [`source`] resolves one to the hub stream it reads from
//!   an object's current snapshot, and says when it is complete;
//! - a [`Follower`] is one reader: a cursor into the hub that moves to a logical container's new
//!   backing when it is replaced, and ends when its source completes or its object is deleted.
//!
//! Who writes what: the engine emits [`LogRecord`]s (`Output::Log`) for `system` (runtime
//! requests it makes to change the world, their failures, and every change of an object's
//! `status.phase`, `reason` or `message`: terminal failures included) and for pull output; the
//! driver captures containers' output into the hub (one capture per container, whatever the
//! number of readers), and ends a stream when the capture reaches the end.
//!
//! *Guarantees*: a reader never holds back a writer: the hub keeps a bounded window of each
//! stream (see [`Limits`]); a reader that falls behind it is told how many lines it missed
//! ([`Chunk::dropped`]) and goes on from the oldest kept line. Readers are independent: a
//! follower is a cursor, so closing or stalling one affects no other.

mod follower;
mod hub;
mod source;

pub use follower::{Chunk, FollowOptions, Follower, Step};
pub use hub::Read;
pub use hub::{Limits, LogHub};
pub use source::{Resolved, Source, UnknownSource, default_source, source, sources_of};

use crate::api::{ObjectKey, Uid};
use crate::time::WallTime;
use serde::{Deserialize, Serialize};

/// Whose streams: an object's (its `system` stream, an image's pull output), or a runtime
/// container's (its output, as the runtime captured it: a physical container reads the streams of
/// the runtime container it records, whoever created that container).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Subject {
    Object(Uid),
    Container(String),
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Object(uid) => write!(f, "object {uid}"),
            Subject::Container(id) => write!(f, "container {}", crate::runtime::short(id)),
        }
    }
}

/// One stream of a subject.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// The runtime's standard output: a container's, or an image's pull output.
    Stdout,
    Stderr,
    /// drydock's own diagnostics about the object.
    System,
}

/// One line of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// Its number in its stream, from 1: it never changes, so readers can say which they saw.
    pub number: u64,
    pub time: WallTime,
    pub text: String,
}

/// Lines for an object's stream, as the engine emits them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub uid: Uid,
    /// The object, for readers of the record (traces); streams are keyed by `uid`.
    pub key: ObjectKey,
    pub channel: Channel,
    pub time: WallTime,
    pub lines: Vec<String>,
    /// The object's controlling owner: `system` lines are also written to the owner's `system`
    /// stream, prefixed with the object (a logical container sees its backing's and its own
    /// image's diagnostics).
    pub forward_to: Option<Uid>,
}
