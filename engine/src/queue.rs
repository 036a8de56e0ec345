//! The work queue: which keys are due for reconciliation, and when.
//!
//! *Guarantees*
//! - A key is queued at most once (deduplication); adding it again keeps the earlier due time.
//! - A key handed out by [`WorkQueue::pop_ready`] is *processing* until [`WorkQueue::done`]; adding
//!   it meanwhile marks it dirty, and `done` queues it again. So at most one reconcile per key
//!   runs at a time, and no event that arrived during one is lost.
//! - Among due keys, the earliest due time goes first, then insertion order.

use crate::fixed::FixedMap;
use crate::time::MonoTime;
use std::collections::BTreeMap;
use std::hash::Hash;

#[derive(Debug)]
pub struct WorkQueue<K: Ord + Clone + Hash> {
    /// Every key queued, processing or both, with its state: one lookup per operation (hashed:
    /// nothing iterates it).
    keys: FixedMap<K, Slot>,
    /// Queued keys by (due time, insertion number): the order they are handed out in. Keyed by
    /// numbers only, so ordering it never compares keys.
    by_time: BTreeMap<(MonoTime, u64), K>,
    seq: u64,
}

/// What the queue knows of one key.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// Queued: when it is due, and its insertion number.
    queued: Option<(MonoTime, u64)>,
    /// Handed out and not `done` yet.
    processing: bool,
    /// Added while processing: queue it again at this time once done.
    dirty: Option<MonoTime>,
}

impl Slot {
    fn is_empty(&self) -> bool {
        self.queued.is_none() && !self.processing && self.dirty.is_none()
    }
}

impl<K: Ord + Clone + Hash> Default for WorkQueue<K> {
    fn default() -> Self {
        WorkQueue { keys: FixedMap::default(), by_time: BTreeMap::new(), seq: 0 }
    }
}

impl<K: Ord + Clone + Hash> WorkQueue<K> {
    /// Queue `key` to run at `at` (or earlier, if it is already queued for earlier). True if this
    /// set when it runs (it was not queued, or queued for later); false if it changed nothing.
    pub fn add(&mut self, key: K, at: MonoTime) -> bool {
        match self.keys.get_mut(&key) {
            Some(slot) if slot.processing => {
                let earlier = slot.dirty.is_none_or(|due| at < due);
                if earlier {
                    slot.dirty = Some(at);
                }
                earlier
            }
            Some(slot) => {
                if let Some((due, seq)) = slot.queued {
                    if due <= at {
                        return false;
                    }
                    self.by_time.remove(&(due, seq));
                }
                self.seq += 1;
                slot.queued = Some((at, self.seq));
                self.by_time.insert((at, self.seq), key);
                true
            }
            None => {
                self.seq += 1;
                self.keys.insert(key.clone(), Slot { queued: Some((at, self.seq)), ..Slot::default() });
                self.by_time.insert((at, self.seq), key);
                true
            }
        }
    }

    /// The next key due at or before `now`; it is processing until `done`.
    pub fn pop_ready(&mut self, now: MonoTime) -> Option<K> {
        let (&(due, _), _) = self.by_time.first_key_value()?;
        if due > now {
            return None;
        }
        let (_, key) = self.by_time.pop_first()?;
        if let Some(slot) = self.keys.get_mut(&key) {
            slot.queued = None;
            slot.processing = true;
        }
        Some(key)
    }

    /// Finish processing `key`; if it was added meanwhile, queue it again.
    pub fn done(&mut self, key: &K) {
        let Some(slot) = self.keys.get_mut(key) else { return };
        slot.processing = false;
        let again = slot.dirty.take();
        if slot.is_empty() {
            self.keys.swap_remove(key);
        }
        if let Some(at) = again {
            self.add(key.clone(), at);
        }
    }

    /// When the earliest queued key is due.
    pub fn next_due(&self) -> Option<MonoTime> {
        self.by_time.first_key_value().map(|(&(t, _), _)| t)
    }

    /// Whether `key` is queued, processing, or both.
    pub fn contains(&self, key: &K) -> bool {
        self.keys.contains_key(key)
    }

    #[cfg(test)]
    pub fn is_processing(&self, key: &K) -> bool {
        self.keys.get(key).is_some_and(|slot| slot.processing)
    }

    #[cfg(test)]
    pub fn queued(&self) -> usize {
        self.by_time.len()
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
        assert!(q.add("a", t(10)), "new: it sets when a runs");
        assert!(q.add("a", t(5)), "earlier: it sets when a runs");
        assert!(!q.add("a", t(20)), "later: it changes nothing");
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
        assert!(q.add("a", t(0)), "the rerun is due then");
        assert!(!q.add("a", t(1)), "a later add while processing changes nothing");
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
