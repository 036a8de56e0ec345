//! Why the store refuses a request.

use crate::api::validation::FieldError;
use serde::{Deserialize, Serialize};

/// Why the store refused a request. Every variant names the object it is about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum StoreError {
    #[error("{key} not found")]
    NotFound { key: String },
    #[error("{key} already exists")]
    AlreadyExists { key: String },
    /// A precondition (resourceVersion or uid) did not hold: re-read and try again.
    #[error("conflict on {key}: {reason}; re-read the object and retry")]
    Conflict { key: String, reason: String },
    #[error("{key} is invalid: {}", join(errors))]
    Invalid { key: String, errors: Vec<FieldError> },
    /// The namespace does not exist or is being deleted.
    #[error("cannot create {key}: namespace {namespace:?} {reason}")]
    NamespaceNotActive { key: String, namespace: String, reason: String },
    /// The watch asked for history the store no longer keeps: relist, then watch again.
    #[error(
        "resource version {requested} is compacted (oldest kept: {oldest}); relist and watch from the list's version"
    )]
    Gone { requested: u64, oldest: u64 },
    /// The request was sent but no answer came (a timeout, a dropped connection): it may or may
    /// not have been applied. Re-read before deciding what to do next.
    #[error("no answer to the write of {key} ({reason}); it may have been applied: re-read the object before retrying")]
    Uncertain { key: String, reason: String },
    /// The store could not commit the write (its backend failed: a full or failing disk, a
    /// database that went read-only). Nothing was applied and nothing changed: retry later.
    #[error(
        "the write of {key} was not applied: the store could not commit it ({reason}); nothing changed: retry later, and if it keeps failing check the store's disk and the daemon's log"
    )]
    Unavailable { key: String, reason: String },
}

fn join(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl StoreError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict { .. })
    }

    /// A short stable name for traces: `NotFound`, `Conflict`, ...
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotFound { .. } => "NotFound",
            StoreError::AlreadyExists { .. } => "AlreadyExists",
            StoreError::Conflict { .. } => "Conflict",
            StoreError::Invalid { .. } => "Invalid",
            StoreError::NamespaceNotActive { .. } => "NamespaceNotActive",
            StoreError::Gone { .. } => "Gone",
            StoreError::Uncertain { .. } => "Uncertain",
            StoreError::Unavailable { .. } => "Unavailable",
        }
    }
}
