//! `Namespace`: the unit of cleanup.

use super::meta::Condition;
use super::object::Resource;
use super::registry::KindInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A namespace: the unit of cleanup. Deleting it deletes its children, and only then itself.
pub struct Namespace;

/// A namespace has nothing to ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceSpec {}

/// Whether a namespace is in use or being deleted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NamespacePhase {
    #[default]
    Active,
    Terminating,
}

/// What the namespace controller observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceStatus {
    /// `Active`, or `Terminating` once deleted, until its children are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<NamespacePhase>,
    /// Children still waiting to be deleted while Terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// While Terminating: `CleanupComplete` (False with reason `Pending` and the pending counts per
    /// kind, then True with reason `Complete` before the namespace finalizer is released).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl Resource for Namespace {
    const KIND: &'static str = "Namespace";
    const NAMESPACED: bool = false;
    type Spec = NamespaceSpec;
    type Status = NamespaceStatus;
}

/// `Namespace`'s registration: core `v1`, cleaned up by the namespace controller before its
/// finalizer goes.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<Namespace>(|_| Vec::new())
        .with_group_version("v1")
        .with_names("namespaces", &["ns"])
        .with_description("A namespace: the unit of cleanup. Deleting it deletes its children, and only then itself.")
        .with_finalizer(super::names::FINALIZER_NAMESPACE)
}
