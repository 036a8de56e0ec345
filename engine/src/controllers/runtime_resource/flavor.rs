//! What differs between networks and volumes: their kind, their runtime requests, and how a
//! reply names the object (an id for a network, the name for a volume); and the list of the
//! flavors every engine runs a controller for ([`controllers`]). A new runtime resource kind is
//! a [`Flavor`] here and its line in that list.

use crate::api::{
    ContainerNetwork, ContainerNetworkSpec, ContainerPhase, ContainerVolume, ContainerVolumeSpec, Object,
    PhysicalContainer, Resource, RuntimeResourceStatus,
};
use crate::cache::Cache;
use crate::controller::Controller;
use crate::runtime::{NetworkCreate, RuntimeReply, RuntimeRequest, VolumeCreate};
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

/// The runtime resource controllers every engine runs, one per flavor, in this order.
pub fn controllers(monitor_interval: Duration) -> Vec<Box<dyn Controller>> {
    vec![
        Box::new(super::RuntimeResourceController::<Network>::new(monitor_interval)),
        Box::new(super::RuntimeResourceController::<Volume>::new(monitor_interval)),
    ]
}

/// One runtime object, as a reply describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    pub labels: BTreeMap<String, String>,
    /// Running containers attached (networks only).
    pub attached: Vec<String>,
}

/// The spec fields every runtime resource has, read off the kind's own spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The runtime name to create.
    pub name: String,
    /// The id (or name) to track instead.
    pub tracked: Option<String>,
    pub replace_existing: bool,
    pub retain: bool,
    pub labels: BTreeMap<String, String>,
}

/// How containers use the objects of a flavor, which decides how a removal waits for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Users {
    /// Containers attach to it (a physical container's `spec.networks[].name`): a removal
    /// disconnects drydock's own one by one and waits for the others.
    Attached,
    /// Containers mount it (a `spec.mounts[].source` that is a name, not a host path): a removal
    /// waits for drydock's users, and, once its namespace is deleting, for strangers' only for a
    /// grace period before the object is abandoned in the runtime.
    Mounted,
}

/// A kind of runtime resource and its requests.
pub trait Flavor: Debug + Send + 'static {
    type Kind: Resource<Status = RuntimeResourceStatus>;
    /// The controller's name.
    const CONTROLLER: &'static str;
    /// In words: "network", "volume".
    const WHAT: &'static str;
    /// How containers use its objects.
    const USERS: Users;

    fn shape(object: &Object) -> Result<Shape, String>;
    fn create(name: String, labels: BTreeMap<String, String>) -> RuntimeRequest;
    fn inspect(id: String) -> RuntimeRequest;
    fn list(labels: BTreeMap<String, String>) -> RuntimeRequest;
    fn remove(id: String) -> RuntimeRequest;
    /// The one object a reply (to a create or an inspect) describes.
    fn found(reply: &RuntimeReply) -> Option<Found>;
    /// The objects a reply to a list describes.
    fn listed(reply: &RuntimeReply) -> Vec<Found>;
    /// Whether a create's reply may describe an object that is not ours (Docker's volume create
    /// answers an existing volume of the name).
    const CREATE_MAY_ANSWER_A_STRANGER: bool;
}

#[derive(Debug)]
pub struct Network;

impl Flavor for Network {
    type Kind = ContainerNetwork;
    const CONTROLLER: &'static str = "container-network";
    const WHAT: &'static str = "network";
    const USERS: Users = Users::Attached;
    const CREATE_MAY_ANSWER_A_STRANGER: bool = false;

    fn shape(object: &Object) -> Result<Shape, String> {
        let spec: ContainerNetworkSpec = object.spec::<ContainerNetwork>().map_err(|e| e.to_string())?;
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        Ok(Shape {
            name: spec.runtime_name(namespace, &object.metadata.name),
            tracked: spec.network_id,
            replace_existing: spec.replace_existing,
            retain: spec.retain,
            labels: spec.labels,
        })
    }

    fn create(name: String, labels: BTreeMap<String, String>) -> RuntimeRequest {
        RuntimeRequest::CreateNetwork(NetworkCreate { name, labels })
    }

    fn inspect(id: String) -> RuntimeRequest {
        RuntimeRequest::InspectNetwork { id }
    }

    fn list(labels: BTreeMap<String, String>) -> RuntimeRequest {
        RuntimeRequest::ListNetworks { labels }
    }

    fn remove(id: String) -> RuntimeRequest {
        RuntimeRequest::RemoveNetwork { id }
    }

    fn found(reply: &RuntimeReply) -> Option<Found> {
        match reply {
            RuntimeReply::Created { id } => {
                Some(Found { id: id.clone(), labels: BTreeMap::new(), attached: Vec::new() })
            }
            RuntimeReply::Network(info) => {
                Some(Found { id: info.id.clone(), labels: info.labels.clone(), attached: info.containers.clone() })
            }
            _ => None,
        }
    }

    fn listed(reply: &RuntimeReply) -> Vec<Found> {
        match reply {
            RuntimeReply::Networks(infos) => infos
                .iter()
                .map(|i| Found { id: i.id.clone(), labels: i.labels.clone(), attached: i.containers.clone() })
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Debug)]
pub struct Volume;

impl Flavor for Volume {
    type Kind = ContainerVolume;
    const CONTROLLER: &'static str = "container-volume";
    const WHAT: &'static str = "volume";
    const USERS: Users = Users::Mounted;
    const CREATE_MAY_ANSWER_A_STRANGER: bool = true;

    fn shape(object: &Object) -> Result<Shape, String> {
        let spec: ContainerVolumeSpec = object.spec::<ContainerVolume>().map_err(|e| e.to_string())?;
        let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
        Ok(Shape {
            name: spec.runtime_name(namespace, &object.metadata.name),
            tracked: spec.volume_id,
            replace_existing: spec.replace_existing,
            retain: spec.retain,
            labels: spec.labels,
        })
    }

    fn create(name: String, labels: BTreeMap<String, String>) -> RuntimeRequest {
        RuntimeRequest::CreateVolume(VolumeCreate { name, labels })
    }

    fn inspect(name: String) -> RuntimeRequest {
        RuntimeRequest::InspectVolume { name }
    }

    fn list(labels: BTreeMap<String, String>) -> RuntimeRequest {
        RuntimeRequest::ListVolumes { labels }
    }

    fn remove(name: String) -> RuntimeRequest {
        RuntimeRequest::RemoveVolume { name }
    }

    fn found(reply: &RuntimeReply) -> Option<Found> {
        match reply {
            RuntimeReply::Volume(info) => {
                Some(Found { id: info.name.clone(), labels: info.labels.clone(), attached: Vec::new() })
            }
            _ => None,
        }
    }

    fn listed(reply: &RuntimeReply) -> Vec<Found> {
        match reply {
            RuntimeReply::Volumes(infos) => infos
                .iter()
                .map(|i| Found { id: i.name.clone(), labels: i.labels.clone(), attached: Vec::new() })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The physical containers of volume object `volume`'s namespace that mount it and have a
/// runtime container, or may have one and are being deleted: drydock's users of it, which its
/// removal waits for without asking the runtime (their deletion wakes it).
///
/// One being deleted counts even with no runtime id known: a create whose answer was lost made
/// a container all the same, and the runtime refuses to remove the volume until that
/// container's own cleanup has found and removed it. Its cleanup ends, so the wait does.
pub(crate) fn mounted_by_drydock(cache: &Cache, volume: &Object) -> Vec<String> {
    cache
        .list(PhysicalContainer::KIND, volume.metadata.namespace.as_deref())
        .filter(|pc| {
            let mounts =
                pc.spec::<PhysicalContainer>().is_ok_and(|s| s.mounts.iter().any(|m| m.source == volume.metadata.name));
            let status = pc.status::<PhysicalContainer>().unwrap_or_default();
            let has_container = status.runtime_id.is_some() && status.phase != ContainerPhase::Missing;
            mounts && (has_container || pc.metadata.is_deleting())
        })
        .map(|pc| pc.metadata.name.to_string())
        .collect()
}

/// The runtime ids of the containers drydock attached to network object `network`: those of the
/// physical containers in its namespace whose `spec.networks` name it.
pub(crate) fn attached_by_drydock(cache: &Cache, network: &Object) -> Vec<String> {
    let namespace = network.metadata.namespace.as_deref();
    cache
        .list(PhysicalContainer::KIND, namespace)
        .filter_map(|pc| {
            let spec = pc.spec::<PhysicalContainer>().ok()?;
            let attached = spec.networks.iter().any(|n| n.name == network.metadata.name);
            let id = pc.status::<PhysicalContainer>().ok()?.runtime_id?;
            attached.then_some(id)
        })
        .collect()
}
