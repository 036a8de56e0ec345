//! Image builds, and the built-in networks. (The requests' types of the runtime resources a kind
//! stands for, networks and volumes, live with their kinds in [`crate::api`], as the parts of a
//! container's description the runtime shares live in [`crate::api::container`].)

pub use crate::api::runtime_resource::{BUILTIN_NETWORKS, is_builtin_network};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An image build: a context directory on the runtime's host, a Dockerfile in it, the tag the
/// result gets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageBuild {
    /// Absolute path of the context directory.
    pub context: String,
    /// Path of the Dockerfile, relative to the context.
    pub dockerfile: String,
    #[serde(default)]
    pub build_args: BTreeMap<String, String>,
    /// The stage to build; the last one if none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The reference the built image is tagged with.
    pub tag: String,
}
