//! Seed sweeps: many independent seeds of one run function across threads, aggregated into one
//! report that a CLI, a `cargo test` or a CI job formats as it likes.
//!
//! A sweep can be one [`Shard`] of a seed range, so that CI jobs or cluster pods each run a part
//! and [`merge`] puts their [`SweepSummary`]s together into the summary of the whole range.
//! Shards are **interleaved**: shard `K` of `N` runs the seeds `s` of `start..start + seeds` with
//! `(s - start) % N == K - 1`, i.e. `start + K - 1`, `start + K - 1 + N`, ... Interleaving
//! keeps the shards' sizes within one seed of each other whatever the range, spreads slow seeds
//! evenly, and needs no knowledge of the range's end to enumerate a shard's seeds.
//!
//! *Guarantees*
//! - Every seed of `start..start + seeds` (of the shard, if one is given) runs exactly once (the
//!   determinism self-check runs some a second time and compares digests), unless the sweep is
//!   stopped early: then the seeds that ran are exactly the first `outcomes.len()` seeds of the
//!   sweep (`start..start + outcomes.len()` when unsharded), none missing.
//! - The shards `1/N ..= N/N` of a range are disjoint and cover it exactly, and each samples for the
//!   determinism self-check the seeds the unsharded sweep samples (chosen relative to the range's
//!   `start`, not the shard's first seed), so a merged summary equals the unsharded one but for
//!   timings.
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

mod junit;
mod shard;
mod summary;

pub use shard::Shard;
pub use summary::{FailureGroup, FailureSummary, MergeError, MergedFrom, ShardRun, SweepSummary, merge, pattern};

use crate::RunReport;
use crate::checker::efficiency::WorkPeaks;
use crate::probes::Probe;
use drydock_faults::FaultKind;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// The first seed of the range.
    pub start: u64,
    /// How many seeds the range holds (all of them run unless `shard` is given).
    pub seeds: u64,
    /// Run only this shard of the range; `None`: all of it.
    pub shard: Option<Shard>,
    /// Worker threads (at least one).
    pub jobs: usize,
    /// Run every k-th seed twice and compare digests (the determinism self-check); `None`: off.
    /// The seeds `s` with `(s - start) % k == 0` are sampled, whichever shard runs them. Failing
    /// seeds are always run twice.
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
    /// The first seed of the range swept.
    pub start: u64,
    /// The end of the range (exclusive): `start + seeds` of the [`SweepConfig`].
    pub end: u64,
    /// The shard of the range swept, if not the whole range.
    pub shard: Option<Shard>,
    /// The determinism self-check's sampling ([`SweepConfig::check_every`]).
    pub check_every: Option<u64>,
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
    /// The probes some seed could reach by construction ([`crate::probes::reachable`]), and
    /// those some seed hit.
    pub probes_reachable: BTreeSet<Probe>,
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

    /// Simulated nanoseconds over all seeds (saturating: 584 years).
    pub fn sim_nanos(&self) -> u64 {
        self.outcomes.iter().fold(0, |total: u64, o| total.saturating_add(o.sim_nanos))
    }

    /// Simulated seconds over all seeds. From the integer total, so that the shards of a range,
    /// added up, give the very same number as the whole range (float sums depend on their order).
    pub fn sim_seconds(&self) -> f64 {
        self.sim_nanos() as f64 / 1e9
    }

    /// Probes some seed could reach by construction but no seed reached. A probe no seed could
    /// reach (no pulls in the workload, the fault it needs never enabled) is not among them.
    pub fn probes_unreached(&self) -> Vec<Probe> {
        self.probes
            .iter()
            .filter(|(probe, hits)| **hits == 0 && self.probes_reachable.contains(probe))
            .map(|(probe, _)| *probe)
            .collect()
    }

    /// No seed failed and every re-run seed gave its digest again.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.nondeterministic.is_empty()
    }

    /// The sweep as one JSON object, the one `drydock sim run --json` prints: seeds, failures
    /// (each with the command `repro` gives for its seed), events, simulated and wall seconds and
    /// their ratio, faults fired, the determinism self-check, probes reached and not, and the
    /// most work after the heal. `wall_seconds` is measured by the caller. The same as
    /// [`SweepReport::summarize`] with no fault selection named, as JSON.
    pub fn summary(&self, scenario: &str, wall_seconds: f64, repro: impl Fn(u64) -> String) -> serde_json::Value {
        serde_json::to_value(self.summarize(scenario, None, wall_seconds, repro)).unwrap_or_default()
    }

    /// The sweep's [`SweepSummary`]: what `drydock sim run --json` prints and [`merge`] reads.
    /// `fault_selection` names the faults the seeds ran with as the caller's commands take it
    /// (`default`, ...): shards merge only if they name the same. `stopped` says `stopped` if
    /// the sweep was stopped early: a caller that knows why says so instead. `size` is `None`:
    /// a caller that swept a sized world sets it.
    pub fn summarize(
        &self,
        scenario: &str,
        fault_selection: Option<&str>,
        wall_seconds: f64,
        repro: impl Fn(u64) -> String,
    ) -> SweepSummary {
        let failures = self
            .failures
            .iter()
            .filter_map(|r| {
                let v = r.violations.first()?;
                Some(FailureSummary {
                    seed: r.seed,
                    invariant: v.invariant.clone(),
                    message: v.message.clone(),
                    at: v.at.clone(),
                    faults: r.faults.clone(),
                    repro: repro(r.seed),
                })
            })
            .collect();
        let shard = self.shard.map(|shard| ShardRun {
            index: shard.index,
            count: shard.count,
            first_seed: self.outcomes.first().map(|o| o.seed),
            last_seed: self.outcomes.last().map(|o| o.seed),
        });
        let mut summary = SweepSummary {
            scenario: scenario.to_string(),
            size: None,
            seeds: self.seeds() as u64,
            start: self.start,
            end: self.end,
            shard,
            merged_from: None,
            jobs: self.jobs as u64,
            stopped: self.stopped_early.then(|| "stopped".to_string()),
            failures,
            events: self.events(),
            sim_nanos: self.sim_nanos(),
            sim_seconds: self.sim_seconds(),
            wall_seconds: 0.0,
            seeds_per_second: 0.0,
            time_acceleration: 0.0,
            faults: self.faults_fired.iter().map(|(kind, n)| (kind.name().to_string(), *n)).collect(),
            fault_selection: fault_selection.map(str::to_string),
            check_every: self.check_every,
            determinism_checked: self.determinism_checked,
            nondeterministic: self.nondeterministic.clone(),
            probes: self.probes.iter().map(|(probe, hits)| (probe.name().to_string(), *hits)).collect(),
            probes_unreached: self.probes_unreached().iter().map(|p| p.name().to_string()).collect(),
            probes_reachable: self.probes_reachable.iter().map(|p| p.name().to_string()).collect(),
            groups: Vec::new(),
            work_after_heal: self.work_after_heal.clone(),
            build: None,
        };
        summary.groups = FailureGroup::of(&summary.failures);
        summary.set_wall_seconds(wall_seconds);
        summary
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
            if *hits > 0 {
                self.probes_reachable.insert(*probe);
            }
        }
        self.probes_reachable.extend(report.probes_reachable.iter().copied());
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
    let seeds = end - config.start;
    let shard = config.shard.unwrap_or(Shard { index: 1, count: 1 });
    let to_run = shard.len_of(seeds);
    let mut report = SweepReport {
        start: config.start,
        end,
        shard: config.shard,
        check_every: config.check_every,
        jobs: config.jobs.max(1),
        faults_fired: FaultKind::ALL.iter().map(|k| (*k, 0)).collect(),
        probes: Probe::ALL.iter().map(|p| (*p, 0)).collect(),
        ..SweepReport::default()
    };
    // The index, within the shard, of the next seed to take.
    let next = AtomicU64::new(0);
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
                    let Some(seed) = shard.nth_seed(config.start, seeds, next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let report = run_seed(seed);
                    // Relative to the range's start, not the shard's first seed: every shard
                    // samples the seeds the whole range would.
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
    report.stopped_early = (report.outcomes.len() as u64) < to_run;
    report.failures.sort_by_key(|r| r.seed);
    report.nondeterministic.sort_unstable();
    report
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::world::Violation;
    use std::sync::atomic::AtomicUsize;

    /// A seed's report: seeds divisible by 7 fail (those divisible by 21 another way); seeds
    /// divisible by 4 could reach `pull-cancelled` and `lease-contended`, those divisible by 8
    /// hit the first; `digest_salt` changes the digest of a re-run.
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
            } else if seed.is_multiple_of(21) {
                vec![Violation { invariant: "z".into(), message: format!("c{seed} twice"), at: "0".into(), event: 0 }]
            } else {
                let message = format!("object c{seed} (uid {:x}) at {seed}.5s", seed * 0xabcdef);
                vec![Violation { invariant: "x".into(), message, at: "0".into(), event: 0 }]
            },
            probes: if seed.is_multiple_of(8) { BTreeMap::from([(Probe::PullCancelled, 2)]) } else { BTreeMap::new() },
            probes_reachable: if seed.is_multiple_of(4) {
                BTreeSet::from([Probe::PullCancelled, Probe::LeaseContended])
            } else {
                BTreeSet::new()
            },
            stats: Default::default(),
            trace: None,
        }
    }

    /// The summary of a fake sweep of 10..10+seeds (seeds divisible by 7 fail), with every
    /// third seed checked for determinism, timings and threads zeroed.
    fn fake_summary(seeds: u64, shard: Option<Shard>, stop: Option<Arc<AtomicBool>>) -> SweepSummary {
        let config = SweepConfig { shard, check_every: Some(3), ..config(seeds, stop) };
        let report = sweep(&config, |seed| fake_run(seed, 0), |_| {});
        report.summarize("fake", Some("default"), 1.0, |seed| format!("repro {seed}"))
    }

    fn untimed(mut summary: SweepSummary) -> SweepSummary {
        summary.set_wall_seconds(1.0);
        (summary.jobs, summary.merged_from) = (0, None);
        summary
    }

    #[test]
    fn failures_are_grouped_by_invariant_and_message_pattern() {
        let summary = fake_summary(80, None, None);
        // Of seeds 10..90: 14, 28, 35, 49, 56, 70, 77 fail `x`; 21, 42, 63, 84 fail `z`.
        let groups = &summary.groups;
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(
            (groups[0].invariant.as_str(), groups[0].count, groups[0].first_seed),
            ("x", 7, 14),
            "the largest group first"
        );
        assert_eq!(groups[0].seeds, vec![14, 28, 35, 49, 56, 70, 77]);
        assert_eq!(groups[0].pattern, "object c# (uid #) at #.#s");
        assert_eq!(groups[0].message, format!("object c14 (uid {:x}) at 14.5s", 14 * 0xabcdef));
        assert_eq!(groups[0].repro, "repro 14");
        assert_eq!((groups[1].invariant.as_str(), groups[1].count, groups[1].first_seed), ("z", 4, 21));
        assert_eq!(groups[1].seeds, vec![21, 42, 63, 84]);
        let total: u64 = groups.iter().map(|g| g.count).sum();
        assert_eq!(total, summary.failures.len() as u64);
    }

    #[test]
    fn a_pattern_keeps_words_and_drops_numbers_and_ids() {
        assert_eq!(
            pattern("Namespace/rdd-mocks owned by uid 0f3a9c12 since 2.799669s"),
            pattern("Namespace/rdd-mocks owned by uid 77aa01bc since 13.5s")
        );
        assert_eq!(pattern("p1 wrote c12 twice: 3 times"), "p# wrote c# twice: # times");
        assert_eq!(pattern("deadbeef facade 42"), "deadbeef facade #", "words without digits stay");
        assert_ne!(pattern("c1 has two owners"), pattern("c1 has no owner"));
        assert_eq!(pattern("écrit 7 fois — ok"), "écrit # fois — ok");
    }

    #[test]
    fn only_reachable_probes_are_unreached() {
        let summary = fake_summary(30, None, None);
        assert_eq!(summary.probes_reachable, vec!["lease-contended", "pull-cancelled"]);
        assert_eq!(summary.probes_unreached, vec!["lease-contended"], "pull-cancelled was hit");
        assert_eq!(summary.probes.len(), Probe::ALL.len(), "every probe is counted");
        // A range where no seed could reach them: neither reachable nor unreached.
        let none = sweep(&config(3, None), |seed| fake_run(seed * 4 + 1, 0), |_| {});
        assert!(none.probes_reachable.is_empty() && none.probes_unreached().is_empty());
    }

    #[test]
    fn merged_shards_equal_the_whole_range() {
        for (seeds, count) in [(30, 4), (30, 1), (3, 5), (50, 7)] {
            let whole = fake_summary(seeds, None, None);
            assert!(!whole.failures.is_empty() || seeds < 7);
            let mut shards: Vec<SweepSummary> =
                (1..=count).map(|k| fake_summary(seeds, Some(Shard::new(k, count).unwrap()), None)).collect();
            shards.reverse();
            let merged = merge(&shards, false).unwrap();
            assert_eq!(merged.merged_from, Some(MergedFrom { shards: count, missing: vec![], stopped: vec![] }));
            assert_eq!(merged.jobs, 2 * count);
            assert_eq!(untimed(merged), untimed(whole), "{seeds} seeds in {count} shards");
        }
    }

    #[test]
    fn merge_refuses_shards_that_do_not_fit() {
        let shard = |k, n| fake_summary(30, Some(Shard::new(k, n).unwrap()), None);
        let describe = |error: MergeError| error.describe(|i| format!("file{i}"));
        let error = merge(&[shard(1, 3), shard(3, 3)], false).unwrap_err();
        assert_eq!(error, MergeError::Missing { missing: vec![2], count: 3 });
        assert!(describe(error).contains("shard 2/3 is missing"));
        let error = merge(&[shard(1, 2), shard(2, 2), shard(1, 2)], false).unwrap_err();
        assert!(describe(error).contains("shard 1/2 is given twice: file0 and file2"));
        let error = merge(&[shard(1, 2), shard(2, 3)], false).unwrap_err();
        assert!(describe(error).contains("file1 has shard count 3, but file0 has 2"));
        let mut other = shard(2, 2);
        other.scenario = "other".into();
        assert!(describe(merge(&[shard(1, 2), other], false).unwrap_err()).contains("scenario"));
        let mut longer = shard(2, 2);
        longer.end += 1;
        assert!(describe(merge(&[shard(1, 2), longer], false).unwrap_err()).contains("range end"));
        let built = |k, commit: &str| SweepSummary { build: Some(format!("0.1.0 (commit {commit})")), ..shard(k, 2) };
        assert!(
            describe(merge(&[built(1, "aaa"), built(2, "bbb")], false).unwrap_err())
                .contains("file1 has build 0.1.0 (commit bbb), but file0 has 0.1.0 (commit aaa)"),
            "shards of two builds do not merge"
        );
        let merged = merge(&[built(1, "aaa"), built(2, "aaa")], false).expect("one build");
        assert_eq!(merged.build.as_deref(), Some("0.1.0 (commit aaa)"));
        assert!(merge(&[built(1, "aaa"), shard(2, 2)], false).is_ok(), "a shard that names no build is not refused");
        let whole = fake_summary(30, None, None);
        assert_eq!(merge(&[whole], false), Err(MergeError::NotAShard { input: 0 }));
        assert_eq!(merge(&[], false), Err(MergeError::NoInput));
        let mut forged = shard(1, 2);
        forged.failures[0].seed = 15;
        assert!(
            describe(merge(&[forged, shard(2, 2)], false).unwrap_err()).contains("seed 15 is not one of shard 1/2")
        );
        let merged = merge(&[shard(1, 2), shard(2, 2)], false).unwrap();
        assert_eq!(merge(&[merged], false), Err(MergeError::AlreadyMerged { input: 0 }));

        // With allow_partial: what there is, saying what is not.
        let partial = merge(&[shard(3, 3), shard(1, 3)], true).unwrap();
        assert_eq!(partial.merged_from, Some(MergedFrom { shards: 3, missing: vec![2], stopped: vec![] }));
        assert_eq!(partial.seeds, 20);
    }

    #[test]
    fn a_stopped_shard_runs_a_prefix_of_its_seeds_and_merges_only_when_allowed() {
        let stop = Arc::new(AtomicBool::new(false));
        let shard = Shard::new(2, 3).unwrap();
        let config = SweepConfig { shard: Some(shard), check_every: Some(3), ..config(3_000, Some(stop.clone())) };
        let report = sweep(
            &config,
            |seed| {
                if seed == 41 {
                    stop.store(true, Ordering::Relaxed);
                }
                fake_run(seed, 0)
            },
            |_| {},
        );
        assert!(report.stopped_early);
        let seeds: Vec<u64> = report.outcomes.iter().map(|o| o.seed).collect();
        assert_eq!(seeds, shard.seeds(10, 3_000).take(seeds.len()).collect::<Vec<_>>());
        assert!(seeds.contains(&41) && seeds.len() < 1_000);
        let stopped = report.summarize("fake", Some("default"), 1.0, |seed| format!("repro {seed}"));
        let others = [1, 3].map(|k| fake_summary(3_000, Some(Shard::new(k, 3).unwrap()), None));
        let all = [others[0].clone(), stopped, others[1].clone()];
        let error = merge(&all, false).unwrap_err();
        assert!(matches!(error, MergeError::Stopped { input: 1, due: 1_000, .. }), "{error}");
        let partial = merge(&all, true).unwrap();
        assert_eq!(partial.merged_from.unwrap().stopped, vec![2]);
        assert_eq!(partial.stopped.as_deref(), Some("stopped"));
    }

    fn config(seeds: u64, stop: Option<Arc<AtomicBool>>) -> SweepConfig {
        SweepConfig { start: 10, seeds, shard: None, jobs: 2, check_every: None, stop }
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
