//! Schedules: a run as data (the workload's actions, the fault plan with every fault decision
//! that fired, and the seed of the world's own draws), so it can be saved, replayed without the
//! generator that made it, and shrunk.

use crate::{FaultSelection, Scenario, find, names, streams};
use drydock_faults::{Decisions, FaultKind, FaultPlan};
use drydock_sim::workload::Workload;
use drydock_sim::{RunReport, World, WorldConfig};
use serde::{Deserialize, Serialize};

/// Bumped when the meaning of a saved schedule changes.
pub const SCHEDULE_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub version: u32,
    pub scenario: String,
    /// The seed the schedule was materialized from (for reference; replay does not use it).
    pub seed: u64,
    /// Seed of the world's own draws: latencies, delivery delays, fault decisions.
    pub world_seed: u64,
    pub faults: FaultPlan,
    pub workload: Workload,
}

impl Scenario {
    /// The schedule of `seed` under `faults`: its workload, and its fault plan scripted with the
    /// decisions its run made (so it replays to the same digest, and a shrinker can remove
    /// single fault decisions). Runs the seed once to learn them.
    pub fn schedule(&self, seed: u64, faults: &FaultSelection) -> Schedule {
        let (workload, plan) = self.materialize_with(seed, faults);
        let report = World::new(&(self.world)(), &workload, plan, streams(seed).world, false).run();
        self.recorded_schedule(seed, faults, report.fault_decisions)
    }

    /// The schedule of `seed` under `faults` whose run made `decisions` (a sweep's report has
    /// them: no need to run the seed again).
    pub fn recorded_schedule(&self, seed: u64, faults: &FaultSelection, decisions: Decisions) -> Schedule {
        let (workload, plan) = self.materialize_with(seed, faults);
        Schedule {
            version: SCHEDULE_VERSION,
            scenario: self.name.to_string(),
            seed,
            world_seed: streams(seed).world,
            faults: plan.scripted(decisions),
            workload,
        }
    }
}

impl Schedule {
    /// Run it in its scenario's world.
    pub fn replay(&self, keep_trace: bool) -> Result<RunReport, String> {
        let scenario = find(&self.scenario)
            .ok_or_else(|| format!("unknown scenario {:?}; known scenarios: {}", self.scenario, names().join(", ")))?;
        Ok(self.replay_in(&(scenario.world)(), keep_trace))
    }

    /// Run it in `config`.
    pub fn replay_in(&self, config: &WorldConfig, keep_trace: bool) -> RunReport {
        let mut report = World::new(config, &self.workload, self.faults.clone(), self.world_seed, keep_trace).run();
        report.seed = self.seed;
        report
    }

    /// The first violated invariant of a run of this schedule, if any.
    fn failure(&self, config: &WorldConfig) -> Option<String> {
        self.replay_in(config, false).violations.first().map(|v| v.invariant.clone())
    }

    /// Steps: workload actions plus fault decisions that fire (or, for a schedule without
    /// recorded decisions, enabled fault kinds).
    pub fn steps(&self) -> usize {
        let faults = match self.faults.script() {
            Some(script) => script.values().map(|fired| fired.len()).sum(),
            None => self.faults.enabled().count(),
        };
        self.workload.ops.len() + faults
    }

    /// Every recorded fault decision, in order.
    fn decisions(&self) -> Vec<(FaultKind, u64)> {
        let script = self.faults.script().into_iter().flatten();
        script.flat_map(|(kind, fired)| fired.iter().map(move |n| (*kind, *n))).collect()
    }

    /// This schedule deciding faults as `decisions` say.
    fn with_decisions(&self, decisions: &[(FaultKind, u64)]) -> Schedule {
        let mut script = Decisions::new();
        for (kind, n) in decisions {
            script.entry(*kind).or_default().insert(*n);
        }
        Schedule { faults: self.faults.clone().scripted(script), ..self.clone() }
    }

    /// A smaller schedule that still fails with `invariant`: remove chunks of actions (halving
    /// the chunk size down to single actions), then whole fault kinds, then chunks of single
    /// fault decisions, keeping every removal after which the same invariant still fails.
    /// Returns the schedule and how many runs it took.
    pub fn shrink(&self, config: &WorldConfig, invariant: &str) -> (Schedule, usize) {
        let mut runs = 0;
        let mut fails = |trial: &Schedule| {
            runs += 1;
            trial.failure(config).as_deref() == Some(invariant)
        };
        let ops = self.workload.ops.clone();
        let mut best = shrink_list(self.clone(), ops, &mut fails, |s, ops| Schedule {
            workload: Workload { ops: ops.to_vec(), ..s.workload.clone() },
            ..s.clone()
        });
        let kinds: Vec<FaultKind> = best.faults.enabled().map(|(k, _)| k).collect();
        for kind in kinds {
            let trial = Schedule { faults: best.faults.clone().without(kind), ..best.clone() };
            if fails(&trial) {
                best = trial;
            }
        }
        let decisions = best.decisions();
        let best = shrink_list(best, decisions, &mut fails, |s, d| s.with_decisions(d));
        (best, runs)
    }
}

/// Delta debugging over one list of a schedule: remove chunks (halving the size down to single
/// items) while `fails` still holds for the schedule `rebuild` makes from what is left.
fn shrink_list<T: Clone>(
    schedule: Schedule,
    mut items: Vec<T>,
    fails: &mut impl FnMut(&Schedule) -> bool,
    rebuild: impl Fn(&Schedule, &[T]) -> Schedule,
) -> Schedule {
    let mut best = schedule;
    let mut chunk = items.len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        while start < items.len() {
            let mut fewer = items.clone();
            fewer.drain(start..(start + chunk).min(items.len()));
            let trial = rebuild(&best, &fewer);
            if fails(&trial) {
                best = trial;
                items = fewer;
            } else {
                start += chunk;
            }
        }
        if chunk == 1 {
            return best;
        }
        chunk = chunk.div_ceil(2);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_schedule_replays_to_the_same_digest_as_its_seed() {
        let scenario = find("basic").unwrap();
        let schedule = scenario.schedule(17, &FaultSelection::Default);
        let json = serde_json::to_string(&schedule).unwrap();
        let back: Schedule = serde_json::from_str(&json).unwrap();
        assert_eq!(back.replay(false).unwrap().digest, scenario.run(17, false).digest);
    }

    #[test]
    fn a_schedule_with_its_fault_decisions_replays_to_the_same_digest() {
        let scenario = find("mixed").unwrap();
        // Every kind on: the run must make decisions of many kinds for this to mean anything.
        let all: Vec<(FaultKind, Option<f64>)> = FaultKind::ALL.iter().map(|k| (*k, None)).collect();
        let selection = FaultSelection::Only(all);
        let schedule = scenario.schedule(3, &selection);
        let fired = schedule.decisions();
        let kinds: std::collections::BTreeSet<FaultKind> = fired.iter().map(|(k, _)| *k).collect();
        assert!(kinds.len() >= 8, "only {kinds:?} fired");
        let back: Schedule = serde_json::from_str(&serde_json::to_string(&schedule).unwrap()).unwrap();
        assert_eq!(back.replay(false).unwrap().digest, scenario.run_with(3, false, &selection).digest);
        // Without one decision, the run differs.
        let fewer = back.with_decisions(&fired[1..]);
        assert_ne!(fewer.replay(false).unwrap().digest, scenario.run_with(3, false, &selection).digest);
    }

    #[test]
    fn shrinking_keeps_the_failure_and_removes_steps() {
        // A world that fails every run with many events: the event budget is tiny.
        let scenario = find("basic").unwrap();
        let mut config = (scenario.world)();
        config.liveness.max_events = 40;
        let schedule = scenario.schedule(5, &FaultSelection::Default);
        assert_eq!(schedule.failure(&config).as_deref(), Some("event-budget"));
        let (small, runs) = schedule.shrink(&config, "event-budget");
        assert!(runs > 0);
        assert_eq!(small.failure(&config).as_deref(), Some("event-budget"), "still fails the same way");
        assert!(small.steps() < schedule.steps(), "{} -> {}", schedule.steps(), small.steps());
    }
}
