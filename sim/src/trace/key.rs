//! An object's key as the trace records it: borrowed, printed as `ObjectKey` prints.

use super::encode::{Encode, Encoder};
use drydock_engine::api::{Object, ObjectKey};
use std::fmt;

/// An object's key, borrowed: kind, namespace (none for a cluster-scoped kind), name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key<'a> {
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> Key<'a> {
    pub fn new(kind: &'a str, namespace: Option<&'a str>, name: &'a str) -> Self {
        Key { kind, namespace, name }
    }

    /// The key of `object`.
    pub fn of(object: &'a Object) -> Self {
        Key { kind: &object.kind, namespace: object.metadata.namespace.as_deref(), name: &object.metadata.name }
    }
}

impl<'a> From<&'a ObjectKey> for Key<'a> {
    fn from(key: &'a ObjectKey) -> Self {
        Key { kind: &key.kind, namespace: key.namespace.as_deref(), name: &key.name }
    }
}

impl fmt::Display for Key<'_> {
    /// `Kind/name` or `Kind/namespace/name`, as [`ObjectKey`] prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

impl Encode for Key<'_> {
    fn encode(&self, out: &mut Encoder) {
        out.str(self.kind);
        out.opt_str(self.namespace);
        out.str(self.name);
    }
}
