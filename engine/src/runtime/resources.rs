//! The runtime's resources beside containers and images: networks, volumes, image builds.

pub use crate::api::runtime_resource::{BUILTIN_NETWORKS, is_builtin_network};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkCreate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeCreate {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeInfo {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

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
