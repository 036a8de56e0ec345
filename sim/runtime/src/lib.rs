//! The simulated container runtime: a model of Docker 20.10's observable contract (API 1.41).
//!
//! What it promises is the engine's runtime contract (`drydock_engine::runtime`): unique names,
//! `NotFound` for anything missing, `Conflict` for a taken name and for removing a running
//! container without force, `Invalid` for what Docker refuses as written, created -> running ->
//! exited, label filters, images. It fails the way Docker fails: creates Docker refuses, starts
//! that fail and keep failing, removals in progress, pulls from a registry it cannot reach. Its
//! fidelity is checked by running the same conformance cases against real Docker.
//!
//! [`SimRuntime`] composes a dozen parts, one concept each: a struct that keeps its own
//! invariants (stated as its *Guarantees*, checked by its `check`) with its unit tests next to
//! it. Nothing but a part's own methods writes its fields.
//! - `containers`: the container records by id, the name and label indexes (`label_index`),
//!   the ids handed out;
//! - `ports`: host ports held from outside, the ports published (counted), the ephemeral cursor;
//! - `networks`: created and built-in networks, the ids handed out, the attachment index;
//! - `volumes`: named volumes and the names generated;
//! - `image_store`: local images by id and the references that point to them;
//! - `registry`: the registry's repositories, tags and manifests;
//! - `build_contexts`: the build contexts registered;
//! - `event_log`: the events (the last 256 of every type for a `since` query, as Docker keeps
//!   them; every container event for the event streams);
//! - `outputs`: what containers printed; `clock`: the wall clock and the exits due;
//! - `journal`: what changed since the world last looked; `counters`: creates and pulls.
//!
//! Docker's API is [`SimRuntime`]'s methods, which compose the parts (a create touches the
//! containers, the volumes its mounts make, the networks, the event log, the outputs), one
//! subsystem per module, as in Docker:
//! - `container_api`: create and its checks, insert, inspect, lists, the events query;
//!   `lifecycle`: starts, stops, removals, and the main process in time; `publishing`: the
//!   ports a start publishes; `mounts`: a create's mounts (and the named volumes they make);
//!   `files`: files copied into containers; `shell`: what a container runs (its command as
//!   runc starts it, busybox's `sh`);
//! - `network_api`: networks and the containers attached to them; `volume_api`: volumes;
//! - `images`: inspect and Docker 20.10's removal rules; `distribution`: push and pull between
//!   the registry and the local store; `references`: Docker's reference grammar;
//! - `builds`: image builds from registered contexts; `dockerfile`: the Dockerfile grammar;
//! - `consistency`: where parts index what another holds, that they agree
//!   ([`SimRuntime::check`]).
//!
//! Every request applies at once; latency and lost replies are the world's business, not the
//! runtime's. Time passes only through [`SimRuntime::set_now`] and [`SimRuntime::advance`]: a
//! container's main process that ends later (a script's finite sleeps) is due then.

mod build_contexts;
mod builds;
mod clock;
mod consistency;
mod container_api;
mod containers;
mod counters;
mod distribution;
mod dockerfile;
mod event_log;
mod files;
mod image_store;
mod images;
mod journal;
mod label_index;
mod lifecycle;
mod mounts;
mod network_api;
mod networks;
mod outputs;
mod ports;
mod publishing;
mod references;
mod registry;
mod shell;
#[cfg(test)]
mod test_support;
mod volume_api;
mod volumes;

pub use container_api::Creation;
pub use event_log::EVENTS_KEPT;
pub use image_store::DEFAULT_IMAGE_COMMAND;
pub use journal::Journal;
pub use network_api::NetworkCreating;
pub use outputs::{ContainerOutput, OutputLine};
pub use references::{ImageReference, ReferenceError, familiar_reference, normalize_reference, reference_key};
pub use shell::{OUTPUT_LIMIT, Stream};

use drydock_engine::WallTime;
use drydock_engine::runtime::{RuntimeEvent, RuntimeObject, RuntimeReply, RuntimeRequest, RuntimeResult};
use image_store::ImageStore;
use registry::Registry;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Exit code of a container killed by `stop` after its grace period (SIGKILL: 128 + 9), as a
/// `sleep` that ignores SIGTERM is.
pub const STOPPED_EXIT_CODE: i64 = shell::KILLED;

/// A simulated Docker daemon: the parts it keeps (see the crate doc), and Docker's API over
/// them ([`SimRuntime::execute`]).
///
/// *Guarantees*: after every request and every action from outside (an insert, a daemon
/// restart, time passing), each part's guarantees hold and the parts agree
/// ([`SimRuntime::check`]); a runtime's ids, names and digests derive from its seed alone, so
/// the same requests give the same answers on every run.
#[derive(Clone, Debug, Default)]
pub struct SimRuntime {
    /// The containers: records by id, the name and label indexes, the ids handed out.
    containers: containers::Containers,
    /// Host ports: held by processes outside containers, published (counted), the ephemeral
    /// range's cursor.
    ports: ports::Ports,
    /// Networks (created and built-in), the ids handed out, and which containers are attached
    /// to each.
    networks: networks::Networks,
    /// Named volumes, and the names generated so far.
    volumes: volumes::Volumes,
    /// Local images by id, and the references that point to them.
    images: ImageStore,
    /// The registry's repositories, and the content their manifests describe.
    registry: Registry,
    /// Build context directories -> relative path -> contents.
    build_contexts: build_contexts::BuildContexts,
    /// The events: the last [`EVENTS_KEPT`] of every type for a `since` query, the container
    /// events the streams have not been handed yet ([`SimRuntime::take_events`]), how many
    /// there were.
    events: event_log::EventLog,
    /// What containers printed, by container id (kept after removal).
    outputs: outputs::Outputs,
    /// The wall clock, and the exits due by the containers' main processes.
    clock: clock::Clock,
    /// What changed since the journal was last taken.
    journal: Journal,
    /// Creates and pulls that succeeded, for reports.
    counters: counters::Counters,
}

impl SimRuntime {
    /// A runtime whose container, network and volume ids and registry content are derived from
    /// `seed`: it has the built-in networks, and nothing else.
    pub fn new(seed: u64) -> Self {
        SimRuntime {
            containers: containers::Containers::new(seed),
            networks: networks::Networks::new(seed),
            registry: Registry::new(seed),
            volumes: volumes::Volumes::new(seed),
            ..SimRuntime::default()
        }
    }

    /// Each part's own guarantees (see [`SimRuntime::check`] for how the parts agree): one line
    /// per part, kept beside the fields so that a new part is checked where it is added.
    fn check_parts(&self) -> Result<(), String> {
        self.events.check()?;
        self.outputs.check()?;
        self.clock.check()?;
        self.build_contexts.check()?;
        self.registry.check()?;
        self.images.check()?;
        self.volumes.check()?;
        self.ports.check()?;
        self.networks.check()?;
        self.containers.check()
    }

    /// What changed since the last call (everything there is, for the first).
    pub fn take_journal(&mut self) -> Journal {
        std::mem::take(&mut self.journal)
    }

    /// Set the wall clock that stamps events and starts main processes. Exits due by then
    /// apply at the next request, or at [`SimRuntime::advance`].
    pub fn set_now(&mut self, now: WallTime) {
        self.clock.set(now);
    }

    /// The wall clock's time.
    pub fn now(&self) -> WallTime {
        self.clock.now()
    }

    /// Carry out one request, after the exits due by the clock.
    pub fn execute(&mut self, request: &RuntimeRequest) -> RuntimeResult {
        self.advance(self.clock.now());
        match request {
            RuntimeRequest::CreateContainer(create) => self.create_container(create),
            RuntimeRequest::StartContainer { id } => self.start_container(id),
            RuntimeRequest::StopContainer { id, timeout_secs } => self.stop_container(id, *timeout_secs),
            RuntimeRequest::RemoveContainer { id, force } => self.remove_container(id, *force),
            RuntimeRequest::InspectContainer { id } => self.inspect_container(id),
            RuntimeRequest::ListContainers { labels } => Ok(self.list_containers(labels)),
            RuntimeRequest::ContainerEvents { id, since } => Ok(self.container_events(id, *since)),
            RuntimeRequest::InspectImage { reference } => self.inspect_image(reference),
            RuntimeRequest::PullImage { reference } => self.pull(reference),
            RuntimeRequest::RemoveImage { reference, force } => self.remove_image(reference, *force),
            RuntimeRequest::CopyFiles { id, files } => self.copy_files(id, files),
            RuntimeRequest::BuildImage(build) => self.build_image(build),
            RuntimeRequest::CreateNetwork(create) => self.create_network(create),
            RuntimeRequest::InspectNetwork { id } => self.inspect_network(id),
            RuntimeRequest::ListNetworks { labels } => Ok(self.list_networks(labels)),
            RuntimeRequest::RemoveNetwork { id } => self.remove_network(id),
            RuntimeRequest::ConnectNetwork { network, container, aliases } => {
                self.connect_network(network, container, aliases)
            }
            RuntimeRequest::DisconnectNetwork { network, container } => self.disconnect_network(network, container),
            RuntimeRequest::CreateVolume(create) => self.create_volume(create),
            RuntimeRequest::InspectVolume { name } => self.inspect_volume(name),
            RuntimeRequest::ListVolumes { labels } => Ok(self.list_volumes(labels)),
            RuntimeRequest::RemoveVolume { name } => self.remove_volume(name).map(|()| RuntimeReply::Done),
        }
    }

    /// The container events a `since` query can still replay (those among Docker's last
    /// [`EVENTS_KEPT`] events of every type), oldest first.
    pub fn recent_events(&self) -> impl Iterator<Item = &RuntimeEvent> {
        self.events.recent()
    }

    /// The events recorded since the last call, oldest first, for the event streams: a stream
    /// sees every event, however many, where a `since` query sees only the last ones. (The world
    /// takes them after every step; a runtime whose events nobody takes keeps them all.)
    pub fn take_events(&mut self) -> Vec<RuntimeEvent> {
        self.events.take_unsent()
    }

    /// How many containers creates have made since the runtime began (inserted ones not
    /// counted).
    pub fn creates(&self) -> u64 {
        self.counters.creates()
    }

    /// How many pulls have succeeded since the runtime began.
    pub fn pulls(&self) -> u64 {
        self.counters.pulls()
    }

    /// The output of container `id` (a full id), also once removed: what a capture attached to
    /// it since its create received. Docker's logs API answers only for a container that is
    /// there ([`SimRuntime::open_logs`]).
    pub fn output(&self, id: &str) -> Option<&ContainerOutput> {
        self.outputs.get(id)
    }

    /// Every container's output, by container id.
    pub fn outputs(&self) -> impl Iterator<Item = (&String, &ContainerOutput)> {
        self.outputs.iter()
    }

    /// How many container events (those the event streams are handed) the runtime has
    /// recorded since it began.
    pub fn recorded_events(&self) -> usize {
        self.events.recorded()
    }

    /// The runtime resources an object of a built-in kind can stand for (see
    /// [`KindInfo::with_runtime_object`](drydock_engine::api::KindInfo::with_runtime_object)):
    /// the networks in id order (the built-in ones first), then the volumes in name order. The
    /// id is the one the [`Journal`] and requests name a resource by. A new kind of runtime
    /// resource adds its part's here, and the simulator's resource checks cover it.
    pub fn resources(&self) -> impl Iterator<Item = Resource<'_>> {
        let networks = self.networks.all().map(|n| Resource {
            object: RuntimeObject::Network,
            id: &n.id,
            name: &n.name,
            labels: &n.labels,
        });
        let volumes = self.volumes.iter().map(|(name, v)| Resource {
            object: RuntimeObject::Volume,
            id: name,
            name,
            labels: &v.labels,
        });
        networks.chain(volumes)
    }
}

/// A runtime resource as checkers see it (see [`SimRuntime::resources`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource<'a> {
    pub object: RuntimeObject,
    /// What requests and the journal name it by: a network's id, a volume's name.
    pub id: &'a str,
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// Docker's answer for a container it does not have.
fn not_found(id: &str) -> drydock_engine::runtime::RuntimeError {
    drydock_engine::runtime::RuntimeError::NotFound(format!("No such container: {id}"))
}

fn sha256_of(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}
