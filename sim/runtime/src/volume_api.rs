//! The volume API, as Docker 20.10's local driver answers it (checked against the daemon by the
//! conformance suite):
//!
//! - A create is idempotent: a name already taken answers the existing volume, its labels
//!   unchanged (the create's are ignored). A name outside `[a-zA-Z0-9][a-zA-Z0-9_.-]+` is 400
//!   (`Invalid`: "create bad name: ... includes invalid characters for a local volume name");
//!   an empty one gets a generated name (64 hex digits, from the seed and a counter here).
//! - Inspect and remove of a missing volume are 404 "get nope: no such volume".
//! - A volume cannot be removed while any container, in any state, mounts it (409 "remove v1:
//!   volume is in use - [ids]"); drydock never forces a removal.
//! - A volume a container's mount created (see `mounts`) has no labels.

use super::SimRuntime;
use super::volumes::check_volume_name;
use drydock_engine::runtime::{RuntimeError, RuntimeObject, RuntimeReply, RuntimeResult, VolumeCreate, VolumeInfo};
use std::collections::BTreeMap;

impl SimRuntime {
    /// The named volumes, in name order.
    pub fn volumes(&self) -> impl Iterator<Item = &str> {
        self.volumes.iter().map(|(name, _)| name.as_str())
    }

    /// The named volumes with their labels, in name order (for checkers).
    pub fn volume_infos(&self) -> impl Iterator<Item = VolumeInfo> + '_ {
        self.volumes.iter().map(|(name, v)| VolumeInfo { name: name.clone(), labels: v.labels.clone() })
    }

    /// Every volume's name and labels, in name order.
    pub fn volume_labels(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
        self.volumes.iter().map(|(name, v)| (name.as_str(), &v.labels))
    }

    /// The labels of volume `name`, if there is one.
    pub fn volume_labels_of(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.volumes.get(name).map(|v| &v.labels)
    }

    /// The sources of container `id`'s mounts: host paths and volume names (for checkers).
    pub fn mounts_of(&self, id: &str) -> impl Iterator<Item = &str> {
        self.containers.get(id).into_iter().flat_map(|c| c.mounts.iter().map(|m| m.source.as_str()))
    }

    /// `docker volume rm NAME`: `Conflict` while a container (in any state) mounts it,
    /// `NotFound` if there is no such volume.
    pub fn remove_volume(&mut self, name: &str) -> Result<(), RuntimeError> {
        if !self.volumes.contains(name) {
            return Err(no_such_volume(name));
        }
        let users: Vec<&str> =
            self.containers.values().filter(|c| c.mounts.iter().any(|m| m.source == name)).map(|c| c.id()).collect();
        if !users.is_empty() {
            return Err(RuntimeError::Conflict(format!("remove {name}: volume is in use - [{}]", users.join(", "))));
        }
        self.volumes.remove(name);
        self.journal.resource(RuntimeObject::Volume, name);
        self.other_events("volume destroy", 1);
        Ok(())
    }

    pub(super) fn create_volume(&mut self, create: &VolumeCreate) -> RuntimeResult {
        let name = match create.name.as_str() {
            "" => self.volumes.generate_name(),
            name => {
                check_volume_name(name)?;
                name.to_string()
            }
        };
        self.journal.resource(RuntimeObject::Volume, &name);
        // Docker logs a create also for a name taken (seen on 20.10.24).
        self.other_events("volume create", 1);
        let volume = self.volumes.create(&name, create.labels.clone());
        Ok(RuntimeReply::Volume(VolumeInfo { name, labels: volume.labels.clone() }))
    }

    pub(super) fn inspect_volume(&self, name: &str) -> RuntimeResult {
        let volume = self.volumes.get(name).ok_or_else(|| no_such_volume(name))?;
        Ok(RuntimeReply::Volume(VolumeInfo { name: name.to_string(), labels: volume.labels.clone() }))
    }

    /// Volumes carrying every one of `labels`, by name.
    pub(super) fn list_volumes(&self, labels: &BTreeMap<String, String>) -> RuntimeReply {
        RuntimeReply::Volumes(
            self.volumes
                .iter()
                .filter(|(_, v)| labels.iter().all(|(k, value)| v.labels.get(k) == Some(value)))
                .map(|(name, v)| VolumeInfo { name: name.clone(), labels: v.labels.clone() })
                .collect(),
        )
    }
}

fn no_such_volume(name: &str) -> RuntimeError {
    RuntimeError::NotFound(format!("get {name}: no such volume"))
}

#[cfg(test)]
#[path = "volume_api_tests.rs"]
mod tests;
