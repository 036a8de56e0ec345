//! The container API besides the state machine, as Docker 20.10 answers it: create (with
//! Docker's checks, in Docker's order), insert from outside, inspect, label lists and the
//! events query, and the recording of events. Starting, stopping and removing are in
//! `lifecycle`; networks attached in `network_api`; copied files in `files`; the records
//! themselves in `containers`.

use super::containers::{CreatedWith, SimContainer};
use super::references::check_reference;
use super::{SimRuntime, not_found};
use drydock_engine::WallTime;
use drydock_engine::api::container::{Mount, PortMapping};
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, RuntimeError, RuntimeEvent, RuntimeReply,
    RuntimeResult,
};
use std::collections::BTreeMap;

/// What a container was created with: its image (`Image`), command (`Config.Cmd`, or its
/// image's), environment (`Config.Env`, the create's own), ports (`HostConfig.PortBindings`),
/// mounts and labels.
#[derive(Clone, Copy, Debug)]
pub struct Creation<'a> {
    /// `None` for a container inserted with an image that was not present.
    pub image_id: Option<&'a str>,
    pub command: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub ports: &'a [PortMapping],
    pub mounts: &'a [Mount],
    pub labels: &'a BTreeMap<String, String>,
}

impl SimRuntime {
    pub fn containers(&self) -> impl Iterator<Item = &ContainerInfo> {
        self.containers.values().map(SimContainer::info)
    }

    /// Container `id` (a full id only: no name or prefix resolution).
    pub fn container_by_id(&self, id: &str) -> Option<&ContainerInfo> {
        self.containers.get(id).map(SimContainer::info)
    }

    pub fn container(&self, id_or_name: &str) -> Option<&ContainerInfo> {
        self.containers.resolve(id_or_name).ok().and_then(|id| self.containers.get(&id)).map(SimContainer::info)
    }

    /// What container `id` (a full id) was created with, as `docker inspect` shows it.
    pub fn created_with(&self, id: &str) -> Option<Creation<'_>> {
        let c = self.containers.get(id)?;
        Some(Creation {
            image_id: c.image_id(),
            command: &c.command,
            env: &c.env,
            ports: &c.requested_ports,
            mounts: &c.mounts,
            labels: c.info().labels.as_ref(),
        })
    }

    /// When a container's main process will end by itself, if it runs and will.
    pub fn exit_due(&self, id_or_name: &str) -> Option<WallTime> {
        let id = self.containers.resolve(id_or_name).ok()?;
        self.containers.get(&id)?.exit_due.map(|(at, _)| at)
    }

    /// The containers carrying `label` with `value`, in id order (an index: no scan).
    pub fn containers_labelled<'a>(&'a self, label: &str, value: &str) -> impl Iterator<Item = &'a ContainerInfo> + 'a {
        self.containers.labelled(label, value).map(SimContainer::info)
    }

    /// Insert a container as-is (tests, external actors). It uses its image if that is present,
    /// and runs until stopped. A container of the same id is replaced, keeping what it was
    /// created with.
    pub fn insert(&mut self, info: ContainerInfo) {
        let image = self.images.resolve(&info.image);
        let image_id = image.map(|image| image.id.clone());
        let files = image.map(|image| image.config.files.clone()).unwrap_or_default();
        let scratch = image.is_some_and(|image| image.config.scratch);
        self.journal.container(&info.id);
        let started_at = (info.state == ContainerState::Running).then_some(self.clock.now());
        self.unindex_ports(&info.id);
        let id = info.id.clone();
        if self.containers.contains(&id) {
            if let Some(at) = self.containers.replace(info, image_id, started_at) {
                self.clock.unschedule(at, &id);
            }
        } else {
            let mut record =
                SimContainer::new(info, image_id, CreatedWith { files, scratch, ..CreatedWith::default() });
            record.started_at = started_at;
            self.containers.insert_outside(record);
        }
        self.index_ports(&id);
    }

    /// Docker 20.10's create, its checks in its order: the environment, the image reference's
    /// grammar, the image, a command to run, the name's grammar and uniqueness, then the mounts
    /// one by one (a named volume is created as its mount is reached, and stays if a later mount
    /// fails); then an anonymous volume for each `VOLUME` of the image no mount covers. Nothing
    /// else is created when a check fails.
    ///
    /// The command is the image's entrypoint followed by the create's command, else the image's.
    /// Networks are attached as Docker's create (the first) and connects (the others) attach
    /// them to a container that is not running: without checking they exist (see `network_api`);
    /// none attaches the default `bridge`. A connect Docker refuses (aliases on a built-in
    /// network, `host` or `none` beside another: 400) refuses the create, after its mounts made
    /// their named volumes: the adapter creates the container, connects the others, and removes
    /// the container with its anonymous volumes when a connect fails.
    pub(crate) fn create_container(&mut self, create: &ContainerCreate) -> RuntimeResult {
        if let Some((name, value)) = create.env.iter().find(|(name, _)| name.is_empty()) {
            return Err(RuntimeError::Invalid(format!("invalid environment variable: {name}={value}")));
        }
        check_reference(&create.image)?;
        let Some(image) = self.images.resolve(&create.image) else {
            return Err(RuntimeError::NotFound(format!("No such image: {}", create.image)));
        };
        let config = &image.config;
        let mut command = config.entrypoint.clone();
        command.extend(if create.command.is_empty() { config.command.clone() } else { create.command.clone() });
        if command.is_empty() {
            return Err(RuntimeError::Invalid("No command specified".into()));
        }
        let (files, scratch, image_volumes) = (config.files.clone(), config.scratch, config.volumes.clone());
        // The image's `ENV`, under the create's.
        let env = config.env.iter().chain(&create.env).map(|(k, v)| (k.clone(), v.clone())).collect();
        let image_id = image.id.clone();
        // Ids are only used up by creates that succeed.
        let id = self.containers.next_id();
        let name = match create.name.trim_start_matches('/') {
            "" => self.containers.generated_name(&id),
            name if is_container_name(name) => name.to_string(),
            _ => {
                return Err(RuntimeError::Invalid(format!(
                    "Invalid container name ({}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
                    create.name
                )));
            }
        };
        if let Some(existing) = self.containers.id_named(&name) {
            return Err(RuntimeError::Conflict(format!(
                "Conflict. The container name \"/{name}\" is already in use by container \"{existing}\". You have to remove (or rename) that container to be able to reuse that name."
            )));
        }
        self.mount_points(&create.mounts)?;
        let mut networks = BTreeMap::new();
        for (n, attachment) in create.networks.iter().enumerate() {
            // The first is the create's own (Docker checks its aliases at start); the others
            // are connects.
            if n > 0
                && let Ok(network) = self.networks.find(&attachment.name)
                && self.check_connect(&networks, network, &attachment.aliases)?
            {
                continue;
            }
            let (key, record) = self.attachment(&attachment.name, &attachment.aliases);
            networks.entry(key).or_insert(record);
        }
        let mounts = self.anonymous_volumes(&id, &create.mounts, &image_volumes);
        self.counters.created();
        let info = ContainerInfo {
            ports: Vec::new(),
            id: id.clone(),
            name,
            image: create.image.clone(),
            labels: create.labels.clone().into(),
            state: ContainerState::Created,
            exit_code: None,
            error: None,
        };
        let created_with =
            CreatedWith { command, mounts, requested_ports: create.ports.clone(), networks, files, scratch, env };
        self.containers.insert_created(SimContainer::new(info, Some(image_id), created_with));
        self.index_ports(&id);
        self.event(&id, EventAction::Create);
        self.outputs.created(&id, self.clock.now());
        Ok(RuntimeReply::Created { id })
    }

    /// Docker's logs API as it opens (`GET /containers/{id}/logs`): the id of the container
    /// `id_or_name` names (a full id, a name, a unique id prefix), whose output
    /// [`SimRuntime::output`] has. A container's logs go with it: once it is removed, or if it
    /// never was, the answer is 404 "No such container: X" (seen on Docker 20.10.24, followed or
    /// not, by id or by prefix). The output itself is kept after the removal for whoever was
    /// already reading it (a follow open at the removal gets everything, then ends). A container
    /// inserted from outside has no output recorded: not found either. While its removal is in
    /// progress the answer is 409 "can not get logs from container which is dead or marked for
    /// removal" (`drydock runtime diff` saw it on Docker 20.10.24).
    pub fn open_logs(&self, id_or_name: &str) -> Result<String, RuntimeError> {
        let id = self.containers.resolve(id_or_name)?;
        if self.containers.get(&id).is_some_and(|c| c.state() == ContainerState::Removing) {
            return Err(RuntimeError::Conflict(
                "can not get logs from container which is dead or marked for removal".into(),
            ));
        }
        self.outputs.get(&id).map(|_| id).ok_or_else(|| not_found(id_or_name))
    }

    pub(crate) fn inspect_container(&self, id_or_name: &str) -> RuntimeResult {
        let id = self.containers.resolve(id_or_name)?;
        self.containers.get(&id).map(|c| RuntimeReply::Container(c.info().clone())).ok_or_else(|| not_found(&id))
    }

    pub(crate) fn list_containers(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        let matches = |c: &&ContainerInfo| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v));
        // Both in id order: through the index of the first label, or all of them.
        let found = match labels.iter().next() {
            Some((label, value)) => self.containers_labelled(label, value).filter(matches).cloned().collect(),
            None => self.containers().cloned().collect(),
        };
        RuntimeReply::Containers(found)
    }

    /// A container's events at or after `since`, from the events Docker keeps for replay: the
    /// last [`EVENTS_KEPT`](crate::EVENTS_KEPT) of the daemon, so an old container's first events
    /// are gone once enough has happened since (whatever `since` asks for).
    pub(crate) fn container_events(&self, id_or_name: &str, since: WallTime) -> RuntimeReply {
        let id = self.containers.resolve(id_or_name).unwrap_or_else(|_| id_or_name.to_string());
        RuntimeReply::Events(self.events.replay(&id, since))
    }

    /// Record an event of container `id` at `time`.
    pub(crate) fn event_at(&mut self, id: &str, action: EventAction, time: WallTime) {
        self.journal.container(id);
        let labels = self.containers.get(id).map(|c| c.info().labels.clone()).unwrap_or_default();
        let event = RuntimeEvent { container_id: id.to_string(), action, time, labels };
        self.events.record(event);
    }

    pub(crate) fn event(&mut self, id: &str, action: EventAction) {
        self.event_at(id, action, self.clock.now());
    }

    /// Record `count` events of a type or action the runtime contract does not carry (`what`:
    /// its type and action, say "network connect"): they only take their places in Docker's
    /// replay window (see `event_log`).
    pub(crate) fn other_events(&mut self, what: &'static str, count: usize) {
        for _ in 0..count {
            self.events.record_other(what);
        }
    }
}

/// Docker's container name grammar, `[a-zA-Z0-9][a-zA-Z0-9_.-]+`: at least two characters
/// (stricter than the engine's admission, which also takes one).
fn is_container_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 2
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
}

#[cfg(test)]
#[path = "container_api_tests.rs"]
mod tests;
