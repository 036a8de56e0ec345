//! The client configuration the daemon writes for kubectl and kube-rs.
//!
//! One cluster `drydock` (`server: https://ADDR`, the daemon's CA as
//! `certificate-authority-data`), one user `drydock` (the bearer token), one context `drydock`
//! (namespace `default`), which is the current context.
//!
//! *Guarantees*: the file is created with mode 0600 (a new file beside the target, renamed over
//! it: never world-readable, not even for a moment, and never half-written). A file at the path
//! that is not a kubeconfig drydock wrote (for instance `~/.kube/config` with other clusters) is
//! refused, not overwritten.
//!
//! *Caveats*: the token is in the file in clear, as kubeconfigs have it: whoever can read the
//! file can use the daemon.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The cluster, user and context name drydock uses.
pub const NAME: &str = "drydock";

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error(
        "refusing to overwrite {}: it is not a kubeconfig drydock wrote ({reason}); choose another --kubeconfig",
        path.display()
    )]
    Foreign { path: PathBuf, reason: String },
    #[error("cannot write the kubeconfig {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: Box<crate::state_dir::StateDirError>,
    },
    #[error("cannot create the directory of the kubeconfig {}", path.display())]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialize the kubeconfig")]
    Yaml(#[from] serde_yaml_ng::Error),
}

/// A kubeconfig, as much of it as drydock writes.
#[derive(Serialize, Deserialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct Kubeconfig {
    pub api_version: String,
    pub kind: String,
    pub clusters: Vec<NamedCluster>,
    pub users: Vec<NamedUser>,
    pub contexts: Vec<NamedContext>,
    pub current_context: String,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct NamedCluster {
    pub name: String,
    pub cluster: Cluster,
}

#[derive(Serialize, Deserialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    pub server: String,
    /// The CA's PEM, base64.
    pub certificate_authority_data: String,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct NamedUser {
    pub name: String,
    pub user: User,
}

#[derive(Serialize, Deserialize)]
pub struct User {
    /// Secret.
    pub token: String,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("User { token: <secret> }")
    }
}

#[derive(Serialize, Deserialize, Debug)]
pub struct NamedContext {
    pub name: String,
    pub context: Context,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Context {
    pub cluster: String,
    pub user: String,
    pub namespace: String,
}

impl Kubeconfig {
    /// The kubeconfig for a daemon at `server_url` trusting `ca_pem`, authenticating with `token`.
    pub fn new(server_url: &str, ca_pem: &str, token: &str) -> Kubeconfig {
        let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
        Kubeconfig {
            api_version: "v1".into(),
            kind: "Config".into(),
            clusters: vec![NamedCluster {
                name: NAME.into(),
                cluster: Cluster { server: server_url.into(), certificate_authority_data: ca },
            }],
            users: vec![NamedUser { name: NAME.into(), user: User { token: token.into() } }],
            contexts: vec![NamedContext {
                name: NAME.into(),
                context: Context { cluster: NAME.into(), user: NAME.into(), namespace: "default".into() },
            }],
            current_context: NAME.into(),
        }
    }
}

/// Write the kubeconfig for `server_url` to `path` (mode 0600), creating its directory.
pub fn write(path: &Path, server_url: &str, ca_pem: &str, token: &str) -> Result<(), KubeconfigError> {
    refuse_foreign(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| KubeconfigError::Dir { path: path.into(), source })?;
    }
    let yaml = serde_yaml_ng::to_string(&Kubeconfig::new(server_url, ca_pem, token))?;
    crate::state_dir::replace_file(path, yaml.as_bytes(), 0o600)
        .map_err(|source| KubeconfigError::Write { path: path.into(), source: Box::new(source) })
}

/// An existing file at `path` must be a kubeconfig with only drydock's cluster in it.
fn refuse_foreign(path: &Path) -> Result<(), KubeconfigError> {
    let foreign = |reason: String| KubeconfigError::Foreign { path: path.into(), reason };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(foreign(format!("cannot read it: {e}"))),
    };
    let config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| foreign(format!("cannot parse it: {e}")))?;
    if config.get("kind").and_then(|k| k.as_str()) != Some("Config") {
        return Err(foreign("it has no `kind: Config`".into()));
    }
    let clusters = config.get("clusters").and_then(|c| c.as_sequence()).map(Vec::as_slice).unwrap_or_default();
    match clusters.iter().map(|c| c.get("name").and_then(|n| n.as_str())).find(|n| *n != Some(NAME)) {
        Some(other) => Err(foreign(format!("it has a cluster named {:?}", other.unwrap_or("")))),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn written_0600_with_cluster_user_context() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub/kubeconfig");
        write(&path, "https://127.0.0.1:1234", "CA PEM", "secret-token").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(yaml["current-context"], "drydock");
        assert_eq!(yaml["clusters"][0]["name"], "drydock");
        assert_eq!(yaml["clusters"][0]["cluster"]["server"], "https://127.0.0.1:1234");
        let ca = yaml["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap();
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(ca).unwrap(), b"CA PEM");
        assert_eq!(yaml["users"][0]["user"]["token"], "secret-token");
        assert_eq!(yaml["contexts"][0]["context"]["namespace"], "default");
        assert_eq!(yaml["contexts"][0]["context"]["cluster"], "drydock");
        // Rewriting our own file is fine.
        write(&path, "https://127.0.0.1:99", "CA PEM", "secret-token").unwrap();
    }

    #[test]
    fn a_foreign_kubeconfig_is_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config");
        let other = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://prod\n";
        std::fs::write(&path, other).unwrap();
        let err = write(&path, "https://127.0.0.1:1", "CA", "t").unwrap_err().to_string();
        assert!(err.contains("prod") && err.contains("refusing"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), other);
        std::fs::write(&path, "not: [yaml").unwrap();
        assert!(write(&path, "https://127.0.0.1:1", "CA", "t").is_err());
    }
}
