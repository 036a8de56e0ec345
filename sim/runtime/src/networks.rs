//! Networks, as Docker 20.10's bridge driver shows them through the API (checked against the
//! daemon by the conformance suite):
//!
//! - Every host has `bridge`, `host` and `none`: creating one of those names is refused (403
//!   "operation is not permitted on predefined bridge network ", `Invalid`), and so is removing
//!   one (403 "bridge is a pre-defined network and cannot be removed", `Invalid`).
//! - A create always asks Docker to check duplicates: a name taken is 409 "network with name n1
//!   already exists" (`Conflict`; so is an empty name, as the daemon answers). Any other name is
//!   taken as it is. Only someone else can make two networks of one name
//!   ([`SimRuntime::insert_network`]); then a lookup by that name is ambiguous (400, `Invalid`).
//! - A network is found by full id, else by name, else by unique id prefix; none is 404 "network
//!   nope not found".
//! - Attaching a container that is not running (its create, a connect) only records the
//!   attachment, keyed by the network's name, or by what it was given when no such network
//!   exists: nothing is checked, a second connect changes nothing. Its start looks each one up
//!   (by the id it was last attached to, if it ever ran) and fails with 404 "network X not
//!   found", recording the error and exit code 128 as any failed start, while one is gone.
//! - A running container has an endpoint on each of its networks: the network's inspect lists
//!   it (and only running ones). Connecting it needs the network (404), and a second connect is
//!   403 "endpoint with name c1 already exists in network n1" (`Conflict`); disconnecting it
//!   from a network it is not on is 500 "container ID is not connected to network n1"
//!   (`NotFound` here: what was to be detached is not there). A stopped container keeps its
//!   attachments.
//! - A network with a running container attached cannot be removed (403 "error while removing
//!   network: network n1 id ID has active endpoints", `Conflict`); with only created or stopped
//!   ones it can, and their next start fails as above.
//!
//! Not modelled: IPAM, drivers and options, what the built-in networks refuse beyond create and
//! remove (aliases on `bridge`, connecting to `host` or `none`).

use super::SimRuntime;
use super::not_found;
use drydock_engine::runtime::{
    BUILTIN_NETWORKS, ContainerState, NetworkCreate, NetworkInfo, RuntimeError, RuntimeReply, RuntimeResult,
    is_builtin_network,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A network: what its inspect shows besides the containers attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SimNetwork {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) labels: BTreeMap<String, String>,
}

/// A container's attachment to a network (Docker's endpoint settings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Attachment {
    pub(super) aliases: Vec<String>,
    /// The id of the network it was attached to when the container last started (Docker's
    /// `NetworkID`, kept while it is stopped); `None` if it never started on it.
    pub(super) network_id: Option<String>,
}

impl SimRuntime {
    /// The networks, in id order (the built-in ones included).
    pub fn networks(&self) -> impl Iterator<Item = NetworkInfo> + '_ {
        self.all_networks().map(|n| self.network_info(n))
    }

    /// Every network's id, name and labels, in id order (built-in ones first), without the
    /// endpoints `networks` works out (for checkers: no scan of the containers).
    pub fn network_labels(&self) -> impl Iterator<Item = (&str, &str, &BTreeMap<String, String>)> {
        self.all_networks().map(|n| (n.id.as_str(), n.name.as_str(), &n.labels))
    }

    /// Whether a network of this name exists.
    pub fn has_network_named(&self, name: &str) -> bool {
        self.all_networks().any(|n| n.name == name)
    }

    /// Add a network as someone else would, without Docker's duplicate check: two networks of
    /// one name make lookups by that name ambiguous. Returns its id.
    pub fn insert_network(&mut self, name: &str, labels: BTreeMap<String, String>) -> String {
        self.network_ids += 1;
        let id = network_id(self.seed, &self.network_ids.to_le_bytes());
        self.journal.network(&id);
        self.networks.insert(id.clone(), SimNetwork { id: id.clone(), name: name.to_string(), labels });
        id
    }

    pub(super) fn create_network(&mut self, create: &NetworkCreate) -> RuntimeResult {
        let name = create.name.as_str();
        if is_builtin_network(name) {
            return Err(RuntimeError::Invalid(format!("operation is not permitted on predefined {name} network ")));
        }
        if name.is_empty() || self.all_networks().any(|n| n.name == name) {
            return Err(RuntimeError::Conflict(format!("network with name {name} already exists")));
        }
        let id = self.insert_network(name, create.labels.clone());
        Ok(RuntimeReply::Created { id })
    }

    pub(super) fn inspect_network(&self, id_or_name: &str) -> RuntimeResult {
        let network = self.find_network(id_or_name).map_err(|e| e.error(id_or_name, Lookup::Inspect))?;
        Ok(RuntimeReply::Network(self.network_info(network)))
    }

    /// Networks carrying every one of `labels`, by name (then id).
    pub(super) fn list_networks(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        let mut list: Vec<NetworkInfo> = self
            .all_networks()
            .filter(|n| labels.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
            .map(|n| self.network_info(n))
            .collect();
        list.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        RuntimeReply::Networks(list)
    }

    pub(super) fn remove_network(&mut self, id_or_name: &str) -> RuntimeResult {
        let network = self.find_network(id_or_name).map_err(|e| e.error(id_or_name, Lookup::Remove))?;
        if is_builtin_network(&network.name) {
            return Err(RuntimeError::Invalid(format!(
                "{} is a pre-defined network and cannot be removed",
                network.name
            )));
        }
        if !self.endpoints(&network.id).is_empty() {
            return Err(RuntimeError::Conflict(format!(
                "error while removing network: network {} id {} has active endpoints",
                network.name, network.id
            )));
        }
        let id = network.id.clone();
        self.journal.network(&id);
        self.networks.remove(&id);
        Ok(RuntimeReply::Done)
    }

    /// Docker checks the container first (404 "No such container"), then, for a running one, the
    /// network (404) and that it is not attached yet.
    pub(super) fn connect_network(&mut self, network: &str, container: &str, aliases: &[String]) -> RuntimeResult {
        let id = self.resolve(container)?;
        self.journal.container(&id);
        if self.is_running(&id) {
            let found = self.find_network(network).map_err(|e| e.error(network, Lookup::Inspect))?;
            let (net_id, net_name) = (found.id.clone(), found.name.clone());
            let Some(record) = self.containers.get_mut(&id) else { return Err(not_found(&id)) };
            if record.networks.values().any(|a| a.network_id.as_deref() == Some(net_id.as_str())) {
                return Err(RuntimeError::Conflict(format!(
                    "endpoint with name {} already exists in network {net_name}",
                    record.info.name
                )));
            }
            let attachment = Attachment { aliases: aliases.to_vec(), network_id: Some(net_id.clone()) };
            record.networks.insert(net_name, attachment);
            self.index_attachment(&id, &net_id, true);
            return Ok(RuntimeReply::Done);
        }
        let (key, attachment) = self.attachment(network, aliases);
        if let Some(record) = self.containers.get_mut(&id) {
            record.networks.entry(key).or_insert(attachment);
        }
        Ok(RuntimeReply::Done)
    }

    pub(super) fn disconnect_network(&mut self, network: &str, container: &str) -> RuntimeResult {
        let id = self.resolve(container)?;
        self.journal.container(&id);
        let running = self.is_running(&id);
        let found = self.find_network(network).ok().map(|n| (n.id.clone(), n.name.clone()));
        let Some(record) = self.containers.get_mut(&id) else { return Err(not_found(&id)) };
        if running {
            let Some((net_id, net_name)) = found else {
                return Err(RuntimeError::NotFound(format!("network {network} not found")));
            };
            let key = record
                .networks
                .iter()
                .find(|(_, a)| a.network_id.as_deref() == Some(net_id.as_str()))
                .map(|(key, _)| key.clone());
            return match key {
                Some(key) => {
                    record.networks.remove(&key);
                    self.index_attachment(&id, &net_id, false);
                    Ok(RuntimeReply::Done)
                }
                None => Err(RuntimeError::NotFound(format!("container {id} is not connected to network {net_name}"))),
            };
        }
        let key = found.map_or_else(|| network.to_string(), |(_, name)| name);
        match record.networks.remove(&key) {
            Some(removed) => {
                if let Some(net_id) = removed.network_id {
                    self.index_attachment(&id, &net_id, false);
                }
                Ok(RuntimeReply::Done)
            }
            None => Err(RuntimeError::NotFound(format!("container {id} is not connected to the network {key}"))),
        }
    }

    /// How attaching a container that is not running to `network` is recorded: by the network's
    /// name if it exists (uniquely), else by `network` as given.
    pub(super) fn attachment(&self, network: &str, aliases: &[String]) -> (String, Attachment) {
        let key = self.find_network(network).map_or_else(|_| network.to_string(), |n| n.name.clone());
        (key, Attachment { aliases: aliases.to_vec(), network_id: None })
    }

    /// The network each of container `id`'s attachments names now, as a start looks them up:
    /// attachment key -> network id, or Docker's 404 message for the first one missing.
    pub(super) fn resolve_attachments(&self, id: &str) -> Result<BTreeMap<String, String>, String> {
        let Some(record) = self.containers.get(id) else { return Ok(BTreeMap::new()) };
        let mut resolved = BTreeMap::new();
        for (key, attachment) in &record.networks {
            let wanted = attachment.network_id.as_deref().unwrap_or(key);
            match self.find_network(wanted) {
                Ok(network) => resolved.insert(key.clone(), network.id.clone()),
                Err(_) => return Err(format!("network {wanted} not found")),
            };
        }
        Ok(resolved)
    }

    /// Container `id` started on the networks `resolved` found: each attachment remembers its
    /// network's id.
    pub(super) fn activate_attachments(&mut self, id: &str, resolved: BTreeMap<String, String>) {
        let Some(record) = self.containers.get_mut(id) else { return };
        let mut moved = Vec::new();
        for (key, network_id) in resolved {
            if let Some(attachment) = record.networks.get_mut(&key) {
                let before = attachment.network_id.replace(network_id.clone());
                if before.as_ref() != Some(&network_id) {
                    moved.push((before, network_id));
                }
            }
        }
        for (before, after) in moved {
            if let Some(before) = before {
                self.index_attachment(id, &before, false);
            }
            self.index_attachment(id, &after, true);
        }
    }

    /// Record (`add`) that container `id` has an attachment to network `network_id`, or forget
    /// it unless another of its attachments (one by name, one by id) is to that network too.
    pub(super) fn index_attachment(&mut self, id: &str, network_id: &str, add: bool) {
        if add {
            self.attached.entry(network_id.to_string()).or_default().insert(id.to_string());
            return;
        }
        let record = self.containers.get(id);
        if record.is_some_and(|c| c.networks.values().any(|a| a.network_id.as_deref() == Some(network_id))) {
            return;
        }
        if let Some(ids) = self.attached.get_mut(network_id) {
            ids.remove(id);
            if ids.is_empty() {
                self.attached.remove(network_id);
            }
        }
    }

    /// The running containers with an endpoint on network `network_id`, in id order.
    fn endpoints(&self, network_id: &str) -> Vec<String> {
        let attached = self.attached.get(network_id).into_iter().flatten();
        attached
            .filter(|id| self.containers.get(*id).is_some_and(|c| c.info.state == ContainerState::Running))
            .cloned()
            .collect()
    }

    fn network_info(&self, network: &SimNetwork) -> NetworkInfo {
        NetworkInfo {
            id: network.id.clone(),
            name: network.name.clone(),
            labels: network.labels.clone(),
            containers: self.endpoints(&network.id),
        }
    }

    /// The created networks and the built-in ones (whose ids derive from the seed and name).
    fn all_networks(&self) -> impl Iterator<Item = &SimNetwork> {
        self.builtin_networks.iter().chain(self.networks.values())
    }

    /// Docker's `FindNetwork`: a full id, else a name (two of one name are ambiguous), else a
    /// unique id prefix.
    fn find_network(&self, id_or_name: &str) -> Result<&SimNetwork, Missing> {
        if let Some(network) = self.all_networks().find(|n| n.id == id_or_name) {
            return Ok(network);
        }
        let named: Vec<&SimNetwork> = self.all_networks().filter(|n| n.name == id_or_name).collect();
        match named.as_slice() {
            [one] => return Ok(one),
            [] => {}
            many => return Err(Missing::AmbiguousName(many.len())),
        }
        if id_or_name.is_empty() {
            return Err(Missing::None);
        }
        let prefixed: Vec<&SimNetwork> = self.all_networks().filter(|n| n.id.starts_with(id_or_name)).collect();
        match prefixed.as_slice() {
            [one] => Ok(one),
            [] => Err(Missing::None),
            many => Err(Missing::AmbiguousPrefix(many.len())),
        }
    }
}

/// Why a network lookup found no one network.
enum Missing {
    None,
    AmbiguousName(usize),
    AmbiguousPrefix(usize),
}

/// Which API asked: inspect and remove word an ambiguous name differently.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Lookup {
    Inspect,
    Remove,
}

impl Missing {
    fn error(self, wanted: &str, lookup: Lookup) -> RuntimeError {
        let (count, based_on) = match self {
            Missing::None => return RuntimeError::NotFound(format!("network {wanted} not found")),
            Missing::AmbiguousName(n) => (n, "name"),
            Missing::AmbiguousPrefix(n) => (n, "ID prefix"),
        };
        RuntimeError::Invalid(match lookup {
            Lookup::Inspect => format!("{count} matches found based on {based_on}: network {wanted} is ambiguous"),
            Lookup::Remove => format!("network {wanted} is ambiguous ({count} matches found based on {based_on})"),
        })
    }
}

/// The built-in networks of a runtime with this seed.
pub(super) fn builtin_networks(seed: u64) -> Vec<SimNetwork> {
    BUILTIN_NETWORKS
        .iter()
        .map(|name| SimNetwork {
            id: network_id(seed, name.as_bytes()),
            name: name.to_string(),
            labels: BTreeMap::new(),
        })
        .collect()
}

/// A network id: 64 hex digits, from the seed and `what` (a counter or a built-in's name).
fn network_id(seed: u64, what: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"network");
    h.update(seed.to_le_bytes());
    h.update(what);
    hex::encode(h.finalize())
}

#[cfg(test)]
#[path = "networks_tests.rs"]
mod tests;
