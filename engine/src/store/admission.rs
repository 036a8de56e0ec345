//! Admission: what a write must satisfy before the store applies it.

use super::{Backend, Registry, StoreError};
use crate::api::validation::{FieldError, is_dns_label};
use crate::api::{Namespace, Object, Resource};

/// Admission switches. The defaults are the safe ones.
#[derive(Clone, Debug)]
pub struct AdmissionConfig {
    /// Reject an ownerReference from an object to itself. Turned off only to let the simulator
    /// find controllers that write one (the bug of seed 000).
    pub reject_self_owner: bool,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig { reject_self_owner: true }
    }
}

/// Shape, spec and ownership checks shared by create and update.
pub(super) fn validate(
    registry: &Registry,
    backend: &impl Backend,
    config: &AdmissionConfig,
    object: &Object,
) -> Result<(), StoreError> {
    let key = object.key().to_string();
    let Some(info) = registry.get(&object.kind) else {
        let known: Vec<&str> = registry.kinds().map(|k| k.kind.as_str()).collect();
        return Err(StoreError::Invalid {
            key,
            errors: vec![FieldError::new(
                "kind",
                format!("unknown kind {:?}; known kinds: {}", object.kind, known.join(", ")),
            )],
        });
    };
    let mut errors = Vec::new();
    if !is_dns_label(&object.metadata.name) {
        errors.push(FieldError::new(
            "metadata.name",
            format!(
                "{:?} must be 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit",
                object.metadata.name
            ),
        ));
    }
    match (&object.metadata.namespace, info.namespaced) {
        (None, true) => errors.push(FieldError::new(
            "metadata.namespace",
            format!("{} is namespaced: a namespace is required", info.kind),
        )),
        (Some(_), false) => errors.push(FieldError::new(
            "metadata.namespace",
            format!("{} is cluster-scoped: remove the namespace", info.kind),
        )),
        _ => {}
    }
    errors.extend(info.validate(object));
    for (i, owner) in object.metadata.owner_references.iter().enumerate() {
        if let Err(message) = check_owner(registry, backend, config, object, owner) {
            errors.push(FieldError::new(format!("metadata.ownerReferences[{i}]"), message));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(StoreError::Invalid { key, errors }) }
}

fn check_owner(
    registry: &Registry,
    backend: &impl Backend,
    config: &AdmissionConfig,
    object: &Object,
    owner: &crate::api::OwnerReference,
) -> Result<(), String> {
    let meta = &object.metadata;
    let is_self = (!meta.uid.0.is_empty() && owner.uid == meta.uid)
        || (owner.kind == object.kind
            && owner.name == meta.name
            && registry.get(&owner.kind).is_some_and(|k| k.namespaced == meta.namespace.is_some()));
    if is_self && config.reject_self_owner {
        return Err("an object cannot own itself".into());
    }
    let Some(owner_kind) = registry.get(&owner.kind) else {
        return Err(format!("unknown owner kind {:?}", owner.kind));
    };
    if owner.uid.0.is_empty() {
        return Err("owner uid is required".into());
    }
    if owner_kind.namespaced && meta.namespace.is_none() {
        return Err(format!("a cluster-scoped object cannot be owned by the namespaced {}", owner.kind));
    }
    if let Some(found) = backend.get_by_uid(&owner.uid) {
        if found.kind != owner.kind || found.metadata.name != owner.name {
            return Err(format!("uid {} belongs to {}, not {}/{}", owner.uid, found.key(), owner.kind, owner.name));
        }
        if owner_kind.namespaced && found.metadata.namespace != meta.namespace {
            return Err(format!(
                "owner {} is in namespace {:?}: cross-namespace owner references are not allowed",
                found.key(),
                found.metadata.namespace.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// A namespaced create needs its namespace to exist and not be terminating.
pub(super) fn check_namespace_active(backend: &impl Backend, object: &Object) -> Result<(), StoreError> {
    let Some(namespace) = &object.metadata.namespace else { return Ok(()) };
    let ns_key = crate::api::ObjectKey::cluster(Namespace::KIND, namespace);
    let reason = match backend.get(&ns_key) {
        None => "does not exist",
        Some(ns) if ns.metadata.is_deleting() => "is terminating",
        Some(_) => return Ok(()),
    };
    Err(StoreError::NamespaceNotActive {
        key: object.key().to_string(),
        namespace: namespace.clone(),
        reason: reason.into(),
    })
}
