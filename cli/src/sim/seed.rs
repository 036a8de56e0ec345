//! `drydock sim repro`, `report`, `replay` and `shrink`: one seed or one saved schedule, its
//! trace, its report page, and the schedule files a sweep and the shrinker write.

use super::{Catalog, ReplayArgs, ReportArgs, ReproArgs, ShrinkArgs, parse_faults};
use anyhow::{Context as _, Result, bail};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

pub(super) fn repro(args: &ReproArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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

pub(super) fn write_schedule(path: &std::path::Path, schedule: &drydock_scenarios::schedule::Schedule) -> Result<()> {
    let json = serde_json::to_string_pretty(schedule)?;
    std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))
}

/// Write the page of `run` (which kept its trace) to `path`; its size in bytes.
pub(super) fn write_report(path: &Path, scenario: &str, run: &drydock_sim::RunReport) -> Result<usize> {
    let html = drydock_sim::timeline::render_html(&drydock_sim::trace::ExplainedRun::from_report(scenario, run));
    std::fs::write(path, &html).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(html.len())
}

pub(super) fn report(args: &ReportArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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

pub(super) fn replay(args: &ReplayArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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

pub(super) fn shrink(args: &ShrinkArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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
