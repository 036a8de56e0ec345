//! Publishing ports at start, as Docker 20.10's bridge driver does it (the host ports themselves
//! are in `ports`): a fixed host port, or with none (or 0) the next free one of the ephemeral
//! range, handed out in turn.
//!
//! A fixed port fails the start (500) while another running container publishes it ("port is
//! already allocated") or a process on the host listens on it (the userland proxy cannot bind:
//! "address already in use"). Ports are told apart by number and protocol; the host address
//! of a binding only appears in the message (Docker also keeps 0.0.0.0 and a specific address
//! apart; the model does not).

use super::SimRuntime;
use super::ports::{HostPort, Ports};
use drydock_engine::api::container::Protocol;
use drydock_engine::runtime::PublishedPort;
use std::collections::BTreeSet;

/// Ports as the count of publications knows them: by number and protocol.
fn port_keys(ports: &[PublishedPort]) -> Vec<HostPort> {
    ports.iter().map(|p| (p.host_port, p.protocol)).collect()
}

impl SimRuntime {
    /// A process on the host listens on `port` (as a test's own listener does): a container
    /// that publishes it fails to start until [`SimRuntime::release_host_port`].
    pub fn hold_host_port(&mut self, port: u16, protocol: Protocol) {
        self.ports.hold((port, protocol));
    }

    pub fn release_host_port(&mut self, port: u16, protocol: Protocol) {
        self.ports.release((port, protocol));
    }

    /// Container `id` publishes `ports` from now on (none: it stopped). Keeps the index of
    /// published ports in step, so a start looks its ports up instead of reading every container.
    pub(super) fn set_published(&mut self, id: &str, ports: Vec<PublishedPort>) {
        let Some(container) = self.containers.get_mut(id) else { return };
        let old = container.replace_ports(ports);
        let new = port_keys(&container.info().ports);
        for port in port_keys(&old) {
            self.ports.unpublish(port);
        }
        for port in new {
            self.ports.publish(port);
        }
    }

    /// Container `id` (about to be removed or replaced) publishes nothing any more, as far as
    /// the index of published ports goes.
    pub(super) fn unindex_ports(&mut self, id: &str) {
        for port in self.recorded_ports(id) {
            self.ports.unpublish(port);
        }
    }

    /// Container `id`'s ports, as recorded, go into the index of published ports.
    pub(super) fn index_ports(&mut self, id: &str) {
        for port in self.recorded_ports(id) {
            self.ports.publish(port);
        }
    }

    fn recorded_ports(&self, id: &str) -> Vec<HostPort> {
        self.containers.get(id).map(|c| port_keys(&c.info().ports)).unwrap_or_default()
    }

    /// The ports container `id` publishes if it starts now, or Docker's error.
    pub(super) fn publish_ports(&mut self, id: &str) -> Result<Vec<PublishedPort>, String> {
        let Some(container) = self.containers.get(id) else { return Ok(Vec::new()) };
        let requested = container.requested_ports.clone();
        let name = container.info().name.clone();
        let own = port_keys(&container.info().ports);
        // Published by another container (the index counts this one's own too), or by one of
        // this container's earlier ports of this start.
        let mut claimed: BTreeSet<HostPort> = BTreeSet::new();
        let published_by_others = |ports: &Ports, port: HostPort| {
            let all = ports.published(port);
            let mine = own.iter().filter(|p| **p == port).count() as u32;
            all > mine
        };
        let mut published = Vec::new();
        for port in &requested {
            let host_port = match port.host_port {
                Some(fixed) if fixed != 0 => fixed,
                _ => self.ports.next_ephemeral(port.protocol, |ports, candidate| {
                    claimed.contains(&candidate) || published_by_others(ports, candidate)
                }),
            };
            let address = format!("{}:{host_port}", port.host_ip.as_deref().unwrap_or("0.0.0.0"));
            let key = (host_port, port.protocol);
            let failed = if claimed.contains(&key) || published_by_others(&self.ports, key) {
                Some(format!("Bind for {address} failed: port is already allocated"))
            } else if self.ports.is_held((host_port, port.protocol)) {
                let network = match port.protocol {
                    Protocol::Tcp => "tcp4",
                    Protocol::Udp => "udp4",
                };
                Some(format!("Error starting userland proxy: listen {network} {address}: bind: address already in use"))
            } else {
                None
            };
            if let Some(reason) = failed {
                let endpoint = super::sha256_of(&[b"endpoint", id.as_bytes(), &self.events.recorded().to_le_bytes()]);
                let endpoint = endpoint.trim_start_matches("sha256:");
                return Err(format!(
                    "driver failed programming external connectivity on endpoint {name} ({endpoint}): {reason}"
                ));
            }
            claimed.insert(key);
            published.push(PublishedPort { container_port: port.container_port, protocol: port.protocol, host_port });
        }
        published.sort();
        Ok(published)
    }
}
