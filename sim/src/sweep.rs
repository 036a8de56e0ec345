//! Seed sweeps: many independent seeds of one run function across threads, aggregated into one
//! report that a CLI, a `cargo test` or a CI job formats as it likes.
//!
//! *Guarantees*
//! - Every seed of `start..start + seeds` runs exactly once (the determinism self-check runs some
//!   a second time and compares digests), unless the sweep is stopped early: then the seeds that
//!   ran are exactly `start..start + outcomes.len()`, none missing.
//! - Every failing seed is run a second time and its digest compared: a failure that does not
//!   reproduce is reported as nondeterministic, whatever the sampling rate.
//! - The report does not depend on the number of threads or on which thread ran which seed:
//!   results are ordered by seed, counts are sums.
//! - Memory stays small in the number of seeds: a passing seed keeps a [`SeedOutcome`] (its digest
//!   and sizes), only a failing seed keeps its whole [`RunReport`].
//!
//! *Caveats*: this is the one place of the simulator that starts threads. Each seed still runs on
//! one thread from start to end, and seeds share nothing, so threads change only how fast a sweep
//! finishes, never what it finds. Wall time is measured by the caller (the simulator reads no
//! clock).

use crate::RunReport;
use crate::checker::efficiency::WorkPeaks;
use crate::probes::Probe;
use drydock_faults::FaultKind;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    pub start: u64,
    pub seeds: u64,
    /// Worker threads (at least one).
    pub jobs: usize,
    /// Run every k-th seed twice and compare digests (the determinism self-check); `None`: off.
    /// Failing seeds are always run twice.
    pub check_every: Option<u64>,
    /// Set it (from a timer, a Ctrl-C handler) to end the sweep early: no new seed starts, the
    /// seeds in flight finish and are reported.
    pub stop: Option<Arc<AtomicBool>>,
}

impl SweepConfig {
    /// `percent` of the seeds run twice (at least one, unless `percent` is 0).
    pub fn check_every_for_percent(percent: f64) -> Option<u64> {
        (percent > 0.0).then(|| (100.0 / percent).round().max(1.0) as u64)
    }
}

/// What one seed of a sweep came to, kept for every seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOutcome {
    pub seed: u64,
    pub ok: bool,
    pub digest: String,
    pub events: u64,
    pub sim_nanos: u64,
}

/// Everything a sweep found.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    pub start: u64,
    pub jobs: usize,
    /// One per seed, ordered by seed.
    pub outcomes: Vec<SeedOutcome>,
    /// The whole report of every failing seed, ordered by seed.
    pub failures: Vec<RunReport>,
    /// Seeds run twice by the determinism self-check.
    pub determinism_checked: u64,
    /// Seeds whose second run gave another digest.
    pub nondeterministic: Vec<u64>,
    /// The sweep was stopped before its last seed (see [`SweepConfig::stop`]).
    pub stopped_early: bool,
    /// How many times each fault kind fired, over all seeds (every kind present, maybe zero).
    pub faults_fired: BTreeMap<FaultKind, u64>,
    /// Hits per probe over all seeds (every probe present, maybe zero).
    pub probes: BTreeMap<Probe, u64>,
    /// The most work any object of any seed did in one window after the heal.
    pub work_after_heal: WorkPeaks,
}

impl SweepReport {
    pub fn seeds(&self) -> usize {
        self.outcomes.len()
    }

    pub fn events(&self) -> u64 {
        self.outcomes.iter().map(|o| o.events).sum()
    }

    pub fn sim_seconds(&self) -> f64 {
        // Summed from +0.0: an empty float sum is -0.0, which prints as "-0".
        self.outcomes.iter().fold(0.0, |total, o| total + o.sim_nanos as f64 / 1e9)
    }

    /// Probes no seed reached.
    pub fn probes_unreached(&self) -> Vec<Probe> {
        self.probes.iter().filter(|(_, hits)| **hits == 0).map(|(probe, _)| *probe).collect()
    }

    /// No seed failed and every re-run seed gave its digest again.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.nondeterministic.is_empty()
    }

    /// The sweep as one JSON object, the one `drydock sim run --json` prints: seeds, failures
    /// (each with the command `repro` gives for its seed), events, simulated and wall seconds and
    /// their ratio, faults fired, the determinism self-check, probes reached and not, and the
    /// most work after the heal. `wall_seconds` is measured by the caller.
    pub fn summary(&self, scenario: &str, wall_seconds: f64, repro: impl Fn(u64) -> String) -> serde_json::Value {
        let failures: Vec<serde_json::Value> = self
            .failures
            .iter()
            .filter_map(|r| {
                let v = r.violations.first()?;
                Some(serde_json::json!({ "seed": r.seed, "invariant": v.invariant, "message": v.message,
                    "at": v.at, "faults": r.faults, "repro": repro(r.seed) }))
            })
            .collect();
        let fired: BTreeMap<&str, u64> = self.faults_fired.iter().map(|(kind, n)| (kind.name(), *n)).collect();
        let probes: BTreeMap<&str, u64> = self.probes.iter().map(|(probe, hits)| (probe.name(), *hits)).collect();
        let unreached: Vec<&str> = self.probes_unreached().iter().map(|p| p.name()).collect();
        let wall = wall_seconds.max(1e-9);
        serde_json::json!({
            "scenario": scenario,
            "seeds": self.seeds(),
            "start": self.start,
            "jobs": self.jobs,
            "failures": failures,
            "events": self.events(),
            "sim_seconds": self.sim_seconds(),
            "wall_seconds": wall_seconds,
            "seeds_per_second": self.seeds() as f64 / wall,
            "time_acceleration": self.sim_seconds() / wall,
            "faults": fired,
            "determinism_checked": self.determinism_checked,
            "nondeterministic": self.nondeterministic,
            "probes": probes,
            "probes_unreached": unreached,
            "work_after_heal": self.work_after_heal,
        })
    }

    fn add(&mut self, mut report: RunReport, again: Option<String>) {
        if let Some(digest) = again {
            self.determinism_checked += 1;
            if digest != report.digest {
                self.nondeterministic.push(report.seed);
            }
        }
        for (kind, count) in &report.fault_counts {
            *self.faults_fired.entry(*kind).or_default() += count;
        }
        for (probe, hits) in &report.probes {
            *self.probes.entry(*probe).or_default() += hits;
        }
        let (peaks, work) = (&mut self.work_after_heal, &report.stats.work_after_heal);
        peaks.runtime_requests = peaks.runtime_requests.max(work.runtime_requests);
        peaks.store_writes = peaks.store_writes.max(work.store_writes);
        peaks.reconciles_per_object = peaks.reconciles_per_object.max(work.reconciles_per_object);
        self.outcomes.push(SeedOutcome {
            seed: report.seed,
            ok: report.ok,
            digest: report.digest.clone(),
            events: report.events,
            sim_nanos: report.sim_nanos,
        });
        if !report.ok {
            report.trace = None;
            self.failures.push(report);
        }
    }
}

/// Run `run_seed` for every seed of `config` on `config.jobs` threads. `on_report` sees each
/// report as it arrives (in completion order, on the calling thread): for progress output.
pub fn sweep(
    config: &SweepConfig,
    run_seed: impl Fn(u64) -> RunReport + Sync,
    mut on_report: impl FnMut(&RunReport),
) -> SweepReport {
    let end = config.start.saturating_add(config.seeds);
    let mut report = SweepReport {
        start: config.start,
        jobs: config.jobs.max(1),
        faults_fired: FaultKind::ALL.iter().map(|k| (*k, 0)).collect(),
        probes: Probe::ALL.iter().map(|p| (*p, 0)).collect(),
        ..SweepReport::default()
    };
    let next = AtomicU64::new(config.start);
    let stopped = || config.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
    let (tx, rx) = mpsc::channel::<(RunReport, Option<String>)>();
    let run_seed = &run_seed;
    std::thread::scope(|scope| {
        for _ in 0..report.jobs {
            let tx = tx.clone();
            let (next, stopped) = (&next, &stopped);
            scope.spawn(move || {
                loop {
                    // Seeds are taken in order, so stopping leaves no gap among the seeds run.
                    if stopped() {
                        break;
                    }
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    let report = run_seed(seed);
                    let sampled = config.check_every.is_some_and(|k| (seed - config.start).is_multiple_of(k));
                    let again = (sampled || !report.ok).then(|| run_seed(seed).digest);
                    if tx.send((report, again)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (run, again) in rx {
            on_report(&run);
            report.add(run, again);
        }
    });
    report.outcomes.sort_by_key(|o| o.seed);
    report.stopped_early = (report.outcomes.len() as u64) < end - config.start;
    report.failures.sort_by_key(|r| r.seed);
    report.nondeterministic.sort_unstable();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Violation;
    use std::sync::atomic::AtomicUsize;

    /// A seed's report: seeds divisible by 7 fail; `digest_salt` changes the digest of a re-run.
    fn fake_run(seed: u64, digest_salt: u64) -> RunReport {
        let ok = !seed.is_multiple_of(7);
        RunReport {
            seed,
            ok,
            digest: format!("{seed}-{digest_salt}"),
            events: 1,
            sim_nanos: 1,
            faults: String::new(),
            fault_counts: BTreeMap::new(),
            fault_decisions: BTreeMap::new(),
            violations: if ok {
                Vec::new()
            } else {
                vec![Violation { invariant: "x".into(), message: "y".into(), at: "0".into() }]
            },
            probes: BTreeMap::new(),
            stats: Default::default(),
            trace: None,
        }
    }

    fn config(seeds: u64, stop: Option<Arc<AtomicBool>>) -> SweepConfig {
        SweepConfig { start: 10, seeds, jobs: 2, check_every: None, stop }
    }

    #[test]
    fn every_failing_seed_is_run_twice_even_without_sampling() {
        let runs = AtomicUsize::new(0);
        let report = sweep(
            &config(30, None),
            |seed| {
                // Every second run of a seed gives another digest: only the seeds run twice show it.
                let n = runs.fetch_add(1, Ordering::Relaxed) as u64;
                fake_run(seed, if seed.is_multiple_of(7) { n } else { 0 })
            },
            |_| {},
        );
        let failing: Vec<u64> = (10..40).filter(|s| s % 7 == 0).collect();
        assert_eq!(report.failures.iter().map(|r| r.seed).collect::<Vec<_>>(), failing);
        assert_eq!(report.determinism_checked, failing.len() as u64);
        assert_eq!(report.nondeterministic, failing, "a failure that does not reproduce is flagged");
        assert!(!report.stopped_early);
    }

    #[test]
    fn a_stopped_sweep_reports_a_gapless_prefix_of_its_seeds() {
        let stop = Arc::new(AtomicBool::new(false));
        let report = sweep(
            &config(1_000, Some(stop.clone())),
            |seed| {
                if seed == 34 {
                    stop.store(true, Ordering::Relaxed);
                }
                fake_run(seed, 0)
            },
            |_| {},
        );
        assert!(report.stopped_early);
        let ran = report.outcomes.len() as u64;
        assert!((25..1_000).contains(&ran), "the seeds in flight finish, then none starts: {ran}");
        let seeds: Vec<u64> = report.outcomes.iter().map(|o| o.seed).collect();
        assert_eq!(seeds, (10..10 + ran).collect::<Vec<_>>());
        assert!(report.nondeterministic.is_empty());
    }
}
