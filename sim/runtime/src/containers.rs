//! Containers, as Docker 20.10's daemon keeps them: one record per container (what `inspect`
//! shows, plus what it was created with), found by full id, by name, or by a unique id prefix
//! (a prefix of several is an error of its own, a 500 "Multiple IDs found with provided
//! prefix"), and listed by label (`docker ps --filter label=K=V`) through an index. Ids are 64
//! hex digits (here from the seed and a count of creates, so a run makes the same ids every
//! time); a create without a name gets one as Docker's `namesgenerator` makes them.
//!
//! What the container API does with them is in `container_api` (create, inspect, lists) and
//! `lifecycle` (start, stop, removal, time).

use super::networks::Attachment;
use super::ports::{Binding, wildcard_bindings};
use super::{label_index, not_found};
use drydock_engine::WallTime;
use drydock_engine::api::container::{Mount, PortMapping};
use drydock_engine::fixed::{FixedMap, SortedMap};
use drydock_engine::runtime::{ContainerInfo, ContainerState, RuntimeError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// The network a container is attached to when its create names none.
pub(crate) const DEFAULT_NETWORK: &str = "bridge";

/// A container: what `inspect` shows, what it was created with, and its main process.
///
/// Its id, name and labels are indexed by [`Containers`], so they are read-only here: its state
/// changes through the transitions below.
#[derive(Clone, Debug)]
pub(crate) struct SimContainer {
    info: ContainerInfo,
    /// The ports it publishes while it runs, with the host address of each: `info.ports` is
    /// their ports, in order (kept in step by [`SimContainer::replace_ports`]).
    bindings: Vec<Binding>,
    /// The command it runs: the create's, else its image's default. Empty for an inserted
    /// container, which then runs until it is stopped.
    pub(crate) command: Vec<String>,
    pub(crate) mounts: Vec<Mount>,
    /// The ports it publishes; those without a host port (or with 0) get one at each start.
    pub(crate) requested_ports: Vec<PortMapping>,
    /// Its network attachments, keyed as Docker keys its endpoint configs: by the network's
    /// name if it existed when attached, else by the id or name it was given.
    pub(crate) networks: BTreeMap<String, Attachment>,
    /// Files its processes can read: its image's, then those copied in or its processes
    /// wrote, by absolute path.
    pub(crate) files: BTreeMap<String, String>,
    /// Those of its own `files` whose mode lets them be executed (copied so).
    pub(crate) executables: BTreeSet<String>,
    /// The create's environment variables.
    pub(crate) env: BTreeMap<String, String>,
    /// What its running main process will have written when it ends (`shell::Ran::written`),
    /// applied then.
    pub(crate) writes_pending: BTreeMap<String, String>,
    /// Made from an image built `FROM scratch` (no busybox).
    pub(crate) scratch: bool,
    /// The id of the image it was created from; `None` for a container inserted with an image
    /// that is not present.
    image_id: Option<String>,
    /// When its main process started, while it runs.
    pub(crate) started_at: Option<WallTime>,
    /// When its main process ends by itself, and with which status, if it does.
    pub(crate) exit_due: Option<(WallTime, i64)>,
}

impl SimContainer {
    /// A container record: `info` with what it was created with, attached to the default
    /// network if `networks` is empty, not running, nothing due.
    pub(crate) fn new(info: ContainerInfo, image_id: Option<String>, created_with: CreatedWith) -> Self {
        let CreatedWith { command, mounts, requested_ports, mut networks, files, scratch, env } = created_with;
        if networks.is_empty() {
            networks = default_networks();
        }
        SimContainer {
            bindings: wildcard_bindings(&info.ports),
            info,
            command,
            mounts,
            requested_ports,
            networks,
            files,
            executables: BTreeSet::new(),
            env,
            writes_pending: BTreeMap::new(),
            scratch,
            image_id,
            started_at: None,
            exit_due: None,
        }
    }

    /// What `inspect` shows.
    pub(crate) fn info(&self) -> &ContainerInfo {
        &self.info
    }

    pub(crate) fn id(&self) -> &str {
        &self.info.id
    }

    /// The id of the image it was created from, if that image was present.
    pub(crate) fn image_id(&self) -> Option<&str> {
        self.image_id.as_deref()
    }

    pub(crate) fn state(&self) -> ContainerState {
        self.info.state
    }

    /// Its main process started at `now`: running, with no exit code or error.
    pub(crate) fn run(&mut self, now: WallTime) {
        self.info.state = ContainerState::Running;
        self.info.exit_code = None;
        self.info.error = None;
        self.started_at = Some(now);
    }

    /// Its main process ended with `code`.
    pub(crate) fn exit(&mut self, code: i64) {
        self.info.state = ContainerState::Exited;
        self.info.exit_code = Some(code);
        self.started_at = None;
    }

    /// A start failed: its state stays, with Docker's error and `exit_code`.
    pub(crate) fn fail_start(&mut self, message: &str, exit_code: i64) {
        self.info.error = Some(message.to_string());
        self.info.exit_code = Some(exit_code);
    }

    /// Its removal began.
    pub(crate) fn mark_removing(&mut self) {
        self.info.state = ContainerState::Removing;
    }

    /// The ports it publishes, with their host addresses, in port order.
    pub(crate) fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// It publishes `bindings` from now on (`inspect` shows their ports, in order); the
    /// bindings it had before.
    pub(crate) fn replace_ports(&mut self, mut bindings: Vec<Binding>) -> Vec<Binding> {
        bindings.sort();
        self.info.ports = bindings.iter().map(|b| b.port.clone()).collect();
        std::mem::replace(&mut self.bindings, bindings)
    }
}

/// What a container is created with, besides what `inspect` shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct CreatedWith {
    pub(crate) command: Vec<String>,
    pub(crate) mounts: Vec<Mount>,
    pub(crate) requested_ports: Vec<PortMapping>,
    /// None: the default network.
    pub(crate) networks: BTreeMap<String, Attachment>,
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) scratch: bool,
    pub(crate) env: BTreeMap<String, String>,
}

/// The containers: records by id, the name index, the label index, the ids handed out.
///
/// *Guarantees* (see [`Containers::check`]): a record is kept under its id; the name index maps
/// each container's name to it, and the label index holds each container under each of its
/// labels, and nothing else: [`Containers::insert_created`], [`Containers::insert_outside`],
/// [`Containers::replace`] and [`Containers::remove`] keep both in step, and nothing outside
/// writes a record's id, name or labels. Ids handed out by creates derive from the seed and
/// their count, so they are the same on every run, and only a create that succeeds uses one up.
///
/// *Assumptions*: names are unique, as Docker keeps them. Only an insert from outside can give
/// a second container a name one holds; then the name index names the inserted one, and the
/// other is found by id only.
#[derive(Clone, Debug, Default)]
pub(crate) struct Containers {
    /// Container id -> container.
    records: SortedMap<String, SimContainer>,
    /// Container name -> id, for every container in `records`.
    names: FixedMap<String, String>,
    /// (label, value) -> the ids of the containers carrying it.
    labelled: label_index::LabelIndex,
    /// Container ids handed out so far, for fresh ones.
    ids: u64,
    seed: u64,
}

impl Containers {
    /// No containers; ids derived from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Containers { seed, ..Containers::default() }
    }

    /// Container `id` (a full id only).
    pub(crate) fn get(&self, id: &str) -> Option<&SimContainer> {
        self.records.get(id)
    }

    /// Container `id`, to change what is not indexed (see [`SimContainer`]).
    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut SimContainer> {
        self.records.get_mut(id)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.records.contains_key(id)
    }

    /// Every container, in id order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &SimContainer> {
        self.records.values()
    }

    /// The containers carrying `label` with `value`, in id order (an index: no scan).
    pub(crate) fn labelled<'a>(&'a self, label: &str, value: &str) -> impl Iterator<Item = &'a SimContainer> + 'a {
        self.labelled.ids(label, value).filter_map(|id| self.records.get(id))
    }

    /// The id of the container named `name` (without the leading `/`).
    pub(crate) fn id_named(&self, name: &str) -> Option<&String> {
        self.names.get(name)
    }

    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.records.get(id).is_some_and(|c| c.info.state == ContainerState::Running)
    }

    /// Docker resolves a full id, a name, or an id prefix; a prefix of several ids is an error
    /// of its own (a 500: "Multiple IDs found with provided prefix"), never "not found".
    pub(crate) fn resolve(&self, id_or_name: &str) -> Result<String, RuntimeError> {
        if self.records.contains_key(id_or_name) {
            return Ok(id_or_name.to_string());
        }
        if let Some(id) = self.names.get(id_or_name.trim_start_matches('/')) {
            return Ok(id.clone());
        }
        let mut matches = self.records.range(id_or_name.to_string()..).take_while(|(id, _)| id.starts_with(id_or_name));
        match (matches.next(), matches.next()) {
            (Some((id, _)), None) if !id_or_name.is_empty() => Ok(id.clone()),
            (Some(_), Some(_)) if !id_or_name.is_empty() => {
                Err(RuntimeError::Invalid(format!("Multiple IDs found with provided prefix: {id_or_name}")))
            }
            _ => Err(not_found(id_or_name)),
        }
    }

    /// The id of the first container (by id) created from image `image_id` that `which` accepts.
    pub(crate) fn first_using_image(&self, image_id: &str, which: impl Fn(&ContainerInfo) -> bool) -> Option<String> {
        self.records
            .values()
            .filter(|c| c.image_id.as_deref() == Some(image_id))
            .map(|c| &c.info)
            .find(|c| which(c))
            .map(|c| c.id.clone())
    }

    /// The id the next create that succeeds gets.
    pub(crate) fn next_id(&self) -> String {
        self.id_number(self.ids + 1)
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
    pub(crate) fn generated_name(&self, id: &str) -> String {
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

    /// Keep `record`, made by a create that succeeded with the id [`Containers::next_id`] gave:
    /// that id is used up.
    pub(crate) fn insert_created(&mut self, record: SimContainer) {
        debug_assert_eq!(record.info.id, self.next_id(), "a create's id");
        self.ids += 1;
        self.insert_outside(record);
    }

    /// Keep `record`, of an id no container has, inserted from outside (no id is used up).
    pub(crate) fn insert_outside(&mut self, record: SimContainer) {
        debug_assert!(!self.records.contains_key(&record.info.id), "container {} is there already", record.info.id);
        self.names.insert(record.info.name.clone(), record.info.id.clone());
        self.labelled.add(&record.info.id, &record.info.labels);
        self.records.insert(record.info.id.clone(), record);
    }

    /// Replace what `inspect` shows of container `info.id` (which exists) with `info`, as an
    /// insert from outside does: it keeps what it was created with, takes `image_id` if there is
    /// one, and runs since `started_at` (if it runs). Returns when its exit was due, if it was:
    /// it is not any more.
    pub(crate) fn replace(
        &mut self,
        info: ContainerInfo,
        image_id: Option<String>,
        started_at: Option<WallTime>,
    ) -> Option<WallTime> {
        let id = info.id.clone();
        self.names.insert(info.name.clone(), id.clone());
        if let Some(old) = self.records.get(&id).map(|c| c.info.labels.clone()) {
            self.labelled.remove(&id, &old);
        }
        self.labelled.add(&id, &info.labels);
        let existing = self.records.get_mut(&id)?;
        if existing.info.name != info.name && self.names.get(&existing.info.name) == Some(&id) {
            self.names.swap_remove(&existing.info.name);
        }
        if image_id.is_some() {
            existing.image_id = image_id;
        }
        existing.bindings = wildcard_bindings(&info.ports);
        existing.info = info;
        existing.started_at = started_at;
        existing.exit_due.take().map(|(at, _)| at)
    }

    /// Forget container `id`: its record, its name, its labels.
    pub(crate) fn remove(&mut self, id: &str) -> Option<SimContainer> {
        let removed = self.records.remove(id)?;
        self.names.swap_remove(&removed.info.name);
        self.labelled.remove(id, &removed.info.labels);
        Some(removed)
    }

    /// Whether the guarantees hold (with unique names, as Docker keeps them).
    pub(crate) fn check(&self) -> Result<(), String> {
        if let Some((id, c)) = self.records.iter().find(|(id, c)| **id != c.info.id) {
            return Err(format!("containers: container {} kept as {id}", c.info.id));
        }
        let named: BTreeMap<&str, &str> =
            self.records.values().map(|c| (c.info.name.as_str(), c.info.id.as_str())).collect();
        let indexed: BTreeMap<&str, &str> = self.names.iter().map(|(name, id)| (name.as_str(), id.as_str())).collect();
        if named.len() == self.records.len() && indexed != named {
            return Err(format!("containers: names indexed {indexed:?}, while the containers are named {named:?}"));
        }
        if let Some((name, id)) =
            indexed.iter().find(|(name, id)| self.records.get(**id).is_none_or(|c| c.info.name != **name))
        {
            return Err(format!("containers: name {name} indexed for {id}, which does not carry it"));
        }
        let carried: BTreeSet<(&str, &str, &str)> = self
            .records
            .values()
            .flat_map(|c| c.info.labels.iter().map(move |(k, v)| (k.as_str(), v.as_str(), c.info.id.as_str())))
            .collect();
        let labelled: BTreeSet<(&str, &str, &str)> = self.labelled.entries().collect();
        if labelled != carried {
            return Err(format!("containers: labels indexed {labelled:?}, while the containers carry {carried:?}"));
        }
        Ok(())
    }
}

fn default_networks() -> BTreeMap<String, Attachment> {
    BTreeMap::from([(DEFAULT_NETWORK.to_string(), Attachment::default())])
}

#[cfg(test)]
#[path = "containers_tests.rs"]
mod tests;
