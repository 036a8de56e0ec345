//! `drydock sim bench`: how fast the simulator runs, and how the cost of an event grows with the
//! size of the world. Every figure is the median of repeated runs in this one process.
//!
//! - Throughput: a sweep of a scenario (`mixed` by default) on all cores, as `sim run` does but
//!   without the determinism self-check: seeds/s, events/s, simulated seconds per wall second,
//!   and the sweep's peak resident memory.
//! - Cost per event: scenario `scale` at world sizes 10, 100 and 1,000 containers, run on the
//!   bench's own thread and measured in that thread's CPU time (`clock_gettime`, in
//!   nanoseconds), which a busy machine disturbs far less than wall time: nanoseconds per event,
//!   and the ratio of the largest size to the smallest. One unmeasured seed of every size warms
//!   up first, so that no measurement pays for the process's heap growing to a big world's size
//!   for the first time. The runs go in rounds of every size, so that a busy spell weighs on all
//!   sizes.
//!
//! - The host's CPU caches (Linux's `/sys`), since the cost at 1,000 containers depends on them:
//!   a 1,000-container world's heap (about 26 MB) fits a 32 MiB last-level cache only while
//!   other tenants of the machine leave it room, so the same binary measures from about 1.1x to
//!   1.6x on one host as its neighbours come and go (see docs/performance.md).
//!
//! *Caveats*: resident memory comes from Linux's `/proc` and the caches from its `/sys`, and both
//! are absent elsewhere; off Unix the wall time stands in for the CPU time.

use anyhow::{Context as _, Result, bail};
use clap::Args;
use drydock_scenarios::{FaultSelection, Scenario};
use drydock_sim::sweep::SweepConfig;
use serde_json::json;
use std::io::Write;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// The scenario whose throughput is measured.
    #[arg(long, default_value = "mixed")]
    scenario: String,
    /// Seeds per throughput run.
    #[arg(long, default_value_t = 1000)]
    seeds: u64,
    /// Runs of each measurement; the figures are their medians.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Worker threads for the throughput runs, 1 or more (default: all cores).
    #[arg(long, value_parser = crate::jobs::parse, value_name = "N")]
    jobs: Option<usize>,
    /// World sizes (containers of scenario `scale`) whose cost per event is measured.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    sizes: Vec<usize>,
    /// Events each cost-per-event run aims for (it runs whole seeds until it has them).
    #[arg(long, default_value_t = 200_000)]
    events: u64,
    /// Print one JSON object as the last line of stdout.
    #[arg(long)]
    json: bool,
}

/// One measured run.
#[derive(Clone, Copy, Debug)]
struct Sample {
    seeds: u64,
    events: u64,
    sim_seconds: f64,
    wall_seconds: f64,
    cpu_seconds: Option<f64>,
}

impl Sample {
    fn seeds_per_second(&self) -> f64 {
        self.seeds as f64 / self.wall_seconds.max(1e-9)
    }
    fn events_per_second(&self) -> f64 {
        self.events as f64 / self.wall_seconds.max(1e-9)
    }
    fn acceleration(&self) -> f64 {
        self.sim_seconds / self.wall_seconds.max(1e-9)
    }
    /// Nanoseconds of CPU (else wall) time per event.
    fn nanos_per_event(&self) -> f64 {
        self.cpu_seconds.unwrap_or(self.wall_seconds) * 1e9 / self.events.max(1) as f64
    }
}

pub fn bench(args: &BenchArgs, scenarios: &[Scenario], out: &mut impl Write) -> Result<()> {
    if args.repeat == 0 || args.seeds == 0 || args.events == 0 {
        bail!("--repeat, --seeds and --events must be at least 1");
    }
    let find = |name: &str| {
        scenarios.iter().find(|s| s.name == name).with_context(|| {
            let known: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            format!("unknown scenario {name:?}; known scenarios: {}", known.join(", "))
        })
    };
    let scenario = find(&args.scenario)?;
    let scale = find("scale")?;
    let jobs = crate::jobs::or_all_cores(args.jobs);

    eprintln!("throughput: {} seeds of {} on {jobs} threads, {} runs", args.seeds, scenario.name, args.repeat);
    reset_peak_memory();
    let mut throughput = Vec::new();
    for run in 0..args.repeat {
        let sample = sweep(scenario, 0, args.seeds, jobs);
        eprintln!(
            "  run {}: {:.1} seeds/s, {:.0} events/s",
            run + 1,
            sample.seeds_per_second(),
            sample.events_per_second()
        );
        throughput.push(sample);
    }
    let peak = peak_memory_bytes();

    // Each round measures every size once, so that a spell of a busy machine weighs on all sizes
    // alike rather than on whichever size it fell on.
    let mut scaling = Vec::new();
    for &size in &args.sizes {
        let sized = scale.with_size(size).map_err(|e| anyhow::anyhow!("--sizes: {e}"))?;
        let seeds = seeds_for(&sized, args.events);
        scaling.push((size, seeds, sized, Vec::new()));
    }
    let plan: Vec<String> = scaling.iter().map(|(size, seeds, _, _)| format!("size {size}: {seeds} seeds")).collect();
    eprintln!("cost per event: scale on one thread, {} rounds of every size ({})", args.repeat, plan.join(", "));
    for (size, _, sized, _) in &scaling {
        let warm = on_this_thread(sized, 1);
        eprintln!("  warm-up, size {size}: 1 seed, {} events, not measured", warm.events);
    }
    for run in 0..args.repeat {
        for (size, seeds, sized, samples) in &mut scaling {
            let sample = on_this_thread(sized, *seeds);
            eprintln!(
                "  round {}, size {size}: {:.0} ns/event over {} events",
                run + 1,
                sample.nanos_per_event(),
                sample.events
            );
            samples.push(sample);
        }
    }

    let median_of = |samples: &[Sample], f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
    let seeds_per_second = median_of(&throughput, Sample::seeds_per_second);
    let events_per_second = median_of(&throughput, Sample::events_per_second);
    let acceleration = median_of(&throughput, Sample::acceleration);
    writeln!(
        out,
        "throughput of {} ({} seeds, {jobs} threads, median of {}):",
        scenario.name, args.seeds, args.repeat
    )?;
    writeln!(out, "  seeds/s                 {seeds_per_second:>12.1}")?;
    writeln!(out, "  events/s                {events_per_second:>12.0}")?;
    writeln!(out, "  simulated s per wall s  {acceleration:>12.0}")?;
    match peak {
        Some(bytes) => writeln!(out, "  peak resident memory    {:>9.1} MiB", bytes as f64 / (1024.0 * 1024.0))?,
        None => writeln!(out, "  peak resident memory    unknown (no /proc)")?,
    }
    let measured_in_cpu = scaling.iter().all(|(.., samples)| samples.iter().all(|s| s.cpu_seconds.is_some()));
    let clock = if measured_in_cpu { "CPU" } else { "wall" };
    writeln!(out, "cost per event of scale, one thread, {clock} time (median of {}):", args.repeat)?;
    let costs: Vec<(usize, u64, f64, &Vec<Sample>)> = scaling
        .iter()
        .map(|(size, seeds, _, samples)| (*size, *seeds, median_of(samples, Sample::nanos_per_event), samples))
        .collect();
    let base = costs.first().map(|c| c.2).filter(|c| *c > 0.0);
    for (size, seeds, cost, samples) in &costs {
        let events = samples.first().map_or(0, |s| s.events);
        let ratio = base.map_or(String::new(), |b| format!("  {:.2}x", cost / b));
        let spread = spread(samples);
        writeln!(out, "  size {size:>5}  {cost:>8.0} ns/event  ({seeds} seeds, {events} events{spread}){ratio}")?;
    }
    let caches = host_caches();
    if !caches.is_empty() {
        let named: Vec<String> = caches.iter().map(Cache::describe).collect();
        writeln!(out, "host caches (cpu0): {}", named.join(", "))?;
    }
    if args.json {
        let samples = |s: &[Sample]| -> Vec<serde_json::Value> {
            s.iter()
                .map(|s| {
                    json!({ "seeds": s.seeds, "events": s.events, "sim_seconds": s.sim_seconds,
                        "wall_seconds": s.wall_seconds, "cpu_seconds": s.cpu_seconds })
                })
                .collect()
        };
        let sizes: Vec<serde_json::Value> = costs
            .iter()
            .map(|(size, seeds, cost, runs)| {
                json!({ "size": size, "seeds": seeds, "nanos_per_event": cost,
                    "ratio_to_smallest": base.map(|b| cost / b), "runs": samples(runs) })
            })
            .collect();
        let summary = json!({
            "scenario": scenario.name,
            "seeds": args.seeds,
            "jobs": jobs,
            "repeat": args.repeat,
            "seeds_per_second": seeds_per_second,
            "events_per_second": events_per_second,
            "sim_seconds_per_wall_second": acceleration,
            "peak_rss_bytes": peak,
            "throughput_runs": samples(&throughput),
            "cost_clock": clock,
            "cost_per_event": sizes,
            "caches": caches.iter().map(Cache::to_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{summary}")?;
    }
    Ok(())
}

/// Run seeds `start..start + seeds` of `scenario` on `jobs` threads, measured.
fn sweep(scenario: &Scenario, start: u64, seeds: u64, jobs: usize) -> Sample {
    let config = SweepConfig { start, seeds, shard: None, jobs, check_every: None, stop: None };
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let report = scenario.sweep(&config, &FaultSelection::Default, |_| {});
    let cpu = cpu.zip(cpu_seconds()).map(|(before, after)| after - before);
    Sample {
        seeds: report.seeds() as u64,
        events: report.events(),
        sim_seconds: report.sim_seconds(),
        wall_seconds: wall.elapsed().as_secs_f64(),
        cpu_seconds: cpu,
    }
}

/// Run seeds `0..seeds` of `scenario` on this thread, measured in this thread's CPU time.
///
/// *Why not a sweep of one job*: a sweep runs its seeds on a worker thread, and a thread's CPU
/// time reaches the process's total only when the kernel next accounts it (a tick, a switch, its
/// exit), which can come after the join: runs of a few milliseconds read as a tenth of their cost
/// or ten times it.
fn on_this_thread(scenario: &Scenario, seeds: u64) -> Sample {
    let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
    let (mut events, mut sim_nanos) = (0, 0u64);
    for seed in 0..seeds {
        let run = scenario.run(seed, false);
        events += run.events;
        sim_nanos = sim_nanos.saturating_add(run.sim_nanos);
    }
    let cpu = cpu.zip(thread_cpu_seconds()).map(|(before, after)| after - before);
    Sample {
        seeds,
        events,
        sim_seconds: sim_nanos as f64 / 1e9,
        wall_seconds: wall.elapsed().as_secs_f64(),
        cpu_seconds: cpu,
    }
}

/// How many seeds of `scenario` make about `events` events (from a first seed's count).
fn seeds_for(scenario: &Scenario, events: u64) -> u64 {
    let first = scenario.run(0, false).events.max(1);
    events.div_ceil(first).max(1)
}

/// `, runs 2539 to 2590`: the range of several runs' cost per event (nothing for one run).
fn spread(samples: &[Sample]) -> String {
    let costs = samples.iter().map(Sample::nanos_per_event);
    let (low, high) = costs.fold((f64::INFINITY, 0.0f64), |(low, high), c| (low.min(c), high.max(c)));
    if samples.len() < 2 { String::new() } else { format!(", runs {low:.0} to {high:.0}") }
}

/// One of the CPU caches of the bench's first CPU.
#[derive(Debug, PartialEq)]
struct Cache {
    level: u32,
    /// `Data`, `Instruction` or `Unified`.
    kind: String,
    bytes: u64,
    /// How many CPUs share it (of those the kernel lists).
    shared_by: usize,
}

impl Cache {
    fn describe(&self) -> String {
        let kind = match self.kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        let size = if self.bytes >= 1 << 20 && self.bytes.is_multiple_of(1 << 20) {
            format!("{} MiB", self.bytes >> 20)
        } else {
            format!("{} KiB", self.bytes >> 10)
        };
        let shared = if self.shared_by > 1 { format!(" (shared by {} CPUs)", self.shared_by) } else { String::new() };
        format!("L{}{kind} {size}{shared}", self.level)
    }

    fn to_json(&self) -> serde_json::Value {
        json!({ "level": self.level, "type": self.kind, "bytes": self.bytes, "shared_by": self.shared_by })
    }
}

/// The caches of cpu0, from Linux's `/sys/devices/system/cpu/cpu0/cache`; none where that is
/// absent or unreadable (the figures are printed without them).
fn host_caches() -> Vec<Cache> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |index: &std::path::Path, file: &str| std::fs::read_to_string(index.join(file)).ok();
    let mut caches: Vec<Cache> = (0..16)
        .map_while(|i| {
            let index = dir.join(format!("index{i}"));
            index.is_dir().then_some(index)
        })
        .filter_map(|index| {
            Some(Cache {
                level: read(&index, "level")?.trim().parse().ok()?,
                kind: read(&index, "type")?.trim().to_string(),
                bytes: cache_bytes(&read(&index, "size")?)?,
                shared_by: read(&index, "shared_cpu_list").map_or(1, |list| cpus_in_list(&list)),
            })
        })
        .collect();
    caches.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    caches
}

/// `48K`, `1024K`, `32M`: a size as `/sys` writes it.
fn cache_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// `0-1`, `0,2,4-7`: how many CPUs a `/sys` CPU list names.
fn cpus_in_list(list: &str) -> usize {
    list.trim()
        .split(',')
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once('-') {
            Some((first, last)) => match (first.parse::<usize>(), last.parse::<usize>()) {
                (Ok(first), Ok(last)) if last >= first => last - first + 1,
                _ => 1,
            },
            None => 1,
        })
        .sum::<usize>()
        .max(1)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// CPU time this process has used, user and system, all its threads (those ended included),
/// in nanoseconds: `/proc/self/stat` would count it in ticks of 10 ms.
#[cfg(unix)]
fn cpu_seconds() -> Option<f64> {
    Some(seconds(rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime)))
}

/// CPU time this thread has used, user and system, in nanoseconds.
#[cfg(unix)]
fn thread_cpu_seconds() -> Option<f64> {
    Some(seconds(rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime)))
}

#[cfg(unix)]
fn seconds(time: rustix::time::Timespec) -> f64 {
    time.tv_sec as f64 + time.tv_nsec as f64 * 1e-9
}

#[cfg(not(unix))]
fn cpu_seconds() -> Option<f64> {
    None
}

#[cfg(not(unix))]
fn thread_cpu_seconds() -> Option<f64> {
    None
}

/// Start measuring peak resident memory from now (Linux: `clear_refs` 5 resets `VmHWM`).
fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident memory since [`reset_peak_memory`], in bytes.
fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_as_sys_writes_them() {
        assert_eq!(cache_bytes("48K\n"), Some(48 * 1024));
        assert_eq!(cache_bytes("32768K"), Some(32 << 20));
        assert_eq!(cache_bytes("2M"), Some(2 << 20));
        assert_eq!(cache_bytes("512"), Some(512));
        assert_eq!(cache_bytes("12Q"), None);
        assert_eq!(cache_bytes(""), None);
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(cpus_in_list("0\n"), 1);
        assert_eq!(cpus_in_list("0-1"), 2);
        assert_eq!(cpus_in_list("0,2,4-7"), 6);
        assert_eq!(cpus_in_list(""), 1);
    }

    #[test]
    fn caches_are_named_by_level_kind_and_size() {
        let l1 = Cache { level: 1, kind: "Data".into(), bytes: 48 << 10, shared_by: 1 };
        let l3 = Cache { level: 3, kind: "Unified".into(), bytes: 32 << 20, shared_by: 2 };
        assert_eq!(l1.describe(), "L1d 48 KiB");
        assert_eq!(l3.describe(), "L3 32 MiB (shared by 2 CPUs)");
    }

    #[test]
    fn a_spread_names_the_fastest_and_slowest_run() {
        let run = |cpu| Sample { seeds: 1, events: 1000, sim_seconds: 1.0, wall_seconds: 1.0, cpu_seconds: Some(cpu) };
        assert_eq!(spread(&[run(0.002), run(0.0025), run(0.0021)]), ", runs 2000 to 2500");
        assert_eq!(spread(&[run(0.002)]), "");
    }
}
