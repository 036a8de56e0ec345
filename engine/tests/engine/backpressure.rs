//! Backpressure toward the runtime, driven by hand: a bound on the requests inside it, held
//! requests whose timeouts start when they go, and a change given up on that keeps its object's
//! turn until it has left the runtime.

use drydock_engine::api::{Object, ObjectKey, ObjectMeta, Uid};
use drydock_engine::logs::Channel;
use drydock_engine::runtime::{RuntimeReply, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{EventType, KindInfo, Registry, WatchEvent};
use drydock_engine::{
    Action, Context, Controller, Engine, EngineConfig, Input, MonoTime, Now, OpId, Output, ReconcileResult, WallTime,
    Watch,
};
use std::sync::{Arc, Mutex};

/// What the controller heard back, by op.
type Heard = Arc<Mutex<Vec<(OpId, bool)>>>;

/// On each reconcile of a `Widget`: `reads` inspections of it, or (with `reads == 0`) a remove
/// of its container unless one is awaited.
struct Asker {
    reads: usize,
    awaiting: Option<OpId>,
    heard: Heard,
}

impl Controller for Asker {
    fn name(&self) -> &str {
        "asker"
    }
    fn watches(&self) -> Vec<Watch> {
        vec![Watch::own("Widget")]
    }
    fn reconcile(&mut self, ctx: &mut Context<'_>, key: &ObjectKey) -> ReconcileResult {
        if ctx.get(key).is_none() {
            return Ok(Action::done());
        }
        for _ in 0..self.reads {
            ctx.runtime(RuntimeRequest::InspectContainer { id: format!("c-{}", key.name) });
        }
        if self.reads == 0 && self.awaiting.is_none() {
            let id = format!("c-{}", key.name);
            self.awaiting = Some(ctx.runtime(RuntimeRequest::RemoveContainer { id, force: true }));
        }
        Ok(Action::done())
    }
    fn on_runtime_result(&mut self, _now: Now, _key: &ObjectKey, op: OpId, result: &RuntimeResult) {
        if self.awaiting == Some(op) {
            self.awaiting = None;
        }
        self.heard.lock().unwrap().push((op, result.is_ok()));
    }
}

fn engine(reads: usize, limit: usize) -> (Engine, Heard) {
    let heard = Heard::default();
    let mut registry = Registry::default();
    registry.register(KindInfo::untyped("Widget", false));
    let config = EngineConfig { max_runtime_in_flight: limit, ..EngineConfig::default() };
    let asker = Asker { reads, awaiting: None, heard: heard.clone() };
    let mut engine = Engine::new(config, registry, vec![Box::new(asker)]);
    let mut meta = ObjectMeta::named(None, "a");
    meta.uid = Uid("uid-a".into());
    meta.resource_version = 1;
    let object = Arc::new(Object::new("Widget", meta, serde_json::json!({})));
    engine.handle(at(0), Input::Watch(WatchEvent { event: EventType::Added, object }));
    (engine, heard)
}

fn at(ms: u64) -> Now {
    Now::new(MonoTime(ms * 1_000_000), WallTime(ms))
}

fn drain(engine: &mut Engine, now: Now) -> Vec<Output> {
    std::iter::from_fn(|| engine.poll(now)).collect()
}

fn sent(outputs: &[Output]) -> Vec<OpId> {
    outputs.iter().filter_map(|o| if let Output::Runtime { id, .. } = o { Some(*id) } else { None }).collect()
}

fn system_lines(outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Log(record) if record.channel == Channel::System => Some(record.lines.join("\n")),
            _ => None,
        })
        .collect()
}

#[test]
fn requests_beyond_the_bound_wait_in_the_engine_and_their_timeouts_start_when_they_go() {
    let (mut e, _) = engine(3, 2);
    let first = sent(&drain(&mut e, at(0)));
    assert_eq!(first.len(), 2, "two go, one waits");
    assert_eq!((e.runtime_inside(), e.runtime_held()), (2, 1));
    assert_eq!(e.next_wakeup(), Some(at(30_000).mono), "the first deadline");
    e.handle(at(20_000), Input::RuntimeDone { id: first[0], result: Ok(RuntimeReply::Done) });
    let third = sent(&drain(&mut e, at(20_000)));
    assert_eq!(third.len(), 1, "an answer makes room for the one waiting");
    e.handle(at(25_000), Input::RuntimeDone { id: first[1], result: Ok(RuntimeReply::Done) });
    drain(&mut e, at(25_000));
    assert_eq!(e.next_wakeup(), Some(at(50_000).mono), "its timeout started when it went, at 20 s");
    assert_eq!(e.stats().runtime_peak_in_flight, 2);
}

#[test]
fn a_change_given_up_on_is_detached_and_its_retry_waits_until_it_has_left_the_runtime() {
    let (mut e, heard) = engine(0, 32);
    let remove = sent(&drain(&mut e, at(0)));
    assert_eq!(remove.len(), 1);
    let outputs = drain(&mut e, at(30_000));
    assert!(
        outputs.iter().any(|o| matches!(o, Output::Detach { id } if *id == remove[0])),
        "detached, not cancelled: {outputs:?}"
    );
    assert!(!outputs.iter().any(|o| matches!(o, Output::Cancel { .. })), "{outputs:?}");
    assert_eq!(*heard.lock().unwrap(), [(remove[0], false)], "the controller was told the outcome is unknown");
    assert!(sent(&outputs).is_empty(), "the retry waits for the first remove: {outputs:?}");
    assert_eq!((e.runtime_inside(), e.runtime_held(), e.runtime_detached()), (1, 1, 1));
    assert!(system_lines(&outputs).iter().any(|l| l.contains("may still be running inside it")), "{outputs:?}");

    // The first remove leaves the runtime: the retry goes; the late answer is not the controller's.
    e.handle(at(40_000), Input::RuntimeDone { id: remove[0], result: Ok(RuntimeReply::Done) });
    let outputs = drain(&mut e, at(40_000));
    let retry = sent(&outputs);
    assert_eq!(retry.len(), 1, "{outputs:?}");
    assert_ne!(retry, remove);
    assert!(system_lines(&outputs).iter().any(|l| l.contains("answered after it was given up on: done")));
    assert_eq!(heard.lock().unwrap().len(), 1);
    assert!(e.settling_detached(at(49_999).mono));
    assert_eq!(e.next_wakeup(), Some(at(50_000).mono), "the departure settles 10 s later (cleanup waits that long)");
    drain(&mut e, at(50_000));
    assert!(!e.settling_detached(at(50_000).mono));
    assert_eq!(e.next_wakeup(), Some(at(70_000).mono), "the retry's own timeout, from 40 s");
}

#[test]
fn a_detached_change_that_never_answers_is_cancelled_for_good_after_the_patience() {
    let (mut e, _) = engine(0, 32);
    let remove = sent(&drain(&mut e, at(0)));
    drain(&mut e, at(30_000));
    let patience = EngineConfig::default().detached_patience;
    let give_up = 30_000 + patience.as_millis() as u64;
    assert_eq!(e.next_wakeup(), Some(at(give_up).mono));
    assert!(sent(&drain(&mut e, at(give_up - 1))).is_empty());
    let outputs = drain(&mut e, at(give_up));
    assert!(outputs.iter().any(|o| matches!(o, Output::Cancel { id } if *id == remove[0])), "{outputs:?}");
    assert_eq!(sent(&outputs).len(), 1, "the retry goes: {outputs:?}");
    assert!(system_lines(&outputs).iter().any(|l| l.contains("no longer waiting for it")));
    assert_eq!((e.runtime_inside(), e.runtime_detached(), e.stats().runtime_abandoned), (1, 0, 1));
    // Its reply, should it come after all, changes nothing.
    e.handle(at(give_up + 1), Input::RuntimeDone { id: remove[0], result: Ok(RuntimeReply::Done) });
    assert_eq!(e.runtime_inside(), 1);
}
