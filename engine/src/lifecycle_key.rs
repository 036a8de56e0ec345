//! The lifecycle key: which runtime container a persistent logical container may reuse.
//!
//! SHA-256 over a canonical, versioned encoding of the spec fields that define the container's
//! content: the image (or the caller's build digests), env, mounts, ports, copied files and
//! labels. Networks, aliases, the container name, the mode, command and args, `stop` and `replace`
//! are excluded: changing them must not recreate a persistent container (DCP leaves command and
//! args out too). A custom key in the spec is used verbatim.
//!
//! *Guarantees*
//! - A pure function of the spec: it reads no files, no environment, no clock.
//! - Declaration order never matters: every set-like list is sorted by a total order before
//!   encoding (env by name, the last of duplicate names winning; mounts by target; ports by
//!   protocol, host port, container port, host IP; files by destination; labels by key; ties broken
//!   by the remaining fields), so two orderings of one spec cannot give two keys, unlike DCP's port
//!   comparator, which is not total.
//! - Every included field is length-prefixed, so no two different specs encode the same bytes.
//! - The encoding is versioned (`v1`); a golden test pins it, because changing it would make every
//!   persistent container look changed and be replaced.

use crate::api::container::Protocol;
use crate::api::logical::LogicalContainerSpec;
use crate::api::runtime_names::normalize_image_reference;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

const VERSION: &[u8] = b"drydock-lifecycle-key/v1";

/// The key of `spec`: its custom key if set, else `sha256:<hex>` of the canonical encoding.
pub fn lifecycle_key(spec: &LogicalContainerSpec) -> String {
    if let Some(custom) = &spec.lifecycle_key {
        return custom.clone();
    }
    format!("sha256:{}", hex::encode(Sha256::digest(canonical_encoding(spec))))
}

/// The bytes the key hashes.
pub fn canonical_encoding(spec: &LogicalContainerSpec) -> Vec<u8> {
    let mut out = Encoder(Vec::with_capacity(256));
    out.bytes(VERSION);
    match (&spec.image, &spec.image_ref, spec.build_digests.is_empty()) {
        (_, _, false) => {
            out.field("build");
            let mut digests = spec.build_digests.clone();
            digests.sort();
            out.list(digests.iter().map(|d| vec![d.as_str()]));
        }
        (Some(image), _, true) => {
            out.field("image");
            out.str(&normalize_image_reference(image));
        }
        (None, Some(reference), true) => {
            out.field("image-ref");
            out.str(reference);
        }
        (None, None, true) => out.field("no-image"),
    }
    out.field("env");
    let env: BTreeMap<&str, &str> = spec.env.iter().map(|e| (e.name.as_str(), e.value.as_str())).collect();
    out.list(env.iter().map(|(k, v)| vec![*k, *v]));
    out.field("mounts");
    let mut mounts: Vec<(&str, &str, &str)> = spec
        .mounts
        .iter()
        .map(|m| (m.target.as_str(), m.source.as_str(), if m.read_only { "ro" } else { "rw" }))
        .collect();
    mounts.sort();
    out.list(mounts.iter().map(|(t, s, ro)| vec![*t, *s, *ro]));
    out.field("ports");
    let mut ports: Vec<(u8, Option<u16>, u16, &str)> = spec
        .ports
        .iter()
        .map(|p| {
            let protocol = match p.protocol {
                Protocol::Tcp => 0,
                Protocol::Udp => 1,
            };
            (protocol, p.host_port, p.container_port, p.host_ip.as_deref().unwrap_or(""))
        })
        .collect();
    ports.sort();
    let ports: Vec<[String; 4]> = ports
        .iter()
        .map(|(proto, host, container, ip)| {
            let host = host.map_or_else(|| "-".to_string(), |h| h.to_string());
            [proto.to_string(), host, container.to_string(), ip.to_string()]
        })
        .collect();
    out.list(ports.iter().map(|p| p.iter().map(String::as_str).collect()));
    out.field("files");
    // An owner other than root's adds a fourth part, so the keys of files owned by root (all
    // there were before owners existed) did not change.
    let mut files: Vec<(&str, String, &str, Option<String>)> = spec
        .files
        .iter()
        .map(|f| {
            let owner = (f.owner, f.group) != (0, 0);
            (
                f.destination.as_str(),
                format!("{:o}", f.mode),
                f.contents.as_str(),
                owner.then(|| format!("{}:{}", f.owner, f.group)),
            )
        })
        .collect();
    files.sort();
    out.list(files.iter().map(|(d, m, c, o)| {
        let mut item = vec![*d, m.as_str(), *c];
        item.extend(o.as_deref());
        item
    }));
    out.field("labels");
    out.list(spec.labels.iter().map(|(k, v)| vec![k.as_str(), v.as_str()]));
    out.0
}

struct Encoder(Vec<u8>);

impl Encoder {
    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(&(b.len() as u64).to_be_bytes());
        self.0.extend_from_slice(b);
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn field(&mut self, name: &str) {
        self.0.push(0xff);
        self.str(name);
    }

    fn list<'a>(&mut self, items: impl ExactSizeIterator<Item = Vec<&'a str>>) {
        self.0.extend_from_slice(&(items.len() as u64).to_be_bytes());
        for item in items {
            self.0.extend_from_slice(&(item.len() as u64).to_be_bytes());
            for part in item {
                self.str(part);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::container::{CopiedFile, EnvVar, Mount, NetworkAttachment, PortMapping};
    use crate::api::logical::LogicalMode;
    use proptest::prelude::*;

    fn golden_spec() -> LogicalContainerSpec {
        LogicalContainerSpec {
            mode: LogicalMode::Persistent,
            image: Some("postgres:16".into()),
            container_name: Some("db".into()),
            env: vec![
                EnvVar { name: "POSTGRES_USER".into(), value: "app".into() },
                EnvVar { name: "PGDATA".into(), value: "/data".into() },
            ],
            labels: [("team".to_string(), "core".to_string())].into_iter().collect(),
            ports: vec![PortMapping {
                protocol: Protocol::Tcp,
                host_port: Some(5432),
                container_port: 5432,
                host_ip: None,
            }],
            mounts: vec![Mount { source: "pgdata".into(), target: "/data".into(), read_only: false }],
            files: vec![CopiedFile {
                destination: "/etc/motd".into(),
                contents: "hi".into(),
                mode: 0o644,
                owner: 0,
                group: 0,
            }],
            command: vec!["postgres".into()],
            networks: vec![NetworkAttachment { name: "backend".into(), aliases: vec!["db".into()] }],
            ..Default::default()
        }
    }

    /// Pins the v1 encoding. If this fails, every persistent container in the world would be
    /// replaced on upgrade: bump the version deliberately instead, and say so in the release notes.
    #[test]
    fn golden_key_v1() {
        assert_eq!(
            lifecycle_key(&golden_spec()),
            "sha256:216c838826f27fdad0d0b4531edf2fd709369723603bbe97cf0c0118ace8c93a"
        );
    }

    #[test]
    fn custom_key_is_verbatim_and_excluded_fields_do_not_count() {
        let spec = LogicalContainerSpec { lifecycle_key: Some("mine".into()), ..golden_spec() };
        assert_eq!(lifecycle_key(&spec), "mine");
        let base = lifecycle_key(&golden_spec());
        let mut other = golden_spec();
        other.container_name = Some("other".into());
        other.mode = LogicalMode::Session;
        other.networks = vec![];
        other.command = vec!["other".into()];
        other.args = vec!["-x".into()];
        other.stop = true;
        other.replace = true;
        assert_eq!(lifecycle_key(&other), base);
        let mut spelled = golden_spec();
        spelled.image = Some("docker.io/library/postgres:16".into());
        assert_eq!(lifecycle_key(&spelled), base, "equivalent references are one image");
    }

    #[test]
    fn duplicate_env_names_last_wins() {
        let mut a = golden_spec();
        a.env.push(EnvVar { name: "PGDATA".into(), value: "/other".into() });
        let mut b = golden_spec();
        b.env[1].value = "/other".into();
        assert_eq!(lifecycle_key(&a), lifecycle_key(&b));
    }

    fn arb_spec() -> impl Strategy<Value = LogicalContainerSpec> {
        let env = prop::collection::vec(("[A-D]", "[a-c]{0,2}"), 0..5)
            .prop_map(|v| v.into_iter().map(|(name, value)| EnvVar { name, value }).collect::<Vec<_>>());
        let ports = prop::collection::vec((any::<bool>(), prop::option::of(1u16..4), 1u16..4), 0..5).prop_map(|v| {
            v.into_iter()
                .map(|(udp, host_port, container_port)| PortMapping {
                    protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
                    host_port,
                    container_port,
                    host_ip: None,
                })
                .collect::<Vec<_>>()
        });
        let mounts = prop::collection::vec(("[a-c]", "/[x-z]", any::<bool>()), 0..4).prop_map(|v| {
            v.into_iter().map(|(source, target, read_only)| Mount { source, target, read_only }).collect::<Vec<_>>()
        });
        let files = prop::collection::vec(("/[p-r]", "[a-b]{0,2}"), 0..4).prop_map(|v| {
            v.into_iter()
                .map(|(destination, contents)| CopiedFile { destination, contents, mode: 0o644, owner: 0, group: 0 })
                .collect::<Vec<_>>()
        });
        let labels = prop::collection::btree_map("[a-c]", "[a-c]", 0..4);
        (env, ports, mounts, files, labels, "[a-c]{1,3}").prop_map(|(env, ports, mounts, files, labels, image)| {
            LogicalContainerSpec { image: Some(image), env, ports, mounts, files, labels, ..Default::default() }
        })
    }

    /// A permutation of `list` drawn from `seed`.
    fn shuffle<T: Clone>(list: &[T], seed: u64) -> Vec<T> {
        let mut v = list.to_vec();
        let mut s = seed | 1;
        for i in (1..v.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.swap(i, (s % (i as u64 + 1)) as usize);
        }
        v
    }

    /// Env with duplicate names keeps "last wins": permuting it only keeps the key if the last
    /// value of each name stays last, so permute after collapsing duplicates.
    fn dedup_env(env: &[EnvVar]) -> Vec<EnvVar> {
        let map: BTreeMap<&str, &str> = env.iter().map(|e| (e.name.as_str(), e.value.as_str())).collect();
        map.into_iter().map(|(n, v)| EnvVar { name: n.into(), value: v.into() }).collect()
    }

    proptest! {
        #[test]
        fn permuting_set_like_lists_never_changes_the_key(spec in arb_spec(), seed in any::<u64>()) {
            let mut spec = spec;
            spec.env = dedup_env(&spec.env);
            let mut shuffled = spec.clone();
            shuffled.env = shuffle(&spec.env, seed);
            shuffled.ports = shuffle(&spec.ports, seed ^ 1);
            shuffled.mounts = shuffle(&spec.mounts, seed ^ 2);
            shuffled.files = shuffle(&spec.files, seed ^ 3);
            prop_assert_eq!(lifecycle_key(&spec), lifecycle_key(&shuffled));
        }

        #[test]
        fn changing_an_included_field_always_changes_the_key(spec in arb_spec(), which in 0usize..6) {
            let mut changed = spec.clone();
            match which {
                0 => changed.image = Some(format!("{}x", spec.image.clone().unwrap_or_default())),
                1 => changed.env.push(EnvVar { name: "NEW".into(), value: "1".into() }),
                2 => changed.ports.push(PortMapping { protocol: Protocol::Tcp, host_port: Some(9), container_port: 9, host_ip: None }),
                3 => changed.mounts.push(Mount { source: "new".into(), target: "/new".into(), read_only: true }),
                4 => changed.files.push(CopiedFile { destination: "/new".into(), contents: "n".into(), mode: 0o600, owner: 0, group: 0 }),
                _ => { changed.labels.insert("new".into(), "1".into()); }
            }
            prop_assert_ne!(lifecycle_key(&spec), lifecycle_key(&changed));
        }
    }
}
