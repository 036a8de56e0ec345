//! `drydock up`'s own state: a directory (by default `.drydock` beside the manifest) holding a
//! durable SQLite store, a lock and an identity, so a re-run — after Ctrl-C, `--wait`, a crash or
//! a reboot — finds the objects it applied and adopts their containers under the same identity
//! instead of calling them strangers.
//!
//! It is the daemon's state dir ([`drydock_daemon::state_dir::StateDir`]) without the daemon's
//! token, certificates and kubeconfig: two `drydock up` runs (or an `up` and a daemon) never
//! share one.

use anyhow::{Context as _, Result};
use drydock_adapters::{Predecessor, SharedStore};
use drydock_daemon::state_dir::StateDir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The default state dir for a manifest: `.drydock` in the manifest's directory.
pub fn beside(manifest: &Path) -> PathBuf {
    let dir = manifest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.join(".drydock")
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
