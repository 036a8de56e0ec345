//! The engine's contract, driven by hand: work-queue serialization, backoff, requeue-after,
//! runtime results and owner mapping.

use drydock_engine::api::{Object, ObjectKey, ObjectMeta, Uid};
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{
    EventType, KindInfo, Registry, StoreError, StoreReply, StoreRequest, StoreResult, WatchEvent,
};
use drydock_engine::{
    Action, Context, Controller, Engine, EngineConfig, Input, MonoTime, Now, OpId, Output, ReconcileResult, WallTime,
    Watch,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Log {
    reconciles: Vec<String>,
    runtime_results: Vec<OpId>,
}

/// Watches `Widget`s (and maps `Gadget`s to their Widget owners). Each reconcile writes status if
/// `write` is set, asks the runtime something if `runtime` is set, and returns `action`.
struct Probe {
    log: Arc<Mutex<Log>>,
    write: bool,
    runtime: bool,
    action: Action,
}

impl Controller for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn watches(&self) -> Vec<Watch> {
        vec![Watch::own("Widget"), Watch::owners("Gadget", "Widget", false)]
    }
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        self.log.lock().unwrap().reconciles.push(key.name.to_string());
        if let Some(obj) = ctx.get(key) {
            if self.write {
                ctx.store(StoreRequest::UpdateStatus { object: (**obj).clone() });
            }
            if self.runtime {
                ctx.runtime(RuntimeRequest::InspectContainer { id: key.name.to_string() });
            }
        }
        Ok(self.action)
    }
    fn on_runtime_result(&mut self, _now: Now, _key: &ObjectKey, op: OpId, _result: &RuntimeResult) {
        self.log.lock().unwrap().runtime_results.push(op);
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register(KindInfo::untyped("Widget", false));
    r.register(KindInfo::untyped("Gadget", false));
    r
}

fn engine(write: bool, runtime: bool, action: Action) -> (Engine, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let probe = Probe { log: log.clone(), write, runtime, action };
    (Engine::new(EngineConfig::default(), registry(), vec![Box::new(probe)]), log)
}

fn at(ms: u64) -> Now {
    Now::new(MonoTime(ms * 1_000_000), WallTime(ms))
}

fn widget(kind: &str, name: &str, rv: u64, owner: Option<&str>) -> Arc<Object> {
    let mut meta = ObjectMeta::named(None, name);
    meta.uid = Uid(format!("uid-{name}"));
    meta.resource_version = rv;
    if let Some(owner) = owner {
        meta.owner_references.push(drydock_engine::api::OwnerReference {
            kind: "Widget".into(),
            name: owner.into(),
            uid: Uid(format!("uid-{owner}")),
            controller: true,
            block_owner_deletion: false,
        });
    }
    Arc::new(Object::new(kind, meta, serde_json::json!({})))
}

fn watch(object: Arc<Object>) -> Input {
    Input::Watch(WatchEvent { event: EventType::Modified, object })
}

fn drain(engine: &mut Engine, now: Now) -> Vec<Output> {
    std::iter::from_fn(|| engine.poll(now)).collect()
}

fn store_ids(outputs: &[Output]) -> Vec<OpId> {
    outputs.iter().filter_map(|o| if let Output::Store { id, .. } = o { Some(*id) } else { None }).collect()
}

fn reconciles(log: &Arc<Mutex<Log>>) -> usize {
    log.lock().unwrap().reconciles.len()
}

#[test]
fn a_key_is_not_reconciled_while_its_write_is_outstanding_and_events_meanwhile_rerun_it_once() {
    let (mut e, log) = engine(true, false, Action::done());
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    let first = store_ids(&drain(&mut e, at(0)));
    assert_eq!(first.len(), 1);
    e.handle(at(1), watch(widget("Widget", "a", 2, None)));
    e.handle(at(1), watch(widget("Widget", "a", 3, None)));
    assert!(drain(&mut e, at(1)).is_empty(), "a is held while its write is outstanding");
    assert_eq!(reconciles(&log), 1);
    // The write's reply is older than what the cache has: no extra dispatch from it.
    e.handle(at(2), Input::StoreDone { id: first[0], result: Ok(StoreReply::Object(widget("Widget", "a", 2, None))) });
    let second = store_ids(&drain(&mut e, at(2)));
    assert_eq!(reconciles(&log), 2, "the two events during the hold became one rerun");
    assert_eq!(second.len(), 1);
}

#[test]
fn failed_writes_back_off_exponentially_and_success_resets() {
    let (mut e, log) = engine(true, false, Action::done());
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    let mut now = 0;
    let mut delays = Vec::new();
    for _ in 0..4 {
        let ids = store_ids(&drain(&mut e, at(now)));
        assert_eq!(ids.len(), 1);
        let conflict: StoreResult = Err(StoreError::Conflict { key: "Widget/a".into(), reason: "stale".into() });
        e.handle(at(now), Input::StoreDone { id: ids[0], result: conflict });
        assert!(drain(&mut e, at(now)).is_empty(), "no retry before the backoff delay");
        let due = e.next_wakeup().unwrap();
        delays.push(Duration::from_nanos(due.0 - at(now).mono.0));
        now = due.0 / 1_000_000 + 1;
    }
    for (i, d) in delays.iter().enumerate() {
        let base = Duration::from_millis(10 << i);
        assert!(*d >= base && *d <= base * 5 / 4, "delay {i} = {d:?}, want {base:?} plus at most 25%");
    }
    // A success resets the backoff: the next failure waits the base delay again.
    let ids = store_ids(&drain(&mut e, at(now)));
    e.handle(at(now), Input::StoreDone { id: ids[0], result: Ok(StoreReply::Object(widget("Widget", "a", 5, None))) });
    let ids = store_ids(&drain(&mut e, at(now)));
    assert_eq!(ids.len(), 1, "the own write's newer state triggers one more reconcile");
    let conflict: StoreResult = Err(StoreError::Conflict { key: "Widget/a".into(), reason: "stale".into() });
    e.handle(at(now), Input::StoreDone { id: ids[0], result: conflict });
    let delay = Duration::from_nanos(e.next_wakeup().unwrap().0 - at(now).mono.0);
    assert!(delay <= Duration::from_micros(12_500), "backoff was reset: {delay:?}");
    assert!(reconciles(&log) >= 6);
}

#[test]
fn requeue_after_schedules_the_next_reconcile() {
    let (mut e, log) = engine(false, false, Action::requeue(Duration::from_secs(5)));
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    assert!(drain(&mut e, at(0)).is_empty());
    assert_eq!(e.next_wakeup(), Some(at(5_000).mono));
    assert!(drain(&mut e, at(4_999)).is_empty());
    assert_eq!(reconciles(&log), 1);
    drain(&mut e, at(5_000));
    assert_eq!(reconciles(&log), 2);
}

#[test]
fn runtime_results_reach_the_controller_and_trigger_a_reconcile() {
    let (mut e, log) = engine(false, true, Action::done());
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    let outputs = drain(&mut e, at(0));
    let Some(Output::Runtime { id, .. }) = outputs.first() else {
        panic!("expected a runtime request, got {outputs:?}")
    };
    assert_eq!(e.in_flight(), 1);
    e.handle(at(3), Input::RuntimeDone { id: *id, result: Ok(RuntimeReply::Done) });
    assert_eq!(log.lock().unwrap().runtime_results, vec![*id]);
    drain(&mut e, at(3));
    assert_eq!(reconciles(&log), 2);
}

#[test]
fn owned_objects_map_to_their_owner() {
    let (mut e, log) = engine(false, false, Action::done());
    e.handle(at(0), watch(widget("Gadget", "g", 1, Some("boss"))));
    drain(&mut e, at(0));
    assert_eq!(log.lock().unwrap().reconciles, vec!["boss".to_string()]);
}

#[test]
fn the_same_seed_gives_the_same_jitter() {
    let delays = |seed: u64| {
        let log = Arc::new(Mutex::new(Log::default()));
        let probe = Probe { log, write: true, runtime: false, action: Action::done() };
        let mut e = Engine::new(EngineConfig { seed, ..EngineConfig::default() }, registry(), vec![Box::new(probe)]);
        e.handle(at(0), watch(widget("Widget", "a", 1, None)));
        let ids = store_ids(&drain(&mut e, at(0)));
        let conflict = Err(StoreError::Conflict { key: "Widget/a".into(), reason: "stale".into() });
        e.handle(at(0), Input::StoreDone { id: ids[0], result: conflict });
        e.next_wakeup()
    };
    assert_eq!(delays(1), delays(1));
    assert_ne!(delays(1), delays(2));
}

#[test]
fn a_runtime_request_without_an_answer_is_cancelled_and_reported_uncertain_at_its_deadline() {
    let (mut e, log) = engine(false, true, Action::done());
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    let outputs = drain(&mut e, at(0));
    let Some(Output::Runtime { id, .. }) = outputs.first() else { panic!("expected a runtime request: {outputs:?}") };
    let deadline = at(0).mono + EngineConfig::default().runtime_timeout;
    assert_eq!(e.next_wakeup(), Some(deadline), "the engine asks to be polled at the deadline");
    assert!(drain(&mut e, Now::new(MonoTime(deadline.0 - 1), WallTime(29_999))).is_empty());
    let outputs = drain(&mut e, Now::new(deadline, WallTime(30_000)));
    assert!(matches!(outputs.first(), Some(Output::Cancel { id: c }) if c == id), "{outputs:?}");
    assert_eq!(log.lock().unwrap().runtime_results, vec![*id], "the controller heard of it");
    assert_eq!(e.in_flight(), 1, "the rerun issued a new request; the timed-out one is gone");
    assert_eq!(e.stats().runtime_timeouts, 1);
    // A late reply to the cancelled request is ignored.
    e.handle(at(30_001), Input::RuntimeDone { id: *id, result: Ok(RuntimeReply::Done) });
    assert_eq!(log.lock().unwrap().runtime_results.len(), 1);
}

/// An engine whose one controller writes on every reconcile of a `Widget`, a namespaced kind.
fn namespaced_widget_engine() -> Engine {
    let log = Arc::new(Mutex::new(Log::default()));
    let probe = Probe { log, write: true, runtime: false, action: Action::done() };
    let mut registry = Registry::builtin();
    registry.register(KindInfo::untyped("Widget", true));
    Engine::new(EngineConfig::default(), registry, vec![Box::new(probe)])
}

#[test]
fn a_key_handed_to_another_engine_forgets_its_backoff() {
    use drydock_engine::api::{Namespace, Resource as _, names};
    let mut e = namespaced_widget_engine();
    let mut ns = Object::new(Namespace::KIND, ObjectMeta::named(None, "ns"), serde_json::json!({}));
    ns.metadata.resource_version = 1;
    e.handle(at(0), watch(Arc::new(ns.clone())));
    let mut w = (*widget("Widget", "a", 2, None)).clone();
    w.metadata.namespace = Some("ns".into());
    e.handle(at(0), watch(Arc::new(w)));
    let ids = store_ids(&drain(&mut e, at(0)));
    let conflict: StoreResult = Err(StoreError::Conflict { key: "Widget/ns/a".into(), reason: "stale".into() });
    e.handle(at(0), Input::StoreDone { id: ids[0], result: conflict });
    assert_eq!(e.retrying(), 1);
    // The namespace turns out to belong to another engine: the retry runs, finds the key is not
    // ours, and must not leave the key "retrying" forever.
    ns.metadata.resource_version = 3;
    ns.metadata.annotations.insert(names::ANNOTATION_ENGINE.into(), "someone-else".into());
    e.handle(at(1), watch(Arc::new(ns)));
    drain(&mut e, at(1_000));
    assert_eq!(e.retrying(), 0);
    assert_eq!(e.next_wakeup(), None);
}

/// Kinds are not ordered among themselves: an object may arrive before its namespace, which may
/// be another engine's. Nothing is done for it until the namespace is seen; then it is.
#[test]
fn an_object_waits_for_its_namespace_and_is_reconciled_when_it_arrives() {
    use drydock_engine::api::{Namespace, Resource as _};
    let mut e = namespaced_widget_engine();
    let mut w = (*widget("Widget", "a", 2, None)).clone();
    w.metadata.namespace = Some("ns".into());
    e.handle(at(0), watch(Arc::new(w)));
    assert!(store_ids(&drain(&mut e, at(0))).is_empty(), "nothing done before the namespace is seen");
    let mut ns = Object::new(Namespace::KIND, ObjectMeta::named(None, "ns"), serde_json::json!({}));
    ns.metadata.resource_version = 1;
    e.handle(at(1), watch(Arc::new(ns)));
    assert_eq!(store_ids(&drain(&mut e, at(1))).len(), 1, "the namespace's arrival reconciles the widget");
}

#[test]
fn a_retry_requeue_counts_as_retrying_and_a_monitoring_requeue_does_not() {
    let (mut e, _) = engine(false, false, Action::retry_after(Duration::from_secs(1)));
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    drain(&mut e, at(0));
    assert_eq!(e.retrying(), 1, "unfinished work: a driver must not call this settled");
    let (mut e, _) = engine(false, false, Action::requeue(Duration::from_secs(30)));
    e.handle(at(0), watch(widget("Widget", "a", 1, None)));
    drain(&mut e, at(0));
    assert_eq!(e.retrying(), 0);
}
