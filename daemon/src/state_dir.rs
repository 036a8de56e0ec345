//! The daemon's state directory: its lock, bearer token, identity, certificates and the paths of
//! its store and default kubeconfig.
//!
//! Layout (all in one directory, created with mode 0700):
//!
//! | file | what | mode |
//! | --- | --- | --- |
//! | `lock` | held (`flock`) for the daemon's life; holds its pid | 0600 |
//! | `token` | the bearer token: 32 random bytes from the OS, hex | 0600 |
//! | `id` | the daemon's identity id (`drydock-daemon-<id>`) | 0600 |
//! | `ca.crt`, `ca.key` | the daemon's own CA | key 0600 |
//! | `server.crt`, `server.key` | the serving certificate, signed by the CA | key 0600 |
//! | `store.db` | the durable store | |
//! | `kubeconfig` | the client config, unless `--kubeconfig` says elsewhere | 0600 |
//! | `clean-stop` | present only between a stop with no runtime request in flight and the next start | 0600 |
//!
//! *Guarantees*: a [`StateDir`] is held by one process at a time (an exclusive `flock` on
//! `lock`, released when the process ends, even by a crash); a second [`StateDir::open`] on the
//! same directory fails with [`StateDirError::Locked`] naming the holder's pid. Secrets are
//! created with mode 0600 from the start (never written and then chmod-ed). The token, the id and
//! the CA are generated once and reused on every later start. A file that exists but cannot be
//! read or parsed is never silently replaced: the error names it, and the user decides.
//!
//! *Caveats*: a secret file (`token`, `ca.key`, `server.key`) readable by group or others is
//! refused, not repaired: someone else may have read it, so the user should look, then
//! `chmod 600` it or delete it (a deleted token or CA is generated anew; clients need the new
//! kubeconfig). The lock is advisory: it keeps out other daemons, not other programs.

use crate::tls::{self, CertError};
use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{Read as _, Write as _};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "lock";
pub const TOKEN_FILE: &str = "token";
pub const ID_FILE: &str = "id";
pub const CA_CERT_FILE: &str = "ca.crt";
pub const CA_KEY_FILE: &str = "ca.key";
pub const SERVER_CERT_FILE: &str = "server.crt";
pub const SERVER_KEY_FILE: &str = "server.key";
pub const STORE_FILE: &str = "store.db";
pub const KUBECONFIG_FILE: &str = "kubeconfig";
pub const CLEAN_STOP_FILE: &str = "clean-stop";

/// Why the state directory could not be opened or one of its files read or made.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    #[error("no default state directory: neither XDG_STATE_HOME nor HOME is set; pass --state-dir")]
    NoDefault,
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "another drydock daemon (pid {pid}) holds the state dir {}; stop it first or use --state-dir",
        dir.display()
    )]
    Locked { pid: String, dir: PathBuf },
    #[error(
        "{} has mode {mode:o}: it holds a secret and must be readable by its owner only; check who \
         may have read it, then `chmod 600` it (or delete it to generate a new one)",
        path.display()
    )]
    Permissions { path: PathBuf, mode: u32 },
    #[error("{} is not usable: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot read random bytes from the OS: {0}")]
    Random(getrandom::Error),
    #[error("certificate material {}", path.display())]
    Cert {
        path: PathBuf,
        #[source]
        source: CertError,
    },
}

pub type Result<T, E = StateDirError> = std::result::Result<T, E>;

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StateDirError {
    let path = path.to_path_buf();
    move |source| StateDirError::Io { action, path, source }
}

/// The default state directory: `$XDG_STATE_HOME/drydock`, else `$HOME/.local/state/drydock`.
///
/// *Caveats*: empty variables count as unset (as the XDG spec says).
pub fn default_path() -> Result<PathBuf> {
    default_path_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// [`default_path`] from given values of `XDG_STATE_HOME` and `HOME` (testable without touching
/// the process environment).
pub fn default_path_from(xdg_state_home: Option<OsString>, home: Option<OsString>) -> Result<PathBuf> {
    let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(xdg) = non_empty(xdg_state_home) {
        return Ok(xdg.join("drydock"));
    }
    non_empty(home).map(|home| home.join(".local/state/drydock")).ok_or(StateDirError::NoDefault)
}

/// The certificate material the server needs, as PEM.
#[derive(Clone)]
pub struct Certificates {
    /// The CA certificate: what clients trust (the kubeconfig's `certificate-authority-data`).
    pub ca_pem: String,
    /// The server certificate.
    pub server_cert_pem: String,
    /// The server's private key. Secret.
    pub server_key_pem: String,
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates").field("server_key_pem", &"<secret>").finish_non_exhaustive()
    }
}

/// An opened, exclusively held state directory.
///
/// *Guarantees*: while this value lives, no other [`StateDir::open`] of the same directory (in
/// this process or another) succeeds. Dropping it releases the lock.
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    /// Holds the `flock`; closing it releases the lock.
    _lock: File,
}

impl StateDir {
    /// Create the directory (mode 0700) if needed and take its lock.
    ///
    /// *Guarantees*: on success the lock file holds this process's pid. On
    /// [`StateDirError::Locked`] nothing in the directory was changed.
    pub fn open(path: &Path) -> Result<StateDir> {
        DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io("create the state dir", path))?;
        let path = path.canonicalize().map_err(io("resolve the state dir", path))?;
        let lock = take_lock(&path)?;
        Ok(StateDir { path, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the durable store lives: `<state-dir>/store.db`.
    pub fn store_path(&self) -> PathBuf {
        self.path.join(STORE_FILE)
    }

    /// Where the kubeconfig goes unless the user says otherwise: `<state-dir>/kubeconfig`.
    pub fn default_kubeconfig_path(&self) -> PathBuf {
        self.path.join(KUBECONFIG_FILE)
    }

    /// The bearer token: read from `token`, or generated (32 random bytes, hex) at first start.
    ///
    /// *Guarantees*: the file is mode 0600; a token file readable by others, empty, or holding
    /// characters that cannot go in an HTTP header is an error naming the file, never replaced.
    pub fn token(&self) -> Result<String> {
        self.secret_or_generate(TOKEN_FILE, 32)
    }

    /// The daemon's identity id (16 hex digits), stable across starts, so a restarted daemon
    /// adopts its own containers.
    pub fn identity_id(&self) -> Result<String> {
        self.secret_or_generate(ID_FILE, 8)
    }

    /// The identity the engine runs as: `drydock-daemon-<id>`.
    pub fn identity(&self) -> Result<String> {
        Ok(format!("drydock-daemon-{}", self.identity_id()?))
    }

    /// Whether no earlier life over this directory can have left a runtime request in flight:
    /// there was none (no store yet), or the last one recorded a clean stop. The record is
    /// removed, so this life counts as crashed until it records its own.
    ///
    /// *Guarantees*: `true` at most once per recorded stop, or for a directory without a store.
    /// A store without a record (a kill -9, a stop that abandoned requests) answers `false`.
    /// Call it before the store is opened (opening creates it).
    pub fn take_clean_stop(&self) -> Result<bool> {
        let path = self.path.join(CLEAN_STOP_FILE);
        let first_life = !self.store_path().exists();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(first_life),
            Err(e) => Err(io("remove the clean-stop record", &path)(e)),
        }
    }

    /// Record that this life stops with no runtime request in flight (see [`Self::take_clean_stop`]).
    pub fn record_clean_stop(&self) -> Result<()> {
        replace_file(&self.path.join(CLEAN_STOP_FILE), b"stopped with no runtime request in flight\n", 0o600)
    }

    /// The CA and a server certificate valid for `127.0.0.1`, `::1`, `localhost` and
    /// `extra_ips`.
    ///
    /// *Guarantees*: the CA is generated once and kept. The server certificate is kept while it
    /// covers the names needed and is signed by the CA; otherwise it is regenerated (logged).
    /// Keys are written 0600.
    ///
    /// *Caveats*: `ca.crt` without `ca.key` (or the reverse) is an error: delete both to make a
    /// new CA, after which clients need the new kubeconfig.
    pub fn certificates(&self, extra_ips: &[IpAddr]) -> Result<Certificates> {
        let (ca_pem, ca_key_pem, ca_new) = self.ca()?;
        let names = tls::server_names(extra_ips);
        let cert_path = self.path.join(SERVER_CERT_FILE);
        let key_path = self.path.join(SERVER_KEY_FILE);
        if !ca_new && cert_path.exists() && key_path.exists() {
            let cert_pem = read_string(&cert_path)?;
            let key_pem = read_secret(&key_path)?;
            let cert_err = |source| StateDirError::Cert { path: cert_path.clone(), source };
            if tls::server_cert_fits(&cert_pem, &ca_pem, &names).map_err(cert_err)? {
                return Ok(Certificates { ca_pem, server_cert_pem: cert_pem, server_key_pem: key_pem });
            }
            tracing::info!(path = %cert_path.display(), ?names, "server certificate does not cover the names needed: regenerating it");
        }
        let issued = tls::issue_server_cert(&ca_pem, &ca_key_pem, &names)
            .map_err(|source| StateDirError::Cert { path: self.path.join(CA_CERT_FILE), source })?;
        replace_file(&key_path, issued.key_pem.as_bytes(), 0o600)?;
        replace_file(&cert_path, issued.cert_pem.as_bytes(), 0o644)?;
        Ok(Certificates { ca_pem, server_cert_pem: issued.cert_pem, server_key_pem: issued.key_pem })
    }

    /// The CA's certificate and key PEM, and whether they were generated just now.
    fn ca(&self) -> Result<(String, String, bool)> {
        let cert_path = self.path.join(CA_CERT_FILE);
        let key_path = self.path.join(CA_KEY_FILE);
        match (cert_path.exists(), key_path.exists()) {
            (true, true) => Ok((read_string(&cert_path)?, read_secret(&key_path)?, false)),
            (false, false) => {
                let ca =
                    tls::generate_ca().map_err(|source| StateDirError::Cert { path: cert_path.clone(), source })?;
                create_new(&key_path, ca.key_pem.as_bytes(), 0o600)?;
                create_new(&cert_path, ca.cert_pem.as_bytes(), 0o644)?;
                tracing::info!(path = %cert_path.display(), "generated the daemon's CA");
                Ok((ca.cert_pem, ca.key_pem, true))
            }
            (cert, _) => {
                let (present, missing) = if cert { (&cert_path, &key_path) } else { (&key_path, &cert_path) };
                Err(StateDirError::Invalid {
                    path: present.clone(),
                    reason: format!(
                        "{} is missing; delete {} too to generate a new CA (clients then need the new kubeconfig)",
                        missing.display(),
                        present.display()
                    ),
                })
            }
        }
    }

    /// Read the secret in `name`, or generate `bytes` random bytes (hex) into it.
    fn secret_or_generate(&self, name: &str, bytes: usize) -> Result<String> {
        let path = self.path.join(name);
        if path.exists() {
            let value = read_secret(&path)?;
            let value = value.trim();
            if value.is_empty() {
                return Err(StateDirError::Invalid {
                    path,
                    reason: "it is empty; delete it to generate a new one".into(),
                });
            }
            if !value.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(StateDirError::Invalid {
                    path,
                    reason: "it holds characters other than printable ASCII; delete it to generate a new one".into(),
                });
            }
            return Ok(value.to_string());
        }
        let mut buf = vec![0u8; bytes];
        getrandom::fill(&mut buf).map_err(StateDirError::Random)?;
        let value = hex::encode(buf);
        create_new(&path, format!("{value}\n").as_bytes(), 0o600)?;
        tracing::info!(path = %path.display(), "generated {name}");
        Ok(value)
    }
}

/// Open (creating if needed) and `flock` the lock file; record our pid in it.
fn take_lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io("open the lock file", &path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = if pid.trim().is_empty() { "unknown".to_string() } else { pid.trim().to_string() };
            return Err(StateDirError::Locked { pid, dir: dir.to_path_buf() });
        }
        Err(TryLockError::Error(source)) => return Err(StateDirError::Io { action: "lock", path, source }),
    }
    file.set_len(0).map_err(io("write the lock file", &path))?;
    writeln!(file, "{}", std::process::id()).map_err(io("write the lock file", &path))?;
    Ok(file)
}

fn read_string(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(io("read", path))
}

/// Read a file that must be readable by its owner only.
fn read_secret(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(io("inspect", path))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StateDirError::Permissions { path: path.to_path_buf(), mode });
    }
    read_string(path)
}

/// Create `path` with `mode` (it must not exist) and write `contents`, synced.
fn create_new(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).mode(mode).open(path).map_err(io("create", path))?;
    file.write_all(contents).map_err(io("write", path))?;
    file.sync_all().map_err(io("sync", path))
}

/// Replace `path` atomically: write a new file with `mode` beside it, then rename it over.
pub(crate) fn replace_file(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    let mut tmp_name = path.file_name().map(OsString::from).unwrap_or_default();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let _ = std::fs::remove_file(&tmp); // a leftover of a crashed earlier write of ours
    create_new(&tmp, contents, mode)?;
    std::fs::rename(&tmp, path).map_err(io("replace", path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn default_path_prefers_xdg_then_home() {
        let p = default_path_from(Some("/x/state".into()), Some("/home/u".into())).unwrap();
        assert_eq!(p, PathBuf::from("/x/state/drydock"));
        let p = default_path_from(None, Some("/home/u".into())).unwrap();
        assert_eq!(p, PathBuf::from("/home/u/.local/state/drydock"));
        let p = default_path_from(Some("".into()), Some("/home/u".into())).unwrap();
        assert_eq!(p, PathBuf::from("/home/u/.local/state/drydock"));
        let err = default_path_from(None, Some("".into())).unwrap_err();
        assert!(err.to_string().contains("--state-dir"), "{err}");
    }

    #[test]
    fn dir_is_0700_and_secrets_are_0600() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("nested/state");
        let state = StateDir::open(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let token = state.token().unwrap();
        assert_eq!(token.len(), 64);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        state.certificates(&[]).unwrap();
        assert!(state.identity().unwrap().starts_with("drydock-daemon-"));
        for file in [TOKEN_FILE, ID_FILE, CA_KEY_FILE, SERVER_KEY_FILE, LOCK_FILE] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
    }

    #[test]
    fn a_clean_stop_is_believed_once_and_a_kill_never() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        assert!(state.take_clean_stop().unwrap(), "no store yet: no earlier life");
        std::fs::write(state.store_path(), b"").unwrap();
        assert!(!state.take_clean_stop().unwrap(), "a store and no record: as after a kill -9");
        state.record_clean_stop().unwrap();
        assert_eq!(mode(&tmp.path().join(CLEAN_STOP_FILE)), 0o600);
        drop(state);
        let state = StateDir::open(tmp.path()).unwrap();
        assert!(state.take_clean_stop().unwrap(), "recorded by the last life");
        assert!(!state.take_clean_stop().unwrap(), "taken: this life counts as crashed until it records");
    }

    #[test]
    fn token_id_and_ca_are_reused_across_starts() {
        let tmp = tempfile::tempdir().unwrap();
        let (token, id, certs) = {
            let state = StateDir::open(tmp.path()).unwrap();
            (state.token().unwrap(), state.identity().unwrap(), state.certificates(&[]).unwrap())
        };
        let state = StateDir::open(tmp.path()).unwrap();
        assert_eq!(state.token().unwrap(), token);
        assert_eq!(state.identity().unwrap(), id);
        let again = state.certificates(&[]).unwrap();
        assert_eq!(again.ca_pem, certs.ca_pem);
        assert_eq!(again.server_cert_pem, certs.server_cert_pem, "a fitting server cert is kept");
        // A new listen IP needs a new server cert, from the same CA.
        let wider = state.certificates(&["192.0.2.7".parse().unwrap()]).unwrap();
        assert_eq!(wider.ca_pem, certs.ca_pem);
        assert_ne!(wider.server_cert_pem, certs.server_cert_pem);
        assert!(tls::server_cert_fits(&wider.server_cert_pem, &wider.ca_pem, &tls::server_names(&[])).unwrap());
    }

    #[test]
    fn second_lock_is_refused_naming_pid_and_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let _first = StateDir::open(tmp.path()).unwrap();
        let err = StateDir::open(tmp.path()).unwrap_err();
        let message = err.to_string();
        let dir = tmp.path().canonicalize().unwrap();
        assert!(matches!(err, StateDirError::Locked { .. }), "{err:?}");
        assert!(message.contains(&format!("pid {}", std::process::id())), "{message}");
        assert!(message.contains(&dir.display().to_string()), "{message}");
        assert!(message.contains("stop it first or use --state-dir"), "{message}");
        drop(_first);
        StateDir::open(tmp.path()).expect("the lock is released on drop");
    }

    #[test]
    fn bad_token_files_are_errors_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        let path = tmp.path().join(TOKEN_FILE);
        create_new(&path, b"\n", 0o600).unwrap();
        let err = state.token().unwrap_err().to_string();
        assert!(err.contains("empty") && err.contains(TOKEN_FILE), "{err}");
        std::fs::write(&path, "abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = state.token().unwrap_err().to_string();
        assert!(err.contains("644") && err.contains(TOKEN_FILE), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc\n", "left as it was");
    }

    #[test]
    fn half_a_ca_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        state.certificates(&[]).unwrap();
        std::fs::remove_file(tmp.path().join(CA_KEY_FILE)).unwrap();
        let err = state.certificates(&[]).unwrap_err().to_string();
        assert!(err.contains(CA_KEY_FILE) && err.contains("missing"), "{err}");
    }
}
