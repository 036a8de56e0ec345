//! What a persistent container is made of, as the checker sees it from the spec a client wrote:
//! its own comparison, sharing no code with the engine's lifecycle key.
//!
//! Included (a change may replace the container): the image (a reference, compared as Docker
//! would resolve it, by the simulator's own reference rules in `runtime::references`, or an image resource by name, or build digests as a set), env (as a map:
//! names to values, a later entry of a name winning), ports, mounts and copied files (as sets),
//! and labels. A custom lifecycle key stands for all of them. Everything else is excluded (a change
//! must never replace): the container name, networks and aliases, command and args, mode, `stop`
//! and `replace`, and the declaration order of every list.

use crate::runtime::reference_key;
use drydock_engine::api::logical::LogicalContainerSpec;
use std::collections::{BTreeMap, BTreeSet};

/// The content of a spec: two specs with equal content need the same runtime container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Content {
    /// The caller's own key.
    Custom(String),
    Fields {
        image: Image,
        env: BTreeMap<String, String>,
        ports: BTreeSet<(String, Option<u16>, u16, String)>,
        mounts: BTreeSet<(String, String, bool)>,
        files: BTreeSet<(String, u32, String)>,
        labels: BTreeMap<String, String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Image {
    Build(BTreeSet<String>),
    Reference(String),
    Resource(String),
    None,
}

impl Content {
    pub(super) fn of(spec: &LogicalContainerSpec) -> Self {
        if let Some(custom) = &spec.lifecycle_key {
            return Content::Custom(custom.clone());
        }
        let image = if !spec.build_digests.is_empty() {
            Image::Build(spec.build_digests.iter().cloned().collect())
        } else if let Some(reference) = &spec.image {
            Image::Reference(reference_key(reference))
        } else if let Some(name) = &spec.image_ref {
            Image::Resource(name.clone())
        } else {
            Image::None
        };
        Content::Fields {
            image,
            env: spec.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
            ports: spec
                .ports
                .iter()
                .map(|p| {
                    let protocol = format!("{:?}", p.protocol);
                    (protocol, p.host_port, p.container_port, p.host_ip.clone().unwrap_or_default())
                })
                .collect(),
            mounts: spec.mounts.iter().map(|m| (m.target.clone(), m.source.clone(), m.read_only)).collect(),
            files: spec.files.iter().map(|f| (f.destination.clone(), f.mode, f.contents.clone())).collect(),
            labels: spec.labels.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drydock_engine::api::container::{EnvVar, Mount, NetworkAttachment, PortMapping, Protocol};

    fn spec() -> LogicalContainerSpec {
        let env = |n: &str, v: &str| EnvVar { name: n.into(), value: v.into() };
        let port = |c| PortMapping { protocol: Protocol::Tcp, host_port: None, container_port: c, host_ip: None };
        let mount = |s: &str, t: &str| Mount { source: s.into(), target: t.into(), read_only: false };
        LogicalContainerSpec {
            image: Some("nginx:1.27".into()),
            env: vec![env("A", "1"), env("B", "2"), env("C", "3")],
            ports: vec![port(80), port(443)],
            mounts: vec![mount("/srv/a", "/a"), mount("/srv/b", "/b")],
            ..Default::default()
        }
    }

    #[test]
    fn reference_spellings_resolve_alike() {
        for (a, b) in [
            ("nginx", "docker.io/library/nginx:latest"),
            ("library/nginx:1.27", "nginx:1.27"),
            ("localhost:5000/app", "localhost:5000/app:latest"),
            ("ghcr.io/o/app:1", "ghcr.io/o/app:1"),
        ] {
            assert_eq!(reference_key(a), reference_key(b), "{a} vs {b}");
        }
        assert_ne!(reference_key("nginx:1.27"), reference_key("nginx"));
        assert_ne!(reference_key("o/app"), reference_key("app"));
    }

    #[test]
    fn order_and_excluded_fields_do_not_change_content() {
        let base = spec();
        let mut other = base.clone();
        other.env.reverse();
        other.ports.reverse();
        other.mounts.reverse();
        other.command = vec!["sh".into()];
        other.args = vec!["-c".into()];
        other.networks.push(NetworkAttachment { name: "n".into(), aliases: vec!["x".into()] });
        other.container_name = Some("elsewhere".into());
        other.stop = true;
        other.image = Some("docker.io/library/nginx:1.27".into());
        assert_eq!(Content::of(&base), Content::of(&other));
    }

    #[test]
    fn included_fields_change_content() {
        let base = spec();
        let edits: Vec<fn(&mut LogicalContainerSpec)> = vec![
            |s| s.env[0].value = "9".into(),
            |s| {
                s.env.pop();
            },
            |s| s.ports[0].container_port = 81,
            |s| s.mounts[0].source = "/srv/z".into(),
            |s| {
                s.labels.insert("k".into(), "v".into());
            },
            |s| s.image = Some("busybox".into()),
            |s| s.lifecycle_key = Some("mine".into()),
        ];
        for (i, edit) in edits.into_iter().enumerate() {
            let mut other = base.clone();
            edit(&mut other);
            assert_ne!(Content::of(&base), Content::of(&other), "edit {i}");
        }
    }
}
