//! The simulated world: one store, one runtime, engine processes, client actors and a fault plan,
//! all driven by one scheduler and one seeded PRNG.
//!
//! A run has two phases. During the *safety* phase the workload plays and faults fire; every
//! invariant is checked after every event. When the workload is done the faults are healed and
//! the *liveness* phase begins: the world must reach desired == actual within
//! [`WorldConfig::convergence_bound`], and then stay quiet (no store writes) for
//! [`WorldConfig::settle`].

mod clients;
mod processes;
mod record;
mod runtime_calls;

use crate::checker::{self, History, View};
use crate::probes::Probe;
use crate::runtime::SimRuntime;
use crate::scheduler::Scheduler;
use crate::trace::Trace;
use crate::workload::Workload;
use drydock_engine::controllers::{self, ControllerConfig};
use drydock_engine::runtime::{RuntimeRequest, RuntimeResult, short};
use drydock_engine::store::{Registry, Store, StoreConfig, StoreReply, StoreRequest, StoreResult, WatchEvent};
use drydock_engine::{Controller, Engine, Input, MonoTime, Now, OpId, Output, WallTime};
use drydock_faults::{FaultKind, FaultPlan, unit};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// A latency range; draws are uniform in `[min, max]`.
#[derive(Copy, Clone, Debug)]
pub struct Latency {
    pub min: Duration,
    pub max: Duration,
}

impl Latency {
    pub const fn millis(min: u64, max: u64) -> Self {
        Latency { min: Duration::from_millis(min), max: Duration::from_millis(max) }
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> Duration {
        self.min + (self.max.saturating_sub(self.min)).mul_f64(unit(rng))
    }
}

/// The shape of the world. Scenarios adjust it.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    pub processes: usize,
    /// Watch delivery delay of a healthy cache, per process (process i uses entry i mod len).
    pub watch_delays: Vec<Latency>,
    /// Watch delivery delay when the stale-cache fault fires.
    pub stale_watch_delay: Latency,
    pub store_latency: Latency,
    pub runtime_latency: Latency,
    /// How long a pull takes (it is in flight all that time).
    pub pull_latency: Latency,
    pub convergence_bound: Duration,
    pub settle: Duration,
    /// A run that takes more events than this fails (a livelock guard).
    pub max_events: u64,
    pub controllers: ControllerConfig,
    pub make_controllers: fn(&ControllerConfig) -> Vec<Box<dyn Controller>>,
    pub registry: Registry,
    pub store: StoreConfig,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            processes: 1,
            watch_delays: vec![Latency::millis(0, 20)],
            stale_watch_delay: Latency::millis(500, 5_000),
            store_latency: Latency::millis(1, 5),
            runtime_latency: Latency::millis(5, 80),
            pull_latency: Latency::millis(200, 3_000),
            convergence_bound: Duration::from_secs(120),
            settle: Duration::from_secs(65),
            max_events: 2_000_000,
            controllers: ControllerConfig::default(),
            make_controllers: controllers::builtin,
            registry: Registry::builtin(),
            store: StoreConfig::default(),
        }
    }
}

/// A violated invariant or eventual property.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
    /// Simulated time of the violation, in seconds.
    pub at: String,
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub seed: u64,
    pub ok: bool,
    pub digest: String,
    pub events: u64,
    /// Simulated time at the end of the run.
    pub sim_nanos: u64,
    pub faults: String,
    /// How many times each fault kind fired.
    pub fault_counts: std::collections::BTreeMap<FaultKind, u64>,
    /// Which draws of each kind fired: saved in a schedule, they replay this run exactly.
    #[serde(skip)]
    pub fault_decisions: drydock_faults::Decisions,
    pub violations: Vec<Violation>,
    /// Hits per probe; probes not hit are absent.
    pub probes: std::collections::BTreeMap<Probe, u64>,
    pub stats: RunStats,
    #[serde(skip)]
    pub trace: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunStats {
    pub client_ops: u64,
    pub store_requests: u64,
    pub runtime_requests: u64,
    pub runtime_creates: u64,
    pub uncertain_creates: u64,
    pub stale_deliveries: u64,
    /// Faults of the other kinds injected (transient errors, lost remove replies, hidden
    /// containers, store conflicts).
    pub other_faults: u64,
    pub reconciles: u64,
    /// Simulated seconds from heal to convergence.
    pub convergence_secs: f64,
}

#[derive(Debug)]
enum Event {
    Client(usize),
    Deliver {
        process: usize,
        /// The watch stream this was queued on (see `Process::watch_gen`).
        stream: u32,
        event: WatchEvent,
    },
    StoreApply {
        process: usize,
        id: OpId,
        request: StoreRequest,
    },
    StoreReply {
        process: usize,
        id: OpId,
        result: StoreResult,
    },
    RuntimeApply {
        process: usize,
        id: OpId,
        request: RuntimeRequest,
    },
    RuntimeReply {
        process: usize,
        id: OpId,
        result: RuntimeResult,
    },
    /// A runtime event reaching a process.
    Notify {
        process: usize,
        /// The runtime event stream this was queued on (see `Process::events_gen`).
        stream: u32,
        event: drydock_engine::runtime::RuntimeEvent,
    },
    Wake {
        process: usize,
    },
    /// A crashed process comes back: a fresh engine, a full list of the store.
    Restart {
        process: usize,
    },
    /// A process whose watch broke with Gone lists the store and watches again.
    Relist {
        process: usize,
        stream: u32,
    },
    Heal,
}

struct Process {
    engine: Engine,
    /// Watch events are delivered in order: never before the previous one.
    last_delivery: MonoTime,
    wake_at: Option<MonoTime>,
    /// Incarnation, bumped by every crash.
    life: u32,
    /// Crashed, and not restarted yet.
    down: bool,
    /// The store watch stream: deliveries queued on an older one are lost (crash, Gone).
    watch_gen: u32,
    /// The watch broke with Gone and the relist has not happened yet.
    watch_broken: bool,
    /// The runtime event stream: events queued on an older one are lost (crash, daemon restart).
    events_gen: u32,
    /// The last watch event queued (coalesced watch events).
    last_queued: Option<WatchEvent>,
    /// How far this process's wall clock is ahead (or behind, if negative), in milliseconds.
    skew_ms: i64,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Phase {
    Safety,
    Liveness { healed_at: MonoTime },
    Settling { converged_at: MonoTime, revision: u64 },
}

/// Why the world is not quiet.
#[derive(Copy, Clone, Debug)]
enum Busy {
    InFlight(u64),
    Down(usize),
    Relisting(usize),
    Waiting(usize, usize),
    Retrying(usize, usize),
    WorkDue(usize),
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Busy::InFlight(n) => write!(f, "{n} requests or deliveries still in flight"),
            Busy::Down(p) => write!(f, "process p{p} is down"),
            Busy::Relisting(p) => write!(f, "process p{p} has not relisted yet"),
            Busy::Waiting(p, n) => write!(f, "process p{p} waits for {n} replies"),
            Busy::Retrying(p, n) => write!(f, "process p{p} has {n} reconciles backing off after failures"),
            Busy::WorkDue(p) => write!(f, "process p{p} has work due"),
        }
    }
}

/// Writes to one object after faults heal, with no client acting, beyond which it oscillates.
const OSCILLATION_BOUND: u32 = 30;

/// Wall time at simulated time zero: 2026-01-01T00:00:00Z.
const EPOCH_MS: u64 = 1_767_225_600_000;

pub struct World<'w> {
    config: &'w WorldConfig,
    workload: &'w Workload,
    seed: u64,
    rng: ChaCha8Rng,
    faults: FaultPlan,
    scheduler: Scheduler<Event>,
    store: Store,
    runtime: SimRuntime,
    processes: Vec<Process>,
    broadcast_rv: u64,
    runtime_events_sent: usize,
    /// Runtime requests cancelled by their process.
    cancelled: std::collections::BTreeSet<(usize, OpId)>,
    history: History,
    probes: std::collections::BTreeMap<Probe, u64>,
    /// Owner uids whose create reply was lost.
    uncertain_uids: std::collections::BTreeSet<String>,
    /// (process, object key) whose last write hit a Conflict.
    conflicted: std::collections::BTreeSet<(usize, String)>,
    /// Containers an inspection was told were not there (notfound-after-create).
    was_hidden: std::collections::BTreeSet<String>,
    /// Logical containers seen reporting NotFound.
    waited_existing: std::collections::BTreeSet<String>,
    /// Store writes per object since faults healed (the oscillation detector).
    heal_writes: std::collections::BTreeMap<String, u32>,
    /// Containers hidden from inspection until a time (notfound-after-create).
    hidden: std::collections::BTreeMap<String, MonoTime>,
    /// The container a remove being applied is about to remove (for the history).
    removing: Option<drydock_engine::runtime::ContainerInfo>,
    /// Something the invariants read changed since they were last evaluated.
    dirty: bool,
    /// Runtime mutations in flight -> the owner uid they act for.
    mutation_owner: std::collections::BTreeMap<(usize, OpId), String>,
    /// Removes in flight that replace a container -> the lifecycle key the remover wants.
    replacing: std::collections::BTreeMap<(usize, OpId), Option<String>>,
    /// Container creates in flight (the crash-during-create probe).
    creates_in_flight: std::collections::BTreeSet<(usize, OpId)>,
    /// Watch deliveries (process, resource version) merged into the next one (coalesced-watch).
    coalesced: std::collections::BTreeSet<(usize, u64)>,
    /// Runtime requests that will never be answered (hung-runtime), until cancelled or their
    /// process dies.
    hung: std::collections::BTreeSet<(usize, OpId)>,
    /// The runtime daemon is restarting until then: requests fail without being applied.
    runtime_down_until: Option<MonoTime>,
    /// Requests handed to the world and not yet replied, plus undelivered watch events.
    in_flight: u64,
    trace: Trace,
    phase: Phase,
    stats: RunStats,
    violations: Vec<Violation>,
    line: String,
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
        let store =
            Store::in_memory(config.registry.clone(), StoreConfig { uid_seed: rng.next_u64(), ..config.store.clone() });
        let mut runtime = SimRuntime::new(rng.next_u64());
        for image in &workload.images {
            runtime.add_image(image);
        }
        for reference in &workload.registry {
            runtime.registry_push(reference);
        }
        let mut faults = faults;
        let processes = (0..config.processes)
            .map(|i| {
                let seed = rng.next_u64();
                let skew_ms = if faults.fires(FaultKind::ClockSkew, &mut rng) {
                    let magnitude = 500 + (rng.next_u64() % 29_500) as i64;
                    if rng.next_u32().is_multiple_of(2) { magnitude } else { -magnitude }
                } else {
                    0
                };
                Process {
                    engine: processes::boot(config, i, 0, seed),
                    last_delivery: MonoTime::ZERO,
                    wake_at: None,
                    life: 0,
                    down: false,
                    watch_gen: 0,
                    watch_broken: false,
                    events_gen: 0,
                    last_queued: None,
                    skew_ms,
                }
            })
            .collect();
        World {
            config,
            workload,
            seed,
            rng,
            faults,
            scheduler: Scheduler::default(),
            store,
            runtime,
            processes,
            broadcast_rv: 0,
            runtime_events_sent: 0,
            cancelled: Default::default(),
            history: History::default(),
            removing: None,
            hidden: Default::default(),
            heal_writes: Default::default(),
            probes: Default::default(),
            uncertain_uids: Default::default(),
            conflicted: Default::default(),
            waited_existing: Default::default(),
            was_hidden: Default::default(),
            dirty: true,
            mutation_owner: Default::default(),
            creates_in_flight: Default::default(),
            replacing: Default::default(),
            hung: Default::default(),
            coalesced: Default::default(),
            runtime_down_until: None,
            in_flight: 0,
            trace: Trace::new(keep_trace),
            phase: Phase::Safety,
            stats: RunStats::default(),
            violations: Vec::new(),
            line: String::new(),
        }
    }

    /// Play the workload, heal, wait for convergence and quiet; report.
    pub fn run(mut self) -> RunReport {
        for (i, op) in self.workload.ops.iter().enumerate() {
            self.scheduler.at(op.at, Event::Client(i));
        }
        self.scheduler.at(self.workload.end() + Duration::from_millis(1), Event::Heal);
        while let Some((now, event)) = self.scheduler.pop() {
            self.line.clear();
            let _ = write!(self.line, "{now} ");
            self.step(now, event);
            self.trace.record(&self.line);
            if self.check(now) {
                break;
            }
        }
        self.report()
    }

    pub(super) fn now(&self, mono: MonoTime) -> Now {
        Now::new(mono, WallTime(EPOCH_MS) + mono.as_duration())
    }

    fn step(&mut self, now: MonoTime, event: Event) {
        // Deliveries, wakes and store replies change only engine memory; everything else may
        // change the store, the runtime or the history.
        self.dirty |= !matches!(
            event,
            Event::Deliver { .. } | Event::Wake { .. } | Event::Notify { .. } | Event::StoreReply { .. }
        );
        match event {
            Event::Client(i) => {
                if self.faults.fires(FaultKind::RuntimeRestart, &mut self.rng) {
                    self.restart_runtime(now);
                }
                self.client(now, i);
            }
            Event::Deliver { process, stream, event } => {
                self.in_flight -= 1;
                if !self.on_current_stream(process, stream) {
                    let _ = write!(self.line, "p{process} delivery lost with its watch stream: {}", event.object.key());
                    return;
                }
                if self.coalesced.remove(&(process, event.resource_version())) {
                    let _ = write!(
                        self.line,
                        "p{process} [fault coalesced-watch] {} rv={} merged into the next event",
                        event.object.key(),
                        event.resource_version()
                    );
                    return;
                }
                let _ = write!(
                    self.line,
                    "p{process} deliver {:?} {} rv={}",
                    event.event,
                    event.object.key(),
                    event.resource_version()
                );
                let input = Input::Watch(event);
                self.input(now, process, input);
            }
            Event::StoreApply { process, id, request } => {
                let _ = write!(self.line, "p{process} store {id} {}", request.describe());
                self.record_store_before(process, &request);
                let conflict = matches!(request, StoreRequest::Update { .. } | StoreRequest::UpdateStatus { .. })
                    && self.faults.fires(FaultKind::StoreConflict, &mut self.rng);
                let result = if conflict {
                    self.line.push_str(" [fault store-conflict]");
                    self.stats.other_faults += 1;
                    Err(drydock_engine::store::StoreError::Conflict {
                        key: request.describe(),
                        reason: "a competing writer got there first".into(),
                    })
                } else {
                    self.store.execute(self.now(now).wall, request.clone())
                };
                let reply_lost = !request.is_read()
                    && result.is_ok()
                    && self.faults.fires(FaultKind::UncertainStoreWrite, &mut self.rng);
                self.record_store_after(process, &request, &result);
                self.probe_store(process, &request, &result);
                // The oscillation detector counts rewrites: writes that changed the store.
                if let (false, false, Ok(StoreReply::Object(object))) =
                    (matches!(self.phase, Phase::Safety), request.is_read(), &result)
                {
                    *self.heal_writes.entry(object.key().to_string()).or_default() += 1;
                }
                self.describe_store_result(&result);
                self.broadcast(now);
                let result = if reply_lost {
                    self.line.push_str(" [fault uncertain-store-write: reply lost]");
                    Err(drydock_engine::store::StoreError::Uncertain {
                        key: request.describe(),
                        reason: "the connection dropped after the request was sent".into(),
                    })
                } else {
                    result
                };
                let at = now + self.config.store_latency.draw(&mut self.rng);
                self.scheduler.at(at, Event::StoreReply { process, id, result });
            }
            Event::StoreReply { process, id, result } => {
                self.in_flight -= 1;
                let _ = write!(self.line, "p{process} store-reply {id}");
                self.input(now, process, Input::StoreDone { id, result });
            }
            Event::RuntimeApply { process, id, request } => self.runtime_apply(now, process, id, request),
            Event::RuntimeReply { process, id, result } => {
                self.in_flight -= 1;
                self.record_runtime_settled(process, id);
                let _ = write!(self.line, "p{process} runtime-reply {id}");
                self.input(now, process, Input::RuntimeDone { id, result });
            }
            Event::Notify { process, stream, event } => {
                self.in_flight -= 1;
                if self.processes[process].events_gen != stream {
                    let _ = write!(self.line, "p{process} runtime event lost with its stream");
                    return;
                }
                let _ = write!(self.line, "p{process} runtime-event {:?} {}", event.action, short(&event.container_id));
                self.input(now, process, Input::RuntimeEvent(event));
            }
            Event::Wake { process } => {
                let _ = write!(self.line, "p{process} wake");
                let p = &mut self.processes[process];
                if p.wake_at == Some(now) {
                    p.wake_at = None;
                }
                self.pump(now, process);
            }
            Event::Restart { process } => {
                self.in_flight -= 1;
                self.restart(now, process);
            }
            Event::Relist { process, stream } => {
                self.in_flight -= 1;
                self.relist(now, process, stream);
            }
            Event::Heal => {
                let _ = write!(self.line, "heal faults={}", self.faults.describe());
                self.faults.heal();
                self.phase = Phase::Liveness { healed_at: now };
            }
        }
    }

    fn input(&mut self, now: MonoTime, process: usize, input: Input) {
        if self.processes[process].down {
            return;
        }
        let at = self.process_now(process, now);
        self.processes[process].engine.handle(at, input);
        self.pump(now, process);
    }

    /// Take every output the engine has now, schedule each, and schedule the next wake. The
    /// crash faults strike here, right after a request left the process.
    fn pump(&mut self, now: MonoTime, process: usize) {
        if self.processes[process].down {
            return;
        }
        let at = self.process_now(process, now);
        while let Some(output) = self.processes[process].engine.poll(at) {
            match output {
                Output::Cancel { id } => {
                    // If it has not been applied yet it never will be; a reply already on its way
                    // is ignored by the engine.
                    self.cancelled.insert((process, id));
                    if self.hung.remove(&(process, id)) {
                        self.probe(Probe::HungRequestTimedOut);
                    }
                    if self.history.pulls_in_flight.values().any(|p| p.contains(&(process, id))) {
                        self.probe(Probe::PullCancelled);
                    }
                    self.record_runtime_settled(process, id);
                    self.dirty = true;
                    continue;
                }
                _ => self.in_flight += 1,
            }
            let crash = match output {
                Output::Cancel { .. } => None,
                Output::Store { id, request, write_follows, .. } => {
                    self.stats.store_requests += 1;
                    let between_writes = !request.is_read() && write_follows;
                    let t = now + self.config.store_latency.draw(&mut self.rng);
                    self.scheduler.at(t, Event::StoreApply { process, id, request });
                    (between_writes && self.faults.fires(FaultKind::CrashBetweenWrites, &mut self.rng))
                        .then_some(FaultKind::CrashBetweenWrites)
                }
                Output::Runtime { id, request, origin } => {
                    self.stats.runtime_requests += 1;
                    self.record_runtime_issue(process, id, &request, &origin.key);
                    self.dirty = true;
                    let pull = matches!(request, RuntimeRequest::PullImage { .. });
                    let mut latency =
                        if pull { self.config.pull_latency } else { self.config.runtime_latency }.draw(&mut self.rng);
                    if self.faults.fires(FaultKind::SlowRuntime, &mut self.rng) {
                        let factor =
                            if pull { 2.0 + 6.0 * unit(&mut self.rng) } else { 5.0 + 35.0 * unit(&mut self.rng) };
                        latency = latency.mul_f64(factor);
                        let _ = write!(self.line, " [fault slow-runtime: {id} takes {latency:?}]");
                    }
                    self.scheduler.at(now + latency, Event::RuntimeApply { process, id, request });
                    None
                }
            };
            if let Some(kind) = crash
                .or_else(|| self.faults.fires(FaultKind::EngineCrash, &mut self.rng).then_some(FaultKind::EngineCrash))
            {
                self.crash(now, process, kind);
                return;
            }
        }
        let p = &mut self.processes[process];
        if let Some(due) = p.engine.next_wakeup()
            && p.wake_at.is_none_or(|w| due < w)
        {
            p.wake_at = Some(due);
            self.scheduler.at(due, Event::Wake { process });
        }
    }

    pub(super) fn describe_store_result(&mut self, result: &StoreResult) {
        let _ = match result {
            Ok(StoreReply::Object(o)) => write!(self.line, " -> ok rv={}", o.metadata.resource_version),
            Ok(StoreReply::Objects(list)) => write!(self.line, " -> ok {} objects", list.len()),
            Err(e) => write!(self.line, " -> {}", e.code()),
        };
    }

    /// Check invariants and the phase's progress. True when the run is over.
    fn check(&mut self, now: MonoTime) -> bool {
        let wall = self.now(now).wall;
        // The invariants are functions of the store, the runtime and the history (and of time only
        // through lease expiry, which can end a violation but never start one): re-evaluating them
        // after an event that changed none of those could not find anything new.
        if std::mem::take(&mut self.dirty) {
            self.prune_claims(wall);
            let view = View { store: &self.store, runtime: &self.runtime, history: &self.history, now: wall };
            if let Some((invariant, message)) = checker::check_all(&view) {
                return self.fail(now, invariant, message);
            }
        }
        let view = View { store: &self.store, runtime: &self.runtime, history: &self.history, now: wall };
        if self.trace.events() >= self.config.max_events {
            let message = format!("the run did not finish within {} events", self.config.max_events);
            return self.fail(now, "event-budget", message);
        }
        if let Some((key, writes)) = self.heal_writes.iter().find(|(_, n)| **n > OSCILLATION_BOUND) {
            let message =
                format!("{key} was written {writes} times after faults healed, with no client acting: it oscillates");
            return self.fail(now, "no-oscillation", message);
        }
        match self.phase {
            Phase::Safety => false,
            Phase::Liveness { healed_at } => {
                if self.is_quiet(now) && checker::desired_equals_actual(&view).is_ok() {
                    self.stats.convergence_secs = now.since(healed_at).as_secs_f64();
                    self.phase = Phase::Settling { converged_at: now, revision: self.store.resource_version() };
                    return false;
                }
                if now.since(healed_at) > self.config.convergence_bound {
                    let why = checker::desired_equals_actual(&view)
                        .err()
                        .unwrap_or_else(|| self.busy(now).map_or_else(|| "not quiet".into(), |b| b.to_string()));
                    let message = format!(
                        "not converged {}s after faults healed: {why}",
                        self.config.convergence_bound.as_secs()
                    );
                    return self.fail(now, "convergence", message);
                }
                false
            }
            Phase::Settling { converged_at, revision } => {
                if self.store.resource_version() != revision {
                    let changed = self
                        .store
                        .events_since(revision)
                        .ok()
                        .and_then(|mut e| e.next().map(|e| e.object.key().to_string()))
                        .unwrap_or_default();
                    let message = format!("{changed} was rewritten after the world converged with nothing changing");
                    return self.fail(now, "quiescence", message);
                }
                now.since(converged_at) >= self.config.settle
            }
        }
    }

    /// Nothing in flight, no engine work due now, and no reconcile waiting to retry a failure.
    fn is_quiet(&self, now: MonoTime) -> bool {
        self.busy(now).is_none()
    }

    /// What keeps the world from being quiet, if anything (checked after every event of the
    /// liveness phase, so it only says; words are made only for a failure).
    fn busy(&self, now: MonoTime) -> Option<Busy> {
        if self.in_flight > 0 {
            return Some(Busy::InFlight(self.in_flight));
        }
        self.processes.iter().enumerate().find_map(|(i, p)| {
            Some(if p.down {
                Busy::Down(i)
            } else if p.watch_broken {
                Busy::Relisting(i)
            } else if p.engine.in_flight() > 0 {
                Busy::Waiting(i, p.engine.in_flight())
            } else if p.engine.retrying() > 0 {
                Busy::Retrying(i, p.engine.retrying())
            } else if p.engine.next_wakeup().is_some_and(|t| t <= now) {
                Busy::WorkDue(i)
            } else {
                return None;
            })
        })
    }

    fn fail(&mut self, now: MonoTime, invariant: &str, message: String) -> bool {
        self.violations.push(Violation { invariant: invariant.to_string(), message, at: now.to_string() });
        true
    }

    fn report(mut self) -> RunReport {
        self.stats.reconciles = self.processes.iter().map(|p| p.engine.stats().reconciles).sum();
        RunReport {
            seed: self.seed,
            ok: self.violations.is_empty(),
            digest: self.trace.digest(),
            events: self.trace.events(),
            sim_nanos: self.scheduler.now().0,
            faults: self.faults.describe(),
            fault_counts: self.faults.counts(),
            fault_decisions: self.faults.decisions().clone(),
            violations: self.violations,
            stats: self.stats,
            trace: self.trace.take_lines(),
            probes: self.probes,
        }
    }
}
