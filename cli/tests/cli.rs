//! The `drydock` binary, run as a user would.
#![allow(clippy::unwrap_used)]

mod output;

use output::last_json;

use std::process::{Command, Output};

fn drydock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_drydock")).args(args).output().unwrap()
}

#[test]
fn sim_run_json_summary() {
    let out = drydock(&["sim", "run", "--scenario", "basic", "--seeds", "40", "--start", "5", "--jobs", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = last_json(&out);
    assert_eq!(summary["scenario"], "basic");
    assert_eq!(summary["seeds"], 40);
    assert_eq!(summary["failures"].as_array().unwrap().len(), 0);
    assert!(summary["events"].as_u64().unwrap() > 1000);
    assert!(summary["sim_seconds"].as_f64().unwrap() > 40.0);
    assert!(summary["wall_seconds"].as_f64().unwrap() > 0.0);
    // Every probe is reached (hits > 0), listed as unreached, or one no seed could reach: among
    // the reachable ones, exactly those not reached are unreached.
    let probes = summary["probes"].as_object().unwrap();
    let list =
        |field: &str| -> Vec<&str> { summary[field].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect() };
    let (unreached, reachable) = (list("probes_unreached"), list("probes_reachable"));
    assert!(probes.len() >= 10, "{probes:?}");
    assert!(reachable.len() < probes.len(), "basic has no logs to read: {reachable:?}");
    for (name, hits) in probes {
        let reached = hits.as_u64().unwrap() > 0;
        assert_eq!(!reached && reachable.contains(&name.as_str()), unreached.contains(&name.as_str()), "{name}");
        assert!(!reached || reachable.contains(&name.as_str()), "{name} reached, so reachable");
    }
    assert!(probes.values().any(|h| h.as_u64().unwrap() > 0), "basic reaches some probe");
}

#[test]
fn sim_repro_json_and_determinism() {
    let out = drydock(&["sim", "repro", "--scenario", "basic", "--seed", "11", "--check-determinism", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let report = last_json(&out);
    assert_eq!(report["ok"], true);
    assert_eq!(report["deterministic"], true);
    assert_eq!(report["seed"], 11);
    assert_eq!(report["violations"].as_array().unwrap().len(), 0);
    assert_eq!(report["digest"].as_str().unwrap().len(), 64);
    let again = last_json(&drydock(&["sim", "repro", "--scenario", "basic", "--seed", "11", "--json"]));
    assert_eq!(report["digest"], again["digest"], "same seed, same digest across processes");
    let other = last_json(&drydock(&["sim", "repro", "--scenario", "basic", "--seed", "12", "--json"]));
    assert_ne!(report["digest"], other["digest"]);
}

#[test]
fn sim_repro_trace_prints_events() {
    let out = drydock(&["sim", "repro", "--scenario", "basic", "--seed", "2", "--trace"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().count() > 20);
    assert!(stdout.contains("client create Namespace/"));
}

#[test]
fn sim_list_names_scenarios_invariants_and_faults() {
    let out = drydock(&["sim", "list"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for name in [
        "basic",
        "unique-owner-uid",
        "no-owner-cycles",
        "no-leak-after-namespace-delete",
        "convergence",
        "uncertain-create",
        "stale-cache",
    ] {
        assert!(stdout.contains(name), "{name} missing from:\n{stdout}");
    }
}

#[test]
fn unknown_scenario_is_a_clear_error() {
    let out = drydock(&["sim", "run", "--scenario", "nope", "--seeds", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown scenario \"nope\"") && stderr.contains("basic"), "{stderr}");
}

#[test]
fn replay_runs_a_saved_schedule_and_shrink_refuses_a_passing_seed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/regressions/pull-without-lease.json");
    let out = drydock(&["sim", "replay", dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let report = last_json(&out);
    assert_eq!(report["ok"], true);
    assert_eq!(report["scenario"], "pull-storm");

    let out = drydock(&["sim", "shrink", "--scenario", "basic", "--seed", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not fail"));

    let bad = tempfile::Builder::new().prefix("drydock-not-a-schedule-").suffix(".json").tempfile().unwrap();
    std::fs::write(bad.path(), "{}").unwrap();
    let out = drydock(&["sim", "replay", bad.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a drydock schedule"));
}

/// Issue 6's acceptance sweep: 2,000 seeds of `mixed` under the default swarm plans pass, every
/// fault kind fires somewhere, every probe is reached, and the determinism self-check ran.
#[test]
fn the_default_sweep_fires_every_fault_kind_and_reaches_every_probe() {
    let out = drydock(&["sim", "run", "--scenario", "mixed", "--seeds", "2000", "--json"]);
    let summary = last_json(&out);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let faults = summary["faults"].as_object().unwrap();
    let list = String::from_utf8_lossy(&drydock(&["sim", "list"]).stdout).to_string();
    assert!(faults.len() >= 16, "{faults:?}");
    for (kind, count) in faults {
        assert!(count.as_u64().unwrap() > 0, "fault kind {kind} never fired");
        assert!(list.contains(kind.as_str()), "{kind} is not listed by sim list");
    }
    assert_eq!(summary["probes_unreached"].as_array().unwrap().len(), 0, "{}", summary["probes"]);
    // ...and every probe is one it can reach: the reachable ones are not a way to hide any.
    assert_eq!(summary["probes_reachable"].as_array().unwrap().len(), summary["probes"].as_object().unwrap().len());
    // The efficiency checker ran: the most work one object did in a minute after the heal is
    // reported, and within its budgets (or the sweep would have failed).
    let work = &summary["work_after_heal"];
    assert!((1..=60).contains(&work["runtime_requests"].as_u64().unwrap()), "{work}");
    assert!((1..=40).contains(&work["store_writes"].as_u64().unwrap()), "{work}");
    assert!(list.contains("efficiency") && list.contains("admission-before-runtime"), "{list}");
    assert_eq!(summary["determinism_checked"], 100, "5% of the seeds run twice");
    assert_eq!(summary["nondeterministic"].as_array().unwrap().len(), 0);
}

/// A failing seed's schedule (with its fault decisions) replays to the seed's digest, and the
/// buggy example shrinks to a handful of steps.
#[test]
fn failing_seeds_are_saved_replayed_and_shrunk() {
    let dir = std::env::temp_dir().join(format!("drydock-schedules-{}", std::process::id()));
    let out = drydock(&[
        "sim",
        "run",
        "--scenario",
        "rdd-namespaces-buggy",
        "--seeds",
        "30",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "the buggy example fails");
    let failures = last_json(&out)["failures"].as_array().unwrap().clone();
    assert!(!failures.is_empty());
    let seed = failures[0]["seed"].as_u64().unwrap();
    assert!(failures[0]["repro"].as_str().unwrap().contains(" sim repro --scenario rdd-namespaces-buggy --seed "));
    let file = dir.join(format!("rdd-namespaces-buggy-{seed}.json"));
    let replayed = last_json(&drydock(&["sim", "replay", file.to_str().unwrap(), "--json"]));
    let seed_arg = seed.to_string();
    let repro =
        last_json(&drydock(&["sim", "repro", "--scenario", "rdd-namespaces-buggy", "--seed", &seed_arg, "--json"]));
    assert_eq!(replayed["digest"], repro["digest"], "a schedule replays to its seed's digest");
    assert_eq!(replayed["ok"], false);

    let out = drydock(&[
        "sim",
        "shrink",
        "--scenario",
        "rdd-namespaces-buggy",
        "--seed",
        &seed_arg,
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shrunk = last_json(&out);
    let after = shrunk["steps_after"].as_u64().unwrap();
    assert!(after <= 20 && after <= shrunk["steps_before"].as_u64().unwrap(), "{shrunk}");
    let small = last_json(&drydock(&["sim", "replay", shrunk["schedule"].as_str().unwrap(), "--json"]));
    assert_eq!(small["violations"][0]["invariant"], shrunk["invariant"], "the shrunk schedule fails the same way");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sim_run_duration_runs_until_the_time_is_up() {
    let out =
        drydock(&["sim", "run", "--scenario", "basic", "--duration", "3s", "--start", "7", "--jobs", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = last_json(&out);
    assert_eq!(summary["stopped"], "time-up");
    let seeds = summary["seeds"].as_u64().unwrap();
    assert!(seeds > 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("seeds 7..{} ran", 7 + seeds)), "{stdout}");
    for bad in ["0s", "10", "ten minutes", "5x"] {
        let out = drydock(&["sim", "run", "--duration", bad]);
        assert_eq!(out.status.code(), Some(2), "--duration {bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a duration"), "--duration {bad}");
    }
}

#[test]
fn ctrl_c_ends_a_sweep_with_the_summary_and_saves_failing_schedules() {
    let dir = std::env::temp_dir().join(format!("drydock-ctrl-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // A scenario that fails by design, so the schedules found before Ctrl-C are there to save.
    let child = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .args(["sim", "run", "--scenario", "rdd-namespaces-buggy", "--seeds", "100000000", "--jobs", "1", "--json"])
        .arg("--out")
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "failures found: exit 1; {}", String::from_utf8_lossy(&out.stderr));
    let summary = last_json(&out);
    assert_eq!(summary["stopped"], "interrupted");
    let failures = summary["failures"].as_array().unwrap().len();
    assert!(failures > 0);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    let with = |ext: &str| files.iter().filter(|path| path.extension().is_some_and(|e| e == ext)).count();
    assert_eq!(with("json"), failures, "one schedule per failing seed found before the interrupt");
    assert_eq!(with("html"), failures.min(20), "a report beside each of the first 20 schedules");
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/simulator.md's `DRYDOCK_BUG=lease-expiry-by-timestamps ... sim run --scenario pull-storm --seeds 300`:
/// with the switches built in (the workspace's test build has them), the sweep catches the bug put
/// back; without them the binary refuses rather than run a sweep that tests nothing.
#[test]
fn a_bug_put_back_with_drydock_bug_is_caught_by_its_sweep() {
    let run = |bug: &str| {
        Command::new(env!("CARGO_BIN_EXE_drydock"))
            .env("DRYDOCK_BUG", bug)
            .args(["sim", "run", "--scenario", "pull-storm", "--seeds", "300"])
            .output()
            .unwrap()
    };
    let out = run("lease-expiry-by-timestamps");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}");
    if drydock_engine::bugs::AVAILABLE {
        assert!(stderr.contains("bug switch on: lease-expiry-by-timestamps"), "{stderr}");
        assert!(stdout.contains("live holders"), "the sweep catches two holders of one lease: {stdout}");
        let unknown = run("no-such-bug");
        assert!(!unknown.status.success());
        let stderr = String::from_utf8_lossy(&unknown.stderr);
        assert!(stderr.contains("names no bug switch") && stderr.contains("gc-deletes-without-version"), "{stderr}");
    } else {
        assert!(stderr.contains("built without bug switches"), "{stderr}");
    }
}
