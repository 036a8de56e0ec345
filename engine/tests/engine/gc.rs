//! Deletion propagation and namespace cleanup, end to end: the real engine with the built-in
//! controllers against a real in-memory store, through a small synchronous driver.
//!
//! The driver can hide an object's watch events from the engine (a stale cache) and checks
//! safety properties against the store right before each of the engine's store requests runs.

use drydock_engine::api::{
    Condition, ConditionStatus, Namespace, NamespacePhase, NamespaceSpec, Object, ObjectKey, ObjectMeta,
    OwnerReference, Resource,
};
use drydock_engine::controllers::namespace::{CONDITION_CLEANUP_COMPLETE, REASON_COMPLETE, REASON_PENDING};
use drydock_engine::controllers::{ControllerConfig, builtin};
use drydock_engine::runtime::RuntimeError;
use drydock_engine::store::{
    DeleteOptions, FINALIZER_FOREGROUND_DELETION, FINALIZER_ORPHAN, KindInfo, Propagation, Registry, Store,
    StoreConfig, StoreRequest, WatchEvent,
};
use drydock_engine::{Engine, EngineConfig, Input, MonoTime, Now, Output, WallTime};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

const NS: &str = "ns";
/// A finalizer the test itself holds, playing some other controller, to keep objects around.
const HOLD: &str = "test.dev/hold";

/// Namespaced test kinds: `Widget` (owners and dependents), `Task` (cleanup rank 10) and
/// `Volume` (rank 45); `Cluster` is a cluster-scoped owner kind. None of them needs the runtime.
fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.register(KindInfo::untyped("Widget", true));
    r.register(KindInfo::untyped("Task", true).with_cleanup_rank(10));
    r.register(KindInfo::untyped("Volume", true).with_cleanup_rank(45));
    r.register(KindInfo::untyped("Cluster", false));
    r
}

type Check = Box<dyn FnMut(&Store, &StoreRequest)>;

/// The built-in harvester's name, as its requests' origin shows it.
const HARVESTER: &str = "harvester";

struct World {
    store: Store,
    engine: Engine,
    now_ms: u64,
    /// Watch events up to this version have been fed (or held back).
    fed: u64,
    /// Names whose watch events are held back from the engine.
    hidden: BTreeSet<String>,
    held: Vec<WatchEvent>,
    /// Every store request the engine made, in order.
    requests: Vec<StoreRequest>,
    runtime_requests: usize,
    /// Run against the store right before each store request of the engine.
    checks: Vec<Check>,
}

impl World {
    fn new() -> Self {
        let registry = registry();
        let mut world = World {
            store: Store::in_memory(registry.clone(), StoreConfig::default()),
            engine: Engine::new(EngineConfig::default(), registry, builtin(&ControllerConfig::default())),
            now_ms: 1_000,
            fed: 0,
            hidden: BTreeSet::new(),
            held: Vec::new(),
            requests: Vec::new(),
            runtime_requests: 0,
            checks: Vec::new(),
        };
        world.create(Object::from_spec::<Namespace>(ObjectMeta::named(None, NS), &NamespaceSpec {}));
        world.settle();
        world
    }

    fn now(&self) -> Now {
        Now::new(MonoTime(self.now_ms * 1_000_000), WallTime(self.now_ms))
    }

    fn check(&mut self, check: impl FnMut(&Store, &StoreRequest) + 'static) {
        self.checks.push(Box::new(check));
    }

    fn feed(&mut self) {
        let now = self.now();
        let events: Vec<WatchEvent> = self.store.events_since(self.fed).unwrap().cloned().collect();
        for event in events {
            self.fed = event.resource_version();
            if self.hidden.contains(event.object.metadata.name.as_str()) {
                self.held.push(event);
            } else {
                self.engine.handle(now, Input::Watch(event));
            }
        }
    }

    /// Stop hiding everything and deliver what was held back, in order.
    fn reveal(&mut self) {
        self.hidden.clear();
        let now = self.now();
        for event in std::mem::take(&mut self.held) {
            self.engine.handle(now, Input::Watch(event));
        }
    }

    /// Drive the engine for `duration` of simulated time (timers fire on the way).
    fn run_for(&mut self, duration: Duration) {
        let end = self.now_ms + u64::try_from(duration.as_millis()).unwrap();
        for _ in 0..100_000 {
            self.feed();
            let now = self.now();
            if let Some(output) = self.engine.poll(now) {
                match output {
                    // The harvester's passes are not what these tests count: answered, not recorded.
                    Output::Store { id, request, origin, .. } if &*origin.controller == HARVESTER => {
                        let result = self.store.execute(now.wall, request);
                        self.engine.handle(now, Input::StoreDone { id, result });
                    }
                    Output::Runtime { id, origin, .. } if &*origin.controller == HARVESTER => {
                        let result = Ok(drydock_engine::runtime::RuntimeReply::Containers(Vec::new()));
                        self.engine.handle(now, Input::RuntimeDone { id, result });
                    }
                    Output::Store { id, request, .. } => {
                        for check in &mut self.checks {
                            check(&self.store, &request);
                        }
                        self.requests.push(request.clone());
                        let result = self.store.execute(now.wall, request);
                        self.engine.handle(now, Input::StoreDone { id, result });
                    }
                    Output::Runtime { id, .. } => {
                        self.runtime_requests += 1;
                        let result = Err(RuntimeError::NotFound("no runtime in this test".into()));
                        self.engine.handle(now, Input::RuntimeDone { id, result });
                    }
                    Output::Cancel { .. } | Output::Detach { .. } | Output::Log(_) => {}
                }
                continue;
            }
            match self.engine.next_wakeup() {
                Some(due) if due.0.div_ceil(1_000_000) <= end => {
                    self.now_ms = due.0.div_ceil(1_000_000).max(self.now_ms + 1);
                }
                _ => {
                    self.now_ms = end;
                    return;
                }
            }
        }
        panic!("the engine did not settle");
    }

    fn settle(&mut self) {
        self.run_for(Duration::from_secs(10));
    }

    fn create(&mut self, object: Object) -> Arc<Object> {
        self.store.create(WallTime(self.now_ms), object).unwrap()
    }

    fn delete(&mut self, key: &ObjectKey, propagation: Propagation) {
        let options = DeleteOptions { propagation, ..Default::default() };
        self.store.delete(WallTime(self.now_ms), key, &options).unwrap();
    }

    /// Remove the test's own finalizer, as the controller holding it would.
    fn release_hold(&mut self, key: &ObjectKey) {
        let mut next = (**self.store.get(key).unwrap()).clone();
        next.metadata.finalizers.retain(|f| f != HOLD);
        self.store.update(next).unwrap();
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<Object>> {
        self.store.get(key).cloned()
    }

    fn deletes_of(&self, key: &ObjectKey) -> usize {
        self.requests.iter().filter(|r| matches!(r, StoreRequest::Delete { key: k, .. } if k == key)).count()
    }
}

fn key(kind: &str, name: &str) -> ObjectKey {
    ObjectKey::namespaced(kind, NS, name)
}

/// An untyped object in `ns` with the given owners and finalizers.
fn object(kind: &str, name: &str, owners: &[OwnerReference], finalizers: &[&str]) -> Object {
    let mut meta = ObjectMeta::named(Some(NS), name);
    meta.owner_references = owners.to_vec();
    meta.finalizers = finalizers.iter().map(|f| f.to_string()).collect();
    Object::new(kind, meta, serde_json::json!({}))
}

fn widget(name: &str, owners: &[OwnerReference], finalizers: &[&str]) -> Object {
    object("Widget", name, owners, finalizers)
}

fn blocking(owner: &Object) -> OwnerReference {
    OwnerReference { block_owner_deletion: true, ..owner.owner_reference(true) }
}

fn loose(owner: &Object) -> OwnerReference {
    owner.owner_reference(false)
}

fn references(object: &Object, owner: &Object) -> bool {
    object.metadata.owner_references.iter().any(|r| r.uid == owner.metadata.uid)
}

fn is_release_of(request: &StoreRequest, owner: &ObjectKey, finalizer: &str) -> bool {
    matches!(request, StoreRequest::Update { object } if object.key() == *owner && !object.metadata.has_finalizer(finalizer))
}

// ---------------------------------------------------------------------------------------------
// background
// ---------------------------------------------------------------------------------------------

#[test]
fn background_cascade_deletes_dependents_after_confirming_the_owner_is_gone() {
    let mut w = World::new();
    let owner = w.create(widget("owner", &[], &[]));
    let other = w.create(widget("other", &[], &[]));
    let a = w.create(widget("a", &[loose(&owner)], &[]));
    w.create(widget("b", &[blocking(&owner)], &[]));
    w.create(widget("grandchild", &[loose(&a)], &[]));
    w.create(widget("shared", &[loose(&owner), loose(&other)], &[]));
    w.create(widget("free", &[], &[]));
    w.settle();
    assert_eq!(w.store.list(Some("Widget"), Some(NS)).len(), 7, "nothing is garbage yet");
    // Every delete of a dependent comes after an uncached read found its owner gone.
    w.check(|store, request| {
        if let StoreRequest::Delete { key, .. } = request {
            let object = store.get(key).unwrap();
            assert!(
                object.metadata.owner_references.iter().all(|r| store.get_by_uid(&r.uid).is_none()),
                "{key} deleted while an owner exists"
            );
        }
    });

    w.delete(&key("Widget", "owner"), Propagation::Background);
    w.settle();

    for gone in ["owner", "a", "b", "grandchild"] {
        assert!(w.get(&key("Widget", gone)).is_none(), "{gone} should be gone");
    }
    for kept in ["other", "shared", "free"] {
        assert!(w.get(&key("Widget", kept)).is_some(), "{kept} should be kept");
    }
    let gets_of_owner =
        w.requests.iter().filter(|r| matches!(r, StoreRequest::Get { key: k } if *k == key("Widget", "owner"))).count();
    assert!(gets_of_owner >= 2, "the owner's absence was confirmed by uncached reads ({gets_of_owner})");
    assert_eq!(w.runtime_requests, 0);
}

#[test]
fn background_keeps_a_dependent_whose_owner_the_cache_has_not_seen() {
    let mut w = World::new();
    w.hidden.insert("owner".into());
    let owner = w.create(widget("owner", &[], &[]));
    w.create(widget("a", &[loose(&owner)], &[]));
    w.settle();
    assert!(w.get(&key("Widget", "a")).is_some(), "an owner missing from the cache is not a gone owner");
    assert_eq!(w.deletes_of(&key("Widget", "a")), 0);

    w.reveal();
    w.delete(&key("Widget", "owner"), Propagation::Background);
    w.settle();
    assert!(w.get(&key("Widget", "a")).is_none());
}

// ---------------------------------------------------------------------------------------------
// foreground
// ---------------------------------------------------------------------------------------------

#[test]
fn foreground_keeps_the_owner_until_blocking_dependents_are_gone_and_loose_ones_do_not_block() {
    let mut w = World::new();
    let owner = w.create(widget("owner", &[], &[]));
    w.create(widget("blocker", &[blocking(&owner)], &[HOLD]));
    w.create(widget("plain", &[blocking(&owner)], &[]));
    w.create(widget("loose", &[loose(&owner)], &[HOLD]));
    w.settle();
    let owner_key = key("Widget", "owner");
    let owner_uid = owner.metadata.uid.clone();
    // When the finalizer goes, no blocking dependent is left in the store.
    w.check(move |store, request| {
        if is_release_of(request, &ObjectKey::namespaced("Widget", NS, "owner"), FINALIZER_FOREGROUND_DELETION) {
            let blockers: Vec<String> = store
                .list(None, Some(NS))
                .iter()
                .filter(|o| o.metadata.owner_references.iter().any(|r| r.uid == owner_uid && r.block_owner_deletion))
                .map(|o| o.metadata.name.to_string())
                .collect();
            assert!(blockers.is_empty(), "foregroundDeletion released while {blockers:?} remain");
        }
    });

    w.delete(&owner_key, Propagation::Foreground);
    w.settle();

    let held = w.get(&owner_key).expect("the owner waits for its blocking dependent");
    assert!(held.metadata.is_deleting());
    assert!(held.metadata.has_finalizer(FINALIZER_FOREGROUND_DELETION));
    assert!(w.get(&key("Widget", "plain")).is_none(), "dependents are deleted");
    assert!(w.get(&key("Widget", "blocker")).unwrap().metadata.is_deleting(), "dependents are deleted");
    assert!(w.get(&key("Widget", "loose")).unwrap().metadata.is_deleting(), "loose dependents are deleted too");

    w.release_hold(&key("Widget", "blocker"));
    w.settle();
    assert!(w.get(&owner_key).is_none(), "released once the blocking dependent is gone");
    let loose_left = w.get(&key("Widget", "loose")).expect("still held by the test");
    assert!(loose_left.metadata.is_deleting(), "a dependent without blockOwnerDeletion did not block the owner");
    assert!(w.requests.iter().any(|r| is_release_of(r, &owner_key, FINALIZER_FOREGROUND_DELETION)));
    assert_eq!(w.runtime_requests, 0);
}

#[test]
fn foreground_owner_without_dependents_goes_at_once() {
    let mut w = World::new();
    w.create(widget("owner", &[], &[]));
    w.settle();
    w.delete(&key("Widget", "owner"), Propagation::Foreground);
    assert!(w.get(&key("Widget", "owner")).is_some(), "the store only marks it");
    w.settle();
    assert!(w.get(&key("Widget", "owner")).is_none());
}

#[test]
fn foreground_is_not_released_on_a_stale_cache() {
    let mut w = World::new();
    let owner = w.create(Object::new("Cluster", ObjectMeta::named(None, "owner"), serde_json::json!({})));
    w.create(widget("seen", &[blocking(&owner)], &[]));
    // A blocking dependent in another namespace the engine has not heard of.
    w.create(Object::from_spec::<Namespace>(ObjectMeta::named(None, "elsewhere"), &NamespaceSpec {}));
    w.hidden.insert("unseen".into());
    let mut unseen = widget("unseen", &[blocking(&owner)], &[]);
    unseen.metadata.namespace = Some("elsewhere".into());
    w.create(unseen);
    w.settle();
    let owner_key = ObjectKey::cluster("Cluster", "owner");

    w.delete(&owner_key, Propagation::Foreground);
    w.run_for(Duration::from_secs(30));
    assert!(w.get(&key("Widget", "seen")).is_none(), "the dependent the cache knows is deleted");
    assert!(
        w.get(&owner_key).is_some(),
        "the uncached list of all namespaces shows a blocking dependent: the owner stays"
    );
    assert!(
        w.requests.iter().any(|r| matches!(r, StoreRequest::List { namespace: None, .. })),
        "a cluster-scoped owner's dependents are listed in all namespaces"
    );

    w.reveal();
    w.settle();
    assert!(w.get(&ObjectKey::namespaced("Widget", "elsewhere", "unseen")).is_none());
    assert!(w.get(&owner_key).is_none());
}

#[test]
fn foreground_unlinks_a_dependent_that_has_another_live_owner() {
    let mut w = World::new();
    let owner = w.create(widget("owner", &[], &[]));
    let other = w.create(widget("other", &[], &[]));
    w.create(widget("shared", &[blocking(&owner), loose(&other)], &[]));
    w.settle();

    w.delete(&key("Widget", "owner"), Propagation::Foreground);
    w.settle();
    assert!(w.get(&key("Widget", "owner")).is_none());
    let shared = w.get(&key("Widget", "shared")).expect("kept for its live owner");
    assert!(!shared.metadata.is_deleting());
    assert_eq!(shared.metadata.owner_references, vec![loose(&other)]);
}

// ---------------------------------------------------------------------------------------------
// orphan
// ---------------------------------------------------------------------------------------------

#[test]
fn orphan_leaves_dependents_alive_without_the_owner_reference() {
    let mut w = World::new();
    let owner = w.create(widget("owner", &[], &[]));
    let other = w.create(widget("other", &[], &[]));
    w.create(widget("a", &[blocking(&owner)], &[]));
    w.create(widget("b", &[loose(&owner), loose(&other)], &[]));
    // Unseen by the engine until the end: found by the uncached list.
    w.hidden.insert("c".into());
    w.create(widget("c", &[loose(&owner)], &[]));
    w.settle();
    let owner_key = key("Widget", "owner");
    let orphaned = owner.clone();
    w.check(move |store, request| {
        if is_release_of(request, &ObjectKey::namespaced("Widget", NS, "owner"), FINALIZER_ORPHAN) {
            let left: Vec<String> = store
                .list(None, None)
                .iter()
                .filter(|o| references(o, &orphaned))
                .map(|o| o.metadata.name.to_string())
                .collect();
            assert!(left.is_empty(), "orphan released while {left:?} still reference the owner");
        }
    });

    w.delete(&owner_key, Propagation::Orphan);
    w.settle();

    assert!(w.get(&owner_key).is_none());
    for name in ["a", "b", "c"] {
        let dependent = w.get(&key("Widget", name)).unwrap_or_else(|| panic!("{name} was deleted"));
        assert!(!dependent.metadata.is_deleting(), "{name} is being deleted");
        assert!(!references(&dependent, &owner), "{name} still references the owner");
    }
    assert_eq!(w.get(&key("Widget", "b")).unwrap().metadata.owner_references, vec![loose(&other)]);
    for name in ["a", "b", "c"] {
        assert_eq!(w.deletes_of(&key("Widget", name)), 0, "{name}");
    }

    // Now ownerless (or owned by a live owner), they are nobody's garbage.
    w.reveal();
    w.settle();
    for name in ["a", "b", "c"] {
        assert!(w.get(&key("Widget", name)).is_some(), "{name}");
    }
}

#[test]
fn orphan_is_released_from_the_listed_owner_while_the_watch_lags() {
    let mut w = World::new();
    let owner = w.create(widget("owner", &[], &[HOLD]));
    w.create(widget("a", &[loose(&owner)], &[]));
    w.settle();
    let owner_key = key("Widget", "owner");

    // The engine hears of the delete; then the owner changes (another controller lets go of its
    // finalizer) in a write whose watch event lags.
    w.delete(&owner_key, Propagation::Orphan);
    w.feed();
    w.hidden.insert("owner".into());
    w.release_hold(&owner_key);
    w.run_for(Duration::from_secs(10));

    assert!(
        w.get(&owner_key).is_none(),
        "the orphan finalizer is removed from the copy the confirming list read, not the cache's stale one"
    );
    let lists = w.requests.iter().filter(|r| matches!(r, StoreRequest::List { .. })).count();
    assert!(lists <= 2, "{lists} uncached lists: a release from the stale copy conflicts and lists again");
    assert!(!references(&w.get(&key("Widget", "a")).unwrap(), &owner));
}

// ---------------------------------------------------------------------------------------------
// namespace cleanup
// ---------------------------------------------------------------------------------------------

fn cleanup_condition(w: &World) -> Option<Condition> {
    let ns = w.get(&ObjectKey::cluster(Namespace::KIND, NS))?;
    let status = ns.status::<Namespace>().unwrap();
    Condition::find(&status.conditions, CONDITION_CLEANUP_COMPLETE).cloned()
}

fn assert_pending(w: &World, message: &str) {
    let condition = cleanup_condition(w).expect("a CleanupComplete condition");
    assert_eq!(condition.status, ConditionStatus::False);
    assert_eq!(condition.reason, REASON_PENDING);
    assert_eq!(condition.message, message);
    assert!(condition.last_transition_time.is_some());
}

/// Checks for every namespace cleanup: no later rank is deleted while an earlier one remains in
/// the store, the finalizer goes only after the store holds `CleanupComplete=True` and no child,
/// and no status write rewrites what is stored.
fn check_cleanup(w: &mut World) {
    let ns_key = ObjectKey::cluster(Namespace::KIND, NS);
    w.check(move |store, request| match request {
        StoreRequest::Delete { key, .. } if key.namespace.as_deref() == Some(NS) => {
            let rank = |kind: &str| store.registry().get(kind).unwrap().cleanup_rank;
            let earlier: Vec<String> = store
                .list(None, Some(NS))
                .iter()
                .filter(|o| rank(&o.kind) < rank(&key.kind))
                .map(|o| o.key().to_string())
                .collect();
            assert!(earlier.is_empty(), "{key} deleted while {earlier:?} remain");
        }
        StoreRequest::Update { object } if object.key() == ns_key && !object.metadata.has_finalizer(FINAL_NS) => {
            let stored = store.get(&ns_key).unwrap();
            let status = stored.status::<Namespace>().unwrap();
            let complete = Condition::find(&status.conditions, CONDITION_CLEANUP_COMPLETE).unwrap();
            assert!(complete.is_true() && complete.reason == REASON_COMPLETE, "released with {complete:?}");
            assert!(store.list(None, Some(NS)).is_empty(), "released with children left");
        }
        StoreRequest::UpdateStatus { object } if object.key() == ns_key => {
            assert_ne!(object.status, store.get(&ns_key).unwrap().status, "a status write that changes nothing");
        }
        _ => {}
    });
}

const FINAL_NS: &str = drydock_engine::api::names::FINALIZER_NAMESPACE;

#[test]
fn namespace_cleanup_goes_rank_by_rank_reports_pending_counts_and_completes_before_release() {
    let mut w = World::new();
    for name in ["t1", "t2"] {
        w.create(object("Task", name, &[], &[HOLD]));
    }
    w.create(object("Volume", "v1", &[], &[HOLD]));
    w.create(object("Widget", "w1", &[], &[]));
    w.settle();
    let ns_key = ObjectKey::cluster(Namespace::KIND, NS);
    let status = w.get(&ns_key).unwrap().status::<Namespace>().unwrap();
    assert_eq!(status.phase, Some(NamespacePhase::Active));
    assert!(status.conditions.is_empty(), "an Active namespace has no cleanup condition");
    check_cleanup(&mut w);
    let writes_before = w.requests.len();

    w.delete(&ns_key, Propagation::Background);
    w.settle();
    let ns = w.get(&ns_key).unwrap();
    assert_eq!(ns.status::<Namespace>().unwrap().phase, Some(NamespacePhase::Terminating));
    assert_pending(&w, "waiting for 2 Task, 1 Volume, 1 Widget");
    assert!(w.get(&key("Task", "t1")).unwrap().metadata.is_deleting());
    assert!(w.get(&key("Task", "t2")).unwrap().metadata.is_deleting());
    assert!(!w.get(&key("Volume", "v1")).unwrap().metadata.is_deleting(), "rank 45 waits for rank 10");
    assert!(w.get(&key("Widget", "w1")).is_some(), "rank 50 waits for rank 10");

    w.release_hold(&key("Task", "t1"));
    w.settle();
    assert_pending(&w, "waiting for 1 Task, 1 Volume, 1 Widget");
    assert!(!w.get(&key("Volume", "v1")).unwrap().metadata.is_deleting(), "a Task is left");

    w.release_hold(&key("Task", "t2"));
    w.settle();
    assert_pending(&w, "waiting for 1 Volume, 1 Widget");
    assert!(w.get(&key("Volume", "v1")).unwrap().metadata.is_deleting(), "rank 45 goes once rank 10 is gone");
    assert!(w.get(&key("Widget", "w1")).is_some(), "rank 50 waits for rank 45");

    w.release_hold(&key("Volume", "v1"));
    w.settle();
    assert!(w.get(&key("Widget", "w1")).is_none());
    assert!(w.get(&ns_key).is_none(), "the namespace is gone once it is empty");

    // The status went Pending -> Complete and only then was the finalizer released.
    let ns_writes: Vec<&StoreRequest> = w.requests[writes_before..]
        .iter()
        .filter(|r| matches!(r, StoreRequest::UpdateStatus { object } | StoreRequest::Update { object } if object.key() == ns_key))
        .collect();
    let last_two: Vec<String> = ns_writes[ns_writes.len() - 2..]
        .iter()
        .map(|r| match r {
            StoreRequest::UpdateStatus { object } => {
                let status = object.status::<Namespace>().unwrap();
                let c = Condition::find(&status.conditions, CONDITION_CLEANUP_COMPLETE).unwrap();
                format!("status {} {}", c.reason, c.message)
            }
            _ => "release".to_string(),
        })
        .collect();
    assert_eq!(
        last_two,
        vec!["status Complete all objects of the namespace are deleted".to_string(), "release".into()]
    );
    assert_eq!(w.runtime_requests, 0);
}

#[test]
fn a_steady_terminating_namespace_writes_nothing() {
    let mut w = World::new();
    w.create(object("Task", "t1", &[], &[HOLD]));
    w.settle();
    let ns_key = ObjectKey::cluster(Namespace::KIND, NS);
    w.delete(&ns_key, Propagation::Background);
    w.settle();
    assert_pending(&w, "waiting for 1 Task");
    let rv = w.store.resource_version();
    w.run_for(Duration::from_secs(120));
    assert_eq!(w.store.resource_version(), rv, "no write while nothing changes");

    // A change in the namespace that does not change the counts reconciles it, later: no write.
    let before = w.requests.len();
    let mut touched = (**w.store.get(&key("Task", "t1")).unwrap()).clone();
    touched.metadata.labels.insert("touched".into(), "yes".into());
    w.store.update(touched).unwrap();
    w.settle();
    let ns_writes = w.requests[before..]
        .iter()
        .filter(|r| matches!(r, StoreRequest::UpdateStatus { object } | StoreRequest::Update { object } if object.key() == ns_key))
        .count();
    assert_eq!(ns_writes, 0, "the same observation is not written again");
    assert_pending(&w, "waiting for 1 Task");
}

/// A namespace gone with its objects left behind (its finalizer removed by hand, before the
/// engine heard of its deletion): they are deleted, rank by rank, and each goes through its own
/// finalizers; one of another namespace is left alone.
#[test]
fn the_objects_a_gone_namespace_left_are_deleted_rank_by_rank() {
    let mut w = World::new();
    w.create(object("Task", "t1", &[], &[HOLD]));
    w.create(object("Widget", "w1", &[], &[]));
    w.create(Object::from_spec::<Namespace>(ObjectMeta::named(None, "other"), &NamespaceSpec {}));
    let mut elsewhere = object("Widget", "w2", &[], &[]);
    elsewhere.metadata.namespace = Some("other".into());
    w.create(elsewhere);
    w.settle();
    check_cleanup(&mut w);

    let ns_key = ObjectKey::cluster(Namespace::KIND, NS);
    w.delete(&ns_key, Propagation::Background);
    let mut bare = (*w.get(&ns_key).unwrap()).clone();
    bare.metadata.finalizers.clear();
    w.store.update(bare).unwrap();
    assert!(w.get(&ns_key).is_none(), "the namespace is gone at once");
    w.settle();
    assert!(w.get(&key("Task", "t1")).unwrap().metadata.is_deleting(), "the orphan of the lowest rank is deleted");
    assert!(w.get(&key("Widget", "w1")).is_some(), "a higher rank waits");
    assert_eq!(w.deletes_of(&key("Task", "t1")), 1);

    w.release_hold(&key("Task", "t1"));
    w.settle();
    assert!(w.get(&key("Widget", "w1")).is_none(), "then the next rank");
    assert!(w.get(&ObjectKey::namespaced("Widget", "other", "w2")).is_some(), "another namespace's object stays");
    let lists = w.requests.iter().filter(|r| matches!(r, StoreRequest::List { namespace: Some(n), .. } if n == NS));
    assert!(lists.count() <= 3, "an uncached list confirms each rank's orphans, no more");
}

/// A namespace cleaned up by another engine, whose child's deletion this engine has not heard of
/// yet when it hears the namespace is gone: the uncached list shows it gone, and
/// nothing is deleted.
#[test]
fn a_child_of_a_cleaned_up_namespace_not_yet_seen_gone_is_not_an_orphan() {
    let mut w = World::new();
    w.create(object("Widget", "w1", &[], &[]));
    w.settle();
    // Another engine cleans the namespace up while this one's watch of widgets lags.
    w.hidden.insert("w1".into());
    w.delete(&key("Widget", "w1"), Propagation::Background);
    let ns_key = ObjectKey::cluster(Namespace::KIND, NS);
    w.delete(&ns_key, Propagation::Background);
    let mut bare = (*w.get(&ns_key).unwrap()).clone();
    bare.metadata.finalizers.clear();
    w.store.update(bare).unwrap();
    w.settle();
    assert!(w.get(&ns_key).is_none(), "cleaned up");
    assert!(w.engine.cache().get(&key("Widget", "w1")).is_some(), "the engine still thinks it is there");
    let lists = |w: &World| {
        w.requests.iter().filter(|r| matches!(r, StoreRequest::List { namespace: Some(n), .. } if n == NS)).count()
    };
    let before = lists(&w);
    w.run_for(Duration::from_secs(30));
    assert_eq!(w.deletes_of(&key("Widget", "w1")), 0, "its cached copy is not deleted");
    assert!(lists(&w) <= before + 1, "at most one list looks for it");
    w.reveal();
    w.settle();
    assert!(w.engine.cache().get(&key("Widget", "w1")).is_none());
}
