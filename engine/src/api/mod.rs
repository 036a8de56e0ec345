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
//!   the [`Registry`] of kinds;
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
pub use meta::{Condition, ConditionStatus, ObjectMeta, OwnerReference, Uid};
pub use namespace::{Namespace, NamespacePhase, NamespaceSpec, NamespaceStatus};
pub use network::{ContainerNetwork, ContainerNetworkSpec};
pub use object::{Object, ObjectKey, Resource, SmolStr, TypedError};
pub use physical::{ContainerPhase, PhysicalContainer, PhysicalContainerSpec, PhysicalContainerStatus};
pub use registry::{DRYDOCK_GROUP_VERSION, KindInfo, Registry};
pub use runtime_names::{familiar_image_reference, is_container_name, is_runtime_name, normalize_image_reference};
pub use runtime_resource::{ResourcePhase, RuntimeResourceStatus};
pub use volume::{ContainerVolume, ContainerVolumeSpec};

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
