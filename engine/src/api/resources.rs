//! The built-in kinds of the walking skeleton: `Namespace` and `PhysicalContainer`.

use super::object::Resource;
use crate::store::FieldError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A namespace: the unit of cleanup. Deleting it deletes its children, and only then itself.
pub struct Namespace;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceSpec {}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NamespacePhase {
    #[default]
    Active,
    Terminating,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<NamespacePhase>,
    /// Children still waiting to be deleted while Terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// While Terminating: `CleanupComplete` (False with reason `Pending` and the pending counts per
    /// kind, then True with reason `Complete` before the namespace finalizer is released).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<super::meta::Condition>,
}

impl Resource for Namespace {
    const KIND: &'static str = "Namespace";
    const NAMESPACED: bool = false;
    type Spec = NamespaceSpec;
    type Status = NamespaceStatus;
}

/// One runtime container, created from an image present in the runtime.
pub struct PhysicalContainer;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<super::logical::PortMapping>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<super::logical::Mount>,
    /// Runtime container name; defaults to `<namespace>-<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
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

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ContainerPhase {
    /// Not created yet, or being created.
    #[default]
    Pending,
    Running,
    Exited,
    /// The runtime container was removed by someone else; it is never recreated.
    Missing,
    /// Terminal: the container cannot be created (missing image, name taken by a stranger).
    Failed,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhysicalContainerStatus {
    #[serde(default)]
    pub phase: ContainerPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Resource for PhysicalContainer {
    const KIND: &'static str = "PhysicalContainer";
    const NAMESPACED: bool = true;
    type Spec = PhysicalContainerSpec;
    type Status = PhysicalContainerStatus;
}

/// An image the runtime must have: pulled per `pullPolicy`, its first verified id pinned for the
/// resource's life. Deleting it never removes the runtime image.
pub struct ContainerImage;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PullPolicy {
    /// Pull even if present (once, to pin the id).
    Always,
    /// Pull only if not present.
    #[default]
    Missing,
    /// Never pull: wait for the image to be present.
    Never,
}

fn default_pull_retry_limit() -> u32 {
    3
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImageSpec {
    pub image: String,
    #[serde(default)]
    pub pull_policy: PullPolicy,
    /// Retries after the first failed pull: 0 means exactly one attempt.
    #[serde(default = "default_pull_retry_limit")]
    pub pull_retry_limit: u32,
}

impl Default for ContainerImageSpec {
    fn default() -> Self {
        ContainerImageSpec {
            image: String::new(),
            pull_policy: PullPolicy::default(),
            pull_retry_limit: default_pull_retry_limit(),
        }
    }
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ImagePhase {
    #[default]
    Pending,
    Pulling,
    Ready,
    /// Terminal: pulls failed more than `pullRetryLimit` times, or the image never verified.
    Failed,
    /// The pinned image disappeared from the runtime; it is not pulled again.
    Unavailable,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImageStatus {
    #[serde(default)]
    pub phase: ImagePhase,
    /// The first verified image id, pinned for the resource's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    #[serde(default)]
    pub pull_attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The last lines of pull progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<String>,
}

impl Resource for ContainerImage {
    const KIND: &'static str = "ContainerImage";
    const NAMESPACED: bool = true;
    type Spec = ContainerImageSpec;
    type Status = ContainerImageStatus;
}

pub(crate) fn validate_container_image(spec: &ContainerImageSpec) -> Vec<FieldError> {
    match validate_image_reference(&spec.image) {
        Ok(()) => Vec::new(),
        Err(message) => vec![FieldError::new("spec.image", message)],
    }
}

/// An exclusive lease: at most one live holder, acquired and renewed with resourceVersion
/// preconditions so that engine processes sharing a store contend for real.
pub struct Lease;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseSpec {
    /// What the lease serializes, e.g. a normalized image reference.
    pub key: String,
    /// The current holder; `None` when released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<crate::time::WallTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<crate::time::WallTime>,
    /// The holder loses the lease this long after its last renewal.
    pub duration_ms: u64,
}

impl LeaseSpec {
    /// Held by someone, and not expired at `now`.
    pub fn live_holder(&self, now: crate::time::WallTime) -> Option<&str> {
        let renewed = self.renew_time?;
        (renewed.0.saturating_add(self.duration_ms) > now.0).then_some(self.holder.as_deref()).flatten()
    }
}

/// Leases keep no status: everything is in the spec, written by the holder.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseStatus {}

impl Resource for Lease {
    const KIND: &'static str = "Lease";
    const NAMESPACED: bool = false;
    type Spec = LeaseSpec;
    type Status = LeaseStatus;
}

/// Validation of a physical container spec beyond its shape.
pub(crate) fn validate_physical_container(spec: &PhysicalContainerSpec) -> Vec<FieldError> {
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
        && !crate::store::is_dns_label(name)
    {
        errors.push(FieldError::new("spec.imageRef", format!("{name:?} is not a valid object name")));
    }
    if let Some(id) = &spec.container_id
        && (id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)))
    {
        errors.push(FieldError::new("spec.containerId", format!("{id:?} is not a container id or name")));
    }
    if let Some(name) = &spec.container_name
        && !is_runtime_name(name)
    {
        errors.push(FieldError::new(
            "spec.containerName",
            format!("{name:?} is not a valid container name: use [a-zA-Z0-9][a-zA-Z0-9_.-]*"),
        ));
    }
    errors
}

/// The spec may change only by setting `stop` (one-way).
pub(crate) fn validate_physical_container_update(
    old: &PhysicalContainerSpec,
    new: &PhysicalContainerSpec,
) -> Vec<FieldError> {
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

/// A Docker image reference: `[registry/]path[:tag][@sha256:digest]`, lowercase path.
pub fn validate_image_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err("must not be empty".into());
    }
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest {
        let hex = digest.strip_prefix("sha256:").ok_or("digest must start with sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{digest:?} is not a sha256 digest"));
        }
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if let Some(tag) = tag
        && (tag.is_empty() || tag.len() > 128 || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)))
    {
        return Err(format!("tag {tag:?} is not valid"));
    }
    let components: Vec<&str> = path.split('/').collect();
    for (i, component) in components.iter().enumerate() {
        let is_registry = i == 0 && components.len() > 1 && (component.contains('.') || component.contains(':'));
        let ok = if is_registry {
            !component.is_empty()
        } else {
            !component.is_empty()
                && component.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && component.as_bytes()[0].is_ascii_alphanumeric()
        };
        if !ok {
            return Err(format!("{reference:?} is not a valid image reference (path component {component:?})"));
        }
    }
    Ok(())
}

/// Docker's container name rule.
pub fn is_runtime_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references() {
        for ok in [
            "busybox",
            "busybox:latest",
            "docker.io/library/busybox:1.36",
            "localhost:5000/a/b:c",
            "x@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert_eq!(validate_image_reference(ok), Ok(()), "{ok}");
        }
        for bad in ["", "BusyBox", "busybox:", "a//b", "busybox@md5:12", "busy box"] {
            assert!(validate_image_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stop_is_one_way_and_the_rest_immutable() {
        let old = PhysicalContainerSpec { image: Some("a".into()), ..Default::default() };
        let stopped = PhysicalContainerSpec { stop: true, ..old.clone() };
        assert!(validate_physical_container_update(&old, &stopped).is_empty());
        assert_eq!(validate_physical_container_update(&stopped, &old)[0].path, "spec.stop");
        let other = PhysicalContainerSpec { image: Some("b".into()), ..old.clone() };
        assert_eq!(validate_physical_container_update(&old, &other)[0].path, "spec");
    }
}

/// The canonical form of an image reference, as Docker resolves it: `busybox`,
/// `busybox:latest` and `docker.io/library/busybox:latest` all become
/// `docker.io/library/busybox:latest`. A digest reference keeps its digest and drops no tag.
pub fn normalize_image_reference(reference: &str) -> String {
    let (name, digest) = match reference.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (reference, None),
    };
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => (first, rest),
        _ => ("docker.io", name),
    };
    let registry = if registry == "index.docker.io" { "docker.io" } else { registry };
    let path =
        if registry == "docker.io" && !path.contains('/') { format!("library/{path}") } else { path.to_string() };
    let mut full = format!("{registry}/{path}");
    let last = full.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && digest.is_none() {
        full.push_str(":latest");
    }
    if let Some(digest) = digest {
        full.push('@');
        full.push_str(digest);
    }
    full
}

/// The short form Docker shows in `RepoTags`: `busybox:latest`, `drydock-test/busybox:latest`,
/// `quay.io/a/b:1`.
pub fn familiar_image_reference(reference: &str) -> String {
    let full = normalize_image_reference(reference);
    full.strip_prefix("docker.io/library/")
        .or_else(|| full.strip_prefix("docker.io/"))
        .map_or_else(|| full.clone(), str::to_string)
}

#[cfg(test)]
mod normalize_tests {
    use super::normalize_image_reference as n;

    #[test]
    fn one_key_per_image() {
        assert_eq!(n("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(n("busybox:latest"), n("docker.io/library/busybox:latest"));
        assert_eq!(n("library/busybox"), n("busybox"));
        assert_eq!(n("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(n("quay.io/a/b:1"), "quay.io/a/b:1");
        let d = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(n(&format!("busybox@{d}")), format!("docker.io/library/busybox@{d}"));
        assert_ne!(n(&format!("busybox@{d}")), n("busybox"));
    }

    /// Docker's documented rules: the default registry is docker.io, single-component names live
    /// under library/, a missing tag means latest, a first component with a dot, a colon or
    /// `localhost` is a registry host, and a digest names content on its own.
    #[test]
    fn normalization_table() {
        let d = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
        let table: &[(&str, String)] = &[
            ("busybox", "docker.io/library/busybox:latest".into()),
            ("busybox:1.36", "docker.io/library/busybox:1.36".into()),
            ("library/busybox", "docker.io/library/busybox:latest".into()),
            ("docker.io/busybox", "docker.io/library/busybox:latest".into()),
            ("docker.io/library/busybox:latest", "docker.io/library/busybox:latest".into()),
            ("bitnami/redis", "docker.io/bitnami/redis:latest".into()),
            ("localhost/app", "localhost/app:latest".into()),
            ("localhost:5000/app:v1", "localhost:5000/app:v1".into()),
            ("127.0.0.1:5487/drydock-test/busybox", "127.0.0.1:5487/drydock-test/busybox:latest".into()),
            ("ghcr.io/owner/image", "ghcr.io/owner/image:latest".into()),
            (&*Box::leak(format!("busybox@{d}").into_boxed_str()), format!("docker.io/library/busybox@{d}")),
            (&*Box::leak(format!("busybox:1.36@{d}").into_boxed_str()), format!("docker.io/library/busybox:1.36@{d}")),
        ];
        for (input, want) in table {
            assert_eq!(&n(input), want, "{input}");
        }
    }

    #[test]
    fn familiar_forms() {
        use super::familiar_image_reference as f;
        assert_eq!(f("docker.io/library/busybox"), "busybox:latest");
        assert_eq!(f("drydock-test/busybox"), "drydock-test/busybox:latest");
        assert_eq!(f("quay.io/a/b:1"), "quay.io/a/b:1");
    }
}
