//! The engine: a deterministic state machine that turns watch events and replies into store
//! and runtime requests.
//!
//! ```text
//! engine.handle(now, Input)           // a watch event, a store reply, a runtime reply
//! engine.poll(now) -> Option<Output>  // the next request to perform, if any
//! engine.next_wakeup() -> Option<MonoTime>
//! ```
//!
//! A driver feeds inputs, performs every output and reports its result with the same `OpId`, and
//! calls `poll` again no later than `next_wakeup`. The engine reads no clock, performs no I/O and
//! draws randomness only from a PRNG seeded by [`EngineConfig::seed`].

use crate::api::{ObjectKey, Uid};
use crate::backoff::Backoff;
use crate::cache::Cache;
use crate::controller::{Controller, OpId, ReconcileResult, Watch};
use crate::logs::Channel;
use crate::runtime::{RuntimeEvent, RuntimeRequest, RuntimeResult};
use crate::store::{Registry, StoreRequest, StoreResult, WatchEvent};
use crate::time::{MonoTime, Now};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

mod detached;
mod diagnostics;
mod dispatch;
mod gate;
mod reconcile;
mod runtime_requests;
mod trigger;

use trigger::Triggers;
pub use trigger::{Trigger, Via};

#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Who this engine process is: put on what it creates, and used as lease holder.
    pub identity: String,
    /// Seed for backoff jitter.
    pub seed: u64,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// A runtime request without an answer after this long is cancelled and reported to its
    /// controller as uncertain (it may have been applied).
    pub runtime_timeout: Duration,
    /// The same for pulls, which legitimately take long.
    pub pull_timeout: Duration,
    /// Operation ids start after this one. A driver that restarts an engine while replies to the
    /// previous one may still arrive gives the new one a fresh range, so no stale reply is
    /// mistaken for one of its own.
    pub first_op: u64,
    /// The earlier life of this engine, if there was one, stopped with no runtime request in
    /// flight (its driver waited for them and recorded a clean stop). Then nothing it sent can
    /// still land, and [`Context::earlier_lives_pending`](crate::Context::earlier_lives_pending)
    /// is `None` from the start. `false` (the default) assumes a crash: requests of an earlier
    /// life may land until [`EngineConfig::earlier_lives_patience`] after boot.
    pub predecessor_stopped_cleanly: bool,
    /// Record what queued each reconcile ([`Origin::trigger`]), for a driver that explains a
    /// run. Off by default: it costs a map insert per queued key and changes nothing else.
    pub explain: bool,
    /// At most this many runtime requests inside the runtime at once, counting those given up on
    /// that may still run there ([`Output::Detach`]); the rest wait in the engine, their timeouts
    /// not yet started. A runtime that slows down under load is not flooded.
    pub max_runtime_in_flight: usize,
    /// How long a detached change keeps its place and its object's turn without a reply before
    /// the engine cancels it for good ([`Output::Cancel`]) and sends the object's next change.
    pub detached_patience: Duration,
    /// After a crash, how long after boot a request the earlier life sent may still land (Docker
    /// carries on with a request whose client died). The default is the runtime timeout, 30 s:
    /// a Docker that holds such a request longer (stalled) may land a create after the new life
    /// has looked and found nothing; the harvester collects such a container. Longer values
    /// delay every object an earlier life may have been creating by as much after a kill -9.
    pub earlier_lives_patience: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            identity: "drydock-0".into(),
            seed: 0,
            backoff_base: Duration::from_millis(10),
            backoff_max: Duration::from_secs(30),
            runtime_timeout: Duration::from_secs(30),
            pull_timeout: Duration::from_secs(600),
            first_op: 0,
            predecessor_stopped_cleanly: false,
            explain: false,
            max_runtime_in_flight: 32,
            detached_patience: Duration::from_secs(120),
            earlier_lives_patience: Duration::from_secs(30),
        }
    }
}

/// Something the driver tells the engine.
#[derive(Clone, Debug)]
pub enum Input {
    /// The next event of the watch stream: in resource-version order among the events of its
    /// kind (one watch per kind); kinds may lag behind one another.
    Watch(WatchEvent),
    /// A full list taken at `resource_version` (initial sync, or after `Gone`). Replaces the cache.
    Resync {
        objects: Vec<Arc<crate::api::Object>>,
        resource_version: u64,
    },
    StoreDone {
        id: OpId,
        result: StoreResult,
    },
    RuntimeDone {
        id: OpId,
        result: RuntimeResult,
    },
    /// A runtime event (a hint: a container started, died, went away).
    RuntimeEvent(RuntimeEvent),
    /// The runtime's event stream was lost and is back: events in between may be missing, so
    /// what the controllers know of the runtime is looked at again.
    RuntimeResync,
}

/// Something the engine asks the driver to do, then report back with the same `id`.
#[derive(Clone, Debug)]
pub enum Output {
    Store {
        id: OpId,
        request: StoreRequest,
        origin: Origin,
        /// The next output is another store write of the same reconcile: a crash right after this
        /// one leaves that reconcile's writes half done.
        write_follows: bool,
    },
    Runtime {
        id: OpId,
        request: RuntimeRequest,
        origin: Origin,
    },
    /// Stop runtime request `id` if it can still be stopped. Its reply, if one comes, is ignored.
    Cancel {
        id: OpId,
    },
    /// The engine stopped waiting for runtime request `id` (its timeout), but it changes the world
    /// and may still be running inside the runtime: let it run to its end and report its reply
    /// with [`Input::RuntimeDone`] as usual. The engine only learns from it that the request has
    /// left the runtime; until then the object's next change waits. A [`Output::Cancel`] of the
    /// same id may follow (the engine's patience ran out): then drop it.
    Detach {
        id: OpId,
    },
    /// Lines for an object's log streams (see [`crate::logs`]): nothing to report back. Emitted
    /// before the request it concerns, so a reader never sees a status before its diagnostic.
    Log(crate::logs::LogRecord),
}

/// Which reconcile asked for a request: its controller and key, and which of this engine's
/// reconciles it was. For drivers that trace, log, check or inject faults by request; the engine
/// itself never reads it back.
///
/// *Guarantees*: `reconcile` numbers this engine's reconciles from 1, in the order they ran, so
/// requests with equal numbers come from one reconcile. A reconcile of a (controller, key) is in
/// progress until the replies to all its *store* requests were handed back (runtime requests are
/// not waited for: their replies queue a new reconcile); no other reconcile of that controller
/// and key issues a request meanwhile (the work queue hands a key out once until it is done).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The controller's [`Controller::name`].
    pub controller: Arc<str>,
    pub key: Arc<ObjectKey>,
    /// The number of the reconcile that issued the request, per engine, from 1.
    pub reconcile: u64,
    /// What queued that reconcile, if the engine explains itself ([`EngineConfig::explain`]).
    pub trigger: Option<Arc<Trigger>>,
}

impl Origin {
    fn new(controller: &Arc<str>, key: &ObjectKey, reconcile: u64, trigger: Option<Arc<Trigger>>) -> Self {
        Origin { controller: controller.clone(), key: Arc::new(key.clone()), reconcile, trigger }
    }
}

type WorkKey = (usize, ObjectKey);

#[derive(Debug)]
struct PendingOp {
    work: WorkKey,
    /// `Some(is_read)` for store requests, `None` for runtime requests.
    store_read: Option<bool>,
    issued_at: MonoTime,
    /// Runtime requests only: when to give up on the answer.
    deadline: Option<MonoTime>,
    /// Runtime requests that change the world: what it was, for the object's `system` stream.
    what: Option<Box<str>>,
    /// A store request whose failure the controller handles itself
    /// ([`crate::controller::Context::store_handling_failure`]).
    failure_handled: bool,
    /// A store write to an existing object: its key and uid (a NotFound shows it gone).
    writes_to: Option<(ObjectKey, Uid)>,
    /// Runtime requests only: given up on, it is detached rather than cancelled (see [`gate`]).
    detaches: bool,
}

/// A runtime request waiting in the gate to go.
#[derive(Debug)]
struct HeldRuntime {
    request: RuntimeRequest,
    origin: Origin,
    timeout: Duration,
}

/// A reconcile whose store requests have not all replied yet.
#[derive(Debug)]
struct ActiveReconcile {
    outstanding: usize,
    made_reads: bool,
    made_writes: bool,
    write_error: Option<String>,
    /// A request whose failure the controller handles itself failed: run again at once.
    handled_failure: Option<String>,
    result: ReconcileResult,
}

/// Counters for reports and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub reconciles: u64,
    pub reconcile_errors: u64,
    pub store_requests: u64,
    pub runtime_requests: u64,
    /// Runtime requests given up on at their deadline.
    pub runtime_timeouts: u64,
    /// The most runtime requests inside the runtime at once (see
    /// [`EngineConfig::max_runtime_in_flight`]).
    pub runtime_peak_in_flight: usize,
    /// Detached runtime requests given up for good at the end of their patience.
    pub runtime_abandoned: u64,
}

pub struct Engine {
    config: EngineConfig,
    registry: Registry,
    controllers: Vec<Box<dyn Controller>>,
    /// Controller names, shared by the origins of their requests.
    names: Vec<Arc<str>>,
    watches: Vec<(usize, Watch)>,
    cache: Cache,
    queue: crate::queue::WorkQueue<WorkKey>,
    backoff: Backoff<WorkKey>,
    rng: ChaCha8Rng,
    outbox: VecDeque<Output>,
    next_op: u64,
    /// Requests in flight (hashed: looked up by id, never iterated).
    pending: crate::fixed::FixedMap<OpId, PendingOp>,
    /// Runtime requests in flight by deadline.
    deadlines: std::collections::BTreeSet<(MonoTime, OpId)>,
    /// Runtime requests on their way out: held, sent, detached (with whose they are and what
    /// they do).
    gate: gate::Gate<HeldRuntime, (WorkKey, Option<Box<str>>)>,
    /// The keys with changes given up on that may still run inside the runtime, and when the
    /// last of each left.
    detached: detached::Detached,
    /// Namespaces seen gone while objects of them were still cached (a namespace that vanished
    /// with objects left): those objects' cleanup is every engine's (see `responsible_for`).
    gone_namespaces: crate::fixed::FixedSet<smol_str::SmolStr>,
    /// Uids of objects whose creation this engine saw on the watch: no earlier life of it can have
    /// acted on them.
    seen_created: crate::fixed::FixedSet<crate::api::Uid>,
    /// Keys whose last reconcile asked for a retry (`Action::retry_after`).
    retries: crate::fixed::FixedSet<WorkKey>,
    /// Keys backing off after a failure, until their retry is due: events about other objects
    /// (a child, an owner) do not bring them back earlier; an event about the key's own object
    /// does (it may be what the failure waited for, e.g. the cache catching up after a
    /// conflict).
    holding: crate::fixed::FixedMap<WorkKey, MonoTime>,
    /// The first time this engine was handed: requests of an earlier life settle a runtime
    /// timeout later.
    booted_at: Option<MonoTime>,
    /// Reconciles with requests in flight (hashed: looked up, never iterated).
    active: crate::fixed::FixedMap<WorkKey, ActiveReconcile>,
    /// What queued each queued key, if the engine explains itself.
    triggers: Triggers<WorkKey>,
    stats: EngineStats,
}

impl Engine {
    pub fn new(config: EngineConfig, registry: Registry, controllers: Vec<Box<dyn Controller>>) -> Self {
        let next_op = config.first_op;
        let gate = gate::Gate::new(config.max_runtime_in_flight, config.detached_patience);
        let watches =
            controllers.iter().enumerate().flat_map(|(i, c)| c.watches().into_iter().map(move |w| (i, w))).collect();
        let names = controllers.iter().map(|c| Arc::from(c.name())).collect();
        let mut cache = Cache::default();
        for index in controllers.iter().flat_map(|c| c.indexes()) {
            cache.add_index(index);
        }
        Engine {
            names,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            backoff: Backoff::new(config.backoff_base, config.backoff_max),
            triggers: Triggers::new(config.explain),
            config,
            registry,
            controllers,
            watches,
            cache,
            queue: Default::default(),
            outbox: VecDeque::new(),
            next_op,
            pending: Default::default(),
            deadlines: Default::default(),
            gate,
            detached: Default::default(),
            gone_namespaces: Default::default(),
            booted_at: None,
            retries: Default::default(),
            holding: Default::default(),
            seen_created: Default::default(),
            active: Default::default(),
            stats: EngineStats::default(),
        }
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats { runtime_peak_in_flight: self.gate.peak_inside(), ..self.stats.clone() }
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Keys whose last reconcile failed, or asked to retry failed work, and that wait for it.
    pub fn retrying(&self) -> usize {
        self.backoff.len() + self.retries.len()
    }

    /// Requests issued and not yet answered: held ones, and changes given up on that may still
    /// run inside the runtime (the engine acts again when they leave it) included.
    pub fn in_flight(&self) -> usize {
        self.pending.len() + self.gate.detached()
    }

    /// Runtime requests sent and not answered, or detached: what may be inside the runtime.
    pub fn runtime_inside(&self) -> usize {
        self.gate.inside()
    }

    /// Runtime requests waiting in the engine for a place or their object's turn.
    pub fn runtime_held(&self) -> usize {
        self.gate.held()
    }

    /// Runtime requests given up on that may still run inside the runtime.
    pub fn runtime_detached(&self) -> usize {
        self.gate.detached()
    }

    /// Whether a change given up on left the runtime less than
    /// [`DETACHED_SETTLE`](crate::toolkit::DETACHED_SETTLE) before `now`: cleanup of
    /// its object waits until then, so the engine is not yet quiet.
    pub fn settling_detached(&self, now: MonoTime) -> bool {
        self.detached.settling(now)
    }

    /// From when no runtime request of an earlier life of this engine can still land.
    fn earlier_lives_settle_at(&self, now: Now) -> MonoTime {
        let booted = self.booted_at.unwrap_or(now.mono);
        if self.config.predecessor_stopped_cleanly { booted } else { booted + self.config.earlier_lives_patience }
    }

    /// The first time the engine is handed anything: queue every controller's boot keys.
    fn boot(&mut self, now: Now) {
        if self.booted_at.is_some() {
            return;
        }
        self.booted_at = Some(now.mono);
        for (index, controller) in self.controllers.iter().enumerate() {
            for key in controller.boot_keys() {
                self.triggers.add(&mut self.queue, (index, key), now.mono, || Trigger::Boot);
            }
        }
    }

    /// Feed one input.
    pub fn handle(&mut self, now: Now, input: Input) {
        self.boot(now);
        match input {
            Input::Watch(event) => self.watched(now, &event),
            Input::Resync { objects, resource_version } => self.resynced(now, objects, resource_version),
            Input::StoreDone { id, result } => self.store_done(now, id, result),
            Input::RuntimeEvent(event) => self.runtime_event(now, &event),
            Input::RuntimeResync => {
                for (index, controller) in self.controllers.iter_mut().enumerate() {
                    for key in controller.on_runtime_resync(now) {
                        self.triggers.add(&mut self.queue, (index, key), now.mono, || Trigger::RuntimeResync);
                    }
                }
            }
            Input::RuntimeDone { id, result } => self.runtime_done(now, id, result),
        }
    }

    /// Lines for the object at `key`, as the cache knows it (none for an object it does not have).
    fn log(&mut self, now: Now, key: &ObjectKey, channel: Channel, lines: Vec<String>) {
        let Some(object) = self.cache.get(key) else { return };
        let forward_to = object.metadata.owner_references.iter().find(|r| r.controller).map(|r| r.uid.clone());
        self.outbox.push_back(Output::Log(crate::logs::LogRecord {
            uid: object.metadata.uid.clone(),
            key: key.clone(),
            channel,
            time: now.wall,
            lines,
            forward_to,
        }));
    }

    /// The next request to perform, running due reconciles as needed.
    pub fn poll(&mut self, now: Now) -> Option<Output> {
        self.boot(now);
        self.expire_deadlines(now);
        self.abandon_detached(now);
        self.detached.forget_settled(now.mono);
        loop {
            self.send_held(now);
            if let Some(output) = self.outbox.pop_front() {
                return Some(output);
            }
            let work = self.queue.pop_ready(now.mono)?;
            self.reconcile(now, work);
        }
    }

    /// When `poll` should next be called if no input arrives.
    pub fn next_wakeup(&self) -> Option<MonoTime> {
        let deadline = self.deadlines.first().map(|(at, _)| *at);
        [self.queue.next_due(), deadline, self.gate.next_abandon(), self.detached.settles_at()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Route a runtime event to the object whose uid its container carries.
    fn runtime_event(&mut self, now: Now, event: &RuntimeEvent) {
        let Some(uid) = event.labels.get(crate::api::names::LABEL_OWNER_UID) else { return };
        let Some(key) = self.cache.get_by_uid(&crate::api::Uid(uid.clone())).map(|o| o.key()) else { return };
        for (index, controller) in self.controllers.iter_mut().enumerate() {
            if controller.on_runtime_event(now, &key, event) {
                let why = || Trigger::RuntimeEvent {
                    container_id: event.container_id.clone(),
                    action: format!("{:?}", event.action),
                };
                self.triggers.add(&mut self.queue, (index, key.clone()), now.mono, why);
            }
        }
    }
}
