//! Sharded sweeps as a CI matrix runs them: `drydock sim run --shard K/N --json > FILE` per job,
//! then `drydock sim merge FILE...`, and the JUnit XML of `--junit`.
#![allow(clippy::unwrap_used)]

mod output;

use output::{last_json, stderr, stdout};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn drydock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_drydock")).args(args).output().unwrap()
}

/// The fields allowed to differ between a merge and the unsharded run: timings, threads, and
/// what the merge was made of.
fn untimed(mut summary: Value) -> Value {
    for field in ["wall_seconds", "seeds_per_second", "time_acceleration", "jobs", "merged_from"] {
        summary.as_object_mut().unwrap().remove(field).unwrap_or_else(|| panic!("{field} missing"));
    }
    summary
}

/// Run shard `k` of `n` of `range` (`--start`, `--seeds` and the rest), save its stdout as a CI job
/// would, and return the file.
fn run_shard(dir: &Path, range: &[&str], k: u64, n: u64) -> PathBuf {
    let shard = format!("{k}/{n}");
    let out = drydock(&[&["sim", "run"], range, &["--shard", &shard, "--json"]].concat());
    assert!(matches!(out.status.code(), Some(0 | 1)), "shard {shard}: {}", stderr(&out));
    let file = dir.join(format!("shard-{k}.json"));
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

fn merge(files: &[PathBuf], extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["sim", "merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(extra);
    drydock(&args)
}

/// The summary lines a run and a merge print alike: all but the last line of the summary, which
/// holds the timings.
fn summary_lines(stdout: &str) -> Vec<&str> {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('{')).collect();
    let last = lines.iter().rposition(|l| l.starts_with("scenario ")).unwrap();
    lines[..last].to_vec()
}

/// Run `range` whole and in `n` shards, merge the shards and check that the merge says what the
/// whole run said; returns the merged summary.
fn merged_equals_whole(range: &[&str], n: u64, exit_code: i32) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let whole = drydock(&[&["sim", "run"], range, &["--json"]].concat());
    assert_eq!(whole.status.code(), Some(exit_code), "{}", stderr(&whole));
    let files: Vec<PathBuf> = (1..=n).rev().map(|k| run_shard(dir.path(), range, k, n)).collect();
    let junit = dir.path().join("junit.xml");
    let merged = merge(&files, &["--json", "--junit", junit.to_str().unwrap()]);
    assert_eq!(merged.status.code(), Some(exit_code), "{}", stderr(&merged));
    let (summary, expected) = (last_json(&merged), last_json(&whole));
    assert_eq!(summary["shard"], Value::Null);
    assert_eq!(summary["merged_from"]["shards"], n);
    assert_eq!(summary["merged_from"]["missing"], serde_json::json!([]));
    assert_eq!(expected["merged_from"], Value::Null);
    assert_eq!(untimed(summary.clone()), untimed(expected), "the merge of {n} shards differs from the whole run");
    assert_eq!(summary_lines(&stdout(&merged)), summary_lines(&stdout(&whole)));
    let last = stdout(&merged).lines().rev().nth(1).unwrap().to_string();
    assert!(last.contains(&format!("merged from {n} shards")), "{last}");
    (summary, dir)
}

#[test]
fn merged_shards_equal_the_unsharded_sweep() {
    // 40 seeds from 5, 5% of them checked for determinism: seeds 5 and 25, in shards 1 and 3 of 3
    // (a shard that sampled from its own first seed would check others).
    let range = ["--scenario", "basic", "--start", "5", "--seeds", "40", "--jobs", "2"];
    let (summary, dir) = merged_equals_whole(&range, 3, 0);
    assert_eq!(summary["determinism_checked"], 2);
    assert!(summary["events"].as_u64().unwrap() > 1000);

    let shard: Value = {
        let text = std::fs::read_to_string(dir.path().join("shard-2.json")).unwrap();
        let out = text.lines().last().unwrap().to_string();
        assert!(text.contains("shard 2/3 of seeds 5..45: 13 seeds, 6, 9, ..., 42"), "{text}");
        serde_json::from_str(&out).unwrap()
    };
    assert_eq!(shard["shard"], serde_json::json!({"index": 2, "count": 3, "first_seed": 6, "last_seed": 42}));
    assert_eq!(
        (shard["seeds"].as_u64(), shard["start"].as_u64(), shard["end"].as_u64()),
        (Some(13), Some(5), Some(45))
    );
    assert_eq!(shard["determinism_checked"], 0, "seeds 5 and 25 are not shard 2's");
}

#[test]
fn merged_failing_shards_equal_the_unsharded_sweep_and_write_junit() {
    // Every seed of the buggy example fails, and a failing seed is always run twice.
    let range = ["--scenario", "rdd-namespaces-buggy", "--seeds", "30", "--jobs", "2"];
    let (summary, dir) = merged_equals_whole(&range, 3, 1);
    let failures = summary["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 30);
    let seeds: Vec<u64> = failures.iter().map(|f| f["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, (0..30).collect::<Vec<_>>(), "failures ordered by seed");
    assert_eq!(summary["determinism_checked"], 30);
    // The merge groups the failures as the whole run does (the JSON is equal, above): by
    // invariant and message, every seed in one group.
    let groups = summary["groups"].as_array().unwrap();
    let counts: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert!(!groups.is_empty() && groups.len() < 30, "{groups:?}");
    assert_eq!(counts, 30);
    assert_eq!(groups.iter().map(|g| g["first_seed"].as_u64().unwrap()).min(), Some(0));

    let xml = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("not well-formed XML ({e}):\n{xml}"));
    let suites: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testsuite")).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    // A test case per failing seed, and one for the seeds that passed (none here).
    assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("31"), Some("30")));
    assert!(suite.attribute("time").unwrap().parse::<f64>().unwrap() >= 0.0);
    let cases: Vec<_> = suite.children().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 31);
    for (case, expected) in cases.iter().zip(failures) {
        let seed = expected["seed"].as_u64().unwrap();
        assert_eq!(case.attribute("name"), Some(format!("rdd-namespaces-buggy seed {seed}").as_str()));
        let failed: Vec<_> = case.children().filter(|n| n.has_tag_name("failure")).collect();
        assert_eq!(failed.len(), 1, "one <failure> in a seed's test case");
        assert_eq!(failed[0].attribute("type"), expected["invariant"].as_str());
        let text = failed[0].text().unwrap();
        assert!(text.contains(expected["message"].as_str().unwrap()), "{text}");
        assert!(text.contains(&format!("repro: {}", expected["repro"].as_str().unwrap())), "{text}");
    }
    let rest = cases[30];
    assert_eq!(rest.attribute("name"), Some("rdd-namespaces-buggy seeds 0..30: 0 seeds passed"));
    assert_eq!(rest.children().filter(|n| n.has_tag_name("failure")).count(), 0);
}

/// A passing sweep is one passing test case, named by its range and how many seeds passed.
#[test]
fn junit_of_a_passing_sweep_is_one_passing_test_case() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("run.xml");
    let out = drydock(&["sim", "run", "--scenario", "basic-calm", "--seeds", "3", "--junit", junit.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("not well-formed XML ({e}):\n{xml}"));
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("1"), Some("0")), "{xml}");
    let cases: Vec<_> = suite.children().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 1, "{xml}");
    assert_eq!(cases[0].attribute("name"), Some("basic-calm seeds 0..3: 3 seeds passed"));
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("failure")).count(), 0, "{xml}");
}

/// Messages with markup characters, quotes and non-ASCII come out of the JUnit XML as they went in;
/// a nondeterministic seed is a failure too.
#[test]
fn junit_escapes_what_messages_hold() {
    let dir = tempfile::tempdir().unwrap();
    let range = ["--scenario", "rdd-namespaces-buggy", "--seeds", "4", "--jobs", "1"];
    let junit = dir.path().join("run.xml");
    let out = drydock(&[&["sim", "run"], &range[..], &["--junit", junit.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("failure")).count(), 4);
    assert!(xml.contains(" sim repro --scenario rdd-namespaces-buggy --seed 3</failure>"), "{xml}");
    let names: Vec<_> =
        doc.descendants().filter(|n| n.has_tag_name("testcase")).filter_map(|n| n.attribute("name")).collect();
    assert_eq!(
        names,
        [0, 1, 2, 3]
            .iter()
            .map(|s| format!("rdd-namespaces-buggy seed {s}"))
            .chain(["rdd-namespaces-buggy seeds 0..4: 0 seeds passed".into()])
            .collect::<Vec<_>>()
    );

    // Give a shard's result a message that needs escaping, and a nondeterministic seed.
    let files: Vec<PathBuf> = (1..=2).map(|k| run_shard(dir.path(), &range, k, 2)).collect();
    let mut shard: Value =
        serde_json::from_str(std::fs::read_to_string(&files[0]).unwrap().lines().last().unwrap()).unwrap();
    let message = "a \"quoted\" <tag> & 'apostrophe' — done\tand\nmore";
    shard["failures"][0]["message"] = message.into();
    shard["nondeterministic"] = serde_json::json!([2]);
    std::fs::write(&files[0], format!("some human lines\n{shard}\n\n")).unwrap();
    let merged_xml = dir.path().join("merged.xml");
    let out = merge(&files, &["--junit", merged_xml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("NONDETERMINISTIC seed 2"), "{}", stdout(&out));
    let xml = std::fs::read_to_string(&merged_xml).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("not well-formed XML ({e}):\n{xml}"));
    let failures: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("failure")).collect();
    assert_eq!(failures.len(), 5, "4 failing seeds and 1 nondeterministic");
    assert!(failures[0].attribute("message").unwrap().ends_with(message), "{xml}");
    assert!(failures[0].text().unwrap().contains(message), "{xml}");
    let nondeterministic = failures.iter().find(|f| f.attribute("type") == Some("nondeterministic")).unwrap();
    assert!(nondeterministic.text().unwrap().contains("--seed 2 --check-determinism"), "{xml}");
    let case = nondeterministic.parent().unwrap();
    assert_eq!(case.attribute("name"), Some("rdd-namespaces-buggy seed 2 determinism"), "its own test case");
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("6"), Some("5")), "{xml}");
}

#[test]
fn bad_shards_are_refused() {
    for (bad, says) in
        [("0/3", "K counts from 1"), ("4/3", "K counts from 1"), ("x/y", "write it as K/N"), ("1/0", "0 shards")]
    {
        let out = drydock(&["sim", "run", "--scenario", "basic-calm", "--seeds", "3", "--shard", bad]);
        assert_eq!(out.status.code(), Some(2), "--shard {bad}");
        assert!(stderr(&out).contains(says), "--shard {bad}: {}", stderr(&out));
    }
    let out = drydock(&["sim", "run", "--scenario", "basic-calm", "--duration", "5s", "--shard", "1/2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--shard 1/2 with --duration"), "{}", stderr(&out));
}

#[test]
fn shards_that_do_not_fit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let range = ["--scenario", "basic-calm", "--seeds", "7", "--jobs", "1"];
    let shards: Vec<PathBuf> = (1..=3).map(|k| run_shard(dir.path(), &range, k, 3)).collect();
    let name = |i: usize| shards[i].display().to_string();
    let refused = |files: &[PathBuf], says: &str| {
        let out = merge(files, &[]);
        assert_eq!(out.status.code(), Some(2), "{says}: {}", stdout(&out));
        assert!(stderr(&out).contains(says), "expected {says:?} in: {}", stderr(&out));
    };
    refused(&shards[..2], "shard 3/3 is missing");
    refused(
        &[shards[0].clone(), shards[1].clone(), shards[1].clone()],
        &format!("shard 2/3 is given twice: {0} and {0}", name(1)),
    );

    // A shard of another split, of another range, and a whole-range result.
    let dir2 = tempfile::tempdir().unwrap();
    let other_split = run_shard(dir2.path(), &range, 2, 4);
    refused(&[shards[0].clone(), other_split], "has shard count 4, but");
    let longer = ["--scenario", "basic-calm", "--seeds", "8", "--jobs", "1"];
    let other_range = run_shard(dir2.path(), &longer, 2, 3);
    refused(&[shards[0].clone(), other_range, shards[2].clone()], "range end (start + seeds) 8, but");
    let whole = dir2.path().join("whole.json");
    std::fs::write(&whole, drydock(&[&["sim", "run"], &range[..], &["--json"]].concat()).stdout).unwrap();
    refused(&[whole], "is the result of a whole range (no --shard)");
    // A shard run by another build: its JSON names the `drydock --version` that ran it.
    let version = stdout(&drydock(&["--version"])).trim().trim_start_matches("drydock ").to_string();
    let mine = last_json(&drydock(&[&["sim", "run"], &range[..], &["--shard", "2/3", "--json"]].concat()));
    assert_eq!(mine["build"], version.as_str(), "a shard says which build ran it");
    let mut theirs = mine.clone();
    theirs["build"] = "0.0.9 (commit 0123456789ab)".into();
    let stale = dir2.path().join("stale.json");
    std::fs::write(&stale, theirs.to_string()).unwrap();
    refused(&[shards[0].clone(), stale, shards[2].clone()], "has build 0.0.9 (commit 0123456789ab), but");
    let junk = dir2.path().join("junk.json");
    std::fs::write(&junk, "no json here\n").unwrap();
    refused(&[junk], "its last line is not the JSON of `drydock sim run --json`");
    refused(&[dir2.path().join("absent.json")], "cannot read");

    // With --allow-partial, what there is, saying what is not.
    let out = merge(&shards[..2], &["--allow-partial", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("partial merge (shards missing: 3/3): 5 of the 7 seeds of 0..7 ran"),
        "{}",
        stdout(&out)
    );
    assert_eq!(last_json(&out)["merged_from"], serde_json::json!({"shards": 3, "missing": [3], "stopped": []}));
}
