//! Networks, as Docker 20.10's daemon keeps them: the networks created (by id), the built-in
//! ones every host has (`bridge`, `host`, `none`), Docker's `FindNetwork` (a full id, else a
//! name, two of one name being ambiguous, else a unique id prefix), and which containers are
//! attached to each. What the network API does with them is in `network_api`.

use drydock_engine::runtime::{BUILTIN_NETWORKS, RuntimeError};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// A network: what its inspect shows besides the containers attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SimNetwork {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
}

/// A container's attachment to a network (Docker's endpoint settings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attachment {
    pub(crate) aliases: Vec<String>,
    /// The id of the network it was attached to when the container last started (Docker's
    /// `NetworkID`, kept while it is stopped); `None` if it never started on it.
    pub(crate) network_id: Option<String>,
}

/// The networks, the ids handed out, and the index of attachments.
///
/// *Guarantees* (see [`Networks::check`]): the built-in networks are there, under the ids the
/// seed gives them, and nothing removes them; a created network is kept under its id, and ids
/// never repeat (they derive from the seed and a count); the attachment index keeps no network
/// with no container. That it holds exactly the containers' attachments to a network they
/// started on (the runtime's to keep: `SimRuntime::check`) lets a network's endpoints be found
/// without reading every container.
#[derive(Clone, Debug, Default)]
pub(crate) struct Networks {
    /// Networks created, by id.
    created: BTreeMap<String, SimNetwork>,
    /// `bridge`, `host` and `none`.
    builtin: Vec<SimNetwork>,
    /// Network ids handed out so far.
    ids: u64,
    seed: u64,
    /// Network id -> the ids of the containers with an attachment to it (running or not): a
    /// network's endpoints are the running ones, found without reading every container.
    attached: BTreeMap<String, BTreeSet<String>>,
}

impl Networks {
    /// The built-in networks only, their ids and those handed out later derived from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Networks { builtin: builtin_networks(seed), seed, ..Networks::default() }
    }

    /// The created networks and the built-in ones (whose ids derive from the seed and name).
    pub(crate) fn all(&self) -> impl Iterator<Item = &SimNetwork> {
        self.builtin.iter().chain(self.created.values())
    }

    /// Docker's `FindNetwork`: a full id, else a name (two of one name are ambiguous), else a
    /// unique id prefix.
    pub(crate) fn find(&self, id_or_name: &str) -> Result<&SimNetwork, Missing> {
        if let Some(network) = self.all().find(|n| n.id == id_or_name) {
            return Ok(network);
        }
        let named: Vec<&SimNetwork> = self.all().filter(|n| n.name == id_or_name).collect();
        match named.as_slice() {
            [one] => return Ok(one),
            [] => {}
            many => return Err(Missing::AmbiguousName(many.len())),
        }
        if id_or_name.is_empty() {
            return Err(Missing::None);
        }
        let prefixed: Vec<&SimNetwork> = self.all().filter(|n| n.id.starts_with(id_or_name)).collect();
        match prefixed.as_slice() {
            [one] => Ok(one),
            [] => Err(Missing::None),
            many => Err(Missing::AmbiguousPrefix(many.len())),
        }
    }

    /// Add a network, without Docker's duplicate check (the caller's). Returns its id.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, name: &str, labels: BTreeMap<String, String>) -> String {
        let id = self.next_id();
        self.insert_as(SimNetwork { id: id.clone(), name: name.to_string(), labels });
        id
    }

    /// The id the next network will have: Docker draws it as a create begins.
    pub(crate) fn next_id(&mut self) -> String {
        self.ids += 1;
        network_id(self.seed, &self.ids.to_le_bytes())
    }

    /// Add a network under the id [`Networks::next_id`] gave it.
    pub(crate) fn insert_as(&mut self, network: SimNetwork) {
        self.created.insert(network.id.clone(), network);
    }

    /// Remove created network `id` (a built-in one cannot be).
    pub(crate) fn remove(&mut self, id: &str) {
        self.created.remove(id);
    }

    /// Index that container `container` has an attachment to network `network_id`.
    pub(crate) fn attach(&mut self, container: &str, network_id: &str) {
        self.attached.entry(network_id.to_string()).or_default().insert(container.to_string());
    }

    /// Forget that container `container` has an attachment to network `network_id`.
    pub(crate) fn detach(&mut self, container: &str, network_id: &str) {
        if let Some(ids) = self.attached.get_mut(network_id) {
            ids.remove(container);
            if ids.is_empty() {
                self.attached.remove(network_id);
            }
        }
    }

    /// The containers indexed as attached to network `network_id`, in id order.
    pub(crate) fn attached(&self, network_id: &str) -> impl Iterator<Item = &String> {
        self.attached.get(network_id).into_iter().flatten()
    }

    /// Every (network id, container id) the index holds, in order.
    pub(crate) fn attachments(&self) -> impl Iterator<Item = (&str, &str)> {
        self.attached.iter().flat_map(|(network, ids)| ids.iter().map(move |id| (network.as_str(), id.as_str())))
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        if !self.builtin.iter().map(|n| n.name.as_str()).eq(BUILTIN_NETWORKS.iter().copied())
            || self.builtin.iter().any(|n| n.id != network_id(self.seed, n.name.as_bytes()))
        {
            return Err(format!("networks: the built-in ones are {:?}", self.builtin));
        }
        if let Some((id, network)) = self.created.iter().find(|(id, n)| **id != n.id) {
            return Err(format!("networks: network {} kept as {id}", network.id));
        }
        let mut ids = BTreeSet::new();
        if let Some(network) = self.all().find(|n| !ids.insert(n.id.as_str())) {
            return Err(format!("networks: two networks of id {}", network.id));
        }
        if let Some((network, _)) = self.attached.iter().find(|(_, ids)| ids.is_empty()) {
            return Err(format!("networks: network {network} indexed with no container"));
        }
        Ok(())
    }
}

/// Why a network lookup found no one network.
pub(crate) enum Missing {
    None,
    AmbiguousName(usize),
    AmbiguousPrefix(usize),
}

/// Which API asked: inspect and remove word an ambiguous name differently.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Lookup {
    Inspect,
    Remove,
}

impl Missing {
    pub(crate) fn error(self, wanted: &str, lookup: Lookup) -> RuntimeError {
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
fn builtin_networks(seed: u64) -> Vec<SimNetwork> {
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
mod tests {
    use super::*;

    #[test]
    fn lookups_by_id_name_and_prefix_as_dockers_find_network() {
        let mut networks = Networks::new(1);
        assert_eq!(networks.all().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["bridge", "host", "none"]);
        let first = networks.insert("n1", BTreeMap::new());
        let second = networks.insert("n1", BTreeMap::new());
        assert_ne!(first, second, "ids never repeat");
        assert_eq!(Networks::new(1).insert("n1", BTreeMap::new()), first, "the same seed, the same ids");
        networks.check().expect("two of one name are allowed");
        assert_eq!(networks.find(&first).map(|n| n.id.clone()).ok(), Some(first.clone()), "by full id");
        assert!(matches!(networks.find("n1"), Err(Missing::AmbiguousName(2))), "two of one name");
        assert_eq!(networks.find("bridge").map(|n| n.name.as_str()).ok(), Some("bridge"), "a built-in one by name");
        let prefix = &second[..12];
        assert_eq!(networks.find(prefix).map(|n| n.id.clone()).ok(), Some(second.clone()), "by unique id prefix");
        assert!(matches!(networks.find(""), Err(Missing::None)) && matches!(networks.find("zzz"), Err(Missing::None)));
        networks.remove(&first);
        assert_eq!(networks.find("n1").map(|n| n.id.clone()).ok(), Some(second), "one of that name left");
        networks.check().expect("after a removal");
    }

    #[test]
    fn the_attachment_index_keeps_no_empty_network() {
        let mut networks = Networks::new(1);
        networks.attach("c1", "net");
        networks.attach("c2", "net");
        networks.attach("c1", "other");
        assert_eq!(networks.attached("net").collect::<Vec<_>>(), ["c1", "c2"]);
        networks.detach("c1", "net");
        networks.detach("c1", "other");
        networks.detach("c9", "nowhere");
        assert_eq!(networks.attachments().collect::<Vec<_>>(), [("net", "c2")]);
        networks.check().expect("no empty network kept");
        networks.attached.insert("empty".into(), BTreeSet::new());
        assert!(networks.check().is_err());
    }

    #[test]
    fn check_finds_missing_built_in_networks() {
        let mut networks = Networks::new(1);
        networks.builtin.pop();
        assert!(networks.check().is_err());
        assert!(Networks::default().check().is_err(), "a runtime without its built-in networks");
    }
}
