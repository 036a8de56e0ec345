//! `scale`: a world of `size` containers (10 by default; `--size N`), for measuring how the cost of
//! an event grows with the size of the world. Namespaces of up to 100 containers each, every one
//! with a shared `ContainerImage` and a network; physical containers (mostly) and session logical
//! containers (some from the shared image), created in the first 20 simulated seconds; then churn
//! in proportion to the size: stops, deletes, re-creates under the same names.
//!
//! The faults are the swarm's, less those whose cost is a list of the whole world (an engine
//! crash or a broken watch relists every object, a daemon restart stops every container): drawn
//! per request, they would make a bigger world pay more per event by construction. Those kinds are
//! exercised by every other scenario.

use crate::draw::{Ops, between, chance, pick};
use crate::shapes::Behaviour;
use drydock_engine::api::container::NetworkAttachment;
use drydock_engine::api::image::PullPolicy;
use drydock_engine::api::logical::{LogicalContainerSpec, LogicalMode};
use drydock_engine::api::{ContainerNetwork, Resource};
use drydock_faults::FaultKind;
use drydock_sim::workload::{ClientOp, ContainerOp, Propagation, Target, Workload};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde_json::json;

/// The world size a `scale` run has unless told otherwise.
pub const DEFAULT_SIZE: usize = 10;

/// Containers per namespace, at most.
const PER_NAMESPACE: usize = 100;

/// The fault kinds `scale` leaves out (see the module doc).
pub const WORLD_SIZED_FAULTS: [FaultKind; 4] =
    [FaultKind::EngineCrash, FaultKind::CrashBetweenWrites, FaultKind::WatchGone, FaultKind::RuntimeRestart];

/// The workload of a world of `size` containers.
pub fn generate(size: usize, rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let size = size.max(1);
    let namespaces: Vec<String> = (0..size.div_ceil(PER_NAMESPACE)).map(|i| format!("scale-{i}")).collect();
    for (i, ns) in namespaces.iter().enumerate() {
        let t = between(rng, 0, 500);
        ops.at(t, ClientOp::CreateNamespace { name: ns.clone(), engine: Some(i % 2), workload: None });
        let image = ClientOp::CreateImage {
            namespace: ns.clone(),
            name: "app".into(),
            image: "busybox:latest".into(),
            pull_policy: PullPolicy::Missing,
            pull_retry_limit: 2,
        };
        ops.at(t + between(rng, 0, 500), image);
        let target =
            Target { kind: ContainerNetwork::KIND.to_string(), namespace: Some(ns.clone()), name: "net".into() };
        let network = ClientOp::Create { target, spec: json!({}), labels: Default::default(), owner: None };
        ops.at(t + between(rng, 0, 500), network);
    }
    let mut made: Vec<(String, String, bool)> = Vec::with_capacity(size);
    for j in 0..size {
        let ns = namespaces[j / PER_NAMESPACE].clone();
        let logical = chance(rng, 0.3);
        let name = format!("c-{j}");
        let created = between(rng, 1_000, 20_000);
        ops.at(created, create(rng, &ns, &name, logical));
        made.push((ns, name, logical));
    }
    // Churn, in proportion to the size: a stop, or a delete and sometimes a re-create.
    for _ in 0..size.div_ceil(4) {
        let (ns, name, logical) = pick(rng, &made).clone();
        let at = between(rng, 25_000, 60_000);
        if chance(rng, 0.3) {
            let stop = if logical {
                ClientOp::StopLogical { namespace: ns.clone(), name: name.clone() }
            } else {
                ClientOp::StopContainer { namespace: ns.clone(), name: name.clone() }
            };
            ops.at(at, stop);
            continue;
        }
        let propagation = Propagation::Background;
        let delete = if logical {
            ClientOp::DeleteLogical { namespace: ns.clone(), name: name.clone(), propagation }
        } else {
            ClientOp::DeleteContainer { namespace: ns.clone(), name: name.clone(), propagation }
        };
        ops.at(at, delete);
        if chance(rng, 0.5) {
            // Refused while the old one still cleans up, so sometimes too early.
            ops.at(at + between(rng, 500, 10_000), create(rng, &ns, &name, logical));
        }
    }
    // In the registry too: an image removed behind drydock's back can be pulled again.
    Workload { images: vec!["busybox:latest".into()], registry: vec!["busybox:latest".into()], ops: ops.finish() }
}

fn create(rng: &mut ChaCha8Rng, ns: &str, name: &str, logical: bool) -> ClientOp {
    let behaviour = if chance(rng, 0.8) { Behaviour::TrapsTerm } else { Behaviour::Default };
    let networks = if chance(rng, 0.3) {
        vec![NetworkAttachment { name: "net".into(), aliases: vec![name.to_string()] }]
    } else {
        Vec::new()
    };
    if logical {
        let mut spec = LogicalContainerSpec {
            mode: LogicalMode::Session,
            command: behaviour.command(),
            networks,
            ..Default::default()
        };
        if chance(rng, 0.5) {
            spec.image_ref = Some("app".into());
        } else {
            spec.image = Some("busybox:latest".into());
        }
        return ClientOp::CreateLogical { namespace: ns.to_string(), name: name.to_string(), spec: Box::new(spec) };
    }
    let container = ContainerOp {
        namespace: ns.to_string(),
        name: name.to_string(),
        image: Some("busybox:latest".into()),
        command: behaviour.command(),
        networks,
        env: [("INDEX".to_string(), (rng.next_u64() % 1000).to_string())].into(),
        ..ContainerOp::default()
    };
    ClientOp::CreateContainer(container)
}
