//! `tools/mutants`, the mutation-testing tool: its report over a made-up run (the score's
//! arithmetic, equivalents left out, survivors that must be triaged), and the committed results
//! against the committed triage. A real run takes hours (docs/mutation-testing.md); the sweep it
//! runs per mutant is `scenarios/tests/mutation_sweep.rs`, which `cargo test` runs short.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn tool(args: &[&str], work: &Path, triage: &Path, results: &Path) -> Output {
    let out = Command::new("python3")
        .arg(workspace().join("tools/mutants"))
        .args(args)
        .env("DRYDOCK_MUTANTS_WORK", work)
        .env("DRYDOCK_MUTANTS_TRIAGE", triage)
        .env("DRYDOCK_MUTANTS_RESULTS", results)
        .output()
        .unwrap();
    support::transcript("tools/mutants", args, out)
}

/// One mutant's outcome as cargo-mutants writes it, and its log with the sweep's record.
fn outcome(dir: &Path, name: &str, summary: &str, record: Option<serde_json::Value>) -> serde_json::Value {
    let log = format!("log/{}.log", name.replace(['/', ':', ' '], "_"));
    let mut text = String::from("*** cargo test\n");
    if let Some(record) = record {
        text += &format!("DRYDOCK-MUTANTS {record}\n");
    }
    std::fs::write(dir.join(&log), text).unwrap();
    let file = name.split(':').next().unwrap();
    json!({
        "scenario": {"Mutant": {"name": name, "file": file, "span": {"start": {"line": 1, "column": 1}}}},
        "summary": summary,
        "log_path": log,
        "phase_results": [{"phase": "Build", "duration": 10.0}, {"phase": "Test", "duration": 2.0}],
    })
}

fn killed(invariant: &str, seeds_run: u64) -> Option<serde_json::Value> {
    Some(
        json!({"killed": true, "invariant": invariant, "scenario": "basic", "seed": 0, "seeds_run": seeds_run, "message": "m"}),
    )
}

#[test]
fn the_report_scores_kills_leaves_out_equivalents_and_demands_every_survivor_triaged() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("work/runs/shard-0-of-4");
    let out = run.join("mutants.out");
    std::fs::create_dir_all(out.join("log")).unwrap();
    std::fs::write(run.join("seeds"), "100\n").unwrap();
    std::fs::write(run.join("commit"), "abc1234\n").unwrap();
    let survived = Some(json!({"killed": false, "seeds_run": 1300}));
    let outcomes = vec![
        outcome(&out, "engine/src/a.rs:1:1: replace f -> bool with true", "CaughtMutant", killed("convergence", 3)),
        outcome(&out, "engine/src/a.rs:2:1: replace g -> bool with false", "CaughtMutant", killed("efficiency", 7)),
        outcome(&out, "engine/src/a.rs:3:1: replace h with ()", "Timeout", None),
        outcome(&out, "engine/src/b.rs:4:9: replace < with <= in k", "MissedMutant", survived.clone()),
        outcome(
            &out,
            "engine/src/b.rs:5:1: replace <impl Debug for X>::fmt with Ok(Default::default())",
            "MissedMutant",
            survived,
        ),
        outcome(&out, "engine/src/b.rs:6:1: replace m -> &str with \"xyzzy\"", "Unviable", None),
    ];
    std::fs::write(out.join("outcomes.json"), json!({ "outcomes": outcomes }).to_string()).unwrap();
    let triage = tmp.path().join("triage.md");
    let results = tmp.path().join("results.md");
    let work = tmp.path().join("work");
    std::fs::write(
        &triage,
        "| mutant | class | why |\n|---|---|---|\n\
         | `engine/src/b.rs: replace <impl Debug for X>::fmt with Ok(Default::default())` | equivalent | Debug output only |\n\
         | `engine/src/c.rs: replace n with ()` | equivalent | a cache hint; triaged in an earlier run |\n",
    )
    .unwrap();

    let first = tool(&["report"], &work, &triage, &results);
    let text = String::from_utf8_lossy(&first.stdout);
    assert_eq!(first.status.code(), Some(1), "an untriaged survivor fails the report");
    assert!(text.contains("3 / 4 = **75.0%**"), "killed and timed out over viable non-equivalent: {text}");
    assert!(text.contains("1 survived but are equivalent"), "{text}");
    assert!(text.contains("1 more triaged equivalent earlier and not run"), "{text}");
    assert!(text.contains("median 5"), "the seeds to the kill of the two recorded kills: {text}");
    assert!(text.contains("| `engine/src/b.rs: replace < with <= in k` | gap: ? | ? |"), "the row to fill in: {text}");

    let mut rows = std::fs::read_to_string(&triage).unwrap();
    rows += "| `engine/src/b.rs: replace < with <= in k` | gap: oracle | nothing checks k's bound |\n";
    std::fs::write(&triage, rows).unwrap();
    let second = tool(&["report", "--write"], &work, &triage, &results);
    assert_eq!(second.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&second.stdout).contains("Survivors by class: gap: oracle: 1."));
    let written = std::fs::read_to_string(&results).unwrap();
    assert!(
        written.contains(
            "| `engine/src/a.rs:1:1: replace f -> bool with true` | killed | convergence in basic seed 0 | 12 |"
        ),
        "{written}"
    );
    assert!(
        written.contains(
            "| `engine/src/b.rs:4:9: replace < with <= in k` | survived | 1300 seeds passed; gap: oracle | 12 |"
        ),
        "{written}"
    );

    // A gap said to be closed whose mutant still survives is a triage error too.
    let fixed = std::fs::read_to_string(&triage).unwrap().replace("gap: oracle", "fixed: oracle");
    std::fs::write(&triage, fixed).unwrap();
    let third = tool(&["report"], &work, &triage, &results);
    assert_eq!(third.status.code(), Some(1));
}

#[test]
fn the_tool_says_how_to_use_it_and_refuses_what_it_does_not_know() {
    let tmp = tempfile::tempdir().unwrap();
    let (work, triage, results) = (tmp.path().join("w"), tmp.path().join("t.md"), tmp.path().join("r.md"));
    let help = tool(&["--help"], &work, &triage, &results);
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for verb in ["tools/mutants run", "tools/mutants report", "--seeds", "--shard"] {
        assert!(text.contains(verb), "--help names {verb}");
    }
    let unknown = tool(&["frobnicate"], &work, &triage, &results);
    assert_eq!(unknown.status.code(), Some(2));
    let bad_seeds = tool(&["run", "--seeds", "5000"], &work, &triage, &results);
    assert_eq!(bad_seeds.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_seeds.stderr).contains("give 1 to 1000"));
    let nothing = tool(&["report"], &work, &triage, &results);
    assert_eq!(nothing.status.code(), Some(2), "no runs: nothing to report");
}

/// The committed results and triage agree: every survivor is triaged, none is called fixed while
/// it survives, and the score line is what the rows add up to.
#[test]
fn the_committed_results_have_every_survivor_triaged_and_their_score_adds_up() {
    let results = std::fs::read_to_string(workspace().join("docs/mutation-results.md")).unwrap();
    let (mut killed, mut survived) = (0, 0);
    for row in results.lines().filter(|l| l.starts_with("| `")) {
        // A name may hold `||` or `|=`, escaped as `\|` in the table.
        let fate = row.replace("\\|", "").split('|').nth(2).unwrap().trim().to_string();
        match fate.as_str() {
            "killed" | "timeout" => killed += 1,
            "survived" => {
                survived += 1;
                assert!(!row.contains("untriaged") && !row.contains("fixed but survived"), "not triaged: {row}");
            }
            _ => {}
        }
    }
    assert!(killed + survived > 0, "the results list mutants");
    let score =
        format!("{killed} / {} = **{:.1}%**", killed + survived, 100.0 * killed as f64 / (killed + survived) as f64);
    assert!(results.contains(&score), "the score line says {score}");
}
