//! Golden digests: the trace digests of the first seeds of every scenario and of every schedule in
//! the regression corpus, committed in `scenarios/golden/digests.txt`.
//!
//! A change of the engine's or the simulator's behaviour shows up as a diff of that file, to be
//! reviewed like code; a refactor shows up as none. Since the file is checked on every machine that
//! runs the tests, it also checks that a seed gives the same run everywhere.
//!
//! Regenerate it on purpose with `drydock sim golden --update`.

use crate::schedule::Schedule;
use crate::{FaultSelection, all};
use drydock_sim::sweep::SweepConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Seeds `0..GOLDEN_SEEDS` of every scenario are pinned.
pub const GOLDEN_SEEDS: u64 = 50;

/// The committed golden file of this checkout.
pub fn default_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden").join("digests.txt")
}

/// The regression corpus of this checkout.
pub fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

/// Digests by run: `(scenario, seed)` for seeds, `("regression", file name)` for schedules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Golden {
    pub digests: BTreeMap<(String, String), String>,
}

/// One run whose digest is not the pinned one (or that is pinned on one side only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    pub run: (String, String),
    pub expected: Option<String>,
    pub actual: Option<String>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (group, run) = &self.run;
        let show = |d: &Option<String>| d.clone().unwrap_or_else(|| "(absent)".into());
        write!(f, "{group} {run}: pinned {}, now {}", show(&self.expected), show(&self.actual))
    }
}

const HEADER: &str = "\
# Trace digests of seeds 0..50 of every scenario (default faults) and of every schedule in the
# regression corpus. A behaviour change shows up as a diff of this file; a refactor changes none.
# Regenerate on purpose with: cargo run --release -p drydock-cli -- sim golden --update
";

impl Golden {
    /// Run every pinned seed and schedule, on `jobs` threads.
    pub fn compute(jobs: usize, regressions: &Path) -> Result<Golden, String> {
        let mut digests = BTreeMap::new();
        let config = SweepConfig { start: 0, seeds: GOLDEN_SEEDS, shard: None, jobs, check_every: None, stop: None };
        for scenario in all() {
            let report = scenario.sweep(&config, &FaultSelection::Default, |_| {});
            for outcome in report.outcomes {
                digests.insert((scenario.name.to_string(), outcome.seed.to_string()), outcome.digest);
            }
        }
        for (name, schedule) in regression_schedules(regressions)? {
            let report = schedule.replay(false)?;
            digests.insert(("regression".to_string(), name), report.digest);
        }
        Ok(Golden { digests })
    }

    /// The file's text: a header, then `GROUP RUN DIGEST` per line, sorted.
    pub fn render(&self) -> String {
        let mut text = HEADER.to_string();
        // Seeds in numeric order within a scenario, so diffs read naturally.
        let mut lines: Vec<(&String, Option<u64>, &String, &String)> =
            self.digests.iter().map(|((group, run), digest)| (group, run.parse().ok(), run, digest)).collect();
        lines.sort();
        for (group, _, run, digest) in lines {
            text.push_str(&format!("{group} {run} {digest}\n"));
        }
        text
    }

    pub fn parse(text: &str) -> Result<Golden, String> {
        let mut digests = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [group, run, digest] = fields[..] else {
                return Err(format!("line {}: want `GROUP RUN DIGEST`, found {line:?}", n + 1));
            };
            digests.insert((group.to_string(), run.to_string()), digest.to_string());
        }
        Ok(Golden { digests })
    }

    pub fn load(path: &Path) -> Result<Golden, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Golden::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every run whose digest differs from `pinned`'s, or that only one side has.
    pub fn differences(&self, pinned: &Golden) -> Vec<Difference> {
        let mut runs: Vec<&(String, String)> = pinned.digests.keys().chain(self.digests.keys()).collect();
        runs.sort();
        runs.dedup();
        runs.into_iter()
            .filter_map(|run| {
                let (expected, actual) = (pinned.digests.get(run), self.digests.get(run));
                (expected != actual).then(|| Difference {
                    run: run.clone(),
                    expected: expected.cloned(),
                    actual: actual.cloned(),
                })
            })
            .collect()
    }
}

/// Every `*.json` schedule of the corpus, by file name.
pub fn regression_schedules(dir: &Path) -> Result<Vec<(String, Schedule)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut schedules = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let schedule: Schedule =
            serde_json::from_str(&text).map_err(|e| format!("{} is not a schedule: {e}", path.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        schedules.push((name, schedule));
    }
    schedules.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(schedules)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn render_and_parse_round_trip_and_differences_name_each_run() {
        let mut golden = Golden::default();
        for seed in [0, 2, 10] {
            golden.digests.insert(("basic".into(), seed.to_string()), format!("d{seed}"));
        }
        let text = golden.render();
        let seeds: Vec<&str> =
            text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split(' ').nth(1).unwrap()).collect();
        assert_eq!(seeds, ["0", "2", "10"], "numeric order");
        assert_eq!(Golden::parse(&text).unwrap(), golden);
        let mut changed = golden.clone();
        changed.digests.insert(("basic".into(), "2".into()), "other".into());
        changed.digests.remove(&("basic".to_string(), "10".to_string()));
        let diff = changed.differences(&golden);
        assert_eq!(diff.len(), 2);
        assert_eq!(diff[0].to_string(), "basic 10: pinned d10, now (absent)");
        assert_eq!(diff[1].to_string(), "basic 2: pinned d2, now other");
        assert!(Golden::parse("basic 1").unwrap_err().contains("line 1"));
    }
}
