//! A failing seed explains itself: `sim repro --trace` names who wrote what and why, as text
//! and as JSON lines, narrowed with --filter, with the engine's logs in simulated time.
#![allow(clippy::unwrap_used)]

mod output;

use output::stdout;

use serde_json::Value;
use std::process::{Command, Output};

fn drydock(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_drydock"));
    command.args(args).env_remove("DRYDOCK_LOG").env_remove("RUST_LOG");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

const RDD_SEED_0: [&str; 7] = ["sim", "repro", "--scenario", "rdd-namespaces-buggy", "--seed", "0", "--trace"];

#[test]
fn the_bad_write_of_the_rdd_bug_names_its_controller_key_trigger_and_the_owner_reference_it_set() {
    let out = drydock(&RDD_SEED_0, &[]);
    assert_eq!(out.status.code(), Some(1), "the buggy controller fails seed 0");
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // The update that went through (an earlier one of the seed's schedule may meet a conflict).
    let write = lines
        .iter()
        .position(|l| l.contains("store") && l.contains("update Namespace/rancher-desktop") && l.contains("-> ok"))
        .unwrap_or_else(|| panic!("no update of the namespace in:\n{text}"));
    let explained = lines[write + 1..].iter().take_while(|l| l.starts_with("    ")).copied().collect::<Vec<_>>();
    let explained = explained.join("\n");
    assert!(
        explained.contains("controller rdd-namespaces-buggy, key Namespace/rancher-desktop"),
        "the write names its controller and key:\n{explained}"
    );
    // The trigger: the delivery of the namespace, or a write of it by this process, with the
    // event that brought it.
    let trigger = explained.split(", after ").nth(1).unwrap_or_default();
    assert!(
        (trigger.starts_with("watch Added Namespace/rancher-desktop")
            || trigger.starts_with("own write Namespace/rancher-desktop"))
            && trigger.contains("(event "),
        "and its trigger:\n{explained}"
    );
    assert!(
        explained.contains("set metadata.ownerReferences to [Namespace/rancher-desktop"),
        "and the ownerReference it set:\n{explained}"
    );
    assert!(text.contains("[no-owner-cycles]"), "{text}");
}

#[test]
fn trace_json_gives_one_object_per_event_with_cause_and_diff() {
    let mut args = RDD_SEED_0.to_vec();
    args.push("--json");
    let out = drydock(&args, &[]);
    let text = stdout(&out);
    // The events, the human summary, then the summary as JSON.
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    let (summary, events) = lines.split_last().unwrap();
    let summary: Value = serde_json::from_str(summary).unwrap();
    let events: Vec<Value> = events.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len() as u64, summary["events"].as_u64().unwrap(), "one line per event, then the summary");
    // The bad write: the buggy controller's, setting the ownerReference.
    let sets_owner = |e: &&Value| {
        e["diff"].as_array().is_some_and(|diff| diff.iter().any(|c| c["path"] == "metadata.ownerReferences"))
    };
    let write = events
        .iter()
        .filter(|e| e["kind"] == "store-write" && e["object"] == "Namespace/rancher-desktop")
        .find(sets_owner);
    let write = write.unwrap_or_else(|| panic!("no store write of the namespace's ownerReferences: {events:?}"));
    assert_eq!(write["cause"]["controller"], "rdd-namespaces-buggy");
    assert_eq!(write["cause"]["key"], "Namespace/rancher-desktop");
    // Its trigger is an earlier event of the run: the namespace's delivery, or the reply to a
    // write of it.
    let trigger_seq = write["cause"]["trigger_seq"].as_u64().unwrap();
    let trigger = &events[trigger_seq as usize - 1];
    assert_eq!(trigger["seq"].as_u64(), Some(trigger_seq), "{trigger}");
    assert!(trigger_seq < write["seq"].as_u64().unwrap(), "{trigger}");
    assert!(trigger["kind"] == "deliver" || trigger["kind"] == "reply", "the trigger: {trigger}");
}

#[test]
fn filter_keeps_only_the_events_of_one_object() {
    let mut args = RDD_SEED_0.to_vec();
    args.extend(["--filter", "Namespace/rdd-mocks"]);
    let text = stdout(&drydock(&args, &[]));
    let events: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ") && l.contains('s')).collect();
    assert!(text.contains("client create Namespace/rdd-mocks"), "{text}");
    assert!(!text.contains("Namespace/rancher-desktop -> ok"), "the other namespace's events are left out:\n{text}");
    assert!(!events.is_empty());
}

#[test]
fn engine_logs_are_stamped_with_simulated_time_and_process_beside_their_event() {
    let args = ["sim", "repro", "--scenario", "basic", "--seed", "3", "--trace"];
    for variable in ["DRYDOCK_LOG", "RUST_LOG"] {
        let out = drydock(&args, &[(variable, "debug")]);
        let text = stdout(&out);
        let log = text
            .lines()
            .find(|l| l.starts_with("    | ") && l.contains("reconcile{"))
            .unwrap_or_else(|| panic!("{variable}=debug: no engine log line in the trace:\n{text}"));
        // `    | 5.071480s p0 DEBUG reconcile{controller="..." key=...}: ...`
        let stamp: Vec<&str> = log.trim_start_matches("    | ").split_whitespace().take(2).collect();
        assert!(stamp[0].ends_with('s') && stamp[0][..stamp[0].len() - 1].parse::<f64>().is_ok(), "{log}");
        assert!(stamp[1].starts_with('p'), "the process is named: {log}");
        assert!(log.contains("key="), "a reconcile's span names its key: {log}");
        assert!(!text.contains('\u{1b}'), "no colour codes when not a terminal");
        assert!(String::from_utf8_lossy(&out.stderr).trim().is_empty(), "nothing on another stream");
    }
    let quiet = stdout(&drydock(&args, &[]));
    assert!(!quiet.contains("    | "), "no logs unless asked for");
}

#[test]
fn explaining_a_run_changes_nothing_of_it() {
    let digest = |trace: bool| {
        let mut args = vec!["sim", "repro", "--scenario", "mixed", "--seed", "5", "--json"];
        if trace {
            args.push("--trace");
        }
        let text = stdout(&drydock(&args, &[("DRYDOCK_LOG", "debug")]));
        let summary: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        summary["digest"].as_str().unwrap().to_string()
    };
    assert_eq!(digest(true), digest(false));
}
