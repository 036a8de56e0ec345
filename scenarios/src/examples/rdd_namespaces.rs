//! A user-written controller that reproduces the reconciler of rancher-desktop-daemon PR #188
//! (seed `000_b270073c1237ef90.txt`): it wants namespace `rancher-desktop` owned by `rdd-mocks`.
//!
//! The buggy variant watches namespaces both as its own object and as owned objects, with one
//! shared filter that accepts *both* names, and applies an ownerReference from whichever
//! namespace triggered the reconcile. Reconciling `rancher-desktop` therefore makes it own itself;
//! reconciling `rdd-mocks` flips it back: ownership oscillates with event order. The fixed variant
//! reconciles only `rdd-mocks` and always writes the same owner.
//!
//! Nothing in the simulator knows about this bug: the generic invariants (`no-owner-cycles`,
//! `ownership-stable`) and the oscillation detector find it from a seed.
//!
//! It is written with the engine's toolkit where one fits: it starts no runtime operation and
//! holds no finalizer, so what it uses is [`update_if_changed`], which writes the owner only when
//! it differs (a write of an unchanged object would trigger the next reconcile for nothing).

use drydock_engine::api::{Namespace, ObjectKey, Resource};
use drydock_engine::controller::{Action, Context, Controller, ReconcileResult, Watch};
use drydock_engine::toolkit::update_if_changed;

pub const OWNER: &str = "rdd-mocks";
pub const OWNED: &str = "rancher-desktop";

pub struct RddNamespaces {
    pub buggy: bool,
}

/// The one filter shared by both watches (the bug: it accepts the owned namespace too).
fn shared_filter(name: &str, buggy: bool) -> bool {
    name == OWNER || (buggy && name == OWNED)
}

impl Controller for RddNamespaces {
    fn name(&self) -> &str {
        if self.buggy { "rdd-namespaces-buggy" } else { "rdd-namespaces" }
    }

    fn watches(&self) -> Vec<Watch> {
        let buggy = self.buggy;
        vec![
            // For(&Namespace{}) with the global filter.
            Watch::custom(Namespace::KIND, move |ns, _| {
                if shared_filter(&ns.metadata.name, buggy) { vec![ns.key()] } else { Vec::new() }
            }),
            // Owns(&Namespace{}): an owned namespace's event enqueues its owner, same filter.
            Watch::custom(Namespace::KIND, move |ns, _| {
                ns.metadata
                    .owner_references
                    .iter()
                    .filter(|r| r.kind == Namespace::KIND && shared_filter(&r.name, buggy))
                    .map(|r| ObjectKey::cluster(Namespace::KIND, &r.name))
                    .collect()
            }),
        ]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        if !self.buggy && key.name != OWNER {
            return Ok(Action::done());
        }
        // The buggy version takes the owner from whatever it was asked to reconcile.
        let Some(owner) = ctx.get(key).cloned() else { return Ok(Action::done()) };
        let Some(owned) = ctx.get(&ObjectKey::cluster(Namespace::KIND, OWNED)).cloned() else {
            return Ok(Action::done());
        };
        if owner.metadata.is_deleting() || owned.metadata.is_deleting() {
            return Ok(Action::done());
        }
        // The fixed version adopts only orphans, as Kubernetes controllers do: an owner reference
        // to an earlier `rdd-mocks` (deleted, then created again) is the garbage collector's to
        // act on. (Adding the new owner beside the dangling one raced the collector, which a
        // crash at the wrong moment made visible.)
        if !self.buggy && !owned.metadata.owner_references.is_empty() {
            return Ok(Action::done());
        }
        // Like a forced server-side apply: the owner references become exactly these.
        let wanted = vec![owner.owner_reference(true)];
        update_if_changed(ctx, &owned, |next| next.metadata.owner_references = wanted);
        Ok(Action::done())
    }
}
