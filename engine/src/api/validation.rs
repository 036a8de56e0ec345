//! What admission reports about a rejected object, what an object may hold alone ([`Claim`]),
//! and the naming rule every object name follows.
//!
//! The kind modules validate their specs into [`FieldError`]s and say what their objects claim;
//! the store collects the errors into `StoreError::Invalid` and refuses a claim another object
//! holds. Both sit here, below the kinds and the store, so that neither has to reach into the
//! other.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One rejected field: where it is (`spec.image`, `metadata.ownerReferences[0]`) and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A value an object holds alone within its namespace (a cluster-scoped object: among the
/// cluster-scoped ones), such as the name of the runtime container it creates. The store refuses
/// an object whose claim another object holds, unless one of the two controls the other.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claim {
    /// What kind of value: claims of different kinds never collide (`container name`).
    pub what: &'static str,
    pub value: String,
    /// The field that asks for it, for the error (`spec.containerName`).
    pub path: String,
}

impl Claim {
    pub fn new(what: &'static str, value: impl Into<String>, path: impl Into<String>) -> Self {
        Claim { what, value: value.into(), path: path.into() }
    }
}

/// An RFC 1123 label: what every object name (and a reference to one by name) must be.
pub fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}
