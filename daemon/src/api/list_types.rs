//! How each list of the served types merges: the schema knowledge that strategic merge patch
//! (its `patchMergeKey`/`patchStrategy`) and server-side apply (`x-kubernetes-list-type` and
//! `-list-map-keys`) both need.
//!
//! *Guarantees*: one table for both, so a list that a strategic merge patch merges by key is
//! also one whose items server-side apply tracks by key. Keys follow the Kubernetes types these
//! fields copy (`Container.env` by `name`, `ports` by `containerPort` and `protocol`,
//! `volumeMounts` by `mountPath`, conditions by `type`, owner references by `uid`, finalizers as
//! a set).
//!
//! *Assumptions*: paths are field names from the object's root, without list indices
//! (`["spec", "networks"]`); a list inside a keyed item is named through the item
//! (`["spec", "networks", "aliases"]`).
//!
//! *Caveats*: a user's kind has no such table: its lists are atomic (replaced whole), as they are
//! for a CustomResourceDefinition without list-type markers.

/// How a list merges.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole (`x-kubernetes-list-type: atomic`; strategic merge: `replace`).
    Atomic,
    /// A set of scalars (`set`; strategic merge: `merge` without a key).
    Set,
    /// Objects identified by these fields (`map`; strategic merge: `merge` on the first key).
    Map(&'static [&'static str]),
}

impl ListType {
    /// The key strategic merge patch matches items on (its `patchMergeKey`).
    pub fn merge_key(self) -> Option<&'static str> {
        match self {
            ListType::Map(keys) => keys.first().copied(),
            _ => None,
        }
    }
}

/// The lists of a container's spec, shared by the logical and the physical kind.
const CONTAINER_SPEC: &[(&[&str], ListType)] = &[
    (&["spec", "env"], ListType::Map(&["name"])),
    (&["spec", "ports"], ListType::Map(&["containerPort", "protocol"])),
    (&["spec", "mounts"], ListType::Map(&["target"])),
    (&["spec", "files"], ListType::Map(&["destination"])),
    (&["spec", "networks"], ListType::Map(&["name"])),
];

/// How the list at `path` of an object of `kind` merges.
pub fn list_type(kind: &str, path: &[&str]) -> ListType {
    match path {
        ["metadata", "finalizers"] => return ListType::Set,
        ["metadata", "ownerReferences"] => return ListType::Map(&["uid"]),
        ["status", "conditions"] => return ListType::Map(&["type"]),
        _ => {}
    }
    let table: &[(&[&str], ListType)] = match kind {
        "LogicalContainer" | "PhysicalContainer" => CONTAINER_SPEC,
        _ => &[],
    };
    table.iter().find(|(at, _)| *at == path).map_or(ListType::Atomic, |(_, list)| *list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_lists_are_known_and_the_rest_are_atomic() {
        assert_eq!(list_type("LogicalContainer", &["spec", "env"]), ListType::Map(&["name"]));
        assert_eq!(list_type("LogicalContainer", &["spec", "ports"]).merge_key(), Some("containerPort"));
        assert_eq!(list_type("PhysicalContainer", &["spec", "networks"]), ListType::Map(&["name"]));
        assert_eq!(list_type("Anything", &["metadata", "finalizers"]), ListType::Set);
        assert_eq!(list_type("LogicalContainer", &["spec", "command"]), ListType::Atomic);
        assert_eq!(list_type("Namespace", &["spec", "finalizers"]), ListType::Atomic);
        assert_eq!(list_type("MyKind", &["spec", "env"]), ListType::Atomic);
    }
}
