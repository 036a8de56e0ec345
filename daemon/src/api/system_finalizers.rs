//! drydock's own finalizers are changed by drydock only: an API write that adds or removes one
//! is refused.
//!
//! A finalizer is *drydock's* when it is in the `drydock.dev/` domain (every
//! `drydock_engine::api::names::FINALIZER_*`: `namespace-cleanup`, `logical-cleanup`,
//! `runtime-cleanup`, `image-cleanup`, `logical-hold`) or is one of the default finalizers the
//! store puts on every new object of the kind ([`KindInfo::default_finalizers`], which covers a
//! user's kind registered with its own). drydock's controllers are the only writers of these:
//! they add them (or the store does, at create) and remove them once the object's cleanup is
//! done. A client that removed one would make the object vanish with its cleanup undone (a
//! namespace whose objects and containers stay behind); one that added one would hold an object
//! no controller will ever release.
//!
//! *Guarantees*
//! - A create, `PUT`, patch (merge, JSON, strategic) or server-side apply whose result adds or
//!   removes one of drydock's finalizers is refused with 422 `Invalid`, one
//!   `details.causes[]` entry per finalizer on `metadata.finalizers`, and a message that names
//!   the finalizer and says how to delete the object instead. Nothing is written.
//! - On create, the kind's default finalizers may be listed (an object exported with
//!   `kubectl get -o yaml` and created again): the store adds them anyway, so listing them
//!   changes nothing. Any other drydock finalizer on a create is refused.
//! - Reordering the finalizers, and adding or removing a client's own (`example.com/mine`), is
//!   allowed, as are writes of the `status` subresource (they never change metadata).
//! - The engine's own writes go to the store directly, not through the API, and are not checked.
//!
//! *Caveats*
//! - Kubernetes' `foregroundDeletion` and `orphan` are not drydock's: a client may put one on an
//!   object before deleting it (to choose the propagation) or take it off, as on Kubernetes.
//!   Taking one off a deleting object loses nothing: the object goes, and the garbage collector
//!   deletes the dependents of a gone owner in the background.
//! - Kubernetes lets a privileged client finish a namespace through its
//!   `namespaces/{name}/finalize` subresource; drydock serves none: its controllers are the only
//!   writers of its finalizers, and a stuck one is a bug to report, not a field to clear.

use super::kinds::KindDesc;
use super::status::ApiError;
use drydock_engine::api::Object;
use drydock_engine::store::{FieldError, KindInfo};

/// The domain of drydock's finalizers.
pub const DRYDOCK_DOMAIN: &str = "drydock.dev/";

/// The field refusals are about.
const FIELD: &str = "metadata.finalizers";

/// A change to drydock's finalizers that a client asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SystemFinalizerChange {
    #[error("adds {finalizer:?}")]
    Added { finalizer: String },
    #[error("removes {finalizer:?}")]
    Removed { finalizer: String },
}

impl SystemFinalizerChange {
    fn finalizer(&self) -> &str {
        match self {
            SystemFinalizerChange::Added { finalizer } | SystemFinalizerChange::Removed { finalizer } => finalizer,
        }
    }
}

/// Whether `finalizer` is drydock's on an object of the kind `info` describes (`None`: a kind
/// the registry does not know, for which only the `drydock.dev/` domain counts).
pub fn is_system(finalizer: &str, info: Option<&KindInfo>) -> bool {
    finalizer.starts_with(DRYDOCK_DOMAIN) || info.is_some_and(|i| i.default_finalizers.iter().any(|f| f == finalizer))
}

/// The changes to drydock's finalizers that writing `new` over `old` (`None`: a create) makes,
/// in the order the finalizers are listed (added ones first). Empty: the write may go on.
pub fn changes(info: Option<&KindInfo>, old: Option<&Object>, new: &Object) -> Vec<SystemFinalizerChange> {
    let system = |f: &&String| is_system(f, info);
    let had = |f: &String| match old {
        Some(old) => old.metadata.has_finalizer(f),
        // A create: the store adds the kind's defaults anyway, so listing them changes nothing.
        None => info.is_some_and(|i| i.default_finalizers.contains(f)),
    };
    let added = new.metadata.finalizers.iter().filter(system).filter(|f| !had(f));
    let mut found: Vec<_> = added.map(|f| SystemFinalizerChange::Added { finalizer: f.clone() }).collect();
    if let Some(old) = old {
        let removed = old.metadata.finalizers.iter().filter(system).filter(|f| !new.metadata.has_finalizer(f));
        found.extend(removed.map(|f| SystemFinalizerChange::Removed { finalizer: f.clone() }));
    }
    found
}

/// The 422 for `found` on the object `name` of kind `desc` (in `namespace`): `Invalid`, with
/// one cause per change.
pub(super) fn refusal(
    desc: &KindDesc,
    namespace: Option<&str>,
    name: &str,
    found: &[SystemFinalizerChange],
) -> ApiError {
    let delete = match namespace.filter(|_| desc.namespaced) {
        Some(namespace) => format!("kubectl delete {} {name} -n {namespace}", desc.plural),
        None => format!("kubectl delete {} {name}", desc.plural),
    };
    let causes: Vec<FieldError> = found.iter().map(|change| cause(change, &delete)).collect();
    let resource = if desc.group.is_empty() { desc.plural.clone() } else { format!("{}.{}", desc.plural, desc.group) };
    let list = causes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    ApiError::Invalid {
        message: format!("{resource} \"{name}\" is invalid: {list}"),
        subject: desc.subject(name),
        causes,
    }
}

fn cause(change: &SystemFinalizerChange, delete: &str) -> FieldError {
    let finalizer = change.finalizer();
    let why = match change {
        SystemFinalizerChange::Removed { .. } => format!(
            "Forbidden: finalizer {finalizer:?} is drydock's: only drydock removes it, once it has cleaned up \
             after the object (a namespace's objects, a container's runtime container); to delete the object, \
             run `{delete}` and leave its finalizers to drydock"
        ),
        SystemFinalizerChange::Added { .. } => format!(
            "Forbidden: finalizer {finalizer:?} is drydock's: only drydock adds it; leave it out of \
             metadata.finalizers (and to delete the object, run `{delete}`)"
        ),
    };
    FieldError::new(FIELD, why)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use drydock_engine::api::names;
    use drydock_engine::store::Registry;

    fn object(kind: &str, finalizers: &[&str]) -> Object {
        let mut object: Object = serde_json::from_value(serde_json::json!({
            "kind": kind, "metadata": {"name": "x"}, "spec": {}, "status": {}
        }))
        .unwrap();
        object.metadata.finalizers = finalizers.iter().map(|f| f.to_string()).collect();
        object
    }

    #[test]
    fn every_engine_finalizer_is_drydocks_and_kubernetes_ones_are_not() {
        let registry = Registry::builtin();
        let info = registry.get("Namespace");
        for finalizer in [
            names::FINALIZER_NAMESPACE,
            names::FINALIZER_IMAGE,
            names::FINALIZER_LOGICAL,
            names::FINALIZER_RUNTIME,
            names::FINALIZER_HOLD,
        ] {
            assert!(is_system(finalizer, None), "{finalizer}");
        }
        for kind in registry.kinds() {
            assert!(kind.default_finalizers.iter().all(|f| is_system(f, Some(kind))), "{}", kind.kind);
        }
        for finalizer in ["foregroundDeletion", "orphan", "example.com/mine", "kubernetes"] {
            assert!(!is_system(finalizer, info), "{finalizer}");
        }
        let custom = KindInfo::untyped("Widget", true).with_finalizer("example.com/widget-cleanup");
        assert!(is_system("example.com/widget-cleanup", Some(&custom)));
    }

    #[test]
    fn adding_or_removing_drydocks_finalizers_is_a_change_reordering_is_not() {
        let registry = Registry::builtin();
        let info = registry.get("Namespace");
        let ns = names::FINALIZER_NAMESPACE;
        let old = object("Namespace", &[ns, "example.com/mine"]);
        assert_eq!(
            changes(info, Some(&old), &object("Namespace", &[])),
            vec![SystemFinalizerChange::Removed { finalizer: ns.into() }]
        );
        assert!(changes(info, Some(&old), &object("Namespace", &["example.com/mine", ns])).is_empty());
        assert!(changes(info, Some(&old), &object("Namespace", &[ns, "example.com/other"])).is_empty());
        let hold = names::FINALIZER_HOLD;
        assert_eq!(
            changes(info, Some(&old), &object("Namespace", &[ns, "example.com/mine", hold])),
            vec![SystemFinalizerChange::Added { finalizer: hold.into() }]
        );
    }

    #[test]
    fn a_create_may_list_the_kinds_defaults_only() {
        let registry = Registry::builtin();
        let info = registry.get("Namespace");
        let ns = names::FINALIZER_NAMESPACE;
        assert!(changes(info, None, &object("Namespace", &[ns, "example.com/mine", "orphan"])).is_empty());
        let pc = registry.get("PhysicalContainer");
        let runtime = names::FINALIZER_RUNTIME;
        assert_eq!(
            changes(pc, None, &object("PhysicalContainer", &[runtime])),
            vec![SystemFinalizerChange::Added { finalizer: runtime.into() }]
        );
    }
}
