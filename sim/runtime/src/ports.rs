//! Host ports, as Docker 20.10 hands them out: the ports processes outside any container listen
//! on, the ports running containers publish (on which host address), and the cursor of the
//! ephemeral range from which a port published without a host port (or with 0) gets the next
//! free one, in turn. How a start publishes its ports (and fails to) is in `publishing`.

use drydock_engine::api::container::Protocol;
use drydock_engine::runtime::PublishedPort;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Docker's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range` on Linux).
pub(crate) const EPHEMERAL: std::ops::RangeInclusive<u16> = 32_768..=60_999;

/// A host port by number and protocol (on any address).
pub(crate) type HostPort = (u16, Protocol);

/// The address a port is published on when the mapping names none: every IPv4 address.
pub(crate) const WILDCARD: &str = "0.0.0.0";

/// Docker's `HostIp` of a mapping, as the model tells addresses apart: none (or empty) is the
/// IPv4 wildcard, an address is written as `IpAddr` writes it (so `127.000.0.1` cannot pass
/// for another address than `127.0.0.1`), anything else as given.
pub(crate) fn host_address(host_ip: Option<&str>) -> String {
    match host_ip {
        None | Some("") => WILDCARD.to_string(),
        Some(ip) => ip.parse::<IpAddr>().map_or_else(|_| ip.to_string(), |ip| ip.to_string()),
    }
}

/// Whether a port bound on address `a` and the same port bound on `b` collide. Docker's port
/// allocator keeps one map per address, so the same address twice is its "port is already
/// allocated"; the kernel refuses a wildcard bind while a specific address holds the port and
/// the reverse ("address already in use"), while two specific addresses (127.0.0.1 and
/// 127.0.0.2) both bind (seen on Docker 20.10.24).
pub(crate) fn addresses_collide(a: &str, b: &str) -> bool {
    let unspecified = |ip: &str| ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified());
    a == b || unspecified(a) || unspecified(b)
}

/// A port a running container publishes: on which host address, and what `inspect` shows of it
/// (Docker's inspect names the address too; the runtime contract's `PublishedPort` does not).
/// Ordered by the port first, so a container's bindings in order give its ports in order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Binding {
    pub(crate) port: PublishedPort,
    pub(crate) address: String,
}

impl Binding {
    /// Its host port, as the host tells ports apart.
    pub(crate) fn host_port(&self) -> HostPort {
        (self.port.host_port, self.port.protocol)
    }
}

/// Ports shown by `inspect` of a container inserted from outside: bound on the wildcard (the
/// runtime contract carries no address).
pub(crate) fn wildcard_bindings(ports: &[PublishedPort]) -> Vec<Binding> {
    let mut bindings: Vec<Binding> =
        ports.iter().map(|port| Binding { port: port.clone(), address: WILDCARD.to_string() }).collect();
    bindings.sort();
    bindings
}

/// The host ports in use.
///
/// *Guarantees* (see [`Ports::check`]): a port published is counted once per publication, by
/// port and address (so a start asks "published by another, on an address that collides?"
/// without reading every container), and a port no longer published is not kept with a count
/// of zero; the ephemeral cursor is in the ephemeral range once it has moved, and
/// [`Ports::next_ephemeral`] hands the range out in turn, wrapping around. That the counts are
/// those of the running containers' bindings is the runtime's to keep (`SimRuntime::check`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ports {
    /// The last host port handed out for a port published without one (0: none yet).
    next_host_port: u16,
    /// Host ports processes outside any container listen on (on every address).
    host_ports: BTreeSet<HostPort>,
    /// Host ports the containers publish -> the addresses they are bound on, with how many
    /// publish each.
    published: BTreeMap<HostPort, BTreeMap<String, u32>>,
}

impl Ports {
    /// A process outside any container listens on `port`.
    pub(crate) fn hold(&mut self, port: HostPort) {
        self.host_ports.insert(port);
    }

    /// The process listening on `port` stopped.
    pub(crate) fn release(&mut self, port: HostPort) {
        self.host_ports.remove(&port);
    }

    /// Whether a process outside any container listens on `port`.
    pub(crate) fn is_held(&self, port: HostPort) -> bool {
        self.host_ports.contains(&port)
    }

    /// The addresses `port` is published on, with how many publications each has.
    pub(crate) fn published_on(&self, port: HostPort) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.published.get(&port).into_iter().flatten().map(|(address, count)| (address.as_str(), *count))
    }

    /// Count a publication of `binding`.
    pub(crate) fn publish(&mut self, binding: &Binding) {
        let addresses = self.published.entry(binding.host_port()).or_default();
        *addresses.entry(binding.address.clone()).or_default() += 1;
    }

    /// Forget a publication of `binding`.
    pub(crate) fn unpublish(&mut self, binding: &Binding) {
        let port = binding.host_port();
        let Some(addresses) = self.published.get_mut(&port) else { return };
        if let Some(count) = addresses.get_mut(&binding.address) {
            *count -= 1;
            if *count == 0 {
                addresses.remove(&binding.address);
            }
        }
        if addresses.is_empty() {
            self.published.remove(&port);
        }
    }

    /// The ports published, by port and address, with their counts, in order.
    pub(crate) fn publications(&self) -> impl Iterator<Item = ((HostPort, &str), u32)> + '_ {
        self.published
            .iter()
            .flat_map(|(port, addresses)| addresses.iter().map(move |(address, n)| ((*port, address.as_str()), *n)))
    }

    /// The next ephemeral port after the last one handed out that `taken` does not refuse (the
    /// last one tried, if it refuses the whole range).
    pub(crate) fn next_ephemeral(&mut self, protocol: Protocol, taken: impl Fn(&Ports, HostPort) -> bool) -> u16 {
        for _ in EPHEMERAL {
            self.next_host_port = match self.next_host_port {
                port if port < *EPHEMERAL.start() || port >= *EPHEMERAL.end() => *EPHEMERAL.start() + 1,
                port => port + 1,
            };
            if !taken(self, (self.next_host_port, protocol)) {
                break;
            }
        }
        self.next_host_port
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (port, addresses) in &self.published {
            if addresses.is_empty() {
                return Err(format!("ports: {port:?} kept with no address"));
            }
            if let Some((address, _)) = addresses.iter().find(|(_, count)| **count == 0) {
                return Err(format!("ports: {port:?} on {address} kept with no publication"));
            }
        }
        if self.next_host_port != 0 && !EPHEMERAL.contains(&self.next_host_port) {
            return Err(format!("ports: the ephemeral cursor {} is outside the range", self.next_host_port));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: Protocol = Protocol::Tcp;

    fn bound(host_port: u16, protocol: Protocol, address: &str) -> Binding {
        Binding { port: PublishedPort { container_port: 80, protocol, host_port }, address: address.into() }
    }

    #[test]
    fn publications_are_counted_and_ephemeral_ports_handed_out_in_turn() {
        let mut ports = Ports::default();
        ports.publish(&bound(8080, TCP, WILDCARD));
        ports.publish(&bound(8080, TCP, WILDCARD));
        ports.publish(&bound(8080, TCP, "127.0.0.1"));
        ports.unpublish(&bound(8080, TCP, WILDCARD));
        let on = |ports: &Ports, port| ports.published_on(port).map(|(a, n)| (a.to_string(), n)).collect::<Vec<_>>();
        assert_eq!(on(&ports, (8080, TCP)), [("0.0.0.0".to_string(), 1), ("127.0.0.1".to_string(), 1)]);
        assert!(on(&ports, (8080, Protocol::Udp)).is_empty());
        ports.unpublish(&bound(8080, TCP, WILDCARD));
        ports.unpublish(&bound(8080, TCP, WILDCARD));
        ports.unpublish(&bound(8080, TCP, "127.0.0.1"));
        assert_eq!(ports.publications().count(), 0, "none kept at zero");
        ports.check().expect("consistent");
        ports.hold((32_770, TCP));
        let taken = |ports: &Ports, port: HostPort| ports.is_held(port);
        assert_eq!(ports.next_ephemeral(TCP, taken), 32_769, "the range's first, after its start");
        assert_eq!(ports.next_ephemeral(TCP, taken), 32_771, "a held one skipped");
        assert_eq!(ports.next_ephemeral(Protocol::Udp, taken), 32_772, "in turn, whatever the protocol");
        ports.release((32_770, TCP));
        assert!(!ports.is_held((32_770, TCP)));
        ports.next_host_port = *EPHEMERAL.end();
        assert_eq!(ports.next_ephemeral(TCP, taken), 32_769, "wraps around");
        ports.check().expect("consistent");
    }

    #[test]
    fn addresses_collide_when_equal_or_one_is_the_wildcard() {
        assert_eq!(host_address(None), "0.0.0.0");
        assert_eq!(host_address(Some("")), "0.0.0.0");
        assert_eq!(host_address(Some("127.0.0.1")), "127.0.0.1");
        assert_eq!(host_address(Some("::0")), "::", "as IpAddr writes it");
        assert!(addresses_collide("127.0.0.1", "127.0.0.1"), "the allocator's own map");
        assert!(addresses_collide("0.0.0.0", "127.0.0.1") && addresses_collide("127.0.0.2", "0.0.0.0"));
        assert!(addresses_collide("::", "127.0.0.1"), "the IPv6 wildcard too");
        assert!(!addresses_collide("127.0.0.1", "127.0.0.2"), "two specific addresses both bind");
        let ports = [
            PublishedPort { container_port: 80, protocol: TCP, host_port: 2 },
            PublishedPort { container_port: 53, protocol: Protocol::Udp, host_port: 1 },
        ];
        let bindings = wildcard_bindings(&ports);
        assert_eq!(bindings.iter().map(|b| b.port.host_port).collect::<Vec<_>>(), [1, 2], "in port order");
        assert!(bindings.iter().all(|b| b.address == WILDCARD));
    }

    #[test]
    fn check_finds_a_zero_count_or_a_cursor_out_of_range() {
        let mut ports = Ports::default();
        ports.published.insert((1, TCP), BTreeMap::from([(WILDCARD.to_string(), 0)]));
        assert!(ports.check().is_err());
        let mut ports = Ports::default();
        ports.published.insert((1, TCP), BTreeMap::new());
        assert!(ports.check().is_err(), "a port with no address");
        let ports = Ports { next_host_port: 80, ..Ports::default() };
        assert!(ports.check().is_err());
    }
}
