//! `resources`: the rest of the physical layer beside containers: networks, volumes, images
//! built from context directories, and files copied into containers.
//! Networks and volumes created by name (some names held by strangers, with and without
//! `replaceExisting`), retained or not, one tracking the built-in `bridge`; containers attached
//! to networks (with aliases) and mounting volumes, some created before what they use exists;
//! strangers' containers attached to drydock's networks and using its volumes; networks and
//! volumes deleted while containers use them, removed behind the engine's back, and namespaces
//! deleted with all of it inside. Images built from a context written on the host (or not:
//! a missing context, a step that fails), containers made from them, files copied into
//! containers before they start.
//!
//! [`add_resources`] adds a few of them to any workload (`mixed` has some).

use crate::draw::{Ops, between, chance, pick};
use crate::shapes::Behaviour;
use drydock_engine::api::container::{CopiedFile, Mount, NetworkAttachment};
use drydock_engine::api::{ContainerImage, ContainerNetwork, ContainerVolume, Resource};
use drydock_sim::workload::{ClientOp, ContainerOp, ExternalOp, Propagation, Target, TimedOp, Workload};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// A namespace's networks, volumes and built image, by object name.
struct Made {
    namespace: String,
    networks: Vec<String>,
    volumes: Vec<String>,
    built: Option<String>,
}

/// What a build context of this scenario holds: a Dockerfile from the present busybox that
/// copies a file in and prints it, or one whose step fails.
fn context(rng: &mut ChaCha8Rng) -> BTreeMap<String, String> {
    let run = if chance(rng, 0.15) { "RUN exit 3\n" } else { "" };
    let dockerfile = format!(
        "FROM busybox:latest\nARG GREETING=hello\nCOPY motd /etc/motd\n{run}LABEL built=yes\nCMD [\"sh\", \"-c\", \"cat /etc/motd; sleep 20\"]\n"
    );
    BTreeMap::from([
        ("Dockerfile".to_string(), dockerfile),
        ("motd".to_string(), format!("built {}\n", rng.next_u64() % 100)),
    ])
}

/// A `ContainerImage` built from a context directory written before it (mostly).
fn built_image(rng: &mut ChaCha8Rng, ops: &mut Ops, namespace: &str, t: Duration) -> String {
    let dir = format!("/ctx/{namespace}");
    let written = t + between(rng, 0, 1_000);
    if chance(rng, 0.9) {
        let files = context(rng);
        ops.at(written, ClientOp::External(ExternalOp::WriteContext { dir: dir.clone(), files }));
    }
    let spec = json!({
        "image": format!("drydock.test/{namespace}-app:1"),
        "build": {"context": dir, "buildArgs": {"GREETING": "hi"}},
        "pullRetryLimit": 1,
    });
    let name = "app".to_string();
    ops.at(written + between(rng, 0, 2_000), create(ContainerImage::KIND, namespace, &name, spec));
    name
}

/// Networks and volumes of namespace `namespace`, made from `t` on, strangers and external
/// removals among them.
fn resources(rng: &mut ChaCha8Rng, ops: &mut Ops, namespace: &str, t: Duration) -> Made {
    let mut made = Made { namespace: namespace.to_string(), networks: Vec::new(), volumes: Vec::new(), built: None };
    if chance(rng, 0.6) {
        made.built = Some(built_image(rng, ops, namespace, t));
    }
    for (kind, prefix, count) in [
        (ContainerNetwork::KIND, "net", 1 + rng.next_u64() % 2),
        (ContainerVolume::KIND, "vol", 1 + rng.next_u64() % 2),
    ] {
        let network = kind == ContainerNetwork::KIND;
        for k in 0..count {
            let name = format!("{prefix}-{k}");
            let runtime_name = format!("{namespace}-{name}");
            let created = t + between(rng, 0, 6_000);
            let mut spec = Map::new();
            if network && k == 1 && chance(rng, 0.3) {
                // Tracks the built-in network: never removed.
                spec.insert("networkId".into(), json!("bridge"));
            } else {
                if chance(rng, 0.25) {
                    let stranger = if network {
                        ExternalOp::CreateNetwork { name: runtime_name.clone() }
                    } else {
                        ExternalOp::CreateVolume { name: runtime_name.clone() }
                    };
                    ops.at(created.saturating_sub(between(rng, 0, 2_000)), ClientOp::External(stranger));
                }
                if chance(rng, 0.5) {
                    spec.insert("replaceExisting".into(), json!(true));
                }
                // Networks are removed unless retained; volumes are kept unless told otherwise.
                if network && chance(rng, 0.2) {
                    spec.insert("retain".into(), json!(true));
                } else if !network && chance(rng, 0.6) {
                    spec.insert("retain".into(), json!(false));
                }
                if chance(rng, 0.15) {
                    let removal = if network {
                        ExternalOp::RemoveNetwork { name: runtime_name.clone() }
                    } else {
                        ExternalOp::RemoveVolume { name: runtime_name.clone() }
                    };
                    ops.at(created + between(rng, 2_000, 20_000), ClientOp::External(removal));
                }
            }
            ops.at(created, create(kind, namespace, &name, Value::Object(spec)));
            if network { made.networks.push(name) } else { made.volumes.push(name) }
        }
    }
    made
}

fn create(kind: &str, namespace: &str, name: &str, spec: Value) -> ClientOp {
    let target = Target { kind: kind.to_string(), namespace: Some(namespace.to_string()), name: name.to_string() };
    ClientOp::Create { target, spec, labels: Default::default(), owner: None }
}

fn delete(kind: &str, namespace: &str, name: &str) -> ClientOp {
    let target = Target { kind: kind.to_string(), namespace: Some(namespace.to_string()), name: name.to_string() };
    ClientOp::Delete { target, propagation: Propagation::Background }
}

/// A container of `made`'s namespace attached to some of its networks and mounting some of its
/// volumes.
fn user(rng: &mut ChaCha8Rng, made: &Made, name: String) -> ContainerOp {
    let mut networks = Vec::new();
    for network in &made.networks {
        if chance(rng, 0.6) {
            let aliases = if chance(rng, 0.5) { vec![format!("{name}-alias")] } else { Vec::new() };
            networks.push(NetworkAttachment { name: network.clone(), aliases });
        }
    }
    let mut mounts = Vec::new();
    for (i, volume) in made.volumes.iter().enumerate() {
        if chance(rng, 0.5) {
            mounts.push(Mount { source: volume.clone(), target: format!("/data{i}"), read_only: chance(rng, 0.2) });
        }
    }
    let mut files = Vec::new();
    if chance(rng, 0.4) {
        let contents = format!("config of {name}\n");
        files.push(CopiedFile { destination: "/etc/app/config".into(), contents, mode: 0o640, owner: 0, group: 0 });
    }
    // From the built image now and then (its command prints what it copied in).
    let (image, image_ref, command) = match &made.built {
        Some(built) if chance(rng, 0.4) => {
            if chance(rng, 0.2) {
                // Below a file the image holds: Docker's copy fails ("not a directory"), for good.
                let contents = "cannot land\n".to_string();
                files.push(CopiedFile {
                    destination: "/etc/motd/extra".into(),
                    contents,
                    mode: 0o644,
                    owner: 0,
                    group: 0,
                });
            }
            (None, Some(built.clone()), Vec::new())
        }
        _ if !files.is_empty() && chance(rng, 0.5) => {
            let script = "cat /etc/app/config; sleep 15".to_string();
            (Some("busybox:latest".into()), None, vec!["sh".into(), "-c".into(), script])
        }
        _ => (Some("busybox:latest".into()), None, Behaviour::draw(rng).command()),
    };
    ContainerOp {
        namespace: made.namespace.clone(),
        name,
        image,
        image_ref,
        command,
        networks,
        mounts,
        files,
        ..ContainerOp::default()
    }
}

/// Containers using `made`'s networks and volumes, strangers' containers using them too, and
/// deletes of containers, networks and volumes while in use.
fn users(rng: &mut ChaCha8Rng, ops: &mut Ops, made: &Made, t: Duration, prefix: &str) {
    for j in 0..1 + rng.next_u64() % 4 {
        // Sometimes before what it uses exists: it waits.
        let created = t + between(rng, 0, 12_000);
        let container = user(rng, made, format!("{prefix}{j}"));
        ops.at(created, ClientOp::CreateContainer(container.clone()));
        if chance(rng, 0.3) {
            let delete = ClientOp::DeleteContainer {
                namespace: made.namespace.clone(),
                name: container.name,
                propagation: Propagation::Background,
            };
            ops.at(created + between(rng, 1_000, 20_000), delete);
        }
    }
    // A stranger's container on a drydock network or volume for a while, sometimes removed
    // earlier (a network's removal waits for it to stop; a volume's for it to be removed, only
    // within its grace while the namespace goes).
    if chance(rng, 0.3) {
        let name = format!("stranger-{}-{prefix}", made.namespace);
        let network = (!made.networks.is_empty() && chance(rng, 0.5))
            .then(|| format!("{}-{}", made.namespace, pick(rng, &made.networks)));
        let volume = (!made.volumes.is_empty() && (network.is_none() || chance(rng, 0.5)))
            .then(|| format!("{}-{}", made.namespace, pick(rng, &made.volumes)));
        let at = t + between(rng, 5_000, 15_000);
        let run = ExternalOp::RunUsing { name: name.clone(), seconds: 5 + rng.next_u64() % 40, network, volume };
        ops.at(at, ClientOp::External(run));
        // Removed by its owner after a while (a volume in use stays until then; while its
        // namespace goes, only for the grace). Sometimes long after: a volume its namespace's
        // deletion abandoned is then left unused, for the harvester.
        let kept = if chance(rng, 0.3) { between(rng, 35_000, 70_000) } else { between(rng, 5_000, 40_000) };
        ops.at(at + kept, ClientOp::External(ExternalOp::RemoveOwn { name }));
    }
    for network in &made.networks {
        if chance(rng, 0.25) {
            ops.at(t + between(rng, 3_000, 25_000), delete(ContainerNetwork::KIND, &made.namespace, network));
        }
    }
    for volume in &made.volumes {
        if chance(rng, 0.25) {
            let deleted = t + between(rng, 3_000, 25_000);
            ops.at(deleted, delete(ContainerVolume::KIND, &made.namespace, volume));
            if chance(rng, 0.3) {
                // Someone runs a container on the volume's name just as it goes: Docker makes a
                // new volume of that name, a stranger's, which drydock must not take for its own.
                let name = format!("reuser-{}-{volume}", made.namespace);
                let volume = Some(format!("{}-{volume}", made.namespace));
                let run = ExternalOp::RunUsing { name: name.clone(), seconds: 30, network: None, volume };
                let at = deleted + between(rng, 0, 1_500);
                ops.at(at, ClientOp::External(run));
                ops.at(at + between(rng, 5_000, 20_000), ClientOp::External(ExternalOp::RemoveOwn { name }));
            }
        }
    }
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let namespaces: Vec<(String, Duration)> =
        (0..1 + rng.next_u64() % 2).map(|i| (format!("res-{i}"), between(rng, 0, 1_000))).collect();
    for (i, (namespace, t)) in namespaces.iter().enumerate() {
        ops.at(*t, ClientOp::CreateNamespace { name: namespace.clone(), engine: Some(i % 2), workload: None });
        let from = *t + between(rng, 0, 500);
        let made = resources(rng, &mut ops, namespace, from);
        users(rng, &mut ops, &made, *t, "c-");
        if chance(rng, 0.4) {
            ops.at(*t + between(rng, 15_000, 40_000), ClientOp::DeleteNamespace { name: namespace.clone() });
        }
    }
    Workload { images: vec!["busybox:latest".into()], registry: Vec::new(), ops: ops.finish() }
}

/// Add a namespace of networks, volumes and containers using them to `workload` (drawn from
/// `rng` after everything else, so the rest of the workload does not change).
pub fn add_resources(rng: &mut ChaCha8Rng, workload: &mut Workload) {
    let mut ops = Ops::default();
    let namespace = "res-x".to_string();
    let t = between(rng, 0, 5_000);
    ops.at(
        t,
        ClientOp::CreateNamespace {
            name: namespace.clone(),
            engine: Some((rng.next_u64() % 2) as usize),
            workload: None,
        },
    );
    let from = t + between(rng, 0, 500);
    let made = resources(rng, &mut ops, &namespace, from);
    users(rng, &mut ops, &made, t, "u-");
    if chance(rng, 0.4) {
        ops.at(t + between(rng, 15_000, 40_000), ClientOp::DeleteNamespace { name: namespace });
    }
    let added: Vec<TimedOp> = ops.finish();
    workload.ops.extend(added);
    workload.ops.sort_by_key(|op| op.at);
    if !workload.images.iter().any(|i| i == "busybox:latest") {
        workload.images.push("busybox:latest".into());
    }
}

/// Whether `workload` builds an image (then the `build-interrupted` fault is drawn for it).
pub fn builds_images(workload: &Workload) -> bool {
    workload.ops.iter().any(|o| {
        matches!(&o.op, ClientOp::Create { target, spec, .. }
            if target.kind == ContainerImage::KIND && spec.get("build").is_some())
    })
}

/// Whether `workload` copies files into containers (then the `copy-refused` fault is drawn for it).
pub fn copies_files(workload: &Workload) -> bool {
    workload.ops.iter().any(|o| match &o.op {
        ClientOp::CreateContainer(container) => !container.files.is_empty(),
        ClientOp::CreateLogical { spec, .. } => !spec.files.is_empty(),
        ClientOp::Create { spec, .. } => spec.get("files").and_then(Value::as_array).is_some_and(|f| !f.is_empty()),
        _ => false,
    })
}
