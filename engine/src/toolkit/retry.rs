//! Per-object retry gates: how many times each kind of operation of an object failed in a row,
//! and until when the controller holds off starting the next operation.
//!
//! A gate keeps one failure count per operation kind (the controller's own `Op` enum), so a
//! success of one operation never resets the count of another: an inspect that works says
//! nothing about whether the next start will, and a start that keeps failing must run out of
//! its budget however many inspects succeed in between. The wait is per object: one operation
//! is in flight at a time, so whatever failed last decides when the next one may start.
//!
//! A [`RetryPolicy`] says how long to wait after the `n`th failure in a row (exponential to a
//! cap, or fixed) and, optionally, its budget: after how many failures in a row the controller
//! gives the operation up. The gate only counts and waits; what giving up means (a `Failed`
//! status, a message) is the controller's decision.
//!
//! *Guarantees*: delays are a pure function of the failure count and the policy (no jitter, no
//! randomness drawn), so a controller's retries are exactly reproducible in simulation. Overflow
//! saturates: no failure count or duration makes a delay panic. A failure count changes only
//! through [`RetryGate::fail`] and [`RetryGate::succeed`] of its own operation kind.
//!
//! *Caveat*: unlike the engine's per-key backoff (its `backoff` module, private), these delays carry no
//! jitter. Objects that failed together retry together; a controller that needs spreading should
//! add its own.

use crate::controller::Action;
use crate::time::MonoTime;
use std::time::Duration;

/// How long to hold off after the `n`th failure in a row: `base * 2^min(n, max_doublings)`,
/// capped at `max`; and, if it has a budget, after how many failures in a row to give up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    base: Duration,
    max: Duration,
    max_doublings: u32,
    budget: Option<u32>,
}

impl RetryPolicy {
    /// The same delay after every failure.
    pub const fn fixed(delay: Duration) -> Self {
        RetryPolicy { base: delay, max: delay, max_doublings: 0, budget: None }
    }

    /// `base * 2^n` after the `n`th failure in a row, capped at `max`.
    pub const fn exponential(base: Duration, max: Duration) -> Self {
        RetryPolicy { base, max, max_doublings: u32::BITS - 1, budget: None }
    }

    /// Stop doubling after `doublings` (the cap `max` still applies).
    pub const fn with_max_doublings(self, doublings: u32) -> Self {
        RetryPolicy { max_doublings: doublings, ..self }
    }

    /// Give the operation up at its `failures`th failure in a row (at least one). Without a
    /// budget an operation is retried for ever, at most `max` apart.
    pub const fn with_budget(self, failures: u32) -> Self {
        RetryPolicy { budget: Some(if failures == 0 { 1 } else { failures }), ..self }
    }

    /// The delay after the `failures`th failure in a row.
    pub fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.min(self.max_doublings).min(u32::BITS - 1);
        self.base.saturating_mul(1 << doublings).min(self.max)
    }

    /// The longest delay.
    pub fn cap(&self) -> Duration {
        self.max
    }

    /// Failures in a row at which the operation is given up, if ever.
    pub fn budget(&self) -> Option<u32> {
        self.budget
    }

    /// Whether `failures` in a row exhaust the budget.
    pub fn exhausted_by(&self, failures: u32) -> bool {
        self.budget.is_some_and(|budget| failures >= budget)
    }
}

/// What a failure leads to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use = "a controller gives the operation up when its budget is exhausted"]
pub enum Retry {
    /// Wait this long, then try again (the gate holds the object until then).
    After(Duration),
    /// The budget is spent: this was failure number `failures` in a row. No wait is set, so the
    /// controller can act on it at once (write a terminal status, or look once more).
    Exhausted { failures: u32 },
}

/// One object's failures in a row per operation kind `Op`, and the time before which it waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryGate<Op> {
    /// Failures in a row of each operation kind that failed since its last success. A handful
    /// of kinds at most: a vector searched linearly, in the order they first failed.
    failures: Vec<(Op, u32)>,
    not_before: Option<MonoTime>,
}

impl<Op> Default for RetryGate<Op> {
    fn default() -> Self {
        RetryGate { failures: Vec::new(), not_before: None }
    }
}

/// The wait, whatever the operations.
impl<Op> RetryGate<Op> {
    /// The time before which the object waits, once set (it stays set after it has passed).
    pub fn not_before(&self) -> Option<MonoTime> {
        self.not_before
    }

    /// Wait until `at`, whatever the policy says (a controller's own schedule: "look again in
    /// 200 ms"). No failure count changes.
    pub fn wait_until(&mut self, at: MonoTime) {
        self.not_before = Some(at);
    }

    /// Drop the wait: what it delayed is no longer wanted (the object is being deleted, and its
    /// cleanup must not wait out the backoff of a create it makes moot). Failure counts stand.
    pub fn clear_wait(&mut self) {
        self.not_before = None;
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

impl<Op: Copy + PartialEq> RetryGate<Op> {
    /// Failures in a row of `op` since its last success.
    pub fn failures(&self, op: Op) -> u32 {
        self.failures.iter().find(|(o, _)| *o == op).map_or(0, |(_, n)| *n)
    }

    /// Whether any operation's last attempt failed.
    pub fn any_failing(&self) -> bool {
        !self.failures.is_empty()
    }

    /// Count one more failure of `op`. Within the policy's budget, wait the policy's delay for it
    /// from `now` and return [`Retry::After`]; past it, set no wait and return
    /// [`Retry::Exhausted`]. The count goes on growing either way, until `op` succeeds.
    pub fn fail(&mut self, op: Op, now: MonoTime, policy: &RetryPolicy) -> Retry {
        let failures = match self.failures.iter_mut().find(|(o, _)| *o == op) {
            Some((_, n)) => {
                *n = n.saturating_add(1);
                *n
            }
            None => {
                self.failures.push((op, 1));
                1
            }
        };
        if policy.exhausted_by(failures) {
            return Retry::Exhausted { failures };
        }
        let delay = policy.delay(failures);
        self.not_before = Some(now + delay);
        Retry::After(delay)
    }

    /// `op` succeeded: its next failure starts its policy over. Other operations' counts, and a
    /// wait already set, stand.
    pub fn succeed(&mut self, op: Op) {
        self.failures.retain(|(o, _)| *o != op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    enum Op {
        Start,
        Inspect,
    }

    #[test]
    fn exponential_doubles_up_to_its_cap() {
        let policy = RetryPolicy::exponential(100 * MS, Duration::from_secs(10)).with_max_doublings(8);
        let delays: Vec<Duration> = (0..10).map(|n| policy.delay(n)).collect();
        assert_eq!(delays[..4], [100 * MS, 200 * MS, 400 * MS, 800 * MS]);
        assert_eq!(delays[7], Duration::from_secs(10), "12.8 s is capped");
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(10), "no overflow");
        assert_eq!(policy.cap(), Duration::from_secs(10));
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
        assert_eq!(gate.fail(Op::Start, t0, &policy), Retry::After(200 * MS));
        assert_eq!(gate.fail(Op::Start, t0, &policy), Retry::After(400 * MS));
        assert_eq!(gate.failures(Op::Start), 2);
        assert!(gate.any_failing());
        assert_eq!(gate.remaining(t0 + 100 * MS), Some(300 * MS));
        assert_eq!(gate.retry_action(t0 + 100 * MS), Some(Action::retry_after(300 * MS)));
        assert_eq!(gate.remaining(t0 + 400 * MS), None, "the wait is over at its end");
        gate.succeed(Op::Start);
        assert_eq!(gate.failures(Op::Start), 0);
        assert!(!gate.any_failing());
        assert_eq!(gate.not_before(), Some(t0 + 400 * MS), "success does not move the wait");
        gate.wait_until(t0 + Duration::from_secs(1));
        assert_eq!(gate.failures(Op::Start), 0, "an explicit wait is not a failure");
        assert_eq!(gate.remaining(t0), Some(Duration::from_secs(1)));
        let _ = gate.fail(Op::Start, t0, &policy);
        gate.clear_wait();
        assert_eq!((gate.remaining(t0), gate.failures(Op::Start)), (None, 1), "no wait; the count stands");
    }

    /// The bug this design exists for: a start that keeps failing, with a successful inspect
    /// after each failure, must still back off further each time and run out of its budget.
    #[test]
    fn a_success_of_one_operation_never_resets_another() {
        let start = RetryPolicy::exponential(500 * MS, Duration::from_secs(30)).with_budget(3);
        let inspect = RetryPolicy::exponential(100 * MS, Duration::from_secs(10));
        let mut gate = RetryGate::default();
        let t0 = MonoTime::ZERO;
        assert_eq!(gate.fail(Op::Inspect, t0, &inspect), Retry::After(200 * MS));
        assert_eq!(gate.fail(Op::Start, t0, &start), Retry::After(Duration::from_secs(1)));
        gate.succeed(Op::Inspect);
        assert_eq!(gate.fail(Op::Start, t0, &start), Retry::After(Duration::from_secs(2)));
        gate.succeed(Op::Inspect);
        assert_eq!((gate.failures(Op::Start), gate.failures(Op::Inspect)), (2, 0));
        let before = gate.not_before();
        assert_eq!(gate.fail(Op::Start, t0 + 5 * MS, &start), Retry::Exhausted { failures: 3 });
        assert_eq!(gate.not_before(), before, "an exhausted budget sets no wait");
        assert_eq!(gate.fail(Op::Start, t0, &start), Retry::Exhausted { failures: 4 }, "and stays exhausted");
        gate.succeed(Op::Start);
        assert_eq!(gate.fail(Op::Start, t0, &start), Retry::After(Duration::from_secs(1)), "until it succeeds");
    }

    #[test]
    fn a_budget_is_at_least_one_failure() {
        let policy = RetryPolicy::fixed(MS).with_budget(0);
        assert_eq!(policy.budget(), Some(1));
        assert!(policy.exhausted_by(1) && !policy.exhausted_by(0));
        assert!(!RetryPolicy::fixed(MS).exhausted_by(u32::MAX), "no budget: never exhausted");
        let mut gate = RetryGate::default();
        assert_eq!(gate.fail(Op::Start, MonoTime::ZERO, &policy), Retry::Exhausted { failures: 1 });
    }
}
