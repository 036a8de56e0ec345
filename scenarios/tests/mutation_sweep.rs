//! The test command of mutation testing (`tools/mutants`): a seeded sweep of every built-in
//! scenario that stops at the first seed whose invariants fail, and says which.
//!
//! cargo-mutants changes the engine's code one mutant at a time and runs this; a mutant is
//! killed when this exits non-zero. Nothing here knows what the engine should do: the
//! simulator's invariants decide, as in any sweep. Under plain `cargo test` it is a short sweep
//! (4 seeds of each scenario) that must pass.
//!
//! *Guarantees*
//! - The regression corpus (`scenarios/regressions/*.json`) is replayed first, in file-name
//!   order: each is a race some seed once found, rarer than the sweep's seeds would reach again.
//! - Then seeds run seed-major (seed 0 of every scenario, then seed 1 of every scenario, ...), so a
//!   mutant that one scenario catches at once is not kept waiting behind another's thousand
//!   seeds.
//! - The failure reported is the first in that order, whatever the threads' timing: a worker
//!   never starts an item after a failing one, and every item before it is run to the end. So
//!   the same mutant is reported killed by the same invariant at the same seed on every run.
//! - A panic in a run (an engine `unwrap` a mutant made fail, an overflow) is caught and reported
//!   as the kill, invariant `panic`.
//!
//! *Configuration* (environment):
//! - `DRYDOCK_MUTANTS_SEEDS`: seeds per scenario, at most 1,000 (default 4);
//! - `DRYDOCK_MUTANTS_JOBS`: worker threads (default: the machine's cores);
//! - `DRYDOCK_MUTANTS_TRACE=SCENARIO:SEED`: run that one seed instead and print its trace and
//!   digest (a mutant cannot be replayed by the `drydock` binary, which does not hold it).
//!
//! It prints one line that `tools/mutants` reads, `DRYDOCK-MUTANTS {json}`, with `killed`,
//! and, for a kill, `invariant`, `scenario`, `seed`, `seeds_run` (how many seeds ran in all, the
//! killing one included; a regression counts as one) and `message`. A regression's kill names
//! scenario `regression:FILE` and the seed its schedule came from.

// The wall time a sweep took, for the report and cargo-mutants' timeout, is this test program's
// own clock, never the simulation's (the scenarios' clippy.toml keeps `Instant` out of those).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use drydock_faults::FaultSelection;
use drydock_scenarios::Scenario;
use drydock_scenarios::schedule::Schedule;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

const MAX_SEEDS: u64 = 1_000;

/// What made a run fail.
struct Kill {
    invariant: String,
    message: String,
}

fn main() -> ExitCode {
    if let Ok(which) = std::env::var("DRYDOCK_MUTANTS_TRACE") {
        return print_trace(&which);
    }
    let seeds = match env_number("DRYDOCK_MUTANTS_SEEDS", 4) {
        Ok(n) if (1..=MAX_SEEDS).contains(&n) => n,
        Ok(n) => return usage(&format!("DRYDOCK_MUTANTS_SEEDS={n}: give 1 to {MAX_SEEDS}")),
        Err(e) => return usage(&e),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let jobs = match env_number("DRYDOCK_MUTANTS_JOBS", cores) {
        Ok(n) if n >= 1 => n as usize,
        Ok(_) => return usage("DRYDOCK_MUTANTS_JOBS=0: give at least 1"),
        Err(e) => return usage(&e),
    };
    // The scenarios a correct engine passes on every seed; one that expects failures (a
    // deliberately buggy example controller) would kill every mutant.
    let scenarios: Vec<&Scenario> = drydock_scenarios::all().iter().filter(|s| !s.expect_failures).collect();
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    let regressions =
        match drydock_scenarios::golden::regression_schedules(&drydock_scenarios::golden::regressions_dir()) {
            Ok(found) => found,
            Err(e) => return usage(&format!("the regression corpus: {e}")),
        };
    println!(
        "mutation sweep: {} regression schedules, then {seeds} seeds of each of {} scenarios ({}), {jobs} threads",
        regressions.len(),
        scenarios.len(),
        names.join(", ")
    );

    let started = Instant::now();
    let sweep = Sweep::new(&scenarios, &regressions, seeds);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| sweep.work());
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (first_failure, kill) = sweep.first_failure();
    let record = match (first_failure, kill) {
        (Some(index), Some(kill)) => {
            let (scenario, seed) = match sweep.item(index) {
                Item::Regression(name, schedule) => (format!("regression:{name}"), schedule.seed),
                Item::Seed(scenario, seed) => (scenario.name.to_string(), seed),
            };
            println!(
                "mutation sweep: KILLED by {} in {scenario} seed {seed}, after {} seeds ({elapsed:.1} s): {}",
                kill.invariant,
                index + 1,
                kill.message
            );
            serde_json::json!({
                "killed": true,
                "invariant": kill.invariant,
                "scenario": scenario,
                "seed": seed,
                "seeds_run": index + 1,
                "message": kill.message,
                "seconds": elapsed,
            })
        }
        _ => {
            let total = sweep.items;
            println!("mutation sweep: every one of {total} seeds passed ({elapsed:.1} s)");
            serde_json::json!({ "killed": false, "seeds_run": total, "seconds": elapsed })
        }
    };
    println!("DRYDOCK-MUTANTS {record}");
    if record["killed"] == true { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// The sweep's items in order (the regressions, then item `r + i` being seed `i / n` of scenario
/// `i % n`), and where the first failure among those run is.
struct Sweep<'a> {
    scenarios: &'a [&'a Scenario],
    regressions: &'a [(String, Schedule)],
    items: u64,
    next: AtomicU64,
    /// The index of the first failing item found so far (`u64::MAX`: none); no item past it starts.
    first_failure: AtomicU64,
    kill: Mutex<Option<(u64, Kill)>>,
    done: AtomicUsize,
}

impl<'a> Sweep<'a> {
    fn new(scenarios: &'a [&'a Scenario], regressions: &'a [(String, Schedule)], seeds: u64) -> Self {
        Sweep {
            scenarios,
            regressions,
            items: regressions.len() as u64 + seeds * scenarios.len() as u64,
            next: AtomicU64::new(0),
            first_failure: AtomicU64::new(u64::MAX),
            kill: Mutex::new(None),
            done: AtomicUsize::new(0),
        }
    }

    fn work(&self) {
        loop {
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            if index >= self.items || index > self.first_failure.load(Ordering::SeqCst) {
                return;
            }
            if let Some(kill) = run(self.item(index)) {
                self.first_failure.fetch_min(index, Ordering::SeqCst);
                let mut slot = self.kill.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if slot.as_ref().is_none_or(|(found, _)| index < *found) {
                    *slot = Some((index, kill));
                }
            }
            let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
            if done.is_multiple_of(500) {
                println!("mutation sweep: {done} seeds run");
            }
        }
    }

    fn first_failure(&self) -> (Option<u64>, Option<Kill>) {
        let kill = self.kill.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        match kill {
            Some((index, kill)) => (Some(index), Some(kill)),
            None => (None, None),
        }
    }

    fn item(&self, index: u64) -> Item<'a> {
        let r = self.regressions.len() as u64;
        if index < r {
            let (name, schedule) = &self.regressions[index as usize];
            return Item::Regression(name, schedule);
        }
        let n = self.scenarios.len() as u64;
        Item::Seed(self.scenarios[((index - r) % n) as usize], (index - r) / n)
    }
}

/// One run of the sweep.
enum Item<'a> {
    /// A schedule of the regression corpus, by file name.
    Regression(&'a str, &'a Schedule),
    Seed(&'a Scenario, u64),
}

/// Run one item; what killed it, if anything did.
fn run(item: Item<'_>) -> Option<Kill> {
    let outcome = catch_unwind(AssertUnwindSafe(|| match item {
        Item::Regression(_, schedule) => schedule.replay(false),
        Item::Seed(scenario, seed) => Ok(scenario.run_with(seed, false, &FaultSelection::Default)),
    }));
    match outcome {
        Ok(Err(why)) => Some(Kill { invariant: "replay".into(), message: why }),
        Ok(Ok(report)) if report.ok => None,
        Ok(Ok(report)) => Some(match report.violations.first() {
            Some(v) => Kill { invariant: v.invariant.clone(), message: v.message.clone() },
            None => Kill { invariant: "unknown".into(), message: "the run failed with no violation named".into() },
        }),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic with no message".into());
            Some(Kill { invariant: "panic".into(), message })
        }
    }
}

fn print_trace(which: &str) -> ExitCode {
    let Some((name, seed)) = which.split_once(':') else {
        return usage(&format!("DRYDOCK_MUTANTS_TRACE={which}: give SCENARIO:SEED"));
    };
    let (Some(scenario), Ok(seed)) = (drydock_scenarios::find(name), seed.parse::<u64>()) else {
        return usage(&format!("DRYDOCK_MUTANTS_TRACE={which}: no scenario {name:?} or no seed number {seed:?}"));
    };
    let report = scenario.run_with(seed, true, &FaultSelection::Default);
    for event in report.trace.iter().flatten() {
        println!("{}", event.line);
    }
    for v in &report.violations {
        println!("VIOLATION {}: {}", v.invariant, v.message);
    }
    println!("{name} seed {seed}: digest {}, {} events, ok {}", report.digest, report.events, report.ok);
    if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn env_number(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(text) => text.trim().parse().map_err(|_| format!("{name}={text}: not a whole number")),
        Err(_) => Ok(default),
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("mutation sweep: {problem}");
    ExitCode::from(2)
}
