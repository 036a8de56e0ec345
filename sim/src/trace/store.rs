//! Store requests and results as the trace records them: the request's verb, the object's key
//! and the resource version it was written at; the result's new resource version, count of
//! objects, or error code.

use super::encode::{Encode, Encoder};
use super::key::Key;
use drydock_engine::store::{StoreReply, StoreRequest, StoreResult};
use std::fmt;

/// A store request, summarized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOp<'a> {
    Get {
        key: Key<'a>,
    },
    List {
        kind: Option<&'a str>,
        namespace: Option<&'a str>,
    },
    Create {
        key: Key<'a>,
    },
    /// An update at `resource_version` (its precondition).
    Update {
        key: Key<'a>,
        resource_version: u64,
    },
    /// A status update at `resource_version` (its precondition).
    UpdateStatus {
        key: Key<'a>,
        resource_version: u64,
    },
    Delete {
        key: Key<'a>,
    },
}

impl<'a> From<&'a StoreRequest> for StoreOp<'a> {
    fn from(request: &'a StoreRequest) -> Self {
        match request {
            StoreRequest::Get { key } => StoreOp::Get { key: key.into() },
            StoreRequest::List { kind, namespace } => {
                StoreOp::List { kind: kind.as_deref(), namespace: namespace.as_deref() }
            }
            StoreRequest::Create { object } => StoreOp::Create { key: Key::of(object) },
            StoreRequest::Update { object } => {
                StoreOp::Update { key: Key::of(object), resource_version: object.metadata.resource_version }
            }
            StoreRequest::UpdateStatus { object } => {
                StoreOp::UpdateStatus { key: Key::of(object), resource_version: object.metadata.resource_version }
            }
            StoreRequest::Delete { key, .. } => StoreOp::Delete { key: key.into() },
        }
    }
}

/// What the store answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// An object, as stored at `resource_version`.
    Stored { resource_version: u64 },
    /// A list of `count` objects.
    Objects { count: usize },
    /// An error, by its code (`NotFound`, `Conflict`...).
    Failed { code: &'static str },
}

impl From<&StoreResult> for StoreOutcome {
    fn from(result: &StoreResult) -> Self {
        match result {
            Ok(StoreReply::Object(object)) => {
                StoreOutcome::Stored { resource_version: object.metadata.resource_version }
            }
            Ok(StoreReply::Objects(list)) => StoreOutcome::Objects { count: list.len() },
            Err(error) => StoreOutcome::Failed { code: error.code() },
        }
    }
}

impl fmt::Display for StoreOp<'_> {
    /// As the store request describes itself: `update PhysicalContainer/ns/a@12`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreOp::Get { key } => write!(f, "get {key}"),
            StoreOp::List { kind, namespace } => {
                write!(f, "list {}/{}", kind.unwrap_or("*"), namespace.unwrap_or("*"))
            }
            StoreOp::Create { key } => write!(f, "create {key}"),
            StoreOp::Update { key, resource_version } => write!(f, "update {key}@{resource_version}"),
            StoreOp::UpdateStatus { key, resource_version } => write!(f, "update-status {key}@{resource_version}"),
            StoreOp::Delete { key } => write!(f, "delete {key}"),
        }
    }
}

impl fmt::Display for StoreOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreOutcome::Stored { resource_version } => write!(f, "ok rv={resource_version}"),
            StoreOutcome::Objects { count } => write!(f, "ok {count} objects"),
            StoreOutcome::Failed { code } => f.write_str(code),
        }
    }
}

/// The tags of store requests and outcomes: explicit numbers, never changed
/// (renumbering one changes every golden digest; a new kind takes a new number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
enum Tag {
    Get = 112,
    List = 113,
    Create = 114,
    Update = 115,
    UpdateStatus = 116,
    Delete = 117,
    Stored = 128,
    Objects = 129,
    Failed = 130,
}

impl From<Tag> for u16 {
    fn from(tag: Tag) -> u16 {
        tag as u16
    }
}

impl Encode for StoreOp<'_> {
    fn encode(&self, out: &mut Encoder) {
        match self {
            StoreOp::Get { key } => {
                out.tag(Tag::Get);
                key.encode(out);
            }
            StoreOp::List { kind, namespace } => {
                out.tag(Tag::List);
                out.opt_str(*kind);
                out.opt_str(*namespace);
            }
            StoreOp::Create { key } => {
                out.tag(Tag::Create);
                key.encode(out);
            }
            StoreOp::Update { key, resource_version } => {
                out.tag(Tag::Update);
                key.encode(out);
                out.u64(*resource_version);
            }
            StoreOp::UpdateStatus { key, resource_version } => {
                out.tag(Tag::UpdateStatus);
                key.encode(out);
                out.u64(*resource_version);
            }
            StoreOp::Delete { key } => {
                out.tag(Tag::Delete);
                key.encode(out);
            }
        }
    }
}

impl Encode for StoreOutcome {
    fn encode(&self, out: &mut Encoder) {
        match self {
            StoreOutcome::Stored { resource_version } => {
                out.tag(Tag::Stored);
                out.u64(*resource_version);
            }
            StoreOutcome::Objects { count } => {
                out.tag(Tag::Objects);
                out.usize(*count);
            }
            StoreOutcome::Failed { code } => {
                out.tag(Tag::Failed);
                out.str(code);
            }
        }
    }
}
