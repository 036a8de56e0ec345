//! `ContainerImage`: an image the runtime must have, pulled by policy and pinned by id.

use super::object::Resource;
use super::runtime_names::validate_image_reference;
use super::validation::FieldError;
use serde::{Deserialize, Serialize};

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
    /// Terminal: pulls failed more than `pullRetryLimit` times, the runtime refused the
    /// reference, or the image never verified; `reason` says which.
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
    /// Why the phase is `Failed`: one of [`super::reasons`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    match validate_image_reference(&spec.image) {
        Ok(()) => Vec::new(),
        Err(message) => vec![FieldError::new("spec.image", message)],
    }
}

/// The spec is immutable.
pub(crate) fn validate_update(old: &ContainerImageSpec, new: &ContainerImageSpec) -> Vec<FieldError> {
    if old == new { Vec::new() } else { vec![FieldError::new("spec", "the spec of a ContainerImage is immutable")] }
}
