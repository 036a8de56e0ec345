//! `ContainerVolume`: one runtime volume, created by name or tracked by name.

use super::RuntimeObject;
use super::object::{Object, Resource};
use super::registry::KindInfo;
use super::runtime_resource::{ResourcePhase, RuntimeResourceStatus, validate_source};
use super::validation::{Claim, FieldError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One runtime volume that containers in its namespace mount (a mount whose `source` is the
/// object's name). Retained by default: data outlives the object unless `retain: false`.
pub struct ContainerVolume;

fn retained() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One runtime volume: created by name, or tracked by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerVolumeSpec {
    /// Runtime volume name to create; defaults to `<namespace>-<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_name: Option<String>,
    /// Track an existing volume by name instead of creating one; it is never removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_id: Option<String>,
    /// If a volume of our name exists that we did not create, remove exactly that one (when no
    /// container uses it) and create ours. Without it, such a name collision is terminal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_existing: bool,
    /// Keep the runtime volume when this object is deleted (the default).
    #[serde(default = "retained", skip_serializing_if = "is_true")]
    pub retain: bool,
    /// Caller labels; system labels (`drydock.dev/*`) are applied after them and win.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl Default for ContainerVolumeSpec {
    fn default() -> Self {
        ContainerVolumeSpec {
            volume_name: None,
            volume_id: None,
            replace_existing: false,
            retain: true,
            labels: BTreeMap::new(),
        }
    }
}

impl ContainerVolumeSpec {
    pub fn runtime_name(&self, namespace: &str, name: &str) -> String {
        self.volume_name.clone().unwrap_or_else(|| format!("{namespace}-{name}"))
    }
}

impl Resource for ContainerVolume {
    const KIND: &'static str = "ContainerVolume";
    const NAMESPACED: bool = true;
    type Spec = ContainerVolumeSpec;
    type Status = RuntimeResourceStatus;
}

/// What a volume claims in its namespace.
pub const CLAIM_VOLUME_NAME: &str = "volume name";

pub(crate) fn validate(spec: &ContainerVolumeSpec) -> Vec<FieldError> {
    validate_source(
        "volume",
        ("volumeName", spec.volume_name.as_ref()),
        ("volumeId", spec.volume_id.as_ref()),
        spec.replace_existing,
    )
}

/// The runtime volume name it creates; a tracked one claims nothing.
pub(crate) fn claims(object: &Object, spec: &ContainerVolumeSpec) -> Vec<Claim> {
    if spec.volume_id.is_some() {
        return Vec::new();
    }
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    vec![Claim::new(CLAIM_VOLUME_NAME, spec.runtime_name(namespace, &object.metadata.name), "spec.volumeName")]
}

/// The spec is immutable.
pub(crate) fn validate_update(old: &ContainerVolumeSpec, new: &ContainerVolumeSpec) -> Vec<FieldError> {
    if old == new { Vec::new() } else { vec![FieldError::new("spec", "the spec of a ContainerVolume is immutable")] }
}

/// The runtime contract's request to create a volume (see
/// [`RuntimeRequest::CreateVolume`](crate::runtime::RuntimeRequest::CreateVolume)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeCreate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// A volume as the runtime describes it.
pub struct VolumeInfo {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// `ContainerVolume`'s registration: settled once no longer pending.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<ContainerVolume>(validate)
        .with_update_check::<ContainerVolume>(validate_update)
        .with_claims::<ContainerVolume>(claims)
        .with_names("containervolumes", &["vol", "vols"])
        .with_description(
            "One runtime volume that containers in its namespace mount (a mount whose source is the object's \
             name). Retained by default: data outlives the object unless retain is false.",
        )
        .with_settled::<ContainerVolume>(|_, s| s.phase != ResourcePhase::Pending)
        .with_runtime_object(RuntimeObject::Volume)
        .with_cleanup_rank(30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_are_retained_unless_told_otherwise() {
        let spec: ContainerVolumeSpec = serde_json::from_str("{}").unwrap_or_default();
        assert!(spec.retain);
        let spec: ContainerVolumeSpec = serde_json::from_str(r#"{"retain": false}"#).unwrap_or_default();
        assert!(!spec.retain);
        assert_eq!(serde_json::to_string(&ContainerVolumeSpec::default()).ok().as_deref(), Some("{}"));
    }
}
