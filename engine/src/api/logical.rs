//! Logical containers: the lifecycle policy (session, persistent, existing) above physical
//! containers and images.

use super::container::{
    CopiedFile, EnvVar, Mount, NetworkAttachment, PortMapping, check_env_name, container_name_claim, validate_files,
    validate_mounts, validate_networks, validate_ports,
};
use super::meta::{Condition, Uid};
use super::object::{Object, Resource};
use super::registry::KindInfo;
use super::runtime_names::{RUNTIME_NAME_RULE, is_container_name, validate_image_reference};
use super::validation::{Claim, FieldError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a logical container relates to runtime containers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogicalMode {
    /// Created for this object and removed with it.
    #[default]
    Session,
    /// Reused across runs while its lifecycle key matches; kept on delete.
    Persistent,
    /// Never created: adopted once a container of that name exists.
    Existing,
}

/// A container with a lifecycle policy: what to run, and whether it lives with this object, is
/// reused across runs, or already exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogicalContainerSpec {
    /// How the container relates to runtime containers: `session` (the default: created for this
    /// object and removed with it), `persistent` (reused across runs while its lifecycle key
    /// matches; kept on delete) or `existing` (never created: adopted once a container of that
    /// name exists).
    #[serde(default)]
    pub mode: LogicalMode,
    /// Inline image reference (the controller owns a ContainerImage for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Name of an existing ContainerImage in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    /// Digests of a build's inputs, supplied by the caller; they stand in for the image in the key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_digests: Vec<String>,
    /// The runtime container's name; defaults to `<namespace>-<name>`. Required for mode
    /// `existing`: the container to adopt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    /// Environment variables set in the container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Labels the runtime container carries; system labels (`drydock.dev/*`) are applied after
    /// them and win.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Container ports published on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortMapping>,
    /// Bind mounts of host paths, and `ContainerVolume`s (a `source` that is not an absolute
    /// path names one in the same namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Files copied into the container before its first start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CopiedFile>,
    /// The command to run instead of the image's entrypoint; `args` are appended to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Arguments appended to `command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `ContainerNetwork`s in the same namespace to attach to, with aliases; none: the runtime's
    /// default network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<NetworkAttachment>,
    /// Used verbatim as the lifecycle key when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_key: Option<String>,
    /// One-way: once true the container is stopped and stays stopped.
    #[serde(default)]
    pub stop: bool,
    /// Replace a runtime container of the same name even when drydock did not create it (without
    /// it, such a name collision fails the object).
    #[serde(default)]
    pub replace: bool,
}

/// A logical container: a container with a lifecycle policy, realised by a backing
/// `PhysicalContainer` (and, for an inline image, an owned `ContainerImage`).
pub struct LogicalContainer;

/// Where a logical container is in its life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum LogicalPhase {
    #[default]
    Pending,
    Starting,
    Running,
    Exited,
    /// Mode `existing`: no container of that name yet.
    NotFound,
    /// Terminal: its backing or its own image failed, or it lost its backing; `reason` and
    /// `message` carry the cause.
    Failed,
}

/// What the logical container's controller observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogicalContainerStatus {
    /// `Pending`, `Starting`, `Running`, `Exited`, `NotFound` (mode `existing`: no container of
    /// that name yet) or `Failed` (terminal; `reason` says why).
    #[serde(default)]
    pub phase: LogicalPhase,
    /// Observations of the controller, Kubernetes-style.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The lifecycle key of the spec: `spec.lifecycleKey`, or a digest of the fields that define
    /// the container's content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_key: Option<String>,
    /// The backing PhysicalContainer, once created or adopted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_uid: Option<Uid>,
    /// The runtime's id of the container, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_id: Option<String>,
    /// Persistent: the workload that owns the runtime container, once recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Startup output of an owned inline image (pull progress).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub startup_output: Vec<String>,
    /// Why the phase is `Failed`: the backing's reason, or one of the logical container's own
    /// ([`super::reasons`]).
    #[schemars(
        description = "Why the phase is `Failed`: the backing's reason, or one of the logical container's own \
        (machine-readable, CamelCase)."
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The cause, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Resource for LogicalContainer {
    const KIND: &'static str = "LogicalContainer";
    const NAMESPACED: bool = true;
    type Spec = LogicalContainerSpec;
    type Status = LogicalContainerStatus;
}

impl LogicalContainerSpec {
    /// The runtime container name: the spec's, or `<namespace>-<name>`.
    pub fn runtime_name(&self, namespace: &str, name: &str) -> String {
        self.container_name.clone().unwrap_or_else(|| format!("{namespace}-{name}"))
    }
}

/// Longest logical container name: room for the `-backing` and `-image` suffixes.
pub const MAX_NAME: usize = 55;

/// What a logical container holds alone in its namespace: its runtime container name, whatever its
/// mode (an `existing` one adopts the container of that name: two in one namespace would both
/// stop and track it). The backing it creates shares the claim: it is controlled by it.
pub(crate) fn claims(object: &Object, spec: &LogicalContainerSpec) -> Vec<Claim> {
    let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
    vec![container_name_claim(spec.runtime_name(namespace, &object.metadata.name))]
}

/// The spec may change only by setting `stop` (one-way), as for physical containers.
pub(crate) fn validate_update(old: &LogicalContainerSpec, new: &LogicalContainerSpec) -> Vec<FieldError> {
    if old.stop && !new.stop {
        return vec![FieldError::new("spec.stop", "stop is one-way: a stopped container cannot be restarted")];
    }
    let (mut a, mut b) = (old.clone(), new.clone());
    a.stop = false;
    b.stop = false;
    if a != b { vec![FieldError::new("spec", "the spec is immutable except for spec.stop")] } else { Vec::new() }
}

pub(crate) fn validate(spec: &LogicalContainerSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let sources = usize::from(spec.image.is_some()) + usize::from(spec.image_ref.is_some());
    match (spec.mode, sources) {
        (LogicalMode::Existing, 0) => {}
        (LogicalMode::Existing, _) => {
            errors.push(FieldError::new("spec.image", "mode existing never creates: give no image"))
        }
        (_, 1) => {}
        (_, _) => errors.push(FieldError::new("spec", "exactly one of spec.image and spec.imageRef is required")),
    }
    if spec.mode == LogicalMode::Existing && spec.container_name.is_none() {
        errors.push(FieldError::new("spec.containerName", "mode existing needs the name of the container to adopt"));
    }
    if let Some(image) = &spec.image
        && let Err(message) = validate_image_reference(image)
    {
        errors.push(FieldError::new("spec.image", message));
    }
    if let Some(name) = &spec.container_name
        && !is_container_name(name)
    {
        errors.push(FieldError::new(
            "spec.containerName",
            format!("{name:?} is not a valid container name: use {RUNTIME_NAME_RULE}"),
        ));
    }
    for (i, env) in spec.env.iter().enumerate() {
        if let Err(message) = check_env_name(&env.name) {
            errors.push(FieldError::new(format!("spec.env[{i}].name"), message));
        }
    }
    errors.extend(validate_ports("spec.ports", &spec.ports));
    errors.extend(validate_mounts("spec.mounts", &spec.mounts));
    errors.extend(validate_networks("spec.networks", &spec.networks));
    errors.extend(validate_files("spec.files", &spec.files, &spec.mounts));
    errors
}

/// `LogicalContainer`'s registration: its finalizer holds the object until its backing is
/// released; settled once running, exited, failed or not found.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<LogicalContainer>(validate)
        .with_update_check::<LogicalContainer>(validate_update)
        .with_claims::<LogicalContainer>(claims)
        .with_names("logicalcontainers", &["lc", "lcs"])
        .with_description(
            "A logical container: a container with a lifecycle policy (session, persistent or existing), \
             realised by a backing PhysicalContainer (and, for an inline image, an owned ContainerImage).",
        )
        .with_finalizer(super::names::FINALIZER_LOGICAL)
        .with_settled::<LogicalContainer>(|_, s| {
            matches!(
                s.phase,
                LogicalPhase::Running | LogicalPhase::Exited | LogicalPhase::Failed | LogicalPhase::NotFound
            )
        })
        .with_cleanup_rank(10)
}
