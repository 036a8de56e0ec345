//! What clients and external actors do during a run: a list of timed operations.
//!
//! A workload is plain data (serde), so a run can be saved and replayed without the generator
//! that made it.

use drydock_engine::MonoTime;
use drydock_engine::api::{ObjectKey, PullPolicy, Resource};
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
    /// Create an object of any registered kind (a user's own too), with its spec as JSON.
    Create {
        #[serde(flatten)]
        target: Target,
        #[serde(default = "empty_object", skip_serializing_if = "is_empty_object")]
        spec: serde_json::Value,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// An object of the same namespace (or, for a cluster-scoped object, a cluster-scoped
        /// one) that owns this one, looked up by name when the operation runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<Owner>,
    },
    /// Replace an object's spec, with its current resourceVersion as precondition.
    Update {
        #[serde(flatten)]
        target: Target,
        spec: serde_json::Value,
    },
    /// Apply a JSON merge patch (RFC 7386) to an object's spec: `null` removes a field.
    Patch {
        #[serde(flatten)]
        target: Target,
        patch: serde_json::Value,
    },
    /// Delete an object of any registered kind.
    Delete {
        #[serde(flatten)]
        target: Target,
        /// How the delete propagates to dependents (background unless said).
        #[serde(default, skip_serializing_if = "is_background")]
        propagation: Propagation,
    },
    /// A client reads an object's log (`drydock logs [-f]`), at its own pace.
    ReadLogs(LogRead),
}

/// A log reader: what it reads, how fast, and when it gives up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRead {
    #[serde(flatten)]
    pub target: Target,
    /// `stdout`, `stderr`, `system`, `startup_stdout`, `startup_stderr`.
    pub source: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow: bool,
    /// It reads every this many milliseconds...
    pub every_ms: u64,
    /// ...at most this many lines at a time.
    pub batch: usize,
    /// `tailLines`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_lines: Option<u64>,
    /// It closes the stream this long after it started reading, if the stream has not ended.
    pub close_after_ms: u64,
}

/// The object a generic operation acts on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl Target {
    /// An object of kind `R` (its namespace ignored for a cluster-scoped kind).
    pub fn of<R: Resource>(namespace: &str, name: &str) -> Self {
        Target {
            kind: R::KIND.to_string(),
            namespace: R::NAMESPACED.then(|| namespace.to_string()),
            name: name.to_string(),
        }
    }

    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.kind, self.namespace.as_deref(), &self.name)
    }
}

/// The owner of an object a [`ClientOp::Create`] makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub kind: String,
    pub name: String,
    /// The reference is the owner's controller reference.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub controller: bool,
    /// The reference blocks the owner's deletion in the foreground.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block_owner_deletion: bool,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

fn is_empty_object(value: &serde_json::Value) -> bool {
    value.as_object().is_some_and(serde_json::Map::is_empty)
}

impl ClientOp {
    /// Create an object of kind `R` with `spec`.
    pub fn create<R: Resource>(namespace: &str, name: &str, spec: &R::Spec) -> Self {
        ClientOp::Create {
            target: Target::of::<R>(namespace, name),
            spec: to_json(spec),
            labels: BTreeMap::new(),
            owner: None,
        }
    }

    /// Replace the spec of an object of kind `R`.
    pub fn update<R: Resource>(namespace: &str, name: &str, spec: &R::Spec) -> Self {
        ClientOp::Update { target: Target::of::<R>(namespace, name), spec: to_json(spec) }
    }

    /// Merge `patch` into the spec of an object of kind `R` (RFC 7386).
    pub fn patch<R: Resource>(namespace: &str, name: &str, patch: serde_json::Value) -> Self {
        ClientOp::Patch { target: Target::of::<R>(namespace, name), patch }
    }

    /// Delete an object of kind `R` in the background.
    pub fn delete<R: Resource>(namespace: &str, name: &str) -> Self {
        ClientOp::Delete { target: Target::of::<R>(namespace, name), propagation: Propagation::Background }
    }
}

fn to_json<T: Serialize>(spec: &T) -> serde_json::Value {
    // A spec type whose serialization fails is a bug of its definition (a map with non-string
    // keys): an empty spec lets admission say what is missing.
    serde_json::to_value(spec).unwrap_or_else(|_| empty_object())
}

/// Apply a JSON merge patch (RFC 7386) to `target`.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = empty_object();
    }
    if let serde_json::Value::Object(map) = target {
        for (name, value) in fields {
            if value.is_null() {
                map.remove(name);
            } else {
                merge_patch(map.entry(name.clone()).or_insert(serde_json::Value::Null), value);
            }
        }
    }
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
    /// `ContainerNetwork`s of the namespace to attach to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<drydock_engine::api::container::NetworkAttachment>,
    /// Files copied in before the first start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<drydock_engine::api::container::CopiedFile>,
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
    /// `docker network create NAME`: a stranger holding a network name.
    CreateNetwork { name: String },
    /// `docker network rm NAME`.
    RemoveNetwork { name: String },
    /// Someone writes a build context directory `dir` on the runtime's host: relative path ->
    /// contents (a Dockerfile among them).
    WriteContext { dir: String, files: BTreeMap<String, String> },
    /// `docker rm -f NAME` of a stranger's own container (not a fault: its owner's business).
    RemoveOwn { name: String },
    /// `docker volume create NAME`: a stranger holding a volume name.
    CreateVolume { name: String },
    /// `docker volume rm NAME`.
    RemoveVolume { name: String },
    /// `docker run -d --name NAME [--network NETWORK] [-v VOLUME:/data] busybox sleep SECONDS`:
    /// a stranger's container attached to a network or using a volume (drydock's or not), running
    /// for a while.
    RunUsing {
        name: String,
        seconds: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        volume: Option<String>,
    },
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_merge_patch_sets_replaces_and_removes_fields_as_rfc_7386_says() {
        let mut spec = json!({"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]});
        merge_patch(&mut spec, &json!({"a": "z", "c": {"f": null}, "list": [3], "new": 1}));
        assert_eq!(spec, json!({"a": "z", "c": {"d": "e"}, "list": [3], "new": 1}));
    }

    #[test]
    fn generic_operations_round_trip_through_json() {
        let ops = vec![
            ClientOp::Create {
                target: Target { kind: "Widget".into(), namespace: Some("ns".into()), name: "w".into() },
                spec: json!({"replicas": 2}),
                labels: BTreeMap::from([("app".into(), "x".into())]),
                owner: Some(Owner {
                    kind: "Widget".into(),
                    name: "o".into(),
                    controller: true,
                    block_owner_deletion: false,
                }),
            },
            ClientOp::Patch {
                target: Target { kind: "Widget".into(), namespace: None, name: "w".into() },
                patch: json!({"replicas": 3}),
            },
            ClientOp::Delete {
                target: Target { kind: "Widget".into(), namespace: Some("ns".into()), name: "w".into() },
                propagation: Propagation::Foreground,
            },
        ];
        for op in ops {
            let text = serde_json::to_string(&op).unwrap();
            assert_eq!(serde_json::from_str::<ClientOp>(&text).unwrap(), op, "{text}");
        }
    }
}
