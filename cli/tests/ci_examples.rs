//! The CI examples of `examples/ci/` are valid YAML, and their shard counts agree with each other.
#![allow(clippy::unwrap_used)]

use serde::Deserialize;
use serde_yaml_ng::Value;
use std::path::PathBuf;

fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/ci").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `N` of the `--shard <index>/N` in `command`, where `index` is the text given.
fn shard_count(command: &str, index: &str) -> u64 {
    let (_, rest) = command.split_once(&format!("--shard {index}/")).unwrap_or_else(|| panic!("{command}"));
    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

#[test]
fn github_actions_runs_one_job_per_shard_and_merges_them() {
    let workflow: Value = serde_yaml_ng::from_str(&example("github-actions.yml")).unwrap();
    let jobs = &workflow["jobs"];
    let sweep = &jobs["sweep"];
    let shards: Vec<u64> =
        sweep["strategy"]["matrix"]["shard"].as_sequence().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let run: Vec<&str> = sweep["steps"].as_sequence().unwrap().iter().filter_map(|s| s["run"].as_str()).collect();
    let command = run.iter().find(|r| r.contains("sim run")).unwrap();
    let n = shard_count(command, "${{ matrix.shard }}");
    assert_eq!(shards, (1..=n).collect::<Vec<_>>(), "the matrix holds every shard 1..={n}");
    assert!(command.contains("--json > shard.json"), "{command}");
    assert!(sweep["name"].as_str().unwrap().ends_with(&format!("/{n}")));

    let merge = &jobs["merge"];
    assert_eq!(merge["needs"].as_str(), Some("sweep"));
    let steps = merge["steps"].as_sequence().unwrap();
    let merging = steps.iter().filter_map(|s| s["run"].as_str()).find(|r| r.contains("sim merge")).unwrap();
    assert!(merging.contains("shards/shard-*/shard.json") && merging.contains("--junit junit.xml"), "{merging}");
    let downloads: Vec<&Value> = steps
        .iter()
        .filter(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/download-artifact")))
        .collect();
    assert!(downloads.iter().any(|d| d["with"]["pattern"].as_str() == Some("shard-*")));
    let upload = sweep["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact")))
        .unwrap();
    assert_eq!(upload["with"]["name"].as_str(), Some("shard-${{ matrix.shard }}"));
    assert!(steps.iter().any(|s| s["with"]["report_paths"].as_str() == Some("junit.xml")), "the JUnit is published");
}

#[test]
fn the_kubernetes_job_is_indexed_with_one_completion_per_shard() {
    let text = example("k8s-indexed-job.yaml");
    let documents: Vec<Value> =
        serde_yaml_ng::Deserializer::from_str(&text).map(|doc| Value::deserialize(doc).unwrap()).collect();
    let job = documents.iter().find(|d| d["kind"].as_str() == Some("Job")).unwrap();
    let claim = documents.iter().find(|d| d["kind"].as_str() == Some("PersistentVolumeClaim")).unwrap();
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(completions));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    let container = &pod["containers"][0];
    let env = container["env"].as_sequence().unwrap();
    let var = |name: &str| env.iter().find(|e| e["name"].as_str() == Some(name)).unwrap()["value"].as_str().unwrap();
    assert_eq!(var("SHARDS").parse::<u64>().unwrap(), completions, "one completion per shard");
    let script = container["args"][0].as_str().unwrap();
    assert!(script.contains("shard=$((JOB_COMPLETION_INDEX + 1))"), "{script}");
    assert!(script.contains("--shard \"$shard/$SHARDS\"") && script.contains("--json"), "{script}");
    assert!(script.contains("/results/shard-$shard.json"), "{script}");
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["mountPath"].as_str(), Some("/results"));
    let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == mount["name"]).unwrap();
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"]);
}
