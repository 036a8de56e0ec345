//! What a person reads at the end of a sweep: failures grouped, a last PASS or FAIL line, probes
//! only where they can be reached, repro commands that run as printed, `--jobs 0` refused, and
//! the commit in `--version`, and the figures `sim bench` measures.
#![allow(clippy::unwrap_used)]

mod output;

use output::{last_json, stderr, stdout};

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_drydock");

/// The binary with `PATH` set to `path` (where a `drydock` is, or is not, installed).
fn drydock_with_path(path: &Path, args: &[&str]) -> Output {
    Command::new(BIN).args(args).env("PATH", path).env_remove("DRYDOCK_COMMAND").output().unwrap()
}

fn drydock(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("DRYDOCK_COMMAND").output().unwrap()
}

/// The last line a person reads: the one before the JSON line with --json.
fn verdict(output: &Output) -> String {
    let text = stdout(output);
    text.lines().rfind(|line| !line.starts_with('{')).unwrap_or_default().to_string()
}

/// The commands printed after `repro: `.
fn repro_lines(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| line.trim().strip_prefix("repro: ")).map(str::to_string).collect()
}

/// A printed command's arguments for the binary: what follows `--` in `cargo run ... --`, else
/// what follows the program.
fn arguments(command: &str) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let from = words.iter().position(|w| *w == "--").map_or(1, |i| i + 1);
    words[from..].iter().map(|w| w.to_string()).collect()
}

#[test]
fn a_failing_sweep_groups_its_failures_and_ends_with_fail() {
    let out = drydock(&["sim", "run", "--scenario", "rdd-namespaces-buggy", "--seeds", "30", "--jobs", "2", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let summary = last_json(&out);

    // Every failing seed is still in `failures`; `groups` puts them together.
    let failures = summary["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 30);
    let groups = summary["groups"].as_array().unwrap();
    assert!(!groups.is_empty() && groups.len() < 5, "one bug, a few ways of failing at most: {groups:?}");
    let mut grouped: Vec<u64> = Vec::new();
    for group in groups {
        let seeds: Vec<u64> = group["seeds"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
        assert_eq!(group["count"].as_u64(), Some(seeds.len() as u64));
        assert_eq!(group["first_seed"].as_u64(), seeds.iter().min().copied());
        let first = failures.iter().find(|f| f["seed"] == group["first_seed"]).unwrap();
        assert_eq!(group["message"], first["message"], "the example is the first seed's message");
        assert_eq!(group["repro"], first["repro"]);
        assert_eq!(group["invariant"], first["invariant"]);
        grouped.extend(seeds);
    }
    grouped.sort_unstable();
    assert_eq!(grouped, (0..30).collect::<Vec<_>>(), "every failing seed in exactly one group");
    let counts: Vec<u64> = groups.iter().map(|g| g["count"].as_u64().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "the largest group first: {counts:?}");

    // A few lines per group, not one per seed.
    assert!(!text.contains("FAIL seed"), "{text}");
    assert_eq!(repro_lines(&text).len(), groups.len(), "{text}");
    let kinds = if groups.len() == 1 { "1 kind of failure".to_string() } else { format!("{} kinds", groups.len()) };
    assert!(text.contains(&format!("30 failing seeds, {kinds}")), "{text}");
    let biggest = &groups[0];
    assert!(
        text.contains(&format!("  [{}] {} seeds: ", biggest["invariant"].as_str().unwrap(), biggest["count"])),
        "{text}"
    );

    let last = verdict(&out);
    assert!(last.starts_with("FAIL: rdd-namespaces-buggy, 30 seeds (0..30), 30 failures ("), "{last}");
}

#[test]
fn a_passing_sweep_ends_with_pass_before_its_json() {
    let out = drydock(&["sim", "run", "--scenario", "basic", "--seeds", "12", "--jobs", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = last_json(&out);
    assert_eq!(summary["groups"], serde_json::json!([]));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    let before_json = &lines[lines.len() - 2];
    assert!(before_json.starts_with("PASS: basic, 12 seeds (0..12), 0 failures"), "{before_json}");

    // Without --json the verdict is the very last line.
    let out = drydock(&["sim", "run", "--scenario", "basic-calm", "--seeds", "3", "--start", "4", "--jobs", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let last = stdout(&out).lines().last().unwrap().to_string();
    assert!(last.starts_with("PASS: basic-calm, 3 seeds (4..7), 0 failures"), "{last}");
}

/// The repro command of a failing sweep, run as printed (the arguments after `cargo run ... --`
/// against the same binary), fails again with the same invariant.
#[test]
fn the_printed_repro_command_reproduces_the_failure() {
    let empty = tempfile::tempdir().unwrap();
    let args = ["sim", "run", "--scenario", "rdd-namespaces-buggy", "--seeds", "3", "--jobs", "1", "--json"];
    let out = drydock_with_path(empty.path(), &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let summary = last_json(&out);
    let printed = repro_lines(&stdout(&out));
    assert!(!printed.is_empty(), "{}", stdout(&out));
    for (command, group) in printed.iter().zip(summary["groups"].as_array().unwrap()) {
        // Not installed (no drydock on PATH), built by cargo: cargo runs it.
        assert!(command.starts_with("cargo run"), "{command}");
        assert!(command.contains(" -p drydock-cli -- sim repro --scenario rdd-namespaces-buggy --seed "), "{command}");
        assert_eq!(command, group["repro"].as_str().unwrap());
        let args = arguments(command);
        let again = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(again.status.code(), Some(1), "{command}: {}", stdout(&again));
        let invariant = group["invariant"].as_str().unwrap();
        let said = stdout(&again);
        assert!(said.contains(&format!("[{invariant}] ")), "{command} did not fail on {invariant}: {said}");
        assert!(said.contains(&format!("seed {}: FAILED", group["first_seed"])), "{said}");
    }
}

/// Installed (the first `drydock` on PATH is this binary), the commands start with `drydock`;
/// with DRYDOCK_COMMAND, with it; neither installed nor in a cargo target directory, with the
/// binary's path.
#[cfg(unix)]
#[test]
fn the_printed_commands_start_as_the_binary_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("drydock")).unwrap();
    let args = ["sim", "run", "--scenario", "rdd-namespaces-buggy", "--seeds", "1", "--jobs", "1"];
    let out = drydock_with_path(&bin, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        repro_lines(&stdout(&out)),
        vec!["drydock sim repro --scenario rdd-namespaces-buggy --seed 0".to_string()],
        "{}",
        stdout(&out)
    );

    // Told how: as told.
    let out = Command::new(BIN)
        .args(args)
        .env("PATH", &bin)
        .env("DRYDOCK_COMMAND", "cargo run --release -p drydock-cli --")
        .output()
        .unwrap();
    assert_eq!(
        repro_lines(&stdout(&out)),
        vec!["cargo run --release -p drydock-cli -- sim repro --scenario rdd-namespaces-buggy --seed 0".to_string()],
        "{}",
        stdout(&out)
    );

    // A copy elsewhere, not on PATH: its own path.
    let elsewhere = dir.path().join("opt");
    std::fs::create_dir(&elsewhere).unwrap();
    let copy = elsewhere.join("drydock");
    std::fs::copy(BIN, &copy).unwrap();
    let out = Command::new(&copy).args(args).env("PATH", &bin).env_remove("DRYDOCK_COMMAND").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let copy = copy.canonicalize().unwrap();
    assert_eq!(
        repro_lines(&stdout(&out)),
        vec![format!("{} sim repro --scenario rdd-namespaces-buggy --seed 0", copy.display())],
        "{}",
        stdout(&out)
    );
}

#[test]
fn zero_jobs_are_refused() {
    for args in [
        &["sim", "run", "--scenario", "basic-calm", "--seeds", "1", "--jobs", "0"][..],
        &["sim", "golden", "--jobs", "0"][..],
        &["sim", "bench", "--jobs", "0"][..],
    ] {
        let out = drydock(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        assert!(stderr(&out).contains("0 threads run nothing: give 1 or more"), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?} ran: {}", stdout(&out));
    }
    let out = drydock(&["sim", "run", "--scenario", "basic-calm", "--seeds", "1", "--jobs", "two"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("\"two\" is not a number of threads"), "{}", stderr(&out));
}

/// `sim bench --json` gives every figure the Speed table of docs/simulator.md quotes, measured: throughput,
/// peak memory, and a cost per event in CPU time at each size, after an unmeasured warm-up seed.
#[test]
fn bench_measures_throughput_memory_and_cost_per_event_by_size() {
    let args = ["sim", "bench", "--seeds", "6", "--repeat", "3", "--sizes", "2,6", "--events", "300", "--jobs", "1"];
    let out = drydock(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let bench = last_json(&out);
    for figure in ["seeds_per_second", "events_per_second", "sim_seconds_per_wall_second", "peak_rss_bytes"] {
        assert!(bench[figure].as_f64().unwrap() > 0.0, "{figure}: {bench}");
    }
    assert_eq!(bench["throughput_runs"].as_array().unwrap().len(), 3);
    assert_eq!(bench["cost_clock"], "CPU");
    let costs = bench["cost_per_event"].as_array().unwrap();
    let sizes: Vec<u64> = costs.iter().map(|c| c["size"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [2, 6]);
    assert_eq!(costs[0]["ratio_to_smallest"], 1.0);
    for cost in costs {
        let runs = cost["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{cost}");
        // Each run reaches the events asked for with whole seeds, and its CPU time is measured
        // finely enough to be non-zero however short the run.
        let mut per_event: Vec<f64> = runs
            .iter()
            .map(|run| {
                assert!(run["events"].as_u64().unwrap() >= 300, "{run}");
                run["cpu_seconds"].as_f64().unwrap() * 1e9 / run["events"].as_f64().unwrap()
            })
            .collect();
        assert!(per_event.iter().all(|ns| *ns > 0.0), "{cost}");
        per_event.sort_by(f64::total_cmp);
        // Within a rounding: JSON's decimal of a float may read back one step off.
        let median = cost["nanos_per_event"].as_f64().unwrap();
        assert!((median - per_event[1]).abs() <= median * 1e-9, "the median of three: {cost}");
        // The runs are alike (the same seeds), so the CPU clock splits them alike: none reads as
        // a fraction of another, as a worker thread's time not yet accounted would.
        assert!(per_event[2] < per_event[0] * 5.0, "runs of the same seeds differ fivefold: {cost}");
    }
    let progress = stderr(&out);
    assert!(progress.contains("warm-up, size 2: 1 seed") && progress.contains("warm-up, size 6: 1 seed"), "{progress}");
    let report = stdout(&out);
    assert!(report.contains("cost per event of scale, one thread, CPU time (median of 3)"), "{report}");
    assert!(report.contains("size     6"), "{report}");
    assert!(report.contains(", runs "), "each size's range of runs: {report}");
    // The host's caches, as Linux lists them: every machine this runs on has a first-level data
    // cache, and the report names the cpu's caches by level.
    if std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0").is_dir() {
        let caches = bench["caches"].as_array().unwrap();
        assert!(
            caches.iter().any(|c| c["level"] == 1 && c["type"] == "Data" && c["bytes"].as_u64().unwrap() > 0),
            "{bench}"
        );
        assert!(report.contains("host caches (cpu0): L1d "), "{report}");
    }
}

/// A scenario whose workload has no images, containers or log readers does not list the probes
/// of pulls, leases, containers and logs as never reached: it could not reach them. They stay in
/// `probes` with 0 hits, outside `probes_reachable`.
#[test]
fn probes_a_scenario_cannot_reach_are_not_called_unreached() {
    let out = drydock(&["sim", "run", "--scenario", "rdd-namespaces", "--seeds", "20", "--jobs", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = last_json(&out);
    let names = |field: &str| -> Vec<String> {
        summary[field].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let (reachable, unreached) = (names("probes_reachable"), names("probes_unreached"));
    let probes = summary["probes"].as_object().unwrap();
    for cannot in [
        "pull-cancelled",
        "pull-avoided-under-lease",
        "lease-contended",
        "lease-taken-over",
        "namespace-deleted-during-pull",
        "crash-during-create",
        "start-failed-for-good",
        "persistent-reused",
        "follower-ended-by-deletion",
    ] {
        assert!(!reachable.contains(&cannot.to_string()), "{cannot} is not reachable without pulls: {reachable:?}");
        assert!(!unreached.contains(&cannot.to_string()), "{cannot} called unreached: {unreached:?}");
        assert_eq!(probes[cannot], 0, "{cannot}");
    }
    for probe in &unreached {
        assert!(reachable.contains(probe), "{probe} unreached but not reachable");
    }
    for (name, hits) in probes {
        if hits.as_u64().unwrap() > 0 {
            assert!(reachable.contains(name), "{name} was reached, so reachable");
        }
    }
    let text = stdout(&out);
    let line = text.lines().find(|l| l.starts_with("probes: ")).unwrap();
    assert!(line.contains("more no seed could reach"), "{line}");
}

#[test]
fn version_names_the_commit() {
    let out = drydock(&["--version"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text.trim();
    let prefix = format!("drydock {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = line
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?} is not `{prefix}...)`"));
    let head = Command::new("git")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match head {
        Some(head) => {
            assert_eq!(head.len(), 12, "{head}");
            assert!(commit == head || commit == format!("{head}-dirty"), "{commit} is not HEAD {head}");
        }
        None => assert_eq!(commit, "unknown"),
    }
}
