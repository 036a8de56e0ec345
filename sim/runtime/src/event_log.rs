//! The event log: the container events the runtime records (`create`, `start`, `die`,
//! `destroy`), as Docker 20.10's daemon keeps them. Docker holds its last [`EVENTS_KEPT`] events
//! for a query with `since` to replay, and hands every event to each live stream (`docker
//! events`, the engine's runtime watch) as it happens, however many there are.

use drydock_engine::WallTime;
use drydock_engine::runtime::RuntimeEvent;
use std::collections::VecDeque;

/// How many events Docker 20.10 keeps for replay (its daemon's `eventsLimit`): an events query
/// with `since` sees at most the daemon's last 256 events of any kind, while a live stream sees
/// every event. (Checked on Docker 20.10.24: after 280 events, a replay from the epoch returned
/// the last 256.) The simulated runtime counts only container events, so it keeps a container's
/// event a little longer than Docker, which also counts network, image and volume events.
pub const EVENTS_KEPT: usize = 256;

/// The events recorded: the last [`EVENTS_KEPT`] for replay, those the streams have not been
/// handed yet, and how many there have been.
///
/// *Guarantees* (see [`EventLog::check`]): the replay buffer holds the last
/// `min(recorded, EVENTS_KEPT)` events, oldest first; the unsent events are the last ones
/// recorded since they were last taken, in order, each handed out once; `recorded` counts every
/// event ever recorded.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventLog {
    /// The events a `since` query replays: the last [`EVENTS_KEPT`], oldest first.
    recent: VecDeque<RuntimeEvent>,
    /// The events the event streams have not been handed yet ([`EventLog::take_unsent`]).
    unsent: Vec<RuntimeEvent>,
    /// Events recorded since the runtime began.
    recorded: usize,
}

impl EventLog {
    /// Record `event`: the oldest kept one falls out of the replay buffer once it is full.
    pub(crate) fn record(&mut self, event: RuntimeEvent) {
        if self.recent.len() == EVENTS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(event.clone());
        self.unsent.push(event);
        self.recorded += 1;
    }

    /// The events a `since` query can still replay, oldest first.
    pub(crate) fn recent(&self) -> &VecDeque<RuntimeEvent> {
        &self.recent
    }

    /// Container `id`'s events at or after `since` that are still kept for replay, oldest first.
    pub(crate) fn replay(&self, id: &str, since: WallTime) -> Vec<RuntimeEvent> {
        self.recent.iter().filter(|e| e.container_id == id && e.time >= since).cloned().collect()
    }

    /// The events recorded since the last call, oldest first.
    pub(crate) fn take_unsent(&mut self) -> Vec<RuntimeEvent> {
        std::mem::take(&mut self.unsent)
    }

    /// How many events were recorded since the log began.
    pub(crate) fn recorded(&self) -> usize {
        self.recorded
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        let kept = self.recorded.min(EVENTS_KEPT);
        if self.recent.len() != kept {
            return Err(format!("event log: {} kept for replay of {} recorded", self.recent.len(), self.recorded));
        }
        if self.unsent.len() > self.recorded {
            return Err(format!("event log: {} unsent of {} recorded", self.unsent.len(), self.recorded));
        }
        let shared = self.unsent.len().min(self.recent.len());
        let unsent_tail = &self.unsent[self.unsent.len() - shared..];
        if !self.recent.iter().skip(self.recent.len() - shared).eq(unsent_tail.iter()) {
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
        assert_eq!((log.recent().len(), log.recorded()), (EVENTS_KEPT, 400));
        assert_eq!(log.recent().front().map(|e| e.time), Some(WallTime(400 - EVENTS_KEPT as u64)), "oldest kept");
        let unsent = log.take_unsent();
        assert_eq!((unsent.len(), unsent.first().map(|e| e.time)), (300, Some(WallTime(100))), "every one since");
        log.check().expect("after taking");
        let replayed: Vec<u64> = log.replay("c1", WallTime(390)).iter().map(|e| e.time.0).collect();
        assert_eq!(replayed, [391, 394, 397], "one container's, at or after `since`");
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
    }
}
