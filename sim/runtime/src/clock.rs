//! The runtime's clock and the exits it has due. Docker runs a container's main process in real
//! time; the model runs it ahead (`shell::run`) and knows when it will end by itself (a script
//! whose sleeps add up), so time passes only when the world says (`SimRuntime::set_now`,
//! `SimRuntime::advance`), and the exits due by then happen, in time order.

use drydock_engine::WallTime;
use std::collections::BTreeSet;

/// The wall clock that stamps events and starts main processes, and when each main process due
/// to end by itself ends.
///
/// *Guarantees* (see [`Clock::check`]): the exits due are in time order (ties by container id),
/// the next one found without a scan, and a container has at most one. [`Clock::catch_up`] never
/// moves the clock back (only [`Clock::set`], the world's, may). That the due exits are exactly
/// those the container records say is the runtime's to keep (`SimRuntime::check`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Clock {
    now: WallTime,
    /// When each main process due to end by itself ends, and its container.
    due: BTreeSet<(WallTime, String)>,
}

impl Clock {
    pub(crate) fn now(&self) -> WallTime {
        self.now
    }

    /// Set the clock (the world's: it may set any time).
    pub(crate) fn set(&mut self, now: WallTime) {
        self.now = now;
    }

    /// Time passed up to `now`: the clock is `now`, unless it was later already.
    pub(crate) fn catch_up(&mut self, now: WallTime) {
        self.now = self.now.max(now);
    }

    /// When the next exit is due, if one is.
    pub(crate) fn next_due(&self) -> Option<WallTime> {
        self.due.first().map(|(at, _)| *at)
    }

    /// The first exit due at or before `now` (the earliest, then by container id).
    pub(crate) fn first_due_by(&self, now: WallTime) -> Option<(WallTime, String)> {
        self.due.first().filter(|(at, _)| *at <= now).cloned()
    }

    /// Container `id`'s main process ends at `at`. (Its earlier due exit, if any, must have been
    /// [`Clock::unschedule`]d.)
    pub(crate) fn schedule(&mut self, at: WallTime, id: &str) {
        self.due.insert((at, id.to_string()));
    }

    /// Container `id`'s main process no longer ends at `at`.
    pub(crate) fn unschedule(&mut self, at: WallTime, id: &str) {
        self.due.remove(&(at, id.to_string()));
    }

    /// Every exit due, in time order.
    pub(crate) fn due(&self) -> impl Iterator<Item = (WallTime, &str)> {
        self.due.iter().map(|(at, id)| (*at, id.as_str()))
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut ids = BTreeSet::new();
        for (_, id) in &self.due {
            if !ids.insert(id) {
                return Err(format!("clock: container {id} has two exits due"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_come_due_in_time_order_and_the_clock_only_catches_up() {
        let mut clock = Clock::default();
        clock.set(WallTime(100));
        clock.schedule(WallTime(300), "b");
        clock.schedule(WallTime(200), "c");
        clock.schedule(WallTime(200), "a");
        clock.check().expect("one each");
        assert_eq!(clock.next_due(), Some(WallTime(200)));
        assert_eq!(clock.first_due_by(WallTime(199)), None, "nothing due yet");
        assert_eq!(clock.first_due_by(WallTime(250)), Some((WallTime(200), "a".to_string())), "ties by id");
        clock.unschedule(WallTime(200), "a");
        clock.unschedule(WallTime(200), "c");
        assert_eq!(clock.due().collect::<Vec<_>>(), [(WallTime(300), "b")]);
        clock.catch_up(WallTime(250));
        clock.catch_up(WallTime(50));
        assert_eq!(clock.now(), WallTime(250), "never back");
        clock.set(WallTime(50));
        assert_eq!(clock.now(), WallTime(50), "unless set");
    }

    #[test]
    fn check_finds_two_exits_of_one_container() {
        let mut clock = Clock::default();
        clock.schedule(WallTime(1), "a");
        clock.schedule(WallTime(2), "a");
        assert!(clock.check().is_err());
    }
}
