//! `physical`: the full physical layer, mixed: containers from images and from ContainerImage
//! references, strangers holding names (with and without replaceExisting), retained containers,
//! caller labels that try to set system labels, containers removed behind the engine's back,
//! owners and dependents (some blocking their owner's deletion), stops, deletes racing creates
//! (background, foreground or orphaning), names reused while the old object is still going,
//! containers of different namespaces wanting one runtime name, namespace deletes, and containers
//! an earlier life of an engine left for objects the store lost (for the harvester).

use crate::draw::{Ops, between, chance, pick};
use crate::shapes::{self, Behaviour, Flaw};
use drydock_engine::api::PullPolicy;
use drydock_sim::workload::{ClientOp, ContainerOp, ExternalOp, Propagation, Workload};
use drydock_sim::{Latency, ProcessKnobs, WatchKnobs, WorldConfig};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::collections::BTreeMap;

pub fn world() -> WorldConfig {
    WorldConfig {
        processes: ProcessKnobs { count: 2, ..ProcessKnobs::default() },
        watch: WatchKnobs::per_kind(vec![Latency::millis(0, 20), Latency::millis(0, 100)]),
        ..WorldConfig::default()
    }
}

/// How a client deletes: mostly in the background, else in the foreground or orphaning.
pub fn propagation(rng: &mut ChaCha8Rng) -> Propagation {
    match rng.next_u64() % 4 {
        0 => Propagation::Foreground,
        1 => Propagation::Orphan,
        _ => Propagation::Background,
    }
}

/// An owner and dependents made just after it (most blocking its deletion), then the owner
/// deleted in the foreground or orphaning while they are surely there: the garbage collector's
/// owner side, which deletes drawn at random reach only now and then.
fn owner_family(rng: &mut ChaCha8Rng, ops: &mut Ops, namespaces: &[(String, std::time::Duration)]) {
    let (namespace, ns_t) = pick(rng, namespaces).clone();
    let made = ns_t + between(rng, 500, 5_000);
    let member = |name: &str, owner: Option<&str>, block: bool, rng: &mut ChaCha8Rng| ContainerOp {
        namespace: namespace.clone(),
        name: name.to_string(),
        image: Some("busybox:latest".into()),
        owner: owner.map(str::to_string),
        block_owner_deletion: block,
        command: Behaviour::draw(rng).command(),
        ..ContainerOp::default()
    };
    let owner = member("fam-0", None, false, rng);
    ops.at(made, ClientOp::CreateContainer(owner));
    for k in 1..=1 + rng.next_u64() % 3 {
        let block = chance(rng, 0.8);
        let dependent = member(&format!("fam-{k}"), Some("fam-0"), block, rng);
        ops.at(made + between(rng, 0, 1_500), ClientOp::CreateContainer(dependent));
    }
    let propagation = if chance(rng, 0.6) { Propagation::Foreground } else { Propagation::Orphan };
    let delete = ClientOp::DeleteContainer { namespace: namespace.clone(), name: "fam-0".into(), propagation };
    ops.at(made + between(rng, 2_000, 8_000), delete);
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let namespaces: Vec<(String, std::time::Duration)> =
        (0..1 + rng.next_u64() % 3).map(|i| (format!("ns-{i}"), between(rng, 0, 1_500))).collect();
    for (i, (ns, t)) in namespaces.iter().enumerate() {
        ops.at(*t, ClientOp::CreateNamespace { name: ns.clone(), engine: Some(i % 2), workload: None });
        if chance(rng, 0.7) {
            let image = ClientOp::CreateImage {
                namespace: ns.clone(),
                name: "app".into(),
                image: pick(rng, &["nginx:1.27", "docker.io/library/nginx:1.27", "busybox"]).to_string(),
                pull_policy: PullPolicy::Missing,
                pull_retry_limit: 2,
            };
            ops.at(*t + between(rng, 0, 500), image);
        }
    }
    let mut made: Vec<(String, String)> = Vec::new();
    for j in 0..4 + rng.next_u64() % 9 {
        let (namespace, ns_t) = pick(rng, &namespaces).clone();
        let name = format!("c-{j}");
        let runtime_name = format!("{namespace}-{name}");
        let created = ns_t + between(rng, 100, 25_000);
        if chance(rng, 0.25) {
            // A stranger already holds the name drydock will use.
            let stranger = ExternalOp::CreateContainer { name: runtime_name.clone(), image: "busybox:latest".into() };
            ops.at(created.saturating_sub(between(rng, 0, 2_000)), ClientOp::External(stranger));
        }
        let siblings: Vec<&String> = made.iter().filter(|(ns, _)| *ns == namespace).map(|(_, n)| n).collect();
        let owner = (!siblings.is_empty() && chance(rng, 0.3)).then(|| pick(rng, &siblings).to_string());
        let block_owner_deletion = owner.is_some() && chance(rng, 0.6);
        let mut labels = BTreeMap::new();
        if chance(rng, 0.2) {
            labels.insert("drydock.dev/owner-uid".to_string(), "not-yours".to_string());
            labels.insert("drydock.dev/creator".to_string(), "mallory".to_string());
        }
        let (image, image_ref) =
            if chance(rng, 0.3) { (None, Some("app".to_string())) } else { (Some("busybox:latest".to_string()), None) };
        let flaw = Flaw::draw(rng);
        let container_name = match flaw {
            Flaw::Name => Some("x".to_string()),
            // Now and then the runtime name of another container of the namespace: refused.
            _ if !siblings.is_empty() && chance(rng, 0.05) => Some(format!("{namespace}-{}", pick(rng, &siblings))),
            // A runtime name containers of other namespaces want too: one of them gets it.
            _ if chance(rng, 0.06) => Some(format!("shared-{}", rng.next_u64() % 2)),
            _ => None,
        };
        let container = ContainerOp {
            namespace: namespace.clone(),
            name: name.clone(),
            image,
            image_ref,
            owner,
            block_owner_deletion,
            retain: chance(rng, 0.2),
            replace_existing: chance(rng, 0.5),
            labels,
            command: Behaviour::draw(rng).command(),
            ports: shapes::ports(rng),
            mounts: shapes::mounts(rng, flaw == Flaw::Mount),
            env: shapes::env(rng, flaw == Flaw::Env, j).into_iter().map(|e| (e.name, e.value)).collect(),
            container_name,
            networks: Vec::new(),
            files: Vec::new(),
        };
        ops.at(created, ClientOp::CreateContainer(container.clone()));
        if chance(rng, 0.2) {
            let removal = ExternalOp::RemoveContainer { name: runtime_name };
            ops.at(created + between(rng, 2_000, 20_000), ClientOp::External(removal));
        }
        if chance(rng, 0.3) {
            ops.at(
                created + between(rng, 1, 15_000),
                ClientOp::StopContainer { namespace: namespace.clone(), name: name.clone() },
            );
        }
        if chance(rng, 0.4) {
            let delay = if chance(rng, 0.3) { between(rng, 0, 100) } else { between(rng, 1_000, 25_000) };
            let propagation = propagation(rng);
            ops.at(
                created + delay,
                ClientOp::DeleteContainer { namespace: namespace.clone(), name: name.clone(), propagation },
            );
            if chance(rng, 0.4) {
                // The name reused while the old container (its runtime container, its dependents)
                // may still be going: the create is refused while the old object is there, so
                // it is tried again later.
                let again = ContainerOp { command: Behaviour::draw(rng).command(), ..container };
                let first = created + delay + between(rng, 0, 3_000);
                ops.at(first, ClientOp::CreateContainer(again.clone()));
                ops.at(first + between(rng, 2_000, 12_000), ClientOp::CreateContainer(again));
            }
        }
        made.push((namespace, name));
    }
    if chance(rng, 0.5) {
        owner_family(rng, &mut ops, &namespaces);
    }
    let mut kept = Vec::new();
    for (name, t) in &namespaces {
        if chance(rng, 0.25) {
            ops.at(between(rng, 15_000, 40_000), ClientOp::DeleteNamespace { name: name.clone() });
        } else {
            kept.push((name, *t));
        }
    }
    // Containers an earlier life of an engine made for objects the store has lost (restored
    // from an older copy): the harvester removes them, unless retained. Only in namespaces that
    // stay: a namespace delete would find them leaked before any harvest could run.
    for (k, (namespace, t)) in kept.into_iter().enumerate() {
        if chance(rng, 0.4) {
            let leftover = ExternalOp::Leftover {
                namespace: namespace.clone(),
                name: format!("lost-{k}"),
                image: "busybox:latest".into(),
                creator: (rng.next_u64() % 2) as usize,
                retained: chance(rng, 0.3),
            };
            ops.at(t + between(rng, 500, 20_000), ClientOp::External(leftover));
        }
    }
    Workload { images: vec!["busybox:latest".into()], registry: vec!["nginx:1.27".into()], ops: ops.finish() }
}
