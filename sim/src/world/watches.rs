//! Watch streams: store events and runtime events on their way to each process, and the stream
//! faults (`stale-cache` delays a delivery, `watch-gone` breaks a store watch with 410 Gone,
//! `coalesced-watch` merges two adjacent events of one object).
//!
//! *Guarantees*: store events reach a process in resource-version order within each ordering
//! group (a delivery is never scheduled before the previous one of its group): the whole stream
//! ([`WatchOrdering::Total`]), each kind, as with one Kubernetes watch per kind
//! ([`WatchOrdering::PerKind`]), or each object ([`WatchOrdering::PerObject`]). Across groups
//! there is no ordering: with [`KindLag`], a group falls behind on its own for a while, so a process
//! may see a namespace terminating before it sees a child created earlier, or one object's delete
//! before another object's earlier update. Nothing queued on an earlier stream (before a crash, a
//! Gone or a runtime daemon restart) is ever delivered. Only adjacent events of one group are
//! coalesced, so a cache never sees an object's later state and then an earlier one.
//!
//! *Simplification*: a Gone breaks every group of a process at once and the relist lists every
//! kind at one version (a snapshot more consistent than separate per-kind relists would give).

use super::env::{Env, Event};
use super::latency::Latency;
use super::processes::Processes;
use crate::trace::{Fault, Record};
use drydock_engine::MonoTime;
use drydock_engine::api::{Object, SmolStr};
use drydock_engine::runtime::RuntimeEvent;
use drydock_engine::store::{Store, WatchEvent};
use drydock_faults::FaultKind;
use std::collections::{BTreeMap, BTreeSet};

/// Which events of one process's store watch keep their resource-version order among themselves.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum WatchOrdering {
    /// One ordered stream of every kind.
    #[default]
    Total,
    /// One ordered stream per kind (a watch, or an informer, per kind); kinds drift apart.
    PerKind,
    /// Only the events of one object keep their order.
    PerObject,
}

/// Independent lag of ordering groups: an event is held back by `lag` with probability `chance`,
/// and the rest of its group queues behind it while other groups flow.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct KindLag {
    pub chance: f64,
    pub lag: Latency,
}

impl KindLag {
    /// What the two-process worlds use.
    pub const DEFAULT: KindLag = KindLag { chance: 0.05, lag: Latency::millis(200, 3_000) };
}

/// Watch streams (store events and runtime events to processes) and the magnitudes of their faults
/// (`stale-cache`, `watch-gone`; `coalesced-watch` has none).
#[derive(Clone, Debug)]
pub struct WatchKnobs {
    /// Delivery delay of a healthy stream, per process (process i uses entry i mod len).
    pub delays: Vec<Latency>,
    /// Delivery delay when the stale-cache fault fires.
    pub stale: Latency,
    /// A watch broken with Gone relists after this long.
    pub relist_after: Latency,
    /// Which events keep their relative order.
    pub ordering: WatchOrdering,
    /// How ordering groups fall behind independently (`None`: only through the delays above).
    pub group_lag: Option<KindLag>,
}

impl WatchKnobs {
    /// Per-kind streams that lag independently, with these per-process delays.
    pub fn per_kind(delays: Vec<Latency>) -> Self {
        WatchKnobs {
            delays,
            ordering: WatchOrdering::PerKind,
            group_lag: Some(KindLag::DEFAULT),
            ..WatchKnobs::default()
        }
    }
}

impl Default for WatchKnobs {
    fn default() -> Self {
        WatchKnobs {
            delays: vec![Latency::millis(0, 20)],
            stale: Latency::millis(500, 5_000),
            relist_after: Latency::millis(50, 1_500),
            ordering: WatchOrdering::Total,
            group_lag: None,
        }
    }
}

/// An ordering group: the whole stream, a kind, or one object.
type Group = (SmolStr, Option<SmolStr>, SmolStr);

/// One process's two streams.
#[derive(Default)]
struct Streams {
    /// Store events are delivered in order within a group: never before the previous one. A
    /// group missing here delivers from `since` on.
    last_delivery: BTreeMap<Group, MonoTime>,
    /// When the stream (re)started: no delivery of it is scheduled before.
    since: MonoTime,
    /// The store watch stream: deliveries queued on an older one are lost (crash, Gone).
    watch_gen: u32,
    /// The watch broke with Gone and the relist has not happened yet.
    broken: bool,
    /// The runtime event stream: events queued on an older one are lost (crash, daemon restart).
    events_gen: u32,
    /// The last store event queued, per group (for coalescing).
    last_queued: BTreeMap<Group, WatchEvent>,
}

impl Streams {
    fn last_delivery(&self, group: &Group) -> MonoTime {
        self.last_delivery.get(group).copied().unwrap_or(self.since)
    }

    /// Forget every group: the stream starts again at `now`.
    fn restart(&mut self, now: MonoTime) {
        self.last_delivery.clear();
        self.last_queued.clear();
        self.since = now;
    }
}

/// What happens to a store event as it reaches its process.
pub(super) enum Delivery {
    Deliver(WatchEvent),
    /// Its stream broke after it was queued.
    Lost(WatchEvent),
    /// The next event of the same object replaces it.
    Coalesced(WatchEvent),
}

pub(super) struct Watches {
    knobs: WatchKnobs,
    streams: Vec<Streams>,
    /// Store events up to this version have been queued for every process.
    broadcast_rv: u64,
    /// Deliveries (process, resource version) merged into the next one.
    coalesced: BTreeSet<(usize, u64)>,
}

/// The same kind, namespace and name (compared in place: this runs for every delivery).
fn same_object(a: &Object, b: &Object) -> bool {
    a.metadata.name == b.metadata.name && a.kind == b.kind && a.metadata.namespace == b.metadata.namespace
}

impl Watches {
    pub fn new(knobs: &WatchKnobs, processes: usize) -> Self {
        Watches {
            knobs: knobs.clone(),
            streams: (0..processes).map(|_| Streams::default()).collect(),
            broadcast_rv: 0,
            coalesced: BTreeSet::new(),
        }
    }

    /// Queue every store event not yet sent to every watching process, each after its delivery
    /// delay.
    pub fn broadcast(&mut self, env: &mut Env, store: &Store, processes: &Processes, now: MonoTime) {
        let events: Vec<WatchEvent> = match store.events_since(self.broadcast_rv) {
            Ok(events) => events.cloned().collect(),
            Err(_) => Vec::new(),
        };
        self.broadcast_rv = store.resource_version();
        for event in events {
            for process in 0..self.streams.len() {
                if !self.watching(env, processes, now, process) {
                    continue;
                }
                let mut delay = if env.fires(FaultKind::StaleCache) {
                    env.stats.stale_deliveries += 1;
                    env.draw(self.knobs.stale)
                } else {
                    env.draw(self.delay(process))
                };
                if let Some(lag) = self.knobs.group_lag
                    && drydock_faults::unit(&mut env.rng) < lag.chance
                {
                    delay += env.draw(lag.lag);
                }
                let group = self.group(&event.object);
                self.coalesce(env, now, process, &group, &event);
                let s = &mut self.streams[process];
                let at = (now + delay).max(s.last_delivery(&group));
                s.last_delivery.insert(group, at);
                env.owe(at, Event::Deliver { process, stream: s.watch_gen, event: event.clone() });
            }
        }
    }

    /// Whether `process` gets store events now. The watch-gone fault strikes here: the stream
    /// breaks, whatever is queued on it is lost, and a relist follows.
    fn watching(&mut self, env: &mut Env, processes: &Processes, now: MonoTime, process: usize) -> bool {
        if processes.is_down(process) || self.streams[process].broken {
            return false;
        }
        if !env.fires(FaultKind::WatchGone) {
            return true;
        }
        let s = &mut self.streams[process];
        s.broken = true;
        s.watch_gen += 1;
        let stream = s.watch_gen;
        let at = now + env.draw(self.knobs.relist_after);
        env.owe(at, Event::Relist { process, stream });
        env.record(Record::Fault(Fault::WatchGone { process }));
        false
    }

    /// The coalesced-watch fault, as `event` is queued for `process`: if the event queued just
    /// before it, still undelivered, is about the same object, that one is never delivered (an
    /// informer handing out the latest state).
    fn coalesce(&mut self, env: &mut Env, now: MonoTime, process: usize, group: &Group, event: &WatchEvent) {
        let s = &self.streams[process];
        let previous = s
            .last_queued
            .get(group)
            .filter(|last| same_object(&last.object, &event.object) && s.last_delivery(group) > now)
            .map(WatchEvent::resource_version);
        if let Some(previous) = previous
            && env.fires(FaultKind::CoalescedWatch)
        {
            self.coalesced.insert((process, previous));
            env.stats.other_faults += 1;
        }
        self.streams[process].last_queued.insert(group.clone(), event.clone());
    }

    /// A store event queued on `stream` reaches `process`.
    pub fn arrive(&mut self, process: usize, stream: u32, event: WatchEvent) -> Delivery {
        if self.streams[process].watch_gen != stream {
            Delivery::Lost(event)
        } else if self.coalesced.remove(&(process, event.resource_version())) {
            Delivery::Coalesced(event)
        } else {
            Delivery::Deliver(event)
        }
    }

    /// Runtime events reach every live process after a watch delay, like store events (no
    /// ordering promise between the two streams).
    pub fn broadcast_runtime(&mut self, env: &mut Env, fresh: &[RuntimeEvent], processes: &Processes, now: MonoTime) {
        for event in fresh {
            for process in 0..self.streams.len() {
                if processes.is_down(process) {
                    continue;
                }
                let at = now + env.draw(self.delay(process));
                let stream = self.streams[process].events_gen;
                env.owe(at, Event::Notify { process, stream, event: event.clone() });
            }
        }
    }

    /// Whether a runtime event queued on `stream` still reaches `process`.
    pub fn runtime_stream_open(&self, process: usize, stream: u32) -> bool {
        self.streams[process].events_gen == stream
    }

    /// The runtime daemon restarted: every runtime event stream drops, with the events not yet
    /// sent (the caller takes them from the runtime and lets them go).
    pub fn drop_runtime_streams(&mut self) {
        for s in &mut self.streams {
            s.events_gen += 1;
        }
    }

    /// The runtime daemon is back at `at`: every live process's follower reconnects a watch delay
    /// later and says so.
    pub fn resync_runtime_streams(&mut self, env: &mut Env, processes: &Processes, at: MonoTime) {
        for process in 0..self.streams.len() {
            if processes.is_down(process) {
                continue;
            }
            let when = at + env.draw(self.delay(process));
            let stream = self.streams[process].events_gen;
            env.owe(when, Event::RuntimeResynced { process, stream });
        }
    }

    /// `process` crashed: both its streams end with whatever was queued on them.
    pub fn close(&mut self, process: usize) {
        let s = &mut self.streams[process];
        s.watch_gen += 1;
        s.events_gen += 1;
        s.broken = false;
        s.last_queued.clear();
    }

    /// `process` listed the store at `now` (after a restart): it watches from there.
    pub fn restarted(&mut self, process: usize, now: MonoTime) {
        self.streams[process].restart(now);
    }

    /// A relist after Gone for `stream` is due: whether it still applies (the process may have
    /// crashed meanwhile); if so, the stream is whole again from `now`.
    pub fn relisted(&mut self, process: usize, stream: u32, processes: &Processes, now: MonoTime) -> bool {
        let s = &mut self.streams[process];
        if processes.is_down(process) || s.watch_gen != stream {
            return false;
        }
        s.broken = false;
        s.restart(now);
        true
    }

    /// A broken watch waiting for its relist.
    pub fn broken(&self, process: usize) -> bool {
        self.streams[process].broken
    }

    /// The ordering group of an event about `object`.
    fn group(&self, object: &Object) -> Group {
        match self.knobs.ordering {
            WatchOrdering::Total => Group::default(),
            WatchOrdering::PerKind => (object.kind.clone(), None, SmolStr::default()),
            WatchOrdering::PerObject => {
                (object.kind.clone(), object.metadata.namespace.clone(), object.metadata.name.clone())
            }
        }
    }

    fn delay(&self, process: usize) -> Latency {
        let delays = &self.knobs.delays;
        delays.get(process % delays.len().max(1)).copied().unwrap_or(Latency::millis(0, 20))
    }
}
