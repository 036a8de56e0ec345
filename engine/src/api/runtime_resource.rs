//! What networks and volumes share: a runtime object created by name or tracked by id, its
//! phases, its status, and the validation of its names.

use super::validation::FieldError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The networks every Docker host has: never created, replaced or removed by drydock (Docker
/// refuses all three with 403).
pub const BUILTIN_NETWORKS: [&str; 3] = ["bridge", "host", "none"];

/// Whether `name` is one of [`BUILTIN_NETWORKS`].
pub fn is_builtin_network(name: &str) -> bool {
    BUILTIN_NETWORKS.contains(&name)
}

/// Where a network or volume is in its life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum ResourcePhase {
    /// Not created (or found) yet.
    #[default]
    Pending,
    /// It exists in the runtime; `runtimeId` names it.
    Ready,
    /// It was removed by someone else, or the one to track does not exist; it is never
    /// (re)created.
    Missing,
    /// Terminal: the runtime refused it, or its name is held by a stranger; `reason` says which.
    Failed,
}

/// What the controller of a network or volume observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeResourceStatus {
    /// `Pending`, `Ready`, `Missing` (removed by someone else, or the one to track does not
    /// exist; never recreated) or `Failed` (terminal; `reason` says why).
    #[serde(default)]
    pub phase: ResourcePhase,
    /// The runtime's id of it (a volume's is its name), once known; pinned for the object's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_id: Option<String>,
    /// Why the phase is `Failed` or `Missing`: one of [`super::reasons`].
    #[schemars(description = "Why the phase is `Failed` or `Missing`: a machine-readable reason (CamelCase).")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The cause, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Docker's rule for local volume names, which drydock applies to network names too (Docker
/// takes any network name; one that is not a simple word is trouble in every CLI).
pub const RESOURCE_NAME_RULE: &str = "a letter or digit, then letters, digits, '_', '.' or '-'";

/// Whether `name` follows [`RESOURCE_NAME_RULE`] (`[a-zA-Z0-9][a-zA-Z0-9_.-]+`, at most 128).
pub fn is_resource_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes[1..].iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

/// Exactly one of the name to create and the id to track may be set (neither: create under the
/// default name), each following the name rule; `replaceExisting` needs something to create.
pub(crate) fn validate_source(
    what: &str,
    name_field: (&str, Option<&String>),
    id_field: (&str, Option<&String>),
    replace_existing: bool,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let ((name_path, name), (id_path, id)) = (name_field, id_field);
    if name.is_some() && id.is_some() {
        errors.push(FieldError::new("spec", format!("at most one of spec.{name_path} and spec.{id_path} may be set")));
    }
    for (path, value) in [(name_path, name), (id_path, id)] {
        if let Some(value) = value
            && !is_resource_name(value)
        {
            errors.push(FieldError::new(
                format!("spec.{path}"),
                format!("{value:?} is not a valid {what} name: use {RESOURCE_NAME_RULE}"),
            ));
        }
    }
    if id.is_some() && replace_existing {
        errors.push(FieldError::new(
            "spec.replaceExisting",
            format!("a tracked {what} (spec.{id_path}) is never replaced: it is not drydock's to remove"),
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_follow_dockers_volume_rule() {
        for good in ["ab", "a1", "web-net", "data_1.v2"] {
            assert!(is_resource_name(good), "{good}");
        }
        for bad in ["", "a", "-a", ".a", "a b", "a/b", "a:b", &"x".repeat(129)] {
            assert!(!is_resource_name(bad), "{bad}");
        }
    }
}
