//! The simulated world: one store, one runtime, engine processes, client actors and a fault plan,
//! all driven by one event queue and one seeded PRNG.
//!
//! The world is made of components, each owning its state, its fault knobs and what its faults
//! leave behind once healed: the engine [`processes`], the [`watches`] that carry store and runtime
//! events to them, the [`runtime_link`] and [`store_link`] their requests travel, the client and
//! external [`actors`], the world's [`Facts`] (requests in flight, lease claims), the
//! [`Checker`]'s invariants, the [`Probes`] and the [`liveness`] judge. [`World::step`] hands each
//! event to the components it concerns; `requests` has the paths a request takes through them.
//!
//! A run has two phases. During the *safety* phase the workload plays and faults fire; every
//! invariant is checked after every event that can change what it reads. When the workload is
//! done the faults heal and the *liveness* phase begins (see [`liveness`]).

mod actors;
mod config;
mod env;
mod explain;
mod latency;
mod liveness;
mod processes;
mod readers;
mod report;
mod requests;
mod runtime_link;
mod store_link;
mod watches;

pub use config::{
    ControllerFactory, Convergence, Extensions, InvariantFactory, KindLag, LivenessKnobs, ProcessKnobs,
    RuntimeLinkKnobs, StoreLinkKnobs, WatchKnobs, WatchOrdering, WorldConfig,
};
pub use env::RunStats;
pub use latency::{Factor, Latency};
pub use report::{RunReport, Violation};

use crate::checker::{Checker, Happening, View};
use crate::facts::{Facts, process_identity};
use crate::logs::Logs;
use crate::probes::{Probe, Probes};
use crate::runtime::SimRuntime;
use crate::trace::{EventKind, Fault, Key, Record};
use crate::workload::Workload;
use drydock_engine::store::{Store, StoreConfig};
use drydock_engine::{Engine, EngineConfig, Input, MonoTime, WallTime};
use drydock_faults::{FaultKind, FaultPlan};
use env::{Env, Event};
use explain::Explainer;
use liveness::{Busy, Liveness, Verdict};
use processes::{Processes, true_now};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use runtime_link::RuntimeLink;
use std::collections::BTreeSet;
use std::time::Duration;
use store_link::StoreLink;
use watches::{Delivery, Watches};

pub struct World<'w> {
    config: &'w WorldConfig,
    workload: &'w Workload,
    seed: u64,
    env: Env,
    store: Store,
    runtime: SimRuntime,
    facts: Facts,
    logs: Logs,
    processes: Processes,
    watches: Watches,
    runtime_link: RuntimeLink,
    store_link: StoreLink,
    checker: Checker,
    probes: Probes,
    /// The probes this run can reach by construction.
    probes_reachable: BTreeSet<Probe>,
    liveness: Liveness,
    /// Explains each event as it happens, if the trace is kept.
    explainer: Option<Explainer>,
    violations: Vec<Violation>,
    /// Something the invariants read changed since they were last evaluated.
    dirty: bool,
}

impl<'w> World<'w> {
    pub fn new(
        config: &'w WorldConfig,
        workload: &'w Workload,
        faults: FaultPlan,
        seed: u64,
        keep_trace: bool,
    ) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let store = new_store(config, rng.next_u64());
        let mut runtime = SimRuntime::new(rng.next_u64());
        for image in &workload.images {
            runtime.add_image(image);
        }
        for reference in &workload.registry {
            runtime.registry_push(reference);
        }
        let probes_reachable = crate::probes::reachable(config, workload, &faults);
        let mut env = Env::new(rng, faults, keep_trace);
        let processes = Processes::boot(&config.processes, &mut env, |index, life, seed| {
            engine(config, index, life, seed, keep_trace)
        });
        World {
            config,
            workload,
            seed,
            store,
            runtime,
            facts: Facts { runtime_bound: Some(config.processes.max_runtime_in_flight), ..Facts::default() },
            logs: Logs::default(),
            watches: Watches::new(&config.watch, processes.len()),
            processes,
            runtime_link: RuntimeLink::new(&config.runtime_link),
            store_link: StoreLink::new(&config.store_link),
            checker: checker(config),
            probes: Probes::default(),
            probes_reachable,
            liveness: Liveness::new(&config.liveness),
            explainer: keep_trace.then(Explainer::default),
            violations: Vec::new(),
            dirty: true,
            env,
        }
    }

    /// Play the workload, heal, wait for convergence and quiet; report.
    pub fn run(mut self) -> RunReport {
        for (i, op) in self.workload.ops.iter().enumerate() {
            self.env.at(op.at, Event::Client(i));
        }
        self.env.at(self.workload.end() + Duration::from_millis(1), Event::Heal);
        crate::stamp::capturing(self.explainer.is_some());
        while let Some((now, event)) = self.env.pop() {
            crate::stamp::set(now, None);
            if let Some(explainer) = &mut self.explainer {
                explainer.begin(self.env.trace.events() + 1);
            }
            self.env.trace.begin(now);
            self.step(now, event);
            let explained = self.explainer.as_mut().map(|explainer| {
                for kind in self.env.fired.drain(..) {
                    explainer.fault(kind.name());
                }
                explainer.current.logs = crate::stamp::take_captured();
                explainer.finish()
            });
            self.env.trace.end(explained);
            if self.check(now) {
                break;
            }
        }
        crate::stamp::clear();
        self.report()
    }

    /// Hand one event to the components it concerns.
    fn step(&mut self, now: MonoTime, event: Event) {
        self.dirty |= event.may_change_state();
        match event {
            Event::Client(i) => {
                if self.env.fires(FaultKind::RuntimeRestart) {
                    self.restart_runtime(now);
                }
                self.client(now, i);
            }
            Event::Deliver { process, stream, event } => self.deliver(now, process, stream, event),
            Event::StoreApply { process, id, request } => self.store_apply(now, process, id, *request),
            Event::StoreReply { process, id, result } => {
                self.env.paid();
                if let Some(explainer) = &mut self.explainer {
                    let learned = match &result {
                        Ok(drydock_engine::store::StoreReply::Object(object)) => Some(&**object),
                        _ => None,
                    };
                    explainer.replied(process, id, false, learned);
                }
                self.env.record(Record::StoreReply { process, id });
                if !self.processes.is_down(process) {
                    self.observe(Happening::Answered { process, id });
                }
                self.input(now, process, Input::StoreDone { id, result });
            }
            Event::RuntimeApply { process, id, request } => self.runtime_apply(now, process, id, *request),
            Event::RuntimeReply { process, id, result } => {
                self.env.paid();
                if let Some(explainer) = &mut self.explainer {
                    explainer.replied(process, id, true, None);
                }
                self.settle(process, id);
                self.env.record(Record::RuntimeReply { process, id });
                if !self.processes.is_down(process) {
                    self.observe(Happening::Answered { process, id });
                }
                self.input(now, process, Input::RuntimeDone { id, result: *result });
            }
            Event::Notify { process, stream, event } => {
                self.env.paid();
                if let Some(explainer) = &mut self.explainer {
                    explainer.runtime_event(process, &event.container_id, &self.runtime);
                }
                if !self.watches.runtime_stream_open(process, stream) {
                    self.env.record(Record::RuntimeEventLost { process });
                    return;
                }
                self.env.record(Record::RuntimeEvent {
                    process,
                    action: &event.action,
                    container: &event.container_id,
                });
                self.input(now, process, Input::RuntimeEvent(event));
            }
            Event::RuntimeResynced { process, stream } => {
                self.env.paid();
                self.explain(EventKind::RuntimeEvent, Some(process));
                if !self.watches.runtime_stream_open(process, stream) {
                    self.env.record(Record::RuntimeResyncLost { process });
                    return;
                }
                self.env.record(Record::RuntimeResync { process });
                self.input(now, process, Input::RuntimeResync);
            }
            Event::Wake { process } => {
                self.explain(EventKind::Other, Some(process));
                self.env.record(Record::Wake { process });
                self.processes.woke(process, now);
                self.pump(now, process);
            }
            Event::Restart { process } => {
                self.env.paid();
                self.explain(EventKind::Process, Some(process));
                self.restart(now, process);
            }
            Event::RuntimeDue => self.runtime_due(now),
            Event::RemovalDone { container } => self.removal_done(now, &container),
            Event::NetworkCreateDone(creating) => self.network_create_done(now, creating),
            Event::Relist { process, stream } => {
                self.env.paid();
                self.explain(EventKind::Process, Some(process));
                self.relist(now, process, stream);
            }
            Event::Disrupt(disruption) => {
                self.env.paid();
                self.explain(EventKind::Fault, None);
                self.disrupt(now, disruption);
            }
            Event::Heal => {
                self.explain(EventKind::Heal, None);
                self.env.trace.record(&Record::Heal { faults: &self.env.faults });
                self.env.faults.heal();
                self.liveness.heal(now);
            }
            Event::Judge => self.env.record(Record::Judge),
            Event::ReadLogs { reader } => self.read_logs(now, reader),
        }
    }

    fn deliver(&mut self, now: MonoTime, process: usize, stream: u32, event: drydock_engine::store::WatchEvent) {
        self.env.paid();
        match self.watches.arrive(process, stream, event) {
            Delivery::Lost(event) => {
                self.env.record(Record::DeliveryLost { process, key: Key::of(&event.object) });
            }
            Delivery::Coalesced(event) => self.env.record(Record::Coalesced {
                process,
                key: Key::of(&event.object),
                resource_version: event.resource_version(),
            }),
            Delivery::Deliver(event) => {
                if let Some(explainer) = &mut self.explainer {
                    explainer.delivered(process, &event.object);
                }
                self.env.record(Record::Deliver {
                    process,
                    event: event.event,
                    key: Key::of(&event.object),
                    resource_version: event.resource_version(),
                });
                self.input(now, process, Input::Watch(event));
            }
        }
    }

    /// A crashed process starts again from a full list of the store.
    fn restart(&mut self, now: MonoTime, process: usize) {
        let life = self.processes.restart(process);
        self.watches.restarted(process, now);
        self.env.record(Record::Restart { process, life });
        self.resync(now, process);
    }

    /// A process whose watch broke lists the store and watches again from the list's version.
    fn relist(&mut self, now: MonoTime, process: usize, stream: u32) {
        if !self.watches.relisted(process, stream, &self.processes, now) {
            self.env.record(Record::RelistDropped { process });
            return;
        }
        self.env.record(Record::Relist { process });
        self.probes.hit(Probe::RelistAfterGone);
        self.resync(now, process);
    }

    fn resync(&mut self, now: MonoTime, process: usize) {
        if let Some(explainer) = &mut self.explainer {
            explainer.listed(process);
        }
        // Every store change is broadcast as it happens, so the events after this version are
        // exactly the ones still to come.
        let resource_version = self.store.resource_version();
        let objects = self.store.list(None, None);
        self.env.record(Record::Listed { objects: objects.len(), resource_version });
        if self.hand(now, process, Input::Resync { objects, resource_version }) {
            // Judged before the process sends anything: the store is still the state it listed.
            let cache = self.processes.get(process).engine.cache();
            let view = View {
                store: &self.store,
                runtime: &self.runtime,
                facts: &self.facts,
                logs: &self.logs,
                now: self.wall(),
            };
            let happening = Happening::Relisted { process, cache };
            self.checker.observe(&view, &happening);
            self.probes.observe(&view, &happening);
            self.dirty = true;
            self.pump(now, process);
        }
    }

    /// The runtime daemon restarts: running containers stop, event streams drop (with the events
    /// of the shutdown), and requests fail for a moment.
    fn restart_runtime(&mut self, now: MonoTime) {
        self.explain(EventKind::Fault, None);
        self.runtime.set_now(true_now(now).wall);
        let (stopped, until) = self.runtime_link.restart_daemon(&mut self.env, &mut self.runtime, now);
        let _lost_with_the_streams = self.runtime.take_events();
        self.watches.drop_runtime_streams();
        self.watches.resync_runtime_streams(&mut self.env, &self.processes, until);
        self.runtime_link.follow_runtime_clock(&mut self.env, &self.runtime);
        self.env.record(Record::Fault(Fault::RuntimeRestart { stopped, back_at: until }));
    }

    /// Say what the current event is, if the run explains itself.
    fn explain(&mut self, kind: EventKind, process: Option<usize>) {
        if let Some(explainer) = &mut self.explainer {
            explainer.kind(kind, process);
        }
    }

    /// The world's true wall time now.
    fn wall(&self) -> WallTime {
        true_now(self.env.now()).wall
    }

    /// Tell the checkers and the probes what happened.
    fn observe(&mut self, happening: Happening<'_>) {
        let view =
            View { store: &self.store, runtime: &self.runtime, facts: &self.facts, logs: &self.logs, now: self.wall() };
        self.checker.observe(&view, &happening);
        self.probes.observe(&view, &happening);
    }

    /// Check invariants and the run's progress. True when the run is over.
    fn check(&mut self, now: MonoTime) -> bool {
        let wall = true_now(now).wall;
        // The invariants are functions of the store, the runtime and what they observed (and of
        // time only through lease expiry, which can end a violation but never start one):
        // re-evaluating them after an event that changed none of those could not find anything new.
        if std::mem::take(&mut self.dirty) {
            self.facts.leases.prune(wall);
            let journal = self.runtime.take_journal();
            let view =
                View { store: &self.store, runtime: &self.runtime, facts: &self.facts, logs: &self.logs, now: wall };
            let found = self.checker.check_changes(&view, &journal).map(|(name, message)| (name.to_string(), message));
            if self.config.cross_check
                && let Some(disagreement) = disagreement(found.as_ref(), self.checker.check(&view))
            {
                return self.fail(now, "incremental-check".into(), disagreement);
            }
            if let Some((invariant, message)) = found {
                return self.fail(now, invariant, message);
            }
        }
        let view = View { store: &self.store, runtime: &self.runtime, facts: &self.facts, logs: &self.logs, now: wall };
        let (processes, watches, outstanding) = (&self.processes, &self.watches, self.env.outstanding);
        // A main process ending by itself before the settle period could be over changes the
        // world: it is not quiet yet. (One ending later is beyond the run.)
        let horizon = now + self.config.liveness.settle;
        let ending = self.runtime.next_due().map(processes::mono_at).filter(|at| *at <= horizon);
        let busy = || busy(processes, watches, outstanding, ending, now);
        let reconciles = processes.iter().map(|p| p.engine.stats().reconciles);
        let converged = |view: &View<'_>| {
            crate::checker::desired_equals_actual(view).and_then(|()| self.config.extensions.converged(view))
        };
        let verdict = self.liveness.judge(now, self.env.trace.events(), &view, reconciles, busy, converged);
        if let Some(at) = self.liveness.take_wake() {
            self.env.at(at, Event::Judge);
        }
        match verdict {
            Verdict::Running => false,
            Verdict::Done => true,
            Verdict::Failed(property, message) => self.fail(now, property.to_string(), message),
        }
    }

    fn fail(&mut self, now: MonoTime, invariant: String, message: String) -> bool {
        self.violations.push(Violation { invariant, message, at: now.to_string(), event: self.env.trace.events() });
        true
    }

    fn report(mut self) -> RunReport {
        self.env.stats.reconciles = self.processes.reconciles();
        self.env.stats.convergence_secs = self.liveness.convergence_secs;
        self.env.stats.work_after_heal = self.liveness.work_peaks();
        RunReport {
            seed: self.seed,
            ok: self.violations.is_empty(),
            digest: self.env.trace.digest(),
            events: self.env.trace.events(),
            sim_nanos: self.env.now().0,
            faults: self.env.faults.describe(),
            fault_counts: self.env.faults.counts(),
            fault_decisions: self.env.faults.decisions().clone(),
            violations: self.violations,
            stats: self.env.stats,
            trace: self.env.trace.take_events(),
            probes: self.probes.into_hits(),
            probes_reachable: self.probes_reachable,
        }
    }
}

/// Where judging what changed (`incremental`) and judging the whole state (`full`) disagree, in
/// words.
fn disagreement(incremental: Option<&(String, String)>, full: Option<(&str, String)>) -> Option<String> {
    match (incremental, full) {
        (None, None) => None,
        (Some((a, _)), Some((b, _))) if a == b => None,
        (Some((a, m)), Some((b, n))) => {
            Some(format!("judging changes found [{a}] {m}; judging the whole state [{b}] {n}"))
        }
        (Some((a, m)), None) => Some(format!("judging changes found [{a}] {m}; the whole state holds")),
        (None, Some((b, n))) => Some(format!("judging the whole state found [{b}] {n}; judging changes missed it")),
    }
}

/// Operation ids of incarnation `life` start at `life << OP_RANGE_BITS`, so replies to a dead
/// incarnation's requests are never mistaken for the new one's.
const OP_RANGE_BITS: u32 = 40;

/// A fresh engine for process `index` in its `life`th incarnation: no memory of earlier ones.
fn engine(config: &WorldConfig, index: usize, life: u32, seed: u64, explain: bool) -> Engine {
    Engine::new(
        EngineConfig {
            identity: process_identity(index),
            seed,
            first_op: u64::from(life) << OP_RANGE_BITS,
            explain,
            max_runtime_in_flight: config.processes.max_runtime_in_flight,
            detached_patience: config.processes.detached_patience,
            earlier_lives_patience: config.processes.earlier_lives_patience,
            ..EngineConfig::default()
        },
        config.registry.clone(),
        controllers(config),
    )
}

/// The built-in controllers of `config`, then the user's.
fn controllers(config: &WorldConfig) -> Vec<Box<dyn drydock_engine::Controller>> {
    let mut all = (config.make_controllers)(&config.controllers);
    all.extend(config.extensions.controllers.iter().map(|make| make()));
    all
}

/// The built-in invariants of `config`, then the user's.
fn checker(config: &WorldConfig) -> Checker {
    let mut checker = Checker::new((config.make_invariants)());
    for make in &config.extensions.invariants {
        checker.push(make());
    }
    checker
}

/// What keeps the world from being quiet, if anything: something owed, a container's main
/// process about to end by itself, a process down or relisting, an engine waiting for replies,
/// backing off, or with work due.
fn busy(
    processes: &Processes,
    watches: &Watches,
    outstanding: u64,
    ending: Option<MonoTime>,
    now: MonoTime,
) -> Option<Busy> {
    if outstanding > 0 {
        return Some(Busy::InFlight(outstanding));
    }
    if let Some(at) = ending {
        return Some(Busy::ProcessEnding(at));
    }
    processes.iter().enumerate().find_map(|(i, p)| {
        Some(if p.down {
            Busy::Down(i)
        } else if watches.broken(i) {
            Busy::Relisting(i)
        } else if p.engine.in_flight() > 0 {
            Busy::Waiting(i, p.engine.in_flight())
        } else if p.engine.retrying() > 0 {
            Busy::Retrying(i, p.engine.retrying())
        } else if p.engine.settling_detached(now) {
            Busy::Settling(i)
        } else if p.engine.next_wakeup().is_some_and(|t| t <= now) {
            Busy::WorkDue(i)
        } else {
            return None;
        })
    })
}

/// The world's store, over the backend `config` asks for.
///
/// *Caveats*: panics if a plugged backend cannot load: that is a bug of the test that plugged it.
fn new_store(config: &WorldConfig, uid_seed: u64) -> Store {
    let store_config = StoreConfig { uid_seed, ..config.store.clone() };
    match config.store_backend {
        None => Store::in_memory(config.registry.clone(), store_config),
        Some(make) => match Store::open(make(), config.registry.clone(), store_config) {
            Ok(store) => store,
            Err(error) => panic!("the plugged store backend cannot load: {error}"),
        },
    }
}
