//! Ranges the world draws magnitudes from: latencies and factors.

use drydock_faults::unit;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// A latency range; draws are uniform in `[min, max]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Latency {
    pub min: Duration,
    pub max: Duration,
}

impl Latency {
    pub const fn millis(min: u64, max: u64) -> Self {
        Latency { min: Duration::from_millis(min), max: Duration::from_millis(max) }
    }

    pub(crate) fn draw(&self, rng: &mut ChaCha8Rng) -> Duration {
        self.min + (self.max.saturating_sub(self.min)).mul_f64(unit(rng))
    }
}

/// A factor range; draws are uniform in `[min, max)`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Factor {
    pub min: f64,
    pub max: f64,
}

impl Factor {
    pub(crate) fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.min + (self.max - self.min) * unit(rng)
    }
}
