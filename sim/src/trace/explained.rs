//! A run's events explained: which process, controller and reconcile issued each request, what
//! set that reconcile off, what a store write changed; and a whole run explained for `sim report`.
//! Nothing here is digested: it is a reading of the run, not part of it.

use serde::{Deserialize, Serialize};

/// One event of a run, explained. `sim repro --trace` prints it, `--trace --json` gives it as a
/// JSON line, `sim report` draws it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// The event's number in the run, from 1.
    pub seq: u64,
    /// Simulated (monotonic) time of the event, in nanoseconds since the run began.
    pub at_nanos: u64,
    /// The trace line: the event's time and its records, rendered (the digest hashes the records,
    /// not this text).
    pub line: String,
    pub kind: EventKind,
    /// The engine process the event happened to, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<usize>,
    /// The store object the event concerns (`Kind/namespace/name`), if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The runtime container the event concerns (its name, else its short id), if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The faults that fired during the event, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
    /// For a request (store or runtime) and what happens to it: the reconcile that issued it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// For a store write that succeeded: what it changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<FieldChange>,
    /// `tracing` lines the engine logged during the event, when logs are captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
}

/// What kind of thing an event is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// A client (the workload) changes the store.
    Client,
    /// A store request applied: a write.
    StoreWrite,
    /// A store request applied: a read.
    StoreRead,
    /// A runtime request met the runtime.
    Runtime,
    /// A reply reached the process that asked.
    Reply,
    /// A store watch event reached a process.
    Deliver,
    /// A runtime event (container started, died...) reached a process.
    RuntimeEvent,
    /// A process crashed, restarted or relisted.
    Process,
    /// A fault changed the world (a disruption, an external actor, a runtime restart).
    Fault,
    /// The faults healed.
    Heal,
    /// Anything else: a wake-up, the runtime's own progress, a log read, the liveness judge.
    #[default]
    Other,
}

/// The reconcile that issued a request, and what set it off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub process: usize,
    /// The controller's name.
    pub controller: String,
    /// The key the controller reconciled (`Kind/namespace/name`).
    pub key: String,
    /// The number of the reconcile in its process, from 1.
    pub reconcile: u64,
    /// What queued that reconcile, in words (`watch Modified Namespace/a rv=3`, `runtime reply
    /// #12`, `retry after backoff`...), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The event (its `seq`) that delivered the trigger to the process, if it is in the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_seq: Option<u64>,
    /// The event (its `seq`) at which the request was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_seq: Option<u64>,
}

/// One field a store write changed. Values are compact JSON (ownerReferences as `Kind/name`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// `metadata.ownerReferences`, `spec.image`, `status.state`...
    pub path: String,
    /// Absent when the field was set where there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Absent when the field was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A whole failing (or passing) run, explained: what `sim report` draws.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainedRun {
    pub scenario: String,
    pub seed: u64,
    pub digest: String,
    /// The fault plan, in words.
    pub faults: String,
    pub violations: Vec<ExplainedViolation>,
    pub events: Vec<TraceEvent>,
}

/// A violated invariant, placed in the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainedViolation {
    pub invariant: String,
    pub message: String,
    /// The event after which it was found.
    pub seq: u64,
    pub at_nanos: u64,
    /// The objects (`Kind/namespace/name`) and containers the message names, as they appear in
    /// the events' `object` and `container` fields.
    pub objects: Vec<String>,
}

impl TraceEvent {
    /// Whether the event concerns `filter`: an object, container or reconciled key containing
    /// it, or a trace line that names it.
    pub fn concerns(&self, filter: &str) -> bool {
        let named = |field: &Option<String>| field.as_deref().is_some_and(|f| f.contains(filter));
        named(&self.object)
            || named(&self.container)
            || self.cause.as_ref().is_some_and(|c| c.key.contains(filter))
            || self.line.contains(filter)
    }

    /// The event as text: its line, then (indented) who issued it and why, and what it changed.
    pub fn to_text(&self) -> String {
        let mut text = self.line.clone();
        if !self.faults.is_empty() {
            text.push_str(&format!("\n    faults fired: {}", self.faults.join(", ")));
        }
        if let Some(cause) = &self.cause {
            text.push_str(&format!("\n    by {cause}"));
        }
        for change in &self.diff {
            text.push_str(&format!("\n    {change}"));
        }
        for line in &self.logs {
            text.push_str(&format!("\n    | {line}"));
        }
        text
    }
}

impl std::fmt::Display for Cause {
    /// `p0 controller namespace, key Namespace/a, reconcile 3, after watch Added Namespace/a rv=2
    /// (event 5)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p{} controller {}, key {}, reconcile {}", self.process, self.controller, self.key, self.reconcile)?;
        if let Some(trigger) = &self.trigger {
            write!(f, ", after {trigger}")?;
            if let Some(seq) = self.trigger_seq {
                write!(f, " (event {seq})")?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for FieldChange {
    /// `set metadata.ownerReferences to [Namespace/a]`, `changed status.phase from A to B`,
    /// `removed metadata.finalizers (was [x])`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.before, &self.after) {
            (None, Some(after)) => write!(f, "set {} to {after}", self.path),
            (Some(before), Some(after)) => write!(f, "changed {} from {before} to {after}", self.path),
            (Some(before), None) => write!(f, "removed {} (was {before})", self.path),
            (None, None) => f.write_str(&self.path),
        }
    }
}

impl ExplainedRun {
    /// The explained run of `report`, which must have kept its trace (else it has no events).
    pub fn from_report(scenario: &str, report: &crate::RunReport) -> Self {
        let events = report.trace.clone().unwrap_or_default();
        let violations = report
            .violations
            .iter()
            .map(|v| ExplainedViolation {
                invariant: v.invariant.clone(),
                message: v.message.clone(),
                seq: v.event,
                at_nanos: events.get((v.event as usize).wrapping_sub(1)).map_or(0, |e| e.at_nanos),
                objects: named_in(&v.message, &events),
            })
            .collect();
        ExplainedRun {
            scenario: scenario.to_string(),
            seed: report.seed,
            digest: report.digest.clone(),
            faults: report.faults.clone(),
            violations,
            events,
        }
    }
}

/// The objects and containers of `events` that `message` names, longest first (so a name
/// that contains another is not mistaken for it), each once.
fn named_in(message: &str, events: &[TraceEvent]) -> Vec<String> {
    let mut names: Vec<&str> =
        events.iter().flat_map(|e| [e.object.as_deref(), e.container.as_deref()]).flatten().collect();
    names.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    names.dedup();
    let mut found: Vec<String> = Vec::new();
    for name in names {
        let covered = found.iter().any(|f| f.contains(name));
        if message.contains(name) && !covered {
            found.push(name.to_string());
        }
    }
    found
}
