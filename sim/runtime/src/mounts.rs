//! Mounts and named volumes, as Docker 20.10 registers a create's binds (`registerMountPoints`),
//! bind by bind, in the order given:
//! - the spec `source:target[:ro]` is parsed: an empty part is an "invalid volume
//!   specification", and so is a target that is not absolute or is `/` (Docker answers these
//!   with 500, although they can never succeed);
//! - a second mount on one target (paths compared cleaned) is "Duplicate mount point" (400);
//! - an absolute source is a bind mount; any other source names a local volume, created as its
//!   mount is reached (a name must be `[a-zA-Z0-9][a-zA-Z0-9_.-]+`, else 400), without labels.
//!   A volume made before a later mount fails stays, as in Docker; removing a container leaves
//!   its named volumes. The volume API is in `volumes`.
//!
//! Then each `VOLUME` of the image that no mount's target covers gets an anonymous volume: a new
//! volume under a generated name, without labels, mounted there. Removing the container removes
//! its anonymous volumes (the runtime contract's removal is Docker's `rm -v`), unless another
//! container mounts one by name, as Docker leaves a volume in use.

use super::SimRuntime;
use super::shell::clean_path;
use super::volumes::check_volume_name;
use drydock_engine::api::container::Mount;
use drydock_engine::runtime::{RuntimeError, RuntimeObject};
use std::collections::{BTreeMap, BTreeSet};

impl SimRuntime {
    /// Check a create's mounts and create its named volumes (see the module doc).
    pub(super) fn mount_points(&mut self, mounts: &[Mount]) -> Result<(), RuntimeError> {
        let mut targets = BTreeSet::new();
        for mount in mounts {
            let spec = format!("{}:{}{}", mount.source, mount.target, if mount.read_only { ":ro" } else { "" });
            if mount.source.is_empty() || mount.target.is_empty() {
                return Err(RuntimeError::Invalid(format!("invalid volume specification: '{spec}'")));
            }
            let kind = if mount.source.starts_with('/') { "bind" } else { "volume" };
            let invalid = |why: String| {
                RuntimeError::Invalid(format!(
                    "invalid volume specification: '{spec}': invalid mount config for type \"{kind}\": {why}"
                ))
            };
            if !mount.target.starts_with('/') {
                return Err(invalid(format!("invalid mount path: '{}' mount path must be absolute", mount.target)));
            }
            let target = clean_path(&mount.target);
            if target == "/" {
                return Err(invalid("invalid specification: destination can't be '/'".into()));
            }
            if !targets.insert(target.clone()) {
                return Err(RuntimeError::Invalid(format!("Duplicate mount point: {target}")));
            }
            if kind == "volume" {
                check_volume_name(&mount.source)?;
                // Docker logs a volume's `create` at each mount that names it, made or not.
                self.other_events("volume create", 1);
                if !self.volumes.contains(&mount.source) {
                    self.journal.resource(RuntimeObject::Volume, &mount.source);
                    self.volumes.create(&mount.source, BTreeMap::new());
                }
            }
        }
        Ok(())
    }

    /// The mounts of container `id`, being created with `mounts` from an image declaring
    /// `image_volumes`: those, then an anonymous volume at each declared path none covers.
    pub(super) fn anonymous_volumes(
        &mut self,
        id: &str,
        mounts: &[Mount],
        image_volumes: &BTreeSet<String>,
    ) -> Vec<Mount> {
        let covered: BTreeSet<String> = mounts.iter().map(|m| clean_path(&m.target)).collect();
        let mut all = mounts.to_vec();
        for path in image_volumes.iter().filter(|p| !covered.contains(*p)) {
            let name = self.volumes.create_anonymous(id);
            self.journal.resource(RuntimeObject::Volume, &name);
            self.other_events("volume create", 1);
            all.push(Mount { source: name, target: path.clone(), read_only: false });
        }
        all
    }

    /// Container `id` is removed: so are its anonymous volumes no other container mounts.
    pub(super) fn remove_anonymous_volumes(&mut self, id: &str) {
        for name in self.volumes.take_anonymous(id) {
            let in_use = self.containers.values().any(|c| c.id() != id && c.mounts.iter().any(|m| m.source == name));
            if !in_use {
                self.volumes.remove(&name);
                self.journal.resource(RuntimeObject::Volume, &name);
                self.other_events("volume destroy", 1);
            }
        }
    }
}
