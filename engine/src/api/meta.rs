use crate::time::WallTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A unique object identity, never reused. Distinguishes an object from a later one of the same
/// name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Uid(pub String);

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Kubernetes-style object metadata.
///
/// *Assumptions*: `uid`, `resource_version`, `generation`, `creation_timestamp` and
/// `deletion_timestamp` are set by the store; whatever a client puts there on create is ignored,
/// and on update `resource_version` is the precondition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default)]
    pub uid: Uid,
    #[serde(default)]
    pub resource_version: u64,
    #[serde(default)]
    pub generation: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<WallTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<WallTime>,
}

impl ObjectMeta {
    pub fn named(namespace: Option<&str>, name: &str) -> Self {
        ObjectMeta { name: name.to_string(), namespace: namespace.map(str::to_string), ..ObjectMeta::default() }
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }
}

/// A reference from a dependent to its owner. Owners live in the dependent's namespace, or are
/// cluster-scoped.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReference {
    pub kind: String,
    pub name: String,
    pub uid: Uid,
    #[serde(default)]
    pub controller: bool,
    #[serde(default)]
    pub block_owner_deletion: bool,
}
