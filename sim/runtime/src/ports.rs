//! Host ports, as Docker 20.10 hands them out: the ports processes outside any container listen
//! on, the ports running containers publish, and the cursor of the ephemeral range from which a
//! port published without a host port (or with 0) gets the next free one, in turn. How a start
//! publishes its ports (and fails to) is in `publishing`.

use drydock_engine::api::container::Protocol;
use std::collections::{BTreeMap, BTreeSet};

/// Docker's ephemeral port range (`/proc/sys/net/ipv4/ip_local_port_range` on Linux).
pub(crate) const EPHEMERAL: std::ops::RangeInclusive<u16> = 32_768..=60_999;

/// A host port as the model tells them apart: by number and protocol.
pub(crate) type HostPort = (u16, Protocol);

/// The host ports in use.
///
/// *Guarantees* (see [`Ports::check`]): a port published is counted once per publication (so a
/// start asks "published by another?" without reading every container), and a port no longer
/// published is not kept with a count of zero; the ephemeral cursor is in the ephemeral range
/// once it has moved, and [`Ports::next_ephemeral`] hands the range out in turn, wrapping
/// around. That the counts are those of the running containers' ports is the runtime's to keep
/// (`SimRuntime::check`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ports {
    /// The last host port handed out for a port published without one (0: none yet).
    next_host_port: u16,
    /// Host ports processes outside any container listen on.
    host_ports: BTreeSet<HostPort>,
    /// Host ports the containers publish, with how many publish each.
    published: BTreeMap<HostPort, u32>,
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

    /// How many publications of `port` there are.
    pub(crate) fn published(&self, port: HostPort) -> u32 {
        self.published.get(&port).copied().unwrap_or(0)
    }

    /// Count a publication of `port`.
    pub(crate) fn publish(&mut self, port: HostPort) {
        *self.published.entry(port).or_default() += 1;
    }

    /// Forget a publication of `port`.
    pub(crate) fn unpublish(&mut self, port: HostPort) {
        if let Some(count) = self.published.get_mut(&port) {
            *count -= 1;
            if *count == 0 {
                self.published.remove(&port);
            }
        }
    }

    /// The ports published, with their counts, in order.
    pub(crate) fn publications(&self) -> impl Iterator<Item = (HostPort, u32)> + '_ {
        self.published.iter().map(|(port, count)| (*port, *count))
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
        if let Some((port, _)) = self.published.iter().find(|(_, count)| **count == 0) {
            return Err(format!("ports: {port:?} kept with no publication"));
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

    #[test]
    fn publications_are_counted_and_ephemeral_ports_handed_out_in_turn() {
        let mut ports = Ports::default();
        ports.publish((8080, TCP));
        ports.publish((8080, TCP));
        ports.unpublish((8080, TCP));
        assert_eq!((ports.published((8080, TCP)), ports.published((8080, Protocol::Udp))), (1, 0));
        ports.unpublish((8080, TCP));
        ports.unpublish((8080, TCP));
        assert_eq!(ports.publications().count(), 0, "none kept at zero");
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
    fn check_finds_a_zero_count_or_a_cursor_out_of_range() {
        let mut ports = Ports::default();
        ports.published.insert((1, TCP), 0);
        assert!(ports.check().is_err());
        let ports = Ports { next_host_port: 80, ..Ports::default() };
        assert!(ports.check().is_err());
    }
}
