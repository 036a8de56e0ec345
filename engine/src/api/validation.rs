//! What admission reports about a rejected object, and the naming rule every object name follows.
//!
//! The kind modules validate their specs into [`FieldError`]s; the store collects them into
//! `StoreError::Invalid`. Both sit here, below the kinds and the store, so that neither has to
//! reach into the other.

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

/// An RFC 1123 label: what every object name (and a reference to one by name) must be.
pub fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}
