//! An example of drydock as a framework, written as a user outside drydock would write it.
//!
//! `ContainerSet` is a kind of its own (`example.dev/v1`): `{image, replicas}`. Its controller
//! keeps `replicas` physical containers, each owned by the set (so the garbage collector removes
//! them with it), and records how many it has in `status.containers`.
//!
//! The [`Variant::Buggy`] controller names each new container with a counter, the way a
//! `generateName` would: when a create's reply is lost (the store applied it) or its watch event
//! is late, the next reconcile does not see the container and creates another. The
//! [`Variant::Fixed`] one names them `<set>-0`, `<set>-1`, ...: the store's name uniqueness makes
//! a second create of the same replica impossible, whatever the cache shows.
//!
//! The invariant [`NeverOverReplicated`] catches the buggy one from a seed; nothing in drydock
//! knows about this kind or this bug.

use drydock_engine::api::{
    Namespace, Object, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, Resource, Uid,
};
use drydock_engine::controller::{Action, Context, Controller, ReconcileError, ReconcileResult, Watch};
use drydock_engine::store::{DeleteOptions, FieldError, KindInfo, StoreRequest};
use drydock_engine::toolkit::write_status;
use drydock_scenarios::draw::{Ops, between, chance};
use drydock_scenarios::sim::checker::{Happening, HappeningKind, Invariant, View};
use drydock_scenarios::sim::workload::{ClientOp, Workload};
use drydock_scenarios::{ChaCha8Rng, Components, RngCore, Scenario};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The kind: a set of identical containers.
pub struct ContainerSet;

/// A set of identical containers. Deriving `JsonSchema` gives the kind its OpenAPI schema: the
/// daemon serves it, `kubectl explain containersets.spec.replicas` prints these doc comments, and
/// fields it does not list are unknown (refused under kubectl's `fieldValidation=Strict`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerSetSpec {
    /// The image every container of the set runs.
    pub image: String,
    /// How many containers the set keeps (at most 10).
    pub replicas: u32,
}

/// What the set's controller counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSetStatus {
    /// Live containers the set owns, as its controller last counted them.
    #[serde(default)]
    pub containers: u32,
    /// How many of them run.
    #[serde(default)]
    pub ready: u32,
}

impl Resource for ContainerSet {
    const KIND: &'static str = "ContainerSet";
    const NAMESPACED: bool = true;
    type Spec = ContainerSetSpec;
    type Status = ContainerSetStatus;
}

/// At most this many replicas: admission refuses more, with the field's path.
pub const MAX_REPLICAS: u32 = 10;

/// The kind's registration: validated on admission, served by the daemon as
/// `containersets.example.dev`.
pub fn kind() -> KindInfo {
    KindInfo::typed::<ContainerSet>(|spec| {
        let mut errors = Vec::new();
        if spec.image.is_empty() {
            errors.push(FieldError::new("spec.image", "must name an image"));
        }
        if spec.replicas > MAX_REPLICAS {
            errors.push(FieldError::new("spec.replicas", format!("at most {MAX_REPLICAS}")));
        }
        errors
    })
    .with_group_version("example.dev/v1")
    .with_description("A set of identical containers, each owned by the set.")
    // `up --wait` waits until every replica runs.
    .with_settled::<ContainerSet>(|spec, status| status.ready == spec.replicas)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Names new containers with a counter: creates twice when it cannot see its first create.
    Buggy,
    /// Names them by replica index: a second create of one replica is refused by the store.
    Fixed,
}

/// The controller of [`ContainerSet`]s.
pub struct ContainerSetController {
    variant: Variant,
    /// The buggy variant's name counter.
    next: u64,
}

impl ContainerSetController {
    pub fn new(variant: Variant) -> Self {
        ContainerSetController { variant, next: 0 }
    }
}

/// The set `child`'s controller reference points to, if it is a set.
fn controlling_set(child: &Object) -> Option<&Uid> {
    let owner = child.metadata.owner_references.iter().find(|r| r.controller)?;
    (owner.kind == ContainerSet::KIND).then_some(&owner.uid)
}

fn invalid(e: impl ToString) -> ReconcileError {
    ReconcileError(e.to_string())
}

impl Controller for ContainerSetController {
    fn name(&self) -> &str {
        match self.variant {
            Variant::Buggy => "containerset-buggy",
            Variant::Fixed => "containerset",
        }
    }

    fn watches(&self) -> Vec<Watch> {
        vec![Watch::own(ContainerSet::KIND), Watch::owners(PhysicalContainer::KIND, ContainerSet::KIND, true)]
    }

    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        // Deleted: the garbage collector removes the containers it owns.
        let Some(set) = ctx.get(key).cloned() else { return Ok(Action::done()) };
        if set.metadata.is_deleting() {
            return Ok(Action::done());
        }
        let spec = set.spec::<ContainerSet>().map_err(invalid)?;
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        // A namespace going away refuses creates: retrying them would only burn writes (the
        // simulator's built-in efficiency check found this, seed 9243 of 10,000). Its cleanup
        // deletes the set and its containers.
        let active =
            ctx.get(&ObjectKey::cluster(Namespace::KIND, &namespace)).is_some_and(|ns| !ns.metadata.is_deleting());
        if !active {
            return Ok(Action::done());
        }
        let in_namespace: Vec<Arc<Object>> =
            ctx.cache().list(PhysicalContainer::KIND, Some(&namespace)).cloned().collect();
        let mut mine: Vec<&Arc<Object>> = in_namespace
            .iter()
            .filter(|c| controlling_set(c) == Some(&set.metadata.uid) && !c.metadata.is_deleting())
            .collect();
        mine.sort_by_key(|c| replica_index(&set, c));
        let mut action = Action::done();
        match self.variant {
            Variant::Fixed => {
                for index in 0..spec.replicas {
                    let name = replica_name(&set, u64::from(index));
                    match in_namespace.iter().find(|c| c.metadata.name == name) {
                        None => create(ctx, &set, &spec, &name),
                        // A container of an earlier set of this name, on its way out: wait for it.
                        Some(other) if controlling_set(other) != Some(&set.metadata.uid) => {
                            action = Action::requeue(Duration::from_secs(1));
                        }
                        Some(_) => {}
                    }
                }
            }
            Variant::Buggy => {
                for _ in mine.len()..spec.replicas as usize {
                    self.next += 1;
                    create(ctx, &set, &spec, &replica_name(&set, self.next));
                }
            }
        }
        // Scale down: the highest replicas go.
        for extra in mine.iter().skip(spec.replicas as usize) {
            ctx.store(StoreRequest::Delete { key: extra.key(), options: DeleteOptions::default() });
        }
        let status = set.status::<ContainerSet>().unwrap_or_default();
        let kept = &mine[..mine.len().min(spec.replicas as usize)];
        let running = |c: &&&Arc<Object>| {
            c.status::<PhysicalContainer>().is_ok_and(|s| s.phase == drydock_engine::api::ContainerPhase::Running)
        };
        let next =
            ContainerSetStatus { containers: kept.len() as u32, ready: kept.iter().filter(running).count() as u32 };
        write_status::<ContainerSet>(ctx, &set, &status, next);
        Ok(action)
    }
}

fn replica_name(set: &Object, index: u64) -> String {
    format!("{}-{index}", set.metadata.name)
}

/// The replica index in a container's name (`web-2` → 2), for ordering.
fn replica_index(set: &Object, child: &Object) -> u64 {
    let suffix = child.metadata.name.strip_prefix(&format!("{}-", set.metadata.name));
    suffix.and_then(|s| s.parse().ok()).unwrap_or(u64::MAX)
}

fn create(ctx: &mut Context<'_>, set: &Object, spec: &ContainerSetSpec, name: &str) {
    let mut meta = ObjectMeta::named(set.metadata.namespace.as_deref(), name);
    let mut owner = set.owner_reference(true);
    owner.block_owner_deletion = true;
    meta.owner_references.push(owner);
    let container = PhysicalContainerSpec {
        image: Some(spec.image.clone()),
        command: vec!["sleep".into(), "3600".into()],
        ..Default::default()
    };
    ctx.store(StoreRequest::Create { object: Object::from_spec::<PhysicalContainer>(meta, &container) });
}

/// The invariant: a set never has more live containers than the most replicas a client ever
/// asked of it. It observes clients' writes (the history the state alone does not keep) and
/// checks the store after every event.
#[derive(Default)]
pub struct NeverOverReplicated {
    /// The most replicas a client set, per set uid.
    most: BTreeMap<Uid, u32>,
}

impl Invariant for NeverOverReplicated {
    fn name(&self) -> &str {
        "containerset-never-over-replicated"
    }

    fn description(&self) -> &str {
        "a ContainerSet never owns more live containers than the most replicas a client asked of it"
    }

    fn observes(&self) -> &'static [HappeningKind] {
        &[HappeningKind::ClientWrote]
    }

    fn observe(&mut self, _view: &View<'_>, happening: &Happening<'_>) {
        if let Happening::ClientWrote { object } = happening
            && object.kind == ContainerSet::KIND
            && let Ok(spec) = object.spec::<ContainerSet>()
        {
            let most = self.most.entry(object.metadata.uid.clone()).or_default();
            *most = (*most).max(spec.replicas);
        }
    }

    fn check(&self, view: &View<'_>) -> Result<(), String> {
        let mut owned: BTreeMap<Uid, Vec<String>> = BTreeMap::new();
        for child in view.store.list(Some(PhysicalContainer::KIND), None) {
            if let Some(set) = controlling_set(&child)
                && !child.metadata.is_deleting()
            {
                owned.entry(set.clone()).or_default().push(child.key().to_string());
            }
        }
        for (uid, children) in owned {
            let most = self.most.get(&uid).copied().unwrap_or(0);
            if children.len() > most as usize {
                return Err(format!(
                    "ContainerSet uid {} owns {} live containers ({}), but no client asked for more than {most}",
                    uid.0,
                    children.len(),
                    children.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Once faults have healed, every set owns exactly `replicas` live containers and says so.
pub fn scaled(view: &View<'_>) -> Result<(), String> {
    for set in view.store.list(Some(ContainerSet::KIND), None) {
        let spec = set.spec::<ContainerSet>().map_err(|e| e.to_string())?;
        let status = set.status::<ContainerSet>().map_err(|e| e.to_string())?;
        let live = view
            .store
            .list(Some(PhysicalContainer::KIND), set.metadata.namespace.as_deref())
            .into_iter()
            .filter(|c| controlling_set(c) == Some(&set.metadata.uid) && !c.metadata.is_deleting())
            .count();
        if live != spec.replicas as usize || status.containers != spec.replicas {
            return Err(format!(
                "{} wants {} replicas, owns {live}, status says {}",
                set.key(),
                spec.replicas,
                status.containers
            ));
        }
    }
    Ok(())
}

const NAMESPACE: &str = "shop";
const IMAGE: &str = "busybox:latest";

/// Clients create sets, scale them up and down, delete and re-create them; now and then the
/// namespace goes.
pub fn workload(rng: &mut ChaCha8Rng) -> Workload {
    let mut ops = Ops::default();
    ops.at(Duration::ZERO, ClientOp::CreateNamespace { name: NAMESPACE.into(), engine: None, workload: None });
    let sets = 1 + rng.next_u64() % 3;
    for name in ["web", "api", "db"].iter().take(sets as usize) {
        let created = between(rng, 0, 5_000);
        let replicas = 1 + (rng.next_u64() % 3) as u32;
        let spec = ContainerSetSpec { image: IMAGE.into(), replicas };
        ops.at(created, ClientOp::create::<ContainerSet>(NAMESPACE, name, &spec));
        let mut later = created;
        if chance(rng, 0.6) {
            later += between(rng, 0, 15_000);
            let scaled = 1 + (rng.next_u64() % 4) as u32;
            ops.at(later, ClientOp::patch::<ContainerSet>(NAMESPACE, name, serde_json::json!({"replicas": scaled})));
        }
        if chance(rng, 0.3) {
            later += between(rng, 0, 15_000);
            ops.at(later, ClientOp::delete::<ContainerSet>(NAMESPACE, name));
            if chance(rng, 0.5) {
                ops.at(later + between(rng, 0, 5_000), ClientOp::create::<ContainerSet>(NAMESPACE, name, &spec));
            }
        }
    }
    if chance(rng, 0.15) {
        ops.at(between(rng, 10_000, 40_000), ClientOp::DeleteNamespace { name: NAMESPACE.into() });
    }
    Workload { images: vec![IMAGE.into()], registry: Vec::new(), ops: ops.finish() }
}

/// The kind and its controller, registered once: the binary runs them on Docker
/// (`containerset up`, `containerset daemon`) and the scenarios run them under simulation.
pub fn components(variant: Variant) -> Components {
    Components::new().kind(kind()).controller(move || ContainerSetController::new(variant))
}

/// The scenario: the kind and its controller, its invariant, its convergence condition and its
/// workload, beside everything built in.
pub fn scenario(variant: Variant) -> Scenario {
    let name = match variant {
        Variant::Buggy => "containerset-buggy",
        Variant::Fixed => "containerset",
    };
    Scenario::builder(name)
        .description("ContainerSets created, scaled, deleted and re-created, under swarm faults")
        .components(components(variant))
        .invariant(NeverOverReplicated::default)
        .converges_when("containersets-scaled", scaled)
        .workload(workload)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_has_its_schema_from_its_types() {
        let kind = kind();
        let schema = kind.schema().map(|s| s.spec.clone()).unwrap_or_default();
        let replicas = &schema["properties"]["replicas"];
        assert_eq!(replicas["description"], "How many containers the set keeps (at most 10).", "{schema}");
        assert_eq!(replicas["type"], "integer");
    }
}
