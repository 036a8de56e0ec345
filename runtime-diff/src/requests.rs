//! What an operation asks of a runtime: the one translation both runtimes share, so that they
//! get the very same requests (names, labels, commands, mounts), and only the runtime differs.

use crate::ops::{BUILDS, ImageChoice, NetworkChoice, Op, PortChoice, Program};
use drydock_engine::api::container::{CopiedFile, Mount, NetworkAttachment, PortMapping, Protocol};
use drydock_engine::runtime::{ContainerCreate, ImageBuild, NetworkCreate, RuntimeRequest, VolumeCreate};
use std::collections::BTreeMap;

/// The label every object a run makes carries (its value: the run's id), by which the cleanup
/// finds them.
pub const RUN_LABEL: &str = "drydock.diff.run";
/// The label telling one sequence's objects from another's.
pub const SEQUENCE_LABEL: &str = "drydock.diff.sequence";

/// Where a volume is mounted in a container.
pub const VOLUME_TARGET: &str = "/data";
/// What a copy writes.
pub const COPIED: &str = "copied\n";

/// The build context every sequence builds from, as files (relative path -> contents); its
/// Dockerfiles start `FROM` the base image.
pub fn build_context_files(base_image: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("Dockerfile".to_string(), format!("FROM {base_image}\nCOPY f /f\nCMD [\"cat\", \"/f\"]\n")),
        ("Dockerfile.fail".to_string(), format!("FROM {base_image}\nRUN echo building && exit 3\n")),
        ("f".to_string(), "built\n".to_string()),
    ])
}

/// The names one sequence gives its objects, and what it shares with the run.
#[derive(Clone, Debug)]
pub struct Names {
    /// Starts every name this sequence makes: `ddiff-<run>-<sequence>-`.
    pub prefix: String,
    pub run: String,
    /// Which sequence of the run (a shrink's reruns have their own: `3s1`, `3s2`, ...).
    pub sequence: String,
    /// The host port [`PortChoice::Fixed`] publishes.
    pub fixed_port: u16,
    pub base_image: String,
    /// The build context's directory.
    pub context: String,
}

impl Names {
    pub fn new(run: &str, sequence: &str, fixed_port: u16, base_image: &str, context: &str) -> Self {
        Names {
            prefix: format!("ddiff-{run}-{sequence}-"),
            run: run.to_string(),
            sequence: sequence.to_string(),
            fixed_port,
            base_image: base_image.to_string(),
            context: context.to_string(),
        }
    }

    pub fn container(&self, c: u8) -> String {
        format!("{}c{c}", self.prefix)
    }

    pub fn network(&self, n: NetworkChoice) -> String {
        match n {
            NetworkChoice::Own(n) => format!("{}n{n}", self.prefix),
            NetworkChoice::Bridge => "bridge".to_string(),
        }
    }

    pub fn volume(&self, v: u8) -> String {
        format!("{}v{v}", self.prefix)
    }

    pub fn tag(&self, b: u8) -> String {
        format!("{}img{b}:1", self.prefix)
    }

    /// The labels of the sequence's objects: the run's and the sequence's.
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(RUN_LABEL.to_string(), self.run.clone()), (SEQUENCE_LABEL.to_string(), self.sequence.clone())])
    }

    /// Every name a sequence can make, for the cleanup and for normalising what a runtime says.
    pub fn all_tags(&self) -> impl Iterator<Item = String> + '_ {
        (0..BUILDS).map(|b| self.tag(b))
    }
}

/// The command a program runs (empty: the image's default).
pub fn command(program: Program) -> Vec<String> {
    let script = match program {
        Program::Default => return Vec::new(),
        Program::Exit(code) => format!("exit {code}"),
        Program::Chatty => "echo out; echo err >&2; exit 3".to_string(),
        Program::TrapsTerm => "trap 'exit 7' TERM; while true; do sleep 1; done".to_string(),
        Program::ReadsFiles => format!("cat /copied/f; cat {VOLUME_TARGET}/f; exit 0"),
        Program::Writes => format!(
            "X=run; for w in a b; do printf '%s-%s\\n' \"$X\" \"$w\"; done | tr a-z A-Z; \
             echo \"$X\" >> /kept; cat /kept | wc -l; echo \"$X\" >> {VOLUME_TARGET}/log; \
             cat {VOLUME_TARGET}/log | wc -l; exit 0"
        ),
    };
    vec!["sh".to_string(), "-c".to_string(), script]
}

/// The request of a single operation; `None` for the operations that are not one request
/// (`Logs`, and `Together`).
pub fn request(
    op: &Op,
    names: &Names,
    since: drydock_engine::WallTime,
    ids: &BTreeMap<String, String>,
) -> Option<RuntimeRequest> {
    let container = |c: u8| names.container(c);
    // Events are asked by id (a name would also match an earlier container of that name); a
    // slot that never held a container is asked by name.
    let id_of = |c: u8| ids.get(&container(c)).cloned().unwrap_or_else(|| container(c));
    Some(match op {
        Op::Create { c, program, image, volume, network, port } => {
            RuntimeRequest::CreateContainer(create(names, *c, *program, *image, *volume, *network, *port))
        }
        Op::Start { c } => RuntimeRequest::StartContainer { id: container(*c) },
        Op::Stop { c, timeout_secs } => {
            RuntimeRequest::StopContainer { id: container(*c), timeout_secs: *timeout_secs }
        }
        Op::Remove { c, force } => RuntimeRequest::RemoveContainer { id: container(*c), force: *force },
        Op::Inspect { c } => RuntimeRequest::InspectContainer { id: container(*c) },
        Op::List => RuntimeRequest::ListContainers { labels: names.labels() },
        Op::Events { c } => RuntimeRequest::ContainerEvents { id: id_of(*c), since },
        Op::Copy { c, into_volume } => {
            let destination = if *into_volume { format!("{VOLUME_TARGET}/f") } else { "/copied/f".to_string() };
            let file = CopiedFile { destination, contents: COPIED.to_string(), mode: 0o644, owner: 0, group: 0 };
            RuntimeRequest::CopyFiles { id: container(*c), files: vec![file] }
        }
        Op::NetworkCreate { n } => RuntimeRequest::CreateNetwork(NetworkCreate {
            name: names.network(NetworkChoice::Own(*n)),
            labels: names.labels(),
        }),
        Op::NetworkRemove { n } => RuntimeRequest::RemoveNetwork { id: names.network(NetworkChoice::Own(*n)) },
        Op::NetworkInspect { n } => RuntimeRequest::InspectNetwork { id: names.network(NetworkChoice::Own(*n)) },
        Op::NetworkList => RuntimeRequest::ListNetworks { labels: names.labels() },
        Op::Connect { n, c, alias } => RuntimeRequest::ConnectNetwork {
            network: names.network(*n),
            container: container(*c),
            aliases: if *alias { vec![format!("alias{c}")] } else { Vec::new() },
        },
        Op::Disconnect { n, c } => {
            RuntimeRequest::DisconnectNetwork { network: names.network(*n), container: container(*c) }
        }
        Op::VolumeCreate { v } => {
            RuntimeRequest::CreateVolume(VolumeCreate { name: names.volume(*v), labels: names.labels() })
        }
        Op::VolumeRemove { v } => RuntimeRequest::RemoveVolume { name: names.volume(*v) },
        Op::VolumeInspect { v } => RuntimeRequest::InspectVolume { name: names.volume(*v) },
        Op::VolumeList => RuntimeRequest::ListVolumes { labels: names.labels() },
        Op::Build { b, fails } => RuntimeRequest::BuildImage(ImageBuild {
            context: names.context.clone(),
            dockerfile: if *fails { "Dockerfile.fail".to_string() } else { "Dockerfile".to_string() },
            build_args: BTreeMap::new(),
            target: None,
            labels: names.labels(),
            tag: names.tag(*b),
        }),
        Op::ImageInspect { b } => RuntimeRequest::InspectImage { reference: names.tag(*b) },
        Op::ImageRemove { b, force } => RuntimeRequest::RemoveImage { reference: names.tag(*b), force: *force },
        Op::Logs { .. } | Op::Together(..) => return None,
    })
}

fn create(
    names: &Names,
    c: u8,
    program: Program,
    image: ImageChoice,
    volume: Option<u8>,
    network: Option<NetworkChoice>,
    port: Option<PortChoice>,
) -> ContainerCreate {
    let image = match image {
        ImageChoice::Base => names.base_image.clone(),
        ImageChoice::Built(b) => names.tag(b),
    };
    let ports = port
        .map(|port| PortMapping {
            protocol: Protocol::Tcp,
            host_port: Some(match port {
                PortChoice::Ephemeral => 0,
                PortChoice::Fixed => names.fixed_port,
            }),
            container_port: 80,
            host_ip: None,
        })
        .into_iter()
        .collect();
    let mounts = volume
        .map(|v| Mount { source: names.volume(v), target: VOLUME_TARGET.to_string(), read_only: false })
        .into_iter()
        .collect();
    let networks =
        network.map(|n| NetworkAttachment { name: names.network(n), aliases: Vec::new() }).into_iter().collect();
    ContainerCreate {
        name: names.container(c),
        image,
        command: command(program),
        env: BTreeMap::new(),
        labels: names.labels(),
        ports,
        mounts,
        networks,
    }
}
