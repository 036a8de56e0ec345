//! Admission: what a write must satisfy before the store applies it.

use super::claims::ClaimIndex;
use super::{Objects, Registry, StoreError};
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
    backend: &Objects,
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
    if let Some(api_version) = object.api_version.as_deref().filter(|v| *v != info.group_version) {
        errors.push(FieldError::new(
            "apiVersion",
            format!("{} is served as {}, not {api_version:?}", info.kind, info.group_version),
        ));
    }
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

/// No other object holds what `object` claims (see `claims`). Run once the object is otherwise
/// admissible, and for a create once its namespace is active and its name free: a claim still
/// held by what a terminating namespace is tearing down is not the reason to give. `previous`
/// is the stored version for an update.
pub(super) fn check_claims(
    registry: &Registry,
    backend: &Objects,
    claims: &ClaimIndex,
    object: &Object,
    previous: Option<&Object>,
) -> Result<(), StoreError> {
    let errors = claims.conflicts(registry, backend, object, previous);
    if errors.is_empty() { Ok(()) } else { Err(StoreError::Invalid { key: object.key().to_string(), errors }) }
}

fn check_owner(
    registry: &Registry,
    backend: &Objects,
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
pub(super) fn check_namespace_active(backend: &Objects, object: &Object) -> Result<(), StoreError> {
    let Some(namespace) = &object.metadata.namespace else { return Ok(()) };
    let ns_key = crate::api::ObjectKey::cluster(Namespace::KIND, namespace);
    let reason = match backend.get(&ns_key) {
        None => "does not exist",
        Some(ns) if ns.metadata.is_deleting() => "is terminating",
        Some(_) => return Ok(()),
    };
    Err(StoreError::NamespaceNotActive {
        key: object.key().to_string(),
        namespace: namespace.to_string(),
        reason: reason.into(),
    })
}

#[cfg(test)]
mod tests {
    //! What the runtime would refuse is refused at admission, each with its field path.
    #![allow(clippy::unwrap_used)]
    use crate::api::container::{EnvVar, Mount, PortMapping};
    use crate::api::logical::{LogicalContainer, LogicalContainerSpec};
    use crate::api::{
        ContainerImage, ContainerImageSpec, NamespaceSpec, Object, ObjectMeta, PhysicalContainer,
        PhysicalContainerSpec, Resource,
    };
    use crate::store::{Registry, Store, StoreConfig, StoreError};
    use crate::time::WallTime;
    use std::collections::BTreeMap;

    fn store() -> Store {
        let mut store = Store::in_memory(Registry::builtin(), StoreConfig::default());
        let ns = Object::from_spec::<crate::api::Namespace>(ObjectMeta::named(None, "ns"), &NamespaceSpec {});
        store.create(WallTime(1), ns).unwrap();
        store
    }

    /// The field paths (and messages) a create of `spec` as `R` is refused with.
    fn refused<R: Resource>(spec: &R::Spec) -> Vec<(String, String)> {
        let object = Object::from_spec::<R>(ObjectMeta::named(Some("ns"), "x"), spec);
        match store().create(WallTime(1), object) {
            Err(StoreError::Invalid { errors, .. }) => errors.into_iter().map(|e| (e.path, e.message)).collect(),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    fn paths(errors: &[(String, String)]) -> Vec<&str> {
        errors.iter().map(|(path, _)| path.as_str()).collect()
    }

    fn mount(source: &str, target: &str) -> Mount {
        Mount { source: source.into(), target: target.into(), read_only: false }
    }

    fn port(container_port: u16, host_port: Option<u16>) -> PortMapping {
        PortMapping { protocol: Default::default(), host_port, container_port, host_ip: None }
    }

    #[test]
    fn a_physical_container_docker_would_refuse_is_refused_field_by_field() {
        let spec = PhysicalContainerSpec {
            image: Some("app-".into()),
            container_name: Some("a".into()),
            env: BTreeMap::from([(String::new(), "v".into()), ("A=B".into(), "v".into())]),
            ports: vec![port(0, None), port(80, Some(8080)), port(81, Some(8080))],
            mounts: vec![mount("Cache!", "/cache"), mount("/srv", "data"), mount("/srv", "/"), mount("/x", "/cache/")],
            ..Default::default()
        };
        let errors = refused::<PhysicalContainer>(&spec);
        assert_eq!(
            paths(&errors),
            [
                "spec.image",
                "spec.containerName",
                "spec.env[\"\"]",
                "spec.env[\"A=B\"]",
                "spec.ports[0].containerPort",
                "spec.ports[2].hostPort",
                "spec.mounts[0].source",
                "spec.mounts[1].target",
                "spec.mounts[2].target",
                "spec.mounts[3].target",
            ],
            "{errors:#?}"
        );
        assert!(errors[1].1.contains("at least two characters"), "{}", errors[1].1);
        assert!(
            errors[6].1.contains("neither an absolute host path nor the name of a ContainerVolume"),
            "{}",
            errors[6].1
        );

        let tag = PhysicalContainerSpec { image: Some("app:-x".into()), ..Default::default() };
        assert_eq!(paths(&refused::<PhysicalContainer>(&tag)), ["spec.image"]);
    }

    #[test]
    fn a_logical_container_docker_would_refuse_is_refused_field_by_field() {
        let spec = LogicalContainerSpec {
            image: Some("Upper/case/App".into()),
            container_name: Some("-x".into()),
            env: vec![
                EnvVar { name: "OK".into(), value: String::new() },
                EnvVar { name: String::new(), value: "v".into() },
            ],
            ports: vec![port(80, Some(0)), PortMapping { host_ip: Some("::g".into()), ..port(81, Some(1)) }],
            mounts: vec![mount("/srv", "/data"), mount("/srv", "/data/./")],
            ..Default::default()
        };
        let errors = refused::<LogicalContainer>(&spec);
        assert_eq!(
            paths(&errors),
            ["spec.image", "spec.containerName", "spec.env[1].name", "spec.ports[1].hostIp", "spec.mounts[1].target"],
            "{errors:#?}"
        );
    }

    #[test]
    fn an_image_docker_would_refuse_is_refused() {
        for bad in ["app-", "app:-x", "a..b", "x@sha256:123"] {
            let spec = ContainerImageSpec { image: bad.into(), ..Default::default() };
            assert_eq!(paths(&refused::<ContainerImage>(&spec)), ["spec.image"], "{bad}");
        }
    }
}
