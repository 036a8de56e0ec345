//! What the README and the guide tell a user to type, run as typed (or, for a cargo command, as
//! close as a test inside cargo can: `.ci/run` runs the README's first command itself).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace().join(relative)).unwrap()
}

/// The fenced blocks of `lang` in a Markdown text, in order.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let (mut found, mut current): (Vec<String>, Option<String>) = (Vec::new(), None);
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_start() == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line.trim_start() == "```" => found.extend(current.take()),
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    found
}

/// The commands of a shell block: its lines that are not comments.
fn commands(block: &str) -> Vec<String> {
    block.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

#[test]
fn the_readmes_main_command_builds_the_simulator_alone_and_its_sweep_passes() {
    let first = blocks(&read("README.md"), "sh").into_iter().next().unwrap();
    let commands = commands(&first);
    assert_eq!(
        commands,
        [
            "cargo run --release -p drydock-cli --no-default-features -- sim run --seeds 1000",
            "cargo test --release --workspace --locked",
        ],
        "the README's two commands changed: update this test and .ci/run, which runs the first as typed"
    );
    // The binary cargo built for the tests is the default build; the sweep is the same.
    let args: Vec<&str> = commands[0].split_once(" -- ").unwrap().1.split_whitespace().collect();
    let out = Command::new(env!("CARGO_BIN_EXE_drydock")).args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("PASS: mixed, 1000 seeds (0..1000), 0 failures"), "{stdout}");
}

/// The target triple rustc builds for by default here, as `rustc -vV` names it.
fn host_platform() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find_map(|line| line.strip_prefix("host: ")).unwrap().trim().to_string()
}

/// A crate of a user's, made of a `[dependencies]` block the docs show, with their
/// `../drydock/` paths pointed at this checkout.
fn resolve_as_a_users_crate(toml: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let root = workspace().display().to_string();
    let deps = toml.replace("\"../drydock/", &format!("\"{root}/"));
    let manifest = format!("[package]\nname = \"users-controller\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{deps}");
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    // The workspace's lock, so the user's crate resolves to the versions the workspace's build
    // already downloaded: left alone, cargo would pick the newest versions the index knows.
    std::fs::copy(workspace().join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
    // Resolution only (`cargo metadata`): the crates are the workspace's, already checked. For
    // this machine's platform only: a build downloads just its own platform's crates, and the
    // test runs offline (CI failed here on `anstyle-wincon`, a Windows-only crate).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host_platform()])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .output()
        .unwrap()
}

#[test]
fn the_guides_dependency_lines_resolve() {
    let guide = read("docs/simulation-testing.md");
    let toml = blocks(&guide, "toml").into_iter().next().unwrap();
    for name in ["drydock-engine", "drydock-scenarios", "drydock-cli"] {
        assert!(toml.contains(name), "the guide's first block no longer names {name}:\n{toml}");
    }
    let out = resolve_as_a_users_crate(&toml);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> =
        metadata["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for name in ["drydock-engine", "drydock-scenarios", "drydock-sim", "drydock-cli"] {
        assert!(names.contains(&name), "{name} not resolved: {names:?}");
    }
}

#[test]
fn the_readmes_dependency_lines_resolve_by_path() {
    let readme = read("README.md");
    let toml = blocks(&readme, "toml").into_iter().next().unwrap();
    // The README shows the git form with the path form in a comment: take the path form.
    let by_path: String = toml
        .lines()
        .map(|line| match line.split_once("# or ") {
            Some((dep, path)) if !dep.trim_start().starts_with('#') => {
                format!("{} = {}\n", dep.split('=').next().unwrap().trim(), path.trim())
            }
            _ => format!("{line}\n"),
        })
        .collect();
    let out = resolve_as_a_users_crate(&by_path);
    assert!(out.status.success(), "{by_path}\n{}", String::from_utf8_lossy(&out.stderr));
}
