//! The work queue: which keys are due for reconciliation, and when.
//!
//! *Guarantees*
//! - A key is queued at most once (deduplication); adding it again keeps the earlier due time.
//! - A key handed out by [`WorkQueue::pop_ready`] is *processing* until [`WorkQueue::done`]; adding
//!   it meanwhile marks it dirty, and `done` queues it again. So at most one reconcile per key
//!   runs at a time, and no event that arrived during one is lost.
//! - Among due keys, the earliest due time goes first, then insertion order.

use crate::time::MonoTime;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug)]
pub struct WorkQueue<K: Ord + Clone> {
    scheduled: BTreeMap<K, (MonoTime, u64)>,
    by_time: BTreeSet<(MonoTime, u64, K)>,
    processing: BTreeSet<K>,
    dirty: BTreeMap<K, MonoTime>,
    seq: u64,
}

impl<K: Ord + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        WorkQueue {
            scheduled: BTreeMap::new(),
            by_time: BTreeSet::new(),
            processing: BTreeSet::new(),
            dirty: BTreeMap::new(),
            seq: 0,
        }
    }
}

impl<K: Ord + Clone> WorkQueue<K> {
    /// Queue `key` to run at `at` (or earlier, if it is already queued for earlier).
    pub fn add(&mut self, key: K, at: MonoTime) {
        if self.processing.contains(&key) {
            let due = self.dirty.entry(key).or_insert(at);
            *due = (*due).min(at);
            return;
        }
        if let Some(&(due, seq)) = self.scheduled.get(&key) {
            if due <= at {
                return;
            }
            self.by_time.remove(&(due, seq, key.clone()));
        }
        self.seq += 1;
        self.scheduled.insert(key.clone(), (at, self.seq));
        self.by_time.insert((at, self.seq, key));
    }

    /// The next key due at or before `now`; it is processing until `done`.
    pub fn pop_ready(&mut self, now: MonoTime) -> Option<K> {
        let first = self.by_time.first()?;
        if first.0 > now {
            return None;
        }
        let (_, _, key) = self.by_time.pop_first()?;
        self.scheduled.remove(&key);
        self.processing.insert(key.clone());
        Some(key)
    }

    /// Finish processing `key`; if it was added meanwhile, queue it again.
    pub fn done(&mut self, key: &K) {
        self.processing.remove(key);
        if let Some(at) = self.dirty.remove(key) {
            self.add(key.clone(), at);
        }
    }

    /// When the earliest queued key is due.
    pub fn next_due(&self) -> Option<MonoTime> {
        self.by_time.first().map(|(t, _, _)| *t)
    }

    pub fn is_processing(&self, key: &K) -> bool {
        self.processing.contains(key)
    }

    pub fn queued(&self) -> usize {
        self.scheduled.len()
    }

    pub fn processing(&self) -> usize {
        self.processing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> MonoTime {
        MonoTime(ms * 1_000_000)
    }

    #[test]
    fn deduplicates_and_keeps_the_earliest_due_time() {
        let mut q = WorkQueue::default();
        q.add("a", t(10));
        q.add("a", t(5));
        q.add("a", t(20));
        assert_eq!(q.queued(), 1);
        assert_eq!(q.next_due(), Some(t(5)));
        assert_eq!(q.pop_ready(t(4)), None);
        assert_eq!(q.pop_ready(t(5)), Some("a"));
        assert_eq!(q.pop_ready(t(100)), None);
    }

    #[test]
    fn a_processing_key_is_not_handed_out_twice_and_reruns_after_done() {
        let mut q = WorkQueue::default();
        q.add("a", t(0));
        assert_eq!(q.pop_ready(t(0)), Some("a"));
        q.add("a", t(0));
        assert_eq!(q.pop_ready(t(0)), None, "a is still processing");
        assert!(q.is_processing(&"a"));
        q.done(&"a");
        assert_eq!(q.pop_ready(t(0)), Some("a"), "the add during processing was kept");
        q.done(&"a");
        assert_eq!(q.pop_ready(t(1000)), None);
    }

    #[test]
    fn due_order_then_insertion_order() {
        let mut q = WorkQueue::default();
        q.add("late", t(2));
        q.add("b", t(1));
        q.add("a", t(1));
        assert_eq!(q.pop_ready(t(5)), Some("b"));
        assert_eq!(q.pop_ready(t(5)), Some("a"));
        assert_eq!(q.pop_ready(t(5)), Some("late"));
    }
}
