//! The API types: objects, their metadata, and the built-in resource kinds.
//!
//! Objects are stored dynamically (`spec` and `status` are JSON values) so that the store and the
//! engine serve user-written kinds exactly like the built-in ones; each built-in kind has a typed
//! view through the [`Resource`] trait.
//!
//! Layout, foundations first (a module uses only modules listed before it, and nothing outside
//! `api` but [`crate::time`]):
//! - [`validation`]: [`FieldError`](validation::FieldError) and the object-name rule;
//! - [`runtime_names`]: image references and container names as the runtime parses them;
//! - [`container`]: the parts of a container's description that several kinds and the runtime
//!   contract share;
//! - [`names`]: the labels, annotations and finalizers the engine owns;
//! - `meta` and `object`: [`ObjectMeta`], [`Object`], [`ObjectKey`] and the [`Resource`] trait;
//! - [`registry`]: [`KindInfo`], what the store, the engine and the daemon know of a kind, and
//!   the [`Registry`] of kinds (a kind may stand for a runtime object: [`RuntimeObject`], the
//!   catalog of those, is kept here in the root beside the catalog of built-in kinds,
//!   [`Registry::builtin`]);
//! - [`reasons`]: the machine-readable reasons a status gives for its phase;
//! - one module per built-in kind, with its spec, status, the validation the store runs on
//!   admission and its registration (`kind_info`, listed by [`Registry::builtin`] below): [`namespace`], [`physical`] (`PhysicalContainer`), [`image`] (`ContainerImage`),
//!   [`lease`] and [`logical`] (`LogicalContainer`); [`runtime_resource`], what networks and
//!   volumes share, then [`network`] (`ContainerNetwork`) and [`volume`] (`ContainerVolume`).
//!
//! The kinds other than `LogicalContainer`, and the helpers the engine and the simulator use
//! most, are re-exported here.

pub mod container;
pub mod image;
pub mod lease;
pub mod logical;
mod meta;
pub mod names;
pub mod namespace;
pub mod network;
mod object;
pub mod physical;
pub mod reasons;
pub mod registry;
pub mod runtime_names;
pub mod runtime_resource;
pub mod validation;
pub mod volume;

pub use image::{ContainerImage, ContainerImageSpec, ContainerImageStatus, ImageBuildSpec, ImagePhase, PullPolicy};
pub use lease::{Lease, LeaseSpec};
pub use meta::{Condition, ConditionStatus, ManagedFieldsEntry, ObjectMeta, OwnerReference, Uid};
pub use namespace::{Namespace, NamespacePhase, NamespaceSpec, NamespaceStatus};
pub use network::{ContainerNetwork, ContainerNetworkSpec};
pub use object::{Object, ObjectKey, Resource, SmolStr, TypedError};
pub use physical::{ContainerPhase, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus};
pub use registry::{DRYDOCK_GROUP_VERSION, KindInfo, KindSchema, Registry};
pub use runtime_names::{familiar_image_reference, is_container_name, is_runtime_name, normalize_image_reference};
pub use runtime_resource::{ResourcePhase, RuntimeResourceStatus};
pub use volume::{ContainerVolume, ContainerVolumeSpec};

/// A kind of object a container runtime holds: what each runtime request acts on
/// ([`RuntimeRequest::class`](crate::runtime::RuntimeRequest::class)). Kept beside the list of
/// built-in kinds, as a catalog of the same sort: a built-in kind whose objects stand for one of
/// them says so ([`KindInfo::with_runtime_object`]), and the simulator's checks of runtime
/// resources (one per owner, none leaked, none removed by a stranger) cover it from that alone.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuntimeObject {
    Container,
    Image,
    Network,
    Volume,
}

impl RuntimeObject {
    /// The word for one, as messages use it: `container`, `image`, `network`, `volume`.
    pub fn word(self) -> &'static str {
        match self {
            RuntimeObject::Container => "container",
            RuntimeObject::Image => "image",
            RuntimeObject::Network => "network",
            RuntimeObject::Volume => "volume",
        }
    }
}

impl std::fmt::Display for RuntimeObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

impl Registry {
    /// The built-in kinds, one line each: `Namespace`, `PhysicalContainer`, `ContainerImage`,
    /// `ContainerNetwork`, `ContainerVolume`, `Lease` and `LogicalContainer`.
    pub fn builtin() -> Self {
        let mut registry = Registry::default();
        for info in [
            namespace::kind_info(),
            physical::kind_info(),
            image::kind_info(),
            network::kind_info(),
            volume::kind_info(),
            lease::kind_info(),
            logical::kind_info(),
        ] {
            registry.register(info);
        }
        registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_kinds_that_stand_for_a_runtime_object_say_which() {
        let registry = Registry::builtin();
        let standing: Vec<(&str, RuntimeObject)> =
            registry.kinds().filter_map(|k| Some((k.kind.as_str(), k.runtime_object()?))).collect();
        assert_eq!(
            standing,
            [(ContainerNetwork::KIND, RuntimeObject::Network), (ContainerVolume::KIND, RuntimeObject::Volume)]
        );
        assert_eq!(RuntimeObject::Volume.to_string(), "volume", "the word, as spec fields and messages use it");
    }
}
