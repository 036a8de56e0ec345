//! What containers print: each container's output, as `docker logs` would show it, kept after the
//! container is removed (as a follower that read it to the end would have it).
//!
//! Docker's logs go with their container: once it is removed, its logs API answers 404
//! (`SimRuntime::open_logs`). What is kept here after the removal is what a capture attached
//! before it received, as the production driver's capture follows each container from its
//! create: the simulator's capture and its checkers read it.
//!
//! A create records an empty, complete output; a start plans what the main process will print
//! (`shell::run` with no signal coming); a stop restates it (the run again with the signals: a
//! trap may print); an exit cuts what was planned after it. Lines are stamped with the time they
//! are printed; a stop applies at once (see `lifecycle`), so lines printed during its grace
//! period are stamped with the stop.

use super::shell::{Printed, Stream};
use drydock_engine::WallTime;
use std::collections::BTreeMap;

/// One line a container printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputLine {
    pub at: WallTime,
    pub stream: Stream,
    pub text: String,
}

/// A container's output over its life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerOutput {
    /// In time order, across its runs.
    lines: Vec<OutputLine>,
    /// Where the current run's lines begin.
    run_from: usize,
    /// When its main process last ended (or it was removed): nothing more comes until a start.
    pub ended_at: Option<WallTime>,
    pub removed: bool,
}

impl ContainerOutput {
    /// The lines printed by `now`.
    pub fn printed_by(&self, now: WallTime) -> &[OutputLine] {
        &self.lines[..self.lines.partition_point(|l| l.at <= now)]
    }

    /// Whether everything it will print (until a new start) is printed by `now`.
    pub fn finished_by(&self, now: WallTime) -> bool {
        self.ended_at.is_some_and(|at| at <= now)
    }
}

/// Every container's output, by container id: of containers that exist and of removed ones.
///
/// *Guarantees* (see [`Outputs::check`]): the current run's lines are in time order (the earlier
/// runs' were cut when they ended), so [`ContainerOutput::printed_by`] finds what was printed by
/// a moment without a scan; a removed container's output has ended. An output is only added
/// (by a create or a start), never dropped.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outputs {
    outputs: BTreeMap<String, ContainerOutput>,
}

impl Outputs {
    /// The output of container `id` (also once removed), if it ever was created or started.
    pub(crate) fn get(&self, id: &str) -> Option<&ContainerOutput> {
        self.outputs.get(id)
    }

    /// Every container's output, by container id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &ContainerOutput)> {
        self.outputs.iter()
    }

    /// Container `id` was created at `now`: it has printed nothing, and prints nothing until it
    /// starts (`docker logs -f` of a created container ends at once).
    pub(crate) fn created(&mut self, id: &str, now: WallTime) {
        let output = ContainerOutput { ended_at: Some(now), ..ContainerOutput::default() };
        self.outputs.insert(id.to_string(), output);
    }

    /// Container `id` started at `now` and will print `printed` if nothing stops it.
    pub(crate) fn plan(&mut self, id: &str, now: WallTime, printed: Vec<Printed>) {
        let output = self.outputs.entry(id.to_string()).or_default();
        output.ended_at = None;
        output.run_from = output.lines.len();
        output.lines.extend(printed.into_iter().map(|p| line(now, p)));
        output.lines[output.run_from..].sort_by_key(|l| l.at);
    }

    /// Container `id`, started at `started`, is stopped at `now`: its run prints `printed`
    /// instead, each line no later than `now`.
    pub(crate) fn restate(&mut self, id: &str, started: WallTime, now: WallTime, printed: Vec<Printed>) {
        let Some(output) = self.outputs.get_mut(id) else { return };
        output.lines.truncate(output.run_from);
        output.lines.extend(printed.into_iter().map(|p| {
            let line = line(started, p);
            OutputLine { at: line.at.min(now), ..line }
        }));
    }

    /// The main process of container `id` ended at `time`: what it planned to print later is not.
    pub(crate) fn end(&mut self, id: &str, time: WallTime) {
        if let Some(output) = self.outputs.get_mut(id) {
            let keep = output.run_from + output.lines[output.run_from..].partition_point(|l| l.at <= time);
            output.lines.truncate(keep);
            output.ended_at = Some(time);
        }
    }

    /// Container `id` was removed at `now`.
    pub(crate) fn removed(&mut self, id: &str, now: WallTime) {
        if let Some(output) = self.outputs.get_mut(id) {
            output.ended_at.get_or_insert(now);
            output.removed = true;
        }
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (id, output) in &self.outputs {
            let Some(run) = output.lines.get(output.run_from..) else {
                return Err(format!("output of {id}: its run begins after its last line"));
            };
            if !run.is_sorted_by_key(|l| l.at) {
                return Err(format!("output of {id}: the current run's lines are out of time order"));
            }
            if output.removed && output.ended_at.is_none() {
                return Err(format!("output of {id}: removed, yet not ended"));
            }
        }
        Ok(())
    }
}

fn line(started: WallTime, printed: Printed) -> OutputLine {
    OutputLine { at: WallTime(started.0.saturating_add(printed.after_ms)), stream: printed.stream, text: printed.text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(after_ms: u64, text: &str) -> Printed {
        Printed { after_ms, stream: Stream::Stdout, text: text.into() }
    }

    fn texts(output: &ContainerOutput, now: u64) -> Vec<&str> {
        output.printed_by(WallTime(now)).iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn a_run_is_planned_cut_by_its_exit_and_restated_by_a_stop() {
        let mut outputs = Outputs::default();
        outputs.created("c1", WallTime(10));
        assert!(
            outputs.get("c1").is_some_and(|o| o.finished_by(WallTime(10)) && o.printed_by(WallTime(99)).is_empty())
        );
        outputs.plan("c1", WallTime(100), vec![printed(20, "b"), printed(0, "a"), printed(50, "c")]);
        outputs.check().expect("planned");
        let output = outputs.get("c1").expect("c1");
        assert_eq!((texts(output, 119), texts(output, 120)), (vec!["a"], vec!["a", "b"]), "in time order");
        assert!(!output.finished_by(WallTime(1_000)), "running");
        outputs.end("c1", WallTime(130));
        let output = outputs.get("c1").expect("c1");
        assert_eq!((texts(output, 1_000), output.ended_at), (vec!["a", "b"], Some(WallTime(130))), "cut at its exit");
        // A second run, stopped at 220: restated, no line later than the stop.
        outputs.plan("c1", WallTime(200), vec![printed(0, "d")]);
        outputs.restate("c1", WallTime(200), WallTime(220), vec![printed(0, "d"), printed(60, "trapped")]);
        outputs.end("c1", WallTime(220));
        outputs.removed("c1", WallTime(300));
        outputs.check().expect("restated");
        let output = outputs.get("c1").expect("c1");
        assert_eq!(texts(output, 1_000), ["a", "b", "d", "trapped"]);
        assert_eq!(output.printed_by(WallTime(1_000)).last().map(|l| l.at), Some(WallTime(220)));
        assert!(output.removed && output.ended_at == Some(WallTime(220)), "removed: its end stays");
    }

    #[test]
    fn check_finds_a_broken_output() {
        let mut outputs = Outputs::default();
        outputs.plan("c1", WallTime(0), vec![printed(0, "a"), printed(5, "b")]);
        if let Some(output) = outputs.outputs.get_mut("c1") {
            output.lines.swap(0, 1);
        }
        assert!(outputs.check().is_err(), "out of time order");
        let mut outputs = Outputs::default();
        outputs.plan("c1", WallTime(0), vec![]);
        outputs.removed("c1", WallTime(1));
        if let Some(output) = outputs.outputs.get_mut("c1") {
            output.ended_at = None;
        }
        assert!(outputs.check().is_err(), "removed, not ended");
    }
}
