//! [`SimTest`]: a scenario under simulation in `cargo test`, in the spirit of proptest.
//!
//! One call runs, in order:
//! 1. the **regressions file** (by default `sim-regressions/<scenario>.json` beside the crate's
//!    `Cargo.toml`): every schedule a failing run saved there is replayed first, and must pass;
//! 2. a **sweep** of `N` seeds across threads (`N` from [`SimTest::seeds`], raised in CI with
//!    `DRYDOCK_SEEDS`), with the determinism self-check: every failing seed, and a sample of the
//!    others, is run twice and must give the same trace digest.
//!
//! A failure is **shrunk** to a minimal schedule that fails with the same invariant, **saved**
//! to the regressions file (commit it: from then on it is replayed first on every run), and
//! reported with the seed, the invariant, its message and commands that work from the user's
//! crate: one that reruns the seed with its trace, one that replays the saved schedules.
//!
//! Environment (all optional):
//! - `DRYDOCK_SEEDS=N`, `DRYDOCK_START=S`: sweep seeds `S..S+N` instead;
//! - `DRYDOCK_SEED=S`: run only seed `S`, with its trace on stderr (the repro);
//! - `DRYDOCK_REPLAY=FILE`: replay the schedules of `FILE` (a regressions file, or one schedule
//!   from `drydock sim shrink`), with their traces, instead of sweeping;
//! - `DRYDOCK_SHRINK=0`: report failures without shrinking or saving them;
//! - `DRYDOCK_JOBS=J`: worker threads (default: every core).
//!
//! *Caveats*: the sweep starts threads (see [`drydock_sim::sweep`]); each seed still runs on one
//! thread, so the threads change only how fast it finishes, never what it finds.

use crate::schedule::Schedule;
use crate::{FaultSelection, Scenario};
use drydock_sim::RunReport;
use drydock_sim::sweep::{SweepConfig, SweepReport};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// How many seeds a [`SimTest`] runs unless told otherwise.
pub const DEFAULT_SEEDS: u64 = 100;

/// A scenario under simulation in a test; see the [module](self) documentation.
pub struct SimTest {
    scenario: Scenario,
    seeds: u64,
    start: u64,
    faults: FaultSelection,
    regressions: Option<PathBuf>,
    shrink: bool,
    jobs: usize,
    repro: ReproCommand,
}

/// The schedules a regressions file keeps.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Regressions {
    /// For the reader of the file.
    #[serde(default)]
    pub about: String,
    pub entries: Vec<Regression>,
}

/// One saved failure: the shrunk schedule, and what it failed with when it was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    pub invariant: String,
    pub message: String,
    pub schedule: Schedule,
}

const ABOUT: &str = "Failures drydock's simulation harness found, shrunk. Each schedule is replayed \
                     first on every run of the test, and must pass. Commit this file.";

/// A failure a [`SimTest`] found.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The failing seed (`None` for a saved regression that fails again).
    pub seed: Option<u64>,
    /// The violated invariant's (or eventual property's) name.
    pub invariant: String,
    /// The failing seed's own message (for a saved regression, the replay's).
    pub message: String,
    /// The shrunk run's message, if the failure was shrunk: the shrunk schedule is another run,
    /// which may name other objects and counts than the seed's. The regressions file keeps this
    /// one, since it saves the shrunk schedule.
    pub shrunk_message: Option<String>,
    /// The failing schedule, shrunk unless shrinking is off.
    pub schedule: Schedule,
    /// Steps (actions and fault decisions) before and after shrinking.
    pub steps: (usize, usize),
    /// Every failing seed of the sweep (the first is the one shrunk).
    pub failing_seeds: Vec<u64>,
    /// Where the schedule was saved, if it was.
    pub saved_to: Option<PathBuf>,
    /// The command that reruns the failure with its trace.
    pub repro: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.seed {
            Some(seed) => writeln!(f, "scenario {}: seed {seed} failed", self.schedule.scenario)?,
            None => writeln!(f, "scenario {}: a saved regression fails again", self.schedule.scenario)?,
        }
        writeln!(f, "  invariant: {}", self.invariant)?;
        writeln!(f, "  message:   {}", self.message)?;
        if self.failing_seeds.len() > 1 {
            let shown: Vec<String> = self.failing_seeds.iter().take(10).map(u64::to_string).collect();
            let more = if self.failing_seeds.len() > 10 { ", ..." } else { "" };
            writeln!(f, "  failing seeds ({}): {}{more}", self.failing_seeds.len(), shown.join(", "))?;
        }
        writeln!(f, "  steps: {} (shrunk from {})", self.steps.1, self.steps.0)?;
        if let Some(shrunk) = self.shrunk_message.as_ref().filter(|m| **m != self.message) {
            writeln!(f, "  the shrunk run's message: {shrunk}")?;
        }
        if let Some(path) = &self.saved_to {
            writeln!(f, "  saved to {} (commit it: it is replayed first on every run)", path.display())?;
            writeln!(f, "  replay: DRYDOCK_REPLAY={} {}", path.display(), self.repro)?;
        }
        write!(f, "  repro: {}", self.repro_for(self.seed))
    }
}

impl Failure {
    fn repro_for(&self, seed: Option<u64>) -> String {
        match seed {
            Some(seed) => format!("DRYDOCK_SEED={seed} {}", self.repro),
            None => self.repro.clone(),
        }
    }
}

/// What a passing [`SimTest`] ran.
#[derive(Clone, Debug)]
pub struct Passed {
    pub regressions: usize,
    pub sweep: SweepReport,
}

impl Passed {
    /// One line: what ran, and that it passed.
    pub fn describe(&self, scenario: &str) -> String {
        let sweep = &self.sweep;
        if sweep.seeds() == 0 {
            return format!("scenario {scenario}: PASS: {} schedules replayed", self.regressions);
        }
        let fired: u64 = sweep.faults_fired.values().sum();
        format!(
            "scenario {scenario}: PASS: {} saved regressions, then {} seeds from {} ({} events, {:.0} simulated s, \
             {fired} faults fired, {} seeds run twice with the same digest)",
            self.regressions,
            sweep.seeds(),
            sweep.start,
            sweep.events(),
            sweep.sim_seconds(),
            sweep.determinism_checked
        )
    }

    /// The sweep as `drydock sim run --json` reports it (`wall_seconds` measured by the caller).
    pub fn summary(&self, scenario: &str, wall_seconds: f64, repro: impl Fn(u64) -> String) -> serde_json::Value {
        self.sweep.summary(scenario, wall_seconds, repro)
    }
}

impl SimTest {
    /// A test of `scenario`: [`DEFAULT_SEEDS`] seeds from 0, the scenario's faults, the
    /// regressions file `sim-regressions/<scenario>.json` beside the crate's `Cargo.toml`.
    pub fn new(scenario: Scenario) -> Self {
        let regressions = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(|dir| PathBuf::from(dir).join("sim-regressions").join(format!("{}.json", scenario.name)));
        SimTest {
            scenario,
            seeds: DEFAULT_SEEDS,
            start: 0,
            faults: FaultSelection::Default,
            regressions,
            shrink: true,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            repro: ReproCommand::of_this_test(),
        }
    }

    /// Seeds per run (`DRYDOCK_SEEDS` overrides it).
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// The first seed (`DRYDOCK_START` overrides it).
    pub fn start(mut self, start: u64) -> Self {
        self.start = start;
        self
    }

    /// Faults other than the scenario's swarm plan.
    pub fn faults(mut self, faults: FaultSelection) -> Self {
        self.faults = faults;
        self
    }

    /// Keep regressions in this file (relative paths are the crate's, as cargo runs tests there).
    pub fn regressions(mut self, path: impl AsRef<Path>) -> Self {
        self.regressions = Some(path.as_ref().to_path_buf());
        self
    }

    /// Neither replay nor save regressions.
    pub fn without_regressions(mut self) -> Self {
        self.regressions = None;
        self
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Run the test: panic with a report of the first failure, shrunk and saved.
    #[track_caller]
    pub fn run(&self) -> Passed {
        match self.check() {
            Ok(passed) => {
                println!("{}", passed.describe(&self.scenario.name));
                passed
            }
            Err(failure) => panic!("\n{failure}\n"),
        }
    }

    /// Run the test; the first failure, shrunk and saved, as a value.
    pub fn check(&self) -> Result<Passed, Box<Failure>> {
        if let Some(path) = env_path("DRYDOCK_REPLAY") {
            return self.replay_file(&path);
        }
        if let Some(seed) = env_u64("DRYDOCK_SEED") {
            return self.repro_seed(seed);
        }
        let regressions = self.replay_regressions()?;
        let sweep = self.sweep();
        match self.failure_of(&sweep, true) {
            None => Ok(Passed { regressions, sweep }),
            Some(failure) => Err(failure),
        }
    }

    /// For a scenario built around a bug: sweep (no regressions replayed), and return the first
    /// failure, shrunk but not saved, or `None` if no seed failed. `DRYDOCK_SEEDS` does not apply:
    /// a test that says "caught within N seeds" means N.
    pub fn first_failure(&self) -> Option<Failure> {
        let sweep = self.sweep_of(self.start, self.seeds);
        self.failure_of(&sweep, false).map(|f| *f)
    }

    /// Save `failure`'s schedule in the regressions file (once: an equal entry is not added again).
    pub fn save(&self, failure: &Failure) -> std::io::Result<Option<PathBuf>> {
        let Some(path) = &self.regressions else { return Ok(None) };
        let mut file = load_regressions(path)?.unwrap_or_default();
        let entry = Regression {
            invariant: failure.invariant.clone(),
            message: failure.shrunk_message.clone().unwrap_or_else(|| failure.message.clone()),
            schedule: failure.schedule.clone(),
        };
        if !file.entries.contains(&entry) {
            file.entries.push(entry);
        }
        file.about = ABOUT.to_string();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")?;
        Ok(Some(path.clone()))
    }

    /// The entries of the regressions file (none if there is no file).
    pub fn saved_regressions(&self) -> std::io::Result<Vec<Regression>> {
        let Some(path) = &self.regressions else { return Ok(Vec::new()) };
        Ok(load_regressions(path)?.map(|f| f.entries).unwrap_or_default())
    }

    /// Replay one saved schedule in this test's scenario.
    pub fn replay(&self, schedule: &Schedule, keep_trace: bool) -> RunReport {
        schedule.replay_in(&(self.scenario.world)(), keep_trace)
    }

    fn replay_regressions(&self) -> Result<usize, Box<Failure>> {
        let entries = match self.saved_regressions() {
            Ok(entries) => entries,
            Err(error) => panic!("{}", self.unreadable(&error)),
        };
        let schedules: Vec<Schedule> = entries.into_iter().map(|e| e.schedule).collect();
        self.replay_each(&schedules, false, self.regressions.clone())
    }

    /// Replay `schedules` in order (printing each trace if `traced`); the first that fails, as a
    /// failure saved in `file`, or how many passed.
    fn replay_each(&self, schedules: &[Schedule], traced: bool, file: Option<PathBuf>) -> Result<usize, Box<Failure>> {
        for schedule in schedules {
            let report = self.replay(schedule, traced);
            if traced {
                print_trace(&report);
            }
            if let Some(v) = report.violations.first() {
                return Err(Box::new(Failure {
                    seed: None,
                    invariant: v.invariant.clone(),
                    message: v.message.clone(),
                    shrunk_message: None,
                    steps: (schedule.steps(), schedule.steps()),
                    schedule: schedule.clone(),
                    failing_seeds: Vec::new(),
                    saved_to: file,
                    repro: self.repro.command(),
                }));
            }
        }
        Ok(schedules.len())
    }

    fn unreadable(&self, error: &std::io::Error) -> String {
        let path = self.regressions.as_deref().unwrap_or(Path::new("?"));
        format!("the regressions file {} cannot be read: {error}; fix or remove it", path.display())
    }

    fn sweep(&self) -> SweepReport {
        let start = env_u64("DRYDOCK_START").unwrap_or(self.start);
        let seeds = env_u64("DRYDOCK_SEEDS").unwrap_or(self.seeds);
        self.sweep_of(start, seeds)
    }

    fn sweep_of(&self, start: u64, seeds: u64) -> SweepReport {
        let jobs = env_u64("DRYDOCK_JOBS").map_or(self.jobs, |j| j as usize);
        let config = SweepConfig { start, seeds, shard: None, jobs, check_every: Some(20), stop: None };
        self.scenario.sweep(&config, &self.faults, |_| {})
    }

    /// The first failure of `sweep` (or its nondeterminism), shrunk unless `DRYDOCK_SHRINK=0`.
    fn failure_of(&self, sweep: &SweepReport, save: bool) -> Option<Box<Failure>> {
        if let Some(seed) = sweep.nondeterministic.first() {
            panic!(
                "scenario {}: seed {seed} gave two different trace digests in two runs: the scenario, its \
                 controllers or its invariants are not deterministic (a HashMap's order, a clock, OS \
                 randomness, a thread?); rerun it with DRYDOCK_SEED={seed}",
                self.scenario.name
            );
        }
        let first = sweep.failures.first()?;
        let violation = first.violations.first()?;
        let schedule = self.scenario.recorded_schedule(first.seed, &self.faults, first.fault_decisions.clone());
        let before = schedule.steps();
        let shrink = self.shrink && env_u64("DRYDOCK_SHRINK") != Some(0);
        let schedule =
            if shrink { schedule.shrink(&(self.scenario.world)(), &violation.invariant).0 } else { schedule };
        // The shrunk run's own words (other objects, other counts than the seed's), kept apart
        // from the seed's: the seed's repro shows the seed's.
        let shrunk_message = match shrink {
            true => self.replay(&schedule, false).violations.first().map(|v| v.message.clone()),
            false => None,
        };
        let mut failure = Failure {
            seed: Some(first.seed),
            invariant: violation.invariant.clone(),
            message: violation.message.clone(),
            shrunk_message,
            steps: (before, schedule.steps()),
            schedule,
            failing_seeds: sweep.failures.iter().map(|r| r.seed).collect(),
            saved_to: None,
            repro: self.repro.command(),
        };
        if save && shrink {
            failure.saved_to = match self.save(&failure) {
                Ok(path) => path,
                Err(error) => panic!("{failure}\n(and saving it failed: {})", self.unreadable(&error)),
            };
        }
        Some(Box::new(failure))
    }

    /// `DRYDOCK_SEED=S`: one seed with its trace.
    fn repro_seed(&self, seed: u64) -> Result<Passed, Box<Failure>> {
        let report = self.scenario.run_with(seed, true, &self.faults);
        print_trace(&report);
        let mut sweep = SweepReport { start: seed, jobs: 1, ..SweepReport::default() };
        let failed = !report.ok;
        sweep.failures.extend(failed.then_some(report));
        match self.failure_of(&sweep, false) {
            None => Ok(Passed { regressions: 0, sweep }),
            Some(failure) => Err(failure),
        }
    }

    /// `DRYDOCK_REPLAY=FILE`: every schedule of a regressions file, or one schedule, with traces.
    fn replay_file(&self, path: &Path) -> Result<Passed, Box<Failure>> {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let schedules: Vec<Schedule> = match serde_json::from_str::<Regressions>(&text) {
            Ok(file) => file.entries.into_iter().map(|e| e.schedule).collect(),
            Err(_) => match serde_json::from_str::<Schedule>(&text) {
                Ok(schedule) => vec![schedule],
                Err(e) => panic!("{} is neither a regressions file nor a schedule: {e}", path.display()),
            },
        };
        let regressions = self.replay_each(&schedules, true, Some(path.to_path_buf()))?;
        Ok(Passed { regressions, sweep: SweepReport::default() })
    }
}

fn print_trace(report: &RunReport) {
    for event in report.trace.iter().flatten() {
        eprintln!("{}", event.to_text());
    }
    match report.violations.first() {
        Some(v) => eprintln!("FAIL [{}] {} at {} (digest {})", v.invariant, v.message, v.at, report.digest),
        None => eprintln!("ok: {} events, digest {}", report.events, report.digest),
    }
}

fn load_regressions(path: &Path) -> std::io::Result<Option<Regressions>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(std::io::Error::other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name}={value:?}: give a whole number"),
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The `cargo test` command that runs this test alone, from what cargo and libtest say about it:
/// the package (`CARGO_PKG_NAME`), the test binary (the executable's name without its hash) and
/// the test (the thread's name, which libtest sets to the test's path), and whether the test
/// binary was asked to run ignored tests (`--ignored` or `--include-ignored` among its arguments,
/// as `cargo test -- --ignored` and nextest's `--run-ignored` pass them). An `#[ignore]`d test runs
/// only that way, so then the command adds `--include-ignored`, which runs the test whether it is
/// ignored or not; a Rust test cannot otherwise ask whether it is itself `#[ignore]`d.
#[derive(Clone, Debug)]
struct ReproCommand {
    package: Option<String>,
    target: Option<String>,
    test: Option<String>,
    include_ignored: bool,
}

impl ReproCommand {
    fn of_this_test() -> Self {
        let exe = std::env::current_exe().ok();
        let stem = exe.as_ref().and_then(|p| p.file_stem()).map(|s| s.to_string_lossy().into_owned());
        // `simulation-0123abcd` → `simulation`; a binary without a hash is left as it is.
        let target = stem.map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) && hash.len() >= 8 => name.to_string(),
            _ => s,
        });
        let test = std::thread::current().name().filter(|n| *n != "main").map(str::to_string);
        let include_ignored = asks_for_ignored_tests(std::env::args());
        ReproCommand { package: std::env::var("CARGO_PKG_NAME").ok(), target, test, include_ignored }
    }

    fn command(&self) -> String {
        let mut command = String::from("cargo test");
        if let Some(package) = &self.package {
            command += &format!(" -p {package}");
        }
        match self.target.as_deref() {
            // Unit tests of the library: `--lib`.
            Some(target) if self.package.as_deref().map(|p| p.replace('-', "_")).as_deref() == Some(target) => {
                command += " --lib";
            }
            Some(target) => command += &format!(" --test {target}"),
            None => {}
        }
        command += " --";
        if let Some(test) = &self.test {
            command += &format!(" {test} --exact");
        }
        if self.include_ignored {
            command += " --include-ignored";
        }
        command + " --nocapture"
    }
}

/// Whether a test binary's arguments ask it to run ignored tests.
fn asks_for_ignored_tests(args: impl IntoIterator<Item = String>) -> bool {
    args.into_iter().skip(1).any(|a| a == "--ignored" || a == "--include-ignored")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_repro_command_names_the_package_the_target_and_the_test() {
        let command = ReproCommand {
            package: Some("my-crate".into()),
            target: Some("simulation".into()),
            test: Some("widgets::pass".into()),
            include_ignored: false,
        };
        assert_eq!(command.command(), "cargo test -p my-crate --test simulation -- widgets::pass --exact --nocapture");
        let lib = ReproCommand {
            package: Some("my-crate".into()),
            target: Some("my_crate".into()),
            test: None,
            include_ignored: false,
        };
        assert_eq!(lib.command(), "cargo test -p my-crate --lib -- --nocapture");
        let ignored = ReproCommand { include_ignored: true, ..command };
        assert_eq!(
            ignored.command(),
            "cargo test -p my-crate --test simulation -- widgets::pass --exact --include-ignored --nocapture"
        );
    }

    #[test]
    fn ignored_tests_are_asked_for_by_either_flag_after_the_binary() {
        let args = |list: &[&str]| list.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert!(asks_for_ignored_tests(args(&["simulation-0123", "slow", "--ignored"])));
        assert!(asks_for_ignored_tests(args(&["simulation-0123", "--include-ignored", "--exact", "slow"])));
        assert!(!asks_for_ignored_tests(args(&["simulation-0123", "slow", "--exact", "--nocapture"])));
        assert!(!asks_for_ignored_tests(args(&["--ignored"])), "the binary's own path is not an argument");
    }

    #[test]
    fn this_test_knows_its_own_name() {
        let command = ReproCommand::of_this_test();
        assert_eq!(command.test.as_deref(), Some("harness::tests::this_test_knows_its_own_name"));
        assert_eq!(command.package.as_deref(), Some("drydock-scenarios"));
    }
}
