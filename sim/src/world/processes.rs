//! Engine processes as the world sees them: their clocks, the store's watch events and the
//! runtime's events delivered to them, and the faults that strike a whole process or a whole
//! stream (crash and restart, stale deliveries, a watch broken with Gone, coalesced deliveries, a
//! runtime daemon restart).
//!
//! *Guarantees*: a process never receives anything queued for an earlier incarnation or an
//! earlier stream, and a restarted or relisting process gets a full list of the store at its
//! current version, after which only newer events are delivered to it.

use super::{Event, Latency, World, WorldConfig};
use crate::probes::Probe;
use drydock_engine::lease;
use drydock_engine::store::WatchEvent;
use drydock_engine::{Engine, EngineConfig, Input, MonoTime, Now, OpId, WallTime};
use drydock_faults::FaultKind;
use std::fmt::Write as _;

/// Operation ids of incarnation `life` start at `life << OP_RANGE_BITS`, so replies to a dead
/// incarnation's requests are never mistaken for the new one's.
const OP_RANGE_BITS: u32 = 40;

/// The identity of engine process `index`: its lease holders and the creator label of what it
/// creates carry it.
pub(super) fn identity(index: usize) -> String {
    format!("engine-{index}")
}

/// A fresh engine for process `index` in its `life`th incarnation: no memory of earlier ones.
pub(super) fn boot(config: &WorldConfig, index: usize, life: u32, seed: u64) -> Engine {
    Engine::new(
        EngineConfig {
            identity: identity(index),
            seed,
            first_op: u64::from(life) << OP_RANGE_BITS,
            ..EngineConfig::default()
        },
        config.registry.clone(),
        (config.make_controllers)(&config.controllers),
    )
}

/// The same kind, namespace and name (compared in place: this runs for every delivery).
fn same_object(a: &drydock_engine::api::Object, b: &drydock_engine::api::Object) -> bool {
    a.metadata.name == b.metadata.name && a.kind == b.kind && a.metadata.namespace == b.metadata.namespace
}

impl World<'_> {
    /// The time as process `process` sees it: the world's monotonic time, and a wall clock that
    /// may be skewed (the clock-skew fault).
    pub(super) fn process_now(&self, process: usize, mono: MonoTime) -> Now {
        let wall = self.now(mono).wall.0 as i64 + self.processes[process].skew_ms;
        Now::new(mono, WallTime(wall.max(0) as u64))
    }

    /// Whether a queued watch event was queued on the process's current watch stream (a crash or
    /// a Gone loses everything queued before it).
    pub(super) fn on_current_stream(&self, process: usize, stream: u32) -> bool {
        self.processes[process].watch_gen == stream
    }

    /// The coalesced-watch fault, as `event` is queued for `process`: if the event queued just
    /// before it, still undelivered, is about the same object, that one is never delivered (an
    /// informer handing out the latest state). Only adjacent events are merged, so the cache
    /// never sees a later event of another object before an earlier state of this one.
    pub(super) fn coalesce(&mut self, now: MonoTime, process: usize, event: &WatchEvent) {
        let p = &self.processes[process];
        let previous = p
            .last_queued
            .as_ref()
            .filter(|last| same_object(&last.object, &event.object) && p.last_delivery > now)
            .map(WatchEvent::resource_version);
        if let Some(previous) = previous
            && self.faults.fires(FaultKind::CoalescedWatch, &mut self.rng)
        {
            self.coalesced.insert((process, previous));
            self.stats.other_faults += 1;
        }
        self.processes[process].last_queued = Some(event.clone());
    }

    /// Whether `process` gets watch events now. The watch-gone fault strikes here: the stream
    /// breaks, whatever is queued on it is lost, and a relist follows.
    pub(super) fn watching(&mut self, now: MonoTime, process: usize) -> bool {
        let p = &self.processes[process];
        if p.down || p.watch_broken {
            return false;
        }
        if !self.faults.fires(FaultKind::WatchGone, &mut self.rng) {
            return true;
        }
        let p = &mut self.processes[process];
        p.watch_broken = true;
        p.watch_gen += 1;
        let stream = p.watch_gen;
        let at = now + Latency::millis(50, 1_500).draw(&mut self.rng);
        self.in_flight += 1;
        self.scheduler.at(at, Event::Relist { process, stream });
        let _ = write!(self.line, " [fault watch-gone: p{process}'s watch answered 410 Gone]");
        false
    }

    /// Kill process `process`: its memory is gone (a fresh engine waits to boot), requests it sent
    /// still reach the store and the runtime, their replies and its queued deliveries go nowhere.
    pub(super) fn crash(&mut self, now: MonoTime, process: usize, kind: FaultKind) {
        if self.creates_in_flight.iter().any(|(p, _)| *p == process) {
            self.probe(Probe::CrashDuringCreate);
        }
        // Its connections close: a hung request is over, and the daemon aborts a pull whose client
        // went away. Other requests already sent still apply, but nobody is waiting for them: they
        // are no longer "in flight" for the safety invariants (which judge what an engine does
        // knowingly). What they do when they land is judged by convergence: a container created
        // by a dead incarnation after its object was cleaned up is a leak.
        let ours = |(p, _): &&(usize, OpId)| *p == process;
        let pulls: Vec<(usize, OpId)> = self.history.pulls_in_flight.values().flatten().filter(ours).copied().collect();
        let mut orphans: Vec<(usize, OpId)> = self.hung.iter().filter(ours).copied().collect();
        orphans.extend(self.mutation_owner.keys().filter(ours).copied());
        orphans.extend(self.creates_in_flight.iter().filter(ours).copied());
        for op in &pulls {
            self.cancelled.insert(*op);
        }
        for (p, id) in orphans.into_iter().chain(pulls) {
            self.hung.remove(&(p, id));
            self.record_runtime_settled(p, id);
        }
        // A dead holder holds nothing: its lease claims end with it (the lease object stays until
        // it expires, which is what the survivors wait for).
        let dead = identity(process);
        for claims in self.history.lease_claims.values_mut() {
            claims.retain(|holder, _| lease::holder_identity(holder) != dead);
        }
        self.dirty = true;
        let seed = self.rng_next();
        let p = &mut self.processes[process];
        p.life += 1;
        p.down = true;
        p.watch_gen += 1;
        p.events_gen += 1;
        p.watch_broken = false;
        p.last_queued = None;
        p.wake_at = None;
        p.engine = boot(self.config, process, p.life, seed);
        let at = now + Latency::millis(100, 3_000).draw(&mut self.rng);
        self.in_flight += 1;
        self.scheduler.at(at, Event::Restart { process });
        let _ = write!(self.line, " [fault {kind}: p{process} crashed, restarts at {at}]");
    }

    /// A crashed process starts again from a full list of the store.
    pub(super) fn restart(&mut self, now: MonoTime, process: usize) {
        let p = &mut self.processes[process];
        p.down = false;
        p.last_delivery = now;
        let _ = write!(self.line, "p{process} restarts (life {}) and lists the store", p.life);
        self.resync(now, process);
    }

    /// A process whose watch broke lists the store and watches again from the list's version.
    pub(super) fn relist(&mut self, now: MonoTime, process: usize, stream: u32) {
        let p = &mut self.processes[process];
        if p.down || p.watch_gen != stream {
            let _ = write!(self.line, "p{process} relist dropped (the process restarted meanwhile)");
            return;
        }
        p.watch_broken = false;
        p.last_delivery = now;
        p.last_queued = None;
        let _ = write!(self.line, "p{process} relists after Gone");
        self.probe(Probe::RelistAfterGone);
        self.resync(now, process);
    }

    fn resync(&mut self, now: MonoTime, process: usize) {
        // Every store change is broadcast as it happens, so the events after this version are
        // exactly the ones still to come.
        let resource_version = self.store.resource_version();
        let objects = self.store.list(None, None);
        let _ = write!(self.line, " ({} objects at rv={resource_version})", objects.len());
        self.input(now, process, Input::Resync { objects, resource_version });
    }

    /// The runtime daemon restarts: running containers stop, event streams drop (with the events
    /// of the shutdown), and requests fail for a moment.
    pub(super) fn restart_runtime(&mut self, now: MonoTime) {
        self.runtime.set_now(self.now(now).wall);
        let stopped = self.runtime.restart_daemon();
        self.runtime_events_sent = self.runtime.events().len();
        for p in &mut self.processes {
            p.events_gen += 1;
        }
        let until = now + Latency::millis(300, 3_000).draw(&mut self.rng);
        self.runtime_down_until = Some(until);
        let _ = write!(self.line, "[fault runtime-restart: {stopped} containers stopped, daemon back at {until}] ");
    }

    /// Runtime events reach every process after a watch delay, like store events (no ordering
    /// promise between the two streams).
    pub(super) fn broadcast_runtime_events(&mut self, now: MonoTime) {
        let events = self.runtime.events()[self.runtime_events_sent..].to_vec();
        self.runtime_events_sent = self.runtime.events().len();
        for event in events {
            for process in 0..self.processes.len() {
                if self.processes[process].down {
                    continue;
                }
                let at = now + self.watch_delay(process).draw(&mut self.rng);
                self.in_flight += 1;
                let stream = self.processes[process].events_gen;
                self.scheduler.at(at, Event::Notify { process, stream, event: event.clone() });
            }
        }
    }

    /// Queue every store event not yet sent to the processes, each after its delivery delay.
    pub(super) fn broadcast(&mut self, now: MonoTime) {
        let events: Vec<WatchEvent> = match self.store.events_since(self.broadcast_rv) {
            Ok(events) => events.cloned().collect(),
            Err(_) => Vec::new(),
        };
        self.broadcast_rv = self.store.resource_version();
        for event in events {
            for process in 0..self.processes.len() {
                if !self.watching(now, process) {
                    continue;
                }
                let delay = if self.faults.fires(FaultKind::StaleCache, &mut self.rng) {
                    self.stats.stale_deliveries += 1;
                    self.config.stale_watch_delay.draw(&mut self.rng)
                } else {
                    self.watch_delay(process).draw(&mut self.rng)
                };
                self.coalesce(now, process, &event);
                let p = &mut self.processes[process];
                let at = (now + delay).max(p.last_delivery);
                p.last_delivery = at;
                self.in_flight += 1;
                let stream = p.watch_gen;
                self.scheduler.at(at, Event::Deliver { process, stream, event: event.clone() });
            }
        }
    }

    fn watch_delay(&self, process: usize) -> Latency {
        let delays = &self.config.watch_delays;
        delays.get(process % delays.len().max(1)).copied().unwrap_or(Latency::millis(0, 20))
    }

    fn rng_next(&mut self) -> u64 {
        use rand_core::RngCore;
        self.rng.next_u64()
    }
}
