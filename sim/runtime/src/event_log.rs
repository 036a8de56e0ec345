//! The event log: the events the runtime records, as Docker 20.10's daemon keeps them. The
//! container events of the runtime contract (`create`, `start`, `die`, `destroy`) are kept in
//! full; the others (a container's `kill` and `stop`, a network's `create`, `connect`,
//! `disconnect`, `destroy`, a volume's `create`, `mount`, `unmount`, `destroy`, an image's
//! `pull`, `untag`, `delete`) only by what they are, as they take their places in Docker's
//! replay window: Docker holds its last [`EVENTS_KEPT`] events of every type for a query with
//! `since` to replay, and hands every event to each live stream (`docker events`, the engine's
//! runtime watch, which asks for container events only) as it happens, however many there are.

use drydock_engine::WallTime;
use drydock_engine::runtime::RuntimeEvent;
use std::collections::VecDeque;

/// How many events Docker 20.10 keeps for replay (its daemon's `eventsLimit`): an events query
/// with `since` sees at most the daemon's last 256 events of any type, while a live stream sees
/// every event. (Checked on Docker 20.10.24: after 280 events, a replay from the epoch returned
/// the last 256; 280 volume events push a container's `create` out just as container events do.)
pub const EVENTS_KEPT: usize = 256;

/// An event in the replay window.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kept {
    /// A container event of the runtime contract: what a `since` query of a container replays.
    Container(RuntimeEvent),
    /// Any other event (its type and action, as `docker events` shows them): it only takes its
    /// place in the window.
    Other(&'static str),
}

/// The events recorded: the last [`EVENTS_KEPT`] of every type for replay, the container
/// events the streams have not been handed yet, and how many of each there have been.
///
/// *Guarantees* (see [`EventLog::check`]): the replay buffer holds the last
/// `min(recorded + others, EVENTS_KEPT)` events, oldest first; the unsent events are the last
/// container events recorded since they were last taken, in order, each handed out once;
/// `recorded` counts every container event ever recorded, `others` every other one.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventLog {
    /// The events a `since` query replays from: the last [`EVENTS_KEPT`], oldest first.
    recent: VecDeque<Kept>,
    /// The container events the event streams have not been handed yet
    /// ([`EventLog::take_unsent`]).
    unsent: Vec<RuntimeEvent>,
    /// Container events recorded since the runtime began.
    recorded: usize,
    /// Other events recorded since the runtime began.
    others: usize,
}

impl EventLog {
    /// Keep `kept` for replay: the oldest kept one falls out once the buffer is full.
    fn keep(&mut self, kept: Kept) {
        if self.recent.len() == EVENTS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(kept);
    }

    /// Record container event `event`.
    pub(crate) fn record(&mut self, event: RuntimeEvent) {
        self.keep(Kept::Container(event.clone()));
        self.unsent.push(event);
        self.recorded += 1;
    }

    /// Record an event of another kind (`what`: its type and action, say "network connect"):
    /// it takes its place in the replay window; no stream of container events sees it.
    pub(crate) fn record_other(&mut self, what: &'static str) {
        self.keep(Kept::Other(what));
        self.others += 1;
    }

    /// The container events a `since` query can still replay, oldest first.
    pub(crate) fn recent(&self) -> impl Iterator<Item = &RuntimeEvent> {
        self.recent.iter().filter_map(|kept| match kept {
            Kept::Container(event) => Some(event),
            Kept::Other(_) => None,
        })
    }

    /// Container `id`'s events at or after `since` that are still kept for replay, oldest first.
    pub(crate) fn replay(&self, id: &str, since: WallTime) -> Vec<RuntimeEvent> {
        self.recent().filter(|e| e.container_id == id && e.time >= since).cloned().collect()
    }

    /// The container events recorded since the last call, oldest first.
    pub(crate) fn take_unsent(&mut self) -> Vec<RuntimeEvent> {
        std::mem::take(&mut self.unsent)
    }

    /// How many container events were recorded since the log began.
    pub(crate) fn recorded(&self) -> usize {
        self.recorded
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        let kept = (self.recorded + self.others).min(EVENTS_KEPT);
        if self.recent.len() != kept {
            return Err(format!(
                "event log: {} kept for replay of {} container and {} other events recorded",
                self.recent.len(),
                self.recorded,
                self.others
            ));
        }
        let containers = self.recent().count();
        if containers > self.recorded || self.recent.len() - containers > self.others {
            return Err(format!("event log: {containers} container events kept of {} recorded", self.recorded));
        }
        if self.unsent.len() > self.recorded {
            return Err(format!("event log: {} unsent of {} recorded", self.unsent.len(), self.recorded));
        }
        let shared = self.unsent.len().min(containers);
        let unsent_tail = &self.unsent[self.unsent.len() - shared..];
        if !self.recent().skip(containers - shared).eq(unsent_tail.iter()) {
            return Err("event log: the last unsent events are not the last kept for replay".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drydock_engine::runtime::EventAction;

    fn event(n: u64) -> RuntimeEvent {
        let id = format!("c{}", n % 3);
        RuntimeEvent { container_id: id, action: EventAction::Create, time: WallTime(n), labels: Default::default() }
    }

    #[test]
    fn replay_keeps_the_last_events_and_streams_get_each_once() {
        let mut log = EventLog::default();
        log.check().expect("empty");
        for n in 0..100 {
            log.record(event(n));
        }
        log.check().expect("below the limit");
        assert_eq!(log.take_unsent().len(), 100);
        assert!(log.take_unsent().is_empty(), "each event is handed out once");
        for n in 100..400 {
            log.record(event(n));
            log.check().unwrap_or_else(|e| panic!("after event {n}: {e}"));
        }
        assert_eq!((log.recent().count(), log.recorded()), (EVENTS_KEPT, 400));
        assert_eq!(log.recent().next().map(|e| e.time), Some(WallTime(400 - EVENTS_KEPT as u64)), "oldest kept");
        let unsent = log.take_unsent();
        assert_eq!((unsent.len(), unsent.first().map(|e| e.time)), (300, Some(WallTime(100))), "every one since");
        log.check().expect("after taking");
        let replayed: Vec<u64> = log.replay("c1", WallTime(390)).iter().map(|e| e.time.0).collect();
        assert_eq!(replayed, [391, 394, 397], "one container's, at or after `since`");
    }

    /// Docker's window holds events of every type: others push a container's events out as
    /// container events do, but no stream of container events is handed them.
    #[test]
    fn events_of_other_types_take_their_places_in_the_window() {
        let mut log = EventLog::default();
        log.record(event(0));
        for _ in 0..EVENTS_KEPT - 1 {
            log.record_other("volume create");
        }
        log.check().expect("full");
        assert_eq!(log.replay("c0", WallTime(0)).len(), 1, "still the last 256");
        log.record_other("volume destroy");
        log.check().expect("one out");
        assert!(log.replay("c0", WallTime(0)).is_empty(), "pushed out by a volume's event");
        assert_eq!((log.recorded(), log.recent().count(), log.take_unsent().len()), (1, 0, 1), "streams see it");
        log.record(event(1));
        log.check().expect("a container event again");
        assert_eq!(log.replay("c1", WallTime(0)).len(), 1);
    }

    #[test]
    fn check_finds_a_broken_log() {
        let mut log = EventLog::default();
        log.record(event(1));
        log.recorded = 2;
        assert!(log.check().is_err(), "a count that disagrees with what is kept");
        let mut log = EventLog::default();
        log.record(event(1));
        log.unsent[0] = event(2);
        assert!(log.check().is_err(), "a stream would see another event than a replay");
        let mut log = EventLog::default();
        log.record_other("network create");
        log.others = 0;
        assert!(log.check().is_err(), "another event kept, none recorded");
    }
}
