//! The server the client verbs talk to: the kube client from a kubeconfig, discovery of the
//! kinds it serves (found by kind, plural, singular or short name, as kubectl finds them), and
//! the paths, namespaces and raw requests of the verbs.

use super::Connection;
use anyhow::{Context as _, Result, anyhow, bail};
use kube::api::{Api, ApiResource, DynamicObject};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The kube client for the chosen kubeconfig.
pub(super) async fn connect(connection: &Connection) -> Result<Client> {
    connect_with(connection, |_| {}).await
}

/// The kube client for the chosen kubeconfig, its config adjusted by `adjust`.
pub(super) async fn connect_with(connection: &Connection, adjust: impl FnOnce(&mut Config)) -> Result<Client> {
    let path = match &connection.kubeconfig {
        Some(path) => path.clone(),
        None => match std::env::var_os("KUBECONFIG") {
            Some(path) => PathBuf::from(path),
            None => drydock_daemon::state_dir::default_path().map_err(|e| anyhow!("{e}"))?.join("kubeconfig"),
        },
    };
    let kubeconfig = read_kubeconfig(&path)?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("{}: not a usable kubeconfig", path.display()))?;
    adjust(&mut config);
    Client::try_from(config).context("build the API client")
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig> {
    if !path.exists() {
        bail!("no kubeconfig at {}: start `drydock daemon` (it writes one there) or pass --kubeconfig", path.display());
    }
    Kubeconfig::read_from(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))
}

pub(super) const JSON: &str = "application/json";

pub(super) const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

pub(super) async fn request_json(client: &Client, path: &str, accept: &str) -> Result<Value> {
    let request = http::Request::get(path).header("Accept", accept).body(Vec::new())?;
    Ok(client.request::<Value>(request).await?)
}

pub(super) fn is_not_found(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<kube::Error>(), Some(kube::Error::Api(status)) if status.code == 404)
}

pub(super) fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `KIND/NAME` or `KIND` plus an optional `NAME`.
pub(super) fn split_target<'a>(resource: &'a str, name: Option<&str>) -> (&'a str, Option<String>) {
    match resource.split_once('/') {
        Some((kind, name)) => (kind, Some(name.to_string())),
        None => (resource, name.map(str::to_string)),
    }
}

/// The namespace a request goes to: the one asked, none for all or cluster-scoped kinds, else
/// `default` as kubectl does.
pub(super) fn namespace_for(kind: &Kind, asked: Option<&str>, all: bool) -> Option<String> {
    if !kind.namespaced || all {
        return None;
    }
    Some(asked.unwrap_or("default").to_string())
}

/// One served resource, from discovery.
pub(super) struct Kind {
    pub(super) resource: ApiResource,
    singular: String,
    short_names: Vec<String>,
    pub(super) namespaced: bool,
}

impl Kind {
    pub(super) fn api(&self, client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if self.namespaced => Api::namespaced_with(client.clone(), ns, &self.resource),
            _ => Api::all_with(client.clone(), &self.resource),
        }
    }

    pub(super) fn path(&self, namespace: Option<&str>) -> String {
        let base = if self.resource.group.is_empty() {
            format!("/api/{}", self.resource.version)
        } else {
            format!("/apis/{}/{}", self.resource.group, self.resource.version)
        };
        match namespace {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.resource.plural),
            None => format!("{base}/{}", self.resource.plural),
        }
    }

    /// `namespace`, `physicalcontainer.drydock.dev`, as kubectl names them in its output.
    pub(super) fn qualified(&self) -> String {
        if self.resource.group.is_empty() {
            self.singular.clone()
        } else {
            format!("{}.{}", self.singular, self.resource.group)
        }
    }
}

/// Every resource the server serves (core `v1` and `drydock.dev/v1`).
pub(super) struct Kinds(Vec<Kind>);

impl Kinds {
    pub(super) async fn discover(client: &Client) -> Result<Kinds> {
        let mut kinds = Vec::new();
        for (group, version) in [("", "v1"), ("drydock.dev", "v1")] {
            let path = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
            let list = request_json(client, &path, JSON).await.with_context(|| format!("discovery of {path}"))?;
            for r in list["resources"].as_array().into_iter().flatten() {
                let Some(plural) = r["name"].as_str().filter(|n| !n.contains('/')) else { continue };
                let kind = r["kind"].as_str().unwrap_or_default();
                let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
                let resource = ApiResource {
                    group: group.to_string(),
                    version: version.to_string(),
                    api_version,
                    kind: kind.to_string(),
                    plural: plural.to_string(),
                };
                let singular =
                    r["singularName"].as_str().filter(|s| !s.is_empty()).unwrap_or(&kind.to_lowercase()).to_string();
                let short_names = r["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                kinds.push(Kind { resource, singular, short_names, namespaced: r["namespaced"] == true });
            }
        }
        Ok(Kinds(kinds))
    }

    /// By kind, plural, singular or short name, case-insensitively, optionally with its group
    /// (`lc`, `LogicalContainer`, `logicalcontainers.drydock.dev`).
    pub(super) fn find(&self, name: &str) -> Result<&Kind> {
        let wanted = name.to_lowercase();
        let (wanted, group) = match wanted.split_once('.') {
            Some((name, group)) => (name.to_string(), Some(group.to_string())),
            None => (wanted, None),
        };
        self.0
            .iter()
            .find(|k| {
                group.as_ref().is_none_or(|g| *g == k.resource.group)
                    && (k.resource.kind.to_lowercase() == wanted
                        || k.resource.plural == wanted
                        || k.singular == wanted
                        || k.short_names.contains(&wanted))
            })
            .ok_or_else(|| anyhow!("the server doesn't have a resource type {name:?}"))
    }

    pub(super) fn by_kind(&self, kind: &str) -> Result<&Kind> {
        self.0.iter().find(|k| k.resource.kind == kind).ok_or_else(|| anyhow!("the server doesn't serve kind {kind}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_and_selectors_escape() {
        assert_eq!(split_target("lc/web", None), ("lc", Some("web".to_string())));
        assert_eq!(split_target("lc", Some("web")), ("lc", Some("web".to_string())));
        assert_eq!(url_escape("app=web,tier!=db"), "app%3Dweb%2Ctier%21%3Ddb");
    }
}
