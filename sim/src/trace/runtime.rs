//! Runtime requests and results as the trace records them: which operation on which container,
//! image, network or volume; and what the daemon answered, summarized (an id and state, a count),
//! or its error code.
//!
//! A new runtime request is one variant here (the conversion's `match` has no wildcard, so a
//! request left out does not compile), with its rendering and its encoding.

use super::encode::{Encode, Encoder, encode_map};
use drydock_engine::runtime::{ContainerState, RuntimeReply, RuntimeRequest, RuntimeResult, short};
use std::collections::BTreeMap;
use std::fmt;

/// A runtime request, summarized: what its trace line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeOp<'a> {
    Create { name: &'a str, image: &'a str },
    Start { id: &'a str },
    Stop { id: &'a str },
    Remove { id: &'a str, force: bool },
    Inspect { id: &'a str },
    List { labels: &'a BTreeMap<String, String> },
    InspectImage { reference: &'a str },
    Events { id: &'a str },
    Pull { reference: &'a str },
    RemoveImage { reference: &'a str, force: bool },
    Copy { id: &'a str, files: usize },
    Build { tag: &'a str, context: &'a str },
    CreateNetwork { name: &'a str },
    InspectNetwork { id: &'a str },
    ListNetworks { labels: &'a BTreeMap<String, String> },
    RemoveNetwork { id: &'a str },
    Connect { container: &'a str, network: &'a str },
    Disconnect { container: &'a str, network: &'a str },
    CreateVolume { name: &'a str },
    InspectVolume { name: &'a str },
    ListVolumes { labels: &'a BTreeMap<String, String> },
    RemoveVolume { name: &'a str },
}

impl<'a> From<&'a RuntimeRequest> for RuntimeOp<'a> {
    fn from(request: &'a RuntimeRequest) -> Self {
        match request {
            RuntimeRequest::CreateContainer(c) => RuntimeOp::Create { name: &c.name, image: &c.image },
            RuntimeRequest::StartContainer { id } => RuntimeOp::Start { id },
            RuntimeRequest::StopContainer { id, .. } => RuntimeOp::Stop { id },
            RuntimeRequest::RemoveContainer { id, force } => RuntimeOp::Remove { id, force: *force },
            RuntimeRequest::InspectContainer { id } => RuntimeOp::Inspect { id },
            RuntimeRequest::ListContainers { labels } => RuntimeOp::List { labels },
            RuntimeRequest::InspectImage { reference } => RuntimeOp::InspectImage { reference },
            RuntimeRequest::PullImage { reference } => RuntimeOp::Pull { reference },
            RuntimeRequest::RemoveImage { reference, force } => RuntimeOp::RemoveImage { reference, force: *force },
            RuntimeRequest::ContainerEvents { id, .. } => RuntimeOp::Events { id },
            RuntimeRequest::CopyFiles { id, files } => RuntimeOp::Copy { id, files: files.len() },
            RuntimeRequest::BuildImage(b) => RuntimeOp::Build { tag: &b.tag, context: &b.context },
            RuntimeRequest::CreateNetwork(n) => RuntimeOp::CreateNetwork { name: &n.name },
            RuntimeRequest::InspectNetwork { id } => RuntimeOp::InspectNetwork { id },
            RuntimeRequest::ListNetworks { labels } => RuntimeOp::ListNetworks { labels },
            RuntimeRequest::RemoveNetwork { id } => RuntimeOp::RemoveNetwork { id },
            RuntimeRequest::ConnectNetwork { network, container, .. } => RuntimeOp::Connect { container, network },
            RuntimeRequest::DisconnectNetwork { network, container } => RuntimeOp::Disconnect { container, network },
            RuntimeRequest::CreateVolume(v) => RuntimeOp::CreateVolume { name: &v.name },
            RuntimeRequest::InspectVolume { name } => RuntimeOp::InspectVolume { name },
            RuntimeRequest::ListVolumes { labels } => RuntimeOp::ListVolumes { labels },
            RuntimeRequest::RemoveVolume { name } => RuntimeOp::RemoveVolume { name },
        }
    }
}

/// What the runtime answered, summarized; or its error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeOutcome<'a> {
    Created {
        id: &'a str,
    },
    Done,
    Container {
        id: &'a str,
        state: ContainerState,
    },
    Containers {
        count: usize,
    },
    Image {
        id: &'a str,
    },
    Events {
        count: usize,
    },
    /// A pull, with how many progress lines it printed.
    Pulled {
        progress: usize,
    },
    /// A build, with how many lines it printed.
    Built {
        progress: usize,
    },
    Network {
        id: &'a str,
        name: &'a str,
    },
    Networks {
        count: usize,
    },
    Volume {
        name: &'a str,
    },
    Volumes {
        count: usize,
    },
    /// An error, by its code (`NotFound`, `Conflict`...).
    Failed {
        code: &'static str,
    },
}

impl<'a> From<&'a RuntimeResult> for RuntimeOutcome<'a> {
    fn from(result: &'a RuntimeResult) -> Self {
        let reply = match result {
            Ok(reply) => reply,
            Err(error) => return RuntimeOutcome::Failed { code: error.code() },
        };
        match reply {
            RuntimeReply::Created { id } => RuntimeOutcome::Created { id },
            RuntimeReply::Done => RuntimeOutcome::Done,
            RuntimeReply::Container(c) => RuntimeOutcome::Container { id: &c.id, state: c.state },
            RuntimeReply::Containers(list) => RuntimeOutcome::Containers { count: list.len() },
            RuntimeReply::Image(i) => RuntimeOutcome::Image { id: &i.id },
            RuntimeReply::Events(events) => RuntimeOutcome::Events { count: events.len() },
            RuntimeReply::Pulled { progress } => RuntimeOutcome::Pulled { progress: progress.len() },
            RuntimeReply::Built { progress } => RuntimeOutcome::Built { progress: progress.len() },
            RuntimeReply::Network(n) => RuntimeOutcome::Network { id: &n.id, name: &n.name },
            RuntimeReply::Networks(list) => RuntimeOutcome::Networks { count: list.len() },
            RuntimeReply::Volume(v) => RuntimeOutcome::Volume { name: &v.name },
            RuntimeReply::Volumes(list) => RuntimeOutcome::Volumes { count: list.len() },
        }
    }
}

impl fmt::Display for RuntimeOp<'_> {
    /// As the runtime request describes itself: `create ns-a from nginx`, `start 3f2a…`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeOp::Create { name, image } => write!(f, "create {name} from {image}"),
            RuntimeOp::Start { id } => write!(f, "start {}", short(id)),
            RuntimeOp::Stop { id } => write!(f, "stop {}", short(id)),
            RuntimeOp::Remove { id, force } => write!(f, "remove {} force={force}", short(id)),
            RuntimeOp::Inspect { id } => write!(f, "inspect {}", short(id)),
            RuntimeOp::List { labels } => write!(f, "list {}", LabelList(labels)),
            RuntimeOp::InspectImage { reference } => write!(f, "inspect-image {reference}"),
            RuntimeOp::Events { id } => write!(f, "events {}", short(id)),
            RuntimeOp::Pull { reference } => write!(f, "pull {reference}"),
            RuntimeOp::RemoveImage { reference, force } => write!(f, "remove-image {reference} force={force}"),
            RuntimeOp::Copy { id, files } => write!(f, "copy {files} file(s) to {}", short(id)),
            RuntimeOp::Build { tag, context } => write!(f, "build {tag} from {context}"),
            RuntimeOp::CreateNetwork { name } => write!(f, "create-network {name}"),
            RuntimeOp::InspectNetwork { id } => write!(f, "inspect-network {}", short(id)),
            RuntimeOp::ListNetworks { labels } => write!(f, "list-networks {}", LabelList(labels)),
            RuntimeOp::RemoveNetwork { id } => write!(f, "remove-network {}", short(id)),
            RuntimeOp::Connect { container, network } => {
                write!(f, "connect {} to {}", short(container), short(network))
            }
            RuntimeOp::Disconnect { container, network } => {
                write!(f, "disconnect {} from {}", short(container), short(network))
            }
            RuntimeOp::CreateVolume { name } => write!(f, "create-volume {name}"),
            RuntimeOp::InspectVolume { name } => write!(f, "inspect-volume {name}"),
            RuntimeOp::ListVolumes { labels } => write!(f, "list-volumes {}", LabelList(labels)),
            RuntimeOp::RemoveVolume { name } => write!(f, "remove-volume {name}"),
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

impl fmt::Display for RuntimeOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeOutcome::Created { id } => write!(f, "created {}", short(id)),
            RuntimeOutcome::Done => f.write_str("ok"),
            RuntimeOutcome::Container { id, state } => write!(f, "{} {state}", short(id)),
            RuntimeOutcome::Containers { count } => write!(f, "{count} containers"),
            RuntimeOutcome::Image { id } => write!(f, "image {}", short(id)),
            RuntimeOutcome::Events { count } => write!(f, "{count} events"),
            RuntimeOutcome::Pulled { progress } => write!(f, "pulled ({progress} progress lines)"),
            RuntimeOutcome::Built { progress } => write!(f, "built ({progress} progress lines)"),
            RuntimeOutcome::Network { id, name } => write!(f, "network {} {name}", short(id)),
            RuntimeOutcome::Networks { count } => write!(f, "{count} networks"),
            RuntimeOutcome::Volume { name } => write!(f, "volume {name}"),
            RuntimeOutcome::Volumes { count } => write!(f, "{count} volumes"),
            RuntimeOutcome::Failed { code } => f.write_str(code),
        }
    }
}

/// The tags of runtime requests and outcomes: explicit numbers, never changed
/// (renumbering one changes every golden digest; a new kind takes a new number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
enum Tag {
    RuntimeCreate = 144,
    RuntimeStart = 145,
    RuntimeStop = 146,
    RuntimeRemove = 147,
    RuntimeInspect = 148,
    RuntimeList = 149,
    RuntimeInspectImage = 150,
    RuntimeEvents = 151,
    RuntimePull = 152,
    RuntimeRemoveImage = 153,
    RuntimeCopy = 154,
    RuntimeBuild = 155,
    RuntimeCreateNetwork = 156,
    RuntimeInspectNetwork = 157,
    RuntimeListNetworks = 158,
    RuntimeRemoveNetwork = 159,
    RuntimeConnect = 160,
    RuntimeDisconnect = 161,
    RuntimeCreateVolume = 162,
    RuntimeInspectVolume = 163,
    RuntimeListVolumes = 164,
    RuntimeRemoveVolume = 165,
    RepliedCreated = 176,
    RepliedDone = 177,
    RepliedContainer = 178,
    RepliedContainers = 179,
    RepliedImage = 180,
    RepliedEvents = 181,
    RepliedPulled = 182,
    RepliedBuilt = 183,
    RepliedNetwork = 184,
    RepliedNetworks = 185,
    RepliedVolume = 186,
    RepliedVolumes = 187,
    RuntimeFailed = 188,
}

impl From<Tag> for u16 {
    fn from(tag: Tag) -> u16 {
        tag as u16
    }
}

impl Encode for RuntimeOp<'_> {
    fn encode(&self, out: &mut Encoder) {
        match *self {
            RuntimeOp::Create { name, image } => {
                out.tag(Tag::RuntimeCreate);
                out.str(name);
                out.str(image);
            }
            RuntimeOp::Start { id } => named(out, Tag::RuntimeStart, id),
            RuntimeOp::Stop { id } => named(out, Tag::RuntimeStop, id),
            RuntimeOp::Remove { id, force } => {
                named(out, Tag::RuntimeRemove, id);
                out.bool(force);
            }
            RuntimeOp::Inspect { id } => named(out, Tag::RuntimeInspect, id),
            RuntimeOp::List { labels } => {
                out.tag(Tag::RuntimeList);
                encode_map(labels, out);
            }
            RuntimeOp::InspectImage { reference } => named(out, Tag::RuntimeInspectImage, reference),
            RuntimeOp::Events { id } => named(out, Tag::RuntimeEvents, id),
            RuntimeOp::Pull { reference } => named(out, Tag::RuntimePull, reference),
            RuntimeOp::RemoveImage { reference, force } => {
                named(out, Tag::RuntimeRemoveImage, reference);
                out.bool(force);
            }
            RuntimeOp::Copy { id, files } => {
                named(out, Tag::RuntimeCopy, id);
                out.usize(files);
            }
            RuntimeOp::Build { tag, context } => {
                named(out, Tag::RuntimeBuild, tag);
                out.str(context);
            }
            RuntimeOp::CreateNetwork { name } => named(out, Tag::RuntimeCreateNetwork, name),
            RuntimeOp::InspectNetwork { id } => named(out, Tag::RuntimeInspectNetwork, id),
            RuntimeOp::ListNetworks { labels } => {
                out.tag(Tag::RuntimeListNetworks);
                encode_map(labels, out);
            }
            RuntimeOp::RemoveNetwork { id } => named(out, Tag::RuntimeRemoveNetwork, id),
            RuntimeOp::Connect { container, network } => {
                named(out, Tag::RuntimeConnect, container);
                out.str(network);
            }
            RuntimeOp::Disconnect { container, network } => {
                named(out, Tag::RuntimeDisconnect, container);
                out.str(network);
            }
            RuntimeOp::CreateVolume { name } => named(out, Tag::RuntimeCreateVolume, name),
            RuntimeOp::InspectVolume { name } => named(out, Tag::RuntimeInspectVolume, name),
            RuntimeOp::ListVolumes { labels } => {
                out.tag(Tag::RuntimeListVolumes);
                encode_map(labels, out);
            }
            RuntimeOp::RemoveVolume { name } => named(out, Tag::RuntimeRemoveVolume, name),
        }
    }
}

/// A tag and the one name or id it is about.
fn named(out: &mut Encoder, tag: Tag, name: &str) {
    out.tag(tag);
    out.str(name);
}

/// A tag and a count.
fn counted(out: &mut Encoder, tag: Tag, count: usize) {
    out.tag(tag);
    out.usize(count);
}

impl Encode for RuntimeOutcome<'_> {
    fn encode(&self, out: &mut Encoder) {
        match *self {
            RuntimeOutcome::Created { id } => named(out, Tag::RepliedCreated, id),
            RuntimeOutcome::Done => out.tag(Tag::RepliedDone),
            RuntimeOutcome::Container { id, state } => {
                named(out, Tag::RepliedContainer, id);
                state.encode(out);
            }
            RuntimeOutcome::Containers { count } => counted(out, Tag::RepliedContainers, count),
            RuntimeOutcome::Image { id } => named(out, Tag::RepliedImage, id),
            RuntimeOutcome::Events { count } => counted(out, Tag::RepliedEvents, count),
            RuntimeOutcome::Pulled { progress } => counted(out, Tag::RepliedPulled, progress),
            RuntimeOutcome::Built { progress } => counted(out, Tag::RepliedBuilt, progress),
            RuntimeOutcome::Network { id, name } => {
                named(out, Tag::RepliedNetwork, id);
                out.str(name);
            }
            RuntimeOutcome::Networks { count } => counted(out, Tag::RepliedNetworks, count),
            RuntimeOutcome::Volume { name } => named(out, Tag::RepliedVolume, name),
            RuntimeOutcome::Volumes { count } => counted(out, Tag::RepliedVolumes, count),
            RuntimeOutcome::Failed { code } => named(out, Tag::RuntimeFailed, code),
        }
    }
}
