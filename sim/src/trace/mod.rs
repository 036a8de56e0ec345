//! The run's trace: every event is its time and a sequence of typed [`Record`]s (a store request
//! applied, a reply delivered, a fault that fired with its magnitudes...), folded into a running
//! SHA-256 digest that identifies the run. Two runs with the same digest saw the same events in
//! the same order at the same times.
//!
//! What is digested is the records' stable encoding (see `encode`): per event its time in
//! nanoseconds, each record as its tag and its fields, and an end tag. It never reads
//! the text, so rewording a trace line changes no digest, and a run that does not keep its trace
//! formats no text at all.
//!
//! The trace's text is a rendering of the records (their `Display`): an event's line is its time,
//! then its records one after another. A run that keeps its trace (`sim repro --trace`, `sim
//! report`) renders each line and also explains each event as a [`TraceEvent`]: which process,
//! controller and reconcile issued a request, which event triggered that reconcile, what a store
//! write changed. Neither the line nor the explanation is digested: they are a reading of the
//! run, not part of it, so keeping or explaining a run cannot change its digest.

mod acts;
#[cfg(test)]
mod digest_tests;
mod encode;
mod explained;
mod key;
mod record;
mod runtime;
mod store;
#[cfg(test)]
mod tests;

pub use acts::{ClientAct, ExternalAct, Outcome, ReaderStep, outcome};
pub use explained::{Cause, EventKind, ExplainedRun, ExplainedViolation, FieldChange, TraceEvent};
pub use key::Key;
pub use record::{Disruption, Fault, Record};
pub use runtime::{RuntimeOp, RuntimeOutcome};
pub use store::{StoreOp, StoreOutcome};

use drydock_engine::MonoTime;
use encode::{Encode, Encoder};
use record::Tag;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

pub struct Trace {
    digest: Sha256,
    /// The current event, encoded.
    encoder: Encoder,
    /// The current event's line, if events are kept (else nothing is rendered).
    line: String,
    /// The current event's time.
    at: MonoTime,
    events: Option<Vec<TraceEvent>>,
    count: u64,
}

impl Trace {
    /// `keep`: keep every event, explained, for printing (slower); otherwise only the digest.
    pub fn new(keep: bool) -> Self {
        Trace {
            digest: Sha256::new(),
            encoder: Encoder::default(),
            line: String::new(),
            at: MonoTime(0),
            events: keep.then(Vec::new),
            count: 0,
        }
    }

    /// Whether events are kept (and so worth explaining).
    pub fn keeps(&self) -> bool {
        self.events.is_some()
    }

    /// An event begins at `at`: what is recorded until [`Trace::end`] is its trace.
    pub fn begin(&mut self, at: MonoTime) {
        self.at = at;
        self.encoder.clear();
        at.encode(&mut self.encoder);
        if self.keeps() {
            self.line.clear();
            let _ = write!(self.line, "{at} ");
        }
    }

    /// Record what happened during the current event.
    pub fn record(&mut self, record: &Record<'_>) {
        record.encode(&mut self.encoder);
        if self.keeps() {
            let _ = write!(self.line, "{record}");
        }
    }

    /// The current event is over: its encoding goes into the digest; if events are kept, its
    /// line and `explained` are kept (its `seq`, time and `line` are set here).
    pub fn end(&mut self, explained: Option<TraceEvent>) {
        self.count += 1;
        self.encoder.tag(Tag::EventEnd);
        self.digest.update(self.encoder.bytes());
        if let Some(events) = &mut self.events {
            let mut event = explained.unwrap_or_default();
            event.seq = self.count;
            event.at_nanos = self.at.0;
            event.line = self.line.clone();
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
