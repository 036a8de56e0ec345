//! Efficiency: once faults heal, the work a world does stays in proportion to what it has to do.
//!
//! A controller that retries a permanent failure without end (a start that can never succeed, a
//! create the runtime refuses as invalid, NotFound retried for ever as in the second bug of the
//! RDD PR #188 review) or that reconciles in a tight loop passes every safety invariant and may
//! even look converged at a glance: this checker catches it by counting, with no test written for
//! the bug.
//!
//! Work is counted in windows of simulated time from the heal: per object (the key whose reconcile
//! asked for it), its runtime requests and its store writes; per process, its reconciles, against
//! a budget per object in the store (a reconcile that sends nothing, requeued in a tight loop, is
//! work too).

use drydock_engine::api::ObjectKey;
use drydock_engine::fixed::FixedMap;
use std::time::Duration;

/// The work budgets, per window.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkLimits {
    pub window: Duration,
    /// Runtime requests one object's reconciles may send per window.
    pub runtime_requests: u32,
    /// Store writes one object's reconciles may send per window.
    pub store_writes: u32,
    /// Reconciles a process may run per window, per object in the store (and at least this many).
    pub reconciles_per_object: u32,
}

impl Default for WorkLimits {
    /// Chosen from what healthy runs do (see docs/simulator.md): a few times the most any object of a
    /// 2,000-seed `mixed` sweep needs in one minute after the heal, and far below what a loop
    /// retrying every 200 ms does (300 a minute).
    fn default() -> Self {
        WorkLimits {
            window: Duration::from_secs(60),
            runtime_requests: 60,
            store_writes: 40,
            reconciles_per_object: 60,
        }
    }
}

/// The most work one object (or one process, per object) did in one window, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkPeaks {
    pub runtime_requests: u32,
    pub store_writes: u32,
    pub reconciles_per_object: u32,
}

#[derive(Default)]
struct Work {
    runtime_requests: u32,
    store_writes: u32,
}

/// Counts work after the heal and says when a budget is exceeded.
pub struct WorkCounter {
    limits: WorkLimits,
    /// The window being counted, by index from the heal.
    window: u64,
    work: FixedMap<ObjectKey, Work>,
    /// Per process: its reconcile count when the window began.
    reconciles_at_start: Vec<Option<u64>>,
    /// The most objects the store held during the window (objects deleted during it were work
    /// too).
    objects: usize,
    pub peaks: WorkPeaks,
}

impl WorkCounter {
    pub fn new(limits: WorkLimits) -> Self {
        WorkCounter {
            limits,
            window: 0,
            work: FixedMap::default(),
            reconciles_at_start: Vec::new(),
            objects: 0,
            peaks: WorkPeaks::default(),
        }
    }

    fn enter(&mut self, since_heal: Duration) {
        let window = (since_heal.as_nanos() / self.limits.window.as_nanos().max(1)) as u64;
        if window != self.window {
            self.window = window;
            self.work.clear();
            self.reconciles_at_start.iter_mut().for_each(|r| *r = None);
            self.objects = 0;
        }
    }

    /// A reconcile of `key` sent a request `since_heal` after the heal (`what` says which, for the
    /// message). `Err` once the object's budget for this window is exceeded.
    pub fn sent(
        &mut self,
        since_heal: Duration,
        key: &ObjectKey,
        runtime: bool,
        what: impl FnOnce() -> String,
    ) -> Result<(), String> {
        self.enter(since_heal);
        let work = self.work.entry(key.clone()).or_default();
        let (count, limit, kind) = if runtime {
            work.runtime_requests += 1;
            self.peaks.runtime_requests = self.peaks.runtime_requests.max(work.runtime_requests);
            (work.runtime_requests, self.limits.runtime_requests, "runtime requests")
        } else {
            work.store_writes += 1;
            self.peaks.store_writes = self.peaks.store_writes.max(work.store_writes);
            (work.store_writes, self.limits.store_writes, "store writes")
        };
        if count > limit {
            return Err(format!(
                "{key} caused {count} {kind} within {}s after faults healed (the last: {}); at most {limit} are expected",
                self.limits.window.as_secs(),
                what()
            ));
        }
        Ok(())
    }

    /// Process `process` has run `total` reconciles so far, `since_heal` after the heal, with
    /// `objects` objects in the store. `Err` once its reconciles this window exceed the budget
    /// for the most objects the store held in the window.
    pub fn reconciled(
        &mut self,
        since_heal: Duration,
        process: usize,
        total: u64,
        objects: usize,
    ) -> Result<(), String> {
        self.enter(since_heal);
        if self.reconciles_at_start.len() <= process {
            self.reconciles_at_start.resize(process + 1, None);
        }
        let start = *self.reconciles_at_start[process].get_or_insert(total);
        let done = total.saturating_sub(start);
        self.objects = self.objects.max(objects);
        let objects = self.objects.max(1) as u64;
        let per_object = u32::try_from(done / objects).unwrap_or(u32::MAX);
        self.peaks.reconciles_per_object = self.peaks.reconciles_per_object.max(per_object);
        let limit = u64::from(self.limits.reconciles_per_object) * objects;
        if done > limit {
            return Err(format!(
                "process p{process} ran {done} reconciles within {}s after faults healed, for {objects} objects; at most {limit} are expected",
                self.limits.window.as_secs()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::namespaced("PhysicalContainer", "ns", name)
    }

    /// A start retried every 200 ms (the loop of a start that can never succeed) is caught within
    /// its first window; the same object's healthy work (create, start, inspects, a monitoring
    /// pass) is not.
    #[test]
    fn a_start_retried_every_200_ms_is_caught_and_healthy_work_is_not() {
        let mut counter = WorkCounter::new(WorkLimits::default());
        let healthy = ["create", "start", "inspect", "inspect"];
        for (i, what) in healthy.iter().enumerate() {
            assert_eq!(counter.sent(Duration::from_secs(i as u64), &key("web"), true, || what.to_string()), Ok(()));
        }
        assert_eq!(counter.sent(Duration::from_secs(30), &key("web"), true, || "inspect".into()), Ok(()));
        let mut result = Ok(());
        for i in 0..300u64 {
            result = counter.sent(Duration::from_millis(60_000 + 200 * i), &key("loop"), true, || "start 3f2a".into());
            if result.is_err() {
                break;
            }
        }
        let message = result.unwrap_err();
        assert!(message.contains("PhysicalContainer/ns/loop caused 61 runtime requests"), "{message}");
        assert!(message.contains("start 3f2a"), "{message}");
        assert_eq!(counter.peaks.runtime_requests, 61);
    }

    #[test]
    fn budgets_are_per_window_and_per_object() {
        let mut counter = WorkCounter::new(WorkLimits { store_writes: 3, ..WorkLimits::default() });
        for second in [0, 20, 40] {
            assert_eq!(counter.sent(Duration::from_secs(second), &key("a"), false, || "update".into()), Ok(()));
            assert_eq!(counter.sent(Duration::from_secs(second), &key("b"), false, || "update".into()), Ok(()));
        }
        // A new window: the count starts again.
        assert_eq!(counter.sent(Duration::from_secs(61), &key("a"), false, || "update".into()), Ok(()));
        for _ in 0..2 {
            assert!(counter.sent(Duration::from_secs(62), &key("a"), false, || "update".into()).is_ok());
        }
        assert!(
            counter
                .sent(Duration::from_secs(63), &key("a"), false, || "update".into())
                .unwrap_err()
                .contains("4 store writes")
        );
    }

    /// A reconcile requeued in a tight loop sends nothing, but its process's reconciles outrun
    /// what its objects can need.
    #[test]
    fn a_tight_reconcile_loop_is_caught_by_its_process() {
        let mut counter = WorkCounter::new(WorkLimits::default());
        assert_eq!(counter.reconciled(Duration::ZERO, 1, 5_000, 10), Ok(()), "before the heal's first count");
        assert_eq!(counter.reconciled(Duration::from_secs(30), 1, 5_400, 10), Ok(()));
        let message = counter.reconciled(Duration::from_secs(50), 1, 5_601, 10).unwrap_err();
        assert!(message.contains("p1 ran 601 reconciles") && message.contains("10 objects"), "{message}");
        assert_eq!(counter.reconciled(Duration::from_secs(70), 1, 6_000, 10), Ok(()), "a new window");
    }
}
