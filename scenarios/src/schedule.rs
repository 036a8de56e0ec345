//! Schedules: a run as data (the workload's actions, the fault plan with every fault decision
//! that fired, and the seed of the world's own draws), so it can be saved, replayed without the
//! generator that made it, and shrunk.

use crate::{FaultSelection, Scenario, streams};
use drydock_engine::MonoTime;
use drydock_faults::{Decisions, FaultKind, FaultPlan};
use drydock_sim::workload::{TimedOp, Workload};
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
    /// Run it in its scenario's world (a built-in scenario).
    pub fn replay(&self, keep_trace: bool) -> Result<RunReport, String> {
        self.replay_among(crate::all(), keep_trace)
    }

    /// Run it in the world of its scenario, found among `scenarios` by name.
    pub fn replay_among(&self, scenarios: &[Scenario], keep_trace: bool) -> Result<RunReport, String> {
        let scenario = scenarios.iter().find(|s| s.name == self.scenario).ok_or_else(|| {
            let known: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            format!("unknown scenario {:?}; known scenarios: {}", self.scenario, known.join(", "))
        })?;
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

    /// A smaller schedule that still fails with `invariant` (the same invariant, never another).
    ///
    /// Passes, repeated until none makes progress (at most [`SHRINK_ROUNDS`] rounds):
    /// 1. drop whole fault kinds (once, first);
    /// 2. delta debugging (`ddmin`) over workload actions and fault decisions together, as one
    ///    list of steps: a failure that needs an action *and* a fault decision is found by
    ///    keeping subsets and removing complements of both at once;
    /// 3. shift each action earlier in time (to its predecessor's time, else halfway there), so
    ///    waits that do not matter go, and actions that only mattered through timing can go in
    ///    the next round;
    /// 4. simplify each action: drop its optional fields (top-level and in its spec) one by one.
    ///
    /// Returns the schedule and how many runs it took.
    pub fn shrink(&self, config: &WorldConfig, invariant: &str) -> (Schedule, usize) {
        let mut runs = 0;
        let mut fails = |trial: &Schedule| {
            runs += 1;
            trial.failure(config).as_deref() == Some(invariant)
        };
        let mut best = self.clone();
        let kinds: Vec<FaultKind> = best.faults.enabled().map(|(k, _)| k).collect();
        for kind in kinds {
            let trial = Schedule { faults: best.faults.clone().without(kind), ..best.clone() };
            if fails(&trial) {
                best = trial;
            }
        }
        for _ in 0..SHRINK_ROUNDS {
            let before = best.clone();
            let kept = ddmin(best.step_list(), &mut |steps: &[Step]| fails(&best.with_steps(steps)));
            best = best.with_steps(&kept);
            best = best.shift_earlier(&mut fails);
            best = best.simplify(&mut fails);
            if best == before {
                break;
            }
        }
        (best, runs)
    }

    /// The workload actions and the fault decisions, as one list.
    fn step_list(&self) -> Vec<Step> {
        let ops = self.workload.ops.iter().map(|op| Step::Op(Box::new(op.clone())));
        ops.chain(self.decisions().into_iter().map(|(kind, n)| Step::Fault(kind, n))).collect()
    }

    /// This schedule with only `steps` (actions keep their order; a schedule without recorded
    /// decisions keeps its plan).
    fn with_steps(&self, steps: &[Step]) -> Schedule {
        let mut ops = Vec::new();
        let mut decisions = Vec::new();
        for step in steps {
            match step {
                Step::Op(op) => ops.push((**op).clone()),
                Step::Fault(kind, n) => decisions.push((*kind, *n)),
            }
        }
        let with_ops = Schedule { workload: Workload { ops, ..self.workload.clone() }, ..self.clone() };
        if self.faults.script().is_some() { with_ops.with_decisions(&decisions) } else { with_ops }
    }

    /// Move each action as early as it can go (its predecessor's time, else halfway there, a few
    /// times) with the failure kept. Actions stay sorted by time.
    fn shift_earlier(&self, fails: &mut impl FnMut(&Schedule) -> bool) -> Schedule {
        let mut best = self.clone();
        for i in 0..best.workload.ops.len() {
            let floor = if i == 0 { MonoTime::ZERO } else { best.workload.ops[i - 1].at };
            let at = best.workload.ops[i].at;
            let mut target = floor;
            for _ in 0..3 {
                if target >= at {
                    break;
                }
                let mut trial = best.clone();
                trial.workload.ops[i].at = target;
                if fails(&trial) {
                    best = trial;
                    break;
                }
                target = MonoTime(target.0 + (at.0 - target.0) / 2);
            }
        }
        best
    }

    /// Drop the optional fields of each action, one at a time, with the failure kept.
    fn simplify(&self, fails: &mut impl FnMut(&Schedule) -> bool) -> Schedule {
        let mut best = self.clone();
        for i in 0..best.workload.ops.len() {
            for candidate in simpler(&best.workload.ops[i]) {
                let mut trial = best.clone();
                trial.workload.ops[i] = candidate;
                if fails(&trial) {
                    best = trial;
                }
            }
        }
        best
    }
}

/// How many rounds of all shrinking passes at most.
pub const SHRINK_ROUNDS: usize = 4;

/// One step of a schedule: a workload action, or a fault decision (the `n`th draw of a kind fires).
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Op(Box<TimedOp>),
    Fault(FaultKind, u64),
}

/// Fields an action keeps whatever the shrinker does: what identifies it, and which engine a
/// namespace is assigned to (dropping it is no simplification: it moves the run into another
/// regime, two engines reconciling one namespace, which the generators never produce).
const ESSENTIAL_FIELDS: [&str; 7] = ["at", "op", "external", "kind", "namespace", "name", "engine"];

/// `op` with one optional field less (at its top level, or inside an object field such as a
/// spec), for every field that can go: the variants that still parse as an action.
fn simpler(op: &TimedOp) -> Vec<TimedOp> {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(op) else { return Vec::new() };
    let mut out: Vec<TimedOp> = Vec::new();
    let mut push = |value: serde_json::Map<String, serde_json::Value>| {
        if let Ok(simpler) = serde_json::from_value::<TimedOp>(serde_json::Value::Object(value))
            && simpler != *op
            && !out.contains(&simpler)
        {
            out.push(simpler);
        }
    };
    for (key, value) in &fields {
        if ESSENTIAL_FIELDS.contains(&key.as_str()) {
            continue;
        }
        let mut without = fields.clone();
        without.remove(key);
        push(without);
        if let serde_json::Value::Object(inner) = value {
            for inner_key in inner.keys() {
                let mut smaller = inner.clone();
                smaller.remove(inner_key);
                let mut with = fields.clone();
                with.insert(key.clone(), serde_json::Value::Object(smaller));
                push(with);
            }
        }
    }
    out
}

/// Delta debugging (Zeller's `ddmin`): a sublist of `items` for which `fails` holds. Tries each
/// of `n` chunks alone, then (for `n > 2`) each complement, and doubles `n` when neither fails,
/// until single items: the result is 1-minimal (no single item can go).
fn ddmin<T: Clone>(mut items: Vec<T>, fails: &mut impl FnMut(&[T]) -> bool) -> Vec<T> {
    let mut n = 2;
    while items.len() >= 2 {
        let len = items.len();
        let bounds: Vec<(usize, usize)> = (0..n).map(|i| (i * len / n, (i + 1) * len / n)).collect();
        let mut reduced = false;
        for &(a, b) in &bounds {
            if a < b && fails(&items[a..b]) {
                items = items[a..b].to_vec();
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && n > 2 {
            for &(a, b) in &bounds {
                let complement: Vec<T> = items[..a].iter().chain(&items[b..]).cloned().collect();
                if a < b && fails(&complement) {
                    items = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= len {
                break;
            }
            n = (2 * n).min(len);
        }
    }
    if items.len() == 1 && fails(&[]) {
        items.clear();
    }
    items
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::find;

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

    #[test]
    fn ddmin_finds_the_two_items_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut runs = 0;
        let kept = ddmin(items, &mut |s: &[u32]| {
            runs += 1;
            s.contains(&7) && s.contains(&31)
        });
        assert_eq!(kept, vec![7, 31]);
        assert!(runs < 100, "{runs} runs");
        assert_eq!(ddmin(vec![1, 2, 3], &mut |_: &[u32]| true), Vec::<u32>::new());
    }

    #[test]
    fn simpler_drops_optional_fields_but_never_identity() {
        let op = TimedOp {
            at: MonoTime(5),
            op: drydock_sim::workload::ClientOp::CreateImage {
                namespace: "ns".into(),
                name: "img".into(),
                image: "busybox".into(),
                pull_policy: drydock_engine::api::PullPolicy::Always,
                pull_retry_limit: 3,
            },
        };
        let variants = simpler(&op);
        assert!(!variants.is_empty());
        for v in &variants {
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json["namespace"], "ns");
            assert_eq!(json["name"], "img");
            assert_eq!(v.at, op.at);
        }
    }

    /// `rdd-namespaces-buggy` fails by design; each of its first failing seeds shrinks to at most
    /// 20 steps, failing the same invariant.
    #[test]
    fn a_failing_seed_shrinks_to_at_most_20_steps_on_the_same_invariant() {
        let scenario = find("rdd-namespaces-buggy").unwrap();
        let config = (scenario.world)();
        let mut shrunk = 0;
        for seed in 0..40 {
            let schedule = scenario.schedule(seed, &FaultSelection::Default);
            let Some(invariant) = schedule.failure(&config) else { continue };
            let (small, _) = schedule.shrink(&config, &invariant);
            assert_eq!(small.failure(&config).as_deref(), Some(invariant.as_str()), "seed {seed}");
            assert!(small.steps() <= 20, "seed {seed}: {} -> {} steps", schedule.steps(), small.steps());
            assert!(small.steps() <= schedule.steps());
            shrunk += 1;
            if shrunk == 2 {
                break;
            }
        }
        assert!(shrunk > 0, "no failing seed of rdd-namespaces-buggy in 0..40");
    }
}
