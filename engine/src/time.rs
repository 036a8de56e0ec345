//! Time as the engine sees it: handed in by the driver, never read from a clock.
//!
//! Two clocks, because they answer different questions: [`MonoTime`] orders timers and backoff
//! (it never jumps), [`WallTime`] stamps objects and decides lease expiry (it is what other
//! processes can compare against).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// Monotonic time in nanoseconds since an arbitrary origin chosen by the driver.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MonoTime(pub u64);

impl MonoTime {
    pub const ZERO: MonoTime = MonoTime(0);

    pub fn from_duration(d: Duration) -> Self {
        MonoTime(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Time elapsed since `earlier`, zero if `earlier` is in the future.
    pub fn since(self, earlier: MonoTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for MonoTime {
    type Output = MonoTime;
    fn add(self, rhs: Duration) -> MonoTime {
        MonoTime(self.0.saturating_add(MonoTime::from_duration(rhs).0))
    }
}

impl Sub<MonoTime> for MonoTime {
    type Output = Duration;
    fn sub(self, rhs: MonoTime) -> Duration {
        self.since(rhs)
    }
}

impl fmt::Display for MonoTime {
    /// Seconds with microsecond precision: `12.000345s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // By hand into a buffer: every simulated event's trace line starts with one, and the
        // general formatting machinery (padding to a width) cost more than the rest of the line.
        let mut buf = [0u8; 28];
        let mut at = buf.len() - 1;
        buf[at] = b's';
        let (mut secs, mut micros) = (self.0 / 1_000_000_000, (self.0 % 1_000_000_000) / 1_000);
        for _ in 0..6 {
            at -= 1;
            buf[at] = b'0' + (micros % 10) as u8;
            micros /= 10;
        }
        at -= 1;
        buf[at] = b'.';
        loop {
            at -= 1;
            buf[at] = b'0' + (secs % 10) as u8;
            secs /= 10;
            if secs == 0 {
                break;
            }
        }
        f.write_str(std::str::from_utf8(&buf[at..]).map_err(|_| fmt::Error)?)
    }
}

/// Wall-clock time in milliseconds since the Unix epoch.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WallTime(pub u64);

impl Add<Duration> for WallTime {
    type Output = WallTime;
    fn add(self, rhs: Duration) -> WallTime {
        WallTime(self.0.saturating_add(u64::try_from(rhs.as_millis()).unwrap_or(u64::MAX)))
    }
}

/// The instant a driver hands to [`crate::Engine::handle`] and [`crate::Engine::poll`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Now {
    pub mono: MonoTime,
    pub wall: WallTime,
}

impl Now {
    pub fn new(mono: MonoTime, wall: WallTime) -> Self {
        Now { mono, wall }
    }
}

#[cfg(test)]
mod tests {
    use super::MonoTime;

    #[test]
    fn mono_time_prints_seconds_and_six_digits_of_microseconds() {
        for nanos in [0, 999, 1_000, 345_678, 12_000_345_000, 1_000_000_000, 987_654_321_123, u64::MAX] {
            let expected = format!("{}.{:06}s", nanos / 1_000_000_000, (nanos % 1_000_000_000) / 1_000);
            assert_eq!(MonoTime(nanos).to_string(), expected);
        }
        assert_eq!(MonoTime(12_000_345_000).to_string(), "12.000345s");
    }
}
