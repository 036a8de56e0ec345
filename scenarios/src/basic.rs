//! The `basic` workload: a few namespaces, a handful of physical containers in them (some owned by
//! others), stops, deletes that race creates, and namespace deletes with the odd re-create.

use crate::draw::{between, chance};
use drydock_engine::MonoTime;
use drydock_sim::workload::{ClientOp, ContainerOp, TimedOp, Workload};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::time::Duration;

const IMAGES: [&str; 2] = ["busybox:latest", "nginx:1.27"];
/// Referenced now and then; never present, so its containers fail.
const MISSING_IMAGE: &str = "ghost:1";

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Vec::new();
    let mut at = |t: Duration, op: ClientOp| ops.push(TimedOp { at: MonoTime::from_duration(t), op });
    let namespaces: Vec<(String, Duration)> =
        (0..1 + rng.next_u64() % 3).map(|i| (format!("ns-{i}"), between(rng, 0, 2_000))).collect();
    for (name, t) in &namespaces {
        at(*t, ClientOp::CreateNamespace { name: name.clone(), engine: None, workload: None });
    }
    let mut containers: Vec<(String, String)> = Vec::new();
    for j in 0..2 + rng.next_u64() % 9 {
        let (namespace, ns_t) = namespaces[(rng.next_u64() % namespaces.len() as u64) as usize].clone();
        let name = format!("c-{j}");
        // Mostly after the namespace exists; sometimes just before (rejected) or racing it.
        let created = ns_t.saturating_sub(Duration::from_millis(50)) + between(rng, 0, 30_000);
        let image = if chance(rng, 0.05) { MISSING_IMAGE } else { IMAGES[(rng.next_u64() % 2) as usize] };
        let siblings: Vec<&String> = containers.iter().filter(|(ns, _)| *ns == namespace).map(|(_, n)| n).collect();
        let owner = (!siblings.is_empty() && chance(rng, 0.25))
            .then(|| siblings[(rng.next_u64() % siblings.len() as u64) as usize].clone());
        at(
            created,
            ClientOp::CreateContainer(ContainerOp {
                namespace: namespace.clone(),
                name: name.clone(),
                image: Some(image.into()),
                owner,
                ..ContainerOp::default()
            }),
        );
        if chance(rng, 0.4) {
            at(
                created + between(rng, 1, 20_000),
                ClientOp::StopContainer { namespace: namespace.clone(), name: name.clone() },
            );
        }
        if chance(rng, 0.4) {
            let delay = if chance(rng, 0.3) { between(rng, 0, 100) } else { between(rng, 1_000, 30_000) };
            at(
                created + delay,
                ClientOp::DeleteContainer {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    propagation: Default::default(),
                },
            );
        }
        containers.push((namespace, name));
    }
    for (name, _) in &namespaces {
        if chance(rng, 0.3) {
            let deleted = between(rng, 10_000, 40_000);
            at(deleted, ClientOp::DeleteNamespace { name: name.clone() });
            if chance(rng, 0.5) {
                at(
                    deleted + between(rng, 500, 10_000),
                    ClientOp::CreateNamespace { name: name.clone(), engine: None, workload: None },
                );
            }
        }
    }
    ops.sort_by_key(|o| o.at);
    Workload { images: IMAGES.iter().map(|s| s.to_string()).collect(), registry: Vec::new(), ops }
}
