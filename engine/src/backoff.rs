//! Per-key exponential backoff with seeded jitter.
//!
//! A key's failures are counted until a success of the kind that failed (a reconcile whose
//! writes went through): a reconcile that only read, or sent only runtime requests, ends the
//! key's wait (it is no longer retrying) but not its count, so a write that keeps failing between
//! clean reads still backs off exponentially instead of restarting at the base delay each time.

use crate::fixed::FixedMap;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::hash::Hash;
use std::time::Duration;

#[derive(Debug)]
pub struct Backoff<K: Ord + Hash> {
    base: Duration,
    max: Duration,
    failures: FixedMap<K, Failures>,
    /// How many of `failures` are waiting: asked after every event, so counted, not scanned.
    waiting: usize,
}

#[derive(Debug, Default)]
struct Failures {
    count: u32,
    /// The last attempt failed and its retry is pending.
    waiting: bool,
}

impl<K: Ord + Hash> Backoff<K> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff { base, max, failures: FixedMap::default(), waiting: 0 }
    }

    /// The delay before retrying `key` after one more failure: `base * 2^failures`, capped at
    /// `max`, plus up to 25% jitter so keys that failed together do not retry together.
    pub fn next_delay(&mut self, key: K, rng: &mut ChaCha8Rng) -> Duration {
        let failures = self.failures.entry(key).or_default();
        let exp = self.base.saturating_mul(1u32 << failures.count.min(20)).min(self.max);
        failures.count = failures.count.saturating_add(1);
        if !std::mem::replace(&mut failures.waiting, true) {
            self.waiting += 1;
        }
        let jitter_permille = rng.next_u32() % 250;
        exp + exp * jitter_permille / 1000
    }

    /// What failed succeeded: the count starts over.
    pub fn reset(&mut self, key: &K) {
        if self.failures.swap_remove(key).is_some_and(|f| f.waiting) {
            self.waiting -= 1;
        }
    }

    /// An attempt that could not fail the way the counted ones did went fine: the key is no
    /// longer waiting to retry, but its count stands.
    pub fn settled(&mut self, key: &K) {
        if let Some(failures) = self.failures.get_mut(key)
            && std::mem::take(&mut failures.waiting)
        {
            self.waiting -= 1;
        }
    }

    /// Keys currently backing off: their last attempt failed.
    pub fn len(&self) -> usize {
        self.waiting
    }

    /// Whether `key` has failures counted (waiting or not).
    pub fn knows(&self, key: &K) -> bool {
        self.failures.contains_key(key)
    }

    #[cfg(test)]
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).map_or(0, |f| f.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn grows_caps_and_resets() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
        let d: Vec<Duration> = (0..10).map(|_| b.next_delay("k", &mut rng)).collect();
        assert!(d[0] >= Duration::from_millis(10) && d[0] < Duration::from_millis(13));
        assert!(d[1] >= Duration::from_millis(20) && d[1] < Duration::from_millis(25));
        assert!(d[9] >= Duration::from_secs(1) && d[9] < Duration::from_millis(1250));
        b.reset(&"k");
        assert!(b.next_delay("k", &mut rng) < Duration::from_millis(13));
    }

    #[test]
    fn a_settled_key_keeps_its_count_but_is_not_waiting() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
        b.next_delay("k", &mut rng);
        b.next_delay("k", &mut rng);
        assert_eq!(b.len(), 1);
        b.settled(&"k");
        assert_eq!((b.len(), b.failures(&"k")), (0, 2), "no longer waiting, still counted");
        let third = b.next_delay("k", &mut rng);
        assert!(third >= Duration::from_millis(40), "the count went on: {third:?}");
    }
}
