//! `rdd-namespaces` and `rdd-namespaces-buggy`: the example controller of
//! `examples::rdd_namespaces` beside the built-in ones, with namespaces `rdd-mocks` and
//! `rancher-desktop` created, deleted and re-created.

use crate::Scenario;
use crate::draw::{Ops, between, chance};
use crate::examples::rdd_namespaces::{OWNED, OWNER, RddNamespaces};
use drydock_engine::Components;
use drydock_engine::store::AdmissionConfig;
use drydock_sim::workload::{ClientOp, Workload};
use rand_chacha::ChaCha8Rng;

/// The scenario of the example controller, built as a user would build it.
pub fn scenario(buggy: bool) -> Scenario {
    let builder = if buggy {
        Scenario::builder("rdd-namespaces-buggy")
            .description("example user controller with RDD PR #188's bug (ownerReference from whichever namespace triggered): expected to FAIL")
            .expect_failures()
    } else {
        Scenario::builder("rdd-namespaces")
            .description("the same example controller, fixed: one owner, reconciled from one namespace")
    };
    builder
        .components(Components::new().controller(move || RddNamespaces { buggy }))
        .workload(generate)
        // The store's self-reference check is off: the point is that the simulator finds the bug.
        .configure(|world| world.store.admission = AdmissionConfig { reject_self_owner: false })
        .build()
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
