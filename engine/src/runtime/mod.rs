//! The container-runtime contract: what the engine asks of a runtime and what it gets back.
//!
//! Modelled on Docker's observable behaviour, so the simulated runtime and the Docker adapter
//! implement the same thing:
//! - names are unique: creating a second container with a taken name is `Conflict`;
//! - anything missing (container, image) is `NotFound`;
//! - removing a running container without `force` is `Conflict`;
//! - starting a running container and stopping a stopped one succeed (Docker's 304);
//! - `Invalid` means the request can never succeed as written (Docker's 400): retrying it is
//!   pointless, the object must be fixed;
//! - `Transient` means the runtime failed this time (a 5xx) and may not the next;
//! - `Uncertain` means the request may or may not have been applied (a lost reply): the caller
//!   must verify, e.g. by listing containers with its own uid label, before retrying.
//!
//! A container that exists but failed to start reports Docker's error text and exit code in
//! [`ContainerInfo`].
//!
//! Networks, volumes, builds and copied files are in [`resources`]; their requests are here with
//! the rest, each with the answers Docker 20.10 gives (observed, and pinned by the conformance
//! cases).

mod resources;

pub use resources::{
    BUILTIN_NETWORKS, ImageBuild, NetworkCreate, NetworkInfo, VolumeCreate, VolumeInfo, is_builtin_network,
};

use crate::api::container::{CopiedFile, Mount, NetworkAttachment, PortMapping, Protocol};
use crate::time::WallTime;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerCreate {
    pub name: String,
    pub image: String,
    #[serde(default)]
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Ports to publish; a port without a host port gets one picked by the runtime at start.
    #[serde(default)]
    pub ports: Vec<PortMapping>,
    /// Bind mounts (host path or volume name -> container path).
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// Networks to attach, by runtime network id or name, with their aliases. None: the
    /// runtime's default network (`bridge`). Docker takes only one at create, so its adapter
    /// connects the others before it answers. Docker checks none of them at create (nor at a
    /// connect while the container is not running): a network that does not exist fails the
    /// container's start with `NotFound` ("network N not found"), as does one removed since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<NetworkAttachment>,
}

/// A port the runtime published for a running container.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PublishedPort {
    pub container_port: u16,
    pub protocol: Protocol,
    pub host_port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RuntimeRequest {
    CreateContainer(ContainerCreate),
    StartContainer {
        id: String,
    },
    StopContainer {
        id: String,
        timeout_secs: u32,
    },
    RemoveContainer {
        id: String,
        force: bool,
    },
    /// By id or name.
    InspectContainer {
        id: String,
    },
    /// Containers (running or not) carrying every one of `labels`.
    ListContainers {
        labels: BTreeMap<String, String>,
    },
    InspectImage {
        reference: String,
    },
    /// Pull an image from its registry; progress lines are captured in the reply. The image's
    /// identity comes from a following `InspectImage`, never from parsing progress.
    PullImage {
        reference: String,
    },
    /// Remove an image, Docker's way. By id: `Conflict` while any container uses it, and while a
    /// running one does even with `force`. By tag: removes the tag; the image itself goes only with
    /// its last tag, which is `Conflict` while a container uses it unless `force` (then the image
    /// stays, untagged, under a running container). The engine never removes images it pulled.
    RemoveImage {
        reference: String,
        force: bool,
    },
    /// The lifecycle events of one container at or after `since`, oldest first.
    ContainerEvents {
        id: String,
        since: WallTime,
    },
    /// Copy files into a container (created or running): Docker's archive upload, parent
    /// directories made as needed. `NotFound` for a missing container; `Invalid` for a file the
    /// container's file system refuses (under a read-only mount, below a file, a full disk),
    /// the files before it written, those after it not.
    CopyFiles {
        id: String,
        files: Vec<CopiedFile>,
    },
    /// Build an image from a context directory on the runtime's host and tag it; the build's
    /// output is in the reply (`Built`). As with pulls, the image's id comes from a following
    /// `InspectImage` of the tag. A build that fails (a step exits non-zero, a bad Dockerfile)
    /// is `Invalid` with the builder's message: the same inputs fail the same way.
    BuildImage(ImageBuild),
    /// Create a network; a name already taken is `Conflict` (drydock always asks Docker to check
    /// duplicates), a built-in name is `Invalid` (Docker's 403). Replies `Created { id }`.
    CreateNetwork(NetworkCreate),
    /// By id or name: `NotFound` if none.
    InspectNetwork {
        id: String,
    },
    /// Networks carrying every one of `labels`.
    ListNetworks {
        labels: BTreeMap<String, String>,
    },
    /// Remove a network: `Conflict` while a running container is attached (Docker refuses
    /// networks with active endpoints; created and stopped containers do not count, and fail to
    /// start afterwards), `Invalid` for a built-in network, `NotFound` if none.
    RemoveNetwork {
        id: String,
    },
    /// Attach container `container` to `network` with `aliases`. A container that is not
    /// running is only recorded as attached (the network is looked up at its start; a second
    /// connect changes nothing); a running one needs the network (`NotFound`) and is `Conflict`
    /// if already attached. `NotFound` for a missing container.
    ConnectNetwork {
        network: String,
        container: String,
        #[serde(default)]
        aliases: Vec<String>,
    },
    /// Detach container `container` from `network` (never forced). `NotFound` for a missing
    /// container, and for one not attached to the network (Docker's 500 "is not connected").
    DisconnectNetwork {
        network: String,
        container: String,
    },
    /// Create a volume. A name already taken answers the existing volume, its labels unchanged
    /// (Docker's create is idempotent): the caller tells its own by its labels. Replies
    /// `Volume`.
    CreateVolume(VolumeCreate),
    InspectVolume {
        name: String,
    },
    /// Volumes carrying every one of `labels`.
    ListVolumes {
        labels: BTreeMap<String, String>,
    },
    /// Remove a volume, never forced (on Podman a forced removal deletes the containers using
    /// it): `Conflict` while any container, in any state, mounts it; `NotFound` if none.
    RemoveVolume {
        name: String,
    },
}

impl RuntimeRequest {
    /// Whether the request only reads the runtime (inspect, list, events) and changes nothing in
    /// it. The one place runtime requests are classified: the engine's diagnostics write a line
    /// for each request that changes the world, the simulator's efficiency check counts them.
    /// An exhaustive match, so a new request does not compile until it is classified here.
    pub fn is_read(&self) -> bool {
        match self {
            RuntimeRequest::InspectContainer { .. }
            | RuntimeRequest::ListContainers { .. }
            | RuntimeRequest::InspectImage { .. }
            | RuntimeRequest::ContainerEvents { .. }
            | RuntimeRequest::InspectNetwork { .. }
            | RuntimeRequest::ListNetworks { .. }
            | RuntimeRequest::InspectVolume { .. }
            | RuntimeRequest::ListVolumes { .. } => true,
            RuntimeRequest::CreateContainer(_)
            | RuntimeRequest::StartContainer { .. }
            | RuntimeRequest::StopContainer { .. }
            | RuntimeRequest::RemoveContainer { .. }
            | RuntimeRequest::PullImage { .. }
            | RuntimeRequest::RemoveImage { .. }
            | RuntimeRequest::CopyFiles { .. }
            | RuntimeRequest::BuildImage(_)
            | RuntimeRequest::CreateNetwork(_)
            | RuntimeRequest::RemoveNetwork { .. }
            | RuntimeRequest::ConnectNetwork { .. }
            | RuntimeRequest::DisconnectNetwork { .. }
            | RuntimeRequest::CreateVolume(_)
            | RuntimeRequest::RemoveVolume { .. } => false,
        }
    }

    /// Whether the request changes the runtime (creates, starts, stops, removes, pulls, builds,
    /// copies, connects): the negation of [`RuntimeRequest::is_read`].
    pub fn changes_world(&self) -> bool {
        !self.is_read()
    }

    /// Short form for traces: `create ns-a`, `start 3f2a…`.
    pub fn describe(&self) -> String {
        match self {
            RuntimeRequest::CreateContainer(c) => format!("create {} from {}", c.name, c.image),
            RuntimeRequest::StartContainer { id } => format!("start {}", short(id)),
            RuntimeRequest::StopContainer { id, .. } => format!("stop {}", short(id)),
            RuntimeRequest::RemoveContainer { id, force } => format!("remove {} force={force}", short(id)),
            RuntimeRequest::InspectContainer { id } => format!("inspect {}", short(id)),
            RuntimeRequest::ListContainers { labels } => format!("list {}", label_list(labels)),
            RuntimeRequest::InspectImage { reference } => format!("inspect-image {reference}"),
            RuntimeRequest::ContainerEvents { id, .. } => format!("events {}", short(id)),
            RuntimeRequest::PullImage { reference } => format!("pull {reference}"),
            RuntimeRequest::RemoveImage { reference, force } => format!("remove-image {reference} force={force}"),
            RuntimeRequest::CopyFiles { id, files } => format!("copy {} file(s) to {}", files.len(), short(id)),
            RuntimeRequest::BuildImage(b) => format!("build {} from {}", b.tag, b.context),
            RuntimeRequest::CreateNetwork(n) => format!("create-network {}", n.name),
            RuntimeRequest::InspectNetwork { id } => format!("inspect-network {}", short(id)),
            RuntimeRequest::ListNetworks { labels } => format!("list-networks {}", label_list(labels)),
            RuntimeRequest::RemoveNetwork { id } => format!("remove-network {}", short(id)),
            RuntimeRequest::ConnectNetwork { network, container, .. } => {
                format!("connect {} to {}", short(container), short(network))
            }
            RuntimeRequest::DisconnectNetwork { network, container } => {
                format!("disconnect {} from {}", short(container), short(network))
            }
            RuntimeRequest::CreateVolume(v) => format!("create-volume {}", v.name),
            RuntimeRequest::InspectVolume { name } => format!("inspect-volume {name}"),
            RuntimeRequest::ListVolumes { labels } => format!("list-volumes {}", label_list(labels)),
            RuntimeRequest::RemoveVolume { name } => format!("remove-volume {name}"),
        }
    }
}

fn label_list(labels: &BTreeMap<String, String>) -> String {
    let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={}", short(v))).collect();
    l.join(",")
}

/// The first 12 characters of an id, as `docker ps` shows it.
pub fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ContainerState {
    Created,
    Running,
    Exited,
    /// Being removed: it is about to be gone (Docker's `removing`).
    Removing,
}

/// A container's labels, shared: a container's labels never change after its create, and they
/// travel in every inspect, list and event about it. Cloning them is a count, not a copy of a
/// dozen strings (a runtime with a thousand containers copied cold labels on every inspect).
pub type Labels = std::sync::Arc<BTreeMap<String, String>>;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerInfo {
    pub id: String,
    pub name: String,
    pub image: String,
    pub labels: Labels,
    pub state: ContainerState,
    /// Set once the container has exited, or failed to start (Docker's 127 for a missing command).
    pub exit_code: Option<i64>,
    /// Why the container failed to start, as the runtime said it (Docker's `State.Error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Published ports, while running.
    #[serde(default)]
    pub ports: Vec<PublishedPort>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageInfo {
    pub id: String,
    pub tags: Vec<String>,
}

/// A container lifecycle transition, as Docker's event stream reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventAction {
    Create,
    Start,
    /// The main process ended (by itself, or stopped, or killed).
    Die {
        exit_code: Option<i64>,
    },
    Destroy,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeEvent {
    pub container_id: String,
    pub action: EventAction,
    pub time: WallTime,
    /// The container's labels, so an event can be traced to the object it was created for.
    #[serde(default)]
    pub labels: Labels,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RuntimeReply {
    Created {
        id: String,
    },
    /// Start, stop, remove.
    Done,
    Container(ContainerInfo),
    Containers(Vec<ContainerInfo>),
    Image(ImageInfo),
    Events(Vec<RuntimeEvent>),
    /// A pull finished; the progress it printed, line by line.
    Pulled {
        progress: Vec<String>,
    },
    /// A build finished; what it printed, line by line.
    Built {
        progress: Vec<String>,
    },
    Network(NetworkInfo),
    Networks(Vec<NetworkInfo>),
    Volume(VolumeInfo),
    Volumes(Vec<VolumeInfo>),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum RuntimeError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    /// The request may have been applied; verify before retrying.
    #[error("outcome unknown: {0}")]
    Uncertain(String),
    /// The request can never succeed as written (Docker's 400): nothing was applied.
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("runtime error: {0}")]
    Transient(String),
}

impl RuntimeError {
    pub fn code(&self) -> &'static str {
        match self {
            RuntimeError::NotFound(_) => "NotFound",
            RuntimeError::Conflict(_) => "Conflict",
            RuntimeError::Uncertain(_) => "Uncertain",
            RuntimeError::Invalid(_) => "Invalid",
            RuntimeError::Transient(_) => "Transient",
        }
    }
}

pub type RuntimeResult = Result<RuntimeReply, RuntimeError>;

impl fmt::Display for ContainerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContainerState::Created => "created",
            ContainerState::Running => "running",
            ContainerState::Exited => "exited",
            ContainerState::Removing => "removing",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request of every kind, with what `is_read` must say of it.
    fn every_request() -> Vec<(RuntimeRequest, bool)> {
        let id = || "c1".to_string();
        let labels = BTreeMap::from([("drydock.dev/owner".to_string(), "u1".to_string())]);
        vec![
            (RuntimeRequest::CreateContainer(ContainerCreate::default()), false),
            (RuntimeRequest::StartContainer { id: id() }, false),
            (RuntimeRequest::StopContainer { id: id(), timeout_secs: 10 }, false),
            (RuntimeRequest::RemoveContainer { id: id(), force: true }, false),
            (RuntimeRequest::InspectContainer { id: id() }, true),
            (RuntimeRequest::ListContainers { labels: labels.clone() }, true),
            (RuntimeRequest::InspectImage { reference: "busybox".into() }, true),
            (RuntimeRequest::PullImage { reference: "busybox".into() }, false),
            (RuntimeRequest::RemoveImage { reference: "busybox".into(), force: false }, false),
            (RuntimeRequest::ContainerEvents { id: id(), since: WallTime(0) }, true),
            (RuntimeRequest::CopyFiles { id: id(), files: Vec::new() }, false),
            (RuntimeRequest::BuildImage(ImageBuild::default()), false),
            (RuntimeRequest::CreateNetwork(NetworkCreate::default()), false),
            (RuntimeRequest::InspectNetwork { id: id() }, true),
            (RuntimeRequest::ListNetworks { labels: labels.clone() }, true),
            (RuntimeRequest::RemoveNetwork { id: id() }, false),
            (RuntimeRequest::ConnectNetwork { network: "n".into(), container: id(), aliases: Vec::new() }, false),
            (RuntimeRequest::DisconnectNetwork { network: "n".into(), container: id() }, false),
            (RuntimeRequest::CreateVolume(VolumeCreate::default()), false),
            (RuntimeRequest::InspectVolume { name: "v".into() }, true),
            (RuntimeRequest::ListVolumes { labels }, true),
            (RuntimeRequest::RemoveVolume { name: "v".into() }, false),
        ]
    }

    #[test]
    fn inspections_lists_and_events_read_everything_else_changes_the_world() {
        for (request, read) in every_request() {
            assert_eq!(request.is_read(), read, "{}", request.describe());
            assert_eq!(request.changes_world(), !read, "{}", request.describe());
            let verb = request.describe().split([' ', '-']).next().unwrap_or_default().to_string();
            let reading_verb = ["inspect", "list", "events"].contains(&verb.as_str());
            assert_eq!(reading_verb, read, "`{}` reads by its name, and only then", request.describe());
        }
    }
}
