//! The simulated container runtime: a model of Docker's observable contract.
//!
//! What it promises is the engine's runtime contract (`drydock_engine::runtime`): unique names,
//! `NotFound` for anything missing, `Conflict` for a taken name and for removing a running
//! container without force, created -> running -> exited, label filters, images. Its fidelity is
//! checked by running the same conformance cases against real Docker.
//!
//! One subsystem per module, as in Docker:
//! - `containers`: one record per container (what `inspect` shows, plus what it was created with:
//!   command, mounts, requested ports, image id) and the name index; the state machine and the
//!   event log;
//! - `images`: the local image store (images by id, the references that point to them) and
//!   Docker 20.10's removal rules;
//! - `registry`: the registry, and push and pull between it and the local store.
//!
//! Every call applies at once; latency and lost replies are the world's business, not the
//! runtime's.

mod containers;
mod images;
mod references;
mod registry;
#[cfg(test)]
mod test_support;

pub use containers::STOPPED_EXIT_CODE;
pub use images::DEFAULT_IMAGE_COMMAND;

use containers::SimContainer;
use drydock_engine::WallTime;
use drydock_engine::runtime::{RuntimeEvent, RuntimeRequest, RuntimeResult};
use images::ImageStore;
use registry::Registry;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct SimRuntime {
    /// Container id -> container.
    containers: BTreeMap<String, SimContainer>,
    /// Container name -> id, for every container in `containers`.
    names: BTreeMap<String, String>,
    /// The next host port handed out for a port published without one (Docker's ephemeral range).
    next_host_port: u16,
    images: ImageStore,
    registry: Registry,
    events: Vec<RuntimeEvent>,
    now: WallTime,
    /// Container ids handed out so far, for fresh ones.
    ids: u64,
    seed: u64,
    /// Containers ever created, for reports.
    pub creates: u64,
    /// Pulls that succeeded, for reports.
    pub pulls: u64,
}

impl SimRuntime {
    /// A runtime whose container ids and registry content are derived from `seed`.
    pub fn new(seed: u64) -> Self {
        SimRuntime { seed, ..SimRuntime::default() }
    }

    /// Set the wall clock that stamps events.
    pub fn set_now(&mut self, now: WallTime) {
        self.now = now;
    }

    /// Carry out one request.
    pub fn execute(&mut self, request: &RuntimeRequest) -> RuntimeResult {
        match request {
            RuntimeRequest::CreateContainer(create) => self.create_container(create),
            RuntimeRequest::StartContainer { id } => self.start_container(id),
            RuntimeRequest::StopContainer { id, .. } => self.stop_container(id),
            RuntimeRequest::RemoveContainer { id, force } => self.remove_container(id, *force),
            RuntimeRequest::InspectContainer { id } => self.inspect_container(id),
            RuntimeRequest::ListContainers { labels } => Ok(self.list_containers(labels)),
            RuntimeRequest::ContainerEvents { id, since } => Ok(self.container_events(id, *since)),
            RuntimeRequest::InspectImage { reference } => self.inspect_image(reference),
            RuntimeRequest::PullImage { reference } => self.pull(reference),
            RuntimeRequest::RemoveImage { reference, force } => self.remove_image(reference, *force),
        }
    }

    /// Every event so far, oldest first.
    pub fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }
}

fn sha256_of(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update(part);
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}
