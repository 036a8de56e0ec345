//! `PhysicalContainer`: one runtime container, created from an image or tracked by id.

use super::container::{
    CopiedFile, Mount, NetworkAttachment, PortMapping, check_env_name, container_name_claim, validate_files,
    validate_mounts, validate_networks, validate_ports,
};
use super::object::{Object, Resource};
use super::registry::KindInfo;
use super::runtime_names::{RUNTIME_NAME_RULE, is_container_name, validate_image_reference};
use super::validation::{Claim, FieldError, is_dns_label};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One runtime container, created from an image present in the runtime.
pub struct PhysicalContainer;

/// One runtime container: created from an image (or a `ContainerImage`), or tracked by id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhysicalContainerSpec {
    /// Image reference; the image must be present in the runtime. One of `image`, `imageRef` and
    /// `containerId` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Name of a `ContainerImage` in the same namespace: the container is created from its
    /// pinned image id once it is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    /// Track an existing runtime container instead of creating one. It is never removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// If a container of our name exists that we did not create, remove exactly that one and
    /// create ours. Without it, such a name collision is terminal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_existing: bool,
    /// Keep the runtime container when this object is deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain: bool,
    /// Container ports published on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortMapping>,
    /// Bind mounts of host paths, and volumes: a `source` that is not an absolute path names a
    /// `ContainerVolume` in the same namespace; the container is created once it is Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// `ContainerNetwork`s in the same namespace to attach to, with aliases; the container is
    /// created once they are Ready. None: the runtime's default network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<NetworkAttachment>,
    /// Files copied into the created container before its first start (DCP's `createFiles`);
    /// a copy that fails for good fails the object (`FileCopyFailed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CopiedFile>,
    /// Runtime container name; defaults to `<namespace>-<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    /// The command to run instead of the image's entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Environment variables set in the container, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Caller labels; system labels (`drydock.dev/*`) are applied after them and win.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// One-way: once true the container is stopped and stays stopped.
    #[serde(default)]
    pub stop: bool,
}

impl PhysicalContainerSpec {
    pub fn runtime_name(&self, namespace: &str, name: &str) -> String {
        self.container_name.clone().unwrap_or_else(|| format!("{namespace}-{name}"))
    }
}

/// Where a physical container is in its life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum ContainerPhase {
    /// Not created yet, or being created.
    #[default]
    Pending,
    Running,
    Exited,
    /// The runtime container was removed by someone else; it is never recreated.
    Missing,
    /// Terminal: the container cannot be created or started (the runtime refused it, a missing
    /// image, a name taken by a stranger, a start that keeps failing); `reason` says which.
    Failed,
}

/// What the physical container's controller observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhysicalContainerStatus {
    /// `Pending`, `Running`, `Exited`, `Missing` (removed by someone else; never recreated) or
    /// `Failed` (terminal; `reason` says why).
    #[serde(default)]
    pub phase: ContainerPhase,
    /// The runtime's id of the container, once created (or tracked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_id: Option<String>,
    /// The exit code, once it has exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Why the phase is `Failed` or `Missing`: a machine-readable reason (CamelCase; see
    /// [`super::reasons`]).
    #[schemars(description = "Why the phase is `Failed` or `Missing`: a machine-readable reason (CamelCase).")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// In words; for a runtime failure, with the runtime's own message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Resource for PhysicalContainer {
    const KIND: &'static str = "PhysicalContainer";
    const NAMESPACED: bool = true;
    type Spec = PhysicalContainerSpec;
    type Status = PhysicalContainerStatus;
}

/// Validation of a physical container spec beyond its shape: what the runtime would refuse (see
/// [`super::container`] and [`super::runtime_names`]) is refused here, with its field path.
pub(crate) fn validate(spec: &PhysicalContainerSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let sources = [spec.image.is_some(), spec.image_ref.is_some(), spec.container_id.is_some()];
    if sources.iter().filter(|s| **s).count() != 1 {
        errors
            .push(FieldError::new("spec", "exactly one of spec.image, spec.imageRef and spec.containerId is required"));
    }
    if let Some(image) = &spec.image
        && let Err(message) = validate_image_reference(image)
    {
        errors.push(FieldError::new("spec.image", message));
    }
    if let Some(name) = &spec.image_ref
        && !is_dns_label(name)
    {
        errors.push(FieldError::new("spec.imageRef", format!("{name:?} is not a valid object name")));
    }
    if let Some(id) = &spec.container_id
        && (id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)))
    {
        errors.push(FieldError::new("spec.containerId", format!("{id:?} is not a container id or name")));
    }
    if let Some(name) = &spec.container_name
        && !is_container_name(name)
    {
        errors.push(FieldError::new(
            "spec.containerName",
            format!("{name:?} is not a valid container name: use {RUNTIME_NAME_RULE}"),
        ));
    }
    for name in spec.env.keys() {
        if let Err(message) = check_env_name(name) {
            errors.push(FieldError::new(format!("spec.env[{name:?}]"), message));
        }
    }
    errors.extend(validate_ports("spec.ports", &spec.ports));
    errors.extend(validate_mounts("spec.mounts", &spec.mounts));
    errors.extend(validate_networks("spec.networks", &spec.networks));
    errors.extend(validate_files("spec.files", &spec.files, &spec.mounts));
    if spec.container_id.is_some() && !spec.files.is_empty() {
        errors.push(FieldError::new("spec.files", "files are copied only into a container drydock creates"));
    }
    errors
}

/// What a physical container holds alone in its namespace: the name of the runtime container it
/// creates. One that tracks an existing container by id creates nothing and claims nothing.
pub(crate) fn claims(object: &Object, spec: &PhysicalContainerSpec) -> Vec<Claim> {
    if spec.container_id.is_some() {
        return Vec::new();
    }
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    vec![container_name_claim(spec.runtime_name(namespace, &object.metadata.name))]
}

/// The spec may change only by setting `stop` (one-way).
pub(crate) fn validate_update(old: &PhysicalContainerSpec, new: &PhysicalContainerSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old.stop && !new.stop {
        errors.push(FieldError::new("spec.stop", "stop is one-way: a stopped container cannot be restarted"));
    }
    let (mut old_rest, mut new_rest) = (old.clone(), new.clone());
    old_rest.stop = false;
    new_rest.stop = false;
    if old_rest != new_rest {
        errors.push(FieldError::new("spec", "the spec is immutable except for spec.stop"));
    }
    errors
}

/// `PhysicalContainer`'s registration: settled once running, exited, failed or missing.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<PhysicalContainer>(validate)
        .with_update_check::<PhysicalContainer>(validate_update)
        .with_claims::<PhysicalContainer>(claims)
        .with_names("physicalcontainers", &["pc", "pcs"])
        .with_description("One runtime container, created from an image present in the runtime, or tracked by id.")
        .with_settled::<PhysicalContainer>(|_, s| {
            matches!(
                s.phase,
                ContainerPhase::Running | ContainerPhase::Exited | ContainerPhase::Failed | ContainerPhase::Missing
            )
        })
        .with_cleanup_rank(20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_is_one_way_and_the_rest_immutable() {
        let old = PhysicalContainerSpec { image: Some("a".into()), ..Default::default() };
        let stopped = PhysicalContainerSpec { stop: true, ..old.clone() };
        assert!(validate_update(&old, &stopped).is_empty());
        assert_eq!(validate_update(&stopped, &old)[0].path, "spec.stop");
        let other = PhysicalContainerSpec { image: Some("b".into()), ..old.clone() };
        assert_eq!(validate_update(&old, &other)[0].path, "spec");
    }
}
