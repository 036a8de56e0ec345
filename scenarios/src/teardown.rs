//! `namespace-teardown`: namespaces full of images and containers deleted while pulls and
//! creates are in flight, creates racing the delete, and namespaces created again under the same
//! name.

use crate::draw::{Ops, between, chance, pick};
use drydock_engine::api::PullPolicy;
use drydock_sim::workload::{ClientOp, ContainerOp, Workload};
use drydock_sim::{Latency, ProcessKnobs, WatchKnobs, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

pub fn world() -> WorldConfig {
    WorldConfig {
        processes: ProcessKnobs { count: 2, ..ProcessKnobs::default() },
        watch: WatchKnobs::per_kind(vec![Latency::millis(0, 30), Latency::millis(0, 150)]),
        ..WorldConfig::default()
    }
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    for i in 0..2 + rng.next_u64() % 2 {
        let ns = format!("ns-{i}");
        let engine = Some((i % 2) as usize);
        let born = between(rng, 0, 1_000);
        ops.at(born, ClientOp::CreateNamespace { name: ns.clone(), engine, workload: None });
        let burst = born + between(rng, 100, 2_000);
        let images = 1 + rng.next_u64() % 3;
        for k in 0..images {
            let image = ClientOp::CreateImage {
                namespace: ns.clone(),
                name: format!("img-{k}"),
                image: pick(rng, &["nginx:1.27", "redis:7", "busybox"]).to_string(),
                pull_policy: *pick(rng, &[PullPolicy::Missing, PullPolicy::Always]),
                pull_retry_limit: 1,
            };
            ops.at(burst + between(rng, 0, 300), image);
        }
        for j in 0..2 + rng.next_u64() % 5 {
            let container = if chance(rng, 0.5) {
                ContainerOp {
                    namespace: ns.clone(),
                    name: format!("c-{j}"),
                    image_ref: Some(format!("img-{}", rng.next_u64() % images)),
                    ..ContainerOp::default()
                }
            } else {
                ContainerOp {
                    namespace: ns.clone(),
                    name: format!("c-{j}"),
                    image: Some("busybox:latest".into()),
                    ..ContainerOp::default()
                }
            };
            ops.at(burst + between(rng, 0, 1_500), ClientOp::CreateContainer(container));
        }
        // The delete lands while pulls and creates are still in flight.
        let doomed = burst + between(rng, 200, 4_000);
        ops.at(doomed, ClientOp::DeleteNamespace { name: ns.clone() });
        // Creates that race the delete (rejected once it is terminating).
        for j in 0..rng.next_u64() % 3 {
            let late = ContainerOp {
                namespace: ns.clone(),
                name: format!("late-{j}"),
                image: Some("busybox:latest".into()),
                ..ContainerOp::default()
            };
            ops.at(doomed + between(rng, 0, 300), ClientOp::CreateContainer(late));
        }
        if chance(rng, 0.5) {
            let again = doomed + between(rng, 1_000, 15_000);
            ops.at(again, ClientOp::CreateNamespace { name: ns.clone(), engine, workload: None });
            let c = ContainerOp {
                namespace: ns.clone(),
                name: "c-0".into(),
                image: Some("busybox:latest".into()),
                ..ContainerOp::default()
            };
            ops.at(again + between(rng, 0, 2_000), ClientOp::CreateContainer(c));
        }
    }
    Workload {
        images: vec!["busybox:latest".into()],
        registry: vec!["nginx:1.27".into(), "redis:7".into(), "busybox:latest".into()],
        ops: ops.finish(),
    }
}
