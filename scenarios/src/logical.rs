//! Logical-container scenarios: `session`, `persistent-reuse`, `adopt-existing`, and `mixed`.

use crate::draw::{Ops, between, chance, pick};
use crate::shapes::{self, Behaviour, Flaw};
use drydock_engine::api::container::{EnvVar, Mount, NetworkAttachment, PortMapping, Protocol};
use drydock_engine::api::logical::{LogicalContainerSpec, LogicalMode};
use drydock_engine::api::{ContainerNetwork, PullPolicy, Resource};
use drydock_sim::workload::{ClientOp, ContainerOp, ExternalOp, Propagation, Target, Workload};
use drydock_sim::{Latency, ProcessKnobs, WatchKnobs, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::time::Duration;

pub fn two_processes() -> WorldConfig {
    WorldConfig {
        processes: ProcessKnobs { count: 2, ..ProcessKnobs::default() },
        watch: WatchKnobs::per_kind(vec![Latency::millis(0, 20), Latency::millis(0, 150)]),
        ..WorldConfig::default()
    }
}

fn image_source(rng: &mut ChaCha8Rng, spec: &mut LogicalContainerSpec, image_objects: &[String]) {
    if !image_objects.is_empty() && chance(rng, 0.3) {
        spec.image_ref = Some(pick(rng, image_objects).clone());
    } else {
        spec.image = Some(pick(rng, &["busybox:latest", "nginx:1.27", "docker.io/library/redis:7"]).to_string());
    }
}

/// Session logical containers (inline images or image references) created and deleted.
fn session_ops(rng: &mut ChaCha8Rng, ops: &mut Ops, prefix: &str) {
    let namespaces: Vec<(String, Duration)> =
        (0..1 + rng.next_u64() % 2).map(|i| (format!("{prefix}-{i}"), between(rng, 0, 1_000))).collect();
    for (i, (ns, t)) in namespaces.iter().enumerate() {
        ops.at(*t, ClientOp::CreateNamespace { name: ns.clone(), engine: Some(i % 2), workload: None });
        ops.at(
            *t + between(rng, 0, 500),
            ClientOp::CreateImage {
                namespace: ns.clone(),
                name: "shared".into(),
                image: "nginx:1.27".into(),
                pull_policy: PullPolicy::Missing,
                pull_retry_limit: 2,
            },
        );
    }
    for j in 0..2 + rng.next_u64() % 6 {
        let (ns, t) = pick(rng, &namespaces).clone();
        let mut spec = LogicalContainerSpec { mode: LogicalMode::Session, ..Default::default() };
        image_source(rng, &mut spec, &["shared".to_string()]);
        let flaw = Flaw::draw(rng);
        spec.env = shapes::env(rng, flaw == Flaw::Env, j);
        spec.command = Behaviour::draw(rng).command();
        spec.ports = shapes::ports(rng);
        spec.mounts = shapes::mounts(rng, flaw == Flaw::Mount);
        if flaw == Flaw::Name {
            spec.container_name = Some("x".into());
        } else if j > 0 && chance(rng, 0.05) {
            // The runtime name of another logical container of the namespace: refused.
            spec.container_name = Some(format!("{ns}-s-0"));
        }
        let name = format!("s-{j}");
        let created = t + between(rng, 200, 20_000);
        ops.at(created, ClientOp::CreateLogical { namespace: ns.clone(), name: name.clone(), spec: Box::new(spec) });
        if chance(rng, 0.2) {
            ops.at(
                created + between(rng, 500, 15_000),
                ClientOp::StopLogical { namespace: ns.clone(), name: name.clone() },
            );
        }
        if chance(rng, 0.35) {
            let delay = if chance(rng, 0.3) { between(rng, 0, 200) } else { between(rng, 1_000, 20_000) };
            let propagation = if chance(rng, 0.3) { Propagation::Foreground } else { Propagation::Background };
            ops.at(created + delay, ClientOp::DeleteLogical { namespace: ns.clone(), name: name.clone(), propagation });
            if chance(rng, 0.4) {
                // The name reused: refused while the old one is still cleaning up, so tried twice.
                let first = created + delay + between(rng, 0, 3_000);
                respawn(rng, ops, &ns, &name, first);
                let second = first + between(rng, 3_000, 12_000);
                respawn(rng, ops, &ns, &name, second);
            }
        }
        if j == 0 && chance(rng, 0.15) {
            // Another parent's child wanting the same runtime name (`{ns}-s-0`): a client's
            // physical container named like the logical container, or like its backing object.
            let name = if chance(rng, 0.5) { "s-0" } else { "s-0-backing" };
            let container = ContainerOp {
                namespace: ns.clone(),
                name: name.into(),
                image: Some("busybox:latest".into()),
                ..ContainerOp::default()
            };
            ops.at(t + between(rng, 200, 20_000), ClientOp::CreateContainer(container));
        }
    }
    for (ns, _) in &namespaces {
        if chance(rng, 0.25) {
            let deleted = between(rng, 15_000, 35_000);
            ops.at(deleted, ClientOp::DeleteNamespace { name: ns.clone() });
            if chance(rng, 0.5) {
                // Created again under the same name while the old one may still be terminating
                // (then refused), with logical containers of the old names.
                let again = deleted + between(rng, 0, 8_000);
                ops.at(again, ClientOp::CreateNamespace { name: ns.clone(), engine: Some(1), workload: None });
                for j in 0..1 + rng.next_u64() % 3 {
                    let at = again + between(rng, 0, 5_000);
                    respawn(rng, ops, ns, &format!("s-{j}"), at);
                }
            }
        }
    }
}

/// A session logical container created (again) under `name`.
fn respawn(rng: &mut ChaCha8Rng, ops: &mut Ops, ns: &str, name: &str, at: Duration) {
    let mut spec = LogicalContainerSpec { mode: LogicalMode::Session, ..Default::default() };
    image_source(rng, &mut spec, &["shared".to_string()]);
    spec.command = Behaviour::draw(rng).command();
    spec.ports = shapes::ports(rng);
    ops.at(at, ClientOp::CreateLogical { namespace: ns.to_string(), name: name.to_string(), spec: Box::new(spec) });
}

/// A persistent spec with several env vars, ports and mounts (host ports left to the runtime, so
/// two containers never want the same one).
fn persistent_spec(rng: &mut ChaCha8Rng, prefix: &str, i: u64) -> LogicalContainerSpec {
    let env = |name: &str, value: &str| EnvVar { name: name.into(), value: value.into() };
    let port =
        |host_port, container_port| PortMapping { protocol: Protocol::Tcp, host_port, container_port, host_ip: None };
    let mount = |source: String, target: &str, read_only| Mount { source, target: target.into(), read_only };
    let mut spec = LogicalContainerSpec {
        mode: LogicalMode::Persistent,
        image: Some(pick(rng, &["busybox:latest", "nginx:1.27"]).to_string()),
        container_name: Some(format!("{prefix}-db-{i}")),
        env: vec![env("VERSION", "1"), env("USER", "app"), env("DATA", &format!("/data/{i}"))],
        ports: vec![port(None, 5432), port(Some(0), 9187)],
        mounts: vec![
            mount(format!("/srv/{prefix}-db-{i}/data"), "/data", false),
            mount(format!("/srv/{prefix}-db-{i}/conf"), "/etc/db", true),
        ],
        ..Default::default()
    };
    if chance(rng, 0.5) {
        spec.env.push(env("MODE", "primary"));
        spec.ports.push(port(None, 8080));
        spec.mounts.push(mount(format!("/srv/{prefix}-db-{i}/logs"), "/logs", false));
    }
    if chance(rng, 0.5) {
        spec.labels.insert("tier".into(), "db".into());
    }
    spec
}

/// Reorder a list (it has at least two entries): rotate by one, or reverse.
fn reorder<T>(rng: &mut ChaCha8Rng, list: &mut [T]) {
    if list.len() < 2 {
        return;
    }
    if chance(rng, 0.5) { list.rotate_left(1) } else { list.reverse() }
}

/// An edit of a persistent spec between runs. Only some change what the container is made of
/// (its lifecycle key): those may replace it, once; the others (order, networks, command, args,
/// stop) must leave it as it is.
fn edit_persistent(rng: &mut ChaCha8Rng, spec: &mut LogicalContainerSpec, run: u64) {
    match rng.next_u64() % 12 {
        // Excluded from the key.
        0 | 1 => {
            reorder(rng, &mut spec.env);
            reorder(rng, &mut spec.ports);
            reorder(rng, &mut spec.mounts);
        }
        2 => spec.networks.push(NetworkAttachment { name: format!("backend-{run}"), aliases: vec!["db".into()] }),
        3 => spec.command = Behaviour::TrapsTerm.command(),
        4 => spec.args = vec![format!("--run={run}")],
        5 => spec.stop = !spec.stop,
        // Included in the key.
        6 => {
            if let Some(version) = spec.env.iter_mut().find(|e| e.name == "VERSION") {
                version.value = format!("{}", run + 1);
            }
        }
        7 => spec.env.push(EnvVar { name: format!("EXTRA_{run}"), value: "on".into() }),
        8 => {
            let container_port = 10_000 + run as u16;
            spec.ports.push(PortMapping { protocol: Protocol::Tcp, host_port: None, container_port, host_ip: None })
        }
        9 => {
            if let Some(m) = spec.mounts.first_mut() {
                m.source = format!("{}-{run}", m.source);
            }
        }
        10 => {
            spec.labels.insert("run".into(), run.to_string());
        }
        _ => {
            let image = if spec.image.as_deref() == Some("nginx:1.27") { "busybox:latest" } else { "nginx:1.27" };
            spec.image = Some(image.to_string());
        }
    }
    if chance(rng, 0.3) {
        // And a reorder on top, which must change nothing more.
        reorder(rng, &mut spec.env);
        reorder(rng, &mut spec.mounts);
    }
}

/// The same persistent workload started, torn down (namespace deleted, containers kept) and
/// started again, with edits between runs: some change the lifecycle key (replace, once), most
/// do not (reuse).
fn persistent_ops(rng: &mut ChaCha8Rng, ops: &mut Ops, prefix: &str) {
    let ns = format!("{prefix}-app");
    let workload = chance(rng, 0.5).then(|| pick(rng, &["wl-a", ""]).to_string());
    let count = 1 + rng.next_u64() % 4;
    let mut specs: Vec<LogicalContainerSpec> = (0..count).map(|i| persistent_spec(rng, prefix, i)).collect();
    let mut t = between(rng, 0, 1_000);
    for run in 0..2 + rng.next_u64() % 2 {
        let engine = Some((run % 2) as usize);
        ops.at(t, ClientOp::CreateNamespace { name: ns.clone(), engine, workload: workload.clone() });
        for spec in specs.iter_mut().filter(|_| run > 0) {
            edit_persistent(rng, spec, run);
        }
        // The networks the specs name exist in this run (the namespace is new each run): a
        // network edit reaches the runtime, and must still not replace the container.
        let networks: std::collections::BTreeSet<String> =
            specs.iter().flat_map(|s| s.networks.iter().map(|n| n.name.clone())).collect();
        for network in networks {
            let target =
                Target { kind: ContainerNetwork::KIND.to_string(), namespace: Some(ns.clone()), name: network };
            let spec = serde_json::json!({});
            ops.at(
                t + between(rng, 0, 1_000),
                ClientOp::Create { target, spec, labels: Default::default(), owner: None },
            );
        }
        for (i, spec) in specs.iter().enumerate() {
            ops.at(
                t + between(rng, 0, 2_000),
                ClientOp::CreateLogical {
                    namespace: ns.clone(),
                    name: format!("db-{i}"),
                    spec: Box::new(spec.clone()),
                },
            );
        }
        // Tear the workload down: the persistent containers stay in the runtime.
        t += between(rng, 12_000, 25_000);
        ops.at(t, ClientOp::DeleteNamespace { name: ns.clone() });
        t += between(rng, 3_000, 12_000);
    }
}

/// Containers created and removed outside drydock; existing-mode logical containers waiting for
/// them and adopting them; persistent ones adopting strangers.
fn adopt_ops(rng: &mut ChaCha8Rng, ops: &mut Ops, prefix: &str) {
    let ns = format!("{prefix}-adopt");
    ops.at(between(rng, 0, 500), ClientOp::CreateNamespace { name: ns.clone(), engine: Some(0), workload: None });
    for j in 0..1 + rng.next_u64() % 4 {
        let runtime_name = format!("{prefix}-external-{j}");
        let appears = between(rng, 0, 20_000);
        if chance(rng, 0.85) {
            let create = ExternalOp::CreateContainer { name: runtime_name.clone(), image: "busybox:latest".into() };
            ops.at(appears, ClientOp::External(create));
        }
        let mode = if chance(rng, 0.7) { LogicalMode::Existing } else { LogicalMode::Persistent };
        let mut spec = LogicalContainerSpec { mode, container_name: Some(runtime_name.clone()), ..Default::default() };
        if mode == LogicalMode::Persistent {
            spec.image = Some("busybox:latest".into());
        }
        let created = between(rng, 500, 20_000);
        ops.at(
            created,
            ClientOp::CreateLogical { namespace: ns.clone(), name: format!("e-{j}"), spec: Box::new(spec) },
        );
        if chance(rng, 0.2) {
            let gone = appears.max(created) + between(rng, 3_000, 15_000);
            ops.at(gone, ClientOp::External(ExternalOp::RemoveContainer { name: runtime_name }));
        }
        if chance(rng, 0.3) {
            ops.at(
                created + between(rng, 5_000, 25_000),
                ClientOp::DeleteLogical {
                    namespace: ns.clone(),
                    name: format!("e-{j}"),
                    propagation: Propagation::Background,
                },
            );
        }
    }
}

fn workload(ops: Ops) -> Workload {
    Workload {
        images: vec!["busybox:latest".into()],
        registry: vec!["nginx:1.27".into(), "redis:7".into()],
        ops: ops.finish(),
    }
}

pub fn session(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    session_ops(rng, &mut ops, "ns");
    workload(ops)
}

pub fn persistent_reuse(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    persistent_ops(rng, &mut ops, "ns");
    workload(ops)
}

pub fn adopt_existing(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    adopt_ops(rng, &mut ops, "ns");
    workload(ops)
}

/// `docker rmi -f` of references ContainerImages pin (the shared image's, and inline images'),
/// at random times: a pinned image vanishes and must never be pulled again.
fn pinned_image_removals(rng: &mut ChaCha8Rng, ops: &mut Ops) {
    if !chance(rng, 0.5) {
        return;
    }
    for _ in 0..1 + rng.next_u64() % 3 {
        let reference = pick(rng, &["nginx:1.27", "docker.io/library/redis:7"]).to_string();
        ops.at(between(rng, 2_000, 35_000), ClientOp::External(ExternalOp::RemoveImage { reference }));
    }
}

/// Everything so far, at random: the default scenario.
pub fn mixed(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    if chance(rng, 0.7) {
        session_ops(rng, &mut ops, "s");
    }
    if chance(rng, 0.6) {
        persistent_ops(rng, &mut ops, "p");
    }
    if chance(rng, 0.5) {
        adopt_ops(rng, &mut ops, "e");
    }
    crate::pull_storm::foreign_lease(rng, &mut ops, &["nginx:1.27", "docker.io/library/redis:7"]);
    pinned_image_removals(rng, &mut ops);
    let mut w = workload(ops);
    if chance(rng, 0.5) {
        // The physical layer alongside, in its own namespaces.
        let physical = crate::physical::generate(rng);
        w.ops.extend(physical.ops);
        w.ops.sort_by_key(|o| o.at);
    }
    // Drawn last, so the rest of a seed's workload is what it was before logs existed.
    if chance(rng, 0.5) {
        let count = 1 + rng.next_u64() % 3;
        crate::logs::add_readers(rng, &mut w, count);
    }
    if chance(rng, 0.25) {
        // Containers that print, and their readers, in namespaces of their own.
        w.ops.extend(crate::logs::generate(rng).ops);
        w.ops.sort_by_key(|o| o.at);
    }
    if chance(rng, 0.3) {
        // Networks and volumes, and containers using them, in a namespace of their own.
        crate::resources::add_resources(rng, &mut w);
    }
    w
}
