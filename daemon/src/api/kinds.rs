//! How each registered kind is named over HTTP: group, version, plural, singular, short names,
//! scope and subresources.
//!
//! *Guarantees*: every kind of the store's [`Registry`] has exactly one [`KindDesc`], named as
//! its [`KindInfo`] says (`plural`, `short_names`: the built-in kinds' `pc`, `img`, `lc`, `ns`;
//! by default a lowercase plural with an `s` and none). `group_version` is the registry's, so
//! `apiVersion` on the wire always matches the kind.

use drydock_engine::store::{KindInfo, Registry};

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
pub const VERBS: [&str; 8] = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// All kinds of `registry`, sorted by kind.
pub fn all(registry: &Registry) -> Vec<KindDesc> {
    registry.kinds().map(describe).collect()
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

fn describe(info: &KindInfo) -> KindDesc {
    let (group, version) = match info.group_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), info.group_version.clone()),
    };
    KindDesc {
        kind: info.kind.clone(),
        group,
        version,
        plural: info.plural.clone(),
        singular: info.kind.to_ascii_lowercase(),
        short_names: info.short_names.clone(),
        namespaced: info.namespaced,
        has_status: info.kind != "Lease",
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
