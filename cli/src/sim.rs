//! `drydock sim ...`: seed sweeps, repros and the catalog.

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use drydock_faults::FaultKind;
use drydock_scenarios::{FaultSelection, Scenario};
use drydock_sim::RunReport;
use drydock_sim::checker::{EVENTUAL, INVARIANTS};
use drydock_sim::probes::PROBES;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

#[derive(Subcommand)]
pub enum SimCommand {
    /// Run seeds START..START+N of a scenario across threads and summarise.
    Run(RunArgs),
    /// Run one seed, optionally printing its trace and checking that it is deterministic.
    Repro(ReproArgs),
    /// Run a saved schedule (a JSON file from `sim run --out` or `sim shrink`).
    Replay(ReplayArgs),
    /// Shrink a failing seed to a minimal schedule that still fails with the same invariant.
    Shrink(ShrinkArgs),
    /// List scenarios, invariants and fault kinds.
    List,
}

#[derive(Args)]
pub struct RunArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// How many seeds to run.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Faults: `default` (the scenario's swarm plan per seed), `none`, or `KIND[=RATE],...`
    /// (see `drydock sim list`).
    #[arg(long, default_value = "default")]
    faults: String,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
    /// Write the schedule of every failing seed to this directory.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Run this percentage of the seeds twice and fail the sweep if a digest differs (the
    /// determinism self-check); 0 turns it off.
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT")]
    check_determinism: f64,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The schedule file.
    file: std::path::PathBuf,
    /// Print every event of the run.
    #[arg(long)]
    trace: bool,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ShrinkArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
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
pub struct ReproArgs {
    /// Scenario name (see `drydock sim list`).
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// The seed to run.
    #[arg(long)]
    seed: u64,
    /// Print every event of the run.
    #[arg(long)]
    trace: bool,
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

pub fn run(command: SimCommand) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match command {
        SimCommand::Run(args) => sweep(&args, &mut out)?,
        SimCommand::Repro(args) => repro(&args, &mut out)?,
        SimCommand::Replay(args) => replay(&args, &mut out)?,
        SimCommand::Shrink(args) => shrink(&args, &mut out)?,
        SimCommand::List => {
            list(&mut out)?;
            ExitCode::SUCCESS
        }
    };
    out.flush()?;
    Ok(code)
}

fn scenario(name: &str) -> Result<&'static Scenario> {
    drydock_scenarios::find(name).with_context(|| {
        format!("unknown scenario {name:?}; known scenarios: {}", drydock_scenarios::names().join(", "))
    })
}

fn parse_faults(text: &str) -> Result<FaultSelection> {
    FaultSelection::parse(text).map_err(|e| anyhow::anyhow!("--faults {text:?}: {e}"))
}

fn repro_command(scenario: &str, seed: u64, faults: &str) -> String {
    if faults == "default" {
        format!("drydock sim repro --scenario {scenario} --seed {seed}")
    } else {
        format!("drydock sim repro --scenario {scenario} --seed {seed} --faults {faults}")
    }
}

fn sweep(args: &RunArgs, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = scenario(&args.scenario)?;
    let faults = &parse_faults(&args.faults)?;
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    let end = args.start.checked_add(args.seeds).context("--start + --seeds overflows a u64")?;
    if !(0.0..=100.0).contains(&args.check_determinism) {
        bail!("--check-determinism {}: give a percentage between 0 and 100", args.check_determinism);
    }
    // Every k-th seed of the sweep is run twice (at least one seed unless the check is off).
    let check_every = (args.check_determinism > 0.0).then(|| (100.0 / args.check_determinism).round().max(1.0) as u64);
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let progress = ProgressBar::new(args.seeds).with_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} seeds {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    progress.set_message(format!("sim {}", scenario.name));
    let started = Instant::now();
    let next = AtomicU64::new(args.start);
    let (tx, rx) = mpsc::channel::<(RunReport, Option<String>)>();
    let mut reports: Vec<RunReport> = Vec::with_capacity(usize::try_from(args.seeds).unwrap_or(0));
    let mut shown = 0;
    let (mut checked, mut nondeterministic) = (0u64, Vec::<u64>::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    let report = scenario.run_with(seed, false, faults);
                    let again = check_every
                        .filter(|k| (seed - args.start).is_multiple_of(*k))
                        .map(|_| scenario.run_with(seed, false, faults).digest);
                    if tx.send((report, again)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (report, again) in rx {
            if let Some(digest) = again {
                checked += 1;
                if digest != report.digest {
                    nondeterministic.push(report.seed);
                }
            }
            if !report.ok {
                shown += 1;
                if shown <= 10 {
                    progress.suspend(|| eprintln!("seed {} failed", report.seed));
                } else if shown == 11 {
                    progress.suspend(|| eprintln!("(more failing seeds: see the summary)"));
                }
            }
            progress.inc(1);
            reports.push(report);
        }
    });
    progress.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    reports.sort_by_key(|r| r.seed);
    let events: u64 = reports.iter().map(|r| r.events).sum();
    let sim_seconds: f64 = reports.iter().map(|r| r.sim_nanos as f64 / 1e9).sum();
    let failures: Vec<&RunReport> = reports.iter().filter(|r| !r.ok).collect();
    if let Some(dir) = &args.out
        && !failures.is_empty()
    {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for failure in &failures {
            let path = dir.join(format!("{}-{}.json", scenario.name, failure.seed));
            let schedule = scenario.recorded_schedule(failure.seed, faults, failure.fault_decisions.clone());
            write_schedule(&path, &schedule)?;
        }
        writeln!(out, "schedules of the {} failing seeds written to {}", failures.len(), dir.display())?;
    }
    for failure in &failures {
        let v = &failure.violations[0];
        writeln!(
            out,
            "FAIL seed {} [{}] {} — repro: {}",
            failure.seed,
            v.invariant,
            v.message,
            repro_command(scenario.name, failure.seed, &args.faults)
        )?;
    }
    nondeterministic.sort_unstable();
    for seed in &nondeterministic {
        writeln!(
            out,
            "NONDETERMINISTIC seed {seed}: two runs gave different digests — check: drydock sim repro --scenario {} --seed {seed} --check-determinism{}",
            scenario.name,
            if args.faults == "default" { String::new() } else { format!(" --faults {}", args.faults) }
        )?;
    }
    let mut fired: std::collections::BTreeMap<&str, u64> = FaultKind::ALL.iter().map(|k| (k.name(), 0)).collect();
    for report in &reports {
        for (kind, count) in &report.fault_counts {
            *fired.entry(kind.name()).or_default() += count;
        }
    }
    writeln!(
        out,
        "faults fired: {}",
        fired.iter().map(|(kind, count)| format!("{kind}={count}")).collect::<Vec<_>>().join(", ")
    )?;
    writeln!(
        out,
        "determinism: {checked} seeds run twice, {}",
        if nondeterministic.is_empty() {
            "same digests".to_string()
        } else {
            format!("{} DIFFERED", nondeterministic.len())
        }
    )?;
    let mut probes: std::collections::BTreeMap<&str, u64> = PROBES.iter().map(|(name, _)| (*name, 0)).collect();
    for report in &reports {
        for (name, hits) in &report.probes {
            *probes.entry(name).or_default() += hits;
        }
    }
    let unreached: Vec<&str> = probes.iter().filter(|(_, hits)| **hits == 0).map(|(name, _)| *name).collect();
    writeln!(
        out,
        "probes: {}/{} reached{}",
        probes.len() - unreached.len(),
        probes.len(),
        if unreached.is_empty() { String::new() } else { format!("; never reached: {}", unreached.join(", ")) }
    )?;
    let seeds_per_sec = reports.len() as f64 / wall.max(1e-9);
    let acceleration = sim_seconds / wall.max(1e-9);
    writeln!(
        out,
        "scenario {}: {} seeds ({}..{}), {} failed, {} events, {:.0} simulated s in {:.2} wall s on {jobs} threads: {:.1} seeds/s, time acceleration {:.0}x",
        scenario.name,
        reports.len(),
        args.start,
        end,
        failures.len(),
        events,
        sim_seconds,
        wall,
        seeds_per_sec,
        acceleration
    )?;
    if args.json {
        let failures: Vec<_> = failures
            .iter()
            .map(|r| {
                let v = &r.violations[0];
                json!({ "seed": r.seed, "invariant": v.invariant, "message": v.message, "at": v.at,
                        "faults": r.faults, "repro": repro_command(scenario.name, r.seed, &args.faults) })
            })
            .collect();
        let summary = json!({
            "scenario": scenario.name,
            "seeds": reports.len(),
            "start": args.start,
            "jobs": jobs,
            "failures": failures,
            "events": events,
            "sim_seconds": sim_seconds,
            "wall_seconds": wall,
            "seeds_per_second": seeds_per_sec,
            "time_acceleration": acceleration,
            "fault_selection": args.faults,
            "faults": fired,
            "determinism_checked": checked,
            "nondeterministic": nondeterministic,
            "probes": probes,
            "probes_unreached": unreached,
        });
        writeln!(out, "{summary}")?;
    }
    Ok(if failures.is_empty() && nondeterministic.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn repro(args: &ReproArgs, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = scenario(&args.scenario)?;
    let started = Instant::now();
    let faults = parse_faults(&args.faults)?;
    let mut report = scenario.run_with(args.seed, args.trace, &faults);
    let wall = started.elapsed().as_secs_f64();
    if let Some(lines) = report.trace.take() {
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
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

fn list(out: &mut impl Write) -> Result<()> {
    writeln!(out, "Scenarios:")?;
    for s in drydock_scenarios::all() {
        writeln!(out, "  {:<32} {}", s.name, s.description)?;
    }
    writeln!(out, "\nInvariants (checked after every event):")?;
    for inv in INVARIANTS {
        writeln!(out, "  {:<32} {}", inv.name, inv.description)?;
    }
    writeln!(out, "\nEventual properties (checked after faults heal):")?;
    for (name, description) in EVENTUAL {
        writeln!(out, "  {name:<32} {description}")?;
    }
    writeln!(out, "\nProbes (interesting states a sweep should reach):")?;
    for (name, description) in PROBES {
        writeln!(out, "  {name:<32} {description}")?;
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

fn replay(args: &ReplayArgs, out: &mut impl Write) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let schedule: drydock_scenarios::schedule::Schedule =
        serde_json::from_str(&text).with_context(|| format!("{} is not a drydock schedule", args.file.display()))?;
    if schedule.version != drydock_scenarios::schedule::SCHEDULE_VERSION {
        bail!(
            "{}: schedule version {} is not supported (this drydock reads version {})",
            args.file.display(),
            schedule.version,
            drydock_scenarios::schedule::SCHEDULE_VERSION
        );
    }
    let mut report = schedule.replay(args.trace).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    if let Some(lines) = report.trace.take() {
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
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

fn shrink(args: &ShrinkArgs, out: &mut impl Write) -> Result<ExitCode> {
    let scenario = scenario(&args.scenario)?;
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
        "seed {} fails [{invariant}]: shrunk from {} to {} steps in {runs} runs; replay with: drydock sim replay {}",
        args.seed,
        schedule.steps(),
        small.steps(),
        path.display()
    )?;
    if args.json {
        let summary = json!({ "scenario": scenario.name, "seed": args.seed, "invariant": invariant,
            "steps_before": schedule.steps(), "steps_after": small.steps(), "runs": runs, "schedule": path });
        writeln!(out, "{summary}")?;
    }
    Ok(ExitCode::SUCCESS)
}
