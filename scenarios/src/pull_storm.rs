//! `pull-storm`: many ContainerImages with equivalent references across two engine processes,
//! mixed pull policies and retry limits, tags moving in the registry, images removed behind the
//! engine's back, and deletes during pulls.

use crate::draw::{Ops, between, chance, pick, spellings};
use drydock_engine::api::PullPolicy;
use drydock_sim::workload::{ClientOp, ContainerOp, ExternalOp, Workload};
use drydock_sim::{Latency, ProcessKnobs, WatchKnobs, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

pub fn world() -> WorldConfig {
    WorldConfig {
        processes: ProcessKnobs { count: 2, ..ProcessKnobs::default() },
        watch: WatchKnobs::per_kind(vec![Latency::millis(0, 20), Latency::millis(0, 250)]),
        ..WorldConfig::default()
    }
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let namespaces: Vec<String> = (0..2 + rng.next_u64() % 3).map(|i| format!("ns-{i}")).collect();
    for (i, ns) in namespaces.iter().enumerate() {
        ops.at(
            between(rng, 0, 1_000),
            ClientOp::CreateNamespace { name: ns.clone(), engine: Some(i % 2), workload: None },
        );
    }
    let mut references: Vec<String> = Vec::new();
    for (repository, tag) in [("busybox", "latest"), ("nginx", "1.27"), ("redis", "7")] {
        references.extend(spellings(repository, tag));
    }
    references.push("ghost:9".into()); // not in the registry: pulls fail
    references.push("alpine:3.20".into()); // imported: present without a pull
    let mut images = Vec::new();
    for j in 0..6 + rng.next_u64() % 11 {
        let namespace = pick(rng, &namespaces).clone();
        let name = format!("img-{j}");
        let image = pick(rng, &references).clone();
        let pull_policy =
            *pick(rng, &[PullPolicy::Missing, PullPolicy::Missing, PullPolicy::Always, PullPolicy::Never]);
        let created = between(rng, 1_500, 20_000);
        let pull_retry_limit = (rng.next_u64() % 4) as u32;
        ops.at(
            created,
            ClientOp::CreateImage {
                namespace: namespace.clone(),
                name: name.clone(),
                image,
                pull_policy,
                pull_retry_limit,
            },
        );
        if chance(rng, 0.2) {
            // Often while its pull is in flight: the pull is cancelled.
            ops.at(
                created + between(rng, 0, 3_000),
                ClientOp::DeleteImage { namespace: namespace.clone(), name: name.clone() },
            );
        }
        images.push((namespace, name, created));
    }
    for (k, (namespace, image, created)) in images.iter().enumerate() {
        if chance(rng, 0.4) {
            let container = ContainerOp {
                namespace: namespace.clone(),
                name: format!("c-{k}"),
                image_ref: Some(image.clone()),
                ..ContainerOp::default()
            };
            ops.at(*created + between(rng, 0, 2_000), ClientOp::CreateContainer(container));
        }
    }
    if chance(rng, 0.5) {
        ops.at(
            between(rng, 2_000, 20_000),
            ClientOp::External(ExternalOp::Push { reference: "busybox:latest".into() }),
        );
    }
    if chance(rng, 0.4) {
        ops.at(
            between(rng, 25_000, 35_000),
            ClientOp::External(ExternalOp::RemoveImage { reference: "nginx:1.27".into() }),
        );
    }
    foreign_lease(rng, &mut ops, &["nginx:1.27", "docker.io/library/redis:7"]);
    Workload {
        images: vec!["alpine:3.20".into()],
        registry: vec!["busybox:latest".into(), "nginx:1.27".into(), "redis:7".into()],
        ops: ops.finish(),
    }
}

/// Sometimes, another process takes the pull lease of one of `references` early on and dies.
pub(crate) fn foreign_lease(rng: &mut ChaCha8Rng, ops: &mut Ops, references: &[&str]) {
    if chance(rng, 0.4) {
        let reference = pick(rng, references).to_string();
        let seconds = 5 + rng.next_u64() % 15;
        ops.at(between(rng, 0, 10_000), ClientOp::External(ExternalOp::HoldLease { reference, seconds }));
    }
}
