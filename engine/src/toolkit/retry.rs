//! Per-object retry gates: how many times an object's operations failed in a row, and until when
//! the controller holds off starting the next one.
//!
//! *Guarantees*: delays are a pure function of the failure count and the policy (no jitter, no
//! randomness drawn), so a controller's retries are exactly reproducible in simulation. Overflow
//! saturates: no failure count or duration makes a delay panic.
//!
//! *Caveat*: unlike the engine's per-key backoff ([`crate::backoff`]), these delays carry no
//! jitter. Objects that failed together retry together; a controller that needs spreading should
//! add its own.

use crate::controller::Action;
use crate::time::MonoTime;
use std::time::Duration;

/// How long to hold off after the `n`th failure in a row: `base * 2^min(n, max_doublings)`,
/// capped at `max`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    base: Duration,
    max: Duration,
    max_doublings: u32,
}

impl RetryPolicy {
    /// The same delay after every failure.
    pub const fn fixed(delay: Duration) -> Self {
        RetryPolicy { base: delay, max: delay, max_doublings: 0 }
    }

    /// `base * 2^n` after the `n`th failure in a row, capped at `max`.
    pub const fn exponential(base: Duration, max: Duration) -> Self {
        RetryPolicy { base, max, max_doublings: u32::BITS - 1 }
    }

    /// Stop doubling after `doublings` (the cap `max` still applies).
    pub const fn with_max_doublings(self, doublings: u32) -> Self {
        RetryPolicy { max_doublings: doublings, ..self }
    }

    /// The delay after the `failures`th failure in a row.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.min(self.max_doublings).min(u32::BITS - 1);
        self.base.saturating_mul(1 << doublings).min(self.max)
    }
}

/// One object's failures in a row and the time before which it waits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetryGate {
    failures: u32,
    not_before: Option<MonoTime>,
}

impl RetryGate {
    /// Failures since the last [`RetryGate::succeed`].
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The time before which the object waits, once set (it stays set after it has passed).
    pub fn not_before(&self) -> Option<MonoTime> {
        self.not_before
    }

    /// Count one more failure and wait the policy's delay for it from `now`. Returns the delay.
    pub fn fail(&mut self, now: MonoTime, policy: &RetryPolicy) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let delay = policy.delay(self.failures);
        self.not_before = Some(now + delay);
        delay
    }

    /// An operation succeeded: the next failure starts the policy over. A wait already set stands.
    pub fn succeed(&mut self) {
        self.failures = 0;
    }

    /// Wait until `at`, whatever the policy says (a controller's own schedule: "look again in
    /// 200 ms"). The failure count is unchanged.
    pub fn wait_until(&mut self, at: MonoTime) {
        self.not_before = Some(at);
    }

    /// How much longer the object waits at `now`, if it does.
    pub fn remaining(&self, now: MonoTime) -> Option<Duration> {
        self.not_before.filter(|at| *at > now).map(|at| at - now)
    }

    /// `Action::retry_after` the remaining wait, if the object waits at `now`.
    pub fn retry_action(&self, now: MonoTime) -> Option<Action> {
        self.remaining(now).map(Action::retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_up_to_its_cap() {
        let policy = RetryPolicy::exponential(100 * MS, Duration::from_secs(10)).with_max_doublings(8);
        let delays: Vec<Duration> = (0..10).map(|n| policy.delay(n)).collect();
        assert_eq!(delays[..4], [100 * MS, 200 * MS, 400 * MS, 800 * MS]);
        assert_eq!(delays[7], Duration::from_secs(10), "12.8 s is capped");
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(10), "no overflow");
    }

    #[test]
    fn max_doublings_stops_growth_below_the_cap() {
        let policy = RetryPolicy::exponential(Duration::from_secs(1), Duration::from_secs(60)).with_max_doublings(3);
        assert_eq!(policy.delay(3), Duration::from_secs(8));
        assert_eq!(policy.delay(30), Duration::from_secs(8));
    }

    #[test]
    fn fixed_is_constant() {
        let policy = RetryPolicy::fixed(Duration::from_secs(1));
        assert!((0..40).all(|n| policy.delay(n) == Duration::from_secs(1)));
    }

    #[test]
    fn a_gate_counts_failures_waits_and_resets_on_success() {
        let policy = RetryPolicy::exponential(100 * MS, Duration::from_secs(10));
        let mut gate = RetryGate::default();
        let t0 = MonoTime::from_duration(Duration::from_secs(5));
        assert_eq!(gate.remaining(t0), None);
        assert_eq!(gate.fail(t0, &policy), 200 * MS);
        assert_eq!(gate.fail(t0, &policy), 400 * MS);
        assert_eq!(gate.failures(), 2);
        assert_eq!(gate.remaining(t0 + 100 * MS), Some(300 * MS));
        assert_eq!(gate.retry_action(t0 + 100 * MS), Some(Action::retry_after(300 * MS)));
        assert_eq!(gate.remaining(t0 + 400 * MS), None, "the wait is over at its end");
        gate.succeed();
        assert_eq!(gate.failures(), 0);
        assert_eq!(gate.not_before(), Some(t0 + 400 * MS), "success does not move the wait");
        gate.wait_until(t0 + Duration::from_secs(1));
        assert_eq!(gate.failures(), 0, "an explicit wait is not a failure");
        assert_eq!(gate.remaining(t0), Some(Duration::from_secs(1)));
    }
}
