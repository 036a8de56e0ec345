//! The run's trace: one line per event, folded into a running SHA-256 digest that identifies the
//! run. Two runs with the same digest saw the same events in the same order at the same times.
//!
//! A run that keeps its trace (`sim repro --trace`, `sim report`) also explains each event as a
//! [`TraceEvent`]: which process, controller and reconcile issued a request, which event
//! triggered that reconcile, what a store write changed. The explanation is never digested: it
//! is a reading of the run, not part of it, so explaining a run cannot change its digest.

mod explained;

pub use explained::{Cause, EventKind, ExplainedRun, ExplainedViolation, FieldChange, TraceEvent};

use sha2::{Digest, Sha256};

pub struct Trace {
    digest: Sha256,
    events: Option<Vec<TraceEvent>>,
    count: u64,
}

impl Trace {
    /// `keep`: keep every event, explained, for printing (slower); otherwise only the digest.
    pub fn new(keep: bool) -> Self {
        Trace { digest: Sha256::new(), events: keep.then(Vec::new), count: 0 }
    }

    /// Whether events are kept (and so worth explaining).
    pub fn keeps(&self) -> bool {
        self.events.is_some()
    }

    /// Record one event: `line` goes into the digest; `explained`, if events are kept, is kept
    /// with it (its `seq` and `line` are set here).
    pub fn record(&mut self, at_nanos: u64, line: &str, explained: Option<TraceEvent>) {
        self.count += 1;
        self.digest.update(line.as_bytes());
        self.digest.update(b"\n");
        if let Some(events) = &mut self.events {
            let mut event = explained.unwrap_or_default();
            event.seq = self.count;
            event.at_nanos = at_nanos;
            event.line = line.to_string();
            events.push(event);
        }
    }

    pub fn events(&self) -> u64 {
        self.count
    }

    /// Hex digest of everything recorded so far.
    pub fn digest(&self) -> String {
        hex::encode(self.digest.clone().finalize())
    }

    pub fn take_events(&mut self) -> Option<Vec<TraceEvent>> {
        self.events.take()
    }
}
