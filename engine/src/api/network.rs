//! `ContainerNetwork`: one runtime network, created by name or tracked by id.

use super::RuntimeObject;
use super::object::{Object, Resource};
use super::registry::KindInfo;
use super::runtime_resource::{ResourcePhase, RuntimeResourceStatus, is_builtin_network, validate_source};
use super::validation::{Claim, FieldError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One runtime network that containers in its namespace attach to (`spec.networks`).
pub struct ContainerNetwork;

/// One runtime network: created by name, or tracked by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerNetworkSpec {
    /// Runtime network name to create; defaults to `<namespace>-<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_name: Option<String>,
    /// Track an existing network by id or name instead of creating one; it is never removed.
    /// The built-in networks (`bridge`, `host`, `none`) can only be tracked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_id: Option<String>,
    /// If a network of our name exists that we did not create, remove exactly that one and
    /// create ours. Without it, such a name collision is terminal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_existing: bool,
    /// Keep the runtime network when this object is deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain: bool,
    /// Caller labels; system labels (`drydock.dev/*`) are applied after them and win.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl ContainerNetworkSpec {
    pub fn runtime_name(&self, namespace: &str, name: &str) -> String {
        self.network_name.clone().unwrap_or_else(|| format!("{namespace}-{name}"))
    }
}

impl Resource for ContainerNetwork {
    const KIND: &'static str = "ContainerNetwork";
    const NAMESPACED: bool = true;
    type Spec = ContainerNetworkSpec;
    type Status = RuntimeResourceStatus;
}

/// What a network claims in its namespace.
pub const CLAIM_NETWORK_NAME: &str = "network name";

pub(crate) fn validate(spec: &ContainerNetworkSpec) -> Vec<FieldError> {
    let mut errors = validate_source(
        "network",
        ("networkName", spec.network_name.as_ref()),
        ("networkId", spec.network_id.as_ref()),
        spec.replace_existing,
    );
    if let Some(name) = spec.network_name.as_deref().filter(|n| is_builtin_network(n)) {
        errors.push(FieldError::new(
            "spec.networkName",
            format!("{name} is a built-in network: it cannot be created or replaced; track it with spec.networkId"),
        ));
    }
    errors
}

/// The runtime network name it creates; a tracked one claims nothing.
pub(crate) fn claims(object: &Object, spec: &ContainerNetworkSpec) -> Vec<Claim> {
    if spec.network_id.is_some() {
        return Vec::new();
    }
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    vec![Claim::new(CLAIM_NETWORK_NAME, spec.runtime_name(namespace, &object.metadata.name), "spec.networkName")]
}

/// The spec is immutable.
pub(crate) fn validate_update(old: &ContainerNetworkSpec, new: &ContainerNetworkSpec) -> Vec<FieldError> {
    if old == new { Vec::new() } else { vec![FieldError::new("spec", "the spec of a ContainerNetwork is immutable")] }
}

/// The runtime contract's request to create a network (see
/// [`RuntimeRequest::CreateNetwork`](crate::runtime::RuntimeRequest::CreateNetwork)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkCreate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// A network as the runtime describes it.
pub struct NetworkInfo {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The containers with an active endpoint on it (the running ones, as Docker reports them),
    /// by id, in id order.
    #[serde(default)]
    pub containers: Vec<String>,
}

/// `ContainerNetwork`'s registration: settled once no longer pending.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<ContainerNetwork>(validate)
        .with_update_check::<ContainerNetwork>(validate_update)
        .with_claims::<ContainerNetwork>(claims)
        .with_names("containernetworks", &["net", "nets"])
        .with_description("One runtime network that containers in its namespace attach to (spec.networks).")
        .with_settled::<ContainerNetwork>(|_, s| s.phase != ResourcePhase::Pending)
        .with_runtime_object(RuntimeObject::Network)
        .with_cleanup_rank(30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_networks_are_only_tracked() {
        let create_bridge = ContainerNetworkSpec { network_name: Some("bridge".into()), ..Default::default() };
        assert_eq!(validate(&create_bridge)[0].path, "spec.networkName");
        let track_bridge = ContainerNetworkSpec { network_id: Some("bridge".into()), ..Default::default() };
        assert!(validate(&track_bridge).is_empty());
        let replace_tracked = ContainerNetworkSpec { replace_existing: true, ..track_bridge };
        assert_eq!(validate(&replace_tracked)[0].path, "spec.replaceExisting");
    }
}
