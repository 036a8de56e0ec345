//! The discrete-event scheduler: one queue of `(time, seq, event)`. Time jumps to the next event;
//! `seq` breaks ties in insertion order, so equal-time events are deterministic.

use drydock_engine::MonoTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A queued event's place in the heap: its time, its number and where it waits in the slab.
/// Small, so a heap sift moves a few words rather than a whole event (events carry objects and
/// requests: moving them on every sift was a tenth of a run's time).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    at: MonoTime,
    seq: u64,
    slot: usize,
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed, so the max-heap pops the earliest entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

pub struct Scheduler<E> {
    heap: BinaryHeap<Entry>,
    /// The events, by slot; `None` where a slot is free.
    slab: Vec<Option<E>>,
    free: Vec<usize>,
    seq: u64,
    now: MonoTime,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler { heap: BinaryHeap::new(), slab: Vec::new(), free: Vec::new(), seq: 0, now: MonoTime::ZERO }
    }
}

impl<E> Scheduler<E> {
    /// Schedule `event` at `at`; a time in the past means "now".
    pub fn at(&mut self, at: MonoTime, event: E) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot] = Some(event);
                slot
            }
            None => {
                self.slab.push(Some(event));
                self.slab.len() - 1
            }
        };
        self.heap.push(Entry { at: at.max(self.now), seq: self.seq, slot });
    }

    /// The next event, advancing time to it.
    pub fn pop(&mut self) -> Option<(MonoTime, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.at;
        let event = self.slab.get_mut(entry.slot)?.take()?;
        self.free.push(entry.slot);
        Some((entry.at, event))
    }

    pub fn now(&self) -> MonoTime {
        self.now
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_insertion_order_and_no_going_back() {
        let mut s = Scheduler::default();
        s.at(MonoTime(5), "c");
        s.at(MonoTime(1), "a");
        s.at(MonoTime(5), "d");
        s.at(MonoTime(1), "b");
        assert_eq!(s.pop(), Some((MonoTime(1), "a")));
        assert_eq!(s.pop(), Some((MonoTime(1), "b")));
        s.at(MonoTime(0), "late");
        assert_eq!(s.pop(), Some((MonoTime(1), "late")), "the past is now");
        assert_eq!(s.pop().map(|e| e.1), Some("c"));
        assert_eq!(s.pop().map(|e| e.1), Some("d"));
        assert_eq!(s.pop(), None);
    }
}
