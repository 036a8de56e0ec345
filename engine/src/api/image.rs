//! `ContainerImage`: an image the runtime must have, pulled by policy (or built from a context
//! directory) and pinned by id.

use super::object::Resource;
use super::registry::KindInfo;
use super::runtime_names::validate_image_reference;
use super::validation::FieldError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An image the runtime must have: pulled per `pullPolicy`, its first verified id pinned for the
/// resource's life. Deleting it never removes the runtime image.
pub struct ContainerImage;

/// When to pull the image.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

/// How to build an image instead of pulling it (`docker build`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageBuildSpec {
    /// Absolute path of the context directory on the runtime's host.
    pub context: String,
    /// The Dockerfile's path inside the context (`Dockerfile` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
    /// Build arguments (`--build-arg`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub build_args: BTreeMap<String, String>,
    /// The stage to build; the last one if none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Labels the built image carries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// An image the runtime must have: pulled per `pullPolicy` (or built), its first verified id
/// pinned for the object's life.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImageSpec {
    /// The reference to pull; with `build`, the tag the built image gets.
    pub image: String,
    /// Build the image (once, to pin its id, whatever is present under the tag) instead of
    /// pulling it. Its output is the image's `stdout`, as a pull's is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<ImageBuildSpec>,
    /// When to pull: `missing` (the default: only if not present), `always` (once, even if
    /// present, to pin the id) or `never` (wait for the image to be present).
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
            build: None,
            pull_policy: PullPolicy::default(),
            pull_retry_limit: default_pull_retry_limit(),
        }
    }
}

/// Where an image is in its life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum ImagePhase {
    #[default]
    Pending,
    Pulling,
    Ready,
    /// Terminal: pulls failed more than `pullRetryLimit` times, the runtime refused the
    /// reference, or the image never verified; `reason` says which.
    Failed,
    /// The pinned image disappeared from the runtime; it is not pulled again.
    Unavailable,
}

/// What the image's controller observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImageStatus {
    /// `Pending`, `Pulling`, `Ready`, `Failed` (terminal; `reason` says why) or `Unavailable`
    /// (the pinned image disappeared; it is not pulled again).
    #[serde(default)]
    pub phase: ImagePhase,
    /// The first verified image id, pinned for the resource's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// How many pulls (or builds) were attempted.
    #[serde(default)]
    pub pull_attempts: u32,
    /// Why the phase is `Failed`: one of [`super::reasons`].
    #[schemars(description = "Why the phase is `Failed`: a machine-readable reason (CamelCase).")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The cause, in words.
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

pub(crate) fn validate(spec: &ContainerImageSpec) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Err(message) = validate_image_reference(&spec.image) {
        errors.push(FieldError::new("spec.image", message));
    }
    if let Some(build) = &spec.build {
        if spec.pull_policy == PullPolicy::Never {
            errors.push(FieldError::new(
                "spec.pullPolicy",
                "pullPolicy never cannot be used with spec.build: a build is how the image is made",
            ));
        }
        if !build.context.starts_with('/') {
            errors.push(FieldError::new(
                "spec.build.context",
                format!("{:?} must be an absolute path on the runtime's host", build.context),
            ));
        }
        if let Some(dockerfile) = &build.dockerfile
            && (dockerfile.is_empty() || dockerfile.starts_with('/') || dockerfile.split('/').any(|p| p == ".."))
        {
            errors.push(FieldError::new(
                "spec.build.dockerfile",
                format!("{dockerfile:?} must be a path inside the context"),
            ));
        }
    }
    errors
}

/// The spec is immutable.
pub(crate) fn validate_update(old: &ContainerImageSpec, new: &ContainerImageSpec) -> Vec<FieldError> {
    if old == new { Vec::new() } else { vec![FieldError::new("spec", "the spec of a ContainerImage is immutable")] }
}

/// `ContainerImage`'s registration: settled once ready, failed or unavailable.
pub fn kind_info() -> KindInfo {
    KindInfo::typed::<ContainerImage>(validate)
        .with_update_check::<ContainerImage>(validate_update)
        .with_names("containerimages", &["img", "imgs"])
        .with_description(
            "An image the runtime must have: pulled per pullPolicy (or built), its first verified id pinned \
             for the object's life. Deleting it never removes the runtime image.",
        )
        .with_settled::<ContainerImage>(|_, s| {
            matches!(s.phase, ImagePhase::Ready | ImagePhase::Failed | ImagePhase::Unavailable)
        })
        .with_cleanup_rank(40)
}
