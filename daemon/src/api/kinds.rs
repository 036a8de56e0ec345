//! How each registered kind is named over HTTP: group, version, plural, singular, short names,
//! scope and subresources.
//!
//! *Guarantees*: every kind of the store's [`Registry`] has exactly one [`KindDesc`]; the built-in
//! kinds get hand-picked short names (`pc`, `img`, `lc`, `ns`), others a lowercase plural with an
//! `s`. `group_version` is the registry's, so `apiVersion` on the wire always matches the kind.

use drydock_engine::store::Registry;

/// One kind as the HTTP API serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindDesc {
    pub kind: String,
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Whether `.../status` is served.
    pub has_status: bool,
}

impl KindDesc {
    /// `v1` or `drydock.dev/v1`.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The error subject for an object of this kind.
    pub fn subject(&self, name: &str) -> super::status::Subject {
        super::status::Subject { name: name.to_string(), group: self.group.clone(), kind: self.plural.clone() }
    }
}

/// The verbs every resource supports.
pub const VERBS: [&str; 7] = ["create", "delete", "get", "list", "patch", "update", "watch"];

/// All kinds of `registry`, sorted by kind.
pub fn all(registry: &Registry) -> Vec<KindDesc> {
    registry.kinds().map(|info| describe(&info.kind, &info.group_version, info.namespaced)).collect()
}

/// The kinds served under `group_version`.
pub fn in_group_version(registry: &Registry, group_version: &str) -> Vec<KindDesc> {
    all(registry).into_iter().filter(|k| k.group_version() == group_version).collect()
}

/// The kind served as `plural` under `group_version`.
pub fn by_plural(registry: &Registry, group_version: &str, plural: &str) -> Option<KindDesc> {
    in_group_version(registry, group_version).into_iter().find(|k| k.plural == plural)
}

/// The groups other than core, with their versions.
pub fn groups(registry: &Registry) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for kind in all(registry).into_iter().filter(|k| !k.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == kind.group) {
            Some((_, versions)) if !versions.contains(&kind.version) => versions.push(kind.version),
            Some(_) => {}
            None => groups.push((kind.group, vec![kind.version])),
        }
    }
    groups
}

fn describe(kind: &str, group_version: &str, namespaced: bool) -> KindDesc {
    let (group, version) = match group_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), group_version.to_string()),
    };
    let singular = kind.to_ascii_lowercase();
    let (plural, short_names): (String, &[&str]) = match kind {
        "Namespace" => ("namespaces".into(), &["ns"]),
        "PhysicalContainer" => ("physicalcontainers".into(), &["pc", "pcs"]),
        "ContainerImage" => ("containerimages".into(), &["img", "imgs"]),
        "LogicalContainer" => ("logicalcontainers".into(), &["lc", "lcs"]),
        "ContainerNetwork" => ("containernetworks".into(), &["net", "nets"]),
        "ContainerVolume" => ("containervolumes".into(), &["vol", "vols"]),
        "Lease" => ("leases".into(), &["dlease"]),
        _ => (format!("{singular}s"), &[]),
    };
    KindDesc {
        kind: kind.to_string(),
        group,
        version,
        plural,
        singular,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        namespaced,
        has_status: kind != "Lease",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_have_their_names() {
        let registry = Registry::builtin();
        let pc = by_plural(&registry, "drydock.dev/v1", "physicalcontainers").unwrap();
        assert_eq!((pc.kind.as_str(), pc.namespaced), ("PhysicalContainer", true));
        assert!(pc.short_names.contains(&"pc".to_string()));
        let ns = by_plural(&registry, "v1", "namespaces").unwrap();
        assert_eq!((ns.group.as_str(), ns.group_version()), ("", "v1".to_string()));
        assert!(by_plural(&registry, "v1", "physicalcontainers").is_none());
        assert_eq!(groups(&registry), vec![("drydock.dev".to_string(), vec!["v1".to_string()])]);
    }
}
