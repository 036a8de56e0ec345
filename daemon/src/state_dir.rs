//! The daemon's state directory: its lock, bearer token, identity, certificates and the paths of
//! its store and default kubeconfig.
//!
//! Layout (all in one directory, mode 0700; every file mode 0600):
//!
//! | file | what |
//! | --- | --- |
//! | `lock` | held (`flock`) for the daemon's life; holds its pid |
//! | `token` | the bearer token: 32 random bytes from the OS, hex |
//! | `id` | the daemon's identity id (`drydock-daemon-<id>`) |
//! | `ca.crt`, `ca.key` | the daemon's own CA (10 years) |
//! | `server.crt`, `server.key` | the serving certificate (one year), signed by the CA |
//! | `store.db` (and SQLite's `-wal`, `-shm`, `-journal`) | the durable store (specs, env values) |
//! | `kubeconfig` | the client config, unless `--kubeconfig` says elsewhere |
//! | `clean-stop` | present only between a stop with no runtime request in flight and the next start |
//!
//! *Guarantees*: a [`StateDir`] is held by one process at a time (an exclusive `flock` on
//! `lock`, released when the process ends, even by a crash); a second [`StateDir::open`] on the
//! same directory fails with [`StateDirError::Locked`] naming the holder's pid. Secrets are
//! created with mode 0600 from the start (never written and then chmod-ed). The token, the id and
//! the CA are generated once and reused on every later start. A file that exists but cannot be
//! read or parsed is never silently replaced: the error names it, and the user decides.
//!
//! Modes are repaired at every open, whatever an earlier version, the user's umask or a
//! directory made beforehand left: the directory becomes 0700 and each file above that exists
//! 0600 (each change logged). A directory or file owned by another user is refused
//! ([`StateDirError::NotOurs`]): its owner could read or change it whatever its mode. The daemon
//! also sets its umask to 0077 ([`restrict_umask`]), so the files SQLite creates (`-wal`, `-shm`,
//! a new `store.db`) are 0600 from the start.
//!
//! *Caveats*: a secret file (`token`, `ca.key`, `server.key`) readable by group or others is
//! refused, not repaired: someone else may have read it, so the user should look, then
//! `chmod 600` it or delete it (a deleted token or CA is generated anew; clients need the new
//! kubeconfig). The store is repaired (logged as a warning), not refused: its readers could have
//! seen specs and env values, but refusing would only stop the daemon. The lock is advisory: it
//! keeps out other daemons, not other programs.

use crate::tls::{self, CertError};
use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{Read as _, Write as _};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
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

/// The files drydock writes in the state dir: each one that exists is made 0600 at open.
pub const FILES: [&str; 13] = [
    LOCK_FILE,
    TOKEN_FILE,
    ID_FILE,
    CA_CERT_FILE,
    CA_KEY_FILE,
    SERVER_CERT_FILE,
    SERVER_KEY_FILE,
    STORE_FILE,
    "store.db-wal",
    "store.db-shm",
    "store.db-journal",
    KUBECONFIG_FILE,
    CLEAN_STOP_FILE,
];

/// The secrets: one readable by group or others is refused (by whoever reads it), not repaired.
const SECRETS: [&str; 3] = [TOKEN_FILE, CA_KEY_FILE, SERVER_KEY_FILE];

/// The umask the daemon runs with: nothing for group or others.
pub const UMASK: u32 = 0o077;

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
    #[error(
        "{} is owned by uid {owner}, not by this user (uid {uid}): its owner can read or change it \
         whatever its mode, so drydock will not use it; `chown` it to this user, or use another \
         --state-dir",
        path.display()
    )]
    NotOurs { path: PathBuf, owner: u32, uid: u32 },
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

/// Set the process umask to [`UMASK`] (0077), so every file the process creates from now on
/// (SQLite's `-wal` and `-shm` among them) is readable by its owner only. Returns the umask it
/// replaced.
///
/// *Caveats*: the umask is the whole process's: call it at start, before other threads create
/// files they mean to share.
pub fn restrict_umask() -> u32 {
    let previous = rustix::process::umask(rustix::fs::Mode::from_raw_mode(UMASK)).as_raw_mode();
    if previous & UMASK != UMASK {
        tracing::debug!(previous = format_args!("{previous:04o}"), "umask set to 0077");
    }
    previous
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
    /// Create the directory (mode 0700) if needed, take its lock and repair its modes: the
    /// directory 0700, each of drydock's [`FILES`] that exists 0600.
    ///
    /// *Guarantees*: on success the lock file holds this process's pid, and the directory and
    /// its files are this user's with those modes (a secret readable by others is left for its
    /// reader to refuse). On [`StateDirError::Locked`] nothing in the directory was changed. A
    /// directory or file owned by another user is [`StateDirError::NotOurs`].
    pub fn open(path: &Path) -> Result<StateDir> {
        DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io("create the state dir", path))?;
        let path = path.canonicalize().map_err(io("resolve the state dir", path))?;
        check_owner(&path, &std::fs::metadata(&path).map_err(io("inspect", &path))?)?;
        let lock = take_lock(&path)?;
        repair_modes(&path)?;
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
    /// *Guarantees*: the CA is generated once (valid 10 years) and kept. The server certificate
    /// (valid one year) is kept while it covers the names needed, is signed by the CA and has 30
    /// days or more left; otherwise it is renewed, from the same CA, saying why (logged; see
    /// [`tls::server_cert_renewal`]). Every file is written 0600.
    ///
    /// *Caveats*: `ca.crt` without `ca.key` (or the reverse) is an error: delete both to make a
    /// new CA, after which clients need the new kubeconfig. So is an expired CA, for the same
    /// reason: it is never replaced silently. One with less than a year left is logged as a
    /// warning at every start.
    pub fn certificates(&self, extra_ips: &[IpAddr]) -> Result<Certificates> {
        self.certificates_at(extra_ips, time::OffsetDateTime::now_utc())
    }

    /// [`Self::certificates`] as at `now`.
    fn certificates_at(&self, extra_ips: &[IpAddr], now: time::OffsetDateTime) -> Result<Certificates> {
        let (ca_pem, ca_key_pem, ca_new) = self.ca(now)?;
        let names = tls::server_names(extra_ips);
        let cert_path = self.path.join(SERVER_CERT_FILE);
        let key_path = self.path.join(SERVER_KEY_FILE);
        if !ca_new && cert_path.exists() && key_path.exists() {
            let cert_pem = read_string(&cert_path)?;
            let key_pem = read_secret(&key_path)?;
            let cert_err = |source| StateDirError::Cert { path: cert_path.clone(), source };
            match tls::server_cert_renewal(&cert_pem, &ca_pem, &names, now).map_err(cert_err)? {
                None => return Ok(Certificates { ca_pem, server_cert_pem: cert_pem, server_key_pem: key_pem }),
                Some(why) => {
                    tracing::info!(path = %cert_path.display(), ?names, "renewing the server certificate: {why}");
                }
            }
        }
        let issued = tls::issue_server_cert(&ca_pem, &ca_key_pem, &names, now)
            .map_err(|source| StateDirError::Cert { path: self.path.join(CA_CERT_FILE), source })?;
        replace_file(&key_path, issued.key_pem.as_bytes(), 0o600)?;
        replace_file(&cert_path, issued.cert_pem.as_bytes(), 0o600)?;
        Ok(Certificates { ca_pem, server_cert_pem: issued.cert_pem, server_key_pem: issued.key_pem })
    }

    /// The CA's certificate and key PEM, and whether they were generated just now.
    fn ca(&self, now: time::OffsetDateTime) -> Result<(String, String, bool)> {
        let cert_path = self.path.join(CA_CERT_FILE);
        let key_path = self.path.join(CA_KEY_FILE);
        match (cert_path.exists(), key_path.exists()) {
            (true, true) => {
                let (cert_pem, key_pem) = (read_string(&cert_path)?, read_secret(&key_path)?);
                check_ca_expiry(&cert_path, &cert_pem, now)?;
                Ok((cert_pem, key_pem, false))
            }
            (false, false) => {
                let ca = tls::generate_ca_at(now)
                    .map_err(|source| StateDirError::Cert { path: cert_path.clone(), source })?;
                create_new(&key_path, ca.key_pem.as_bytes(), 0o600)?;
                create_new(&cert_path, ca.cert_pem.as_bytes(), 0o600)?;
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

/// An expired CA is an error (never replaced silently: clients trust it); one with less than a
/// year left is a warning.
fn check_ca_expiry(path: &Path, cert_pem: &str, now: time::OffsetDateTime) -> Result<()> {
    let not_after =
        tls::not_after(cert_pem).map_err(|source| StateDirError::Cert { path: path.to_path_buf(), source })?;
    let renew =
        "delete ca.crt and ca.key to have a new CA made at the next start (clients then need the new kubeconfig)";
    if not_after <= now {
        return Err(StateDirError::Invalid {
            path: path.to_path_buf(),
            reason: format!("the CA expired on {not_after}; {renew}"),
        });
    }
    if not_after - now < time::Duration::days(365) {
        tracing::warn!(path = %path.display(), %not_after, "the daemon's CA expires in less than a year; {renew}");
    }
    Ok(())
}

/// Refuse `path` (whose metadata is `meta`) unless this process's user owns it.
fn check_owner(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let uid = rustix::process::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(StateDirError::NotOurs { path: path.to_path_buf(), owner: meta.uid(), uid });
    }
    Ok(())
}

/// Make `dir` 0700 and each of [`FILES`] in it that exists 0600, except a secret readable by
/// group or others (its reader refuses it). Each change is logged.
fn repair_modes(dir: &Path) -> Result<()> {
    repair_mode(dir, 0o700)?;
    for name in FILES {
        let path = dir.join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("inspect", &path)(e)),
        };
        let exposed_secret = SECRETS.contains(&name) && meta.permissions().mode() & 0o077 != 0;
        if !exposed_secret {
            repair_mode(&path, 0o600)?;
        }
    }
    Ok(())
}

/// Give `path` (ours, or refused) exactly `mode`, if it has another.
fn repair_mode(path: &Path, mode: u32) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(io("inspect", path))?;
    check_owner(path, &meta)?;
    let had = meta.permissions().mode() & 0o7777;
    if had == mode {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io("change the mode of", path))?;
    let (had, mode) = (format!("{had:04o}"), format!("{mode:04o}"));
    if had.ends_with("00") {
        tracing::info!(path = %path.display(), had, mode, "repaired the mode");
    } else {
        tracing::warn!(path = %path.display(), had, mode, "group or others could use it: made it private");
    }
    Ok(())
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
        for file in [TOKEN_FILE, ID_FILE, CA_KEY_FILE, SERVER_KEY_FILE, LOCK_FILE, CA_CERT_FILE, SERVER_CERT_FILE] {
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
        let now = time::OffsetDateTime::now_utc();
        assert!(tls::server_cert_fits(&wider.server_cert_pem, &wider.ca_pem, &tls::server_names(&[]), now).unwrap());
    }

    #[test]
    fn modes_are_repaired_at_open() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let loose = [STORE_FILE, "store.db-wal", "store.db-shm", ID_FILE, CA_CERT_FILE, KUBECONFIG_FILE, LOCK_FILE];
        for name in loose {
            create_new(&dir.join(name), b"", 0o644).unwrap();
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        create_new(&dir.join(TOKEN_FILE), b"abc\n", 0o400).unwrap();
        std::fs::write(dir.join("mine.txt"), b"").unwrap();
        std::fs::set_permissions(dir.join("mine.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let state = StateDir::open(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        for name in loose.iter().chain(&[TOKEN_FILE]) {
            assert_eq!(mode(&dir.join(name)), 0o600, "{name}");
        }
        assert_eq!(mode(&dir.join("mine.txt")), 0o644, "a file drydock does not write is left alone");
        assert_eq!(state.token().unwrap(), "abc");
    }

    #[test]
    fn an_exposed_secret_is_refused_not_repaired() {
        let tmp = tempfile::tempdir().unwrap();
        create_new(&tmp.path().join(CA_KEY_FILE), b"not a key", 0o600).unwrap();
        create_new(&tmp.path().join(CA_CERT_FILE), b"not a cert", 0o600).unwrap();
        std::fs::set_permissions(tmp.path().join(CA_KEY_FILE), std::fs::Permissions::from_mode(0o640)).unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        assert_eq!(mode(&tmp.path().join(CA_KEY_FILE)), 0o640, "left for the user to look at");
        let err = state.certificates(&[]).unwrap_err();
        assert!(matches!(err, StateDirError::Permissions { .. }), "{err}");
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }

    #[test]
    fn a_file_of_another_user_is_refused() {
        if rustix::process::geteuid().as_raw() != 0 {
            return; // only root can give a file away
        }
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join(STORE_FILE);
        create_new(&store, b"", 0o600).unwrap();
        std::os::unix::fs::chown(&store, Some(65534), Some(65534)).unwrap();
        let err = StateDir::open(tmp.path()).unwrap_err();
        assert!(matches!(err, StateDirError::NotOurs { owner: 65534, .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(STORE_FILE) && message.contains("chown"), "{message}");
        std::os::unix::fs::chown(tmp.path(), Some(65534), Some(65534)).unwrap();
        let err = StateDir::open(tmp.path()).unwrap_err();
        assert!(matches!(err, StateDirError::NotOurs { .. }), "the directory too: {err:?}");
    }

    #[test]
    fn the_umask_keeps_new_files_private() {
        let tmp = tempfile::tempdir().unwrap();
        let previous = restrict_umask();
        std::fs::write(tmp.path().join("new"), b"").unwrap();
        rustix::process::umask(rustix::fs::Mode::from_raw_mode(previous));
        assert_eq!(mode(&tmp.path().join("new")), 0o600);
    }

    #[test]
    fn a_server_cert_with_10_days_left_is_renewed_from_the_same_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        let now = time::OffsetDateTime::now_utc();
        let old = state.certificates_at(&[], now - time::Duration::days(355)).unwrap();
        let left = tls::not_after(&old.server_cert_pem).unwrap() - now;
        assert!(left < time::Duration::days(11) && left > time::Duration::days(9), "{left}");
        drop(state);
        let state = StateDir::open(tmp.path()).unwrap();
        let new = state.certificates(&[]).unwrap();
        assert_eq!(new.ca_pem, old.ca_pem, "the same CA");
        assert_ne!(new.server_cert_pem, old.server_cert_pem, "renewed");
        assert!(tls::server_cert_fits(&new.server_cert_pem, &old.ca_pem, &tls::server_names(&[]), now).unwrap());
        assert!(tls::not_after(&new.server_cert_pem).unwrap() - now > time::Duration::days(364));
        assert_eq!(std::fs::read_to_string(tmp.path().join(SERVER_CERT_FILE)).unwrap(), new.server_cert_pem);
        let again = state.certificates(&[]).unwrap();
        assert_eq!(again.server_cert_pem, new.server_cert_pem, "kept once renewed");
    }

    #[test]
    fn an_expired_ca_is_an_error_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path()).unwrap();
        let long_ago = time::OffsetDateTime::now_utc() - tls::CA_VALIDITY - time::Duration::days(1);
        let old = state.certificates_at(&[], long_ago).unwrap();
        let err = state.certificates(&[]).unwrap_err().to_string();
        assert!(err.contains("expired") && err.contains("delete ca.crt and ca.key"), "{err}");
        assert_eq!(std::fs::read_to_string(tmp.path().join(CA_CERT_FILE)).unwrap(), old.ca_pem);
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
