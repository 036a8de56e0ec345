//! Puts the git commit this binary is built from into `DRYDOCK_GIT_COMMIT`, for
//! `drydock --version`: `git rev-parse --short=12 HEAD`, with `-dirty` when tracked files differ
//! from it, or `unknown` where there is no git or no repository (a build from a source tarball).
//!
//! Cargo runs this again when HEAD moves (a checkout, a commit on the current branch): the files
//! it reads are located with `git rev-parse --git-path`, which also works in a worktree, where
//! `.git` is a file. Edits and `git add` do not run it again (watching the index would rebuild
//! the binary's crate at every `git add`): `-dirty` says how the tree was when HEAD last moved.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").current_dir(dir).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DRYDOCK_GIT_COMMIT");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
    let commit = match std::env::var("DRYDOCK_GIT_COMMIT") {
        // A packager that knows the commit (and builds without .git) may say it.
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => from_git(&dir).unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=DRYDOCK_GIT_COMMIT={commit}");
}

fn from_git(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // Run again when HEAD or the branch it points to changes. Only files that exist: cargo runs
    // a build script every time for one that does not.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in &watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", name]) {
            let path = dir.join(path);
            if path.is_file() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let dirty = git(dir, &["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{commit}-dirty") } else { commit })
}
