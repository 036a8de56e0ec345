//! What clients and external actors do during a run: a list of timed operations.
//!
//! A workload is plain data (serde), so a run can be saved and replayed without the generator
//! that made it.

use drydock_engine::MonoTime;
use drydock_engine::api::PullPolicy;
pub use drydock_engine::store::Propagation;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One client operation against the store. Objects are named; uids are looked up when the
/// operation runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum ClientOp {
    CreateNamespace {
        name: String,
        /// Assign the namespace to engine process N (annotation `drydock.dev/engine`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        engine: Option<usize>,
        /// The workload annotation (`drydock.dev/workload`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workload: Option<String>,
    },
    /// Create a logical container.
    CreateLogical {
        namespace: String,
        name: String,
        spec: Box<drydock_engine::api::logical::LogicalContainerSpec>,
    },
    DeleteLogical {
        namespace: String,
        name: String,
        /// How the delete propagates to dependents (background unless said).
        #[serde(default, skip_serializing_if = "is_background")]
        propagation: Propagation,
    },
    /// Set `spec.stop` on a logical container.
    StopLogical {
        namespace: String,
        name: String,
    },
    DeleteNamespace {
        name: String,
    },
    CreateImage {
        namespace: String,
        name: String,
        image: String,
        #[serde(default)]
        pull_policy: PullPolicy,
        #[serde(default)]
        pull_retry_limit: u32,
    },
    DeleteImage {
        namespace: String,
        name: String,
    },
    CreateContainer(ContainerOp),
    /// Set `spec.stop`.
    StopContainer {
        namespace: String,
        name: String,
    },
    DeleteContainer {
        namespace: String,
        name: String,
        /// How the delete propagates to dependents (background unless said).
        #[serde(default, skip_serializing_if = "is_background")]
        propagation: Propagation,
    },
    /// Someone outside drydock acts on the runtime or the registry.
    External(ExternalOp),
}

fn is_background(propagation: &Propagation) -> bool {
    *propagation == Propagation::Background
}

/// The spec of a physical container a client creates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerOp {
    pub namespace: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    /// Name of a container in the same namespace that owns this one (garbage collection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The reference to `owner` blocks its deletion in the foreground (`blockOwnerDeletion`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_owner_deletion: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_existing: bool,
    /// Caller labels, possibly trying to set system labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<drydock_engine::api::container::PortMapping>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<drydock_engine::api::container::Mount>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "external", rename_all = "kebab-case")]
pub enum ExternalOp {
    /// `docker rm -f NAME`.
    RemoveContainer { name: String },
    /// `docker create --name NAME IMAGE`: a stranger holding a name.
    CreateContainer { name: String, image: String },
    /// `docker rmi -f REFERENCE`.
    RemoveImage { reference: String },
    /// Someone pushes new content under a tag (the tag moves).
    Push { reference: String },
    /// A container an earlier life of engine process `creator` made for an object of `namespace`
    /// the store no longer has (a store restored from an older copy): the owner uid it carries
    /// belongs to no object there ever was. The harvester of that process must remove it, unless
    /// `retained`.
    Leftover { namespace: String, name: String, image: String, creator: usize, retained: bool },
    /// A process that then dies takes the pull lease of `reference` for `seconds`: engines must
    /// wait for it to expire, then take it over.
    HoldLease { reference: String, seconds: u64 },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedOp {
    /// Simulated nanoseconds since the start of the run.
    pub at: MonoTime,
    #[serde(flatten)]
    pub op: ClientOp,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// Images present in the runtime from the start (imported, no registry).
    pub images: Vec<String>,
    /// References published in the simulated registry from the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registry: Vec<String>,
    /// Sorted by time.
    pub ops: Vec<TimedOp>,
}

impl Workload {
    /// When the last operation runs.
    pub fn end(&self) -> MonoTime {
        self.ops.iter().map(|o| o.at).max().unwrap_or_default()
    }
}
