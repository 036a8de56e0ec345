//! `drydock sim ...`: seed sweeps, repros, reports and the catalog.

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use drydock_faults::FaultKind;
use drydock_scenarios::{FaultSelection, Scenario};
use drydock_sim::checker::{EVENTUAL, InvariantId};
use drydock_sim::probes::Probe;
use drydock_sim::sweep::{Shard, SweepConfig, SweepSummary};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

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

pub fn run(command: SimCommand, catalog: &Catalog<'_>) -> Result<ExitCode> {
    without_huge_pages();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match command {
        SimCommand::Run(args) => sweep(&args, catalog, &mut out)?,
        SimCommand::Merge(args) => merge(&args, catalog, &mut out)?,
        SimCommand::Repro(args) => repro(&args, catalog, &mut out)?,
        SimCommand::Report(args) => report(&args, catalog, &mut out)?,
        SimCommand::Replay(args) => replay(&args, catalog, &mut out)?,
        SimCommand::Shrink(args) => shrink(&args, catalog, &mut out)?,
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

/// Why a sweep ended before its last seed.
#[derive(Copy, Clone, PartialEq, Eq)]
enum StopCause {
    Interrupted = 1,
    TimeUp = 2,
}

/// A flag set when the sweep should stop, with its cause: by Ctrl-C (a second Ctrl-C aborts at
/// once), or when `duration` has passed.
fn stop_signal(duration: Option<std::time::Duration>) -> (Arc<AtomicBool>, Arc<AtomicU8>) {
    let (stop, cause) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU8::new(0)));
    let raise = {
        let (stop, cause) = (stop.clone(), cause.clone());
        move |why: StopCause| {
            let _ = cause.compare_exchange(0, why as u8, Ordering::SeqCst, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
        }
    };
    if let Some(duration) = duration {
        let raise = raise.clone();
        std::thread::spawn(move || {
            std::thread::sleep(duration);
            raise(StopCause::TimeUp);
        });
    }
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            raise(StopCause::Interrupted);
            eprintln!("\ninterrupted: finishing the seeds in flight (Ctrl-C again to abort at once)");
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        });
    });
    (stop, cause)
}

/// How a command names `scenario`: its name, and its size if it has a size knob and was given one.
fn scenario_arg(scenario: &Scenario, size: Option<usize>) -> String {
    match size {
        Some(size) => format!("{} --size {size}", scenario.name),
        None => scenario.name.clone(),
    }
}

fn sweep(args: &RunArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = &*catalog.sized(&args.scenario, args.size)?;
    let faults = &parse_faults(&args.faults)?;
    if let (Some(shard), Some(_)) = (args.shard, args.duration) {
        bail!(
            "--shard {shard} with --duration: a shard is a fixed slice of a fixed range of seeds, but with \
             --duration each shard would stop at another seed and the shards would cover no range; give \
             --seeds instead (or run one sweep with --duration, unsharded)"
        );
    }
    let seeds = match (args.seeds, args.duration) {
        (Some(0), _) => bail!("--seeds must be at least 1"),
        (Some(n), _) => n,
        (None, Some(_)) => u64::MAX - args.start,
        (None, None) => 100,
    };
    args.start.checked_add(seeds).context("--start + --seeds overflows a u64")?;
    if !(0.0..=100.0).contains(&args.check_determinism) {
        bail!("--check-determinism {}: give a percentage between 0 and 100", args.check_determinism);
    }
    let (stop, cause) = stop_signal(args.duration);
    let config = SweepConfig {
        start: args.start,
        seeds,
        shard: args.shard,
        jobs: crate::jobs::or_all_cores(args.jobs),
        check_every: SweepConfig::check_every_for_percent(args.check_determinism),
        stop: Some(stop),
    };
    let progress = match args.seeds {
        Some(n) => ProgressBar::new(args.shard.map_or(n, |shard| shard.len_of(n))).with_style(
            ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} seeds {per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        ),
        None => ProgressBar::no_length().with_style(
            ProgressStyle::with_template("{spinner} {msg} {pos} seeds {per_sec}, {elapsed} of the time given")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    progress.set_message(match args.shard {
        Some(shard) => format!("sim {} shard {shard}", scenario.name),
        None => format!("sim {}", scenario.name),
    });
    let started = Instant::now();
    let mut shown = 0;
    let report = scenario.sweep(&config, faults, |run| {
        if !run.ok {
            shown += 1;
            if shown <= 10 {
                progress.suspend(|| eprintln!("seed {} failed", run.seed));
            } else if shown == 11 {
                progress.suspend(|| eprintln!("(more failing seeds: see the summary)"));
            }
        }
        progress.inc(1);
    });
    progress.finish_and_clear();
    let stopped_by = report.stopped_early.then(|| cause.load(Ordering::SeqCst));
    let wall = started.elapsed().as_secs_f64();
    if let Some(dir) = &args.out
        && !report.failures.is_empty()
    {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for failure in &report.failures {
            let path = dir.join(format!("{}-{}.json", scenario.name, failure.seed));
            let schedule = scenario.recorded_schedule(failure.seed, faults, failure.fault_decisions.clone());
            write_schedule(&path, &schedule)?;
        }
        writeln!(out, "schedules of the {} failing seeds written to {}", report.failures.len(), dir.display())?;
        let reported = report.failures.len().min(REPORTS_PER_SWEEP);
        for failure in &report.failures[..reported] {
            let run = scenario.run_with(failure.seed, true, faults);
            write_report(&dir.join(format!("{}-{}.html", scenario.name, failure.seed)), &scenario.name, &run)?;
        }
        let first = if reported < report.failures.len() { format!("the first {reported} of ") } else { String::new() };
        writeln!(out, "reports (sim report) of {first}the failing seeds written beside them")?;
    }
    let named = scenario_arg(scenario, args.size);
    let repro = |seed| catalog.repro_command(&named, seed, &args.faults);
    let mut summary = report.summarize(&scenario.name, Some(&args.faults), wall, repro);
    summary.size = args.size;
    summary.build = Some(crate::VERSION.to_string());
    summary.stopped = match stopped_by {
        Some(c) if c == StopCause::Interrupted as u8 => Some("interrupted".to_string()),
        Some(c) if c == StopCause::TimeUp as u8 => Some("time-up".to_string()),
        _ => None,
    };
    report_summary(&summary, catalog, args.json, args.junit.as_deref(), out)?;
    Ok(match stopped_by {
        _ if !report.passed() => ExitCode::from(1),
        Some(c) if c == StopCause::Interrupted as u8 => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}

fn merge(args: &MergeArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let shards = args.files.iter().map(|file| read_summary(file)).collect::<Result<Vec<_>>>()?;
    let merged = drydock_sim::sweep::merge(&shards, args.allow_partial)
        .map_err(|e| anyhow::anyhow!(e.describe(|input| args.files[input].display().to_string())))?;
    report_summary(&merged, catalog, args.json, args.junit.as_deref(), out)?;
    Ok(if merged.passed() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The summary a `sim run --json` printed as the last non-empty line of `file`.
fn read_summary(file: &Path) -> Result<SweepSummary> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let save = "save each shard's result with `drydock sim run --shard K/N --json > FILE`";
    let last = text.lines().map(str::trim).rfind(|line| !line.is_empty());
    let last = last.with_context(|| format!("{} is empty: {save}", file.display()))?;
    serde_json::from_str(last).map_err(|e| {
        anyhow::anyhow!(
            "{}: its last line is not the JSON of `drydock sim run --json` of this drydock ({e}); {save}",
            file.display()
        )
    })
}

/// Print a sweep's summary (a run's or a merge's): the failures grouped by invariant and message
/// (each group's count, first seed, its message and the command that runs it again), a line per
/// nondeterministic seed, faults fired, the determinism self-check, probes, the work after the
/// heal, what ran, and a last line that says PASS or FAIL; with `json`, the summary as the line
/// after it, the last; with `junit`, the JUnit XML to that file (a failure per seed).
fn report_summary(
    summary: &SweepSummary,
    catalog: &Catalog<'_>,
    json: bool,
    junit: Option<&Path>,
    out: &mut impl Write,
) -> Result<()> {
    let named = match summary.size {
        Some(size) => format!("{} --size {size}", summary.scenario),
        None => summary.scenario.clone(),
    };
    let faults = summary.fault_selection.as_deref().unwrap_or("default");
    // Failures grouped by invariant and message (numbers and ids aside): a bug that fails 100
    // seeds is one group, with its lowest seed to look at (the JSON and JUnit keep every seed).
    let groups = &summary.groups;
    if !groups.is_empty() {
        writeln!(
            out,
            "{} failing seeds, {} (grouped by invariant and message, numbers and ids aside):",
            summary.failures.len(),
            if groups.len() == 1 {
                "1 kind of failure".to_string()
            } else {
                format!("{} kinds of failure", groups.len())
            }
        )?;
    }
    for group in groups {
        let shown: Vec<String> = group.seeds.iter().take(5).map(u64::to_string).collect();
        let more = group.seeds.len().saturating_sub(shown.len());
        let seeds = if more == 0 { shown.join(", ") } else { format!("{} and {more} more", shown.join(", ")) };
        let noun = if group.count == 1 { "seed" } else { "seeds" };
        writeln!(out, "  [{}] {} {noun}: {seeds}", group.invariant, group.count)?;
        writeln!(out, "    seed {}: {}", group.first_seed, group.message)?;
        writeln!(out, "    repro: {}", group.repro)?;
    }
    for seed in &summary.nondeterministic {
        writeln!(
            out,
            "NONDETERMINISTIC seed {seed}: two runs gave different digests — check: {}",
            catalog.check_command(&named, *seed, faults)
        )?;
    }
    writeln!(
        out,
        "faults fired: {}",
        summary.faults.iter().map(|(kind, count)| format!("{kind}={count}")).collect::<Vec<_>>().join(", ")
    )?;
    writeln!(
        out,
        "determinism: {} seeds run twice (a sample, and every failing seed), {}",
        summary.determinism_checked,
        if summary.nondeterministic.is_empty() {
            "same digests".to_string()
        } else {
            format!("{} DIFFERED", summary.nondeterministic.len())
        }
    )?;
    let unreached = &summary.probes_unreached;
    let reached = summary.probes.values().filter(|hits| **hits > 0).count();
    let reachable = summary.probes_reachable.len().max(reached + unreached.len());
    let cannot = summary.probes.len().saturating_sub(reachable);
    writeln!(
        out,
        "probes: {reached}/{reachable} reached{}{}",
        if unreached.is_empty() { String::new() } else { format!("; never reached: {}", unreached.join(", ")) },
        match cannot {
            0 => String::new(),
            1 => " (1 more no seed could reach, its workload and faults lacking what it needs)".to_string(),
            n => format!(" ({n} more no seed could reach, its workload and faults lacking what they need)"),
        }
    )?;
    let work = &summary.work_after_heal;
    writeln!(
        out,
        "work after faults healed, the most in one minute: {} runtime requests and {} store writes by one object, {} reconciles per object by one process",
        work.runtime_requests, work.store_writes, work.reconciles_per_object
    )?;
    let why = summary.stopped.as_deref().map(|why| match why {
        "interrupted" => "interrupted by Ctrl-C",
        "time-up" => "the --duration given is up",
        other => other,
    });
    let (start, end) = (summary.start, summary.end);
    let seeds = match (&summary.shard, &summary.merged_from) {
        (Some(run), _) => {
            let shard = run.shard();
            let ran = seed_list(run.first_seed, run.last_seed, shard.count, summary.seeds);
            if let Some(why) = why {
                writeln!(out, "stopped early ({why}): shard {shard} ran its first {ran}, none skipped among them")?;
            }
            let few = if summary.seeds_due() == 0 { " (the range has fewer seeds than shards)" } else { "" };
            writeln!(out, "shard {shard} of seeds {start}..{end}: {ran}{few}")?;
            format!("shard {shard} of {start}..{end}")
        }
        (None, Some(merged)) => {
            let list = |shards: &[u64]| shards.iter().map(|k| format!("{k}/{}", merged.shards)).collect::<Vec<_>>();
            if !merged.missing.is_empty() || !merged.stopped.is_empty() {
                let mut gaps = Vec::new();
                if !merged.missing.is_empty() {
                    gaps.push(format!("shards missing: {}", list(&merged.missing).join(", ")));
                }
                if !merged.stopped.is_empty() {
                    gaps.push(format!("shards stopped early: {}", list(&merged.stopped).join(", ")));
                }
                writeln!(
                    out,
                    "partial merge ({}): {} of the {} seeds of {start}..{end} ran",
                    gaps.join("; "),
                    summary.seeds,
                    summary.range_seeds()
                )?;
            }
            format!("{start}..{end}, merged from {} shards", merged.shards)
        }
        (None, None) => {
            let ran_to = start.saturating_add(summary.seeds);
            if let Some(why) = why {
                writeln!(out, "stopped early ({why}): seeds {start}..{ran_to} ran, none skipped among them")?;
            }
            format!("{start}..{ran_to}")
        }
    };
    let (wall, threads) = if summary.merged_from.is_some() {
        ("wall s (the slowest shard's)", "threads (all shards')")
    } else {
        ("wall s", "threads")
    };
    writeln!(
        out,
        "scenario {}: {} seeds ({seeds}), {} failed, {} events, {:.0} simulated s in {:.2} {wall} on {} {threads}: {:.1} seeds/s, time acceleration {:.0}x",
        summary.scenario,
        summary.seeds,
        summary.failures.len(),
        summary.events,
        summary.sim_seconds,
        summary.wall_seconds,
        summary.jobs,
        summary.seeds_per_second,
        summary.time_acceleration
    )?;
    writeln!(out, "{}", verdict(summary, &named, &seeds))?;
    if let Some(path) = junit {
        let xml = summary.junit(|seed| catalog.check_command(&named, seed, faults));
        std::fs::write(path, xml).with_context(|| format!("cannot write the JUnit report to {}", path.display()))?;
    }
    if json {
        writeln!(out, "{}", serde_json::to_value(summary)?)?;
    }
    Ok(())
}

/// The last line of a sweep's human output: PASS or FAIL, the scenario, the seeds that ran
/// (`seeds`, as the line above says it), the failures and what else was wrong or partial.
fn verdict(summary: &SweepSummary, named: &str, seeds: &str) -> String {
    let plural = |n: usize, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
    let ran = plural(summary.seeds as usize, "seed", "seeds");
    let mut notes = vec![match summary.failures.len() {
        0 => "0 failures".to_string(),
        n => format!("{} ({})", plural(n, "failure", "failures"), plural(summary.groups.len(), "kind", "kinds")),
    }];
    if !summary.nondeterministic.is_empty() {
        notes.push(format!("{} nondeterministic", plural(summary.nondeterministic.len(), "seed", "seeds")));
    }
    if let Some(why) = &summary.stopped {
        notes.push(format!("stopped early ({why})"));
    }
    if let Some(merged) = &summary.merged_from
        && (!merged.missing.is_empty() || !merged.stopped.is_empty())
    {
        notes.push(format!("partial: {} of {} seeds", summary.seeds, summary.range_seeds()));
    }
    if !summary.probes_unreached.is_empty() {
        notes.push(format!("{} never reached", plural(summary.probes_unreached.len(), "probe", "probes")));
    }
    let word = if summary.passed() { "PASS" } else { "FAIL" };
    format!("{word}: {named}, {ran} ({seeds}), {}", notes.join(", "))
}

/// `n` seeds of a shard, `first`, `first + step`, ... `last`, in a few words.
fn seed_list(first: Option<u64>, last: Option<u64>, step: u64, n: u64) -> String {
    match (first, last, n) {
        (Some(first), Some(_), 1) => format!("1 seed, {first}"),
        (Some(first), Some(last), 2) => format!("2 seeds, {first} and {last}"),
        (Some(first), Some(last), 3) => format!("3 seeds, {first}, {}, {last}", first + step),
        (Some(first), Some(last), n) => format!("{n} seeds, {first}, {}, ..., {last}", first + step),
        _ => "no seed".to_string(),
    }
}

fn repro(args: &ReproArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = &*catalog.sized(&args.scenario, args.size)?;
    let started = Instant::now();
    let faults = parse_faults(&args.faults)?;
    let mut report = scenario.run_with(args.seed, args.trace, &faults);
    let wall = started.elapsed().as_secs_f64();
    print_trace(&mut report, args.filter.as_deref(), args.json, out)?;
    let mut deterministic = None;
    if args.check_determinism {
        let again = scenario.run_with(args.seed, false, &faults);
        deterministic = Some(again.digest == report.digest);
        if again.digest != report.digest {
            writeln!(out, "NONDETERMINISTIC: seed {} gave digest {} then {}", args.seed, report.digest, again.digest)?;
        }
    }
    let ok = report.ok && deterministic != Some(false);
    writeln!(
        out,
        "scenario {} seed {}: {} — {} events, {:.1} simulated s in {:.3} wall s, faults {}, digest {}",
        scenario.name,
        args.seed,
        if report.ok { "ok" } else { "FAILED" },
        report.events,
        report.sim_nanos as f64 / 1e9,
        wall,
        report.faults,
        report.digest
    )?;
    for v in &report.violations {
        writeln!(out, "violation at {} [{}] {}", v.at, v.invariant, v.message)?;
    }
    if let Some(same) = deterministic {
        writeln!(out, "determinism: {}", if same { "same digest on a second run" } else { "DIGESTS DIFFER" })?;
    }
    if args.json {
        let summary = json!({
            "scenario": scenario.name,
            "seed": args.seed,
            "ok": ok,
            "digest": report.digest,
            "events": report.events,
            "sim_seconds": report.sim_nanos as f64 / 1e9,
            "wall_seconds": wall,
            "faults": report.faults,
            "faults_fired": report.fault_counts,
            "violations": report.violations,
            "probes": report.probes,
            "deterministic": deterministic,
            "stats": report.stats,
        });
        writeln!(out, "{summary}")?;
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The run's explained events, if it kept them: as text, or one JSON object per line; only
/// those concerning `filter` if given.
fn print_trace(
    report: &mut drydock_sim::RunReport,
    filter: Option<&str>,
    json: bool,
    out: &mut impl Write,
) -> Result<()> {
    let Some(events) = report.trace.take() else { return Ok(()) };
    for event in events.iter().filter(|e| filter.is_none_or(|f| e.concerns(f))) {
        if json {
            writeln!(out, "{}", serde_json::to_string(event)?)?;
        } else {
            writeln!(out, "{}", event.to_text())?;
        }
    }
    report.trace = Some(events);
    Ok(())
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

fn write_schedule(path: &std::path::Path, schedule: &drydock_scenarios::schedule::Schedule) -> Result<()> {
    let json = serde_json::to_string_pretty(schedule)?;
    std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))
}

/// How many failing seeds of a sweep `sim run --out` writes a report page for.
const REPORTS_PER_SWEEP: usize = 20;

/// Write the page of `run` (which kept its trace) to `path`; its size in bytes.
fn write_report(path: &Path, scenario: &str, run: &drydock_sim::RunReport) -> Result<usize> {
    let html = drydock_sim::timeline::render_html(&drydock_sim::trace::ExplainedRun::from_report(scenario, run));
    std::fs::write(path, &html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(html.len())
}

fn report(args: &ReportArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let (name, seed, run) = match &args.schedule {
        Some(file) => {
            let schedule = read_schedule(file)?;
            let run = schedule
                .replay_among(catalog.scenarios, true)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            (schedule.scenario, schedule.seed, run)
        }
        None => {
            let scenario = &*catalog.sized(&args.scenario, args.size)?;
            let seed = args.seed.context("give --seed (or --schedule FILE)")?;
            (scenario.name.clone(), seed, scenario.run_with(seed, true, &parse_faults(&args.faults)?))
        }
    };
    let path = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("{name}-{seed}.html")));
    let bytes = write_report(&path, &name, &run)?;
    let verdict = match run.violations.first() {
        Some(v) => format!("FAILED [{}]", v.invariant),
        None => "ok".to_string(),
    };
    writeln!(
        out,
        "{name} seed {seed}: {verdict}, {} events; report written to {} ({bytes} bytes)",
        run.events,
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A schedule file, as `sim run --out` and `sim shrink` write them.
fn read_schedule(file: &Path) -> Result<drydock_scenarios::schedule::Schedule> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let schedule: drydock_scenarios::schedule::Schedule =
        serde_json::from_str(&text).with_context(|| format!("{} is not a drydock schedule", file.display()))?;
    if schedule.version != drydock_scenarios::schedule::SCHEDULE_VERSION {
        bail!(
            "{}: schedule version {} is not supported (this drydock reads version {})",
            file.display(),
            schedule.version,
            drydock_scenarios::schedule::SCHEDULE_VERSION
        );
    }
    Ok(schedule)
}

fn replay(args: &ReplayArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let schedule = read_schedule(&args.file)?;
    let mut report = schedule
        .replay_among(catalog.scenarios, args.trace)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    print_trace(&mut report, args.filter.as_deref(), args.json, out)?;
    writeln!(
        out,
        "schedule {} ({} seed {}, {} steps): {} — {} events, digest {}",
        args.file.display(),
        schedule.scenario,
        schedule.seed,
        schedule.steps(),
        if report.ok { "ok" } else { "FAILED" },
        report.events,
        report.digest
    )?;
    for v in &report.violations {
        writeln!(out, "violation at {} [{}] {}", v.at, v.invariant, v.message)?;
    }
    if args.json {
        let summary = json!({ "schedule": args.file, "scenario": schedule.scenario, "seed": schedule.seed, "ok": report.ok,
            "digest": report.digest, "events": report.events, "violations": report.violations });
        writeln!(out, "{summary}")?;
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn shrink(args: &ShrinkArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = &*catalog.sized(&args.scenario, args.size)?;
    let faults = parse_faults(&args.faults)?;
    let schedule = scenario.schedule(args.seed, &faults);
    let config = (scenario.world)();
    let report = schedule.replay_in(&config, false);
    let Some(violation) = report.violations.first() else {
        bail!(
            "seed {} of {} does not fail (with --faults {}): nothing to shrink",
            args.seed,
            scenario.name,
            args.faults
        );
    };
    let invariant = violation.invariant.clone();
    let (small, runs) = schedule.shrink(&config, &invariant);
    let dir = args.out.clone().unwrap_or_else(|| std::path::PathBuf::from("."));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("{}-{}-min.json", scenario.name, args.seed));
    write_schedule(&path, &small)?;
    writeln!(
        out,
        "seed {} fails [{invariant}]: shrunk from {} to {} steps in {runs} runs; replay with: {} sim replay {}",
        args.seed,
        schedule.steps(),
        small.steps(),
        catalog.program,
        path.display()
    )?;
    if args.json {
        let summary = json!({ "scenario": scenario.name, "seed": args.seed, "invariant": invariant,
            "steps_before": schedule.steps(), "steps_after": small.steps(), "runs": runs, "schedule": path });
        writeln!(out, "{summary}")?;
    }
    Ok(ExitCode::SUCCESS)
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
