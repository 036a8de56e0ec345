//! Claims: values an object holds alone within its namespace, such as the name of the runtime
//! container it creates, and the index of who holds what.
//!
//! A kind says what its objects claim ([`super::KindInfo::with_claims`]). The store indexes the
//! claims of every object it holds, keeps the index in step with its writes, and admission
//! refuses an object that claims what another one holds: two objects that want one container name
//! would otherwise each take the other's container for a stranger's, and one of them would fail
//! (or, with `replaceExisting`, remove the other's container), depending on who came first.
//!
//! *Guarantees*
//! - Within one namespace (cluster-scoped objects: among themselves) no two objects hold one
//!   claim, unless one is the other's controller (an ownerReference with `controller: true`):
//!   what a controller creates to realise an object may want what the object wants (a logical
//!   container and the backing physical container it creates share their runtime name).
//! - An object holds its claims until it is gone from the store, deletion in progress included
//!   (its runtime container may still exist).
//! - A write that does not change an object's claims is never refused for them: an
//!   ownerReference removed (orphaning) does not turn two admitted holders into a conflict.
//!
//! *Assumptions*: claims depend only on the object's kind, namespace, name and spec, so they can
//! change only when the spec does.

use super::{Objects, Registry};
use crate::api::validation::{Claim, FieldError};
use crate::api::{Object, Uid};
use std::collections::BTreeMap;

/// Namespace (none: cluster-scoped), what is claimed, and its value.
type ClaimKey = (Option<String>, &'static str, String);

/// Who holds each claim. More than one holder only along a controller reference.
#[derive(Clone, Debug, Default)]
pub(super) struct ClaimIndex {
    holders: BTreeMap<ClaimKey, Vec<Uid>>,
}

fn key(object: &Object, claim: &Claim) -> ClaimKey {
    (object.metadata.namespace.as_deref().map(str::to_string), claim.what, claim.value.clone())
}

fn claims_of(registry: &Registry, object: &Object) -> Vec<Claim> {
    registry.get(&object.kind).filter(|k| k.has_claims()).map(|k| k.claims(object)).unwrap_or_default()
}

/// Whether `a` is the controller of `b`.
fn controls(a: &Object, b: &Object) -> bool {
    !a.metadata.uid.0.is_empty() && b.metadata.owner_references.iter().any(|r| r.controller && r.uid == a.metadata.uid)
}

impl ClaimIndex {
    /// The claims of everything `backend` holds (a store opened over existing data).
    pub(super) fn build(registry: &Registry, backend: &Objects) -> Self {
        let mut index = ClaimIndex::default();
        for object in backend.list(None, None) {
            index.add(registry, &object);
        }
        index
    }

    /// `object` (stored, with its uid) holds its claims.
    pub(super) fn add(&mut self, registry: &Registry, object: &Object) {
        for claim in claims_of(registry, object) {
            let holders = self.holders.entry(key(object, &claim)).or_default();
            if !holders.contains(&object.metadata.uid) {
                holders.push(object.metadata.uid.clone());
            }
        }
    }

    /// `object` no longer holds its claims (it is gone, or its spec changed).
    pub(super) fn remove(&mut self, registry: &Registry, object: &Object) {
        for claim in claims_of(registry, object) {
            let key = key(object, &claim);
            if let Some(holders) = self.holders.get_mut(&key) {
                holders.retain(|uid| *uid != object.metadata.uid);
                if holders.is_empty() {
                    self.holders.remove(&key);
                }
            }
        }
    }

    /// The claims of `object` that another object holds, as field errors. `previous` is the
    /// stored version of `object` for an update: claims it already held are not checked again.
    pub(super) fn conflicts(
        &self,
        registry: &Registry,
        backend: &Objects,
        object: &Object,
        previous: Option<&Object>,
    ) -> Vec<FieldError> {
        if previous.is_some_and(|p| p.spec == object.spec) {
            return Vec::new(); // claims follow the spec (same key: same namespace and name)
        }
        let held = previous.map(|p| claims_of(registry, p)).unwrap_or_default();
        let mut errors = Vec::new();
        for claim in claims_of(registry, object) {
            if held.iter().any(|h| h.what == claim.what && h.value == claim.value) {
                continue;
            }
            let Some(holders) = self.holders.get(&key(object, &claim)) else { continue };
            let other = holders
                .iter()
                .filter(|uid| **uid != object.metadata.uid)
                .filter_map(|uid| backend.get_by_uid(uid))
                .find(|holder| !controls(holder, object) && !controls(object, holder));
            if let Some(holder) = other {
                errors.push(FieldError::new(
                    claim.path.clone(),
                    format!("{} {:?} is already wanted by {}", claim.what, claim.value, holder.key()),
                ));
            }
        }
        errors
    }

    /// Claims held, for tests.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.holders.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::api::logical::{LogicalContainer, LogicalContainerSpec, LogicalMode};
    use crate::api::{
        Namespace, NamespaceSpec, ObjectKey, ObjectMeta, PhysicalContainer, PhysicalContainerSpec, Resource,
    };
    use crate::store::{DeleteOptions, MemoryBackend, Snapshot, Store, StoreConfig, StoreError};
    use crate::time::WallTime;
    use std::sync::Arc;

    const NOW: WallTime = WallTime(1);

    fn store() -> Store {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        for ns in ["a", "b"] {
            store.create(NOW, Object::from_spec::<Namespace>(ObjectMeta::named(None, ns), &NamespaceSpec {})).unwrap();
        }
        store
    }

    fn pc(ns: &str, name: &str, container_name: Option<&str>) -> Object {
        let spec = PhysicalContainerSpec {
            image: Some("busybox".into()),
            container_name: container_name.map(str::to_string),
            ..Default::default()
        };
        Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some(ns), name), &spec)
    }

    fn lc(ns: &str, name: &str, mode: LogicalMode, container_name: Option<&str>) -> Object {
        let spec = LogicalContainerSpec {
            mode,
            image: (mode != LogicalMode::Existing).then(|| "busybox".into()),
            container_name: container_name.map(str::to_string),
            ..Default::default()
        };
        Object::from_spec::<LogicalContainer>(ObjectMeta::named(Some(ns), name), &spec)
    }

    /// The one field error of a refused create.
    fn refused(result: Result<Arc<Object>, StoreError>) -> FieldError {
        match result {
            Err(StoreError::Invalid { errors, .. }) if errors.len() == 1 => errors[0].clone(),
            other => panic!("expected one field error, got {other:?}"),
        }
    }

    #[test]
    fn two_objects_of_one_namespace_never_want_one_container_name() {
        let mut store = store();
        store.create(NOW, pc("a", "web", Some("shared"))).unwrap();
        let error = refused(store.create(NOW, pc("a", "api", Some("shared"))));
        assert_eq!(error.path, "spec.containerName");
        assert_eq!(error.message, "container name \"shared\" is already wanted by PhysicalContainer/a/web");
        // The default name (namespace-name) is a claim too, against either kind.
        store.create(NOW, pc("a", "db", None)).unwrap();
        assert_eq!(refused(store.create(NOW, pc("a", "x", Some("a-db")))).path, "spec.containerName");
        let error = refused(store.create(NOW, lc("a", "db", LogicalMode::Session, None)));
        assert!(error.message.ends_with("PhysicalContainer/a/db"), "{error}");
        let error = refused(store.create(NOW, lc("a", "adopter", LogicalMode::Existing, Some("shared"))));
        assert!(error.message.contains("\"shared\""), "an existing-mode one wants its name too: {error}");
        // Another namespace is another scope.
        store.create(NOW, pc("b", "api", Some("shared"))).unwrap();
        store.create(NOW, lc("b", "db", LogicalMode::Session, Some("a-db"))).unwrap();
    }

    #[test]
    fn what_a_controller_creates_shares_its_claim_and_nothing_else_does() {
        let mut store = store();
        let owner = store.create(NOW, lc("a", "app", LogicalMode::Session, None)).unwrap();
        let mut backing = pc("a", "app-backing", Some("a-app"));
        backing.metadata.owner_references.push(owner.owner_reference(false));
        assert_eq!(refused(store.create(NOW, backing.clone())).path, "spec.containerName", "not its controller");
        backing.metadata.owner_references[0].controller = true;
        let backing = store.create(NOW, backing).unwrap();
        // Orphaned (its controller reference removed): its claims are unchanged, never refused.
        let mut orphaned = (*backing).clone();
        orphaned.metadata.owner_references.clear();
        store.update(orphaned).unwrap();
    }

    #[test]
    fn a_container_tracked_by_id_claims_nothing() {
        let mut store = store();
        store.create(NOW, pc("a", "web", Some("shared"))).unwrap();
        let spec = PhysicalContainerSpec { container_id: Some("shared".into()), ..Default::default() };
        store.create(NOW, Object::from_spec::<PhysicalContainer>(ObjectMeta::named(Some("a"), "t"), &spec)).unwrap();
    }

    #[test]
    fn a_claim_is_held_until_its_holder_is_gone() {
        let mut store = store();
        let mut web = pc("a", "web", Some("shared"));
        web.metadata.finalizers.push("test.dev/hold".into());
        let web = store.create(NOW, web).unwrap();
        let key = ObjectKey::namespaced(PhysicalContainer::KIND, "a", "web");
        store.delete(NOW, &key, &DeleteOptions::default()).unwrap();
        assert_eq!(refused(store.create(NOW, pc("a", "api", Some("shared")))).path, "spec.containerName");
        let mut released = (**store.get(&key).unwrap()).clone();
        released.metadata.finalizers.clear();
        store.update(released).unwrap();
        assert!(store.get_by_uid(&web.metadata.uid).is_none());
        assert_eq!(store.claims.len(), 0, "nothing left in the index");
        store.create(NOW, pc("a", "api", Some("shared"))).unwrap();
    }

    #[test]
    fn a_store_opened_over_existing_objects_knows_their_claims() {
        let mut ns = Object::from_spec::<Namespace>(ObjectMeta::named(None, "a"), &NamespaceSpec {});
        ns.metadata.uid = Uid("uid-ns".into());
        let mut web = pc("a", "web", Some("shared"));
        web.metadata.uid = Uid("uid-web".into());
        let snapshot = Snapshot { revision: 2, objects: vec![Arc::new(ns), Arc::new(web)], log: Vec::new() };
        let backend = MemoryBackend::holding(snapshot);
        let mut store = Store::open(backend, Registry::builtin(), StoreConfig::default()).unwrap();
        assert_eq!(refused(store.create(NOW, pc("a", "api", Some("shared")))).path, "spec.containerName");
    }
}
