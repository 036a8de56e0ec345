//! Unit tests for the checkers: for every invariant a hand-built violating state and a near-miss
//! healthy one, and the cases `desired_equals_actual` must tell apart.

#![allow(clippy::unwrap_used)]

use super::{Invariant, InvariantId, View, builtin, check_all, desired_equals_actual};
use crate::runtime::SimRuntime;
use drydock_engine::WallTime;
use drydock_engine::api::{
    ContainerPhase, Namespace, NamespacePhase, NamespaceSpec, NamespaceStatus, Object, ObjectMeta, PhysicalContainer,
    PhysicalContainerSpec, PhysicalContainerStatus, names,
};
use drydock_engine::runtime::{ContainerInfo, ContainerState};
use drydock_engine::store::{AdmissionConfig, DeleteOptions, Registry, Store, StoreConfig};
use std::collections::BTreeMap;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const UNIQUE_OWNER_UID: &str = "unique-owner-uid";
const NO_OWNER_CYCLES: &str = "no-owner-cycles";
const NO_LEAK: &str = "no-leak-after-namespace-delete";
const FINALIZER_AFTER_CLEANUP: &str = "finalizer-after-runtime-cleanup";

fn invariant(name: &str) -> Box<dyn Invariant> {
    builtin().into_iter().find(|inv| inv.name() == name).unwrap_or_else(|| panic!("no invariant named {name}"))
}

fn store() -> Store {
    Store::in_memory(Registry::builtin(), StoreConfig::default())
}

fn store_allowing_self_owner() -> Store {
    Store::in_memory(
        Registry::builtin(),
        StoreConfig { admission: AdmissionConfig { reject_self_owner: false }, ..Default::default() },
    )
}

/// The stored version of `object` (the latest resource version), which must still exist.
fn latest(store: &Store, object: &Object) -> Arc<Object> {
    store.get(&object.key()).cloned().unwrap_or_else(|| panic!("{} is not in the store", object.key()))
}

fn namespace(store: &mut Store, name: &str) -> Arc<Object> {
    store.create(WallTime(1), Object::from_spec::<Namespace>(ObjectMeta::named(None, name), &NamespaceSpec {})).unwrap()
}

fn active_namespace(store: &mut Store, name: &str) -> Arc<Object> {
    let ns = namespace(store, name);
    let mut next = (*ns).clone();
    next.set_status::<Namespace>(&NamespaceStatus {
        phase: Some(NamespacePhase::Active),
        message: None,
        ..Default::default()
    });
    store.update_status(next).unwrap()
}

fn pc_spec() -> PhysicalContainerSpec {
    PhysicalContainerSpec { image: Some("busybox".into()), ..Default::default() }
}

fn physical(store: &mut Store, ns: &str, name: &str) -> Arc<Object> {
    store
        .create(WallTime(1), Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some(ns), name), &pc_spec()))
        .unwrap()
}

fn physical_owned_by(store: &mut Store, ns: &str, name: &str, owners: &[&Object]) -> Arc<Object> {
    let mut meta = ObjectMeta::named(Some(ns), name);
    meta.owner_references.extend(owners.iter().map(|o| o.owner_reference(false)));
    store.create(WallTime(1), Object::from_spec::<PhysicalContainer>(meta, &pc_spec())).unwrap()
}

/// Add an ownerReference to `owner` on the stored `object`.
fn add_owner(store: &mut Store, object: &Object, owner: &Object) -> Arc<Object> {
    let mut next = (*latest(store, object)).clone();
    next.metadata.owner_references.push(owner.owner_reference(false));
    store.update(next).unwrap()
}

fn set_pc_status(store: &mut Store, pc: &Object, phase: ContainerPhase, runtime_id: Option<&str>) -> Arc<Object> {
    let mut next = (*latest(store, pc)).clone();
    next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
        phase,
        runtime_id: runtime_id.map(str::to_string),
        ..Default::default()
    });
    store.update_status(next).unwrap()
}

fn set_stop(store: &mut Store, pc: &Object) -> Arc<Object> {
    let mut next = (*latest(store, pc)).clone();
    let mut spec = next.spec::<PhysicalContainer>().unwrap();
    spec.stop = true;
    next.spec = std::sync::Arc::new(serde_json::to_value(&spec).unwrap());
    store.update(next).unwrap()
}

/// Delete a namespace and release its finalizer so that it is really gone.
fn remove_namespace(store: &mut Store, ns: &Object) {
    let marked = store.delete(WallTime(2), &ns.key(), &DeleteOptions::default()).unwrap();
    assert!(marked.metadata.is_deleting(), "the namespace finalizer must hold the namespace");
    let mut next = (*latest(store, ns)).clone();
    next.metadata.finalizers.retain(|f| f != names::FINALIZER_NAMESPACE);
    store.update(next).unwrap();
    assert!(store.get(&ns.key()).is_none(), "{} should be gone", ns.key());
}

/// A 64-hex-digit container id made from `n`.
fn container_id(n: u8) -> String {
    format!("{n:02x}").repeat(32)
}

fn container(id: &str, name: &str, labels: BTreeMap<String, String>, state: ContainerState) -> ContainerInfo {
    let exit_code = (state == ContainerState::Exited).then_some(137);
    ContainerInfo {
        ports: Vec::new(),
        id: id.into(),
        name: name.into(),
        image: "busybox".into(),
        labels: labels.into(),
        state,
        exit_code,
        error: None,
    }
}

/// The system labels the physical-container controller puts on the runtime container of `pc`.
fn labels_for(pc: &Object, ns: &Object) -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::LABEL_OWNER_UID.to_string(), pc.metadata.uid.0.clone()),
        (names::LABEL_NAMESPACE.to_string(), ns.metadata.name.to_string()),
        (names::LABEL_NAMESPACE_UID.to_string(), ns.metadata.uid.0.clone()),
        (names::LABEL_CREATOR.to_string(), "engine-0".to_string()),
    ])
}

/// The runtime container the controller would have made for `pc`, running.
fn runtime_container_for(runtime: &mut SimRuntime, n: u8, pc: &Object, ns: &Object) -> String {
    let id = container_id(n);
    let name = format!("{}-{}", ns.metadata.name, pc.metadata.name);
    runtime.insert(container(&id, &name, labels_for(pc, ns), ContainerState::Running));
    id
}

#[track_caller]
fn assert_violates(store: &Store, runtime: &SimRuntime, name: &str) -> String {
    let view = View::of(store, runtime);
    let message = match invariant(name).check(&view) {
        Err(message) => message,
        Ok(()) => panic!("{name} should be violated"),
    };
    match check_all(&view) {
        Some((found, _)) => assert_eq!(found, name, "check_all should name {name}"),
        None => panic!("check_all found no violation, want {name}"),
    }
    message
}

#[track_caller]
fn assert_holds(store: &Store, runtime: &SimRuntime, name: &str) {
    let view = View::of(store, runtime);
    if let Err(message) = invariant(name).check(&view) {
        panic!("{name} should hold, got: {message}");
    }
    if let Some((found, message)) = check_all(&view) {
        panic!("check_all should find nothing, got {found}: {message}");
    }
}

#[test]
fn invariants_are_listed_once_by_name() {
    let got: Vec<&str> = InvariantId::ALL.iter().map(|i| i.name()).collect();
    for name in [UNIQUE_OWNER_UID, NO_OWNER_CYCLES, NO_LEAK, FINALIZER_AFTER_CLEANUP] {
        assert_eq!(got.iter().filter(|n| **n == name).count(), 1, "{name} in {got:?}");
    }
    let unique: std::collections::BTreeSet<&str> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "names are unique: {got:?}");
    assert!(InvariantId::ALL.iter().all(|i| !i.description().is_empty()));
    let built: Vec<String> = builtin().iter().map(|i| i.name().to_string()).collect();
    assert_eq!(built, got, "the table's types answer to the table's names, in order");
}

#[test]
fn empty_state_violates_nothing() {
    let (store, runtime) = (store(), SimRuntime::new(1));
    let view = View::of(&store, &runtime);
    assert_eq!(check_all(&view), None);
    assert_eq!(desired_equals_actual(&view), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// unique-owner-uid
// ---------------------------------------------------------------------------------------------

#[test]
fn unique_owner_uid_detects_two_containers_for_one_owner() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let first = runtime_container_for(&mut runtime, 1, &a, &ns);
    // A second container for the same object, e.g. a retried create that was not verified first.
    let second = container_id(2);
    runtime.insert(container(&second, "ns-a-retry", labels_for(&a, &ns), ContainerState::Created));

    let message = assert_violates(&store, &runtime, UNIQUE_OWNER_UID);
    assert!(message.contains(&a.metadata.uid.0), "{message}");
    assert!(message.contains(&first[..12]) && message.contains(&second[..12]), "{message}");
}

#[test]
fn unique_owner_uid_allows_one_container_per_owner_and_unlabelled_strangers() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let b = physical(&mut store, "ns", "b");
    runtime_container_for(&mut runtime, 1, &a, &ns);
    runtime_container_for(&mut runtime, 2, &b, &ns);
    // Strangers without an owner label, two of them, sharing every other label.
    let stranger = BTreeMap::from([("app".to_string(), "x".to_string())]);
    runtime.insert(container(&container_id(3), "stranger-1", stranger.clone(), ContainerState::Running));
    runtime.insert(container(&container_id(4), "stranger-2", stranger, ContainerState::Exited));

    assert_holds(&store, &runtime, UNIQUE_OWNER_UID);
}

// ---------------------------------------------------------------------------------------------
// no-owner-cycles
// ---------------------------------------------------------------------------------------------

#[test]
fn store_admission_rejects_a_self_owner_by_default() {
    // Why the self-owner test needs a relaxed admission config.
    let mut store = store();
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let mut next = (*a).clone();
    next.metadata.owner_references.push(a.owner_reference(false));
    assert!(store.update(next).is_err());
}

#[test]
fn no_owner_cycles_detects_a_self_reference() {
    let (mut store, runtime) = (store_allowing_self_owner(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    add_owner(&mut store, &a, &a);

    let message = assert_violates(&store, &runtime, NO_OWNER_CYCLES);
    assert!(message.contains("PhysicalContainer/ns/a") && message.contains("itself"), "{message}");
}

#[test]
fn no_owner_cycles_detects_a_two_cycle() {
    let (mut store, runtime) = (store(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let b = physical_owned_by(&mut store, "ns", "b", &[&a]);
    add_owner(&mut store, &a, &b); // a -> b -> a; cycles are not an admission check

    let message = assert_violates(&store, &runtime, NO_OWNER_CYCLES);
    assert!(message.contains("cycle"), "{message}");
}

#[test]
fn no_owner_cycles_detects_a_three_cycle() {
    let (mut store, runtime) = (store(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let b = physical_owned_by(&mut store, "ns", "b", &[&a]);
    let c = physical_owned_by(&mut store, "ns", "c", &[&b]);
    add_owner(&mut store, &a, &c); // a -> c -> b -> a

    assert_violates(&store, &runtime, NO_OWNER_CYCLES);
}

#[test]
fn no_owner_cycles_detects_a_cycle_reached_through_extra_owners() {
    // The cycle b -> c -> b hangs off a's second owner, behind an acyclic first owner.
    let (mut store, runtime) = (store(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let root = physical(&mut store, "ns", "root");
    let b = physical(&mut store, "ns", "b");
    let c = physical_owned_by(&mut store, "ns", "c", &[&b]);
    add_owner(&mut store, &b, &c);
    physical_owned_by(&mut store, "ns", "a", &[&root, &b]);

    assert_violates(&store, &runtime, NO_OWNER_CYCLES);
}

#[test]
fn no_owner_cycles_allows_a_chain() {
    let (mut store, runtime) = (store(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let b = physical_owned_by(&mut store, "ns", "b", &[&a]);
    physical_owned_by(&mut store, "ns", "c", &[&b]); // c -> b -> a

    assert_holds(&store, &runtime, NO_OWNER_CYCLES);
}

#[test]
fn no_owner_cycles_allows_a_diamond_and_dangling_owners() {
    // d -> {b, c} -> a: a shared ancestor reached twice is not a cycle. A reference to an owner
    // that no longer exists is not one either.
    let (mut store, runtime) = (store(), SimRuntime::new(1));
    namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let b = physical_owned_by(&mut store, "ns", "b", &[&a]);
    let c = physical_owned_by(&mut store, "ns", "c", &[&a]);
    physical_owned_by(&mut store, "ns", "d", &[&b, &c]);
    let gone = physical(&mut store, "ns", "gone");
    physical_owned_by(&mut store, "ns", "orphan", &[&gone]);
    store.delete(WallTime(2), &gone.key(), &DeleteOptions::default()).unwrap();

    assert_holds(&store, &runtime, NO_OWNER_CYCLES);
}

// ---------------------------------------------------------------------------------------------
// no-leak-after-namespace-delete
// ---------------------------------------------------------------------------------------------

fn namespace_labels(ns: &Object) -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::LABEL_NAMESPACE.to_string(), ns.metadata.name.to_string()),
        (names::LABEL_NAMESPACE_UID.to_string(), ns.metadata.uid.0.clone()),
    ])
}

#[test]
fn no_leak_detects_a_container_of_a_gone_namespace() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    runtime.insert(container(&container_id(1), "ns-a", namespace_labels(&ns), ContainerState::Running));
    assert_holds(&store, &runtime, NO_LEAK);

    remove_namespace(&mut store, &ns);
    let message = assert_violates(&store, &runtime, NO_LEAK);
    assert!(
        message.contains("namespace ns") && message.contains(&ns.metadata.uid.0) && message.contains("ns-a"),
        "{message}"
    );
}

#[test]
fn no_leak_detects_a_container_of_a_namespace_recreated_under_the_same_name() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let old = namespace(&mut store, "ns");
    runtime.insert(container(&container_id(1), "ns-a", namespace_labels(&old), ContainerState::Exited));
    remove_namespace(&mut store, &old);
    let new = namespace(&mut store, "ns");
    assert_ne!(old.metadata.uid, new.metadata.uid);

    assert_violates(&store, &runtime, NO_LEAK);
}

#[test]
fn no_leak_allows_containers_of_terminating_and_live_namespaces() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let live = namespace(&mut store, "live");
    let terminating = namespace(&mut store, "terminating");
    runtime.insert(container(&container_id(1), "live-a", namespace_labels(&live), ContainerState::Running));
    runtime.insert(container(
        &container_id(2),
        "terminating-a",
        namespace_labels(&terminating),
        ContainerState::Running,
    ));
    // A container without the namespace uid label is none of this invariant's business.
    let name_only = BTreeMap::from([(names::LABEL_NAMESPACE.to_string(), "elsewhere".to_string())]);
    runtime.insert(container(&container_id(3), "stranger", name_only, ContainerState::Running));
    // Marked for deletion, but still held by its finalizer: not gone yet.
    let marked = store.delete(WallTime(2), &terminating.key(), &DeleteOptions::default()).unwrap();
    assert!(marked.metadata.is_deleting());

    assert_holds(&store, &runtime, NO_LEAK);
}

// ---------------------------------------------------------------------------------------------
// finalizer-after-runtime-cleanup
// ---------------------------------------------------------------------------------------------

#[test]
fn finalizer_after_cleanup_detects_a_container_outliving_its_object() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let id = runtime_container_for(&mut runtime, 1, &a, &ns);
    assert_holds(&store, &runtime, FINALIZER_AFTER_CLEANUP);

    // Without the runtime-cleanup finalizer the delete removes the object at once.
    store.delete(WallTime(2), &a.key(), &DeleteOptions::default()).unwrap();
    assert!(store.get(&a.key()).is_none());
    let message = assert_violates(&store, &runtime, FINALIZER_AFTER_CLEANUP);
    assert!(message.contains(&id[..12]) && message.contains(&a.metadata.uid.0), "{message}");
}

#[test]
fn finalizer_after_cleanup_detects_a_container_of_a_recreated_object() {
    // Same key, new uid: the old object's container is still a leak.
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let old = physical(&mut store, "ns", "a");
    runtime_container_for(&mut runtime, 1, &old, &ns);
    store.delete(WallTime(2), &old.key(), &DeleteOptions::default()).unwrap();
    physical(&mut store, "ns", "a");

    assert_violates(&store, &runtime, FINALIZER_AFTER_CLEANUP);
}

#[test]
fn finalizer_after_cleanup_detects_an_owner_label_naming_another_kind() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let mut labels = namespace_labels(&ns);
    labels.insert(names::LABEL_OWNER_UID.into(), ns.metadata.uid.0.clone());
    runtime.insert(container(&container_id(1), "ns-a", labels, ContainerState::Running));

    assert_violates(&store, &runtime, FINALIZER_AFTER_CLEANUP);
}

#[test]
fn finalizer_after_cleanup_allows_a_container_of_an_object_being_deleted() {
    let (mut store, mut runtime) = (store(), SimRuntime::new(1));
    let ns = namespace(&mut store, "ns");
    let a = physical(&mut store, "ns", "a");
    let mut held = (*a).clone();
    held.metadata.finalizers.push(names::FINALIZER_RUNTIME.into());
    store.update(held).unwrap();
    runtime_container_for(&mut runtime, 1, &a, &ns);
    // A stranger with no owner label is not ours to clean up.
    runtime.insert(container(&container_id(2), "stranger", BTreeMap::new(), ContainerState::Running));

    let marked = store.delete(WallTime(2), &a.key(), &DeleteOptions::default()).unwrap();
    assert!(marked.metadata.is_deleting(), "the runtime-cleanup finalizer must hold the object");
    assert_holds(&store, &runtime, FINALIZER_AFTER_CLEANUP);
}

// ---------------------------------------------------------------------------------------------
// desired_equals_actual
// ---------------------------------------------------------------------------------------------

/// An active namespace `ns` with a physical container `a` whose status records its running
/// runtime container: the settled state.
struct Settled {
    store: Store,
    runtime: SimRuntime,
    ns: Arc<Object>,
    pc: Arc<Object>,
    id: String,
}

impl Settled {
    fn new() -> Self {
        let (mut store, mut runtime) = (store(), SimRuntime::new(1));
        let ns = active_namespace(&mut store, "ns");
        let pc = physical(&mut store, "ns", "a");
        let id = runtime_container_for(&mut runtime, 1, &pc, &ns);
        let pc = set_pc_status(&mut store, &pc, ContainerPhase::Running, Some(&id));
        Settled { store, runtime, ns, pc, id }
    }

    fn check(&self) -> Result<(), String> {
        desired_equals_actual(&View::of(&self.store, &self.runtime))
    }

    #[track_caller]
    fn assert_unsettled(&self, expect: &str) {
        match self.check() {
            Err(message) => assert!(message.contains(expect), "want {expect:?} in {message:?}"),
            Ok(()) => panic!("desired_equals_actual should fail ({expect})"),
        }
    }

    /// The object says Exited with exit code `code` (its runtime container's, when it agrees).
    fn set_exited(&mut self, code: Option<i64>) {
        let mut next = (*latest(&self.store, &self.pc)).clone();
        next.set_status::<PhysicalContainer>(&PhysicalContainerStatus {
            phase: ContainerPhase::Exited,
            runtime_id: Some(self.id.clone()),
            exit_code: code,
            ..Default::default()
        });
        self.store.update_status(next).unwrap();
    }

    fn runtime_exit_code(&self) -> Option<i64> {
        self.runtime.container(&self.id).unwrap().exit_code
    }

    fn set_runtime_state(&mut self, state: ContainerState) {
        let c = self.runtime.container(&self.id).unwrap().clone();
        self.runtime.insert(container(&c.id, &c.name, (*c.labels).clone(), state));
    }
}

#[test]
fn converged_when_running_container_matches_its_object() {
    let s = Settled::new();
    assert_eq!(s.check(), Ok(()));
    assert_eq!(check_all(&View::of(&s.store, &s.runtime)), None);
}

#[test]
fn converged_accepts_every_settled_phase() {
    let mut s = Settled::new();
    // Exited, with an exited container.
    s.set_runtime_state(ContainerState::Exited);
    s.set_exited(s.runtime_exit_code());
    assert_eq!(s.check(), Ok(()));
    // ... but not with another exit code than its runtime container's.
    assert!(s.runtime_exit_code().is_some());
    s.set_exited(Some(3));
    s.assert_unsettled("but its runtime container exited");
    // Missing: recorded, but removed behind our back.
    s.runtime.remove_externally(&s.id);
    set_pc_status(&mut s.store, &s.pc, ContainerPhase::Missing, Some(&s.id));
    assert_eq!(s.check(), Ok(()));
    // Failed: terminal, no container.
    set_pc_status(&mut s.store, &s.pc, ContainerPhase::Failed, None);
    assert_eq!(s.check(), Ok(()));
}

#[test]
fn not_converged_when_running_phase_but_container_exited() {
    let mut s = Settled::new();
    s.set_runtime_state(ContainerState::Exited);
    s.assert_unsettled("phase Running");
}

#[test]
fn not_converged_when_runtime_container_has_no_owner_object() {
    let mut s = Settled::new();
    let mut labels = labels_for(&s.pc, &s.ns);
    labels.insert(names::LABEL_OWNER_UID.into(), "00000000-0000-0000-0000-000000000000".into());
    s.runtime.insert(container(&container_id(9), "ns-ghost", labels, ContainerState::Running));
    s.assert_unsettled("has no owner object");
}

#[test]
fn not_converged_when_runtime_container_is_not_the_recorded_one() {
    // A second container carrying a's uid: a records only the first.
    let mut s = Settled::new();
    s.runtime.insert(container(&container_id(9), "ns-a-2", labels_for(&s.pc, &s.ns), ContainerState::Running));
    s.assert_unsettled("is not the one");
}

#[test]
fn not_converged_while_namespace_terminating() {
    let mut s = Settled::new();
    let marked = s.store.delete(WallTime(2), &s.ns.key(), &DeleteOptions::default()).unwrap();
    assert!(marked.metadata.is_deleting());
    s.assert_unsettled("still terminating");
}

#[test]
fn not_converged_while_namespace_phase_not_active() {
    let mut s = Settled::new();
    let mut next = (*latest(&s.store, &s.ns)).clone();
    next.set_status::<Namespace>(&NamespaceStatus::default());
    s.store.update_status(next).unwrap();
    s.assert_unsettled("want Active");
}

#[test]
fn not_converged_when_stop_requested_but_container_running() {
    let mut s = Settled::new();
    set_stop(&mut s.store, &s.pc);
    s.assert_unsettled("stop=true");
}

#[test]
fn not_converged_when_stop_requested_but_container_running_in_a_terminal_phase() {
    // Failed accepts any runtime state; the separate stop check must still catch it.
    let mut s = Settled::new();
    set_stop(&mut s.store, &s.pc);
    set_pc_status(&mut s.store, &s.pc, ContainerPhase::Failed, Some(&s.id));
    s.assert_unsettled("stop requested but the runtime container is running");
}

#[test]
fn converged_when_stop_requested_and_container_exited() {
    let mut s = Settled::new();
    set_stop(&mut s.store, &s.pc);
    s.set_runtime_state(ContainerState::Exited);
    s.set_exited(s.runtime_exit_code());
    assert_eq!(s.check(), Ok(()));
}

#[test]
fn not_converged_while_pending() {
    let mut s = Settled::new();
    set_pc_status(&mut s.store, &s.pc, ContainerPhase::Pending, Some(&s.id));
    s.assert_unsettled("phase Pending");
}

#[test]
fn not_converged_while_container_being_deleted() {
    let mut s = Settled::new();
    let mut held = (*latest(&s.store, &s.pc)).clone();
    held.metadata.finalizers.push(names::FINALIZER_RUNTIME.into());
    s.store.update(held).unwrap();
    s.store.delete(WallTime(2), &s.pc.key(), &DeleteOptions::default()).unwrap();
    s.assert_unsettled("still being deleted");
}

#[test]
fn not_converged_when_only_owner_is_gone() {
    let mut s = Settled::new();
    let parent = active_namespace(&mut s.store, "parent");
    let mut meta = ObjectMeta::named(None, "child");
    meta.owner_references.push(parent.owner_reference(false));
    let child = s.store.create(WallTime(1), Object::from_spec::<Namespace>(meta, &NamespaceSpec {})).unwrap();
    let mut next = (*child).clone();
    next.set_status::<Namespace>(&NamespaceStatus {
        phase: Some(NamespacePhase::Active),
        message: None,
        ..Default::default()
    });
    s.store.update_status(next).unwrap();
    assert_eq!(s.check(), Ok(()));

    remove_namespace(&mut s.store, &parent);
    s.assert_unsettled("all its owners are gone");
}

#[test]
fn converged_when_one_of_several_owners_remains() {
    // Kubernetes garbage collection: a dependent stays while any owner exists.
    let mut s = Settled::new();
    let failed = |store: &mut Store, name: &str, owners: &[&Object]| {
        let pc = physical_owned_by(store, "ns", name, owners);
        set_pc_status(store, &pc, ContainerPhase::Failed, None)
    };
    let gone = failed(&mut s.store, "gone", &[]);
    let kept = failed(&mut s.store, "kept", &[]);
    failed(&mut s.store, "dependent", &[&gone, &kept]);
    s.store.delete(WallTime(2), &gone.key(), &DeleteOptions::default()).unwrap();
    assert_eq!(s.check(), Ok(()));
}

#[test]
fn not_converged_when_running_on_a_strangers_container() {
    let mut s = Settled::new();
    let stranger = container_id(9);
    s.runtime.insert(container(&stranger, "stranger", BTreeMap::new(), ContainerState::Running));
    let b = physical(&mut s.store, "ns", "b");
    set_pc_status(&mut s.store, &b, ContainerPhase::Running, Some(&stranger));
    assert!(s.check().is_err(), "b runs on a container that was never created for it");
}

#[test]
fn not_converged_when_two_objects_record_one_container() {
    let mut s = Settled::new();
    let b = physical(&mut s.store, "ns", "b");
    set_pc_status(&mut s.store, &b, ContainerPhase::Running, Some(&s.id));
    assert!(s.check().is_err(), "b has no runtime container of its own");
}
