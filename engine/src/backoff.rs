//! Per-key exponential backoff with seeded jitter, reset on success.

use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug)]
pub struct Backoff<K: Ord> {
    base: Duration,
    max: Duration,
    failures: BTreeMap<K, u32>,
}

impl<K: Ord> Backoff<K> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff { base, max, failures: BTreeMap::new() }
    }

    /// The delay before retrying `key` after one more failure: `base * 2^failures`, capped at
    /// `max`, plus up to 25% jitter so keys that failed together do not retry together.
    pub fn next_delay(&mut self, key: K, rng: &mut ChaCha8Rng) -> Duration {
        let failures = self.failures.entry(key).or_insert(0);
        let exp = self.base.saturating_mul(1u32 << (*failures).min(20)).min(self.max);
        *failures = failures.saturating_add(1);
        let jitter_permille = rng.next_u32() % 250;
        exp + exp * jitter_permille / 1000
    }

    pub fn reset(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// Keys currently backing off (failed since their last success).
    pub fn len(&self) -> usize {
        self.failures.len()
    }

    pub fn is_empty(&self) -> bool {
        self.failures.is_empty()
    }

    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
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
}
