//! `drydock sim run` and `drydock sim merge`: a seed sweep (its stop signal, progress, the files
//! of its failing seeds) and the summary a sweep or a merge of shards prints, down to its last
//! line, PASS or FAIL.

use super::seed::{write_report, write_schedule};
use super::{Catalog, MergeArgs, RunArgs, parse_faults, scenario_arg};
use anyhow::{Context as _, Result, bail};
use drydock_sim::sweep::{SweepConfig, SweepSummary};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

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

pub(super) fn sweep(args: &RunArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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

pub(super) fn merge(args: &MergeArgs, catalog: &Catalog<'_>, out: &mut impl Write) -> Result<ExitCode> {
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

/// How many failing seeds of a sweep `sim run --out` writes a report page for.
const REPORTS_PER_SWEEP: usize = 20;
