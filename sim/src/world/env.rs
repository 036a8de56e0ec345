//! What every component of the world draws on: the run's one PRNG and fault plan, the event queue,
//! the run's trace (the current event's records go there), and the run's counters.

use super::latency::Latency;
use crate::runtime::NetworkCreating;
use crate::scheduler::Scheduler;
use crate::trace::{Record, Trace};
use drydock_engine::runtime::{RuntimeEvent, RuntimeRequest, RuntimeResult};
use drydock_engine::store::{StoreRequest, StoreResult, WatchEvent};
use drydock_engine::{MonoTime, OpId};
use drydock_faults::{FaultKind, FaultPlan};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::time::Duration;

/// Something scheduled to happen.
#[derive(Debug)]
pub(super) enum Event {
    /// The workload's `i`th operation.
    Client(usize),
    Deliver {
        process: usize,
        /// The watch stream this was queued on (see `Watches`).
        stream: u32,
        event: WatchEvent,
    },
    StoreApply {
        process: usize,
        id: OpId,
        /// Boxed, as are the runtime's requests and results: an event waits in the scheduler's
        /// slab, whose slots are as big as the biggest event (328 bytes unboxed, 96 boxed).
        request: Box<StoreRequest>,
    },
    StoreReply {
        process: usize,
        id: OpId,
        result: StoreResult,
    },
    RuntimeApply {
        process: usize,
        id: OpId,
        request: Box<RuntimeRequest>,
    },
    RuntimeReply {
        process: usize,
        id: OpId,
        result: Box<RuntimeResult>,
    },
    /// A runtime event reaching a process.
    Notify {
        process: usize,
        /// The runtime event stream this was queued on (see `Watches`).
        stream: u32,
        event: RuntimeEvent,
    },
    Wake {
        process: usize,
    },
    /// A process's runtime event stream, broken by a daemon restart, is re-established: the
    /// process is told events may have been missed (as the Docker follower does on reconnect).
    RuntimeResynced {
        process: usize,
        stream: u32,
    },
    /// The runtime's clock reaches the time a container's main process ends by itself.
    RuntimeDue,
    /// A removal in progress completes: the container is gone.
    RemovalDone {
        container: String,
    },
    /// A network create in progress completes: the network exists.
    NetworkCreateDone(NetworkCreating),
    /// A crashed process comes back: a fresh engine, a full list of the store.
    Restart {
        process: usize,
    },
    /// A process whose watch broke with Gone lists the store and watches again.
    Relist {
        process: usize,
        stream: u32,
    },
    /// `disrupt-while-uncertain`: an outside act aimed at a create whose outcome is unknown.
    Disrupt(Disruption),
    Heal,
    /// The liveness judge looks at the world at a time it set: the convergence bound, or the end
    /// of the settle period (nothing else may happen then).
    Judge,
    /// Log reader `reader` reads (or opens, or gives up).
    ReadLogs {
        reader: usize,
    },
}

/// What `disrupt-while-uncertain` does to a create whose outcome is unknown.
#[derive(Debug)]
pub(super) enum Disruption {
    /// `docker rm -f` of the container it made.
    RemoveContainer(String),
    /// `docker rmi -f` of the image it named, as written.
    RemoveImage(String),
    /// The runtime daemon restarts.
    RestartDaemon,
}

impl Disruption {
    /// The disruption as the trace records it.
    pub(super) fn traced(&self) -> crate::trace::Disruption<'_> {
        match self {
            Disruption::RemoveContainer(name) => crate::trace::Disruption::RemoveContainer(name),
            Disruption::RemoveImage(reference) => crate::trace::Disruption::RemoveImage(reference),
            Disruption::RestartDaemon => crate::trace::Disruption::RestartDaemon,
        }
    }
}

impl Event {
    /// Whether handling this event may change the store, the runtime or what the checkers have
    /// observed. (Deliveries, wakes and store replies change only engine memory.)
    pub(super) fn may_change_state(&self) -> bool {
        !matches!(
            self,
            Event::Deliver { .. }
                | Event::Wake { .. }
                | Event::Notify { .. }
                | Event::RuntimeResynced { .. }
                | Event::StoreReply { .. }
        )
    }
}

/// Counters of a run, for reports.
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
    /// The most work one object (or process, per object) did in a minute after the heal.
    pub work_after_heal: crate::checker::efficiency::WorkPeaks,
}

pub(super) struct Env {
    pub rng: ChaCha8Rng,
    pub faults: FaultPlan,
    queue: Scheduler<Event>,
    /// Events on the queue that something still owes: requests, replies, deliveries, restarts.
    /// While any is queued the world is not quiet.
    pub outstanding: u64,
    /// The run's trace: what each event recorded.
    pub trace: Trace,
    pub stats: RunStats,
    /// The run explains itself: faults that fire are listed in `fired`.
    pub explaining: bool,
    /// Faults that fired during the current event, if explaining.
    pub fired: Vec<FaultKind>,
}

impl Env {
    pub fn new(rng: ChaCha8Rng, faults: FaultPlan, keep_trace: bool) -> Self {
        Env {
            rng,
            faults,
            queue: Scheduler::default(),
            outstanding: 0,
            trace: Trace::new(keep_trace),
            stats: RunStats::default(),
            explaining: keep_trace,
            fired: Vec::new(),
        }
    }

    /// Whether fault `kind` fires now (one numbered draw, if the kind is enabled).
    pub fn fires(&mut self, kind: FaultKind) -> bool {
        let fired = self.faults.fires(kind, &mut self.rng);
        if fired && self.explaining {
            self.fired.push(kind);
        }
        fired
    }

    /// Whether the plan has fault `kind` at all (healed or not); no draw.
    /// Whether `kind` is enabled and not healed yet.
    pub fn active(&self, kind: FaultKind) -> bool {
        self.faults.rate(kind) > 0.0
    }

    pub fn enables(&self, kind: FaultKind) -> bool {
        self.faults.enabled().any(|(k, rate)| k == kind && rate > 0.0)
    }

    pub fn draw(&mut self, latency: Latency) -> Duration {
        latency.draw(&mut self.rng)
    }

    /// Schedule `event`, which nothing owes (a client act, a wake, the heal).
    pub fn at(&mut self, at: MonoTime, event: Event) {
        self.queue.at(at, event);
    }

    /// Schedule `event`, which is owed: the world is not quiet until it happened.
    pub fn owe(&mut self, at: MonoTime, event: Event) {
        self.outstanding += 1;
        self.queue.at(at, event);
    }

    /// An owed event happened (or will never happen).
    pub fn paid(&mut self) {
        self.outstanding -= 1;
    }

    pub fn pop(&mut self) -> Option<(MonoTime, Event)> {
        self.queue.pop()
    }

    pub fn now(&self) -> MonoTime {
        self.queue.now()
    }

    /// Record what happened in the current event.
    pub fn record(&mut self, record: Record<'_>) {
        self.trace.record(&record);
    }
}
