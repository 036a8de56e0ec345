//! The discrete-event scheduler: one queue of `(time, seq, event)`. Time jumps to the next event;
//! `seq` breaks ties in insertion order, so equal-time events are deterministic.

use drydock_engine::MonoTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: MonoTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so the max-heap pops the earliest entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: MonoTime,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler { heap: BinaryHeap::new(), seq: 0, now: MonoTime::ZERO }
    }
}

impl<E> Scheduler<E> {
    /// Schedule `event` at `at`; a time in the past means "now".
    pub fn at(&mut self, at: MonoTime, event: E) {
        self.seq += 1;
        self.heap.push(Entry { at: at.max(self.now), seq: self.seq, event });
    }

    /// The next event, advancing time to it.
    pub fn pop(&mut self) -> Option<(MonoTime, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.at;
        Some((entry.at, entry.event))
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
