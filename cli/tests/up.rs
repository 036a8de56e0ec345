//! `drydock up`: bad manifests are refused whole; a good one runs on Docker and tears down.
#![allow(clippy::unwrap_used)]

use drydock_adapters::testing::{TEST_IMAGE, docker_or_skip, ensure_test_image};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn manifest(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("drydock-up-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{}", std::process::id(), nanos % 100_000)
}

fn docker_names_with(prefix: &str) -> Vec<String> {
    let out = Command::new("docker").args(["ps", "-a", "--format", "{{.Names}}"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter(|n| n.starts_with(prefix)).map(str::to_string).collect()
}

fn up_fails(path: &PathBuf) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_drydock")).arg("up").arg("-f").arg(path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn a_manifest_with_an_unknown_field_is_refused_and_nothing_is_created() {
    let ns = unique("bad");
    let path = manifest(
        "unknown.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec: {{image: {TEST_IMAGE}, comand: [sleep, '1']}}\n"
        ),
    );
    let stderr = up_fails(&path);
    assert!(
        stderr.contains("unknown.yaml") && stderr.contains("spec.comand") && stderr.contains("object #2"),
        "{stderr}"
    );
    if docker_or_skip("up_unknown_field").await.is_some() {
        assert!(docker_names_with(&ns).is_empty(), "containers were created");
    }
}

#[tokio::test]
async fn a_manifest_with_a_bad_image_reference_is_refused_and_nothing_is_created() {
    let ns = unique("bad");
    let path = manifest(
        "image.json",
        &format!(
            r#"[{{"kind":"Namespace","metadata":{{"name":"{ns}"}}}},
            {{"kind":"PhysicalContainer","metadata":{{"name":"ok","namespace":"{ns}"}},"spec":{{"image":"{TEST_IMAGE}"}}}},
            {{"kind":"PhysicalContainer","metadata":{{"name":"web","namespace":"{ns}"}},"spec":{{"image":"Not An Image"}}}}]"#
        ),
    );
    let stderr = up_fails(&path);
    assert!(stderr.contains("spec.image") && stderr.contains("object #3"), "{stderr}");
    if docker_or_skip("up_bad_image").await.is_some() {
        assert!(docker_names_with(&ns).is_empty(), "the valid object before it was not applied either");
    }
}

#[test]
fn a_misspelt_metadata_field_is_named() {
    let path = manifest("meta.yaml", "kind: Namespace\nmetadata: {name: x, lables: {}}\n");
    let stderr = up_fails(&path);
    assert!(stderr.contains("metadata.lables"), "{stderr}");
}

#[tokio::test]
async fn up_runs_a_manifest_on_docker_and_tears_down_on_sigterm() {
    if docker_or_skip("up_runs").await.is_none() {
        return;
    }
    ensure_test_image().unwrap();
    let ns = unique("up");
    let path = manifest(
        "good.yaml",
        &format!(
            "kind: Namespace\nmetadata: {{name: {ns}}}\n---\nkind: PhysicalContainer\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  image: {TEST_IMAGE}\n  command: [sh, -c, \"trap 'exit 0' TERM; while true; do sleep 1; done\"]\n"
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_drydock"))
        .arg("up")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !lines.iter().any(|l: &String| l.contains("PhysicalContainer/") && l.contains("Running")) {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("no Running phase within 60 s; output so far:\n{}", lines.join("\n"));
            }
        }
    }
    assert_eq!(docker_names_with(&ns), vec![format!("{ns}-web")]);
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    // The reader ends at EOF, which closes the channel.
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(10)) {
        lines.push(line);
    }
    let output = lines.join("\n");
    assert!(status.success(), "exit {status}:\n{output}");
    assert!(output.contains("nothing left"), "{output}");
    assert!(output.contains(&format!("Namespace/{ns}")) && output.contains("deleted"), "{output}");
    assert!(docker_names_with(&ns).is_empty(), "runtime containers left behind");
}
