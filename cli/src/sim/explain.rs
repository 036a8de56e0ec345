//! A stopgap until the simulator explains its events itself: an [`ExplainedRun`] read from a
//! [`RunReport`]'s trace lines alone. It guesses each event's kind, process, object and faults
//! from the words of its line, and knows nothing of causes, containers or diffs (so the page shows
//! the causal links of watch deliveries to the writes they carry, and no more). It goes when
//! `RunReport.trace` holds explained events (`ExplainedRun::from_report`).

use drydock_sim::RunReport;
use drydock_sim::trace::{EventKind, ExplainedRun, ExplainedViolation, TraceEvent};

/// The run of `report` (which kept its trace), explained as far as its lines tell.
pub(super) fn explain(scenario: &str, report: &RunReport) -> ExplainedRun {
    let lines = report.trace.as_deref().unwrap_or_default();
    let events: Vec<TraceEvent> = lines.iter().enumerate().map(|(i, line)| event(i as u64 + 1, line)).collect();
    let last = events.last().map_or((0, 0), |e| (e.seq, e.at_nanos));
    let violations = report
        .violations
        .iter()
        .map(|v| ExplainedViolation {
            invariant: v.invariant.clone(),
            message: v.message.clone(),
            // The run stops after the event that broke an invariant: its last.
            seq: last.0,
            at_nanos: last.1,
            objects: named_objects(&v.message, &events),
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

fn event(seq: u64, line: &str) -> TraceEvent {
    let mut words = line.split_whitespace();
    let at_nanos = words.next().and_then(nanos).unwrap_or(0);
    let rest: Vec<&str> = words.collect();
    let process = rest.first().and_then(|w| w.strip_prefix('p')).and_then(|n| n.parse::<usize>().ok());
    let verb = if process.is_some() { rest.get(1) } else { rest.first() }.copied().unwrap_or("");
    let kind = match verb {
        "client" => EventKind::Client,
        "store" if line.contains(" get ") || line.contains(" list ") || line.contains("objects") => {
            EventKind::StoreRead
        }
        "store" => EventKind::StoreWrite,
        "runtime" => EventKind::Runtime,
        "store-reply" | "runtime-reply" => EventKind::Reply,
        "deliver" => EventKind::Deliver,
        "runtime-event" => EventKind::RuntimeEvent,
        "restarts" | "relists" | "relist" => EventKind::Process,
        "heal" => EventKind::Heal,
        "external" => EventKind::Fault,
        _ if verb.starts_with("[fault") => EventKind::Fault,
        _ => EventKind::Other,
    };
    let faults = line.split("[fault ").skip(1).filter_map(|rest| rest.split([']', ':', ' ']).next()).map(String::from);
    TraceEvent {
        seq,
        at_nanos,
        line: line.to_string(),
        kind,
        process,
        object: rest.iter().find_map(|w| object(w)),
        faults: faults.collect(),
        ..TraceEvent::default()
    }
}

/// `12.000345s` in nanoseconds.
fn nanos(word: &str) -> Option<u64> {
    let (secs, micros) = word.strip_suffix('s')?.split_once('.')?;
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + micros.parse::<u64>().ok()? * 1_000)
}

/// A word that names a store object, `Kind/namespace/name` (or `Kind/name`), without a version
/// (`@3`) or punctuation after it.
fn object(word: &str) -> Option<String> {
    let word = word.trim_end_matches([':', ',', ';', ')', '.']);
    let word = word.split('@').next().unwrap_or(word);
    let (kind, name) = word.split_once('/')?;
    let kind_like =
        kind.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && kind.chars().all(|c| c.is_ascii_alphanumeric());
    (kind_like && !name.is_empty()).then(|| word.to_string())
}

/// The objects of the run a violation's message names.
fn named_objects(message: &str, events: &[TraceEvent]) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for word in message.split_whitespace() {
        if let Some(object) = object(word.trim_start_matches(['(', '"', '\'']).trim_end_matches(['"', '\'']))
            && !named.contains(&object)
            && events.iter().any(|e| e.object.as_deref() == Some(object.as_str()))
        {
            named.push(object);
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kind_process_object_time_and_faults_from_a_line() {
        let e = event(7, "0.412351s p1 store #1 update-status Namespace/ns-1@1 -> ok rv=2 [fault store-conflict]");
        assert_eq!(e.seq, 7);
        assert_eq!(e.at_nanos, 412_351_000);
        assert_eq!(e.kind, EventKind::StoreWrite);
        assert_eq!(e.process, Some(1));
        assert_eq!(e.object.as_deref(), Some("Namespace/ns-1"));
        assert_eq!(e.faults, vec!["store-conflict".to_string()]);
        let d = event(8, "1.000000s p0 deliver Modified LogicalContainer/a/web rv=5");
        assert_eq!((d.kind, d.object.as_deref()), (EventKind::Deliver, Some("LogicalContainer/a/web")));
        assert_eq!(event(9, "2.000000s heal faults=none").kind, EventKind::Heal);
    }
}
