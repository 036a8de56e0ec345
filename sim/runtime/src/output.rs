//! What containers print: each container's output, as `docker logs` would show it, kept after the
//! container is removed (as a follower that read it to the end would have it).
//!
//! A create records an empty, complete output; a start plans what the main process will print (`shell::run` with no signal coming); a stop
//! restates it (the run again with the signals: a trap may print); an exit cuts what was planned
//! after it. Lines are stamped with the time they are printed; a stop applies at once (see
//! `lifecycle`), so lines printed during its grace period are stamped with the stop.

use super::SimRuntime;
use super::shell::{Printed, Stream};
use drydock_engine::WallTime;

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

impl SimRuntime {
    /// The output of container `id` (also once removed), if it ever started.
    pub fn output(&self, id: &str) -> Option<&ContainerOutput> {
        self.outputs.get(id)
    }

    /// Every container's output, by container id.
    pub fn outputs(&self) -> impl Iterator<Item = (&String, &ContainerOutput)> {
        self.outputs.iter()
    }

    /// Container `id` was created now: it has printed nothing, and prints nothing until it starts
    /// (`docker logs -f` of a created container ends at once).
    pub(super) fn created_output(&mut self, id: &str) {
        let output = ContainerOutput { ended_at: Some(self.now), ..ContainerOutput::default() };
        self.outputs.insert(id.to_string(), output);
    }

    /// Container `id` started at `now` and will print `printed` if nothing stops it.
    pub(super) fn plan_output(&mut self, id: &str, printed: Vec<Printed>) {
        let now = self.now;
        let output = self.outputs.entry(id.to_string()).or_default();
        output.ended_at = None;
        output.run_from = output.lines.len();
        output.lines.extend(printed.into_iter().map(|p| line(now, p)));
        output.lines[output.run_from..].sort_by_key(|l| l.at);
    }

    /// Container `id`, started at `started`, is stopped now: its run prints `printed` instead,
    /// each line no later than now.
    pub(super) fn restate_output(&mut self, id: &str, started: WallTime, printed: Vec<Printed>) {
        let now = self.now;
        let Some(output) = self.outputs.get_mut(id) else { return };
        output.lines.truncate(output.run_from);
        output.lines.extend(printed.into_iter().map(|p| {
            let line = line(started, p);
            OutputLine { at: line.at.min(now), ..line }
        }));
    }

    /// The main process of container `id` ended at `time`: what it planned to print later is not.
    pub(super) fn end_output(&mut self, id: &str, time: WallTime) {
        if let Some(output) = self.outputs.get_mut(id) {
            let keep = output.run_from + output.lines[output.run_from..].partition_point(|l| l.at <= time);
            output.lines.truncate(keep);
            output.ended_at = Some(time);
        }
    }

    /// Container `id` was removed now.
    pub(super) fn removed_output(&mut self, id: &str) {
        let now = self.now;
        if let Some(output) = self.outputs.get_mut(id) {
            output.ended_at.get_or_insert(now);
            output.removed = true;
        }
    }
}

fn line(started: WallTime, printed: Printed) -> OutputLine {
    OutputLine { at: WallTime(started.0.saturating_add(printed.after_ms)), stream: printed.stream, text: printed.text }
}
