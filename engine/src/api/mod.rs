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
//! - [`reasons`]: the machine-readable reasons a status gives for its phase;
//! - one module per built-in kind, with its spec, status and the validation the store runs on
//!   admission: [`namespace`], [`physical`] (`PhysicalContainer`), [`image`] (`ContainerImage`),
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
pub use runtime_names::{familiar_image_reference, is_container_name, is_runtime_name, normalize_image_reference};
pub use runtime_resource::{ResourcePhase, RuntimeResourceStatus};
pub use volume::{ContainerVolume, ContainerVolumeSpec};
