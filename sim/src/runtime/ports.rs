//! Host ports, as Docker 20.10's bridge driver publishes them at start: a fixed host port, or
//! with none (or 0) the next free one of the ephemeral range, handed out in turn.
//!
//! A fixed port fails the start (500) while another running container publishes it ("port is
//! already allocated") or a process on the host listens on it (the userland proxy cannot bind:
//! "address already in use"). Ports are told apart by number and protocol; the host address
//! of a binding only appears in the message (Docker also keeps 0.0.0.0 and a specific address
//! apart; the model does not).

use super::SimRuntime;
use drydock_engine::api::container::Protocol;
use drydock_engine::runtime::PublishedPort;
use std::collections::BTreeSet;

/// Docker's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range` on Linux).
const EPHEMERAL: std::ops::RangeInclusive<u16> = 32_768..=60_999;

impl SimRuntime {
    /// A process on the host listens on `port` (as a test's own listener does): a container
    /// that publishes it fails to start until [`SimRuntime::release_host_port`].
    pub fn hold_host_port(&mut self, port: u16, protocol: Protocol) {
        self.host_ports.insert((port, protocol));
    }

    pub fn release_host_port(&mut self, port: u16, protocol: Protocol) {
        self.host_ports.remove(&(port, protocol));
    }

    /// The ports container `id` publishes if it starts now, or Docker's error.
    pub(super) fn publish_ports(&mut self, id: &str) -> Result<Vec<PublishedPort>, String> {
        let Some(container) = self.containers.get(id) else { return Ok(Vec::new()) };
        let requested = container.requested_ports.clone();
        let name = container.info.name.clone();
        let mut taken: BTreeSet<(u16, Protocol)> = self
            .containers
            .values()
            .filter(|c| c.info.id != id)
            .flat_map(|c| c.info.ports.iter().map(|p| (p.host_port, p.protocol)))
            .collect();
        let mut published = Vec::new();
        for port in &requested {
            let host_port = match port.host_port {
                Some(fixed) if fixed != 0 => fixed,
                _ => self.next_ephemeral_port(port.protocol, &taken),
            };
            let address = format!("{}:{host_port}", port.host_ip.as_deref().unwrap_or("0.0.0.0"));
            let failed = if taken.contains(&(host_port, port.protocol)) {
                Some(format!("Bind for {address} failed: port is already allocated"))
            } else if self.host_ports.contains(&(host_port, port.protocol)) {
                let network = match port.protocol {
                    Protocol::Tcp => "tcp4",
                    Protocol::Udp => "udp4",
                };
                Some(format!("Error starting userland proxy: listen {network} {address}: bind: address already in use"))
            } else {
                None
            };
            if let Some(reason) = failed {
                let endpoint = super::sha256_of(&[b"endpoint", id.as_bytes(), &self.events.len().to_le_bytes()]);
                let endpoint = endpoint.trim_start_matches("sha256:");
                return Err(format!(
                    "driver failed programming external connectivity on endpoint {name} ({endpoint}): {reason}"
                ));
            }
            taken.insert((host_port, port.protocol));
            published.push(PublishedPort { container_port: port.container_port, protocol: port.protocol, host_port });
        }
        published.sort();
        Ok(published)
    }

    /// The next ephemeral port after the last one handed out that no container publishes.
    fn next_ephemeral_port(&mut self, protocol: Protocol, taken: &BTreeSet<(u16, Protocol)>) -> u16 {
        for _ in EPHEMERAL {
            self.next_host_port = match self.next_host_port {
                port if port < *EPHEMERAL.start() || port >= *EPHEMERAL.end() => *EPHEMERAL.start() + 1,
                port => port + 1,
            };
            if !taken.contains(&(self.next_host_port, protocol)) {
                break;
            }
        }
        self.next_host_port
    }
}
