//! The engine's record of changes it gave up on that may still run inside the runtime, per key,
//! and of when the last of a key's left: what a controller's [`Context`](crate::controller::Context)
//! tells it, so that cleanup waits for them (the `Finalizer` toolkit).
//!
//! *Guarantees*: a key's departure is remembered for [`DETACHED_SETTLE`] and then forgotten, so
//! the record stays as small as the changes recently given up on. While any departure is that
//! recent the engine is still settling ([`Detached::settling`]): a cleanup step waits for it, so
//! a world that looks quiet before it ends is not yet quiet.
//!
//! *Caveats*: a departure is the runtime's late answer or the end of the engine's patience; after
//! the latter the change may in truth still be running.

use super::WorkKey;
use crate::fixed::FixedMap;
use crate::time::MonoTime;
use crate::toolkit::DETACHED_SETTLE;
use std::collections::VecDeque;

#[derive(Default)]
pub(super) struct Detached {
    /// How many detached changes each key has (hashed: looked up, never iterated).
    by_work: FixedMap<WorkKey, u32>,
    /// When the last detached change of each key left, for [`DETACHED_SETTLE`].
    left: FixedMap<WorkKey, MonoTime>,
    /// The departures in the order they happened (times never go back), to forget them in turn.
    departures: VecDeque<(MonoTime, WorkKey)>,
}

impl Detached {
    /// A change of `work` was given up on and may still run inside the runtime.
    pub fn detached(&mut self, work: &WorkKey) {
        *self.by_work.entry(work.clone()).or_default() += 1;
    }

    /// A detached change of `work` left the runtime (or is no longer waited for) at `now`.
    pub fn left(&mut self, now: MonoTime, work: &WorkKey) {
        self.forget_settled(now);
        self.left.insert(work.clone(), now);
        self.departures.push_back((now, work.clone()));
        if let Some(n) = self.by_work.get_mut(work) {
            *n -= 1;
            if *n == 0 {
                self.by_work.swap_remove(work);
            }
        }
    }

    /// How many of `work`'s changes are detached.
    pub fn of(&self, work: &WorkKey) -> u32 {
        self.by_work.get(work).copied().unwrap_or(0)
    }

    /// When the last detached change of `work` left, if within [`DETACHED_SETTLE`] of `now`.
    pub fn left_at(&self, now: MonoTime, work: &WorkKey) -> Option<MonoTime> {
        self.left.get(work).copied().filter(|left| now < *left + DETACHED_SETTLE)
    }

    /// Whether a detached change left less than [`DETACHED_SETTLE`] before `now`.
    pub fn settling(&self, now: MonoTime) -> bool {
        self.departures.back().is_some_and(|(left, _)| now < *left + DETACHED_SETTLE)
    }

    /// When the last recent departure settles.
    pub fn settles_at(&self) -> Option<MonoTime> {
        self.departures.back().map(|(left, _)| *left + DETACHED_SETTLE)
    }

    /// Forget the departures that settled by `now`.
    pub fn forget_settled(&mut self, now: MonoTime) {
        while let Some((left, work)) = self.departures.front() {
            if now < *left + DETACHED_SETTLE {
                break;
            }
            // A later departure of the same key keeps its entry.
            if self.left.get(work) == Some(left) {
                self.left.swap_remove(work);
            }
            self.departures.pop_front();
        }
    }

    /// Departures remembered (for tests: the record must not grow without end).
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.left.len().max(self.departures.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectKey;
    use std::time::Duration;

    fn work(name: &str) -> WorkKey {
        (0, ObjectKey::new("ContainerVolume", Some("ns"), name))
    }

    fn at(secs: u64) -> MonoTime {
        MonoTime::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn a_departure_is_remembered_for_the_settle_time_then_forgotten() {
        let mut detached = Detached::default();
        detached.detached(&work("a"));
        assert_eq!(detached.of(&work("a")), 1);
        detached.left(at(5), &work("a"));
        assert_eq!(detached.of(&work("a")), 0);
        assert_eq!(detached.left_at(at(6), &work("a")), Some(at(5)));
        assert!(detached.settling(at(14)));
        assert_eq!(detached.settles_at(), Some(at(5) + DETACHED_SETTLE));
        assert_eq!(detached.left_at(at(15), &work("a")), None);
        assert!(!detached.settling(at(15)));
        detached.forget_settled(at(15));
        assert_eq!(detached.remembered(), 0);
        assert_eq!(detached.settles_at(), None);
    }

    #[test]
    fn a_later_departure_of_the_same_key_outlives_the_earlier() {
        let mut detached = Detached::default();
        detached.detached(&work("a"));
        detached.detached(&work("a"));
        detached.left(at(0), &work("a"));
        assert_eq!(detached.of(&work("a")), 1);
        detached.left(at(8), &work("a"));
        detached.forget_settled(at(12));
        assert_eq!(detached.left_at(at(12), &work("a")), Some(at(8)));
        detached.forget_settled(at(18));
        assert_eq!(detached.remembered(), 0);
    }
}
