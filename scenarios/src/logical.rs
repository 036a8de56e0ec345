//! Logical-container scenarios: `session`, `persistent-reuse`, `adopt-existing`, and `mixed`.

use crate::draw::{Ops, between, chance, pick};
use crate::shapes::{self, Behaviour, Flaw};
use drydock_engine::api::PullPolicy;
use drydock_engine::api::container::{EnvVar, NetworkAttachment};
use drydock_engine::api::logical::{LogicalContainerSpec, LogicalMode};
use drydock_sim::workload::{ClientOp, ExternalOp, Workload};
use drydock_sim::{Latency, ProcessKnobs, WatchKnobs, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::time::Duration;

pub fn two_processes() -> WorldConfig {
    WorldConfig {
        processes: ProcessKnobs { count: 2, ..ProcessKnobs::default() },
        watch: WatchKnobs { delays: vec![Latency::millis(0, 20), Latency::millis(0, 150)], ..WatchKnobs::default() },
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
            ops.at(created + delay, ClientOp::DeleteLogical { namespace: ns.clone(), name });
        }
    }
    for (ns, _) in &namespaces {
        if chance(rng, 0.25) {
            ops.at(between(rng, 15_000, 35_000), ClientOp::DeleteNamespace { name: ns.clone() });
        }
    }
}

/// The same persistent workload started, torn down (namespace deleted, containers kept) and
/// started again, with edits that do and do not change the lifecycle key.
fn persistent_ops(rng: &mut ChaCha8Rng, ops: &mut Ops, prefix: &str) {
    let ns = format!("{prefix}-app");
    let workload = chance(rng, 0.5).then(|| pick(rng, &["wl-a", ""]).to_string());
    let count = 1 + rng.next_u64() % 4;
    let base: Vec<LogicalContainerSpec> = (0..count)
        .map(|i| LogicalContainerSpec {
            mode: LogicalMode::Persistent,
            image: Some(pick(rng, &["busybox:latest", "nginx:1.27"]).to_string()),
            container_name: Some(format!("{prefix}-db-{i}")),
            env: vec![EnvVar { name: "VERSION".into(), value: "1".into() }],
            ..Default::default()
        })
        .collect();
    let mut t = between(rng, 0, 1_000);
    for run in 0..2 + rng.next_u64() % 2 {
        let engine = Some((run % 2) as usize);
        ops.at(t, ClientOp::CreateNamespace { name: ns.clone(), engine, workload: workload.clone() });
        for (i, spec) in base.iter().enumerate() {
            let mut spec = spec.clone();
            if run > 0 {
                match rng.next_u64() % 4 {
                    0 => spec.env[0].value = format!("{}", run + 1), // key changes: replace
                    1 => spec.networks.push(NetworkAttachment { name: "backend".into(), aliases: vec!["db".into()] }), // key stays
                    _ => {}
                }
            }
            ops.at(
                t + between(rng, 0, 2_000),
                ClientOp::CreateLogical { namespace: ns.clone(), name: format!("db-{i}"), spec: Box::new(spec) },
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
                ClientOp::DeleteLogical { namespace: ns.clone(), name: format!("e-{j}") },
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
    w
}
