//! `rdd-namespaces` and `rdd-namespaces-buggy`: the example controller of
//! `examples::rdd_namespaces` beside the built-in ones, with namespaces `rdd-mocks` and
//! `rancher-desktop` created, deleted and re-created.

use crate::draw::{Ops, between, chance};
use crate::examples::rdd_namespaces::{OWNED, OWNER, RddNamespaces};
use drydock_engine::Controller;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::store::{AdmissionConfig, StoreConfig};
use drydock_sim::WorldConfig;
use drydock_sim::workload::{ClientOp, Workload};
use rand_chacha::ChaCha8Rng;

fn with_example(config: &ControllerConfig, buggy: bool) -> Vec<Box<dyn Controller>> {
    let mut all = controllers::builtin(config);
    all.push(Box::new(RddNamespaces { buggy }));
    all
}

fn buggy_controllers(config: &ControllerConfig) -> Vec<Box<dyn Controller>> {
    with_example(config, true)
}

fn fixed_controllers(config: &ControllerConfig) -> Vec<Box<dyn Controller>> {
    with_example(config, false)
}

fn world(make_controllers: fn(&ControllerConfig) -> Vec<Box<dyn Controller>>) -> WorldConfig {
    WorldConfig {
        make_controllers,
        // The store's self-reference check is off: the point is that the simulator finds the bug.
        store: StoreConfig { admission: AdmissionConfig { reject_self_owner: false }, ..StoreConfig::default() },
        ..WorldConfig::default()
    }
}

pub fn world_buggy() -> WorldConfig {
    world(buggy_controllers)
}

pub fn world_fixed() -> WorldConfig {
    world(fixed_controllers)
}

pub fn generate(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    let create = |name: &str| ClientOp::CreateNamespace { name: name.into(), engine: None, workload: None };
    let (a, b) = (between(rng, 0, 3_000), between(rng, 0, 3_000));
    ops.at(a, create(OWNER));
    ops.at(b, create(OWNED));
    if chance(rng, 0.4) {
        // Delete the owner: the garbage collector must take the owned namespace with it.
        let gone = a.max(b) + between(rng, 5_000, 20_000);
        ops.at(gone, ClientOp::DeleteNamespace { name: OWNER.into() });
        if chance(rng, 0.5) {
            let back = gone + between(rng, 2_000, 10_000);
            ops.at(back, create(OWNER));
            ops.at(back + between(rng, 0, 3_000), create(OWNED));
        }
    }
    Workload { images: Vec::new(), registry: Vec::new(), ops: ops.finish() }
}
