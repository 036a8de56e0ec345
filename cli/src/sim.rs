//! `drydock sim ...`: seed sweeps, repros, reports and the catalog.
//!
//! Here: the commands and their arguments, the catalog of scenarios a program knows, `sim list`
//! and `sim golden`; sweeps and their summaries are in `sweep`, one seed or schedule in `seed`.

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use drydock_faults::FaultKind;
use drydock_scenarios::{FaultSelection, Scenario};
use drydock_sim::checker::{EVENTUAL, InvariantId};
use drydock_sim::probes::Probe;
use drydock_sim::sweep::Shard;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

mod seed;
mod sweep;

#[derive(Subcommand)]
pub enum SimCommand {
    /// Run seeds START..START+N of a scenario across threads and summarise (or, with --duration,
    /// seeds from START until the time is up; or, with --shard K/N, one interleaved slice of the
    /// seeds). Ctrl-C ends a sweep early with the summary of what ran, and saves the failing
    /// schedules found so far with --out.
    Run(RunArgs),
    /// Merge the --json results of the shards of one sweep (each saved with `sim run --shard K/N
    /// --json > FILE`) into the summary of the whole range, as `sim run` without --shard prints
    /// it. Exit code 1 if a seed failed or was nondeterministic, 2 if the files are not every
    /// shard of one sweep once each (another scenario, size, range, fault selection, determinism
    /// sampling or shard count; a shard missing, given twice or stopped early).
    Merge(MergeArgs),
    /// Run one seed, optionally printing its trace and checking that it is deterministic.
    Repro(ReproArgs),
    /// Run one seed (or a saved schedule) keeping its trace, and write it as one self-contained
    /// HTML page: a timeline with a lane per object, container and process, the violated
    /// invariant at its moment, and each event's details and causal chain on a click.
    Report(ReportArgs),
    /// Run a saved schedule (a JSON file from `sim run --out` or `sim shrink`).
    Replay(ReplayArgs),
    /// Shrink a failing seed to a minimal schedule that still fails with the same invariant.
    Shrink(ShrinkArgs),
    /// Check the golden trace digests (seeds 0..50 of every scenario and the regression corpus)
    /// against the committed file, or rewrite it with --update after a deliberate behaviour change.
    Golden(GoldenArgs),
    /// List scenarios, invariants and fault kinds.
    List,
    /// Measure the simulator: seeds/s, events/s, simulated seconds per wall second and peak
    /// memory of a sweep, and the cost per event at world sizes 10, 100 and 1,000 containers
    /// (scenario `scale`, CPU time); each figure the median of repeated runs.
    Bench(crate::bench::BenchArgs),
}

#[derive(Args)]
pub struct GoldenArgs {
    /// Rewrite the file with the digests of this build instead of checking them.
    #[arg(long)]
    update: bool,
    /// The golden file [default: scenarios/golden/digests.txt of this checkout].
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Worker threads, 1 or more (default: all cores).
    #[arg(long, value_parser = crate::jobs::parse, value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Args)]
pub struct RunArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// The size of the world, for a scenario with a size knob (`scale`: its number of containers).
    #[arg(long)]
    size: Option<usize>,
    /// How many seeds to run [default: 100, or no limit with --duration].
    #[arg(long)]
    seeds: Option<u64>,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Run seeds until this much wall time has passed (`90s`, `10m`, `2h`), then summarise: no new
    /// seed starts, the seeds in flight finish. With --seeds, whichever ends first.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    duration: Option<std::time::Duration>,
    /// Worker threads, 1 or more (default: all cores).
    #[arg(long, value_parser = crate::jobs::parse, value_name = "N")]
    jobs: Option<usize>,
    /// Faults: `default` (the scenario's swarm plan per seed), `none`, or `KIND[=RATE],...`
    /// (see `drydock sim list`).
    #[arg(long, default_value = "default")]
    faults: String,
    /// Run only shard K of N of the seeds START..START+SEEDS: the seeds s with
    /// (s - START) % N == K - 1 (interleaved: shards differ by one seed at most). The N shards of
    /// a range are disjoint and cover it, and sample the same seeds for the determinism
    /// self-check as the whole range does; `drydock sim merge` puts their --json results
    /// together. Not with --duration (each shard would stop at another seed).
    #[arg(long, value_parser = Shard::parse, value_name = "K/N")]
    shard: Option<Shard>,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
    /// Write the result as JUnit XML to FILE, for CI to render: one test case for the scenario's
    /// seeds, with one <failure> per failing or nondeterministic seed (its repro command in it).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the schedule of every failing seed to this directory, and beside the schedules of
    /// the first 20 failing seeds their `sim report` pages (`<scenario>-<seed>.html`; each seed
    /// runs once more, keeping its trace).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Run this percentage of the seeds twice and fail the sweep if a digest differs (the
    /// determinism self-check); 0 turns it off.
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT")]
    check_determinism: f64,
}

#[derive(Args)]
pub struct MergeArgs {
    /// The shards' results: files that end with the JSON line of `sim run --shard K/N --json`
    /// (the lines before it are skipped). Every shard 1..N of one sweep, each once, in any order,
    /// all run by one build of drydock (the same `drydock --version`, so the same commit).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Merge even if shards are missing or stopped early: the summary covers what ran and says
    /// which shards were missing or stopped (`merged_from` in --json).
    #[arg(long)]
    allow_partial: bool,
    /// Print one JSON object as the last line of stdout, shaped as `sim run --json`'s (with
    /// `"shard": null` and `merged_from`).
    #[arg(long)]
    json: bool,
    /// Write the merged result as JUnit XML to FILE (as `sim run --junit` does).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The schedule file.
    file: std::path::PathBuf,
    /// Print every event of the run, explained (as `sim repro --trace` does).
    #[arg(long)]
    trace: bool,
    /// With --trace: only the events that concern objects, containers or keys containing this
    /// text.
    #[arg(long, value_name = "KEY", requires = "trace")]
    filter: Option<String>,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ShrinkArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// The size of the world, for a scenario with a size knob (as for the sweep that found the seed).
    #[arg(long)]
    size: Option<usize>,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// Faults: as for the sweep that found the seed.
    #[arg(long, default_value = "default")]
    faults: String,
    /// Where to write the minimal schedule (default: the current directory).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed", conflicts_with = "schedule")]
    scenario: String,
    /// The size of the world, for a scenario with a size knob (as for the sweep that found the seed).
    #[arg(long, conflicts_with = "schedule")]
    size: Option<usize>,
    /// The seed to run.
    #[arg(long, required_unless_present = "schedule", conflicts_with = "schedule")]
    seed: Option<u64>,
    /// Faults: `default`, `none`, or `KIND[=RATE],...`; must match the sweep that found the seed.
    #[arg(long, default_value = "default", conflicts_with = "schedule")]
    faults: String,
    /// Run this saved schedule (a JSON file from `sim run --out` or `sim shrink`) instead of a seed.
    #[arg(long, value_name = "FILE")]
    schedule: Option<PathBuf>,
    /// Where to write the page [default: `<scenario>-<seed>.html` in the current directory].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct ReproArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// The size of the world, for a scenario with a size knob (as for the sweep that found the seed).
    #[arg(long)]
    size: Option<usize>,
    /// The seed to run.
    #[arg(long)]
    seed: u64,
    /// Print every event of the run, explained: for each request, the process, controller and
    /// key of the reconcile that issued it and the event that queued that reconcile; for each
    /// store write, what it changed; the engine's log lines (DRYDOCK_LOG or RUST_LOG, e.g.
    /// `debug`) beside the event that logged them, stamped with simulated time. With --json,
    /// one JSON object per event.
    #[arg(long)]
    trace: bool,
    /// With --trace: only the events that concern objects, containers or keys containing this
    /// text (e.g. `Namespace/rancher-desktop`).
    #[arg(long, value_name = "KEY", requires = "trace")]
    filter: Option<String>,
    /// Run the seed twice and fail if the trace digests differ.
    #[arg(long)]
    check_determinism: bool,
    /// Faults: `default`, `none`, or `KIND[=RATE],...`; must match the sweep that found the seed.
    #[arg(long, default_value = "default")]
    faults: String,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
}

/// The scenarios `drydock sim` knows (the built-in ones and a user's) and the name of the
/// program the printed commands start with.
pub struct Catalog<'a> {
    pub scenarios: &'a [Scenario],
    pub program: &'a str,
}

impl Catalog<'_> {
    fn scenario(&self, name: &str) -> Result<&Scenario> {
        self.scenarios.iter().find(|s| s.name == name).with_context(|| {
            let known: Vec<&str> = self.scenarios.iter().map(|s| s.name.as_str()).collect();
            format!("unknown scenario {name:?}; known scenarios: {}", known.join(", "))
        })
    }

    /// Scenario `name`, in a world of `size` if given (it must have a size knob).
    fn sized(&self, name: &str, size: Option<usize>) -> Result<std::borrow::Cow<'_, Scenario>> {
        let scenario = self.scenario(name)?;
        Ok(match size {
            None => std::borrow::Cow::Borrowed(scenario),
            Some(size) => {
                std::borrow::Cow::Owned(scenario.with_size(size).map_err(|e| anyhow::anyhow!("--size: {e}"))?)
            }
        })
    }

    fn repro_command(&self, scenario: &str, seed: u64, faults: &str) -> String {
        let program = self.program;
        if faults == "default" {
            format!("{program} sim repro --scenario {scenario} --seed {seed}")
        } else {
            format!("{program} sim repro --scenario {scenario} --seed {seed} --faults {faults}")
        }
    }

    /// The command that runs a seed twice and compares its digests.
    fn check_command(&self, scenario: &str, seed: u64, faults: &str) -> String {
        format!(
            "{} sim repro --scenario {scenario} --seed {seed} --check-determinism{}",
            self.program,
            if faults == "default" { String::new() } else { format!(" --faults {faults}") }
        )
    }
}

/// `DRYDOCK_BUG=NAME`: put a fixed bug back for this run (see `drydock_engine::bugs`), in a build
/// with the engine's `bug-switches` feature; any other build refuses.
fn switch_bug_on() -> Result<()> {
    use drydock_engine::bugs::{self, Bug};
    let Ok(name) = std::env::var("DRYDOCK_BUG") else { return Ok(()) };
    if !bugs::AVAILABLE {
        anyhow::bail!(
            "DRYDOCK_BUG is set, but this drydock was built without bug switches: build it with \
             `cargo run --release -p drydock-cli --features bug-switches -- ...`, or unset DRYDOCK_BUG"
        );
    }
    let bug = Bug::named(&name).with_context(|| {
        let known: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        format!("DRYDOCK_BUG={name:?} names no bug switch; known: {}", known.join(", "))
    })?;
    bugs::set_for_process(Some(bug));
    eprintln!("bug switch on: {bug} (DRYDOCK_BUG)");
    Ok(())
}

pub fn run(command: SimCommand, catalog: &Catalog<'_>) -> Result<ExitCode> {
    without_huge_pages();
    switch_bug_on()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match command {
        SimCommand::Run(args) => sweep::sweep(&args, catalog, &mut out)?,
        SimCommand::Merge(args) => sweep::merge(&args, catalog, &mut out)?,
        SimCommand::Repro(args) => seed::repro(&args, catalog, &mut out)?,
        SimCommand::Report(args) => seed::report(&args, catalog, &mut out)?,
        SimCommand::Replay(args) => seed::replay(&args, catalog, &mut out)?,
        SimCommand::Shrink(args) => seed::shrink(&args, catalog, &mut out)?,
        SimCommand::Golden(args) => golden(&args, catalog, &mut out)?,
        SimCommand::Bench(args) => {
            crate::bench::bench(&args, catalog.scenarios, &mut out)?;
            ExitCode::SUCCESS
        }
        SimCommand::List => {
            list(catalog, &mut out)?;
            ExitCode::SUCCESS
        }
    };
    out.flush()?;
    Ok(code)
}

/// Turns transparent huge pages off for this process (Linux; elsewhere, and where the kernel
/// refuses, nothing changes).
///
/// *Why*: a sweep's heap grows and shrinks with every seed, and mimalloc asks the kernel for huge
/// pages for its regions. Each huge-page fault zeroes 2 MiB (as much as a core's L2 cache on this
/// project's machines, so it also evicts the world being simulated) and may wait while the kernel
/// compacts memory to find one. Measured at 1,000 containers (`sim run --scenario scale --size
/// 1000`, alternating runs) on a host with a 260 MiB shared L3: 11% less CPU per event and a
/// third of the system time, with the same cost at 10 containers. On another host (a 480 MiB L3)
/// it made no difference beyond a third of the system time. The simulator's heap is tens of
/// megabytes, so small pages cost it little in the TLB.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _refused = rustix::thread::disable_transparent_huge_pages(true);
}

fn parse_faults(text: &str) -> Result<FaultSelection> {
    FaultSelection::parse(text).map_err(|e| anyhow::anyhow!("--faults {text:?}: {e}"))
}

/// `90s`, `10m`, `2h`, `1h30m`: a wall-clock duration for `--duration`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{text:?} is not a duration: write it like 90s, 10m, 2h or 1h30m");
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n.checked_mul(unit).and_then(|s| total.checked_add(s)).ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs(total))
}

/// How a command names `scenario`: its name, and its size if it has a size knob and was given one.
fn scenario_arg(scenario: &Scenario, size: Option<usize>) -> String {
    match size {
        Some(size) => format!("{} --size {size}", scenario.name),
        None => scenario.name.clone(),
    }
}

fn list(catalog: &Catalog<'_>, out: &mut impl Write) -> Result<()> {
    writeln!(out, "Scenarios:")?;
    for s in catalog.scenarios {
        writeln!(out, "  {:<32} {}", s.name, s.description)?;
    }
    writeln!(out, "\nInvariants (checked after every event):")?;
    for invariant in InvariantId::ALL {
        writeln!(out, "  {:<32} {}", invariant.name(), invariant.description())?;
    }
    for s in catalog.scenarios {
        let world = (s.world)();
        let own: Vec<_> = world.extensions.invariants.iter().map(|make| make()).collect();
        if own.is_empty() {
            continue;
        }
        writeln!(out, "\nInvariants of scenario {} (its own):", s.name)?;
        for invariant in own {
            writeln!(out, "  {:<32} {}", invariant.name(), invariant.description())?;
        }
    }
    writeln!(out, "\nEventual properties (checked after faults heal):")?;
    for (name, description) in EVENTUAL {
        writeln!(out, "  {name:<32} {description}")?;
    }
    writeln!(out, "\nProbes (interesting states a sweep should reach):")?;
    for probe in Probe::ALL {
        writeln!(out, "  {:<32} {}", probe.name(), probe.description())?;
    }
    writeln!(out, "\nFault kinds (a random subset per seed):")?;
    for kind in FaultKind::ALL {
        writeln!(out, "  {:<32} models {}", kind.name(), kind.models())?;
    }
    Ok(())
}

fn golden(args: &GoldenArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    use drydock_scenarios::golden::{self, Golden};
    let path = args.file.clone().unwrap_or_else(golden::default_path);
    let started = Instant::now();
    let actual = Golden::compute(crate::jobs::or_all_cores(args.jobs), &golden::regressions_dir())
        .map_err(|e| anyhow::anyhow!(e))?;
    let wall = started.elapsed().as_secs_f64();
    let pinned = if path.exists() { Golden::load(&path).map_err(|e| anyhow::anyhow!(e))? } else { Golden::default() };
    let differences = actual.differences(&pinned);
    if args.update {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&path, actual.render()).with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(
            out,
            "wrote {} digests to {} in {wall:.1} s: {} changed (review them with `git diff`)",
            actual.digests.len(),
            path.display(),
            differences.len()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for difference in differences.iter().take(20) {
        writeln!(out, "DIFFERS {difference}")?;
    }
    if differences.len() > 20 {
        writeln!(out, "... and {} more", differences.len() - 20)?;
    }
    writeln!(
        out,
        "golden digests: {} runs in {wall:.1} s, {} differ from {}",
        actual.digests.len(),
        differences.len(),
        path.display()
    )?;
    if !differences.is_empty() {
        writeln!(
            out,
            "behaviour changed: if that was intended, run `{} sim golden --update` and commit the diff",
            catalog.program
        )?;
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    /// The simulator's process runs without transparent huge pages, where the kernel lets it say so.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_simulator_turns_transparent_huge_pages_off() {
        super::without_huge_pages();
        assert_eq!(rustix::thread::transparent_huge_pages_are_disabled().ok(), Some(true));
    }
}
