//! Schedules: a run as data (the workload's actions and the fault plan, plus the seed of the
//! world's own draws), so it can be saved, replayed without the generator that made it, and
//! shrunk.

use crate::{FaultSelection, Scenario, find, names, streams};
use drydock_faults::{FaultKind, FaultPlan};
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
    /// The schedule of `seed` under `faults`.
    pub fn schedule(&self, seed: u64, faults: &FaultSelection) -> Schedule {
        let (workload, faults) = self.materialize_with(seed, faults);
        Schedule {
            version: SCHEDULE_VERSION,
            scenario: self.name.to_string(),
            seed,
            world_seed: streams(seed).world,
            faults,
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

    /// Steps: workload actions plus enabled fault kinds.
    pub fn steps(&self) -> usize {
        self.workload.ops.len() + self.faults.enabled().count()
    }

    /// A smaller schedule that still fails with `invariant`: remove chunks of actions (halving
    /// the chunk size down to single actions), then fault kinds, keeping every removal after
    /// which the same invariant still fails. Returns the schedule and how many runs it took.
    pub fn shrink(&self, config: &WorldConfig, invariant: &str) -> (Schedule, usize) {
        let mut best = self.clone();
        let mut runs = 0;
        let mut chunk = best.workload.ops.len().div_ceil(2).max(1);
        loop {
            let mut start = 0;
            while start < best.workload.ops.len() {
                let mut trial = best.clone();
                let end = (start + chunk).min(trial.workload.ops.len());
                trial.workload.ops.drain(start..end);
                runs += 1;
                if trial.failure(config).as_deref() == Some(invariant) {
                    best = trial;
                } else {
                    start += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk = chunk.div_ceil(2);
        }
        let kinds: Vec<FaultKind> = best.faults.enabled().map(|(k, _)| k).collect();
        for kind in kinds {
            let mut trial = best.clone();
            trial.faults = FaultPlan::none();
            for (k, rate) in best.faults.enabled().filter(|(k, _)| *k != kind) {
                trial.faults = trial.faults.with(k, rate);
            }
            runs += 1;
            if trial.failure(config).as_deref() == Some(invariant) {
                best = trial;
            }
        }
        (best, runs)
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
    fn shrinking_keeps_the_failure_and_removes_steps() {
        // A world that fails every run with many events: the event budget is tiny.
        let scenario = find("basic").unwrap();
        let config = WorldConfig { max_events: 40, ..(scenario.world)() };
        let schedule = scenario.schedule(5, &FaultSelection::Default);
        assert_eq!(schedule.failure(&config).as_deref(), Some("event-budget"));
        let (small, runs) = schedule.shrink(&config, "event-budget");
        assert!(runs > 0);
        assert_eq!(small.failure(&config).as_deref(), Some("event-budget"), "still fails the same way");
        assert!(small.steps() < schedule.steps(), "{} -> {}", schedule.steps(), small.steps());
    }
}
