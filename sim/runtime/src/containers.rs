//! Containers: one record per container, the name index, creation (with Docker's checks, in
//! Docker's order), inspection, label lists and the event log. Starting, stopping and removing
//! are in `lifecycle`; networks attached in `networks`; copied files in `files`.

use super::networks::Attachment;
use super::references::check_reference;
use super::{SimRuntime, not_found};
use drydock_engine::WallTime;
use drydock_engine::api::container::{Mount, PortMapping};
use drydock_engine::runtime::{
    ContainerCreate, ContainerInfo, ContainerState, EventAction, RuntimeError, RuntimeEvent, RuntimeReply,
    RuntimeResult,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The network a container is attached to when its create names none.
pub(super) const DEFAULT_NETWORK: &str = "bridge";

/// A container: what `inspect` shows, what it was created with, and its main process.
#[derive(Clone, Debug)]
pub(super) struct SimContainer {
    pub(super) info: ContainerInfo,
    /// The command it runs: the create's, else its image's default. Empty for an inserted
    /// container, which then runs until it is stopped.
    pub(super) command: Vec<String>,
    pub(super) mounts: Vec<Mount>,
    /// The ports it publishes; those without a host port (or with 0) get one at each start.
    pub(super) requested_ports: Vec<PortMapping>,
    /// Its network attachments, keyed as Docker keys its endpoint configs: by the network's
    /// name if it existed when attached, else by the id or name it was given.
    pub(super) networks: BTreeMap<String, Attachment>,
    /// Files its processes can read: its image's, then those copied in, by absolute path.
    pub(super) files: BTreeMap<String, String>,
    /// Made from an image built `FROM scratch` (no busybox).
    pub(super) scratch: bool,
    /// The id of the image it was created from; `None` for a container inserted with an image
    /// that is not present.
    image_id: Option<String>,
    /// When its main process started, while it runs.
    pub(super) started_at: Option<WallTime>,
    /// When its main process ends by itself, and with which status, if it does.
    pub(super) exit_due: Option<(WallTime, i64)>,
}

impl SimRuntime {
    pub fn containers(&self) -> impl Iterator<Item = &ContainerInfo> {
        self.containers.values().map(|c| &c.info)
    }

    /// Container `id` (a full id only: no name or prefix resolution).
    pub fn container_by_id(&self, id: &str) -> Option<&ContainerInfo> {
        self.containers.get(id).map(|c| &c.info)
    }

    pub fn container(&self, id_or_name: &str) -> Option<&ContainerInfo> {
        self.resolve(id_or_name).ok().and_then(|id| self.containers.get(&id)).map(|c| &c.info)
    }

    /// Insert a container as-is (tests, external actors). It uses its image if that is present,
    /// and runs until stopped. A container of the same id is replaced, keeping what it was
    /// created with.
    pub fn insert(&mut self, info: ContainerInfo) {
        let image = self.images.resolve(&info.image);
        let image_id = image.map(|image| image.id.clone());
        let files = image.map(|image| image.config.files.clone()).unwrap_or_default();
        let scratch = image.is_some_and(|image| image.config.scratch);
        self.names.insert(info.name.clone(), info.id.clone());
        self.journal.container(&info.id);
        let started_at = (info.state == ContainerState::Running).then_some(self.clock.now());
        if let Some(old) = self.containers.get(&info.id).map(|c| c.info.labels.clone()) {
            self.labelled.remove(&info.id, &old);
        }
        self.labelled.add(&info.id, &info.labels);
        self.unindex_ports(&info.id);
        let id = info.id.clone();
        match self.containers.get_mut(&info.id) {
            Some(existing) => {
                if existing.info.name != info.name && self.names.get(&existing.info.name) == Some(&info.id) {
                    self.names.swap_remove(&existing.info.name);
                }
                if image_id.is_some() {
                    existing.image_id = image_id;
                }
                existing.info = info;
                existing.started_at = started_at;
                if let Some((at, _)) = existing.exit_due.take() {
                    self.clock.unschedule(at, &existing.info.id);
                }
            }
            None => {
                let record = SimContainer {
                    info,
                    command: Vec::new(),
                    mounts: Vec::new(),
                    requested_ports: Vec::new(),
                    networks: default_networks(),
                    files,
                    scratch,
                    image_id,
                    started_at,
                    exit_due: None,
                };
                self.containers.insert(record.info.id.clone(), record);
            }
        }
        self.index_ports(&id);
    }

    /// Docker 20.10's create, its checks in its order: the environment, the image reference's
    /// grammar, the image, a command to run, the name's grammar and uniqueness, then the mounts
    /// one by one (a named volume is created as its mount is reached, and stays if a later mount
    /// fails). Nothing else is created when a check fails.
    ///
    /// The command is the image's entrypoint followed by the create's command, else the image's.
    /// Networks are attached as Docker's create (the first) and connects (the others) attach
    /// them to a container that is not running: without checking they exist (see `networks`);
    /// none attaches the default `bridge`.
    pub(super) fn create_container(&mut self, create: &ContainerCreate) -> RuntimeResult {
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
        let (files, scratch) = (config.files.clone(), config.scratch);
        let image_id = image.id.clone();
        // Ids are only used up by creates that succeed.
        let id = self.id_number(self.ids + 1);
        let name = match create.name.trim_start_matches('/') {
            "" => self.generated_name(&id),
            name if is_container_name(name) => name.to_string(),
            _ => {
                return Err(RuntimeError::Invalid(format!(
                    "Invalid container name ({}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed",
                    create.name
                )));
            }
        };
        if let Some(existing) = self.names.get(&name) {
            return Err(RuntimeError::Conflict(format!(
                "Conflict. The container name \"/{name}\" is already in use by container \"{existing}\". You have to remove (or rename) that container to be able to reuse that name."
            )));
        }
        self.mount_points(&create.mounts)?;
        self.ids += 1;
        self.counters.created();
        let info = ContainerInfo {
            ports: Vec::new(),
            id: id.clone(),
            name: name.clone(),
            image: create.image.clone(),
            labels: create.labels.clone().into(),
            state: ContainerState::Created,
            exit_code: None,
            error: None,
        };
        let mut networks = BTreeMap::new();
        for attachment in &create.networks {
            let (key, record) = self.attachment(&attachment.name, &attachment.aliases);
            networks.entry(key).or_insert(record);
        }
        if networks.is_empty() {
            networks = default_networks();
        }
        let record = SimContainer {
            info,
            command,
            mounts: create.mounts.clone(),
            requested_ports: create.ports.clone(),
            networks,
            files,
            scratch,
            image_id: Some(image_id),
            started_at: None,
            exit_due: None,
        };
        self.names.insert(name, id.clone());
        self.labelled.add(&id, &record.info.labels);
        self.containers.insert(id.clone(), record);
        self.index_ports(&id);
        self.event(&id, EventAction::Create);
        self.outputs.created(&id, self.clock.now());
        Ok(RuntimeReply::Created { id })
    }

    pub(super) fn inspect_container(&self, id_or_name: &str) -> RuntimeResult {
        let id = self.resolve(id_or_name)?;
        self.containers.get(&id).map(|c| RuntimeReply::Container(c.info.clone())).ok_or_else(|| not_found(&id))
    }

    pub(super) fn list_containers(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        let matches = |c: &&ContainerInfo| labels.iter().all(|(k, v)| c.labels.get(k) == Some(v));
        // Both in id order: through the index of the first label, or all of them.
        let found = match labels.iter().next() {
            Some((label, value)) => self.containers_labelled(label, value).filter(matches).cloned().collect(),
            None => self.containers().cloned().collect(),
        };
        RuntimeReply::Containers(found)
    }

    /// A container's events at or after `since`, from the events Docker keeps for replay: the
    /// last [`EVENTS_KEPT`](crate::EVENTS_KEPT) of the daemon, so an old container's first events are gone once
    /// enough has happened since (whatever `since` asks for).
    pub(super) fn container_events(&self, id_or_name: &str, since: WallTime) -> RuntimeReply {
        let id = self.resolve(id_or_name).unwrap_or_else(|_| id_or_name.to_string());
        RuntimeReply::Events(self.events.replay(&id, since))
    }

    /// The id of the first container (by id) created from image `image_id` that `which` accepts.
    pub(super) fn first_container_using(
        &self,
        image_id: &str,
        which: impl Fn(&ContainerInfo) -> bool,
    ) -> Option<String> {
        self.containers
            .values()
            .filter(|c| c.image_id.as_deref() == Some(image_id))
            .map(|c| &c.info)
            .find(|c| which(c))
            .map(|c| c.id.clone())
    }

    pub(super) fn is_running(&self, id: &str) -> bool {
        self.containers.get(id).is_some_and(|c| c.info.state == ContainerState::Running)
    }

    /// Record an event of container `id` at `time`.
    pub(super) fn event_at(&mut self, id: &str, action: EventAction, time: WallTime) {
        self.journal.container(id);
        let labels = self.containers.get(id).map(|c| c.info.labels.clone()).unwrap_or_default();
        let event = RuntimeEvent { container_id: id.to_string(), action, time, labels };
        self.events.record(event);
    }

    pub(super) fn event(&mut self, id: &str, action: EventAction) {
        self.event_at(id, action, self.clock.now());
    }

    /// Docker resolves a full id, a name, or an id prefix; a prefix of several ids is an error
    /// of its own (a 500: "Multiple IDs found with provided prefix"), never "not found".
    pub(super) fn resolve(&self, id_or_name: &str) -> Result<String, RuntimeError> {
        if self.containers.contains_key(id_or_name) {
            return Ok(id_or_name.to_string());
        }
        if let Some(id) = self.names.get(id_or_name.trim_start_matches('/')) {
            return Ok(id.clone());
        }
        let mut matches =
            self.containers.range(id_or_name.to_string()..).take_while(|(id, _)| id.starts_with(id_or_name));
        match (matches.next(), matches.next()) {
            (Some((id, _)), None) if !id_or_name.is_empty() => Ok(id.clone()),
            (Some(_), Some(_)) if !id_or_name.is_empty() => {
                Err(RuntimeError::Invalid(format!("Multiple IDs found with provided prefix: {id_or_name}")))
            }
            _ => Err(not_found(id_or_name)),
        }
    }

    /// The `n`th container id this runtime hands out.
    fn id_number(&self, n: u64) -> String {
        let mut h = Sha256::new();
        h.update(self.seed.to_le_bytes());
        h.update(n.to_le_bytes());
        hex::encode(h.finalize())
    }

    /// A name for a create without one, as Docker's `namesgenerator` makes them
    /// (`adjective_scientist`), derived from the container's id; a digit is added while taken.
    fn generated_name(&self, id: &str) -> String {
        const LEFT: [&str; 8] = ["admiring", "brave", "clever", "eager", "focused", "gallant", "jolly", "quirky"];
        const RIGHT: [&str; 8] = ["curie", "hopper", "lovelace", "noether", "ritchie", "shannon", "turing", "wing"];
        let byte = |i: usize| usize::from(id.as_bytes().get(i).copied().unwrap_or(0));
        let base = format!("{}_{}", LEFT[byte(0) % LEFT.len()], RIGHT[byte(1) % RIGHT.len()]);
        let mut name = base.clone();
        let mut retry = 0;
        while self.names.contains_key(&name) {
            retry += 1;
            name = format!("{base}{retry}");
        }
        name
    }
}

fn default_networks() -> BTreeMap<String, Attachment> {
    BTreeMap::from([(DEFAULT_NETWORK.to_string(), Attachment::default())])
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
#[path = "containers_tests.rs"]
mod tests;
