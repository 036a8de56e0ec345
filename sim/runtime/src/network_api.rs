//! Networks, as Docker 20.10's bridge driver shows them through the API (checked against the
//! daemon by the conformance suite):
//!
//! - Every host has `bridge`, `host` and `none`: creating one of those names is refused (403
//!   "operation is not permitted on predefined bridge network ", `Invalid`), and so is removing
//!   one (403 "bridge is a pre-defined network and cannot be removed", `Invalid`).
//! - A create always asks Docker to check duplicates: a name taken is 409 "network with name n1
//!   already exists" (`Conflict`; so is an empty name, as the daemon answers). Any other name is
//!   taken as it is. The check is best-effort: Docker looks for the name as the create begins
//!   and adds the network as it ends (some 130-150 ms later on Docker 20.10's bridge driver), so
//!   creates of one name that overlap all pass the check and make one network each (four at
//!   once made four). [`SimRuntime::begin_network_create`] and
//!   [`SimRuntime::finish_network_create`] are those two moments; `execute` runs both at once.
//!   Someone else can also make a second network of a name ([`SimRuntime::insert_network`]).
//!   With two networks of one name, a lookup by that name is ambiguous (400, `Invalid`).
//! - A network is found by full id, else by name, else by unique id prefix; none is 404 "network
//!   nope not found".
//! - Attaching a container that is not running (its create, a connect) only records the
//!   attachment, keyed by the network's name, or by what it was given when no such network
//!   exists: nothing is checked, a second connect changes nothing. Its start looks each one up
//!   (by the id it was last attached to, if it ever ran) and fails with 404 "network X not
//!   found", recording the error and exit code 128 as any failed start, while one is gone. It
//!   joins them in turn, `bridge` first, and publishes the ports as it joins the first: a port
//!   taken fails it (500) before a later network is looked up.
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
//! - The built-in networks are not user-defined: aliases on one are 400 "network-scoped alias is
//!   supported only for containers in user defined networks" (`Invalid`). A connect with
//!   aliases is refused at once (running or not); a create takes them on its first network (the
//!   one Docker's create is given), and every start of the container is refused so, recording
//!   the error and exit code 128 as any failed start.
//! - `host` and `none` exclude any other network, as Docker's `updateNetworkSettings` checks a
//!   connect (running or not), all 400 (`Invalid`): a container not on `host` connected to it is
//!   "container cannot be disconnected from host network or connected to host network"; a
//!   container on `host` connected anywhere else is "container sharing network namespace with
//!   another container or host cannot be connected to any other network"; `none` with any other
//!   network, either way round, is "container cannot be connected to multiple networks with one
//!   of the networks in private (none) mode". A create naming such a pair is refused so, and
//!   creates nothing (the adapter connects the networks after the first, and removes the
//!   container when a connect fails). A container on `host` or `none` publishes no ports (see
//!   `publishing`).
//!
//! Not modelled: IPAM, drivers and options, disconnects from `host`, containers sharing another
//! container's network namespace.

use super::SimRuntime;
use super::containers::DEFAULT_NETWORK;
use super::networks::{Attachment, Lookup, SimNetwork};
use super::not_found;
use drydock_engine::runtime::{
    NetworkCreate, NetworkInfo, RuntimeError, RuntimeObject, RuntimeReply, RuntimeResult, is_builtin_network,
};
use std::collections::BTreeMap;

/// Docker's refusal of aliases on a network that is not user-defined (`bridge`, `host`, `none`).
const ALIASES_NEED_A_USER_DEFINED_NETWORK: &str =
    "network-scoped alias is supported only for containers in user defined networks";
/// Docker's refusal of `host` for a container on another network.
const HOST_ONLY_ALONE: &str = "container cannot be disconnected from host network or connected to host network";
/// Docker's refusal of another network for a container on `host`.
const SHARED_NAMESPACE_ONLY_ALONE: &str =
    "container sharing network namespace with another container or host cannot be connected to any other network";
/// Docker's refusal of `none` with any other network.
const NONE_ONLY_ALONE: &str =
    "container cannot be connected to multiple networks with one of the networks in private (none) mode";

/// Docker's check of aliases (`updateNetworkConfig`): a network that is not user-defined takes
/// none.
fn check_aliases(network: &SimNetwork, aliases: &[String]) -> Result<(), RuntimeError> {
    if is_builtin_network(&network.name) && !aliases.is_empty() {
        return Err(RuntimeError::Invalid(ALIASES_NEED_A_USER_DEFINED_NETWORK.into()));
    }
    Ok(())
}

/// A network create that passed Docker's duplicate check and has not finished
/// ([`SimRuntime::begin_network_create`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkCreating(SimNetwork);

impl NetworkCreating {
    /// The id the network will have.
    pub fn id(&self) -> &str {
        &self.0.id
    }
}

impl SimRuntime {
    /// The networks, in id order (the built-in ones included).
    pub fn networks(&self) -> impl Iterator<Item = NetworkInfo> + '_ {
        self.networks.all().map(|n| self.network_info(n))
    }

    /// Every network's id, name and labels, in id order (built-in ones first), without the
    /// endpoints `networks` works out (for checkers: no scan of the containers).
    pub fn network_labels(&self) -> impl Iterator<Item = (&str, &str, &BTreeMap<String, String>)> {
        self.networks.all().map(|n| (n.id.as_str(), n.name.as_str(), &n.labels))
    }

    /// Whether a network of this name exists.
    pub fn has_network_named(&self, name: &str) -> bool {
        self.networks.all().any(|n| n.name == name)
    }

    /// Add a network as someone else would, without Docker's duplicate check: two networks of
    /// one name make lookups by that name ambiguous. Returns its id.
    pub fn insert_network(&mut self, name: &str, labels: BTreeMap<String, String>) -> String {
        let id = self.networks.next_id();
        self.finish_network_create(NetworkCreating(SimNetwork { id, name: name.to_string(), labels }))
    }

    pub(crate) fn create_network(&mut self, create: &NetworkCreate) -> RuntimeResult {
        let creating = self.begin_network_create(create)?;
        Ok(RuntimeReply::Created { id: self.finish_network_create(creating) })
    }

    /// A network create begins: Docker checks the name (only against networks that exist: one
    /// whose create has begun and not finished is not seen) and draws the id. Nothing is
    /// visible until [`SimRuntime::finish_network_create`].
    pub fn begin_network_create(&mut self, create: &NetworkCreate) -> Result<NetworkCreating, RuntimeError> {
        let name = create.name.as_str();
        if is_builtin_network(name) {
            return Err(RuntimeError::Invalid(format!("operation is not permitted on predefined {name} network ")));
        }
        if name.is_empty() || self.has_network_named(name) {
            return Err(RuntimeError::Conflict(format!("network with name {name} already exists")));
        }
        let id = self.networks.next_id();
        Ok(NetworkCreating(SimNetwork { id, name: name.to_string(), labels: create.labels.clone() }))
    }

    /// The create ends: the network exists (even if another of its name was made meanwhile).
    /// Returns its id.
    pub fn finish_network_create(&mut self, creating: NetworkCreating) -> String {
        let NetworkCreating(network) = creating;
        let id = network.id.clone();
        self.networks.insert_as(network);
        self.journal.resource(RuntimeObject::Network, &id);
        self.other_events("network create", 1);
        id
    }

    pub(crate) fn inspect_network(&self, id_or_name: &str) -> RuntimeResult {
        let network = self.networks.find(id_or_name).map_err(|e| e.error(id_or_name, Lookup::Inspect))?;
        Ok(RuntimeReply::Network(self.network_info(network)))
    }

    /// Networks carrying every one of `labels`, by name (then id).
    pub(crate) fn list_networks(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        let mut list: Vec<NetworkInfo> = self
            .networks
            .all()
            .filter(|n| labels.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
            .map(|n| self.network_info(n))
            .collect();
        list.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        RuntimeReply::Networks(list)
    }

    pub(crate) fn remove_network(&mut self, id_or_name: &str) -> RuntimeResult {
        let network = self.networks.find(id_or_name).map_err(|e| e.error(id_or_name, Lookup::Remove))?;
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
        self.journal.resource(RuntimeObject::Network, &id);
        self.networks.remove(&id);
        self.other_events("network destroy", 1);
        Ok(RuntimeReply::Done)
    }

    /// Docker checks the container first (404 "No such container"), then, for a running one, the
    /// network (404), the aliases and the rules of `host` and `none` (400, see
    /// [`SimRuntime::check_connect`]) and that it is not attached yet (403). For one that is not
    /// running, a network that exists is checked as for a running one (but a second connect
    /// changes nothing); one that does not is recorded unchecked.
    pub(crate) fn connect_network(&mut self, network: &str, container: &str, aliases: &[String]) -> RuntimeResult {
        let id = self.containers.resolve(container)?;
        self.refuse_while_removing(&id)?;
        self.journal.container(&id);
        let attached = self.containers.get(&id).map(|c| &c.networks).ok_or_else(|| not_found(&id))?;
        if self.containers.is_running(&id) {
            let found = self.networks.find(network).map_err(|e| e.error(network, Lookup::Inspect))?;
            self.check_connect(attached, found, aliases)?;
            let (net_id, net_name) = (found.id.clone(), found.name.clone());
            let Some(record) = self.containers.get_mut(&id) else { return Err(not_found(&id)) };
            if record.networks.values().any(|a| a.network_id.as_deref() == Some(net_id.as_str())) {
                return Err(RuntimeError::Conflict(format!(
                    "endpoint with name {} already exists in network {net_name}",
                    record.info().name
                )));
            }
            let attachment = Attachment { aliases: aliases.to_vec(), network_id: Some(net_id.clone()) };
            record.networks.insert(net_name, attachment);
            self.index_attachment(&id, &net_id, true);
            self.other_events("network connect", 1);
            return Ok(RuntimeReply::Done);
        }
        if let Ok(found) = self.networks.find(network)
            && self.check_connect(attached, found, aliases)?
        {
            return Ok(RuntimeReply::Done);
        }
        let (key, attachment) = self.attachment(network, aliases);
        if let Some(record) = self.containers.get_mut(&id) {
            record.networks.entry(key).or_insert(attachment);
        }
        Ok(RuntimeReply::Done)
    }

    /// Docker's checks of a connect of a container attached to `attached` to `network` with
    /// `aliases` (`updateNetworkConfig`, then `updateNetworkSettings`): aliases need a
    /// user-defined network; `host` takes only a container on `host` (one whose attachments
    /// include it: Docker's network mode); then, against each network it is attached to that
    /// still exists: that network again is no change (`Ok(true)`), while `host` or `none` beside
    /// another network is refused. All refusals are 400 (`Invalid`).
    pub(crate) fn check_connect(
        &self,
        attached: &BTreeMap<String, Attachment>,
        network: &SimNetwork,
        aliases: &[String],
    ) -> Result<bool, RuntimeError> {
        check_aliases(network, aliases)?;
        if network.name == "host" && !attached.contains_key("host") {
            return Err(RuntimeError::Invalid(HOST_ONLY_ALONE.into()));
        }
        let others: Vec<&SimNetwork> = attached
            .iter()
            .filter_map(|(key, a)| self.networks.find(a.network_id.as_deref().unwrap_or(key)).ok())
            .collect();
        if others.iter().any(|other| other.name == network.name) {
            return Ok(true);
        }
        for other in others {
            if other.name == "host" || network.name == "host" {
                return Err(RuntimeError::Invalid(SHARED_NAMESPACE_ONLY_ALONE.into()));
            }
            if other.name == "none" || network.name == "none" {
                return Err(RuntimeError::Invalid(NONE_ONLY_ALONE.into()));
            }
        }
        Ok(false)
    }

    /// Docker refuses to connect or disconnect a container whose removal is in progress, with a
    /// 500 (moby's `errRemovalContainer`; `drydock runtime diff` saw a connect issued during a
    /// removal fail so).
    fn refuse_while_removing(&self, id: &str) -> Result<(), RuntimeError> {
        if self.containers.get(id).is_some_and(|c| c.state() == drydock_engine::runtime::ContainerState::Removing) {
            return Err(RuntimeError::Transient(format!(
                "Container {id} is marked for removal and cannot be connected or disconnected to the network"
            )));
        }
        Ok(())
    }

    pub(crate) fn disconnect_network(&mut self, network: &str, container: &str) -> RuntimeResult {
        let id = self.containers.resolve(container)?;
        self.refuse_while_removing(&id)?;
        self.journal.container(&id);
        let running = self.containers.is_running(&id);
        let found = self.networks.find(network).ok().map(|n| (n.id.clone(), n.name.clone()));
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
                    // Docker logs two: the endpoint's leaving and the disconnect (20.10.24).
                    self.other_events("network disconnect", 2);
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
                self.other_events("network disconnect", 1);
                Ok(RuntimeReply::Done)
            }
            None => Err(RuntimeError::NotFound(format!("container {id} is not connected to the network {key}"))),
        }
    }

    /// How attaching a container that is not running to `network` is recorded: by the network's
    /// name if it exists (uniquely), else by `network` as given.
    pub(crate) fn attachment(&self, network: &str, aliases: &[String]) -> (String, Attachment) {
        let key = self.networks.find(network).map_or_else(|_| network.to_string(), |n| n.name.clone());
        (key, Attachment { aliases: aliases.to_vec(), network_id: None })
    }

    /// The network each of container `id`'s attachments names now, as a start looks them up
    /// (Docker's `allocateNetwork`: the default `bridge` first, then the others, each joined
    /// before the next is looked up): attachment key -> network id, for those found before the
    /// first refusal, and that refusal: 404 "network X not found" for a network gone, 400 for
    /// aliases on a built-in network (Docker's create takes them; attaching refuses them).
    pub(crate) fn resolve_attachments(&self, id: &str) -> (BTreeMap<String, String>, Option<RuntimeError>) {
        let mut resolved = BTreeMap::new();
        let Some(record) = self.containers.get(id) else { return (resolved, None) };
        let (bridge, others): (Vec<_>, Vec<_>) = record.networks.iter().partition(|(key, _)| *key == DEFAULT_NETWORK);
        for (key, attachment) in bridge.into_iter().chain(others) {
            let wanted = attachment.network_id.as_deref().unwrap_or(key);
            let Ok(network) = self.networks.find(wanted) else {
                return (resolved, Some(RuntimeError::NotFound(format!("network {wanted} not found"))));
            };
            if let Err(refused) = check_aliases(network, &attachment.aliases) {
                return (resolved, Some(refused));
            }
            resolved.insert(key.clone(), network.id.clone());
        }
        (resolved, None)
    }

    /// Container `id` started on the networks `resolved` found: each attachment remembers its
    /// network's id.
    pub(crate) fn activate_attachments(&mut self, id: &str, resolved: BTreeMap<String, String>) {
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
    pub(crate) fn index_attachment(&mut self, id: &str, network_id: &str, add: bool) {
        if add {
            self.networks.attach(id, network_id);
            return;
        }
        let record = self.containers.get(id);
        if record.is_some_and(|c| c.networks.values().any(|a| a.network_id.as_deref() == Some(network_id))) {
            return;
        }
        self.networks.detach(id, network_id);
    }

    /// The running containers with an endpoint on network `network_id`, in id order.
    pub(crate) fn endpoints(&self, network_id: &str) -> Vec<String> {
        let attached = self.networks.attached(network_id);
        attached.filter(|id| self.containers.is_running(id)).cloned().collect()
    }

    fn network_info(&self, network: &SimNetwork) -> NetworkInfo {
        NetworkInfo {
            id: network.id.clone(),
            name: network.name.clone(),
            labels: network.labels.clone(),
            containers: self.endpoints(&network.id),
        }
    }
}

#[cfg(test)]
#[path = "network_api_tests.rs"]
mod tests;
