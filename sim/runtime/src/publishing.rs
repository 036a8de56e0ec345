//! Publishing ports at start, as Docker 20.10's bridge driver does it (the host ports themselves
//! are in `ports`): a fixed host port, or with none (or 0) the next free one of the ephemeral
//! range, handed out in turn, each on its host address (none given: the IPv4 wildcard).
//!
//! A fixed port fails the start (500) while another running container publishes it on the same
//! address (Docker's allocator keeps one map per address: "Bind for 127.0.0.1:P failed: port is
//! already allocated"), or on an address that collides with it, the wildcard and a specific one
//! either way round (the userland proxy cannot bind: "Error starting userland proxy: listen tcp4
//! 0.0.0.0:P: bind: address already in use"), or while a process on the host listens on it (on
//! every address: "address already in use" too). Two specific addresses, 127.0.0.1:P and
//! 127.0.0.2:P, both bind (all seen on Docker 20.10.24). An ephemeral port is one no other
//! container publishes on a colliding address (Docker's driver tries another port when a bind
//! fails).
//!
//! A container on the `host` or `none` network publishes nothing: Docker discards its ports (its
//! create warns "Published ports are discarded when using host network mode"; `none` has no
//! endpoint to map them to), so its start binds nothing, a port held on the host is no obstacle,
//! and `inspect` shows no ports. Nor does one on no network at all (disconnected from
//! `bridge` before its start: `drydock runtime diff` saw Docker publish nothing).

use super::SimRuntime;
use super::ports::{Binding, HostPort, Ports, addresses_collide, host_address};
use drydock_engine::api::container::Protocol;
use drydock_engine::runtime::PublishedPort;

impl SimRuntime {
    /// A process on the host listens on `port` (as a test's own listener does, on every
    /// address): a container that publishes it fails to start until
    /// [`SimRuntime::release_host_port`].
    pub fn hold_host_port(&mut self, port: u16, protocol: Protocol) {
        self.ports.hold((port, protocol));
    }

    pub fn release_host_port(&mut self, port: u16, protocol: Protocol) {
        self.ports.release((port, protocol));
    }

    /// Container `id` publishes `bindings` from now on (none: it stopped). Keeps the index of
    /// published ports in step, so a start looks its ports up instead of reading every container.
    pub(super) fn set_published(&mut self, id: &str, bindings: Vec<Binding>) {
        let Some(container) = self.containers.get_mut(id) else { return };
        let old = container.replace_ports(bindings);
        let new = container.bindings().to_vec();
        for binding in &old {
            self.ports.unpublish(binding);
        }
        for binding in &new {
            self.ports.publish(binding);
        }
    }

    /// Container `id` (about to be removed or replaced) publishes nothing any more, as far as
    /// the index of published ports goes.
    pub(super) fn unindex_ports(&mut self, id: &str) {
        for binding in self.recorded_bindings(id) {
            self.ports.unpublish(&binding);
        }
    }

    /// Container `id`'s ports, as recorded, go into the index of published ports.
    pub(super) fn index_ports(&mut self, id: &str) {
        for binding in self.recorded_bindings(id) {
            self.ports.publish(&binding);
        }
    }

    fn recorded_bindings(&self, id: &str) -> Vec<Binding> {
        self.containers.get(id).map(|c| c.bindings().to_vec()).unwrap_or_default()
    }

    /// The ports container `id` publishes if it starts now, or Docker's error.
    pub(super) fn publish_ports(&mut self, id: &str) -> Result<Vec<Binding>, String> {
        let Some(container) = self.containers.get(id) else { return Ok(Vec::new()) };
        if container.networks.is_empty()
            || container.networks.keys().any(|network| network == "host" || network == "none")
        {
            return Ok(Vec::new());
        }
        let requested = container.requested_ports.clone();
        let name = container.info().name.clone();
        let own = container.bindings().to_vec();
        // Whether `port` is bound on `address` by another container (the index counts this
        // one's own bindings too) or by one of this start's earlier ports: `Some(true)` on that
        // very address, `Some(false)` on another that collides with it, `None` if on neither.
        let bound_elsewhere = |ports: &Ports, claimed: &[Binding], port: HostPort, address: &str| {
            let others = ports.published_on(port).filter_map(|(bound, count)| {
                let mine = own.iter().filter(|b| b.host_port() == port && b.address == bound).count();
                (count as usize > mine).then_some(bound)
            });
            let earlier = claimed.iter().filter(|b| b.host_port() == port).map(|b| b.address.as_str());
            let mut found = None;
            for bound in others.chain(earlier) {
                if bound == address {
                    return Some(true);
                }
                if addresses_collide(bound, address) {
                    found = Some(false);
                }
            }
            found
        };
        let mut claimed: Vec<Binding> = Vec::new();
        for port in &requested {
            let address = host_address(port.host_ip.as_deref());
            let host_port = match port.host_port {
                Some(fixed) if fixed != 0 => fixed,
                _ => self.ports.next_ephemeral(port.protocol, |ports, candidate| {
                    bound_elsewhere(ports, &claimed, candidate, &address).is_some()
                }),
            };
            let key = (host_port, port.protocol);
            let network = match port.protocol {
                Protocol::Tcp => "tcp4",
                Protocol::Udp => "udp4",
            };
            let in_use = || {
                format!(
                    "Error starting userland proxy: listen {network} {address}:{host_port}: bind: address already in use"
                )
            };
            let failed = match bound_elsewhere(&self.ports, &claimed, key, &address) {
                Some(true) => Some(format!("Bind for {address}:{host_port} failed: port is already allocated")),
                Some(false) => Some(in_use()),
                None if self.ports.is_held(key) => Some(in_use()),
                None => None,
            };
            if let Some(reason) = failed {
                let endpoint = super::sha256_of(&[b"endpoint", id.as_bytes(), &self.events.recorded().to_le_bytes()]);
                let endpoint = endpoint.trim_start_matches("sha256:");
                return Err(format!(
                    "driver failed programming external connectivity on endpoint {name} ({endpoint}): {reason}"
                ));
            }
            let published = PublishedPort { container_port: port.container_port, protocol: port.protocol, host_port };
            claimed.push(Binding { port: published, address });
        }
        claimed.sort();
        Ok(claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{create, id_of};
    use super::*;
    use drydock_engine::api::container::{NetworkAttachment, PortMapping};
    use drydock_engine::runtime::{ContainerCreate, RuntimeError, RuntimeRequest, RuntimeResult};

    /// A create of `name` publishing TCP port 80 on `address`:`port`, on `networks`.
    fn publishing(name: &str, address: Option<&str>, port: Option<u16>, networks: &[&str]) -> RuntimeRequest {
        let RuntimeRequest::CreateContainer(c) = create(name, "busybox") else { unreachable!() };
        let ports = vec![PortMapping {
            protocol: Protocol::Tcp,
            host_port: port,
            container_port: 80,
            host_ip: address.map(str::to_string),
        }];
        let networks = networks.iter().map(|n| NetworkAttachment { name: n.to_string(), aliases: vec![] }).collect();
        RuntimeRequest::CreateContainer(ContainerCreate { ports, networks, ..c })
    }

    fn start(rt: &mut SimRuntime, id: &str) -> RuntimeResult {
        rt.execute(&RuntimeRequest::StartContainer { id: id.into() })
    }

    fn refusal(result: RuntimeResult) -> String {
        match result {
            Err(RuntimeError::Transient(message)) => message,
            other => panic!("expected Transient, got {other:?}"),
        }
    }

    fn runtime() -> SimRuntime {
        let mut rt = SimRuntime::new(1);
        rt.add_image("busybox");
        rt
    }

    /// Docker 20.10.24: the allocator keeps one map per address, the kernel refuses the wildcard
    /// beside a specific address (either way round), two specific addresses both bind.
    #[test]
    fn conflicts_depend_on_the_host_address() {
        let mut rt = runtime();
        let one = id_of(rt.execute(&publishing("one", Some("127.0.0.1"), Some(8080), &[])));
        let two = id_of(rt.execute(&publishing("two", Some("127.0.0.2"), Some(8080), &[])));
        let any = id_of(rt.execute(&publishing("any", None, Some(8080), &[])));
        let again = id_of(rt.execute(&publishing("again", Some("127.0.0.1"), Some(8080), &[])));
        start(&mut rt, &one).expect("127.0.0.1");
        start(&mut rt, &two).expect("127.0.0.2: another address");
        let message = refusal(start(&mut rt, &any));
        assert!(message.ends_with("listen tcp4 0.0.0.0:8080: bind: address already in use"), "{message}");
        let message = refusal(start(&mut rt, &again));
        assert!(message.ends_with("Bind for 127.0.0.1:8080 failed: port is already allocated"), "{message}");
        for id in [&one, &two] {
            rt.execute(&RuntimeRequest::StopContainer { id: id.clone(), timeout_secs: 0 }).expect("stop");
        }
        start(&mut rt, &any).expect("the wildcard, once the port is free");
        let message = refusal(start(&mut rt, &again));
        assert!(message.ends_with("listen tcp4 127.0.0.1:8080: bind: address already in use"), "{message}");
        rt.check().expect("consistent");
        // An ephemeral port skips one the wildcard holds, on any address.
        let ephemeral = id_of(rt.execute(&publishing("eph", Some("127.0.0.1"), None, &[])));
        start(&mut rt, &ephemeral).expect("an ephemeral port");
        let taken = rt.container(&ephemeral).and_then(|c| c.ports.first()).map(|p| p.host_port);
        assert!(taken.is_some_and(|p| p != 8080 && EPHEMERAL_RANGE.contains(&p)), "{taken:?}");
        rt.check().expect("consistent");
    }

    const EPHEMERAL_RANGE: std::ops::RangeInclusive<u16> = super::super::ports::EPHEMERAL;

    /// Docker 20.10.24: on `host` (ports discarded) and `none` nothing is published, so a port
    /// held on the host, or by another container, is no obstacle.
    #[test]
    fn nothing_is_published_on_host_or_none() {
        let mut rt = runtime();
        rt.hold_host_port(8080, Protocol::Tcp);
        let bridged = id_of(rt.execute(&publishing("br", None, Some(8080), &[])));
        assert!(refusal(start(&mut rt, &bridged)).ends_with("bind: address already in use"));
        for network in ["host", "none"] {
            let id = id_of(rt.execute(&publishing(network, None, Some(8080), &[network])));
            start(&mut rt, &id).expect("started");
            let info = rt.container(&id).cloned().expect("there");
            assert!(info.ports.is_empty(), "{network}: {:?}", info.ports);
        }
        assert_eq!(rt.ports.publications().count(), 0);
        rt.check().expect("consistent");
    }
}
