//! `drydock up`'s own state: a directory holding a durable SQLite store, a lock and an identity,
//! so a re-run — after Ctrl-C, `--wait`, a crash or a reboot — finds the objects it applied and
//! adopts their containers under the same identity instead of calling them strangers.
//!
//! One per project: `.drydock/<project>/` beside the manifest, where the project is `-p NAME` or
//! else the manifest's file name (`examples/.drydock/demo.yaml/` for `examples/demo.yaml`), or
//! `--state-dir DIR` as given. Two manifests in one folder thus never share objects unless they
//! are run under one `-p`: `drydock down -f b.yaml` cannot tear down what `a.yaml` brought up.
//!
//! It is the daemon's state dir ([`drydock_daemon::state_dir::StateDir`]) without the daemon's
//! token, certificates and kubeconfig: two `drydock up` runs (or an `up` and a daemon) never
//! share one.

use anyhow::{Context as _, Result, bail};
use drydock_adapters::{Predecessor, SharedStore};
use drydock_daemon::state_dir::{STORE_FILE, StateDir};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The directory, beside the manifest, that holds one state dir per project.
pub const STATE_ROOT: &str = ".drydock";

/// Where `drydock up` and `down` keep a run's state, from their `-f`, `-p` and `--state-dir`:
/// `state_dir` as given; else `.drydock/<project>/` in the manifest's directory (the current
/// directory without a manifest), the project being `project` or else the manifest's file name.
///
/// *Guarantees*: refuses (naming it and what to do) a `.drydock` that holds a store directly,
/// as earlier versions of drydock kept one for every manifest of a folder: its objects are neither
/// lost nor silently given to one manifest.
pub fn resolve(
    manifest: Option<&Path>,
    project: Option<&str>,
    state_dir: Option<&Path>,
    program: &str,
) -> Result<PathBuf> {
    if let Some(dir) = state_dir {
        return Ok(dir.to_path_buf());
    }
    let folder = manifest.and_then(Path::parent).filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let project = match (project, manifest) {
        (Some(project), _) => project.to_string(),
        (None, Some(file)) => match file.file_name() {
            Some(name) => name.to_string_lossy().into_owned(),
            None => bail!("{} is not a file name: give the manifest's path", file.display()),
        },
        (None, None) => bail!("give -f FILE, -p NAME or --state-dir DIR"),
    };
    let root = folder.join(STATE_ROOT);
    let legacy_store = root.join(STORE_FILE);
    if legacy_store.exists() {
        let root = root.display();
        bail!(
            "{root} holds a store of an earlier drydock version ({legacy_store}): one state dir shared by \
             every manifest in its folder. This version keeps one per manifest, in {root}/<manifest file name>/ \
             (or {root}/<project>/ with -p), and will not guess whose objects these are. Tear them down with \
             `{program} down --state-dir {root}` and then remove it (`rm -r {root}`), or go on using it as it is \
             with `--state-dir {root}`",
            legacy_store = legacy_store.display()
        );
    }
    Ok(root.join(project))
}

/// The state dirs (projects) beside `state_dir` in its `.drydock`, by name: what a `down` that
/// found nothing may have meant.
pub fn projects_beside(state_dir: &Path) -> Vec<String> {
    let Some(root) = state_dir.parent() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(STORE_FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `-p`'s value: a single path component that is a readable name.
pub fn project_name(name: &str) -> std::result::Result<String, String> {
    let valid = name.len() <= 100
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(name.to_string())
    } else {
        Err("a project name is 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit".into())
    }
}

/// An open, locked state dir: the lock is held while this lives.
pub struct UpState {
    pub store: Arc<SharedStore>,
    /// The engine's identity, kept in the state dir: the same on every run over it.
    pub identity: String,
    /// How the last run over this dir ended: a run that stopped with nothing in flight lets
    /// this one skip the wait for an earlier life's requests (30 s before a deleted container's
    /// finalizer may go).
    pub predecessor: Predecessor,
    dir: StateDir,
}

impl UpState {
    pub fn open(dir: &Path, components: &drydock_adapters::Components) -> Result<UpState> {
        let state = StateDir::open(dir)?;
        let identity = format!("drydock-up-{}", state.identity_id()?);
        let clean = state.take_clean_stop()?;
        let config = drydock_engine::store::StoreConfig::default();
        let store = SharedStore::open_sqlite_for(&state.store_path(), components.registry().clone(), config)
            .with_context(|| format!("cannot open drydock up's store in {}", state.path().display()))?;
        let predecessor = if clean { Predecessor::StoppedCleanly } else { Predecessor::MayHaveCrashed };
        Ok(UpState { store, identity, predecessor, dir: state })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Record that this run stopped with no runtime request in flight.
    pub fn record_clean_stop(&self) -> Result<()> {
        Ok(self.dir.record_clean_stop()?)
    }
}
