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
//! cases). What of a build context reaches the builder (`.dockerignore`) is in [`dockerignore`].

pub mod dockerignore;
mod paths;
mod resources;

pub use paths::clean_path;
pub use resources::{BUILTIN_NETWORKS, ImageBuild, is_builtin_network};

pub use crate::api::RuntimeObject;
use crate::api::container::{CopiedFile, Mount, NetworkAttachment, PortMapping, Protocol};
pub use crate::api::network::{NetworkCreate, NetworkInfo};
pub use crate::api::volume::{VolumeCreate, VolumeInfo};
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
    /// Remove a container (`force`: also a running one) with its anonymous volumes, those its
    /// image's `VOLUME`s made (Docker's `rm -v`): nothing else would ever remove them, as they
    /// carry no label. Its named volumes stay.
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

/// What a runtime request does to what it acts on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// Inspect, list, events: changes nothing.
    Read,
    Create,
    Start,
    Stop,
    Remove,
    Pull,
    Build,
    /// Files copied into a container.
    Copy,
    Connect,
    Disconnect,
}

/// Where [`RuntimeRequest::summarize`], [`RuntimeReply::summarize`] and
/// [`RuntimeError::summarize`] put what a trace keeps of a request or its outcome: a stable code
/// for its kind, then its fields in a fixed order. The simulator's trace digest hashes this (its
/// words are the `Display`s, which may be reworded freely); a new request or reply takes a new
/// code and never reuses or renumbers one.
///
/// The codes are the contract's own block of the trace's tag numbers ([`is_contract_code`]):
/// requests from 144, replies from 176, a failed request 188; free today are 166 to 175 and 189
/// to 191, and past those the block goes on from 512. The simulator's own records take the
/// other numbers.
pub trait Fields {
    fn code(&mut self, code: u16);
    fn text(&mut self, value: &str);
    fn flag(&mut self, value: bool);
    fn count(&mut self, value: usize);
    fn labels(&mut self, labels: &BTreeMap<String, String>);
    fn state(&mut self, state: ContainerState);
}

impl RuntimeRequest {
    /// What the request acts on and what it does to it. The one place runtime requests are
    /// classified: the engine's diagnostics write a line for each request that changes the
    /// world, the simulator's efficiency check counts them and its faults lose the replies of
    /// creates and removes. An exhaustive match, so a new request does not compile until it is
    /// classified here.
    pub fn class(&self) -> (RuntimeObject, Verb) {
        use RuntimeObject::{Container, Image, Network, Volume};
        match self {
            RuntimeRequest::CreateContainer(_) => (Container, Verb::Create),
            RuntimeRequest::StartContainer { .. } => (Container, Verb::Start),
            RuntimeRequest::StopContainer { .. } => (Container, Verb::Stop),
            RuntimeRequest::RemoveContainer { .. } => (Container, Verb::Remove),
            RuntimeRequest::InspectContainer { .. }
            | RuntimeRequest::ListContainers { .. }
            | RuntimeRequest::ContainerEvents { .. } => (Container, Verb::Read),
            RuntimeRequest::CopyFiles { .. } => (Container, Verb::Copy),
            RuntimeRequest::InspectImage { .. } => (Image, Verb::Read),
            RuntimeRequest::PullImage { .. } => (Image, Verb::Pull),
            RuntimeRequest::RemoveImage { .. } => (Image, Verb::Remove),
            RuntimeRequest::BuildImage(_) => (Image, Verb::Build),
            RuntimeRequest::CreateNetwork(_) => (Network, Verb::Create),
            RuntimeRequest::InspectNetwork { .. } | RuntimeRequest::ListNetworks { .. } => (Network, Verb::Read),
            RuntimeRequest::RemoveNetwork { .. } => (Network, Verb::Remove),
            RuntimeRequest::ConnectNetwork { .. } => (Network, Verb::Connect),
            RuntimeRequest::DisconnectNetwork { .. } => (Network, Verb::Disconnect),
            RuntimeRequest::CreateVolume(_) => (Volume, Verb::Create),
            RuntimeRequest::InspectVolume { .. } | RuntimeRequest::ListVolumes { .. } => (Volume, Verb::Read),
            RuntimeRequest::RemoveVolume { .. } => (Volume, Verb::Remove),
        }
    }

    /// Whether the request only reads the runtime (inspect, list, events) and changes nothing in
    /// it (see [`RuntimeRequest::class`]).
    pub fn is_read(&self) -> bool {
        self.class().1 == Verb::Read
    }

    /// Whether the request changes the runtime (creates, starts, stops, removes, pulls, builds,
    /// copies, connects): the negation of [`RuntimeRequest::is_read`].
    pub fn changes_world(&self) -> bool {
        !self.is_read()
    }

    /// The one runtime object the request names (a container's, network's or volume's id or
    /// name, an image's reference, a build's tag), if it names one: lists and creates of
    /// containers, networks and volumes name none yet. With [`RuntimeRequest::class`], what a
    /// checker needs to know which object a request touches without a list of requests.
    pub fn target(&self) -> Option<&str> {
        match self {
            RuntimeRequest::CreateContainer(_)
            | RuntimeRequest::ListContainers { .. }
            | RuntimeRequest::CreateNetwork(_)
            | RuntimeRequest::ListNetworks { .. }
            | RuntimeRequest::CreateVolume(_)
            | RuntimeRequest::ListVolumes { .. } => None,
            RuntimeRequest::StartContainer { id }
            | RuntimeRequest::StopContainer { id, .. }
            | RuntimeRequest::RemoveContainer { id, .. }
            | RuntimeRequest::InspectContainer { id }
            | RuntimeRequest::ContainerEvents { id, .. }
            | RuntimeRequest::CopyFiles { id, .. }
            | RuntimeRequest::InspectNetwork { id }
            | RuntimeRequest::RemoveNetwork { id } => Some(id),
            RuntimeRequest::ConnectNetwork { network, .. } | RuntimeRequest::DisconnectNetwork { network, .. } => {
                Some(network)
            }
            RuntimeRequest::InspectImage { reference }
            | RuntimeRequest::PullImage { reference }
            | RuntimeRequest::RemoveImage { reference, .. } => Some(reference),
            RuntimeRequest::BuildImage(b) => Some(&b.tag),
            RuntimeRequest::InspectVolume { name } | RuntimeRequest::RemoveVolume { name } => Some(name),
        }
    }

    /// Short form for traces: `create ns-a from busybox`, `start 3f2a…` (the `Display`).
    pub fn describe(&self) -> String {
        self.to_string()
    }

    /// What a trace keeps of the request: its code, then the fields its `Display` names (full
    /// ids, where the words shorten them); see [`Fields`].
    pub fn summarize(&self, out: &mut impl Fields) {
        match self {
            RuntimeRequest::CreateContainer(c) => {
                out.code(144);
                out.text(&c.name);
                out.text(&c.image);
            }
            RuntimeRequest::StartContainer { id } => coded(out, 145, id),
            RuntimeRequest::StopContainer { id, .. } => coded(out, 146, id),
            RuntimeRequest::RemoveContainer { id, force } => {
                coded(out, 147, id);
                out.flag(*force);
            }
            RuntimeRequest::InspectContainer { id } => coded(out, 148, id),
            RuntimeRequest::ListContainers { labels } => {
                out.code(149);
                out.labels(labels);
            }
            RuntimeRequest::InspectImage { reference } => coded(out, 150, reference),
            RuntimeRequest::ContainerEvents { id, .. } => coded(out, 151, id),
            RuntimeRequest::PullImage { reference } => coded(out, 152, reference),
            RuntimeRequest::RemoveImage { reference, force } => {
                coded(out, 153, reference);
                out.flag(*force);
            }
            RuntimeRequest::CopyFiles { id, files } => {
                coded(out, 154, id);
                out.count(files.len());
            }
            RuntimeRequest::BuildImage(b) => {
                coded(out, 155, &b.tag);
                out.text(&b.context);
            }
            RuntimeRequest::CreateNetwork(n) => coded(out, 156, &n.name),
            RuntimeRequest::InspectNetwork { id } => coded(out, 157, id),
            RuntimeRequest::ListNetworks { labels } => {
                out.code(158);
                out.labels(labels);
            }
            RuntimeRequest::RemoveNetwork { id } => coded(out, 159, id),
            RuntimeRequest::ConnectNetwork { network, container, .. } => {
                coded(out, 160, container);
                out.text(network);
            }
            RuntimeRequest::DisconnectNetwork { network, container } => {
                coded(out, 161, container);
                out.text(network);
            }
            RuntimeRequest::CreateVolume(v) => coded(out, 162, &v.name),
            RuntimeRequest::InspectVolume { name } => coded(out, 163, name),
            RuntimeRequest::ListVolumes { labels } => {
                out.code(164);
                out.labels(labels);
            }
            RuntimeRequest::RemoveVolume { name } => coded(out, 165, name),
        }
    }
}

/// Whether `code` is in the runtime contract's block of trace codes (see [`Fields`]): 144 to 191,
/// and 512 on.
pub fn is_contract_code(code: u16) -> bool {
    (144..=191).contains(&code) || code >= 512
}

/// A code and the one name or id it is about.
fn coded(out: &mut impl Fields, code: u16, name: &str) {
    out.code(code);
    out.text(name);
}

impl fmt::Display for RuntimeRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeRequest::CreateContainer(c) => write!(f, "create {} from {}", c.name, c.image),
            RuntimeRequest::StartContainer { id } => write!(f, "start {}", short(id)),
            RuntimeRequest::StopContainer { id, .. } => write!(f, "stop {}", short(id)),
            RuntimeRequest::RemoveContainer { id, force } => write!(f, "remove {} force={force}", short(id)),
            RuntimeRequest::InspectContainer { id } => write!(f, "inspect {}", short(id)),
            RuntimeRequest::ListContainers { labels } => write!(f, "list {}", LabelList(labels)),
            RuntimeRequest::InspectImage { reference } => write!(f, "inspect-image {reference}"),
            RuntimeRequest::ContainerEvents { id, .. } => write!(f, "events {}", short(id)),
            RuntimeRequest::PullImage { reference } => write!(f, "pull {reference}"),
            RuntimeRequest::RemoveImage { reference, force } => write!(f, "remove-image {reference} force={force}"),
            RuntimeRequest::CopyFiles { id, files } => write!(f, "copy {} file(s) to {}", files.len(), short(id)),
            RuntimeRequest::BuildImage(b) => write!(f, "build {} from {}", b.tag, b.context),
            RuntimeRequest::CreateNetwork(n) => write!(f, "create-network {}", n.name),
            RuntimeRequest::InspectNetwork { id } => write!(f, "inspect-network {}", short(id)),
            RuntimeRequest::ListNetworks { labels } => write!(f, "list-networks {}", LabelList(labels)),
            RuntimeRequest::RemoveNetwork { id } => write!(f, "remove-network {}", short(id)),
            RuntimeRequest::ConnectNetwork { network, container, .. } => {
                write!(f, "connect {} to {}", short(container), short(network))
            }
            RuntimeRequest::DisconnectNetwork { network, container } => {
                write!(f, "disconnect {} from {}", short(container), short(network))
            }
            RuntimeRequest::CreateVolume(v) => write!(f, "create-volume {}", v.name),
            RuntimeRequest::InspectVolume { name } => write!(f, "inspect-volume {name}"),
            RuntimeRequest::ListVolumes { labels } => write!(f, "list-volumes {}", LabelList(labels)),
            RuntimeRequest::RemoveVolume { name } => write!(f, "remove-volume {name}"),
        }
    }
}

/// Labels as a filter prints them: `k=v,k2=v2`, values shortened like ids.
struct LabelList<'a>(&'a BTreeMap<String, String>);

impl fmt::Display for LabelList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{key}={}", short(value))?;
        }
        Ok(())
    }
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

impl RuntimeReply {
    /// What a trace keeps of the reply: its code, then what its `Display` names (full ids, and
    /// how many items a list or a stream had); see [`Fields`].
    pub fn summarize(&self, out: &mut impl Fields) {
        match self {
            RuntimeReply::Created { id } => coded(out, 176, id),
            RuntimeReply::Done => out.code(177),
            RuntimeReply::Container(c) => {
                coded(out, 178, &c.id);
                out.state(c.state);
            }
            RuntimeReply::Containers(list) => counted(out, 179, list.len()),
            RuntimeReply::Image(i) => coded(out, 180, &i.id),
            RuntimeReply::Events(events) => counted(out, 181, events.len()),
            RuntimeReply::Pulled { progress } => counted(out, 182, progress.len()),
            RuntimeReply::Built { progress } => counted(out, 183, progress.len()),
            RuntimeReply::Network(n) => {
                coded(out, 184, &n.id);
                out.text(&n.name);
            }
            RuntimeReply::Networks(list) => counted(out, 185, list.len()),
            RuntimeReply::Volume(v) => coded(out, 186, &v.name),
            RuntimeReply::Volumes(list) => counted(out, 187, list.len()),
        }
    }
}

/// A code and a count.
fn counted(out: &mut impl Fields, code: u16, count: usize) {
    out.code(code);
    out.count(count);
}

impl fmt::Display for RuntimeReply {
    /// In short: `created 3f2a…`, `ok`, `3f2a… running`, `4 containers`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeReply::Created { id } => write!(f, "created {}", short(id)),
            RuntimeReply::Done => f.write_str("ok"),
            RuntimeReply::Container(c) => write!(f, "{} {}", short(&c.id), c.state),
            RuntimeReply::Containers(list) => write!(f, "{} containers", list.len()),
            RuntimeReply::Image(i) => write!(f, "image {}", short(&i.id)),
            RuntimeReply::Events(events) => write!(f, "{} events", events.len()),
            RuntimeReply::Pulled { progress } => write!(f, "pulled ({} progress lines)", progress.len()),
            RuntimeReply::Built { progress } => write!(f, "built ({} progress lines)", progress.len()),
            RuntimeReply::Network(n) => write!(f, "network {} {}", short(&n.id), n.name),
            RuntimeReply::Networks(list) => write!(f, "{} networks", list.len()),
            RuntimeReply::Volume(v) => write!(f, "volume {}", v.name),
            RuntimeReply::Volumes(list) => write!(f, "{} volumes", list.len()),
        }
    }
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

    /// What a trace keeps of a failed request: the failure's code and its kind
    /// ([`RuntimeError::code`]), not its message, which is Docker's words; see [`Fields`].
    pub fn summarize(&self, out: &mut impl Fields) {
        coded(out, 188, self.code());
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
mod tests;
