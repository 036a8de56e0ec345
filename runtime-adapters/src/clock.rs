//! The system clock, read only here, at the edge.

use drydock_engine::{MonoTime, Now, WallTime};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Monotonic time since the clock was made, and wall time since the Unix epoch.
#[derive(Clone, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl SystemClock {
    pub fn now(&self) -> Now {
        Now::new(MonoTime::from_duration(self.origin.elapsed()), wall_now())
    }

    /// The `Instant` at which the monotonic clock reads `at`.
    pub fn instant(&self, at: MonoTime) -> Instant {
        self.origin + at.as_duration()
    }
}

pub fn wall_now() -> WallTime {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    WallTime(u64::try_from(ms).unwrap_or(u64::MAX))
}
