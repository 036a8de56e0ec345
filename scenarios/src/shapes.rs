//! What the containers of a workload run: commands, ports, mounts, environment and names, drawn so
//! that every path the engine can meet on Docker runs under every fault: commands that end, fail,
//! are missing from the image, trap TERM or ignore it; host ports fixed, shared with another
//! container (one of them cannot start) or left to the runtime; and, now and then, a spec Docker
//! would refuse (a relative or duplicate mount target, a mount on `/`, a source that is neither a
//! host path nor a ContainerVolume's name, an env entry without a name, a one-character container
//! name), which admission must refuse before anything reaches the runtime.

use crate::draw::{chance, pick};
use drydock_engine::api::container::{EnvVar, Mount, PortMapping, Protocol};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

/// How a container's main process behaves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// The image's default command (it keeps running).
    Default,
    /// Keeps running and ends on TERM with 0 (it traps TERM).
    TrapsTerm,
    /// Keeps running and ignores TERM: a stop kills it after the grace period (137).
    IgnoresTerm,
    /// Ends by itself at once with this code.
    Ends(i64),
    /// Ends by itself after this many seconds with this code.
    EndsAfter(u64, i64),
    /// Names an executable the image does not have: it can never start.
    Missing,
}

impl Behaviour {
    pub fn draw(rng: &mut ChaCha8Rng) -> Self {
        match rng.next_u64() % 10 {
            0..=2 => Behaviour::Default,
            3 | 4 => Behaviour::TrapsTerm,
            5 => Behaviour::IgnoresTerm,
            6 => Behaviour::Ends(*pick(rng, &[0, 1, 3])),
            7 | 8 => Behaviour::EndsAfter(1 + rng.next_u64() % 20, *pick(rng, &[0, 2])),
            _ => Behaviour::Missing,
        }
    }

    /// The command that behaves so (empty: the image's default).
    pub fn command(self) -> Vec<String> {
        let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
        match self {
            Behaviour::Default => Vec::new(),
            Behaviour::TrapsTerm => sh("trap 'exit 0' TERM; while true; do sleep 1; done".into()),
            Behaviour::IgnoresTerm => sh("while true; do sleep 1; done".into()),
            Behaviour::Ends(code) => sh(format!("exit {code}")),
            Behaviour::EndsAfter(seconds, code) => sh(format!("sleep {seconds}; exit {code}")),
            Behaviour::Missing => vec!["/no/such/program".to_string()],
        }
    }
}

/// The host ports a workload hands out: a few fixed ones, so that two containers sometimes want
/// the same one.
const FIXED_HOST_PORTS: [u16; 3] = [8080, 8081, 9090];

/// Ports to publish: none, one left to the runtime (host port 0), or one fixed host port.
pub fn ports(rng: &mut ChaCha8Rng) -> Vec<PortMapping> {
    let port = |host_port| PortMapping { protocol: Protocol::Tcp, host_port, container_port: 80, host_ip: None };
    match rng.next_u64() % 6 {
        0..=2 => Vec::new(),
        3 => vec![port(Some(0))],
        4 => vec![port(None)],
        _ => vec![port(Some(*pick(rng, &FIXED_HOST_PORTS)))],
    }
}

/// A mount, usually valid (an absolute host path on an absolute target).
pub fn mounts(rng: &mut ChaCha8Rng, invalid: bool) -> Vec<Mount> {
    let mount = |source: &str, target: &str| Mount { source: source.into(), target: target.into(), read_only: false };
    if invalid {
        return match rng.next_u64() % 4 {
            0 => vec![mount("/srv/data", "data")],
            1 => vec![mount("/srv/a", "/data"), mount("/srv/b", "/data")],
            2 => vec![mount("/srv/root", "/")],
            _ => vec![mount("named_volume", "/data")],
        };
    }
    if chance(rng, 0.3) { vec![mount("/srv/data", "/data")] } else { Vec::new() }
}

/// Environment entries, usually valid.
pub fn env(rng: &mut ChaCha8Rng, invalid: bool, n: u64) -> Vec<EnvVar> {
    let mut env = vec![EnvVar { name: "N".into(), value: n.to_string() }];
    if invalid {
        env.push(EnvVar { name: String::new(), value: "nameless".into() });
    } else if chance(rng, 0.3) {
        env.push(EnvVar { name: "MODE".into(), value: "test".into() });
    }
    env
}

/// What about a spec is wrong, if anything (about one spec in twelve is).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Flaw {
    None,
    Mount,
    Env,
    /// A one-character container name.
    Name,
}

impl Flaw {
    pub fn draw(rng: &mut ChaCha8Rng) -> Self {
        if !chance(rng, 1.0 / 12.0) {
            return Flaw::None;
        }
        *pick(rng, &[Flaw::Mount, Flaw::Env, Flaw::Name])
    }
}
