//! The discrete-event scheduler: one queue of `(time, seq, event)`. Time jumps to the next event;
//! `seq` breaks ties in insertion order, so equal-time events are deterministic.
//!
//! The queue is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan), which needs what a simulation
//! gives it: nothing is scheduled before the last event taken (the past is clamped to now). An
//! entry due now waits in `due`, in insertion order; a later one waits in the bucket of the highest
//! bit in which its time differs from now's. Taking the next event pops `due`, or first spreads
//! the lowest non-empty bucket around its earliest time. So each operation is a push or pop on a
//! small vector, and an entry moves to a lower bucket at most once per bit: unlike a binary heap,
//! whose every pop walks log(n) levels of a heap that grows with the world, the amortized cost
//! per event does not grow with the number of events waiting.
//!
//! *Guarantees*: events come out by time, then in the order they were scheduled (exactly the
//! order of a heap of `(time, seq)`).

use drydock_engine::MonoTime;
use std::collections::VecDeque;

/// A queued event's place in the queue: its time, its number and where it waits in the slab.
/// Small, so moving entries between buckets moves a few words rather than a whole event (events
/// carry objects and requests).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entry {
    at: MonoTime,
    seq: u64,
    slot: usize,
}

/// One bucket per bit of a time in which it can first differ from now's.
const BUCKETS: usize = 64;

pub struct Scheduler<E> {
    /// Entries due now (`at == now`), oldest `seq` first.
    due: VecDeque<Entry>,
    /// `later[i]`: entries whose time's highest bit differing from now's is bit `i`.
    later: [Vec<Entry>; BUCKETS],
    /// Bit `i` set when `later[i]` is not empty.
    occupied: u64,
    len: usize,
    /// The events, by slot; `None` where a slot is free.
    slab: Vec<Option<E>>,
    free: Vec<usize>,
    seq: u64,
    now: MonoTime,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            due: VecDeque::new(),
            later: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            len: 0,
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
            now: MonoTime::ZERO,
        }
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
        self.len += 1;
        // A new `seq` is the largest yet, so appending keeps `due` in insertion order.
        self.place(Entry { at: at.max(self.now), seq: self.seq, slot });
    }

    /// The next event, advancing time to it.
    pub fn pop(&mut self) -> Option<(MonoTime, E)> {
        if self.due.is_empty() {
            self.advance()?;
        }
        let entry = self.due.pop_front()?;
        self.len -= 1;
        let event = self.slab.get_mut(entry.slot)?.take()?;
        self.free.push(entry.slot);
        Some((entry.at, event))
    }

    /// With nothing due now: move time to the earliest entry, and spread the lowest non-empty
    /// bucket (where it is) around it. `None` if nothing is queued.
    fn advance(&mut self) -> Option<()> {
        if self.occupied == 0 {
            return None;
        }
        let lowest = self.occupied.trailing_zeros() as usize;
        self.occupied &= !(1 << lowest);
        let mut bucket = std::mem::take(&mut self.later[lowest]);
        self.now = bucket.iter().map(|e| e.at).min()?;
        // Entries of one time always share a bucket, in insertion order (pushes append, and a
        // redistribution keeps their order), so they reach `due` in insertion order.
        for entry in bucket.drain(..) {
            self.place(entry);
        }
        // Keep the emptied bucket's allocation for its next entries.
        self.later[lowest] = bucket;
        Some(())
    }

    fn place(&mut self, entry: Entry) {
        let differ = entry.at.0 ^ self.now.0;
        if differ == 0 {
            self.due.push_back(entry);
            return;
        }
        let bucket = (63 - differ.leading_zeros()) as usize;
        self.later[bucket].push(entry);
        self.occupied |= 1 << bucket;
    }

    pub fn now(&self) -> MonoTime {
        self.now
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
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

    /// Against the plain definition (a sorted set of `(time, seq)`), over long random runs mixing
    /// pushes into the past, now, the near and the far future with pops: the same events in the
    /// same order, the same clock and length after every step.
    #[test]
    fn takes_events_in_the_order_of_a_sorted_set_of_time_and_seq() {
        use rand_chacha::ChaCha8Rng;
        use rand_core::{RngCore, SeedableRng};
        use std::collections::BTreeSet;
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut radix = Scheduler::default();
            let mut reference: BTreeSet<(u64, u64)> = BTreeSet::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for _ in 0..5_000 {
                if rng.next_u32() % 100 < 55 {
                    let at = match rng.next_u32() % 5 {
                        0 => now.saturating_sub(rng.next_u64() % 1_000),
                        1 => now,
                        2 => now + rng.next_u64() % 16,
                        3 => now + rng.next_u64() % 1_000_000,
                        _ => now + (rng.next_u64() >> 20),
                    };
                    seq += 1;
                    reference.insert((at.max(now), seq));
                    radix.at(MonoTime(at), seq);
                } else {
                    let expected = reference.pop_first();
                    if let Some((at, _)) = expected {
                        now = at;
                    }
                    assert_eq!(radix.pop(), expected.map(|(at, seq)| (MonoTime(at), seq)), "seed {seed}");
                }
                assert_eq!((radix.now(), radix.len()), (MonoTime(now), reference.len()), "seed {seed}");
            }
            while let Some((at, seq)) = reference.pop_first() {
                assert_eq!(radix.pop(), Some((MonoTime(at), seq)), "seed {seed}");
            }
            assert!(radix.is_empty() && radix.pop().is_none());
        }
    }
}
