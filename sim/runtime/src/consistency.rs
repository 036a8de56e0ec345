//! The runtime's consistency: each part keeps its own guarantees (its `check`), and where a
//! part indexes or refers to what another holds (the exits due by the container records, the
//! ports they publish, the networks they are attached to, the volumes they mount), the runtime
//! keeps them in step and checks it here (also: anonymous volumes live as long as their container). Docker keeps
//! the same facts in one place per daemon; the model keeps indexes beside the records so that
//! no request reads every container.

use super::SimRuntime;
use super::ports::HostPort;
use drydock_engine::WallTime;
use drydock_engine::runtime::PublishedPort;
use std::collections::{BTreeMap, BTreeSet};

impl SimRuntime {
    /// Whether the runtime is consistent: every part's guarantees hold, and the parts agree
    /// with one another (the exits due, the ports counted as published and the attachments
    /// indexed are those the container records say; the volumes containers mount exist). Reads everything: for tests, not for every step of a run.
    pub fn check(&self) -> Result<(), String> {
        self.check_parts()?;
        self.check_due_exits()?;
        self.check_mounted_volumes()?;
        self.check_anonymous_volumes()?;
        self.check_published_ports()?;
        self.check_attachments()
    }

    /// The anonymous volumes are those of containers that exist and mount them: none outlives
    /// its container (the removal is Docker's `rm -v`).
    fn check_anonymous_volumes(&self) -> Result<(), String> {
        for (id, names) in self.volumes.anonymous() {
            let Some(container) = self.containers.get(id) else {
                return Err(format!("anonymous volumes {names:?} outlive their container {id}"));
            };
            if let Some(name) = names.iter().find(|n| !container.mounts.iter().any(|m| &m.source == *n)) {
                return Err(format!("container {id} does not mount its anonymous volume {name}"));
            }
        }
        Ok(())
    }

    /// The attachment index holds exactly each container's attachments to a network it started
    /// on (an attachment by name that never started has no network id yet).
    fn check_attachments(&self) -> Result<(), String> {
        let recorded: BTreeSet<(&str, &str)> = self
            .containers
            .values()
            .flat_map(|c| c.networks.values().filter_map(|a| a.network_id.as_deref()).map(|n| (n, c.id())))
            .collect();
        let indexed: BTreeSet<(&str, &str)> = self.networks.attachments().collect();
        if indexed != recorded {
            return Err(format!("attachments indexed {indexed:?}, while the containers have {recorded:?}"));
        }
        Ok(())
    }

    /// The ports counted as published are those the containers publish, on the same addresses,
    /// as many times; and each container's bindings are the ports `inspect` shows.
    fn check_published_ports(&self) -> Result<(), String> {
        let mut published: BTreeMap<(HostPort, &str), u32> = BTreeMap::new();
        for container in self.containers.values() {
            let bound: Vec<&PublishedPort> = container.bindings().iter().map(|b| &b.port).collect();
            if !bound.iter().copied().eq(container.info().ports.iter()) {
                return Err(format!(
                    "container {} is bound on {bound:?}, yet shows {:?}",
                    container.id(),
                    container.info().ports
                ));
            }
            for binding in container.bindings() {
                *published.entry((binding.host_port(), binding.address.as_str())).or_default() += 1;
            }
        }
        let counted: BTreeMap<(HostPort, &str), u32> = self.ports.publications().collect();
        if counted != published {
            return Err(format!("ports counted as published {counted:?}, while the containers publish {published:?}"));
        }
        Ok(())
    }

    /// Every named volume a container mounts exists: its create made it, and a volume in use
    /// cannot be removed.
    fn check_mounted_volumes(&self) -> Result<(), String> {
        for container in self.containers.values() {
            let mut named = container.mounts.iter().filter(|m| !m.source.starts_with('/'));
            if let Some(mount) = named.find(|m| !self.volumes.contains(&m.source)) {
                return Err(format!("container {} mounts volume {}, which is gone", container.id(), mount.source));
            }
        }
        Ok(())
    }

    /// The clock's exits due are exactly the containers' `exit_due`.
    fn check_due_exits(&self) -> Result<(), String> {
        let recorded: BTreeSet<(WallTime, &str)> =
            self.containers.values().filter_map(|c| c.exit_due.map(|(at, _)| (at, c.id()))).collect();
        let due: BTreeSet<(WallTime, &str)> = self.clock.due().collect();
        if recorded != due {
            return Err(format!("exits due {due:?}, while the containers say {recorded:?}"));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "consistency_tests.rs"]
mod tests;
