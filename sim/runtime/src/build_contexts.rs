//! Build contexts: the directories a build reads its Dockerfile and copied files from. Docker's
//! client sends the context directory as a tar archive with each build; the simulated runtime
//! reads no files, so a test or scenario registers each context first
//! ([`SimRuntime::add_build_context`](crate::SimRuntime::add_build_context)), and a build names
//! it by its directory, as `docker build DIR` does.
//!
//! A context's `.dockerignore` (a registered file at its root) leaves files out of what a build
//! sees, by the contract's rules ([`drydock_engine::runtime::dockerignore`], those the Docker
//! adapter sends a context by): see [`visible`].

use super::shell::clean_path;
use drydock_engine::runtime::dockerignore::{ContextFilter, DOCKERIGNORE, DockerignoreError};
use std::collections::BTreeMap;

/// The registered build contexts: directory -> relative path -> contents.
///
/// *Guarantees* (see [`BuildContexts::check`]): directories are kept cleaned (`/ctx/./a/..` is
/// `/ctx`) and file paths relative and cleaned (`./a//b` is `a/b`), so a lookup finds a context
/// or a file however its path was written. Registering a directory again replaces its files.
#[derive(Clone, Debug, Default)]
pub(crate) struct BuildContexts {
    dirs: BTreeMap<String, BTreeMap<String, String>>,
}

impl BuildContexts {
    /// Register directory `dir` with its files (relative path -> contents), replacing what it
    /// held.
    pub(crate) fn add(&mut self, dir: &str, files: BTreeMap<String, String>) {
        let files = files.into_iter().map(|(path, contents)| (relative(&path), contents)).collect();
        self.dirs.insert(clean_path(dir), files);
    }

    /// The files of context directory `dir`, if it was registered.
    pub(crate) fn get(&self, dir: &str) -> Option<&BTreeMap<String, String>> {
        self.dirs.get(&clean_path(dir))
    }

    /// Whether the guarantees hold.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (dir, files) in &self.dirs {
            if clean_path(dir) != *dir {
                return Err(format!("build context {dir:?}: not a cleaned path"));
            }
            if let Some(path) = files.keys().find(|path| relative(path) != **path) {
                return Err(format!("build context {dir}: file {path:?} is not relative and cleaned"));
            }
        }
        Ok(())
    }
}

/// The files of a context (`files`, as stored) that a `COPY`/`ADD` of a build reading the
/// Dockerfile at `dockerfile` sees: those its `.dockerignore` lets the docker CLI send, less the
/// Dockerfile and `.dockerignore` when it lists them (the builder removes them once read). An
/// unusable `.dockerignore` fails the build before anything is sent, as it does the CLI's.
pub(crate) fn visible(
    files: &BTreeMap<String, String>,
    dockerfile: &str,
) -> Result<BTreeMap<String, String>, DockerignoreError> {
    let filter = ContextFilter::new(files.get(DOCKERIGNORE).map(String::as_str), &relative(dockerfile))?;
    Ok(files.iter().filter(|(path, _)| filter.copies(path)).map(|(p, c)| (p.clone(), c.clone())).collect())
}

/// A context path as stored: relative, cleaned, without `./`.
pub(crate) fn relative(path: &str) -> String {
    clean_path(&format!("/{path}")).trim_start_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_and_their_files_are_found_however_written() {
        let mut contexts = BuildContexts::default();
        let files =
            BTreeMap::from([("./app//main.sh".to_string(), "echo".to_string()), ("/Dockerfile".into(), "".into())]);
        contexts.add("/ctx/./sub/..", files);
        contexts.check().expect("cleaned");
        let found = contexts.get("/ctx/").expect("by another spelling");
        assert_eq!(found.keys().collect::<Vec<_>>(), ["Dockerfile", "app/main.sh"]);
        contexts.add("/ctx", BTreeMap::new());
        assert!(contexts.get("/ctx").is_some_and(BTreeMap::is_empty), "replaced");
        assert!(contexts.get("/other").is_none());
    }

    #[test]
    fn a_dockerignore_hides_what_it_excludes() {
        let mut files: BTreeMap<String, String> =
            [".dockerignore", "Dockerfile", "secret.env", "app/main.sh", "target/out", "target/keep"]
                .into_iter()
                .map(|p| (p.to_string(), String::new()))
                .collect();
        files.insert(".dockerignore".into(), "*.env\ntarget/\n!target/keep\nDockerfile\n".into());
        let seen = visible(&files, "./Dockerfile").expect("a usable .dockerignore");
        assert_eq!(seen.keys().collect::<Vec<_>>(), [".dockerignore", "app/main.sh", "target/keep"]);
        files.insert(".dockerignore".into(), "!\n".into());
        assert!(visible(&files, "Dockerfile").is_err(), "a lone ! is refused");
        files.remove(".dockerignore");
        assert_eq!(visible(&files, "Dockerfile").expect("none").len(), files.len(), "no .dockerignore: all");
    }

    #[test]
    fn check_finds_an_uncleaned_path() {
        let mut contexts = BuildContexts::default();
        contexts.dirs.insert("/ctx/".into(), BTreeMap::new());
        assert!(contexts.check().is_err());
        let mut contexts = BuildContexts::default();
        contexts.dirs.insert("/ctx".into(), BTreeMap::from([("./a".to_string(), String::new())]));
        assert!(contexts.check().is_err());
    }
}
