//! What a driver sees of its runtime, for a readiness probe.
//!
//! *Guarantees*: [`RuntimeHealth::degraded`] names a runtime that has held a request longer than
//! the patience given (a hung Docker answers its API's ping, so only the requests tell), with
//! how many are inside it and how many the engine holds back (its bound, or an object's turn).
//! The record is kept by guards, so a request cancelled (its task aborted) leaves it too.
//!
//! *Caveats*: pulls and builds are not counted: they take long by nature.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct RuntimeHealth {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Requests inside the runtime: ticket -> since when.
    inside: BTreeMap<u64, Instant>,
    next: u64,
    waiting: usize,
}

/// A request inside the runtime, for as long as it lives.
pub(crate) struct Inside {
    health: RuntimeHealth,
    ticket: u64,
}

impl RuntimeHealth {
    /// How many requests wait in the engine for a place inside the runtime or their object's
    /// turn (the engine holds them).
    pub(crate) fn set_waiting(&self, waiting: usize) {
        self.inner.lock().waiting = waiting;
    }

    pub(crate) fn inside(&self) -> Inside {
        let mut inner = self.inner.lock();
        let ticket = inner.next;
        inner.next += 1;
        inner.inside.insert(ticket, Instant::now());
        Inside { health: self.clone(), ticket }
    }

    /// Why the runtime looks stuck, if a request has been inside it longer than `patience`.
    pub fn degraded(&self, patience: Duration) -> Option<String> {
        let inner = self.inner.lock();
        let oldest = inner.inside.values().min()?.elapsed();
        (oldest > patience).then(|| {
            format!(
                "the container runtime has not answered a request for {} s ({} inside it, {} waiting their turn)",
                oldest.as_secs(),
                inner.inside.len(),
                inner.waiting
            )
        })
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        self.health.inner.lock().inside.remove(&self.ticket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_held_past_the_patience_is_named_until_it_leaves() {
        let health = RuntimeHealth::default();
        assert_eq!(health.degraded(Duration::ZERO), None);
        health.set_waiting(1);
        let inside = health.inside();
        std::thread::sleep(Duration::from_millis(5));
        let reason = health.degraded(Duration::from_millis(1));
        assert!(reason.as_deref().is_some_and(|r| r.contains("1 inside it, 1 waiting")), "{reason:?}");
        assert_eq!(health.degraded(Duration::from_secs(60)), None, "not past a long patience");
        drop(inside);
        assert_eq!(health.degraded(Duration::ZERO), None, "left when dropped");
    }
}
